/* test_augment — media/augment.c: the SNR of added noise measured on the
 * result equals the one asked for (within 0.01 dB) for noise looped from an
 * odd offset, cut from a long recording, wrapping at its end, and for an
 * offset past the end; the noise added is the segment the header defines;
 * silent signal or noise leave x alone; babble is the sum of its segments
 * at one SNR; gain. `test_augment mix X NOISE OFFSET SNR OUT` runs
 * augment_add_noise on raw float32 files for the numpy reference in
 * tests/python/test_dsp_numpy.py. */
#include "augment.h"
#include "signals.h"

#include <stdio.h>
#include <string.h>

static double worst_db = 0.0;

/* What was added to `before` to give `after` must be g * v for one g > 0,
 * and 10 log10(E_before / E_added) must be snr_db. v is the expected noise
 * (already looped / summed), in double. */
static void check_added(const float *before, const float *after, const double *v, size_t n,
			double snr_db, const char *what)
{
	double ex = 0.0, ed = 0.0, ev = 0.0, dv = 0.0;
	for (size_t i = 0; i < n; i++) {
		double d = (double)after[i] - before[i];
		ex += (double)before[i] * before[i];
		ed += d * d;
		ev += v[i] * v[i];
		dv += d * v[i];
	}
	double snr = 10.0 * log10(ex / ed);
	CHECKF(fabs(snr - snr_db) <= 0.01, "%s: measured SNR %.5f dB, asked %.5f dB", what, snr,
	       snr_db);
	worst_db = fmax(worst_db, fabs(snr - snr_db));
	/* The added signal is a multiple of v: its projection on v holds all
	 * its energy. */
	double g = dv / ev, resid = 0.0;
	for (size_t i = 0; i < n; i++) {
		double d = (double)after[i] - before[i] - g * v[i];
		resid += d * d;
	}
	CHECKF(g > 0.0 && resid <= 1e-8 * ed,
	       "%s: the added noise is not the segment (residual %.3g of %.3g)", what, resid, ed);
}

static void test_noise(void)
{
	const size_t n = 32000;
	float *x = sig_noise(n, 6000.0), *y = malloc(n * sizeof(float));
	CHECK(y != NULL);
	static const struct {
		size_t m, offset;
		const char *what;
	} cases[] = {
		{ 5000, 4999, "short noise looped from its last sample" },
		{ 5000, 1237, "short noise looped from an odd offset" },
		{ 7, 3, "7-sample noise looped" },
		{ 100000, 3, "long noise cut" },
		{ 100000, 77777, "long noise cut, wrapping at its end" },
		{ 32000, 0, "noise as long as the chunk" },
		{ 5000, 5000 * 3 + 11, "offset past the end (taken mod m)" },
	};
	static const double snrs[] = { -5.0, 0.0, 7.3, 13.0, 20.0, 35.0 };
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		float *nz = sig_noise(cases[c].m, 3000.0);
		double ev = 0.0, *v = malloc(n * sizeof(double));
		CHECK(v != NULL);
		/* v[i] = noise[(offset + i) mod m], as augment.h defines it. */
		for (size_t i = 0; i < n; i++) {
			v[i] = nz[(cases[c].offset + i) % cases[c].m];
			ev += v[i] * v[i];
		}
		for (size_t s = 0; s < sizeof(snrs) / sizeof(snrs[0]); s++) {
			memcpy(y, x, n * sizeof(float));
			augment_add_noise(y, n, nz, cases[c].m, cases[c].offset, snrs[s]);
			check_added(x, y, v, n, snrs[s], cases[c].what);
		}
		/* augment_noise_energy is the energy of that segment. */
		double got = augment_noise_energy(nz, cases[c].m, cases[c].offset, n);
		CHECKF(fabs(got - ev) <= 1e-9 * ev, "%s: noise energy %.10g, not %.10g",
		       cases[c].what, got, ev);
		free(nz);
		free(v);
	}
	free(x);
	free(y);
}

/* Silence on either side leaves x as it was; so do m == 0 and a NaN SNR. */
static void test_noise_silent(void)
{
	const size_t n = 1000;
	float *x = sig_noise(n, 100.0), *y = malloc(n * sizeof(float)),
	      *z = calloc(n, sizeof(float));
	CHECK(y && z);
	memcpy(y, x, n * sizeof(float));
	augment_add_noise(y, n, z, n, 0, 10.0);
	CHECK(memcmp(x, y, n * sizeof(float)) == 0);
	augment_add_noise(y, n, x, 0, 0, 10.0);
	CHECK(memcmp(x, y, n * sizeof(float)) == 0);
	augment_add_noise(y, n, x, n, 0, NAN);
	CHECK(memcmp(x, y, n * sizeof(float)) == 0);
	augment_add_noise(z, n, x, n, 5, 10.0);
	for (size_t i = 0; i < n; i++)
		CHECKF(z[i] == 0.0f, "silent x got noise at %zu", i);
	free(x);
	free(y);
	free(z);
}

/* Babble as the wave pipeline makes it: the recordings accumulated, each
 * looped or cut from its offset, then the sum added at one SNR. */
static void test_babble(void)
{
	const size_t n = 32000;
	static const size_t lens[] = { 50000, 9000, 32000, 123457, 2001, 40000, 31999 };
	static const size_t offs[] = { 49999, 0, 5, 100000, 1999, 9, 31998 };
	float *x = sig_noise(n, 4000.0), *z = malloc(n * sizeof(float));
	float *scratch = malloc(n * sizeof(float));
	double *v = calloc(n, sizeof(double));
	CHECK(z && scratch && v);
	float *rec[7];
	for (int k = 3; k <= 7; k++) {
		memset(v, 0, n * sizeof(double));
		for (int i = 0; i < k; i++) {
			rec[i] = sig_noise(lens[i], 1000.0 * (i + 1));
			for (size_t t = 0; t < n; t++)
				v[t] += rec[i][(offs[i] + t) % lens[i]];
		}
		double snr = 13.0 + (double)k;
		memcpy(z, x, n * sizeof(float));
		memset(scratch, 0, n * sizeof(float));
		for (int i = 0; i < k; i++)
			augment_accumulate(scratch, n, rec[i], lens[i], offs[i]);
		augment_add_noise(z, n, scratch, n, 0, snr);
		check_added(x, z, v, n, snr, "babble");
		for (int i = 0; i < k; i++)
			free(rec[i]);
	}
	free(x);
	free(z);
	free(scratch);
	free(v);
}

static void test_gain(void)
{
	const size_t n = 1000;
	float *x = sig_noise(n, 3000.0), *y = malloc(n * sizeof(float));
	CHECK(y != NULL);
	static const double gains[] = { -20.0, -6.0, 0.0, 3.5, 6.0 };
	for (int g = 0; g < 5; g++) {
		memcpy(y, x, n * sizeof(float));
		augment_gain(y, n, gains[g]);
		double db = 10.0 * log10(augment_energy(y, n) / augment_energy(x, n));
		CHECKF(fabs(db - gains[g]) <= 1e-4, "gain %g dB gave %.6f dB", gains[g], db);
		double f = pow(10.0, gains[g] / 20.0);
		for (size_t i = 0; i < n; i++)
			CHECKF(fabs(y[i] - f * x[i]) <= 1e-6 * fabs(f * x[i]) + 1e-30,
			       "gain %g dB: sample %zu is %g, not %g", gains[g], i, (double)y[i],
			       f * x[i]);
	}
	memcpy(y, x, n * sizeof(float));
	augment_gain(y, n, 0.0);
	CHECK(memcmp(x, y, n * sizeof(float)) == 0);
	free(x);
	free(y);
}

/* test_augment mix X NOISE OFFSET SNR OUT: augment_add_noise on raw
 * float32 files, for tests/python/test_dsp_numpy.py's numpy reference. */
static int mix_files(char **argv)
{
	size_t n, m;
	float *x = check_read_f32(argv[2], &n), *v = check_read_f32(argv[3], &m);
	augment_add_noise(x, n, v, m, strtoull(argv[4], NULL, 10), strtod(argv[5], NULL));
	check_write_f32(argv[6], x, n);
	free(x);
	free(v);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 7 && strcmp(argv[1], "mix") == 0)
		return mix_files(argv);
	test_noise();
	test_noise_silent();
	test_babble();
	test_gain();
	printf("augment: worst SNR error %.3g dB\n", worst_db);
	return 0;
}
