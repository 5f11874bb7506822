/* test_resize_simd.c — resize_rgb's AVX2 path against its portable path
 * and both against a plain double-precision evaluation of the same plans.
 *
 * Random plans as the jpeg pipeline makes them (train: the filter stays in
 * the crop box; eval: it may use the whole image; up- and downscales, odd
 * and tiny output sizes, regions with margins, flips, all dtypes and both
 * layouts) on random and smooth RGBX images, in buffers of exactly the
 * documented sizes so that ASan sees any read or write past them. What
 * "agree" means (the paths sum the same taps, the AVX2 one vertical-first
 * with fused multiply-adds, so they differ only by float rounding):
 *   f32  |avx2 - portable| <= 1e-5 * max(1, |portable|), and both within
 *        1e-4 * max(1, |exact|) of the double-precision value;
 *   f16  within one half-precision step: |a - b| <= max(1e-5, |b| / 1024);
 *   u8   equal, except a difference of 1 where the unrounded value (0..255)
 *        lies within 1e-3 of a rounding boundary (x.5).
 * Skips (77) where the CPU lacks AVX2, FMA or F16C. */
#include "check.h"
#include "half.h"
#include "jpeg_pipeline.h"
#include "resize.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)((rng >> 11) % n);
}

static double rndf(double lo, double hi)
{
	return lo + (hi - lo) * (rnd(1u << 24) / (double)(1u << 24));
}

/* One case: an image region, plans, and the output parameters. */
struct rcase {
	uint8_t *src;
	size_t stride, rows;
	struct resize_axis ax, ay;
	uint32_t out_w, out_h;
	int flip;
	float mul[3], add[3];
};

/* Plan one axis the way jpeg_pipeline.c does: a box [off, off + len) of an
 * image of `size` pixels, the filter limited to the box (train) or to the
 * image (eval); then the region: the span plus random margins, clamped to
 * the image, its length in *len_out. */
static void plan_axis(struct resize_axis *a, uint32_t size, uint32_t out, int train,
		      uint32_t *len_out)
{
	double len = rndf(1.0, size), off = rndf(0, size - len);
	int32_t lo = 0, hi = (int32_t)size;
	if (train) {
		lo = (int32_t)floor(off);
		hi = (int32_t)ceil(off + len);
		hi = hi > (int32_t)size ? (int32_t)size : hi;
	}
	CHECK(resize_axis_plan(a, off, len, out, lo, hi) == 0);
	int32_t first, end;
	resize_axis_span(a, &first, &end);
	CHECK(first >= 0 && end <= (int32_t)size && first < end);
	int32_t r0 = first - (int32_t)rnd(9), r1 = end + (int32_t)rnd(9);
	r0 = r0 < 0 ? 0 : r0;
	r1 = r1 > (int32_t)size ? (int32_t)size : r1;
	resize_axis_rebase(a, r0);
	*len_out = (uint32_t)(r1 - r0);
}

static void make_case(struct rcase *c)
{
	uint32_t W = 8 + rnd(600), H = 8 + rnd(500);
	/* mostly 150-300 outputs like the pipeline; sometimes tiny or odd */
	c->out_w = rnd(5) ? 150 + rnd(150) : 1 + rnd(40);
	c->out_h = rnd(5) ? 150 + rnd(150) : 1 + rnd(40);
	int train = (int)rnd(2);
	uint32_t cols, rows;
	plan_axis(&c->ax, W, c->out_w, train, &cols);
	plan_axis(&c->ay, H, c->out_h, train, &rows);
	c->stride = (size_t)cols * 4 + (rnd(2) ? 0 : 4 * rnd(5));
	c->rows = rows;
	c->src = malloc(c->stride * rows);
	CHECK(c->src);
	int smooth = (int)rnd(2);
	for (size_t y = 0; y < rows; y++)
		for (size_t i = 0; i < c->stride; i++)
			c->src[y * c->stride + i] =
				smooth ? (uint8_t)(127.5 + 127.5 * sin(0.07 * (double)i + 0.05 * y))
				       : (uint8_t)rnd(256);
	c->flip = (int)rnd(2);
	for (int k = 0; k < 3; k++) {
		c->mul[k] = (float)rndf(0.01, 0.03);
		c->add[k] = (float)rndf(-2.5, 0.5);
	}
}

static size_t esize(int dtype)
{
	return dtype == FEEDER_DTYPE_U8 ? 1 : dtype == FEEDER_DTYPE_F16 ? 2 : 4;
}

/* resize_rgb with impl into a fresh exactly-sized output. */
static void *run(const struct rcase *c, int impl, int dtype, int layout, int raw)
{
	CHECK(resize_select(impl) == 0);
	size_t nout = (size_t)c->out_w * c->out_h * 3;
	void *out = malloc(nout * esize(dtype));
	float *scratch = malloc(resize_scratch_floats(&c->ax, &c->ay) * sizeof(float));
	CHECK(out && scratch);
	struct resize_out o = { .out = out, .dtype = dtype, .layout = layout, .flip = c->flip };
	for (int k = 0; k < 3; k++) {
		o.mul[k] = raw ? 1.0f : c->mul[k];
		o.add[k] = raw ? 0.0f : c->add[k];
	}
	resize_rgb(c->src, c->stride, &c->ax, &c->ay, scratch, &o);
	free(scratch);
	return out;
}

/* Index of channel ch of output pixel (x, y) in the layout. */
static size_t at(const struct rcase *c, int layout, uint32_t x, uint32_t y, int ch)
{
	if (layout == FEEDER_LAYOUT_NHWC)
		return ((size_t)y * c->out_w + x) * 3 + (size_t)ch;
	return ((size_t)ch * c->out_h + y) * c->out_w + x;
}

/* The plan evaluated directly in double: channel ch of output (x, y), in
 * 0..255, before the mirror. */
static double exact(const struct rcase *c, uint32_t x, uint32_t y, int ch)
{
	const float *wy = c->ay.w + (size_t)y * c->ay.taps, *wx = c->ax.w + (size_t)x * c->ax.taps;
	double sum = 0;
	for (int32_t j = 0; j < c->ay.count[y]; j++) {
		const uint8_t *row = c->src + (size_t)(c->ay.start[y] + j) * c->stride;
		double s = 0;
		for (int32_t i = 0; i < c->ax.count[x]; i++)
			s += (double)wx[i] * row[(size_t)(c->ax.start[x] + i) * 4 + (size_t)ch];
		sum += (double)wy[j] * s;
	}
	return sum;
}

static void compare(const struct rcase *c, int dtype, int layout, int n)
{
	void *p = run(c, RESIZE_IMPL_PORTABLE, dtype, layout, 0);
	void *a = run(c, RESIZE_IMPL_AVX2, dtype, layout, 0);
	float *raw = dtype == FEEDER_DTYPE_U8
			     ? run(c, RESIZE_IMPL_PORTABLE, FEEDER_DTYPE_F32, layout, 1)
			     : NULL;
	for (uint32_t y = 0; y < c->out_h; y++)
		for (uint32_t x = 0; x < c->out_w; x++)
			for (int ch = 0; ch < 3; ch++) {
				uint32_t xo = c->flip ? c->out_w - 1 - x : x;
				size_t i = at(c, layout, xo, y, ch);
				if (dtype == FEEDER_DTYPE_F32) {
					double vp = ((float *)p)[i], va = ((float *)a)[i];
					double ve = exact(c, x, y, ch) * c->mul[ch] + c->add[ch];
					CHECKF(fabs(va - vp) <= 1e-5 * fmax(1, fabs(vp)),
					       "case %d f32 layout %d (%u,%u,%d): avx2 %.9g portable %.9g",
					       n, layout, x, y, ch, va, vp);
					CHECKF(fabs(vp - ve) <= 1e-4 * fmax(1, fabs(ve)) &&
						       fabs(va - ve) <= 1e-4 * fmax(1, fabs(ve)),
					       "case %d (%u,%u,%d): exact %.9g portable %.9g avx2 %.9g",
					       n, x, y, ch, ve, vp, va);
				} else if (dtype == FEEDER_DTYPE_F16) {
					double vp = half_to_float(((uint16_t *)p)[i]);
					double va = half_to_float(((uint16_t *)a)[i]);
					CHECKF(fabs(va - vp) <= fmax(1e-5, fabs(vp) / 1024),
					       "case %d f16 layout %d (%u,%u,%d): avx2 %.9g portable %.9g",
					       n, layout, x, y, ch, va, vp);
				} else {
					int vp = ((uint8_t *)p)[i], va = ((uint8_t *)a)[i];
					double v = raw[i];
					CHECKF(va == vp || (abs(va - vp) == 1 &&
							    fabs(v - floor(v) - 0.5) < 1e-3),
					       "case %d u8 layout %d (%u,%u,%d): avx2 %d portable %d "
					       "(unrounded %.9g)",
					       n, layout, x, y, ch, va, vp, v);
				}
			}
	free(p);
	free(a);
	free(raw);
}

int main(void)
{
	int rc = resize_select(RESIZE_IMPL_AVX2);
	if (rc == -ENOTSUP)
		SKIP("this CPU or build has no AVX2 path of resize_rgb");
	CHECK(rc == 0);
	CHECK(resize_select(99) == -EINVAL);
	const int dtypes[3] = { FEEDER_DTYPE_F32, FEEDER_DTYPE_F16, FEEDER_DTYPE_U8 };
	for (int n = 0; n < 60; n++) {
		struct rcase c = { 0 };
		make_case(&c);
		for (int d = 0; d < 3; d++)
			compare(&c, dtypes[d], n % 2 ? FEEDER_LAYOUT_NHWC : FEEDER_LAYOUT_NCHW, n);
		free(c.src);
		resize_axis_free(&c.ax);
		resize_axis_free(&c.ay);
	}
	CHECK(resize_select(RESIZE_IMPL_AUTO) == 0);
	printf("resize_simd: 60 random plans x 3 dtypes agree\n");
	return 0;
}
