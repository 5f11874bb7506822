/* jpeg_tiles.h — JPEGs tiled by restart intervals: written by packer, cut
 * into the crop's sub-image by feederd.
 *
 * A baseline JPEG with a restart marker every R MCUs, R dividing the MCUs
 * of a row, is a grid of intervals: `cols` = MCUs-per-row / R intervals in
 * each MCU row, every one starting with the DC predictions reset. Any
 * rectangle of that grid, its intervals concatenated row by row with the
 * restart markers renumbered, is itself a valid entropy stream; with the
 * headers copied and the frame's size changed it is a small JPEG of just
 * that part of the image. Decoding it costs in proportion to its area,
 * where libjpeg-turbo must otherwise Huffman-decode the whole image to
 * reach a crop (jpeg_crop_scanline and jpeg_skip_scanlines save only the
 * IDCT and colour work). Its pixels equal the whole image's except within
 * the pixel next to a cut edge, where a component is subsampled (chroma
 * upsampling reads a neighbouring sample that is not there), so callers
 * keep a margin of a sample there.
 *
 * Writing (packer): jpeg_tiles_transcode rewrites a JPEG's DCT coefficients
 * untouched into a baseline, Huffman-optimised JPEG with such intervals:
 * it decodes to exactly the source's pixels. jpeg_tiles_encode compresses
 * pixels directly into the same layout (pack --resize-shorter).
 *
 * Reading (feederd): jpeg_tiles_parse reads the headers and says whether the
 * intervals form such a grid (whatever wrote the file); jpeg_tiles_cut
 * builds the sub-JPEG of a rectangle of the grid.
 *
 * Errors are values: FEEDER_EDECODE with a sentence for a file that is not
 * what it claims (a cut into a damaged stream, a marker out of order),
 * -ENOMEM. Nothing here keeps state between calls except the transcoder's
 * libjpeg objects, which belong to one thread. */
#ifndef FEEDER_JPEG_TILES_H
#define FEEDER_JPEG_TILES_H

#include <stddef.h>
#include <stdint.h>

/* How long an interval packer aims at: a fixed number of MCUs, or (mcus 0)
 * about `bytes` of coded data, estimated from the JPEG's size per MCU. Each
 * interval costs ~4 bytes (its marker, the bits padding it to a byte, its
 * first DC values coded whole), so a smooth photo of 25 bytes an MCU needs
 * longer intervals than a detailed one of 120 for the same overhead; a
 * shorter interval lets a crop skip more. Both 0: no intervals. See
 * BENCHMARKS.md ("Decode only the crop") for the measurements behind
 * JPEG_TILES_BYTES. */
struct jpeg_tiles_policy {
	unsigned mcus;
	unsigned bytes;
};
#define JPEG_TILES_BYTES 256

/* The divisor of mcus_per_row nearest to target on a log scale (the larger
 * one on a tie); 0 when mcus_per_row is 0 or target is not positive. */
unsigned jpeg_tiles_choose(unsigned mcus_per_row, double target);

/* The interval policy gives for a JPEG of `bytes` bytes whose grid is
 * mcus_x x mcus_y MCUs (0: none). */
unsigned jpeg_tiles_interval(const struct jpeg_tiles_policy *p, size_t bytes, unsigned mcus_x,
			     unsigned mcus_y);

/* What jpeg_tiles_parse finds. */
struct jpeg_tiles {
	uint32_t width, height;  /* pixels */
	uint32_t mcu_w, mcu_h;   /* an MCU in pixels */
	uint32_t mcus_x, mcus_y; /* MCUs per row and rows of MCUs */
	uint32_t restart;        /* MCUs per restart interval (DRI), 0 without */
	uint32_t cols;           /* intervals per MCU row (when grid) */
	int sub_h, sub_v;        /* 1 when a component is subsampled across /
				     down (its pixels are upsampled from
				     neighbouring samples: a cut edge changes
				     the pixel next to it) */
	int grid;                /* 1: baseline Huffman, one scan of every
				     component, restart dividing mcus_x */
	size_t sof;              /* offset of the SOF segment's length field */
	size_t entropy;          /* offset of the first entropy-coded byte */
};

/* Parse the headers of the JPEG p (len bytes) up to its first scan. 0 with
 * *t filled (t->grid says whether it can be cut), or FEEDER_EDECODE when
 * the headers are malformed. Reads nothing past the scan header. */
int jpeg_tiles_parse(const uint8_t *p, size_t len, struct jpeg_tiles *t, char *err, size_t errlen);

/* A growable output buffer (the caller's, reused across calls). */
struct jpeg_tiles_buf {
	uint8_t *data;
	size_t len, cap;
};

/* Build in out the sub-JPEG of the grid's intervals c0..c1-1 of MCU rows
 * r0..r1-1 (t from jpeg_tiles_parse of p, t->grid set; c0 < c1 <= t->cols,
 * r0 < r1 <= t->mcus_y). Its top-left pixel is the source's
 * (c0 * restart * mcu_w, r0 * mcu_h). Application segments other than JFIF
 * (APP0) and Adobe (APP14, which says how colours are coded) and comments
 * are left out. Returns 0, FEEDER_EINVAL for a rectangle off the grid,
 * FEEDER_EDECODE when the stream's restart markers are missing, out of
 * order or past its end (only the part up to row r1 is read), -ENOMEM. */
int jpeg_tiles_cut(const struct jpeg_tiles *t, const uint8_t *p, size_t len, uint32_t c0,
		   uint32_t c1, uint32_t r0, uint32_t r1, struct jpeg_tiles_buf *out, char *err,
		   size_t errlen);

struct jpeg_tiler;

/* A transcoder/encoder for one thread, or -ENOMEM with err filled. */
int jpeg_tiler_create(struct jpeg_tiler **out, char *err, size_t errlen);
void jpeg_tiler_destroy(struct jpeg_tiler *t); /* NULL is fine */

struct jpeg_tiles_result {
	uint8_t *data; /* malloc'd JPEG (free() it) */
	size_t len;
	uint32_t restart; /* MCUs per interval it was written with */
};

/* Rewrite the JPEG src (len bytes) with restart intervals as policy p
 * says (jpeg_tiles_interval), optimised Huffman tables,
 * baseline (a progressive source becomes sequential), its application
 * segments and comments kept: the DCT coefficients are copied, so it
 * decodes to the source's pixels exactly. Returns 0 with *r filled; 1 when
 * this JPEG cannot be transcoded (libjpeg-turbo refuses to read its
 * coefficients: 12-bit, a damaged stream, a coding it cannot write back)
 * and should be stored as it is, with the reason in err; -ENOMEM. */
int jpeg_tiles_transcode(struct jpeg_tiler *t, const uint8_t *src, size_t len,
			 const struct jpeg_tiles_policy *p, struct jpeg_tiles_result *r, char *err,
			 size_t errlen);

/* Compress rows of pixels (comps 3: RGB, 4:2:0; comps 1: grayscale), w x h,
 * stride bytes apart, at quality 1..100, with optimised Huffman tables and
 * restart intervals as policy p says (for a byte target, the image is
 * compressed first and then transcoded, since its size per MCU is known
 * only then). Returns 0 with *r filled, FEEDER_EINVAL, or -ENOMEM. */
int jpeg_tiles_encode(struct jpeg_tiler *t, const uint8_t *pixels, size_t stride, uint32_t w,
		      uint32_t h, unsigned comps, int quality, const struct jpeg_tiles_policy *p,
		      struct jpeg_tiles_result *r, char *err, size_t errlen);

#endif
