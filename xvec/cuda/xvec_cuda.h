/* xvec_cuda.h — the x-vector TDNN trained on a GPU, mirroring xvec_model.h.
 *
 * The same network, initialization, random numbers and AdamW as the CPU
 * reference (xvec_model.h), computed on one CUDA device: TDNN and dense
 * layers as cuBLAS GEMMs, fused ReLU + batch-norm + dropout kernels, the
 * training noise made inside the pooling kernels from Philox counters
 * (tdnn_cuda.h), softmax cross-entropy and AdamW on the device. A training
 * step is enqueued on the model's CUDA stream and returns without waiting;
 * the loss stays on the device until xvec_cuda_metrics reads it (once per
 * logging interval).
 *
 * State lives on the device; a CPU struct xvec_model is its host mirror:
 * xvec_cuda_create copies the model's parameters, Adam moments and step,
 * batch-norm statistics and seed to the device, and xvec_cuda_to_model copies
 * them back, so checkpoints (xvec_checkpoint.h) keep one format and tests can
 * compare the two implementations on the same weights. Typical use:
 *   xvec_model_create(&m, &opts, 1, XVEC_CONTEXT + 1)  (the mirror; tiny workspace)
 *   [xvec_checkpoint_load(m, ...)]
 *   xvec_cuda_create(&g, m, &cfg, max_batch, frames)
 *   loop: xvec_cuda_train_step(g, x_dev, labels_dev, batch, frames)
 *         every N steps: xvec_cuda_metrics(g, &mt, 1)
 *   xvec_cuda_to_model(g, m); xvec_checkpoint_save(m, ...)
 *
 * Input batches are DEVICE pointers: x (batch, feat_dim, frames) float32 as
 * the daemon writes it, labels int32 (see xvec_feed.h for the copy from a
 * libfeeder stream). Labels are checked on the device: one outside
 * [0, num_speakers) is reported by the next xvec_cuda_metrics.
 *
 * Functions return 0 or a negative code (FEEDER_EINVAL, FEEDER_ENODEV,
 * -ENOMEM, -EIO for a CUDA or cuBLAS failure) and fill err with one sentence.
 * A model is used by one thread at a time. */
#ifndef FEEDER_XVEC_CUDA_H
#define FEEDER_XVEC_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

struct xvec_model;
struct xvec_result;

/* GEMM arithmetic. All keep float32 master weights, activations and
 * accumulation; they differ in the GEMM inputs. */
enum xvec_precision {
	XVEC_PRECISION_FP32 = 0, /* IEEE float32 products */
	XVEC_PRECISION_TF32 = 1, /* tensor cores, inputs rounded to TF32 */
	XVEC_PRECISION_BF16 = 2, /* GEMM inputs rounded to bfloat16 */
};

struct xvec_cuda_config {
	int precision; /* enum xvec_precision (fp32) */
	int autotune;  /* time GEMM strategies and algorithms at create (0) */
	int strategy;  /* without autotune: 0 splice, 1 offset (see xvec_cuda.cu) (0) */
	FILE *log;     /* where autotune prints its choices; NULL: silent */
	int device;    /* CUDA device ordinal (0) */
};

void xvec_cuda_config_default(struct xvec_cuda_config *c);

/* "fp32", "tf32" or "bf16" -> *precision; FEEDER_EINVAL otherwise. */
int xvec_cuda_parse_precision(const char *s, int *precision, char *err, size_t errlen);
const char *xvec_cuda_precision_name(int precision);

/* Training metrics accumulated on the device since the last reset. */
struct xvec_cuda_metrics {
	long long steps;  /* training steps */
	double loss;      /* mean of the steps' mean losses */
	double accuracy;  /* correct / rows over those steps */
	double last_loss; /* the last step's mean loss */
	float last_accuracy;
	long long skipped; /* steps whose loss was not finite: no update made */
};

struct xvec_cuda;

/* Create the device model from the host mirror m (options, parameters, Adam
 * state, running statistics, seed and step are copied; m is not kept) with
 * room for batches up to max_batch x max_frames. With cfg->autotune the
 * GEMM strategy of each context layer is timed on that shape and the fastest
 * kept, then one training step on random data times cublasGemmEx against
 * cuBLASLt's candidate algorithms for each single GEMM and keeps the fastest
 * whose result matches (choices printed to cfg->log; the model's state is
 * unchanged). FEEDER_ENODEV when there is no usable device. */
int xvec_cuda_create(struct xvec_cuda **out, struct xvec_model *m,
		     const struct xvec_cuda_config *cfg, int max_batch, int max_frames, char *err,
		     size_t errlen);

void xvec_cuda_destroy(struct xvec_cuda *g);

/* The stream every call of g enqueues on (the feed orders its copies
 * against it). */
cudaStream_t xvec_cuda_stream(const struct xvec_cuda *g);

/* One training step (forward in training mode, backward, AdamW, step + 1),
 * enqueued on the model's stream; x and labels must stay valid and unchanged
 * until the stream has passed this step. Does not synchronize. A step whose
 * loss is not finite changes neither the parameters, the optimizer moments
 * nor the running statistics (as on the CPU), is counted, and makes the next
 * xvec_cuda_metrics return -EDOM; the step counter still advances. */
int xvec_cuda_train_step(struct xvec_cuda *g, const float *x, const int32_t *labels, int batch,
			 int frames, char *err, size_t errlen);

/* Forward pass (as xvec_model_forward). labels may be NULL. When res is not
 * NULL the call waits for the result (loss and accuracy); otherwise it only
 * enqueues. In training mode it keeps what xvec_cuda_backward needs. */
int xvec_cuda_forward(struct xvec_cuda *g, const float *x, const int32_t *labels, int batch,
		      int frames, int training, struct xvec_result *res, char *err, size_t errlen);

/* Gradients of the last training forward pass, which must have had the same
 * x, labels, batch and frames (as xvec_model_backward). dx (device, may be
 * NULL) receives d loss / d x, (batch, feat_dim, frames). Enqueues only. */
int xvec_cuda_backward(struct xvec_cuda *g, const float *x, const int32_t *labels, int batch,
		       int frames, float *dx, char *err, size_t errlen);

/* Read (and with reset, zero) the accumulated training metrics; waits for
 * the stream. FEEDER_EINVAL if a label was out of range, -EDOM if a step was
 * skipped for a non-finite loss, since the last reset (mt is filled either
 * way). */
int xvec_cuda_metrics(struct xvec_cuda *g, struct xvec_cuda_metrics *mt, int reset, char *err,
		      size_t errlen);

/* Evaluation-mode forward pass; waits and fills res (labels may be NULL). */
int xvec_cuda_eval(struct xvec_cuda *g, const float *x, const int32_t *labels, int batch,
		   int frames, struct xvec_result *res, char *err, size_t errlen);

/* x-vectors (segment-6 affine outputs) of a batch in evaluation mode into
 * host memory out (batch, embed); waits. */
int xvec_cuda_embed(struct xvec_cuda *g, const float *x, int batch, int frames, float *out,
		    char *err, size_t errlen);

/* Class probabilities (batch, num_speakers) of the last forward pass into
 * host memory; waits. */
int xvec_cuda_probs(struct xvec_cuda *g, float *out, int batch, char *err, size_t errlen);

/* Parameter gradients of the last backward pass into host memory, laid out
 * as xvec_model_grads (n must equal the model's parameter count); waits. */
int xvec_cuda_grads(struct xvec_cuda *g, float *out, size_t n, char *err, size_t errlen);

/* Copy the complete training state to / from the host mirror m, which must
 * have the same sizes. to_model waits for the stream. */
int xvec_cuda_to_model(struct xvec_cuda *g, struct xvec_model *m, char *err, size_t errlen);
int xvec_cuda_from_model(struct xvec_cuda *g, struct xvec_model *m, char *err, size_t errlen);

/* Data parallel on the device (xvec train --device cuda under MPI): this
 * model is replica `rank` of `world`, each trained on an equal local batch,
 * with the semantics of the CPU model's xvec_model_set_dp. sum_f / sum_d add
 * n device floats / doubles over every rank in place, enqueued on the stream
 * they are given (the model's), and return 0 or a negative code; every rank
 * calls them in the same order with the same n (xvec_nccl.h provides them;
 * ctx is theirs). A training step then
 *   - sums the last loss over the ranks, so that a non-finite loss on any
 *     rank skips the update on all;
 *   - sums the gradients after the backward pass and scales them by
 *     1 / world (the mean over the global batch) before AdamW;
 *   - draws dropout and noise by each sample's row in the global batch
 *     (local row b is global row b * world + rank);
 *   - with sync_bn, normalizes with the batch-norm statistics of the global
 *     batch (summed over the ranks in every layer, forward and backward),
 *     else per rank, as the CPU model does.
 * dp NULL (or world 1 without sums) undoes it; world 1 with sums takes the
 * data-parallel path over one rank, which must change no bit (the tests'
 * check of the plumbing). 0, or FEEDER_EINVAL / -ENOMEM. */
struct xvec_cuda_dp {
	int rank, world;
	int sync_bn;
	int (*sum_f)(void *ctx, float *v, size_t n, cudaStream_t stream);
	int (*sum_d)(void *ctx, double *v, size_t n, cudaStream_t stream);
	void *ctx;
};
int xvec_cuda_set_dp(struct xvec_cuda *g, const struct xvec_cuda_dp *dp, char *err, size_t errlen);

/* Device seconds spent in the gradient sums since create (timed with
 * events; waits for the steps still timing). 0 without data parallelism. */
double xvec_cuda_reduce_s(struct xvec_cuda *g);

/* Learning rate for the following steps (schedules); optimizer steps taken. */
void xvec_cuda_set_lr(struct xvec_cuda *g, float lr);
uint64_t xvec_cuda_step(const struct xvec_cuda *g);

/* Training noise (EPS) of the following steps; tests/bench/xvec_gpu_bench
 * alternates it in one process to time its cost on the same GEMM choices. */
void xvec_cuda_set_noise_eps(struct xvec_cuda *g, float eps);

#ifdef __cplusplus
}
#endif

#endif
