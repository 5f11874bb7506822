/* test_reverb — RIR convolution (media/reverb.c) against a direct
 * double-precision convolution written here from reverb.h's definition
 * (unit-energy RIR, aligned on its largest tap, output energy = input
 * energy), for chunk and RIR lengths from 1 sample to 2 s and 1.5 s, RIRs
 * longer than the chunk, direct paths at the start, inside and at the end;
 * in place; the cache's hit path against its miss path (same bytes), slots
 * replaced and reused; the limits. `test_reverb apply X RIR OUT` runs
 * reverb_apply on raw float32 files for the numpy reference in
 * tests/python/test_dsp_numpy.py. */
#include "reverb.h"
#include "signals.h"
#include "status.h"

#include <string.h>

#define MAX_N 32000
#define MAX_RIR 24000

/* An RIR: decaying noise with its largest tap (0.9) at d. */
static float *make_rir(size_t len, size_t d)
{
	float *h = malloc(len * sizeof(float));
	CHECK(h != NULL);
	for (size_t k = 0; k < len; k++)
		h[k] = (float)((sig_uniform() * 2.0 - 1.0) * 0.5 *
			       exp(-3.0 * (double)k / (double)len));
	h[d] = 0.9f;
	return h;
}

/* reverb.h's definition, directly. */
static double *reference(const float *x, size_t n, const float *h, size_t len)
{
	size_t d = 0;
	double eh = 0.0, ex = 0.0, ey = 0.0;
	for (size_t k = 0; k < len; k++) {
		eh += (double)h[k] * h[k];
		if (fabs(h[k]) > fabs(h[d]))
			d = k;
	}
	double *y = calloc(n ? n : 1, sizeof(double)), *hn = malloc(len * sizeof(double));
	CHECK(y != NULL && hn != NULL);
	for (size_t k = 0; k < len; k++)
		hn[k] = h[k] / sqrt(eh);
	for (size_t t = 0; t < n; t++) {
		/* k with 0 <= t + d - k < n. */
		size_t k0 = t + d >= n ? t + d - n + 1 : 0, k1 = t + d < len - 1 ? t + d : len - 1;
		double s = 0.0;
		for (size_t k = k0; k <= k1; k++)
			s += hn[k] * x[t + d - k];
		y[t] = s;
		ex += (double)x[t] * x[t];
		ey += s * s;
	}
	double g = ey > 0.0 ? sqrt(ex / ey) : 0.0;
	for (size_t t = 0; t < n; t++)
		y[t] *= g;
	free(hn);
	return y;
}

static double worst_seen = 0.0;

/* y[0..n) is x reverberated by h (within 1e-4 of the output's peak). */
static void check_ref(const float *y, const float *x, size_t n, const float *h, size_t len,
		      const char *what)
{
	double *ref = reference(x, n, h, len), peak = 0.0, worst = 0.0;
	for (size_t t = 0; t < n; t++) {
		peak = fmax(peak, fabs(ref[t]));
		worst = fmax(worst, fabs(y[t] - ref[t]));
	}
	double e = peak > 0.0 ? worst / peak : worst;
	CHECKF(e <= 1e-4, "%s: n %zu, rir %zu: max error %.3g of the output's peak", what, n, len,
	       e);
	worst_seen = fmax(worst_seen, e);
	free(ref);
}

/* Apply through r (key) and check against the reference. */
static void check_case(struct reverb *r, uint64_t key, size_t n, size_t len, size_t d)
{
	float *x = sig_noise(n, 8000.0), *h = make_rir(len, d);
	float *y = malloc((n ? n : 1) * sizeof(float));
	CHECK(y != NULL);
	char err[256] = "";
	CHECKF(reverb_apply(r, key, h, len, x, n, y, err, sizeof(err)) == 0, "%s", err);
	char what[64];
	snprintf(what, sizeof(what), "direct path at %zu", d);
	check_ref(y, x, n, h, len, what);

	/* In place, through a fresh reverberator (the miss path): same bytes. */
	struct reverb *r2;
	CHECK(reverb_create(MAX_N, MAX_RIR, &r2, err, sizeof(err)) == 0);
	float *x2 = malloc((n ? n : 1) * sizeof(float));
	CHECK(x2 != NULL);
	memcpy(x2, x, n * sizeof(float));
	CHECKF(reverb_apply(r2, key, h, len, x2, n, x2, err, sizeof(err)) == 0, "%s", err);
	CHECKF(memcmp(x2, y, n * sizeof(float)) == 0,
	       "n %zu rir %zu: in place differs from out of place", n, len);
	/* Again through r2, now from its cache (the hit path): same bytes. */
	CHECKF(reverb_apply(r2, key, h, len, x, n, x2, err, sizeof(err)) == 0, "%s", err);
	CHECKF(memcmp(x2, y, n * sizeof(float)) == 0, "n %zu rir %zu: the cache hit differs", n,
	       len);
	free(x2);
	reverb_destroy(r2);
	free(x);
	free(h);
	free(y);
}

static void test_cases(void)
{
	struct reverb *r;
	char err[256];
	CHECKF(reverb_create(MAX_N, MAX_RIR, &r, err, sizeof(err)) == 0, "%s", err);
	static const struct {
		size_t n, len, d;
	} cases[] = {
		{ 32000, 4000, 0 },    { 32000, 16000, 37 },
		{ 32000, 24000, 500 }, { 32000, 24000, 23999 },
		{ 1000, 3000, 1500 },  { 1000, 24000, 0 },
		{ 7, 5, 4 },           { 1, 1, 0 },
		{ 5, 9, 2 },           { 31999, 1, 0 },
		{ 12345, 678, 300 },   { 32000, 2, 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_case(r, 1000 + i, cases[i].n, cases[i].len, cases[i].d);
	reverb_destroy(r);
}

/* The same RIR twice through one reverberator: the second is a cache hit
 * and must give the bytes of the first; a third after 40 other RIRs have
 * gone through (its slot reused) must too; and the same key with another
 * chunk length (another FFT size) must be right. */
static void test_cache(void)
{
	struct reverb *r;
	char err[256];
	CHECK(reverb_create(MAX_N, MAX_RIR, &r, err, sizeof(err)) == 0);
	const size_t n = 32000, len = 8000;
	float *x = sig_noise(n, 8000.0), *h = make_rir(len, 100);
	float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
	CHECK(a && b);
	CHECK(reverb_apply(r, 42, h, len, x, n, a, err, sizeof(err)) == 0);
	CHECK(reverb_apply(r, 42, h, len, x, n, b, err, sizeof(err)) == 0);
	CHECKF(memcmp(a, b, n * sizeof(float)) == 0, "the cache hit differs from the miss");
	for (uint64_t k = 0; k < 40; k++) {
		size_t l2 = 100 + 50 * (size_t)k;
		float *h2 = make_rir(l2, (size_t)k);
		CHECK(reverb_apply(r, 7000 + k, h2, l2, x, n, b, err, sizeof(err)) == 0);
		free(h2);
	}
	CHECK(reverb_apply(r, 42, h, len, x, n, b, err, sizeof(err)) == 0);
	CHECKF(memcmp(a, b, n * sizeof(float)) == 0, "after eviction the result differs");
	/* A shorter chunk with the cached key: another FFT size. */
	const size_t n2 = 3000;
	CHECK(reverb_apply(r, 42, h, len, x, n2, b, err, sizeof(err)) == 0);
	check_ref(b, x, n2, h, len, "same key, a shorter chunk");
	/* And back: the bytes of the first. */
	CHECK(reverb_apply(r, 42, h, len, x, n, b, err, sizeof(err)) == 0);
	CHECKF(memcmp(a, b, n * sizeof(float)) == 0, "back at the first length the result differs");
	/* A reused key with another length (same FFT size) is another RIR,
	 * not a hit. */
	const size_t len3 = len - 10;
	float *h3 = make_rir(len3, 100);
	CHECK(reverb_fft_size(n, len3, 100) == reverb_fft_size(n, len, 100));
	CHECK(reverb_apply(r, 42, h3, len3, x, n, b, err, sizeof(err)) == 0);
	check_ref(b, x, n, h3, len3, "key reused with another length");
	free(h3);
	free(x);
	free(h);
	free(a);
	free(b);
	reverb_destroy(r);
}

static void test_edges(void)
{
	struct reverb *r;
	char err[256] = "";
	CHECK(reverb_create(1000, 500, &r, err, sizeof(err)) == 0);
	float x[1001] = { 0 }, y[1001], h[501] = { 0 };
	h[3] = 1.0f;
	/* Silence in, silence out. */
	memset(y, 0x7f, sizeof(y));
	CHECK(reverb_apply(r, 1, h, 10, x, 1000, y, err, sizeof(err)) == 0);
	for (int i = 0; i < 1000; i++)
		CHECKF(y[i] == 0.0f, "silent input gave %g at %d", (double)y[i], i);
	/* A pure delta at d is the identity (up to rounding). */
	for (int i = 0; i < 1000; i++)
		x[i] = (float)(i % 37) - 18.0f;
	CHECK(reverb_apply(r, 2, h, 10, x, 1000, y, err, sizeof(err)) == 0);
	for (int i = 0; i < 1000; i++)
		CHECKF(fabsf(y[i] - x[i]) <= 1e-4f * 18.0f, "a delta RIR moved sample %d: %g vs %g",
		       i, (double)y[i], (double)x[i]);
	CHECK(reverb_apply(r, 3, h, 10, x, 1001, y, err, sizeof(err)) == FEEDER_EINVAL);
	CHECK(err[0] != '\0');
	CHECK(reverb_apply(r, 3, h, 501, x, 1000, y, err, sizeof(err)) == FEEDER_EINVAL);
	CHECK(reverb_apply(r, 3, h, 0, x, 1000, y, err, sizeof(err)) == FEEDER_EINVAL);
	memset(h, 0, sizeof(h));
	err[0] = '\0';
	CHECK(reverb_apply(r, 4, h, 100, x, 1000, y, err, sizeof(err)) == FEEDER_EINVAL);
	CHECKF(strstr(err, "silent") != NULL, "%s", err);
	h[5] = NAN;
	CHECK(reverb_apply(r, 5, h, 100, x, 1000, y, err, sizeof(err)) == FEEDER_EINVAL);
	CHECK(reverb_apply(r, 5, h, 100, x, 0, y, err, sizeof(err)) == 0);
	reverb_destroy(r);
	CHECK(reverb_create(0, 10, &r, err, sizeof(err)) == FEEDER_EINVAL);
	CHECK(reverb_create(10, (size_t)1 << 40, &r, err, sizeof(err)) == FEEDER_EINVAL);
	CHECK(reverb_fft_size(32000, 24000, 0) >= 55999);
	CHECK(reverb_fft_size(1, 1, 0) == 1);
}

/* test_reverb apply X RIR OUT: reverb_apply on raw float32 files, for
 * tests/python/test_dsp_numpy.py's numpy reference. */
static int apply_files(const char *xpath, const char *hpath, const char *ypath)
{
	size_t n, len;
	float *x = check_read_f32(xpath, &n), *h = check_read_f32(hpath, &len);
	float *y = malloc((n ? n : 1) * sizeof(float));
	CHECK(y != NULL);
	struct reverb *r;
	char err[256] = "";
	CHECKF(reverb_create(n ? n : 1, len ? len : 1, &r, err, sizeof(err)) == 0, "%s", err);
	CHECKF(reverb_apply(r, 1, h, len, x, n, y, err, sizeof(err)) == 0, "%s", err);
	check_write_f32(ypath, y, n);
	reverb_destroy(r);
	free(x);
	free(h);
	free(y);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "apply") == 0)
		return apply_files(argv[2], argv[3], argv[4]);
	test_cases();
	test_cache();
	test_edges();
	printf("reverb: worst error %.3g of the output's peak\n", worst_seen);
	return 0;
}
