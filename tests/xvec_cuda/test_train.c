/* test_train.c — a short GPU training run learns as the CPU reference does (tests/xvec/test_learn.c).
 *
 * The same synthetic four-speaker problem, options and thresholds as the CPU
 * learning test: after 250 AdamW steps with dropout and noise, training and
 * held-out accuracy above 0.75 and the cosine-scored x-vector EER of
 * held-out utterances below 0.2 — the CPU reference's band. Runs in fp32
 * and bf16. */
#include "cuda_test.h"
#include "verify_metrics.h"
#include "philox.h"
#include "xvec_cuda.h"
#include "xvec_model.h"

#include <string.h>

enum { K = 4, B = 16, D = 8, T = 20, E = 12, STEPS = 250, HELD = 64 };

static float means[K][D];

static int32_t utterance(uint64_t id, float *x)
{
	int32_t spk = (int32_t)(philox_uniform(3, 1, id) * K) % K;

	philox_normals(3, 2 + id, 0, D * T, x);
	for (int d = 0; d < D; d++)
		for (int t = 0; t < T; t++)
			x[d * T + t] = means[spk][d] + 1.5f * x[d * T + t];
	return spk;
}

static void train(int precision)
{
	struct xvec_options o;
	struct xvec_model *m;
	struct xvec_cuda *g;
	struct xvec_cuda_config cfg;
	struct xvec_cuda_metrics mt;
	struct xvec_result r;
	char err[256];
	float *x = malloc(sizeof(float) * HELD * D * T);
	int32_t labels[HELD];
	float *d_x = ct_upload(NULL, sizeof(float) * HELD * D * T);
	int32_t *d_l = ct_upload(NULL, sizeof(labels));

	printf("precision %s\n", xvec_cuda_precision_name(precision));
	xvec_options_default(&o);
	o.feat_dim = D, o.width = 16, o.pool_width = 24, o.embed = E, o.num_speakers = K;
	o.dropout = 0.1f, o.noise_eps = 0.1f, o.lr = 1e-2f, o.weight_decay = 1e-3f, o.seed = 2;
	CHECKF(xvec_model_create(&m, &o, 1, XVEC_CONTEXT + 1, err, sizeof(err)) == 0, "%s", err);
	xvec_cuda_config_default(&cfg);
	cfg.precision = precision;
	cfg.autotune = 1;
	cfg.log = stdout;
	CHECKF(xvec_cuda_create(&g, m, &cfg, HELD, T, err, sizeof(err)) == 0, "%s", err);

	for (int s = 0; s < STEPS; s++) {
		for (int i = 0; i < B; i++)
			labels[i] = utterance((uint64_t)s * B + i, x + (size_t)i * D * T);
		/* the step reads d_x on the stream: copy on the same stream */
		CHECK(cudaMemcpyAsync(d_x, x, sizeof(float) * B * D * T, cudaMemcpyHostToDevice,
				      xvec_cuda_stream(g)) == cudaSuccess);
		CHECK(cudaMemcpyAsync(d_l, labels, sizeof(int32_t) * B, cudaMemcpyHostToDevice,
				      xvec_cuda_stream(g)) == cudaSuccess);
		CHECK(cudaStreamSynchronize(xvec_cuda_stream(g)) == cudaSuccess);
		CHECKF(xvec_cuda_train_step(g, d_x, d_l, B, T, err, sizeof(err)) == 0, "%s", err);
		if (s % 50 == 0 || s == STEPS - 26) {
			CHECKF(xvec_cuda_metrics(g, &mt, 1, err, sizeof(err)) == 0, "%s", err);
			printf("step %3d: loss %.4f (mean of %lld steps) accuracy %.3f\n", s,
			       mt.loss, mt.steps, mt.accuracy);
		}
	}
	CHECKF(xvec_cuda_metrics(g, &mt, 1, err, sizeof(err)) == 0, "%s", err);
	printf("training accuracy over the last %lld steps %.3f (chance %.2f)\n", mt.steps,
	       mt.accuracy, 1.0 / K);
	CHECK(mt.steps == 25);
	CHECKF(mt.accuracy > 0.75, "training accuracy %.3f", mt.accuracy);

	for (int i = 0; i < HELD; i++)
		labels[i] = utterance(1000000 + (uint64_t)i, x + (size_t)i * D * T);
	ct_copy_to(d_x, x, sizeof(float) * HELD * D * T);
	ct_copy_to(d_l, labels, sizeof(labels));
	CHECKF(xvec_cuda_eval(g, d_x, d_l, HELD, T, &r, err, sizeof(err)) == 0, "%s", err);
	printf("held-out accuracy %.3f, loss %.4f\n", r.accuracy, r.loss);
	CHECKF(r.accuracy > 0.75, "held-out accuracy %.3f", r.accuracy);

	float emb[HELD * E], tar[HELD * HELD], non[HELD * HELD];
	size_t nt = 0, nn = 0;
	double eer;
	CHECKF(xvec_cuda_embed(g, d_x, HELD, T, emb, err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < HELD; i++)
		for (int j = i + 1; j < HELD; j++) {
			float s = verify_cosine(emb + i * E, emb + j * E, E);

			if (labels[i] == labels[j])
				tar[nt++] = s;
			else
				non[nn++] = s;
		}
	CHECK(verify_eer(tar, nt, non, nn, &eer, err, sizeof(err)) == 0);
	printf("x-vector cosine scoring: %zu target / %zu non-target pairs, EER %.3f\n", nt, nn,
	       eer);
	CHECKF(eer < 0.2, "EER %.3f", eer);

	xvec_cuda_destroy(g);
	xvec_model_destroy(m);
	cudaFree(d_x), cudaFree(d_l);
	free(x);
}

int main(void)
{
	ct_require_device();
	philox_normals(3, 0, 0, K * D, &means[0][0]);
	train(XVEC_PRECISION_FP32);
	train(XVEC_PRECISION_BF16);
	return 0;
}
