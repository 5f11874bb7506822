/* adam.h — the Adam optimizer with decoupled weight decay (AdamW) for the x-vector model.
 *
 * Loshchilov & Hutter's decoupled decay, computed like torch.optim.AdamW:
 *   t += 1
 *   p *= 1 - lr * weight_decay                    (decay group only)
 *   m  = beta1 m + (1 - beta1) g
 *   v  = beta2 v + (1 - beta2) g^2
 *   p -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * Decoupled rather than L2-in-the-gradient so that the decay strength does not
 * depend on the adaptive step size. The model lays its parameters out as one
 * array, weight matrices first (decayed), then biases and batch-norm scales
 * and shifts (not decayed), so one call updates everything. The state (m, v,
 * t) is part of a checkpoint. */
#ifndef FEEDER_ADAM_H
#define FEEDER_ADAM_H

#include <stddef.h>
#include <stdint.h>

struct adam {
	size_t n;     /* parameters */
	float *m, *v; /* first and second moments, n each */
	uint64_t t;   /* completed steps */
	float lr, beta1, beta2, eps, weight_decay;
};

/* Allocate zeroed moments for n parameters and set the hyper-parameters
 * (lr, betas 0.9/0.999, eps 1e-8 are the usual choices). Returns 0 or
 * -ENOMEM / FEEDER_EINVAL with a sentence in err. */
int adam_init(struct adam *a, size_t n, float lr, float beta1, float beta2, float eps,
	      float weight_decay, char *err, size_t errlen);

/* The first index below n whose first moment m is not finite or whose
 * second moment v is not finite or negative (*second says which: 0 or 1),
 * or n when every moment is sound: a state Adam can step from. */
size_t adam_bad_moment(const float *m, const float *v, size_t n, int *second);

/* Free the moments; a zeroed struct is fine. */
void adam_free(struct adam *a);

/* One step over params[0..n) with gradients grads[0..n); weight decay applies
 * to params[0..n_decay) only. */
void adam_step(struct adam *a, float *params, const float *grads, size_t n_decay);

#endif
