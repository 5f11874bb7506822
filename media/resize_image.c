/* resize_image.c — a whole 8-bit image through resize.c's resampler (see
 * resize_image_u8 in resize.h).
 *
 * packer's --resize-shorter (packer/jpeg_resize.c) shrinks each photo once at
 * pack time with the same antialiased triangle filter, the same taps and the
 * same rounding that feederd's jpeg pipeline applies at serve time, so a
 * pre-resized dataset differs from its original only by what the re-encode
 * loses. This file only plans the two axes over the whole image, asks
 * resize_rgb for packed u8 RGB (NHWC, no flip, no normalization) and, for
 * gray images, keeps one channel. */
#include "resize.h"

#include "feeder_types.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int resize_image_u8(const uint8_t *src, size_t stride, uint32_t sw, uint32_t sh, double ew,
		    double eh, uint8_t *dst, uint32_t dw, uint32_t dh, unsigned comps)
{
	if (!sw || !sh || !dw || !dh || (comps != 1 && comps != 3) || !(ew > 0 && ew <= sw) ||
	    !(eh > 0 && eh <= sh))
		return -EINVAL;
	struct resize_axis ax = { 0 }, ay = { 0 };
	float *scratch = NULL;
	uint8_t *rgb = NULL;
	int rc = resize_axis_plan(&ax, 0, ew, dw, 0, (int32_t)sw);
	if (!rc)
		rc = resize_axis_plan(&ay, 0, eh, dh, 0, (int32_t)sh);
	if (rc)
		goto out;
	/* malloc's alignment (16 bytes) is what resize_rgb asks of scratch. */
	scratch = malloc(resize_scratch_floats(&ax, &ay) * sizeof(float));
	rgb = comps == 3 ? dst : malloc((size_t)dw * dh * 3);
	if (!scratch || !rgb) {
		rc = -ENOMEM;
		goto out;
	}
	struct resize_out o = { .out = rgb,
				.dtype = FEEDER_DTYPE_U8,
				.layout = FEEDER_LAYOUT_NHWC };
	resize_rgb(src, stride, &ax, &ay, scratch, &o);
	if (comps == 1) /* a gray image decoded as RGBX: R = G = B */
		for (size_t i = 0; i < (size_t)dw * dh; i++)
			dst[i] = rgb[3 * i];
out:
	if (rgb != dst)
		free(rgb);
	free(scratch);
	resize_axis_free(&ax);
	resize_axis_free(&ay);
	return rc;
}
