/* verify_metrics.h — speaker-verification metrics for x-vector evaluation: EER, minDCF, cosine.
 *
 * The trainer scores trial pairs (cosine similarity of x-vectors) and reports
 * the equal error rate and the minimum detection cost. A trial is accepted
 * when its score is >= the threshold; thresholds are swept over every
 * distinct score (tied scores move together), plus "accept all" and
 * "reject all". */
#ifndef FEEDER_VERIFY_METRICS_H
#define FEEDER_VERIFY_METRICS_H

#include <stddef.h>

/* Equal error rate in [0, 1]: the point where the miss rate (targets
 * rejected) equals the false-alarm rate (non-targets accepted), linearly
 * interpolated between the two neighbouring thresholds where the two rates
 * cross. Returns 0, FEEDER_EINVAL (an empty set, a NaN score) or -ENOMEM. */
int verify_eer(const float *target, size_t ntarget, const float *nontarget, size_t nnontarget,
	       double *eer, char *err, size_t errlen);

/* Minimum over thresholds of the normalized detection cost
 *   (c_miss * P_miss * p_target + c_fa * P_fa * (1 - p_target)) / min(c_miss * p_target, c_fa * (1 - p_target)),
 * as Kaldi's sid/compute_min_dcf.py computes it (the usual setting is
 * p_target 0.01, c_miss = c_fa = 1). *threshold (may be NULL) gets the
 * lowest accepted score at the minimum (+inf if rejecting all is best).
 * Same errors as verify_eer, and FEEDER_EINVAL for p_target outside (0, 1)
 * or non-positive costs. */
int verify_min_dcf(const float *target, size_t ntarget, const float *nontarget, size_t nnontarget,
		   double p_target, double c_miss, double c_fa, double *min_dcf, double *threshold,
		   char *err, size_t errlen);

/* The DET curve: miss and false-alarm rates at every threshold, from
 * "accept all" (pmiss 0, pfa 1) to "reject all" (1, 0), *npoints of each,
 * malloc'd (the caller frees both). Same errors as verify_eer. */
int verify_det(const float *target, size_t ntarget, const float *nontarget, size_t nnontarget,
	       double **pmiss, double **pfa, size_t *npoints, char *err, size_t errlen);

/* Cosine similarity of a and b (n floats); 0 when either has zero norm. */
float verify_cosine(const float *a, const float *b, size_t n);

#endif
