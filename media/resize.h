/* resize.h — antialiased separable resize of an RGB region, fused with the
 * output write.
 *
 * The jpeg pipeline decodes a region of a JPEG into RGBX rows (4 bytes a
 * pixel, the 4th ignored, so that a pixel is one 4-float vector) and then
 * calls resize_rgb once to resample it to out_h x out_w with a triangle
 * (bilinear) filter whose support grows with the downscale factor, the way
 * PIL and torchvision (antialias=True) do, and to write the result straight
 * into the batch slot: mirrored if asked, as u8 or as (x/255 - mean)/std in
 * f16 or f32, in NCHW planes or NHWC pixels. An axis plan (which input
 * pixels and weights make each output pixel) is computed per call per axis;
 * it is cheap next to the decode. Plans and scratch are owned by the caller
 * (one per worker thread). packer's --resize-shorter shrinks whole images
 * with the same filter through resize_image_u8, at the end of this file. */
#ifndef FEEDER_RESIZE_H
#define FEEDER_RESIZE_H

#include <stddef.h>
#include <stdint.h>

/* Which input pixels and weights make each of out_len output pixels. */
struct resize_axis {
	uint32_t out_len;
	uint32_t taps;         /* weights stored per output pixel (the widest filter) */
	int32_t *start;        /* out_len: first input pixel */
	int32_t *count;        /* out_len: input pixels used, <= taps */
	float *w;              /* out_len * taps weights, summing to 1 per output */
	int uniform;           /* every count is the same (padded with zero weights) */
	size_t cap_out, cap_w; /* allocated entries, grown on demand */
};

/* Plan an axis that maps the input interval [off, off + len) (continuous
 * pixel units: pixel k covers [k, k+1)) onto out_len output pixels, using
 * only input pixels in [lo, hi). Returns 0, -ENOMEM or -EINVAL (empty
 * range, len <= 0). The axis keeps its allocations for reuse. */
int resize_axis_plan(struct resize_axis *a, double off, double len, uint32_t out_len, int32_t lo,
		     int32_t hi);

/* First and one-past-last input pixel any output pixel uses. */
void resize_axis_span(const struct resize_axis *a, int32_t *first, int32_t *end);

/* Re-base the plan on a buffer whose pixel 0 is input pixel `origin`. */
void resize_axis_rebase(struct resize_axis *a, int32_t origin);

void resize_axis_free(struct resize_axis *a);

/* Where and how to write the result. */
struct resize_out {
	void *out;
	int dtype;            /* FEEDER_DTYPE_* (feeder.h) */
	int layout;           /* FEEDER_LAYOUT_* */
	int flip;             /* mirror left-right */
	float mul[3], add[3]; /* f16/f32: value = pixel(0..255) * mul + add */
};

/* Floats of scratch resize_rgb needs for these plans (16-byte aligned). */
size_t resize_scratch_floats(const struct resize_axis *ax, const struct resize_axis *ay);

/* Resample the RGBX region src (rows of `stride` bytes; row 0 and
 * column 0 are the input pixels that the rebased plans call 0) with plans ax
 * (columns) and ay (rows), and write ay->out_len x ax->out_len x 3 values to
 * o. scratch holds resize_scratch_floats() floats. */
void resize_rgb(const uint8_t *src, size_t stride, const struct resize_axis *ax,
		const struct resize_axis *ay, float *scratch, const struct resize_out *o);

/* resize_rgb's implementations. AUTO (the default) takes the fastest this
 * CPU runs: AVX2 where the CPU has AVX2, FMA and F16C, else PORTABLE, plain
 * C and the reference the others are tested against (tests/pipelines
 * resize_simd). They agree to float rounding: the same plans and taps,
 * summed vertical-first and with fused multiply-adds in the AVX2 path. */
enum { RESIZE_IMPL_AUTO = 0, RESIZE_IMPL_PORTABLE = 1, RESIZE_IMPL_AVX2 = 2 };

/* Make resize_rgb use impl in the whole process, for tests and benchmarks;
 * call it while no thread is inside resize_rgb. Returns 0, -ENOTSUP where
 * this CPU or build lacks impl, or -EINVAL for an unknown value. */
int resize_select(int impl);

/* Resize a whole image (resize_image.c), for packer's --resize-shorter:
 * the same filter as resize_rgb, over every pixel. src holds sh rows of sw
 * RGBX pixels (4 bytes, the 4th ignored), rows stride bytes apart, and
 * covers ew x eh source pixels: ew = sw and eh = sh for an ordinary image;
 * less where an IDCT-scaled decode rounded the pixel count up, so that the
 * last column or row stands for less than a whole pixel and the output stays
 * aligned with the original. dst receives dh rows of dw pixels, packed, of
 * comps channels: 3 (RGB) or 1 (the first channel, for a gray image decoded
 * as RGBX). Values are rounded as resize_rgb's u8 output. Returns 0,
 * -EINVAL (an empty size, comps not 1 or 3, an extent outside (0, sw] x
 * (0, sh]) or -ENOMEM; allocates its plans and scratch per call. */
int resize_image_u8(const uint8_t *src, size_t stride, uint32_t sw, uint32_t sh, double ew,
		    double eh, uint8_t *dst, uint32_t dw, uint32_t dh, unsigned comps);

#endif
