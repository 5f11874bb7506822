/* test_learn.c — the model learns: a small synthetic speaker problem.
 *
 * Four "speakers", each a random mean pattern over the feature dimensions,
 * observed through frame-level Gaussian noise of larger scale. With dropout
 * and training noise on, a few hundred AdamW steps must lift training and
 * held-out accuracy well above chance (25%), and the x-vectors of held-out
 * utterances, scored by cosine similarity, must separate same-speaker from
 * different-speaker pairs (EER well below 50%). */
#include "philox.h"
#include "verify_metrics.h"
#include "xvec_test.h"

enum { K = 4, B = 16, D = 8, T = 20, E = 12, STEPS = 250, HELD = 64 };

static float means[K][D];

/* Utterance `id` of the stream: its speaker and its (D, T) features. */
static int32_t utterance(uint64_t id, float *x)
{
	int32_t spk = (int32_t)(philox_uniform(3, 1, id) * K) % K;

	philox_normals(3, 2 + id, 0, D * T, x);
	for (int d = 0; d < D; d++)
		for (int t = 0; t < T; t++)
			x[d * T + t] = means[spk][d] + 1.5f * x[d * T + t];
	return spk;
}

int main(void)
{
	struct xvec_result r;
	char err[256];
	static float x[HELD * D * T];
	int32_t labels[HELD];
	double acc = 0;

	philox_normals(3, 0, 0, K * D, &means[0][0]);
	struct xvec_options o = xt_options(D, K);
	o.dropout = 0.1f, o.noise_eps = 0.1f, o.lr = 1e-2f, o.weight_decay = 1e-3f, o.seed = 2;
	struct xvec_model *m = xt_model(&o, HELD, T);

	for (int s = 0; s < STEPS; s++) {
		for (int i = 0; i < B; i++)
			labels[i] = utterance((uint64_t)s * B + i, x + (size_t)i * D * T);
		CHECKF(xvec_model_train_step(m, x, labels, B, T, &r, err, sizeof(err)) == 0, "%s",
		       err);
		if (s >= STEPS - 25)
			acc += r.accuracy / 25.0;
		if (s % 50 == 0 || s == STEPS - 1)
			printf("step %3d: loss %.4f accuracy %.3f\n", s, r.loss, r.accuracy);
	}
	printf("training accuracy over the last 25 steps %.3f (chance %.2f)\n", acc, 1.0 / K);
	CHECKF(acc > 0.75, "training accuracy %.3f", acc);

	/* held-out utterances: evaluation-mode accuracy and x-vector EER */
	for (int i = 0; i < HELD; i++)
		labels[i] = utterance(1000000 + (uint64_t)i, x + (size_t)i * D * T);
	CHECKF(xvec_model_eval(m, x, labels, HELD, T, &r, err, sizeof(err)) == 0, "%s", err);
	printf("held-out accuracy %.3f, loss %.4f\n", r.accuracy, r.loss);
	CHECKF(r.accuracy > 0.75, "held-out accuracy %.3f", r.accuracy);

	float emb[HELD * E], tar[HELD * HELD], non[HELD * HELD];
	size_t nt = 0, nn = 0;
	double eer, dcf;
	CHECKF(xvec_model_embed(m, x, HELD, T, emb, err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < HELD; i++)
		for (int j = i + 1; j < HELD; j++) {
			float s = verify_cosine(emb + i * E, emb + j * E, E);

			if (labels[i] == labels[j])
				tar[nt++] = s;
			else
				non[nn++] = s;
		}
	CHECK(verify_eer(tar, nt, non, nn, &eer, err, sizeof(err)) == 0);
	CHECK(verify_min_dcf(tar, nt, non, nn, 0.01, 1, 1, &dcf, NULL, err, sizeof(err)) == 0);
	printf("x-vector cosine scoring: %zu target / %zu non-target pairs, EER %.3f, minDCF %.3f\n",
	       nt, nn, eer, dcf);
	CHECKF(eer < 0.2, "EER %.3f", eer);

	xvec_model_destroy(m);
	return 0;
}
