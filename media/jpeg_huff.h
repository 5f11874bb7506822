/* jpeg_huff.h — a faster baseline Huffman decoder for libjpeg-turbo.
 *
 * Huffman decoding is most of a crop's decode in feederd (55 % of a tiled
 * train sample on one thread, perf): libjpeg-turbo decodes a JPEG with
 * restart markers, which every tiled record has (jpeg_tiles.h), on its slow
 * path only, one symbol per table lookup plus a call per refill. This
 * module replaces, for one decompression, libjpeg's entropy decoder
 * (cinfo->entropy->decode_mcu, libjpeg's own hook between the coefficient
 * controller and the entropy decoder, declared in jpegint.h) with one that
 * refills 64 bits at a time and decodes the common short AC codes together
 * with their value in one lookup. Everything else (IDCT scaling, cropping,
 * skipping, upsampling, colour conversion, markers) stays libjpeg's.
 *
 * The coefficients are libjpeg's: the decoded pixels are identical bit for
 * bit (tests/pipelines test_jpeg_huff), and corrupt data ends the decode
 * where libjpeg would warn (a code past the segment's end, an invalid code,
 * a wrong restart number, whole bytes left over before the marker that
 * ends an interval or the scan), with libjpeg's own message, through the
 * error manager (jpeg_rules.h). libjpeg makes two of these checks on some
 * paths only (left-over bytes where it has not read them ahead; invalid
 * codes off its fast path, which decodes one as 0), so it takes some
 * damaged streams that this decoder refuses; and a value size 8-bit data
 * cannot have (a damaged table) is an invalid code here. A truncated scan
 * is refused before the first row, where libjpeg refuses it only if the
 * rows it is asked for make it read to the end. Restart intervals are
 * decoded two at a time (two streams keep the core busier than one), so
 * damage in the interval after the last one a crop needs refuses the crop,
 * where libjpeg, reading a few bytes ahead, may decode it.
 *
 * Only for the memory source (jpeg_mem_src) and single-scan 8-bit
 * Huffman JPEGs; jpeg_huff_install leaves anything else to libjpeg.
 *
 * Where this decoder alone refuses (an invalid code, bytes left over),
 * libjpeg's decoder, which a user's own loader (PIL, djpeg) runs, may
 * decode the file without a warning: a real photo, not a training sample
 * to lose. jpeg_huff_or_libjpeg is the one policy for that, used by
 * feederd's pipeline and packer's checks alike: decode with this decoder,
 * and on such a refusal once more with libjpeg's, under the same rules,
 * whose verdict and pixels then stand. Other refusals (a truncated scan, a
 * wrong restart marker, data past a segment) are libjpeg's too, or must
 * not depend on the crop: they stand. */
#ifndef FEEDER_JPEG_HUFF_H
#define FEEDER_JPEG_HUFF_H

#include <stdio.h>

#include <jpeglib.h>

struct jpeg_huff;

/* NULL when out of memory. One per thread, reused for every image. */
struct jpeg_huff *jpeg_huff_create(void);
void jpeg_huff_destroy(struct jpeg_huff *h);

/* Call after jpeg_start_decompress (and jpeg_crop_scanline, if any), before
 * the first jpeg_read_scanlines or jpeg_skip_scanlines: decode this
 * decompression's scan with h, which must live until it ends (it takes
 * ci->client_data). Returns 1 when installed, 0 when libjpeg keeps decoding
 * (progressive, arithmetic or multi-scan JPEG, not 8-bit). Call it where
 * libjpeg's errors are caught (inside the caller's setjmp): a scan whose
 * data end without a marker (a truncated file) is refused at once, with
 * libjpeg's "Premature end of JPEG file", whatever rows are to be read. */
int jpeg_huff_install(struct jpeg_decompress_struct *ci, struct jpeg_huff *h);

/* One whole decode (from jpeg_mem_src to the last row read) by the
 * caller, with huff installed after jpeg_start_decompress when it is not
 * NULL and libjpeg's own Huffman decoder when it is; 0 or a negative code
 * with the caller's sentence. */
typedef int (*jpeg_huff_try_fn)(void *ctx, struct jpeg_huff *huff);

/* decode(ctx, h) and, when h refused the data where libjpeg's decoder may
 * not (see above), decode(ctx, NULL). Returns the result of the last
 * decode; *fell_back (may be NULL) is 1 when that was libjpeg's and it
 * succeeded, else 0. With h NULL, decode(ctx, NULL) alone. */
int jpeg_huff_or_libjpeg(struct jpeg_huff *h, jpeg_huff_try_fn decode, void *ctx, int *fell_back);

#endif
