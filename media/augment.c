/* augment.c — additive noise, babble, gain and SpecAugment masks (see
 * augment.h for the definitions of the segments and of the SNR). */
#include "augment.h"

#include <math.h>
#include <string.h>

double augment_energy(const float *x, size_t n)
{
	double e = 0.0;
	for (size_t i = 0; i < n; i++)
		e += (double)x[i] * x[i];
	return e;
}

double augment_noise_energy(const float *noise, size_t m, size_t offset, size_t n)
{
	if (m == 0)
		return 0.0;
	double e = 0.0;
	size_t pos = offset % m;
	for (size_t i = 0; i < n;) {
		size_t run = m - pos < n - i ? m - pos : n - i;
		e += augment_energy(noise + pos, run);
		i += run;
		pos = 0;
	}
	return e;
}

/* x[i] += g * noise[(offset + i) mod m], by contiguous runs. */
static void augment_mix(float *x, size_t n, const float *noise, size_t m, size_t offset, float g)
{
	size_t pos = offset % m;
	for (size_t i = 0; i < n;) {
		size_t run = m - pos < n - i ? m - pos : n - i;
		for (size_t j = 0; j < run; j++)
			x[i + j] += g * noise[pos + j];
		i += run;
		pos = 0;
	}
}

void augment_add_noise_ref(float *x, size_t n, double ref_energy, const float *noise, size_t m,
			   size_t offset, double snr_db)
{
	if (n == 0 || m == 0 || !(ref_energy > 0.0) || !isfinite(ref_energy) || !isfinite(snr_db))
		return;
	double ev = augment_noise_energy(noise, m, offset, n);
	if (!(ev > 0.0) || !isfinite(ev))
		return;
	/* g^2 E_v = E_x / 10^(snr/10). */
	double g = sqrt(ref_energy / (ev * pow(10.0, snr_db / 10.0)));
	augment_mix(x, n, noise, m, offset, (float)g);
}

void augment_add_noise(float *x, size_t n, const float *noise, size_t m, size_t offset,
		       double snr_db)
{
	augment_add_noise_ref(x, n, augment_energy(x, n), noise, m, offset, snr_db);
}

void augment_accumulate(float *acc, size_t n, const float *noise, size_t m, size_t offset)
{
	if (m == 0)
		return;
	augment_mix(acc, n, noise, m, offset, 1.0f);
}

void augment_add_babble(float *x, size_t n, const struct augment_segment *segs, size_t k,
			double snr_db, float *scratch)
{
	if (n == 0)
		return;
	memset(scratch, 0, n * sizeof(float));
	for (size_t i = 0; i < k; i++)
		augment_accumulate(scratch, n, segs[i].samples, segs[i].len, segs[i].offset);
	augment_add_noise(x, n, scratch, n, 0, snr_db);
}

void augment_gain(float *x, size_t n, double gain_db)
{
	const float g = (float)pow(10.0, gain_db / 20.0);
	for (size_t i = 0; i < n; i++)
		x[i] *= g;
}

/* The end of [start, start + width) clipped to len (<= start when nothing of
 * it is left), in 64 bits so that start + width cannot wrap. */
static uint32_t augment_clip(uint32_t len, uint32_t start, uint32_t width)
{
	uint64_t end = (uint64_t)start + width;
	return (uint32_t)(end < len ? end : len);
}

void augment_time_mask(float *feat, uint32_t frames, uint32_t dim, uint32_t start, uint32_t width,
		       float value)
{
	uint32_t end = augment_clip(frames, start, width);
	for (uint32_t t = start; t < end; t++)
		for (uint32_t j = 0; j < dim; j++)
			feat[(size_t)t * dim + j] = value;
}

void augment_freq_mask(float *feat, uint32_t frames, uint32_t dim, uint32_t start, uint32_t width,
		       float value)
{
	uint32_t end = augment_clip(dim, start, width);
	if (start >= end)
		return;
	for (uint32_t t = 0; t < frames; t++)
		for (uint32_t j = start; j < end; j++)
			feat[(size_t)t * dim + j] = value;
}
