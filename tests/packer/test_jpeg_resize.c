/* test_jpeg_resize — media's resize_image_u8, which `packer pack images
 * --resize-shorter` uses: it keeps flat areas flat, averages a one-pixel
 * checkerboard to mid grey when shrinking (no aliasing), keeps a linear
 * ramp linear, leaves an image unchanged at scale 1, keeps only the first
 * channel for gray output, and honours a fractional extent (an IDCT-scaled
 * decode's last, partial pixel). */
#include "check.h"
#include "resize.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { W = 120, H = 90 };

/* RGBX pixel i of the source. */
static uint8_t *px(uint8_t *src, int i)
{
	return src + 4 * i;
}

static void fill_gray(uint8_t *src, int i, uint8_t v)
{
	px(src, i)[0] = px(src, i)[1] = px(src, i)[2] = v;
	px(src, i)[3] = 0xAB; /* ignored */
}

int main(void)
{
	uint8_t *src = malloc(W * H * 4), *dst = malloc(W * H * 3);
	CHECK(src && dst);

	static const uint8_t flat[4] = { 200, 17, 99, 0 };
	for (int i = 0; i < W * H; i++)
		memcpy(px(src, i), flat, 4);
	CHECK(resize_image_u8(src, W * 4, W, H, W, H, dst, 37, 23, 3) == 0);
	for (int i = 0; i < 37 * 23 * 3; i++)
		CHECKF(dst[i] == flat[i % 3], "flat: %d at %d", dst[i], i);

	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			fill_gray(src, y * W + x, ((x + y) & 1) ? 255 : 0);
	CHECK(resize_image_u8(src, W * 4, W, H, W, H, dst, W / 4, H / 4, 1) == 0);
	for (int i = 0; i < (W / 4) * (H / 4); i++)
		CHECKF(dst[i] >= 120 && dst[i] <= 135, "checkerboard: %d at %d", dst[i], i);

	/* Ramp: value = 2x; shrinking by 2 samples the ramp at pixel centres. */
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			fill_gray(src, y * W + x, (uint8_t)(2 * x));
	CHECK(resize_image_u8(src, W * 4, W, H, W, H, dst, W / 2, H / 2, 1) == 0);
	for (int y = 0; y < H / 2; y++)
		for (int x = 1; x < W / 2 - 1; x++) {
			int want = 4 * x + 1; /* mean of 2*(2x) and 2*(2x+1) */
			int got = dst[y * (W / 2) + x];
			CHECKF(abs(got - want) <= 1, "ramp at %d,%d: %d, expected %d", x, y, got,
			       want);
		}

	/* A fractional extent: the same ramp with its last column standing for
	 * half a pixel (W - 0.5 wide), shrunk by 2, still samples the ramp at
	 * the output pixels' centres: x' covers source [2x', 2x' + 2) scaled by
	 * (W - 0.5) / W, so inside the image it stays within a step of 4x' + 1
	 * scaled. */
	CHECK(resize_image_u8(src, W * 4, W, H, W - 0.5, H, dst, W / 2, H / 2, 1) == 0);
	for (int x = 1; x < W / 2 - 1; x++) {
		double c = (x + 0.5) * (W - 0.5) / (W / 2); /* centre in source pixels */
		double want = 2 * (c - 0.5);
		int got = dst[x];
		CHECKF(abs(got - (int)(want + 0.5)) <= 1, "extent ramp at %d: %d, expected %.1f", x,
		       got, want);
	}

	for (int i = 0; i < W * H; i++)
		for (int c = 0; c < 3; c++)
			px(src, i)[c] = (uint8_t)((3 * i + c) * 37 + ((3 * i + c) >> 7));
	CHECK(resize_image_u8(src, W * 4, W, H, W, H, dst, W, H, 3) == 0);
	for (int i = 0; i < W * H * 3; i++)
		CHECKF(dst[i] == px(src, i / 3)[i % 3], "identity: %d vs %d at %d", dst[i],
		       px(src, i / 3)[i % 3], i);

	CHECK(resize_image_u8(src, W * 4, W, H, W, H, dst, 10, 10, 2) == -EINVAL);
	CHECK(resize_image_u8(src, W * 4, W, H, W + 1, H, dst, 10, 10, 3) == -EINVAL);
	CHECK(resize_image_u8(src, W * 4, W, H, W, H, dst, 0, 10, 3) == -EINVAL);
	free(src);
	free(dst);
	return 0;
}
