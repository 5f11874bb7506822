/* signals.h — the inputs the feature tests share: tones and reproducible
 * uniform noise (a xorshift generator a test may seed). */
#ifndef FEEDER_TEST_SIGNALS_H
#define FEEDER_TEST_SIGNALS_H

#include "check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* n samples of amp * sin(2 pi hz t / rate). */
static inline float *sig_tone(size_t n, double hz, double rate, double amp)
{
	float *x = malloc((n ? n : 1) * sizeof(float));
	CHECK(x != NULL);
	for (size_t i = 0; i < n; i++)
		x[i] = (float)(amp * sin(2.0 * M_PI * hz * (double)i / rate));
	return x;
}

static uint64_t sig_rng = 0x9e3779b97f4a7c15ull;

/* Uniform in [0, 1). */
static inline double sig_uniform(void)
{
	sig_rng ^= sig_rng << 13;
	sig_rng ^= sig_rng >> 7;
	sig_rng ^= sig_rng << 17;
	return (double)(sig_rng >> 11) / 9007199254740992.0;
}

/* n samples uniform in [-amp, amp). */
static inline float *sig_noise(size_t n, double amp)
{
	float *x = malloc((n ? n : 1) * sizeof(float));
	CHECK(x != NULL);
	for (size_t i = 0; i < n; i++)
		x[i] = (float)((sig_uniform() * 2.0 - 1.0) * amp);
	return x;
}

#endif
