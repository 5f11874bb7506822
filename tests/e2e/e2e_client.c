/* e2e_client.c — what a libfeeder client sees from a real feederd, checked
 * against what the dataset and the pipeline references say it must be: the
 * one client-level test of pixels, order, determinism, resume, ranks,
 * corrupt records, refusals and shutdown (hostile input on the raw wire is
 * tests/protocol/test_daemon_wire.c's).
 *
 * `e2e_client TEST` runs one test on a feederd of its own (tests/lib/harness.c:
 * a private folder and socket; stopped with SIGTERM, it must exit 0) serving
 * 24 (order: 23) photos from gen-images packed by packer, a features dataset
 * and, for corrupt, a copy of the photos with two records broken:
 *
 *   pixels      f32 NCHW, u8 NHWC unaugmented and f16: pixels, labels and
 *               indices equal jpeg_pipeline_reference of the record the
 *               sampler puts there (MAD <= 2/255)
 *   features    chunks (CMN and CVN per utterance) and labels equal
 *               features_pipeline_run's
 *   order       2 ranks x 2 epochs, shuffled and not (shuffle=0: rank r gets
 *               r, r + w, r + 2w, ...), each rank's last batch short
 *   names       names=1 carries the names the dataset stores; names=0 none
 *   corrupt     a record failing its CRC and one not a JPEG: replaced, counted
 *               per batch and by the daemon, the same bytes twice;
 *               on_error=fail fails the stream (FEEDER_ESTREAM)
 *   determinism the same request twice gives the same bytes; another seed not
 *   resume      start_batch = k yields the tail of the epoch, then the next
 *               epoch as a fresh stream of it
 *   ranks       ranks of a world take disjoint, balanced shares that cover
 *               the epoch in sampler order: 5 ranks; and after 2 ranks took
 *               P samples, 1, 3, 4 or 5 resuming at start_sample = P (elastic)
 *   refusals    missing dataset, "../" in a name, quota, max_slots, starts
 *               past the epoch, options out of range, a pipeline the dataset's
 *               kind does not fit: clear errors on a connection that goes on
 *   timeouts    next times out while every slot is held; an open that timed
 *               out leaves no stream behind; a double release fails
 *   pin         feeder_stream_pin registers the ring with CUDA (skip without)
 *
 * `e2e_client --socket S --datasets DIR COMMAND DATASET [ARG...]` is a client
 * for the shell tests, against their daemon (tests/lib/lib.sh):
 *
 *   epoch SEED  one epoch, every sample's label and pixels checked
 *   hold        take every slot, print HOLDING, sleep (to be SIGKILLed)
 *   corrupt N   the corrupt test, on a dataset with N corrupt records
 *   held-stop   hold one batch while others are announced, print HOLDING,
 *               wait for the daemon's hang-up (SIGTERM): the held and the
 *               announced batches keep the bytes of an undisturbed stream
 *   survive MAX [fail|closed]  stream (2 ms a batch; STREAMING after 3)
 *               until MAX batches, the end or a refusal, every label in the
 *               dataset's classes; prints "survive: opened=0|1 batches=N
 *               replacements=R result=ok|error|refused code=N message=TEXT";
 *               exits 0 unless a batch is wrong or the connection died
 *               (closed: it must die, FEEDER_ECLOSED, after 3 batches or more)
 *   quota Q L   (feederd has --client-quota Q --memory-limit L) client B
 *               streams, every batch checked, while A opens streams until its
 *               quota and C until the memory limit refuses (FEEDER_EQUOTA)
 *   datawait BATCHES SLEEP_MS SIZE BATCH  a trainer that computes SLEEP_MS
 *               a batch: one JSON line, its wait share as it measured it and
 *               its stream's figures as feederd reports them
 *   report WAIT_US COMPUTE_US RELEASES HOLD_MS  on the raw wire (libfeeder
 *               measures; this one says what it likes): RELEASES releases
 *               reporting those totals, "ready", HOLD_MS, hang up
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

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 20000
#define MAD_LIMIT (2.0 / 255.0)
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static char **args; /* a command's arguments after its dataset, NULL-terminated */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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

/* A connection, and o as opts_small. */
static struct feeder *client(struct feeder_stream_opts *o, const char *dataset, uint32_t size)
{
	opts_small(o, dataset, size);
	return connect_or_die();
}

static struct feeder_stream *open_or_die(struct feeder *f, const struct feeder_stream_opts *o)
{
	struct feeder_stream *s;
	int rc = feeder_stream_open(f, o, TIMEOUT_MS, &s);
	CHECKF(rc == 0, "open %s: %s (%s)", o->dataset, feeder_last_error(f), feeder_strerror(rc));
	return s;
}

/* rc, an open's answer on f: code, with a message mentioning needle or alt. */
static void refused(struct feeder *f, const char *name, int rc, int code, const char *needle,
		    const char *alt)
{
	CHECKF(rc == code, "%s: got %d (%s: %s), expected %d (%s)", name, rc, feeder_strerror(rc),
	       feeder_last_error(f), code, feeder_strerror(code));
	const char *msg = feeder_last_error(f);
	CHECKF(strstr(msg, needle) || (alt && strstr(msg, alt)),
	       "%s: message '%s' does not mention '%s'", name, msg, needle);
	printf("refused: %s -> %s: %s\n", name, feeder_strerror(rc), msg);
}

static void expect_refusal(struct feeder *f, const char *name, const struct feeder_stream_opts *o,
			   int code, const char *needle, const char *alt)
{
	struct feeder_stream *s;
	refused(f, name, feeder_stream_open(f, o, TIMEOUT_MS, &s), code, needle, alt);
}

/* The daemon's STATUS (our own connection) once it has `streams` streams
 * using `memory` bytes (ANY: any), or after 5 s: a closed stream's ring stays
 * charged while work on it runs (milliseconds; longer on a loaded machine). */
#define ANY UINT64_MAX
static struct feeder_status daemon_status(uint64_t streams, uint64_t memory)
{
	struct feeder_status st;
	for (int i = 0;; i++) {
		struct feeder *f = connect_or_die();
		int rc = feeder_get_status(f, TIMEOUT_MS, &st);
		CHECKF(rc == 0, "feeder_get_status: %s (%s)", feeder_last_error(f),
		       feeder_strerror(rc));
		feeder_disconnect(f);
		if (i == 250 || ((streams == ANY || st.streams == streams) &&
				 (memory == ANY || st.memory_used == memory)))
			return st;
		usleep(20000);
	}
}

/* ---- Streams, read in order --------------------------------------------- */

/* A stream read in order: epochs and batch indices follow one another from
 * where it starts, only an epoch's last batch is short, and one read to its
 * end delivered what it announced. */
struct walk {
	struct feeder *f;
	struct feeder_stream *s;
	struct feeder_stream_info info;
	struct feeder_batch b; /* the batch in hand, released by the next walk_next */
	unsigned long long n, epoch, next;
	uint32_t batch, last; /* samples in a full batch, in the one before b */
	int ended;
};

static void walk_open(struct walk *w, struct feeder *f, const struct feeder_stream_opts *o)
{
	*w = (struct walk){ .f = f, .epoch = o->epoch, .next = o->start_batch, .batch = o->batch };
	w->s = open_or_die(f, o);
	feeder_stream_info(w->s, &w->info);
}

/* The next batch in w->b (1) or the stream's end (0); anything else fails. */
static int walk_next(struct walk *w)
{
	w->last = w->b.count;
	if (w->b.data)
		CHECK(feeder_batch_release(w->s, &w->b) == 0);
	int rc = feeder_stream_next(w->s, TIMEOUT_MS, &w->b);
	if (rc == FEEDER_EEND) {
		w->ended = 1;
		return 0;
	}
	CHECKF(rc == 0, "next: %s (%s)", feeder_last_error(w->f), feeder_strerror(rc));
	CHECKF(w->b.epoch != w->epoch || w->n == 0 || w->last == w->batch,
	       "a batch of %u samples is not its epoch's last", w->last);
	if (w->b.epoch != w->epoch) {
		CHECK(w->b.epoch == w->epoch + 1);
		w->epoch = w->b.epoch;
		w->next = 0;
	}
	CHECKF(w->b.batch_index == w->next, "epoch %llu: batch %llu, expected %llu", w->epoch,
	       (unsigned long long)w->b.batch_index, w->next);
	w->next++;
	w->n++;
	return 1;
}

static void walk_close(struct walk *w)
{
	if (w->b.data)
		CHECK(feeder_batch_release(w->s, &w->b) == 0);
	CHECKF(!w->ended || w->n == w->info.batches, "got %llu batches, stream announced %llu",
	       w->n, (unsigned long long)w->info.batches);
	CHECK(feeder_stream_close(w->s) == 0);
}

/* k batches of a fresh stream of o on f. */
static void stream_some(struct feeder *f, const struct feeder_stream_opts *o, uint64_t k)
{
	struct walk w;
	walk_open(&w, f, o);
	while (w.n < k)
		CHECKF(walk_next(&w), "the stream ended after %llu batches", w.n);
	walk_close(&w);
}

/* Stream s (pausing pause_us a batch; STREAMING printed after 3) until max
 * batches or an error, returned (0 at max); every label within the
 * dataset's classes. Counts the batches and the replacements. */
static int stream_on(struct feeder_stream *s, uint64_t max, unsigned pause_us,
		     unsigned long long *n, unsigned long long *repl)
{
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	int rc = 0;
	for (*n = *repl = 0; *n < max && rc == 0;) {
		struct feeder_batch b;
		rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc)
			break;
		for (uint32_t i = 0; i < b.count; i++)
			CHECKF(b.labels[i] >= 0 && (uint32_t)b.labels[i] < info.classes,
			       "batch %llu sample %u: label %d, the dataset has %u classes", *n, i,
			       b.labels[i], info.classes);
		*repl += b.replacements;
		if (++*n == 3)
			printf("STREAMING\n");
		usleep(pause_us);
		rc = feeder_batch_release(s, &b);
	}
	return rc;
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

/* ---- Batches checked against the dataset and the reference -------------- */

/* What a checking client holds: the dataset read directly, a reference
 * decoder, a connection, and a count per record of what it was given. */
struct checker {
	struct dsstore *ds;
	struct dsstore_txn *txn;
	unsigned long long n; /* records */
	struct jpeg_worker *w;
	struct feeder *f;
	uint32_t *seen;
	struct feeder_stream_info info; /* of the last stream taken */
	double worst;                   /* MAD */
};

/* And o as opts_small. */
static void checker_open(struct checker *c, struct feeder_stream_opts *o, const char *dataset,
			 uint32_t size)
{
	opts_small(o, dataset, size);
	*c = (struct checker){ 0 };
	c->ds = harness_ds_open(dataset, &c->txn);
	c->n = dsstore_header(c->ds)->samples;
	CHECKF(jpeg_worker_create(&c->w, harness_err, sizeof harness_err) == 0, "%s", harness_err);
	c->f = connect_or_die();
	c->seen = calloc(c->n, sizeof *c->seen);
	CHECK(c->seen);
}

static void checker_close(struct checker *c)
{
	free(c->seen);
	feeder_disconnect(c->f);
	jpeg_worker_destroy(c->w);
	dsstore_txn_end(c->txn);
	dsstore_close(c->ds);
}

/* Sample i of a tensor as [0,1] pixels in CHW order (undoing normalization). */
static void to_unit(const struct feeder_stream_opts *p, const void *data, size_t i, float *out)
{
	size_t hw = (size_t)p->jpeg.height * p->jpeg.width;
	for (size_t c = 0; c < 3; c++)
		for (size_t k = 0; k < hw; k++) {
			size_t src = 3 * hw * i +
				     (p->layout == FEEDER_LAYOUT_NHWC ? k * 3 + c : c * hw + k);
			float *v = &out[c * hw + k];
			if (p->dtype == FEEDER_DTYPE_U8)
				*v = ((const uint8_t *)data)[src] / 255.0f;
			else if (p->dtype == FEEDER_DTYPE_F16)
				*v = half_to_float(((const uint16_t *)data)[src]) * p->jpeg.std[c] +
				     p->jpeg.mean[c];
			else
				*v = ((const float *)data)[src] * p->jpeg.std[c] + p->jpeg.mean[c];
		}
}

/* Every sample of batch b against the reference of the record the sampler
 * puts at its position (the first epoch from o->start_sample): its index,
 * label and pixels. */
static void check_batch(struct checker *c, const struct feeder_stream_opts *o,
			const struct feeder_batch *b)
{
	struct sampler sm;
	char err[512];
	unsigned long long epoch = b->epoch, bi = b->batch_index;
	CHECKF(sampler_init(&sm, c->n, o->seed, b->epoch, o->rank, o->world, (int)o->shuffle, err,
			    sizeof err) == 0,
	       "%s", err);
	if (b->epoch == o->epoch)
		CHECKF(sampler_start(&sm, o->start_sample, err, sizeof err) == 0, "%s", err);
	CHECK(b->dtype == o->dtype && b->layout == o->layout && b->ndim == 4);
	uint32_t h = o->jpeg.height, w = o->jpeg.width, nchw = o->layout == FEEDER_LAYOUT_NCHW;
	CHECK(b->shape[1] == (nchw ? 3 : h) && b->shape[2] == (nchw ? h : w) &&
	      b->shape[3] == (nchw ? w : 3));
	CHECK(b->shape[0] == b->count && b->count >= 1 && b->count <= o->batch);
	size_t sb = jpeg_pipeline_sample_bytes(o), n = 3 * (size_t)h * w;
	CHECK(b->bytes == b->count * sb);
	CHECKF(((uintptr_t)b->data & 4095) == 0, "tensor at %p is not page-aligned", b->data);
	float *got = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
	void *ref = malloc(sb);
	CHECK(got && want && ref);
	for (uint32_t i = 0; i < b->count; i++) {
		unsigned long long k = bi * o->batch + i;
		CHECK(k < sampler_len(&sm));
		unsigned long long index = sampler_at(&sm, k);
		if (!o->shuffle && (b->epoch != o->epoch || !o->start_sample))
			CHECKF(index == o->rank + k * o->world,
			       "unshuffled position %llu is record %llu", k, index);
		CHECKF(b->indices[i] == index,
		       "rank %u of %u from sample %llu: epoch %llu position %llu holds %llu, not %llu",
		       o->rank, o->world, (unsigned long long)o->start_sample, epoch, k,
		       (unsigned long long)b->indices[i], index);
		struct dsformat_sample s;
		const uint8_t *payload;
		CHECKF(dsstore_get_sample(c->txn, index, &s, &payload, err, sizeof err) == 0, "%s",
		       err);
		CHECKF(dsformat_sample_verify(&s, payload, NULL, 0) == 0, "sample %llu is corrupt",
		       index);
		CHECKF(b->labels[i] == (int32_t)s.label,
		       "epoch %llu batch %llu sample %u: label %d, dataset sample %llu has %u",
		       epoch, bi, i, b->labels[i], index, s.label);
		CHECKF(jpeg_pipeline_reference(c->w, o, payload, s.payload_len,
					       detrand_key(o->seed, b->epoch, index), ref, err,
					       sizeof err) == 0,
		       "reference of sample %llu: %s", index, err);
		to_unit(o, ref, 0, want);
		to_unit(o, b->data, i, got);
		double m = 0; /* the mean absolute difference */
		for (size_t j = 0; j < n; j++)
			m += fabs((double)got[j] - (double)want[j]);
		m /= (double)n;
		CHECKF(m <= MAD_LIMIT,
		       "epoch %llu batch %llu sample %u (dataset %llu): MAD %.5f > %.5f", epoch, bi,
		       i, index, m, MAD_LIMIT);
		c->worst = fmax(c->worst, m);
	}
	free(got);
	free(want);
	free(ref);
}

/* Up to k more batches of w, each checked as o's and without replacements;
 * counts what each record was given. Returns the samples. */
static uint64_t take(struct checker *c, struct walk *w, const struct feeder_stream_opts *o,
		     uint64_t k)
{
	uint64_t taken = 0;
	for (; k > 0 && walk_next(w); k--) {
		CHECK(w->b.replacements == 0);
		check_batch(c, o, &w->b);
		for (uint32_t i = 0; i < w->b.count; i++, taken++)
			c->seen[w->b.indices[i]]++;
	}
	return taken;
}

/* take on a fresh stream of o, closed after. */
static uint64_t take_checked(struct checker *c, const struct feeder_stream_opts *o,
			     uint64_t batches)
{
	struct walk w;
	walk_open(&w, c->f, o);
	uint64_t taken = take(c, &w, o, batches);
	c->info = w.info;
	walk_close(&w);
	return taken;
}

/* ---- Tests on a daemon of their own --------------------------------------- */

static int cmd_pixels(const char *dataset)
{
	struct checker ck;
	struct feeder_stream_opts o;
	checker_open(&ck, &o, dataset, 32);
	const struct {
		int dtype, layout, train;
	} cases[] = {
		{ FEEDER_DTYPE_F32, FEEDER_LAYOUT_NCHW, 1 },
		{ FEEDER_DTYPE_U8, FEEDER_LAYOUT_NHWC, 0 },
		{ FEEDER_DTYPE_F16, FEEDER_LAYOUT_NCHW, 1 },
	};
	for (size_t c = 0; c < NELEM(cases); c++) {
		opts_small(&o, dataset, 32);
		o.jpeg.width = 40; /* not square: catches h/w mix-ups */
		o.dtype = cases[c].dtype;
		o.layout = cases[c].layout;
		o.jpeg.train = cases[c].train;
		o.seed = 11 + c;
		ck.worst = 0;
		CHECK(take_checked(&ck, &o, 3) == 12);
		CHECK(ck.info.samples == ck.n && ck.info.batch == o.batch &&
		      ck.info.slots == o.slots);
		printf("pixels: case %zu (dtype %d layout %d train %d): 12 samples, worst MAD %.5f\n",
		       c, o.dtype, o.layout, o.jpeg.train, ck.worst);
	}
	checker_close(&ck);
	return 0;
}

/* Every batch of one stream, concatenated: labels, indices and tensor bytes. */
struct capture {
	char *buf;
	size_t len;
	unsigned long long batches, samples, replacements;
};

static void capture_stream(struct feeder *f, const struct feeder_stream_opts *o, struct capture *c)
{
	struct walk w;
	*c = (struct capture){ 0 };
	FILE *mem = open_memstream(&c->buf, &c->len);
	CHECK(mem);
	for (walk_open(&w, f, o); walk_next(&w);) {
		for (uint32_t i = 0; i < w.b.count; i++)
			CHECK(w.b.labels[i] >= 0);
		CHECK(fwrite(w.b.labels, sizeof(int32_t), w.b.count, mem) == w.b.count);
		CHECK(fwrite(w.b.indices, sizeof(uint64_t), w.b.count, mem) == w.b.count);
		CHECK(fwrite(w.b.data, 1, w.b.bytes, mem) == w.b.bytes);
		c->samples += w.b.count;
		c->replacements += w.b.replacements;
	}
	c->batches = w.n;
	walk_close(&w);
	CHECK(fclose(mem) == 0);
}

static int cmd_determinism(const char *dataset)
{
	struct feeder_stream_opts o;
	struct feeder *f = client(&o, dataset, 24);
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
	       a.batches, a.len);
	free(a.buf);
	free(b.buf);
	free(c.buf);
	feeder_disconnect(f);
	return 0;
}

static int cmd_resume(const char *dataset)
{
	struct feeder_stream_opts o;
	struct feeder *f = client(&o, dataset, 24);
	o.batch = 3;
	o.epoch = 2;
	struct capture full, next, tail;
	capture_stream(f, &o, &full);
	CHECK(full.batches >= 3);
	o.epoch = 3;
	capture_stream(f, &o, &next);
	/* From batch k of epoch 2 over two epochs (the walk checks that it
	 * starts at k): the tail of epoch 2, then epoch 3 as a fresh stream of
	 * it gives it. */
	unsigned long long k = full.batches / 2;
	o.epoch = 2;
	o.epochs = 2;
	o.start_batch = k;
	capture_stream(f, &o, &tail);
	CHECKF(tail.batches == full.batches - k + next.batches,
	       "resumed: %llu batches, expected %llu", tail.batches,
	       (full.batches - k + next.batches));
	CHECK(tail.len >= next.len && tail.len - next.len <= full.len);
	size_t cut = tail.len - next.len;
	CHECKF(memcmp(full.buf + full.len - cut, tail.buf, cut) == 0,
	       "batches %llu.. of a resumed stream differ from the full epoch's", k);
	CHECKF(memcmp(tail.buf + cut, next.buf, next.len) == 0,
	       "the epoch after the resumed one differs from a fresh stream of it");
	printf("resume: start_batch %llu gives the last %llu of %llu batches byte for byte, then "
	       "the next epoch's %llu\n",
	       k, (full.batches - k), full.batches, next.batches);
	free(full.buf);
	free(next.buf);
	free(tail.buf);
	feeder_disconnect(f);
	return 0;
}

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
	float ref[HARNESS_FEAT_DIM * 20];
	size_t sb = sizeof ref;
	struct sampler order;
	char err[512];
	CHECK(sampler_init(&order, HARNESS_FEAT_N, o.seed, 0, 0, 1, 1, err, sizeof err) == 0);
	struct walk w;
	for (walk_open(&w, f, &o); walk_next(&w);) {
		const struct feeder_batch *b = &w.b;
		CHECK(b->ndim == 4 && b->shape[0] == b->count && b->shape[1] == HARNESS_FEAT_DIM &&
		      b->shape[2] == 20 && b->shape[3] == 1 && b->bytes == b->count * sb);
		for (uint32_t i = 0; i < b->count; i++) {
			unsigned long long idx = sampler_at(&order, b->batch_index * o.batch + i);
			CHECK(b->indices[i] == idx && b->labels[i] == (int32_t)(100 + idx));
			uint32_t frames;
			float *m = harness_features_matrix((unsigned)idx, &frames);
			struct dsformat_sample smp = { .frames = frames, .dim = HARNESS_FEAT_DIM };
			smp.label = 100 + (uint32_t)idx;
			smp.payload_len = (uint32_t)(sizeof(float) * frames * HARNESS_FEAT_DIM);
			smp.dtype = DSFORMAT_DTYPE_F32;
			CHECKF(features_pipeline_run(&o, &smp, (const uint8_t *)m,
						     detrand_key(o.seed, 0, idx), ref, err,
						     sizeof err) == 0,
			       "%s", err);
			CHECKF(memcmp(ref, (const uint8_t *)b->data + i * sb, sb) == 0,
			       "features sample %llu differs", idx);
			free(m);
		}
	}
	CHECK(w.n == 3);
	walk_close(&w);
	printf("features: %llu batches of CMN/CVN chunks equal to the pipeline's\n", w.n);
	feeder_disconnect(f);
	return 0;
}

static int cmd_ranks(const char *dataset)
{
	struct checker ck;
	struct feeder_stream_opts o;
	checker_open(&ck, &o, dataset, 16);
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
	for (size_t ri = 0; ri < NELEM(runs); ri++) {
		memset(ck.seen, 0, ck.n * sizeof *ck.seen);
		unsigned long long p = 0, lo = UINT64_MAX, hi = 0, after = 0;
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
		for (unsigned long long i = 0; i < ck.n; i++)
			CHECKF(ck.seen[i] == 1,
			       "%u ranks from sample %llu: sample %llu seen %u times", o.world, p,
			       i, ck.seen[i]);
		CHECKF(p + after == ck.n && hi - lo <= 1,
		       "%u ranks from sample %llu: %llu..%llu samples a rank", o.world, p, lo, hi);
		printf("ranks: %u ranks from sample %llu took %llu..%llu each: each of the %llu once\n",
		       o.world, p, lo, hi, ck.n);
	}
	/* start_batch counts batches of the share after start_sample. */
	o.world = 3;
	o.rank = 1;
	o.start_sample = 12;
	o.start_batch = 1;
	unsigned long long tail = take_checked(&ck, &o, UINT64_MAX);
	CHECKF(tail == (ck.n - 12 - 1 + 2) / 3 - 2, "rank 1 of 3 from batch 1: %llu samples", tail);
	/* A start past the epoch: refused with a reason; the connection goes on. */
	o.start_batch = 0;
	o.start_sample = ck.n + 1;
	expect_refusal(ck.f, "start_sample past the dataset", &o, FEEDER_EINVAL, "past the", NULL);
	o.start_sample = ck.n; /* nothing left of that epoch: the stream just ends */
	CHECK(take_checked(&ck, &o, UINT64_MAX) == 0);
	checker_close(&ck);
	return 0;
}

static int cmd_order(const char *dataset)
{
	struct checker ck;
	struct feeder_stream_opts o;
	checker_open(&ck, &o, dataset, 16);
	o.batch = 5;
	o.epochs = 2;
	o.world = 2;
	for (o.shuffle = 0; o.shuffle < 2; o.shuffle++) {
		memset(ck.seen, 0, ck.n * sizeof *ck.seen);
		for (o.rank = 0; o.rank < 2; o.rank++)
			take_checked(&ck, &o, UINT64_MAX);
		for (unsigned long long i = 0; i < ck.n; i++)
			CHECKF(ck.seen[i] == 2, "shuffle=%u: record %llu came %u times in 2 epochs",
			       o.shuffle, i, ck.seen[i]);
		printf("order: shuffle=%u, 2 ranks x 2 epochs of %llu records as the sampler says\n",
		       o.shuffle, ck.n);
	}
	checker_close(&ck);
	return 0;
}

static int cmd_names(const char *dataset)
{
	struct checker ck;
	struct feeder_stream_opts o;
	checker_open(&ck, &o, dataset, 16);
	o.names = 1;
	unsigned named = 0;
	struct walk w;
	for (walk_open(&w, ck.f, &o); walk_next(&w);) {
		CHECK(w.b.names != NULL);
		for (uint32_t i = 0; i < w.b.count; i++, named++) {
			const char *got = w.b.names + (size_t)i * FEEDER_SAMPLE_NAME_MAX, *want;
			unsigned long long index = w.b.indices[i];
			size_t len;
			CHECKF(dsstore_get_name(ck.txn, index, &want, &len) == 0,
			       "the dataset keeps no name for record %llu", index);
			CHECKF(strlen(got) == len && memcmp(got, want, len) == 0,
			       "record %llu: name '%s', the dataset says '%.*s'", index, got,
			       (int)len, want);
		}
	}
	walk_close(&w);
	CHECKF(named == ck.n, "%u names for %llu records", named, ck.n);
	o.names = 0;
	walk_open(&w, ck.f, &o);
	CHECK(walk_next(&w) && w.b.names == NULL && w.b.indices != NULL);
	walk_close(&w);
	checker_close(&ck);
	printf("names: %u names equal to the dataset's\n", named);
	return 0;
}

/* Also a command: corrupt N, on a dataset with N corrupt records. */
static int cmd_corrupt(const char *dataset)
{
	uint32_t n_corrupt = args[0] ? (uint32_t)atoi(args[0]) : 2; /* harness_corrupt_copy's */
	struct checker ck;
	struct feeder_stream_opts o;
	checker_open(&ck, &o, dataset, 24);
	o.dtype = FEEDER_DTYPE_U8;
	struct capture a, b;
	capture_stream(ck.f, &o, &a);
	capture_stream(ck.f, &o, &b);
	CHECKF(a.samples == ck.n && a.replacements == n_corrupt,
	       "%llu of %llu samples, %llu replacements counted, %u corrupt records", a.samples,
	       ck.n, a.replacements, n_corrupt);
	CHECKF(b.len == a.len && memcmp(a.buf, b.buf, a.len) == 0 &&
		       b.replacements == a.replacements,
	       "a second run replaced the corrupt records otherwise");
	free(a.buf);
	free(b.buf);
	struct feeder_status st = daemon_status(ANY, ANY);
	CHECKF(st.replacements >= 2 * n_corrupt && st.decode_errors >= 2 * n_corrupt,
	       "the daemon counts %llu replacements and %llu decode errors for 2 x %u",
	       (unsigned long long)st.replacements, (unsigned long long)st.decode_errors,
	       n_corrupt);
	printf("corrupt: replace: %llu samples, %llu replacements, the same twice\n", ck.n,
	       a.replacements);

	o.on_error = FEEDER_ON_ERROR_FAIL;
	struct feeder_stream *s = open_or_die(ck.f, &o);
	unsigned long long before, repl;
	int rc = stream_on(s, UINT64_MAX, 0, &before, &repl);
	CHECKF(rc == FEEDER_ESTREAM && repl == 0, "on_error=fail ended with %d (%s): %s", rc,
	       feeder_strerror(rc), feeder_last_error(ck.f));
	printf("corrupt: on_error=fail: FEEDER_ESTREAM after %llu batches: %s\n", before,
	       feeder_last_error(ck.f));
	feeder_stream_close(s);
	/* The connection is still good for another stream. */
	o.on_error = FEEDER_ON_ERROR_REPLACE;
	stream_some(ck.f, &o, 1);
	checker_close(&ck);
	return 0;
}

/* All on one connection, which still serves after them. */
static int cmd_refusals(const char *dataset)
{
	struct feeder_stream_opts o;
	struct feeder *f = client(&o, "no-such-dataset", 32);
	expect_refusal(f, "missing dataset", &o, FEEDER_ENODATASET, "no-such-dataset", NULL);
	opts_small(&o, "../etc", 32);
	expect_refusal(f, "'../etc'", &o, FEEDER_EBADNAME, "../etc", NULL);
	opts_small(&o, dataset, 512);
	o.batch = 256;
	o.slots = 16;
	o.dtype = FEEDER_DTYPE_F32; /* 16 slots x 256 x 3 x 512 x 512 x 4 bytes = 12 GiB */
	expect_refusal(f, "over-quota request", &o, FEEDER_EQUOTA, "quota", "limit");
	opts_small(&o, dataset, 32);
	o.slots = 17;
	expect_refusal(f, "17 slots", &o, FEEDER_EQUOTA, "the daemon allows 16", NULL);
	o.slots = 3;
	o.start_batch = 7; /* an epoch has 6 */
	expect_refusal(f, "start_batch past the epoch", &o, FEEDER_EINVAL, "past the 6 batches",
		       NULL);
	/* A pipeline the dataset's kind does not fit says what the dataset holds. */
	proto_opts_features(&o, 20, 1);
	snprintf(o.dataset, sizeof o.dataset, "%s", dataset);
	o.batch = 16;
	expect_refusal(f, "features of images", &o, FEEDER_EINVAL,
		       "holds jpeg images, not feature matrices: open it with pipeline jpeg", NULL);
	opts_small(&o, "feat", 16);
	expect_refusal(f, "images of features", &o, FEEDER_EINVAL,
		       "holds feature matrices, not jpeg images", NULL);
	/* Options out of range: FEEDER_EINVAL, naming the field. */
	opts_small(&o, dataset, 16);
	o.batch = 0;
	expect_refusal(f, "batch", &o, FEEDER_EINVAL, "batch", NULL);
	opts_small(&o, dataset, 16);
	o.jpeg.height = 9000;
	expect_refusal(f, "jpeg.height", &o, FEEDER_EINVAL, "jpeg.height", NULL);
	opts_small(&o, dataset, 16);
	o.shuffle = 2;
	expect_refusal(f, "shuffle", &o, FEEDER_EINVAL, "shuffle", NULL);
	opts_small(&o, dataset, 16);
	o.rank = 3;
	o.world = 2;
	expect_refusal(f, "rank", &o, FEEDER_EINVAL, "rank", NULL);
	opts_small(&o, dataset, 16);
	o.jpeg.scale_min = 0.9f;
	o.jpeg.scale_max = 0.2f;
	expect_refusal(f, "jpeg.scale_min", &o, FEEDER_EINVAL, "jpeg.scale_min", NULL);
	opts_small(&o, dataset, 32);
	stream_some(f, &o, 2);
	feeder_disconnect(f);
	return 0;
}

static int cmd_timeouts(const char *dataset)
{
	struct feeder_stream_opts o;
	struct feeder *f = client(&o, dataset, 16);
	o.epochs = 1000;
	struct feeder_stream *s;
	/* The daemon often answers before a 0 ms wait ends; try until one open
	 * gives up first. */
	int rc = 0;
	for (int i = 0; i < 50 && rc == 0; i++)
		if ((rc = feeder_stream_open(f, &o, 0, &s)) == 0)
			CHECK(feeder_stream_close(s) == 0);
	CHECKF(rc == 0 || rc == FEEDER_ETIMEDOUT, "open with timeout 0: %d (%s)", rc,
	       feeder_last_error(f));
	int orphans = rc != 0;
	/* A stream whose client holds every slot has nothing more to give. */
	o.slots = 2;
	s = open_or_die(f, &o);
	struct feeder_batch b[2], c;
	for (int i = 0; i < 2; i++)
		CHECKF(feeder_stream_next(s, TIMEOUT_MS, &b[i]) == 0, "%s", feeder_last_error(f));
	double t0 = now_s();
	rc = feeder_stream_next(s, 300, &c);
	double took = now_s() - t0;
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
	struct feeder_status st = daemon_status(ANY, ANY);
	CHECKF(st.streams == 1, "daemon has %u streams, expected 1 (the orphan was not closed)",
	       st.streams);
	CHECK(feeder_stream_close(s) == 0);
	CHECK(daemon_status(0, ANY).streams == 0);
	feeder_disconnect(f);
	printf("timeouts: next timed out after %.3f s; %d abandoned open(s) left no stream; "
	       "double release refused\n",
	       took, orphans);
	return 0;
}

/* 0 with a CUDA device, FEEDER_ENODEV (skip) without; a pinned stream keeps
 * delivering and closes cleanly (unregistering first). */
static int cmd_pin(const char *dataset)
{
	struct feeder_stream_opts o;
	struct feeder *f = client(&o, dataset, 32);
	o.epochs = 3;
	struct walk w;
	walk_open(&w, f, &o);
	int rc = feeder_stream_pin(w.s);
	CHECKF(rc == 0 || rc == FEEDER_ENODEV, "feeder_stream_pin: %s (%s)", feeder_last_error(f),
	       feeder_strerror(rc));
	if (rc == 0) {
		CHECK(feeder_stream_pin(w.s) == 0); /* twice is fine */
		while (w.n < 4)
			CHECK(walk_next(&w));
	}
	printf("pin: %s\n", rc ? feeder_last_error(f) : "ring registered, 4 batches streamed");
	walk_close(&w);
	feeder_disconnect(f);
	return rc ? 77 : 0;
}

/* ---- Commands of the shell tests, against their daemon -------------------- */

static int cmd_epoch(const char *dataset)
{
	struct checker ck;
	struct feeder_stream_opts o;
	checker_open(&ck, &o, dataset, 24);
	o.seed = args[0] ? strtoull(args[0], NULL, 10) : 1;
	o.dtype = FEEDER_DTYPE_F16;
	unsigned long long samples = take_checked(&ck, &o, UINT64_MAX);
	CHECKF(samples == ck.n, "epoch delivered %llu of %llu samples", samples, ck.n);
	checker_close(&ck);
	printf("epoch: seed %llu, %llu samples checked\n", (unsigned long long)o.seed, samples);
	return 0;
}

static int cmd_hold(const char *dataset)
{
	struct feeder_stream_opts o;
	struct feeder *f = client(&o, dataset, 64);
	o.epochs = 1000;
	struct feeder_stream *s = open_or_die(f, &o);
	struct feeder_batch b[16];
	for (uint32_t i = 0; i < o.slots; i++)
		CHECKF(feeder_stream_next(s, TIMEOUT_MS, &b[i]) == 0, "next: %s",
		       feeder_last_error(f));
	printf("HOLDING %u\n", o.slots);
	for (;;)
		pause();
}

static int cmd_held_stop(const char *dataset)
{
	struct feeder_stream_opts o;
	struct feeder *f = client(&o, dataset, 64);
	uint64_t want[3];
	struct walk w;
	for (walk_open(&w, f, &o); w.n < 3 && walk_next(&w);)
		want[w.n - 1] = batch_digest(&w.b);
	CHECK(w.n == 3);
	walk_close(&w);
	struct feeder_stream *s = open_or_die(f, &o);
	struct feeder_batch held, b;
	CHECKF(feeder_stream_next(s, TIMEOUT_MS, &held) == 0, "next: %s", feeder_last_error(f));
	CHECK(batch_digest(&held) == want[0]);
	usleep(300000); /* the other slots fill and are announced */
	printf("HOLDING\n");
	/* Nothing read meanwhile: the daemon's GOODBYE and hang-up wait in
	 * the socket behind the announcements. */
	struct pollfd p = { .fd = feeder_fd(f), .events = POLLRDHUP };
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	usleep(200000); /* and let it exit */
	CHECKF(batch_digest(&held) == want[0],
	       "the held batch changed when feederd stopped (labels %d %d %d %d)", held.labels[0],
	       held.labels[1], held.labels[2], held.labels[3]);
	for (int i = 1; i < 3; i++) {
		int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		CHECKF(rc == 0, "announced batch %d: %s (%s)", i, feeder_strerror(rc),
		       feeder_last_error(f));
		CHECKF(batch_digest(&b) == want[i],
		       "announced batch %d changed when feederd stopped (labels %d %d %d %d)", i,
		       b.labels[0], b.labels[1], b.labels[2], b.labels[3]);
	}
	int rc = feeder_stream_next(s, TIMEOUT_MS, &b);
	CHECKF(rc == FEEDER_ECLOSED, "after the announced batches: %s", feeder_strerror(rc));
	printf("held and announced batches intact after the stop\n");
	feeder_disconnect(f);
	return 0;
}

static int cmd_survive(const char *dataset)
{
	unsigned long long max = args[0] ? strtoull(args[0], NULL, 10) : 1000, n = 0, repl = 0;
	const char *mode = args[0] && args[1] ? args[1] : "";
	struct feeder_stream_opts o;
	struct feeder *f = client(&o, dataset, 24);
	o.epochs = 100000;
	if (strcmp(mode, "fail") == 0)
		o.on_error = FEEDER_ON_ERROR_FAIL;
	struct feeder_stream *s;
	int rc = feeder_stream_open(f, &o, TIMEOUT_MS, &s);
	int opened = rc == 0;
	if (opened)
		rc = stream_on(s, max, 2000, &n, &repl);
	if (strcmp(mode, "closed") == 0)
		CHECKF(rc == FEEDER_ECLOSED && n >= 3, "stopped after %llu batches: %s (%s)", n,
		       feeder_strerror(rc), feeder_last_error(f));
	else if (opened)
		CHECKF(rc == 0 || rc == FEEDER_ESTREAM, "stream stopped with %s: %s",
		       feeder_strerror(rc), feeder_last_error(f));
	else
		CHECKF(rc != FEEDER_ECLOSED && rc != FEEDER_ETIMEDOUT, "open: %s (%s)",
		       feeder_strerror(rc), feeder_last_error(f));
	const char *result = !opened ? "refused" : rc ? "error" : "ok";
	printf("survive: opened=%d batches=%llu replacements=%llu result=%s code=%d message=%s\n",
	       opened, n, repl, result, rc, rc ? feeder_last_error(f) : "");
	if (opened)
		feeder_stream_close(s);
	feeder_disconnect(f);
	return 0;
}

/* Open streams of o on a new connection until one is refused with
 * FEEDER_EQUOTA naming needle; returns how many opened (in *got). */
static struct feeder *open_until_refused(const struct feeder_stream_opts *o, const char *needle,
					 const char *who, unsigned *got)
{
	struct feeder *f = connect_or_die();
	struct feeder_stream *s;
	int rc = 0;
	for (*got = 0; *got < 64 && (rc = feeder_stream_open(f, o, TIMEOUT_MS, &s)) == 0;)
		++*got;
	refused(f, who, rc, FEEDER_EQUOTA, needle, NULL);
	printf("quota: %s opened %u streams\n", who, *got);
	return f;
}

static int cmd_quota(const char *dataset)
{
	CHECKF(args[0] && args[1],
	       "quota needs the daemon's client quota and memory limit in bytes");
	unsigned long long quota = strtoull(args[0], NULL, 10), limit = strtoull(args[1], NULL, 10);
	/* B: the well-behaved client, checked throughout. */
	struct checker ck;
	struct feeder_stream_opts o;
	checker_open(&ck, &o, dataset, 32);
	o.epochs = 100000;
	struct walk b;
	walk_open(&b, ck.f, &o);
	unsigned long long ring = b.info.ring_size, samples = take(&ck, &b, &o, 2);

	/* A: the greedy one, same request, until its quota stops it. */
	unsigned long long n_a = quota / ring, used = ring * (1 + n_a);
	CHECKF(n_a >= 1 && used + ring <= limit && (limit - used) / ring < n_a,
	       "rings of %llu bytes: quota %llu and limit %llu do not make a test", ring, quota,
	       limit);
	unsigned got, got2;
	struct feeder *a = open_until_refused(&o, "quota", "client A", &got);
	CHECKF(got == n_a, "client A opened %u streams of %llu bytes under a quota of %llu", got,
	       ring, quota);
	samples += take(&ck, &b, &o, 2);
	struct feeder_status st = daemon_status(ANY, ANY);
	CHECKF(st.streams == 1 + n_a && st.memory_used == used,
	       "daemon: %u streams, %llu bytes in use; expected %llu and %llu", st.streams,
	       (unsigned long long)st.memory_used, (1 + n_a), used);

	/* B may still open within its own quota. */
	stream_some(ck.f, &o, 1);
	samples += take(&ck, &b, &o, 2);
	st = daemon_status(ANY, used);
	CHECKF(st.memory_used == used, "the closed stream's %llu bytes were not given back in 5 s",
	       (st.memory_used - used));

	/* A second greedy client takes what is left of the daemon's limit. */
	struct feeder *a2 = open_until_refused(&o, "in use", "client C", &got2);
	unsigned long long want2 = (limit - used) / ring;
	CHECKF(got2 == want2, "client C opened %u streams, %llu fit the limit", got2, want2);
	samples += take(&ck, &b, &o, 3);
	/* Now nobody gets more, B included, with the same sentence. */
	expect_refusal(ck.f, "B's open at the full limit", &o, FEEDER_EQUOTA, "in use", NULL);
	samples += take(&ck, &b, &o, 2);
	st = daemon_status(ANY, ANY);
	CHECKF(st.streams == 1 + n_a + got2 && st.memory_used <= limit,
	       "daemon: %u streams, %llu of %llu bytes", st.streams,
	       (unsigned long long)st.memory_used, limit);

	/* The greedy clients leave: their memory comes back, B opens again. */
	feeder_disconnect(a);
	feeder_disconnect(a2);
	st = daemon_status(1, ring);
	CHECKF(st.streams == 1 && st.memory_used == ring,
	       "after A and C left: %u streams, %llu bytes", st.streams,
	       (unsigned long long)st.memory_used);
	stream_some(ck.f, &o, 1);
	samples += take(&ck, &b, &o, 2);
	CHECKF(b.n == 13, "client B's stream stopped after %llu batches", b.n);
	printf("quota: rings of %llu bytes; B streamed %llu checked batches (%llu samples) "
	       "throughout; A and C opened %u and %u streams\n",
	       ring, b.n, samples, got, got2);
	walk_close(&b);
	checker_close(&ck);
	return 0;
}

static int cmd_datawait(const char *dataset)
{
	CHECKF(args[0] && args[1] && args[2] && args[3], "datawait BATCHES SLEEP_MS SIZE BATCH");
	int batches = atoi(args[0]), sleep_ms = atoi(args[1]);
	struct feeder_stream_opts o;
	struct feeder *f = client(&o, dataset, (uint32_t)atoi(args[2]));
	o.batch = (uint32_t)atoi(args[3]);
	o.epochs = 1000;
	o.slots = 4;
	struct feeder_stream *s = open_or_die(f, &o);
	/* its wait share: the time in next over the time from the first on */
	double wait = 0, start = now_s(), end = start;
	for (int k = 0; k < batches; k++) {
		double t0 = now_s();
		struct feeder_batch b;
		CHECKF(feeder_stream_next(s, 60000, &b) == 0, "next: %s", feeder_last_error(f));
		end = now_s();
		wait += end - t0;
		usleep((useconds_t)sleep_ms * 1000);
		feeder_batch_release(s, &b);
	}
	/* The daemon has the totals of the last RELEASE; give it a tick. */
	usleep(1200000);
	struct feeder_stream_status *ss;
	size_t n;
	CHECKF(feeder_get_streams(f, 10000, &ss, &n) == 0, "%s", feeder_last_error(f));
	struct feeder_status st = daemon_status(ANY, ANY);
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	const struct feeder_stream_status *me = NULL;
	for (size_t i = 0; i < n; i++)
		if (ss[i].stream == info.id)
			me = &ss[i];
	CHECKF(me, "feederd does not list stream %u", info.id);
	printf("{\"client_share\": %.4f, \"daemon_share_total\": %.4f, \"daemon_share_10s\": %.4f, "
	       "\"trainer_reports\": %u, \"workers_busy\": %.4f, \"stage_seconds\": [%.6f, %.6f, "
	       "%.6f, %.6f, %.6f], \"bytes_per_s\": %.1f, \"slots\": %u}\n",
	       wait / (end - start), (double)me->wait_share_total, (double)me->wait_share_10s,
	       me->trainer_reports, st.workers_busy, me->stage_s[0], me->stage_s[1], me->stage_s[2],
	       me->stage_s[3], me->stage_s[4], me->bytes_per_s, me->slots);
	free(ss);
	feeder_stream_close(s);
	feeder_disconnect(f);
	return 0;
}

static int cmd_report(const char *dataset)
{
	CHECKF(args[0] && args[1] && args[2] && args[3],
	       "report WAIT_US COMPUTE_US RELEASES HOLD_MS");
	int fd = harness_hello(harness.sock, "report_client", NULL);
	struct proto_msg m = { .type = PROTO_OPEN_STREAM };
	opts_small(&m.u.open.opts, dataset, 16);
	m.u.open.opts.slots = 2;
	m.u.open.opts.epochs = 1000;
	m.u.open.opts.dtype = FEEDER_DTYPE_U8;
	m.u.open.tag = 1;
	harness_send(fd, &m);
	int mfd = -1;
	CHECKF(harness_recv(fd, &m, &mfd) == 0, "%s", harness_err);
	CHECKF(m.type == PROTO_STREAM_OPENED, "OPEN_STREAM answered with %s %s",
	       proto_type_name(m.type), m.type == PROTO_ERROR ? m.u.error.message : "");
	if (mfd >= 0)
		close(mfd); /* the ring is not read: only the reports matter */
	struct proto_msg r = { .type = PROTO_RELEASE };
	r.u.release.stream = m.u.opened.stream;
	r.u.release.wait_us = strtoull(args[0], NULL, 0);
	r.u.release.compute_us = strtoull(args[1], NULL, 0);
	for (int n = 0; n < atoi(args[2]);) {
		CHECKF(harness_recv(fd, &m, NULL) == 0, "%s", harness_err);
		CHECKF(m.type != PROTO_ERROR, "feederd: %s", m.u.error.message);
		if (m.type != PROTO_BATCH_READY)
			continue;
		r.u.release.slot = m.u.ready.slot;
		harness_send(fd, &r);
		n++;
	}
	printf("ready\n");
	usleep((useconds_t)atoi(args[3]) * 1000);
	close(fd);
	return 0;
}

/* ---- One test on its own daemon, or one command --------------------------- */

static const struct e2e_test {
	const char *name;
	int (*run)(const char *dataset);
	/* On its own daemon: "imgs" (packed photos), "bad" (a corrupt copy) or
	 * "feat"; NULL: a command only. */
	const char *dataset;
	unsigned images;  /* in imgs */
	const char *conf; /* lines added to the daemon's configuration */
	const char *const *flags;
} tests[] = {
	{ "pixels", cmd_pixels, "imgs", 24, NULL, NULL },
	{ "features", cmd_features, "feat", 0, NULL, NULL },
	{ "determinism", cmd_determinism, "imgs", 24, NULL, NULL },
	{ "resume", cmd_resume, "imgs", 24, NULL, NULL },
	{ "ranks", cmd_ranks, "imgs", 24, NULL, NULL },
	{ "order", cmd_order, "imgs", 23, NULL, NULL },
	{ "names", cmd_names, "imgs", 24, NULL, NULL },
	{ "corrupt", cmd_corrupt, "bad", 24, NULL, NULL },
	{ "refusals", cmd_refusals, "imgs", 24, "max_slots = 16\n",
	  (const char *const[]){ "--client-quota", "256M", NULL } },
	{ "timeouts", cmd_timeouts, "imgs", 24, NULL, NULL },
	{ "pin", cmd_pin, "imgs", 24, NULL, NULL },
	{ "epoch", cmd_epoch, NULL, 0, NULL, NULL },
	{ "hold", cmd_hold, NULL, 0, NULL, NULL },
	{ "held-stop", cmd_held_stop, NULL, 0, NULL, NULL },
	{ "survive", cmd_survive, NULL, 0, NULL, NULL },
	{ "quota", cmd_quota, NULL, 0, NULL, NULL },
	{ "datawait", cmd_datawait, NULL, 0, NULL, NULL },
	{ "report", cmd_report, NULL, 0, NULL, NULL },
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

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* the scripts wait for lines while we run */
	int cmd =
		argc >= 7 && strcmp(argv[1], "--socket") == 0 && strcmp(argv[3], "--datasets") == 0;
	if (cmd) {
		snprintf(harness.sock, sizeof harness.sock, "%s", argv[2]);
		snprintf(harness.datasets, sizeof harness.datasets, "%s", argv[4]);
	}
	args = argv + (cmd ? 7 : argc);
	for (size_t k = 0; k < NELEM(tests) && (cmd || argc == 2); k++) {
		if (strcmp(argv[cmd ? 5 : 1], tests[k].name) != 0)
			continue;
		if (cmd)
			return tests[k].run(argv[6]);
		if (tests[k].dataset)
			return run_test(&tests[k]);
	}
	fprintf(stderr, "usage: e2e_client TEST | e2e_client --socket S --datasets DIR "
			"COMMAND DATASET [ARG...]\n");
	return 1;
}
