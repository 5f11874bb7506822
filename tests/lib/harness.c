/* harness.c — the C test fixture (harness.h): the private work folder, the
 * build's feederd started on its socket and stopped with SIGTERM, the small
 * datasets the C tests stream, and the raw-wire helpers. Used by the wire
 * test (tests/protocol/test_daemon_wire.c), the libfeeder client-level tests
 * (tests/e2e/e2e_client.c) and the security and soak clients; the shell
 * tests have the same fixture in tests/lib/lib.sh. */
#include "harness.h"

#include "check.h"
#include "crc32c.h"
#include "sockmsg.h"
#include "../pipelines/jpeg_synth.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

struct harness harness;
char harness_err[512];

static pid_t owner; /* the process that made the folder; children leave it */
static int passed;

static void show_log(void)
{
	char cmd[400];
	fprintf(stderr, "--- feederd log (last 40 lines) ---\n");
	snprintf(cmd, sizeof(cmd), "tail -n 40 '%s' >&2", harness.log);
	if (system(cmd) != 0)
		fprintf(stderr, "(no daemon log)\n");
}

static void cleanup(void)
{
	if (getpid() != owner)
		return;
	if (!passed && harness.log[0])
		show_log();
	if (harness.pid > 0) {
		kill(harness.pid, SIGKILL);
		waitpid(harness.pid, NULL, 0);
	}
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", harness.dir);
	if (harness.dir[0] && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", harness.dir);
}

void harness_init(const char *name)
{
	const char *build = getenv("FEEDER_BUILD");
	if (!build)
		SKIP("FEEDER_BUILD is not set");
	snprintf(harness.build, sizeof(harness.build), "%s", build);
	char exe[400];
	snprintf(exe, sizeof(exe), "%s/daemon/feederd", build);
	if (access(exe, X_OK) != 0)
		SKIP("%s is not built", exe);
	signal(SIGPIPE, SIG_IGN);
	snprintf(harness.dir, sizeof(harness.dir), "/tmp/feeder-%s-XXXXXX", name);
	CHECKF(mkdtemp(harness.dir), "mkdtemp %s: %s", harness.dir, strerror(errno));
	owner = getpid();
	atexit(cleanup);
	CHECK(chmod(harness.dir, 0755) == 0);
	snprintf(harness.sock, sizeof(harness.sock), "%s/feederd.sock", harness.dir);
	snprintf(harness.datasets, sizeof(harness.datasets), "%s/datasets", harness.dir);
	snprintf(harness.log, sizeof(harness.log), "%s/feederd.log", harness.dir);
	CHECK(mkdir(harness.datasets, 0755) == 0);
}

void harness_passed(void)
{
	passed = 1;
}

/* ---- the daemon ---------------------------------------------------------- */

/* feederd listens before it renames its socket into place: once the path
 * is a socket, connections are taken. (A probe connection would be counted
 * among the clients of the tests that count them.) */
static int listening(void)
{
	struct stat st;
	return stat(harness.sock, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* Start a program of the build (argv[0] relative to it) with its output
 * in the log; skips if it is not built. Returns its pid. */
static pid_t spawn(const char **argv)
{
	char exe[400];
	snprintf(exe, sizeof(exe), "%s/%s", harness.build, argv[0]);
	if (access(exe, X_OK) != 0)
		SKIP("%s is not built", exe);
	const char *name = argv[0];
	argv[0] = exe;
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid > 0) {
		argv[0] = name; /* exe is gone with this frame */
		return pid;
	}
	int fd = open(harness.log, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	unsetenv("NOTIFY_SOCKET");
	unsetenv("LISTEN_FDS");
	execv(exe, (char *const *)argv);
	_exit(127);
}

void harness_start(const char *conf, const char *const *flags)
{
	CHECK(harness.pid <= 0);
	char path[400];
	snprintf(path, sizeof(path), "%s/feederd.conf", harness.dir);
	FILE *f = fopen(path, "w");
	CHECK(f);
	fprintf(f, "# test configuration\nworkers = 2\nlog_level = debug\n%s", conf ? conf : "");
	CHECK(fclose(f) == 0);
	const char *argv[32] = { "daemon/feederd", "--config",      path, "--socket", harness.sock,
				 "--datasets",     harness.datasets };
	for (size_t i = 0, n = 7; flags && flags[i] && n + 1 < 32; i++)
		argv[n++] = flags[i];
	harness.pid = spawn(argv);
	for (int i = 0; i < 1000; i++) {
		if (listening())
			return;
		int status;
		if (waitpid(harness.pid, &status, WNOHANG) == harness.pid) {
			harness.pid = 0;
			CHECKF(0, "feederd exited at start (status 0x%x)", status);
		}
		usleep(10000);
	}
	CHECKF(0, "feederd did not listen on %s within 10 s", harness.sock);
}

void harness_stop(void)
{
	CHECK(harness.pid > 0);
	CHECK(kill(harness.pid, SIGTERM) == 0);
	int status = 0;
	pid_t w = 0;
	for (int i = 0; i < 300 && w != harness.pid; i++) {
		w = waitpid(harness.pid, &status, WNOHANG);
		if (w != harness.pid)
			usleep(10000);
	}
	CHECKF(w == harness.pid, "feederd still running 3 s after SIGTERM");
	harness.pid = 0;
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "feederd exited 0x%x after SIGTERM",
	       status);
	struct stat st;
	CHECKF(stat(harness.sock, &st) != 0, "feederd left its socket %s behind", harness.sock);
}

void harness_expect_log(const char *text)
{
	for (int i = 0; i < 300; i++) {
		if (harness_count_log(text) > 0)
			return;
		usleep(10000);
	}
	CHECKF(0, "the daemon never logged '%s'", text);
}

unsigned harness_count_log(const char *text)
{
	FILE *f = fopen(harness.log, "r");
	CHECK(f);
	char line[4096];
	unsigned n = 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, text) != NULL;
	fclose(f);
	return n;
}

/* ---- datasets ------------------------------------------------------------ */

/* Run a program of the build to its end; it must succeed. */
static void run_tool(const char **argv)
{
	pid_t pid = spawn(argv);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s exited with status 0x%x", argv[0],
	       status);
}

void harness_pack_images(const char *name, unsigned n, unsigned classes, unsigned seed)
{
	char src[400], dst[400], count[16], cls[16], sd[16];
	snprintf(src, sizeof(src), "%s/src-%s", harness.dir, name);
	snprintf(dst, sizeof(dst), "%s/%s", harness.datasets, name);
	snprintf(count, sizeof(count), "%u", n);
	snprintf(cls, sizeof(cls), "%u", classes);
	snprintf(sd, sizeof(sd), "%u", seed);
	const char *gen[] = { "tools/gen/gen-images",
			      count,
			      src,
			      "--classes",
			      cls,
			      "--seed",
			      sd,
			      "--threads",
			      "1",
			      NULL };
	run_tool(gen);
	const char *pack[] = { "packer/packer",
			       "pack",
			       "images",
			       "--resize-shorter",
			       "64",
			       "--threads",
			       "1",
			       src,
			       dst,
			       NULL };
	run_tool(pack);
}

static struct dsstore_writer *writer_open(const char *name)
{
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/%s", harness.datasets, name);
	CHECKF(mkdir(dir, 0755) == 0, "mkdir %s: %s", dir, strerror(errno));
	struct dsstore_writer *w;
	CHECKF(dsstore_writer_open(dir, 0, &w, harness_err, sizeof(harness_err)) == 0, "%s",
	       harness_err);
	return w;
}

static void writer_put(struct dsstore_writer *w, uint64_t i, struct dsformat_sample *s,
		       const void *payload)
{
	s->crc = crc32c(0, payload, s->payload_len);
	CHECKF(dsstore_writer_put_sample(w, i, s, payload, harness_err, sizeof(harness_err)) == 0,
	       "%s", harness_err);
}

static void writer_finish(struct dsstore_writer *w, const struct dsformat_header *h)
{
	CHECKF(dsstore_writer_finish(w, h, harness_err, sizeof(harness_err)) == 0, "%s",
	       harness_err);
}

void harness_synth_images(const char *name, unsigned n)
{
	struct dsstore_writer *w = writer_open(name);
	for (unsigned i = 0; i < n; i++) {
		unsigned long len;
		uint8_t *jpg = jpeg_synth(40 + (int)(i * 7) % 50, 30 + (int)(i * 11) % 40,
					  TJSAMP_420, 90, i + 1, &len);
		CHECK(jpg);
		struct dsformat_sample s = { .label = i % 3, .payload_len = (uint32_t)len };
		writer_put(w, i, &s, jpg);
		tjFree(jpg);
	}
	for (unsigned c = 0; c < 3; c++) {
		char cname[16];
		snprintf(cname, sizeof(cname), "class%u", c);
		CHECK(dsstore_writer_put_label(w, c, cname, harness_err, sizeof(harness_err)) == 0);
	}
	struct dsformat_header h = {
		.version = DSFORMAT_VERSION, .kind = DSFORMAT_KIND_JPEG, .samples = n, .classes = 3
	};
	writer_finish(w, &h);
}

static void copy_labels(struct dsstore_txn *t, struct dsstore_writer *w, uint32_t classes)
{
	for (uint32_t c = 0; c < classes; c++) {
		const char *name;
		size_t len;
		char buf[512];
		CHECK(dsstore_get_label(t, c, &name, &len) == 0 && len < sizeof(buf));
		memcpy(buf, name, len);
		buf[len] = '\0';
		CHECKF(dsstore_writer_put_label(w, c, buf, harness_err, sizeof(harness_err)) == 0,
		       "%s", harness_err);
	}
}

void harness_corrupt_copy(const char *src, const char *dst)
{
	struct dsstore_txn *t;
	struct dsstore *in = harness_ds_open(src, &t);
	const struct dsformat_header *h = dsstore_header(in);
	CHECK(h->samples > 4);
	struct dsstore_writer *w = writer_open(dst);
	copy_labels(t, w, h->classes);
	static const char not_jpeg[] =
		"this record is not a JPEG image at all, though its CRC is fine";
	for (uint64_t i = 0; i < h->samples; i++) {
		struct dsformat_sample s;
		const uint8_t *payload;
		CHECKF(dsstore_get_sample(t, i, &s, &payload, harness_err, sizeof(harness_err)) ==
			       0,
		       "%s", harness_err);
		uint8_t *copy =
			malloc(s.payload_len > sizeof(not_jpeg) ? s.payload_len : sizeof(not_jpeg));
		CHECK(copy);
		memcpy(copy, payload, s.payload_len);
		if (i == 4) {
			s.payload_len = sizeof(not_jpeg);
			memcpy(copy, not_jpeg, sizeof(not_jpeg));
		}
		s.crc = crc32c(0, copy, s.payload_len);
		if (i == 1)
			copy[s.payload_len / 2] ^= 0x40; /* the stored CRC no longer matches */
		CHECKF(dsstore_writer_put_sample(w, i, &s, copy, harness_err,
						 sizeof(harness_err)) == 0,
		       "%s", harness_err);
		free(copy);
	}
	writer_finish(w, h);
	dsstore_txn_end(t);
	dsstore_close(in);
}

float *harness_features_matrix(unsigned i, uint32_t *frames)
{
	*frames = 12 + i * 5; /* some shorter than a 20-frame chunk, some longer */
	float *m = malloc(sizeof(float) * *frames * HARNESS_FEAT_DIM);
	CHECK(m);
	for (uint32_t t = 0; t < *frames; t++)
		for (uint32_t d = 0; d < HARNESS_FEAT_DIM; d++)
			m[t * HARNESS_FEAT_DIM + d] =
				(float)(i + 1) * 0.5f + (float)d - 0.01f * (float)(t * t % 17);
	return m;
}

void harness_features_dataset(const char *name)
{
	struct dsstore_writer *w = writer_open(name);
	for (unsigned i = 0; i < HARNESS_FEAT_N; i++) {
		uint32_t frames;
		float *m = harness_features_matrix(i, &frames);
		struct dsformat_sample s = { .label = 100 + i,
					     .payload_len = (uint32_t)(sizeof(float) * frames *
								       HARNESS_FEAT_DIM),
					     .frames = frames,
					     .dim = HARNESS_FEAT_DIM,
					     .dtype = DSFORMAT_DTYPE_F32 };
		writer_put(w, i, &s, m);
		free(m);
	}
	struct dsformat_header h = { .version = DSFORMAT_VERSION,
				     .kind = DSFORMAT_KIND_FEATURES,
				     .samples = HARNESS_FEAT_N,
				     .feat_dim = HARNESS_FEAT_DIM,
				     .dtype = DSFORMAT_DTYPE_F32 };
	writer_finish(w, &h);
}

#define WAVE_SAMPLES 12000

void harness_wave_dataset(const char *name)
{
	struct dsstore_writer *w = writer_open(name);
	int16_t *pcm = malloc(sizeof(int16_t) * WAVE_SAMPLES);
	CHECK(pcm);
	for (unsigned i = 0; i < HARNESS_WAVE_N; i++) {
		for (unsigned k = 0; k < WAVE_SAMPLES; k++)
			pcm[k] = (int16_t)(8000.0 * sin(k * (0.05 + 0.02 * i)) +
					   (int)(k * 7919u % 200) - 100);
		struct dsformat_sample s = { .label = i % 2,
					     .payload_len = sizeof(int16_t) * WAVE_SAMPLES,
					     .frames = WAVE_SAMPLES,
					     .dim = 1,
					     .dtype = DSFORMAT_DTYPE_S16 };
		writer_put(w, i, &s, pcm);
	}
	free(pcm);
	struct dsformat_header h = { .version = DSFORMAT_VERSION,
				     .kind = DSFORMAT_KIND_WAVE,
				     .samples = HARNESS_WAVE_N,
				     .feat_dim = 1,
				     .dtype = DSFORMAT_DTYPE_S16,
				     .rate = 16000 };
	writer_finish(w, &h);
}

struct dsstore *harness_ds_open(const char *name, struct dsstore_txn **txn)
{
	char dir[700];
	snprintf(dir, sizeof(dir), "%s/%s", harness.datasets, name);
	struct dsstore *ds;
	CHECKF(dsstore_open(dir, &ds, harness_err, sizeof(harness_err)) == 0, "%s", harness_err);
	CHECKF(dsstore_txn_begin(ds, txn, harness_err, sizeof(harness_err)) == 0, "%s",
	       harness_err);
	return ds;
}

/* ---- the raw wire -------------------------------------------------------- */

int harness_connect_raw(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	CHECK(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	CHECKF(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect %s: %s", path,
	       strerror(errno));
	return fd;
}

int harness_recv_within(int fd, struct proto_msg *m, int *mfd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, ms) != 1)
		return 1;
	return sockmsg_recv_msg(fd, m, mfd, harness_err, sizeof(harness_err));
}

int harness_recv(int fd, struct proto_msg *m, int *mfd)
{
	int rc = harness_recv_within(fd, m, mfd, 10000);
	CHECKF(rc != 1, "no message from feederd within 10 s");
	return rc;
}

void harness_send(int fd, const struct proto_msg *m)
{
	CHECKF(sockmsg_send_msg(fd, m, -1, harness_err, sizeof(harness_err)) == 0, "%s",
	       harness_err);
}

int harness_hello(const char *path, const char *agent, struct proto_welcome *welcome)
{
	int fd = harness_connect_raw(path);
	struct proto_msg m = { .type = PROTO_HELLO };
	m.u.hello.pid = (uint32_t)getpid();
	snprintf(m.u.hello.agent, sizeof(m.u.hello.agent), "%s", agent);
	harness_send(fd, &m);
	CHECKF(harness_recv(fd, &m, NULL) == 0, "%s", harness_err);
	CHECKF(m.type == PROTO_WELCOME, "HELLO answered with %s%s%s", proto_type_name(m.type),
	       m.type == PROTO_ERROR ? ": " : "", m.type == PROTO_ERROR ? m.u.error.message : "");
	if (welcome)
		*welcome = m.u.welcome;
	return fd;
}
