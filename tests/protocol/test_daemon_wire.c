/* test_daemon_wire.c — a real feederd process driven over the raw protocol.
 *
 * Builds two small JPEG datasets in a temporary directory (one with a record
 * whose CRC fails and one that is not a JPEG), starts build/daemon/feederd on
 * a temporary socket, and checks as a client speaking the wire protocol
 * directly (no libfeeder): batches, slot headers, labels and pixels against
 * jpeg_pipeline_reference; determinism; resume at batch k; rank coverage;
 * replacement of corrupt samples and on_error=fail; refusals (missing
 * dataset, ../ name, quota); garbage, truncated and oversized messages
 * (ERROR, that client dropped, another keeps streaming); a client killed
 * while holding slots (memory returned); STATUS; SIGTERM -> GOODBYE, exit 0;
 * and, with the GPU emulated on the host (FEEDERD_GPU_EMULATE=1), placement:
 * device-ring releases, a device ring the device cannot hold, wave streams
 * (CPU only), GPU contexts lent to batches. */
#include "check.h"
#include "crc32c.h"
#include "detrand.h"
#include "dsstore.h"
#include "features_pipeline.h"
#include "jpeg_pipeline.h"
#include "protocol.h"
#include "sampler.h"
#include "sockmsg.h"
#include "status.h"
#include "../pipelines/jpeg_synth.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_TINY 23
#define N_BAD 12
#define BAD_CRC 5   /* payload altered after its CRC was taken */
#define BAD_JPEG 9  /* correct CRC, not a JPEG */

static char tmpdir[256], sock_path[320], ds_dir[320], log_path[320];
static pid_t daemon_pid = -1;
static char err[512];

static int passed;

static void cleanup(void)
{
	if (!passed && log_path[0]) {
		char cmd[400];
		fprintf(stderr, "--- feederd log (last 40 lines) ---\n");
		snprintf(cmd, sizeof(cmd), "tail -n 40 '%s' >&2", log_path);
		if (system(cmd) != 0)
			fprintf(stderr, "(no daemon log)\n");
	}
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
	}
	if (tmpdir[0]) {
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
}

/* ---- datasets ---------------------------------------------------------- */

static uint8_t *payloads[N_TINY];
static size_t payload_lens[N_TINY];

static void make_dataset(const char *name, unsigned n, int corrupt)
{
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/%s", ds_dir, name);
	CHECK(mkdir(dir, 0755) == 0);
	struct dsstore_writer *w;
	CHECKF(dsstore_writer_open(dir, 0, &w, err, sizeof(err)) == 0, "%s", err);
	for (unsigned i = 0; i < n; i++) {
		unsigned long len;
		uint8_t *jpg = jpeg_synth(40 + (int)(i * 7) % 50, 30 + (int)(i * 11) % 40, TJSAMP_420, 90,
					  i + 1, &len);
		CHECK(jpg);
		struct dsformat_sample s = { .label = i % 3, .payload_len = (uint32_t)len };
		s.crc = crc32c(0, jpg, len);
		if (corrupt && i == BAD_CRC)
			jpg[len / 2] ^= 0x55;
		if (corrupt && i == BAD_JPEG) {
			memset(jpg, 0x42, len);
			s.crc = crc32c(0, jpg, len);
		}
		CHECKF(dsstore_writer_put_sample(w, i, &s, jpg, err, sizeof(err)) == 0, "%s", err);
		if (!corrupt && i < N_TINY && !payloads[i]) {
			payloads[i] = malloc(len);
			memcpy(payloads[i], jpg, len);
			payload_lens[i] = len;
		}
		tjFree(jpg);
	}
	for (unsigned c = 0; c < 3; c++) {
		char cname[16];
		snprintf(cname, sizeof(cname), "class%u", c);
		CHECK(dsstore_writer_put_label(w, c, cname, err, sizeof(err)) == 0);
	}
	struct dsformat_header h = { .version = DSFORMAT_VERSION, .kind = DSFORMAT_KIND_JPEG,
				     .samples = n, .classes = 3 };
	CHECKF(dsstore_writer_finish(w, &h, err, sizeof(err)) == 0, "%s", err);
}

#define N_FEAT 7
#define FEAT_DIM 8

static float *feat_payload(unsigned i, uint32_t *frames)
{
	*frames = 12 + i * 5; /* some shorter than the chunk, some longer */
	float *m = malloc(sizeof(float) * *frames * FEAT_DIM);
	for (uint32_t t = 0; t < *frames; t++)
		for (uint32_t d = 0; d < FEAT_DIM; d++)
			m[t * FEAT_DIM + d] = (float)(i + 1) * 0.5f + (float)d - 0.01f * (float)(t * t % 17);
	return m;
}

static void make_features_dataset(const char *name)
{
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/%s", ds_dir, name);
	CHECK(mkdir(dir, 0755) == 0);
	struct dsstore_writer *w;
	CHECKF(dsstore_writer_open(dir, 0, &w, err, sizeof(err)) == 0, "%s", err);
	for (unsigned i = 0; i < N_FEAT; i++) {
		uint32_t frames;
		float *m = feat_payload(i, &frames);
		size_t len = sizeof(float) * frames * FEAT_DIM;
		struct dsformat_sample smp = { .label = 100 + i, .payload_len = (uint32_t)len,
					       .frames = frames, .dim = FEAT_DIM, .dtype = DSFORMAT_DTYPE_F32 };
		smp.crc = crc32c(0, m, len);
		CHECKF(dsstore_writer_put_sample(w, i, &smp, m, err, sizeof(err)) == 0, "%s", err);
		free(m);
	}
	struct dsformat_header h = { .version = DSFORMAT_VERSION, .kind = DSFORMAT_KIND_FEATURES,
				     .samples = N_FEAT, .classes = 0, .feat_dim = FEAT_DIM,
				     .dtype = DSFORMAT_DTYPE_F32 };
	CHECKF(dsstore_writer_finish(w, &h, err, sizeof(err)) == 0, "%s", err);
}

/* ---- daemon ------------------------------------------------------------ */

#define N_WAVE 8
#define WAVE_SAMPLES 12000 /* 0.75 s at 16 kHz */

/* Waveforms at 16 kHz (s16): tones of a pitch per record, two classes. */
static void make_wave_dataset(const char *name)
{
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/%s", ds_dir, name);
	CHECK(mkdir(dir, 0755) == 0);
	struct dsstore_writer *w;
	CHECKF(dsstore_writer_open(dir, 0, &w, err, sizeof(err)) == 0, "%s", err);
	int16_t *pcm = malloc(sizeof(int16_t) * WAVE_SAMPLES);
	CHECK(pcm);
	for (unsigned i = 0; i < N_WAVE; i++) {
		for (unsigned k = 0; k < WAVE_SAMPLES; k++)
			pcm[k] = (int16_t)(8000.0 * sin(k * (0.05 + 0.02 * i)) + (int)(k * 7919u % 200) - 100);
		size_t len = sizeof(int16_t) * WAVE_SAMPLES;
		struct dsformat_sample smp = { .label = i % 2, .payload_len = (uint32_t)len,
					       .frames = WAVE_SAMPLES, .dim = 1,
					       .dtype = DSFORMAT_DTYPE_S16 };
		smp.crc = crc32c(0, pcm, len);
		CHECKF(dsstore_writer_put_sample(w, i, &smp, pcm, err, sizeof(err)) == 0, "%s", err);
	}
	free(pcm);
	struct dsformat_header h = { .version = DSFORMAT_VERSION, .kind = DSFORMAT_KIND_WAVE,
				     .samples = N_WAVE, .classes = 0, .feat_dim = 1,
				     .dtype = DSFORMAT_DTYPE_S16, .rate = 16000 };
	CHECKF(dsstore_writer_finish(w, &h, err, sizeof(err)) == 0, "%s", err);
}

static void start_daemon(const char *build, const char *extra_conf)
{
	char exe[400], conf[400];
	snprintf(exe, sizeof(exe), "%s/daemon/feederd", build);
	snprintf(conf, sizeof(conf), "%s/feederd.conf", tmpdir);
	FILE *f = fopen(conf, "w");
	CHECK(f);
	fprintf(f, "# test configuration\nworkers = 2\nmax_slots = 16\nmax_clients = 6\n%s",
		extra_conf ? extra_conf : "");
	fclose(f);
	daemon_pid = fork();
	CHECK(daemon_pid >= 0);
	if (daemon_pid == 0) {
		int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 2);
			close(fd);
		}
		unsetenv("NOTIFY_SOCKET");
		unsetenv("LISTEN_FDS");
		execl(exe, exe, "--config", conf, "--socket", sock_path, "--datasets", ds_dir,
		      "--client-quota", "8M", "--log-level", "debug", "--shutdown-drain", "1",
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		struct stat st;
		if (stat(sock_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
			CHECKF((st.st_mode & 0777) == 0660, "socket mode %o, want 0660",
			       (unsigned)(st.st_mode & 0777));
			return;
		}
		int status;
		if (waitpid(daemon_pid, &status, WNOHANG) == daemon_pid) {
			daemon_pid = -1;
			char cmd[400];
			snprintf(cmd, sizeof(cmd), "cat '%s' >&2", log_path);
			if (system(cmd) != 0)
				fprintf(stderr, "(no daemon log)\n");
			CHECKF(0, "feederd exited at start (status 0x%x)", status);
		}
		usleep(10000);
	}
	CHECKF(0, "feederd did not create %s", sock_path);
}

/* ---- client side --------------------------------------------------------- */

static int connect_raw(void)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	CHECK(strlen(sock_path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	CHECKF(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect: %s", strerror(errno));
	return fd;
}

/* Receive one message within 10 s. */
static int recv_msg(int fd, struct proto_msg *m, int *mfd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, 10000);
	CHECKF(n == 1, "no message from feederd within 10 s");
	return sockmsg_recv_msg(fd, m, mfd, err, sizeof(err));
}

static void send_msg(int fd, const struct proto_msg *m)
{
	CHECKF(sockmsg_send_msg(fd, m, -1, err, sizeof(err)) == 0, "%s", err);
}

static int connect_hello(void)
{
	int fd = connect_raw();
	struct proto_msg m = { .type = PROTO_HELLO };
	m.u.hello.pid = (uint32_t)getpid();
	strcpy(m.u.hello.agent, "test_daemon_wire");
	send_msg(fd, &m);
	CHECK(recv_msg(fd, &m, NULL) == 0);
	CHECKF(m.type == PROTO_WELCOME, "got %s", proto_type_name(m.type));
	CHECK(m.u.welcome.session > 0 && m.u.welcome.quota == 8u << 20);
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

/* Open a stream; returns 0 or the ERROR code. */
/* The message of the last ERROR open_stream received. */
static char last_error[PROTO_TEXT_MAX];

static int open_stream(int fd, const struct feeder_stream_opts *o, struct ring *r)
{
	static uint32_t tags;
	uint32_t tag = ++tags;
	struct proto_msg m = { .type = PROTO_OPEN_STREAM };
	m.u.open.tag = tag;
	m.u.open.opts = *o;
	send_msg(fd, &m);
	int mfd = -1;
	CHECK(recv_msg(fd, &m, &mfd) == 0);
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

static void close_ring(struct ring *r)
{
	munmap(r->map, r->info.ring_size);
}

struct batch {
	struct proto_batch_ready ready;
	const uint8_t *slot;
};

/* Next BATCH_READY of the stream (1) or its STREAM_END (0). */
static int next_batch(struct ring *r, struct batch *b)
{
	struct proto_msg m;
	CHECK(recv_msg(r->fd, &m, NULL) == 0);
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
	send_msg(r->fd, &m);
}

/* Run a whole stream, returning a hash of every byte of every batch
 * (labels and tensors) and the batch count; checks order on the way. */
static uint64_t drain(struct ring *r, uint64_t *batches, uint32_t *replacements, int32_t *labels_out)
{
	struct batch b;
	uint64_t hash = 1469598103934665603ull, n = 0;
	uint32_t repl = 0;
	while (next_batch(r, &b)) {
		CHECK(b.ready.batch_index == r->info.batches_per_epoch - r->info.batches + n ||
		      r->info.batches == r->info.batches_per_epoch);
		if (r->info.batches == r->info.batches_per_epoch)
			CHECK(b.ready.batch_index == n);
		const int32_t *labels = (const void *)(b.slot + r->info.labels_offset);
		if (labels_out)
			memcpy(labels_out + b.ready.batch_index * r->info.batch, labels,
			       4 * b.ready.samples);
		hash = detrand_mix(hash ^ crc32c(0, labels, 4 * b.ready.samples));
		size_t sample = r->info.tensor_bytes / r->info.batch;
		hash = detrand_mix(hash ^ crc32c(0, b.slot + r->info.tensor_offset,
						  sample * b.ready.samples));
		repl += b.ready.replacements;
		release(r, &b);
		n++;
	}
	*batches = n;
	if (replacements)
		*replacements = repl;
	return hash;
}

static int ioctl_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

static void check_status(int fd, struct feeder_status *out)
{
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = PROTO_STATUS_SUMMARY;
	send_msg(fd, &m);
	CHECK(recv_msg(fd, &m, NULL) == 0);
	CHECKF(m.type == PROTO_STATUS_REPLY, "got %s", proto_type_name(m.type));
	*out = m.u.status_reply;
}

/* ---- the checks ------------------------------------------------------------ */

static void test_pixels(void)
{
	int fd = connect_hello();
	struct feeder_stream_opts o = base_request("tiny", 24, 0);
	struct ring r;
	CHECK(open_stream(fd, &o, &r) == 0);
	CHECK(r.info.batches == 5 && r.info.batches_per_epoch == 5 && r.info.samples == N_TINY);
	CHECK(r.info.shape[0] == 5 && r.info.shape[1] == 3 && r.info.shape[2] == 24 && r.info.shape[3] == 24);
	struct jpeg_worker *jw;
	CHECK(jpeg_worker_create(&jw, err, sizeof(err)) == 0);
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 24, 0);
	p.dtype = FEEDER_DTYPE_U8;
	p.layout = FEEDER_LAYOUT_NCHW;
	size_t sb = jpeg_pipeline_sample_bytes(&p);
	uint8_t *ref = malloc(sb);
	struct sampler order;
	CHECK(sampler_init(&order, N_TINY, o.seed, o.epoch, 0, 1, 1, err, sizeof(err)) == 0);
	struct batch b;
	uint64_t n = 0, seen = 0;
	while (next_batch(&r, &b)) {
		CHECK(b.ready.batch_index == n && b.ready.epoch == 0);
		CHECK(b.ready.samples == (n < 4 ? 5u : 3u) && b.ready.replacements == 0);
		const int32_t *labels = (const void *)(b.slot + r.info.labels_offset);
		for (uint32_t i = 0; i < b.ready.samples; i++) {
			uint64_t idx = sampler_at(&order, n * 5 + i);
			seen |= 1ull << idx;
			CHECKF(labels[i] == (int32_t)(idx % 3), "batch %llu sample %u label %d, want %llu",
			       (unsigned long long)n, i, labels[i], (unsigned long long)(idx % 3));
			uint64_t key = detrand_key(o.seed, o.epoch, idx);
			CHECK(jpeg_pipeline_reference(jw, &p, payloads[idx], payload_lens[idx], key, ref, err,
						      sizeof(err)) == 0);
			const uint8_t *got = b.slot + r.info.tensor_offset + i * sb;
			double mad = 0;
			for (size_t k = 0; k < sb; k++)
				mad += abs((int)got[k] - (int)ref[k]);
			mad /= (double)sb;
			CHECKF(mad <= 2.0, "sample %llu: mean abs difference %.3f > 2", (unsigned long long)idx, mad);
		}
		release(&r, &b);
		n++;
	}
	CHECK(n == 5 && seen == (1ull << N_TINY) - 1);
	free(ref);
	jpeg_worker_destroy(jw);
	close_ring(&r);
	close(fd);
}

static void test_determinism_resume_ranks(void)
{
	int fd = connect_hello();
	struct feeder_stream_opts o = base_request("tiny", 16, 1);
	o.dtype = FEEDER_DTYPE_F16;
	struct ring r1, r2, r3;
	uint64_t n1, n2, n3;
	CHECK(open_stream(fd, &o, &r1) == 0);
	uint64_t h1 = drain(&r1, &n1, NULL, NULL);
	CHECK(open_stream(fd, &o, &r2) == 0);
	CHECK(r2.info.stream != r1.info.stream);
	uint64_t h2 = drain(&r2, &n2, NULL, NULL);
	CHECK(n1 == 5 && n2 == 5 && h1 == h2);
	o.seed++;
	CHECK(open_stream(fd, &o, &r3) == 0);
	CHECK(drain(&r3, &n3, NULL, NULL) != h1);
	close_ring(&r1);
	close_ring(&r2);
	close_ring(&r3);

	/* Resume at batch 3 of epoch 0 over two epochs: exactly the tail of
	 * epoch 0 and then all of epoch 1, each equal to a fresh stream's. */
	o.seed--;
	o.start_batch = 3;
	o.epochs = 2;
	CHECK(open_stream(fd, &o, &r1) == 0);
	CHECK(r1.info.batches == 2 + 5);
	struct batch b;
	uint8_t *tail = malloc(2 * r1.info.slot_size);
	for (int i = 0; i < 7; i++) {
		CHECK(next_batch(&r1, &b));
		CHECK(b.ready.epoch == (i < 2 ? 0u : 1u));
		CHECK(b.ready.batch_index == (uint64_t)(i < 2 ? 3 + i : i - 2));
		if (i < 2)
			memcpy(tail + i * r1.info.slot_size, b.slot, r1.info.slot_size);
		release(&r1, &b);
	}
	CHECK(!next_batch(&r1, &b));
	o.start_batch = 0;
	o.epochs = 1;
	CHECK(open_stream(fd, &o, &r2) == 0);
	for (int i = 0; i < 5; i++) {
		CHECK(next_batch(&r2, &b));
		if (i >= 3) {
			const uint8_t *t = tail + (i - 3) * r1.info.slot_size;
			uint32_t ns = b.ready.samples;
			CHECK(memcmp(t + r2.info.labels_offset, b.slot + r2.info.labels_offset, 4 * ns) == 0);
			CHECK(memcmp(t + r2.info.tensor_offset, b.slot + r2.info.tensor_offset,
				     r2.info.tensor_bytes / 5 * ns) == 0);
		}
		release(&r2, &b);
	}
	CHECK(!next_batch(&r2, &b));
	free(tail);
	close_ring(&r1);
	close_ring(&r2);

	/* Three ranks, batch 2, drop_last off: disjoint and covering. */
	int count[N_TINY] = { 0 };
	for (uint32_t rank = 0; rank < 3; rank++) {
		o = base_request("tiny", 8, 0);
		o.batch = 2;
		o.rank = rank;
		o.world = 3;
		CHECK(open_stream(fd, &o, &r1) == 0);
		struct sampler s;
		CHECK(sampler_init(&s, N_TINY, o.seed, 0, rank, 3, 1, err, sizeof(err)) == 0);
		int32_t labels[N_TINY];
		uint64_t nb;
		drain(&r1, &nb, NULL, labels);
		CHECK(nb == (sampler_len(&s) + 1) / 2);
		for (uint64_t k = 0; k < sampler_len(&s); k++) {
			uint64_t idx = sampler_at(&s, k);
			CHECK(labels[k] == (int32_t)(idx % 3));
			count[idx]++;
		}
		close_ring(&r1);
	}
	for (int i = 0; i < N_TINY; i++)
		CHECK(count[i] == 1);
	close(fd);
}

/* A features stream: (batch, feat_dim, chunk_len) chunks equal to the
 * features pipeline run on the stored matrices, labels included. */
static void test_features(void)
{
	int fd = connect_hello();
	struct feeder_stream_opts o;
	proto_opts_features(&o, 20, 1);
	snprintf(o.dataset, sizeof(o.dataset), "feat");
	o.batch = 3;
	o.slots = 2;
	o.seed = 99;
	o.features.cmn = FEEDER_FEAT_CMN_UTT;
	o.features.cvn = 1;
	struct ring r;
	CHECK(open_stream(fd, &o, &r) == 0);
	CHECK(r.info.ndim == 4 && r.info.shape[3] == 1 && r.info.shape[0] == 3 &&
	      r.info.shape[1] == FEAT_DIM &&
	      r.info.shape[2] == 20);
	CHECK(r.info.batches == 3);
	const struct feeder_stream_opts p = o;
	size_t sb = sizeof(float) * FEAT_DIM * 20;
	CHECK(r.info.tensor_bytes == 3 * sb);
	float *ref = malloc(sb);
	struct sampler order;
	CHECK(sampler_init(&order, N_FEAT, o.seed, 0, 0, 1, 1, err, sizeof(err)) == 0);
	struct batch b;
	uint64_t n = 0;
	while (next_batch(&r, &b)) {
		const int32_t *labels = (const void *)(b.slot + r.info.labels_offset);
		const struct proto_slot_header *h = (const void *)b.slot;
		CHECK(h->ndim == 4 && h->shape[1] == FEAT_DIM && h->shape[2] == 20);
		for (uint32_t i = 0; i < b.ready.samples; i++) {
			uint64_t idx = sampler_at(&order, n * 3 + i);
			CHECK(labels[i] == (int32_t)(100 + idx));
			uint32_t frames;
			float *m = feat_payload((unsigned)idx, &frames);
			struct dsformat_sample smp = { .label = 100 + (uint32_t)idx,
				.payload_len = (uint32_t)(sizeof(float) * frames * FEAT_DIM),
				.frames = frames, .dim = FEAT_DIM, .dtype = DSFORMAT_DTYPE_F32 };
			CHECK(features_pipeline_run(&p, &smp, (const uint8_t *)m,
						    detrand_key(o.seed, 0, idx), ref, err, sizeof(err)) == 0);
			CHECKF(memcmp(ref, b.slot + r.info.tensor_offset + i * sb, sb) == 0,
			       "features sample %llu differs", (unsigned long long)idx);
			free(m);
		}
		release(&r, &b);
		n++;
	}
	CHECK(n == 3);
	free(ref);
	close_ring(&r);
	/* A jpeg stream over a features dataset is refused. */
	struct feeder_stream_opts j = base_request("feat", 16, 0);
	CHECK(open_stream(fd, &j, &r) == FEEDER_EINVAL);
	close(fd);
}

static void test_corrupt(void)
{
	int fd = connect_hello();
	struct feeder_stream_opts o = base_request("bad", 16, 1);
	o.batch = 4;
	struct ring r;
	CHECK(open_stream(fd, &o, &r) == 0);
	uint64_t n;
	uint32_t repl;
	drain(&r, &n, &repl, NULL);
	CHECK(n == 3 && repl == 2);
	close_ring(&r);
	/* Deterministic: the same replacements again. */
	uint64_t h1, h2;
	CHECK(open_stream(fd, &o, &r) == 0);
	h1 = drain(&r, &n, &repl, NULL);
	close_ring(&r);
	CHECK(open_stream(fd, &o, &r) == 0);
	h2 = drain(&r, &n, &repl, NULL);
	close_ring(&r);
	CHECK(h1 == h2 && repl == 2);

	struct feeder_status st;
	check_status(fd, &st);
	CHECK(st.replacements >= 6 && st.decode_errors >= 6);

	/* on_error=fail: an ERROR naming the stream; the connection lives. */
	o.on_error = FEEDER_ON_ERROR_FAIL;
	CHECK(open_stream(fd, &o, &r) == 0);
	struct proto_msg m;
	int got_error = 0;
	for (int i = 0; i < 10 && !got_error; i++) {
		CHECK(recv_msg(fd, &m, NULL) == 0);
		if (m.type == PROTO_ERROR) {
			CHECK(m.u.error.stream == r.info.stream && !m.u.error.fatal);
			CHECK(m.u.error.code == FEEDER_ECORRUPT || m.u.error.code == FEEDER_EDECODE);
			fprintf(stderr, "  (expected) ERROR %d: %s\n", m.u.error.code, m.u.error.message);
			got_error = 1;
		} else {
			CHECKF(m.type == PROTO_BATCH_READY, "got %s", proto_type_name(m.type));
		}
	}
	CHECK(got_error);
	close_ring(&r);
	check_status(fd, &st);
	close(fd);
}

static void test_refusals(void)
{
	int fd = connect_hello();
	struct feeder_stream_opts o = base_request("nosuch", 16, 0);
	struct ring r;
	CHECK(open_stream(fd, &o, &r) == FEEDER_ENODATASET);
	/* Over the 8 MiB client quota: 16 slots x 5 x 3 x 256 x 256 x 4 bytes. */
	o = base_request("tiny", 256, 0);
	o.dtype = FEEDER_DTYPE_F32;
	o.slots = 16;
	CHECK(open_stream(fd, &o, &r) == FEEDER_EQUOTA);
	o.slots = 17; /* over max_slots = 16 */
	CHECK(open_stream(fd, &o, &r) == FEEDER_EQUOTA);
	o = base_request("tiny", 16, 0);
	o.start_batch = 6;
	CHECK(open_stream(fd, &o, &r) == FEEDER_EINVAL);
	/* A features stream on an image dataset says what the dataset holds
	 * (it said "feature dimension 0"). */
	struct feeder_stream_opts f;
	proto_opts_features(&f, 20, 1);
	snprintf(f.dataset, sizeof(f.dataset), "tiny");
	f.batch = 16;
	CHECK(open_stream(fd, &f, &r) == FEEDER_EINVAL);
	CHECKF(strstr(last_error, "holds jpeg images, not feature matrices: open it with pipeline "
		       "jpeg"), "got: %s", last_error);
	/* Still usable after refusals. */
	o.start_batch = 0;
	uint64_t n;
	CHECK(open_stream(fd, &o, &r) == 0);
	drain(&r, &n, NULL, NULL);
	CHECK(n == 5);
	close_ring(&r);

	/* A name with ../ is refused and the client dropped. */
	struct proto_msg m = { .type = PROTO_OPEN_STREAM };
	m.u.open.opts = base_request("x", 16, 0);
	uint8_t buf[PROTO_MAX_MESSAGE];
	int len = proto_encode(&m, buf, sizeof(buf));
	/* The dataset field follows the tag; libfeeder would not send this. */
	memcpy(buf + PROTO_HEADER_SIZE + 4, "../tiny", 8);
	CHECK(sockmsg_send(fd, buf, (size_t)len, -1, err, sizeof(err)) == 0);
	CHECK(recv_msg(fd, &m, NULL) == 0);
	CHECK(m.type == PROTO_ERROR && m.u.error.code == FEEDER_EBADNAME && m.u.error.fatal);
	fprintf(stderr, "  (expected) ERROR %d: %s\n", m.u.error.code, m.u.error.message);
	CHECK(recv_msg(fd, &m, NULL) == FEEDER_ECLOSED);
	close(fd);
}

/* Garbage from one client while another streams: only the first is dropped. */
static void test_garbage(void)
{
	int good = connect_hello();
	struct feeder_stream_opts o = base_request("tiny", 16, 1);
	o.slots = 2;
	o.epochs = 4;
	struct ring r;
	CHECK(open_stream(good, &o, &r) == 0);
	struct batch b;
	CHECK(next_batch(&r, &b));
	release(&r, &b);

	uint8_t junk[PROTO_MAX_MESSAGE + 200];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	struct proto_msg hello = { .type = PROTO_HELLO };
	uint8_t hb[PROTO_MAX_MESSAGE];
	int hlen = proto_encode(&hello, hb, sizeof(hb));
	struct { const void *p; size_t len; const char *what; } cases[] = {
		{ junk, 40, "garbage" },
		{ hb, (size_t)hlen - 3, "truncated HELLO" },
		{ junk, sizeof(junk), "oversized" },
		{ hb, 8, "a header fragment" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int bad = connect_raw();
		CHECK(sockmsg_send(bad, cases[i].p, cases[i].len, -1, err, sizeof(err)) == 0);
		struct proto_msg m;
		CHECKF(recv_msg(bad, &m, NULL) == 0, "%s: %s", cases[i].what, err);
		CHECKF(m.type == PROTO_ERROR && m.u.error.fatal && m.u.error.code < 0, "%s", cases[i].what);
		fprintf(stderr, "  (expected) %s -> ERROR %d: %s\n", cases[i].what, m.u.error.code,
			m.u.error.message);
		CHECK(recv_msg(bad, &m, NULL) == FEEDER_ECLOSED);
		close(bad);
	}
	/* Garbage followed at once by more input: the ERROR that says why must
	 * still arrive (the daemon lingers instead of resetting the connection
	 * with unread input). */
	for (int round = 0; round < 20; round++) {
		int bad = connect_raw();
		CHECK(sockmsg_send(bad, junk, 40, -1, err, sizeof(err)) == 0);
		CHECK(sockmsg_send(bad, hb, (size_t)hlen, -1, err, sizeof(err)) == 0);
		CHECK(sockmsg_send(bad, hb, (size_t)hlen, -1, err, sizeof(err)) == 0);
		struct proto_msg m;
		CHECKF(recv_msg(bad, &m, NULL) == 0, "garbage + more (round %d): %s", round, err);
		CHECK(m.type == PROTO_ERROR && m.u.error.fatal);
		close(bad);
	}
	/* A message before HELLO, a daemon-only message, a descriptor. */
	int bad = connect_raw();
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = PROTO_STATUS_SUMMARY;
	send_msg(bad, &m);
	CHECK(recv_msg(bad, &m, NULL) == 0 && m.type == PROTO_ERROR && m.u.error.fatal);
	close(bad);
	bad = connect_hello();
	m = (struct proto_msg){ .type = PROTO_BATCH_READY };
	m.u.ready = (struct proto_batch_ready){ .stream = 1, .samples = 1 };
	send_msg(bad, &m);
	CHECK(recv_msg(bad, &m, NULL) == 0 && m.type == PROTO_ERROR && m.u.error.fatal);
	close(bad);
	bad = connect_hello();
	m = (struct proto_msg){ .type = PROTO_CLOSE_STREAM };
	m.u.close.stream = 99;
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(devnull >= 0);
	CHECK(sockmsg_send_msg(bad, &m, devnull, err, sizeof(err)) == 0);
	close(devnull);
	CHECK(recv_msg(bad, &m, NULL) == 0 && m.type == PROTO_ERROR && m.u.error.fatal);
	close(bad);
	/* A RELEASE of a slot not held. */
	bad = connect_hello();
	struct ring rb;
	CHECK(open_stream(bad, &o, &rb) == 0);
	m = (struct proto_msg){ .type = PROTO_RELEASE };
	m.u.release.stream = rb.info.stream;
	m.u.release.slot = 200;
	send_msg(bad, &m);
	for (;;) {
		CHECK(recv_msg(bad, &m, NULL) == 0);
		if (m.type == PROTO_ERROR)
			break;
	}
	CHECK(m.u.error.fatal);
	close_ring(&rb);
	close(bad);

	/* The good client streams on to the end of its four epochs. */
	uint64_t n = 1;
	while (next_batch(&r, &b)) {
		release(&r, &b);
		n++;
	}
	CHECK(n == 20);
	close_ring(&r);
	close(good);
}

/* A client killed while holding every slot: its memory comes back. */
static void test_killed_client(void)
{
	int watcher = connect_hello();
	struct feeder_status before, after;
	/* Earlier clients' disconnections may still be on their way. */
	for (int i = 0; i < 200; i++) {
		check_status(watcher, &before);
		if (before.clients == 1 && before.memory_used == 0)
			break;
		usleep(10000);
	}
	CHECK(before.clients == 1 && before.memory_used == 0 && before.streams == 0);
	int pfd[2];
	CHECK(pipe(pfd) == 0);
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		int fd = connect_hello();
		struct feeder_stream_opts o = base_request("tiny", 32, 1);
		o.slots = 4;
		o.epochs = 100;
		struct ring r;
		if (open_stream(fd, &o, &r) != 0)
			_exit(1);
		struct batch b;
		for (int i = 0; i < 4; i++)
			if (!next_batch(&r, &b))
				_exit(1);
		/* Holding all four slots now. */
		if (write(pfd[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c;
	CHECK(read(pfd[0], &c, 1) == 1);
	struct feeder_status mid;
	check_status(watcher, &mid);
	CHECK(mid.memory_used > before.memory_used && mid.streams == before.streams + 1);
	kill(child, SIGKILL);
	int status;
	waitpid(child, &status, 0);
	CHECK(WIFSIGNALED(status));
	int ok = 0;
	for (int i = 0; i < 200 && !ok; i++) {
		usleep(10000);
		check_status(watcher, &after);
		ok = after.memory_used == before.memory_used && after.clients == before.clients;
	}
	CHECKF(ok, "memory %llu, was %llu", (unsigned long long)after.memory_used,
	       (unsigned long long)before.memory_used);
	close(pfd[0]);
	close(pfd[1]);

	/* STATUS lists: datasets and streams. */
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = PROTO_STATUS_DATASETS;
	send_msg(watcher, &m);
	CHECK(recv_msg(watcher, &m, NULL) == 0 && m.type == PROTO_DATASET_INFO);
	CHECK(strcmp(m.u.dataset.name, "bad") == 0 && m.u.dataset.samples == N_BAD);
	CHECK(recv_msg(watcher, &m, NULL) == 0 && m.type == PROTO_DATASET_INFO);
	CHECK(strcmp(m.u.dataset.name, "feat") == 0 && m.u.dataset.samples == N_FEAT);
	CHECK(m.u.dataset.kind == DSFORMAT_KIND_FEATURES && m.u.dataset.feat_dim == FEAT_DIM);
	CHECK(recv_msg(watcher, &m, NULL) == 0 && m.type == PROTO_DATASET_INFO);
	CHECK(strcmp(m.u.dataset.name, "tiny") == 0 && m.u.dataset.samples == N_TINY);
	CHECK(m.u.dataset.kind == DSFORMAT_KIND_JPEG && m.u.dataset.classes == 3);
	CHECK(recv_msg(watcher, &m, NULL) == 0 && m.type == PROTO_LIST_END && m.u.list_end.count == 3);
	struct feeder_stream_opts o = base_request("tiny", 16, 0);
	struct ring r;
	CHECK(open_stream(watcher, &o, &r) == 0);
	m = (struct proto_msg){ .type = PROTO_STATUS };
	m.u.status.what = PROTO_STATUS_STREAMS;
	send_msg(watcher, &m);
	int infos = 0;
	for (;;) {
		CHECK(recv_msg(watcher, &m, NULL) == 0);
		if (m.type == PROTO_BATCH_READY)
			continue;
		if (m.type == PROTO_LIST_END)
			break;
		CHECK(m.type == PROTO_STREAM_INFO && m.u.stream.stream == r.info.stream);
		CHECK(m.u.stream.pid == (uint32_t)getpid() && strcmp(m.u.stream.dataset, "tiny") == 0);
		CHECK(m.u.stream.batches_total == 5 && m.u.stream.slots == 3);
		infos++;
	}
	CHECK(infos == 1);
	/* CLOSE_STREAM is answered with STREAM_END (reason 1). */
	m = (struct proto_msg){ .type = PROTO_CLOSE_STREAM };
	m.u.close.stream = r.info.stream;
	send_msg(watcher, &m);
	for (;;) {
		CHECK(recv_msg(watcher, &m, NULL) == 0);
		if (m.type == PROTO_STREAM_END && m.u.end.reason == 1)
			break;
		CHECK(m.type == PROTO_BATCH_READY || m.type == PROTO_STREAM_END);
	}
	close_ring(&r);
	close(watcher);
}

/* A client that sends many requests before reading any answer: the daemon
 * queues what the socket cannot take (up to max_queued bytes) and delivers
 * all of it, in order. */
static void test_slow_reader(void)
{
	int fd = connect_hello();
	enum { REQUESTS = 600 };
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = PROTO_STATUS_DATASETS;
	for (int i = 0; i < REQUESTS; i++)
		send_msg(fd, &m);
	for (int i = 0; i < REQUESTS; i++) {
		CHECK(recv_msg(fd, &m, NULL) == 0 && m.type == PROTO_DATASET_INFO);
		CHECK(strcmp(m.u.dataset.name, "bad") == 0);
		CHECK(recv_msg(fd, &m, NULL) == 0 && m.type == PROTO_DATASET_INFO);
		CHECK(strcmp(m.u.dataset.name, "feat") == 0);
		CHECK(recv_msg(fd, &m, NULL) == 0 && m.type == PROTO_DATASET_INFO);
		CHECK(strcmp(m.u.dataset.name, "tiny") == 0);
		CHECKF(recv_msg(fd, &m, NULL) == 0 && m.type == PROTO_LIST_END, "reply %d", i);
	}
	close(fd);
}

/* max_clients = 6: the seventh connection gets a fatal ERROR at once. */
static void test_max_clients(void)
{
	int fds[6];
	fds[0] = connect_hello();
	struct feeder_status st;
	for (int i = 0; i < 200; i++) {
		check_status(fds[0], &st);
		if (st.clients == 1)
			break;
		usleep(10000);
	}
	CHECK(st.clients == 1);
	for (int i = 1; i < 6; i++)
		fds[i] = connect_hello();
	int extra = connect_raw();
	struct proto_msg m;
	CHECK(recv_msg(extra, &m, NULL) == 0);
	CHECK(m.type == PROTO_ERROR && m.u.error.code == FEEDER_EQUOTA && m.u.error.fatal);
	fprintf(stderr, "  (expected) ERROR %d: %s\n", m.u.error.code, m.u.error.message);
	CHECK(recv_msg(extra, &m, NULL) == FEEDER_ECLOSED);
	close(extra);
	for (int i = 0; i < 6; i++)
		close(fds[i]);
}

/* SIGHUP rescans: a dataset packed later appears; symbolic links and
 * names that are not allowed never do. */
static void test_rescan(void)
{
	make_dataset("late", 4, 0);
	char path[700], target[700];
	snprintf(path, sizeof(path), "%s/link", ds_dir);
	snprintf(target, sizeof(target), "%s/tiny", ds_dir);
	CHECK(symlink(target, path) == 0);
	snprintf(path, sizeof(path), "%s/bad name", ds_dir);
	CHECK(mkdir(path, 0755) == 0);
	/* A real directory whose data.mdb points elsewhere. */
	snprintf(path, sizeof(path), "%s/sneaky", ds_dir);
	CHECK(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/sneaky/data.mdb", ds_dir);
	snprintf(target, sizeof(target), "%s/tiny/data.mdb", ds_dir);
	CHECK(symlink(target, path) == 0);
	CHECK(kill(daemon_pid, SIGHUP) == 0);
	int fd = connect_hello();
	const char *want[] = { "bad", "feat", "late", "tiny" };
	int ok = 0;
	for (int tries = 0; tries < 200 && !ok; tries++) {
		usleep(10000);
		struct proto_msg m = { .type = PROTO_STATUS };
		m.u.status.what = PROTO_STATUS_DATASETS;
		send_msg(fd, &m);
		char names[8][FEEDER_DATASET_MAX];
		int n = 0;
		for (;;) {
			CHECK(recv_msg(fd, &m, NULL) == 0);
			if (m.type == PROTO_LIST_END)
				break;
			CHECK(m.type == PROTO_DATASET_INFO && n < 8);
			memcpy(names[n++], m.u.dataset.name, FEEDER_DATASET_MAX);
		}
		ok = n == 4;
		for (int i = 0; ok && i < 4; i++)
			ok = strcmp(names[i], want[i]) == 0;
	}
	CHECKF(ok, "SIGHUP did not lead to exactly bad, feat, late, tiny");
	struct feeder_stream_opts o = base_request("late", 16, 0);
	o.batch = 2;
	struct ring r;
	uint64_t n;
	CHECK(open_stream(fd, &o, &r) == 0);
	drain(&r, &n, NULL, NULL);
	CHECK(n == 2);
	close_ring(&r);
	o = base_request("link", 16, 0);
	CHECK(open_stream(fd, &o, &r) == FEEDER_ENODATASET);
	close(fd);
}

static void test_sigterm(void)
{
	int fd = connect_hello();
	struct feeder_stream_opts o = base_request("tiny", 16, 1);
	o.epochs = 1000;
	struct ring r;
	CHECK(open_stream(fd, &o, &r) == 0);
	struct batch b;
	CHECK(next_batch(&r, &b));
	/* Held across the stop: a client that reads nothing is waited for
	 * shutdown_drain (1 s), and its batch keeps its bytes after the exit. */
	const struct proto_slot_header *h = (const struct proto_slot_header *)b.slot;
	uint32_t held_seq = h->sequence;
	CHECK(h->samples == b.ready.samples && h->batch_index == b.ready.batch_index);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(kill(daemon_pid, SIGTERM) == 0);
	int status = 0;
	pid_t w = 0;
	for (int i = 0; i < 300 && w != daemon_pid; i++) {
		w = waitpid(daemon_pid, &status, WNOHANG);
		if (w != daemon_pid)
			usleep(10000);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECKF(w == daemon_pid, "feederd still running 3 s after SIGTERM");
	daemon_pid = -1;
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exit status 0x%x", status);
	CHECKF(secs < 2.0, "exit took %.2f s", secs);
	CHECKF(h->samples == b.ready.samples && h->batch_index == b.ready.batch_index &&
	       h->sequence == held_seq, "the held slot was blanked by the stop");
	/* The client was told: GOODBYE after any batches already queued. */
	struct proto_msg m;
	int bye = 0;
	while (!bye) {
		int rc = recv_msg(fd, &m, NULL);
		CHECKF(rc == 0, "no GOODBYE before the end: %s", err);
		bye = m.type == PROTO_GOODBYE;
	}
	struct stat st;
	CHECK(stat(sock_path, &st) != 0);
	close_ring(&r);
	close(fd);
}

/* ---- hostile and careless clients ---------------------------- */

/* Run fn in a child that has become uid (and gid) first, as another user
 * would; the socket is opened to everyone for it. The child's checks exit 1
 * on failure; returns once it exited 0. ctl is a pipe pair the child and
 * the parent use to take turns (see the callers). */
static pid_t as_user(uid_t uid, void (*fn)(int rd, int wr), int *to_child, int *from_child)
{
	int down[2], up[2];
	CHECK(pipe(down) == 0 && pipe(up) == 0);
	CHECK(chmod(sock_path, 0666) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(down[1]);
		close(up[0]);
		if (setgid(uid) != 0 || setuid(uid) != 0)
			_exit(3);
		passed = 1; /* the child's exit must not dump the parent's log */
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

/* A daemon log line containing text, within a few seconds. */
static void expect_log(const char *text)
{
	char cmd[800];
	snprintf(cmd, sizeof(cmd), "grep -qF -- '%s' '%s'", text, log_path);
	for (int i = 0; i < 300; i++) {
		if (system(cmd) == 0)
			return;
		usleep(10000);
	}
	CHECKF(0, "the daemon never logged '%s'", text);
}

#define IDLE_N 10 /* max_clients 12 - reserved_connections 2 */

static void idle_user(int rd, int wr)
{
	int fds[IDLE_N];
	for (int i = 0; i < IDLE_N; i++)
		fds[i] = connect_raw(); /* and never a HELLO */
	/* The 11th is refused: the rest is reserved for administrators. */
	int extra = connect_raw();
	struct proto_msg m;
	CHECK(recv_msg(extra, &m, NULL) == 0);
	CHECKF(m.type == PROTO_ERROR && m.u.error.code == FEEDER_EQUOTA &&
	       strstr(m.u.error.message, "reserved for administrators"), "got %s: %s",
	       proto_type_name(m.type), m.type == PROTO_ERROR ? m.u.error.message : "");
	close(extra);
	say(wr, 'f'); /* full */
	CHECK(hear(rd) == 'c');
	/* After hello_timeout each idle one got a fatal ERROR and was closed. */
	for (int i = 0; i < IDLE_N; i++) {
		CHECK(recv_msg(fds[i], &m, NULL) == 0);
		CHECKF(m.type == PROTO_ERROR && m.u.error.code == FEEDER_ETIMEDOUT && m.u.error.fatal,
		       "idle connection %d: %s", i, proto_type_name(m.type));
		CHECK(recv_msg(fds[i], &m, NULL) == FEEDER_ECLOSED);
		close(fds[i]);
	}
	/* And the user can connect again. */
	close(connect_hello());
}

/* 13.4: sixty-four idle connections used to lock everyone out, root's
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
	expect_log("no HELLO within 1 s of connecting");
}

static void capped_user(int rd, int wr)
{
	(void)rd;
	int fds[3];
	for (int i = 0; i < 3; i++)
		fds[i] = connect_hello();
	int extra = connect_raw();
	struct proto_msg m;
	CHECK(recv_msg(extra, &m, NULL) == 0);
	CHECKF(m.type == PROTO_ERROR && m.u.error.code == FEEDER_EQUOTA &&
	       strstr(m.u.error.message, "max_clients_per_user = 3"), "got %s",
	       m.type == PROTO_ERROR ? m.u.error.message : proto_type_name(m.type));
	close(extra);
	say(wr, 'd');
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}

/* 13.4: one user holds at most max_clients_per_user connections. */
static void test_per_user(void)
{
	int to, from;
	pid_t pid = as_user(65534, capped_user, &to, &from);
	CHECK(hear(from) == 'd');
	wait_child(pid);
	/* Others (root) are not affected. */
	close(connect_hello());
}

/* 13.5: clients that never read their replies are dropped once max_queued
 * bytes wait for them; the daemon stays small and the others are served. */
static long daemon_rss_kib(void)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)daemon_pid);
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
	struct feeder_stream_opts o = base_request("tiny", 16, 1);
	o.epochs = 1000;
	struct ring r;
	CHECK(open_stream(good, &o, &r) == 0);
	long before = daemon_rss_kib();
	enum { CLIENTS = 5, REQUESTS = 20000 };
	int bad[CLIENTS];
	for (int k = 0; k < CLIENTS; k++) {
		bad[k] = connect_hello();
		int nb = 1;
		CHECK(ioctl_nonblock(bad[k], nb) == 0);
		struct proto_msg m = { .type = PROTO_STATUS };
		m.u.status.what = PROTO_STATUS_DATASETS;
		uint8_t buf[PROTO_MAX_MESSAGE];
		int len = proto_encode(&m, buf, sizeof(buf));
		/* Keep asking while the daemon takes requests: each one's answer
		 * waits for us, since we never read. */
		for (int i = 0, stalls = 0; i < REQUESTS && stalls < 100;) {
			if (send(bad[k], buf, (size_t)len, MSG_NOSIGNAL) == (ssize_t)len) {
				i++;
				stalls = 0;
				continue;
			}
			if (errno != EAGAIN)
				break; /* the daemon has had enough and closed */
			struct pollfd p = { .fd = bad[k], .events = POLLOUT };
			stalls += poll(&p, 1, 10) == 0;
		}
	}
	/* The good client streams on meanwhile. */
	for (int i = 0; i < 20; i++) {
		struct batch b;
		CHECK(next_batch(&r, &b));
		release(&r, &b);
	}
	expect_log("replies unread, over max_queued");
	long after = daemon_rss_kib();
	CHECKF(after - before < 16 * 1024, "daemon RSS grew from %ld to %ld KiB", before, after);
	int watch = connect_hello();
	struct feeder_status st;
	for (int i = 0; i < 300; i++) {
		check_status(watch, &st);
		if (st.clients == 2)
			break;
		usleep(10000);
	}
	CHECKF(st.clients == 2, "%u clients left, the non-readers should be gone", st.clients);
	close(watch);
	fprintf(stderr, "  daemon RSS %ld -> %ld KiB with %d clients that never read\n", before,
		after, CLIENTS);
	for (int k = 0; k < CLIENTS; k++)
		close(bad[k]);
	close_ring(&r);
	close(good);
}

/* 13.2: the pages of a closed stream's ring are given back whatever the
 * client keeps: memfds kept open hold no memory. */
static void test_memfd_release(void)
{
	int fd = connect_hello();
	enum { STREAMS = 12 };
	int kept[STREAMS];
	uint64_t ring = 0;
	for (int k = 0; k < STREAMS; k++) {
		struct feeder_stream_opts o = base_request("tiny", 96, 1);
		o.slots = 4;
		struct proto_msg m = { .type = PROTO_OPEN_STREAM };
		m.u.open.tag = 100 + (uint32_t)k;
		m.u.open.opts = o;
		send_msg(fd, &m);
		int mfd = -1;
		CHECK(recv_msg(fd, &m, &mfd) == 0 && m.type == PROTO_STREAM_OPENED && mfd >= 0);
		uint32_t id = m.u.opened.stream;
		ring = m.u.opened.ring_size;
		/* Let the daemon fill every slot. */
		int ready = 0;
		while (ready < 4) {
			CHECK(recv_msg(fd, &m, NULL) == 0);
			ready += m.type == PROTO_BATCH_READY;
		}
		struct stat st;
		CHECK(fstat(mfd, &st) == 0);
		CHECKF((uint64_t)st.st_blocks * 512 >= ring / 2, "a full ring holds %llu bytes",
		       (unsigned long long)st.st_blocks * 512);
		m = (struct proto_msg){ .type = PROTO_CLOSE_STREAM };
		m.u.close.stream = id;
		send_msg(fd, &m);
		do
			CHECK(recv_msg(fd, &m, NULL) == 0);
		while (m.type != PROTO_STREAM_END);
		kept[k] = mfd;
	}
	/* Closed streams' memfds, still open here, hold no pages any more. */
	for (int k = 0; k < STREAMS; k++) {
		struct stat st;
		for (int i = 0; i < 200; i++) {
			CHECK(fstat(kept[k], &st) == 0);
			if (st.st_blocks == 0)
				break;
			usleep(10000); /* a zombie stream goes when its workers let go */
		}
		CHECKF(st.st_blocks == 0, "memfd %d of a closed stream still holds %llu bytes", k,
		       (unsigned long long)st.st_blocks * 512);
		close(kept[k]);
	}
	struct feeder_status s;
	check_status(fd, &s);
	CHECK(s.memory_used == 0);
	fprintf(stderr, "  %d closed rings of %llu bytes each: 0 bytes left in the kept memfds\n",
		STREAMS, (unsigned long long)ring);
	close(fd);
}

/* 13.15: CLOSE_STREAM of another client's stream is an ERROR (the other's
 * stream goes on); an empty message is a fatal ERROR, not a silent close. */
static void test_close_other(void)
{
	int a = connect_hello(), b = connect_hello();
	struct feeder_stream_opts o = base_request("tiny", 16, 1);
	o.epochs = 100;
	struct ring r;
	CHECK(open_stream(a, &o, &r) == 0);
	struct proto_msg m = { .type = PROTO_CLOSE_STREAM };
	m.u.close.stream = r.info.stream;
	send_msg(b, &m);
	CHECK(recv_msg(b, &m, NULL) == 0);
	CHECKF(m.type == PROTO_ERROR && !m.u.error.fatal && m.u.error.stream == r.info.stream &&
	       strstr(m.u.error.message, "does not have"), "got %s", proto_type_name(m.type));
	fprintf(stderr, "  (expected) ERROR %d: %s\n", m.u.error.code, m.u.error.message);
	for (int i = 0; i < 6; i++) {
		struct batch bt;
		CHECK(next_batch(&r, &bt));
		release(&r, &bt);
	}
	CHECK(send(b, "", 0, MSG_NOSIGNAL) == 0);
	CHECK(recv_msg(b, &m, NULL) == 0);
	CHECKF(m.type == PROTO_ERROR && m.u.error.fatal && m.u.error.code == FEEDER_EPROTO,
	       "empty message: got %s", proto_type_name(m.type));
	fprintf(stderr, "  (expected) ERROR %d: %s\n", m.u.error.code, m.u.error.message);
	CHECK(recv_msg(b, &m, NULL) == FEEDER_ECLOSED);
	close(b);
	close_ring(&r);
	close(a);
}

/* 18.3: a stream that fails keeps its ring (a client may still read, or
 * copy from, batches it holds) until the client closes it. */
static void test_failed_kept(void)
{
	int fd = connect_hello();
	struct feeder_stream_opts o = base_request("bad", 16, 1);
	o.on_error = FEEDER_ON_ERROR_FAIL;
	o.shuffle = 0;
	o.batch = 4;
	struct ring r;
	CHECK(open_stream(fd, &o, &r) == 0);
	struct proto_msg m;
	int failed = 0;
	while (!failed) {
		CHECK(recv_msg(fd, &m, NULL) == 0);
		if (m.type == PROTO_ERROR)
			failed = m.u.error.stream == r.info.stream && !m.u.error.fatal;
	}
	struct feeder_status st;
	check_status(fd, &st);
	CHECKF(st.memory_used == r.info.ring_size, "a failed stream holds %llu bytes, want %llu",
	       (unsigned long long)st.memory_used, (unsigned long long)r.info.ring_size);
	m = (struct proto_msg){ .type = PROTO_CLOSE_STREAM };
	m.u.close.stream = r.info.stream;
	send_msg(fd, &m);
	CHECK(recv_msg(fd, &m, NULL) == 0 && m.type == PROTO_STREAM_END);
	for (int i = 0; i < 200; i++) {
		check_status(fd, &st);
		if (st.memory_used == 0)
			break;
		usleep(10000);
	}
	CHECK(st.memory_used == 0);
	close_ring(&r);
	close(fd);
}

static void visible_user(int rd, int wr)
{
	int fd = connect_hello();
	struct feeder_stream_opts o = base_request("tiny", 16, 1);
	o.epochs = 100;
	struct ring r;
	CHECK(open_stream(fd, &o, &r) == 0);
	say(wr, 'o');
	CHECK(hear(rd) == 'l');
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = PROTO_STATUS_STREAMS;
	send_msg(fd, &m);
	unsigned n = 0;
	for (;;) {
		CHECK(recv_msg(fd, &m, NULL) == 0);
		if (m.type == PROTO_LIST_END)
			break;
		if (m.type != PROTO_STREAM_INFO)
			continue; /* a BATCH_READY of our stream */
		CHECKF(m.u.stream.uid == 65534, "user 65534 sees a stream of uid %u", m.u.stream.uid);
		n++;
	}
	CHECKF(n == 1, "user 65534 sees %u streams, want its own 1", n);
	say(wr, 'd');
	close_ring(&r);
	close(fd);
}

/* 13.15: a user sees only its own streams; root sees everyone's. */
static void test_visibility(void)
{
	int fd = connect_hello();
	struct feeder_stream_opts o = base_request("tiny", 16, 1);
	o.epochs = 100;
	struct ring r;
	CHECK(open_stream(fd, &o, &r) == 0);
	int to, from;
	pid_t pid = as_user(65534, visible_user, &to, &from);
	CHECK(hear(from) == 'o');
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = PROTO_STATUS_STREAMS;
	send_msg(fd, &m);
	unsigned n = 0, others = 0;
	for (;;) {
		CHECK(recv_msg(fd, &m, NULL) == 0);
		if (m.type == PROTO_LIST_END)
			break;
		if (m.type != PROTO_STREAM_INFO)
			continue;
		n++;
		others += m.u.stream.uid == 65534;
	}
	CHECKF(n == 2 && others == 1, "root sees %u streams (%u of user 65534), want 2 (1)", n,
	       others);
	say(to, 'l');
	CHECK(hear(from) == 'd');
	wait_child(pid);
	close_ring(&r);
	close(fd);
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
	struct feeder_stream_opts q = base_request("tiny", 16, 1);
	q.epochs = 20;
	struct ring rb;
	CHECK(open_stream(bfd, &q, &rb) == 0);
	uint64_t n = 0;
	while (next_batch(&rb, &b)) {
		release(&rb, &b);
		n++;
	}
	CHECKF(n == rb.info.batches, "host stream: %llu of %llu batches",
	       (unsigned long long)n, (unsigned long long)rb.info.batches);

	/* Nothing more for the stalled stream: both its slots await release. */
	char buf[64];
	ssize_t k = recv(a, buf, sizeof(buf), MSG_DONTWAIT);
	CHECKF(k < 0 && errno == EAGAIN, "the device stream got a message (%zd bytes) while "
	       "its releases were pending", k);
	struct feeder_status st;
	check_status(bfd, &st);
	CHECKF(st.memory_used > 0 && st.streams >= 1, "memory used %llu, %u streams",
	       (unsigned long long)st.memory_used, st.streams);

	uint64_t before = st.memory_used;
	struct proto_msg m = { .type = PROTO_CLOSE_STREAM };
	m.u.close.stream = ra.info.stream;
	send_msg(a, &m);
	CHECK(recv_msg(a, &m, NULL) == 0 && m.type == PROTO_STREAM_END);
	for (int i = 0; i < 200; i++) {
		check_status(bfd, &st);
		if (before - st.memory_used >= ra.info.ring_size)
			break;
		usleep(10000);
	}
	CHECKF(before - st.memory_used >= ra.info.ring_size, "%llu bytes used, %llu before the "
	       "close", (unsigned long long)st.memory_used, (unsigned long long)before);
	fprintf(stderr, "  device stream stalled at 2 batches with 2 releases pending; host "
		"stream %llu batches; stalled stream closed, its %llu bytes freed\n",
		(unsigned long long)n, (unsigned long long)(before - st.memory_used));
	close_ring(&ra);
	close_ring(&rb);
	close(a);
	close(bfd);
}

/* Lines of the daemon's log that contain text. */
static unsigned count_log(const char *text)
{
	char cmd[800];
	snprintf(cmd, sizeof(cmd), "grep -cF -- '%s' '%s'", text, log_path);
	FILE *p = popen(cmd, "r");
	CHECK(p);
	unsigned n = 0;
	if (fscanf(p, "%u", &n) != 1)
		n = 0;
	pclose(p);
	return n;
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
	hash[0] = drain(&r, &n[0], NULL, NULL);
	close_ring(&r);
	o.device_batches = 0;
	CHECK(open_stream(fd, &o, &r) == 0);
	hash[1] = drain(&r, &n[1], NULL, NULL);
	close_ring(&r);
	CHECKF(n[0] == n[1] && n[0] == r.info.batches && hash[0] == hash[1],
	       "fallback stream: %llu batches, host stream %llu; same bytes: %d",
	       (unsigned long long)n[0], (unsigned long long)n[1], hash[0] == hash[1]);
	char line[200];
	snprintf(line, sizeof(line), "stream %u: device batches were asked for, but its device ring "
		 "cannot be made (cudaMalloc of the device ring failed: out of memory", id);
	expect_log(line);
	unsigned said = count_log("device ring cannot be made");
	CHECKF(said == 1, "the fallback was logged %u times", said);
	fprintf(stderr, "  device ring refused by the device: %llu batches from the host ring, "
		"identical to a host stream's\n", (unsigned long long)n[0]);
	close(fd);
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
	hash[0] = drain(&r, &n[0], NULL, NULL);
	close_ring(&r);
	o.placement = FEEDER_PLACEMENT_AUTO;
	CHECK(open_stream(fd, &o, &r) == 0);
	CHECKF(r.info.placement == FEEDER_PLACEMENT_CPU, "a wave stream with placement=auto is "
	       "placed %u, not on the CPU", r.info.placement);
	hash[1] = drain(&r, &n[1], NULL, NULL);
	close_ring(&r);
	CHECKF(n[0] == N_WAVE / 2 && n[1] == n[0] && hash[0] == hash[1],
	       "wave: %llu batches on the CPU, %llu with auto; same bytes: %d",
	       (unsigned long long)n[0], (unsigned long long)n[1], hash[0] == hash[1]);
	o.placement = FEEDER_PLACEMENT_GPU;
	rc = open_stream(fd, &o, &r);
	CHECKF(rc == FEEDER_EINVAL && strstr(last_error, "the wave pipeline runs on the CPU only"),
	       "wave with placement=gpu: code %d, '%s'", rc, last_error);
	fprintf(stderr, "  wave: auto served on the CPU (%llu batches as cpu's), gpu refused\n",
		(unsigned long long)n[1]);
	close(fd);
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
		hash[i] = drain(&r, &n[i], NULL, NULL);
		close_ring(&r);
	}
	CHECKF(n[0] == n[1] && n[0] == want && want >= 10 && hash[0] == hash[1],
	       "6 slots: %llu batches, 1 slot: %llu; same bytes: %d", (unsigned long long)n[0],
	       (unsigned long long)n[1], hash[0] == hash[1]);
	unsigned made[2];
	for (int i = 0; i < 2; i++) {
		char text[80];
		snprintf(text, sizeof(text), "stream %u: GPU context ", id[i]);
		made[i] = count_log(text);
	}
	CHECKF(made[0] >= 1 && made[0] <= 2 && made[1] == 1,
	       "GPU contexts made: %u for 6 slots on 2 workers, %u for 1 slot", made[0], made[1]);
	fprintf(stderr, "  %llu batches each; GPU contexts: %u for 6 slots on 2 workers, %u for 1 "
		"slot\n", (unsigned long long)n[0], made[0], made[1]);
	close(fd);
}

static const struct wire_case {
	const char *name;
	void (*run)(void);
	const char *conf; /* lines added to the daemon's configuration */
	const char *env;  /* NAME=VALUE for the daemon, or NULL */
	const char *env2;
	int wave;         /* also serve the wave dataset */
} cases[] = {
	{ .name = "pixels", .run = test_pixels, .conf = NULL },
	{ .name = "determinism", .run = test_determinism_resume_ranks, .conf = NULL },
	{ .name = "features", .run = test_features, .conf = NULL },
	{ .name = "corrupt", .run = test_corrupt, .conf = NULL },
	{ .name = "refusals", .run = test_refusals, .conf = NULL },
	{ .name = "garbage", .run = test_garbage, .conf = NULL },
	{ .name = "killed_client", .run = test_killed_client, .conf = NULL },
	{ .name = "slow_reader", .run = test_slow_reader, .conf = NULL },
	{ .name = "max_clients", .run = test_max_clients, .conf = NULL },
	{ .name = "rescan", .run = test_rescan, .conf = NULL },
	{ .name = "sigterm", .run = test_sigterm, .conf = NULL },
	{ .name = "idle", .run = test_idle, .conf = "max_clients = 12\nreserved_connections = 2\nhello_timeout = 1\n"
			     "max_clients_per_user = 100\n" },
	{ .name = "per_user", .run = test_per_user, .conf = "max_clients_per_user = 3\n" },
	{ .name = "never_reads", .run = test_never_reads, .conf = "max_queued = 64K\n" },
	{ .name = "memfd_release", .run = test_memfd_release, .conf = "memory_limit = 64M\n" },
	{ .name = "close_other", .run = test_close_other, .conf = NULL },
	{ .name = "failed_kept", .run = test_failed_kept, .conf = NULL },
	{ .name = "visibility", .run = test_visibility, .conf = NULL },
	{ .name = "device_release", .run = test_device_release, .conf = "gpu = 0\nworkers = 2\n",
	  .env = "FEEDERD_GPU_EMULATE=1", .env2 = "FEEDERD_GPU_EMULATE_RELEASE_MS=60000" },
	{ .name = "device_fallback", .run = test_device_fallback, .conf = "gpu = 0\n",
	  .env = "FEEDERD_GPU_EMULATE=1", .env2 = "FEEDERD_GPU_EMULATE_DEVICE_KB=8" },
	{ .name = "gpu_wave", .run = test_gpu_wave, .conf = "gpu = 0\n",
	  .env = "FEEDERD_GPU_EMULATE=1", .wave = 1 },
	{ .name = "gpu_contexts", .run = test_gpu_contexts, .conf = "gpu = 0\n",
	  .env = "FEEDERD_GPU_EMULATE=1" },
};

/* test_daemon_wire CASE: one behaviour against a fresh daemon, so that a
 * failure shows which and hides no other (meson runs each case). */
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
	const char *build = getenv("FEEDER_BUILD");
	if (!build)
		SKIP("FEEDER_BUILD is not set");
	char exe[400];
	snprintf(exe, sizeof(exe), "%s/daemon/feederd", build);
	if (access(exe, X_OK) != 0)
		SKIP("%s is not built", exe);
	signal(SIGPIPE, SIG_IGN);
	/* mkdtemp's template: the prefix, then six 'X' it replaces. */
	size_t plen = (size_t)snprintf(tmpdir, sizeof(tmpdir), "/tmp/feeder-wire-");
	memset(tmpdir + plen, 'X', 6);
	tmpdir[plen + 6] = 0;
	CHECK(mkdtemp(tmpdir));
	CHECK(chmod(tmpdir, 0755) == 0); /* other users' clients reach the socket */
	atexit(cleanup);
	snprintf(sock_path, sizeof(sock_path), "%s/feederd.sock", tmpdir);
	snprintf(ds_dir, sizeof(ds_dir), "%s/datasets", tmpdir);
	snprintf(log_path, sizeof(log_path), "%s/feederd.log", tmpdir);
	CHECK(mkdir(ds_dir, 0755) == 0);
	make_dataset("tiny", N_TINY, 0);
	make_dataset("bad", N_BAD, 1);
	make_features_dataset("feat");
	if (c->wave)
		make_wave_dataset("wave");
	if (c->env)
		CHECK(putenv((char *)c->env) == 0);
	if (c->env2)
		CHECK(putenv((char *)c->env2) == 0);
	start_daemon(build, c->conf);
	fprintf(stderr, "%s\n", c->name);
	c->run();
	if (getenv("FEEDER_TEST_SHOW_LOG")) {
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "cat '%s' >&2", log_path);
		if (system(cmd) != 0)
			return 1;
	}
	passed = 1;
	return 0;
}
