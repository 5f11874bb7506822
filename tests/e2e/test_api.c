/* test_api.c — libfeeder's behaviour without a daemon: error codes and
 * names, the socket path rules ($FEEDER_SOCKET, too long, missing), connect
 * timeouts against a listener that never answers, and a peer that answers
 * HELLO with garbage. Includes only the public feeder.h, as users do, which
 * also checks that feeder.h's codes agree with the library's. */
#include "feeder.h"

#include "check.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	CHECK(s >= 0);
	CHECK(bind(s, (struct sockaddr *)&sa, sizeof sa) == 0);
	CHECK(listen(s, 4) == 0);
	return s;
}

/* Accept one connection, read its HELLO, answer with 40 bytes of junk. */
static void *junk_server(void *arg)
{
	int l = *(int *)arg;
	int c = accept(l, NULL, NULL);
	if (c >= 0) {
		char buf[2048];
		if (recv(c, buf, sizeof buf, 0) > 0) {
			memset(buf, 0x33, 40);
			if (send(c, buf, 40, MSG_NOSIGNAL) != 40)
				fprintf(stderr, "junk server: send failed\n");
		}
		sleep(1);
		close(c);
	}
	return NULL;
}

int main(void)
{
	/* Every code has its own name, and no code reads as "unknown". */
	const int codes[] = { FEEDER_ECORRUPT, FEEDER_EVERSION, FEEDER_EFORMAT,    FEEDER_EPROTO,
			      FEEDER_EDECODE,  FEEDER_EQUOTA,   FEEDER_ENODATASET, FEEDER_EBADNAME,
			      FEEDER_EINVAL,   FEEDER_ECLOSED,  FEEDER_ETIMEDOUT,  FEEDER_EEND,
			      FEEDER_ENODEV,   FEEDER_EDENIED,  FEEDER_ESTREAM };
	const char *unknown = feeder_strerror(-99999);
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		const char *s = feeder_strerror(codes[i]);
		CHECKF(s && *s && strcmp(s, unknown) != 0, "code %d has no name", codes[i]);
		for (size_t j = 0; j < i; j++)
			CHECKF(strcmp(s, feeder_strerror(codes[j])) != 0,
			       "codes %d and %d share '%s'", codes[i], codes[j], s);
	}
	CHECK(strcmp(feeder_strerror(-ENOENT), strerror(ENOENT)) == 0 ||
	      strstr(feeder_strerror(-ENOENT), "o such file"));

	struct feeder_stream_opts o;
	feeder_stream_opts_init(&o);
	CHECK(o.dataset[0] == 0 && o.batch == 32 && o.slots == 4 && o.world == 1 && o.epochs == 1);
	CHECK(o.shuffle == 1 && o.names == 0 && o.placement == FEEDER_PLACEMENT_CPU);
	/* Dataset names are checked where they are set. */
	CHECK(feeder_stream_opts_set_dataset(&o, "imagenet-val_1.0") == 0 &&
	      strcmp(o.dataset, "imagenet-val_1.0") == 0);
	CHECK(feeder_stream_opts_set_dataset(&o, "../etc") == FEEDER_EBADNAME &&
	      strcmp(o.dataset, "imagenet-val_1.0") == 0);
	CHECK(feeder_stream_opts_set_dataset(&o, "") == FEEDER_EBADNAME);
	char toolong[FEEDER_DATASET_MAX + 1];
	memset(toolong, 'a', FEEDER_DATASET_MAX);
	toolong[FEEDER_DATASET_MAX] = 0;
	CHECK(feeder_stream_opts_set_dataset(&o, toolong) == FEEDER_EBADNAME);
	toolong[FEEDER_DATASET_MAX - 1] = 0;
	CHECK(feeder_stream_opts_set_dataset(&o, toolong) == 0 && strlen(o.dataset) == 63);
	CHECK(o.dtype == FEEDER_DTYPE_F32 && o.layout == FEEDER_LAYOUT_NCHW);
	CHECK(o.jpeg.height == 224 && o.jpeg.width == 224 && o.jpeg.train == 1);
	CHECK(o.jpeg.scale_min > 0.079f && o.jpeg.scale_min < 0.081f && o.jpeg.flip_p == 0.5f);
	CHECK(o.jpeg.mean[0] > 0.484f && o.jpeg.mean[0] < 0.486f && o.jpeg.std[2] > 0.224f);

	char dir[] = "/tmp/feeder-api-XXXXXX";
	CHECK(mkdtemp(dir));
	char missing[256], path[256];
	snprintf(missing, sizeof missing, "%s/missing.sock", dir);

	struct feeder *f = (struct feeder *)1;
	int rc = feeder_connect(missing, 0, &f);
	CHECKF(rc == -ENOENT && f == NULL, "rc %d", rc);
	CHECKF(strstr(feeder_last_error(NULL), missing), "'%s'", feeder_last_error(NULL));

	/* NULL path: $FEEDER_SOCKET. */
	setenv("FEEDER_SOCKET", missing, 1);
	rc = feeder_connect(NULL, 0, &f);
	CHECK(rc == -ENOENT && strstr(feeder_last_error(NULL), missing));
	unsetenv("FEEDER_SOCKET");

	/* A missing socket is retried for the whole timeout. */
	double t0 = now_s();
	rc = feeder_connect(missing, 200, &f);
	double took = now_s() - t0;
	CHECKF(rc == -ENOENT && took >= 0.18 && took < 2.0, "rc %d after %.3f s", rc, took);

	char longp[200] = { 0 };
	memset(longp, 'x', sizeof longp - 1);
	CHECK(feeder_connect(longp, 0, &f) == -ENAMETOOLONG);

	/* A listener that never answers HELLO. */
	snprintf(path, sizeof path, "%s/silent.sock", dir);
	int l = listen_at(path);
	t0 = now_s();
	rc = feeder_connect(path, 300, &f);
	took = now_s() - t0;
	CHECKF(rc == FEEDER_ETIMEDOUT && took >= 0.25 && took < 3.0, "rc %d after %.3f s", rc,
	       took);
	CHECKF(strstr(feeder_last_error(NULL), "did not answer"), "'%s'", feeder_last_error(NULL));
	close(l);

	/* A peer that answers with junk. */
	snprintf(path, sizeof path, "%s/junk.sock", dir);
	l = listen_at(path);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, junk_server, &l) == 0);
	rc = feeder_connect(path, 5000, &f);
	CHECKF(rc == FEEDER_EPROTO, "rc %d (%s)", rc, feeder_last_error(NULL));
	CHECKF(strstr(feeder_last_error(NULL), "magic"), "'%s'", feeder_last_error(NULL));
	pthread_join(th, NULL);
	close(l);

	feeder_disconnect(NULL);
	feeder_stream_close(NULL);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
