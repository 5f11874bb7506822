/* xvec_cuda_impl.h — what xvec_cuda.cu, xvec_cuda_state.cu and gemm_cuda.cu
 * share (private to xvec/cuda): the context's layout, the
 * frame-layer contexts and the error macros. */
#ifndef FEEDER_XVEC_CUDA_IMPL_H
#define FEEDER_XVEC_CUDA_IMPL_H

#include "xvec_cuda.h"
#include "gemm_cuda.h"
#include "tdnn_cuda.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "cuda_info.h"
#include "status.h"
#include "tdnn.h"
#include "xvec_model.h"
}

enum { XC_SPLICE = 0, XC_OFFSET = 1 };
#define XC_SEG_LAYERS 3 /* seg6, seg7, out: weights 5..7 */
#define XC_WEIGHTS (XVEC_FRAME_LAYERS + XC_SEG_LAYERS)

/* The frame-layer contexts of xvec_model.c. */
static const int xc_ctx1[] = { -2, -1, 0, 1, 2 };
static const int xc_ctx2[] = { -2, 0, 2 };
static const int xc_ctx3[] = { -3, 0, 3 };
static const int xc_ctx0[] = { 0 };
static const int *const xc_ctx[XVEC_FRAME_LAYERS] = { xc_ctx1, xc_ctx2, xc_ctx3, xc_ctx0, xc_ctx0 };
static const int xc_nctx[XVEC_FRAME_LAYERS] = { 5, 3, 3, 1, 1 };

struct xvec_cuda {
	struct xvec_options o;
	int precision, device;
	cudaStream_t stream;
	struct gemm_cuda *gemm; /* every matrix product */

	/* training state, laid out as the host mirror's arrays */
	float *params, *grads, *adam_m, *adam_v, *bn;
	uint16_t *params_bf16; /* bf16: the weights rounded, refreshed
						       after every change of params */
	float *bn_saved;       /* bn before the current step */
	size_t nparams, ndecay, nbn;
	size_t off_w[XC_WEIGHTS], off_b[XC_WEIGHTS];
	size_t off_gamma[XVEC_BN_LAYERS], off_beta[XVEC_BN_LAYERS];
	size_t bn_off[XVEC_BN_LAYERS];
	uint64_t step;
	float lr;

	int fwd_strategy[XVEC_FRAME_LAYERS], dx_strategy[XVEC_FRAME_LAYERS];

	/* workspace for up to cap_batch x cap_frames */
	int cap_batch, cap_frames;
	float *x0; /* input, (D, B, T) */
	float *r[XVEC_BN_LAYERS], *y[XVEC_BN_LAYERS];
	float *mean[XVEC_BN_LAYERS], *invstd[XVEC_BN_LAYERS];
	float *S[XVEC_FRAME_LAYERS]; /* spliced inputs of context layers */
	float *gA, *gB, *dS;         /* frame-level gradients */
	uint16_t *bfa, *bfb;         /* bf16: an input and a gradient
						       rounded once for K offset GEMMs */
	float *pool, *logits, *probs, *dz, *s1, *s2;
	double *row_loss;
	int *row_ok;
	struct tdnn_cuda_acc *acc, *acc_eval;
	FILE *log;

	/* data parallelism (xvec_cuda_set_dp): world 1 when none */
	struct xvec_cuda_dp dp;
	double *dp_buf;          /* sync batch-norm sums, 2 * widest + 1 */
	cudaEvent_t dp_ev[2][2]; /* two steps' gradient-sum start and end */
	int dp_timing[2];        /* that pair was recorded, not yet read */
	double dp_reduce_s;

	/* what the last forward pass was, for backward */
	int fwd_batch, fwd_frames, fwd_training;
	const float *fwd_x;
	const int32_t *fwd_labels;
};

#define XC_CUDA(call, what)                                                                        \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess)                                                             \
			return status_fail(err, errlen, -EIO, "x-vector cuda: %s: %s", (what),     \
					   cudaGetErrorString(e_));                                \
	} while (0)

#define XC_TRY(call)                                                                               \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_)                                                                           \
			return rc_;                                                                \
	} while (0)

static inline int xc_channels(const struct xvec_options *o, int l)
{
	return l < 4 ? o->width : l == 4 ? o->pool_width : o->embed;
}

static inline int xc_frame_in(const struct xvec_options *o, int l)
{
	return l == 0 ? o->feat_dim : o->width;
}

static inline int xc_frames_after(int T, int l)
{
	for (int i = 0; i <= l; i++)
		T -= tdnn_context_left(xc_ctx[i], xc_nctx[i]) +
		     tdnn_context_right(xc_ctx[i], xc_nctx[i]);
	return T;
}

/* xvec_cuda_state.cu: device workspace and the parameters' layout. */
void xc_free_workspace(struct xvec_cuda *g);
int xc_alloc(void *pp, size_t bytes, int *failed);
int xc_alloc_workspace(struct xvec_cuda *g, int B, int T, char *err, size_t errlen);
int xc_layout(struct xvec_cuda *g, struct xvec_model *m, char *err, size_t errlen);
int xc_check_mirror(struct xvec_cuda *g, struct xvec_model *m, char *err, size_t errlen);
/* bf16: round params into params_bf16 (on the stream); no-op otherwise. */
void xc_refresh_bf16(struct xvec_cuda *g);

#endif
