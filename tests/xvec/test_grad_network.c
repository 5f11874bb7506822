/* test_grad_network.c — finite-difference gradient check of the whole x-vector network.
 *
 * The float32 model's backward pass (d loss / d input, and a sample of every
 * parameter tensor) is compared with central differences of the double
 * reference network in xvec_ref.h, in three settings: no noise and no
 * dropout; training noise eps 0.3; noise and dropout 0.25. The noise and the
 * masks are pure functions of (seed, step, element), so the loss is a
 * deterministic, differentiable function and the check holds with them.
 * Tolerance in gradcheck.h. */
#include "gradcheck.h"
#include "xvec_ref.h"
#include "xvec_test.h"

enum { B = 4, D = 8, T = 20, S = 5 };

static void run(float noise, float dropout)
{
	struct xvec_result res;
	struct ref_model ref;
	char err[256], what[96];
	float x[B * D * T], dx[B * D * T];
	double xd[B * D * T], num[B * D * T];
	const int32_t labels[B] = { 1, 4, 0, 2 };

	struct xvec_options o = xt_options(D, S);
	o.noise_eps = noise, o.dropout = dropout, o.seed = 7, o.lr = 1e-2f;
	struct xvec_model *m = xt_model(&o, B, T);
	philox_normals(3, 1, 0, B * D * T, x);
	for (int i = 0; i < B * D * T; i++)
		xd[i] = x[i];

	/* one update first, so the check runs at step 1 with trained weights */
	CHECKF(xvec_model_train_step(m, x, labels, B, T, &res, err, sizeof(err)) == 0, "%s", err);
	CHECK(xvec_model_step(m) == 1);
	CHECKF(xvec_model_forward(m, x, labels, B, T, 1, &res, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_model_backward(m, x, labels, B, T, dx, err, sizeof(err)) == 0, "%s", err);

	ref_model_init(&ref, m);
	double loss = ref_forward(&ref, xd, labels, B, T, 1);
	CHECKF(fabs(res.loss - loss) < 1e-4 * (1 + fabs(loss)), "loss float %.9g vs double %.9g",
	       res.loss, loss);
	printf("noise %.2f dropout %.2f: loss %.6f (double %.6f)\n", noise, dropout, res.loss,
	       loss);

	GRAD_NUMERIC(num, xd, B * D * T, 1, i, ref_forward(&ref, xd, labels, B, T, 1));
	gradcheck("  d loss / d x", dx, num, B * D * T);

	for (int k = 0; k < xvec_model_num_tensors(m); k++) {
		const struct xvec_tensor *t = xvec_model_tensor(m, k);
		size_t stride = t->size > 16 ? t->size / 16 + 1 : 1, n;
		float an[32];

		GRAD_NUMERIC(num, ref.p + ref.off[k], t->size, stride, j,
			     ref_forward(&ref, xd, labels, B, T, 1));
		for (n = 0; n * stride < t->size; n++)
			an[n] = t->grad[n * stride];
		snprintf(what, sizeof(what), "  d loss / d %s", t->name);
		gradcheck(what, an, num, n);
	}
	free(ref.p);
	xvec_model_destroy(m);
}

int main(void)
{
	run(0.0f, 0.0f);
	run(0.3f, 0.0f);
	run(0.3f, 0.25f);
	return 0;
}
