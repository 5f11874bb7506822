/* feeder_bench.c — feeder-bench: consume streams from a running feederd the
 * way a trainer does and say how fast batches arrive, and how that compares
 * with what this machine could decode at best.
 *
 *   feeder-bench --dataset NAME [--batch B --size S --dtype f16 --batches N
 *                --streams K --slots D --eval --hold-us T --json]
 *
 * Each of the K streams runs on its own thread with its own connection (rank
 * k of world K, like one data-parallel trainer per GPU) and loops
 * feeder_stream_next -> (optional simulated compute) -> feeder_batch_release, timing every
 * feeder_stream_next. The decode ceiling is measured in the same run: full-size
 * TurboJPEG decodes (tjDecompress2 to RGB) of a sample of the dataset's
 * images on one thread, read through proto/dsstore.h, times the daemon's
 * worker count (from feeder_get_status). The images are read from
 * --datasets DIR, by default feederd's default datasets directory: the
 * daemon does not say where its datasets lie, and its configuration file is
 * feederd's to read.
 * images/s counts from the first batch's arrival, as a DataLoader benchmark
 * counts after its first batch (tests/bench/torch_images.py): start-up
 * (connect, stream open, the first batch) is reported apart as startup_s,
 * so a ratio between the two compares the same thing. The ring's first
 * touch (page faults on slots 2..D) stays inside the measured window. */
#include "status.h"

#include "argtab.h"
#include "dsstore.h"
#include "feeder.h"
#include "image_limit.h"
#include "protocol.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>
#include <unistd.h>

/* The ceiling's sample: at most this many images or this much time. */
#define CEILING_IMAGES 256
#define CEILING_SECONDS 2.0

static const char usage_head[] =
	"usage: feeder-bench --dataset NAME [options]\n"
	"\n"
	"Consume jpeg streams from feederd like a trainer and report images/s, MB/s,\n"
	"the wait per feeder_stream_next (mean, p99) and the decode ceiling of this machine.\n"
	"\n";

struct bench_opts {
	const char *dataset, *socket, *datasets;
	uint32_t batch, size, slots, streams;
	uint64_t batches, seed;
	int dtype, layout, train, json;
	unsigned hold_us, workers;
	int placement, device_batches;
	int eval, help, version;
};

struct bench_thread {
	const struct bench_opts *o;
	uint32_t rank;
	pthread_t tid;
	double *waits_us; /* one per feeder_stream_next that returned a batch */
	uint64_t n, images, bytes, replacements;
	uint64_t first_images; /* in the first batch, before the measured window */
	double t_first, t_end; /* the first batch's arrival, the last one's */
	int rc;
	char err[512];
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *bench_run(void *arg)
{
	struct bench_thread *t = arg;
	const struct bench_opts *o = t->o;
	struct feeder *f = NULL;
	struct feeder_stream *s = NULL;
	t->rc = feeder_connect(o->socket, 5000, &f);
	if (t->rc) {
		snprintf(t->err, sizeof t->err, "%s", feeder_last_error(NULL));
		return NULL;
	}
	struct feeder_stream_opts so;
	feeder_stream_opts_init(&so);
	snprintf(so.dataset, sizeof so.dataset, "%s", o->dataset);
	so.batch = o->batch;
	so.seed = o->seed;
	so.rank = t->rank;
	so.world = o->streams;
	so.slots = o->slots;
	so.dtype = o->dtype;
	so.layout = o->layout;
	so.jpeg.height = so.jpeg.width = o->size;
	so.jpeg.train = o->train;
	so.epochs = 1000; /* enough epochs for any --batches; the stream is closed early */
	so.placement = o->placement;
	so.device_batches = o->device_batches;
	t->rc = feeder_stream_open(f, &so, 10000, &s);
	if (t->rc) {
		snprintf(t->err, sizeof t->err, "%s", feeder_last_error(f));
		feeder_disconnect(f);
		return NULL;
	}
	while (t->n < o->batches) {
		struct feeder_batch b;
		double t0 = now_s();
		int rc = feeder_stream_next(s, 60000, &b);
		double waited = now_s() - t0;
		if (rc == FEEDER_EEND)
			break;
		if (rc) {
			t->rc = rc;
			snprintf(t->err, sizeof t->err, "%s", feeder_last_error(f));
			break;
		}
		if (t->n == 0) {
			t->t_first = now_s();
			t->first_images = b.count;
		}
		t->t_end = now_s();
		t->waits_us[t->n++] = waited * 1e6;
		t->images += b.count;
		t->bytes += b.bytes;
		t->replacements += b.replacements;
		/* A device batch is complete when announced (feederd waits for its
		 * kernel); a trainer's stream would feeder_batch_wait on it. */
		if (b.memory == FEEDER_MEMORY_DEVICE && (rc = feeder_batch_wait(s, &b, NULL))) {
			t->rc = rc;
			snprintf(t->err, sizeof t->err, "%s", feeder_last_error(f));
			break;
		}
		if (o->hold_us)
			usleep(o->hold_us);
		if ((rc = feeder_batch_release(s, &b))) {
			t->rc = rc;
			snprintf(t->err, sizeof t->err, "%s", feeder_last_error(f));
			break;
		}
	}
	feeder_stream_close(s);
	feeder_disconnect(f);
	return NULL;
}

/* Worker count of the daemon, from its status. 0 if unknown. */
static unsigned daemon_workers(const char *socket_path)
{
	struct feeder *f;
	struct feeder_status st;
	if (feeder_connect(socket_path, 5000, &f))
		return 0;
	unsigned w = feeder_get_status(f, 5000, &st) == 0 ? st.workers : 0;
	feeder_disconnect(f);
	return w;
}

/* Single-thread full-size decode rate of the dataset's images. */
static int decode_ceiling(const char *dir, double *rate, unsigned *images, char *err, size_t errlen)
{
	struct dsstore *ds;
	int rc = dsstore_open(dir, &ds, err, errlen);
	if (rc)
		return rc;
	const struct dsformat_header *h = dsstore_header(ds);
	if (h->kind != DSFORMAT_KIND_JPEG || h->samples == 0) {
		dsstore_close(ds);
		return status_fail(err, errlen, FEEDER_EFORMAT, "dataset %s holds no JPEG images",
				   dir);
	}
	struct dsstore_txn *t;
	if ((rc = dsstore_txn_begin(ds, &t, err, errlen))) {
		dsstore_close(ds);
		return rc;
	}
	tjhandle tj = tjInitDecompress();
	uint8_t *rgb = NULL;
	size_t rgb_cap = 0;
	uint64_t n = h->samples < CEILING_IMAGES ? h->samples : CEILING_IMAGES;
	unsigned done = 0;
	double busy = 0;
	for (uint64_t k = 0; k < n && busy < CEILING_SECONDS && tj; k++) {
		/* Spread the sample over the dataset: image sizes vary by class. */
		uint64_t index = k * h->samples / n;
		struct dsformat_sample s;
		const uint8_t *payload;
		if (dsstore_get_sample(t, index, &s, &payload, NULL, 0) != 0)
			continue;
		int w, hh, sub, cs;
		if (tjDecompressHeader3(tj, payload, s.payload_len, &w, &hh, &sub, &cs) != 0 ||
		    image_limit_check((uint64_t)w, (uint64_t)hh, NULL, 0) != 0)
			continue; /* feederd would not decode it either */
		size_t need = (size_t)w * (size_t)hh * 3;
		if (need > rgb_cap) {
			uint8_t *p = realloc(rgb, need);
			if (!p)
				break;
			rgb = p;
			rgb_cap = need;
		}
		double t0 = now_s();
		int ok = tjDecompress2(tj, payload, s.payload_len, rgb, w, 0, hh, TJPF_RGB, 0) == 0;
		busy += now_s() - t0;
		done += ok;
	}
	if (tj)
		tjDestroy(tj);
	free(rgb);
	dsstore_txn_end(t);
	dsstore_close(ds);
	if (done == 0 || busy <= 0)
		return status_fail(err, errlen, FEEDER_EDECODE, "no image of %s could be decoded",
				   dir);
	*rate = done / busy;
	*images = done;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static const char *dtype_name(int d)
{
	return d == FEEDER_DTYPE_U8 ? "u8" : d == FEEDER_DTYPE_F16 ? "f16" : "f32";
}

/* ---- the command line ---- */

static struct bench_opts opts = { .batch = 32,
				  .size = 224,
				  .slots = 4,
				  .streams = 1,
				  .batches = 100,
				  .dtype = FEEDER_DTYPE_F32,
				  .layout = FEEDER_LAYOUT_NCHW };

static const struct argtab_choice dtypes[] = { { "u8", FEEDER_DTYPE_U8 },
					       { "f16", FEEDER_DTYPE_F16 },
					       { "f32", FEEDER_DTYPE_F32 },
					       { NULL, 0 } };
static const struct argtab_choice layouts[] = { { "nchw", FEEDER_LAYOUT_NCHW },
						{ "nhwc", FEEDER_LAYOUT_NHWC },
						{ NULL, 0 } };
static const struct argtab_choice placements[] = { { "cpu", FEEDER_PLACEMENT_CPU },
						   { "gpu", FEEDER_PLACEMENT_GPU },
						   { "auto", FEEDER_PLACEMENT_AUTO },
						   { NULL, 0 } };

static struct argtab options[] = {
	ARGTAB_STRING("dataset", 0, &opts.dataset, "NAME", "dataset served by feederd (required)"),
	ARGTAB_INT("batch", 0, &opts.batch, 1, FEEDER_MAX_BATCH, "B",
		   "samples per batch (default 32)"),
	ARGTAB_INT("size", 0, &opts.size, 1, FEEDER_MAX_SIDE, "S",
		   "output height and width (default 224)"),
	ARGTAB_ENUM("dtype", 0, &opts.dtype, dtypes, "T", "u8, f16 or f32 (default f32)"),
	ARGTAB_ENUM("layout", 0, &opts.layout, layouts, "L", "nchw or nhwc (default nchw)"),
	ARGTAB_INT("batches", 0, &opts.batches, 1, 10000000, "N",
		   "batches per stream to consume (default 100)"),
	ARGTAB_INT("streams", 0, &opts.streams, 1, 256, "K",
		   "concurrent streams, one thread and connection each (default 1)"),
	ARGTAB_INT("slots", 0, &opts.slots, 1, FEEDER_MAX_SLOTS, "D",
		   "prefetch depth per stream (default 4)"),
	ARGTAB_FLAG("eval", 0, &opts.eval,
		    "eval transform (resize + center crop) instead of train"),
	ARGTAB_INT("seed", 0, &opts.seed, 0, ARGTAB_U64_MAX, "S", "shuffle seed (default 0)"),
	ARGTAB_INT("hold-us", 0, &opts.hold_us, 0, 10000000, "T",
		   "simulated compute per batch before release (default 0)"),
	ARGTAB_ENUM("placement", 0, &opts.placement, placements, "P",
		    "where feederd preprocesses: cpu, gpu or auto (default cpu)"),
	ARGTAB_FLAG("device-batches", 0, &opts.device_batches,
		    "with --placement gpu: take batches in GPU memory (CUDA IPC)"),
	ARGTAB_STRING("socket", 0, &opts.socket, "PATH",
		      "daemon socket (default $FEEDER_SOCKET, else the standard path)"),
	ARGTAB_STRING("datasets", 0, &opts.datasets, "DIR",
		      "feederd's datasets directory, where the ceiling reads the\n"
		      "images (default " FEEDER_DEFAULT_DATASETS ")"),
	ARGTAB_INT("workers", 0, &opts.workers, 1, 1024, "N",
		   "worker count for the ceiling (default: feederd's)"),
	ARGTAB_FLAG("json", 0, &opts.json, "print one JSON object"),
	ARGTAB_FLAG("version", 0, &opts.version, "the feeder-bench version"),
	ARGTAB_FLAG("help", 'h', &opts.help, "this text"),
	ARGTAB_END,
};

/* 0: run; 1: done (--help, --version); 2: bad usage (said). */
static int parse_args(int argc, char **argv)
{
	char err[512], *ops[1];
	int n;
	if (argtab_parse(options, argc, argv, ops, 0, &n, err, sizeof err)) {
		fprintf(stderr, "feeder-bench: %s (try --help)\n", err);
		return 2;
	}
	if (opts.help) {
		fputs(usage_head, stdout);
		argtab_help(stdout, options);
		return 1;
	}
	if (opts.version) {
		printf("feeder-bench %s\n", FEEDER_VERSION);
		return 1;
	}
	if (!opts.dataset) {
		fprintf(stderr, "feeder-bench: --dataset NAME is required (try --help)\n");
		return 2;
	}
	if (proto_name_check(opts.dataset, err, sizeof err)) {
		fprintf(stderr, "feeder-bench: %s\n", err);
		return 2;
	}
	opts.train = !opts.eval;
	if (!opts.datasets)
		opts.datasets = FEEDER_DEFAULT_DATASETS;
	return 0;
}

/* ---- the run ---- */

/* What the streams did, all together. */
struct bench_result {
	uint64_t n, images, bytes, repl, steady_images;
	double wall, startup, ips, mbps, wait_mean, wait_p99;
	int steady, failed;
	/* the ceiling */
	unsigned workers, sampled;
	double single, ceiling, ratio;
	char cerr[512];
};

/* Run the K streams on their threads; their times in th. 0 or -1 (said). */
static int run_streams(struct bench_thread *th, double *t0, double *wall)
{
	for (uint32_t k = 0; k < opts.streams; k++) {
		th[k].o = &opts;
		th[k].rank = k;
		th[k].waits_us = calloc(opts.batches, sizeof(double));
		if (!th[k].waits_us) {
			fprintf(stderr, "feeder-bench: out of memory\n");
			return -1;
		}
	}
	*t0 = now_s();
	uint32_t started = 0;
	while (started < opts.streams &&
	       pthread_create(&th[started].tid, NULL, bench_run, &th[started]) == 0)
		started++;
	for (uint32_t k = 0; k < started; k++)
		pthread_join(th[k].tid, NULL);
	*wall = now_s() - *t0;
	if (started < opts.streams) {
		fprintf(stderr, "feeder-bench: cannot start thread %u\n", started);
		return -1;
	}
	return 0;
}

/* The wait per feeder_stream_next over all streams: mean and nearest-rank
 * p99. 0 or -1 (out of memory, said). */
static int wait_stats(const struct bench_thread *th, struct bench_result *r)
{
	double *waits = calloc(r->n ? r->n : 1, sizeof(double));
	if (!waits) {
		fprintf(stderr, "feeder-bench: out of memory\n");
		return -1;
	}
	uint64_t j = 0;
	double wait_sum = 0;
	for (uint32_t k = 0; k < opts.streams; k++)
		for (uint64_t i = 0; i < th[k].n; i++) {
			waits[j++] = th[k].waits_us[i];
			wait_sum += th[k].waits_us[i];
		}
	qsort(waits, r->n, sizeof(double), cmp_double);
	r->wait_mean = r->n ? wait_sum / (double)r->n : 0;
	r->wait_p99 = r->n ? waits[(size_t)ceil(0.99 * (double)r->n) - 1] : 0;
	free(waits);
	return 0;
}

/* Totals, rates and waits of the streams. 0 or -1 (said). */
static int sum_streams(const struct bench_thread *th, double t0, double wall,
		       struct bench_result *r)
{
	double first = 0, end = 0;
	r->wall = wall;
	for (uint32_t k = 0; k < opts.streams; k++) {
		if (th[k].rc) {
			fprintf(stderr, "feeder-bench: stream %u: %s (%s)\n", k, th[k].err,
				feeder_strerror(th[k].rc));
			r->failed = 1;
		}
		r->n += th[k].n;
		r->images += th[k].images;
		if (th[k].n > 1) {
			r->steady_images += th[k].images - th[k].first_images;
			first = first == 0 || th[k].t_first < first ? th[k].t_first : first;
			end = th[k].t_end > end ? th[k].t_end : end;
		}
		r->bytes += th[k].bytes;
		r->repl += th[k].replacements;
	}
	/* The steady window runs from the earliest first batch to the last
	 * batch; with one batch a stream there is none, and the whole run
	 * counts. */
	r->startup = first > 0 ? first - t0 : wall;
	double window = end - first;
	r->steady = r->steady_images > 0 && window > 0;
	r->ips = r->steady  ? (double)r->steady_images / window
		 : wall > 0 ? (double)r->images / wall
			    : 0;
	r->mbps = r->ips * (r->images ? (double)r->bytes / (double)r->images : 0) / 1e6;
	return wait_stats(th, r);
}

/* The decode ceiling: one thread's rate times feederd's workers. */
static void measure_ceiling(struct bench_result *r)
{
	char dsdir[4096 + FEEDER_DATASET_MAX + 2];
	snprintf(dsdir, sizeof dsdir, "%s/%s", opts.datasets, opts.dataset);
	r->workers = opts.workers ? opts.workers : daemon_workers(opts.socket);
	if (decode_ceiling(dsdir, &r->single, &r->sampled, r->cerr, sizeof r->cerr) == 0 &&
	    r->workers)
		r->ceiling = r->single * r->workers;
	else if (!r->cerr[0])
		snprintf(r->cerr, sizeof r->cerr,
			 "feederd's worker count is unknown (use --workers)");
	r->ratio = r->ceiling > 0 ? r->ips / r->ceiling : 0;
}

static void print_json(const struct bench_result *r)
{
	const struct bench_opts *o = &opts;
	printf("{\"dataset\": \"%s\", \"streams\": %u, \"batch\": %u, \"size\": %u, "
	       "\"dtype\": \"%s\", \"layout\": \"%s\", \"train\": %s, \"slots\": %u, "
	       "\"batches\": %" PRIu64 ", \"images\": %" PRIu64 ", \"bytes\": %" PRIu64
	       ", \"seconds\": %.6f, \"startup_s\": %.6f, \"images_per_s\": %.3f, "
	       "\"mb_per_s\": %.3f, "
	       "\"wait_mean_us\": %.3f, \"wait_p99_us\": %.3f, \"replacements\": %" PRIu64
	       ", \"workers\": %u, \"ceiling_single_thread_images_per_s\": %.3f, "
	       "\"ceiling_sampled_images\": %u, \"ceiling_images_per_s\": %.3f, "
	       "\"ratio_to_ceiling\": %.4f, \"ok\": %s}\n",
	       o->dataset, o->streams, o->batch, o->size, dtype_name(o->dtype),
	       o->layout == FEEDER_LAYOUT_NHWC ? "nhwc" : "nchw", o->train ? "true" : "false",
	       o->slots, r->n, r->images, r->bytes, r->wall, r->startup, r->ips, r->mbps,
	       r->wait_mean, r->wait_p99, r->repl, r->workers, r->single, r->sampled, r->ceiling,
	       r->ratio, r->failed ? "false" : "true");
}

static void print_text(const struct bench_result *r)
{
	const struct bench_opts *o = &opts;
	printf("feeder-bench: %s, %u stream(s) x %" PRIu64 " batches of %u, %ux%u %s %s, %s, "
	       "%u slots\n",
	       o->dataset, o->streams, o->batches, o->batch, o->size, o->size, dtype_name(o->dtype),
	       o->layout == FEEDER_LAYOUT_NHWC ? "NHWC" : "NCHW", o->train ? "train" : "eval",
	       o->slots);
	printf("  consumed      %" PRIu64 " batches, %" PRIu64 " images in %.3f s\n", r->n,
	       r->images, r->wall);
	printf("  start-up      %.3f s to the first batch (connect, open, first batch)\n",
	       r->startup);
	printf("  throughput    %.1f images/s, %.1f MB/s%s\n", r->ips, r->mbps,
	       r->steady ? " after the first batch" : "");
	printf("  wait          mean %.1f us, p99 %.1f us per feeder_stream_next\n", r->wait_mean,
	       r->wait_p99);
	printf("  replacements  %" PRIu64 "\n", r->repl);
	if (r->ceiling > 0)
		printf("  ceiling       %.1f images/s (%.1f/s single-thread full decode over %u "
		       "images x %u workers); ratio %.2f\n",
		       r->ceiling, r->single, r->sampled, r->workers, r->ratio);
	else
		printf("  ceiling       unknown: %s\n", r->cerr);
}

int main(int argc, char **argv)
{
	int rc = parse_args(argc, argv);
	if (rc)
		return rc == 1 ? 0 : rc;
	struct bench_thread *th = calloc(opts.streams, sizeof *th);
	struct bench_result r = { 0 };
	double t0 = 0, wall = 0;
	rc = 1;
	if (!th)
		fprintf(stderr, "feeder-bench: out of memory\n");
	else if (run_streams(th, &t0, &wall) == 0 && sum_streams(th, t0, wall, &r) == 0) {
		measure_ceiling(&r);
		if (opts.json)
			print_json(&r);
		else
			print_text(&r);
		rc = r.failed ? 1 : 0;
	}
	for (uint32_t k = 0; th && k < opts.streams; k++)
		free(th[k].waits_us);
	free(th);
	return rc;
}
