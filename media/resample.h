/* resample.h — whole-signal sample-rate conversion with libsoxr.
 *
 * packer brings every source file to the dataset's rate (44.1 kHz or 8 kHz
 * recordings into a 16 kHz dataset) before it computes features or stores
 * the waveform. libsoxr's high quality (SOXR_HQ: 20-bit, pass band to 91 %
 * of the lower Nyquist, linear phase) is used because it runs once per file
 * at pack time, where quality matters more than speed; soxr is deterministic,
 * so the same files give the same dataset bytes. */
#ifndef FEEDER_RESAMPLE_H
#define FEEDER_RESAMPLE_H

#include <stddef.h>

/* Resample the n samples at x from in_rate to out_rate (Hz, > 0). On
 * success *out is a malloc'd array of *out_n = round(n * out_rate / in_rate)
 * samples (NULL when 0), aligned with the input (no delay). Returns 0,
 * FEEDER_EINVAL for a bad rate, or -ENOMEM / FEEDER_EFORMAT (soxr's failure),
 * with a sentence in err. */
int resample_float(const float *x, size_t n, double in_rate, double out_rate, float **out,
		   size_t *out_n, char *err, size_t errlen);

#endif
