/* xvec_gpu_bench.c — training throughput of the GPU x-vector trainer on synthetic batches.
 *
 * Builds the model (paper widths by default: 30-dim input, 512/1500/512,
 * batch 128, chunk 200) from a fresh CPU mirror, uploads a few random
 * batches once, and times training steps only (no data loading), so that
 * tests/bench/xvec_gpu.sh can compare noise on/off, precisions and PyTorch on
 * equal terms. Prints one JSON object: samples_per_s, ms_per_step, loss.
 * Usage: xvec_gpu_bench [--batch N] [--frames N] [--feat N] [--width N]
 *   [--pool N] [--embed N] [--speakers N] [--eps X] [--dropout X]
 *   [--precision fp32|tf32|bf16] [--autotune] [--steps N] [--warmup N] [--probe]
 * --probe only checks for a device. Exits 77 with the reason when there is
 * no CUDA device. */
#include "cuda_info.h"
#include "philox.h"
#include "xvec_cuda.h"
#include "xvec_model.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	struct xvec_options o;
	struct xvec_cuda_config cfg;
	struct xvec_model *m;
	struct xvec_cuda *g;
	struct xvec_cuda_metrics mt;
	struct cuda_info_device dev;
	char err[512], why[256];
	int B = 128, T = 200, steps = 50, warmup = 10, probe = 0;
	const char *precision = "fp32";

	xvec_options_default(&o);
	o.num_speakers = 1000;
	xvec_cuda_config_default(&cfg);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--autotune")) {
			cfg.autotune = 1;
			continue;
		}
		if (!strcmp(a, "--probe")) {
			probe = 1;
			continue;
		}
		if (!v) {
			fprintf(stderr, "xvec_gpu_bench: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--batch")) B = atoi(v);
		else if (!strcmp(a, "--frames")) T = atoi(v);
		else if (!strcmp(a, "--feat")) o.feat_dim = atoi(v);
		else if (!strcmp(a, "--width")) o.width = atoi(v);
		else if (!strcmp(a, "--pool")) o.pool_width = atoi(v);
		else if (!strcmp(a, "--embed")) o.embed = atoi(v);
		else if (!strcmp(a, "--speakers")) o.num_speakers = atoi(v);
		else if (!strcmp(a, "--eps")) o.noise_eps = strtof(v, NULL);
		else if (!strcmp(a, "--dropout")) o.dropout = strtof(v, NULL);
		else if (!strcmp(a, "--precision")) precision = v;
		else if (!strcmp(a, "--steps")) steps = atoi(v);
		else if (!strcmp(a, "--warmup")) warmup = atoi(v);
		else {
			fprintf(stderr, "xvec_gpu_bench: unknown option %s\n", a);
			return 2;
		}
	}
	if (cuda_info_devices(&dev, why, sizeof(why)) < 1) {
		fprintf(stderr, "xvec_gpu_bench: %s\n", why);
		return 77;
	}
	if (probe) {
		printf("%s\n", dev.name);
		return 0;
	}
	if (steps < 1 || warmup < 0 || B < 1) {
		fprintf(stderr, "xvec_gpu_bench: steps, batch must be positive\n");
		return 2;
	}
	if (xvec_cuda_parse_precision(precision, &cfg.precision, err, sizeof(err))) {
		fprintf(stderr, "xvec_gpu_bench: %s\n", err);
		return 2;
	}
	cfg.log = stderr;
	if (xvec_model_create(&m, &o, 1, XVEC_CONTEXT + 1, err, sizeof(err)) ||
	    xvec_cuda_create(&g, m, &cfg, B, T, err, sizeof(err))) {
		fprintf(stderr, "xvec_gpu_bench: %s\n", err);
		return 1;
	}

	enum { NBATCH = 4 };
	size_t nx = (size_t)B * o.feat_dim * T;
	float *x = malloc(sizeof(float) * nx), *d_x[NBATCH];
	int32_t *labels = malloc(sizeof(int32_t) * B), *d_l[NBATCH];
	for (int k = 0; k < NBATCH; k++) {
		philox_normals(99, (uint64_t)k, 0, nx, x);
		for (int i = 0; i < B; i++)
			labels[i] = (int32_t)((k * B + i) % o.num_speakers);
		if (cudaMalloc((void **)&d_x[k], sizeof(float) * nx) != cudaSuccess ||
		    cudaMalloc((void **)&d_l[k], sizeof(int32_t) * B) != cudaSuccess ||
		    cudaMemcpy(d_x[k], x, sizeof(float) * nx, cudaMemcpyHostToDevice) != cudaSuccess ||
		    cudaMemcpy(d_l[k], labels, sizeof(int32_t) * B, cudaMemcpyHostToDevice) != cudaSuccess) {
			fprintf(stderr, "xvec_gpu_bench: cannot upload the batches\n");
			return 1;
		}
	}
	cudaDeviceSynchronize();

	double t0 = 0;
	for (int s = 0; s < warmup + steps; s++) {
		if (s == warmup) {
			if (xvec_cuda_metrics(g, &mt, 1, err, sizeof(err))) {
				fprintf(stderr, "xvec_gpu_bench: %s\n", err);
				return 1;
			}
			t0 = now_s();
		}
		if (xvec_cuda_train_step(g, d_x[s % NBATCH], d_l[s % NBATCH], B, T, err, sizeof(err))) {
			fprintf(stderr, "xvec_gpu_bench: %s\n", err);
			return 1;
		}
	}
	if (xvec_cuda_metrics(g, &mt, 1, err, sizeof(err))) {
		fprintf(stderr, "xvec_gpu_bench: %s\n", err);
		return 1;
	}
	double dt = now_s() - t0;
	printf("{\"device\": \"%s\", \"precision\": \"%s\", \"eps\": %g, \"batch\": %d, \"frames\": %d, "
	       "\"steps\": %d, \"ms_per_step\": %.4f, \"samples_per_s\": %.1f, \"loss\": %.5f}\n",
	       dev.name, xvec_cuda_precision_name(cfg.precision), o.noise_eps, B, T, steps,
	       1e3 * dt / steps, (double)B * steps / dt, mt.loss);
	for (int k = 0; k < NBATCH; k++) {
		cudaFree(d_x[k]);
		cudaFree(d_l[k]);
	}
	xvec_cuda_destroy(g);
	xvec_model_destroy(m);
	free(x);
	free(labels);
	return 0;
}
