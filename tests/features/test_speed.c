/* test_speed — speed perturbation (media/speed.c) and whole-signal
 * resampling (media/resample.c): output lengths round(n / f); a 440 Hz tone
 * perturbed by 1.1 and 0.9 peaks at 484 and 396 Hz (a windowed DFT scanned
 * here) with its level kept; factor 1 copies bit for bit, in place too; the
 * same call gives the same bytes whether its resampler is fresh, reused or
 * made again after being replaced; factors out of range and short outputs
 * are refused; resample_float keeps a tone's frequency and amplitude from
 * 44.1, 48 and 8 kHz to 16 kHz. `test_speed bench` prints timings. */
#include "check.h"
#include "resample.h"
#include "speed.h"
#include "status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RATE 16000.0

static float *tone(size_t n, double hz, double rate, double amp)
{
	float *x = malloc((n ? n : 1) * sizeof(float));
	CHECK(x != NULL);
	for (size_t i = 0; i < n; i++)
		x[i] = (float)(amp * sin(2.0 * M_PI * hz * (double)i / rate));
	return x;
}

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

/* RMS of x[a..b) (away from the edges, where the filters see silence). */
static double rms(const float *x, size_t a, size_t b)
{
	double e = 0.0;
	for (size_t i = a; i < b; i++)
		e += (double)x[i] * x[i];
	return sqrt(e / (double)(b - a));
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
			float *x = tone(n, 440.0, RATE, 10000.0);
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
	float *x = tone(n, 440.0, RATE, 10000.0);
	float *y = malloc(50000 * sizeof(float));
	CHECK(y != NULL);
	char err[256];
	static const float factors[] = { 1.1f, 0.9f };
	for (int i = 0; i < 2; i++) {
		size_t got = 0;
		CHECK(speed_perturb(s, factors[i], x, n, y, 50000, &got, err, sizeof(err)) == 0);
		double want = 440.0 * factors[i];
		double hz = peak_hz(y, got, 350.0, 550.0, RATE);
		CHECKF(fabs(hz - want) <= 0.01 * want,
		       "speed %g: the tone peaks at %.2f Hz, not %.1f", (double)factors[i], hz,
		       want);
		double level = rms(y, 2000, got - 2000), in_level = 10000.0 / sqrt(2.0);
		CHECKF(fabs(level - in_level) <= 0.01 * in_level, "speed %g: RMS %.1f, input %.1f",
		       (double)factors[i], level, in_level);
		/* Not delayed: sample t is the input at t * f. */
		double worst = 0.0;
		for (size_t t = 2000; t < got - 2000; t++)
			worst = fmax(worst, fabs(y[t] - 10000.0 * sin(2.0 * M_PI * want *
								      (double)t / RATE)));
		CHECKF(worst <= 100.0, "speed %g: off the ideal tone by %.1f", (double)factors[i],
		       worst);
		printf("speed %.1f: peak %.2f Hz (want %.1f), RMS %.2f (input %.2f), max dev %.2f\n",
		       (double)factors[i], hz, want, level, in_level, worst);
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
	float *x = tone(n, 300.0, RATE, 5000.0);
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
	char err[256];
	for (int i = 0; i < 3; i++) {
		const double in_rate = rates[i], hz = 1000.0, amp = 10000.0;
		const size_t n = (size_t)(2.0 * in_rate);
		float *x = tone(n, hz, in_rate, amp), *y = NULL;
		size_t got = 0;
		int rc = resample_float(x, n, in_rate, RATE, &y, &got, err, sizeof(err));
		CHECKF(rc == 0, "%s", err);
		CHECKF(got == (size_t)llround((double)n * RATE / in_rate), "%g Hz: %zu samples",
		       in_rate, got);
		double f = peak_hz(y, got, 900.0, 1100.0, RATE);
		CHECKF(fabs(f - hz) <= 0.01 * hz, "%g Hz to 16 kHz: the tone peaks at %.2f Hz",
		       in_rate, f);
		double level = rms(y, 1000, got - 1000), want = amp / sqrt(2.0);
		CHECKF(fabs(level - want) <= 0.01 * want, "%g Hz to 16 kHz: RMS %.1f, not %.1f",
		       in_rate, level, want);
		/* No delay: the resampled tone is in phase with the ideal one. */
		double worst = 0.0;
		for (size_t t = 1000; t < got - 1000; t++)
			worst = fmax(worst,
				     fabs(y[t] - amp * sin(2.0 * M_PI * hz * (double)t / RATE)));
		CHECKF(worst <= 0.01 * amp, "%g Hz to 16 kHz: off the ideal tone by %.1f", in_rate,
		       worst);
		printf("resample %g -> 16000: %zu -> %zu samples, peak %.2f Hz, RMS %.2f (want %.2f), max dev %.2f\n",
		       in_rate, n, got, f, level, want, worst);
		free(x);
		free(y);
	}
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void bench(void)
{
	struct speed *s;
	char err[256];
	CHECK(speed_create(&s, err, sizeof(err)) == 0);
	const size_t n = 35200;
	float *x = tone(n, 440.0, RATE, 10000.0), *y = malloc(50000 * sizeof(float));
	CHECK(y != NULL);
	static const float factors[] = { 0.9f, 1.1f, 1.0f };
	for (int i = 0; i < 3; i++) {
		size_t got;
		double t0 = now();
		CHECK(speed_perturb(s, factors[i], x, n, y, 50000, &got, err, sizeof(err)) == 0);
		double first = now() - t0;
		const int reps = 200;
		t0 = now();
		for (int k = 0; k < reps; k++)
			CHECK(speed_perturb(s, factors[i], x, n, y, 50000, &got, err,
					    sizeof(err)) == 0);
		printf("speed_perturb n=%zu f=%.1f: first %.3f ms, then %.3f ms\n", n,
		       (double)factors[i], first * 1e3, (now() - t0) / reps * 1e3);
	}
	free(x);
	x = tone(88200, 440.0, 44100.0, 10000.0);
	const int reps = 50;
	double t0 = now();
	for (int k = 0; k < reps; k++) {
		float *r = NULL;
		size_t got;
		CHECK(resample_float(x, 88200, 44100.0, RATE, &r, &got, err, sizeof(err)) == 0);
		free(r);
	}
	printf("resample_float 2 s at 44.1 kHz to 16 kHz: %.3f ms\n", (now() - t0) / reps * 1e3);
	free(x);
	free(y);
	speed_destroy(s);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "bench") == 0) {
		bench();
		return 0;
	}
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
