/* jpeg_resize.h — shrink a JPEG so that its shorter side is a given size.
 *
 * Used by `packer pack images --resize-shorter N` for datasets whose
 * originals are far larger than the training size: decoding a 4000x3000
 * photo for every 224x224 crop wastes the loader's time, so the packer pays
 * once. The decoder (libjpeg-turbo) scales by M/8 in the IDCT to the
 * smallest size whose shorter side is still >= N, media's resampler
 * (resize_image_u8: the antialiased triangle filter feederd's pipeline uses,
 * like PIL's bilinear reduce) brings the shorter side to exactly N, and the
 * result is encoded at the given quality (4:2:0 for colour, grayscale stays
 * gray).
 * Thread-safe: every call owns its decoder and encoder. */
#ifndef FEEDER_JPEG_RESIZE_H
#define FEEDER_JPEG_RESIZE_H

#include <stddef.h>
#include <stdint.h>

struct jpeg_resize_result {
	uint8_t *data;    /* malloc'd JPEG (free() it); NULL when kept as is */
	size_t len;
	unsigned width, height;       /* of the output image */
	unsigned src_width, src_height;
};

/* Resize the JPEG src (len bytes) so its shorter side is `shorter` pixels,
 * re-encoding with quality 1..100. Returns 0 with r->data set; 1 when the
 * image is already no larger than that (r->data NULL, the caller keeps the
 * original bytes: never upscale, never re-encode for nothing); or
 * FEEDER_EDECODE (not a decodable JPEG, or a colour space other than gray,
 * RGB or YCbCr) / -ENOMEM with a sentence in err. */
int jpeg_resize(const uint8_t *src, size_t len, unsigned shorter, int quality,
		struct jpeg_resize_result *r, char *err, size_t errlen);

#endif
