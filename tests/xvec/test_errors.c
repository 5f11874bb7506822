/* test_errors.c — the model refuses bad arguments with a code and a sentence.
 *
 * Options out of range, batches larger than the workspace or too short for
 * the contexts, labels out of range, backward without its forward pass, and a
 * batch with a NaN (which must leave weights, optimizer, running statistics
 * and step untouched); and reserve() makes room for longer utterances. */
#include "philox.h"
#include "status.h"
#include "xvec_test.h"

#include <errno.h>

enum { B = 4, D = 8, T = 20, S = 5, E = 12 };

#define REFUSED(call, code)                                                                        \
	do {                                                                                       \
		err[0] = 0;                                                                        \
		int rc_ = (call);                                                                  \
		printf("%-60.60s -> %d: %s\n", #call, rc_, err);                                   \
		CHECKF(rc_ == (code), "returned %d, want %d", rc_, (code));                        \
		CHECK(err[0] != 0);                                                                \
	} while (0)

int main(void)
{
	struct xvec_options o = xt_options(D, S);
	struct xvec_model *m = NULL;
	struct xvec_result r;
	char err[256];
	float *x = malloc(sizeof(float) * B * D * 40), emb[B * E], emb2[B * E];
	int32_t labels[B] = { 0, 1, 2, 3 }, bad[B] = { 0, 1, 5, 3 };

	o.num_speakers = 1;
	REFUSED(xvec_model_create(&m, &o, B, T, err, sizeof(err)), FEEDER_EINVAL);
	CHECK(m == NULL);
	o = xt_options(D, S), o.dropout = 1.0f;
	REFUSED(xvec_model_create(&m, &o, B, T, err, sizeof(err)), FEEDER_EINVAL);
	o = xt_options(D, S), o.noise_eps = NAN;
	REFUSED(xvec_model_create(&m, &o, B, T, err, sizeof(err)), FEEDER_EINVAL);
	o = xt_options(D, S), o.lr = 0;
	REFUSED(xvec_model_create(&m, &o, B, T, err, sizeof(err)), FEEDER_EINVAL);
	o = xt_options(D, S);
	REFUSED(xvec_model_create(&m, &o, B, 14, err, sizeof(err)), FEEDER_EINVAL);
	CHECKF(xvec_model_create(&m, &o, B, T, err, sizeof(err)) == 0, "%s", err);

	philox_normals(1, 1, 0, B * D * 40, x);
	REFUSED(xvec_model_train_step(m, x, labels, B + 1, T, &r, err, sizeof(err)), FEEDER_EINVAL);
	REFUSED(xvec_model_train_step(m, x, labels, B, T + 1, &r, err, sizeof(err)), FEEDER_EINVAL);
	REFUSED(xvec_model_train_step(m, x, labels, B, 14, &r, err, sizeof(err)), FEEDER_EINVAL);
	REFUSED(xvec_model_train_step(m, x, bad, B, T, &r, err, sizeof(err)), FEEDER_EINVAL);
	REFUSED(xvec_model_train_step(m, x, NULL, B, T, &r, err, sizeof(err)), FEEDER_EINVAL);
	REFUSED(xvec_model_backward(m, x, labels, B, T, NULL, err, sizeof(err)), FEEDER_EINVAL);
	CHECK(xvec_model_eval(m, x, labels, B, T, &r, err, sizeof(err)) == 0);
	REFUSED(xvec_model_backward(m, x, labels, B, T, NULL, err, sizeof(err)), FEEDER_EINVAL);
	CHECK(xvec_model_step(m) == 0);

	/* a NaN in the batch: refused, nothing changes */
	CHECK(xvec_model_train_step(m, x, labels, B, T, &r, err, sizeof(err)) == 0);
	size_t n, nb;
	float *p = xvec_model_params(m, &n), *bn = xvec_model_bn_stats(m, &nb);
	float *pc = xt_dup(p, &n), *bc = xt_dup(bn, &nb), *mc = xt_dup(xvec_model_adam(m)->m, &n);
	x[77] = NAN;
	REFUSED(xvec_model_train_step(m, x, labels, B, T, &r, err, sizeof(err)), -EDOM);
	CHECK(memcmp(pc, p, sizeof(float) * n) == 0 && memcmp(bc, bn, sizeof(float) * nb) == 0);
	CHECK(memcmp(mc, xvec_model_adam(m)->m, sizeof(float) * n) == 0);
	CHECK(xvec_model_step(m) == 1);
	x[77] = 0.5f;
	CHECK(xvec_model_train_step(m, x, labels, B, T, &r, err, sizeof(err)) == 0 &&
	      isfinite(r.loss));
	CHECK(xvec_model_step(m) == 2);

	/* longer utterances for evaluation need a reserve first; the x-vector of
	 * a 40-frame utterance differs from that of its first 20 frames */
	REFUSED(xvec_model_embed(m, x, B, 40, emb, err, sizeof(err)), FEEDER_EINVAL);
	CHECKF(xvec_model_reserve(m, B, 40, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_model_embed(m, x, 1, 40, emb, err, sizeof(err)) == 0, "%s", err);
	float x20[D * 20];
	for (int d = 0; d < D; d++)
		memcpy(x20 + d * 20, x + d * 40, sizeof(float) * 20);
	CHECK(xvec_model_embed(m, x20, 1, 20, emb2, err, sizeof(err)) == 0);
	CHECK(memcmp(emb, emb2, sizeof(float) * E) != 0);
	/* and training still works after the workspace moved */
	CHECK(xvec_model_train_step(m, x, labels, B, 40, &r, err, sizeof(err)) == 0);
	REFUSED(xvec_model_reserve(m, 0, 40, err, sizeof(err)), FEEDER_EINVAL);

	xvec_model_destroy(m);
	free(x), free(pc), free(bc), free(mc);
	return 0;
}
