/* image_limit.h — the largest image any decoder in Feeder decodes.
 *
 * A JPEG header states the image size before a single pixel is decoded, and
 * a broken or hostile one may claim 30000 x 30000 in 1.5 KB: decoding it
 * would cost gigabytes of memory and seconds of CPU for nothing. Every
 * decoder in the project (feederd's jpeg pipeline, media/jpeg_decode.c for
 * packer's --resize-shorter and verify --decode, feeder-bench's decode
 * ceiling) checks the header's size against this one limit before it
 * allocates anything for the pixels, so that one number says what Feeder
 * accepts: an image the daemon would refuse is refused by packer too. */
#ifndef FEEDER_IMAGE_LIMIT_H
#define FEEDER_IMAGE_LIMIT_H

#include <stddef.h>
#include <stdint.h>

/* 2^27 pixels (134 Mpx, e.g. 16384 x 8192): above any real training photo,
 * and at most 512 MiB as RGBX. */
#define IMAGE_MAX_PIXELS (1ull << 27)

/* 0 if a width x height image may be decoded (both at least 1, at most
 * IMAGE_MAX_PIXELS pixels in all); else FEEDER_EDECODE with a sentence
 * giving the size and the limit. */
int image_limit_check(uint64_t width, uint64_t height, char *err, size_t errlen);

#endif
