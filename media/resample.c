/* resample.c — libsoxr one-shot resampling (see resample.h). */
#include "resample.h"

#include "status.h"

#include <errno.h>
#include <math.h>
#include <soxr.h>
#include <stdlib.h>

int resample_float(const float *x, size_t n, double in_rate, double out_rate, float **out,
		   size_t *out_n, char *err, size_t errlen)
{
	*out = NULL;
	*out_n = 0;
	if (!(in_rate > 0) || !(out_rate > 0))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "cannot resample from %g Hz to %g Hz", in_rate, out_rate);
	size_t want = (size_t)llround((double)n * out_rate / in_rate);
	if (want == 0)
		return 0;
	float *y = malloc(want * sizeof(float));
	if (!y)
		return status_fail(err, errlen, -ENOMEM, "no memory for %zu resampled samples",
				   want);
	soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
	soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
	size_t done = 0;
	/* soxr_oneshot flushes the filter's tail, so the output is the whole
	 * signal, delay compensated; should it come out short of the rounded
	 * length, the rest is silence. */
	soxr_error_t e =
		soxr_oneshot(in_rate, out_rate, 1, x, n, NULL, y, want, &done, &io, &q, NULL);
	if (e) {
		free(y);
		return status_fail(err, errlen, FEEDER_EFORMAT, "resampling %g Hz to %g Hz: %s",
				   in_rate, out_rate, e);
	}
	for (size_t i = done; i < want; i++)
		y[i] = 0.0f;
	*out = y;
	*out_n = want;
	return 0;
}
