/* tdnn_cuda.cu — GPU kernels of the x-vector TDNN (see tdnn_cuda.h for layouts).
 *
 * Each kernel follows its CPU twin in tdnn.c formula by formula, so that the
 * tests can compare them and a reader can check one against the other.
 * Reductions over a channel run one thread block per channel and add in
 * double; pooling runs one warp per (channel, utterance) row.
 *
 * Random numbers: the Philox4x32-10 bijection is cuRAND's own device
 * function curand_Philox4x32_10 (curand_philox4x32_x.h, part of the
 * device API behind curand_kernel.h), fed the counter
 * and key that philox.c uses (counter = {block lo, block hi, subseq lo,
 * subseq hi}, key = {seed lo, seed hi}), which is also what
 * curand_init(seed, subseq, 4 * block) sets up for curandStatePhilox4_32_10_t.
 * The 32-bit words are therefore bit for bit those of philox.c. The float
 * mappings are written with explicitly rounded operations (__fmul_rn,
 * __fadd_rn), which nvcc never fuses into an FMA, so uniforms — and hence
 * dropout masks — equal philox_uniform exactly. Normals use logf and sinf
 * (CUDA: at most 1 and 2 ulp from the exact value; glibc is closer), so a
 * normal may differ from philox_normal in its last bits; cuRAND's
 * curand_normal itself uses the faster __sincosf. We take the accurate
 * functions: the noise costs little next to the GEMMs. */
#include "tdnn_cuda.h"

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <curand_philox4x32_x.h>
#include <math.h>

extern "C" {
#include "tdnn.h"
}

#define TC_THREADS 256
#define TC_WARPS_PER_BLOCK (TC_THREADS / 32)
/* philox.c's PHILOX_2POW32_INV and PHILOX_2POW32_INV_2PI (cuRAND's values). */
#define TC_2POW32_INV 2.3283064e-10f
#define TC_2POW32_INV_2PI 1.4629181e-09f

static unsigned tc_blocks(size_t n)
{
	size_t b = (n + TC_THREADS - 1) / TC_THREADS;

	if (b < 1)
		b = 1;
	return b > 1048576 ? 1048576u : (unsigned)b;
}

__device__ static inline uint4 tc_philox_block(uint64_t seed, uint64_t subseq, uint64_t block)
{
	uint4 ctr = make_uint4((uint32_t)block, (uint32_t)(block >> 32), (uint32_t)subseq,
			       (uint32_t)(subseq >> 32));
	uint2 key = make_uint2((uint32_t)seed, (uint32_t)(seed >> 32));

	return curand_Philox4x32_10(ctr, key);
}

__device__ static inline float tc_word_uniform(uint32_t w)
{
	return __fadd_rn(__fmul_rn((float)w, TC_2POW32_INV), TC_2POW32_INV / 2.0f);
}

__device__ static inline float tc_uniform(uint64_t seed, uint64_t subseq, uint64_t i)
{
	uint4 w = tc_philox_block(seed, subseq, i / 4);
	unsigned k = (unsigned)(i % 4);
	uint32_t word = k == 0 ? w.x : k == 1 ? w.y : k == 2 ? w.z : w.w;

	return tc_word_uniform(word);
}

__device__ static inline float tc_normal(uint64_t seed, uint64_t subseq, uint64_t i)
{
	uint4 w = tc_philox_block(seed, subseq, i);
	float u = tc_word_uniform(w.x);
	float v = __fadd_rn(__fmul_rn((float)w.y, TC_2POW32_INV_2PI), TC_2POW32_INV_2PI / 2.0f);

	return __fmul_rn(sqrtf(-2.0f * logf(u)), sinf(v));
}

/* x + eps * N(0,1) at CPU index i, rounded like tdnn_noise_add; x when eps == 0. */
__device__ static inline float tc_noisy(float x, float eps, uint64_t seed, uint64_t subseq,
					uint64_t i)
{
	if (eps == 0.0f)
		return x;
	return __fadd_rn(x, __fmul_rn(eps, tc_normal(seed, subseq, i)));
}

/* Sum a and b over the block; every thread gets the totals. blockDim.x must
 * be a multiple of 32. */
__device__ static void tc_block_sum2(double *a, double *b)
{
	__shared__ double sa[32], sb[32];
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	double x = *a, y = *b;

	for (int o = 16; o > 0; o >>= 1) {
		x += __shfl_down_sync(0xffffffffu, x, o);
		y += __shfl_down_sync(0xffffffffu, y, o);
	}
	__syncthreads(); /* the previous call's readers are done with sa/sb */
	if (lane == 0) {
		sa[w] = x;
		sb[w] = y;
	}
	__syncthreads();
	if (w == 0) {
		x = lane < nw ? sa[lane] : 0.0;
		y = lane < nw ? sb[lane] : 0.0;
		for (int o = 16; o > 0; o >>= 1) {
			x += __shfl_down_sync(0xffffffffu, x, o);
			y += __shfl_down_sync(0xffffffffu, y, o);
		}
		if (lane == 0) {
			sa[0] = x;
			sb[0] = y;
		}
	}
	__syncthreads();
	*a = sa[0];
	*b = sb[0];
}

__device__ static inline float tc_warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* ---- layout ---------------------------------------------------------- */

__global__ static void tc_to_cbt(const float *x, int B, int C, int T, float *out)
{
	size_t n = (size_t)B * C * T;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t t = i % T, row = i / T; /* i indexes out (C, B, T) */
		size_t b = row % B, c = row / B;

		out[i] = x[(b * C + c) * T + t];
	}
}

__global__ static void tc_from_cbt(const float *x, int B, int C, int T, float *out)
{
	size_t n = (size_t)B * C * T;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t t = i % T, row = i / T; /* i indexes out (B, C, T) */
		size_t c = row % C, b = row / C;

		out[i] = x[(c * B + b) * T + t];
	}
}

extern "C" void tdnn_cuda_to_cbt(const float *x, int B, int C, int T, float *out,
				 cudaStream_t stream)
{
	tc_to_cbt<<<tc_blocks((size_t)B * C * T), TC_THREADS, 0, stream>>>(x, B, C, T, out);
}

extern "C" void tdnn_cuda_from_cbt(const float *x, int B, int C, int T, float *out,
				   cudaStream_t stream)
{
	tc_from_cbt<<<tc_blocks((size_t)B * C * T), TC_THREADS, 0, stream>>>(x, B, C, T, out);
}

struct tc_context {
	int k, left, tp;
	int off[TDNN_CUDA_MAX_CONTEXT];
};

static struct tc_context tc_make_context(const int *off, int K, int T)
{
	struct tc_context c;

	c.k = K < TDNN_CUDA_MAX_CONTEXT ? K : TDNN_CUDA_MAX_CONTEXT;
	for (int i = 0; i < TDNN_CUDA_MAX_CONTEXT; i++)
		c.off[i] = i < c.k ? off[i] : 0;
	c.left = tdnn_context_left(off, c.k);
	c.tp = T - c.left - tdnn_context_right(off, c.k);
	return c;
}

template <typename Out>
__device__ static inline Out tc_out(float v);
template <>
__device__ inline float tc_out<float>(float v)
{
	return v;
}
template <>
__device__ inline __nv_bfloat16 tc_out<__nv_bfloat16>(float v)
{
	return __float2bfloat16_rn(v);
}

template <typename Out>
__global__ static void tc_splice(const float *x, int D, int B, int T, struct tc_context ctx, Out *S)
{
	size_t cols = (size_t)B * ctx.tp, n = (size_t)ctx.k * D * cols;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t row = i / cols, col = i % cols;
		int k = (int)(row / D), d = (int)(row % D);
		size_t b = col / ctx.tp, t = col % ctx.tp;

		S[i] = tc_out<Out>(x[(size_t)d * B * T + b * T + t + ctx.left + ctx.off[k]]);
	}
}

__global__ static void tc_unsplice(const float *dS, int D, int B, int T, struct tc_context ctx,
				   float *dx)
{
	size_t n = (size_t)D * B * T, cols = (size_t)B * ctx.tp;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t d = i / ((size_t)B * T), rem = i % ((size_t)B * T);
		size_t b = rem / T;
		int t = (int)(rem % T);
		float s = 0.0f;

		for (int k = 0; k < ctx.k; k++) {
			int tt = t - ctx.left - ctx.off[k];

			if (tt >= 0 && tt < ctx.tp)
				s += dS[((size_t)k * D + d) * cols + b * ctx.tp + tt];
		}
		dx[i] = s;
	}
}

extern "C" void tdnn_cuda_splice(const float *x, int D, int B, int T, const int *off, int K,
				 float *S, cudaStream_t stream)
{
	struct tc_context c = tc_make_context(off, K, T);

	tc_splice<float><<<tc_blocks((size_t)c.k * D * B * c.tp), TC_THREADS, 0, stream>>>(x, D, B,
											   T, c, S);
}

extern "C" void tdnn_cuda_splice_bf16(const float *x, int D, int B, int T, const int *off, int K,
				      void *S, cudaStream_t stream)
{
	struct tc_context c = tc_make_context(off, K, T);

	tc_splice<__nv_bfloat16><<<tc_blocks((size_t)c.k * D * B * c.tp), TC_THREADS, 0, stream>>>(
		x, D, B, T, c, (__nv_bfloat16 *)S);
}

extern "C" void tdnn_cuda_unsplice(const float *dS, int D, int B, int T, const int *off, int K,
				   float *dx, cudaStream_t stream)
{
	struct tc_context c = tc_make_context(off, K, T);

	tc_unsplice<<<tc_blocks((size_t)D * B * T), TC_THREADS, 0, stream>>>(dS, D, B, T, c, dx);
}

/* ---- ReLU + batch norm + dropout --------------------------------------- */

/* Element j (= b * L + t) of channel c: its address in the device layout
 * and its index in the CPU's (B, C, L) layout, for local row b taken as row
 * b * world + rank of the global batch (tdnn.c's tdnn_counter). */
__device__ static inline size_t tc_addr(int c, size_t j, size_t N, int C, int cm)
{
	return cm ? (size_t)c * N + j : j * C + c;
}

__device__ static inline uint64_t tc_row(size_t b, struct tdnn_cuda_rows rw)
{
	return (uint64_t)b * (uint64_t)rw.world + (uint64_t)rw.rank;
}

__device__ static inline uint64_t tc_cpu_index(int c, size_t j, int C, int L,
					       struct tdnn_cuda_rows rw)
{
	size_t b = j / L, t = j % L;

	return (tc_row(b, rw) * C + c) * L + t;
}

/* The pieces of training-mode batch norm of channel c (one block), shared by
 * the fused kernel and the data-parallel kernels that sum over the ranks
 * between them, so that both compute the same formulas. Every thread of the
 * block must call each (they synchronize). */

/* r = relu(a + bias) in place; the block's sum of r. */
__device__ static double tc_bn_relu_sum(float *a, const float *bias, int c, size_t N, int C, int cm)
{
	float bi = bias ? bias[c] : 0.0f;
	double s = 0.0, unused = 0.0;

	for (size_t j = threadIdx.x; j < N; j += blockDim.x) {
		size_t i = tc_addr(c, j, N, C, cm);
		float v = a[i] + bi;

		v = v < 0.0f ? 0.0f : v; /* a NaN passes, as in tdnn.c */
		a[i] = v;
		s += v;
	}
	tc_block_sum2(&s, &unused);
	return s;
}

/* The block's sum of squared deviations of r from m. */
__device__ static double tc_bn_ss(const float *r, int c, size_t N, int C, int cm, float m)
{
	double ss = 0.0, unused = 0.0;

	for (size_t j = threadIdx.x; j < N; j += blockDim.x) {
		float d = r[tc_addr(c, j, N, C, cm)] - m;

		ss += d * d;
	}
	tc_block_sum2(&ss, &unused);
	return ss;
}

/* From the mean m and squared deviations ss over Nd values (this rank's N,
 * or all ranks'): invstd, the running statistics and y (then dropout). */
__device__ static void tc_bn_finish(const float *r, int c, size_t N, int C, int L, int cm, float m,
				    double ss, double Nd, const float *gamma, const float *beta,
				    float *rmean, float *rvar, float *mean, float *invstd, float *y,
				    float p, uint64_t seed, uint64_t subseq,
				    struct tdnn_cuda_rows rw)
{
	double var = ss / Nd;
	float is = (float)(1.0 / sqrt(var + TDNN_BN_EPS));
	if (threadIdx.x == 0) {
		double unbiased = Nd > 1.0 ? ss / (Nd - 1.0) : var;

		mean[c] = m;
		invstd[c] = is;
		rmean[c] = (1.0f - TDNN_BN_MOMENTUM) * rmean[c] + TDNN_BN_MOMENTUM * m;
		rvar[c] = (1.0f - TDNN_BN_MOMENTUM) * rvar[c] + TDNN_BN_MOMENTUM * (float)unbiased;
	}
	float g = gamma[c] * is, be = beta[c];
	float scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
	for (size_t j = threadIdx.x; j < N; j += blockDim.x) {
		size_t i = tc_addr(c, j, N, C, cm);
		float v = (r[i] - m) * g + be;

		if (p > 0.0f)
			v = tc_uniform(seed, subseq, tc_cpu_index(c, j, C, L, rw)) > p ? v * scale
										       : 0.0f;
		y[i] = v;
	}
}

__global__ static void tc_relu_bn_train(float *a, const float *bias, int B, int C, int L, int cm,
					const float *gamma, const float *beta, float *rmean,
					float *rvar, float *mean, float *invstd, float *y, float p,
					uint64_t seed, uint64_t subseq, struct tdnn_cuda_rows rw)
{
	int c = blockIdx.x;
	size_t N = (size_t)B * L;
	double s = tc_bn_relu_sum(a, bias, c, N, C, cm);
	float m = (float)(s / (double)N);
	double ss = tc_bn_ss(a, c, N, C, cm, m);

	tc_bn_finish(a, c, N, C, L, cm, m, ss, (double)N, gamma, beta, rmean, rvar, mean, invstd, y,
		     p, seed, subseq, rw);
}

/* Sync batch norm in three kernels around two sums over the ranks, with
 * s as tdnn.c's dp->buf: s[c] the sum of channel c, s[C] the count, then
 * s[C + 1 + c] its squared deviations from the global mean. */
__global__ static void tc_bn_sync_sum(float *a, const float *bias, int B, int C, int L, int cm,
				      double *s)
{
	int c = blockIdx.x;
	size_t N = (size_t)B * L;
	double v = tc_bn_relu_sum(a, bias, c, N, C, cm);

	if (threadIdx.x == 0) {
		s[c] = v;
		if (c == 0)
			s[C] = (double)N;
	}
}

__global__ static void tc_bn_sync_ss(const float *r, int B, int C, int L, int cm, double *s)
{
	int c = blockIdx.x;
	double v = tc_bn_ss(r, c, (size_t)B * L, C, cm, (float)(s[c] / s[C]));

	if (threadIdx.x == 0)
		s[C + 1 + c] = v;
}

__global__ static void tc_bn_sync_finish(const float *r, int B, int C, int L, int cm,
					 const float *gamma, const float *beta, float *rmean,
					 float *rvar, float *mean, float *invstd, float *y, float p,
					 uint64_t seed, uint64_t subseq, struct tdnn_cuda_rows rw,
					 const double *s)
{
	int c = blockIdx.x;

	tc_bn_finish(r, c, (size_t)B * L, C, L, cm, (float)(s[c] / s[C]), s[C + 1 + c], s[C], gamma,
		     beta, rmean, rvar, mean, invstd, y, p, seed, subseq, rw);
}

__global__ static void tc_relu_bn_eval(const float *a, const float *bias, int B, int C, int L,
				       int cm, const float *gamma, const float *beta,
				       const float *rmean, const float *rvar, float *y)
{
	size_t N = (size_t)B * L, n = N * C;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		int c = cm ? (int)(i / N) : (int)(i % C);
		float g = gamma[c] / sqrtf(rvar[c] + TDNN_BN_EPS);
		float v = a[i] + (bias ? bias[c] : 0.0f);

		v = v < 0.0f ? 0.0f : v;
		y[i] = (v - rmean[c]) * g + beta[c];
	}
}

/* The pieces of the backward pass of channel c (one block), shared as the
 * forward's are. First the dropout mask on dy (in place) and the block's
 * sums of dy and of dy * xhat. */
__device__ static void tc_bn_dsums(const float *r, int c, size_t N, int C, int L, int cm, float m,
				   float is, float *dy, float p, uint64_t seed, uint64_t subseq,
				   struct tdnn_cuda_rows rw, double *sdy, double *sdyx)
{
	float scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
	double s1 = 0.0, s2 = 0.0;

	for (size_t j = threadIdx.x; j < N; j += blockDim.x) {
		size_t i = tc_addr(c, j, N, C, cm);
		float g = dy[i];

		if (p > 0.0f) {
			g = tc_uniform(seed, subseq, tc_cpu_index(c, j, C, L, rw)) > p ? g * scale
										       : 0.0f;
			dy[i] = g;
		}
		s1 += g;
		s2 += g * (r[i] - m) * is;
	}
	tc_block_sum2(&s1, &s2);
	*sdy = s1;
	*sdyx = s2;
}

/* Then da in place of dy, through the ReLU, from the sums s1, s2 over Nf
 * values; the block's sum of da (the bias gradient). */
__device__ static double tc_bn_da(const float *r, int c, size_t N, int C, int cm, float m, float is,
				  float gamma, float Nf, float s1, float s2, float *dy)
{
	float k = gamma * is / Nf;
	double sb = 0.0, unused = 0.0;

	for (size_t j = threadIdx.x; j < N; j += blockDim.x) {
		size_t i = tc_addr(c, j, N, C, cm);
		float xhat = (r[i] - m) * is;
		float d = k * (Nf * dy[i] - s1 - xhat * s2);

		d = r[i] > 0.0f ? d : 0.0f;
		dy[i] = d;
		sb += d;
	}
	tc_block_sum2(&sb, &unused);
	return sb;
}

__global__ static void tc_relu_bn_backward(const float *r, int B, int C, int L, int cm,
					   const float *gamma, const float *mean,
					   const float *invstd, float *dy, float *dgamma,
					   float *dbeta, float *dbias, float p, uint64_t seed,
					   uint64_t subseq, struct tdnn_cuda_rows rw)
{
	int c = blockIdx.x;
	size_t N = (size_t)B * L;
	float m = mean[c], is = invstd[c];
	double sdy, sdyx;

	tc_bn_dsums(r, c, N, C, L, cm, m, is, dy, p, seed, subseq, rw, &sdy, &sdyx);
	if (threadIdx.x == 0) {
		dbeta[c] = (float)sdy;
		dgamma[c] = (float)sdyx;
	}
	double sb =
		tc_bn_da(r, c, N, C, cm, m, is, gamma[c], (float)N, (float)sdy, (float)sdyx, dy);
	if (threadIdx.x == 0 && dbias)
		dbias[c] = (float)sb;
}

/* Sync batch norm's backward around one sum over the ranks: s[c] the sum
 * of dy, s[C + c] of dy * xhat, s[2C] the count (tdnn.c's layout). dgamma
 * and dbeta get this rank's part; the gradient average adds the others'. */
__global__ static void tc_bn_sync_dsums(const float *r, int B, int C, int L, int cm,
					const float *mean, const float *invstd, float *dy,
					float *dgamma, float *dbeta, float p, uint64_t seed,
					uint64_t subseq, struct tdnn_cuda_rows rw, double *s)
{
	int c = blockIdx.x;
	size_t N = (size_t)B * L;
	double sdy, sdyx;

	tc_bn_dsums(r, c, N, C, L, cm, mean[c], invstd[c], dy, p, seed, subseq, rw, &sdy, &sdyx);
	if (threadIdx.x == 0) {
		dbeta[c] = (float)sdy;
		dgamma[c] = (float)sdyx;
		s[c] = sdy;
		s[C + c] = sdyx;
		if (c == 0)
			s[2 * C] = (double)N;
	}
}

__global__ static void tc_bn_sync_da(const float *r, int B, int C, int L, int cm,
				     const float *gamma, const float *mean, const float *invstd,
				     float *dy, float *dbias, const double *s)
{
	int c = blockIdx.x;
	double sb = tc_bn_da(r, c, (size_t)B * L, C, cm, mean[c], invstd[c], gamma[c],
			     (float)s[2 * C], (float)s[c], (float)s[C + c], dy);

	if (threadIdx.x == 0 && dbias)
		dbias[c] = (float)sb;
}

static const struct tdnn_cuda_rows tc_one = { 0, 1 };

extern "C" void tdnn_cuda_relu_bn_train(float *a, const float *bias, int B, int C, int L,
					int channel_major, const float *gamma, const float *beta,
					float *running_mean, float *running_var, float *mean,
					float *invstd, float *y, float p, uint64_t seed,
					uint64_t subseq, cudaStream_t stream)
{
	tdnn_cuda_relu_bn_train_dp(a, bias, B, C, L, channel_major, gamma, beta, running_mean,
				   running_var, mean, invstd, y, p, seed, subseq, tc_one, stream);
}

extern "C" void tdnn_cuda_relu_bn_train_dp(float *a, const float *bias, int B, int C, int L,
					   int channel_major, const float *gamma, const float *beta,
					   float *running_mean, float *running_var, float *mean,
					   float *invstd, float *y, float p, uint64_t seed,
					   uint64_t subseq, struct tdnn_cuda_rows rows,
					   cudaStream_t stream)
{
	tc_relu_bn_train<<<C, TC_THREADS, 0, stream>>>(a, bias, B, C, L, channel_major, gamma, beta,
						       running_mean, running_var, mean, invstd, y,
						       p, seed, subseq, rows);
}

extern "C" void tdnn_cuda_bn_sync_sum(float *a, const float *bias, int B, int C, int L,
				      int channel_major, double *s, cudaStream_t stream)
{
	tc_bn_sync_sum<<<C, TC_THREADS, 0, stream>>>(a, bias, B, C, L, channel_major, s);
}

extern "C" void tdnn_cuda_bn_sync_ss(const float *r, int B, int C, int L, int channel_major,
				     double *s, cudaStream_t stream)
{
	tc_bn_sync_ss<<<C, TC_THREADS, 0, stream>>>(r, B, C, L, channel_major, s);
}

extern "C" void tdnn_cuda_bn_sync_finish(const float *r, int B, int C, int L, int channel_major,
					 const float *gamma, const float *beta, float *running_mean,
					 float *running_var, float *mean, float *invstd, float *y,
					 float p, uint64_t seed, uint64_t subseq,
					 struct tdnn_cuda_rows rows, const double *s,
					 cudaStream_t stream)
{
	tc_bn_sync_finish<<<C, TC_THREADS, 0, stream>>>(r, B, C, L, channel_major, gamma, beta,
							running_mean, running_var, mean, invstd, y,
							p, seed, subseq, rows, s);
}

extern "C" void tdnn_cuda_relu_bn_eval(const float *a, const float *bias, int B, int C, int L,
				       int channel_major, const float *gamma, const float *beta,
				       const float *running_mean, const float *running_var,
				       float *y, cudaStream_t stream)
{
	tc_relu_bn_eval<<<tc_blocks((size_t)B * C * L), TC_THREADS, 0, stream>>>(
		a, bias, B, C, L, channel_major, gamma, beta, running_mean, running_var, y);
}

extern "C" void tdnn_cuda_relu_bn_backward(const float *r, int B, int C, int L, int channel_major,
					   const float *gamma, const float *mean,
					   const float *invstd, float *dy, float *dgamma,
					   float *dbeta, float *dbias, float p, uint64_t seed,
					   uint64_t subseq, cudaStream_t stream)
{
	tdnn_cuda_relu_bn_backward_dp(r, B, C, L, channel_major, gamma, mean, invstd, dy, dgamma,
				      dbeta, dbias, p, seed, subseq, tc_one, stream);
}

extern "C" void tdnn_cuda_relu_bn_backward_dp(const float *r, int B, int C, int L,
					      int channel_major, const float *gamma,
					      const float *mean, const float *invstd, float *dy,
					      float *dgamma, float *dbeta, float *dbias, float p,
					      uint64_t seed, uint64_t subseq,
					      struct tdnn_cuda_rows rows, cudaStream_t stream)
{
	tc_relu_bn_backward<<<C, TC_THREADS, 0, stream>>>(r, B, C, L, channel_major, gamma, mean,
							  invstd, dy, dgamma, dbeta, dbias, p, seed,
							  subseq, rows);
}

extern "C" void tdnn_cuda_bn_sync_dsums(const float *r, int B, int C, int L, int channel_major,
					const float *mean, const float *invstd, float *dy,
					float *dgamma, float *dbeta, float p, uint64_t seed,
					uint64_t subseq, struct tdnn_cuda_rows rows, double *s,
					cudaStream_t stream)
{
	tc_bn_sync_dsums<<<C, TC_THREADS, 0, stream>>>(r, B, C, L, channel_major, mean, invstd, dy,
						       dgamma, dbeta, p, seed, subseq, rows, s);
}

extern "C" void tdnn_cuda_bn_sync_da(const float *r, int B, int C, int L, int channel_major,
				     const float *gamma, const float *mean, const float *invstd,
				     float *dy, float *dbias, const double *s, cudaStream_t stream)
{
	tc_bn_sync_da<<<C, TC_THREADS, 0, stream>>>(r, B, C, L, channel_major, gamma, mean, invstd,
						    dy, dbias, s);
}

/* ---- noise + statistics pooling -------------------------------------- */

__global__ static void tc_pool_forward(const float *x, int B, int C, int T, float eps,
				       uint64_t seed, uint64_t subseq, struct tdnn_cuda_rows rw,
				       float *out)
{
	size_t row = (size_t)blockIdx.x * TC_WARPS_PER_BLOCK + threadIdx.x / 32;
	int lane = threadIdx.x & 31;

	if (row >= (size_t)B * C)
		return; /* the whole warp leaves together: row is per warp */
	size_t c = row / B, b = row % B;
	const float *xr = x + row * T;
	uint64_t base = (tc_row(b, rw) * C + c) * T;
	float s = 0.0f, ss = 0.0f;

	for (int t = lane; t < T; t += 32)
		s += tc_noisy(xr[t], eps, seed, subseq, base + t);
	s = tc_warp_sum(s);
	float m = s / (float)T;
	/* the second pass regenerates the noise rather than keeping it */
	for (int t = lane; t < T; t += 32) {
		float d = tc_noisy(xr[t], eps, seed, subseq, base + t) - m;

		ss += d * d;
	}
	ss = tc_warp_sum(ss);
	if (lane == 0) {
		out[b * 2 * C + c] = m;
		out[b * 2 * C + C + c] = sqrtf(ss / (float)T + TDNN_POOL_EPS);
	}
}

__global__ static void tc_pool_backward(const float *x, int B, int C, int T, float eps,
					uint64_t seed, uint64_t subseq, struct tdnn_cuda_rows rw,
					const float *out, const float *dout, float *dx)
{
	size_t n = (size_t)B * C * T;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t row = i / T, t = i % T;
		size_t c = row / B, b = row % B;
		size_t o = b * 2 * C;
		float m = out[o + c], sd = out[o + C + c];
		float gm = dout[o + c] / (float)T;
		float gs = dout[o + C + c] / ((float)T * sd);
		float v = tc_noisy(x[i], eps, seed, subseq, (tc_row(b, rw) * C + c) * T + t);

		dx[i] = gm + gs * (v - m);
	}
}

extern "C" void tdnn_cuda_pool_forward(const float *x, int B, int C, int T, float eps,
				       uint64_t seed, uint64_t subseq, float *out,
				       cudaStream_t stream)
{
	tdnn_cuda_pool_forward_dp(x, B, C, T, eps, seed, subseq, tc_one, out, stream);
}

extern "C" void tdnn_cuda_pool_forward_dp(const float *x, int B, int C, int T, float eps,
					  uint64_t seed, uint64_t subseq,
					  struct tdnn_cuda_rows rows, float *out,
					  cudaStream_t stream)
{
	size_t n = (size_t)B * C;
	unsigned blocks = (unsigned)((n + TC_WARPS_PER_BLOCK - 1) / TC_WARPS_PER_BLOCK);

	tc_pool_forward<<<blocks, TC_THREADS, 0, stream>>>(x, B, C, T, eps, seed, subseq, rows,
							   out);
}

extern "C" void tdnn_cuda_pool_backward(const float *x, int B, int C, int T, float eps,
					uint64_t seed, uint64_t subseq, const float *out,
					const float *dout, float *dx, cudaStream_t stream)
{
	tdnn_cuda_pool_backward_dp(x, B, C, T, eps, seed, subseq, tc_one, out, dout, dx, stream);
}

extern "C" void tdnn_cuda_pool_backward_dp(const float *x, int B, int C, int T, float eps,
					   uint64_t seed, uint64_t subseq,
					   struct tdnn_cuda_rows rows, const float *out,
					   const float *dout, float *dx, cudaStream_t stream)
{
	tc_pool_backward<<<tc_blocks((size_t)B * C * T), TC_THREADS, 0, stream>>>(
		x, B, C, T, eps, seed, subseq, rows, out, dout, dx);
}

__global__ static void tc_normals(float *out, size_t n, uint64_t seed, uint64_t subseq,
				  uint64_t first)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		out[i] = tc_normal(seed, subseq, first + i);
}

__global__ static void tc_uniforms(float *out, size_t n, uint64_t seed, uint64_t subseq,
				   uint64_t first)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		out[i] = tc_uniform(seed, subseq, first + i);
}

extern "C" void tdnn_cuda_normals(float *out, size_t n, uint64_t seed, uint64_t subseq,
				  uint64_t first, cudaStream_t stream)
{
	tc_normals<<<tc_blocks(n), TC_THREADS, 0, stream>>>(out, n, seed, subseq, first);
}

extern "C" void tdnn_cuda_uniforms(float *out, size_t n, uint64_t seed, uint64_t subseq,
				   uint64_t first, cudaStream_t stream)
{
	tc_uniforms<<<tc_blocks(n), TC_THREADS, 0, stream>>>(out, n, seed, subseq, first);
}

/* ---- softmax cross-entropy ------------------------------------------- */

__global__ static void tc_softmax_xent(const float *logits, const float *bias,
				       const int32_t *labels, int B, int S, float *probs,
				       float *dlogits, double *row_loss, int *row_ok,
				       struct tdnn_cuda_acc *acc)
{
	__shared__ float smx[TC_THREADS];
	__shared__ int sarg[TC_THREADS];
	int b = blockIdx.x, tid = threadIdx.x;
	const float *z = logits + (size_t)b * S;
	float mx = -INFINITY;
	int arg = S;

	/* arg-max, the first index on ties as the CPU's strict '>' scan */
	for (int s = tid; s < S; s += blockDim.x) {
		float v = z[s] + (bias ? bias[s] : 0.0f);

		if (v > mx || arg == S) {
			mx = v;
			arg = s;
		}
	}
	smx[tid] = mx;
	sarg[tid] = arg;
	__syncthreads();
	for (int o = blockDim.x / 2; o > 0; o >>= 1) {
		if (tid < o) {
			float v = smx[tid + o];
			int a = sarg[tid + o];

			if (a < S &&
			    (sarg[tid] == S || v > smx[tid] || (v == smx[tid] && a < sarg[tid]))) {
				smx[tid] = v;
				sarg[tid] = a;
			}
		}
		__syncthreads();
	}
	mx = smx[0];
	arg = sarg[0];

	double sum = 0.0, unused = 0.0;
	for (int s = tid; s < S; s += blockDim.x)
		sum += exp((double)(z[s] + (bias ? bias[s] : 0.0f)) - mx);
	tc_block_sum2(&sum, &unused);
	double lse = mx + log(sum);
	int lab = labels ? labels[b] : -1;
	int bad = labels && (lab < 0 || lab >= S);
	if (bad)
		lab = -1;
	for (int s = tid; s < S; s += blockDim.x) {
		float p = (float)exp((double)(z[s] + (bias ? bias[s] : 0.0f)) - lse);

		probs[(size_t)b * S + s] = p;
		if (dlogits && labels)
			dlogits[(size_t)b * S + s] = (p - (s == lab ? 1.0f : 0.0f)) / (float)B;
	}
	if (tid == 0) {
		row_loss[b] = lab >= 0 ? lse - (double)(z[lab] + (bias ? bias[lab] : 0.0f)) : 0.0;
		row_ok[b] = lab >= 0 && arg == lab;
		if (bad && acc)
			acc->bad_label = 1;
	}
}

/* One block: add a batch's rows to the accumulator. */
__global__ static void tc_accumulate(const double *row_loss, const int *row_ok, int B,
				     struct tdnn_cuda_acc *acc)
{
	double l = 0.0, k = 0.0;

	for (int i = threadIdx.x; i < B; i += blockDim.x) {
		l += row_loss[i];
		k += row_ok[i];
	}
	tc_block_sum2(&l, &k);
	if (threadIdx.x == 0) {
		acc->last_loss = l / B;
		acc->loss_sum += l / B;
		acc->last_correct = (int)k;
		acc->last_rows = B;
		acc->correct += (long long)k;
		acc->rows += B;
		acc->steps += 1;
	}
}

extern "C" void tdnn_cuda_softmax_xent(const float *logits, const float *bias,
				       const int32_t *labels, int B, int S, float *probs,
				       float *dlogits, double *row_loss, int *row_ok,
				       struct tdnn_cuda_acc *acc, cudaStream_t stream)
{
	tc_softmax_xent<<<B, TC_THREADS, 0, stream>>>(logits, bias, labels, B, S, probs, dlogits,
						      row_loss, row_ok, acc);
	if (acc)
		tc_accumulate<<<1, TC_THREADS, 0, stream>>>(row_loss, row_ok, B, acc);
}

/* ---- dense-layer helpers ----------------------------------------------- */

__global__ static void tc_col_sum(const float *dy, int B, int n, float *out)
{
	for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < n; o += gridDim.x * blockDim.x) {
		float s = 0.0f;

		for (int i = 0; i < B; i++)
			s += dy[(size_t)i * n + o];
		out[o] = s;
	}
}

__global__ static void tc_add_bias(const float *a, const float *bias, int B, int n, float *out)
{
	size_t total = (size_t)B * n;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
	     i += (size_t)gridDim.x * blockDim.x)
		out[i] = a[i] + bias[i % n];
}

extern "C" void tdnn_cuda_col_sum(const float *dy, int B, int n, float *out, cudaStream_t stream)
{
	tc_col_sum<<<tc_blocks((size_t)n), TC_THREADS, 0, stream>>>(dy, B, n, out);
}

extern "C" void tdnn_cuda_add_bias(const float *a, const float *bias, int B, int n, float *out,
				   cudaStream_t stream)
{
	tc_add_bias<<<tc_blocks((size_t)B * n), TC_THREADS, 0, stream>>>(a, bias, B, n, out);
}

__global__ static void tc_scale(float *v, size_t n, float k)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		v[i] = __fmul_rn(v[i], k);
}

extern "C" void tdnn_cuda_scale(float *v, size_t n, float k, cudaStream_t stream)
{
	tc_scale<<<tc_blocks(n), TC_THREADS, 0, stream>>>(v, n, k);
}

/* ---- AdamW ------------------------------------------------------------- */

__global__ static void tc_adam(float *p, const float *g, float *m, float *v, size_t n,
			       size_t n_decay, float step, float isb2, float b1, float b2,
			       float eps, float decay, int use_decay,
			       const struct tdnn_cuda_acc *guard)
{
	if (guard && !isfinite(guard->last_loss))
		return; /* the step is skipped: see tdnn_cuda_guard_step */
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float pi = p[i], gi = g[i];

		if (use_decay && i < n_decay)
			pi = __fmul_rn(pi, decay);
		float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(1.0f - b1, gi));
		float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(1.0f - b2, gi), gi));
		float den = __fadd_rn(__fmul_rn(__fsqrt_rn(vi), isb2), eps);

		m[i] = mi;
		v[i] = vi;
		p[i] = __fsub_rn(pi, __fdiv_rn(__fmul_rn(step, mi), den));
	}
}

extern "C" void tdnn_cuda_adam(float *p, const float *g, float *m, float *v, size_t n,
			       size_t n_decay, float step, float inv_sqrt_bc2, float beta1,
			       float beta2, float eps, float decay, int use_decay,
			       const struct tdnn_cuda_acc *guard, cudaStream_t stream)
{
	tc_adam<<<tc_blocks(n), TC_THREADS, 0, stream>>>(p, g, m, v, n, n_decay, step, inv_sqrt_bc2,
							 beta1, beta2, eps, decay, use_decay,
							 guard);
}

__global__ static void tc_guard_step(float *bn, const float *bn_saved, size_t n,
				     struct tdnn_cuda_acc *acc)
{
	if (isfinite(acc->last_loss))
		return;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		bn[i] = bn_saved[i];
	if (blockIdx.x == 0 && threadIdx.x == 0)
		acc->skipped++;
}

extern "C" void tdnn_cuda_guard_step(float *bn, const float *bn_saved, size_t n,
				     struct tdnn_cuda_acc *acc, cudaStream_t stream)
{
	tc_guard_step<<<tc_blocks(n), TC_THREADS, 0, stream>>>(bn, bn_saved, n, acc);
}

/* Non-negative floats order like their bit patterns, so atomicMax on the
 * bits is a float max (NaN's bits exceed infinity's). */
__global__ static void tc_max_diff(const float *a, const float *b, int rows, int cols, int ld,
				   float *out)
{
	size_t n = (size_t)rows * cols;
	float d = 0.0f, r = 0.0f;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t k = (i / cols) * ld + i % cols;
		float e = fabsf(a[k] - b[k]);

		if (d == d && !(e <= d))
			d = e; /* a NaN stays */
		r = fmaxf(r, fabsf(b[k]));
	}
	atomicMax((int *)&out[0], __float_as_int(d));
	atomicMax((int *)&out[1], __float_as_int(r));
}

extern "C" void tdnn_cuda_max_diff(const float *a, const float *b, int rows, int cols, int ld,
				   float *out, cudaStream_t stream)
{
	tc_max_diff<<<tc_blocks((size_t)rows * cols), TC_THREADS, 0, stream>>>(a, b, rows, cols, ld,
									       out);
}

__global__ static void tc_to_bf16(const float *x, size_t n, __nv_bfloat16 *out)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		out[i] = __float2bfloat16_rn(x[i]);
}

extern "C" void tdnn_cuda_to_bf16(const float *x, size_t n, void *out, cudaStream_t stream)
{
	tc_to_bf16<<<tc_blocks(n), TC_THREADS, 0, stream>>>(x, n, (__nv_bfloat16 *)out);
}
