/* verify_metrics.c — EER, minDCF and cosine scoring (see verify_metrics.h).
 *
 * Both error rates come from one sweep over the scores sorted ascending:
 * rejecting the lowest i scores gives P_miss = targets among them / ntarget
 * and P_fa = non-targets above them / nnontarget. */
#include "verify_metrics.h"
#include "status.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

struct metrics_trial {
	float score;
	int target;
};

static int metrics_cmp(const void *a, const void *b)
{
	float x = ((const struct metrics_trial *)a)->score;
	float y = ((const struct metrics_trial *)b)->score;

	return (x > y) - (x < y);
}

/* Sorted trials and the miss / false-alarm rates at each group boundary:
 * rates k = 0 .. *npoints-1, with point 0 = accept all and the last point =
 * reject all; lowest[k] is the lowest accepted score at point k. */
static int metrics_sweep(const float *tar, size_t nt, const float *non, size_t nn, double **pmiss,
			 double **pfa, float **lowest, size_t *npoints, char *err, size_t errlen)
{
	size_t n = nt + nn, k = 0, miss = 0, fa = nn;
	struct metrics_trial *tr;

	if (nt == 0 || nn == 0)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "metrics: need target and non-target scores (got %zu and %zu)",
				   nt, nn);
	tr = malloc(sizeof(*tr) * n);
	*pmiss = malloc(sizeof(double) * (n + 1));
	*pfa = malloc(sizeof(double) * (n + 1));
	*lowest = malloc(sizeof(float) * (n + 1));
	if (!tr || !*pmiss || !*pfa || !*lowest) {
		free(tr);
		free(*pmiss);
		free(*pfa);
		free(*lowest);
		return status_fail(err, errlen, -ENOMEM, "metrics: out of memory for %zu scores",
				   n);
	}
	for (size_t i = 0; i < n; i++) {
		tr[i].score = i < nt ? tar[i] : non[i - nt];
		tr[i].target = i < nt;
		if (isnan(tr[i].score)) {
			free(tr);
			free(*pmiss);
			free(*pfa);
			free(*lowest);
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "metrics: %s score %zu is NaN",
					   i < nt ? "target" : "non-target", i < nt ? i : i - nt);
		}
	}
	qsort(tr, n, sizeof(*tr), metrics_cmp);
	for (size_t i = 0;;) {
		(*pmiss)[k] = (double)miss / (double)nt;
		(*pfa)[k] = (double)fa / (double)nn;
		(*lowest)[k] = i < n ? tr[i].score : INFINITY;
		k++;
		if (i == n)
			break;
		float s = tr[i].score;
		for (; i < n && tr[i].score == s; i++) {
			if (tr[i].target)
				miss++;
			else
				fa--;
		}
	}
	free(tr);
	*npoints = k;
	return 0;
}

int verify_det(const float *target, size_t ntarget, const float *nontarget, size_t nnontarget,
	       double **pmiss, double **pfa, size_t *npoints, char *err, size_t errlen)
{
	float *lowest;
	int rc = metrics_sweep(target, ntarget, nontarget, nnontarget, pmiss, pfa, &lowest, npoints,
			       err, errlen);
	if (rc == 0)
		free(lowest);
	return rc;
}

int verify_eer(const float *target, size_t ntarget, const float *nontarget, size_t nnontarget,
	       double *eer, char *err, size_t errlen)
{
	double *pmiss, *pfa;
	float *lowest;
	size_t np;
	int rc = metrics_sweep(target, ntarget, nontarget, nnontarget, &pmiss, &pfa, &lowest, &np,
			       err, errlen);

	if (rc)
		return rc;
	/* point 0 has pmiss 0 < pfa 1 and the last has pmiss 1 > pfa 0, so a crossing exists */
	for (size_t k = 1; k < np; k++) {
		if (pmiss[k] < pfa[k])
			continue;
		double dj = pfa[k - 1] - pmiss[k - 1], dk = pfa[k] - pmiss[k];
		double a = dj / (dj - dk);

		*eer = pmiss[k - 1] + a * (pmiss[k] - pmiss[k - 1]);
		break;
	}
	free(pmiss);
	free(pfa);
	free(lowest);
	return 0;
}

int verify_min_dcf(const float *target, size_t ntarget, const float *nontarget, size_t nnontarget,
		   double p_target, double c_miss, double c_fa, double *min_dcf, double *threshold,
		   char *err, size_t errlen)
{
	double *pmiss, *pfa;
	float *lowest;
	size_t np, best = 0;
	int rc;

	if (!(p_target > 0.0 && p_target < 1.0) || !(c_miss > 0.0) || !(c_fa > 0.0))
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"metrics: p_target %g must be in (0, 1) and costs %g, %g positive",
			p_target, c_miss, c_fa);
	rc = metrics_sweep(target, ntarget, nontarget, nnontarget, &pmiss, &pfa, &lowest, &np, err,
			   errlen);
	if (rc)
		return rc;
	double c_def = fmin(c_miss * p_target, c_fa * (1.0 - p_target));
	double min = INFINITY;
	for (size_t k = 0; k < np; k++) {
		double c = c_miss * pmiss[k] * p_target + c_fa * pfa[k] * (1.0 - p_target);

		if (c < min) {
			min = c;
			best = k;
		}
	}
	*min_dcf = min / c_def;
	if (threshold)
		*threshold = lowest[best];
	free(pmiss);
	free(pfa);
	free(lowest);
	return 0;
}

float verify_cosine(const float *a, const float *b, size_t n)
{
	double ab = 0.0, aa = 0.0, bb = 0.0;

	for (size_t i = 0; i < n; i++) {
		ab += (double)a[i] * b[i];
		aa += (double)a[i] * a[i];
		bb += (double)b[i] * b[i];
	}
	if (aa == 0.0 || bb == 0.0)
		return 0.0f;
	return (float)(ab / sqrt(aa * bb));
}
