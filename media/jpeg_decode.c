/* jpeg_decode.c — whole-image JPEG decoding under feederd's rules (see
 * jpeg_decode.h).
 *
 * The libjpeg API of libjpeg-turbo, as in daemon/jpeg_pipeline.c: it
 * offers every M/8 IDCT scale and RGBX output, and its hooks let every
 * warning end the decode. libjpeg reports an error by calling error_exit,
 * which must not return: ours formats the message and longjmps back into
 * the call that set the jump (each public function sets its own). */
#include "jpeg_decode.h"

#include "jpeg_huff.h"
#include "jpeg_rules.h"
#include "status.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h>

struct jpeg_decoder {
	struct jpeg_decompress_struct ci;
	struct jpeg_rules_err err;
	struct jpeg_huff *huff; /* feederd's Huffman decoder: the same verdicts */
	uint8_t *row;           /* the one row of a check-only decode */
	size_t row_cap;
	uint64_t fallbacks; /* images decoded by libjpeg's Huffman decoder after huff refused */
};

uint64_t jpeg_decoder_fallbacks(const struct jpeg_decoder *d)
{
	return d->fallbacks;
}

int jpeg_sniff(const uint8_t *p, size_t len)
{
	return len >= 4 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF && p[3] >= 0xC0 &&
	       p[3] != 0xFF;
}

int jpeg_decoder_create(struct jpeg_decoder **out, char *err, size_t errlen)
{
	struct jpeg_decoder *d = calloc(1, sizeof(*d));
	if (!d || !(d->huff = jpeg_huff_create())) {
		free(d);
		return status_fail(err, errlen, -ENOMEM, "JPEG decoder: out of memory");
	}
	if (setjmp(d->err.jump)) {
		int rc = status_fail(err, errlen, -ENOMEM, "JPEG decoder: %s", d->err.msg);
		jpeg_huff_destroy(d->huff);
		free(d);
		return rc;
	}
	jpeg_rules_create(&d->ci, &d->err);
	*out = d;
	return 0;
}

void jpeg_decoder_destroy(struct jpeg_decoder *d)
{
	if (!d)
		return;
	jpeg_destroy_decompress(&d->ci);
	jpeg_huff_destroy(d->huff);
	free(d->row);
	free(d);
}

/* After jpeg_read_header: the rules that need only the header. */
static int check_header(struct jpeg_decoder *d, struct jpeg_info *info, char *err, size_t errlen)
{
	struct jpeg_decompress_struct *ci = &d->ci;
	int rc = jpeg_rules_check_header(ci, NULL, err, errlen);
	if (rc)
		return rc;
	if (info) {
		info->width = ci->image_width;
		info->height = ci->image_height;
		info->gray = ci->jpeg_color_space == JCS_GRAYSCALE;
	}
	return 0;
}

int jpeg_decode_info(struct jpeg_decoder *d, const uint8_t *jpeg, size_t len,
		     struct jpeg_info *info, char *err, size_t errlen)
{
	if (setjmp(d->err.jump)) {
		jpeg_abort_decompress(&d->ci);
		return status_fail(err, errlen, FEEDER_EDECODE, "JPEG: %s", d->err.msg);
	}
	jpeg_mem_src(&d->ci, jpeg, (unsigned long)len);
	jpeg_read_header(&d->ci, TRUE);
	int rc = check_header(d, info, err, errlen);
	jpeg_abort_decompress(&d->ci);
	return rc;
}

/* jpeg_decode_rgbx's arguments, for jpeg_huff_or_libjpeg's callback. */
struct rgbx_call {
	struct jpeg_decoder *d;
	const uint8_t *jpeg;
	size_t len;
	unsigned m;
	uint8_t **pixels;
	uint32_t *out_w, *out_h;
	char *err;
	size_t errlen;
};

static int decode_rgbx(void *ctx, struct jpeg_huff *huff)
{
	const struct rgbx_call *a = ctx;
	struct jpeg_decoder *d = a->d;
	struct jpeg_decompress_struct *ci = &d->ci;
	const uint8_t *jpeg = a->jpeg;
	size_t len = a->len;
	uint8_t **pixels = a->pixels;
	char *err = a->err;
	size_t errlen = a->errlen;
	/* Set after setjmp and needed after a longjmp: kept in memory. */
	uint8_t *volatile pix = NULL;
	if (setjmp(d->err.jump)) {
		jpeg_abort_decompress(ci);
		free(pix);
		return status_fail(err, errlen, FEEDER_EDECODE, "JPEG: %s", d->err.msg);
	}
	jpeg_mem_src(ci, jpeg, (unsigned long)len);
	jpeg_read_header(ci, TRUE);
	int rc = check_header(d, NULL, err, errlen);
	if (rc) {
		jpeg_abort_decompress(ci);
		return rc;
	}
	ci->scale_num = a->m;
	ci->scale_denom = 8;
	ci->dct_method = JDCT_ISLOW;
	ci->out_color_space = JCS_EXT_RGBX;
	jpeg_start_decompress(ci);
	if (huff)
		jpeg_huff_install(ci, huff);
	uint32_t w = ci->output_width, h = ci->output_height;
	size_t stride = (size_t)w * 4;
	if (pixels) {
		pix = malloc(stride * h);
	} else if (d->row_cap < stride) {
		free(d->row);
		d->row_cap = 0;
		if ((d->row = malloc(stride)))
			d->row_cap = stride;
	}
	if (pixels ? !pix : !d->row) {
		jpeg_abort_decompress(ci);
		return status_fail(err, errlen, -ENOMEM, "JPEG: out of memory for a %ux%u image", w,
				   h);
	}
	while (ci->output_scanline < h) {
		JSAMPROW row = pix ? pix + ci->output_scanline * stride : d->row;
		if (jpeg_read_scanlines(ci, &row, 1) != 1) {
			/* Only a suspending source returns 0 rows; the memory
			 * source never does, but never loop on it. */
			jpeg_abort_decompress(ci);
			free(pix);
			return status_fail(err, errlen, FEEDER_EDECODE, "JPEG: no rows decoded");
		}
	}
	jpeg_finish_decompress(ci); /* reads on to EOI: late warnings count too */
	if (a->out_w)
		*a->out_w = w;
	if (a->out_h)
		*a->out_h = h;
	if (pixels)
		*pixels = pix;
	return 0;
}

int jpeg_decode_rgbx(struct jpeg_decoder *d, const uint8_t *jpeg, size_t len, unsigned m,
		     uint8_t **pixels, uint32_t *out_w, uint32_t *out_h, char *err, size_t errlen)
{
	if (pixels)
		*pixels = NULL;
	if (m < 1 || m > 8)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "JPEG: scale %u/8 is not in 1/8..8/8", m);
	struct rgbx_call a = { d, jpeg, len, m, pixels, out_w, out_h, err, errlen };
	int fell_back;
	int rc = jpeg_huff_or_libjpeg(d->huff, decode_rgbx, &a, &fell_back);
	d->fallbacks += (uint64_t)fell_back;
	return rc;
}
