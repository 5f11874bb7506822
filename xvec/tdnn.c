/* tdnn.c — x-vector TDNN layers on the CPU (see tdnn.h for layouts and contracts).
 *
 * Reductions over a channel (batch norm, pooling) sum each contiguous frame
 * row in float and the rows in double: the row loops vectorize, and the
 * result does not drift with batch size. ReLU is written `a < 0 ? 0 : a` so
 * that a NaN passes through (as in PyTorch) instead of being hidden as 0:
 * the trainer then sees a non-finite loss and refuses the step.
 *
 * With OpenMP, the elementwise and per-channel loops run in parallel, and so
 * do the GEMMs: OpenBLAS is set to one thread and each OpenMP thread runs
 * whole GEMMs (an utterance's frame layer, or a block of output rows or
 * columns). Two thread pools on the same cores (OpenBLAS's, yielding in a
 * spin while OpenMP's runs, and the other way round) cost about a sixth of a
 * step on two cores; the per-utterance GEMMs are also too small for
 * OpenBLAS to split well. Every output element and every channel reduction
 * is computed by exactly one thread in a fixed order (a GEMM's element sums
 * over its inner dimension in the same order whatever block it is in), so
 * results are bit-identical for any number of threads. */
#include "tdnn.h"
#include "philox.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#include <pthread.h>
#endif

/* Parallel loops only where there is enough work to pay for the threads. */
#define TDNN_PAR_MIN 262144
#ifdef _OPENMP
#define TDNN_PRAGMA(x) _Pragma(#x)
#define TDNN_PARALLEL_FOR(work) TDNN_PRAGMA(omp parallel for schedule(static) if ((work) >= TDNN_PAR_MIN))
#else
#define TDNN_PARALLEL_FOR(work)
#endif

/* GEMMs of at least this many multiply-adds are split over threads. */
#define TDNN_GEMM_PAR_MIN 4000000
/* Blocks a split GEMM is cut into (a multiple of likely thread counts). */
#define TDNN_BLOCKS 8

#ifdef _OPENMP
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_single(void)
{
	openblas_set_num_threads(1);
}
#define TDNN_BLAS_SETUP() pthread_once(&blas_once, blas_single)
#define TDNN_PAR(cond) TDNN_PRAGMA(omp parallel for schedule(static) if (cond))
#else
#define TDNN_BLAS_SETUP() ((void)0)
#define TDNN_PAR(cond)
#endif

static int rounding = TDNN_ROUND_NONE;

void tdnn_set_gemm_rounding(int mode)
{
	rounding = mode;
}

int tdnn_gemm_rounding(void)
{
	return rounding;
}

/* Mantissa bits a rounding mode drops from a float. */
static uint32_t round_drop(int mode)
{
	switch (mode) {
	case TDNN_ROUND_TF32:
	case TDNN_ROUND_TF32_TRUNC:
		return 13;
	case TDNN_ROUND_BF16:
		return 16;
	default:
		return 0;
	}
}

float tdnn_round(float v, int mode)
{
	uint32_t u, drop = round_drop(mode);
	if (!drop)
		return v;
	memcpy(&u, &v, 4);
	if ((u & 0x7F800000u) == 0x7F800000u)
		return v;
	if (mode != TDNN_ROUND_TF32_TRUNC)
		u += ((1u << (drop - 1)) - 1) + ((u >> drop) & 1);
	u &= ~((1u << drop) - 1);
	memcpy(&v, &u, 4);
	return v;
}

/* A rounded copy of the rows x cols operand at p (leading dimension ld), or
 * p itself without rounding (or without memory: the product is then exact,
 * never wrong). *tmp is what to free. */
static const float *rounded(const float *p, int rows, int cols, int ld, float **tmp)
{
	*tmp = NULL;
	if (rounding == TDNN_ROUND_NONE || rows == 0 || cols == 0)
		return p;
	size_t n = (size_t)(rows - 1) * ld + cols;
	float *c = malloc(sizeof(float) * n);
	if (!c)
		return p;
	for (size_t i = 0; i < n; i++)
		c[i] = tdnn_round(p[i], rounding);
	*tmp = c;
	return c;
}

/* cblas_sgemm, row-major, alpha 1, with the inputs rounded as the mode says. */
static void gemm(enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K,
		 const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
	float *ta_tmp, *tb_tmp;
	const float *a =
		rounded(A, ta == CblasNoTrans ? M : K, ta == CblasNoTrans ? K : M, lda, &ta_tmp);
	const float *b =
		rounded(B, tb == CblasNoTrans ? K : N, tb == CblasNoTrans ? N : K, ldb, &tb_tmp);
	cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, a, lda, b, ldb, beta, C, ldc);
	free(ta_tmp);
	free(tb_tmp);
}

/* Row range [*lo, *hi) of block i of n rows cut into TDNN_BLOCKS. */
static void block_range(int i, int n, int *lo, int *hi)
{
	*lo = (int)((long)n * i / TDNN_BLOCKS);
	*hi = (int)((long)n * (i + 1) / TDNN_BLOCKS);
}

int tdnn_context_left(const int *off, int k)
{
	return k > 0 && off[0] < 0 ? -off[0] : 0;
}

int tdnn_context_right(const int *off, int k)
{
	return k > 0 && off[k - 1] > 0 ? off[k - 1] : 0;
}

void tdnn_affine_forward(const float *x, int B, int D, int T, const int *off, int K, const float *W,
			 const float *bias, int H, float *y)
{
	int left = tdnn_context_left(off, K);
	int Tp = T - left - tdnn_context_right(off, K);

	TDNN_BLAS_SETUP();
	TDNN_PAR((double)B * H * Tp * D * K >= TDNN_GEMM_PAR_MIN)
	for (int b = 0; b < B; b++) {
		float *yb = y + (size_t)b * H * Tp;

		for (int h = 0; h < H; h++)
			for (int t = 0; t < Tp; t++)
				yb[(size_t)h * Tp + t] = bias[h];
		for (int k = 0; k < K; k++)
			gemm(CblasNoTrans, CblasNoTrans, H, Tp, D, W + (size_t)k * D, K * D,
			     x + (size_t)b * D * T + off[k] + left, T, 1.0f, yb, Tp);
	}
}

void tdnn_affine_backward(const float *x, const float *dy, int B, int D, int T, const int *off,
			  int K, const float *W, int H, float *dx, float *dW, float *db)
{
	int left = tdnn_context_left(off, K);
	int Tp = T - left - tdnn_context_right(off, K);
	int par = (double)B * H * Tp * D * K >= TDNN_GEMM_PAR_MIN;

	TDNN_BLAS_SETUP();
	if (dx)
		memset(dx, 0, sizeof(float) * (size_t)B * D * T);
	/* db and dW: blocks of output rows, each summing over b and k in order. */
	TDNN_PAR(par)
	for (int i = 0; i < TDNN_BLOCKS; i++) {
		int h0, h1;

		block_range(i, H, &h0, &h1);
		if (h0 == h1)
			continue;
		for (int b = 0; b < B; b++) {
			const float *dyb = dy + (size_t)b * H * Tp;
			const float *xb = x + (size_t)b * D * T;

			for (int h = h0; h < h1; h++) {
				const float *row = dyb + (size_t)h * Tp;
				float s = 0.0f;

				for (int t = 0; t < Tp; t++)
					s += row[t];
				db[h] += s;
			}
			for (int k = 0; k < K; k++)
				gemm(CblasNoTrans, CblasTrans, h1 - h0, D, Tp,
				     dyb + (size_t)h0 * Tp, Tp, xb + off[k] + left, T, 1.0f,
				     dW + (size_t)h0 * K * D + (size_t)k * D, K * D);
		}
	}
	if (!dx)
		return;
	/* dx: each utterance's own. */
	TDNN_PAR(par)
	for (int b = 0; b < B; b++) {
		const float *dyb = dy + (size_t)b * H * Tp;

		for (int k = 0; k < K; k++)
			gemm(CblasTrans, CblasNoTrans, D, Tp, H, W + (size_t)k * D, K * D, dyb, Tp,
			     1.0f, dx + (size_t)b * D * T + off[k] + left, T);
	}
}

/* Sum over (B, L) of channel c of a (B, C, L) tensor. */
static double tdnn_channel_sum(const float *v, int B, int C, int L, int c)
{
	double s = 0.0;

	for (int b = 0; b < B; b++) {
		const float *row = v + ((size_t)b * C + c) * L;
		float p = 0.0f;

		for (int t = 0; t < L; t++)
			p += row[t];
		s += p;
	}
	return s;
}

/* One channel's pieces of the training-mode batch-norm, shared by the local
 * pass (fused per channel) and the sync pass (sums over ranks in between). */
static void bn_relu_channel(const float *a, float *r, int B, int C, int L, int c)
{
	for (int b = 0; b < B; b++) {
		size_t o = ((size_t)b * C + c) * L;

		for (int t = 0; t < L; t++)
			r[o + t] = a[o + t] < 0.0f ? 0.0f : a[o + t];
	}
}

/* Sum over (B, L) of (r - m)^2 in channel c. */
static double bn_channel_ss(const float *r, int B, int C, int L, int c, float m)
{
	double ss = 0.0;

	for (int b = 0; b < B; b++) {
		const float *row = r + ((size_t)b * C + c) * L;
		float p = 0.0f;

		for (int t = 0; t < L; t++)
			p += (row[t] - m) * (row[t] - m);
		ss += p;
	}
	return ss;
}

/* From channel c's mean m and squared deviations ss over N values: its
 * invstd, running statistics and output. */
static void bn_channel_finish(const float *r, int B, int C, int L, int c, float m, double ss,
			      double N, const float *gamma, const float *beta, float *running_mean,
			      float *running_var, float *mean, float *invstd, float *y)
{
	double var = ss / N;
	float is = (float)(1.0 / sqrt(var + TDNN_BN_EPS));
	double unbiased = N > 1 ? ss / (N - 1) : var;

	mean[c] = m;
	invstd[c] = is;
	running_mean[c] = (1.0f - TDNN_BN_MOMENTUM) * running_mean[c] + TDNN_BN_MOMENTUM * m;
	running_var[c] =
		(1.0f - TDNN_BN_MOMENTUM) * running_var[c] + TDNN_BN_MOMENTUM * (float)unbiased;

	float g = gamma[c] * is, be = beta[c];
	for (int b = 0; b < B; b++) {
		size_t o = ((size_t)b * C + c) * L;

		for (int t = 0; t < L; t++)
			y[o + t] = (r[o + t] - m) * g + be;
	}
}

void tdnn_relu_bn_train(const float *a, int B, int C, int L, const float *gamma, const float *beta,
			float *running_mean, float *running_var, float *r, float *mean,
			float *invstd, float *y)
{
	size_t n = (size_t)B * C * L;
	double N = (double)B * L;

	TDNN_PARALLEL_FOR(n)
	for (int c = 0; c < C; c++) {
		bn_relu_channel(a, r, B, C, L, c);
		float m = (float)(tdnn_channel_sum(r, B, C, L, c) / N);
		bn_channel_finish(r, B, C, L, c, m, bn_channel_ss(r, B, C, L, c, m), N, gamma, beta,
				  running_mean, running_var, mean, invstd, y);
	}
}

/* Sum v (n doubles) over the ranks; on failure keep the first error and
 * leave v as it is (the step is then refused by the model). */
static void tdnn_dp_sum(struct tdnn_dp *dp, double *v, size_t n)
{
	int rc = dp->sum(dp->ctx, v, n);
	if (rc && !dp->failed)
		dp->failed = rc;
}

static int tdnn_dp_sync(const struct tdnn_dp *dp)
{
	return dp && dp->sync_bn && dp->world > 1;
}

void tdnn_relu_bn_train_dp(const float *a, int B, int C, int L, const float *gamma,
			   const float *beta, float *running_mean, float *running_var, float *r,
			   float *mean, float *invstd, float *y, struct tdnn_dp *dp)
{
	if (!tdnn_dp_sync(dp)) {
		tdnn_relu_bn_train(a, B, C, L, gamma, beta, running_mean, running_var, r, mean,
				   invstd, y);
		return;
	}
	/* Sync batch-norm: the same per-channel steps as one process takes,
	 * with the sums of every rank (then the count) between them. */
	double *s = dp->buf;
	TDNN_PARALLEL_FOR((size_t)B * C * L)
	for (int c = 0; c < C; c++) {
		bn_relu_channel(a, r, B, C, L, c);
		s[c] = tdnn_channel_sum(r, B, C, L, c);
	}
	s[C] = (double)B * L;
	tdnn_dp_sum(dp, s, (size_t)C + 1);
	double N = s[C];
	TDNN_PARALLEL_FOR((size_t)B * C * L)
	for (int c = 0; c < C; c++) {
		mean[c] = (float)(s[c] / N);
		s[C + 1 + c] = bn_channel_ss(r, B, C, L, c, mean[c]);
	}
	tdnn_dp_sum(dp, s + C + 1, (size_t)C);
	TDNN_PARALLEL_FOR((size_t)B * C * L)
	for (int c = 0; c < C; c++)
		bn_channel_finish(r, B, C, L, c, mean[c], s[C + 1 + c], N, gamma, beta,
				  running_mean, running_var, mean, invstd, y);
}

void tdnn_relu_bn_eval(const float *a, int B, int C, int L, const float *gamma, const float *beta,
		       const float *running_mean, const float *running_var, float *y)
{
	TDNN_PARALLEL_FOR((size_t)B * C * L)
	for (int c = 0; c < C; c++) {
		float g = gamma[c] / sqrtf(running_var[c] + TDNN_BN_EPS);
		float m = running_mean[c], be = beta[c];

		for (int b = 0; b < B; b++) {
			size_t o = ((size_t)b * C + c) * L;

			for (int t = 0; t < L; t++) {
				float v = a[o + t] < 0.0f ? 0.0f : a[o + t];
				y[o + t] = (v - m) * g + be;
			}
		}
	}
}

/* Channel c's sums of dy and of dy * xhat over (B, L). */
static void bn_channel_dsums(const float *r, const float *dy, int B, int C, int L, int c, float m,
			     float is, double *sdy, double *sdyx)
{
	double s1 = 0.0, s2 = 0.0;

	for (int b = 0; b < B; b++) {
		size_t o = ((size_t)b * C + c) * L;
		float p = 0.0f, q = 0.0f;

		for (int t = 0; t < L; t++) {
			p += dy[o + t];
			q += dy[o + t] * (r[o + t] - m) * is;
		}
		s1 += p;
		s2 += q;
	}
	*sdy = s1;
	*sdyx = s2;
}

/* Channel c's da from those sums over N values, through the ReLU. */
static void bn_channel_da(const float *r, const float *dy, float *da, int B, int C, int L, int c,
			  float m, float is, float gamma, float N, float s1, float s2)
{
	float k = gamma * is / N;

	for (int b = 0; b < B; b++) {
		size_t o = ((size_t)b * C + c) * L;

		for (int t = 0; t < L; t++) {
			float xhat = (r[o + t] - m) * is;
			float d = k * (N * dy[o + t] - s1 - xhat * s2);
			da[o + t] = r[o + t] > 0.0f ? d : 0.0f;
		}
	}
}

void tdnn_relu_bn_backward(const float *r, int B, int C, int L, const float *gamma,
			   const float *mean, const float *invstd, const float *dy, float *da,
			   float *dgamma, float *dbeta)
{
	float N = (float)B * L;

	TDNN_PARALLEL_FOR((size_t)B * C * L)
	for (int c = 0; c < C; c++) {
		double sdy, sdyx;

		bn_channel_dsums(r, dy, B, C, L, c, mean[c], invstd[c], &sdy, &sdyx);
		dbeta[c] += (float)sdy;
		dgamma[c] += (float)sdyx;
		bn_channel_da(r, dy, da, B, C, L, c, mean[c], invstd[c], gamma[c], N, (float)sdy,
			      (float)sdyx);
	}
}

void tdnn_relu_bn_backward_dp(const float *r, int B, int C, int L, const float *gamma,
			      const float *mean, const float *invstd, const float *dy, float *da,
			      float *dgamma, float *dbeta, struct tdnn_dp *dp)
{
	if (!tdnn_dp_sync(dp)) {
		tdnn_relu_bn_backward(r, B, C, L, gamma, mean, invstd, dy, da, dgamma, dbeta);
		return;
	}
	double *s = dp->buf;
	TDNN_PARALLEL_FOR((size_t)B * C * L)
	for (int c = 0; c < C; c++) {
		bn_channel_dsums(r, dy, B, C, L, c, mean[c], invstd[c], &s[c], &s[C + c]);
		/* this rank's part of dbeta and dgamma; the gradient average adds the rest */
		dbeta[c] += (float)s[c];
		dgamma[c] += (float)s[C + c];
	}
	s[2 * C] = (double)B * L;
	tdnn_dp_sum(dp, s, 2 * (size_t)C + 1);
	float N = (float)s[2 * C];
	TDNN_PARALLEL_FOR((size_t)B * C * L)
	for (int c = 0; c < C; c++)
		bn_channel_da(r, dy, da, B, C, L, c, mean[c], invstd[c], gamma[c], N, (float)s[c],
			      (float)s[C + c]);
}

uint64_t tdnn_dropout_subseq(uint64_t step, int layer)
{
	return step + ((uint64_t)(layer + 1) << 40);
}

/* The counter of element i of a local tensor of samples of per elements:
 * its place in the global batch (struct tdnn_dp); i itself for one process. */
static inline uint64_t tdnn_counter(size_t i, size_t per, const struct tdnn_dp *dp)
{
	if (!dp || dp->world <= 1)
		return i;
	size_t j = i / per;
	return ((uint64_t)j * (uint64_t)dp->world + (uint64_t)dp->rank) * per + i % per;
}

/* Chunks of at most 256 elements that stay inside one sample, so that each
 * chunk's counters are consecutive. */
static inline size_t tdnn_chunk(size_t i, size_t n, size_t per)
{
	size_t m = n - i < 256 ? n - i : 256, left = per - i % per;
	return m < left ? m : left;
}

/* Multiply v by the dropout mask (0 or 1 / (1 - p)) of elements [0, n). */
static void tdnn_dropout_apply(float *v, size_t n, size_t per, float p, uint64_t seed,
			       uint64_t subseq, const struct tdnn_dp *dp)
{
	float scale = 1.0f / (1.0f - p);

	if (!dp || dp->world <= 1)
		per = n;
	TDNN_PARALLEL_FOR(n)
	for (size_t i = 0; i < n; i += 256) {
		for (size_t k = i, end = n - i < 256 ? n : i + 256; k < end;) {
			size_t m = tdnn_chunk(k, end, per);
			float u[256];

			philox_uniforms(seed, subseq, tdnn_counter(k, per, dp), m, u);
			for (size_t j = 0; j < m; j++)
				v[k + j] = u[j] > p ? v[k + j] * scale : 0.0f;
			k += m;
		}
	}
}

void tdnn_dropout(float *y, size_t n, float p, uint64_t seed, uint64_t subseq)
{
	tdnn_dropout_dp(y, n, n, p, seed, subseq, NULL);
}

void tdnn_dropout_backward(float *dy, size_t n, float p, uint64_t seed, uint64_t subseq)
{
	tdnn_dropout_backward_dp(dy, n, n, p, seed, subseq, NULL);
}

void tdnn_dropout_dp(float *y, size_t n, size_t per, float p, uint64_t seed, uint64_t subseq,
		     const struct tdnn_dp *dp)
{
	if (p > 0.0f)
		tdnn_dropout_apply(y, n, per, p, seed, subseq, dp);
}

void tdnn_dropout_backward_dp(float *dy, size_t n, size_t per, float p, uint64_t seed,
			      uint64_t subseq, const struct tdnn_dp *dp)
{
	if (p > 0.0f)
		tdnn_dropout_apply(dy, n, per, p, seed, subseq, dp);
}

void tdnn_noise_add(const float *x, float *out, size_t n, float eps, uint64_t seed, uint64_t subseq)
{
	tdnn_noise_add_dp(x, out, n, n, eps, seed, subseq, NULL);
}

void tdnn_noise_add_dp(const float *x, float *out, size_t n, size_t per, float eps, uint64_t seed,
		       uint64_t subseq, const struct tdnn_dp *dp)
{
	if (eps == 0.0f) {
		if (out != x)
			memcpy(out, x, sizeof(float) * n);
		return;
	}
	if (!dp || dp->world <= 1)
		per = n;
	/* normals cost ~20x a multiply-add: parallel from a smaller size */
	TDNN_PARALLEL_FOR(n * 16)
	for (size_t i = 0; i < n; i += 256) {
		for (size_t k = i, end = n - i < 256 ? n : i + 256; k < end;) {
			size_t m = tdnn_chunk(k, end, per);
			float z[256];

			philox_normals(seed, subseq, tdnn_counter(k, per, dp), m, z);
			for (size_t j = 0; j < m; j++)
				out[k + j] = x[k + j] + eps * z[j];
			k += m;
		}
	}
}

void tdnn_stats_pool_forward(const float *x, int B, int C, int T, float *out)
{
	TDNN_PARALLEL_FOR((size_t)B * C * T)
	for (int b = 0; b < B; b++)
		for (int c = 0; c < C; c++) {
			const float *row = x + ((size_t)b * C + c) * T;
			float s = 0.0f, ss = 0.0f;

			for (int t = 0; t < T; t++)
				s += row[t];
			float m = s / (float)T;
			for (int t = 0; t < T; t++)
				ss += (row[t] - m) * (row[t] - m);
			out[(size_t)b * 2 * C + c] = m;
			out[(size_t)b * 2 * C + C + c] = sqrtf(ss / (float)T + TDNN_POOL_EPS);
		}
}

void tdnn_stats_pool_backward(const float *x, int B, int C, int T, const float *out,
			      const float *dout, float *dx)
{
	TDNN_PARALLEL_FOR((size_t)B * C * T)
	for (int b = 0; b < B; b++)
		for (int c = 0; c < C; c++) {
			size_t o = ((size_t)b * C + c) * T;
			float m = out[(size_t)b * 2 * C + c];
			float s = out[(size_t)b * 2 * C + C + c];
			float gm = dout[(size_t)b * 2 * C + c] / (float)T;
			float gs = dout[(size_t)b * 2 * C + C + c] / ((float)T * s);

			for (int t = 0; t < T; t++)
				dx[o + t] = gm + gs * (x[o + t] - m);
		}
}

void tdnn_dense_forward(const float *x, int B, int nin, const float *W, const float *b, int nout,
			float *y)
{
	TDNN_BLAS_SETUP();
	for (int i = 0; i < B; i++)
		memcpy(y + (size_t)i * nout, b, sizeof(float) * nout);
	/* Blocks of output columns. */
	TDNN_PAR((double)B * nin * nout >= TDNN_GEMM_PAR_MIN)
	for (int i = 0; i < TDNN_BLOCKS; i++) {
		int o0, o1;

		block_range(i, nout, &o0, &o1);
		if (o0 < o1)
			gemm(CblasNoTrans, CblasTrans, B, o1 - o0, nin, x, nin,
			     W + (size_t)o0 * nin, nin, 1.0f, y + o0, nout);
	}
}

void tdnn_dense_backward(const float *x, const float *dy, int B, int nin, const float *W, int nout,
			 float *dx, float *dW, float *db)
{
	int par = (double)B * nin * nout >= TDNN_GEMM_PAR_MIN;

	TDNN_BLAS_SETUP();
	for (int i = 0; i < B; i++)
		for (int o = 0; o < nout; o++)
			db[o] += dy[(size_t)i * nout + o];
	/* dW: blocks of its rows (outputs); dx: blocks of its columns (inputs). */
	TDNN_PAR(par)
	for (int i = 0; i < TDNN_BLOCKS; i++) {
		int o0, o1;

		block_range(i, nout, &o0, &o1);
		if (o0 < o1)
			gemm(CblasTrans, CblasNoTrans, o1 - o0, nin, B, dy + o0, nout, x, nin, 1.0f,
			     dW + (size_t)o0 * nin, nin);
	}
	if (!dx)
		return;
	TDNN_PAR(par)
	for (int i = 0; i < TDNN_BLOCKS; i++) {
		int j0, j1;

		block_range(i, nin, &j0, &j1);
		if (j0 < j1)
			gemm(CblasNoTrans, CblasNoTrans, B, j1 - j0, nout, dy, nout, W + j0, nin,
			     0.0f, dx + j0, nin);
	}
}

double tdnn_softmax_xent(const float *logits, const int32_t *labels, int B, int S, float *probs,
			 float *dlogits, int *correct)
{
	double loss = 0.0;
	int ok = 0;

	for (int i = 0; i < B; i++) {
		const float *z = logits + (size_t)i * S;
		float *p = probs + (size_t)i * S;
		int arg = 0;
		float mx = z[0];

		for (int s = 1; s < S; s++)
			if (z[s] > mx) {
				mx = z[s];
				arg = s;
			}
		double sum = 0.0;
		for (int s = 0; s < S; s++)
			sum += exp((double)z[s] - mx);
		double lse = mx + log(sum);
		if (labels)
			loss += lse - z[labels[i]];
		for (int s = 0; s < S; s++)
			p[s] = (float)exp((double)z[s] - lse);
		if (labels && arg == labels[i])
			ok++;
		if (dlogits && labels) {
			float *d = dlogits + (size_t)i * S;

			for (int s = 0; s < S; s++)
				d[s] = (p[s] - (s == labels[i] ? 1.0f : 0.0f)) / (float)B;
		}
	}
	*correct = ok;
	return loss / B;
}
