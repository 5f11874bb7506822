/* gpu_pipeline_bench.c — the jpeg pipeline on worker threads alone (cpu)
 * vs worker threads doing only the region decode and a CUDA device doing
 * the resize, flip, normalization and layout (gpu), with the same number of
 * threads, on a packed dataset (not a test; tests/bench/gpu_pipeline.sh
 * runs it).
 *
 *   gpu_pipeline_bench DATASET [--threads T] [--batch B] [--size S]
 *       [--dtype u8|f16|f32] [--batches N] [--mode cpu|gpu|both] [--host]
 *       [--staging BYTES] [--json]
 *   gpu_pipeline_bench --check-device    (exit 0, or 77 with the reason)
 *
 * Both modes run RandomResizedCrop(S) + flip + normalize into batches of B
 * samples, sample i of the run being dataset record i mod the dataset's
 * size with aug_key i. cpu: T threads claim samples one at a time and run
 * jpeg_pipeline_run into the batch's host buffer, as feederd's workers do.
 * gpu: T threads stage batch k into one of two gpu_pipeline contexts while
 * the device runs batch k-1 from the other (double buffering, as feederd
 * will); the main thread only submits and waits (blocking, not spinning).
 * With --host each gpu batch is also copied back into pinned host memory
 * (the host-ring case); without, it stays in device memory (the
 * device-resident case). Reported per mode: images/s of wall time, and CPU
 * core-seconds (getrusage of the whole process, so the main thread and the
 * CUDA runtime's threads count too) per 1,000 images; two warm-up batches
 * are not counted. Exits 77 when gpu mode is asked for and there is no
 * device. */
#define BENCH_NAME "gpu_pipeline_bench"
#include "bench_common.h"
#include "protocol.h"
#include "dsstore.h"
#include "gpu_pipeline.h"
#include "jpeg_pipeline.h"
#include "status.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <sys/resource.h>

#define WARMUP 2

struct sample {
	const uint8_t *jpeg;
	size_t len;
};

struct bench {
	struct sample *samples;
	uint64_t nsamples;
	struct feeder_stream_opts p;
	uint32_t threads, batch, batches;
	int host;
	size_t staging;
	/* cpu mode */
	uint8_t *out;
	uint64_t next, total; /* atomic sample counter, samples in the run */
	/* gpu mode */
	struct gpu_pipeline *g[2];
	pthread_barrier_t start, done;
	uint32_t cur_batch;     /* batch being staged (set by the main thread) */
	uint32_t next_in_batch; /* atomic */
	int failed;             /* atomic: a worker hit an error */
	char err[320];          /* its sentence */
};

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec * 1e-6;
}

static void fail_worker(struct bench *b, const char *what, const char *err)
{
	if (__atomic_exchange_n(&b->failed, 1, __ATOMIC_ACQ_REL) == 0)
		snprintf(b->err, sizeof b->err, "%s: %s", what, err);
}

static void *cpu_worker(void *arg)
{
	struct bench *b = arg;
	char err[256];
	struct jpeg_worker *w;
	if (jpeg_worker_create(&w, err, sizeof err)) {
		fail_worker(b, "jpeg worker", err);
		return NULL;
	}
	size_t sb = jpeg_pipeline_sample_bytes(&b->p);
	for (;;) {
		uint64_t i = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED);
		if (i >= b->total || __atomic_load_n(&b->failed, __ATOMIC_RELAXED))
			break;
		const struct sample *s = &b->samples[i % b->nsamples];
		if (jpeg_pipeline_run(w, &b->p, s->jpeg, s->len, i, b->out + (i % b->batch) * sb,
				      err, sizeof err)) {
			fail_worker(b, "cpu pipeline", err);
			break;
		}
	}
	jpeg_worker_destroy(w);
	return NULL;
}

/* Stage every batch: wait for the main thread's go, stage samples of the
 * current batch until none is left, report done. */
static void *gpu_worker(void *arg)
{
	struct bench *b = arg;
	char err[256];
	struct jpeg_worker *w;
	int ok = jpeg_worker_create(&w, err, sizeof err) == 0;
	if (!ok)
		fail_worker(b, "jpeg worker", err);
	for (uint32_t k = 0; k < b->batches; k++) {
		pthread_barrier_wait(&b->start);
		struct gpu_pipeline *g = b->g[k % 2];
		for (;;) {
			uint32_t j = __atomic_fetch_add(&b->next_in_batch, 1, __ATOMIC_RELAXED);
			if (j >= b->batch || !ok || __atomic_load_n(&b->failed, __ATOMIC_RELAXED))
				break;
			uint64_t i = (uint64_t)k * b->batch + j;
			const struct sample *s = &b->samples[i % b->nsamples];
			if (gpu_pipeline_stage_jpeg(g, w, j, s->jpeg, s->len, i, err, sizeof err)) {
				fail_worker(b, "gpu staging", err);
				break;
			}
		}
		pthread_barrier_wait(&b->done);
	}
	if (ok)
		jpeg_worker_destroy(w);
	return NULL;
}

struct result {
	double images_per_s, core_s_per_1000;
	uint32_t cpu_finished;
};

static void start_threads(struct bench *b, pthread_t *t, void *(*fn)(void *))
{
	for (uint32_t i = 0; i < b->threads; i++)
		if (pthread_create(&t[i], NULL, fn, b))
			bench_fail("cannot start thread %u", i);
}

/* The cpu workers over batches batches, from sample 0. */
static void cpu_pass(struct bench *b, uint32_t batches)
{
	pthread_t t[b->threads];
	b->next = 0;
	b->total = (uint64_t)batches * b->batch;
	start_threads(b, t, cpu_worker);
	for (uint32_t i = 0; i < b->threads; i++)
		pthread_join(t[i], NULL);
}

static void run_cpu(struct bench *b, struct result *r)
{
	size_t sb = jpeg_pipeline_sample_bytes(&b->p);
	b->out = malloc(sb * b->batch);
	if (!b->out)
		bench_fail("out of memory");
	cpu_pass(b, WARMUP); /* page in the dataset and the output */
	double w0 = bench_clock(CLOCK_MONOTONIC), c0 = cpu_seconds();
	cpu_pass(b, b->batches);
	double w1 = bench_clock(CLOCK_MONOTONIC), c1 = cpu_seconds();
	free(b->out);
	if (b->failed)
		bench_fail("%s", b->err);
	r->images_per_s = b->total / (w1 - w0);
	r->core_s_per_1000 = (c1 - c0) / b->total * 1000;
	r->cpu_finished = 0;
}

static void run_gpu(struct bench *b, struct result *r)
{
	char err[256];
	for (int i = 0; i < 2; i++)
		if (gpu_pipeline_create_jpeg(&b->g[i], 0, &b->p, b->batch, b->staging, err,
					     sizeof err))
			bench_fail("%s", err);
	size_t sb = gpu_pipeline_sample_bytes(b->g[0]);
	void *host[2] = { NULL, NULL };
	for (int i = 0; b->host && i < 2; i++)
		if (cudaMallocHost(&host[i], sb * b->batch) != cudaSuccess)
			bench_fail("no pinned memory for the host batches");
	uint32_t total = b->batches + WARMUP;
	uint32_t measured = b->batches;
	b->batches = total; /* the workers' loop count */
	pthread_barrier_init(&b->start, NULL, b->threads + 1);
	pthread_barrier_init(&b->done, NULL, b->threads + 1);
	pthread_t t[b->threads];
	start_threads(b, t, gpu_worker);
	double w0 = 0, c0 = 0;
	uint32_t cpu_finished = 0;
	int rc = 0;
	for (uint32_t k = 0; k < total; k++) {
		if (k == WARMUP) {
			/* the warm-up batches must be finished before timing */
			for (int i = 0; i < 2 && !rc; i++)
				rc = gpu_pipeline_wait(b->g[i], err, sizeof err);
			w0 = bench_clock(CLOCK_MONOTONIC);
			c0 = cpu_seconds();
		}
		struct gpu_pipeline *g = b->g[k % 2];
		/* waits for batch k-2 on this context */
		if (!rc)
			rc = gpu_pipeline_begin(g, err, sizeof err);
		if (rc) /* the workers stage nothing more */
			__atomic_store_n(&b->failed, 1, __ATOMIC_RELEASE);
		b->next_in_batch = 0;
		pthread_barrier_wait(&b->start);
		pthread_barrier_wait(&b->done);
		if (rc || b->failed)
			continue; /* let the workers finish their loop */
		if (k >= WARMUP)
			cpu_finished += gpu_pipeline_cpu_finished(g);
		rc = gpu_pipeline_submit(g, b->batch, NULL, host[k % 2], err, sizeof err);
	}
	for (int i = 0; i < 2 && !rc; i++)
		rc = gpu_pipeline_wait(b->g[i], err, sizeof err);
	double w1 = bench_clock(CLOCK_MONOTONIC), c1 = cpu_seconds();
	for (uint32_t i = 0; i < b->threads; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&b->start);
	pthread_barrier_destroy(&b->done);
	b->batches = measured;
	for (int i = 0; i < 2; i++) {
		gpu_pipeline_destroy(b->g[i]);
		if (host[i])
			cudaFreeHost(host[i]);
	}
	if (rc || b->failed)
		bench_fail("%s", rc ? err : b->err);
	uint64_t images = (uint64_t)measured * b->batch;
	r->images_per_s = images / (w1 - w0);
	r->core_s_per_1000 = (c1 - c0) / images * 1000;
	r->cpu_finished = cpu_finished;
}

int main(int argc, char **argv)
{
	struct bench b = { .threads = 4, .batch = 256, .batches = 20 };
	uint32_t size = 224;
	int json = 0, check = 0;
	const char *dir = NULL, *dn = "f16", *mode = "both";
	const struct bench_opt opts[] = {
		{ "--threads", 'u', &b.threads }, { "--batch", 'u', &b.batch },
		{ "--size", 'u', &size },         { "--batches", 'u', &b.batches },
		{ "--staging", 'U', &b.staging }, { "--dtype", 's', &dn },
		{ "--mode", 's', &mode },         { "--host", '1', &b.host },
		{ "--json", '1', &json },         { "--check-device", '1', &check }
	};
	bench_parse(argc, argv, opts, &dir);
	char err[256];
	if (check) {
		if (gpu_pipeline_devices(err, sizeof err) < 1) {
			printf("SKIP: %s\n", err);
			return 77;
		}
		return 0;
	}
	if (!dir || b.threads < 1 || b.threads > 256 || b.batch < 1 || b.batches < 1 || size < 1) {
		fprintf(stderr,
			"usage: gpu_pipeline_bench DATASET [--threads T] [--batch B] "
			"[--size S] [--dtype u8|f16|f32] [--batches N] [--mode cpu|gpu|both] "
			"[--host] [--staging BYTES] [--json]\n");
		return 2;
	}
	if (strcmp(dn, "u8") && strcmp(dn, "f32"))
		dn = "f16";
	int dtype = !strcmp(dn, "u8")    ? FEEDER_DTYPE_U8
		    : !strcmp(dn, "f32") ? FEEDER_DTYPE_F32
					 : FEEDER_DTYPE_F16;
	int do_cpu = strcmp(mode, "gpu") != 0, do_gpu = strcmp(mode, "cpu") != 0;
	if (do_gpu && gpu_pipeline_devices(err, sizeof err) < 1) {
		fprintf(stderr, "SKIP: %s\n", err);
		return 77;
	}
	struct dsstore *ds;
	struct dsstore_txn *txn;
	if (dsstore_open(dir, &ds, err, sizeof err) || dsstore_txn_begin(ds, &txn, err, sizeof err))
		bench_fail("%s", err);
	const struct dsformat_header *h = dsstore_header(ds);
	if (h->kind != DSFORMAT_KIND_JPEG || h->samples == 0)
		bench_fail("%s is not a non-empty jpeg dataset", dir);
	/* Pointers into the map stay valid while txn is open; every thread
	 * reads them. */
	b.nsamples = h->samples;
	b.samples = calloc(b.nsamples, sizeof *b.samples);
	if (!b.samples)
		bench_fail("out of memory");
	for (uint64_t i = 0; i < b.nsamples; i++) {
		struct dsformat_sample s;
		if (dsstore_get_sample(txn, i, &s, &b.samples[i].jpeg, err, sizeof err))
			bench_fail("sample %llu: %s", (unsigned long long)i, err);
		b.samples[i].len = s.payload_len;
	}
	proto_opts_jpeg(&b.p, size, 1);
	b.p.dtype = dtype;

	struct result cpu = { 0 }, gpu = { 0 };
	if (do_cpu)
		run_cpu(&b, &cpu);
	if (do_gpu)
		run_gpu(&b, &gpu);
	if (json) {
		printf("{\"threads\": %u, \"batch\": %u, \"size\": %u, \"dtype\": \"%s\", "
		       "\"batches\": %u, \"host_copy\": %s",
		       b.threads, b.batch, size, dn, b.batches, b.host ? "true" : "false");
		if (do_cpu)
			printf(", \"cpu_images_per_s\": %.1f, \"cpu_core_s_per_1000\": %.3f",
			       cpu.images_per_s, cpu.core_s_per_1000);
		if (do_gpu)
			printf(", \"gpu_images_per_s\": %.1f, \"gpu_core_s_per_1000\": %.3f, "
			       "\"gpu_cpu_finished\": %u",
			       gpu.images_per_s, gpu.core_s_per_1000, gpu.cpu_finished);
		printf("}\n");
	} else {
		printf("%llu images, RandomResizedCrop %u + flip + normalize -> %s NCHW, batch %u, "
		       "%u threads, %u batches\n",
		       (unsigned long long)b.nsamples, size, dn, b.batch, b.threads, b.batches);
		if (do_cpu)
			printf("cpu  %9.1f images/s  %7.3f core-s / 1000 images\n",
			       cpu.images_per_s, cpu.core_s_per_1000);
		if (do_gpu)
			printf("gpu  %9.1f images/s  %7.3f core-s / 1000 images  (%s; %u samples "
			       "finished on the CPU)\n",
			       gpu.images_per_s, gpu.core_s_per_1000,
			       b.host ? "copied back to pinned host memory"
				      : "left in device memory",
			       gpu.cpu_finished);
		if (do_cpu && do_gpu)
			printf("gpu/cpu: %.2fx images/s, %.2fx CPU time per image\n",
			       gpu.images_per_s / cpu.images_per_s,
			       gpu.core_s_per_1000 / cpu.core_s_per_1000);
	}
	free(b.samples);
	dsstore_txn_end(txn);
	dsstore_close(ds);
	return 0;
}
