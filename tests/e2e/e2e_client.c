/* e2e_client.c — the C side of the end-to-end tests: a libfeeder consumer
 * that checks what a real feederd delivers against what the dataset and the
 * pipeline reference say it must be.
 *
 *   e2e_client --socket S --datasets DIR COMMAND DATASET [args]
 *
 * The bash scripts in this folder start feederd on a temporary socket, build
 * small datasets with gen-images and packer, and call one COMMAND each:
 *
 *   pixels      pixels (three dtype/layout/mode combinations) and labels of
 *               several batches equal jpeg_pipeline_reference of the raw
 *               JPEG of the sample the sampler puts there (MAD <= 2/255)
 *   determinism the same request twice gives identical bytes; another seed
 *               gives other bytes
 *   ranks       ranks of a world are disjoint and together cover the epoch,
 *               each in its sampler order (samples identified by pixels)
 *   resume      start_batch = k yields exactly the tail of the full epoch
 *   elastic     2 ranks stop after P samples of an epoch; 1, 3, 4 or 5 ranks
 *               resume at start_sample = P: every sample of the epoch once
 *               (indices and pixels), each rank in its sampler order; a
 *               start_batch inside that share gives its tail; a start past
 *               the dataset is refused and the connection stays usable
 *   epoch SEED  stream one epoch, check labels and pixels of every sample
 *               (used by the concurrency test, several at once)
 *   hold        take every slot of a stream, print HOLDING, sleep (to be
 *               killed with SIGKILL)
 *   until-closed  stream a long run until the daemon goes away; exit 0 only
 *               if that was reported as FEEDER_ECLOSED
 *   held-stop   take one batch of a stream and hold it while the others
 *               are announced, print HOLDING, wait until the daemon has
 *               hung up (the test stops it with SIGTERM): the held batch
 *               and the announced ones then read from the old ring have
 *               the bytes of an undisturbed stream
 *   garbage     garbage, truncated and oversized messages on raw sockets are
 *               answered with a fatal ERROR and a close, while a libfeeder
 *               stream on another connection keeps delivering
 *   corrupt N   stream a dataset with N corrupt records: replacements are
 *               counted and every other sample is intact; with
 *               on_error=fail the stream fails with FEEDER_ESTREAM
 *   refusals    missing dataset, "../" in a name, over-quota request: each a
 *               clear error, and the connection stays usable after a refusal
 *   timeouts    feeder_stream_next times out when every slot is held; an open
 *               that timed out leaves no stream behind; double release fails
 *   pin         feeder_stream_pin registers the ring with CUDA (skip without a GPU)
 *   mkcorrupt SRC DST  write a copy of dataset SRC with record 1 failing its
 *               CRC and record 4 holding non-JPEG bytes (with a valid CRC)
 *
 * Commands of the fault tests (tests/fault/):
 *
 *   survive MAX [fail]  stream many epochs (slowly, 2 ms a batch; printing
 *               STREAMING after 3 batches) until MAX batches or until the
 *               stream ends or is refused; every label must lie in the
 *               dataset's classes. Prints one line
 *               "survive: opened=0|1 batches=N replacements=R
 *               result=ok|error|refused code=N message=TEXT" for the script, and exits 0 unless a
 *               delivered batch is wrong or the connection died.
 *               "fail": on_error=fail.
 *   quota Q L   with feederd run with --client-quota Q --memory-limit L:
 *               client B streams (every batch checked against the
 *               reference) while client A opens streams until its quota
 *               refuses one, a third client until the memory limit does;
 *               each refusal is FEEDER_EQUOTA with a sentence, leaves no
 *               stream behind, and B keeps streaming and may open within
 *               its quota (but not past the full limit)
 *
 * Exit status: 0 pass, 1 fail, 77 skip. */
#include "status.h"

#include "check.h"
#include "crc32c.h"
#include "detrand.h"
#include "dsstore.h"
#include "feeder.h"
#include "half.h"
#include "jpeg_pipeline.h"
#include "protocol.h"
#include "sampler.h"
#include "sockmsg.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 20000
#define MAD_LIMIT (2.0 / 255.0)

static const char *sock_path;
static const char *datasets_dir;

/* ---- The dataset, read directly ---------------------------------------- */

struct ds {
	struct dsstore *store;
	struct dsstore_txn *txn;
	uint64_t n;
};

static void ds_open(struct ds *d, const char *name)
{
	char dir[4096], err[512];
	snprintf(dir, sizeof dir, "%s/%s", datasets_dir, name);
	CHECKF(dsstore_open(dir, &d->store, err, sizeof err) == 0, "%s", err);
	CHECKF(dsstore_txn_begin(d->store, &d->txn, err, sizeof err) == 0, "%s", err);
	d->n = dsstore_header(d->store)->samples;
}

static void ds_close(struct ds *d)
{
	dsstore_txn_end(d->txn);
	dsstore_close(d->store);
}

/* Payload and label of sample index; returns 0, or nonzero for a record that
 * fails its CRC. */
static int ds_get(struct ds *d, uint64_t index, const uint8_t **payload, uint32_t *len,
		  uint32_t *label)
{
	struct dsformat_sample s;
	char err[512];
	CHECKF(dsstore_get_sample(d->txn, index, &s, payload, err, sizeof err) == 0, "%s", err);
	*len = s.payload_len;
	*label = s.label;
	return dsformat_sample_verify(&s, *payload, NULL, 0);
}

/* ---- Streams ------------------------------------------------------------ */

static struct feeder *connect_or_die(void)
{
	struct feeder *f;
	int rc = feeder_connect(sock_path, TIMEOUT_MS, &f);
	CHECKF(rc == 0, "connect: %s (%s)", feeder_last_error(NULL), feeder_strerror(rc));
	return f;
}

static void opts_small(struct feeder_stream_opts *o, const char *dataset, uint32_t size)
{
	feeder_stream_opts_init(o);
	snprintf(o->dataset, sizeof o->dataset, "%s", dataset);
	o->batch = 4;
	o->slots = 3;
	o->seed = 7;
	o->jpeg.height = o->jpeg.width = size;
}

static struct feeder_stream *open_or_die(struct feeder *f, const struct feeder_stream_opts *o)
{
	struct feeder_stream *s;
	int rc = feeder_stream_open(f, o, TIMEOUT_MS, &s);
	CHECKF(rc == 0, "open %s: %s (%s)", o->dataset, feeder_last_error(f), feeder_strerror(rc));
	return s;
}

/* Sample i of a tensor as [0,1] pixels in CHW order (undoing normalization). */
static void to_unit(const struct feeder_stream_opts *p, const void *data, size_t i, float *out)
{
	size_t hw = (size_t)p->jpeg.height * p->jpeg.width, n = 3 * hw;
	for (size_t c = 0; c < 3; c++)
		for (size_t k = 0; k < hw; k++) {
			size_t src = i * n + (p->layout == FEEDER_LAYOUT_NHWC ? k * 3 + c : c * hw + k);
			float v;
			if (p->dtype == FEEDER_DTYPE_U8)
				v = ((const uint8_t *)data)[src] / 255.0f;
			else if (p->dtype == FEEDER_DTYPE_F16)
				v = half_to_float(((const uint16_t *)data)[src]) * p->jpeg.std[c] + p->jpeg.mean[c];
			else
				v = ((const float *)data)[src] * p->jpeg.std[c] + p->jpeg.mean[c];
			out[c * hw + k] = v;
		}
}

static double mad(const float *a, const float *b, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += fabs((double)a[i] - (double)b[i]);
	return s / (double)n;
}

/* Reference pixels ([0,1], CHW) of dataset sample index under p and key. */
static void reference(struct jpeg_worker *w, struct ds *d, const struct feeder_stream_opts *p,
		      uint64_t index, uint64_t key, float *out)
{
	const uint8_t *payload;
	uint32_t len, label;
	CHECKF(ds_get(d, index, &payload, &len, &label) == 0, "sample %llu is corrupt",
	       (unsigned long long)index);
	size_t bytes = jpeg_pipeline_sample_bytes(p);
	void *buf = malloc(bytes);
	CHECK(buf);
	char err[512];
	int rc = jpeg_pipeline_reference(w, p, payload, len, key, buf, err, sizeof err);
	CHECKF(rc == 0, "reference of sample %llu: %s", (unsigned long long)index, err);
	to_unit(p, buf, 0, out);
	free(buf);
}

/* Check every sample of batch b against the reference of the sample the
 * sampler puts at its position (the first epoch from o->start_sample), and
 * its dataset index. Returns the worst MAD seen. */
static double check_batch(struct jpeg_worker *w, struct ds *d, const struct feeder_stream_opts *o,
			  const struct feeder_batch *b)
{
	const struct feeder_stream_opts p = *o;
	struct sampler sm;
	char err[512];
	CHECKF(sampler_init(&sm, d->n, o->seed, b->epoch, o->rank, o->world, 1, err, sizeof err) == 0,
	       "%s", err);
	if (b->epoch == o->epoch)
		CHECKF(sampler_start(&sm, o->start_sample, err, sizeof err) == 0, "%s", err);
	CHECK(b->dtype == o->dtype && b->layout == o->layout && b->ndim == 4);
	if (o->layout == FEEDER_LAYOUT_NCHW)
		CHECK(b->shape[1] == 3 && b->shape[2] == p.jpeg.height && b->shape[3] == p.jpeg.width);
	else
		CHECK(b->shape[1] == p.jpeg.height && b->shape[2] == p.jpeg.width && b->shape[3] == 3);
	CHECK(b->shape[0] == b->count && b->count >= 1 && b->count <= o->batch);
	CHECK(b->bytes == b->count * jpeg_pipeline_sample_bytes(&p));
	CHECKF(((uintptr_t)b->data & 4095) == 0, "tensor at %p is not page-aligned", b->data);
	size_t n = 3 * (size_t)p.jpeg.height * p.jpeg.width;
	float *got = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
	CHECK(got && want);
	double worst = 0;
	for (uint32_t i = 0; i < b->count; i++) {
		uint64_t k = b->batch_index * o->batch + i;
		CHECK(k < sampler_len(&sm));
		uint64_t index = sampler_at(&sm, k);
		CHECKF(b->indices[i] == index,
		       "rank %u of %u from sample %llu: epoch %llu position %llu holds %llu, not %llu",
		       o->rank, o->world, (unsigned long long)o->start_sample,
		       (unsigned long long)b->epoch, (unsigned long long)k,
		       (unsigned long long)b->indices[i], (unsigned long long)index);
		const uint8_t *payload;
		uint32_t len, label;
		CHECK(ds_get(d, index, &payload, &len, &label) == 0);
		CHECKF(b->labels[i] == (int32_t)label,
		       "epoch %llu batch %llu sample %u: label %d, dataset sample %llu has %u",
		       (unsigned long long)b->epoch, (unsigned long long)b->batch_index, i,
		       b->labels[i], (unsigned long long)index, label);
		reference(w, d, &p, index, detrand_key(o->seed, b->epoch, index), want);
		to_unit(&p, b->data, i, got);
		double m = mad(got, want, n);
		CHECKF(m <= MAD_LIMIT,
		       "epoch %llu batch %llu sample %u (dataset %llu): MAD %.5f > %.5f",
		       (unsigned long long)b->epoch, (unsigned long long)b->batch_index, i,
		       (unsigned long long)index, m, MAD_LIMIT);
		if (m > worst)
			worst = m;
	}
	free(got);
	free(want);
	return worst;
}

static int cmd_pixels(const char *dataset)
{
	struct ds d;
	ds_open(&d, dataset);
	struct jpeg_worker *w;
	char err[256];
	CHECKF(jpeg_worker_create(&w, err, sizeof err) == 0, "%s", err);
	struct feeder *f = connect_or_die();
	struct {
		int dtype, layout, train;
	} cases[] = {
		{ FEEDER_DTYPE_F32, FEEDER_LAYOUT_NCHW, 1 },
		{ FEEDER_DTYPE_U8, FEEDER_LAYOUT_NHWC, 0 },
		{ FEEDER_DTYPE_F16, FEEDER_LAYOUT_NCHW, 1 },
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct feeder_stream_opts o;
		opts_small(&o, dataset, 32);
		o.jpeg.width = 40; /* not square: catches h/w mix-ups */
		o.dtype = cases[c].dtype;
		o.layout = cases[c].layout;
		o.jpeg.train = cases[c].train;
		o.seed = 11 + c;
		struct feeder_stream *s = open_or_die(f, &o);
		struct feeder_stream_info info;
		feeder_stream_info(s, &info);
		CHECK(info.samples == d.n && info.batch == o.batch && info.slots == o.slots);
		double worst = 0;
		for (int k = 0; k < 3; k++) {
			struct feeder_batch b;
			int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
			CHECKF(rc == 0, "next: %s", feeder_last_error(f));
			CHECK(b.epoch == 0 && b.batch_index == (uint64_t)k && b.replacements == 0);
			double m = check_batch(w, &d, &o, &b);
			if (m > worst)
				worst = m;
			CHECK(feeder_batch_release(s, &b) == 0);
		}
		printf("pixels: case %zu (dtype %d layout %d train %d): 12 samples, worst MAD %.5f\n",
		       c, o.dtype, o.layout, o.jpeg.train, worst);
		CHECK(feeder_stream_close(s) == 0);
	}
	feeder_disconnect(f);
	jpeg_worker_destroy(w);
	ds_close(&d);
	return 0;
}

/* Every batch of one stream, concatenated: labels then tensor bytes. */
struct capture {
	uint8_t *buf;
	size_t len, cap;
	uint64_t batches;
	uint64_t first_index;
};

static void capture_add(struct capture *c, const void *p, size_t n)
{
	if (c->len + n > c->cap) {
		c->cap = (c->len + n) * 2;
		c->buf = realloc(c->buf, c->cap);
		CHECK(c->buf);
	}
	memcpy(c->buf + c->len, p, n);
	c->len += n;
}

static void capture_stream(struct feeder *f, const struct feeder_stream_opts *o,
			   struct capture *c)
{
	memset(c, 0, sizeof *c);
	struct feeder_stream *s = open_or_die(f, o);
	uint64_t expect = o->start_batch;
	for (;;) {
		struct feeder_batch b;
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc == FEEDER_EEND)
			break;
		CHECKF(rc == 0, "next: %s (%s)", feeder_last_error(f), feeder_strerror(rc));
		CHECKF(b.batch_index == expect, "batch %llu, expected %llu",
		       (unsigned long long)b.batch_index, (unsigned long long)expect);
		if (c->batches == 0)
			c->first_index = b.batch_index;
		expect++;
		c->batches++;
		capture_add(c, b.labels, b.count * sizeof(int32_t));
		capture_add(c, b.data, b.bytes);
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	CHECKF(c->batches == info.batches, "got %llu batches, stream announced %llu",
	       (unsigned long long)c->batches, (unsigned long long)info.batches);
	CHECK(feeder_stream_close(s) == 0);
}

static int cmd_determinism(const char *dataset)
{
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 24);
	struct capture a, b, c;
	capture_stream(f, &o, &a);
	capture_stream(f, &o, &b);
	CHECK(a.batches > 1);
	CHECKF(a.len == b.len && memcmp(a.buf, b.buf, a.len) == 0,
	       "the same request gave different bytes");
	o.seed = 8;
	capture_stream(f, &o, &c);
	CHECK(c.len == a.len);
	CHECKF(memcmp(a.buf, c.buf, a.len) != 0, "seeds 7 and 8 gave identical bytes");
	printf("determinism: %llu batches, %zu bytes identical twice; another seed differs\n",
	       (unsigned long long)a.batches, a.len);
	free(a.buf);
	free(b.buf);
	free(c.buf);
	feeder_disconnect(f);
	return 0;
}

static int cmd_resume(const char *dataset)
{
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 24);
	o.batch = 3;
	o.epoch = 2;
	struct capture full, tail;
	capture_stream(f, &o, &full);
	CHECK(full.batches >= 3);
	uint64_t k = full.batches / 2;
	o.start_batch = k;
	capture_stream(f, &o, &tail);
	CHECK(tail.first_index == k);
	CHECKF(tail.batches == full.batches - k, "tail has %llu batches, expected %llu",
	       (unsigned long long)tail.batches, (unsigned long long)(full.batches - k));
	CHECK(tail.len <= full.len);
	CHECKF(memcmp(full.buf + full.len - tail.len, tail.buf, tail.len) == 0,
	       "batches %llu.. of a resumed stream differ from the full epoch's",
	       (unsigned long long)k);
	printf("resume: start_batch %llu gives the last %llu of %llu batches byte for byte\n",
	       (unsigned long long)k, (unsigned long long)tail.batches,
	       (unsigned long long)full.batches);
	free(full.buf);
	free(tail.buf);
	feeder_disconnect(f);
	return 0;
}

/* Stream o to its end (or `batches` batches), each batch checked by
 * check_batch (indices from o->start_sample, pixels); count what was seen.
 * Returns the samples. */
static uint64_t elastic_take(struct feeder *f, struct jpeg_worker *w, struct ds *d,
			     const struct feeder_stream_opts *o, uint64_t batches, uint32_t *seen)
{
	struct feeder_stream *s = open_or_die(f, o);
	uint64_t taken = 0;
	for (uint64_t k = 0; k < batches; k++) {
		struct feeder_batch b;
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc == FEEDER_EEND)
			break;
		CHECKF(rc == 0, "rank %u of %u: %s", o->rank, o->world, feeder_last_error(f));
		check_batch(w, d, o, &b);
		for (uint32_t i = 0; i < b.count; i++, taken++)
			seen[b.indices[i]]++;
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	CHECK(feeder_stream_close(s) == 0);
	return taken;
}

static int cmd_elastic(const char *dataset)
{
	struct ds d;
	ds_open(&d, dataset);
	struct jpeg_worker *w;
	char err[256];
	CHECKF(jpeg_worker_create(&w, err, sizeof err) == 0, "%s", err);
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 16);
	o.jpeg.train = 0;
	o.dtype = FEEDER_DTYPE_U8;
	o.batch = 2;
	o.epoch = 4;
	uint32_t *seen = calloc(d.n, sizeof *seen);
	CHECK(seen);
	struct feeder *f = connect_or_die();
	/* Two ranks take 3 batches each: P = 12 samples of the epoch. */
	const uint64_t steps = 3;
	const uint32_t worlds[] = { 1, 3, 4, 5 };
	for (size_t wi = 0; wi < sizeof worlds / sizeof worlds[0]; wi++) {
		memset(seen, 0, d.n * sizeof *seen);
		uint64_t p = 0;
		o.world = 2;
		o.start_sample = 0;
		for (o.rank = 0; o.rank < 2; o.rank++)
			p += elastic_take(f, w, &d, &o, steps, seen);
		CHECK(p == steps * o.batch * 2);
		o.world = worlds[wi];
		o.start_sample = p;
		uint64_t after = 0;
		for (o.rank = 0; o.rank < o.world; o.rank++)
			after += elastic_take(f, w, &d, &o, UINT64_MAX, seen);
		for (uint64_t i = 0; i < d.n; i++)
			CHECKF(seen[i] == 1, "2 -> %u ranks at sample %llu: sample %llu seen %u times",
			       o.world, (unsigned long long)p, (unsigned long long)i, seen[i]);
		CHECK(p + after == d.n);
		printf("elastic: 2 ranks took %llu samples, %u ranks resumed at %llu and took %llu: "
		       "each of the %llu once\n",
		       (unsigned long long)p, o.world, (unsigned long long)p,
		       (unsigned long long)after, (unsigned long long)d.n);
	}
	/* start_batch counts batches of the share after start_sample. */
	o.world = 3;
	o.rank = 1;
	o.start_sample = 12;
	o.start_batch = 1;
	memset(seen, 0, d.n * sizeof *seen);
	uint64_t tail = elastic_take(f, w, &d, &o, UINT64_MAX, seen);
	CHECKF(tail == (d.n - 12 - 1 + 2) / 3 - 2, "rank 1 of 3 from batch 1: %llu samples",
	       (unsigned long long)tail);
	/* A start past the epoch: refused with a reason; the connection goes on. */
	o.start_batch = 0;
	o.start_sample = d.n + 1;
	struct feeder_stream *s;
	int rc = feeder_stream_open(f, &o, TIMEOUT_MS, &s);
	CHECKF(rc == FEEDER_EINVAL && strstr(feeder_last_error(f), "past the"),
	       "start_sample past the dataset: %d %s", rc, feeder_last_error(f));
	printf("elastic: start_sample %llu refused: %s\n", (unsigned long long)o.start_sample,
	       feeder_last_error(f));
	o.start_sample = d.n; /* nothing left of that epoch: the stream just ends */
	memset(seen, 0, d.n * sizeof *seen);
	CHECK(elastic_take(f, w, &d, &o, UINT64_MAX, seen) == 0);
	feeder_disconnect(f);
	free(seen);
	jpeg_worker_destroy(w);
	ds_close(&d);
	return 0;
}

/* Identify each delivered sample by its eval-mode pixels: the nearest
 * reference image must be within MAD_LIMIT and clearly nearer than any
 * other. */
static int cmd_ranks(const char *dataset, uint32_t world)
{
	struct ds d;
	ds_open(&d, dataset);
	struct jpeg_worker *w;
	char err[256];
	CHECKF(jpeg_worker_create(&w, err, sizeof err) == 0, "%s", err);
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 16);
	o.jpeg.train = 0;
	o.dtype = FEEDER_DTYPE_U8;
	o.world = world;
	o.batch = 2;
	o.epoch = 5;
	struct feeder_stream_opts p = o;
	size_t n = 3 * (size_t)p.jpeg.height * p.jpeg.width;
	float *refs = malloc(d.n * n * sizeof(float)), *got = malloc(n * sizeof(float));
	CHECK(refs && got);
	for (uint64_t i = 0; i < d.n; i++)
		reference(w, &d, &p, i, 0, refs + i * n);
	uint32_t *seen = calloc(d.n, sizeof *seen);
	CHECK(seen);
	struct feeder *f = connect_or_die();
	uint64_t lens[64];
	CHECK(world <= 64);
	for (uint32_t r = 0; r < world; r++) {
		o.rank = r;
		struct feeder_stream *s = open_or_die(f, &o);
		struct sampler sm;
		CHECK(sampler_init(&sm, d.n, o.seed, o.epoch, r, world, 1, err, sizeof err) == 0);
		uint64_t pos = 0;
		for (;;) {
			struct feeder_batch b;
			int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
			if (rc == FEEDER_EEND)
				break;
			CHECKF(rc == 0, "rank %u: %s", r, feeder_last_error(f));
			for (uint32_t i = 0; i < b.count; i++, pos++) {
				to_unit(&p, b.data, i, got);
				uint64_t best = 0;
				double bm = 1e9, second = 1e9;
				for (uint64_t j = 0; j < d.n; j++) {
					double m = mad(got, refs + j * n, n);
					if (m < bm) {
						second = bm;
						bm = m;
						best = j;
					} else if (m < second) {
						second = m;
					}
				}
				CHECKF(bm <= MAD_LIMIT && second > 2 * bm,
				       "rank %u position %llu matches no single image (best %.4f, next %.4f)",
				       r, (unsigned long long)pos, bm, second);
				CHECKF(best == sampler_at(&sm, pos),
				       "rank %u position %llu holds sample %llu, the sampler says %llu", r,
				       (unsigned long long)pos, (unsigned long long)best,
				       (unsigned long long)sampler_at(&sm, pos));
				seen[best]++;
			}
			CHECK(feeder_batch_release(s, &b) == 0);
		}
		lens[r] = pos;
		CHECK(feeder_stream_close(s) == 0);
	}
	uint64_t total = 0, lo = UINT64_MAX, hi = 0;
	for (uint32_t r = 0; r < world; r++) {
		total += lens[r];
		lo = lens[r] < lo ? lens[r] : lo;
		hi = lens[r] > hi ? lens[r] : hi;
	}
	for (uint64_t i = 0; i < d.n; i++)
		CHECKF(seen[i] == 1, "sample %llu delivered %u times over %u ranks",
		       (unsigned long long)i, seen[i], world);
	CHECK(total == d.n && hi - lo <= 1);
	printf("ranks: %u ranks delivered %llu samples, each of the %llu exactly once (%llu..%llu per rank)\n",
	       world, (unsigned long long)total, (unsigned long long)d.n, (unsigned long long)lo,
	       (unsigned long long)hi);
	feeder_disconnect(f);
	free(refs);
	free(got);
	free(seen);
	jpeg_worker_destroy(w);
	ds_close(&d);
	return 0;
}

/* One full epoch with every sample checked (for concurrent clients). */
static int cmd_epoch(const char *dataset, uint64_t seed)
{
	struct ds d;
	ds_open(&d, dataset);
	struct jpeg_worker *w;
	char err[256];
	CHECKF(jpeg_worker_create(&w, err, sizeof err) == 0, "%s", err);
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 24);
	o.seed = seed;
	o.dtype = FEEDER_DTYPE_F16;
	struct feeder_stream *s = open_or_die(f, &o);
	uint64_t samples = 0, batches = 0;
	for (;;) {
		struct feeder_batch b;
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc == FEEDER_EEND)
			break;
		CHECKF(rc == 0, "next: %s", feeder_last_error(f));
		CHECK(b.batch_index == batches);
		check_batch(w, &d, &o, &b);
		samples += b.count;
		batches++;
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	CHECKF(samples == d.n, "epoch delivered %llu of %llu samples", (unsigned long long)samples,
	       (unsigned long long)d.n);
	CHECK(feeder_stream_close(s) == 0);
	feeder_disconnect(f);
	jpeg_worker_destroy(w);
	ds_close(&d);
	printf("epoch: seed %llu, %llu batches, %llu samples checked\n", (unsigned long long)seed,
	       (unsigned long long)batches, (unsigned long long)samples);
	return 0;
}

static int cmd_hold(const char *dataset)
{
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 64);
	o.epochs = 1000;
	struct feeder_stream *s = open_or_die(f, &o);
	struct feeder_batch b[16];
	for (uint32_t i = 0; i < o.slots; i++) {
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b[i]);
		CHECKF(rc == 0, "next: %s", feeder_last_error(f));
	}
	printf("HOLDING %u\n", o.slots);
	fflush(stdout);
	for (;;)
		pause();
}

/* A batch's bytes as one hash: labels, indices and tensor. */
static uint64_t batch_digest(const struct feeder_batch *b)
{
	uint64_t h = 1469598103934665603ull;
	const uint8_t *parts[3] = { (const uint8_t *)b->labels, (const uint8_t *)b->indices, b->data };
	size_t lens[3] = { b->count * sizeof(int32_t), b->count * sizeof(uint64_t), b->bytes };
	for (int p = 0; p < 3; p++)
		for (size_t i = 0; i < lens[p]; i++)
			h = (h ^ parts[p][i]) * 1099511628211ull;
	return h;
}

static int cmd_held_stop(const char *dataset)
{
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 64);
	uint64_t want[3];
	struct feeder *f = connect_or_die();
	struct feeder_stream *s = open_or_die(f, &o);
	for (int i = 0; i < 3; i++) {
		struct feeder_batch b;
		CHECKF(feeder_stream_next(s, TIMEOUT_MS, &b) == 0, "next: %s", feeder_last_error(f));
		want[i] = batch_digest(&b);
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	CHECK(feeder_stream_close(s) == 0);
	s = open_or_die(f, &o);
	struct feeder_batch held, b;
	CHECKF(feeder_stream_next(s, TIMEOUT_MS, &held) == 0, "next: %s", feeder_last_error(f));
	CHECK(batch_digest(&held) == want[0]);
	usleep(300000); /* the other slots fill and are announced */
	printf("HOLDING\n");
	fflush(stdout);
	/* Nothing read meanwhile: the daemon's GOODBYE and hang-up wait in
	 * the socket behind the announcements. */
	struct pollfd p = { .fd = feeder_fd(f), .events = POLLRDHUP };
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	usleep(200000); /* and let it exit */
	CHECKF(batch_digest(&held) == want[0], "the held batch changed when feederd stopped "
	       "(labels %d %d %d %d)", held.labels[0], held.labels[1], held.labels[2], held.labels[3]);
	for (int i = 1; i < 3; i++) {
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		CHECKF(rc == 0, "announced batch %d: %s (%s)", i, feeder_strerror(rc), feeder_last_error(f));
		CHECKF(batch_digest(&b) == want[i], "announced batch %d changed when feederd stopped "
		       "(labels %d %d %d %d)", i, b.labels[0], b.labels[1], b.labels[2], b.labels[3]);
	}
	int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
	CHECKF(rc == FEEDER_ECLOSED, "after the announced batches: %s", feeder_strerror(rc));
	printf("held and announced batches intact after the stop\n");
	feeder_disconnect(f);
	return 0;
}

static int cmd_until_closed(const char *dataset)
{
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 64);
	o.epochs = 100000;
	struct feeder_stream *s = open_or_die(f, &o);
	uint64_t n = 0;
	for (;;) {
		struct feeder_batch b;
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc == 0) {
			if (++n == 3) {
				printf("STREAMING\n");
				fflush(stdout);
			}
			usleep(2000);
			rc = feeder_batch_release(s, &b);
			if (rc == 0)
				continue;
		}
		printf("stopped after %llu batches: %s (%s)\n", (unsigned long long)n,
		       feeder_strerror(rc), feeder_last_error(f));
		CHECKF(rc == FEEDER_ECLOSED, "expected FEEDER_ECLOSED, got %d", rc);
		CHECK(n >= 3);
		break;
	}
	feeder_stream_close(s);
	feeder_disconnect(f);
	return 0;
}

/* A raw connection: send one message of len bytes, then expect a fatal
 * ERROR and the connection closed. */
static void raw_expect_error(const void *msg, size_t len, const char *what)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	CHECKF(connect(s, (struct sockaddr *)&sa, sizeof sa) == 0, "connect: %s", strerror(errno));
	struct timeval tv = { .tv_sec = 10 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	CHECKF(send(s, msg, len, MSG_NOSIGNAL) == (ssize_t)len, "%s: send: %s", what, strerror(errno));
	uint8_t buf[PROTO_MAX_MESSAGE + 1];
	ssize_t n = recv(s, buf, sizeof buf, 0);
	CHECKF(n > 0, "%s: no answer (%s)", what, n < 0 ? strerror(errno) : "closed");
	struct proto_msg m;
	char err[512];
	CHECKF(proto_decode(buf, (size_t)n, &m, err, sizeof err) == 0, "%s: answer: %s", what, err);
	CHECKF(m.type == PROTO_ERROR && m.u.error.fatal == 1,
	       "%s: answered with %s, not a fatal ERROR", what, proto_type_name(m.type));
	CHECKF(m.u.error.code == FEEDER_EPROTO || m.u.error.code == FEEDER_EVERSION,
	       "%s: error code %d", what, m.u.error.code);
	printf("garbage: %s -> ERROR '%s'\n", what, m.u.error.message);
	n = recv(s, buf, sizeof buf, 0);
	CHECKF(n == 0, "%s: connection not closed after the fatal ERROR", what);
	close(s);
}

static void stream_some(struct feeder *f, struct feeder_stream *s, int k)
{
	for (int i = 0; i < k; i++) {
		struct feeder_batch b;
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		CHECKF(rc == 0, "the other client's stream stopped: %s", feeder_last_error(f));
		CHECK(feeder_batch_release(s, &b) == 0);
	}
}

/* feeder_stream_pin: 0 with a CUDA device, FEEDER_ENODEV (skip) without; a pinned
 * stream keeps delivering and closes cleanly (unregistering first). */
static int cmd_pin(const char *dataset)
{
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 32);
	o.epochs = 3;
	struct feeder_stream *s = open_or_die(f, &o);
	int rc = feeder_stream_pin(s);
	if (rc == FEEDER_ENODEV) {
		printf("pin: %s\n", feeder_last_error(f));
		feeder_stream_close(s);
		feeder_disconnect(f);
		return 77;
	}
	CHECKF(rc == 0, "feeder_stream_pin: %s (%s)", feeder_last_error(f), feeder_strerror(rc));
	CHECK(feeder_stream_pin(s) == 0); /* twice is fine */
	stream_some(f, s, 4);
	CHECK(feeder_stream_close(s) == 0);
	feeder_disconnect(f);
	printf("pin: ring registered with cudaHostRegister, 4 batches streamed\n");
	return 0;
}

/* The daemon's STATUS summary over a connection of our own. */
static struct feeder_status daemon_status(void)
{
	struct feeder *f = connect_or_die();
	struct feeder_status st;
	int rc = feeder_get_status(f, TIMEOUT_MS, &st);
	CHECKF(rc == 0, "feeder_get_status: %s (%s)", feeder_last_error(f), feeder_strerror(rc));
	feeder_disconnect(f);
	return st;
}

/* Timeouts: feeder_stream_next with nothing ready returns FEEDER_ETIMEDOUT after
 * about its timeout; an open that gives up before the answer leaves no
 * stream behind in the daemon (the late answer is closed by the library). */
static int cmd_timeouts(const char *dataset)
{
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 16);
	o.epochs = 1000;
	struct feeder_stream *s;
	/* The daemon often answers before a 0 ms wait ends; try until one open
	 * gives up first. */
	int orphans = 0;
	for (int i = 0; i < 50 && !orphans; i++) {
		int rc = feeder_stream_open(f, &o, 0, &s);
		if (rc == 0) {
			CHECK(feeder_stream_close(s) == 0);
		} else {
			CHECKF(rc == FEEDER_ETIMEDOUT, "open with timeout 0: %d (%s)", rc,
			       feeder_last_error(f));
			orphans++;
		}
	}
	/* A stream whose client holds every slot has nothing more to give. */
	o.slots = 2;
	s = open_or_die(f, &o);
	struct feeder_batch b[2], c;
	for (int i = 0; i < 2; i++)
		CHECKF(feeder_stream_next(s, TIMEOUT_MS, &b[i]) == 0, "%s", feeder_last_error(f));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = feeder_stream_next(s, 300, &c);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	CHECKF(rc == FEEDER_ETIMEDOUT && took >= 0.28 && took < 3, "next: %d after %.3f s", rc, took);
	CHECK(c.data == NULL);
	/* Releasing twice, or a batch of another stream, is refused. */
	struct feeder_batch copy = b[0];
	CHECK(feeder_batch_release(s, &b[0]) == 0 && b[0].data == NULL);
	CHECK(feeder_batch_release(s, &copy) == FEEDER_EINVAL);
	CHECK(feeder_batch_release(s, &b[1]) == 0);
	CHECKF(feeder_stream_next(s, TIMEOUT_MS, &c) == 0, "%s", feeder_last_error(f));
	CHECK(feeder_batch_release(s, &c) == 0);
	struct feeder_status st = daemon_status();
	CHECKF(st.streams == 1, "daemon has %u streams, expected 1 (the orphan was not closed)",
	       st.streams);
	CHECK(feeder_stream_close(s) == 0);
	for (int i = 0; i < 100 && daemon_status().streams != 0; i++)
		usleep(20000);
	CHECK(daemon_status().streams == 0);
	feeder_disconnect(f);
	printf("timeouts: next timed out after %.3f s; %d abandoned open(s) left no stream; "
	       "double release refused\n", took, orphans);
	return 0;
}

static int cmd_garbage(const char *dataset)
{
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 16);
	o.epochs = 100000;
	struct feeder_stream *s = open_or_die(f, &o);
	stream_some(f, s, 2);

	uint8_t junk[64];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	raw_expect_error(junk, sizeof junk, "64 bytes of garbage");
	stream_some(f, s, 2);

	/* A valid HELLO cut short: the header promises more than arrives. */
	struct proto_msg m = { .type = PROTO_HELLO };
	m.u.hello.pid = 1;
	uint8_t buf[PROTO_MAX_MESSAGE * 4];
	int n = proto_encode(&m, buf, sizeof buf);
	CHECK(n > PROTO_HEADER_SIZE + 4);
	raw_expect_error(buf, (size_t)n - 4, "a truncated HELLO");
	stream_some(f, s, 2);

	/* An OPEN_STREAM padded far beyond any message size. */
	m.type = PROTO_OPEN_STREAM;
	proto_opts_jpeg(&m.u.open.opts, 32, 1);
	snprintf(m.u.open.opts.dataset, sizeof m.u.open.opts.dataset, "%s", dataset);
	m.u.open.opts.batch = 2;
	n = proto_encode(&m, buf, sizeof buf);
	CHECK(n > 0);
	memset(buf + n, 0x5a, sizeof buf - (size_t)n);
	raw_expect_error(buf, sizeof buf, "an oversized message");
	stream_some(f, s, 2);

	/* A header-only message of another protocol version. */
	memcpy(buf, (uint8_t[]){ 0x46, 0x45, 0x44, 0x52, 99, 0, 1, 0 }, 8);
	memset(buf + 8, 0, 8);
	raw_expect_error(buf, PROTO_HEADER_SIZE, "protocol version 99");
	stream_some(f, s, 2);

	CHECK(feeder_stream_close(s) == 0);
	feeder_disconnect(f);
	printf("garbage: the other client kept streaming throughout\n");
	return 0;
}

static int cmd_corrupt(const char *dataset, uint32_t n_corrupt)
{
	struct ds d;
	ds_open(&d, dataset);
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 24);
	o.dtype = FEEDER_DTYPE_U8;
	struct feeder_stream *s = open_or_die(f, &o);
	uint64_t samples = 0, repl = 0;
	for (;;) {
		struct feeder_batch b;
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc == FEEDER_EEND)
			break;
		CHECKF(rc == 0, "next: %s (%s)", feeder_last_error(f), feeder_strerror(rc));
		CHECKF(b.count == o.batch || samples + b.count == d.n,
		       "a batch short of samples (%u) that is not the last", b.count);
		/* Every label is a valid record's label. */
		for (uint32_t i = 0; i < b.count; i++)
			CHECK(b.labels[i] >= 0);
		samples += b.count;
		repl += b.replacements;
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	CHECK(feeder_stream_close(s) == 0);
	CHECKF(samples == d.n, "epoch had %llu of %llu samples", (unsigned long long)samples,
	       (unsigned long long)d.n);
	CHECKF(repl == n_corrupt, "%llu replacements counted, %u corrupt records",
	       (unsigned long long)repl, n_corrupt);
	printf("corrupt: replace: %llu samples, %llu replacements\n", (unsigned long long)samples,
	       (unsigned long long)repl);

	o.on_error = FEEDER_ON_ERROR_FAIL;
	s = open_or_die(f, &o);
	int rc;
	uint64_t before = 0;
	for (;;) {
		struct feeder_batch b;
		rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc)
			break;
		before++;
		CHECK(b.replacements == 0);
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	CHECKF(rc == FEEDER_ESTREAM, "on_error=fail ended with %d (%s): %s", rc, feeder_strerror(rc),
	       feeder_last_error(f));
	printf("corrupt: on_error=fail: FEEDER_ESTREAM after %llu batches: %s\n",
	       (unsigned long long)before, feeder_last_error(f));
	feeder_stream_close(s);
	/* The connection is still good for another stream. */
	o.on_error = FEEDER_ON_ERROR_REPLACE;
	s = open_or_die(f, &o);
	stream_some(f, s, 1);
	CHECK(feeder_stream_close(s) == 0);
	feeder_disconnect(f);
	ds_close(&d);
	return 0;
}

/* The refusal must carry code and a message mentioning needle (or alt). */
static void expect_refusal(const char *name, const struct feeder_stream_opts *o, int code,
			   const char *needle, const char *alt)
{
	struct feeder *f = connect_or_die();
	struct feeder_stream *s;
	int rc = feeder_stream_open(f, o, TIMEOUT_MS, &s);
	CHECKF(rc == code, "%s: got %d (%s: %s), expected %d (%s)", name, rc, feeder_strerror(rc),
	       feeder_last_error(f), code, feeder_strerror(code));
	const char *msg = feeder_last_error(f);
	CHECKF(strcasestr(msg, needle) || (alt && strcasestr(msg, alt)),
	       "%s: message '%s' does not mention '%s'", name, msg, needle);
	printf("refusals: %s -> %s: %s\n", name, feeder_strerror(rc), msg);
	feeder_disconnect(f);
}

static int cmd_refusals(const char *dataset)
{
	struct feeder_stream_opts o;
	opts_small(&o, "no-such-dataset", 32);
	expect_refusal("missing dataset", &o, FEEDER_ENODATASET, "no-such-dataset", NULL);
	opts_small(&o, "../etc", 32);
	expect_refusal("'../etc'", &o, FEEDER_EBADNAME, "../etc", NULL);
	opts_small(&o, dataset, 512);
	o.batch = 256;
	o.slots = 16;
	o.dtype = FEEDER_DTYPE_F32; /* 16 slots x 256 x 3 x 512 x 512 x 4 bytes = 12 GiB */
	expect_refusal("over-quota request", &o, FEEDER_EQUOTA, "quota", "limit");

	/* After a refusal the same connection still serves. */
	struct feeder *f = connect_or_die();
	struct feeder_stream *s;
	opts_small(&o, "no-such-dataset", 32);
	CHECK(feeder_stream_open(f, &o, TIMEOUT_MS, &s) == FEEDER_ENODATASET);
	opts_small(&o, dataset, 32);
	s = open_or_die(f, &o);
	stream_some(f, s, 2);
	CHECK(feeder_stream_close(s) == 0);
	feeder_disconnect(f);
	return 0;
}

/* Copy dataset src to dst, breaking records 1 (CRC) and 4 (not a JPEG). */
static int cmd_mkcorrupt(const char *src, const char *dst)
{
	char err[512];
	struct dsstore *in;
	CHECKF(dsstore_open(src, &in, err, sizeof err) == 0, "%s", err);
	struct dsstore_txn *t;
	CHECKF(dsstore_txn_begin(in, &t, err, sizeof err) == 0, "%s", err);
	const struct dsformat_header *h = dsstore_header(in);
	CHECK(h->samples > 4);
	struct dsstore_writer *w;
	CHECKF(mkdir(dst, 0755) == 0, "mkdir %s: %s", dst, strerror(errno));
	CHECKF(dsstore_writer_open(dst, 0, &w, err, sizeof err) == 0, "%s", err);
	for (uint32_t c = 0; c < h->classes; c++) {
		const char *name;
		size_t len;
		char buf[512];
		CHECK(dsstore_get_label(t, c, &name, &len) == 0 && len < sizeof buf);
		memcpy(buf, name, len);
		buf[len] = '\0';
		CHECKF(dsstore_writer_put_label(w, c, buf, err, sizeof err) == 0, "%s", err);
	}
	static const char not_jpeg[] = "this record is not a JPEG image at all, though its CRC is fine";
	for (uint64_t i = 0; i < h->samples; i++) {
		struct dsformat_sample s;
		const uint8_t *payload;
		CHECKF(dsstore_get_sample(t, i, &s, &payload, err, sizeof err) == 0, "%s", err);
		uint8_t *copy = malloc(s.payload_len > sizeof not_jpeg ? s.payload_len : sizeof not_jpeg);
		CHECK(copy);
		memcpy(copy, payload, s.payload_len);
		if (i == 1) {
			copy[s.payload_len / 2] ^= 0x40; /* the stored CRC no longer matches */
		} else if (i == 4) {
			s.payload_len = sizeof not_jpeg;
			memcpy(copy, not_jpeg, sizeof not_jpeg);
			s.crc = crc32c(0, copy, s.payload_len);
		}
		CHECKF(dsstore_writer_put_sample(w, i, &s, copy, err, sizeof err) == 0, "%s", err);
		free(copy);
	}
	CHECKF(dsstore_writer_finish(w, h, err, sizeof err) == 0, "%s", err);
	dsstore_txn_end(t);
	dsstore_close(in);
	return 0;
}

/* ---- Fault tests (tests/fault/) ----------------------------------------- */

static int cmd_survive(const char *dataset, const char *max_arg, const char *mode)
{
	uint64_t max = max_arg ? strtoull(max_arg, NULL, 10) : 1000;
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 24);
	o.epochs = 100000;
	if (mode && strcmp(mode, "fail") == 0)
		o.on_error = FEEDER_ON_ERROR_FAIL;
	struct feeder_stream *s;
	int rc = feeder_stream_open(f, &o, TIMEOUT_MS, &s);
	if (rc) {
		CHECKF(rc != FEEDER_ECLOSED && rc != FEEDER_ETIMEDOUT, "open: %s (%s)",
		       feeder_strerror(rc), feeder_last_error(f));
		printf("survive: opened=0 batches=0 replacements=0 result=refused code=%d message=%s\n",
		       rc, feeder_last_error(f));
		feeder_disconnect(f);
		return 0;
	}
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	uint64_t n = 0, repl = 0;
	for (; n < max;) {
		struct feeder_batch b;
		rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc)
			break;
		for (uint32_t i = 0; i < b.count; i++)
			CHECKF(b.labels[i] >= 0 && (uint32_t)b.labels[i] < info.classes,
			       "batch %llu sample %u: label %d, the dataset has %u classes",
			       (unsigned long long)n, i, b.labels[i], info.classes);
		repl += b.replacements;
		if (++n == 3) {
			printf("STREAMING\n");
			fflush(stdout);
		}
		usleep(2000);
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	CHECKF(rc == 0 || rc == FEEDER_ESTREAM, "stream stopped with %s: %s", feeder_strerror(rc),
	       feeder_last_error(f));
	printf("survive: opened=1 batches=%llu replacements=%llu result=%s code=%d message=%s\n",
	       (unsigned long long)n, (unsigned long long)repl, rc ? "error" : "ok", rc,
	       rc ? feeder_last_error(f) : "");
	feeder_stream_close(s);
	feeder_disconnect(f);
	return 0;
}

/* A consumer whose every batch is checked against the reference. */
struct checked {
	struct feeder *f;
	struct feeder_stream *s;
	struct feeder_stream_opts o;
	uint64_t batches, samples;
};

static void checked_some(struct checked *c, struct jpeg_worker *w, struct ds *d, int k)
{
	for (int i = 0; i < k; i++) {
		struct feeder_batch b;
		int rc = feeder_stream_next(c->s, TIMEOUT_MS, &b);
		CHECKF(rc == 0, "the other client's stream stopped: %s (%s)", feeder_strerror(rc),
		       feeder_last_error(c->f));
		CHECK(b.replacements == 0);
		check_batch(w, d, &c->o, &b);
		c->batches++;
		c->samples += b.count;
		CHECK(feeder_batch_release(c->s, &b) == 0);
	}
}

/* Open streams on f until one is refused; returns how many opened. The
 * refusal must be FEEDER_EQUOTA naming needle. */
static unsigned open_until_refused(struct feeder *f, const struct feeder_stream_opts *o,
				   struct feeder_stream **out, unsigned cap, const char *needle,
				   const char *who)
{
	for (unsigned k = 0; k < cap; k++) {
		int rc = feeder_stream_open(f, o, TIMEOUT_MS, &out[k]);
		if (rc == 0)
			continue;
		CHECKF(rc == FEEDER_EQUOTA, "%s: stream %u: %s (%s), expected FEEDER_EQUOTA", who, k,
		       feeder_strerror(rc), feeder_last_error(f));
		CHECKF(strcasestr(feeder_last_error(f), needle), "%s: refusal '%s' does not say '%s'",
		       who, feeder_last_error(f), needle);
		printf("quota: %s opened %u streams, then: %s\n", who, k, feeder_last_error(f));
		return k;
	}
	CHECKF(0, "%s: %u streams opened and none refused", who, cap);
	return cap;
}

static int cmd_quota(const char *dataset, const char *q_arg, const char *l_arg)
{
	CHECKF(q_arg && l_arg, "quota needs the daemon's client quota and memory limit in bytes");
	uint64_t quota = strtoull(q_arg, NULL, 10), limit = strtoull(l_arg, NULL, 10);
	struct ds d;
	ds_open(&d, dataset);
	struct jpeg_worker *w;
	char err[256];
	CHECKF(jpeg_worker_create(&w, err, sizeof err) == 0, "%s", err);

	/* B: the well-behaved client, checked throughout. */
	struct checked b = { .f = connect_or_die() };
	opts_small(&b.o, dataset, 32);
	b.o.epochs = 100000;
	b.s = open_or_die(b.f, &b.o);
	struct feeder_stream_info info;
	feeder_stream_info(b.s, &info);
	uint64_t ring = info.ring_size;
	checked_some(&b, w, &d, 2);

	/* A: the greedy one, same request, until its quota stops it. */
	uint64_t n_a = quota / ring, used = ring * (1 + n_a);
	CHECKF(n_a >= 1 && used + ring <= limit && (limit - used) / ring < n_a,
	       "rings of %llu bytes: quota %llu and limit %llu do not make a test", (unsigned long long)ring,
	       (unsigned long long)quota, (unsigned long long)limit);
	struct feeder *a = connect_or_die();
	struct feeder_stream *as[64], *a2s[64];
	CHECK(n_a < 64);
	unsigned got = open_until_refused(a, &b.o, as, 64, "quota", "client A");
	CHECKF(got == n_a, "client A opened %u streams of %llu bytes under a quota of %llu", got,
	       (unsigned long long)ring, (unsigned long long)quota);
	checked_some(&b, w, &d, 2);
	struct feeder_status st = daemon_status();
	CHECKF(st.streams == 1 + n_a && st.memory_used == used,
	       "daemon: %u streams, %llu bytes in use; expected %llu and %llu", st.streams,
	       (unsigned long long)st.memory_used, (unsigned long long)(1 + n_a),
	       (unsigned long long)used);

	/* B may still open within its own quota. */
	struct feeder_stream *extra = open_or_die(b.f, &b.o);
	stream_some(b.f, extra, 1);
	CHECK(feeder_stream_close(extra) == 0);
	checked_some(&b, w, &d, 2);
	/* A closed stream's ring stays charged until the work already running
	 * on it ends (milliseconds; longer on a loaded machine): wait for that,
	 * so that what is left is known. */
	for (int i = 0; i < 500 && daemon_status().memory_used != used; i++)
		usleep(10000);
	st = daemon_status();
	CHECKF(st.memory_used == used, "the closed stream's %llu bytes were not given back in 5 s",
	       (unsigned long long)(st.memory_used - used));

	/* A second greedy client takes what is left of the daemon's limit. */
	struct feeder *a2 = connect_or_die();
	unsigned got2 = open_until_refused(a2, &b.o, a2s, 64, "in use", "client C");
	uint64_t want2 = (limit - used) / ring;
	CHECKF(got2 == want2, "client C opened %u streams, %llu fit the limit", got2,
	       (unsigned long long)want2);
	checked_some(&b, w, &d, 3);
	/* Now nobody gets more, B included, with the same sentence. */
	struct feeder_stream *none;
	int rc = feeder_stream_open(b.f, &b.o, TIMEOUT_MS, &none);
	CHECKF(rc == FEEDER_EQUOTA && strcasestr(feeder_last_error(b.f), "in use"),
	       "B's open at the full limit: %s (%s)", feeder_strerror(rc), feeder_last_error(b.f));
	checked_some(&b, w, &d, 2);
	st = daemon_status();
	CHECKF(st.streams == 1 + n_a + got2 && st.memory_used <= limit,
	       "daemon: %u streams, %llu of %llu bytes", st.streams,
	       (unsigned long long)st.memory_used, (unsigned long long)limit);

	/* The greedy clients leave: their memory comes back, B opens again. */
	feeder_disconnect(a);
	feeder_disconnect(a2);
	/* (their rings are charged until the work running on them ends) */
	for (int i = 0; i < 250; i++) {
		st = daemon_status();
		if (st.streams == 1 && st.memory_used == ring)
			break;
		usleep(20000);
	}
	CHECKF(st.streams == 1 && st.memory_used == ring, "after A and C left: %u streams, %llu bytes",
	       st.streams, (unsigned long long)st.memory_used);
	extra = open_or_die(b.f, &b.o);
	stream_some(b.f, extra, 1);
	CHECK(feeder_stream_close(extra) == 0);
	checked_some(&b, w, &d, 2);
	printf("quota: rings of %llu bytes; client B streamed %llu checked batches (%llu samples) "
	       "throughout; greedy clients opened %u and %u streams before quota and limit refused\n",
	       (unsigned long long)ring, (unsigned long long)b.batches,
	       (unsigned long long)b.samples, got, got2);
	CHECK(feeder_stream_close(b.s) == 0);
	feeder_disconnect(b.f);
	jpeg_worker_destroy(w);
	ds_close(&d);
	return 0;
}

int main(int argc, char **argv)
{
	int i = 1;
	for (; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--socket") == 0)
			sock_path = argv[i + 1];
		else if (strcmp(argv[i], "--datasets") == 0)
			datasets_dir = argv[i + 1];
		else
			break;
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: e2e_client --socket S --datasets DIR COMMAND DATASET [ARG]\n");
		return 1;
	}
	const char *cmd = argv[i], *dataset = argv[i + 1];
	const char *arg = i + 2 < argc ? argv[i + 2] : NULL;
	if (strcmp(cmd, "mkcorrupt") == 0 && arg)
		return cmd_mkcorrupt(dataset, arg);
	CHECKF(sock_path && datasets_dir, "--socket and --datasets are required");
	if (strcmp(cmd, "pixels") == 0)
		return cmd_pixels(dataset);
	if (strcmp(cmd, "determinism") == 0)
		return cmd_determinism(dataset);
	if (strcmp(cmd, "resume") == 0)
		return cmd_resume(dataset);
	if (strcmp(cmd, "elastic") == 0)
		return cmd_elastic(dataset);
	if (strcmp(cmd, "ranks") == 0)
		return cmd_ranks(dataset, arg ? (uint32_t)atoi(arg) : 3);
	if (strcmp(cmd, "epoch") == 0)
		return cmd_epoch(dataset, arg ? strtoull(arg, NULL, 10) : 1);
	if (strcmp(cmd, "hold") == 0)
		return cmd_hold(dataset);
	if (strcmp(cmd, "until-closed") == 0)
		return cmd_until_closed(dataset);
	if (strcmp(cmd, "held-stop") == 0)
		return cmd_held_stop(dataset);
	if (strcmp(cmd, "garbage") == 0)
		return cmd_garbage(dataset);
	if (strcmp(cmd, "corrupt") == 0)
		return cmd_corrupt(dataset, arg ? (uint32_t)atoi(arg) : 2);
	if (strcmp(cmd, "refusals") == 0)
		return cmd_refusals(dataset);
	if (strcmp(cmd, "timeouts") == 0)
		return cmd_timeouts(dataset);
	if (strcmp(cmd, "pin") == 0)
		return cmd_pin(dataset);
	/* fault tests */
	const char *arg2 = i + 3 < argc ? argv[i + 3] : NULL;
	if (strcmp(cmd, "survive") == 0)
		return cmd_survive(dataset, arg, arg2);
	if (strcmp(cmd, "quota") == 0)
		return cmd_quota(dataset, arg, arg2);
	fprintf(stderr, "e2e_client: unknown command '%s'\n", cmd);
	return 1;
}
