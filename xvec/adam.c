/* adam.c — AdamW (see adam.h for the exact update); elementwise, so the optional
 * OpenMP loop gives the same bits for any thread count. */
#include "adam.h"
#include "status.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int adam_init(struct adam *a, size_t n, float lr, float beta1, float beta2, float eps,
	      float weight_decay, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	if (!(lr > 0.0f) || !(beta1 >= 0.0f && beta1 < 1.0f) || !(beta2 >= 0.0f && beta2 < 1.0f) ||
	    !(eps > 0.0f) || !(weight_decay >= 0.0f))
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"adam: hyper-parameters out of range (lr %g, betas %g/%g, eps %g, "
			"weight decay %g)",
			lr, beta1, beta2, eps, weight_decay);
	a->m = calloc(n ? n : 1, sizeof(float));
	a->v = calloc(n ? n : 1, sizeof(float));
	if (!a->m || !a->v) {
		adam_free(a);
		return status_fail(err, errlen, -ENOMEM,
				   "adam: cannot allocate state for %zu parameters", n);
	}
	a->n = n;
	a->lr = lr;
	a->beta1 = beta1;
	a->beta2 = beta2;
	a->eps = eps;
	a->weight_decay = weight_decay;
	return 0;
}

size_t adam_bad_moment(const float *m, const float *v, size_t n, int *second)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(m[i]) || !isfinite(v[i]) || v[i] < 0.0f) {
			*second = isfinite(m[i]);
			return i;
		}
	*second = 0;
	return n;
}

void adam_free(struct adam *a)
{
	free(a->m);
	free(a->v);
	a->m = a->v = NULL;
	a->n = 0;
}

void adam_step(struct adam *a, float *params, const float *grads, size_t n_decay)
{
	a->t++;
	double bc1 = 1.0 - pow(a->beta1, (double)a->t);
	double bc2 = 1.0 - pow(a->beta2, (double)a->t);
	float step = (float)(a->lr / bc1);
	float inv_sqrt_bc2 = (float)(1.0 / sqrt(bc2));
	float b1 = a->beta1, b2 = a->beta2, eps = a->eps;
	float decay = 1.0f - a->lr * a->weight_decay;
	float *m = a->m, *v = a->v;

	if (n_decay > a->n)
		n_decay = a->n;
	if (a->weight_decay > 0.0f)
		for (size_t i = 0; i < n_decay; i++)
			params[i] *= decay;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (a->n >= 262144)
#endif
	for (size_t i = 0; i < a->n; i++) {
		float g = grads[i];

		m[i] = b1 * m[i] + (1.0f - b1) * g;
		v[i] = b2 * v[i] + (1.0f - b2) * g * g;
		params[i] -= step * m[i] / (sqrtf(v[i]) * inv_sqrt_bc2 + eps);
	}
}
