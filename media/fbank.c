/* fbank.c — Kaldi-compatible fbank/MFCC extraction and energy VAD (see
 * fbank.h for the exact recipe and the reasons for its choices). */
#include "fbank.h"

#include "fftw_lock.h"

#include "status.h"

#include <errno.h>
#include <fftw3.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define FBANK_NFFT_BINS (FBANK_FFT_LEN / 2)
#define FBANK_PREEMPH 0.97f

/* One triangular filter: weights for FFT bins first..first+len-1, then
 * zeros up to len4 (a multiple of 4), so that its sum runs as four
 * independent chains (one chain of dependent adds per filter was a fifth
 * of the features' time). */
struct fbank_filter {
	int first;
	int len, len4;
	double *w;
};

struct fbank {
	struct fbank_opts o;
	uint32_t dim;
	double window[FBANK_FRAME_LEN];
	float center_mel[FBANK_NFFT_BINS];
	struct fbank_filter filters[FBANK_NFFT_BINS];
	float *dct;    /* ceps x bins, mfcc only */
	float *lifter; /* ceps, mfcc only (NULL when lifter is 0) */
	/* The frame's arithmetic is in double: in single precision the power
	 * of a quiet bin next to loud ones (after pre-emphasis, the lowest
	 * mel bins) carries rounding of the loud ones' order, which is 1e-3
	 * in log-mel (measured against torchaudio's Kaldi in float64). */
	fftw_complex *in;   /* FBANK_FFT_LEN: two frames, fftw_malloc'd, zero-padded */
	fftw_complex *spec; /* FBANK_FFT_LEN */
	fftw_plan plan;     /* complex forward FFT of in into spec */
	double power[2][FBANK_NFFT_BINS + 1 + 3]; /* + 3 zeros: a last filter's len4 */
	float mel[FBANK_NFFT_BINS];
};

/* libm's logf, called 80 times a frame, was a quarter of a chunk's
 * features; this one vectorizes over a frame's bins. x = 2^k * z with z in
 * [2/3, 4/3); log z = 2 atanh(s), s = (z - 1) / (z + 1), |s| <= 1/5, by
 * its series to s^9 (truncation below 1e-8). test_fbank checks it against
 * log over the float range. +inf gives 128 ln 2; callers clamp below. */
static inline __attribute__((always_inline)) float log_vec(float x)
{
	uint32_t ix;
	memcpy(&ix, &x, sizeof ix);
	const uint32_t t = ix - 0x3f2aaaabu; /* 2/3's bits: z starts there */
	const int32_t k = (int32_t)t >> 23;
	const uint32_t iz = ix - (t & 0xff800000u);
	float z;
	memcpy(&z, &iz, sizeof z);
	const float s = (z - 1.0f) / (z + 1.0f), s2 = s * s;
	const float p =
		1.0f + s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 * (1.0f / 9))));
	return (float)k * 0.693147180559945f + 2.0f * s * p;
}

float fbank_log(float x)
{
	return log_vec(x);
}

static float fbank_mel(float hz)
{
	return 1127.0f * logf(1.0f + hz / 700.0f);
}

void fbank_opts_default(struct fbank_opts *o, int kind)
{
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->bins = kind == FBANK_KIND_MFCC ? 30 : 40;
	o->ceps = 30;
	o->window = FBANK_WINDOW_POVEY;
	o->low_freq = 20.0f;
	o->high_freq = -400.0f;
	o->lifter = 22.0f;
	o->use_energy = 1;
	o->vad = 0;
	o->vad_threshold = 5.5f;
	o->vad_mean_scale = 0.5f;
	o->vad_proportion = 0.12f;
	o->vad_context = 2;
}

uint32_t fbank_frames(size_t n)
{
	if (n < FBANK_FRAME_LEN)
		return 0;
	size_t f = 1 + (n - FBANK_FRAME_LEN) / FBANK_FRAME_SHIFT;
	return f > UINT32_MAX ? UINT32_MAX : (uint32_t)f;
}

uint32_t fbank_dim(const struct fbank *fb)
{
	return fb->dim;
}

float fbank_bin_center_hz(const struct fbank *fb, int i)
{
	if (i < 0 || i >= fb->o.bins)
		return 0.0f;
	return 700.0f * expm1f(fb->center_mel[i] / 1127.0f);
}

static int fbank_check(const struct fbank_opts *o, float *high, char *err, size_t errlen)
{
	const float nyquist = FBANK_RATE / 2.0f;
	if (o->kind != FBANK_KIND_FBANK && o->kind != FBANK_KIND_MFCC)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "feature kind %d is neither fbank nor mfcc", o->kind);
	if (o->bins < 3 || o->bins > FBANK_NFFT_BINS)
		return status_fail(err, errlen, FEEDER_EINVAL, "--bins %d is outside 3..%d",
				   o->bins, FBANK_NFFT_BINS);
	if (o->kind == FBANK_KIND_MFCC && (o->ceps < 1 || o->ceps > o->bins))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "--ceps %d is outside 1..%d (the bins)", o->ceps, o->bins);
	if (o->window != FBANK_WINDOW_POVEY && o->window != FBANK_WINDOW_HAMMING)
		return status_fail(err, errlen, FEEDER_EINVAL, "window type %d is unknown",
				   o->window);
	*high = o->high_freq > 0.0f ? o->high_freq : nyquist + o->high_freq;
	if (!(o->low_freq >= 0.0f) || !(*high > o->low_freq) || *high > nyquist)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "mel range %.1f..%.1f Hz is not inside 0..%.0f Hz", o->low_freq,
				   *high, nyquist);
	if (!(o->lifter >= 0.0f))
		return status_fail(err, errlen, FEEDER_EINVAL, "cepstral lifter %g is negative",
				   o->lifter);
	if (o->vad && (!(o->vad_proportion > 0.0f && o->vad_proportion < 1.0f) ||
		       o->vad_context < 0 || o->vad_context > 1000 || !(o->vad_mean_scale >= 0.0f)))
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"VAD options out of range (proportion %g, context %d, mean scale %g)",
			o->vad_proportion, o->vad_context, o->vad_mean_scale);
	return 0;
}

/* Kaldi's MelBanks without VTLN: filter i spans mel points i..i+2 of
 * bins + 2 points equally spaced between mel(low) and mel(high). */
static int fbank_build_filters(struct fbank *fb, float high, char *err, size_t errlen)
{
	const int bins = fb->o.bins;
	const float bin_hz = (float)FBANK_RATE / FBANK_FFT_LEN;
	const float mel_low = fbank_mel(fb->o.low_freq), mel_high = fbank_mel(high);
	const float delta = (mel_high - mel_low) / (float)(bins + 1);
	float w[FBANK_NFFT_BINS];
	for (int b = 0; b < bins; b++) {
		float left = mel_low + b * delta, center = mel_low + (b + 1) * delta,
		      right = mel_low + (b + 2) * delta;
		fb->center_mel[b] = center;
		int first = -1, last = -1;
		for (int k = 0; k < FBANK_NFFT_BINS; k++) {
			float m = fbank_mel(bin_hz * k);
			w[k] = 0.0f;
			if (m > left && m < right) {
				w[k] = m <= center ? (m - left) / (center - left)
						   : (right - m) / (right - center);
				if (first < 0)
					first = k;
				last = k;
			}
		}
		if (first < 0)
			return status_fail(
				err, errlen, FEEDER_EINVAL,
				"mel bin %d of %d covers no FFT bin: too many --bins for a %d-point FFT",
				b, bins, FBANK_FFT_LEN);
		struct fbank_filter *f = &fb->filters[b];
		f->first = first;
		f->len = last - first + 1;
		f->len4 = (f->len + 3) & ~3;
		f->w = calloc((size_t)f->len4, sizeof(double));
		if (!f->w)
			return status_fail(err, errlen, -ENOMEM, "no memory for mel filters");
		for (int j = 0; j < f->len; j++)
			f->w[j] = w[first + j];
	}
	return 0;
}

static int fbank_build_mfcc(struct fbank *fb, char *err, size_t errlen)
{
	const int n = fb->o.bins, k = fb->o.ceps;
	fb->dct = malloc((size_t)n * k * sizeof(float));
	if (!fb->dct)
		return status_fail(err, errlen, -ENOMEM, "no memory for the DCT matrix");
	for (int j = 0; j < n; j++)
		fb->dct[j] = (float)sqrt(1.0 / n);
	for (int r = 1; r < k; r++)
		for (int j = 0; j < n; j++)
			fb->dct[(size_t)r * n + j] =
				(float)(sqrt(2.0 / n) * cos(M_PI / n * (j + 0.5) * r));
	if (fb->o.lifter != 0.0f) {
		fb->lifter = malloc((size_t)k * sizeof(float));
		if (!fb->lifter)
			return status_fail(err, errlen, -ENOMEM, "no memory for the lifter");
		const double q = fb->o.lifter;
		for (int i = 0; i < k; i++)
			fb->lifter[i] = (float)(1.0 + 0.5 * q * sin(M_PI * i / q));
	}
	return 0;
}

int fbank_create(const struct fbank_opts *o, struct fbank **out, char *err, size_t errlen)
{
	float high = 0.0f;
	*out = NULL;
	int rc = fbank_check(o, &high, err, errlen);
	if (rc < 0)
		return rc;
	struct fbank *fb = calloc(1, sizeof(*fb));
	if (!fb)
		return status_fail(err, errlen, -ENOMEM, "no memory for a feature extractor");
	fb->o = *o;
	fb->dim = o->kind == FBANK_KIND_MFCC ? (uint32_t)o->ceps : (uint32_t)o->bins;
	const double a = 2.0 * M_PI / (FBANK_FRAME_LEN - 1);
	for (int i = 0; i < FBANK_FRAME_LEN; i++)
		fb->window[i] = o->window == FBANK_WINDOW_HAMMING
					? 0.54 - 0.46 * cos(a * i)
					: pow(0.5 - 0.5 * cos(a * i), 0.85);
	rc = fbank_build_filters(fb, high, err, errlen);
	if (rc == 0 && o->kind == FBANK_KIND_MFCC)
		rc = fbank_build_mfcc(fb, err, errlen);
	if (rc < 0) {
		fbank_destroy(fb);
		return rc;
	}
	fftw_lock();
	fb->in = fftw_malloc(FBANK_FFT_LEN * sizeof(fftw_complex));
	fb->spec = fftw_malloc(FBANK_FFT_LEN * sizeof(fftw_complex));
	if (fb->in && fb->spec) {
		memset(fb->in, 0, FBANK_FFT_LEN * sizeof(fftw_complex));
		fb->plan = fftw_plan_dft_1d(FBANK_FFT_LEN, fb->in, fb->spec, FFTW_FORWARD,
					    FFTW_ESTIMATE);
	}
	fftw_unlock();
	if (!fb->plan) {
		fbank_destroy(fb);
		return status_fail(err, errlen, -ENOMEM, "no memory for the FFT plan");
	}
	*out = fb;
	return 0;
}

void fbank_destroy(struct fbank *fb)
{
	if (!fb)
		return;
	fftw_lock();
	if (fb->plan)
		fftw_destroy_plan(fb->plan);
	fftw_free(fb->in);
	fftw_free(fb->spec);
	fftw_unlock();
	for (int b = 0; b < FBANK_NFFT_BINS; b++)
		free(fb->filters[b].w);
	free(fb->dct);
	free(fb->lifter);
	free(fb);
}

/* Frame x's mean into *mean; returns its raw log energy (0 where nothing
 * reads it). */
static inline __attribute__((always_inline)) float frame_stats(const struct fbank *fb,
							       const float *x, double *mean_out)
{
	/* 16 running sums each, four vectors of four (FBANK_FRAME_LEN is a
	 * multiple of 16): one chain of dependent adds was half of the frame's
	 * time, and four sums still made one chain of vector adds. */
	enum { R = 16 };
	_Static_assert(FBANK_FRAME_LEN % R == 0, "frames are summed 16 at a time");
	double s[R] = { 0 }, e[R] = { 0 };
	for (int i = 0; i < FBANK_FRAME_LEN; i += R)
		for (int k = 0; k < R; k++)
			s[k] += x[i + k];
	double sum = 0.0, energy = 0.0;
	for (int k = 0; k < R; k++)
		sum += s[k];
	const double mean = sum / FBANK_FRAME_LEN;
	/* The raw energy only where MFCC's c0 or the VAD reads it. */
	const int need_energy = fb->o.vad || (fb->o.kind == FBANK_KIND_MFCC && fb->o.use_energy);
	for (int i = 0; need_energy && i < FBANK_FRAME_LEN; i += R)
		for (int k = 0; k < R; k++) {
			const double v = x[i + k] - mean;
			e[k] += v * v;
		}
	for (int k = 0; k < R; k++)
		energy += e[k];
	*mean_out = mean;
	return need_energy ? (float)log(energy > FLT_EPSILON ? energy : FLT_EPSILON) : 0.0f;
}

/* gcc's generic vectors: AVX in the avx2 clone, SSE2 pairs in the other,
 * the same arithmetic in both. vd4u and vf4u are for loads and stores of
 * double and float arrays at any element boundary (may_alias: they read
 * and write those arrays, as the intrinsics' own types do). */
typedef double vd4 __attribute__((vector_size(32)));
typedef double vd4u __attribute__((vector_size(32), aligned(8), may_alias));
typedef long long vi4 __attribute__((vector_size(32)));
typedef float vf4 __attribute__((vector_size(16)));
typedef float vf4u __attribute__((vector_size(16), aligned(4), may_alias));
/* Lanes of a (0-3) and b (4-7) by index; gcc and clang spell it apart. */
#ifdef __clang__
#define SHUF2(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)
#else
#define SHUF2(a, b, i, j, k, l) __builtin_shuffle(a, b, (vi4){ i, j, k, l })
#endif
#define SHUF1(a, i, j, k, l) SHUF2(a, a, i, j, k, l)

/* A filter's sum clamped below at FLT_EPSILON, in float (a float log of
 * the double sum: the rounding that mattered is the power spectrum's; the
 * output is float anyway). */
static inline __attribute__((always_inline)) float mel_clamp(double e)
{
	return e > FLT_EPSILON ? (float)e : FLT_EPSILON;
}

/* One frame's power spectrum into row (dim floats). */
static inline __attribute__((always_inline)) void frame_finish(struct fbank *fb,
							       const double *power,
							       float log_energy, float *row)
{
	const int bins = fb->o.bins;
	/* Each filter's four partial sums, then four filters' totals at a
	 * time, (s0 + s1) + (s2 + s3) as before, by transposing: a horizontal
	 * sum, a compare and a branch per filter were a sixth of the frame. */
	vd4 acc[FBANK_NFFT_BINS];
	for (int b = 0; b < bins; b++) {
		const struct fbank_filter *f = &fb->filters[b];
		const double *p = power + f->first;
		vd4 s = { 0, 0, 0, 0 };
		for (int j = 0; j < f->len4; j += 4)
			s += *(const vd4u *)(f->w + j) * *(const vd4u *)(p + j);
		acc[b] = s;
	}
	int b = 0;
	const vd4 eps = { FLT_EPSILON, FLT_EPSILON, FLT_EPSILON, FLT_EPSILON };
	for (; b + 4 <= bins; b += 4) {
		const vd4 *v = acc + b;
		const vd4 u01 = SHUF2(v[0], v[1], 0, 4, 2, 6) + SHUF2(v[0], v[1], 1, 5, 3, 7);
		const vd4 u23 = SHUF2(v[2], v[3], 0, 4, 2, 6) + SHUF2(v[2], v[3], 1, 5, 3, 7);
		vd4 e = SHUF2(u01, u23, 0, 1, 4, 5) + SHUF2(u01, u23, 2, 3, 6, 7);
		const vi4 gt = e > eps; /* false for NaN, as in mel_clamp */
		e = (vd4)(((vi4)e & gt) | ((vi4)eps & ~gt));
		*(vf4u *)(fb->mel + b) = __builtin_convertvector(e, vf4);
	}
	for (; b < bins; b++) {
		const vd4 s = acc[b];
		fb->mel[b] = mel_clamp((s[0] + s[1]) + (s[2] + s[3]));
	}
	float *mel = fb->o.kind == FBANK_KIND_FBANK ? row : fb->mel;
	for (int b = 0; b < bins; b++)
		mel[b] = log_vec(fb->mel[b]);
	if (fb->o.kind == FBANK_KIND_MFCC) {
		for (int c = 0; c < fb->o.ceps; c++) {
			const float *d = fb->dct + (size_t)c * bins;
			double v = 0.0;
			for (int b = 0; b < bins; b++)
				v += d[b] * fb->mel[b];
			row[c] = (float)(fb->lifter ? v * fb->lifter[c] : v);
		}
		if (fb->o.use_energy)
			row[0] = log_energy;
	}
}

/* Two frames at once (xb NULL: a lone last frame, its partner silent): a
 * and b go in as the real and imaginary parts of one complex FFT, which
 * costs two thirds of two real ones; their spectra come apart as
 * A[k] = (Z[k] + conj Z[N-k]) / 2, B[k] = (Z[k] - conj Z[N-k]) / 2i.
 * Fills the rows and the log energies. The AVX2 clone is chosen by an ifunc
 * resolver, which runs while the dynamic linker relocates the program, before
 * ThreadSanitizer's runtime is up; TSan instruments the resolver too, and it
 * crashes there, so a TSan build has the portable code alone. */
#if defined(__SANITIZE_THREAD__)
#define FBANK_CLONES
#else
#define FBANK_CLONES __attribute__((target_clones("avx2", "default")))
#endif
FBANK_CLONES static void fbank_frame_pair(struct fbank *fb, const float *xa, const float *xb,
					  float *row_a, float *row_b, float *energy)
{
	static const float silent[FBANK_FRAME_LEN];
	const int pair = xb != NULL;
	double ma, mb = 0.0;
	energy[0] = frame_stats(fb, xa, &ma);
	if (pair)
		energy[1] = frame_stats(fb, xb, &mb);
	else
		xb = silent;
	/* DC removed, pre-emphasis and window, both frames in one pass from the
	 * samples (no carried dependence), a in the real parts, b in the
	 * imaginary ones; in[FBANK_FRAME_LEN..FBANK_FFT_LEN) stay the zeros of
	 * fbank_create. */
	const double p = FBANK_PREEMPH, cma = ma * (1.0 - p), cmb = mb * (1.0 - p);
	const double a0 = xa[0] - ma, b0 = xb[0] - mb;
	double *in = (double *)fb->in;
	in[0] = fb->window[0] * (a0 - p * a0);
	in[1] = fb->window[0] * (b0 - p * b0);
	for (int i = 1; i < FBANK_FRAME_LEN; i++) {
		in[2 * i] = fb->window[i] * (xa[i] - p * xa[i - 1] - cma);
		in[2 * i + 1] = fb->window[i] * (xb[i] - p * xb[i - 1] - cmb);
	}
	fftw_execute(fb->plan);
	const double *z = (const double *)fb->spec;
	double *pa = fb->power[0], *pb = fb->power[1];
	/* k = 0 and N/2 are their own mirrors; between, N - k runs down (a
	 * plain index, not one taken mod N, so that the loop vectorizes) */
	for (int k = 0; k <= FBANK_NFFT_BINS; k += FBANK_NFFT_BINS) {
		pa[k] = z[2 * k] * z[2 * k];
		pb[k] = z[2 * k + 1] * z[2 * k + 1];
	}
	/* gcc leaves a plain loop over k scalar (the mirrored loads); two complex
	 * values are one vector, Z[m] and Z[m-1] (m = N - k) swapped into the
	 * order of Z[k], Z[k+1]: s = Z[k] + Z[m], d = Z[k] - Z[m], then
	 * |A|^2 = s.re^2 + d.im^2 and |B|^2 = s.im^2 + d.re^2, the same
	 * operations in the same order as the scalar loop; four bins a step,
	 * so that A's and B's come apart into whole vectors. */
	int k = 1;
	const vd4 q4 = { 0.25, 0.25, 0.25, 0.25 };
	for (; k + 4 <= FBANK_NFFT_BINS; k += 4) {
		vd4 t[2];
		for (int h = 0; h < 2; h++) {
			const int kk = k + 2 * h;
			const vd4 zk = *(const vd4u *)(z + 2 * kk);
			const vd4 zm = SHUF1(*(const vd4u *)(z + 2 * (FBANK_FFT_LEN - kk - 1)), 2,
					     3, 0, 1);
			vd4 s = zk + zm, d = zk - zm;
			s = s * s;
			d = d * d;
			t[h] = q4 * (s + SHUF1(d, 1, 0, 3, 2));
		}
		*(vd4u *)(pa + k) = SHUF2(t[0], t[1], 0, 2, 4, 6);
		*(vd4u *)(pb + k) = SHUF2(t[0], t[1], 1, 3, 5, 7);
	}
	/* the last bins (FBANK_NFFT_BINS - 1 is not a multiple of 4) */
	for (; k < FBANK_NFFT_BINS; k++) {
		const int m = FBANK_FFT_LEN - k;
		const double ar = z[2 * k] + z[2 * m], ai = z[2 * k + 1] - z[2 * m + 1];
		const double br = z[2 * k + 1] + z[2 * m + 1], bi = z[2 * k] - z[2 * m];
		pa[k] = 0.25 * (ar * ar + ai * ai);
		pb[k] = 0.25 * (br * br + bi * bi);
	}
	frame_finish(fb, fb->power[0], energy[0], row_a);
	if (pair)
		frame_finish(fb, fb->power[1], energy[1], row_b);
}

/* Kaldi's ComputeVadEnergy: voiced[t] = 1 when enough of t's neighbours are
 * louder than the utterance-relative threshold. */
static void fbank_vad(const struct fbank_opts *o, const float *log_energy, uint32_t t_count,
		      uint8_t *voiced)
{
	double sum = 0.0;
	for (uint32_t t = 0; t < t_count; t++)
		sum += log_energy[t];
	const float threshold = o->vad_threshold + o->vad_mean_scale * (float)(sum / t_count);
	const int64_t ctx = o->vad_context, n = t_count;
	for (int64_t t = 0; t < n; t++) {
		int num = 0, den = 0;
		for (int64_t u = t - ctx; u <= t + ctx; u++) {
			if (u < 0 || u >= n)
				continue;
			den++;
			if (log_energy[u] > threshold)
				num++;
		}
		voiced[t] = num >= den * o->vad_proportion;
	}
}

int fbank_compute(struct fbank *fb, const float *samples, size_t n, float **out, uint32_t *frames,
		  uint32_t *dim, char *err, size_t errlen)
{
	*out = NULL;
	*frames = 0;
	*dim = fb->dim;
	if (n >= FBANK_FRAME_LEN && (n - FBANK_FRAME_LEN) / FBANK_FRAME_SHIFT >= UINT32_MAX)
		return status_fail(err, errlen, FEEDER_EQUOTA,
				   "utterance of %zu samples has too many frames", n);
	const uint32_t t_count = fbank_frames(n);
	if (t_count == 0)
		return 0;
	float *m = malloc((size_t)t_count * fb->dim * sizeof(float));
	float *energy = malloc((size_t)t_count * sizeof(float));
	uint8_t *voiced = fb->o.vad ? malloc(t_count) : NULL;
	if (!m || !energy || (fb->o.vad && !voiced)) {
		free(m);
		free(energy);
		free(voiced);
		return status_fail(err, errlen, -ENOMEM, "no memory for %u frames of features",
				   t_count);
	}
	for (uint32_t t = 0; t < t_count; t += 2) {
		const float *xa = samples + (size_t)t * FBANK_FRAME_SHIFT;
		const int pair = t + 1 < t_count;
		fbank_frame_pair(fb, xa, pair ? xa + FBANK_FRAME_SHIFT : NULL,
				 m + (size_t)t * fb->dim,
				 pair ? m + (size_t)(t + 1) * fb->dim : NULL, energy + t);
	}
	uint32_t kept = t_count;
	if (fb->o.vad) {
		fbank_vad(&fb->o, energy, t_count, voiced);
		kept = 0;
		for (uint32_t t = 0; t < t_count; t++) {
			if (!voiced[t])
				continue;
			if (kept != t)
				memcpy(m + (size_t)kept * fb->dim, m + (size_t)t * fb->dim,
				       fb->dim * sizeof(float));
			kept++;
		}
	}
	free(energy);
	free(voiced);
	if (kept == 0) {
		free(m);
		return 0;
	}
	if (kept < t_count) {
		float *shrunk = realloc(m, (size_t)kept * fb->dim * sizeof(float));
		if (shrunk)
			m = shrunk;
	}
	*out = m;
	*frames = kept;
	return 0;
}
