/* jpeg_rules.h — the rules every JPEG decoder in Feeder applies, in one place.
 *
 * feederd's pipeline (daemon/jpeg_pipeline.c) decodes crops and packer's
 * checks (media/jpeg_decode.c) decode whole images; a dataset that passes
 * packer must decode in feederd, and an image feederd refuses must be
 * refused by packer, so both attach this error manager and check headers
 * with this function:
 *
 *   - any libjpeg warning ends the decode: libjpeg "recovers" from corrupt
 *     data (a truncated file, a patched header, a Huffman error) by filling
 *     with grey or garbage and going on;
 *   - a progressive JPEG of more than JPEG_RULES_MAX_SCANS scans is refused
 *     between scans (as TurboJPEG's TJFLAG_LIMITSCANS does): each scan
 *     re-reads the coefficients of the whole image, so a small file with
 *     thousands of scans costs minutes of a worker;
 *   - after jpeg_read_header: CMYK/YCCK images are refused, and the size
 *     must pass image_limit_check before any pixel memory is allocated.
 *
 * libjpeg reports an error by calling error_exit, which must not return:
 * this one formats the message into msg and longjmps to jump, which the
 * caller sets (setjmp) around every libjpeg call. */
#ifndef FEEDER_JPEG_RULES_H
#define FEEDER_JPEG_RULES_H

#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>

#include <jpeglib.h>

#define JPEG_RULES_MAX_SCANS 500

struct jpeg_rules_err {
	struct jpeg_error_mgr pub; /* first: libjpeg hands back a pointer to it */
	struct jpeg_progress_mgr progress;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
};

/* Create the decompressor ci with e as its error manager and progress
 * monitor (e must outlive ci). jpeg_create_decompress clears everything but
 * the error manager, so the monitor is attached after it. Call with
 * e->jump set: running out of memory here is reported through it. */
void jpeg_rules_create(struct jpeg_decompress_struct *ci, struct jpeg_rules_err *e);

/* After jpeg_read_header: 0, or FEEDER_EDECODE with a sentence (after
 * "prefix: " when prefix is not NULL) when the colour space or size is
 * refused. */
int jpeg_rules_check_header(const struct jpeg_decompress_struct *ci, const char *prefix, char *err,
			    size_t errlen);

#endif
