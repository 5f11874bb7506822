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
#include "check.h"
#include "crc32c.h"
#include "feeder.h"
#include "protocol.h"
#include "sockmsg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 20000

static const char *sock_path;
static const char *dataset;

/* ---- libfeeder helpers --------------------------------------------------- */

static struct feeder *connect_or_die(void)
{
	struct feeder *f;
	int rc = feeder_connect(sock_path, TIMEOUT_MS, &f);
	CHECKF(rc == 0, "connect: %s (%s)", feeder_last_error(NULL), feeder_strerror(rc));
	return f;
}

static void small_opts(struct feeder_stream_opts *o, uint32_t slots)
{
	feeder_stream_opts_init(o);
	snprintf(o->dataset, sizeof o->dataset, "%s", dataset);
	o->batch = 4;
	o->slots = slots;
	o->seed = 5;
	o->dtype = FEEDER_DTYPE_U8;
	o->layout = FEEDER_LAYOUT_NHWC;
	o->jpeg.height = o->jpeg.width = 16;
	o->jpeg.train = 0;
}

static int try_open(struct feeder *f, const struct feeder_stream_opts *o, struct feeder_stream **s)
{
	int rc = feeder_stream_open(f, o, TIMEOUT_MS, s);
	if (rc)
		printf("  refused (%s): %s\n", feeder_strerror(rc), feeder_last_error(f));
	return rc;
}

/* Read every batch of s to its end; returns the number of batches. */
static uint64_t drain(struct feeder *f, struct feeder_stream *s)
{
	uint64_t n = 0;
	for (;;) {
		struct feeder_batch b;
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc == FEEDER_EEND)
			return n;
		CHECKF(rc == 0, "next: %s (%s)", feeder_last_error(f), feeder_strerror(rc));
		n++;
		CHECK(feeder_batch_release(s, &b) == 0);
	}
}

static uint64_t batches_of(const struct feeder_stream *s)
{
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	return info.batches;
}

/* ---- raw protocol helpers ---------------------------------------------- */

static int connect_raw(void)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	CHECK(strlen(sock_path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	CHECKF(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect: %s",
	       strerror(errno));
	return fd;
}

static int recv_raw(int fd, struct proto_msg *m, int *mfd)
{
	char err[256];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	CHECKF(poll(&p, 1, TIMEOUT_MS) == 1, "no message from feederd in time");
	return sockmsg_recv_msg(fd, m, mfd, err, sizeof(err));
}

static void send_raw(int fd, const struct proto_msg *m)
{
	char err[256];
	CHECKF(sockmsg_send_msg(fd, m, -1, err, sizeof(err)) == 0, "%s", err);
}

static int hello_raw(void)
{
	int fd = connect_raw();
	struct proto_msg m = { .type = PROTO_HELLO };
	m.u.hello.pid = (uint32_t)getpid();
	snprintf(m.u.hello.agent, sizeof(m.u.hello.agent), "limits_client");
	send_raw(fd, &m);
	CHECK(recv_raw(fd, &m, NULL) == 0);
	CHECKF(m.type == PROTO_WELCOME, "HELLO answered with %s", proto_type_name(m.type));
	return fd;
}

static void status_raw(int fd, struct feeder_status *r)
{
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = PROTO_STATUS_SUMMARY;
	send_raw(fd, &m);
	CHECK(recv_raw(fd, &m, NULL) == 0 && m.type == PROTO_STATUS_REPLY);
	*r = m.u.status_reply;
}

/* ---- connect ------------------------------------------------------------ */

static int cmd_connect(void)
{
	struct feeder *f;
	int rc = feeder_connect(sock_path, 5000, &f);
	if (rc) {
		printf("refused %s: %s\n", feeder_strerror(rc), feeder_last_error(NULL));
		return 3;
	}
	struct feeder_stream_opts o;
	small_opts(&o, 2);
	struct feeder_stream *s;
	rc = feeder_stream_open(f, &o, TIMEOUT_MS, &s);
	if (rc) {
		printf("refused %s: %s\n", feeder_strerror(rc), feeder_last_error(f));
		feeder_disconnect(f);
		return 3;
	}
	struct feeder_batch b;
	rc = feeder_stream_next(s, TIMEOUT_MS, &b);
	if (rc) {
		printf("refused %s: %s\n", feeder_strerror(rc), feeder_last_error(f));
		feeder_disconnect(f);
		return 3;
	}
	CHECK(b.count == 4 && b.labels[0] >= 0);
	printf("served: batch of %u, first label %d\n", b.count, b.labels[0]);
	feeder_batch_release(s, &b);
	feeder_stream_close(s);
	feeder_disconnect(f);
	return 0;
}

/* ---- seals -------------------------------------------------------------- */

static int cmd_seals(void)
{
	int fd = hello_raw();
	struct proto_msg m = { .type = PROTO_OPEN_STREAM };
	proto_opts_jpeg(&m.u.open.opts, 16, 1);
	snprintf(m.u.open.opts.dataset, sizeof(m.u.open.opts.dataset), "%s", dataset);
	m.u.open.opts.batch = 4;
	m.u.open.opts.slots = 2;
	m.u.open.opts.epochs = 3;
	m.u.open.opts.dtype = FEEDER_DTYPE_U8;
	m.u.open.tag = 1;
	send_raw(fd, &m);
	int mfd = -1;
	CHECK(recv_raw(fd, &m, &mfd) == 0);
	CHECKF(m.type == PROTO_STREAM_OPENED, "OPEN_STREAM answered with %s",
	       proto_type_name(m.type));
	CHECKF(mfd >= 0, "STREAM_OPENED came without a descriptor");
	struct proto_stream_opened info = m.u.opened;
	struct stat st;
	CHECK(fstat(mfd, &st) == 0 && (uint64_t)st.st_size == info.ring_size);
	char link[64], target[256];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", mfd);
	ssize_t tl = readlink(link, target, sizeof(target) - 1);
	CHECK(tl > 0);
	target[tl] = '\0';
	CHECKF(strncmp(target, "/memfd:", 7) == 0, "the ring descriptor is %s, not a memfd",
	       target);

	int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	int seals = fcntl(mfd, F_GET_SEALS);
	CHECKF(seals >= 0 && (seals & want) == want, "seals 0x%x, want SHRINK|GROW|SEAL", seals);
	errno = 0;
	CHECKF(ftruncate(mfd, st.st_size - 4096) != 0 && errno == EPERM, "shrink: %s",
	       strerror(errno));
	errno = 0;
	CHECKF(ftruncate(mfd, 0) != 0 && errno == EPERM, "truncate to 0: %s", strerror(errno));
	errno = 0;
	CHECKF(ftruncate(mfd, st.st_size + 4096) != 0 && errno == EPERM, "grow: %s",
	       strerror(errno));
	errno = 0;
	CHECKF(fallocate(mfd, 0, st.st_size, 4096) != 0 && errno == EPERM, "fallocate: %s",
	       strerror(errno));
	errno = 0;
	CHECKF(fcntl(mfd, F_ADD_SEALS, F_SEAL_WRITE) != 0 && errno == EPERM, "add F_SEAL_WRITE: %s",
	       strerror(errno));
	errno = 0;
	CHECKF(fcntl(mfd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) != 0 && errno == EPERM,
	       "add F_SEAL_FUTURE_WRITE: %s", strerror(errno));
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
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	small_opts(&o, 2);
	struct feeder_stream *s;
	CHECK(try_open(f, &o, &s) == 0);
	uint64_t other = drain(f, s);
	CHECK(other == batches_of(s));
	feeder_stream_close(s);
	feeder_disconnect(f);

	/* And the scribbled stream goes on to its end. */
	uint64_t n = 0;
	for (;;) {
		CHECK(recv_raw(fd, &m, NULL) == 0);
		if (m.type == PROTO_STREAM_END)
			break;
		CHECKF(m.type == PROTO_BATCH_READY, "got %s", proto_type_name(m.type));
		CHECK(m.u.ready.batch_index == n % info.batches_per_epoch);
		n++;
		memset(map, 0x5a, info.ring_size);
		struct proto_msg r = { .type = PROTO_RELEASE };
		r.u.release.stream = info.stream;
		r.u.release.slot = m.u.ready.slot;
		send_raw(fd, &r);
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
	struct feeder *f = connect_or_die();
	struct feeder_stream **s = calloc(max + 1, sizeof(*s));
	CHECK(s);
	struct feeder_stream_opts o;
	small_opts(&o, 2);
	for (unsigned i = 0; i < max; i++) {
		o.seed = i;
		CHECKF(try_open(f, &o, &s[i]) == 0, "stream %u of %u", i + 1, max);
	}
	struct feeder_stream *extra;
	int rc = try_open(f, &o, &extra);
	CHECKF(rc == FEEDER_EQUOTA, "stream %u: %s, want FEEDER_EQUOTA", max + 1,
	       feeder_strerror(rc));
	CHECK(strstr(feeder_last_error(f), "limit") != NULL);
	/* The earlier streams are untouched: each delivers all its batches. */
	for (unsigned i = 0; i < max; i++) {
		uint64_t n = drain(f, s[i]);
		CHECKF(n == batches_of(s[i]), "stream %u: %llu batches", i, (unsigned long long)n);
	}
	/* Closing one makes room for one. */
	CHECK(feeder_stream_close(s[0]) == 0);
	CHECK(try_open(f, &o, &s[0]) == 0);
	rc = try_open(f, &o, &extra);
	CHECK(rc == FEEDER_EQUOTA);
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
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	small_opts(&o, max + 1);
	struct feeder_stream *s;
	int rc = try_open(f, &o, &s);
	CHECKF(rc == FEEDER_EQUOTA, "%u slots: %s, want FEEDER_EQUOTA", max + 1,
	       feeder_strerror(rc));
	o.slots = max;
	CHECK(try_open(f, &o, &s) == 0);
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	CHECK(info.slots == max);
	CHECK(drain(f, s) == info.batches);
	feeder_stream_close(s);
	feeder_disconnect(f);
	printf("slots: %u accepted and served, %u refused (EQUOTA)\n", max, max + 1);
	return 0;
}

static int cmd_memory(unsigned limit_mib)
{
	uint64_t limit = (uint64_t)limit_mib << 20;
	struct feeder *a = connect_or_die(), *b = connect_or_die();
	/* A takes a bit more than half of the limit. */
	struct feeder_stream_opts o;
	small_opts(&o, 1);
	o.jpeg.height = o.jpeg.width = 64;
	o.dtype = FEEDER_DTYPE_F32;
	o.layout = FEEDER_LAYOUT_NCHW;
	o.epochs = 4;
	struct feeder_stream *sa, *sb;
	CHECK(try_open(a, &o, &sa) == 0);
	struct feeder_stream_info info;
	feeder_stream_info(sa, &info);
	uint64_t one = info.ring_size;
	uint32_t slots = (uint32_t)((limit / 2) / one) + 1;
	feeder_stream_close(sa);
	o.slots = slots;
	CHECK(try_open(a, &o, &sa) == 0);
	feeder_stream_info(sa, &info);
	CHECK(info.ring_size > limit / 2 && info.ring_size <= limit);
	struct feeder_batch bt;
	CHECK(feeder_stream_next(sa, TIMEOUT_MS, &bt) == 0);
	CHECK(feeder_batch_release(sa, &bt) == 0);
	/* B asks for as much: over the daemon's total, refused. */
	int rc = try_open(b, &o, &sb);
	CHECKF(rc == FEEDER_EQUOTA, "second big ring: %s, want FEEDER_EQUOTA", feeder_strerror(rc));
	CHECK(strstr(feeder_last_error(b), "does not fit") != NULL);
	/* A small one still fits, and both stream. */
	struct feeder_stream_opts small;
	small_opts(&small, 1);
	CHECK(try_open(b, &small, &sb) == 0);
	CHECK(drain(b, sb) == batches_of(sb));
	feeder_stream_close(sb);
	uint64_t na = 1 + drain(a, sa);
	CHECKF(na == batches_of(sa), "the stream holding the memory delivered %llu of %llu",
	       (unsigned long long)na, (unsigned long long)batches_of(sa));
	uint64_t big = info.ring_size;
	CHECK(feeder_stream_close(sa) == 0);
	/* Its memory is back: now B's big ring fits. */
	CHECK(try_open(b, &o, &sb) == 0);
	CHECK(feeder_stream_next(sb, TIMEOUT_MS, &bt) == 0);
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
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	small_opts(&o, 2);
	o.epochs = 3;
	struct feeder_stream *s;
	CHECK(try_open(f, &o, &s) == 0);
	struct feeder_batch b;
	CHECK(feeder_stream_next(s, TIMEOUT_MS, &b) == 0 && feeder_batch_release(s, &b) == 0);

	/* A HELLO whose header claims max + 1 bytes, padded to that. */
	uint8_t buf[PROTO_MAX_MESSAGE];
	struct proto_msg m = { .type = PROTO_HELLO };
	int len = proto_encode(&m, buf, sizeof(buf));
	CHECK(len > 0 && (unsigned)len < max);
	memset(buf + len, 0, max + 1 - (unsigned)len);
	for (unsigned over = 0; over < 2; over++) {
		size_t n = over ? max + 1 : max;
		int fd = connect_raw();
		char err[256];
		CHECK(sockmsg_send(fd, buf, n, -1, err, sizeof(err)) == 0);
		CHECK(recv_raw(fd, &m, NULL) == 0);
		CHECKF(m.type == PROTO_ERROR && m.u.error.fatal, "%zu bytes: %s", n,
		       proto_type_name(m.type));
		printf("  %zu-byte message: ERROR %d: %s\n", n, m.u.error.code, m.u.error.message);
		if (over)
			CHECK(strstr(m.u.error.message, "larger") ||
			      strstr(m.u.error.message, "size") ||
			      strstr(m.u.error.message, "long"));
		CHECK(recv_raw(fd, &m, NULL) == FEEDER_ECLOSED);
		close(fd);
	}
	uint64_t n = 1 + drain(f, s);
	CHECK(n == batches_of(s));
	feeder_stream_close(s);
	feeder_disconnect(f);
	printf("message: %u bytes and %u bytes (malformed, oversized) each a fatal ERROR; "
	       "another client streamed all %llu batches\n",
	       max, max + 1, (unsigned long long)n);
	return 0;
}

/* ---- names ------------------------------------------------------------- */

/* OPEN_STREAM for name on a fresh connection; returns the code. */
static int open_name(const char *name, int *fatal, char *why, size_t whylen)
{
	int fd = hello_raw();
	struct proto_msg m = { .type = PROTO_OPEN_STREAM };
	proto_opts_jpeg(&m.u.open.opts, 16, 0);
	m.u.open.opts.batch = 4;
	m.u.open.opts.slots = 1;
	m.u.open.opts.dtype = FEEDER_DTYPE_U8;
	/* Raw bytes: a client need not go through libfeeder's checks. */
	memset(m.u.open.opts.dataset, 0, sizeof(m.u.open.opts.dataset));
	memcpy(m.u.open.opts.dataset, name, strnlen(name, FEEDER_DATASET_MAX - 1));
	send_raw(fd, &m);
	int mfd = -1, code = 0;
	CHECK(recv_raw(fd, &m, &mfd) == 0);
	if (m.type == PROTO_ERROR) {
		code = m.u.error.code;
		*fatal = (int)m.u.error.fatal;
		snprintf(why, whylen, "%s", m.u.error.message);
	} else {
		CHECK(m.type == PROTO_STREAM_OPENED);
		close(mfd);
	}
	close(fd);
	return code;
}

static int cmd_names(int n, char **outside)
{
	const char *bad[] = { "../",    "..",      "../x", "/etc", "/",
			      "a/../b", ".hidden", ".",    "x/y",  "uniq/../uniq" };
	char why[PROTO_TEXT_MAX];
	int fatal = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int code = open_name(bad[i], &fatal, why, sizeof(why));
		CHECKF(code == FEEDER_EBADNAME && fatal, "name '%s': code %d", bad[i], code);
		printf("  '%s': EBADNAME: %s\n", bad[i], why);
	}
	for (int i = 0; i < n; i++) {
		int code = open_name(outside[i], &fatal, why, sizeof(why));
		CHECKF(code == FEEDER_ENODATASET, "'%s' (leads outside the datasets): code %d",
		       outside[i], code);
		printf("  '%s': ENODATASET: %s\n", outside[i], why);
	}
	/* The real dataset is served. */
	int code = open_name(dataset, &fatal, why, sizeof(why));
	CHECKF(code == 0, "'%s': code %d: %s", dataset, code, why);
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
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		char link[400], target[256];
		snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		d->fds++;
		if (n > 0) {
			target[n] = '\0';
			d->memfds += strncmp(target, "/memfd:", 7) == 0;
		}
	}
	closedir(dir);
}

static atomic_int steady_stop;
static atomic_uint_fast64_t steady_samples;
static atomic_uint transient_refusals;

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
	pthread_barrier_t *hold; /* NULL: churn; else connect, wait, wait, leave */
	uint64_t batches;
};

static struct feeder *connect_retry(void)
{
	for (int tries = 0;; tries++) {
		struct feeder *f;
		int rc = feeder_connect(sock_path, TIMEOUT_MS, &f);
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

static void *churn_run(void *arg)
{
	struct churner *c = arg;
	if (c->hold) {
		struct feeder *f = connect_retry();
		pthread_barrier_wait(c->hold);
		pthread_barrier_wait(c->hold);
		feeder_disconnect(f);
		return NULL;
	}
	for (unsigned r = 0; r < c->rounds; r++) {
		struct feeder *f = connect_retry();
		struct feeder_stream_opts o;
		small_opts(&o, 2);
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
	int watch = hello_raw();
	struct timespec t0, t1;
	static struct steady st;
	st.f = connect_or_die();
	struct feeder_stream_opts o;
	small_opts(&o, 3);
	/* The steady client's reference: one epoch of the same eval stream. */
	struct feeder_stream *s;
	CHECK(try_open(st.f, &o, &s) == 0);
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	st.n = info.samples;
	CHECK(st.n > 0 && st.n <= 65536);
	for (;;) {
		struct feeder_batch b;
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc == FEEDER_EEND)
			break;
		CHECK(rc == 0);
		for (uint32_t i = 0; i < b.count; i++)
			st.ref[b.labels[i]] =
				crc32c(0, (const uint8_t *)b.data + i * (b.bytes / b.count),
				       b.bytes / b.count);
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	feeder_stream_close(s);
	o.epochs = FEEDER_MAX_EPOCHS;
	o.seed = 77;
	CHECK(try_open(st.f, &o, &st.s) == 0);
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

	/* All clients connected at once: the daemon is full, one more is
	 * refused with a sentence. */
	pthread_barrier_t hold;
	CHECK(pthread_barrier_init(&hold, NULL, clients + 1) == 0);
	struct churner *c = calloc(clients, sizeof(*c));
	CHECK(c);
	for (unsigned i = 0; i < clients; i++) {
		c[i].hold = &hold;
		CHECK(pthread_create(&c[i].t, NULL, churn_run, &c[i]) == 0);
	}
	pthread_barrier_wait(&hold);
	wait_settled(watch, clients + 2, 1, steady_mem);
	struct feeder *extra;
	int rc = feeder_connect(sock_path, TIMEOUT_MS, &extra);
	CHECKF(rc == FEEDER_EQUOTA, "connection %u: %s, want FEEDER_EQUOTA", clients + 3,
	       feeder_strerror(rc));
	char refusal[256];
	snprintf(refusal, sizeof(refusal), "%s", feeder_last_error(NULL));
	CHECK(strstr(refusal, "maximum number of clients") != NULL);
	/* Refused clients that never hang up: the daemon lets them go after
	 * a while (the figures below wait for it). */
	int silent[3];
	for (int i = 0; i < 3; i++)
		silent[i] = connect_raw();
	pthread_barrier_wait(&hold);
	for (unsigned i = 0; i < clients; i++)
		pthread_join(c[i].t, NULL);
	free(c);
	pthread_barrier_destroy(&hold);

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
		CHECK(recv_raw(silent[i], &m, NULL) == 0);
		CHECK(m.type == PROTO_ERROR && m.u.error.code == FEEDER_EQUOTA && m.u.error.fatal);
		CHECK(recv_raw(silent[i], &m, NULL) == FEEDER_ECLOSED);
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
	sock_path = argv[1];
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
