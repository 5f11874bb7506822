/* xvec_model.h — the x-vector TDNN (Snyder et al., 2018) as a trainable CPU model.
 *
 * The reference implementation of the trainer's network, and the model that
 * trains where there is no GPU. The trainer executable drives it:
 *   xvec_model_create(options, max batch, max frames)
 *   loop: xvec_model_train_step(batch, labels) -> loss, accuracy
 *   xvec_model_eval / xvec_model_embed on held-out data
 *   xvec_checkpoint_save / xvec_checkpoint_load (xvec_checkpoint.h)
 *
 * Network, input x (B, feat_dim, T) float32 as the daemon writes it:
 *   frame1..5: a = tdnn(x) with contexts [-2..2], {-2,0,2}, {-3,0,3}, {0}, {0}
 *              (widths width x4, then pool_width), y = dropout(bn(relu(a)));
 *              T shrinks by 14 frames in all, so T must be at least 15.
 *   noise:     training only, y5 + noise_eps * philox_normal(seed, step, i),
 *              i the flat (B, pool_width, T-14) index; regenerated in backward.
 *   pool:      mean and sqrt(biased var + 1e-5) over time -> (B, 2 pool_width)
 *   seg6:      a6 = affine(pool) (the x-vector), y6 = bn(relu(a6))
 *   seg7:      y7 = bn(relu(affine(y6)))
 *   out:       logits = affine(y7); softmax cross-entropy, mean over the batch.
 * Batch norm (with learnable scale and shift) uses batch statistics in
 * training and running statistics (momentum 0.1, eps 1e-5) in evaluation.
 * Dropout (frame layers only) is inverted dropout with Philox masks on
 * subsequence tdnn_dropout_subseq(step, layer). `step` is the number of
 * optimizer steps taken so far, so every random number is a function of
 * (seed, step, layer, element) and a resumed run repeats an uninterrupted one
 * bit for bit.
 *
 * All functions return 0 or a negative code (FEEDER_EINVAL, -ENOMEM, ...) and
 * fill err with one sentence; nothing exits or aborts. A model is not
 * thread-safe; OpenBLAS (and OpenMP, when built with it) may use threads
 * inside each call, without changing any result. */
#ifndef FEEDER_XVEC_MODEL_H
#define FEEDER_XVEC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "adam.h"

#define XVEC_FRAME_LAYERS 5
#define XVEC_BN_LAYERS 7
/* Frames consumed by the frame-level contexts (7 left + 7 right). */
#define XVEC_CONTEXT 14
/* Largest layer size (feat_dim, width, pool_width, embed) and speaker count. */
#define XVEC_MAX_SIZE 65536
#define XVEC_MAX_SPEAKERS 10000000
/* Steps stay below this: dropout draws on subsequences step + (layer << 40)
 * (tdnn_dropout_subseq), which a larger step would share. */
#define XVEC_MAX_STEP (1ull << 40)

struct xvec_options {
	int feat_dim;       /* input features per frame (D) */
	int width;          /* frame layers 1-4 (512) */
	int pool_width;     /* frame layer 5, pooled (1500) */
	int embed;          /* segment layers 6-7, the x-vector size (512) */
	int num_speakers;   /* softmax classes */
	float dropout;      /* frame-layer dropout probability, [0, 1) (0) */
	float noise_eps;    /* std of the training noise before pooling (0) */
	float lr;           /* Adam learning rate (1e-3) */
	float beta1, beta2; /* 0.9, 0.999 */
	float adam_eps;     /* 1e-8 */
	float weight_decay; /* decoupled, on weight matrices only (0) */
	uint64_t seed;      /* init, dropout and noise (1) */
};

/* Fill o with the defaults given above; feat_dim 30 and num_speakers 0,
 * which the caller must set. */
void xvec_options_default(struct xvec_options *o);

/* A named parameter tensor, a view into the model's parameter array. */
struct xvec_tensor {
	const char *name; /* "frame1.weight", "bn3.gamma", "out.bias", ... */
	float *data;
	float *grad;
	size_t size;
	int rows, cols; /* weight: (out, in * context); vectors: (size, 1) */
};

/* The results of one forward pass. */
struct xvec_result {
	double loss;    /* mean cross-entropy (0 when no labels were given) */
	int correct;    /* rows whose arg-max is the label */
	float accuracy; /* correct / batch */
};

struct xvec_model;

/* Validate options, initialize parameters (He normal for layers followed by
 * ReLU, Xavier normal for the output layer, zero biases, unit BN scales; all
 * from Philox with the seed) and allocate the workspace for batches of up to
 * max_batch utterances of up to max_frames frames. */
int xvec_model_create(struct xvec_model **out, const struct xvec_options *o, int max_batch,
		      int max_frames, char *err, size_t errlen);

void xvec_model_destroy(struct xvec_model *m);

/* The parameter count and running-statistics count of a model of options
 * o, whose sizes must be in range (1 to XVEC_MAX_SIZE, speakers 2 to
 * XVEC_MAX_SPEAKERS): what a checkpoint of that shape holds, known before
 * anything is allocated. */
void xvec_model_sizes(const struct xvec_options *o, size_t *nparams, size_t *nbn);

/* Check state about to be loaded into m (arrays laid out as m's: parameters,
 * Adam's first and second moments, running statistics): every value finite,
 * second moments and running variances not negative. 0, or FEEDER_ECORRUPT
 * with a sentence naming the tensor and element ("bn3 running variance[5] is
 * -0.5 ..."). */
int xvec_model_check_state(const struct xvec_model *m, const float *params, const float *am,
			   const float *av, const float *bn, char *err, size_t errlen);

/* Grow the workspace to hold (batch, frames) if it does not already. */
int xvec_model_reserve(struct xvec_model *m, int batch, int frames, char *err, size_t errlen);

/* One training step: forward in training mode, backward, AdamW update,
 * step + 1. x is (batch, feat_dim, frames); labels in [0, num_speakers).
 * res (may be NULL) gets the loss and accuracy of the forward pass. A loss
 * that is not finite (NaN or infinite input) returns -EDOM and leaves the
 * parameters, optimizer state, running statistics and step as they were. */
int xvec_model_train_step(struct xvec_model *m, const float *x, const int32_t *labels, int batch,
			  int frames, struct xvec_result *res, char *err, size_t errlen);

/* Data-parallel training (xvec train under MPI; see xvec_dist.h): this
 * model is replica `rank` of `world`, each trained on an equal local batch.
 * sum_d / sum_f add a buffer over every rank in place (0 or a negative
 * code; ctx is theirs). A training step then averages the gradients over
 * the ranks before the optimizer step (so that the replicas stay equal),
 * refuses the step on every rank when any rank's loss is not finite, and
 * draws noise and dropout by each sample's row in the global batch; with
 * sync_bn the batch-norm statistics are those of the global batch (else
 * per rank, as PyTorch's DDP). world 1 undoes it. reduce_s (may be NULL)
 * accumulates the seconds spent in gradient sums. 0 or -ENOMEM. */
int xvec_model_set_dp(struct xvec_model *m, int rank, int world,
		      int (*sum_d)(void *ctx, double *v, size_t n),
		      int (*sum_f)(void *ctx, float *v, size_t n), void *ctx, int sync_bn,
		      double *reduce_s);

/* Forward pass only. training != 0 uses batch statistics (and updates the
 * running ones), dropout and noise at the current step, and keeps what
 * xvec_model_backward needs; training == 0 is the evaluation network.
 * labels may be NULL (no loss). */
int xvec_model_forward(struct xvec_model *m, const float *x, const int32_t *labels, int batch,
		       int frames, int training, struct xvec_result *res, char *err, size_t errlen);

/* Gradients of the mean loss of the last training-mode forward pass, which
 * must have been given the same x, labels, batch and frames: parameter
 * gradients are overwritten (see xvec_model_tensor), and dx, when not NULL,
 * receives d loss / d x (batch, feat_dim, frames). */
int xvec_model_backward(struct xvec_model *m, const float *x, const int32_t *labels, int batch,
			int frames, float *dx, char *err, size_t errlen);

/* Evaluation-mode forward pass; with labels, res gets loss and accuracy. */
int xvec_model_eval(struct xvec_model *m, const float *x, const int32_t *labels, int batch,
		    int frames, struct xvec_result *res, char *err, size_t errlen);

/* x-vectors (the segment-6 affine output, before its ReLU) of a batch in
 * evaluation mode: out is (batch, embed). */
int xvec_model_embed(struct xvec_model *m, const float *x, int batch, int frames, float *out,
		     char *err, size_t errlen);

/* Class probabilities (batch, num_speakers) of the last forward pass. */
const float *xvec_model_probs(const struct xvec_model *m);

/* Parameters by index (0 .. xvec_model_num_tensors - 1) or name (NULL if none). */
int xvec_model_num_tensors(const struct xvec_model *m);
const struct xvec_tensor *xvec_model_tensor(const struct xvec_model *m, int i);
const struct xvec_tensor *xvec_model_find(const struct xvec_model *m, const char *name);

/* The flat parameter and gradient arrays (n floats each): weight matrices
 * first (the first xvec_model_num_decay floats), then biases and BN scales
 * and shifts. */
float *xvec_model_params(struct xvec_model *m, size_t *n);
float *xvec_model_grads(struct xvec_model *m, size_t *n);
size_t xvec_model_num_decay(const struct xvec_model *m);

/* Running statistics, n floats: for BN layer l = 0..6 (frame1..5, seg6,
 * seg7) its running means then its running variances. */
float *xvec_model_bn_stats(struct xvec_model *m, size_t *n);
/* Offset of layer l's running means in that array; its variances follow
 * the means, channels floats later. */
size_t xvec_model_bn_offset(const struct xvec_model *m, int layer, int *channels);

/* Optimizer state (moments and step count t == the model's step). */
struct adam *xvec_model_adam(struct xvec_model *m);
uint64_t xvec_model_step(const struct xvec_model *m);

/* The options the model was created with (the seed may have been replaced
 * by a loaded checkpoint's). */
const struct xvec_options *xvec_model_options(const struct xvec_model *m);
void xvec_model_set_seed(struct xvec_model *m, uint64_t seed);

/* Set the learning rate for the following steps (schedules). */
void xvec_model_set_lr(struct xvec_model *m, float lr);

#endif
