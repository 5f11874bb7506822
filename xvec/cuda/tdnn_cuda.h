/* tdnn_cuda.h — the x-vector TDNN's elementwise and reduction kernels on the GPU.
 *
 * The CUDA counterpart of tdnn.h, one launcher per CPU reference function,
 * so that tests/xvec_cuda can hold each kernel to its CPU twin. The matrix
 * products are not here: xvec_cuda.cu runs them through cuBLAS. Every
 * launcher enqueues on `stream` and returns at once; launch errors surface
 * through cudaGetLastError() in the caller.
 *
 * Layouts on the device:
 *   frame-level tensors are CHANNEL-MAJOR (C, B, L) row-major, i.e. channel c
 *   is one contiguous run of B*L values (frame t of utterance b at
 *   c*B*L + b*L + t). A TDNN layer is then one GEMM over all B*L columns,
 *   and per-channel batch-norm reductions read contiguous memory. The CPU
 *   reference's (B, C, L) layout is converted at the input (tdnn_cuda_to_cbt)
 *   and for comparisons.
 *   segment-level tensors are (B, C) row-major, as on the CPU.
 * Random numbers are indexed exactly as on the CPU: dropout element and noise
 * element i is the flat (B, C, L) index of the CPU reference, whatever the
 * device layout, so masks and noise match tdnn.c (see tdnn_cuda.cu on how
 * exactly). */
#ifndef FEEDER_TDNN_CUDA_H
#define FEEDER_TDNN_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* At most this many context offsets per TDNN layer. */
#define TDNN_CUDA_MAX_CONTEXT 8

/* Training loss and accuracy, accumulated on the device so that a training
 * step never waits for the host; read with one copy per logging interval. */
struct tdnn_cuda_acc {
	double loss_sum;   /* sum over steps of the mean batch loss */
	double last_loss;  /* mean loss of the last batch */
	long long correct; /* rows whose arg-max was the label */
	long long rows;    /* rows seen */
	long long steps;   /* batches seen */
	int last_correct, last_rows;
	int bad_label; /* 1 once a label outside [0, S) was seen */
	int pad;
	long long skipped; /* training steps skipped for a non-finite loss */
};

/* Data parallel (tdnn.h's struct tdnn_dp): this process's local row b is row
 * b * world + rank of the global batch, and its dropout and noise use that
 * row's counters, so that they do not depend on how the batch is spread
 * over the ranks. { 0, 1 }: one process. The _dp launchers take it; the
 * others are those launchers with { 0, 1 }. */
struct tdnn_cuda_rows {
	int rank, world;
};

/* (B, C, T) -> (C, B, T) and back. */
void tdnn_cuda_to_cbt(const float *x, int B, int C, int T, float *out, cudaStream_t stream);
void tdnn_cuda_from_cbt(const float *x, int B, int C, int T, float *out, cudaStream_t stream);

/* S (K*D, B*Tp) from x (D, B*T): row k*D + d, column b*Tp + t holds
 * x[d, b, t + left + off[k]], with left, Tp as tdnn_context_left/right give. */
void tdnn_cuda_splice(const float *x, int D, int B, int T, const int *off, int K, float *S,
		      cudaStream_t stream);
/* The same, S written in bfloat16 (rounded to nearest even): the bf16
 * trainer's GEMM operand, made without a float copy first. */
void tdnn_cuda_splice_bf16(const float *x, int D, int B, int T, const int *off, int K, void *S,
			   cudaStream_t stream);

/* The adjoint of tdnn_cuda_splice: dx (D, B*T) = sum over k of dS's row block
 * k shifted back into place (overwrites dx; frames no offset reaches get 0). */
void tdnn_cuda_unsplice(const float *dS, int D, int B, int T, const int *off, int K, float *dx,
			cudaStream_t stream);

/* Training-mode r = relu(a + bias) (in place in a), batch-norm with batch
 * statistics per channel over (B, L), running statistics updated as
 * tdnn_relu_bn_train does, mean and invstd kept, y = bn(r) then inverted
 * dropout with p (0: none) from philox_uniform(seed, subseq, i), i the CPU
 * (B, C, L) index. channel_major: 1 for (C, B, L) frame tensors, 0 for (B, C)
 * segment tensors (L must then be 1). bias may be NULL. */
void tdnn_cuda_relu_bn_train(float *a, const float *bias, int B, int C, int L, int channel_major,
			     const float *gamma, const float *beta, float *running_mean,
			     float *running_var, float *mean, float *invstd, float *y, float p,
			     uint64_t seed, uint64_t subseq, cudaStream_t stream);

void tdnn_cuda_relu_bn_train_dp(float *a, const float *bias, int B, int C, int L, int channel_major,
				const float *gamma, const float *beta, float *running_mean,
				float *running_var, float *mean, float *invstd, float *y, float p,
				uint64_t seed, uint64_t subseq, struct tdnn_cuda_rows rows,
				cudaStream_t stream);

/* tdnn_cuda_relu_bn_train as sync batch-norm over the ranks (tdnn.c's
 * tdnn_relu_bn_train_dp with sync_bn): three launches with a sum over the
 * ranks of device doubles s (2C + 1, the layout of struct tdnn_dp's buf)
 * after each of the first two:
 *   bn_sync_sum:    r = relu(a + bias) in place; s[c] = sum of r, s[C] = B*L
 *   (sum s[0..C] over the ranks)
 *   bn_sync_ss:     s[C + 1 + c] = sum of (r - mean)^2, mean = s[c] / s[C]
 *   (sum s[C+1 .. 2C] over the ranks)
 *   bn_sync_finish: as the fused kernel from those global statistics. */
void tdnn_cuda_bn_sync_sum(float *a, const float *bias, int B, int C, int L, int channel_major,
			   double *s, cudaStream_t stream);
void tdnn_cuda_bn_sync_ss(const float *r, int B, int C, int L, int channel_major, double *s,
			  cudaStream_t stream);
void tdnn_cuda_bn_sync_finish(const float *r, int B, int C, int L, int channel_major,
			      const float *gamma, const float *beta, float *running_mean,
			      float *running_var, float *mean, float *invstd, float *y, float p,
			      uint64_t seed, uint64_t subseq, struct tdnn_cuda_rows rows,
			      const double *s, cudaStream_t stream);

/* Evaluation mode: y = gamma * (relu(a + bias) - rm) / sqrt(rv + eps) + beta.
 * y may alias a. */
void tdnn_cuda_relu_bn_eval(const float *a, const float *bias, int B, int C, int L,
			    int channel_major, const float *gamma, const float *beta,
			    const float *running_mean, const float *running_var, float *y,
			    cudaStream_t stream);

/* Backward of dropout, batch norm and ReLU from the kept r, mean, invstd:
 * dy is replaced by da, the gradient at the affine output. dgamma, dbeta and
 * dbias (the preceding affine layer's bias; may be NULL) are OVERWRITTEN,
 * not accumulated: each is written once per step. */
void tdnn_cuda_relu_bn_backward(const float *r, int B, int C, int L, int channel_major,
				const float *gamma, const float *mean, const float *invstd,
				float *dy, float *dgamma, float *dbeta, float *dbias, float p,
				uint64_t seed, uint64_t subseq, cudaStream_t stream);

void tdnn_cuda_relu_bn_backward_dp(const float *r, int B, int C, int L, int channel_major,
				   const float *gamma, const float *mean, const float *invstd,
				   float *dy, float *dgamma, float *dbeta, float *dbias, float p,
				   uint64_t seed, uint64_t subseq, struct tdnn_cuda_rows rows,
				   cudaStream_t stream);

/* Its sync batch-norm form, around one sum over the ranks of s[0 .. 2C]:
 *   bn_sync_dsums: dropout on dy; s[c] = sum of dy, s[C + c] = sum of
 *                  dy * xhat, s[2C] = B*L; dgamma, dbeta = this rank's sums
 *                  (the gradient average over the ranks completes them)
 *   (sum s over the ranks)
 *   bn_sync_da:    da in place of dy from the global sums; dbias. */
void tdnn_cuda_bn_sync_dsums(const float *r, int B, int C, int L, int channel_major,
			     const float *mean, const float *invstd, float *dy, float *dgamma,
			     float *dbeta, float p, uint64_t seed, uint64_t subseq,
			     struct tdnn_cuda_rows rows, double *s, cudaStream_t stream);
void tdnn_cuda_bn_sync_da(const float *r, int B, int C, int L, int channel_major,
			  const float *gamma, const float *mean, const float *invstd, float *dy,
			  float *dbias, const double *s, cudaStream_t stream);

/* Statistics pooling of x (C, B, T) into out (B, 2C), where the pooled value
 * is x + eps * philox_normal(seed, subseq, i) with i the CPU (B, C, T)
 * index when eps > 0: the training noise, made here and never stored. */
void tdnn_cuda_pool_forward(const float *x, int B, int C, int T, float eps, uint64_t seed,
			    uint64_t subseq, float *out, cudaStream_t stream);

void tdnn_cuda_pool_forward_dp(const float *x, int B, int C, int T, float eps, uint64_t seed,
			       uint64_t subseq, struct tdnn_cuda_rows rows, float *out,
			       cudaStream_t stream);

/* Backward of the pooling: the noise is regenerated from its counters.
 * dx (C, B, T) is overwritten. */
void tdnn_cuda_pool_backward(const float *x, int B, int C, int T, float eps, uint64_t seed,
			     uint64_t subseq, const float *out, const float *dout, float *dx,
			     cudaStream_t stream);
void tdnn_cuda_pool_backward_dp(const float *x, int B, int C, int T, float eps, uint64_t seed,
				uint64_t subseq, struct tdnn_cuda_rows rows, const float *out,
				const float *dout, float *dx, cudaStream_t stream);

/* out[k] = philox_normal / philox_uniform (seed, subseq, first + k): for the
 * tests, which compare the device's numbers with philox.c's. The trainer
 * never materializes noise. */
void tdnn_cuda_normals(float *out, size_t n, uint64_t seed, uint64_t subseq, uint64_t first,
		       cudaStream_t stream);
void tdnn_cuda_uniforms(float *out, size_t n, uint64_t seed, uint64_t subseq, uint64_t first,
			cudaStream_t stream);

/* Softmax cross-entropy of logits + bias (B, S) (bias may be NULL) like
 * tdnn_softmax_xent: probs (B, S), dlogits = (probs - onehot) / B when not
 * NULL and labels are given, per-row loss and hit into row_loss/row_ok.
 * A label outside [0, S) sets acc->bad_label and counts as a miss with 0
 * loss. When acc is not NULL the batch is added to it. */
void tdnn_cuda_softmax_xent(const float *logits, const float *bias, const int32_t *labels, int B,
			    int S, float *probs, float *dlogits, double *row_loss, int *row_ok,
			    struct tdnn_cuda_acc *acc, cudaStream_t stream);

/* out[o] = sum over rows i of dy[i, o], dy (B, n): a dense layer's bias
 * gradient (overwritten). */
void tdnn_cuda_col_sum(const float *dy, int B, int n, float *out, cudaStream_t stream);

/* out (B, n) = a (B, n) + bias (n) per row. */
void tdnn_cuda_add_bias(const float *a, const float *bias, int B, int n, float *out,
			cudaStream_t stream);

/* v[i] *= k, rounded once (the data-parallel gradient's 1 / world). */
void tdnn_cuda_scale(float *v, size_t n, float k, cudaStream_t stream);

/* One AdamW step as adam_step computes it (adam.h), given step =
 * lr / (1 - beta1^t) and inv_sqrt_bc2 = 1 / sqrt(1 - beta2^t) computed by the
 * caller; decay = 1 - lr * weight_decay applies to p[0, n_decay) when
 * weight_decay > 0 (use_decay). The float operations are rounded one by one
 * (no fused multiply-add), in adam.c's order. With guard (may be NULL), the
 * update is skipped when guard->last_loss is not finite. */
void tdnn_cuda_adam(float *p, const float *g, float *m, float *v, size_t n, size_t n_decay,
		    float step, float inv_sqrt_bc2, float beta1, float beta2, float eps,
		    float decay, int use_decay, const struct tdnn_cuda_acc *guard,
		    cudaStream_t stream);

/* What xvec_model_train_step does with a non-finite loss, on the device:
 * when acc->last_loss is not finite, put back the running statistics saved
 * before the step (bn_saved, n floats) and count the step in acc->skipped;
 * tdnn_cuda_adam with the same guard then leaves the parameters alone. */
void tdnn_cuda_guard_step(float *bn, const float *bn_saved, size_t n, struct tdnn_cuda_acc *acc,
			  cudaStream_t stream);

/* out[0] = max |a - b| and out[1] = max |b| over the rows x cols matrices
 * a and b (leading dimension ld), out a device float[2] that the caller
 * zeroes first: autotune's check that a GEMM algorithm computes what the
 * reference GEMM does. A NaN difference compares above every number. */
void tdnn_cuda_max_diff(const float *a, const float *b, int rows, int cols, int ld, float *out,
			cudaStream_t stream);

/* out (bfloat16, n) = x rounded to nearest even. */
void tdnn_cuda_to_bf16(const float *x, size_t n, void *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
