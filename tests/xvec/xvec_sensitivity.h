/* xvec_sensitivity.h — how much the reference's training pass moves when
 * its input moves by float32 noise, in a GEMM rounding mode: the basis of
 * the tf32 and bf16 tolerances of tests/xvec_cuda/test_network.c,
 * measured by tests/xvec/test_rounding.c.
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
 * by order 1 and more; summation order does not. In tf32 the tolerance also
 * covers a device that truncates its operands (xvec_sens_tolerances). */
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
	double loss;  /* relative change of the loss */
	double probs; /* of the probabilities (max |change| / max |p|) */
	double dx;    /* of the input gradient (norm of the change / norm) */
	double grads; /* of all parameter gradients together (likewise) */
};

/* Buffers for two passes, [0] and [1], and a perturbed input. */
struct sens_bufs {
	size_t np, nx, nprobs;
	double loss[2];
	float *g[2], *dx[2], *p[2], *xp;
};

static inline void sens_bufs_free(struct sens_bufs *b)
{
	for (int i = 0; i < 2; i++)
		free(b->g[i]), free(b->dx[i]), free(b->p[i]);
	free(b->xp);
}

/* 0, or -1 without memory (b is then freed). */
static inline int sens_bufs_alloc(struct sens_bufs *b, struct xvec_model *m, int B, int D, int T,
				  int S)
{
	int ok = 1;
	memset(b, 0, sizeof(*b));
	xvec_model_params(m, &b->np);
	b->nx = (size_t)B * D * T;
	b->nprobs = (size_t)B * S;
	for (int i = 0; i < 2; i++) {
		b->g[i] = malloc(sizeof(float) * b->np);
		b->dx[i] = malloc(sizeof(float) * b->nx);
		b->p[i] = malloc(sizeof(float) * b->nprobs);
		ok = ok && b->g[i] && b->dx[i] && b->p[i];
	}
	b->xp = malloc(sizeof(float) * b->nx);
	if (ok && b->xp)
		return 0;
	sens_bufs_free(b);
	return -1;
}

/* Training pass k of m in rounding mode on x: its loss, gradients, dx
 * and probabilities into b's buffers k. 0 or an error code. */
static inline int sens_bufs_pass(struct sens_bufs *b, int k, struct xvec_model *m, const float *x,
				 const int32_t *labels, int B, int T, int S, int mode)
{
	struct xvec_result res;
	char err[256];
	size_t n;
	int prev = tdnn_gemm_rounding();
	tdnn_set_gemm_rounding(mode);
	int rc = xvec_model_forward(m, x, labels, B, T, 1, &res, err, sizeof(err));
	if (rc == 0)
		rc = xvec_model_backward(m, x, labels, B, T, b->dx[k], err, sizeof(err));
	tdnn_set_gemm_rounding(prev);
	if (rc)
		return rc;
	b->loss[k] = res.loss;
	memcpy(b->g[k], xvec_model_grads(m, &n), sizeof(float) * b->np);
	memcpy(b->p[k], xvec_model_probs(m), sizeof(float) * (size_t)B * S);
	return 0;
}

/* Raise out's fields to how far pass 1 is from pass 0. */
static inline void sens_bufs_apart(const struct sens_bufs *b, struct xvec_sens *out)
{
	out->loss = fmax(out->loss, fabs(b->loss[1] - b->loss[0]) / fabs(b->loss[0]));
	out->probs = fmax(out->probs, sens_relerr(b->p[1], b->p[0], b->nprobs));
	out->dx = fmax(out->dx, sens_normerr(b->dx[1], b->dx[0], b->nx));
	out->grads = fmax(out->grads, sens_normerr(b->g[1], b->g[0], b->np));
}

/* How far training passes of m on x in rounding mode b are from one in mode
 * a (fields as struct xvec_sens): the largest change over XVEC_SENS_SEEDS
 * inputs perturbed by xvec_sens_scale(b) when perturb is set (the
 * sensitivity, with a == b), else on x itself. Use a model made only for
 * this: the passes move its batch-norm running statistics. 0, or -1
 * without memory or on a model error. */
static inline int xvec_sens_apart(struct xvec_model *m, const float *x, const int32_t *labels,
				  int B, int D, int T, int S, int a, int b, int perturb,
				  struct xvec_sens *out)
{
	struct sens_bufs bf;
	memset(out, 0, sizeof(*out));
	if (sens_bufs_alloc(&bf, m, B, D, T, S))
		return -1;
	/* 0 when not perturbing: x * (1 + 0) is x, bit for bit */
	float scale = perturb ? xvec_sens_scale(b) : 0.0f;
	int rc = sens_bufs_pass(&bf, 0, m, x, labels, B, T, S, a);
	for (uint64_t seed = 1; rc == 0 && seed <= (perturb ? XVEC_SENS_SEEDS : 1); seed++) {
		for (size_t i = 0; i < bf.nx; i++)
			bf.xp[i] = x[i] * (1.0f + (float)(philox_uniform(seed + 100, 7, i) - 0.5) *
							  2 * scale);
		rc = sens_bufs_pass(&bf, 1, m, bf.xp, labels, B, T, S, b);
		if (rc == 0)
			sens_bufs_apart(&bf, out);
	}
	sens_bufs_free(&bf);
	return rc ? -1 : 0;
}

/* The tolerance for a quantity whose measured sensitivity is s. */
static inline double xvec_sens_tol(double s, double floor)
{
	double t = XVEC_SENS_MARGIN * s;
	return t > floor ? t : floor;
}

/* The tolerances (fields as struct xvec_sens, loss and probabilities
 * max-relative, gradients norm-relative) for a device run in mode compared
 * with the reference rounding to nearest even in the same mode.
 *
 * tf32: cuBLAS's tensor-core kernels may convert float operands to tf32 by
 * rounding or by dropping the low bits (the hardware does the latter with a
 * float fed as it is; cuBLAS does not document which). Rounding them
 * explicitly on the device first would make both agree, but costs a pass
 * over every operand of every product (K passes per activation with the
 * offset strategy), in the one mode chosen for speed. So the bound covers
 * either: a run that truncates is within its own sensitivity of the
 * truncating reference, which is itself some distance from the rounding
 * one; the tolerance is the larger sensitivity's plus that distance (into
 * *apart as well where apart is not NULL; zero in the other modes). */
static inline int xvec_sens_tolerances(struct xvec_model *m, const float *x, const int32_t *labels,
				       int B, int D, int T, int S, int mode, struct xvec_sens *tol,
				       struct xvec_sens *apart_out)
{
	struct xvec_sens s, s2, apart = { 0, 0, 0, 0 };
	const int trunc = TDNN_ROUND_TF32_TRUNC;
	if (xvec_sens_apart(m, x, labels, B, D, T, S, mode, mode, 1, &s))
		return -1;
	if (mode == TDNN_ROUND_TF32) {
		if (xvec_sens_apart(m, x, labels, B, D, T, S, trunc, trunc, 1, &s2) ||
		    xvec_sens_apart(m, x, labels, B, D, T, S, mode, trunc, 0, &apart))
			return -1;
		s.loss = fmax(s.loss, s2.loss);
		s.probs = fmax(s.probs, s2.probs);
		s.dx = fmax(s.dx, s2.dx);
		s.grads = fmax(s.grads, s2.grads);
	}
	tol->loss = xvec_sens_tol(s.loss, 1e-4) + apart.loss;
	tol->probs = xvec_sens_tol(s.probs, 1e-3) + apart.probs;
	tol->dx = xvec_sens_tol(s.dx, 1e-3) + apart.dx;
	tol->grads = xvec_sens_tol(s.grads, 1e-3) + apart.grads;
	if (apart_out)
		*apart_out = apart;
	return 0;
}

#endif
