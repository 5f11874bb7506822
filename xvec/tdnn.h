/* tdnn.h — the layers of the x-vector TDNN, forward and backward, float32 on the CPU.
 *
 * These kernels are the reference that the CUDA trainer is tested against, and
 * the model that runs where there is no GPU. xvec_model.c strings them
 * together; each function here works on caller-owned buffers and allocates
 * nothing. Layouts follow the data as the daemon delivers it:
 *   frame-level tensors   (B, C, T) row-major: batch, channel, frame;
 *   segment-level tensors (B, C), treated by the batch-norm code as (B, C, 1).
 * Weights are row-major (out, in); a TDNN layer with K context offsets has
 * W of shape (H, K*D) whose column block k multiplies the input frame t+off[k].
 * Backward functions ACCUMULATE into dW/db/dgamma/dbeta (the caller zeroes
 * them once per step) and OVERWRITE dx. Matrix products go through
 * cblas_sgemm (with tdnn_set_gemm_rounding, on rounded copies of their
 * inputs); elementwise loops are written to vectorize. */
#ifndef FEEDER_TDNN_H
#define FEEDER_TDNN_H

#include <stddef.h>
#include <stdint.h>

/* Batch-norm epsilon and running-statistics momentum (PyTorch's defaults). */
#define TDNN_BN_EPS 1e-5f
#define TDNN_BN_MOMENTUM 0.1f
/* Added to the variance inside the pooling standard deviation:
 * std = sqrt(var + TDNN_POOL_EPS), var the biased (divide by T) variance. */
#define TDNN_POOL_EPS 1e-5f

/* Rounding of every matrix product's inputs, to emulate a GPU's reduced
 * precision GEMMs (xvec_cuda's tf32 and bf16 modes) in this reference: the
 * inputs are rounded to nearest even at 10 (tf32) or 7 (bf16) mantissa bits
 * and the products accumulate in float32, as on the device. The first three
 * values equal enum xvec_precision's. TDNN_ROUND_TF32_TRUNC drops the low 13
 * bits instead: cuBLAS does not say how its tf32 tensor-core kernels convert
 * float operands, and the hardware, fed a float as it is, ignores those bits,
 * so the device tests bound a tf32 run by both references. Process-wide; set
 * it between steps only (tests compare a GPU run with the reference in the
 * same mode). */
enum tdnn_rounding {
	TDNN_ROUND_NONE = 0,
	TDNN_ROUND_TF32 = 1,
	TDNN_ROUND_BF16 = 2,
	TDNN_ROUND_TF32_TRUNC = 3,
};
void tdnn_set_gemm_rounding(int mode);
int tdnn_gemm_rounding(void);
/* v rounded as the mode rounds a GEMM input (NaN and infinities as they are). */
float tdnn_round(float v, int mode);

/* Frames lost to the context offsets off[0] <= ... <= off[k-1]. */
int tdnn_context_left(const int *off, int k);
int tdnn_context_right(const int *off, int k);

/* y (B, H, T') = W (H, K*D) applied to the spliced frames of x (B, D, T),
 * plus bias; T' = T - left - right. One sgemm per (batch, offset). */
void tdnn_affine_forward(const float *x, int B, int D, int T, const int *off, int K, const float *W,
			 const float *bias, int H, float *y);

/* Backward of tdnn_affine_forward given dy (B, H, T'). dx (B, D, T) may be
 * NULL (the input layer); dW and db accumulate. */
void tdnn_affine_backward(const float *x, const float *dy, int B, int D, int T, const int *off,
			  int K, const float *W, int H, float *dx, float *dW, float *db);

/* Data-parallel training (xvec train under MPI): this process is rank of
 * world, each with an equal local batch. Random draws of sample j of a
 * local batch use the counters the same sample would have at row
 * j * world + rank of the one global batch (the ranks' batches interleave
 * like their shares of the epoch), so noise and dropout do not depend on
 * how samples are spread over ranks. sum(ctx, v, n) adds v over every rank
 * in place (all ranks call it with the same n). With sync_bn, batch-norm
 * statistics are summed over the ranks (sync batch-norm): buf holds
 * 2 * channels + 1 doubles; failed keeps sum's first error. NULL where a
 * function takes a struct tdnn_dp: one process. */
struct tdnn_dp {
	int rank, world;
	int (*sum)(void *ctx, double *v, size_t n);
	void *ctx;
	int sync_bn;
	double *buf;
	int failed;
};

/* Training mode: r = relu(a); y = gamma * (r - mean) * invstd + beta with
 * the batch mean and biased variance of each channel over (B, L); the
 * running statistics move by TDNN_BN_MOMENTUM towards the batch mean and the
 * unbiased batch variance (as PyTorch does). r may alias a. mean and invstd
 * (C each) are kept for the backward pass. */
void tdnn_relu_bn_train(const float *a, int B, int C, int L, const float *gamma, const float *beta,
			float *running_mean, float *running_var, float *r, float *mean,
			float *invstd, float *y);

/* The same with dp (may be NULL): with dp->sync_bn the mean and variance are
 * those of the ranks' batches together. */
void tdnn_relu_bn_train_dp(const float *a, int B, int C, int L, const float *gamma,
			   const float *beta, float *running_mean, float *running_var, float *r,
			   float *mean, float *invstd, float *y, struct tdnn_dp *dp);

/* Evaluation mode: y = gamma * (relu(a) - running_mean) / sqrt(running_var + eps) + beta.
 * y may alias a. */
void tdnn_relu_bn_eval(const float *a, int B, int C, int L, const float *gamma, const float *beta,
		       const float *running_mean, const float *running_var, float *y);

/* Backward of tdnn_relu_bn_train from the kept r, mean, invstd: da from dy
 * (da may alias dy); dgamma and dbeta accumulate. */
void tdnn_relu_bn_backward(const float *r, int B, int C, int L, const float *gamma,
			   const float *mean, const float *invstd, const float *dy, float *da,
			   float *dgamma, float *dbeta);
/* With dp->sync_bn: da through the statistics of all ranks' batches (dgamma
 * and dbeta still accumulate this rank's part; the gradient average over
 * ranks completes them). */
void tdnn_relu_bn_backward_dp(const float *r, int B, int C, int L, const float *gamma,
			      const float *mean, const float *invstd, const float *dy, float *da,
			      float *dgamma, float *dbeta, struct tdnn_dp *dp);

/* The counter subsequence of dropout in frame layer `layer` at training step
 * `step`: step + (layer + 1) * 2^40, so that masks of different layers and
 * the noise (subsequence = step) never share counters. Steps stay below 2^40. */
uint64_t tdnn_dropout_subseq(uint64_t step, int layer);

/* Inverted dropout in place: element i is kept when
 * philox_uniform(seed, subseq, i) > p and then scaled by 1 / (1 - p). p in
 * [0, 1); p == 0 leaves y untouched. */
void tdnn_dropout(float *y, size_t n, float p, uint64_t seed, uint64_t subseq);

/* The backward of tdnn_dropout: the same mask, regenerated, applied to dy. */
void tdnn_dropout_backward(float *dy, size_t n, float p, uint64_t seed, uint64_t subseq);

/* Both with the counters of data-parallel rank dp (see struct tdnn_dp): y
 * holds samples of per elements each. */
void tdnn_dropout_dp(float *y, size_t n, size_t per, float p, uint64_t seed, uint64_t subseq,
		     const struct tdnn_dp *dp);
void tdnn_dropout_backward_dp(float *dy, size_t n, size_t per, float p, uint64_t seed,
			      uint64_t subseq, const struct tdnn_dp *dp);

/* out[i] = x[i] + eps * philox_normal(seed, subseq, i): the training noise
 * on the last frame-level output. out may alias x. */
void tdnn_noise_add(const float *x, float *out, size_t n, float eps, uint64_t seed,
		    uint64_t subseq);
/* The same with the counters of data-parallel rank dp: x holds samples of
 * per elements each. */
void tdnn_noise_add_dp(const float *x, float *out, size_t n, size_t per, float eps, uint64_t seed,
		       uint64_t subseq, const struct tdnn_dp *dp);

/* Statistics pooling: out (B, 2C) = [mean over T, sqrt(biased var + TDNN_POOL_EPS)]
 * of x (B, C, T). */
void tdnn_stats_pool_forward(const float *x, int B, int C, int T, float *out);

/* Backward of the pooling, given its input x, output out and dout (B, 2C);
 * writes dx (B, C, T). */
void tdnn_stats_pool_backward(const float *x, int B, int C, int T, const float *out,
			      const float *dout, float *dx);

/* y (B, nout) = x (B, nin) W^T + b with W (nout, nin). */
void tdnn_dense_forward(const float *x, int B, int nin, const float *W, const float *b, int nout,
			float *y);

/* Backward of tdnn_dense_forward: dx (may be NULL) overwritten, dW and db accumulate. */
void tdnn_dense_backward(const float *x, const float *dy, int B, int nin, const float *W, int nout,
			 float *dx, float *dW, float *db);

/* Softmax cross-entropy of logits (B, S) against labels in [0, S): returns the
 * mean loss over the batch, writes the probabilities (B, S) to probs (may
 * alias logits), the gradient (probs - onehot) / B to dlogits when not NULL,
 * and the number of rows whose arg-max equals the label to *correct. Labels
 * must have been validated by the caller; with labels NULL only the
 * probabilities are computed (loss and *correct are 0). */
double tdnn_softmax_xent(const float *logits, const int32_t *labels, int B, int S, float *probs,
			 float *dlogits, int *correct);

#endif
