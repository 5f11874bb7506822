/* xvec_sensitivity.h — how much the reference's training pass moves when
 * its input moves by float32 noise, in a GEMM rounding mode: the basis of
 * the tf32 and bf16 tolerances of tests/xvec_cuda/test_network.c (issue
 * 18.1), measured by tests/xvec/test_rounding.c.
 *
 * A GPU run in tf32 or bf16 and the reference rounding the same way differ
 * by summation order: activations a few ulp apart, some of which then round
 * the other way (a 2^-11 or 2^-8 relative step). At initialisation the
 * x-vector network amplifies such steps strongly (ReLU kinks, batch norm
 * over small batches): gradients move by several percent when a few inputs
 * round the other way, about as much as the rounding itself moves them from
 * the fp32 reference (test_rounding prints both), and one small tensor (a
 * bias before batch norm) can change wholly. So the gradients are compared
 * as one vector (the norm of the difference over the norm), the input
 * gradient likewise, and each tolerance is derived from the same network on
 * the same batch: 3 x the largest change over XVEC_SENS_SEEDS perturbed
 * inputs, never below a floor. A wrong kernel, layout or GEMM moves these
 * by order 1 and more; summation order does not. */
#ifndef FEEDER_XVEC_SENSITIVITY_H
#define FEEDER_XVEC_SENSITIVITY_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "philox.h"
#include "tdnn.h"
#include "xvec_model.h"

#define XVEC_SENS_SEEDS 3
/* Relative input change: a fiftieth of the mode's rounding step, so that a
 * few percent of the inputs round the other way, as the GPU's activations
 * (a few ulp off the reference's at every layer) do in all its GEMMs. */
static inline float xvec_sens_scale(int mode)
{
	return ldexpf(1.0f, mode == TDNN_ROUND_BF16 ? -8 : -11) / 50.0f;
}
#define XVEC_SENS_MARGIN 3.0

/* max |a - b| / max |b| over n elements (NaN counts as infinitely wrong). */
static inline double sens_relerr(const float *a, const float *b, size_t n)
{
	double d = 0.0, s = 0.0;
	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)a[i] - b[i]);
		if (e > d || e != e)
			d = e;
		if (fabs((double)b[i]) > s)
			s = fabs((double)b[i]);
	}
	return d / (s > 1e-30 ? s : 1e-30);
}

/* ||a - b|| / ||b|| (2-norms) over n elements. */
static inline double sens_normerr(const float *a, const float *b, size_t n)
{
	double d = 0.0, s = 0.0;
	for (size_t i = 0; i < n; i++) {
		double e = (double)a[i] - b[i];
		d += e * e;
		s += (double)b[i] * b[i];
	}
	return d != d ? INFINITY : sqrt(d) / (s > 1e-60 ? sqrt(s) : 1e-30);
}

struct xvec_sens {
	double loss;          /* relative change of the loss */
	double probs;         /* of the probabilities (max |change| / max |p|) */
	double dx;            /* of the input gradient (norm of the change / norm) */
	double grads;         /* of all parameter gradients together (likewise) */
};

/* One training pass of m in rounding mode on x: loss, gradients (copied
 * into grads, np floats), dx and probs (B x S). 0 or an error code. */
static inline int sens_pass(struct xvec_model *m, const float *x, const int32_t *labels, int B,
			    int T, int mode, double *loss, float *grads, size_t np, float *dx,
			    float *probs, int S)
{
	struct xvec_result res;
	char err[256];
	size_t n;
	int prev = tdnn_gemm_rounding();
	tdnn_set_gemm_rounding(mode);
	int rc = xvec_model_forward(m, x, labels, B, T, 1, &res, err, sizeof(err));
	if (rc == 0)
		rc = xvec_model_backward(m, x, labels, B, T, dx, err, sizeof(err));
	tdnn_set_gemm_rounding(prev);
	if (rc)
		return rc;
	*loss = res.loss;
	memcpy(grads, xvec_model_grads(m, &n), sizeof(float) * np);
	memcpy(probs, xvec_model_probs(m), sizeof(float) * (size_t)B * S);
	return 0;
}

/* The sensitivity of model m (use a model made only for this: the passes
 * move its batch-norm running statistics) on batch x in rounding mode.
 * 0, or -1 without memory or on a model error. */
static inline int xvec_sensitivity(struct xvec_model *m, const float *x, const int32_t *labels,
				   int B, int D, int T, int S, int mode, struct xvec_sens *out)
{
	size_t nx = (size_t)B * D * T, np;
	xvec_model_params(m, &np);
	float *g0 = malloc(sizeof(float) * np), *g1 = malloc(sizeof(float) * np);
	float *dx0 = malloc(sizeof(float) * nx), *dx1 = malloc(sizeof(float) * nx);
	float *p0 = malloc(sizeof(float) * (size_t)B * S), *p1 = malloc(sizeof(float) * (size_t)B * S);
	float *xp = malloc(sizeof(float) * nx);
	memset(out, 0, sizeof(*out));
	int rc = !g0 || !g1 || !dx0 || !dx1 || !p0 || !p1 || !xp ? -1 : 0;
	double l0 = 0, l1 = 0;
	if (rc == 0)
		rc = sens_pass(m, x, labels, B, T, mode, &l0, g0, np, dx0, p0, S);
	for (uint64_t seed = 1; rc == 0 && seed <= XVEC_SENS_SEEDS; seed++) {
		for (size_t i = 0; i < nx; i++)
			xp[i] = x[i] * (1.0f + (float)(philox_uniform(seed + 100, 7, i) - 0.5) *
						   2 * xvec_sens_scale(mode));
		rc = sens_pass(m, xp, labels, B, T, mode, &l1, g1, np, dx1, p1, S);
		if (rc)
			break;
		double e = fabs(l1 - l0) / fabs(l0);
		out->loss = e > out->loss ? e : out->loss;
		e = sens_relerr(p1, p0, (size_t)B * S);
		out->probs = e > out->probs ? e : out->probs;
		e = sens_normerr(dx1, dx0, nx);
		out->dx = e > out->dx ? e : out->dx;
		e = sens_normerr(g1, g0, np);
		out->grads = e > out->grads ? e : out->grads;
	}
	free(g0), free(g1), free(dx0), free(dx1), free(p0), free(p1), free(xp);
	return rc ? -1 : 0;
}

/* The tolerance for a quantity whose measured sensitivity is s. */
static inline double xvec_sens_tol(double s, double floor)
{
	double t = XVEC_SENS_MARGIN * s;
	return t > floor ? t : floor;
}

#endif
