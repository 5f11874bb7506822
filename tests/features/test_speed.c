/* test_speed — speed perturbation (media/speed.c) and whole-signal
 * resampling (media/resample.c): output lengths round(n / f); a 440 Hz tone
 * perturbed by 1.1 and 0.9 peaks at 484 and 396 Hz (a windowed DFT scanned
 * here) with its level kept; factor 1 copies bit for bit, in place too; the
 * same call gives the same bytes whether its resampler is fresh, reused or
 * made again after being replaced; factors out of range and short outputs
 * are refused; resample_float keeps a tone's frequency and amplitude from
 * 44.1, 48 and 8 kHz to 16 kHz. */
#include "resample.h"
#include "signals.h"
#include "speed.h"
#include "status.h"

#include <string.h>

#define RATE 16000.0

/* Magnitude of the Hann-windowed DFT of x at hz. */
static double dft_at(const float *x, size_t n, double hz, double rate)
{
	double re = 0.0, im = 0.0;
	for (size_t i = 0; i < n; i++) {
		double w = 0.5 - 0.5 * cos(2.0 * M_PI * (double)i / (double)(n - 1));
		double ph = 2.0 * M_PI * hz * (double)i / rate;
		re += w * x[i] * cos(ph);
		im -= w * x[i] * sin(ph);
	}
	return sqrt(re * re + im * im);
}

/* The frequency in lo..hi (0.25 Hz steps) where the DFT of x peaks. */
static double peak_hz(const float *x, size_t n, double lo, double hi, double rate)
{
	double best = lo, bestv = -1.0;
	for (double f = lo; f <= hi; f += 0.25) {
		double v = dft_at(x, n, f, rate);
		if (v > bestv) {
			bestv = v;
			best = f;
		}
	}
	return best;
}

/* y[0..n) at 16 kHz is amp sin(2 pi hz t / RATE): its spectrum peaks
 * within 1 % of hz (searched in lo..hi Hz), and away from the edges (where
 * the filters see silence) its RMS is within 1 % of the tone's and no
 * sample is off the ideal tone by over 1 % of amp (not delayed either). */
static void check_tone(const float *y, size_t n, double hz, double amp, double lo, double hi,
		       size_t edge, const char *what)
{
	double f = peak_hz(y, n, lo, hi, RATE);
	CHECKF(fabs(f - hz) <= 0.01 * hz, "%s: the tone peaks at %.2f Hz, not %.1f", what, f, hz);
	double e = 0.0, worst = 0.0, want = amp / sqrt(2.0);
	for (size_t t = edge; t < n - edge; t++) {
		e += (double)y[t] * y[t];
		worst = fmax(worst, fabs(y[t] - amp * sin(2.0 * M_PI * hz * (double)t / RATE)));
	}
	double level = sqrt(e / (double)(n - 2 * edge));
	CHECKF(fabs(level - want) <= 0.01 * want, "%s: RMS %.1f, not %.1f", what, level, want);
	CHECKF(worst <= 0.01 * amp, "%s: off the ideal tone by %.1f", what, worst);
	printf("%s: %zu samples, peak %.2f Hz (want %.1f), RMS %.2f (want %.2f), max dev %.2f\n",
	       what, n, f, hz, level, want, worst);
}

static void test_lengths(struct speed *s)
{
	static const float factors[] = { 0.9f, 1.0f, 1.1f, 0.95f, 1.05f };
	static const double exact[] = { 0.9, 1.0, 1.1, 0.95, 1.05 };
	static const size_t lens[] = { 35200, 32000, 16001, 1000, 7, 1 };
	char err[256];
	float *y = malloc(50000 * sizeof(float));
	CHECK(y != NULL);
	for (size_t fi = 0; fi < 5; fi++)
		for (size_t li = 0; li < 6; li++) {
			size_t n = lens[li];
			float *x = sig_tone(n, 440.0, RATE, 10000.0);
			size_t got = 0;
			int rc = speed_perturb(s, factors[fi], x, n, y, 50000, &got, err,
					       sizeof(err));
			CHECKF(rc == 0, "%s", err);
			CHECKF(got == speed_out_len(n, factors[fi]),
			       "n %zu f %g: %zu samples, said %zu", n, exact[fi], got,
			       speed_out_len(n, factors[fi]));
			double want = round((double)n / exact[fi]);
			CHECKF(fabs((double)got - want) <= 1.0,
			       "n %zu f %g: %zu samples, not %.0f +- 1", n, exact[fi], got, want);
			free(x);
		}
	free(y);
}

static void test_tone(struct speed *s)
{
	const size_t n = 35200;
	float *x = sig_tone(n, 440.0, RATE, 10000.0), *y = malloc(50000 * sizeof(float));
	CHECK(y != NULL);
	char err[256], what[32];
	static const float factors[] = { 1.1f, 0.9f };
	for (int i = 0; i < 2; i++) {
		size_t got = 0;
		CHECK(speed_perturb(s, factors[i], x, n, y, 50000, &got, err, sizeof(err)) == 0);
		snprintf(what, sizeof(what), "speed %.1f", (double)factors[i]);
		check_tone(y, got, 440.0 * factors[i], 10000.0, 350.0, 550.0, 2000, what);
	}
	free(x);
	free(y);
}

static void test_identity_and_determinism(void)
{
	struct speed *s, *fresh;
	char err[256];
	CHECK(speed_create(&s, err, sizeof(err)) == 0);
	const size_t n = 20000;
	float *x = sig_tone(n, 300.0, RATE, 5000.0);
	for (size_t i = 0; i < n; i++)
		x[i] += (float)((i * 7919) % 211) - 105.0f;
	float *a = malloc(30000 * sizeof(float)), *b = malloc(30000 * sizeof(float));
	CHECK(a && b);
	size_t na = 0, nb = 0;
	/* Factor 1: a copy, and in place. */
	CHECK(speed_perturb(s, 1.0f, x, n, a, n, &na, err, sizeof(err)) == 0);
	CHECK(na == n && memcmp(a, x, n * sizeof(float)) == 0);
	CHECK(speed_perturb(s, 1.0f, a, n, a, n, &na, err, sizeof(err)) == 0);
	CHECK(na == n && memcmp(a, x, n * sizeof(float)) == 0);
	/* Fresh, reused, and again after SPEED_SLOTS other factors. */
	CHECK(speed_create(&fresh, err, sizeof(err)) == 0);
	CHECK(speed_perturb(fresh, 1.1f, x, n, a, 30000, &na, err, sizeof(err)) == 0);
	speed_destroy(fresh);
	CHECK(speed_perturb(s, 1.1f, x, n, b, 30000, &nb, err, sizeof(err)) == 0);
	CHECKF(na == nb && memcmp(a, b, na * sizeof(float)) == 0,
	       "a fresh and a kept resampler differ");
	CHECK(speed_perturb(s, 1.1f, x, n, b, 30000, &nb, err, sizeof(err)) == 0);
	CHECKF(na == nb && memcmp(a, b, na * sizeof(float)) == 0, "a reused resampler differs");
	for (int k = 0; k < SPEED_SLOTS + 1; k++)
		CHECK(speed_perturb(s, 0.8f + 0.01f * (float)k, x, n, b, 30000, &nb, err,
				    sizeof(err)) == 0);
	CHECK(speed_perturb(s, 1.1f, x, n, b, 30000, &nb, err, sizeof(err)) == 0);
	CHECKF(na == nb && memcmp(a, b, na * sizeof(float)) == 0, "a remade resampler differs");
	/* Refusals. */
	CHECK(speed_perturb(s, 0.3f, x, n, b, 30000, &nb, err, sizeof(err)) == FEEDER_EINVAL);
	CHECK(strstr(err, "outside") != NULL);
	CHECK(speed_perturb(s, NAN, x, n, b, 30000, &nb, err, sizeof(err)) == FEEDER_EINVAL);
	CHECK(speed_perturb(s, 2.5f, x, n, b, 30000, &nb, err, sizeof(err)) == FEEDER_EINVAL);
	CHECK(speed_perturb(s, 0.9f, x, n, b, 22221, &nb, err, sizeof(err)) == FEEDER_EQUOTA);
	CHECK(speed_perturb(s, 0.9f, x, n, b, 22222, &nb, err, sizeof(err)) == 0 && nb == 22222);
	CHECK(speed_perturb(s, 1.1f, x, 0, b, 0, &nb, err, sizeof(err)) == 0 && nb == 0);
	CHECK(speed_out_len(100, 0.1f) == 0);
	speed_destroy(s);
	free(x);
	free(a);
	free(b);
}

static void test_resample(void)
{
	static const double rates[] = { 44100.0, 48000.0, 8000.0 };
	char err[256], what[32];
	for (int i = 0; i < 3; i++) {
		const size_t n = (size_t)(2.0 * rates[i]);
		float *x = sig_tone(n, 1000.0, rates[i], 10000.0), *y = NULL;
		size_t got = 0;
		CHECKF(resample_float(x, n, rates[i], RATE, &y, &got, err, sizeof(err)) == 0, "%s",
		       err);
		CHECKF(got == (size_t)llround((double)n * RATE / rates[i]), "%g Hz: %zu samples",
		       rates[i], got);
		snprintf(what, sizeof(what), "resample %g -> 16000", rates[i]);
		check_tone(y, got, 1000.0, 10000.0, 900.0, 1100.0, 1000, what);
		free(x);
		free(y);
	}
}

int main(void)
{
	struct speed *s;
	char err[256];
	CHECKF(speed_create(&s, err, sizeof(err)) == 0, "%s", err);
	test_lengths(s);
	test_tone(s);
	speed_destroy(s);
	test_identity_and_determinism();
	test_resample();
	return 0;
}
