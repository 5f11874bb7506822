/* jpeg_decode.h — decode a whole JPEG by the rules feederd's pipeline
 * applies, for the tools that decode whole images.
 *
 * packer decodes whole images in two places: `pack images --resize-shorter`
 * before it shrinks them, and `verify --decode`, which is there to prove that
 * every stored JPEG decodes in feederd. Both must refuse what feederd
 * refuses, or a dataset passes packer's checks and then fails in training;
 * so this decoder applies jpeg_rules.h, as daemon/jpeg_pipeline.c does (the
 * pixel limit, no CMYK, every libjpeg warning an error, at most
 * JPEG_RULES_MAX_SCANS progressive scans) and Huffman-decodes with the
 * same decoder (jpeg_huff.h) under the same policy (jpeg_huff_or_libjpeg:
 * where that decoder alone refuses, libjpeg's decodes the image).
 *
 * A decoder holds libjpeg's state for one thread; calls on different
 * decoders may run at once. Errors are FEEDER_EDECODE with libjpeg's reason
 * (or the rule) in err, -ENOMEM when memory runs out. */
#ifndef FEEDER_JPEG_DECODE_H
#define FEEDER_JPEG_DECODE_H

#include <stddef.h>
#include <stdint.h>

/* 1 if the first len bytes of a file (4 are enough) begin a JPEG stream: the
 * SOI marker and another marker after it; else 0. The check packer makes
 * without decoding, from a file's head, before it reads the rest. */
int jpeg_sniff(const uint8_t *head, size_t len);

struct jpeg_decoder;

/* A decoder, or -ENOMEM with err filled. */
int jpeg_decoder_create(struct jpeg_decoder **out, char *err, size_t errlen);

/* NULL is fine. */
void jpeg_decoder_destroy(struct jpeg_decoder *d);

/* What a JPEG's header says. */
struct jpeg_info {
	uint32_t width, height;
	int gray; /* one component: re-encode as gray */
};

/* Read the header of the JPEG jpeg (len bytes) into info, checking it against
 * the rules above (size limit, colour space). 0 or FEEDER_EDECODE. */
int jpeg_decode_info(struct jpeg_decoder *d, const uint8_t *jpeg, size_t len,
		     struct jpeg_info *info, char *err, size_t errlen);

/* Decode the whole image with the IDCT scaled by m/8 (m in 1..8; 8 is full
 * size) into RGBX rows: 4 bytes a pixel, the 4th unspecified, a gray image
 * as R = G = B. The decoded size is ceil(width * m / 8) x ceil(height *
 * m / 8), stored in *out_w and *out_h when those are not NULL. With pixels
 * NULL every row is decoded into one row buffer and dropped (a check that the
 * whole image decodes, in the memory of one row); else *pixels receives a
 * malloc'd buffer of *out_h rows of *out_w pixels, rows 4 * *out_w bytes
 * apart, that the caller frees (NULL on error). Returns 0, FEEDER_EDECODE,
 * FEEDER_EINVAL (m out of range) or -ENOMEM. */
int jpeg_decode_rgbx(struct jpeg_decoder *d, const uint8_t *jpeg, size_t len, unsigned m,
		     uint8_t **pixels, uint32_t *out_w, uint32_t *out_h, char *err, size_t errlen);

/* Images d decoded with libjpeg's Huffman decoder because jpeg_huff.h's
 * refused them on a verdict libjpeg does not share (jpeg_huff_or_libjpeg),
 * since it was created. */
uint64_t jpeg_decoder_fallbacks(const struct jpeg_decoder *d);

#endif
