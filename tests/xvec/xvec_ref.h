/* xvec_ref.h — a plain double-precision x-vector forward pass for the tests.
 *
 * Written as directly as possible from the definitions (no BLAS, no buffer
 * reuse) so that it can judge the float32 model: the gradient tests take
 * central differences of it, and its loss must match the model's. Dropout
 * masks and noise come from the same Philox counters the model uses. */
#ifndef FEEDER_XVEC_REF_H
#define FEEDER_XVEC_REF_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "philox.h"
#include "tdnn.h"
#include "xvec_model.h"

/* y (B, H, T') from x (B, D, T); W (H, K*D). */
static inline void ref_tdnn(const double *x, int B, int D, int T, const int *off, int K,
			    const double *W, const double *bias, int H, double *y)
{
	int left = off[0] < 0 ? -off[0] : 0, right = off[K - 1] > 0 ? off[K - 1] : 0;
	int Tp = T - left - right;

	for (int b = 0; b < B; b++)
		for (int h = 0; h < H; h++)
			for (int t = 0; t < Tp; t++) {
				double s = bias[h];

				for (int k = 0; k < K; k++)
					for (int d = 0; d < D; d++)
						s += W[(size_t)h * K * D + (size_t)k * D + d] *
						     x[((size_t)b * D + d) * T + t + left + off[k]];
				y[((size_t)b * H + h) * Tp + t] = s;
			}
}

/* Training-mode relu + batch norm over (B, L) per channel; in place. */
static inline void ref_relu_bn(double *a, int B, int C, int L, const double *gamma,
			       const double *beta)
{
	for (int c = 0; c < C; c++) {
		double s = 0, ss = 0, n = (double)B * L;

		for (int b = 0; b < B; b++)
			for (int t = 0; t < L; t++) {
				double *v = &a[((size_t)b * C + c) * L + t];

				*v = *v > 0 ? *v : 0;
				s += *v;
			}
		double m = s / n;
		for (int b = 0; b < B; b++)
			for (int t = 0; t < L; t++) {
				double v = a[((size_t)b * C + c) * L + t] - m;
				ss += v * v;
			}
		double is = 1.0 / sqrt(ss / n + TDNN_BN_EPS);
		for (int b = 0; b < B; b++)
			for (int t = 0; t < L; t++) {
				double *v = &a[((size_t)b * C + c) * L + t];
				*v = gamma[c] * (*v - m) * is + beta[c];
			}
	}
}

static inline void ref_dropout(double *y, size_t n, double p, uint64_t seed, uint64_t subseq)
{
	if (p <= 0)
		return;
	for (size_t i = 0; i < n; i++)
		y[i] = philox_uniform(seed, subseq, i) > (float)p ? y[i] / (1.0 - p) : 0.0;
}

static inline void ref_pool(const double *x, int B, int C, int T, double *out)
{
	for (int b = 0; b < B; b++)
		for (int c = 0; c < C; c++) {
			const double *r = x + ((size_t)b * C + c) * T;
			double s = 0, ss = 0;

			for (int t = 0; t < T; t++)
				s += r[t];
			double m = s / T;
			for (int t = 0; t < T; t++)
				ss += (r[t] - m) * (r[t] - m);
			out[(size_t)b * 2 * C + c] = m;
			out[(size_t)b * 2 * C + C + c] = sqrt(ss / T + TDNN_POOL_EPS);
		}
}

static inline void ref_dense(const double *x, int B, int nin, const double *W, const double *bias,
			     int nout, double *y)
{
	for (int b = 0; b < B; b++)
		for (int o = 0; o < nout; o++) {
			double s = bias[o];

			for (int i = 0; i < nin; i++)
				s += W[(size_t)o * nin + i] * x[(size_t)b * nin + i];
			y[(size_t)b * nout + o] = s;
		}
}

static inline double ref_xent(const double *z, const int32_t *labels, int B, int S)
{
	double loss = 0;

	for (int b = 0; b < B; b++) {
		double mx = z[(size_t)b * S], s = 0;

		for (int k = 1; k < S; k++)
			mx = fmax(mx, z[(size_t)b * S + k]);
		for (int k = 0; k < S; k++)
			s += exp(z[(size_t)b * S + k] - mx);
		loss += mx + log(s) - z[(size_t)b * S + labels[b]];
	}
	return loss / B;
}

/* The double view of a model: its flat parameters converted, plus where
 * each named tensor starts in them. */
struct ref_model {
	struct xvec_options o;
	double *p;
	size_t n;
	size_t off[64];
	const struct xvec_model *m;
};

static inline void ref_model_init(struct ref_model *r, struct xvec_model *m)
{
	size_t n;
	float *p = xvec_model_params(m, &n);

	r->o = *xvec_model_options(m);
	r->m = m;
	r->n = n;
	r->p = malloc(sizeof(double) * n);
	for (size_t i = 0; i < n; i++)
		r->p[i] = p[i];
	for (int i = 0; i < xvec_model_num_tensors(m); i++)
		r->off[i] = (size_t)(xvec_model_tensor(m, i)->data - p);
}

static inline const double *ref_param(const struct ref_model *r, const char *name)
{
	for (int i = 0; i < xvec_model_num_tensors(r->m); i++)
		if (strcmp(xvec_model_tensor(r->m, i)->name, name) == 0)
			return r->p + r->off[i];
	return NULL;
}

/* The frame offsets of the five TDNN layers' contexts. */
static const int ref_c1[] = { -2, -1, 0, 1, 2 }, ref_c2[] = { -2, 0, 2 }, ref_c3[] = { -3, 0, 3 },
		 ref_c0[] = { 0 };
static const int *const ref_ctx[5] = { ref_c1, ref_c2, ref_c3, ref_c0, ref_c0 };
static const int ref_nctx[5] = { 5, 3, 3, 1, 1 };

/* The training-mode loss of the whole network at `step` for x (B, D, T). */
static inline double ref_forward(const struct ref_model *r, const double *x, const int32_t *labels,
				 int B, int T, uint64_t step)
{
	const struct xvec_options *o = &r->o;
	char name[32];
	double *in = malloc(sizeof(double) * (size_t)B * o->feat_dim * T);
	int D = o->feat_dim, Tin = T;

	memcpy(in, x, sizeof(double) * (size_t)B * D * T);
	for (int l = 0; l < 5; l++) {
		int H = l == 4 ? o->pool_width : o->width;
		int left = ref_ctx[l][0] < 0 ? -ref_ctx[l][0] : 0, Tout = Tin - 2 * left;
		double *y = malloc(sizeof(double) * (size_t)B * H * Tout);
		const double *W, *bias, *g, *be;

		snprintf(name, sizeof(name), "frame%d.weight", l + 1), W = ref_param(r, name);
		snprintf(name, sizeof(name), "frame%d.bias", l + 1), bias = ref_param(r, name);
		snprintf(name, sizeof(name), "bn%d.gamma", l + 1), g = ref_param(r, name);
		snprintf(name, sizeof(name), "bn%d.beta", l + 1), be = ref_param(r, name);
		ref_tdnn(in, B, D, Tin, ref_ctx[l], ref_nctx[l], W, bias, H, y);
		ref_relu_bn(y, B, H, Tout, g, be);
		ref_dropout(y, (size_t)B * H * Tout, o->dropout, o->seed,
			    tdnn_dropout_subseq(step, l));
		free(in);
		in = y;
		D = H;
		Tin = Tout;
	}
	int P = o->pool_width, E = o->embed, S = o->num_speakers;
	if (o->noise_eps > 0)
		for (size_t i = 0; i < (size_t)B * P * Tin; i++)
			in[i] += (double)o->noise_eps * philox_normal(o->seed, step, i);
	double pool[B * 2 * P], a6[B * E], a7[B * E], z[B * S];

	ref_pool(in, B, P, Tin, pool);
	ref_dense(pool, B, 2 * P, ref_param(r, "seg6.weight"), ref_param(r, "seg6.bias"), E, a6);
	ref_relu_bn(a6, B, E, 1, ref_param(r, "bn6.gamma"), ref_param(r, "bn6.beta"));
	ref_dense(a6, B, E, ref_param(r, "seg7.weight"), ref_param(r, "seg7.bias"), E, a7);
	ref_relu_bn(a7, B, E, 1, ref_param(r, "bn7.gamma"), ref_param(r, "bn7.beta"));
	ref_dense(a7, B, E, ref_param(r, "out.weight"), ref_param(r, "out.bias"), S, z);
	double loss = ref_xent(z, labels, B, S);

	free(in);
	return loss;
}

#endif
