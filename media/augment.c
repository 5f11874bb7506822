/* augment.c — additive noise, babble, gain and SpecAugment masks (see
 * augment.h for the definitions of the segments and of the SNR). */
#include "augment.h"

#include <math.h>
#include <string.h>

double augment_energy(const float *x, size_t n)
{
	/* 16 running sums (four vectors of four): one chain of dependent adds
	 * made this a twentieth of an augmented chunk. */
	enum { R = 16 };
	double s[R] = { 0 }, e = 0.0;
	size_t i = 0;
	for (; i + R <= n; i += R)
		for (int k = 0; k < R; k++)
			s[k] += (double)x[i + k] * x[i + k];
	for (; i < n; i++)
		s[0] += (double)x[i] * x[i];
	for (int k = 0; k < R; k++)
		e += s[k];
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

void augment_add_noise(float *x, size_t n, const float *noise, size_t m, size_t offset,
		       double snr_db)
{
	double ref_energy = augment_energy(x, n);
	if (n == 0 || m == 0 || !(ref_energy > 0.0) || !isfinite(ref_energy) || !isfinite(snr_db))
		return;
	double ev = augment_noise_energy(noise, m, offset, n);
	if (!(ev > 0.0) || !isfinite(ev))
		return;
	/* g^2 E_v = E_x / 10^(snr/10). */
	double g = sqrt(ref_energy / (ev * pow(10.0, snr_db / 10.0)));
	augment_mix(x, n, noise, m, offset, (float)g);
}

void augment_accumulate(float *acc, size_t n, const float *noise, size_t m, size_t offset)
{
	if (m == 0)
		return;
	augment_mix(acc, n, noise, m, offset, 1.0f);
}

void augment_gain(float *x, size_t n, double gain_db)
{
	const float g = (float)pow(10.0, gain_db / 20.0);
	for (size_t i = 0; i < n; i++)
		x[i] *= g;
}
