/* test_daemon_wire.c — a real feederd driven over the raw protocol, by a
 * client that speaks the wire itself (no libfeeder): what only the wire can
 * say or do, one behaviour per case (each described where it is tested):
 * hostile and malformed input, careless clients, STATUS lists, SIGHUP, and
 * placement with the GPU emulated on the host (FEEDERD_GPU_EMULATE=1). What
 * a client sees through libfeeder is tested once, in
 * tests/e2e/e2e_client.c; a client killed holding slots, in
 * tests/e2e/test_sigkill.sh. The daemon and the datasets come from the
 * fixture, tests/lib/harness.c. */
#include "check.h"
#include "crc32c.h"
#include "detrand.h"
#include "harness.h"
#include "protocol.h"
#include "sockmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define N_TINY 23

/* ---- client side --------------------------------------------------------- */

static int connect_hello(void)
{
	struct proto_welcome w;
	int fd = harness_hello(harness.sock, "test_daemon_wire", &w);
	CHECK(w.session > 0 && w.quota == 8u << 20);
	return fd;
}

struct ring {
	int fd;
	struct proto_stream_opened info;
	uint8_t *map;
};

static struct feeder_stream_opts base_request(const char *ds, uint32_t size, int train)
{
	struct feeder_stream_opts o;
	proto_opts_jpeg(&o, size, train);
	snprintf(o.dataset, sizeof(o.dataset), "%s", ds);
	o.batch = 5;
	o.slots = 3;
	o.seed = 1234;
	o.dtype = FEEDER_DTYPE_U8;
	return o;
}

/* The message of the last ERROR open_stream received. */
static char last_error[PROTO_TEXT_MAX];

/* Open a stream; returns 0 or the ERROR code. */
static int open_stream(int fd, const struct feeder_stream_opts *o, struct ring *r)
{
	static uint32_t tag;
	struct proto_msg m = { .type = PROTO_OPEN_STREAM };
	m.u.open.tag = ++tag;
	m.u.open.opts = *o;
	harness_send(fd, &m);
	int mfd = -1;
	CHECK(harness_recv(fd, &m, &mfd) == 0);
	if (m.type == PROTO_ERROR) {
		CHECK(mfd < 0 && m.u.error.tag == tag && strlen(m.u.error.message) > 10);
		fprintf(stderr, "  (expected) ERROR %d: %s\n", m.u.error.code, m.u.error.message);
		snprintf(last_error, sizeof(last_error), "%s", m.u.error.message);
		return m.u.error.code;
	}
	CHECKF(m.type == PROTO_STREAM_OPENED, "got %s", proto_type_name(m.type));
	CHECK(mfd >= 0 && m.u.opened.tag == tag);
	r->info = m.u.opened;
	/* Sealed: the client can neither shrink nor grow nor reseal. */
	int seals = fcntl(mfd, F_GET_SEALS);
	CHECK((seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) ==
	      (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL));
	CHECK(ftruncate(mfd, 4096) != 0);
	struct stat st;
	CHECK(fstat(mfd, &st) == 0 && (uint64_t)st.st_size == r->info.ring_size);
	r->map = mmap(NULL, r->info.ring_size, PROT_READ, MAP_SHARED, mfd, 0);
	CHECK(r->map != MAP_FAILED);
	close(mfd);
	const struct proto_ring_header *h = (const void *)r->map;
	CHECK(h->magic == PROTO_RING_MAGIC && h->version == PROTO_VERSION);
	CHECK(h->stream == r->info.stream && h->slots == r->info.slots);
	CHECK(h->slot_size == r->info.slot_size && h->tensor_offset == r->info.tensor_offset);
	r->fd = fd;
	return 0;
}

/* A stream of tiny in train mode, 16x16, for epochs epochs. */
static void open_tiny(int fd, uint64_t epochs, struct ring *r)
{
	struct feeder_stream_opts o = base_request("tiny", 16, 1);
	o.epochs = epochs;
	CHECK(open_stream(fd, &o, r) == 0);
}

static void close_ring(struct ring *r)
{
	munmap(r->map, r->info.ring_size);
}

static void send_raw(int fd, const void *p, size_t len)
{
	CHECKF(sockmsg_send(fd, p, len, -1, harness_err, sizeof(harness_err)) == 0, "%s",
	       harness_err);
}

/* The next message on fd of the given type, past the BATCH_READYs of fd's
 * streams (and nothing else). */
static struct proto_msg await(int fd, uint16_t type)
{
	struct proto_msg m;
	for (;;) {
		CHECKF(harness_recv(fd, &m, NULL) == 0, "%s", harness_err);
		if (m.type == type)
			return m;
		CHECKF(m.type == PROTO_BATCH_READY, "waiting for %s, got %s (%s)",
		       proto_type_name(type), proto_type_name(m.type),
		       m.type == PROTO_ERROR ? m.u.error.message : "");
	}
}

/* The next message on fd is a fatal ERROR (of code, unless 0, with text in
 * its message, unless NULL), and then the daemon closes the connection. */
static void expect_fatal(int fd, int code, const char *text, const char *what)
{
	struct proto_msg m;
	CHECKF(harness_recv(fd, &m, NULL) == 0, "%s: %s", what, harness_err);
	CHECKF(m.type == PROTO_ERROR && m.u.error.fatal && m.u.error.code < 0 &&
		       (!code || m.u.error.code == code) &&
		       (!text || strstr(m.u.error.message, text)),
	       "%s: got %s (%s)", what, proto_type_name(m.type),
	       m.type == PROTO_ERROR ? m.u.error.message : "");
	fprintf(stderr, "  (expected) %s -> ERROR %d: %s\n", what, m.u.error.code,
		m.u.error.message);
	CHECKF(harness_recv(fd, &m, NULL) == FEEDER_ECLOSED, "%s: not closed", what);
	close(fd);
}

/* CLOSE_STREAM, answered with STREAM_END (reason 1); how many BATCH_READYs
 * came before it. */
static unsigned close_stream(int fd, uint32_t stream)
{
	struct proto_msg m = { .type = PROTO_CLOSE_STREAM };
	m.u.close.stream = stream;
	harness_send(fd, &m);
	unsigned ready = 0;
	for (;;) {
		CHECK(harness_recv(fd, &m, NULL) == 0);
		if (m.type != PROTO_BATCH_READY)
			break;
		ready++;
	}
	CHECKF(m.type == PROTO_STREAM_END && m.u.end.stream == stream && m.u.end.reason == 1,
	       "CLOSE_STREAM answered with %s", proto_type_name(m.type));
	return ready;
}

struct batch {
	struct proto_batch_ready ready;
	const uint8_t *slot;
};

/* Next BATCH_READY of the stream (1) or its STREAM_END (0). */
static int next_batch(struct ring *r, struct batch *b)
{
	struct proto_msg m;
	CHECK(harness_recv(r->fd, &m, NULL) == 0);
	if (m.type == PROTO_STREAM_END) {
		CHECK(m.u.end.stream == r->info.stream && m.u.end.reason == 0);
		return 0;
	}
	CHECKF(m.type == PROTO_BATCH_READY, "got %s (%s)", proto_type_name(m.type),
	       m.type == PROTO_ERROR ? m.u.error.message : "");
	CHECK(m.u.ready.stream == r->info.stream && m.u.ready.slot < r->info.slots);
	b->ready = m.u.ready;
	b->slot = r->map + PROTO_RING_HEADER + (size_t)m.u.ready.slot * r->info.slot_size;
	const struct proto_slot_header *h = (const void *)b->slot;
	CHECK(h->epoch == m.u.ready.epoch && h->batch_index == m.u.ready.batch_index);
	CHECK(h->samples == m.u.ready.samples && h->shape[0] == h->samples);
	CHECK(h->replacements == m.u.ready.replacements);
	return 1;
}

static void release(struct ring *r, const struct batch *b)
{
	struct proto_msg m = { .type = PROTO_RELEASE };
	m.u.release.stream = r->info.stream;
	m.u.release.slot = b->ready.slot;
	harness_send(r->fd, &m);
}

/* Take and release the stream's next n batches, or as many as come before
 * its end; how many that was. */
static uint64_t take(struct ring *r, uint64_t n)
{
	struct batch b;
	uint64_t got = 0;
	while (got < n && next_batch(r, &b)) {
		release(r, &b);
		got++;
	}
	return got;
}

/* Run a whole stream, in order; a hash of every byte of every batch (labels
 * and tensors) and the batch count. */
static uint64_t drain(struct ring *r, uint64_t *batches)
{
	struct batch b;
	uint64_t hash = 1469598103934665603ull, n = 0;
	while (next_batch(r, &b)) {
		CHECK(b.ready.batch_index == r->info.batches_per_epoch - r->info.batches + n);
		const int32_t *labels = (const void *)(b.slot + r->info.labels_offset);
		hash = detrand_mix(hash ^ crc32c(0, labels, 4 * b.ready.samples));
		size_t sample = r->info.tensor_bytes / r->info.batch;
		hash = detrand_mix(
			hash ^ crc32c(0, b.slot + r->info.tensor_offset, sample * b.ready.samples));
		release(r, &b);
		n++;
	}
	*batches = n;
	return hash;
}

static void ask_status(int fd, uint32_t what)
{
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = what;
	harness_send(fd, &m);
}

static void check_status(int fd, struct feeder_status *out)
{
	struct proto_msg m;
	ask_status(fd, PROTO_STATUS_SUMMARY);
	CHECK(harness_recv(fd, &m, NULL) == 0);
	CHECKF(m.type == PROTO_STATUS_REPLY, "got %s", proto_type_name(m.type));
	*out = m.u.status_reply;
}

/* Until cond holds, within 3 s; whether it did. */
#define WAIT(cond)                                                                                 \
	({                                                                                         \
		int ok_ = 0;                                                                       \
		for (int i_ = 0; i_ < 300 && !ok_; i_++) {                                         \
			if (i_)                                                                    \
				usleep(10000);                                                     \
			ok_ = (cond);                                                              \
		}                                                                                  \
		ok_;                                                                               \
	})
/* STATUS (into st) until cond holds. */
#define WAIT_STATUS(fd, st, cond) WAIT((check_status(fd, &(st)), (cond)))

/* The items of a STATUS list (datasets or streams) up to its LIST_END,
 * skipping the BATCH_READYs of fd's streams; returns how many. */
static unsigned recv_list(int fd, struct proto_msg *items, unsigned max)
{
	for (unsigned n = 0;; n++) {
		struct proto_msg m;
		do
			CHECK(harness_recv(fd, &m, NULL) == 0);
		while (m.type == PROTO_BATCH_READY);
		if (m.type == PROTO_LIST_END) {
			CHECKF(m.u.list_end.count == n, "LIST_END says %u items after %u",
			       m.u.list_end.count, n);
			return n;
		}
		CHECKF((m.type == PROTO_DATASET_INFO || m.type == PROTO_STREAM_INFO) && n < max,
		       "got %s, item %u", proto_type_name(m.type), n);
		items[n] = m;
	}
}

/* The names of a list of datasets, joined by spaces. */
static const char *names_of(const struct proto_msg *items, unsigned n)
{
	static char buf[512];
	size_t len = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < n && len < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? " " : "",
					items[i].u.dataset.name);
	return buf;
}

/* ---- the checks ------------------------------------------------------------ */

/* A dataset name with ../ (which libfeeder refuses before sending) is
 * refused by the daemon too, and the client dropped. */
static void test_bad_name(void)
{
	int fd = connect_hello();
	struct proto_msg m = { .type = PROTO_OPEN_STREAM };
	m.u.open.opts = base_request("x", 16, 0);
	uint8_t buf[PROTO_MAX_MESSAGE];
	int len = proto_encode(&m, buf, sizeof(buf));
	/* The dataset field follows the tag; libfeeder would not send this. */
	memcpy(buf + PROTO_HEADER_SIZE + 4, "../tiny", 8);
	send_raw(fd, buf, (size_t)len);
	expect_fatal(fd, FEEDER_EBADNAME, NULL, "dataset ../tiny");
}

/* Garbage from one client while another streams: only the first is dropped. */
static void test_garbage(void)
{
	int good = connect_hello();
	struct ring r;
	open_tiny(good, 4, &r);
	CHECK(take(&r, 1) == 1);

	uint8_t junk[PROTO_MAX_MESSAGE + 200];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	struct proto_msg hello = { .type = PROTO_HELLO };
	uint8_t hb[PROTO_MAX_MESSAGE];
	int hlen = proto_encode(&hello, hb, sizeof(hb));
	uint8_t v99[PROTO_HEADER_SIZE] = { 0x46, 0x45, 0x44, 0x52, 99, 0, 1, 0 }; /* header only */
	struct {
		const void *p;
		size_t len;
		const char *what;
		int code;
	} cases[] = {
		{ junk, 40, "garbage", 0 },
		{ hb, (size_t)hlen - 3, "truncated HELLO", 0 },
		{ junk, sizeof(junk), "oversized", 0 },
		{ hb, 8, "a header fragment", 0 },
		{ v99, PROTO_HEADER_SIZE, "protocol version 99", FEEDER_EVERSION },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int bad = harness_connect_raw(harness.sock);
		send_raw(bad, cases[i].p, cases[i].len);
		expect_fatal(bad, cases[i].code, NULL, cases[i].what);
	}
	/* Garbage followed at once by more input: the ERROR that says why must
	 * still arrive (the daemon lingers instead of resetting the connection
	 * with unread input). */
	for (int round = 0; round < 20; round++) {
		int bad = harness_connect_raw(harness.sock);
		send_raw(bad, junk, 40);
		send_raw(bad, hb, (size_t)hlen);
		send_raw(bad, hb, (size_t)hlen);
		expect_fatal(bad, 0, NULL, "garbage and more");
	}
	/* A message before HELLO, a daemon-only message, a descriptor. */
	int bad = harness_connect_raw(harness.sock);
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = PROTO_STATUS_SUMMARY;
	harness_send(bad, &m);
	expect_fatal(bad, 0, NULL, "STATUS before HELLO");
	bad = connect_hello();
	m = (struct proto_msg){ .type = PROTO_BATCH_READY };
	m.u.ready = (struct proto_batch_ready){ .stream = 1, .samples = 1 };
	harness_send(bad, &m);
	expect_fatal(bad, 0, NULL, "BATCH_READY from a client");
	bad = connect_hello();
	m = (struct proto_msg){ .type = PROTO_CLOSE_STREAM };
	m.u.close.stream = 99;
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(devnull >= 0);
	CHECK(sockmsg_send_msg(bad, &m, devnull, harness_err, sizeof(harness_err)) == 0);
	close(devnull);
	expect_fatal(bad, 0, NULL, "a descriptor");
	/* A RELEASE of a slot not held. */
	bad = connect_hello();
	struct ring rb;
	open_tiny(bad, 4, &rb);
	m = (struct proto_msg){ .type = PROTO_RELEASE };
	m.u.release.stream = rb.info.stream;
	m.u.release.slot = 200;
	harness_send(bad, &m);
	CHECK(await(bad, PROTO_ERROR).u.error.fatal);
	close_ring(&rb);
	close(bad);

	/* The good client streams on to the end of its four epochs. */
	CHECK(1 + take(&r, UINT64_MAX) == 20);
}

/* STATUS lists: the datasets (in name order, with their kinds and sizes)
 * and the streams; CLOSE_STREAM answered with STREAM_END (reason 1). */
static void test_status_lists(void)
{
	int watcher = connect_hello();
	struct proto_msg l[8];
	ask_status(watcher, PROTO_STATUS_DATASETS);
	CHECK(recv_list(watcher, l, 8) == 3 && strcmp(names_of(l, 3), "bad feat tiny") == 0);
	CHECK(l[0].u.dataset.samples == N_TINY && l[1].u.dataset.samples == HARNESS_FEAT_N);
	CHECK(l[1].u.dataset.kind == DSFORMAT_KIND_FEATURES &&
	      l[1].u.dataset.feat_dim == HARNESS_FEAT_DIM);
	CHECK(l[2].u.dataset.samples == N_TINY && l[2].u.dataset.kind == DSFORMAT_KIND_JPEG &&
	      l[2].u.dataset.classes == 3);
	struct feeder_stream_opts o = base_request("tiny", 16, 0);
	struct ring r;
	CHECK(open_stream(watcher, &o, &r) == 0);
	ask_status(watcher, PROTO_STATUS_STREAMS);
	CHECK(recv_list(watcher, l, 8) == 1 && l[0].type == PROTO_STREAM_INFO);
	CHECK(l[0].u.stream.stream == r.info.stream && l[0].u.stream.pid == (uint32_t)getpid());
	CHECK(strcmp(l[0].u.stream.dataset, "tiny") == 0 && l[0].u.stream.batches_total == 5 &&
	      l[0].u.stream.slots == 3);
	close_stream(watcher, r.info.stream);
}

/* A client that sends many requests before reading any answer: the daemon
 * queues what the socket cannot take (up to max_queued bytes) and delivers
 * all of it, in order. */
static void test_slow_reader(void)
{
	int fd = connect_hello();
	enum { REQUESTS = 600 };
	for (int i = 0; i < REQUESTS; i++)
		ask_status(fd, PROTO_STATUS_DATASETS);
	for (int i = 0; i < REQUESTS; i++) {
		struct proto_msg l[4];
		unsigned n = recv_list(fd, l, 4);
		CHECKF(strcmp(names_of(l, n), "bad feat tiny") == 0, "reply %d: %s", i,
		       names_of(l, n));
	}
}

/* max_clients = 6: the seventh connection gets a fatal ERROR at once. */
static void test_max_clients(void)
{
	int fd = connect_hello();
	struct feeder_status st;
	CHECK(WAIT_STATUS(fd, st, st.clients == 1));
	for (int i = 1; i < 6; i++)
		connect_hello();
	expect_fatal(harness_connect_raw(harness.sock), FEEDER_EQUOTA, NULL, "a seventh client");
}

/* SIGHUP rescans: a dataset packed later appears; symbolic links and
 * names that are not allowed never do. */
static void test_rescan(void)
{
	harness_synth_images("late", 4);
	char target[700];
	CHECK(chdir(harness.datasets) == 0);
	snprintf(target, sizeof(target), "%s/tiny", harness.datasets);
	CHECK(symlink(target, "link") == 0);
	CHECK(mkdir("bad name", 0755) == 0);
	/* A real directory whose data.mdb points elsewhere. */
	CHECK(mkdir("sneaky", 0755) == 0);
	strcat(target, "/data.mdb");
	CHECK(symlink(target, "sneaky/data.mdb") == 0);
	CHECK(kill(harness.pid, SIGHUP) == 0);
	int fd = connect_hello();
	struct proto_msg l[8];
	CHECKF(WAIT((ask_status(fd, PROTO_STATUS_DATASETS),
		     strcmp(names_of(l, recv_list(fd, l, 8)), "bad feat late tiny") == 0)),
	       "SIGHUP did not lead to exactly bad, feat, late, tiny");
	struct feeder_stream_opts o = base_request("late", 16, 0);
	o.batch = 2;
	struct ring r;
	uint64_t n;
	CHECK(open_stream(fd, &o, &r) == 0);
	drain(&r, &n);
	CHECK(n == 2);
	close_ring(&r);
	o = base_request("link", 16, 0);
	CHECK(open_stream(fd, &o, &r) == FEEDER_ENODATASET);
}

/* ---- hostile and careless clients ---------------------------- */

/* Run fn in a child that has become uid (and gid) first, as another user
 * would; the socket is opened to everyone for it. The child's checks exit 1
 * on failure (wait_child wants 0); the two take turns (say, hear) over the
 * pipes to_child and from_child. */
static pid_t as_user(uid_t uid, void (*fn)(int rd, int wr), int *to_child, int *from_child)
{
	int down[2], up[2];
	CHECK(pipe(down) == 0 && pipe(up) == 0);
	CHECK(chmod(harness.sock, 0666) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(down[1]);
		close(up[0]);
		if (setgid(uid) != 0 || setuid(uid) != 0)
			_exit(3);
		fn(down[0], up[1]);
		_exit(0);
	}
	close(down[0]);
	close(up[1]);
	*to_child = down[1];
	*from_child = up[0];
	return pid;
}

static void say(int fd, char c)
{
	CHECK(write(fd, &c, 1) == 1);
}

static char hear(int fd)
{
	char c = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	CHECKF(poll(&p, 1, 20000) == 1, "no word from the other side within 20 s");
	CHECK(read(fd, &c, 1) == 1);
	return c;
}

static void wait_child(pid_t pid)
{
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed (status 0x%x)", status);
}

#define IDLE_N 10 /* max_clients 12 - reserved_connections 2 */

static void idle_user(int rd, int wr)
{
	int fds[IDLE_N];
	for (int i = 0; i < IDLE_N; i++)
		fds[i] = harness_connect_raw(harness.sock); /* and never a HELLO */
	/* The 11th is refused: the rest is reserved for administrators. */
	expect_fatal(harness_connect_raw(harness.sock), FEEDER_EQUOTA,
		     "reserved for administrators", "an 11th connection");
	say(wr, 'f'); /* full */
	CHECK(hear(rd) == 'c');
	/* After hello_timeout each idle one got a fatal ERROR and was closed. */
	for (int i = 0; i < IDLE_N; i++)
		expect_fatal(fds[i], FEEDER_ETIMEDOUT, NULL, "an idle connection");
	/* And the user can connect again. */
	close(connect_hello());
}

/* Sixty-four idle connections used to lock everyone out, root's
 * feederctl included. */
static void test_idle(void)
{
	int to, from;
	pid_t pid = as_user(65534, idle_user, &to, &from);
	CHECK(hear(from) == 'f');
	/* Root is served from the reserve while the daemon is "full". */
	int fd = connect_hello();
	struct feeder_status st;
	check_status(fd, &st);
	CHECKF(st.clients == IDLE_N + 1, "%u clients", st.clients);
	close(fd);
	/* The idle ones go after hello_timeout (1 s here). */
	usleep(1500000);
	say(to, 'c');
	wait_child(pid);
	harness_expect_log("no HELLO within 1 s of connecting");
}

static void capped_user(int rd, int wr)
{
	(void)rd;
	for (int i = 0; i < 3; i++)
		connect_hello(); /* held open until the child exits */
	expect_fatal(harness_connect_raw(harness.sock), FEEDER_EQUOTA, "max_clients_per_user = 3",
		     "a fourth connection of the user");
	say(wr, 'd');
}

/* One user holds at most max_clients_per_user connections. */
static void test_per_user(void)
{
	int to, from;
	pid_t pid = as_user(65534, capped_user, &to, &from);
	CHECK(hear(from) == 'd');
	wait_child(pid);
	/* Others (root) are not affected. */
	close(connect_hello());
}

/* Clients that never read their replies are dropped once max_queued
 * bytes wait for them; the daemon stays small and the others are served. */
static long daemon_rss_kib(void)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)harness.pid);
	FILE *f = fopen(path, "r");
	CHECK(f);
	long kib = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void test_never_reads(void)
{
	int good = connect_hello();
	struct ring r;
	open_tiny(good, 1000, &r);
	long before = daemon_rss_kib();
	enum { CLIENTS = 5, REQUESTS = 20000 };
	for (int k = 0; k < CLIENTS; k++) {
		int bad = connect_hello(); /* left open: the daemon must drop it */
		CHECK(fcntl(bad, F_SETFL, fcntl(bad, F_GETFL) | O_NONBLOCK) == 0);
		struct proto_msg m = { .type = PROTO_STATUS };
		m.u.status.what = PROTO_STATUS_DATASETS;
		uint8_t buf[PROTO_MAX_MESSAGE];
		int len = proto_encode(&m, buf, sizeof(buf));
		/* Keep asking while the daemon takes requests: each one's answer
		 * waits for us, since we never read. */
		for (int i = 0, stalls = 0; i < REQUESTS && stalls < 100;) {
			if (send(bad, buf, (size_t)len, MSG_NOSIGNAL) == (ssize_t)len) {
				i++;
				stalls = 0;
				continue;
			}
			if (errno != EAGAIN)
				break; /* the daemon has had enough and closed */
			struct pollfd p = { .fd = bad, .events = POLLOUT };
			stalls += poll(&p, 1, 10) == 0;
		}
	}
	CHECK(take(&r, 20) == 20); /* the good client streams on meanwhile */
	harness_expect_log("replies unread, over max_queued");
	long after = daemon_rss_kib();
	CHECKF(after - before < 16 * 1024, "daemon RSS grew from %ld to %ld KiB", before, after);
	int watch = connect_hello();
	struct feeder_status st;
	CHECKF(WAIT_STATUS(watch, st, st.clients == 2),
	       "%u clients left, the non-readers should be gone", st.clients);
	close(watch);
	fprintf(stderr, "  daemon RSS %ld -> %ld KiB with %d clients that never read\n", before,
		after, CLIENTS);
}

/* The pages of a closed stream's ring are given back whatever the
 * client keeps: memfds kept open hold no memory. */
static void test_memfd_release(void)
{
	int fd = connect_hello();
	enum { STREAMS = 12 };
	int kept[STREAMS];
	uint64_t ring = 0;
	for (int k = 0; k < STREAMS; k++) {
		struct proto_msg m = { .type = PROTO_OPEN_STREAM };
		m.u.open.tag = 100 + (uint32_t)k;
		m.u.open.opts = base_request("tiny", 96, 1);
		m.u.open.opts.slots = 4;
		harness_send(fd, &m);
		int mfd = -1;
		CHECK(harness_recv(fd, &m, &mfd) == 0 && m.type == PROTO_STREAM_OPENED && mfd >= 0);
		uint32_t id = m.u.opened.stream;
		ring = m.u.opened.ring_size;
		/* Let the daemon fill every slot. */
		for (int i = 0; i < 4; i++)
			await(fd, PROTO_BATCH_READY);
		struct stat st;
		CHECK(fstat(mfd, &st) == 0);
		CHECKF((uint64_t)st.st_blocks * 512 >= ring / 2, "a full ring holds %llu bytes",
		       (unsigned long long)st.st_blocks * 512);
		close_stream(fd, id);
		kept[k] = mfd;
	}
	/* Closed streams' memfds, still open here, hold no pages any more. */
	for (int k = 0; k < STREAMS; k++) {
		struct stat st = { 0 };
		/* A zombie stream goes when its workers let go. */
		CHECKF(WAIT(fstat(kept[k], &st) == 0 && st.st_blocks == 0),
		       "memfd %d of a closed stream still holds %llu bytes", k,
		       (unsigned long long)st.st_blocks * 512);
	}
	struct feeder_status s;
	check_status(fd, &s);
	CHECK(s.memory_used == 0);
	fprintf(stderr, "  %d closed rings of %llu bytes each: 0 bytes left in the kept memfds\n",
		STREAMS, (unsigned long long)ring);
}

/* CLOSE_STREAM of another client's stream is an ERROR (the other's
 * stream goes on); an empty message is a fatal ERROR, not a silent close. */
static void test_close_other(void)
{
	int a = connect_hello(), b = connect_hello();
	struct ring r;
	open_tiny(a, 100, &r);
	struct proto_msg m = { .type = PROTO_CLOSE_STREAM };
	m.u.close.stream = r.info.stream;
	harness_send(b, &m);
	CHECK(harness_recv(b, &m, NULL) == 0);
	CHECKF(m.type == PROTO_ERROR && !m.u.error.fatal && m.u.error.stream == r.info.stream &&
		       strstr(m.u.error.message, "does not have"),
	       "got %s", proto_type_name(m.type));
	fprintf(stderr, "  (expected) ERROR %d: %s\n", m.u.error.code, m.u.error.message);
	CHECK(take(&r, 6) == 6);
	CHECK(send(b, "", 0, MSG_NOSIGNAL) == 0);
	expect_fatal(b, FEEDER_EPROTO, NULL, "an empty message");
}

/* A stream that fails (on_error=fail, a corrupt record) is told so in a
 * non-fatal ERROR, and keeps its ring (a client may still read, or copy
 * from, batches it holds) until the client closes it. */
static void test_failed_kept(void)
{
	int fd = connect_hello();
	struct feeder_stream_opts o = base_request("bad", 16, 1);
	o.on_error = FEEDER_ON_ERROR_FAIL;
	o.shuffle = 0;
	o.batch = 4;
	struct ring r;
	CHECK(open_stream(fd, &o, &r) == 0);
	struct proto_msg m = await(fd, PROTO_ERROR);
	CHECK(m.u.error.stream == r.info.stream && !m.u.error.fatal);
	/* The ERROR names the record's fault (record 1 fails its CRC). */
	CHECKF(m.u.error.code == FEEDER_ECORRUPT || m.u.error.code == FEEDER_EDECODE, "code %d: %s",
	       m.u.error.code, m.u.error.message);
	struct feeder_status st;
	check_status(fd, &st);
	CHECKF(st.memory_used == r.info.ring_size, "a failed stream holds %llu bytes, want %llu",
	       (unsigned long long)st.memory_used, (unsigned long long)r.info.ring_size);
	CHECK(close_stream(fd, r.info.stream) == 0);
	CHECK(WAIT_STATUS(fd, st, st.memory_used == 0));
}

static void visible_user(int rd, int wr)
{
	int fd = connect_hello();
	struct ring r;
	open_tiny(fd, 100, &r);
	say(wr, 'o');
	CHECK(hear(rd) == 'l');
	struct proto_msg l[4];
	ask_status(fd, PROTO_STATUS_STREAMS);
	unsigned n = recv_list(fd, l, 4);
	CHECKF(n == 1 && l[0].u.stream.uid == 65534,
	       "user 65534 sees %u streams (the first of uid %u), want its own 1", n,
	       l[0].u.stream.uid);
	say(wr, 'd');
}

/* A user sees only its own streams; root sees everyone's. */
static void test_visibility(void)
{
	int fd = connect_hello();
	struct ring r;
	open_tiny(fd, 100, &r);
	int to, from;
	pid_t pid = as_user(65534, visible_user, &to, &from);
	CHECK(hear(from) == 'o');
	struct proto_msg l[4];
	ask_status(fd, PROTO_STATUS_STREAMS);
	unsigned n = recv_list(fd, l, 4), others = 0;
	for (unsigned i = 0; i < n; i++)
		others += l[i].u.stream.uid == 65534;
	CHECKF(n == 2 && others == 1, "root sees %u streams (%u of user 65534), want 2 (1)", n,
	       others);
	say(to, 'l');
	CHECK(hear(from) == 'd');
	wait_child(pid);
}

/* Device-ring releases are polled, never waited on. The GPU
 * is emulated and every release takes 60 s to complete on the "client's
 * GPU": the device-ring stream gets one batch per slot and then nothing (a
 * slot is not written again before its release completes), while another
 * client's host-ring stream runs to its end on the same two workers (a
 * worker that waited for the release inside its task, as before, would sit
 * on the stalled stream). Closing the stalled stream frees its ring at once. */
static void test_device_release(void)
{
	int a = connect_hello();
	struct feeder_stream_opts o = base_request("tiny", 16, 1);
	o.placement = FEEDER_PLACEMENT_GPU;
	o.device_batches = 1;
	o.slots = 2;
	o.batch = 2;
	o.epochs = 50;
	struct ring ra;
	CHECK(open_stream(a, &o, &ra) == 0);
	CHECKF(ra.info.memory == FEEDER_MEMORY_DEVICE && ra.info.device_table != 0,
	       "memory %u, device table at %llu", ra.info.memory,
	       (unsigned long long)ra.info.device_table);
	struct batch b;
	for (int i = 0; i < 2; i++) {
		CHECK(next_batch(&ra, &b));
		const int32_t *labels = (const void *)(b.slot + ra.info.labels_offset);
		for (uint32_t k = 0; k < b.ready.samples; k++)
			CHECK(labels[k] >= 0 && (uint32_t)labels[k] < ra.info.classes);
		release(&ra, &b);
	}

	int bfd = connect_hello();
	struct ring rb;
	open_tiny(bfd, 20, &rb);
	uint64_t n = take(&rb, UINT64_MAX);
	CHECKF(n == rb.info.batches, "host stream: %llu of %llu batches", (unsigned long long)n,
	       (unsigned long long)rb.info.batches);

	/* Nothing more for the stalled stream: both its slots await release. */
	char buf[64];
	ssize_t k = recv(a, buf, sizeof(buf), MSG_DONTWAIT);
	CHECKF(k < 0 && errno == EAGAIN,
	       "the device stream got a message (%zd bytes) while its releases were pending", k);
	struct feeder_status st;
	check_status(bfd, &st);
	CHECKF(st.memory_used > 0 && st.streams >= 1, "memory used %llu, %u streams",
	       (unsigned long long)st.memory_used, st.streams);

	uint64_t before = st.memory_used;
	CHECK(close_stream(a, ra.info.stream) == 0);
	CHECKF(WAIT_STATUS(bfd, st, before - st.memory_used >= ra.info.ring_size),
	       "%llu bytes used, %llu before the close", (unsigned long long)st.memory_used,
	       (unsigned long long)before);
	fprintf(stderr,
		"  device stream stalled at 2 batches, 2 releases pending; host stream %llu "
		"batches; stalled stream closed, its %llu bytes freed\n",
		(unsigned long long)n, (unsigned long long)(before - st.memory_used));
}

/* A device ring the device cannot hold (the emulated device has 8 KiB for
 * rings, the stream asks for three 3840-byte slots): the stream is not
 * refused but served from the host ring. STREAM_OPENED says memory=host,
 * with no device table, so the client reads its batches there: the same
 * bytes as the same stream without device batches. The log says it once,
 * naming the stream and the reason. */
static void test_device_fallback(void)
{
	int fd = connect_hello();
	struct feeder_stream_opts o = base_request("tiny", 16, 1);
	o.placement = FEEDER_PLACEMENT_GPU;
	o.device_batches = 1;
	struct ring r;
	CHECKF(open_stream(fd, &o, &r) == 0, "a device ring too large refused the stream: %s",
	       last_error);
	CHECKF(r.info.memory == FEEDER_MEMORY_HOST && r.info.device_table == 0 &&
		       r.info.placement == FEEDER_PLACEMENT_GPU,
	       "memory %u, device table at %llu, placement %u", r.info.memory,
	       (unsigned long long)r.info.device_table, r.info.placement);
	uint32_t id = r.info.stream;
	uint64_t n[2], hash[2];
	hash[0] = drain(&r, &n[0]);
	close_ring(&r);
	o.device_batches = 0;
	CHECK(open_stream(fd, &o, &r) == 0);
	hash[1] = drain(&r, &n[1]);
	close_ring(&r);
	CHECKF(n[0] == n[1] && n[0] == r.info.batches && hash[0] == hash[1],
	       "fallback stream: %llu batches, host stream %llu; same bytes: %d",
	       (unsigned long long)n[0], (unsigned long long)n[1], hash[0] == hash[1]);
	char line[200];
	snprintf(line, sizeof(line),
		 "stream %u: device batches were asked for, but its device ring "
		 "cannot be made (cudaMalloc of the device ring failed: out of memory",
		 id);
	harness_expect_log(line);
	unsigned said = harness_count_log("device ring cannot be made");
	CHECKF(said == 1, "the fallback was logged %u times", said);
	fprintf(stderr,
		"  device ring refused: %llu batches from the host ring, as a host stream's\n",
		(unsigned long long)n[0]);
}

/* The wave pipeline runs on the CPU only. On a daemon with a GPU (emulated
 * here), placement=gpu is refused at OPEN_STREAM with a sentence that says
 * so, and placement=auto is served on the CPU: STREAM_OPENED says cpu, and
 * its batches are byte for byte those of placement=cpu. */
static void test_gpu_wave(void)
{
	int fd = connect_hello();
	struct feeder_stream_opts o;
	proto_opts_default(&o);
	snprintf(o.dataset, sizeof(o.dataset), "wave");
	o.pipeline = FEEDER_PIPE_WAVE;
	o.wave.chunk_len = 50;
	o.wave.bins = 23;
	o.batch = 2;
	o.slots = 2;
	o.seed = 5;
	struct ring r;
	o.placement = FEEDER_PLACEMENT_CPU;
	int rc = open_stream(fd, &o, &r);
	if (rc && strstr(last_error, "without"))
		SKIP("feederd has no wave pipeline here: %s", last_error);
	CHECK(rc == 0);
	uint64_t n[2], hash[2];
	hash[0] = drain(&r, &n[0]);
	close_ring(&r);
	o.placement = FEEDER_PLACEMENT_AUTO;
	CHECK(open_stream(fd, &o, &r) == 0);
	CHECKF(r.info.placement == FEEDER_PLACEMENT_CPU,
	       "a wave stream with placement=auto is placed %u, not on the CPU", r.info.placement);
	hash[1] = drain(&r, &n[1]);
	close_ring(&r);
	CHECKF(n[0] == HARNESS_WAVE_N / 2 && n[1] == n[0] && hash[0] == hash[1],
	       "wave: %llu batches on the CPU, %llu with auto; same bytes: %d",
	       (unsigned long long)n[0], (unsigned long long)n[1], hash[0] == hash[1]);
	o.placement = FEEDER_PLACEMENT_GPU;
	rc = open_stream(fd, &o, &r);
	CHECKF(rc == FEEDER_EINVAL && strstr(last_error, "the wave pipeline runs on the CPU only"),
	       "wave with placement=gpu: code %d, '%s'", rc, last_error);
	fprintf(stderr, "  wave: auto served on the CPU (%llu batches as cpu's), gpu refused\n",
		(unsigned long long)n[1]);
}

/* GPU contexts are lent to batches, not owned by slots: a placement=gpu
 * stream of 6 slots on 2 workers makes at most 2 (min(slots, workers)),
 * and only once its workers need them, and its batches are the bytes of
 * the same stream with one slot (one context). */
static void test_gpu_contexts(void)
{
	int fd = connect_hello();
	struct feeder_stream_opts o = base_request("tiny", 16, 1);
	o.placement = FEEDER_PLACEMENT_GPU;
	o.batch = 2;
	uint64_t n[2], hash[2], want = 0;
	uint32_t id[2];
	const uint32_t slots[2] = { 6, 1 };
	for (int i = 0; i < 2; i++) {
		struct ring r;
		o.slots = slots[i];
		CHECK(open_stream(fd, &o, &r) == 0);
		id[i] = r.info.stream;
		want = r.info.batches;
		hash[i] = drain(&r, &n[i]);
		close_ring(&r);
	}
	CHECKF(n[0] == n[1] && n[0] == want && want >= 10 && hash[0] == hash[1],
	       "6 slots: %llu batches, 1 slot: %llu; same bytes: %d", (unsigned long long)n[0],
	       (unsigned long long)n[1], hash[0] == hash[1]);
	unsigned made[2];
	for (int i = 0; i < 2; i++) {
		char text[80];
		snprintf(text, sizeof(text), "stream %u: GPU context ", id[i]);
		made[i] = harness_count_log(text);
	}
	CHECKF(made[0] >= 1 && made[0] <= 2 && made[1] == 1,
	       "GPU contexts made: %u for 6 slots on 2 workers, %u for 1 slot", made[0], made[1]);
	fprintf(stderr,
		"  %llu batches each; GPU contexts: %u for 6 slots on 2 workers, %u for 1\n",
		(unsigned long long)n[0], made[0], made[1]);
}

/* CASE(NAME, .field = value...): the case NAME, run by test_NAME. */
#define CASE(id, ...)                                                                              \
	{                                                                                          \
		.name = #id, .run = test_##id, __VA_ARGS__                                         \
	}
static const struct wire_case {
	const char *name;
	void (*run)(void);
	const char *conf; /* lines added to the daemon's configuration */
	int gpu;          /* the GPU emulated: gpu = 0, FEEDERD_GPU_EMULATE=1 */
	const char *env;  /* NAME=VALUE for the daemon, or NULL */
	int wave;         /* also serve the wave dataset */
} cases[] = {
	CASE(bad_name),
	CASE(garbage),
	CASE(status_lists),
	CASE(slow_reader),
	CASE(max_clients),
	CASE(rescan),
	CASE(idle, .conf = "max_clients = 12\nreserved_connections = 2\nhello_timeout = 1\n"
			   "max_clients_per_user = 100\n"),
	CASE(per_user, .conf = "max_clients_per_user = 3\n"),
	CASE(never_reads, .conf = "max_queued = 64K\n"),
	CASE(memfd_release, .conf = "memory_limit = 64M\n"),
	CASE(close_other),
	CASE(failed_kept),
	CASE(visibility),
	CASE(device_release, .gpu = 1, .env = "FEEDERD_GPU_EMULATE_RELEASE_MS=60000"),
	CASE(device_fallback, .gpu = 1, .env = "FEEDERD_GPU_EMULATE_DEVICE_KB=8"),
	CASE(gpu_wave, .gpu = 1, .wave = 1),
	CASE(gpu_contexts, .gpu = 1),
};

/* The daemon of every case: 16 slots a stream, 6 clients, an 8 MiB quota
 * each, 1 s to drain at a stop; the case's lines after these. */
static void start(const struct wire_case *c)
{
	char conf[512];
	snprintf(conf, sizeof(conf), "max_slots = 16\nmax_clients = 6\n%s%s",
		 c->gpu ? "gpu = 0\n" : "", c->conf ? c->conf : "");
	static const char *const flags[] = { "--client-quota", "8M", "--shutdown-drain", "1",
					     NULL };
	if (c->gpu)
		CHECK(putenv("FEEDERD_GPU_EMULATE=1") == 0);
	if (c->env)
		CHECK(putenv((char *)c->env) == 0);
	harness_start(conf, flags);
	struct stat st;
	CHECK(stat(harness.sock, &st) == 0);
	CHECKF((st.st_mode & 0777) == 0660, "socket mode %o, want 0660",
	       (unsigned)(st.st_mode & 0777));
}

/* test_daemon_wire CASE: one behaviour against a fresh daemon, so that a
 * failure shows which and hides no other (meson runs each case). The
 * process ends with the case: what a case leaves open or mapped goes then. */
int main(int argc, char **argv)
{
	const struct wire_case *c = NULL;
	for (size_t i = 0; argc == 2 && i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(argv[1], cases[i].name) == 0)
			c = &cases[i];
	if (!c) {
		fprintf(stderr, "usage: test_daemon_wire CASE (");
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			fprintf(stderr, "%s%s", i ? " " : "", cases[i].name);
		fprintf(stderr, ")\n");
		return 2;
	}
	harness_init("wire");
	harness_synth_images("tiny", N_TINY);
	harness_corrupt_copy("tiny", "bad");
	harness_features_dataset("feat");
	if (c->wave)
		harness_wave_dataset("wave");
	start(c);
	fprintf(stderr, "%s\n", c->name);
	c->run();
	harness_passed();
	return 0;
}
