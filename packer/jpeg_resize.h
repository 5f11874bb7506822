/* jpeg_resize.h — shrink a JPEG so that its shorter side is a given size.
 *
 * Used by `packer pack images --resize-shorter N` for datasets whose
 * originals are far larger than the training size: decoding a 4000x3000
 * photo for every 224x224 crop wastes the loader's time, so the packer pays
 * once. The decoder (media/jpeg_decode.h: feederd's rules, so a file it
 * would refuse, corrupt data included, is refused here rather than stored
 * re-encoded as if valid) scales by M/8 in the IDCT to the smallest size
 * whose shorter side is still >= N, media's resampler (resize_image_u8: the
 * antialiased triangle filter feederd's pipeline uses, like PIL's bilinear
 * reduce) brings the shorter side to exactly N, and libjpeg encodes the
 * result at the given quality (4:2:0 for colour, grayscale stays gray) with
 * optimised Huffman tables and the restart intervals a tiling policy asks
 * for (media/jpeg_tiles.h), so the output is tiled as it is written. An
 * image kept at its size is tiled by lossless transcoding instead.
 * A resizer belongs to one thread; each worker makes its own. */
#ifndef FEEDER_JPEG_RESIZE_H
#define FEEDER_JPEG_RESIZE_H

#include "jpeg_tiles.h"

#include <stddef.h>
#include <stdint.h>

struct jpeg_resizer;

/* A resizer (decoder and encoder), or -ENOMEM with err filled. */
int jpeg_resizer_create(struct jpeg_resizer **out, char *err, size_t errlen);

/* NULL is fine. */
void jpeg_resizer_destroy(struct jpeg_resizer *z);

struct jpeg_resize_result {
	uint8_t *data; /* malloc'd JPEG (free() it); NULL when kept as is */
	size_t len;
	uint32_t restart;       /* its restart interval in MCUs, 0 untiled */
	unsigned width, height; /* of the output image */
	unsigned src_width, src_height;
};

/* Resize the JPEG src (len bytes) so its shorter side is `shorter` pixels,
 * re-encoding with quality 1..100 and tiling policy p. Returns 0 with
 * r->data set; 1 when the image is already no larger than that and decodes
 * cleanly: never upscaled, never re-encoded for nothing, but tiled by
 * lossless transcoding where p asks for intervals (r->data set), else kept
 * byte for byte (r->data NULL); FEEDER_EDECODE (see jpeg_decode.h: not a
 * clean JPEG, CMYK, over the pixel limit), FEEDER_EINVAL (bad shorter or
 * quality) or -ENOMEM, with a sentence in err. */
int jpeg_resize(struct jpeg_resizer *z, const uint8_t *src, size_t len, unsigned shorter,
		int quality, const struct jpeg_tiles_policy *p, struct jpeg_resize_result *r,
		char *err, size_t errlen);

#endif
