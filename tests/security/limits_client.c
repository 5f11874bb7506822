/* limits_client.c — the client side of the security and limits tests: each
 * COMMAND provokes one limit of a real feederd (started by a script in this
 * folder with a configuration that sets that limit) and checks that the
 * offender gets a clear error while the daemon keeps serving the others.
 *
 *   limits_client SOCKET COMMAND DATASET [args]
 *
 *   connect            open a stream and read one batch; prints "served" and
 *                      exits 0, or prints "refused CODE: sentence" and exits 3
 *                      (the access test runs it as other users)
 *   seals              the ring memfd passed by STREAM_OPENED is sealed
 *                      (SHRINK|GROW|SEAL): ftruncate down or up, fallocate
 *                      and adding a seal all fail with EPERM; scribbling over
 *                      the whole ring does not disturb the daemon, which
 *                      serves that stream and another connection to the end
 *   streams MAX        max_streams_per_client = MAX: stream MAX+1 is refused
 *                      with FEEDER_EQUOTA, the first MAX deliver every batch,
 *                      and after one closes another may open
 *   slots MAX          max_slots = MAX: MAX slots accepted, MAX+1 refused
 *   memory LIMIT_MIB   memory_limit = LIMIT_MIB: a ring that would exceed it
 *                      is refused with FEEDER_EQUOTA while the stream holding
 *                      the memory goes on; once that one closes it fits
 *   message MAX        max_message = MAX: a message of MAX+1 bytes is a fatal
 *                      ERROR and a close; a valid one on another connection
 *                      is served
 *   names OUTSIDE..    names with "../", "/", a leading '.', and the names of
 *                      symbolic links in the datasets directory (OUTSIDE)
 *                      are refused; the connection that tried a valid
 *                      missing name stays usable
 *   churn CLIENTS ROUNDS PID
 *                      CLIENTS threads each connect, HELLO, open a stream,
 *                      read a batch and close, ROUNDS times, while a steady
 *                      client streams and checks every sample; then all
 *                      CLIENTS hold a connection and one more is refused
 *                      (the daemon runs with max_clients = CLIENTS + 2: the
 *                      steady client and a watcher), and refused clients
 *                      that never hang up are let go; the daemon PID's
 *                      anonymous memory, descriptors and memfds come back to
 *                      their values after a warm-up round (memory not
 *                      checked when LIMITS_NO_RSS is set: ASan's quarantine
 *                      keeps freed memory)
 *
 * The dataset's labels must be unique per sample (label = sample number).
 * Exit status: 0 pass, 1 fail, 3 (connect) refused. */
#include "harness.h"

#include "check.h"
#include "crc32c.h"
#include "feeder.h"
#include "sockmsg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 20000

static const char *dataset;

/* ---- libfeeder helpers --------------------------------------------------- */

static atomic_uint transient_refusals;

static struct feeder *connect_retry(void)
{
	for (int tries = 0;; tries++) {
		struct feeder *f;
		int rc = feeder_connect(harness.sock, TIMEOUT_MS, &f);
		if (rc == 0)
			return f;
		/* A disconnection the daemon has not seen yet still counts
		 * against max_clients: that refusal is transient. */
		CHECKF(rc == FEEDER_EQUOTA && tries < 500, "connect: %s (%s)",
		       feeder_last_error(NULL), feeder_strerror(rc));
		atomic_fetch_add(&transient_refusals, 1);
		usleep(2000);
	}
}

static struct feeder_stream_opts small_opts(uint32_t slots)
{
	struct feeder_stream_opts o;
	feeder_stream_opts_init(&o);
	snprintf(o.dataset, sizeof o.dataset, "%s", dataset);
	o.batch = 4;
	o.slots = slots;
	o.seed = 5;
	o.dtype = FEEDER_DTYPE_U8;
	o.layout = FEEDER_LAYOUT_NHWC;
	o.jpeg.height = o.jpeg.width = 16;
	o.jpeg.train = 0;
	return o;
}

static int try_open(struct feeder *f, const struct feeder_stream_opts *o, struct feeder_stream **s)
{
	int rc = feeder_stream_open(f, o, TIMEOUT_MS, s);
	if (rc)
		printf("  refused (%s): %s\n", feeder_strerror(rc), feeder_last_error(f));
	return rc;
}

static struct feeder_stream *open_ok(struct feeder *f, const struct feeder_stream_opts *o)
{
	struct feeder_stream *s;
	int rc = try_open(f, o, &s);
	CHECKF(rc == 0, "open: %s", feeder_strerror(rc));
	return s;
}

/* Opening o on f must be refused with FEEDER_EQUOTA, the sentence saying text. */
static void expect_quota(struct feeder *f, const struct feeder_stream_opts *o, const char *text)
{
	struct feeder_stream *s;
	int rc = try_open(f, o, &s);
	CHECKF(rc == FEEDER_EQUOTA, "%s, want FEEDER_EQUOTA", feeder_strerror(rc));
	CHECKF(strstr(feeder_last_error(f), text), "the refusal does not say '%s'", text);
}

/* Read the rest of s, n batches in already: every batch of it must come.
 * With ref, each sample's CRC-32C goes to ref[its label]. Returns n + read. */
static uint64_t drain(struct feeder *f, struct feeder_stream *s, uint64_t n, uint32_t *ref)
{
	for (;;) {
		struct feeder_batch b;
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc == FEEDER_EEND)
			break;
		CHECKF(rc == 0, "next: %s (%s)", feeder_last_error(f), feeder_strerror(rc));
		n++;
		size_t one = b.bytes / b.count;
		for (uint32_t i = 0; ref && i < b.count; i++)
			ref[b.labels[i]] = crc32c(0, (const uint8_t *)b.data + i * one, one);
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	CHECKF(n == info.batches, "a stream delivered %llu of its %llu batches",
	       (unsigned long long)n, (unsigned long long)info.batches);
	return n;
}

/* One batch of s, released. */
static void next_one(struct feeder_stream *s)
{
	struct feeder_batch b;
	CHECK(feeder_stream_next(s, TIMEOUT_MS, &b) == 0 && feeder_batch_release(s, &b) == 0);
}

/* ---- raw protocol helpers ---------------------------------------------- */

static void recv_raw(int fd, struct proto_msg *m, int *mfd)
{
	CHECKF(harness_recv(fd, m, mfd) == 0, "%s", harness_err);
}

/* OPEN_STREAM of name on fd, its bytes as they are (a client need not go
 * through libfeeder's checks); the answer in m, a descriptor in *mfd. */
static void open_raw(int fd, const char *name, uint32_t slots, int train, uint32_t epochs,
		     struct proto_msg *m, int *mfd)
{
	*m = (struct proto_msg){ .type = PROTO_OPEN_STREAM };
	proto_opts_jpeg(&m->u.open.opts, 16, train);
	memcpy(m->u.open.opts.dataset, name, strnlen(name, FEEDER_DATASET_MAX - 1));
	m->u.open.opts.batch = 4;
	m->u.open.opts.slots = slots;
	m->u.open.opts.epochs = epochs;
	m->u.open.opts.dtype = FEEDER_DTYPE_U8;
	m->u.open.tag = 1;
	harness_send(fd, m);
	*mfd = -1;
	recv_raw(fd, m, mfd);
}

static void status_raw(int fd, struct feeder_status *r)
{
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = PROTO_STATUS_SUMMARY;
	harness_send(fd, &m);
	recv_raw(fd, &m, NULL);
	CHECK(m.type == PROTO_STATUS_REPLY);
	*r = m.u.status_reply;
}

/* ---- connect ------------------------------------------------------------ */

/* The refusal line and exit status of connect; f (or NULL) is let go. */
static int refused(int rc, struct feeder *f)
{
	printf("refused %s: %s\n", feeder_strerror(rc), feeder_last_error(f));
	feeder_disconnect(f);
	return 3;
}

static int cmd_connect(void)
{
	struct feeder *f;
	int rc = feeder_connect(harness.sock, 5000, &f);
	if (rc)
		return refused(rc, NULL);
	struct feeder_stream_opts o = small_opts(2);
	struct feeder_stream *s;
	if ((rc = feeder_stream_open(f, &o, TIMEOUT_MS, &s)))
		return refused(rc, f);
	struct feeder_batch b;
	if ((rc = feeder_stream_next(s, TIMEOUT_MS, &b)))
		return refused(rc, f);
	CHECK(b.count == 4 && b.labels[0] >= 0);
	printf("served: batch of %u, first label %d\n", b.count, b.labels[0]);
	feeder_batch_release(s, &b);
	feeder_stream_close(s);
	feeder_disconnect(f);
	return 0;
}

/* ---- seals -------------------------------------------------------------- */

/* call must fail with EPERM (errno cleared first: a call that succeeds
 * reports no stale error). */
#define EXPECT_EPERM(call)                                                                         \
	do {                                                                                       \
		errno = 0;                                                                         \
		CHECKF((call) != 0 && errno == EPERM, "%s: %s", #call, strerror(errno));           \
	} while (0)

static int cmd_seals(void)
{
	int fd = harness_hello(harness.sock, "limits_client", NULL), mfd;
	struct proto_msg m;
	open_raw(fd, dataset, 2, 1, 3, &m, &mfd);
	CHECKF(m.type == PROTO_STREAM_OPENED, "OPEN_STREAM answered with %s",
	       proto_type_name(m.type));
	CHECKF(mfd >= 0, "STREAM_OPENED came without a descriptor");
	struct proto_stream_opened info = m.u.opened;
	struct stat st;
	CHECK(fstat(mfd, &st) == 0 && (uint64_t)st.st_size == info.ring_size);
	char link[64], target[256] = "";
	snprintf(link, sizeof(link), "/proc/self/fd/%d", mfd);
	CHECKF(readlink(link, target, sizeof(target) - 1) > 0 && strncmp(target, "/memfd:", 7) == 0,
	       "the ring descriptor is '%s', not a memfd", target);

	int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	int seals = fcntl(mfd, F_GET_SEALS);
	CHECKF(seals >= 0 && (seals & want) == want, "seals 0x%x, want SHRINK|GROW|SEAL", seals);
	EXPECT_EPERM(ftruncate(mfd, st.st_size - 4096));
	EXPECT_EPERM(ftruncate(mfd, 0));
	EXPECT_EPERM(ftruncate(mfd, st.st_size + 4096));
	EXPECT_EPERM(fallocate(mfd, 0, st.st_size, 4096));
	EXPECT_EPERM(fcntl(mfd, F_ADD_SEALS, F_SEAL_WRITE));
	EXPECT_EPERM(fcntl(mfd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE));
	CHECK(fcntl(mfd, F_GET_SEALS) == seals);
	CHECK(fstat(mfd, &st) == 0 && (uint64_t)st.st_size == info.ring_size);
	printf("seals 0x%x on a %llu-byte ring: shrink, truncate, grow, fallocate, add seal: EPERM\n",
	       seals, (unsigned long long)info.ring_size);

	/* Scribble over the whole ring, header included: the daemon must not
	 * trust anything a client can write. */
	uint8_t *map = mmap(NULL, info.ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	CHECK(map != MAP_FAILED);
	close(mfd);
	memset(map, 0xa5, info.ring_size);

	/* Meanwhile another client is served in full. */
	struct feeder *f = connect_retry();
	struct feeder_stream_opts o = small_opts(2);
	struct feeder_stream *s = open_ok(f, &o);
	uint64_t other = drain(f, s, 0, NULL);
	feeder_stream_close(s);
	feeder_disconnect(f);

	/* And the scribbled stream goes on to its end. */
	uint64_t n = 0;
	for (;;) {
		recv_raw(fd, &m, NULL);
		if (m.type == PROTO_STREAM_END)
			break;
		CHECKF(m.type == PROTO_BATCH_READY, "got %s", proto_type_name(m.type));
		CHECK(m.u.ready.batch_index == n % info.batches_per_epoch);
		n++;
		memset(map, 0x5a, info.ring_size);
		struct proto_msg r = { .type = PROTO_RELEASE };
		r.u.release.stream = info.stream;
		r.u.release.slot = m.u.ready.slot;
		harness_send(fd, &r);
	}
	CHECKF(n == info.batches, "scribbled stream: %llu of %llu batches", (unsigned long long)n,
	       (unsigned long long)info.batches);
	munmap(map, info.ring_size);
	close(fd);
	printf("scribbled ring: %llu batches still delivered; another client got all %llu of its own\n",
	       (unsigned long long)n, (unsigned long long)other);
	return 0;
}

/* ---- streams, slots, memory ------------------------------------------- */

static int cmd_streams(unsigned max)
{
	struct feeder *f = connect_retry();
	struct feeder_stream **s = calloc(max + 1, sizeof(*s));
	CHECK(s);
	struct feeder_stream_opts o = small_opts(2);
	for (unsigned i = 0; i < max; i++) {
		o.seed = i;
		s[i] = open_ok(f, &o);
	}
	expect_quota(f, &o, "limit");
	/* The earlier streams are untouched: each delivers all its batches. */
	for (unsigned i = 0; i < max; i++)
		drain(f, s[i], 0, NULL);
	/* Closing one makes room for one. */
	CHECK(feeder_stream_close(s[0]) == 0);
	s[0] = open_ok(f, &o);
	expect_quota(f, &o, "");
	for (unsigned i = 0; i < max; i++)
		feeder_stream_close(s[i]);
	free(s);
	feeder_disconnect(f);
	printf("streams: %u open and served, stream %u refused (EQUOTA), reopened after a close\n",
	       max, max + 1);
	return 0;
}

static int cmd_slots(unsigned max)
{
	struct feeder *f = connect_retry();
	struct feeder_stream_opts o = small_opts(max + 1);
	expect_quota(f, &o, "");
	o.slots = max;
	struct feeder_stream *s = open_ok(f, &o);
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	CHECK(info.slots == max);
	drain(f, s, 0, NULL);
	feeder_stream_close(s);
	feeder_disconnect(f);
	printf("slots: %u accepted and served, %u refused (EQUOTA)\n", max, max + 1);
	return 0;
}

static int cmd_memory(unsigned limit_mib)
{
	uint64_t limit = (uint64_t)limit_mib << 20;
	struct feeder *a = connect_retry(), *b = connect_retry();
	/* A takes a bit more than half of the limit. */
	struct feeder_stream_opts o = small_opts(1), small = small_opts(1);
	o.jpeg.height = o.jpeg.width = 64;
	o.dtype = FEEDER_DTYPE_F32;
	o.layout = FEEDER_LAYOUT_NCHW;
	o.epochs = 4;
	struct feeder_stream *sa = open_ok(a, &o), *sb;
	struct feeder_stream_info info;
	feeder_stream_info(sa, &info);
	feeder_stream_close(sa);
	o.slots = (uint32_t)((limit / 2) / info.ring_size) + 1;
	sa = open_ok(a, &o);
	feeder_stream_info(sa, &info);
	CHECK(info.ring_size > limit / 2 && info.ring_size <= limit);
	next_one(sa);
	/* B asks for as much: over the daemon's total, refused. */
	expect_quota(b, &o, "does not fit");
	/* A small one still fits, and both stream. */
	sb = open_ok(b, &small);
	drain(b, sb, 0, NULL);
	feeder_stream_close(sb);
	uint64_t na = drain(a, sa, 1, NULL);
	uint64_t big = info.ring_size;
	CHECK(feeder_stream_close(sa) == 0);
	/* Its memory is back: now B's big ring fits. */
	sb = open_ok(b, &o);
	next_one(sb);
	feeder_stream_close(sb);
	feeder_disconnect(a);
	feeder_disconnect(b);
	printf("memory: limit %u MiB; a second ring of %.1f MiB refused (EQUOTA) while the first "
	       "streamed all %llu batches; accepted after it closed\n",
	       limit_mib, (double)big / (1 << 20), (unsigned long long)na);
	return 0;
}

/* ---- message size ------------------------------------------------------ */

static int cmd_message(unsigned max)
{
	CHECK(max >= 256 && max < PROTO_MAX_MESSAGE);
	struct feeder *f = connect_retry();
	struct feeder_stream_opts o = small_opts(2);
	o.epochs = 3;
	struct feeder_stream *s = open_ok(f, &o);
	next_one(s);

	/* A HELLO whose header claims max + 1 bytes, padded to that. */
	uint8_t buf[PROTO_MAX_MESSAGE];
	struct proto_msg m = { .type = PROTO_HELLO };
	int len = proto_encode(&m, buf, sizeof(buf));
	CHECK(len > 0 && (unsigned)len < max);
	memset(buf + len, 0, max + 1 - (unsigned)len);
	for (unsigned over = 0; over < 2; over++) {
		size_t n = over ? max + 1 : max;
		int fd = harness_connect_raw(harness.sock);
		CHECKF(sockmsg_send(fd, buf, n, -1, harness_err, sizeof(harness_err)) == 0, "%s",
		       harness_err);
		recv_raw(fd, &m, NULL);
		CHECKF(m.type == PROTO_ERROR && m.u.error.fatal, "%zu bytes: %s", n,
		       proto_type_name(m.type));
		printf("  %zu-byte message: ERROR %d: %s\n", n, m.u.error.code, m.u.error.message);
		if (over)
			CHECK(strstr(m.u.error.message, "larger") ||
			      strstr(m.u.error.message, "size") ||
			      strstr(m.u.error.message, "long"));
		CHECK(harness_recv(fd, &m, NULL) == FEEDER_ECLOSED);
		close(fd);
	}
	uint64_t n = drain(f, s, 1, NULL);
	feeder_stream_close(s);
	feeder_disconnect(f);
	printf("message: %u bytes and %u bytes (malformed, oversized) each a fatal ERROR; "
	       "another client streamed all %llu batches\n",
	       max, max + 1, (unsigned long long)n);
	return 0;
}

/* ---- names ------------------------------------------------------------- */

/* OPEN_STREAM for name on a fresh connection: the ERROR, else STREAM_OPENED
 * (its ring let go). The code of an ERROR, 0 for none. */
static int open_name(const char *name, struct proto_msg *m)
{
	int fd = harness_hello(harness.sock, "limits_client", NULL), mfd;
	open_raw(fd, name, 1, 0, 1, m, &mfd);
	CHECK(m->type == PROTO_ERROR || (m->type == PROTO_STREAM_OPENED && mfd >= 0));
	if (mfd >= 0)
		close(mfd);
	close(fd);
	return m->type == PROTO_ERROR ? m->u.error.code : 0;
}

static int cmd_names(int n, char **outside)
{
	const char *bad[] = { "../",    "..",      "../x", "/etc", "/",
			      "a/../b", ".hidden", ".",    "x/y",  "uniq/../uniq" };
	struct proto_msg m;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int code = open_name(bad[i], &m);
		CHECKF(code == FEEDER_EBADNAME && m.u.error.fatal, "name '%s': code %d", bad[i],
		       code);
		printf("  '%s': EBADNAME: %s\n", bad[i], m.u.error.message);
	}
	for (int i = 0; i < n; i++) {
		int code = open_name(outside[i], &m);
		CHECKF(code == FEEDER_ENODATASET, "'%s' (leads outside the datasets): code %d",
		       outside[i], code);
		printf("  '%s': ENODATASET: %s\n", outside[i], m.u.error.message);
	}
	/* The real dataset is served. */
	int code = open_name(dataset, &m);
	CHECKF(code == 0, "'%s': code %d: %s", dataset, code, m.u.error.message);
	printf("names: %zu escaping names refused (EBADNAME), %d links out of the datasets not "
	       "served (ENODATASET), '%s' served\n",
	       sizeof(bad) / sizeof(bad[0]), n, dataset);
	return 0;
}

/* ---- churn ------------------------------------------------------------- */

struct daemon_figures {
	long rss_kib;
	int fds, memfds;
};

static void figures(pid_t pid, struct daemon_figures *d)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	CHECKF(f, "%s: %s", path, strerror(errno));
	d->rss_kib = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %ld", &d->rss_kib) == 1)
			break;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *dir = opendir(path);
	CHECK(dir);
	d->fds = d->memfds = 0;
	for (struct dirent *e; (e = readdir(dir));) {
		char link[400], target[256] = "";
		snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
		d->fds += e->d_name[0] != '.';
		d->memfds += readlink(link, target, sizeof(target) - 1) > 0 &&
			     strncmp(target, "/memfd:", 7) == 0;
	}
	closedir(dir);
}

static atomic_int steady_stop;
static atomic_uint_fast64_t steady_samples;

struct steady {
	uint32_t ref[65536]; /* CRC-32C of each sample's eval-mode pixels */
	uint64_t n;
	struct feeder *f;
	struct feeder_stream *s;
};

/* Eval mode has no randomness: a sample's bytes depend on the sample only,
 * so every delivery of it must hash to its reference. */
static void *steady_run(void *arg)
{
	struct steady *st = arg;
	uint8_t *seen = calloc(st->n, 1);
	CHECK(seen);
	uint64_t epoch = 0, in_epoch = 0;
	while (!atomic_load(&steady_stop)) {
		struct feeder_batch b;
		int rc = feeder_stream_next(st->s, TIMEOUT_MS, &b);
		CHECKF(rc == 0, "steady: %s (%s)", feeder_last_error(st->f), feeder_strerror(rc));
		CHECK(b.epoch == epoch);
		size_t one = b.bytes / b.count;
		for (uint32_t i = 0; i < b.count; i++) {
			int32_t l = b.labels[i];
			CHECKF(l >= 0 && (uint64_t)l < st->n && !seen[l],
			       "steady: label %d twice or out of range", l);
			seen[l] = 1;
			CHECKF(crc32c(0, (const uint8_t *)b.data + i * one, one) == st->ref[l],
			       "steady: sample %d of epoch %llu has other bytes", l,
			       (unsigned long long)epoch);
		}
		in_epoch += b.count;
		atomic_fetch_add(&steady_samples, b.count);
		CHECK(feeder_batch_release(st->s, &b) == 0);
		if (in_epoch == st->n) {
			memset(seen, 0, st->n);
			epoch++;
			in_epoch = 0;
		}
	}
	free(seen);
	return NULL;
}

struct churner {
	pthread_t t;
	unsigned rounds;
	uint64_t batches;
};

static void *churn_run(void *arg)
{
	struct churner *c = arg;
	for (unsigned r = 0; r < c->rounds; r++) {
		struct feeder *f = connect_retry();
		struct feeder_stream_opts o = small_opts(2);
		o.seed = r;
		o.jpeg.train = 1;
		struct feeder_stream *s;
		int rc = feeder_stream_open(f, &o, TIMEOUT_MS, &s);
		CHECKF(rc == 0, "churn open: %s (%s)", feeder_last_error(f), feeder_strerror(rc));
		struct feeder_batch b;
		rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		CHECKF(rc == 0, "churn next: %s (%s)", feeder_last_error(f), feeder_strerror(rc));
		CHECK(b.count == 4 && b.epoch == 0 && b.batch_index == 0);
		c->batches++;
		/* Every other round leaves without closing: the daemon must
		 * clean up after a bare disconnect as well. */
		if (r % 2 == 0) {
			CHECK(feeder_batch_release(s, &b) == 0);
			CHECK(feeder_stream_close(s) == 0);
		}
		feeder_disconnect(f);
	}
	return NULL;
}

static void run_churners(unsigned clients, unsigned rounds, uint64_t *batches)
{
	struct churner *c = calloc(clients, sizeof(*c));
	CHECK(c);
	for (unsigned i = 0; i < clients; i++) {
		c[i].rounds = rounds;
		CHECK(pthread_create(&c[i].t, NULL, churn_run, &c[i]) == 0);
	}
	for (unsigned i = 0; i < clients; i++) {
		pthread_join(c[i].t, NULL);
		*batches += c[i].batches;
	}
	free(c);
}

/* Wait until the daemon counts `clients` connections and `streams` streams
 * and holds only the memory of those streams. */
static void wait_settled(int watch, unsigned clients, unsigned streams, uint64_t mem)
{
	struct feeder_status r;
	for (int i = 0; i < 1000; i++) {
		status_raw(watch, &r);
		if (r.clients == clients && r.streams == streams && r.memory_used == mem)
			return;
		usleep(10000);
	}
	CHECKF(0, "the daemon still counts %u clients, %u streams, %llu bytes", r.clients,
	       r.streams, (unsigned long long)r.memory_used);
}

static int cmd_churn(unsigned clients, unsigned rounds, pid_t pid)
{
	int watch = harness_hello(harness.sock, "limits_client", NULL);
	struct timespec t0, t1;
	static struct steady st;
	st.f = connect_retry();
	struct feeder_stream_opts o = small_opts(3);
	/* The steady client's reference: one epoch of the same eval stream. */
	struct feeder_stream *s = open_ok(st.f, &o);
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	st.n = info.samples;
	CHECK(st.n > 0 && st.n <= 65536);
	drain(st.f, s, 0, st.ref);
	feeder_stream_close(s);
	o.epochs = FEEDER_MAX_EPOCHS;
	o.seed = 77;
	st.s = open_ok(st.f, &o);
	feeder_stream_info(st.s, &info);
	uint64_t steady_mem = info.ring_size;
	pthread_t steady_t;
	CHECK(pthread_create(&steady_t, NULL, steady_run, &st) == 0);

	/* Warm-up round, then the start figures. */
	uint64_t batches = 0;
	run_churners(clients, 1, &batches);
	wait_settled(watch, 2, 1, steady_mem);
	struct daemon_figures before, after;
	figures(pid, &before);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	run_churners(clients, rounds, &batches);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

	/* All clients connected: the daemon is full, one more is refused with
	 * a sentence. */
	struct feeder **held = calloc(clients, sizeof(*held));
	CHECK(held);
	for (unsigned i = 0; i < clients; i++)
		held[i] = connect_retry();
	wait_settled(watch, clients + 2, 1, steady_mem);
	struct feeder *extra;
	int rc = feeder_connect(harness.sock, TIMEOUT_MS, &extra);
	CHECKF(rc == FEEDER_EQUOTA, "connection %u: %s, want FEEDER_EQUOTA", clients + 3,
	       feeder_strerror(rc));
	char refusal[256];
	snprintf(refusal, sizeof(refusal), "%s", feeder_last_error(NULL));
	CHECK(strstr(refusal, "maximum number of clients") != NULL);
	/* Refused clients that never hang up: the daemon lets them go after
	 * a while (the figures below wait for it). */
	int silent[3];
	for (int i = 0; i < 3; i++)
		silent[i] = harness_connect_raw(harness.sock);
	for (unsigned i = 0; i < clients; i++)
		feeder_disconnect(held[i]);
	free(held);

	wait_settled(watch, 2, 1, steady_mem);
	for (int i = 0; i < 500; i++) {
		figures(pid, &after);
		/* A leak is growth; "before" may still have counted the
		 * lingering socket of a warm-up refusal, gone by now. */
		if (after.fds <= before.fds && after.memfds <= before.memfds)
			break;
		usleep(10000);
	}
	for (int i = 0; i < 3; i++) {
		struct proto_msg m;
		recv_raw(silent[i], &m, NULL);
		CHECK(m.type == PROTO_ERROR && m.u.error.code == FEEDER_EQUOTA && m.u.error.fatal);
		CHECK(harness_recv(silent[i], &m, NULL) == FEEDER_ECLOSED);
		close(silent[i]);
	}
	uint64_t steady_before = atomic_load(&steady_samples);
	/* The steady stream is still flowing. */
	for (int i = 0; i < 500 && atomic_load(&steady_samples) == steady_before; i++)
		usleep(10000);
	CHECK(atomic_load(&steady_samples) > steady_before);
	atomic_store(&steady_stop, 1);
	pthread_join(steady_t, NULL);
	feeder_stream_close(st.s);
	feeder_disconnect(st.f);
	close(watch);

	printf("churn: %u clients x %u rounds = %u connections in %.1f s (%.0f/s), %llu batches; "
	       "%u transient max_clients refusals retried\n",
	       clients, rounds, clients * rounds, secs, clients * rounds / secs,
	       (unsigned long long)batches, atomic_load(&transient_refusals));
	printf("churn: connection %u refused: %s\n", clients + 3, refusal);
	printf("churn: steady client checked %llu samples (labels and bytes)\n",
	       (unsigned long long)atomic_load(&steady_samples));
	printf("churn: daemon RssAnon %ld -> %ld KiB, fds %d -> %d, memfds %d -> %d\n",
	       before.rss_kib, after.rss_kib, before.fds, after.fds, before.memfds, after.memfds);
	CHECKF(after.fds <= before.fds && after.memfds <= before.memfds,
	       "descriptors not back: fds %d -> %d, memfds %d -> %d", before.fds, after.fds,
	       before.memfds, after.memfds);
	if (!getenv("LIMITS_NO_RSS"))
		CHECKF(labs(after.rss_kib - before.rss_kib) <= 1024, "RssAnon drifted by %ld KiB",
		       after.rss_kib - before.rss_kib);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: limits_client SOCKET COMMAND DATASET [args]\n");
		return 1;
	}
	snprintf(harness.sock, sizeof(harness.sock), "%s", argv[1]);
	const char *cmd = argv[2];
	dataset = argv[3];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(cmd, "connect") == 0)
		return cmd_connect();
	if (strcmp(cmd, "seals") == 0)
		return cmd_seals();
	if (strcmp(cmd, "streams") == 0 && argc == 5)
		return cmd_streams((unsigned)atoi(argv[4]));
	if (strcmp(cmd, "slots") == 0 && argc == 5)
		return cmd_slots((unsigned)atoi(argv[4]));
	if (strcmp(cmd, "memory") == 0 && argc == 5)
		return cmd_memory((unsigned)atoi(argv[4]));
	if (strcmp(cmd, "message") == 0 && argc == 5)
		return cmd_message((unsigned)atoi(argv[4]));
	if (strcmp(cmd, "names") == 0)
		return cmd_names(argc - 4, argv + 4);
	if (strcmp(cmd, "churn") == 0 && argc == 7)
		return cmd_churn((unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]),
				 (pid_t)atoi(argv[6]));
	fprintf(stderr, "limits_client: unknown command or wrong arguments: %s\n", cmd);
	return 1;
}
