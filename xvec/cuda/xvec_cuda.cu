/* xvec_cuda.cu — device buffers and the forward/backward/step of the GPU
 * x-vector TDNN.
 *
 * The order of operations is xvec_model.c's, line for line; the arithmetic
 * of the non-GEMM layers is in tdnn_cuda.cu. Every matrix product goes
 * through xc_gemm, a row-major GEMM (gemm_cuda.h), so the layer code reads
 * like the CPU reference's cblas_sgemm calls.
 *
 * Frame-level activations are channel-major (C, B, T) (tdnn_cuda.h), which
 * makes a TDNN layer one of two GEMM strategies:
 *   splice: copy the K shifted views of the input into S (K*D, B*T') and run
 *           one GEMM W (H, K*D) x S; S is kept for the weight gradient.
 *   offset: K strided-batched GEMMs (one batch entry per utterance), each
 *           W_k (H, D) x x[:, b, t + off_k], accumulated; no copy.
 * The weight gradient always uses S (it needs a reduction over utterances
 * and frames together, which only the spliced layout offers as one GEMM);
 * the input gradient has the same two strategies (W^T dA then the adjoint of
 * the splice, or K accumulating batched GEMMs). --autotune times both on the
 * real shape; otherwise splice is used. The products themselves, their
 * precision and the choice of cuBLAS/cuBLASLt algorithm (autotune) are
 * gemm_cuda.cu's.
 *
 * Precision: fp32 uses CUBLAS_COMPUTE_32F, tf32 CUBLAS_COMPUTE_32F_FAST_TF32;
 * bf16 multiplies bfloat16 inputs and accumulates and writes float32. Its
 * operands are rounded once, not before every GEMM: the weights into a
 * bfloat16 copy refreshed after each optimizer step (xc_refresh_bf16), the
 * spliced activations written as bfloat16 by the splice kernel itself, and
 * in the offset strategy the layer's input (or gradient) rounded once for
 * its K GEMMs; the other operands (a layer's input at K = 1, gradients) are
 * rounded by gemm_cuda just before their GEMM. The values are the same as
 * rounding both inputs of every GEMM (round to nearest even, from the same
 * floats), which is what the CPU reference emulates. Master weights,
 * activations, batch norm, pooling, softmax and Adam stay float32 in every
 * mode, so bf16 needs no loss scaling. */
#include "xvec_cuda_impl.h"

void xvec_cuda_config_default(struct xvec_cuda_config *c)
{
	memset(c, 0, sizeof(*c));
	c->precision = XVEC_PRECISION_FP32;
}

int xvec_cuda_parse_precision(const char *s, int *precision, char *err, size_t errlen)
{
	static const char *const names[] = { "fp32", "tf32", "bf16" };

	for (int i = 0; i < 3; i++)
		if (s && strcmp(s, names[i]) == 0) {
			*precision = i;
			return 0;
		}
	return status_fail(err, errlen, FEEDER_EINVAL,
			   "--precision: '%s' is not fp32, tf32 or bf16", s ? s : "");
}

const char *xvec_cuda_precision_name(int precision)
{
	return precision == XVEC_PRECISION_TF32   ? "tf32"
	       : precision == XVEC_PRECISION_BF16 ? "bf16"
						  : "fp32";
}

/* ---- GEMM ------------------------------------------------------------- */

/* Row-major GEMM through the context's gemm_cuda (gemm_cuda.h), so the layer
 * code below reads like the CPU reference's cblas_sgemm calls. */
static int xc_gemm(struct xvec_cuda *g, int ta, int tb, int M, int N, int K, const float *A,
		   int lda, long long sA, const float *Bm, int ldb, long long sB, float beta,
		   float *C, int ldc, long long sC, int batch, char *err, size_t errlen)
{
	return gemm_cuda_run(g->gemm, ta, tb, M, N, K, A, lda, sA, Bm, ldb, sB, beta, C, ldc, sC,
			     batch, err, errlen);
}

/* An operand that is a float array or, in bf16, its bfloat16 copy. */
struct xc_op {
	const void *p;
	int bf16;
};

static struct xc_op xc_f32(const float *p)
{
	return (struct xc_op){ p, 0 };
}

/* Weight w's element `at` as a GEMM operand: its bf16 copy in bf16. */
static struct xc_op xc_weight(const struct xvec_cuda *g, int w, size_t at)
{
	if (g->params_bf16)
		return (struct xc_op){ g->params_bf16 + g->off_w[w] + at, 1 };
	return xc_f32(g->params + g->off_w[w] + at);
}

/* A bf16 array's element `at` as an operand. */
static struct xc_op xc_bf(const uint16_t *p, size_t at)
{
	return (struct xc_op){ p + at, 1 };
}

static int xc_gemm_op(struct xvec_cuda *g, int ta, int tb, int M, int N, int K, struct xc_op A,
		      int lda, long long sA, struct xc_op B, int ldb, long long sB, float beta,
		      float *C, int ldc, long long sC, int batch, char *err, size_t errlen)
{
	return gemm_cuda_run_bf16(g->gemm, ta, tb, M, N, K, A.p, A.bf16, lda, sA, B.p, B.bf16, ldb,
				  sB, beta, C, ldc, sC, batch, err, errlen);
}

/* The spliced input of context layer l from in, in S[l] (bfloat16 in bf16). */
static struct xc_op xc_splice(struct xvec_cuda *g, int l, const float *in, int B, int Tin)
{
	int D = xc_frame_in(&g->o, l), K = xc_nctx[l];

	if (g->params_bf16) {
		tdnn_cuda_splice_bf16(in, D, B, Tin, xc_ctx[l], K, g->S[l], g->stream);
		return xc_bf((const uint16_t *)g->S[l], 0);
	}
	tdnn_cuda_splice(in, D, B, Tin, xc_ctx[l], K, g->S[l], g->stream);
	return xc_f32(g->S[l]);
}

/* S[l] as written by xc_splice. */
static struct xc_op xc_spliced(const struct xvec_cuda *g, int l)
{
	return g->params_bf16 ? xc_bf((const uint16_t *)g->S[l], 0) : xc_f32(g->S[l]);
}

/* x (n floats) as the operand of several GEMMs: in bf16 rounded once into
 * scratch, else itself. */
static const void *xc_once(struct xvec_cuda *g, const float *x, size_t n, uint16_t *scratch)
{
	if (!g->params_bf16)
		return x;
	tdnn_cuda_to_bf16(x, n, scratch, g->stream);
	return scratch;
}

/* ---- layers ----------------------------------------------------------- */

/* out (H, B*T') = frame layer l's affine map of in (D, B*Tin), no bias. */
static int xc_frame_forward(struct xvec_cuda *g, int l, const float *in, int B, int Tin, float *out,
			    int strategy, char *err, size_t errlen)
{
	int D = xc_frame_in(&g->o, l), H = xc_channels(&g->o, l), K = xc_nctx[l];
	const int *off = xc_ctx[l];
	int left = tdnn_context_left(off, K), Tp = Tin - left - tdnn_context_right(off, K);

	if (K == 1)
		return xc_gemm_op(g, 0, 0, H, B * Tin, D, xc_weight(g, l, 0), D, 0, xc_f32(in),
				  B * Tin, 0, 0.0f, out, B * Tin, 0, 1, err, errlen);
	if (strategy == XC_SPLICE) {
		struct xc_op S = xc_splice(g, l, in, B, Tin);
		return xc_gemm_op(g, 0, 0, H, B * Tp, K * D, xc_weight(g, l, 0), K * D, 0, S,
				  B * Tp, 0, 0.0f, out, B * Tp, 0, 1, err, errlen);
	}
	const void *x = xc_once(g, in, (size_t)D * B * Tin, g->bfa);
	for (int k = 0; k < K; k++) {
		size_t at = (size_t)left + off[k];
		struct xc_op X = g->params_bf16 ? xc_bf((const uint16_t *)x, at)
						: xc_f32((const float *)x + at);
		XC_TRY(xc_gemm_op(g, 0, 0, H, Tp, D, xc_weight(g, l, (size_t)k * D), K * D, 0, X,
				  B * Tin, Tin, k ? 1.0f : 0.0f, out, B * Tp, Tp, B, err, errlen));
	}
	return 0;
}

/* dx (D, B*Tin) = the input gradient of frame layer l given dA (H, B*T'). */
static int xc_frame_dx(struct xvec_cuda *g, int l, const float *dA, int B, int Tin, float *dx,
		       int strategy, char *err, size_t errlen)
{
	int D = xc_frame_in(&g->o, l), H = xc_channels(&g->o, l), K = xc_nctx[l];
	const int *off = xc_ctx[l];
	int left = tdnn_context_left(off, K), Tp = Tin - left - tdnn_context_right(off, K);

	if (K == 1)
		return xc_gemm_op(g, 1, 0, D, B * Tin, H, xc_weight(g, l, 0), D, 0, xc_f32(dA),
				  B * Tin, 0, 0.0f, dx, B * Tin, 0, 1, err, errlen);
	if (strategy == XC_SPLICE) {
		XC_TRY(xc_gemm_op(g, 1, 0, K * D, B * Tp, H, xc_weight(g, l, 0), K * D, 0,
				  xc_f32(dA), B * Tp, 0, 0.0f, g->dS, B * Tp, 0, 1, err, errlen));
		tdnn_cuda_unsplice(g->dS, D, B, Tin, off, K, dx, g->stream);
		return 0;
	}
	XC_CUDA(cudaMemsetAsync(dx, 0, sizeof(float) * (size_t)D * B * Tin, g->stream),
		"clear an input gradient");
	const void *d = xc_once(g, dA, (size_t)H * B * Tp, g->bfb);
	struct xc_op dAop = g->params_bf16 ? xc_bf((const uint16_t *)d, 0) : xc_f32(dA);
	for (int k = 0; k < K; k++)
		XC_TRY(xc_gemm_op(g, 1, 0, D, Tp, H, xc_weight(g, l, (size_t)k * D), K * D, 0, dAop,
				  B * Tp, Tp, 1.0f, dx + left + off[k], B * Tin, Tin, B, err,
				  errlen));
	return 0;
}

/* dW of frame layer l from dA (H, B*T') and its input in (D, B*Tin). */
static int xc_frame_dw(struct xvec_cuda *g, int l, const float *in, const float *dA, int B, int Tin,
		       char *err, size_t errlen)
{
	int D = xc_frame_in(&g->o, l), H = xc_channels(&g->o, l), K = xc_nctx[l];
	const int *off = xc_ctx[l];
	int Tp = Tin - tdnn_context_left(off, K) - tdnn_context_right(off, K);
	struct xc_op S = xc_f32(in);

	if (K > 1)
		S = g->fwd_strategy[l] != XC_SPLICE ? xc_splice(g, l, in, B, Tin)
						    : xc_spliced(g, l);
	return xc_gemm_op(g, 0, 1, H, K * D, B * Tp, xc_f32(dA), B * Tp, 0, S, B * Tp, 0, 0.0f,
			  g->grads + g->off_w[l], K * D, 0, 1, err, errlen);
}

/* y (B, nout) = x (B, nin) W^T for dense weight w (5 seg6, 6 seg7, 7 out). */
static int xc_dense_forward(struct xvec_cuda *g, int w, const float *x, int B, int nin, int nout,
			    float *y, char *err, size_t errlen)
{
	return xc_gemm_op(g, 0, 1, B, nout, nin, xc_f32(x), nin, 0, xc_weight(g, w, 0), nin, 0,
			  0.0f, y, nout, 0, 1, err, errlen);
}

/* dW = dy^T x and dx (may be NULL) = dy W. */
static int xc_dense_backward(struct xvec_cuda *g, int w, const float *x, const float *dy, int B,
			     int nin, int nout, float *dx, char *err, size_t errlen)
{
	XC_TRY(xc_gemm(g, 1, 0, nout, nin, B, dy, nout, 0, x, nin, 0, 0.0f, g->grads + g->off_w[w],
		       nin, 0, 1, err, errlen));
	if (dx)
		XC_TRY(xc_gemm_op(g, 0, 0, B, nin, nout, xc_f32(dy), nout, 0, xc_weight(g, w, 0),
				  nin, 0, 0.0f, dx, nin, 0, 1, err, errlen));
	return 0;
}

/* ---- autotune --------------------------------------------------------- */

/* Milliseconds per call of a frame-layer GEMM strategy: one warm-up, then
 * the mean of five timed runs. dir 0: forward, 1: input gradient. */
static int xc_time(struct xvec_cuda *g, int l, int dir, int strategy, const float *in, int B,
		   int Tin, float *out, float *ms, char *err, size_t errlen)
{
	cudaEvent_t e0, e1;
	int rc = 0;

	XC_CUDA(cudaEventCreate(&e0), "create an event");
	if (cudaEventCreate(&e1) != cudaSuccess) {
		cudaEventDestroy(e0);
		return status_fail(err, errlen, -EIO, "x-vector cuda: cannot create an event");
	}
	for (int i = 0; i < 6 && !rc; i++) {
		if (i == 1)
			cudaEventRecord(e0, g->stream);
		rc = dir == 0 ? xc_frame_forward(g, l, in, B, Tin, out, strategy, err, errlen)
			      : xc_frame_dx(g, l, in, B, Tin, out, strategy, err, errlen);
	}
	cudaEventRecord(e1, g->stream);
	if (!rc && cudaEventSynchronize(e1) != cudaSuccess)
		rc = status_fail(err, errlen, -EIO, "x-vector cuda: autotune run failed: %s",
				 cudaGetErrorString(cudaGetLastError()));
	if (!rc) {
		cudaEventElapsedTime(ms, e0, e1);
		*ms /= 5.0f;
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	return rc;
}

static int xc_autotune(struct xvec_cuda *g, FILE *log, char *err, size_t errlen)
{
	static const char *const names[2] = { "splice", "offset" };
	int B = g->cap_batch, T = g->cap_frames, Tin = T;
	const float *in = g->x0;

	XC_CUDA(cudaMemsetAsync(g->x0, 0, sizeof(float) * g->o.feat_dim * B * T, g->stream),
		"clear the input");
	for (int l = 0; l < XVEC_FRAME_LAYERS; l++) {
		int H = xc_channels(&g->o, l), Tout = xc_frames_after(T, l);

		XC_CUDA(cudaMemsetAsync(g->y[l], 0, sizeof(float) * H * B * Tout, g->stream),
			"clear an activation");
		XC_CUDA(cudaMemsetAsync(g->gA, 0, sizeof(float) * H * B * Tout, g->stream),
			"clear a gradient");
		if (xc_nctx[l] > 1) {
			for (int dir = 0; dir < 2; dir++) {
				float ms[2];

				if (dir == 1 && l == 0)
					continue; /* the input layer's dx is only for tests */
				for (int s = 0; s < 2; s++)
					XC_TRY(xc_time(g, l, dir, s, dir ? g->gA : in, B, Tin,
						       dir ? g->gB : g->r[l], &ms[s], err, errlen));
				int best = ms[XC_OFFSET] < ms[XC_SPLICE] ? XC_OFFSET : XC_SPLICE;
				if (dir == 0)
					g->fwd_strategy[l] = best;
				else
					g->dx_strategy[l] = best;
				if (log)
					fprintf(log,
						"xvec autotune: frame%d %s (%s, batch %d x %d): "
						"splice %.3f ms, offset %.3f ms -> %s\n",
						l + 1, dir ? "input gradient" : "forward",
						xvec_cuda_precision_name(g->precision), B, T,
						ms[XC_SPLICE], ms[XC_OFFSET], names[best]);
			}
		}
		in = g->y[l];
		Tin = Tout;
	}
	if (log)
		fflush(log);
	return 0;
}

/* One training forward and backward pass on random data with tuning on,
 * so that every single GEMM shape of a step meets xc_tune; the model's
 * running statistics and metrics are restored afterwards. */
static int xc_autotune_gemms(struct xvec_cuda *g, char *err, size_t errlen)
{
	int B = g->cap_batch, T = g->cap_frames;
	size_t nx = (size_t)g->o.feat_dim * B * T;
	float *x = NULL, *bn = NULL;
	int32_t *labels = NULL;
	int rc = 0;

	XC_TRY(gemm_cuda_tune_begin(g->gemm, err, errlen));
	if (cudaMalloc((void **)&x, sizeof(float) * nx) != cudaSuccess ||
	    cudaMalloc((void **)&labels, sizeof(int32_t) * B) != cudaSuccess ||
	    cudaMalloc((void **)&bn, sizeof(float) * g->nbn) != cudaSuccess)
		rc = status_fail(err, errlen, -ENOMEM,
				 "x-vector cuda: cannot allocate for GEMM autotune");
	if (!rc) {
		tdnn_cuda_normals(x, nx, g->o.seed, (uint64_t)1 << 62, 0, g->stream);
		if (cudaMemsetAsync(labels, 0, sizeof(int32_t) * B, g->stream) != cudaSuccess ||
		    cudaMemcpyAsync(bn, g->bn, sizeof(float) * g->nbn, cudaMemcpyDeviceToDevice,
				    g->stream) != cudaSuccess)
			rc = status_fail(err, errlen, -EIO,
					 "x-vector cuda: cannot prepare GEMM autotune");
	}
	if (!rc) {
		gemm_cuda_set_tuning(g->gemm, 1);
		rc = xvec_cuda_forward(g, x, labels, B, T, 1, NULL, err, errlen);
		if (!rc)
			rc = xvec_cuda_backward(g, x, labels, B, T, NULL, err, errlen);
		gemm_cuda_set_tuning(g->gemm, 0);
		g->fwd_batch = 0;
	}
	if (!rc &&
	    (cudaMemcpyAsync(g->bn, bn, sizeof(float) * g->nbn, cudaMemcpyDeviceToDevice,
			     g->stream) != cudaSuccess ||
	     cudaMemsetAsync(g->acc, 0, sizeof(struct tdnn_cuda_acc), g->stream) != cudaSuccess ||
	     cudaStreamSynchronize(g->stream) != cudaSuccess))
		rc = status_fail(err, errlen, -EIO, "x-vector cuda: GEMM autotune failed: %s",
				 cudaGetErrorString(cudaGetLastError()));
	if (g->stream)
		cudaStreamSynchronize(g->stream);
	cudaFree(x);
	cudaFree(labels);
	cudaFree(bn);
	if (g->log)
		fflush(g->log);
	return rc;
}

/* ---- data parallel ----------------------------------------------------- */

static struct tdnn_cuda_rows xc_rows(const struct xvec_cuda *g)
{
	return (struct tdnn_cuda_rows){ g->dp.rank, g->dp.world };
}

static int xc_sync_bn(const struct xvec_cuda *g)
{
	return g->dp.sum_d && g->dp.sync_bn;
}

static int xc_dp_sum_d(struct xvec_cuda *g, double *v, size_t n, char *err, size_t errlen)
{
	int rc = g->dp.sum_d(g->dp.ctx, v, n, g->stream);

	if (rc)
		return status_fail(err, errlen, rc,
				   "x-vector cuda: summing batch-norm statistics "
				   "over %d ranks failed (%d)",
				   g->dp.world, rc);
	return 0;
}

/* Training-mode ReLU + batch norm + dropout of BN layer l (channel-major
 * frame layer, or a segment layer with L 1): fused, or as sync batch-norm
 * with the statistics summed over the ranks. */
static int xc_bn_train(struct xvec_cuda *g, int l, int B, int L, int cm, float p, uint64_t subseq,
		       char *err, size_t errlen)
{
	const float *pr = g->params;
	int C = xc_channels(&g->o, l);
	float *rs = g->bn + g->bn_off[l];
	cudaStream_t st = g->stream;

	if (!xc_sync_bn(g)) {
		tdnn_cuda_relu_bn_train_dp(g->r[l], pr + g->off_b[l], B, C, L, cm,
					   pr + g->off_gamma[l], pr + g->off_beta[l], rs, rs + C,
					   g->mean[l], g->invstd[l], g->y[l], p, g->o.seed, subseq,
					   xc_rows(g), st);
		return 0;
	}
	tdnn_cuda_bn_sync_sum(g->r[l], pr + g->off_b[l], B, C, L, cm, g->dp_buf, st);
	XC_TRY(xc_dp_sum_d(g, g->dp_buf, (size_t)C + 1, err, errlen));
	tdnn_cuda_bn_sync_ss(g->r[l], B, C, L, cm, g->dp_buf, st);
	XC_TRY(xc_dp_sum_d(g, g->dp_buf + C + 1, (size_t)C, err, errlen));
	tdnn_cuda_bn_sync_finish(g->r[l], B, C, L, cm, pr + g->off_gamma[l], pr + g->off_beta[l],
				 rs, rs + C, g->mean[l], g->invstd[l], g->y[l], p, g->o.seed,
				 subseq, xc_rows(g), g->dp_buf, st);
	return 0;
}

/* Its backward: dy (the gradient at y) becomes the gradient at the affine
 * output; the layer's dgamma, dbeta and preceding bias gradient written. */
static int xc_bn_backward(struct xvec_cuda *g, int l, int B, int L, int cm, float *dy, float p,
			  uint64_t subseq, char *err, size_t errlen)
{
	const float *pr = g->params;
	float *gr = g->grads;
	int C = xc_channels(&g->o, l);
	cudaStream_t st = g->stream;

	if (!xc_sync_bn(g)) {
		tdnn_cuda_relu_bn_backward_dp(g->r[l], B, C, L, cm, pr + g->off_gamma[l],
					      g->mean[l], g->invstd[l], dy, gr + g->off_gamma[l],
					      gr + g->off_beta[l], gr + g->off_b[l], p, g->o.seed,
					      subseq, xc_rows(g), st);
		return 0;
	}
	tdnn_cuda_bn_sync_dsums(g->r[l], B, C, L, cm, g->mean[l], g->invstd[l], dy,
				gr + g->off_gamma[l], gr + g->off_beta[l], p, g->o.seed, subseq,
				xc_rows(g), g->dp_buf, st);
	XC_TRY(xc_dp_sum_d(g, g->dp_buf, 2 * (size_t)C + 1, err, errlen));
	tdnn_cuda_bn_sync_da(g->r[l], B, C, L, cm, pr + g->off_gamma[l], g->mean[l], g->invstd[l],
			     dy, gr + g->off_b[l], g->dp_buf, st);
	return 0;
}

/* Add the device time of timing pair k, once its end has been reached. */
static void xc_dp_harvest(struct xvec_cuda *g, int k)
{
	float ms = 0.0f;

	if (!g->dp_timing[k])
		return;
	g->dp_timing[k] = 0;
	if (cudaEventSynchronize(g->dp_ev[k][1]) == cudaSuccess &&
	    cudaEventElapsedTime(&ms, g->dp_ev[k][0], g->dp_ev[k][1]) == cudaSuccess)
		g->dp_reduce_s += ms * 1e-3;
}

/* After the backward pass: the loss summed over the ranks (so that every
 * rank's guard sees a non-finite loss of any), then the gradients summed and
 * scaled to their mean. The two timing pairs alternate, so the host waits,
 * if ever, for the sum of two steps ago. */
static int xc_dp_reduce(struct xvec_cuda *g, char *err, size_t errlen)
{
	if (!g->dp.sum_f)
		return 0;
	int k = (int)(g->step & 1), rc;
	xc_dp_harvest(g, k);
	XC_CUDA(cudaEventRecord(g->dp_ev[k][0], g->stream), "time the gradient sum");
	if ((rc = g->dp.sum_d(g->dp.ctx, &g->acc->last_loss, 1, g->stream)))
		return status_fail(err, errlen, rc,
				   "x-vector cuda: summing the loss over %d ranks "
				   "failed (%d)",
				   g->dp.world, rc);
	if ((rc = g->dp.sum_f(g->dp.ctx, g->grads, g->nparams, g->stream)))
		return status_fail(err, errlen, rc,
				   "x-vector cuda: averaging the gradients over %d "
				   "ranks failed (%d)",
				   g->dp.world, rc);
	tdnn_cuda_scale(g->grads, g->nparams, 1.0f / (float)g->dp.world, g->stream);
	XC_CUDA(cudaEventRecord(g->dp_ev[k][1], g->stream), "time the gradient sum");
	g->dp_timing[k] = 1;
	return 0;
}

static void xc_dp_free(struct xvec_cuda *g)
{
	for (int k = 0; k < 2; k++)
		for (int e = 0; e < 2; e++)
			if (g->dp_ev[k][e])
				cudaEventDestroy(g->dp_ev[k][e]);
	memset(g->dp_ev, 0, sizeof(g->dp_ev));
	memset(g->dp_timing, 0, sizeof(g->dp_timing));
	cudaFree(g->dp_buf);
	g->dp_buf = NULL;
}

int xvec_cuda_set_dp(struct xvec_cuda *g, const struct xvec_cuda_dp *dp, char *err, size_t errlen)
{
	if (g->stream)
		cudaStreamSynchronize(g->stream); /* no step still uses the old settings */
	xc_dp_free(g);
	memset(&g->dp, 0, sizeof(g->dp));
	g->dp.world = 1;
	if (!dp || (dp->world <= 1 && !dp->sum_f && !dp->sum_d))
		return 0;
	if (dp->world < 1 || dp->rank < 0 || dp->rank >= dp->world || !dp->sum_f || !dp->sum_d)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector cuda: rank %d of %d, or "
				   "no sums, for data parallelism",
				   dp->rank, dp->world);
	int most = g->o.pool_width > g->o.width ? g->o.pool_width : g->o.width;
	most = g->o.embed > most ? g->o.embed : most;
	int failed = 0;
	xc_alloc(&g->dp_buf, sizeof(double) * (2 * (size_t)most + 1), &failed);
	for (int k = 0; k < 2 && !failed; k++)
		for (int e = 0; e < 2 && !failed; e++)
			failed = cudaEventCreate(&g->dp_ev[k][e]) != cudaSuccess;
	if (failed) {
		xc_dp_free(g);
		return status_fail(err, errlen, -ENOMEM,
				   "x-vector cuda: cannot allocate for data "
				   "parallelism");
	}
	g->dp = *dp;
	return 0;
}

double xvec_cuda_reduce_s(struct xvec_cuda *g)
{
	xc_dp_harvest(g, 0);
	xc_dp_harvest(g, 1);
	return g->dp_reduce_s;
}

/* ---- create ----------------------------------------------------------- */

int xvec_cuda_create(struct xvec_cuda **out, struct xvec_model *m,
		     const struct xvec_cuda_config *cfg, int max_batch, int max_frames, char *err,
		     size_t errlen)
{
	struct xvec_cuda_config def;
	struct xvec_cuda *g;
	char why[256];
	int rc;

	*out = NULL;
	if (!cfg) {
		xvec_cuda_config_default(&def);
		cfg = &def;
	}
	if (cfg->precision < XVEC_PRECISION_FP32 || cfg->precision > XVEC_PRECISION_BF16)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector cuda: precision %d is unknown", cfg->precision);
	if (max_batch < 1 || max_frames <= XVEC_CONTEXT)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"x-vector cuda: need a batch of at least 1 and more than %d frames "
			"(got %d x %d)",
			XVEC_CONTEXT, max_batch, max_frames);
	if (cuda_info_devices(NULL, why, sizeof(why)) < 1)
		return status_fail(err, errlen, FEEDER_ENODEV, "x-vector cuda: %s", why);
	XC_CUDA(cudaSetDevice(cfg->device), "select the device");

	g = (struct xvec_cuda *)calloc(1, sizeof(*g));
	if (!g)
		return status_fail(err, errlen, -ENOMEM, "x-vector cuda: out of memory");
	g->o = *xvec_model_options(m);
	g->dp.world = 1;
	g->precision = cfg->precision;
	g->device = cfg->device;
	g->log = cfg->log;
	rc = xc_layout(g, m, err, errlen);
	if (!rc && cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking) != cudaSuccess)
		rc = status_fail(err, errlen, -EIO, "x-vector cuda: cannot create a stream");
	if (!rc)
		rc = gemm_cuda_create(&g->gemm, g->stream, g->precision, g->log, err, errlen);
	if (!rc) {
		int failed = 0;

		xc_alloc(&g->params, sizeof(float) * g->nparams, &failed);
		xc_alloc(&g->grads, sizeof(float) * g->nparams, &failed);
		xc_alloc(&g->adam_m, sizeof(float) * g->nparams, &failed);
		xc_alloc(&g->adam_v, sizeof(float) * g->nparams, &failed);
		xc_alloc(&g->bn, sizeof(float) * g->nbn, &failed);
		xc_alloc(&g->bn_saved, sizeof(float) * g->nbn, &failed);
		xc_alloc(&g->acc, sizeof(struct tdnn_cuda_acc), &failed);
		xc_alloc(&g->acc_eval, sizeof(struct tdnn_cuda_acc), &failed);
		if (g->precision == XVEC_PRECISION_BF16)
			xc_alloc(&g->params_bf16, sizeof(uint16_t) * g->nparams, &failed);
		if (failed)
			rc = status_fail(
				err, errlen, -ENOMEM,
				"x-vector cuda: cannot allocate %zu parameters on the device",
				g->nparams);
	}
	if (!rc && (cudaMemset(g->acc, 0, sizeof(struct tdnn_cuda_acc)) != cudaSuccess ||
		    cudaMemset(g->grads, 0, sizeof(float) * g->nparams) != cudaSuccess))
		rc = status_fail(err, errlen, -EIO, "x-vector cuda: cannot clear device memory");
	if (!rc)
		rc = xvec_cuda_from_model(g, m, err, errlen);
	for (int l = 0; l < XVEC_FRAME_LAYERS; l++)
		g->fwd_strategy[l] = g->dx_strategy[l] = cfg->strategy ? XC_OFFSET : XC_SPLICE;
	if (!rc)
		rc = xc_alloc_workspace(g, max_batch, max_frames, err, errlen);
	if (!rc && cfg->autotune)
		rc = xc_autotune(g, cfg->log, err, errlen);
	if (!rc && cfg->autotune)
		rc = xc_autotune_gemms(g, err, errlen);
	if (rc) {
		xvec_cuda_destroy(g);
		return rc;
	}
	*out = g;
	return 0;
}

void xvec_cuda_destroy(struct xvec_cuda *g)
{
	if (!g)
		return;
	if (g->stream)
		cudaStreamSynchronize(g->stream);
	xc_free_workspace(g);
	cudaFree(g->params);
	cudaFree(g->params_bf16);
	cudaFree(g->grads);
	cudaFree(g->adam_m);
	cudaFree(g->adam_v);
	cudaFree(g->bn);
	cudaFree(g->bn_saved);
	cudaFree(g->acc);
	cudaFree(g->acc_eval);
	xc_dp_free(g);
	gemm_cuda_destroy(g->gemm);
	if (g->stream)
		cudaStreamDestroy(g->stream);
	free(g);
}

cudaStream_t xvec_cuda_stream(const struct xvec_cuda *g)
{
	return g->stream;
}

/* ---- forward / backward ----------------------------------------------- */

static int xc_check_batch(const struct xvec_cuda *g, int B, int T, char *err, size_t errlen)
{
	if (B < 1 || T <= XVEC_CONTEXT || B > g->cap_batch || T > g->cap_frames)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector cuda: a batch of %d x %d frames does not fit (at most "
				   "%d x %d, and more than %d frames)",
				   B, T, g->cap_batch, g->cap_frames, XVEC_CONTEXT);
	return 0;
}

static int xc_launched(char *err, size_t errlen)
{
	cudaError_t e = cudaGetLastError();

	if (e != cudaSuccess)
		return status_fail(err, errlen, -EIO,
				   "x-vector cuda: a kernel failed to launch: %s",
				   cudaGetErrorString(e));
	return 0;
}

/* The forward pass (xvec_model.c's xvec_run_forward); stop_at_embed leaves
 * after the segment-6 affine, whose output (no bias) is then in r[5]. */
static int xc_run_forward(struct xvec_cuda *g, const float *x, const int32_t *labels, int B, int T,
			  int training, int stop_at_embed, char *err, size_t errlen)
{
	const struct xvec_options *o = &g->o;
	cudaStream_t st = g->stream;
	const float *in = g->x0;
	int Tin = T, P = o->pool_width, E = o->embed, S = o->num_speakers;
	float *p = g->params;

	tdnn_cuda_to_cbt(x, B, o->feat_dim, T, g->x0, st);
	for (int l = 0; l < XVEC_FRAME_LAYERS; l++) {
		int H = xc_channels(o, l), Tout = xc_frames_after(T, l);
		float *rs = g->bn + g->bn_off[l];

		XC_TRY(xc_frame_forward(g, l, in, B, Tin, g->r[l], g->fwd_strategy[l], err,
					errlen));
		if (training)
			XC_TRY(xc_bn_train(g, l, B, Tout, 1, o->dropout,
					   tdnn_dropout_subseq(g->step, l), err, errlen));
		else
			tdnn_cuda_relu_bn_eval(g->r[l], p + g->off_b[l], B, H, Tout, 1,
					       p + g->off_gamma[l], p + g->off_beta[l], rs, rs + H,
					       g->y[l], st);
		in = g->y[l];
		Tin = Tout;
	}
	tdnn_cuda_pool_forward_dp(in, B, P, Tin, training ? o->noise_eps : 0.0f, o->seed, g->step,
				  xc_rows(g), g->pool, st);
	XC_TRY(xc_dense_forward(g, 5, g->pool, B, 2 * P, E, g->r[5], err, errlen));
	if (stop_at_embed)
		return xc_launched(err, errlen);
	for (int l = 5; l < XVEC_BN_LAYERS; l++) {
		float *rs = g->bn + g->bn_off[l];

		if (l == 6)
			XC_TRY(xc_dense_forward(g, 6, g->y[5], B, E, E, g->r[6], err, errlen));
		if (training)
			XC_TRY(xc_bn_train(g, l, B, 1, 0, 0.0f, 0, err, errlen));
		else
			tdnn_cuda_relu_bn_eval(g->r[l], p + g->off_b[l], B, E, 1, 0,
					       p + g->off_gamma[l], p + g->off_beta[l], rs, rs + E,
					       g->y[l], st);
	}
	XC_TRY(xc_dense_forward(g, 7, g->y[6], B, E, S, g->logits, err, errlen));
	tdnn_cuda_softmax_xent(g->logits, p + g->off_b[7], labels, B, S, g->probs,
			       training && labels ? g->dz : NULL, g->row_loss, g->row_ok,
			       labels ? (training ? g->acc : g->acc_eval) : NULL, st);
	return xc_launched(err, errlen);
}

/* res from the accumulator's last batch; waits for the stream. */
static int xc_last_result(struct xvec_cuda *g, struct tdnn_cuda_acc *acc, int B,
			  struct xvec_result *res, char *err, size_t errlen)
{
	struct tdnn_cuda_acc h;

	XC_CUDA(cudaMemcpyAsync(&h, acc, sizeof(h), cudaMemcpyDeviceToHost, g->stream),
		"read the loss");
	XC_CUDA(cudaStreamSynchronize(g->stream), "wait for the forward pass");
	if (h.bad_label)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector cuda: a label is not in [0, %d)", g->o.num_speakers);
	res->loss = h.last_loss;
	res->correct = h.last_correct;
	res->accuracy = (float)h.last_correct / (float)B;
	return 0;
}

int xvec_cuda_forward(struct xvec_cuda *g, const float *x, const int32_t *labels, int batch,
		      int frames, int training, struct xvec_result *res, char *err, size_t errlen)
{
	XC_TRY(xc_check_batch(g, batch, frames, err, errlen));
	g->fwd_batch = 0;
	if (res && labels && !training)
		XC_CUDA(cudaMemsetAsync(g->acc_eval, 0, sizeof(struct tdnn_cuda_acc), g->stream),
			"clear the evaluation metrics");
	XC_TRY(xc_run_forward(g, x, labels, batch, frames, training, 0, err, errlen));
	if (training) {
		g->fwd_batch = batch;
		g->fwd_frames = frames;
		g->fwd_training = 1;
		g->fwd_x = x;
		g->fwd_labels = labels;
	}
	if (res) {
		memset(res, 0, sizeof(*res));
		if (labels)
			XC_TRY(xc_last_result(g, training ? g->acc : g->acc_eval, batch, res, err,
					      errlen));
		else
			XC_CUDA(cudaStreamSynchronize(g->stream), "wait for the forward pass");
	}
	return 0;
}

int xvec_cuda_backward(struct xvec_cuda *g, const float *x, const int32_t *labels, int batch,
		       int frames, float *dx, char *err, size_t errlen)
{
	const struct xvec_options *o = &g->o;
	cudaStream_t st = g->stream;
	int B = batch, P = o->pool_width, E = o->embed, S = o->num_speakers;
	float *gr = g->grads;

	if (!labels)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector cuda: backward needs labels");
	XC_TRY(xc_check_batch(g, batch, frames, err, errlen));
	if (g->fwd_batch != batch || g->fwd_frames != frames || !g->fwd_training || g->fwd_x != x ||
	    g->fwd_labels != labels)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector cuda: backward must follow a training forward pass "
				   "of the same batch");
	/* every gradient is overwritten below; the clear keeps that a fact
	 * even if a layer is ever skipped */
	XC_CUDA(cudaMemsetAsync(gr, 0, sizeof(float) * g->nparams, st), "clear the gradients");

	/* the softmax-CE gradient dz was written by the forward pass */
	XC_TRY(xc_dense_backward(g, 7, g->y[6], g->dz, B, E, S, g->s2, err, errlen));
	tdnn_cuda_col_sum(g->dz, B, S, gr + g->off_b[7], st);
	XC_TRY(xc_bn_backward(g, 6, B, 1, 0, g->s2, 0.0f, 0, err, errlen));
	XC_TRY(xc_dense_backward(g, 6, g->y[5], g->s2, B, E, E, g->s1, err, errlen));
	XC_TRY(xc_bn_backward(g, 5, B, 1, 0, g->s1, 0.0f, 0, err, errlen));
	XC_TRY(xc_dense_backward(g, 5, g->pool, g->s1, B, 2 * P, E, g->s2, err, errlen));

	/* pooling: its input was y5 plus the noise, regenerated in the kernel */
	int T5 = xc_frames_after(frames, 4);
	tdnn_cuda_pool_backward_dp(g->y[4], B, P, T5, o->noise_eps, o->seed, g->step, xc_rows(g),
				   g->pool, g->s2, g->gA, st);

	float *dy = g->gA, *other = g->gB;
	for (int l = XVEC_FRAME_LAYERS - 1; l >= 0; l--) {
		int H = xc_channels(o, l), Tout = xc_frames_after(frames, l);
		int Tin = l == 0 ? frames : xc_frames_after(frames, l - 1);
		const float *in = l == 0 ? g->x0 : g->y[l - 1];

		XC_TRY(xc_bn_backward(g, l, B, Tout, 1, dy, o->dropout,
				      tdnn_dropout_subseq(g->step, l), err, errlen));
		XC_TRY(xc_frame_dw(g, l, in, dy, B, Tin, err, errlen));
		if (l > 0 || dx)
			XC_TRY(xc_frame_dx(g, l, dy, B, Tin, other, g->dx_strategy[l], err,
					   errlen));
		float *t = dy;
		dy = other;
		other = t;
	}
	if (dx)
		tdnn_cuda_from_cbt(dy, B, o->feat_dim, frames, dx, st);
	return xc_launched(err, errlen);
}

int xvec_cuda_train_step(struct xvec_cuda *g, const float *x, const int32_t *labels, int batch,
			 int frames, char *err, size_t errlen)
{
	const struct xvec_options *o = &g->o;

	if (!labels)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector cuda: training needs labels");
	/* a non-finite loss skips the update (as xvec_model_train_step does),
	 * decided on the device so that the host need not wait for the loss */
	XC_CUDA(cudaMemcpyAsync(g->bn_saved, g->bn, sizeof(float) * g->nbn,
				cudaMemcpyDeviceToDevice, g->stream),
		"save the running statistics");
	XC_TRY(xvec_cuda_forward(g, x, labels, batch, frames, 1, NULL, err, errlen));
	XC_TRY(xvec_cuda_backward(g, x, labels, batch, frames, NULL, err, errlen));
	XC_TRY(xc_dp_reduce(g, err, errlen));
	tdnn_cuda_guard_step(g->bn, g->bn_saved, g->nbn, g->acc, g->stream);

	/* adam_step's scalars, computed as adam.c computes them */
	uint64_t t = g->step + 1;
	double bc1 = 1.0 - pow(o->beta1, (double)t);
	double bc2 = 1.0 - pow(o->beta2, (double)t);
	float step = (float)(g->lr / bc1);
	float inv_sqrt_bc2 = (float)(1.0 / sqrt(bc2));
	float decay = 1.0f - g->lr * o->weight_decay;

	tdnn_cuda_adam(g->params, g->grads, g->adam_m, g->adam_v, g->nparams, g->ndecay, step,
		       inv_sqrt_bc2, o->beta1, o->beta2, o->adam_eps, decay, o->weight_decay > 0.0f,
		       g->acc, g->stream);
	xc_refresh_bf16(g);
	g->step = t;
	g->fwd_batch = 0;
	return xc_launched(err, errlen);
}

int xvec_cuda_metrics(struct xvec_cuda *g, struct xvec_cuda_metrics *mt, int reset, char *err,
		      size_t errlen)
{
	struct tdnn_cuda_acc h;

	XC_CUDA(cudaMemcpyAsync(&h, g->acc, sizeof(h), cudaMemcpyDeviceToHost, g->stream),
		"read the training metrics");
	if (reset)
		XC_CUDA(cudaMemsetAsync(g->acc, 0, sizeof(h), g->stream),
			"reset the training metrics");
	XC_CUDA(cudaStreamSynchronize(g->stream), "wait for the training steps");
	memset(mt, 0, sizeof(*mt));
	mt->steps = h.steps;
	mt->loss = h.steps ? h.loss_sum / (double)h.steps : 0.0;
	mt->accuracy = h.rows ? (double)h.correct / (double)h.rows : 0.0;
	mt->last_loss = h.last_loss / g->dp.world; /* summed over the ranks by xc_dp_reduce */
	mt->last_accuracy = h.last_rows ? (float)h.last_correct / (float)h.last_rows : 0.0f;
	mt->skipped = h.skipped;
	if (h.bad_label)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector cuda: a training label was not in [0, %d)",
				   g->o.num_speakers);
	if (h.skipped)
		return status_fail(
			err, errlen, -EDOM,
			"x-vector cuda: the loss was not finite in %lld of the last %lld "
			"steps; those updates were skipped",
			h.skipped, h.steps);
	return 0;
}

int xvec_cuda_eval(struct xvec_cuda *g, const float *x, const int32_t *labels, int batch,
		   int frames, struct xvec_result *res, char *err, size_t errlen)
{
	struct xvec_result r;

	return xvec_cuda_forward(g, x, labels, batch, frames, 0, res ? res : &r, err, errlen);
}

int xvec_cuda_embed(struct xvec_cuda *g, const float *x, int batch, int frames, float *out,
		    char *err, size_t errlen)
{
	int E = g->o.embed;

	XC_TRY(xc_check_batch(g, batch, frames, err, errlen));
	g->fwd_batch = 0;
	XC_TRY(xc_run_forward(g, x, NULL, batch, frames, 0, 1, err, errlen));
	/* the x-vector is the affine output with its bias, before the ReLU */
	tdnn_cuda_add_bias(g->r[5], g->params + g->off_b[5], batch, E, g->s1, g->stream);
	XC_CUDA(cudaMemcpyAsync(out, g->s1, sizeof(float) * (size_t)batch * E,
				cudaMemcpyDeviceToHost, g->stream),
		"copy the x-vectors");
	XC_CUDA(cudaStreamSynchronize(g->stream), "wait for the x-vectors");
	return 0;
}

int xvec_cuda_probs(struct xvec_cuda *g, float *out, int batch, char *err, size_t errlen)
{
	if (batch < 1 || batch > g->cap_batch)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector cuda: batch %d out of range", batch);
	XC_CUDA(cudaMemcpyAsync(out, g->probs, sizeof(float) * (size_t)batch * g->o.num_speakers,
				cudaMemcpyDeviceToHost, g->stream),
		"copy the probabilities");
	XC_CUDA(cudaStreamSynchronize(g->stream), "wait for the probabilities");
	return 0;
}

int xvec_cuda_grads(struct xvec_cuda *g, float *out, size_t n, char *err, size_t errlen)
{
	if (n != g->nparams)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector cuda: %zu gradients asked for, the model has %zu", n,
				   g->nparams);
	XC_CUDA(cudaMemcpyAsync(out, g->grads, sizeof(float) * n, cudaMemcpyDeviceToHost,
				g->stream),
		"copy the gradients");
	XC_CUDA(cudaStreamSynchronize(g->stream), "wait for the gradients");
	return 0;
}

void xvec_cuda_set_lr(struct xvec_cuda *g, float lr)
{
	g->lr = lr;
	g->o.lr = lr;
}

uint64_t xvec_cuda_step(const struct xvec_cuda *g)
{
	return g->step;
}

void xvec_cuda_set_noise_eps(struct xvec_cuda *g, float eps)
{
	g->o.noise_eps = eps;
}
