/* test_noise.c — the training noise before statistics pooling.
 *
 * Its statistics (mean 0, variance eps^2, Gaussian shape), its determinism
 * (same seed and step: same values; another step or seed: other values), and
 * that it exists in training only: evaluation and embeddings of a model with
 * noise equal those of the same model without. */
#include "philox.h"
#include "tdnn.h"
#include "xvec_test.h"

enum { N = 100000, B = 4, D = 8, T = 20, S = 5 };

static struct xvec_model *make(float noise)
{
	struct xvec_options o = xt_options(D, S);
	o.noise_eps = noise, o.seed = 11;
	return xt_model(&o, B, T);
}

int main(void)
{
	const float eps = 0.3f;
	static float zero[N], a[N], b[N];
	char err[256];

	/* statistics over 100k draws */
	tdnn_noise_add(zero, a, N, eps, 1234, 17);
	double s = 0, ss = 0;
	int within = 0;
	for (int i = 0; i < N; i++) {
		s += a[i];
		ss += (double)a[i] * a[i];
		within += fabsf(a[i]) < eps;
	}
	double mean = s / N, var = ss / N - mean * mean;
	printf("noise eps %.2f: mean %.5f, variance %.5f (want %.5f), within 1 sd %.4f\n", eps,
	       mean, var, eps * eps, (double)within / N);
	CHECKF(fabs(mean) < 0.01, "mean %g", mean);
	CHECKF(fabs(var / (eps * eps) - 1) < 0.03, "variance %g, want %g", var, eps * eps);
	CHECKF(fabs((double)within / N - 0.6827) < 0.01, "fraction within one sd %g",
	       (double)within / N);

	/* regenerating with the same (seed, step) gives identical values */
	tdnn_noise_add(zero, b, N, eps, 1234, 17);
	CHECK(memcmp(a, b, sizeof(float) * N) == 0);
	/* a different step or seed gives different values */
	for (int k = 0; k < 2; k++) {
		int same = 0;
		tdnn_noise_add(zero, b, N, eps, 1234 + k, 18 - k);
		for (int i = 0; i < N; i++)
			same += a[i] == b[i];
		CHECKF(same < 10, "%d of %d equal across %s", same, N, k ? "seeds" : "steps");
	}
	/* it adds to x */
	for (int i = 0; i < N; i++)
		b[i] = (float)i;
	tdnn_noise_add(b, b, N, eps, 1234, 17);
	for (int i = 0; i < N; i++)
		CHECK(b[i] == (float)i + a[i]);
	/* eps 0 adds nothing */
	tdnn_noise_add(zero, b, N, 0.0f, 1234, 17);
	for (int i = 0; i < N; i++)
		CHECK(b[i] == 0.0f);

	/* in the model: the same initial weights with and without noise */
	struct xvec_model *mn = make(eps), *m0 = make(0.0f);
	float x[B * D * T], e0[B * 12], en[B * 12], p0[B * S];
	const int32_t labels[B] = { 0, 1, 2, 3 };
	struct xvec_result rn, r0, rn2;

	philox_normals(5, 5, 0, B * D * T, x);
	/* evaluation: noise-free, bit for bit */
	CHECK(xvec_model_eval(m0, x, labels, B, T, &r0, err, sizeof(err)) == 0);
	memcpy(p0, xvec_model_probs(m0), sizeof(p0));
	CHECK(xvec_model_eval(mn, x, labels, B, T, &rn, err, sizeof(err)) == 0);
	CHECK(memcmp(p0, xvec_model_probs(mn), sizeof(p0)) == 0 && r0.loss == rn.loss);
	CHECK(xvec_model_embed(m0, x, B, T, e0, err, sizeof(err)) == 0);
	CHECK(xvec_model_embed(mn, x, B, T, en, err, sizeof(err)) == 0);
	CHECK(memcmp(e0, en, sizeof(e0)) == 0);
	/* training: the noise changes the loss, deterministically at a given step */
	CHECK(xvec_model_forward(m0, x, labels, B, T, 1, &r0, err, sizeof(err)) == 0);
	CHECK(xvec_model_forward(mn, x, labels, B, T, 1, &rn, err, sizeof(err)) == 0);
	CHECK(xvec_model_forward(mn, x, labels, B, T, 1, &rn2, err, sizeof(err)) == 0);
	printf("training loss without noise %.6f, with %.6f\n", r0.loss, rn.loss);
	CHECK(rn.loss != r0.loss);
	CHECK(rn.loss == rn2.loss);

	xvec_model_destroy(mn);
	xvec_model_destroy(m0);
	return 0;
}
