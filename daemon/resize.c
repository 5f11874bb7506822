/* resize.c — triangle-filter resampling (PIL's ImagingResample scheme) with
 * the flip, normalization, dtype and layout write fused into the last pass;
 * see resize.h. */
#include "resize.h"

#include "half.h"
#include "jpeg_pipeline.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = need + need / 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static inline double triangle(double x)
{
	x = fabs(x);
	return x < 1.0 ? 1.0 - x : 0.0;
}

/* Give every output the same number of taps (the most any one uses),
 * zero-weighted and shifted to stay inside [lo, hi), so that the inner loop
 * of the horizontal pass has a fixed trip count that can be unrolled.
 * Adding 0 * pixel leaves a sum unchanged. Only a range narrower than the
 * filter keeps uneven counts (uniform stays 0). */
static void pad_uniform(struct resize_axis *a, int32_t lo, int32_t hi)
{
	int32_t most = 1;
	for (uint32_t i = 0; i < a->out_len; i++)
		most = a->count[i] > most ? a->count[i] : most;
	a->uniform = most <= hi - lo;
	if (!a->uniform)
		return;
	for (uint32_t i = 0; i < a->out_len; i++) {
		int32_t n = a->count[i];
		if (n == most)
			continue;
		float *w = a->w + (size_t)i * a->taps;
		int32_t start = a->start[i];
		int32_t shift = start + most > hi ? start + most - hi : 0;
		memmove(w + shift, w, (size_t)n * sizeof *w);
		for (int32_t k = 0; k < shift; k++)
			w[k] = 0.0f;
		for (int32_t k = shift + n; k < most; k++)
			w[k] = 0.0f;
		a->start[i] = start - shift;
		a->count[i] = most;
	}
}

int resize_axis_plan(struct resize_axis *a, double off, double len, uint32_t out_len,
		     int32_t lo, int32_t hi)
{
	if (!(len > 0) || out_len == 0 || hi <= lo)
		return -EINVAL;
	double scale = len / out_len;
	/* Downscaling widens the filter so that every input pixel contributes
	 * (antialiasing); upscaling keeps plain bilinear interpolation. */
	double fscale = scale > 1.0 ? scale : 1.0;
	double support = fscale;
	uint32_t taps = (uint32_t)ceil(support) * 2 + 1;
	size_t cap_start = a->cap_out;
	if (grow((void **)&a->start, &cap_start, out_len, sizeof *a->start))
		return -ENOMEM;
	size_t cap_count = a->cap_out;
	if (grow((void **)&a->count, &cap_count, out_len, sizeof *a->count))
		return -ENOMEM;
	a->cap_out = cap_start < cap_count ? cap_start : cap_count;
	if (grow((void **)&a->w, &a->cap_w, (size_t)out_len * taps, sizeof *a->w))
		return -ENOMEM;
	a->out_len = out_len;
	a->taps = taps;
	double ss = 1.0 / fscale;
	for (uint32_t i = 0; i < out_len; i++) {
		double center = off + (i + 0.5) * scale;
		double fmin = floor(center - support + 0.5), fmax = floor(center + support + 0.5);
		int32_t xmin = fmin < lo ? lo : (int32_t)fmin;
		int32_t xmax = fmax > hi ? hi : (int32_t)fmax;
		if (xmax - xmin > (int32_t)taps)
			xmax = xmin + (int32_t)taps;
		float *w = a->w + (size_t)i * taps;
		double total = 0;
		int32_t n = 0;
		for (int32_t x = xmin; x < xmax; x++, n++) {
			double v = triangle((x - center + 0.5) * ss);
			w[n] = (float)v;
			total += v;
		}
		if (n <= 0 || total <= 0) {
			/* Only possible at the very edge of a clamped range: take
			 * the nearest allowed pixel. */
			int32_t x = (int32_t)floor(center);
			x = x < lo ? lo : x >= hi ? hi - 1 : x;
			a->start[i] = x;
			a->count[i] = 1;
			w[0] = 1.0f;
			continue;
		}
		for (int32_t k = 0; k < n; k++)
			w[k] = (float)(w[k] / total);
		/* Taps that land exactly on the triangle's feet weigh nothing. */
		int32_t k0 = 0;
		while (k0 < n - 1 && w[k0] == 0.0f)
			k0++;
		while (n - 1 > k0 && w[n - 1] == 0.0f)
			n--;
		if (k0)
			memmove(w, w + k0, (size_t)(n - k0) * sizeof *w);
		a->start[i] = xmin + k0;
		a->count[i] = n - k0;
	}
	pad_uniform(a, lo, hi);
	return 0;
}

void resize_axis_span(const struct resize_axis *a, int32_t *first, int32_t *end)
{
	int32_t f = INT32_MAX, e = INT32_MIN;
	for (uint32_t i = 0; i < a->out_len; i++) {
		if (a->start[i] < f)
			f = a->start[i];
		if (a->start[i] + a->count[i] > e)
			e = a->start[i] + a->count[i];
	}
	*first = f;
	*end = e;
}

void resize_axis_rebase(struct resize_axis *a, int32_t origin)
{
	for (uint32_t i = 0; i < a->out_len; i++)
		a->start[i] -= origin;
}

void resize_axis_free(struct resize_axis *a)
{
	free(a->start);
	free(a->count);
	free(a->w);
	*a = (struct resize_axis){ 0 };
}

/* A pixel as four floats (R, G, B, X): one SSE register, so the filter
 * taps run as vector multiply-adds whatever the compiler's vectorizer does. */
typedef float v4f __attribute__((vector_size(16)));

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Widen n RGBX pixels to floats. The horizontal filter reads each pixel for
 * several outputs, so converting a row once beats converting per tap. */
static void widen_row(const uint8_t *in, v4f *out, size_t n)
{
	size_t i = 0;
#if defined(__SSE2__)
	const __m128i zero = _mm_setzero_si128();
	for (; i + 4 <= n; i += 4) {
		__m128i b = _mm_loadu_si128((const __m128i *)(in + i * 4));
		__m128i lo = _mm_unpacklo_epi8(b, zero), hi = _mm_unpackhi_epi8(b, zero);
		out[i] = (v4f)_mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, zero));
		out[i + 1] = (v4f)_mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, zero));
		out[i + 2] = (v4f)_mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, zero));
		out[i + 3] = (v4f)_mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, zero));
	}
#endif
	for (; i < n; i++) {
		const uint8_t *p = in + i * 4;
		out[i] = (v4f){ p[0], p[1], p[2], p[3] };
	}
}

size_t resize_scratch_floats(const struct resize_axis *ax, const struct resize_axis *ay)
{
	int32_t first, end;
	resize_axis_span(ay, &first, &end);
	int32_t xfirst, xend;
	resize_axis_span(ax, &xfirst, &xend);
	/* horizontal-pass rows, one accumulator row, one staging row, one
	 * widened input row */
	return ((size_t)(end - first) + 2) * ax->out_len * 4 + (size_t)xend * 4;
}

/* n values into the output at element index idx, in the output dtype. */
static void store_run(const struct resize_out *o, size_t idx, const float *v, size_t n)
{
	switch (o->dtype) {
	case PIPE_DTYPE_U8: {
		uint8_t *d = (uint8_t *)o->out + idx;
		for (size_t i = 0; i < n; i++) {
			float r = v[i] + 0.5f;
			r = r < 0.0f ? 0.0f : r > 255.0f ? 255.0f : r;
			d[i] = (uint8_t)r;
		}
		break;
	}
	case PIPE_DTYPE_F16:
		half_from_float_n((uint16_t *)o->out + idx, v, n);
		break;
	default:
		memcpy((float *)o->out + idx, v, n * sizeof(float));
		break;
	}
}

/* One finished output row (acc: out_w pixels in 0..255) into o: normalize,
 * mirror and reorder into the layout in a staging row, then store it in
 * contiguous runs. */
static void write_row(const struct resize_out *o, const v4f *acc, float *line, uint32_t y,
		      uint32_t out_h, uint32_t out_w)
{
	v4f mul = { 1, 1, 1, 0 }, add = { 0, 0, 0, 0 };
	if (o->dtype != PIPE_DTYPE_U8) {
		mul = (v4f){ o->mul[0], o->mul[1], o->mul[2], 0 };
		add = (v4f){ o->add[0], o->add[1], o->add[2], 0 };
	}
	if (o->layout == PIPE_LAYOUT_NHWC) {
		for (uint32_t x = 0; x < out_w; x++) {
			v4f v = acc[x] * mul + add;
			float *d = line + (size_t)(o->flip ? out_w - 1 - x : x) * 3;
			d[0] = v[0];
			d[1] = v[1];
			d[2] = v[2];
		}
		store_run(o, (size_t)y * out_w * 3, line, (size_t)out_w * 3);
		return;
	}
	for (uint32_t x = 0; x < out_w; x++) {
		v4f v = acc[x] * mul + add;
		uint32_t xo = o->flip ? out_w - 1 - x : x;
		line[xo] = v[0];
		line[out_w + xo] = v[1];
		line[2 * (size_t)out_w + xo] = v[2];
	}
	size_t plane = (size_t)out_h * out_w;
	for (int c = 0; c < 3; c++)
		store_run(o, c * plane + (size_t)y * out_w, line + (size_t)c * out_w, out_w);
}

/* The horizontal pass of one row when every output has n taps: each case
 * is a loop of known trip count that the compiler unrolls. */
#define HPASS_CASE(N)                                                          \
	case N:                                                                \
		for (uint32_t x = 0; x < out_w; x++) {                         \
			const float *w = ax->w + (size_t)x * ax->taps;         \
			const v4f *p = wide + ax->start[x];                    \
			v4f s0 = w[0] * p[0];                                  \
			for (int k = 1; k < N; k++)                            \
				s0 += w[k] * p[k];                             \
			t[x] = s0;                                             \
		}                                                              \
		break;

static void hpass_fixed(const struct resize_axis *ax, const v4f *wide, v4f *t, uint32_t out_w)
{
	switch (ax->count[0]) {
	HPASS_CASE(1)
	HPASS_CASE(2)
	HPASS_CASE(3)
	HPASS_CASE(4)
	HPASS_CASE(5)
	HPASS_CASE(6)
	HPASS_CASE(7)
	HPASS_CASE(8)
	}
}

void resize_rgb(const uint8_t *src, size_t stride, const struct resize_axis *ax,
		const struct resize_axis *ay, float *scratch, const struct resize_out *o)
{
	uint32_t out_w = ax->out_len, out_h = ay->out_len;
	int32_t first, end;
	resize_axis_span(ay, &first, &end);
	v4f *tmp = (v4f *)scratch;                          /* horizontal pass, end-first rows */
	v4f *acc = tmp + (size_t)(end - first) * out_w;     /* one output row */
	float *line = (float *)(acc + out_w);               /* staging for the write */
	v4f *wide = acc + 2 * (size_t)out_w;                /* one input row as floats */
	int32_t xfirst, xend;
	resize_axis_span(ax, &xfirst, &xend);

	for (int32_t r = first; r < end; r++) {
		v4f *t = tmp + (size_t)(r - first) * out_w;
		widen_row(src + (size_t)r * stride + (size_t)xfirst * 4, wide + xfirst,
			  (size_t)(xend - xfirst));
		if (ax->uniform && ax->count[0] <= 8) {
			hpass_fixed(ax, wide, t, out_w);
			continue;
		}
		for (uint32_t x = 0; x < out_w; x++) {
			const float *w = ax->w + (size_t)x * ax->taps;
			const v4f *p = wide + ax->start[x];
			/* Two accumulators halve the add latency chain. */
			v4f s0 = { 0, 0, 0, 0 }, s1 = { 0, 0, 0, 0 };
			int32_t k = 0, n = ax->count[x];
			for (; k + 1 < n; k += 2) {
				s0 += w[k] * p[k];
				s1 += w[k + 1] * p[k + 1];
			}
			if (k < n)
				s0 += w[k] * p[k];
			t[x] = s0 + s1;
		}
	}
	for (uint32_t y = 0; y < out_h; y++) {
		const float *w = ay->w + (size_t)y * ay->taps;
		const v4f *t = tmp + (size_t)(ay->start[y] - first) * out_w;
		float w0 = w[0];
		for (uint32_t i = 0; i < out_w; i++)
			acc[i] = w0 * t[i];
		for (int32_t k = 1; k < ay->count[y]; k++) {
			const v4f *tk = t + (size_t)k * out_w;
			float wk = w[k];
			for (uint32_t i = 0; i < out_w; i++)
				acc[i] += wk * tk[i];
		}
		write_row(o, acc, line, y, out_h, out_w);
	}
}
