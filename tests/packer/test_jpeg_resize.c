/* test_jpeg_resize — the antialiased resize keeps flat areas flat, averages
 * a one-pixel checkerboard to mid grey when shrinking (no aliasing), keeps a
 * linear ramp linear, and leaves an image unchanged at scale 1. */
#include "check.h"
#include "jpeg_resize.h"

#include <stdlib.h>

int main(void)
{
	enum { W = 120, H = 90 };
	uint8_t *src = malloc(W * H * 3), *dst = malloc(W * H * 3);
	CHECK(src && dst);

	for (int i = 0; i < W * H * 3; i++)
		src[i] = (uint8_t)(i % 3 == 0 ? 200 : i % 3 == 1 ? 17 : 99);
	CHECK(jpeg_resize_pixels(src, W, H, 3, dst, 37, 23) == 0);
	for (int i = 0; i < 37 * 23 * 3; i++)
		CHECKF(dst[i] == (i % 3 == 0 ? 200 : i % 3 == 1 ? 17 : 99), "flat: %d at %d", dst[i], i);

	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			src[y * W + x] = (uint8_t)(((x + y) & 1) ? 255 : 0);
	CHECK(jpeg_resize_pixels(src, W, H, 1, dst, W / 4, H / 4) == 0);
	for (int i = 0; i < (W / 4) * (H / 4); i++)
		CHECKF(dst[i] >= 120 && dst[i] <= 135, "checkerboard: %d at %d", dst[i], i);

	/* Ramp: value = 2x; shrinking by 2 samples the ramp at pixel centres. */
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			src[y * W + x] = (uint8_t)(2 * x);
	CHECK(jpeg_resize_pixels(src, W, H, 1, dst, W / 2, H / 2) == 0);
	for (int y = 0; y < H / 2; y++)
		for (int x = 1; x < W / 2 - 1; x++) {
			int want = 4 * x + 1; /* mean of 2*(2x) and 2*(2x+1) */
			int got = dst[y * (W / 2) + x];
			CHECKF(abs(got - want) <= 1, "ramp at %d,%d: %d, expected %d", x, y, got, want);
		}

	for (int i = 0; i < W * H * 3; i++)
		src[i] = (uint8_t)(i * 37 + (i >> 7));
	CHECK(jpeg_resize_pixels(src, W, H, 3, dst, W, H) == 0);
	for (int i = 0; i < W * H * 3; i++)
		CHECKF(dst[i] == src[i], "identity: %d vs %d at %d", dst[i], src[i], i);
	free(src);
	free(dst);
	return 0;
}
