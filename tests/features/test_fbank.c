/* test_fbank — log mel filterbank features: frame counts (snip-edges), the
 * bin where a pure tone peaks, the log floor on silence, and one frame of
 * noise against an independent double-precision evaluation of the recipe
 * (naive DFT, filters computed here from the Kaldi formulas). */
#include "fbank.h"
#include "signals.h"

#include <float.h>
#include <string.h>

static struct fbank *make(int kind, int bins, int window)
{
	struct fbank_opts o;
	fbank_opts_default(&o, kind);
	o.bins = bins;
	o.window = window;
	struct fbank *fb;
	char err[256];
	CHECKF(fbank_create(&o, &fb, err, sizeof(err)) == 0, "%s", err);
	return fb;
}

static double mel(double hz)
{
	return 1127.0 * log(1.0 + hz / 700.0);
}

/* The recipe of fbank.h for one frame, in double, written out directly. */
static void reference_frame(const float *x, int bins, double *out)
{
	double w[FBANK_FFT_LEN] = { 0 }, mean = 0.0;
	for (int i = 0; i < FBANK_FRAME_LEN; i++)
		mean += x[i];
	mean /= FBANK_FRAME_LEN;
	double prev = x[0] - mean;
	for (int i = 0; i < FBANK_FRAME_LEN; i++) {
		double cur = x[i] - mean;
		double pre = cur - 0.97 * (i ? prev : cur);
		prev = cur;
		double povey = pow(0.5 - 0.5 * cos(2.0 * M_PI * i / (FBANK_FRAME_LEN - 1)), 0.85);
		w[i] = pre * povey;
	}
	double power[FBANK_FFT_LEN / 2];
	for (int k = 0; k < FBANK_FFT_LEN / 2; k++) {
		double re = 0.0, im = 0.0;
		for (int i = 0; i < FBANK_FFT_LEN; i++) {
			re += w[i] * cos(2.0 * M_PI * k * i / FBANK_FFT_LEN);
			im -= w[i] * sin(2.0 * M_PI * k * i / FBANK_FFT_LEN);
		}
		power[k] = re * re + im * im;
	}
	double lo = mel(20.0), hi = mel(7600.0), d = (hi - lo) / (bins + 1);
	for (int b = 0; b < bins; b++) {
		double l = lo + b * d, c = l + d, r = c + d, e = 0.0;
		for (int k = 0; k < FBANK_FFT_LEN / 2; k++) {
			double m = mel(k * (double)FBANK_RATE / FBANK_FFT_LEN);
			if (m > l && m < r)
				e += power[k] * (m <= c ? (m - l) / (c - l) : (r - m) / (r - c));
		}
		out[b] = log(fmax(e, FLT_EPSILON));
	}
}

static void check_peak(struct fbank *fb, double hz)
{
	float *x = sig_tone(FBANK_RATE / 2, hz, FBANK_RATE, 8000.0), *f;
	uint32_t frames, dim;
	char err[256];
	CHECK(fbank_compute(fb, x, FBANK_RATE / 2, &f, &frames, &dim, err, sizeof(err)) == 0);
	CHECK(frames == 48 && dim == 40);
	int nearest = 0;
	for (int b = 1; b < 40; b++)
		if (fabs(fbank_bin_center_hz(fb, b) - hz) <
		    fabs(fbank_bin_center_hz(fb, nearest) - hz))
			nearest = b;
	for (uint32_t t = 0; t < frames; t++) {
		const float *row = f + (size_t)t * dim;
		int best = 0;
		for (int b = 1; b < 40; b++)
			if (row[b] > row[best])
				best = b;
		CHECKF(best == nearest,
		       "%.0f Hz, frame %u: peak in bin %d (%.0f Hz), expected %d (%.0f Hz)", hz, t,
		       best, fbank_bin_center_hz(fb, best), nearest,
		       fbank_bin_center_hz(fb, nearest));
	}
	free(f);
	free(x);
}

/* fbank_log against libm's double log, over every power of two of the
 * normal floats and many mantissas between: within 1e-6 plus one float
 * rounding of the result (its ulp is 4e-6 at 70). */
static void check_log(void)
{
	double worst = 0.0;
	float worst_x = 0.0f;
	for (float x = FLT_MIN; x < FLT_MAX / 1.001f; x *= 1.0009765625f) {
		double d = fabs((double)fbank_log(x) - log((double)x)) /
			   (1.0 + FLT_EPSILON * 1e6 * fabs(log((double)x)));
		if (d > worst) {
			worst = d;
			worst_x = x;
		}
	}
	CHECKF(worst <= 1e-6, "fbank_log: error %.3g (scaled) at %g", worst, worst_x);
	CHECK(fbank_log(1.0f) == 0.0f);
	CHECK(isfinite(fbank_log(INFINITY)));
	printf("fbank_log: worst error / (1 + 0.12 |log x|) %.3g (bound 1e-6) at %g\n", worst,
	       worst_x);
}

int main(void)
{
	check_log();
	/* Frame counts: 1 + (n - 400) / 160, or 0 below one window. */
	static const size_t frame_counts[][2] = { { 0, 0 },   { 399, 0 }, { 400, 1 },
						  { 559, 1 }, { 560, 2 }, { 16000, 98 } };
	for (int i = 0; i < 6; i++)
		CHECKF(fbank_frames(frame_counts[i][0]) == frame_counts[i][1], "%zu samples",
		       frame_counts[i][0]);

	struct fbank *fb = make(FBANK_KIND_FBANK, 40, FBANK_WINDOW_POVEY);
	CHECK(fbank_dim(fb) == 40);
	char err[256];
	float *f;
	uint32_t frames, dim;
	float *x = sig_tone(FBANK_RATE, 1000.0, FBANK_RATE, 8000.0);
	CHECK(fbank_compute(fb, x, FBANK_RATE, &f, &frames, &dim, err, sizeof(err)) == 0);
	CHECK(frames == 98 && dim == 40);
	for (size_t i = 0; i < (size_t)frames * dim; i++)
		CHECK(isfinite(f[i]));
	free(f);
	CHECK(fbank_compute(fb, x, 399, &f, &frames, &dim, err, sizeof(err)) == 0);
	CHECK(frames == 0 && f == NULL && dim == 40);
	free(x);

	/* Mel centres: increasing, first above 20 Hz, last below 7600 Hz. */
	CHECK(fbank_bin_center_hz(fb, 0) > 20.0f && fbank_bin_center_hz(fb, 39) < 7600.0f);
	for (int b = 1; b < 40; b++)
		CHECK(fbank_bin_center_hz(fb, b) > fbank_bin_center_hz(fb, b - 1));

	check_peak(fb, 1000.0);
	check_peak(fb, 2500.0);
	/* Tones at the centres of low, middle and high bins (a tone half way
	 * between two centres has no right answer). */
	for (int b = 3; b < 40; b += 6)
		check_peak(fb, fbank_bin_center_hz(fb, b));
	struct fbank *ham = make(FBANK_KIND_FBANK, 40, FBANK_WINDOW_HAMMING);
	check_peak(ham, 1000.0);
	fbank_destroy(ham);

	/* Digital silence: every bin sits on the floor ln(FLT_EPSILON). */
	float zeros[800] = { 0 };
	CHECK(fbank_compute(fb, zeros, 800, &f, &frames, &dim, err, sizeof(err)) == 0);
	CHECK(frames == 3);
	for (size_t i = 0; i < (size_t)frames * dim; i++)
		CHECKF(f[i] == logf(FLT_EPSILON), "silence bin %zu = %g", i, f[i]);
	free(f);

	/* Noise (a fixed LCG) plus a DC offset: every bin of frame 2 matches
	 * the double-precision reference. */
	float noise[FBANK_FRAME_LEN + 2 * FBANK_FRAME_SHIFT];
	uint32_t s = 12345;
	for (size_t i = 0; i < sizeof(noise) / sizeof(noise[0]); i++) {
		s = s * 1664525u + 1013904223u;
		noise[i] = (float)((int)(s >> 16) % 2001 - 1000) + 300.0f;
	}
	CHECK(fbank_compute(fb, noise, sizeof(noise) / sizeof(noise[0]), &f, &frames, &dim, err,
			    sizeof(err)) == 0);
	CHECK(frames == 3);
	double ref[40];
	reference_frame(noise + 2 * FBANK_FRAME_SHIFT, 40, ref);
	for (int b = 0; b < 40; b++)
		CHECKF(fabs(f[2 * 40 + b] - ref[b]) < 1e-3, "bin %d: %g vs reference %g", b,
		       f[2 * 40 + b], ref[b]);
	free(f);
	fbank_destroy(fb);

	/* Option checks name the option. */
	struct fbank_opts o;
	fbank_opts_default(&o, FBANK_KIND_FBANK);
	o.bins = 2;
	CHECK(fbank_create(&o, &fb, err, sizeof(err)) < 0 && strstr(err, "--bins 2"));
	o.bins = 200;
	CHECK(fbank_create(&o, &fb, err, sizeof(err)) < 0 && strstr(err, "covers no FFT bin"));
	fbank_opts_default(&o, FBANK_KIND_MFCC);
	o.ceps = 31;
	CHECK(fbank_create(&o, &fb, err, sizeof(err)) < 0 && strstr(err, "--ceps 31"));
	fbank_opts_default(&o, FBANK_KIND_FBANK);
	o.high_freq = 9000.0f;
	CHECK(fbank_create(&o, &fb, err, sizeof(err)) < 0 && strstr(err, "mel range"));
	return 0;
}
