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
 * worker count (from STATUS). The dataset directory is found like feederd
 * finds it (`datasets` of its config file) unless --datasets names it.
 * images/s counts from the first batch's arrival, as a DataLoader benchmark
 * counts after its first batch (tests/bench/torch_images.py): start-up
 * (connect, stream open, the first batch) is reported apart as startup_s,
 * so a ratio between the two compares the same thing. The ring's first
 * touch (page faults on slots 2..D) stays inside the measured window. */
#include "status.h"

#include "config.h"
#include "dsstore.h"
#include "feeder.h"
#include "image_limit.h"
#include "protocol.h"
#include "sockmsg.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <turbojpeg.h>
#include <unistd.h>

/* The ceiling's sample: at most this many images or this much time. */
#define CEILING_IMAGES 256
#define CEILING_SECONDS 2.0

static const char usage_text[] =
	"usage: feeder-bench --dataset NAME [options]\n"
	"\n"
	"Consume jpeg streams from feederd like a trainer and report images/s, MB/s,\n"
	"the wait per feeder_stream_next (mean, p99) and the decode ceiling of this machine.\n"
	"\n"
	"  --dataset NAME     dataset served by feederd (required)\n"
	"  --batch B          samples per batch (default 32)\n"
	"  --size S           output height and width (default 224)\n"
	"  --dtype T          u8, f16 or f32 (default f32)\n"
	"  --layout L         nchw or nhwc (default nchw)\n"
	"  --batches N        batches per stream to consume (default 100)\n"
	"  --streams K        concurrent streams, one thread and connection each (default 1)\n"
	"  --slots D          prefetch depth per stream (default 4)\n"
	"  --eval             eval transform (resize + center crop) instead of train\n"
	"  --seed S           shuffle seed (default 0)\n"
	"  --hold-us T        simulated compute per batch before release (default 0)\n"
	"  --placement P      where feederd preprocesses: cpu, gpu or auto (default cpu)\n"
	"  --device-batches   with --placement gpu: take batches in GPU memory (CUDA IPC)\n"
	"  --socket PATH      daemon socket (default $FEEDER_SOCKET, else the standard path)\n"
	"  --config PATH      feederd config to find the datasets directory\n"
	"  --datasets DIR     datasets directory (overrides the config)\n"
	"  --workers N        worker count for the ceiling (default: feederd's)\n"
	"  --json             print one JSON object\n";

struct bench_opts {
	const char *dataset, *socket, *config, *datasets;
	uint32_t batch, size, slots, streams;
	uint64_t batches, seed;
	int dtype, layout, train, json;
	unsigned hold_us, workers;
	int placement, device_batches;
};

struct bench_thread {
	const struct bench_opts *o;
	uint32_t rank;
	pthread_t tid;
	double *waits_us;      /* one per feeder_stream_next that returned a batch */
	uint64_t n, images, bytes, replacements;
	uint64_t first_images;  /* in the first batch, before the measured window */
	double t_first, t_end;  /* the first batch's arrival, the last one's */
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

/* Worker count of the daemon, from a STATUS request. 0 if unknown. */
static unsigned daemon_workers(const char *socket_path)
{
	struct feeder *f;
	if (feeder_connect(socket_path, 5000, &f))
		return 0;
	int sock = feeder_fd(f);
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = PROTO_STATUS_SUMMARY;
	char err[256];
	unsigned w = 0;
	if (sockmsg_send_msg(sock, &m, -1, err, sizeof err) == 0) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		while (poll(&p, 1, 5000) == 1 && sockmsg_recv_msg(sock, &m, NULL, err, sizeof err) == 0) {
			if (m.type == PROTO_STATUS_REPLY) {
				w = m.u.status_reply.workers;
				break;
			}
			if (m.type == PROTO_ERROR)
				break;
		}
	}
	feeder_disconnect(f);
	return w;
}

/* Single-thread full-size decode rate of the dataset's images. */
static int decode_ceiling(const char *dir, double *rate, unsigned *images, char *err,
			  size_t errlen)
{
	struct dsstore *ds;
	int rc = dsstore_open(dir, &ds, err, errlen);
	if (rc)
		return rc;
	const struct dsformat_header *h = dsstore_header(ds);
	if (h->kind != DSFORMAT_KIND_JPEG || h->samples == 0) {
		dsstore_close(ds);
		return status_fail(err, errlen, FEEDER_EFORMAT, "dataset %s holds no JPEG images", dir);
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
		return status_fail(err, errlen, FEEDER_EDECODE, "no image of %s could be decoded", dir);
	*rate = done / busy;
	*images = done;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int parse_u64(const char *flag, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || s[0] == '-' || !s[0] || v < min || v > max) {
		fprintf(stderr, "feeder-bench: %s: '%s' is not a number from %" PRIu64 " to %" PRIu64
				"\n", flag, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

static const char *dtype_name(int d)
{
	return d == FEEDER_DTYPE_U8 ? "u8" : d == FEEDER_DTYPE_F16 ? "f16" : "f32";
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .batch = 32, .size = 224, .slots = 4, .streams = 1, .batches = 100,
				.dtype = FEEDER_DTYPE_F32, .layout = FEEDER_LAYOUT_NCHW, .train = 1 };
	enum { OPT_DATASET = 256, OPT_SOCKET, OPT_CONFIG, OPT_DATASETS, OPT_DTYPE, OPT_LAYOUT,
	       OPT_BATCH, OPT_SIZE, OPT_SLOTS, OPT_STREAMS, OPT_BATCHES, OPT_SEED, OPT_PLACEMENT,
	       OPT_HOLD, OPT_WORKERS, OPT_JSON, OPT_EVAL, OPT_DEVICE, OPT_VERSION };
	static const struct option longopts[] = {
		{ "dataset", required_argument, NULL, OPT_DATASET },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "datasets", required_argument, NULL, OPT_DATASETS },
		{ "dtype", required_argument, NULL, OPT_DTYPE },
		{ "layout", required_argument, NULL, OPT_LAYOUT },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "slots", required_argument, NULL, OPT_SLOTS },
		{ "streams", required_argument, NULL, OPT_STREAMS },
		{ "batches", required_argument, NULL, OPT_BATCHES },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "placement", required_argument, NULL, OPT_PLACEMENT },
		{ "hold-us", required_argument, NULL, OPT_HOLD },
		{ "workers", required_argument, NULL, OPT_WORKERS },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "eval", no_argument, NULL, OPT_EVAL },
		{ "device-batches", no_argument, NULL, OPT_DEVICE },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *a = argv[optind - 1], *v = optarg;
		uint64_t x;
		switch (c) {
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case OPT_VERSION:
			printf("feeder-bench %s\n", FEEDER_VERSION);
			return 0;
		case OPT_JSON:
			o.json = 1;
			break;
		case OPT_EVAL:
			o.train = 0;
			break;
		case OPT_DEVICE:
			o.device_batches = 1;
			break;
		case OPT_DATASET:
			o.dataset = v;
			break;
		case OPT_SOCKET:
			o.socket = v;
			break;
		case OPT_CONFIG:
			o.config = v;
			break;
		case OPT_DATASETS:
			o.datasets = v;
			break;
		case OPT_DTYPE:
			if (strcmp(v, "u8") == 0)
				o.dtype = FEEDER_DTYPE_U8;
			else if (strcmp(v, "f16") == 0)
				o.dtype = FEEDER_DTYPE_F16;
			else if (strcmp(v, "f32") == 0)
				o.dtype = FEEDER_DTYPE_F32;
			else {
				fprintf(stderr, "feeder-bench: --dtype: '%s' is not u8, f16 or f32\n", v);
				return 2;
			}
			break;
		case OPT_LAYOUT:
			if (strcasecmp(v, "nchw") == 0)
				o.layout = FEEDER_LAYOUT_NCHW;
			else if (strcasecmp(v, "nhwc") == 0)
				o.layout = FEEDER_LAYOUT_NHWC;
			else {
				fprintf(stderr, "feeder-bench: --layout: '%s' is not nchw or nhwc\n", v);
				return 2;
			}
			break;
		case OPT_BATCH:
			if (parse_u64("--batch", v, 1, FEEDER_MAX_BATCH, &x))
				return 2;
			o.batch = (uint32_t)x;
			break;
		case OPT_SIZE:
			if (parse_u64("--size", v, 1, FEEDER_MAX_SIDE, &x))
				return 2;
			o.size = (uint32_t)x;
			break;
		case OPT_SLOTS:
			if (parse_u64("--slots", v, 1, FEEDER_MAX_SLOTS, &x))
				return 2;
			o.slots = (uint32_t)x;
			break;
		case OPT_STREAMS:
			if (parse_u64("--streams", v, 1, 256, &x))
				return 2;
			o.streams = (uint32_t)x;
			break;
		case OPT_BATCHES:
			if (parse_u64("--batches", v, 1, 10000000, &o.batches))
				return 2;
			break;
		case OPT_SEED:
			if (parse_u64("--seed", v, 0, UINT64_MAX, &o.seed))
				return 2;
			break;
		case OPT_PLACEMENT:
			if (strcmp(v, "cpu") == 0)
				o.placement = FEEDER_PLACEMENT_CPU;
			else if (strcmp(v, "gpu") == 0)
				o.placement = FEEDER_PLACEMENT_GPU;
			else if (strcmp(v, "auto") == 0)
				o.placement = FEEDER_PLACEMENT_AUTO;
			else {
				fprintf(stderr, "feeder-bench: --placement: '%s' is not cpu, gpu or auto\n", v);
				return 2;
			}
			break;
		case OPT_HOLD:
			if (parse_u64("--hold-us", v, 0, 10000000, &x))
				return 2;
			o.hold_us = (unsigned)x;
			break;
		case OPT_WORKERS:
			if (parse_u64("--workers", v, 1, 1024, &x))
				return 2;
			o.workers = (unsigned)x;
			break;
		case ':':
			fprintf(stderr, "feeder-bench: option '%s' needs a value (try --help)\n", a);
			return 2;
		default:
			if (optopt && strncmp(a, "--", 2) != 0)
				fprintf(stderr, "feeder-bench: unknown option '-%c' (try --help)\n", optopt);
			else
				fprintf(stderr, "feeder-bench: unknown option '%s' (try --help)\n", a);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "feeder-bench: unexpected argument '%s' (try --help)\n", argv[optind]);
		return 2;
	}
	if (!o.dataset) {
		fprintf(stderr, "feeder-bench: --dataset NAME is required (try --help)\n");
		return 2;
	}
	char err[512];
	if (proto_name_check(o.dataset, err, sizeof err)) {
		fprintf(stderr, "feeder-bench: %s\n", err);
		return 2;
	}

	/* The dataset directory, found the way feederd finds it. */
	char dsdir[CONFIG_PATH_MAX + FEEDER_DATASET_MAX + 2];
	if (o.datasets) {
		snprintf(dsdir, sizeof dsdir, "%s/%s", o.datasets, o.dataset);
	} else {
		struct config cfg;
		char *cargv[] = { "feederd", "--config", (char *)o.config, NULL };
		if (config_load(o.config ? 3 : 1, cargv, &cfg, err, sizeof err) < 0) {
			fprintf(stderr, "feeder-bench: %s\n", err);
			return 1;
		}
		snprintf(dsdir, sizeof dsdir, "%s/%s", cfg.datasets_dir, o.dataset);
	}

	struct bench_thread *th = calloc(o.streams, sizeof *th);
	if (!th) {
		fprintf(stderr, "feeder-bench: out of memory\n");
		return 1;
	}
	for (uint32_t k = 0; k < o.streams; k++) {
		th[k].o = &o;
		th[k].rank = k;
		th[k].waits_us = calloc(o.batches, sizeof(double));
		if (!th[k].waits_us) {
			fprintf(stderr, "feeder-bench: out of memory\n");
			return 1;
		}
	}
	double t0 = now_s();
	for (uint32_t k = 0; k < o.streams; k++)
		if (pthread_create(&th[k].tid, NULL, bench_run, &th[k]) != 0) {
			fprintf(stderr, "feeder-bench: cannot start thread %u\n", k);
			return 1;
		}
	for (uint32_t k = 0; k < o.streams; k++)
		pthread_join(th[k].tid, NULL);
	double wall = now_s() - t0;

	uint64_t n = 0, images = 0, bytes = 0, repl = 0, steady_images = 0;
	double first = 0, end = 0;
	int failed = 0;
	for (uint32_t k = 0; k < o.streams; k++) {
		if (th[k].rc) {
			fprintf(stderr, "feeder-bench: stream %u: %s (%s)\n", k, th[k].err,
				feeder_strerror(th[k].rc));
			failed = 1;
		}
		n += th[k].n;
		images += th[k].images;
		if (th[k].n > 1) {
			steady_images += th[k].images - th[k].first_images;
			first = first == 0 || th[k].t_first < first ? th[k].t_first : first;
			end = th[k].t_end > end ? th[k].t_end : end;
		}
		bytes += th[k].bytes;
		repl += th[k].replacements;
	}
	double *waits = calloc(n ? n : 1, sizeof(double));
	if (!waits) {
		fprintf(stderr, "feeder-bench: out of memory\n");
		return 1;
	}
	uint64_t j = 0;
	double wait_sum = 0;
	for (uint32_t k = 0; k < o.streams; k++)
		for (uint64_t i = 0; i < th[k].n; i++) {
			waits[j++] = th[k].waits_us[i];
			wait_sum += th[k].waits_us[i];
		}
	qsort(waits, n, sizeof(double), cmp_double);
	double wait_mean = n ? wait_sum / (double)n : 0;
	/* Nearest-rank p99. */
	double wait_p99 = n ? waits[(size_t)ceil(0.99 * (double)n) - 1] : 0;
	/* The steady window runs from the earliest first batch to the last
	 * batch; with one batch a stream there is none, and the whole run
	 * counts. */
	double startup = first > 0 ? first - t0 : wall;
	double window = end - first;
	int steady = steady_images > 0 && window > 0;
	double ips = steady ? (double)steady_images / window : wall > 0 ? (double)images / wall : 0;
	double mbps = ips * (images ? (double)bytes / (double)images : 0) / 1e6;

	unsigned workers = o.workers ? o.workers : daemon_workers(o.socket);
	double single = 0, ceiling = 0;
	unsigned sampled = 0;
	char cerr[512] = "";
	if (decode_ceiling(dsdir, &single, &sampled, cerr, sizeof cerr) == 0 && workers)
		ceiling = single * workers;
	else if (!cerr[0])
		snprintf(cerr, sizeof cerr, "feederd's worker count is unknown (use --workers)");
	double ratio = ceiling > 0 ? ips / ceiling : 0;

	if (o.json) {
		printf("{\"dataset\": \"%s\", \"streams\": %u, \"batch\": %u, \"size\": %u, "
		       "\"dtype\": \"%s\", \"layout\": \"%s\", \"train\": %s, \"slots\": %u, "
		       "\"batches\": %" PRIu64 ", \"images\": %" PRIu64 ", \"bytes\": %" PRIu64
		       ", \"seconds\": %.6f, \"startup_s\": %.6f, \"images_per_s\": %.3f, "
		       "\"mb_per_s\": %.3f, "
		       "\"wait_mean_us\": %.3f, \"wait_p99_us\": %.3f, \"replacements\": %" PRIu64
		       ", \"workers\": %u, \"ceiling_single_thread_images_per_s\": %.3f, "
		       "\"ceiling_sampled_images\": %u, \"ceiling_images_per_s\": %.3f, "
		       "\"ratio_to_ceiling\": %.4f, \"ok\": %s}\n",
		       o.dataset, o.streams, o.batch, o.size, dtype_name(o.dtype),
		       o.layout == FEEDER_LAYOUT_NHWC ? "nhwc" : "nchw", o.train ? "true" : "false",
		       o.slots, n, images, bytes, wall, startup, ips, mbps, wait_mean, wait_p99, repl, workers,
		       single, sampled, ceiling, ratio, failed ? "false" : "true");
	} else {
		printf("feeder-bench: %s, %u stream(s) x %" PRIu64 " batches of %u, %ux%u %s %s, %s, "
		       "%u slots\n", o.dataset, o.streams, o.batches, o.batch, o.size, o.size,
		       dtype_name(o.dtype), o.layout == FEEDER_LAYOUT_NHWC ? "NHWC" : "NCHW",
		       o.train ? "train" : "eval", o.slots);
		printf("  consumed      %" PRIu64 " batches, %" PRIu64 " images in %.3f s\n", n, images,
		       wall);
		printf("  start-up      %.3f s to the first batch (connect, open, first batch)\n",
		       startup);
		printf("  throughput    %.1f images/s, %.1f MB/s%s\n", ips, mbps,
		       steady ? " after the first batch" : "");
		printf("  wait          mean %.1f us, p99 %.1f us per feeder_stream_next\n", wait_mean,
		       wait_p99);
		printf("  replacements  %" PRIu64 "\n", repl);
		if (ceiling > 0)
			printf("  ceiling       %.1f images/s (%.1f/s single-thread full decode over %u "
			       "images x %u workers); ratio %.2f\n", ceiling, single, sampled, workers,
			       ratio);
		else
			printf("  ceiling       unknown: %s\n", cerr);
	}
	for (uint32_t k = 0; k < o.streams; k++)
		free(th[k].waits_us);
	free(th);
	free(waits);
	return failed ? 1 : 0;
}
