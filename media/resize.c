/* resize.c — triangle-filter resampling (PIL's ImagingResample scheme) with
 * the flip, normalization, dtype and layout write fused into the last pass;
 * see resize.h.
 *
 * One plan, two implementations of resize_rgb: resize_rgb_portable (plain C
 * with 4-float pixel vectors, any CPU, the reference) and, on x86-64,
 * resize_rgb_avx2, chosen at run time where the CPU has AVX2, FMA and F16C
 * (resize_select overrides the choice for tests and benchmarks). The
 * portable one runs the horizontal pass over every input row, then the
 * vertical pass. The AVX2 one, 2.2-3.5x faster on the pipeline's crops
 * (it was the pipeline's top symbol in perf), runs the vertical pass first
 * and keeps two pixels per register; see the notes above it. Both sum the
 * same taps, so they differ only by float rounding (tests/pipelines
 * resize_simd says how much). */
#include "resize.h"

#include "half.h"
#include "feeder_types.h"

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

int resize_axis_plan(struct resize_axis *a, double off, double len, uint32_t out_len, int32_t lo,
		     int32_t hi)
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

static size_t avx2_scratch_floats(const struct resize_axis *ax, const struct resize_axis *ay);

size_t resize_scratch_floats(const struct resize_axis *ax, const struct resize_axis *ay)
{
	int32_t first, end;
	resize_axis_span(ay, &first, &end);
	int32_t xfirst, xend;
	resize_axis_span(ax, &xfirst, &xend);
	/* portable: horizontal-pass rows, one accumulator row, one staging
	 * row, one widened input row */
	size_t portable = ((size_t)(end - first) + 2) * ax->out_len * 4 + (size_t)xend * 4;
	size_t avx2 = avx2_scratch_floats(ax, ay);
	return portable > avx2 ? portable : avx2;
}

/* n values into the output at element index idx, in the output dtype. */
static void store_run(const struct resize_out *o, size_t idx, const float *v, size_t n)
{
	switch (o->dtype) {
	case FEEDER_DTYPE_U8: {
		uint8_t *d = (uint8_t *)o->out + idx;
		for (size_t i = 0; i < n; i++) {
			float r = v[i] + 0.5f;
			r = r < 0.0f ? 0.0f : r > 255.0f ? 255.0f : r;
			d[i] = (uint8_t)r;
		}
		break;
	}
	case FEEDER_DTYPE_F16:
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
	if (o->dtype != FEEDER_DTYPE_U8) {
		mul = (v4f){ o->mul[0], o->mul[1], o->mul[2], 0 };
		add = (v4f){ o->add[0], o->add[1], o->add[2], 0 };
	}
	if (o->layout == FEEDER_LAYOUT_NHWC) {
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
#define HPASS_CASE(N)                                                                              \
	case N:                                                                                    \
		for (uint32_t x = 0; x < out_w; x++) {                                             \
			const float *w = ax->w + (size_t)x * ax->taps;                             \
			const v4f *p = wide + ax->start[x];                                        \
			v4f s0 = w[0] * p[0];                                                      \
			for (int k = 1; k < N; k++)                                                \
				s0 += w[k] * p[k];                                                 \
			t[x] = s0;                                                                 \
		}                                                                                  \
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

static void resize_rgb_portable(const uint8_t *src, size_t stride, const struct resize_axis *ax,
				const struct resize_axis *ay, float *scratch,
				const struct resize_out *o)
{
	uint32_t out_w = ax->out_len, out_h = ay->out_len;
	int32_t first, end;
	resize_axis_span(ay, &first, &end);
	v4f *tmp = (v4f *)scratch;                      /* horizontal pass, end-first rows */
	v4f *acc = tmp + (size_t)(end - first) * out_w; /* one output row */
	float *line = (float *)(acc + out_w);           /* staging for the write */
	v4f *wide = acc + 2 * (size_t)out_w;            /* one input row as floats */
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

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

/* The AVX2 path runs the vertical pass first, then the horizontal pass of
 * that one row in blocks of eight output pixels, which go to the output
 * from registers. Per output row that costs the vertical taps over the
 * input width plus the horizontal taps over the output width; the cheaper
 * pass (a contiguous multiply-add) thus runs over the larger width whenever
 * the crop is downscaled, which train and eval crops mostly are. The
 * vertical pass reads the u8 rows and converts while loading: measured,
 * that beats widening each input row to floats once and reading those
 * (4x the bytes) by a third. */

/* Blocks of the horizontal pass: block b makes output pixels xb .. xb+7
 * (xb = 8b; the last block ends at out_w and may overlap the one before
 * it, rewriting the same values) in four registers of two RGBX pixels,
 * register j holding pixels xb+j (low half) and xb+4+j (high half), so that
 * a 4x4 transpose within the halves yields each channel of the eight
 * pixels in order; mirrored rows take xb+7-j and xb+3-j, which yields them
 * reversed. Per register the float offsets of its two start pixels (x4
 * here rather than per load: measured 3-6 % faster), and per tap the weights
 * {w_low x4, w_high x4}, so that one multiply-add applies a tap to both. */
struct hblocks {
	uint32_t n, taps; /* blocks, taps per output */
	int32_t *start;   /* n * 8 float offsets into the vertical-pass row */
	float *w;         /* n * 4 * taps * 8 */
};

static size_t hblocks_count(uint32_t out_w)
{
	return (out_w + 7) / 8;
}

static uint32_t hblock_x(uint32_t b, uint32_t out_w)
{
	return (b + 1) * 8 > out_w ? out_w - 8 : b * 8;
}

/* Output pixel of block lane j (0-7: low halves of registers 0-3, then
 * high halves). */
static uint32_t hblock_pixel(uint32_t xb, uint32_t j, int flip)
{
	return flip ? xb + 7 - j : xb + j;
}

AVX2 static void hblocks_build(struct hblocks *hb, const struct resize_axis *ax, int flip)
{
	uint32_t out_w = ax->out_len, n = (uint32_t)ax->count[0];
	hb->n = (uint32_t)hblocks_count(out_w);
	hb->taps = n;
	float *wp = hb->w;
	for (uint32_t b = 0; b < hb->n; b++) {
		uint32_t xb = hblock_x(b, out_w);
		for (uint32_t j = 0; j < 4; j++) {
			uint32_t lo = hblock_pixel(xb, j, flip), hi = hblock_pixel(xb, j + 4, flip);
			hb->start[b * 8 + 2 * j] = ax->start[lo] * 4;
			hb->start[b * 8 + 2 * j + 1] = ax->start[hi] * 4;
			const float *w0 = ax->w + (size_t)lo * ax->taps,
				    *w1 = ax->w + (size_t)hi * ax->taps;
			for (uint32_t k = 0; k < n; k++, wp += 8)
				_mm256_storeu_ps(wp, _mm256_set_m128(_mm_set1_ps(w1[k]),
								     _mm_set1_ps(w0[k])));
		}
	}
}

/* Two RGBX pixels (p0 low, p1 high) as one register. */
AVX2_INLINE __m256 load_pair(const float *p0, const float *p1)
{
	return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p0)), _mm_loadu_ps(p1), 1);
}

/* Two RGBX u8 pixels as floats. */
AVX2_INLINE __m256 load_u8x2(const uint8_t *p)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

/* Vertical pass: vrow[x] = sum_k w[k] * rows[k][x] for the pixels
 * [x0, x1) of n u8 RGBX rows, 16 pixels (8 registers) per step. */
AVX2 static void vpass_u8(const uint8_t *const *rows, const float *w, int32_t n, int32_t x0,
			  int32_t x1, float *vrow)
{
	size_t x = (size_t)x0;
	for (; x + 16 <= (size_t)x1; x += 16) {
		__m256 s[8], wk = _mm256_set1_ps(w[0]);
		for (int j = 0; j < 8; j++)
			s[j] = _mm256_mul_ps(wk, load_u8x2(rows[0] + (x + 2 * j) * 4));
		for (int32_t k = 1; k < n; k++) {
			wk = _mm256_set1_ps(w[k]);
			for (int j = 0; j < 8; j++)
				s[j] = _mm256_fmadd_ps(wk, load_u8x2(rows[k] + (x + 2 * j) * 4),
						       s[j]);
		}
		for (int j = 0; j < 8; j++)
			_mm256_storeu_ps(vrow + (x + 2 * j) * 4, s[j]);
	}
	for (; x + 2 <= (size_t)x1; x += 2) {
		__m256 s = _mm256_mul_ps(_mm256_set1_ps(w[0]), load_u8x2(rows[0] + x * 4));
		for (int32_t k = 1; k < n; k++)
			s = _mm256_fmadd_ps(_mm256_set1_ps(w[k]), load_u8x2(rows[k] + x * 4), s);
		_mm256_storeu_ps(vrow + x * 4, s);
	}
	if (x < (size_t)x1) {
		/* one pixel left: a 4-byte load, so that nothing past the
		 * region's last pixel is read */
		__m128 s = _mm_setzero_ps();
		for (int32_t k = 0; k < n; k++) {
			int32_t px;
			memcpy(&px, rows[k] + x * 4, 4);
			__m128 p = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(px)));
			s = _mm_fmadd_ps(_mm_set1_ps(w[k]), p, s);
		}
		_mm_storeu_ps(vrow + x * 4, s);
	}
}

/* Horizontal pass of block b: four registers of two output pixels each,
 * n taps (a constant where the caller's switch inlines it). */
AVX2_INLINE void hblock(const struct hblocks *hb, uint32_t b, const float *vrow, const int n,
			__m256 a[4])
{
	const int32_t *st = hb->start + (size_t)b * 8;
	const float *wp = hb->w + (size_t)b * 4 * n * 8;
	for (int j = 0; j < 4; j++, wp += n * 8) {
		const float *p0 = vrow + st[2 * j], *p1 = vrow + st[2 * j + 1];
		__m256 s = _mm256_mul_ps(_mm256_loadu_ps(wp), load_pair(p0, p1));
		for (int k = 1; k < n; k++)
			s = _mm256_fmadd_ps(_mm256_loadu_ps(wp + k * 8),
					    load_pair(p0 + k * 4, p1 + k * 4), s);
		a[j] = s;
	}
}

/* Where an NCHW row goes and how its values are made. */
struct plane_row {
	void *plane[3]; /* output row y of each channel plane */
	__m256 mul[3], add[3];
};

/* The eight pixels of a block (hblocks) into the three planes at column
 * xo, in the output dtype. */
AVX2_INLINE void store8_nchw(const struct plane_row *pr, const int dtype, size_t xo,
			     const __m256 a[4])
{
	__m256 t0 = _mm256_unpacklo_ps(a[0], a[1]), t1 = _mm256_unpackhi_ps(a[0], a[1]);
	__m256 t2 = _mm256_unpacklo_ps(a[2], a[3]), t3 = _mm256_unpackhi_ps(a[2], a[3]);
	__m256 ch[3] = { _mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xee),
			 _mm256_shuffle_ps(t1, t3, 0x44) };
	for (int c = 0; c < 3; c++) {
		__m256 v = ch[c];
		if (dtype == FEEDER_DTYPE_U8) {
			/* as store_run: +0.5, clamp, truncate */
			v = _mm256_add_ps(v, _mm256_set1_ps(0.5f));
			v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()),
					  _mm256_set1_ps(255.0f));
			__m256i q = _mm256_cvttps_epi32(v);
			__m128i h = _mm_packus_epi32(_mm256_castsi256_si128(q),
						     _mm256_extracti128_si256(q, 1));
			_mm_storel_epi64((__m128i *)((uint8_t *)pr->plane[c] + xo),
					 _mm_packus_epi16(h, h));
			continue;
		}
		v = _mm256_fmadd_ps(v, pr->mul[c], pr->add[c]);
		if (dtype == FEEDER_DTYPE_F16)
			_mm_storeu_si128((__m128i *)((uint16_t *)pr->plane[c] + xo),
					 _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
		else
			_mm256_storeu_ps((float *)pr->plane[c] + xo, v);
	}
}

/* Horizontal pass of one vertical-pass row fused with its NCHW write. */
AVX2_INLINE void hpass_nchw(const struct hblocks *hb, const float *vrow, const int n,
			    const struct plane_row *pr, const int dtype, int flip, uint32_t out_w)
{
	for (uint32_t b = 0; b < hb->n; b++) {
		__m256 a[4];
		hblock(hb, b, vrow, n, a);
		uint32_t xb = hblock_x(b, out_w);
		store8_nchw(pr, dtype, flip ? out_w - 8 - xb : xb, a);
	}
}

#define HPASS_NCHW_CASE(N, D)                                                                      \
	case N:                                                                                    \
		hpass_nchw(hb, vrow, N, pr, D, flip, out_w);                                       \
		break;

/* The same for each dtype, with the tap counts up to 8 (crops up to about
 * 3.5x the output, which IDCT scaling leaves) unrolled. */
#define HPASS_NCHW_DTYPE(NAME, D)                                                                  \
	AVX2 static void NAME(const struct hblocks *hb, const float *vrow,                         \
			      const struct plane_row *pr, int flip, uint32_t out_w)                \
	{                                                                                          \
		switch (hb->taps) {                                                                \
			HPASS_NCHW_CASE(2, D)                                                      \
			HPASS_NCHW_CASE(3, D)                                                      \
			HPASS_NCHW_CASE(4, D)                                                      \
			HPASS_NCHW_CASE(5, D)                                                      \
			HPASS_NCHW_CASE(6, D)                                                      \
			HPASS_NCHW_CASE(7, D)                                                      \
			HPASS_NCHW_CASE(8, D)                                                      \
		default:                                                                           \
			hpass_nchw(hb, vrow, (int)hb->taps, pr, D, flip, out_w);                   \
			break;                                                                     \
		}                                                                                  \
	}
HPASS_NCHW_DTYPE(hpass_nchw_u8, FEEDER_DTYPE_U8)
HPASS_NCHW_DTYPE(hpass_nchw_f16, FEEDER_DTYPE_F16)
HPASS_NCHW_DTYPE(hpass_nchw_f32, FEEDER_DTYPE_F32)

/* Horizontal pass of one row for NHWC (blocks built unmirrored) into acc
 * (RGBX), then normalized and mirrored into line as packed RGB (each
 * pixel's 4-float store is overwritten by the next one's) and stored in the
 * dtype; NHWC is the rarer layout, so it keeps the staging row. */
AVX2 static void hpass_nhwc(const struct hblocks *hb, const float *vrow, const struct resize_out *o,
			    float *acc, float *line, uint32_t y, uint32_t out_w)
{
	for (uint32_t b = 0; b < hb->n; b++) {
		__m256 a[4];
		hblock(hb, b, vrow, (int)hb->taps, a);
		uint32_t xb = hblock_x(b, out_w);
		for (uint32_t j = 0; j < 4; j++) {
			_mm_storeu_ps(acc + (size_t)(xb + j) * 4, _mm256_castps256_ps128(a[j]));
			_mm_storeu_ps(acc + (size_t)(xb + j + 4) * 4,
				      _mm256_extractf128_ps(a[j], 1));
		}
	}
	__m128 mul = _mm_setr_ps(1, 1, 1, 0), add = _mm_setzero_ps();
	if (o->dtype != FEEDER_DTYPE_U8) {
		mul = _mm_setr_ps(o->mul[0], o->mul[1], o->mul[2], 0);
		add = _mm_setr_ps(o->add[0], o->add[1], o->add[2], 0);
	}
	for (uint32_t xo = 0; xo < out_w; xo++) {
		uint32_t x = o->flip ? out_w - 1 - xo : xo;
		_mm_storeu_ps(line + (size_t)xo * 3,
			      _mm_fmadd_ps(_mm_loadu_ps(acc + (size_t)x * 4), mul, add));
	}
	store_run(o, (size_t)y * out_w * 3, line, (size_t)out_w * 3);
}

/* Scratch floats of the AVX2 path: the vertical-pass row, the blocks, and
 * an accumulator and a staging row for NHWC. */
static size_t avx2_scratch_floats(const struct resize_axis *ax, const struct resize_axis *ay)
{
	(void)ay;
	int32_t xfirst, xend;
	resize_axis_span(ax, &xfirst, &xend);
	size_t nb = hblocks_count(ax->out_len);
	return (size_t)xend * 4 + nb * 8 + nb * 32 * ax->taps + (size_t)ax->out_len * 8;
}

AVX2 static void resize_rgb_avx2(const uint8_t *src, size_t stride, const struct resize_axis *ax,
				 const struct resize_axis *ay, float *scratch,
				 const struct resize_out *o)
{
	uint32_t out_w = ax->out_len, out_h = ay->out_len;
	int32_t xfirst, xend;
	resize_axis_span(ax, &xfirst, &xend);
	size_t nb = hblocks_count(out_w);
	float *vrow = scratch;
	struct hblocks hb = { .start = (int32_t *)(vrow + (size_t)xend * 4) };
	hb.w = (float *)(hb.start + nb * 8);
	float *acc = hb.w + nb * 32 * ax->taps, *line = acc + (size_t)out_w * 4;
	int nhwc = o->layout == FEEDER_LAYOUT_NHWC;
	hblocks_build(&hb, ax, nhwc ? 0 : o->flip);

	struct plane_row pr;
	size_t esize = o->dtype == FEEDER_DTYPE_U8 ? 1 : o->dtype == FEEDER_DTYPE_F16 ? 2 : 4;
	size_t plane = (size_t)out_h * out_w;
	for (int c = 0; c < 3; c++) {
		pr.mul[c] = _mm256_set1_ps(o->mul[c]);
		pr.add[c] = _mm256_set1_ps(o->add[c]);
	}

	const uint8_t *rows[64];
	for (uint32_t y = 0; y < out_h; y++) {
		int32_t n = ay->count[y];
		for (int32_t k = 0; k < n; k++)
			rows[k] = src + (size_t)(ay->start[y] + k) * stride;
		vpass_u8(rows, ay->w + (size_t)y * ay->taps, n, xfirst, xend, vrow);
		if (nhwc) {
			hpass_nhwc(&hb, vrow, o, acc, line, y, out_w);
			continue;
		}
		for (int c = 0; c < 3; c++)
			pr.plane[c] = (uint8_t *)o->out + (c * plane + (size_t)y * out_w) * esize;
		if (o->dtype == FEEDER_DTYPE_U8)
			hpass_nchw_u8(&hb, vrow, &pr, o->flip, out_w);
		else if (o->dtype == FEEDER_DTYPE_F16)
			hpass_nchw_f16(&hb, vrow, &pr, o->flip, out_w);
		else
			hpass_nchw_f32(&hb, vrow, &pr, o->flip, out_w);
	}
}

static int have_avx2(void)
{
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && half_have_f16c();
}
#else
static size_t avx2_scratch_floats(const struct resize_axis *ax, const struct resize_axis *ay)
{
	(void)ax;
	(void)ay;
	return 0;
}

static int have_avx2(void)
{
	return 0;
}
#endif

static int impl_chosen = RESIZE_IMPL_AUTO;

int resize_select(int impl)
{
	if (impl != RESIZE_IMPL_AUTO && impl != RESIZE_IMPL_PORTABLE && impl != RESIZE_IMPL_AVX2)
		return -EINVAL;
	if (impl == RESIZE_IMPL_AVX2 && !have_avx2())
		return -ENOTSUP;
	__atomic_store_n(&impl_chosen, impl, __ATOMIC_RELAXED);
	return 0;
}

void resize_rgb(const uint8_t *src, size_t stride, const struct resize_axis *ax,
		const struct resize_axis *ay, float *scratch, const struct resize_out *o)
{
#if defined(__x86_64__) && defined(__GNUC__)
	/* The AVX2 path needs every output of a row to have the same taps
	 * (not so only where the range is narrower than the filter), blocks
	 * of 8 output pixels, and a row pointer per vertical tap on the
	 * stack; anything else takes the portable path. */
	static int avx2 = -1; /* every thread computes the same value */
	int impl = __atomic_load_n(&impl_chosen, __ATOMIC_RELAXED);
	if (impl != RESIZE_IMPL_PORTABLE && ax->uniform && ax->out_len >= 8 && ay->taps <= 64) {
		int a = __atomic_load_n(&avx2, __ATOMIC_RELAXED);
		if (a < 0) {
			a = have_avx2();
			__atomic_store_n(&avx2, a, __ATOMIC_RELAXED);
		}
		if (a) {
			resize_rgb_avx2(src, stride, ax, ay, scratch, o);
			return;
		}
	}
#endif
	resize_rgb_portable(src, stride, ax, ay, scratch, o);
}
