/* e2e_client.c — what a libfeeder client sees from a real feederd, checked
 * against what the dataset and the pipeline references say it must be: the
 * one client-level test of pixels, order, determinism, resume, ranks,
 * corrupt records, refusals and shutdown (hostile input on the raw wire is
 * tests/protocol/test_daemon_wire.c's).
 *
 * `e2e_client TEST` runs one test on its own: the fixture (tests/lib/harness.c)
 * makes a private folder with 24 (order: 23) photos from gen-images packed by
 * packer (corrupt: and a copy with two records broken), and a features
 * dataset, starts feederd there on a private socket,
 * checks, and stops it with SIGTERM (it must exit 0, its socket gone):
 *
 *   pixels      pixels (three dtype/layout/mode combinations), labels and
 *               indices equal jpeg_pipeline_reference of the record the
 *               sampler puts there (MAD <= 2/255)
 *   features    features chunks and labels equal features_pipeline_run's
 *   order       indices, labels and pixels over 2 ranks x 2 epochs, shuffled
 *               and not (shuffle=0: rank r gets r, r + w, r + 2w, ...)
 *   names       names=1 carries the names the dataset stores; names=0 none
 *   corrupt     a copy with a record failing its CRC and one not a JPEG:
 *               both replaced, counted per batch and by the daemon, the same
 *               bytes twice; on_error=fail fails the stream (FEEDER_ESTREAM)
 *   determinism the same request twice gives the same bytes; another seed not
 *   resume      start_batch = k yields the tail of the epoch, then the next
 *               epoch as a fresh stream of it
 *   ranks       ranks of a world take disjoint, balanced shares that cover
 *               the epoch in sampler order: 5 ranks; and after 2 ranks took
 *               P samples, 1, 3, 4 or 5 resuming at start_sample = P (elastic)
 *   refusals    missing dataset, "../" in a name, quota, max_slots, starts
 *               past the epoch, options out of range, a pipeline the
 *               dataset's kind does not fit: each a clear error that leaves
 *               the connection usable
 *   timeouts    next times out while every slot is held; an open that timed
 *               out leaves no stream behind; a double release fails
 *   pin         feeder_stream_pin registers the ring with CUDA (skip without)
 *
 * `e2e_client --socket S --datasets DIR COMMAND DATASET [ARG...]` is a client
 * for the shell tests, which start the daemon (tests/lib/lib.sh):
 *
 *   epoch SEED  one epoch, every sample's label and pixels checked
 *   hold        take every slot, print HOLDING, sleep (to be SIGKILLed)
 *   corrupt N   as the corrupt test, on a dataset with N corrupt records
 *   until-closed  stream until the daemon goes away; exit 0 only if that was
 *               FEEDER_ECLOSED
 *   held-stop   hold one batch while others are announced, print HOLDING,
 *               wait for the daemon's hang-up (SIGTERM): the held and the
 *               announced batches keep the bytes of an undisturbed stream
 *   survive MAX [fail]  stream (2 ms a batch; STREAMING after 3) until MAX
 *               batches, the end or a refusal, every label in the dataset's
 *               classes; prints "survive: opened=0|1 batches=N
 *               replacements=R result=ok|error|refused code=N message=TEXT";
 *               exits 0 unless a batch is wrong or the connection died
 *   quota Q L   (feederd run with --client-quota Q --memory-limit L) client B
 *               streams, every batch checked, while A opens streams until its
 *               quota refuses one and C until the memory limit does: each
 *               refusal FEEDER_EQUOTA with a sentence, no stream left behind
 *
 * Exit status: 0 pass, 1 fail, 77 skip. */
#include "check.h"
#include "detrand.h"
#include "dsstore.h"
#include "feeder.h"
#include "features_pipeline.h"
#include "half.h"
#include "harness.h"
#include "jpeg_pipeline.h"
#include "protocol.h"
#include "sampler.h"
#include "status.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 20000
#define MAD_LIMIT (2.0 / 255.0)

/* ---- The dataset, read directly ---------------------------------------- */

struct ds {
	struct dsstore *store;
	struct dsstore_txn *txn;
	uint64_t n;
};

static void ds_open(struct ds *d, const char *name)
{
	d->store = harness_ds_open(name, &d->txn);
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
	int rc = feeder_connect(harness.sock, TIMEOUT_MS, &f);
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

/* The next batch of s (1) or its end (0); anything else fails. */
static int next_or_end(struct feeder *f, struct feeder_stream *s, struct feeder_batch *b)
{
	int rc = feeder_stream_next(s, TIMEOUT_MS, b);
	if (rc == FEEDER_EEND)
		return 0;
	CHECKF(rc == 0, "next: %s (%s)", feeder_last_error(f), feeder_strerror(rc));
	return 1;
}

/* Sample i of a tensor as [0,1] pixels in CHW order (undoing normalization). */
static void to_unit(const struct feeder_stream_opts *p, const void *data, size_t i, float *out)
{
	size_t hw = (size_t)p->jpeg.height * p->jpeg.width, n = 3 * hw;
	for (size_t c = 0; c < 3; c++)
		for (size_t k = 0; k < hw; k++) {
			size_t src =
				i * n + (p->layout == FEEDER_LAYOUT_NHWC ? k * 3 + c : c * hw + k);
			float v;
			if (p->dtype == FEEDER_DTYPE_U8)
				v = ((const uint8_t *)data)[src] / 255.0f;
			else if (p->dtype == FEEDER_DTYPE_F16)
				v = half_to_float(((const uint16_t *)data)[src]) * p->jpeg.std[c] +
				    p->jpeg.mean[c];
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
	CHECKF(sampler_init(&sm, d->n, o->seed, b->epoch, o->rank, o->world, (int)o->shuffle, err,
			    sizeof err) == 0,
	       "%s", err);
	if (b->epoch == o->epoch)
		CHECKF(sampler_start(&sm, o->start_sample, err, sizeof err) == 0, "%s", err);
	CHECK(b->dtype == o->dtype && b->layout == o->layout && b->ndim == 4);
	if (o->layout == FEEDER_LAYOUT_NCHW)
		CHECK(b->shape[1] == 3 && b->shape[2] == p.jpeg.height &&
		      b->shape[3] == p.jpeg.width);
	else
		CHECK(b->shape[1] == p.jpeg.height && b->shape[2] == p.jpeg.width &&
		      b->shape[3] == 3);
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
		if (!o->shuffle && (b->epoch != o->epoch || !o->start_sample))
			CHECKF(index == o->rank + k * o->world,
			       "unshuffled position %llu is record %llu", (unsigned long long)k,
			       (unsigned long long)index);
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

/* What a checking client holds: the dataset read directly, a reference
 * decoder, a connection, and a count per record of what it was given. */
struct checker {
	struct ds d;
	struct jpeg_worker *w;
	struct feeder *f;
	uint32_t *seen;
};

static void checker_open(struct checker *c, const char *dataset)
{
	ds_open(&c->d, dataset);
	CHECKF(jpeg_worker_create(&c->w, harness_err, sizeof harness_err) == 0, "%s", harness_err);
	c->f = connect_or_die();
	c->seen = calloc(c->d.n, sizeof *c->seen);
	CHECK(c->seen);
}

static void checker_close(struct checker *c)
{
	free(c->seen);
	feeder_disconnect(c->f);
	jpeg_worker_destroy(c->w);
	ds_close(&c->d);
}

static int cmd_pixels(const char *dataset)
{
	struct checker ck;
	checker_open(&ck, dataset);
	struct feeder *f = ck.f;
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
		CHECK(info.samples == ck.d.n && info.batch == o.batch && info.slots == o.slots);
		double worst = 0;
		for (int k = 0; k < 3; k++) {
			struct feeder_batch b;
			int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
			CHECKF(rc == 0, "next: %s", feeder_last_error(f));
			CHECK(b.epoch == 0 && b.batch_index == (uint64_t)k && b.replacements == 0);
			double m = check_batch(ck.w, &ck.d, &o, &b);
			if (m > worst)
				worst = m;
			CHECK(feeder_batch_release(s, &b) == 0);
		}
		printf("pixels: case %zu (dtype %d layout %d train %d): 12 samples, worst MAD %.5f\n",
		       c, o.dtype, o.layout, o.jpeg.train, worst);
		CHECK(feeder_stream_close(s) == 0);
	}
	checker_close(&ck);
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

static void capture_stream(struct feeder *f, const struct feeder_stream_opts *o, struct capture *c)
{
	memset(c, 0, sizeof *c);
	struct feeder_stream *s = open_or_die(f, o);
	uint64_t expect = o->start_batch, epoch = o->epoch;
	struct feeder_batch b;
	while (next_or_end(f, s, &b)) {
		if (b.epoch != epoch) {
			CHECK(b.epoch == epoch + 1);
			epoch = b.epoch;
			expect = 0;
		}
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
	struct capture full, next, tail;
	capture_stream(f, &o, &full);
	CHECK(full.batches >= 3);
	o.epoch = 3;
	capture_stream(f, &o, &next);
	/* From batch k of epoch 2 over two epochs: the tail of epoch 2, then
	 * epoch 3 as a fresh stream of it gives it. */
	uint64_t k = full.batches / 2;
	o.epoch = 2;
	o.epochs = 2;
	o.start_batch = k;
	capture_stream(f, &o, &tail);
	CHECK(tail.first_index == k);
	CHECKF(tail.batches == full.batches - k + next.batches,
	       "resumed: %llu batches, expected "
	       "%llu",
	       (unsigned long long)tail.batches,
	       (unsigned long long)(full.batches - k + next.batches));
	CHECK(tail.len >= next.len && tail.len - next.len <= full.len);
	size_t cut = tail.len - next.len;
	CHECKF(memcmp(full.buf + full.len - cut, tail.buf, cut) == 0,
	       "batches %llu.. of a resumed stream differ from the full epoch's",
	       (unsigned long long)k);
	CHECKF(memcmp(tail.buf + cut, next.buf, next.len) == 0,
	       "the epoch after the resumed one differs from a fresh stream of it");
	printf("resume: start_batch %llu gives the last %llu of %llu batches byte for byte, then "
	       "the next epoch's %llu\n",
	       (unsigned long long)k, (unsigned long long)(full.batches - k),
	       (unsigned long long)full.batches, (unsigned long long)next.batches);
	free(full.buf);
	free(next.buf);
	free(tail.buf);
	feeder_disconnect(f);
	return 0;
}

/* A features stream: (batch, dim, chunk) chunks equal to the features
 * pipeline run on the stored matrices (CMN and CVN per utterance), labels
 * and indices included. */
static int cmd_features(const char *dataset)
{
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	proto_opts_features(&o, 20, 1);
	snprintf(o.dataset, sizeof o.dataset, "%s", dataset);
	o.batch = 3;
	o.slots = 2;
	o.seed = 99;
	o.features.cmn = FEEDER_FEAT_CMN_UTT;
	o.features.cvn = 1;
	struct feeder_stream *s = open_or_die(f, &o);
	size_t sb = sizeof(float) * HARNESS_FEAT_DIM * 20;
	float *ref = malloc(sb);
	CHECK(ref);
	struct sampler order;
	char err[512];
	CHECK(sampler_init(&order, HARNESS_FEAT_N, o.seed, 0, 0, 1, 1, err, sizeof err) == 0);
	uint64_t n = 0;
	struct feeder_batch b;
	while (next_or_end(f, s, &b)) {
		CHECK(b.ndim == 4 && b.shape[0] == b.count && b.shape[1] == HARNESS_FEAT_DIM &&
		      b.shape[2] == 20 && b.shape[3] == 1 && b.bytes == b.count * sb);
		for (uint32_t i = 0; i < b.count; i++) {
			uint64_t idx = sampler_at(&order, n * 3 + i);
			CHECK(b.indices[i] == idx && b.labels[i] == (int32_t)(100 + idx));
			uint32_t frames;
			float *m = harness_features_matrix((unsigned)idx, &frames);
			struct dsformat_sample smp = { .label = 100 + (uint32_t)idx,
						       .payload_len =
							       (uint32_t)(sizeof(float) * frames *
									  HARNESS_FEAT_DIM),
						       .frames = frames,
						       .dim = HARNESS_FEAT_DIM,
						       .dtype = DSFORMAT_DTYPE_F32 };
			CHECKF(features_pipeline_run(&o, &smp, (const uint8_t *)m,
						     detrand_key(o.seed, 0, idx), ref, err,
						     sizeof err) == 0,
			       "%s", err);
			CHECKF(memcmp(ref, (const uint8_t *)b.data + i * sb, sb) == 0,
			       "features sample %llu differs", (unsigned long long)idx);
			free(m);
		}
		CHECK(feeder_batch_release(s, &b) == 0);
		n++;
	}
	CHECK(n == 3);
	printf("features: %llu batches of CMN/CVN chunks equal to the pipeline's\n",
	       (unsigned long long)n);
	free(ref);
	CHECK(feeder_stream_close(s) == 0);
	feeder_disconnect(f);
	return 0;
}

/* Stream o to its end (or `batches` batches), in order over its epochs, each
 * batch checked by check_batch (indices from o->start_sample, labels,
 * pixels); count what was seen. Returns the samples. */
static uint64_t take_checked(struct checker *c, const struct feeder_stream_opts *o,
			     uint64_t batches)
{
	struct feeder *f = c->f;
	struct feeder_stream *s = open_or_die(f, o);
	uint64_t taken = 0, epoch = o->epoch, next = o->start_batch;
	struct feeder_batch b;
	for (uint64_t k = 0; k < batches && next_or_end(f, s, &b); k++) {
		if (b.epoch != epoch) {
			CHECK(b.epoch == epoch + 1);
			epoch = b.epoch;
			next = 0;
		}
		CHECK(b.batch_index == next++ && b.replacements == 0);
		check_batch(c->w, &c->d, o, &b);
		for (uint32_t i = 0; i < b.count; i++, taken++)
			c->seen[b.indices[i]]++;
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	CHECK(feeder_stream_close(s) == 0);
	return taken;
}

/* Ranks of a world take disjoint shares of the epoch that together cover
 * it, within a sample of each other, each in its sampler order: 5 ranks
 * from the start; and, elastic, after 2 ranks took P = 12 samples, 1, 3, 4
 * or 5 ranks resuming at start_sample = P. */
static int cmd_ranks(const char *dataset)
{
	struct checker ck;
	checker_open(&ck, dataset);
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 16);
	o.jpeg.train = 0;
	o.dtype = FEEDER_DTYPE_U8;
	o.batch = 2;
	o.epoch = 4;
	/* Two ranks take `steps` batches each (P = 0 or 12 samples of the
	 * epoch), then `world` ranks the rest. */
	const struct {
		uint64_t steps;
		uint32_t world;
	} runs[] = { { 0, 5 }, { 3, 1 }, { 3, 3 }, { 3, 4 }, { 3, 5 } };
	for (size_t ri = 0; ri < sizeof runs / sizeof runs[0]; ri++) {
		memset(ck.seen, 0, ck.d.n * sizeof *ck.seen);
		uint64_t p = 0, lo = UINT64_MAX, hi = 0, after = 0;
		o.world = 2;
		o.start_sample = 0;
		for (o.rank = 0; runs[ri].steps && o.rank < 2; o.rank++)
			p += take_checked(&ck, &o, runs[ri].steps);
		CHECK(p == runs[ri].steps * o.batch * 2);
		o.world = runs[ri].world;
		o.start_sample = p;
		for (o.rank = 0; o.rank < o.world; o.rank++) {
			uint64_t n = take_checked(&ck, &o, UINT64_MAX);
			lo = n < lo ? n : lo;
			hi = n > hi ? n : hi;
			after += n;
		}
		for (uint64_t i = 0; i < ck.d.n; i++)
			CHECKF(ck.seen[i] == 1,
			       "%u ranks from sample %llu: sample %llu seen %u times", o.world,
			       (unsigned long long)p, (unsigned long long)i, ck.seen[i]);
		CHECKF(p + after == ck.d.n && hi - lo <= 1,
		       "%u ranks from sample %llu: %llu..%llu "
		       "samples a rank",
		       o.world, (unsigned long long)p, (unsigned long long)lo,
		       (unsigned long long)hi);
		printf("ranks: %u ranks from sample %llu took %llu..%llu each: each of the %llu once\n",
		       o.world, (unsigned long long)p, (unsigned long long)lo,
		       (unsigned long long)hi, (unsigned long long)ck.d.n);
	}
	/* start_batch counts batches of the share after start_sample. */
	o.world = 3;
	o.rank = 1;
	o.start_sample = 12;
	o.start_batch = 1;
	memset(ck.seen, 0, ck.d.n * sizeof *ck.seen);
	uint64_t tail = take_checked(&ck, &o, UINT64_MAX);
	CHECKF(tail == (ck.d.n - 12 - 1 + 2) / 3 - 2, "rank 1 of 3 from batch 1: %llu samples",
	       (unsigned long long)tail);
	/* A start past the epoch: refused with a reason; the connection goes on. */
	o.start_batch = 0;
	o.start_sample = ck.d.n + 1;
	struct feeder_stream *s;
	int rc = feeder_stream_open(ck.f, &o, TIMEOUT_MS, &s);
	CHECKF(rc == FEEDER_EINVAL && strstr(feeder_last_error(ck.f), "past the"),
	       "start_sample past the dataset: %d %s", rc, feeder_last_error(ck.f));
	printf("elastic: start_sample %llu refused: %s\n", (unsigned long long)o.start_sample,
	       feeder_last_error(ck.f));
	o.start_sample = ck.d.n; /* nothing left of that epoch: the stream just ends */
	memset(ck.seen, 0, ck.d.n * sizeof *ck.seen);
	CHECK(take_checked(&ck, &o, UINT64_MAX) == 0);
	checker_close(&ck);
	return 0;
}

/* Indices over epochs, shuffled and not: 2 ranks x 2 epochs of 23 records
 * (each rank's last batch short); shuffle=0 serves rank r the records r,
 * r + w, r + 2w, ... every epoch. Every batch's indices, labels and pixels
 * are those of the records the sampler puts there; each record comes once
 * an epoch. */
static int cmd_order(const char *dataset)
{
	struct checker ck;
	checker_open(&ck, dataset);
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 16);
	o.batch = 5;
	o.epochs = 2;
	o.world = 2;
	for (o.shuffle = 0; o.shuffle < 2; o.shuffle++) {
		memset(ck.seen, 0, ck.d.n * sizeof *ck.seen);
		for (o.rank = 0; o.rank < 2; o.rank++)
			take_checked(&ck, &o, UINT64_MAX);
		for (uint64_t i = 0; i < ck.d.n; i++)
			CHECKF(ck.seen[i] == 2, "shuffle=%u: record %llu came %u times in 2 epochs",
			       o.shuffle, (unsigned long long)i, ck.seen[i]);
		printf("order: shuffle=%u, 2 ranks x 2 epochs of %llu records: every index, label "
		       "and pixel as the sampler says\n",
		       o.shuffle, (unsigned long long)ck.d.n);
	}
	checker_close(&ck);
	return 0;
}

/* names=1 carries each sample's name as the dataset stores it; names=0
 * carries none. */
static int cmd_names(const char *dataset)
{
	struct ds d;
	ds_open(&d, dataset);
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 16);
	o.names = 1;
	struct feeder_stream *s = open_or_die(f, &o);
	struct feeder_batch b;
	unsigned named = 0;
	while (next_or_end(f, s, &b)) {
		CHECK(b.names != NULL);
		for (uint32_t i = 0; i < b.count; i++, named++) {
			const char *got = b.names + (size_t)i * FEEDER_SAMPLE_NAME_MAX, *want;
			size_t len;
			CHECKF(dsstore_get_name(d.txn, b.indices[i], &want, &len) == 0,
			       "the dataset keeps no name for record %llu",
			       (unsigned long long)b.indices[i]);
			CHECKF(strlen(got) == len && memcmp(got, want, len) == 0,
			       "record %llu: name '%s', the dataset says '%.*s'",
			       (unsigned long long)b.indices[i], got, (int)len, want);
		}
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	CHECKF(named == d.n, "%u names for %llu records", named, (unsigned long long)d.n);
	CHECK(feeder_stream_close(s) == 0);
	o.names = 0;
	s = open_or_die(f, &o);
	CHECK(feeder_stream_next(s, TIMEOUT_MS, &b) == 0 && b.names == NULL && b.indices != NULL);
	CHECK(feeder_batch_release(s, &b) == 0);
	CHECK(feeder_stream_close(s) == 0);
	feeder_disconnect(f);
	ds_close(&d);
	printf("names: %u names equal to the dataset's\n", named);
	return 0;
}

/* One full epoch with every sample checked (for concurrent clients). */
static int cmd_epoch(const char *dataset, uint64_t seed)
{
	struct checker ck;
	checker_open(&ck, dataset);
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 24);
	o.seed = seed;
	o.dtype = FEEDER_DTYPE_F16;
	uint64_t samples = take_checked(&ck, &o, UINT64_MAX);
	CHECKF(samples == ck.d.n, "epoch delivered %llu of %llu samples",
	       (unsigned long long)samples, (unsigned long long)ck.d.n);
	checker_close(&ck);
	printf("epoch: seed %llu, %llu samples checked\n", (unsigned long long)seed,
	       (unsigned long long)samples);
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
	const uint8_t *parts[3] = { (const uint8_t *)b->labels, (const uint8_t *)b->indices,
				    b->data };
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
		CHECKF(feeder_stream_next(s, TIMEOUT_MS, &b) == 0, "next: %s",
		       feeder_last_error(f));
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
	CHECKF(batch_digest(&held) == want[0],
	       "the held batch changed when feederd stopped "
	       "(labels %d %d %d %d)",
	       held.labels[0], held.labels[1], held.labels[2], held.labels[3]);
	for (int i = 1; i < 3; i++) {
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		CHECKF(rc == 0, "announced batch %d: %s (%s)", i, feeder_strerror(rc),
		       feeder_last_error(f));
		CHECKF(batch_digest(&b) == want[i],
		       "announced batch %d changed when feederd stopped "
		       "(labels %d %d %d %d)",
		       i, b.labels[0], b.labels[1], b.labels[2], b.labels[3]);
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
	CHECKF(rc == FEEDER_ETIMEDOUT && took >= 0.28 && took < 3, "next: %d after %.3f s", rc,
	       took);
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
	       "double release refused\n",
	       took, orphans);
	return 0;
}

/* One epoch of o (on_error=replace), n samples with a valid label each;
 * returns a digest of its bytes and counts the replacements. */
static uint64_t corrupt_epoch(struct feeder *f, const struct feeder_stream_opts *o, uint64_t n,
			      uint64_t *repl)
{
	struct feeder_stream *s = open_or_die(f, o);
	uint64_t samples = 0, digest = 0;
	*repl = 0;
	struct feeder_batch b;
	while (next_or_end(f, s, &b)) {
		CHECKF(b.count == o->batch || samples + b.count == n,
		       "a batch short of samples (%u) that is not the last", b.count);
		for (uint32_t i = 0; i < b.count; i++)
			CHECK(b.labels[i] >= 0);
		samples += b.count;
		*repl += b.replacements;
		digest = (digest ^ batch_digest(&b)) * 1099511628211ull;
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	CHECK(feeder_stream_close(s) == 0);
	CHECKF(samples == n, "epoch had %llu of %llu samples", (unsigned long long)samples,
	       (unsigned long long)n);
	return digest;
}

/* n_corrupt corrupt records: replaced, counted per batch and by the daemon,
 * the same bytes twice; on_error=fail fails the stream with FEEDER_ESTREAM,
 * and the connection stays usable. */
static int cmd_corrupt(const char *dataset, uint32_t n_corrupt)
{
	struct ds d;
	ds_open(&d, dataset);
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	opts_small(&o, dataset, 24);
	o.dtype = FEEDER_DTYPE_U8;
	uint64_t repl, again;
	uint64_t digest = corrupt_epoch(f, &o, d.n, &repl);
	CHECKF(repl == n_corrupt, "%llu replacements counted, %u corrupt records",
	       (unsigned long long)repl, n_corrupt);
	CHECKF(corrupt_epoch(f, &o, d.n, &again) == digest && again == repl,
	       "a second run replaced the corrupt records otherwise");
	struct feeder_status st = daemon_status();
	CHECKF(st.replacements >= 2 * n_corrupt && st.decode_errors >= 2 * n_corrupt,
	       "the daemon counts %llu replacements and %llu decode errors after two epochs with "
	       "%u corrupt records",
	       (unsigned long long)st.replacements, (unsigned long long)st.decode_errors,
	       n_corrupt);
	printf("corrupt: replace: %llu samples, %llu replacements, the same twice\n",
	       (unsigned long long)d.n, (unsigned long long)repl);

	o.on_error = FEEDER_ON_ERROR_FAIL;
	struct feeder_stream *s = open_or_die(f, &o);
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
	CHECKF(rc == FEEDER_ESTREAM, "on_error=fail ended with %d (%s): %s", rc,
	       feeder_strerror(rc), feeder_last_error(f));
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

/* The two records harness_corrupt_copy breaks. */
static int cmd_corrupt_copy(const char *dataset)
{
	return cmd_corrupt(dataset, 2);
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
	opts_small(&o, dataset, 32);
	o.slots = 17;
	expect_refusal("17 slots", &o, FEEDER_EQUOTA, "the daemon allows 16", NULL);
	o.slots = 3;
	o.start_batch = 7; /* an epoch has 6 */
	expect_refusal("start_batch past the epoch", &o, FEEDER_EINVAL, "past the 6 batches", NULL);
	/* A pipeline the dataset's kind does not fit says what the dataset holds. */
	proto_opts_features(&o, 20, 1);
	snprintf(o.dataset, sizeof o.dataset, "%s", dataset);
	o.batch = 16;
	expect_refusal("features of images", &o, FEEDER_EINVAL,
		       "holds jpeg images, not feature matrices: open it with pipeline jpeg", NULL);
	/* Options out of range: FEEDER_EINVAL, naming the field. */
	const char *fields[] = { "batch", "jpeg.height", "shuffle", "rank", "jpeg.scale_min" };
	for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
		opts_small(&o, dataset, 16);
		switch (k) {
		case 0:
			o.batch = 0;
			break;
		case 1:
			o.jpeg.height = 9000;
			break;
		case 2:
			o.shuffle = 2;
			break;
		case 3:
			o.rank = 3;
			o.world = 2;
			break;
		case 4:
			o.jpeg.scale_min = 0.9f;
			o.jpeg.scale_max = 0.2f;
			break;
		}
		expect_refusal(fields[k], &o, FEEDER_EINVAL, fields[k], NULL);
	}
	opts_small(&o, "feat", 16);
	expect_refusal("images of features", &o, FEEDER_EINVAL,
		       "holds feature matrices, not jpeg images", NULL);

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
		CHECKF(rc == FEEDER_EQUOTA, "%s: stream %u: %s (%s), expected FEEDER_EQUOTA", who,
		       k, feeder_strerror(rc), feeder_last_error(f));
		CHECKF(strcasestr(feeder_last_error(f), needle),
		       "%s: refusal '%s' does not say '%s'", who, feeder_last_error(f), needle);
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
	       "rings of %llu bytes: quota %llu and limit %llu do not make a test",
	       (unsigned long long)ring, (unsigned long long)quota, (unsigned long long)limit);
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
	CHECKF(st.streams == 1 && st.memory_used == ring,
	       "after A and C left: %u streams, %llu bytes", st.streams,
	       (unsigned long long)st.memory_used);
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

/* ---- One test on its own daemon ------------------------------------------ */

static const struct e2e_test {
	const char *name;
	int (*run)(const char *dataset);
	const char *dataset; /* "imgs" (packed photos), "bad" (a corrupt copy) or "feat" */
	unsigned images;     /* in imgs */
	const char *conf;    /* lines added to the daemon's configuration */
	const char *const *flags;
} tests[] = {
	{ "pixels", cmd_pixels, "imgs", 24, NULL, NULL },
	{ "features", cmd_features, "feat", 0, NULL, NULL },
	{ "determinism", cmd_determinism, "imgs", 24, NULL, NULL },
	{ "resume", cmd_resume, "imgs", 24, NULL, NULL },
	{ "ranks", cmd_ranks, "imgs", 24, NULL, NULL },
	{ "order", cmd_order, "imgs", 23, NULL, NULL },
	{ "names", cmd_names, "imgs", 24, NULL, NULL },
	{ "corrupt", cmd_corrupt_copy, "bad", 24, NULL, NULL },
	{ "refusals", cmd_refusals, "imgs", 24, "max_slots = 16\n",
	  (const char *const[]){ "--client-quota", "256M", NULL } },
	{ "timeouts", cmd_timeouts, "imgs", 24, NULL, NULL },
	{ "pin", cmd_pin, "imgs", 24, NULL, NULL },
};

static int run_test(const struct e2e_test *t)
{
	harness_init("e2e");
	harness_features_dataset("feat");
	if (t->images)
		harness_pack_images("imgs", t->images, 3, 1);
	if (strcmp(t->dataset, "bad") == 0)
		harness_corrupt_copy("imgs", "bad");
	harness_start(t->conf, t->flags);
	int rc = t->run(t->dataset);
	harness_stop();
	if (rc == 0 || rc == 77)
		harness_passed();
	return rc;
}

/* A command for a shell test, against its daemon. */
static int run_command(const char *cmd, const char *dataset, const char *arg, const char *arg2)
{
	CHECKF(harness.sock[0] && harness.datasets[0], "--socket and --datasets are required");
	if (strcmp(cmd, "epoch") == 0)
		return cmd_epoch(dataset, arg ? strtoull(arg, NULL, 10) : 1);
	if (strcmp(cmd, "hold") == 0)
		return cmd_hold(dataset);
	if (strcmp(cmd, "until-closed") == 0)
		return cmd_until_closed(dataset);
	if (strcmp(cmd, "held-stop") == 0)
		return cmd_held_stop(dataset);
	if (strcmp(cmd, "corrupt") == 0 && arg)
		return cmd_corrupt(dataset, (uint32_t)atoi(arg));
	if (strcmp(cmd, "survive") == 0)
		return cmd_survive(dataset, arg, arg2);
	if (strcmp(cmd, "quota") == 0)
		return cmd_quota(dataset, arg, arg2);
	fprintf(stderr, "e2e_client: unknown command '%s'\n", cmd);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc == 2)
		for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++)
			if (strcmp(argv[1], tests[k].name) == 0)
				return run_test(&tests[k]);
	int i = 1;
	for (; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--socket") == 0)
			snprintf(harness.sock, sizeof harness.sock, "%s", argv[i + 1]);
		else if (strcmp(argv[i], "--datasets") == 0)
			snprintf(harness.datasets, sizeof harness.datasets, "%s", argv[i + 1]);
		else
			break;
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: e2e_client TEST | e2e_client --socket S --datasets DIR "
				"COMMAND DATASET [ARG...]\n");
		return 1;
	}
	return run_command(argv[i], argv[i + 1], i + 2 < argc ? argv[i + 2] : NULL,
			   i + 3 < argc ? argv[i + 3] : NULL);
}
