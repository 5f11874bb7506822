/* test_rounding.c — the reference's GEMM input rounding (tdnn_set_gemm_rounding)
 * and the tf32/bf16 tolerances tests/xvec_cuda/test_network.c derives from
 * it (see xvec_sensitivity.h).
 *
 * 1. tdnn_round rounds to nearest even at 10 (tf32) or 7 (bf16) mantissa
 *    bits, or drops the 13 low bits (tf32 by truncation), exactly, and
 *    leaves NaN and infinities alone; a rounded training pass differs from
 *    the fp32 one.
 * 2. For each tf32/bf16 shape of test_network, prints how far the rounded
 *    reference is from the fp32 one (too far for fixed tolerances against
 *    fp32) and the tolerances xvec_sens_tolerances gives (in tf32 covering
 *    a device that truncates as well as one that rounds); checks that they
 *    stay below 1, so the device test still tells a wrong kernel (errors of
 *    order 1 and more) from summation order and conversion. */
#include "philox.h"
#include "tdnn.h"
#include "xvec_sensitivity.h"
#include "xvec_test.h"

static void check_round(void)
{
	CHECK(tdnn_round(1.0f, TDNN_ROUND_TF32) == 1.0f);
	/* halfway cases go to even */
	CHECK(tdnn_round(1.0f + ldexpf(1, -11), TDNN_ROUND_TF32) == 1.0f);
	CHECK(tdnn_round(1.0f + 3 * ldexpf(1, -11), TDNN_ROUND_TF32) == 1.0f + ldexpf(1, -9));
	CHECK(tdnn_round(1.0f + ldexpf(1, -9) + ldexpf(1, -12), TDNN_ROUND_TF32) ==
	      1.0f + ldexpf(1, -9));
	CHECK(tdnn_round(1.0f + ldexpf(1, -8), TDNN_ROUND_BF16) == 1.0f);
	CHECK(tdnn_round(1.0f + 3 * ldexpf(1, -8), TDNN_ROUND_BF16) == 1.0f + ldexpf(1, -6));
	CHECK(tdnn_round(-1.0f - 3 * ldexpf(1, -8), TDNN_ROUND_BF16) == -1.0f - ldexpf(1, -6));
	CHECK(tdnn_round(0.1f, TDNN_ROUND_NONE) == 0.1f);
	CHECK(isnan(tdnn_round(NAN, TDNN_ROUND_BF16)));
	CHECK(isinf(tdnn_round(INFINITY, TDNN_ROUND_TF32)));
	/* truncation: toward zero whatever the dropped bits, signs alike */
	CHECK(tdnn_round(1.0f + ldexpf(1, -10) + 3 * ldexpf(1, -12), TDNN_ROUND_TF32_TRUNC) ==
	      1.0f + ldexpf(1, -10));
	CHECK(tdnn_round(1.0f + ldexpf(1, -10) + 3 * ldexpf(1, -12), TDNN_ROUND_TF32) ==
	      1.0f + ldexpf(1, -9));
	CHECK(tdnn_round(-1.0f - ldexpf(1, -10) - ldexpf(1, -23), TDNN_ROUND_TF32_TRUNC) ==
	      -1.0f - ldexpf(1, -10));
	CHECK(isnan(tdnn_round(NAN, TDNN_ROUND_TF32_TRUNC)));
	CHECK(tdnn_round(3.4028235e38f, TDNN_ROUND_TF32_TRUNC) < INFINITY);
	/* the largest float rounds up to infinity in bf16, as __float2bfloat16 does */
	CHECK(isinf(tdnn_round(3.4028235e38f, TDNN_ROUND_BF16)));
	for (int i = 0; i < 1000; i++) {
		float v = ldexpf((float)i * 0.7318f + 0.1f, (i % 40) - 20), r;
		uint32_t u;
		r = tdnn_round(v, TDNN_ROUND_BF16);
		memcpy(&u, &r, 4);
		CHECK((u & 0xFFFF) == 0 && fabsf(r - v) <= fabsf(v) * ldexpf(1, -8));
		r = tdnn_round(v, TDNN_ROUND_TF32);
		memcpy(&u, &r, 4);
		CHECK((u & 0x1FFF) == 0 && fabsf(r - v) <= fabsf(v) * ldexpf(1, -11));
		r = tdnn_round(v, TDNN_ROUND_TF32_TRUNC);
		memcpy(&u, &r, 4);
		CHECK((u & 0x1FFF) == 0 && r <= v && v - r < v * ldexpf(1, -10));
	}
}

static void shape(int mode, int D, int W, int P, int E, int S, int B, int T, int assert_grads)
{
	struct xvec_options o;
	xvec_options_default(&o);
	o.feat_dim = D, o.width = W, o.pool_width = P, o.embed = E, o.num_speakers = S;
	o.seed = 3;
	struct xvec_model *m = xt_model(&o, B, T);
	struct sens_bufs b;
	CHECK(sens_bufs_alloc(&b, m, B, D, T, S) == 0);
	const float *base = xvec_model_params(m, &b.np), *x = b.xp;
	int32_t *labels = malloc(sizeof(int32_t) * B);
	philox_normals(11, 1, 0, b.nx, b.xp);
	for (int i = 0; i < B; i++)
		labels[i] = (int32_t)(philox_uniform(11, 2, (uint64_t)i) * S) % S;
	CHECK(sens_bufs_pass(&b, 0, m, x, labels, B, T, S, TDNN_ROUND_NONE) == 0);
	CHECK(sens_bufs_pass(&b, 1, m, x, labels, B, T, S, mode) == 0);
	double l0 = b.loss[0], l1 = b.loss[1];
	CHECKF(l1 != l0, "a %s pass gives the fp32 loss bit for bit: no rounding happened",
	       mode == TDNN_ROUND_TF32 ? "tf32" : "bf16");
	double worst = sens_relerr(b.dx[1], b.dx[0], b.nx);
	for (int i = 0; i < xvec_model_num_tensors(m); i++) {
		const struct xvec_tensor *t = xvec_model_tensor(m, i);
		size_t at = (size_t)(t->data - base);
		worst = fmax(worst, sens_relerr(b.g[1] + at, b.g[0] + at, t->size));
	}
	printf("%s, D %d W %d P %d E %d S %d, batch %d x %d: rounded vs fp32 reference: loss %.3g, "
	       "worst tensor %.3g\n",
	       mode == TDNN_ROUND_TF32 ? "tf32" : "bf16", D, W, P, E, S, B, T,
	       fabs(l1 - l0) / fabs(l0), worst);
	struct xvec_sens tl, apart;
	CHECK(xvec_sens_tolerances(m, x, labels, B, D, T, S, mode, &tl, &apart) == 0);
	if (mode == TDNN_ROUND_TF32)
		printf("  truncating vs rounding reference: loss %.3g, probabilities %.3g, input "
		       "gradient %.3g, parameter gradients %.3g\n",
		       apart.loss, apart.probs, apart.dx, apart.grads);
	printf("  tolerances (3 x the change for a %.1e input move%s): loss %.3g, probabilities "
	       "%.3g, input gradient %.3g, parameter gradients %.3g\n",
	       (double)xvec_sens_scale(mode), mode == TDNN_ROUND_TF32 ? ", plus that distance" : "",
	       tl.loss, tl.probs, tl.dx, tl.grads);
	CHECKF(tl.loss < 1e-2 && tl.probs < 1.0,
	       "tolerances %g, %g: the device test would not "
	       "tell a wrong forward pass",
	       tl.loss, tl.probs);
	if (assert_grads)
		CHECKF(tl.grads < 1.0 && tl.dx < 1.0,
		       "tolerances %g, %g: the device test would not "
		       "tell a wrong result",
		       tl.grads, tl.dx);
	else
		printf("  (gradients not compared at this shape on the device: as sensitive as "
		       "that)\n");
	sens_bufs_free(&b);
	free(labels);
	xvec_model_destroy(m);
}

int main(void)
{
	check_round();
	/* the tf32 and bf16 shapes of test_network.c */
	shape(TDNN_ROUND_TF32, 24, 64, 128, 32, 10, 48, 60, 1);
	shape(TDNN_ROUND_BF16, 24, 64, 128, 32, 10, 48, 60, 1);
	shape(TDNN_ROUND_BF16, 30, 512, 1500, 512, 50, 16, 40, 0);
	printf("PASS\n");
	return 0;
}
