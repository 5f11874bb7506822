/* test_determinism.c — same seed, same loss sequence; a resumed GPU run repeats an uninterrupted one.
 *
 * With dropout and noise on (every random number a function of seed, step
 * and element), two GPU models started from the same state must produce
 * the same per-step losses to the bit, and a model copied to the host
 * mirror after 3 steps (what a checkpoint stores) and recreated from it must
 * continue with the same bits. The fp32 losses must also follow the CPU
 * reference's sequence over these steps, to within a tolerance derived on
 * the CPU: Adam divides each gradient by its own running
 * magnitude, so a gradient that is nearly zero takes a full-size step in a
 * direction set by rounding, and summation order alone moves the loss by
 * several 1e-4 within a few steps. The reference is run a second time with
 * its inputs moved by 1e-6 (relative: float32 summation noise); the
 * tolerance is 3 x the largest relative loss difference that makes, and at
 * least 1e-3. A batch with a NaN is skipped on the device without touching
 * the state. */
#include "cuda_test.h"
#include "philox.h"
#include "xvec_cuda.h"
#include "xvec_model.h"

#include <errno.h>
#include <string.h>

enum { B = 8, D = 6, T = 30, STEPS = 6, SPK = 5 };

static float x[STEPS][B * D * T];
static int32_t labels[STEPS][B];

static void options(struct xvec_options *o)
{
	xvec_options_default(o);
	o->feat_dim = D, o->width = 24, o->pool_width = 32, o->embed = 12, o->num_speakers = SPK;
	o->dropout = 0.1f, o->noise_eps = 0.2f, o->seed = 21, o->lr = 3e-3f,
	o->weight_decay = 1e-2f;
}

/* Steps [from, to) on g, losses into loss[]. */
static void steps(struct xvec_cuda *g, int from, int to, double *loss)
{
	char err[256];
	struct xvec_cuda_metrics mt;
	float *d_x = ct_upload(NULL, sizeof(x[0]));
	int32_t *d_l = ct_upload(NULL, sizeof(labels[0]));

	for (int s = from; s < to; s++) {
		ct_copy_to(d_x, x[s], sizeof(x[s]));
		ct_copy_to(d_l, labels[s], sizeof(labels[s]));
		CHECKF(xvec_cuda_train_step(g, d_x, d_l, B, T, err, sizeof(err)) == 0, "%s", err);
		CHECKF(xvec_cuda_metrics(g, &mt, 1, err, sizeof(err)) == 0, "%s", err);
		CHECK(mt.steps == 1);
		loss[s] = mt.last_loss;
	}
	cudaFree(d_x), cudaFree(d_l);
}

/* A batch with a NaN: the step is skipped on the device, the state is
 * untouched, and the metrics say so (-EDOM), as xvec_model_train_step does. */
static void test_nonfinite(void)
{
	struct xvec_options o;
	struct xvec_model *m, *before, *after;
	struct xvec_cuda *g;
	struct xvec_cuda_metrics mt;
	char err[256];
	size_t np, nb;

	options(&o);
	CHECKF(xvec_model_create(&m, &o, 1, XVEC_CONTEXT + 1, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_model_create(&before, &o, 1, XVEC_CONTEXT + 1, err, sizeof(err)) == 0, "%s",
	       err);
	CHECKF(xvec_model_create(&after, &o, 1, XVEC_CONTEXT + 1, err, sizeof(err)) == 0, "%s",
	       err);
	CHECKF(xvec_cuda_create(&g, m, NULL, B, T, err, sizeof(err)) == 0, "%s", err);
	float *d_x = ct_upload(x[0], sizeof(x[0]));
	int32_t *d_l = ct_upload(labels[0], sizeof(labels[0]));
	CHECKF(xvec_cuda_train_step(g, d_x, d_l, B, T, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_cuda_metrics(g, &mt, 1, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_cuda_to_model(g, before, err, sizeof(err)) == 0, "%s", err);

	float bad[B * D * T];
	memcpy(bad, x[1], sizeof(bad));
	bad[17] = NAN;
	ct_copy_to(d_x, bad, sizeof(bad));
	CHECKF(xvec_cuda_train_step(g, d_x, d_l, B, T, err, sizeof(err)) == 0, "%s", err);
	int rc = xvec_cuda_metrics(g, &mt, 1, err, sizeof(err));
	printf("non-finite batch: metrics -> %d (%s), skipped %lld\n", rc, err, mt.skipped);
	CHECK(rc == -EDOM && mt.skipped == 1);
	CHECKF(xvec_cuda_to_model(g, after, err, sizeof(err)) == 0, "%s", err);
	CHECK(memcmp(xvec_model_params(before, &np), xvec_model_params(after, &np),
		     sizeof(float) * np) == 0);
	CHECK(memcmp(xvec_model_bn_stats(before, &nb), xvec_model_bn_stats(after, &nb),
		     sizeof(float) * nb) == 0);
	CHECK(memcmp(xvec_model_adam(before)->m, xvec_model_adam(after)->m, sizeof(float) * np) ==
	      0);
	xvec_cuda_destroy(g);
	xvec_model_destroy(m);
	xvec_model_destroy(before);
	xvec_model_destroy(after);
	cudaFree(d_x), cudaFree(d_l);
}

int main(void)
{
	struct xvec_options o;
	struct xvec_model *m, *mirror;
	struct xvec_cuda *a, *b, *c;
	struct xvec_result r;
	char err[256];
	double la[STEPS], lb[STEPS], lc[STEPS], lcpu[STEPS];

	ct_require_device();
	for (int s = 0; s < STEPS; s++) {
		philox_normals(31, (uint64_t)s, 0, B * D * T, x[s]);
		for (int i = 0; i < B; i++)
			labels[s][i] = (int32_t)((s * 3 + i) % SPK);
	}
	options(&o);
	CHECKF(xvec_model_create(&m, &o, B, T, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_model_create(&mirror, &o, 1, XVEC_CONTEXT + 1, err, sizeof(err)) == 0, "%s",
	       err);
	CHECKF(xvec_cuda_create(&a, m, NULL, B, T, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_cuda_create(&b, m, NULL, B, T, err, sizeof(err)) == 0, "%s", err);
	steps(a, 0, STEPS, la);
	steps(b, 0, 3, lb);
	CHECKF(xvec_cuda_to_model(b, mirror, err, sizeof(err)) == 0, "%s", err);
	CHECK(xvec_model_step(mirror) == 3);
	CHECKF(xvec_cuda_create(&c, mirror, NULL, B, T, err, sizeof(err)) == 0, "%s", err);
	CHECK(xvec_cuda_step(c) == 3);
	memcpy(lc, lb, sizeof(double) * 3);
	steps(c, 3, STEPS, lc);
	steps(b, 3, STEPS, lb);
	/* the reference's own sensitivity, on a model of its own */
	struct xvec_model *mp;
	static float xp[B * D * T];
	double tol = 1e-3, worst = 0;
	CHECKF(xvec_model_create(&mp, &o, B, T, err, sizeof(err)) == 0, "%s", err);
	for (int s = 0; s < STEPS; s++) {
		struct xvec_result rp;
		for (int i = 0; i < B * D * T; i++)
			xp[i] = x[s][i] *
				(1.0f +
				 (float)(philox_uniform(77, (uint64_t)s, (uint64_t)i) - 0.5) *
					 2e-6f);
		CHECKF(xvec_model_train_step(m, x[s], labels[s], B, T, &r, err, sizeof(err)) == 0,
		       "%s", err);
		CHECKF(xvec_model_train_step(mp, xp, labels[s], B, T, &rp, err, sizeof(err)) == 0,
		       "%s", err);
		lcpu[s] = r.loss;
		double d = fabs(rp.loss - r.loss) / fabs(r.loss);
		worst = d > worst ? d : worst;
	}
	xvec_model_destroy(mp);
	if (3 * worst > tol)
		tol = 3 * worst;
	printf("CPU loss moves by up to %.3g for a 1e-6 input move: tolerance %.3g\n", worst, tol);
	for (int s = 0; s < STEPS; s++) {
		printf("step %d: gpu %.9f  again %.9f  resumed %.9f  cpu %.9f\n", s, la[s], lb[s],
		       lc[s], lcpu[s]);
		CHECK(memcmp(&la[s], &lb[s], sizeof(double)) == 0);
		CHECK(memcmp(&la[s], &lc[s], sizeof(double)) == 0);
		CHECKF(fabs(la[s] - lcpu[s]) <= tol * fabs(lcpu[s]), "step %d: gpu %g cpu %g", s,
		       la[s], lcpu[s]);
	}
	xvec_cuda_destroy(a);
	xvec_cuda_destroy(b);
	xvec_cuda_destroy(c);
	xvec_model_destroy(m);
	xvec_model_destroy(mirror);
	test_nonfinite();
	return 0;
}
