/* gradcheck.h — comparing float32 analytic gradients with double central differences.
 *
 * Tolerance: |analytic - numeric| <= GRAD_RTOL * |numeric| + GRAD_ATOL * max|numeric|
 * over the group checked. The numeric side is exact to ~1e-9 (double, h =
 * 1e-5, smooth functions); the analytic side is float32, whose rounding
 * (~6e-8 relative per operation, growing with reduction length and through
 * the 1/std factors of batch norm) stays well below 1e-3 of the gradient's
 * scale at these sizes. 2e-3 relative plus 2e-4 of the group's largest
 * entry leaves room for that and still fails on any real mistake (a missing
 * term is off by O(1)). */
#ifndef FEEDER_GRADCHECK_H
#define FEEDER_GRADCHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define GRAD_H 1e-5
#define GRAD_RTOL 2e-3
#define GRAD_ATOL 2e-4

/* num[J] = the central difference of the expression LOSS (which reads v,
 * and may read J) in v[J * step], for each J with J * step < n. */
#define GRAD_NUMERIC(num, v, n, step, J, LOSS)                                                     \
	for (size_t J = 0; J * (step) < (n); J++) {                                                \
		double *at_ = &(v)[J * (step)], keep_ = *at_, lp_;                                 \
		*at_ = keep_ + GRAD_H;                                                             \
		lp_ = (LOSS);                                                                      \
		*at_ = keep_ - GRAD_H;                                                             \
		(num)[J] = (lp_ - (LOSS)) / (2 * GRAD_H);                                          \
		*at_ = keep_;                                                                      \
	}

/* Fails the test (exit 1) if any analytic[i] is off from numeric[i]. */
static inline void gradcheck(const char *what, const float *analytic, const double *numeric,
			     size_t n)
{
	double scale = 0, worst = 0;

	for (size_t i = 0; i < n; i++)
		scale = fmax(scale, fabs(numeric[i]));
	for (size_t i = 0; i < n; i++) {
		double d = fabs(analytic[i] - numeric[i]);
		double tol = GRAD_RTOL * fabs(numeric[i]) + GRAD_ATOL * scale;

		worst = fmax(worst, d / (fabs(numeric[i]) + scale + 1e-30));
		if (!(d <= tol)) {
			fprintf(stderr, "%s: element %zu: analytic %.9g, numeric %.9g (scale %g)\n",
				what, i, analytic[i], numeric[i], scale);
			exit(1);
		}
	}
	if (scale == 0) {
		fprintf(stderr, "%s: all gradients are zero, nothing was checked\n", what);
		exit(1);
	}
	printf("%-40s %5zu values, scale %.3g, worst relative error %.2e\n", what, n, scale, worst);
}

#endif
