/* test_batchnorm.c — batch norm in training versus evaluation mode.
 *
 * Training normalizes with the batch's statistics and moves the running
 * statistics (momentum 0.1) towards the batch mean and unbiased variance;
 * evaluation normalizes with the running statistics, so after many identical
 * batches it reproduces training-mode output up to the unbiased-variance
 * factor. In the model, evaluation treats every utterance on its own: its
 * output does not depend on the rest of the batch, training output does. */
#include "philox.h"
#include "tdnn.h"
#include "xvec_test.h"

enum { B = 3, C = 4, L = 6, N = B * C * L };

int main(void)
{
	float a[N], r[N], y[N], ye[N], mean[C], is[C];
	float gamma[C] = { 1.0f, 0.5f, 2.0f, -1.0f }, beta[C] = { 0.0f, 0.1f, -0.3f, 1.0f };
	float rm[C] = { 0, 0, 0, 0 }, rv[C] = { 1, 1, 1, 1 };
	char err[256];

	philox_normals(8, 8, 0, N, a);
	for (int i = 0; i < N; i++)
		a[i] += 0.5f;

	/* one training pass: the running statistics take 10% of the batch's */
	tdnn_relu_bn_train(a, B, C, L, gamma, beta, rm, rv, r, mean, is, y);
	/* per channel (element i's is i / L % C): sums of r and y, then of
	 * r's squared deviations */
	double s[C] = { 0 }, ss[C] = { 0 }, ys[C] = { 0 }, n = B * L;
	for (int i = 0; i < N; i++) {
		s[i / L % C] += r[i];
		ys[i / L % C] += y[i];
	}
	for (int i = 0; i < N; i++) {
		double d = r[i] - s[i / L % C] / n;
		ss[i / L % C] += d * d;
	}
	for (int c = 0; c < C; c++) {
		CHECK(fabs(mean[c] - s[c] / n) < 1e-6);
		CHECK(fabs(is[c] - 1 / sqrt(ss[c] / n + 1e-5)) < 1e-4 * is[c]);
		CHECK(fabs(rm[c] - 0.1 * s[c] / n) < 1e-6);
		CHECK(fabs(rv[c] - (0.9 + 0.1 * ss[c] / (n - 1))) < 1e-6);
		/* training output has zero mean and (almost) unit variance per channel, scaled */
		CHECK(fabs(ys[c] / n - beta[c]) < 1e-5);
	}

	/* evaluation uses the running statistics */
	tdnn_relu_bn_eval(a, B, C, L, gamma, beta, rm, rv, ye);
	for (int i = 0; i < N; i++) {
		int c = i / L % C;
		float want = (r[i] - rm[c]) / sqrtf(rv[c] + 1e-5f) * gamma[c] + beta[c];
		CHECK(fabsf(ye[i] - want) < 1e-5f * (1 + fabsf(want)));
	}

	/* after many identical batches the running statistics are the batch's */
	for (int k = 0; k < 300; k++)
		tdnn_relu_bn_train(a, B, C, L, gamma, beta, rm, rv, r, mean, is, y);
	tdnn_relu_bn_eval(a, B, C, L, gamma, beta, rm, rv, ye);
	double f = sqrt((n - 1) / n);
	for (int c = 0; c < C; c++) {
		float var = 1.0f / (is[c] * is[c]) - 1e-5f;

		CHECKF(fabsf(rm[c] - mean[c]) < 1e-6f, "running mean %g, batch %g", rm[c], mean[c]);
		CHECKF(fabs(rv[c] - var * n / (n - 1)) < 1e-5, "running var %g, batch %g", rv[c],
		       var * n / (n - 1));
	}
	/* so eval = train up to sqrt((n-1)/n) on the normalized part */
	for (int i = 0; i < N; i++) {
		int c = i / L % C;
		double want = (y[i] - beta[c]) * f + beta[c];
		CHECKF(fabs(ye[i] - want) < 1e-4, "eval %g, train %g", ye[i], want);
	}

	/* model: evaluation is per utterance, training depends on the batch */
	enum { MB = 4, D = 8, T = 20, E = 12 };
	float x[MB * D * T], emb[MB * E], one[E], probs[MB * 5], p1[5];
	const int32_t labels[MB] = { 0, 1, 2, 3 };
	struct xvec_result res, r1, r2;

	struct xvec_options o = xt_options(D, 5);
	struct xvec_model *m = xt_model(&o, MB, T);
	philox_normals(9, 9, 0, MB * D * T, x);
	/* give the running statistics something other than 0 / 1 */
	for (int k = 0; k < 5; k++)
		CHECK(xvec_model_forward(m, x, labels, MB, T, 1, &res, err, sizeof(err)) == 0);
	CHECK(xvec_model_embed(m, x, MB, T, emb, err, sizeof(err)) == 0);
	CHECK(xvec_model_eval(m, x, labels, MB, T, &res, err, sizeof(err)) == 0);
	memcpy(probs, xvec_model_probs(m), sizeof(probs));
	/* the third utterance alone */
	CHECK(xvec_model_embed(m, x + 2 * D * T, 1, T, one, err, sizeof(err)) == 0);
	for (int e = 0; e < E; e++)
		CHECKF(fabsf(one[e] - emb[2 * E + e]) < 1e-5f * (1 + fabsf(one[e])),
		       "embedding %d: alone %g, in batch %g", e, one[e], emb[2 * E + e]);
	CHECK(xvec_model_eval(m, x + 2 * D * T, labels + 2, 1, T, &r1, err, sizeof(err)) == 0);
	memcpy(p1, xvec_model_probs(m), sizeof(p1));
	for (int s = 0; s < 5; s++)
		CHECK(fabsf(p1[s] - probs[2 * 5 + s]) < 1e-5f);
	/* training mode: a batch of two (the third and fourth utterances) gives
	 * the third another output than the batch of four did */
	CHECK(xvec_model_forward(m, x, labels, MB, T, 1, &r1, err, sizeof(err)) == 0);
	memcpy(probs, xvec_model_probs(m), sizeof(probs));
	CHECK(xvec_model_forward(m, x + 2 * D * T, labels + 2, 2, T, 1, &r2, err, sizeof(err)) ==
	      0);
	float diff = 0;
	for (int s = 0; s < 5; s++)
		diff += fabsf(xvec_model_probs(m)[s] - probs[2 * 5 + s]);
	CHECKF(diff > 1e-3f, "training output did not depend on the batch (%g)", diff);
	xvec_model_destroy(m);
	return 0;
}
