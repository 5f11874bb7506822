/* test_verify_metrics.c — EER and minDCF on score sets small enough to work out by hand,
 * and the cosine similarity. */
#include "check.h"
#include "verify_metrics.h"
#include "status.h"

#include <math.h>

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

int main(void)
{
	char err[256];
	double eer, dcf, thr;

	/* perfectly separated: EER 0, minDCF 0 at the lowest target score */
	const float t1[] = { 2.0f, 3.0f }, n1[] = { 0.0f, 1.0f };
	CHECK(verify_eer(t1, 2, n1, 2, &eer, err, sizeof(err)) == 0);
	CHECKF(NEAR(eer, 0.0), "eer %g", eer);
	CHECK(verify_min_dcf(t1, 2, n1, 2, 0.01, 1, 1, &dcf, &thr, err, sizeof(err)) == 0);
	CHECKF(NEAR(dcf, 0.0) && thr == 2.0, "dcf %g thr %g", dcf, thr);

	/* targets {1, 3}, non-targets {0, 2}: accepting >= 3 misses one target of
	 * two and accepts nothing: P_miss = 0.5 = P_fa at ">= 2" -> EER 0.5;
	 * cost at ">= 3" = 0.5 * 0.01 / 0.01 = 0.5, the minimum */
	const float t2[] = { 3.0f, 1.0f }, n2[] = { 2.0f, 0.0f };
	CHECK(verify_eer(t2, 2, n2, 2, &eer, err, sizeof(err)) == 0);
	CHECKF(NEAR(eer, 0.5), "eer %g", eer);
	CHECK(verify_min_dcf(t2, 2, n2, 2, 0.01, 1, 1, &dcf, &thr, err, sizeof(err)) == 0);
	CHECKF(NEAR(dcf, 0.5) && thr == 3.0, "dcf %g thr %g", dcf, thr);

	/* targets {2, 3}, non-targets {1, 4, 5}: (P_miss, P_fa) is (1/2, 2/3) at
	 * ">= 3" and (1, 2/3) at ">= 4"; the rates cross on that segment, a third
	 * of the way along: EER = 1/2 + 1/3 * 1/2 = 2/3 */
	const float t3[] = { 2.0f, 3.0f }, n3[] = { 1.0f, 4.0f, 5.0f };
	CHECK(verify_eer(t3, 2, n3, 3, &eer, err, sizeof(err)) == 0);
	CHECKF(NEAR(eer, 2.0 / 3.0), "eer %g", eer);
	/* best cost: reject all (P_miss 1, P_fa 0) -> 1.0 normalized */
	CHECK(verify_min_dcf(t3, 2, n3, 3, 0.01, 1, 1, &dcf, &thr, err, sizeof(err)) == 0);
	CHECKF(NEAR(dcf, 1.0) && isinf(thr), "dcf %g thr %g", dcf, thr);
	/* with p_target 0.5: c_def 0.5; at ">= 2": 0.5 * 2/3 / 0.5 = 2/3 is the minimum */
	CHECK(verify_min_dcf(t3, 2, n3, 3, 0.5, 1, 1, &dcf, &thr, err, sizeof(err)) == 0);
	CHECKF(NEAR(dcf, 2.0 / 3.0) && thr == 2.0, "dcf %g thr %g", dcf, thr);

	/* ties move together: all scores equal -> EER 0.5 */
	const float t4[] = { 1.0f, 1.0f }, n4[] = { 1.0f, 1.0f };
	CHECK(verify_eer(t4, 2, n4, 2, &eer, err, sizeof(err)) == 0);
	CHECKF(NEAR(eer, 0.5), "eer %g", eer);

	/* errors */
	CHECK(verify_eer(t1, 0, n1, 2, &eer, err, sizeof(err)) == FEEDER_EINVAL);
	const float tn[] = { NAN };
	CHECK(verify_eer(tn, 1, n1, 2, &eer, err, sizeof(err)) == FEEDER_EINVAL);
	CHECK(verify_min_dcf(t1, 2, n1, 2, 1.5, 1, 1, &dcf, NULL, err, sizeof(err)) ==
	      FEEDER_EINVAL);

	/* cosine */
	const float a[] = { 1, 0, 0 }, b[] = { 0, 2, 0 }, c[] = { 3, 0, 0 }, d[] = { -1, -1, 0 };
	CHECK(fabsf(verify_cosine(a, b, 3)) < 1e-7f);
	CHECK(fabsf(verify_cosine(a, c, 3) - 1.0f) < 1e-7f);
	CHECK(fabsf(verify_cosine(a, d, 3) + (float)M_SQRT1_2) < 1e-6f);
	return 0;
}
