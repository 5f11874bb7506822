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
#include "protocol.h"
#include "dsstore.h"
#include "gpu_pipeline.h"
#include "jpeg_pipeline.h"
#include "status.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

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

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

static int start_threads(struct bench *b, pthread_t *t, void *(*fn)(void *))
{
	for (uint32_t i = 0; i < b->threads; i++)
		if (pthread_create(&t[i], NULL, fn, b)) {
			fprintf(stderr, "gpu_pipeline_bench: cannot start thread %u\n", i);
			exit(1);
		}
	return 0;
}

static int run_cpu(struct bench *b, struct result *r)
{
	size_t sb = jpeg_pipeline_sample_bytes(&b->p);
	b->out = malloc(sb * b->batch);
	if (!b->out) {
		fprintf(stderr, "gpu_pipeline_bench: out of memory\n");
		return 1;
	}
	pthread_t t[b->threads];
	/* warm-up: page in the dataset and the output */
	b->next = 0;
	b->total = (uint64_t)WARMUP * b->batch;
	start_threads(b, t, cpu_worker);
	for (uint32_t i = 0; i < b->threads; i++)
		pthread_join(t[i], NULL);
	b->next = 0;
	b->total = (uint64_t)b->batches * b->batch;
	double w0 = wall(), c0 = cpu_seconds();
	start_threads(b, t, cpu_worker);
	for (uint32_t i = 0; i < b->threads; i++)
		pthread_join(t[i], NULL);
	double w1 = wall(), c1 = cpu_seconds();
	free(b->out);
	if (b->failed) {
		fprintf(stderr, "gpu_pipeline_bench: %s\n", b->err);
		return 1;
	}
	r->images_per_s = b->total / (w1 - w0);
	r->core_s_per_1000 = (c1 - c0) / b->total * 1000;
	r->cpu_finished = 0;
	return 0;
}

static int run_gpu(struct bench *b, struct result *r)
{
	char err[256];
	for (int i = 0; i < 2; i++)
		if (gpu_pipeline_create_jpeg(&b->g[i], 0, &b->p, b->batch, b->staging, err,
					     sizeof err)) {
			fprintf(stderr, "gpu_pipeline_bench: %s\n", err);
			return 1;
		}
	size_t sb = gpu_pipeline_sample_bytes(b->g[0]);
	void *host[2] = { NULL, NULL };
	for (int i = 0; b->host && i < 2; i++)
		if (cudaMallocHost(&host[i], sb * b->batch) != cudaSuccess) {
			fprintf(stderr,
				"gpu_pipeline_bench: no pinned memory for the host batches\n");
			return 1;
		}
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
			w0 = wall();
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
	double w1 = wall(), c1 = cpu_seconds();
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
	if (rc || b->failed) {
		fprintf(stderr, "gpu_pipeline_bench: %s\n", rc ? err : b->err);
		return 1;
	}
	uint64_t images = (uint64_t)measured * b->batch;
	r->images_per_s = images / (w1 - w0);
	r->core_s_per_1000 = (c1 - c0) / images * 1000;
	r->cpu_finished = cpu_finished;
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: gpu_pipeline_bench DATASET [--threads T] [--batch B] [--size S] "
			"[--dtype u8|f16|f32] [--batches N] [--mode cpu|gpu|both] [--host] "
			"[--staging BYTES] [--json]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct bench b = { .threads = 4, .batch = 256, .batches = 20 };
	uint32_t size = 224;
	int dtype = FEEDER_DTYPE_F16, json = 0, do_cpu = 1, do_gpu = 1;
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--host")) {
			b.host = 1;
			continue;
		}
		if (!strcmp(a, "--json")) {
			json = 1;
			continue;
		}
		if (!strcmp(a, "--check-device")) {
			char why[256];
			if (gpu_pipeline_devices(why, sizeof why) < 1) {
				printf("SKIP: %s\n", why);
				return 77;
			}
			return 0;
		}
		if (a[0] != '-') {
			dir = a;
			continue;
		}
		if (i + 1 >= argc)
			return usage();
		const char *v = argv[++i];
		if (!strcmp(a, "--threads"))
			b.threads = (uint32_t)atoi(v);
		else if (!strcmp(a, "--batch"))
			b.batch = (uint32_t)atoi(v);
		else if (!strcmp(a, "--size"))
			size = (uint32_t)atoi(v);
		else if (!strcmp(a, "--batches"))
			b.batches = (uint32_t)atoi(v);
		else if (!strcmp(a, "--staging"))
			b.staging = (size_t)strtoull(v, NULL, 10);
		else if (!strcmp(a, "--dtype"))
			dtype = !strcmp(v, "u8")    ? FEEDER_DTYPE_U8
				: !strcmp(v, "f32") ? FEEDER_DTYPE_F32
						    : FEEDER_DTYPE_F16;
		else if (!strcmp(a, "--mode")) {
			do_cpu = strcmp(v, "gpu") != 0;
			do_gpu = strcmp(v, "cpu") != 0;
		} else
			return usage();
	}
	if (!dir || b.threads < 1 || b.threads > 256 || b.batch < 1 || b.batches < 1 || size < 1)
		return usage();
	char err[256];
	if (do_gpu && gpu_pipeline_devices(err, sizeof err) < 1) {
		fprintf(stderr, "SKIP: %s\n", err);
		return 77;
	}
	struct dsstore *ds;
	struct dsstore_txn *txn;
	if (dsstore_open(dir, &ds, err, sizeof err) ||
	    dsstore_txn_begin(ds, &txn, err, sizeof err)) {
		fprintf(stderr, "gpu_pipeline_bench: %s\n", err);
		return 1;
	}
	const struct dsformat_header *h = dsstore_header(ds);
	if (h->kind != DSFORMAT_KIND_JPEG || h->samples == 0) {
		fprintf(stderr, "gpu_pipeline_bench: %s is not a non-empty jpeg dataset\n", dir);
		return 1;
	}
	/* Pointers into the map stay valid while txn is open; every thread
	 * reads them. */
	b.nsamples = h->samples;
	b.samples = calloc(b.nsamples, sizeof *b.samples);
	if (!b.samples) {
		fprintf(stderr, "gpu_pipeline_bench: out of memory\n");
		return 1;
	}
	for (uint64_t i = 0; i < b.nsamples; i++) {
		struct dsformat_sample s;
		if (dsstore_get_sample(txn, i, &s, &b.samples[i].jpeg, err, sizeof err)) {
			fprintf(stderr, "gpu_pipeline_bench: sample %llu: %s\n",
				(unsigned long long)i, err);
			return 1;
		}
		b.samples[i].len = s.payload_len;
	}
	proto_opts_jpeg(&b.p, size, 1);
	b.p.dtype = dtype;

	struct result cpu = { 0 }, gpu = { 0 };
	if (do_cpu && run_cpu(&b, &cpu))
		return 1;
	if (do_gpu && run_gpu(&b, &gpu))
		return 1;
	const char *dn = dtype == FEEDER_DTYPE_U8    ? "u8"
			 : dtype == FEEDER_DTYPE_F32 ? "f32"
						     : "f16";
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
