/* xvec_gpu_bench.c — training throughput of the GPU x-vector trainer on synthetic batches.
 *
 * Builds the model (paper widths by default: 30-dim input, 512/1500/512,
 * batch 128, chunk 200) from a fresh CPU mirror, uploads a few random
 * batches once, and times training steps only (no data loading), so that
 * tests/bench/xvec_gpu.sh can compare noise on/off, precisions and PyTorch on
 * equal terms.
 *
 * The timed steps run in --blocks blocks. With --eps2 the blocks alternate
 * between the two noise levels in one process, on the same model and the same
 * autotuned GEMMs (ABBA order, so that a drift of the clocks falls on both
 * sides); each pair of neighbouring blocks gives one ratio of step times, and
 * the noise cost is their mean with its spread. A cost of 2 % is then
 * resolvable, which two separate runs (each autotuning on its own) are not.
 *
 * Prints one JSON object: samples_per_s, ms_per_step and its spread over
 * blocks for --eps (and with --eps2 the same for it, and noise_cost_pct with
 * its standard deviation and standard error over the pairs), loss.
 * Usage: xvec_gpu_bench [--batch N] [--frames N] [--feat N] [--width N]
 *   [--pool N] [--embed N] [--speakers N] [--eps X] [--eps2 X] [--dropout X]
 *   [--precision fp32|tf32|bf16] [--autotune] [--steps N] [--blocks N]
 *   [--warmup N] [--probe]
 * --steps is the number of timed steps per noise level, cut into --blocks
 * blocks. --probe only checks for a device. Exits 77 with the reason when
 * there is no CUDA device. */
#define BENCH_NAME "xvec_gpu_bench"
#include "bench_common.h"
#include "cuda_info.h"
#include "philox.h"
#include "xvec_cuda.h"
#include "xvec_model.h"

#include <cuda_runtime_api.h>
#include <math.h>

enum { NBATCH = 4, MAX_BLOCKS = 256 };

struct bench_args {
	struct xvec_options o;
	struct xvec_cuda_config cfg;
	int B, T, steps, blocks, warmup, probe, alternate;
	float eps2;
	const char *precision;
};

/* The training batches, on the device. */
struct bench_data {
	float *x[NBATCH];
	int32_t *labels[NBATCH];
};

/* Exits 2 on a usage error, saying what is wrong. */
static void parse_args(int argc, char **argv, struct bench_args *a)
{
	xvec_options_default(&a->o);
	a->o.num_speakers = 1000;
	xvec_cuda_config_default(&a->cfg);
	a->B = 128, a->T = 200, a->steps = 50, a->blocks = 1, a->warmup = 10;
	a->precision = "fp32";
	a->eps2 = NAN;
	const struct bench_opt opts[] = { { "--batch", 'i', &a->B },
					  { "--frames", 'i', &a->T },
					  { "--feat", 'i', &a->o.feat_dim },
					  { "--width", 'i', &a->o.width },
					  { "--pool", 'i', &a->o.pool_width },
					  { "--embed", 'i', &a->o.embed },
					  { "--speakers", 'i', &a->o.num_speakers },
					  { "--eps", 'f', &a->o.noise_eps },
					  { "--eps2", 'f', &a->eps2 },
					  { "--dropout", 'f', &a->o.dropout },
					  { "--precision", 's', &a->precision },
					  { "--steps", 'i', &a->steps },
					  { "--blocks", 'i', &a->blocks },
					  { "--warmup", 'i', &a->warmup },
					  { "--autotune", '1', &a->cfg.autotune },
					  { "--probe", '1', &a->probe } };
	bench_parse(argc, argv, opts, NULL);
	a->alternate = !isnan(a->eps2);
	if (a->steps < 1 || a->warmup < 0 || a->B < 1 || a->blocks < 1 || a->blocks > MAX_BLOCKS ||
	    a->blocks > a->steps || (a->alternate && a->blocks < 2))
		bench_exit(2,
			   "need steps, batch >= 1, 1 <= blocks <= steps (<= %d), and blocks >= 2 "
			   "with --eps2",
			   MAX_BLOCKS);
}

/* NBATCH random batches with labels cycling over the speakers. */
static void upload(const struct bench_args *a, struct bench_data *d)
{
	size_t nx = (size_t)a->B * a->o.feat_dim * a->T;
	float *x = malloc(sizeof(float) * nx);
	int32_t *labels = malloc(sizeof(int32_t) * a->B);
	int rc = !x || !labels;

	for (int k = 0; k < NBATCH && !rc; k++) {
		philox_normals(99, (uint64_t)k, 0, nx, x);
		for (int i = 0; i < a->B; i++)
			labels[i] = (int32_t)((k * a->B + i) % a->o.num_speakers);
		rc = cudaMalloc((void **)&d->x[k], sizeof(float) * nx) != cudaSuccess ||
		     cudaMalloc((void **)&d->labels[k], sizeof(int32_t) * a->B) != cudaSuccess ||
		     cudaMemcpy(d->x[k], x, sizeof(float) * nx, cudaMemcpyHostToDevice) !=
			     cudaSuccess ||
		     cudaMemcpy(d->labels[k], labels, sizeof(int32_t) * a->B,
				cudaMemcpyHostToDevice) != cudaSuccess;
	}
	free(x);
	free(labels);
	if (rc)
		bench_fail("cannot upload the batches");
}

/* The device idle: every stream the trainer may use, not only its own. */
static void idle(const char *when)
{
	cudaError_t e = cudaDeviceSynchronize();

	if (e != cudaSuccess)
		bench_fail("the device failed %s: %s", when, cudaGetErrorString(e));
}

/* Wall seconds of n training steps, from an idle device to an idle device. */
static void run_block(struct xvec_cuda *g, const struct bench_args *a, const struct bench_data *d,
		      int n, long *step, double *seconds)
{
	char err[512];

	idle("before a block");
	double t0 = bench_clock(CLOCK_MONOTONIC);
	for (int s = 0; s < n; s++, (*step)++) {
		int k = (int)(*step % NBATCH);

		if (xvec_cuda_train_step(g, d->x[k], d->labels[k], a->B, a->T, err, sizeof(err)))
			bench_fail("%s", err);
	}
	idle("in a block");
	*seconds = bench_clock(CLOCK_MONOTONIC) - t0;
}

/* Mean and sample standard deviation of v[0..n). */
static void mean_sd(const double *v, int n, double *mean, double *sd)
{
	double s = 0, q = 0;

	for (int i = 0; i < n; i++)
		s += v[i];
	*mean = s / n;
	for (int i = 0; i < n; i++)
		q += (v[i] - *mean) * (v[i] - *mean);
	*sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

/* "key": samples/s over all blocks, ms per step (mean, sd over blocks). */
static void print_level(const char *sfx, const struct bench_args *a, const double *sec, int n,
			int block_steps)
{
	double ms[MAX_BLOCKS], total = 0, mean, sd;

	for (int i = 0; i < n; i++) {
		ms[i] = 1e3 * sec[i] / block_steps;
		total += sec[i];
	}
	mean_sd(ms, n, &mean, &sd);
	printf(", \"samples_per_s%s\": %.1f, \"ms_per_step%s\": %.4f, \"ms_per_step_sd%s\": %.4f",
	       sfx, (double)a->B * block_steps * n / total, sfx, mean, sfx, sd);
}

/* The noise cost: step time of eps2 over eps, pair by pair, in %. */
static void print_cost(const double *sa, const double *sb, int n)
{
	double r[MAX_BLOCKS], mean, sd;

	for (int i = 0; i < n; i++)
		r[i] = 100.0 * (sb[i] / sa[i] - 1.0);
	mean_sd(r, n, &mean, &sd);
	printf(", \"noise_cost_pct\": %.3f, \"noise_cost_sd_pct\": %.3f, \"noise_cost_se_pct\": %.3f, "
	       "\"pairs\": %d",
	       mean, sd, sd / sqrt(n), n);
}

/* The timed blocks; sa[i] (eps) and sb[i] (eps2) are the seconds of pair i. */
static void run_blocks(struct xvec_cuda *g, const struct bench_args *a, const struct bench_data *d,
		       int block_steps, double *sa, double *sb)
{
	long step = 0;
	double warm;

	if (a->warmup)
		run_block(g, a, d, a->warmup, &step, &warm);
	for (int i = 0; i < a->blocks; i++) {
		/* ABBA: pair i runs eps first when i is even, eps2 first when odd */
		int second_first = a->alternate && (i & 1);

		for (int h = 0; h < (a->alternate ? 2 : 1); h++) {
			int use2 = h ^ second_first;

			xvec_cuda_set_noise_eps(g, use2 ? a->eps2 : a->o.noise_eps);
			run_block(g, a, d, block_steps, &step, use2 ? &sb[i] : &sa[i]);
		}
	}
}

int main(int argc, char **argv)
{
	struct bench_args a = { 0 };
	struct bench_data d = { 0 };
	struct xvec_model *m;
	struct xvec_cuda *g;
	struct xvec_cuda_metrics mt;
	struct cuda_info_device dev;
	char err[512], why[256];
	double sa[MAX_BLOCKS], sb[MAX_BLOCKS];

	parse_args(argc, argv, &a);
	if (cuda_info_devices(&dev, why, sizeof(why)) < 1)
		bench_exit(77, "%s", why);
	if (a.probe) {
		printf("%s\n", dev.name);
		return 0;
	}
	if (xvec_cuda_parse_precision(a.precision, &a.cfg.precision, err, sizeof(err)))
		bench_exit(2, "%s", err);
	a.cfg.log = stderr;
	if (xvec_model_create(&m, &a.o, 1, XVEC_CONTEXT + 1, err, sizeof(err)) ||
	    xvec_cuda_create(&g, m, &a.cfg, a.B, a.T, err, sizeof(err)))
		bench_fail("%s", err);
	int block_steps = (a.steps + a.blocks - 1) / a.blocks;
	upload(&a, &d);
	run_blocks(g, &a, &d, block_steps, sa, sb);
	if (xvec_cuda_metrics(g, &mt, 1, err, sizeof(err)))
		bench_fail("%s", err);
	printf("{\"device\": \"%s\", \"precision\": \"%s\", \"batch\": %d, \"frames\": %d, "
	       "\"blocks\": %d, \"block_steps\": %d, \"steps\": %d, \"eps\": %g",
	       dev.name, xvec_cuda_precision_name(a.cfg.precision), a.B, a.T, a.blocks, block_steps,
	       block_steps * a.blocks, a.o.noise_eps);
	print_level("", &a, sa, a.blocks, block_steps);
	if (a.alternate) {
		printf(", \"eps2\": %g", a.eps2);
		print_level("2", &a, sb, a.blocks, block_steps);
		print_cost(sa, sb, a.blocks);
	}
	printf(", \"loss\": %.5f}\n", mt.loss);
	for (int k = 0; k < NBATCH; k++) {
		cudaFree(d.x[k]);
		cudaFree(d.labels[k]);
	}
	xvec_cuda_destroy(g);
	xvec_model_destroy(m);
	return 0;
}
