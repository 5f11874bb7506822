/* test_gpu_staging.c — the GPU pipeline's staging layout and per-element
 * math, run on the host (gpu_staging_run_host executes exactly the code the
 * kernels call), against the CPU pipelines: every case of gpu_cases.h, plus
 * the staging block's own refusals (bad index, wrong kind, unstaged
 * samples, corrupt JPEG, a block too small), and four threads staging one
 * batch at once (the arena's compare-and-swap) giving the same bytes as
 * one thread. Needs no GPU, runs everywhere. */
#include "protocol.h"
#include "gpu_cases.h"

#include "gpu_staging.h"

#include <pthread.h>

static struct gpu_staging *cpu_open(int jpeg, const void *params, uint32_t dim, uint32_t max_batch,
				    size_t staging)
{
	char err[256];
	struct gpu_staging *st = calloc(1, sizeof *st);
	CHECK(st);
	if (staging == 0)
		staging = jpeg ? gpu_staging_default_bytes_jpeg(params, max_batch)
			       : gpu_staging_default_bytes_features(params, dim, max_batch, 0);
	size_t cap = (staging + 15) & ~(size_t)15;
	void *block = aligned_alloc(16, cap);
	CHECK(block);
	int rc =
		jpeg ? gpu_staging_init_jpeg(st, block, staging, max_batch, params, err, sizeof err)
		     : gpu_staging_init_features(st, block, staging, max_batch, params, dim, err,
						 sizeof err);
	CHECKF(rc == 0, "%s", err);
	return st;
}

static void *open_jpeg(const struct feeder_stream_opts *p, uint32_t max_batch, size_t staging)
{
	return cpu_open(1, p, 0, max_batch, staging);
}

static void *open_features(const struct feeder_stream_opts *p, uint32_t dim, uint32_t max_batch,
			   size_t staging)
{
	return cpu_open(0, p, dim, max_batch, staging);
}

static void begin(void *ctx)
{
	gpu_staging_reset(ctx);
}

static int stage_jpeg(void *ctx, struct jpeg_worker *w, uint32_t i, const uint8_t *jpeg, size_t len,
		      uint64_t key, char *err, size_t errlen)
{
	return gpu_staging_jpeg(ctx, w, i, jpeg, len, key, err, errlen);
}

static int stage_features(void *ctx, uint32_t i, const struct dsformat_sample *s,
			  const uint8_t *payload, uint64_t key, char *err, size_t errlen)
{
	return gpu_staging_features(ctx, i, s, payload, key, err, errlen);
}

static void run(void *ctx, uint32_t n, void *out)
{
	char err[256];
	size_t bytes;
	struct gpu_staging *st = ctx;
	CHECKF(gpu_staging_bytes(st, n, &bytes, err, sizeof err) == 0, "%s", err);
	CHECK(bytes >= st->arena && bytes <= st->cap);
	gpu_staging_run_host(st, n, out);
}

static uint32_t cpu_finished(void *ctx)
{
	return ((struct gpu_staging *)ctx)->cpu_finished;
}

static void close_ctx(void *ctx)
{
	struct gpu_staging *st = ctx;
	free(st->base);
	free(st);
}

static const struct gpu_runner host_runner = {
	"host",         open_jpeg, open_features, begin,     stage_jpeg,
	stage_features, run,       cpu_finished,  close_ctx,
};

/* What the staging block refuses, each with a sentence. */
static void refusals(void)
{
	char err[256];
	struct jpeg_worker *w;
	CHECK(jpeg_worker_create(&w, err, sizeof err) == 0);
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 32, 1);
	struct gpu_staging *st = open_jpeg(&p, 2, 1 << 18);
	unsigned long len;
	uint8_t *jpeg = jpeg_synth(96, 80, TJSAMP_420, 85, 1, &len);
	CHECK(jpeg);

	CHECK(gpu_staging_jpeg(st, w, 2, jpeg, len, 1, err, sizeof err) == FEEDER_EINVAL);
	printf("index beyond the batch: %s\n", err);
	struct dsformat_sample s;
	uint8_t *m = gc_matrix(10, 4, 0, 1, &s);
	CHECK(gpu_staging_features(st, 0, &s, m, 1, err, sizeof err) == FEEDER_EINVAL);
	printf("wrong kind: %s\n", err);
	free(m);

	CHECK(gpu_staging_jpeg(st, w, 0, jpeg, len, 1, err, sizeof err) == 0);
	CHECK(gpu_staging_jpeg(st, w, 0, jpeg, len, 1, err, sizeof err) == FEEDER_EINVAL);
	printf("staged twice: %s\n", err);
	size_t bytes;
	CHECK(gpu_staging_bytes(st, 2, &bytes, err, sizeof err) == FEEDER_EINVAL);
	printf("unstaged sample: %s\n", err);
	CHECK(gpu_staging_bytes(st, 0, &bytes, err, sizeof err) == FEEDER_EINVAL);
	CHECK(gpu_staging_bytes(st, 1, &bytes, err, sizeof err) == 0);
	/* descriptors, the region and its plans */
	CHECK(bytes > st->arena + 32 * 32 * 4);

	/* A corrupt JPEG leaves its descriptor empty; a replacement fills it. */
	uint8_t *bad = malloc(len);
	CHECK(bad);
	memcpy(bad, jpeg, len);
	bad[1] = 0x00; /* no SOI marker */
	int rc = gpu_staging_jpeg(st, w, 1, bad, len, 1, err, sizeof err);
	CHECKF(rc == FEEDER_EDECODE, "corrupt JPEG gave %d", rc);
	printf("corrupt JPEG: %s\n", err);
	CHECK(gpu_staging_bytes(st, 2, &bytes, err, sizeof err) == FEEDER_EINVAL);
	CHECKF(gpu_staging_jpeg(st, w, 1, jpeg, len, 2, err, sizeof err) == 0, "%s", err);
	CHECK(gpu_staging_bytes(st, 2, &bytes, err, sizeof err) == 0);
	gpu_staging_reset(st);
	CHECK(gpu_staging_bytes(st, 1, &bytes, err, sizeof err) == FEEDER_EINVAL);
	close_ctx(st);

	/* A block too small for the descriptors and two finished samples. */
	struct gpu_staging small;
	void *block = aligned_alloc(16, 4096);
	CHECK(block);
	CHECK(gpu_staging_init_jpeg(&small, block, 4096, 2, &p, err, sizeof err) == FEEDER_EINVAL);
	printf("small block: %s\n", err);
	CHECK(gpu_staging_init_jpeg(&small, (uint8_t *)block + 4, 4000, 1, &p, err, sizeof err) ==
	      FEEDER_EINVAL);
	free(block);
	free(bad);
	tjFree(jpeg);
	jpeg_worker_destroy(w);
}

enum { PAR_THREADS = 4, PAR_N = 32 };

struct par {
	struct gpu_staging *st;
	uint32_t next; /* atomic */
	int failed;
};

static void *par_worker(void *arg)
{
	struct par *pa = arg;
	char err[256];
	struct jpeg_worker *w;
	if (jpeg_worker_create(&w, err, sizeof err)) {
		pa->failed = 1;
		return NULL;
	}
	for (;;) {
		uint32_t i = __atomic_fetch_add(&pa->next, 1, __ATOMIC_RELAXED);
		if (i >= PAR_N)
			break;
		const struct gc_image *im = &gc_images[i % GC_NIMG];
		if (gpu_staging_jpeg(pa->st, w, i, im->jpeg, im->len, 31 * i + 1, err,
				     sizeof err)) {
			fprintf(stderr, "parallel stage %u: %s\n", i, err);
			__atomic_store_n(&pa->failed, 1, __ATOMIC_RELAXED);
		}
	}
	jpeg_worker_destroy(w);
	return NULL;
}

/* Four threads share one block (pieces claimed concurrently), one thread
 * stages the same batch into another. With room for every region the bytes
 * are identical. With the default block some regions do not fit: which
 * samples are finished on the CPU then depends on the timing, and those
 * agree with the others only to float rounding (resize.c's SIMD path vs
 * the kernel's code). */
static void parallel_once(size_t staging)
{
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 40, 1);
	p.dtype = FEEDER_DTYPE_F16;
	size_t sb = jpeg_pipeline_sample_bytes(&p);
	uint8_t *a = malloc(sb * PAR_N), *b = malloc(sb * PAR_N);
	CHECK(a && b);
	struct par pa = { .st = open_jpeg(&p, PAR_N, staging) };
	pthread_t t[PAR_THREADS];
	for (int i = 0; i < PAR_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, par_worker, &pa) == 0);
	for (int i = 0; i < PAR_THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(!pa.failed);
	run(pa.st, PAR_N, a);
	struct par one = { .st = open_jpeg(&p, PAR_N, staging) };
	par_worker(&one);
	CHECK(!one.failed);
	run(one.st, PAR_N, b);
	double worst = 0;
	for (size_t i = 0; i < PAR_N; i++)
		for (size_t e = 0; e < (size_t)3 * 40 * 40; e++)
			worst = fmax(worst, fabs(gc_pixel(&p, a + i * sb, e) -
						 gc_pixel(&p, b + i * sb, e)));
	if (staging)
		CHECKF(memcmp(a, b, sb * PAR_N) == 0, "parallel staging: max abs diff %g", worst);
	else
		CHECKF(worst <= 1.0 / 255, "parallel staging: max abs diff %g", worst);
	printf("host jpeg: %d threads staging one batch match one thread (%s block: %u and %u of "
	       "%d samples finished on the CPU, max abs diff %.2g)\n",
	       PAR_THREADS, staging ? "large" : "default", pa.st->cpu_finished,
	       one.st->cpu_finished, PAR_N, worst);
	close_ctx(pa.st);
	close_ctx(one.st);
	free(a);
	free(b);
}

static void parallel(void)
{
	gc_make_images();
	parallel_once((size_t)PAR_N << 20);
	parallel_once(0);
	gc_free_images();
}

int main(void)
{
	refusals();
	parallel();
	gc_jpeg_all(&host_runner);
	gc_features_all(&host_runner);
	return 0;
}
