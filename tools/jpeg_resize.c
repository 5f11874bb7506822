/* jpeg_resize.c — DCT-scaled decode, antialiased resize, re-encode (see
 * jpeg_resize.h). The resize is media's (resize_image_u8: the filter,
 * taps and rounding of feederd's jpeg pipeline). Uses the libjpeg API of
 * libjpeg-turbo rather than the TurboJPEG one because it offers every M/8
 * scale and RGBX output in the decoder. libjpeg reports errors by longjmp
 * out of an error_exit hook; each call keeps its own jmp_buf. */
#include "jpeg_resize.h"

#include "image_limit.h"
#include "resize.h"
#include "status.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

struct jerr {
	struct jpeg_error_mgr mgr;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
};

static void jerr_exit(j_common_ptr cinfo)
{
	struct jerr *e = (struct jerr *)cinfo->err;
	(*cinfo->err->format_message)(cinfo, e->msg);
	longjmp(e->jump, 1);
}

/* Corrupt-data warnings must not reach stderr from a library call. */
static void jerr_silent(j_common_ptr cinfo, int level)
{
	(void)cinfo;
	(void)level;
}

/* Output size: shorter side exactly `shorter`, aspect ratio kept. */
static void target_size(unsigned w, unsigned h, unsigned shorter, unsigned *dw, unsigned *dh)
{
	if (w <= h) {
		*dw = shorter;
		*dh = (unsigned)((double)h * shorter / w + 0.5);
	} else {
		*dh = shorter;
		*dw = (unsigned)((double)w * shorter / h + 0.5);
	}
	if (*dw < 1)
		*dw = 1;
	if (*dh < 1)
		*dh = 1;
}

int jpeg_resize(const uint8_t *src, size_t len, unsigned shorter, int quality,
		struct jpeg_resize_result *r, char *err, size_t errlen)
{
	struct jpeg_decompress_struct d;
	struct jpeg_compress_struct c;
	struct jerr je;
	uint8_t *volatile pix = NULL, *volatile out = NULL;
	volatile int have_c = 0;
	/* Address-taken, so it lives in memory and survives the longjmp. */
	struct { unsigned char *buf; unsigned long len; } mem = { NULL, 0 };
	int rc;

	memset(r, 0, sizeof(*r));
	if (shorter == 0 || quality < 1 || quality > 100)
		return status_fail(err, errlen, FEEDER_EINVAL, "resize to %u at quality %d is out of range",
				   shorter, quality);
	memset(&d, 0, sizeof(d));
	memset(&c, 0, sizeof(c));
	d.err = jpeg_std_error(&je.mgr);
	je.mgr.error_exit = jerr_exit;
	je.mgr.emit_message = jerr_silent;
	if (setjmp(je.jump)) {
		rc = status_fail(err, errlen, FEEDER_EDECODE, "JPEG %s: %s", have_c ? "encode" : "decode",
				 je.msg);
		goto out;
	}
	jpeg_create_decompress(&d);
	jpeg_mem_src(&d, src, (unsigned long)len);
	jpeg_read_header(&d, TRUE);
	r->src_width = d.image_width;
	r->src_height = d.image_height;
	/* Before anything is allocated for the pixels: a header may claim
	 * 65500 x 65500 in a 1.5 KB file. */
	if ((rc = image_limit_check(d.image_width, d.image_height, err, errlen)))
		goto out;
	unsigned sshort = d.image_width < d.image_height ? d.image_width : d.image_height;
	if (sshort <= shorter) {
		rc = 1;
		goto out;
	}
	/* Decoded as RGBX (gray too: R = G = B) for the resampler; stored as
	 * gray or RGB like the source. */
	unsigned comps;
	d.out_color_space = JCS_EXT_RGBX;
	if (d.jpeg_color_space == JCS_GRAYSCALE) {
		comps = 1;
	} else if (d.jpeg_color_space == JCS_YCbCr || d.jpeg_color_space == JCS_RGB) {
		comps = 3;
	} else {
		rc = status_fail(err, errlen, FEEDER_EDECODE, "JPEG colour space %d (CMYK?) is not supported",
				 (int)d.jpeg_color_space);
		goto out;
	}
	/* Smallest M/8 whose scaled shorter side still reaches the target. */
	unsigned m = 8;
	for (unsigned k = 1; k <= 8; k++) {
		if (((uint64_t)sshort * k + 7) / 8 >= shorter) {
			m = k;
			break;
		}
	}
	d.scale_num = m;
	d.scale_denom = 8;
	d.dct_method = JDCT_ISLOW;
	jpeg_start_decompress(&d);
	unsigned sw = d.output_width, sh = d.output_height;
	pix = malloc((size_t)sw * sh * 4);
	if (!pix) {
		rc = status_fail(err, errlen, -ENOMEM, "out of memory for a %ux%u image", sw, sh);
		goto out;
	}
	while (d.output_scanline < sh) {
		JSAMPROW row = pix + (size_t)d.output_scanline * sw * 4;
		jpeg_read_scanlines(&d, &row, 1);
	}
	jpeg_finish_decompress(&d);

	unsigned dw, dh;
	target_size(r->src_width, r->src_height, shorter, &dw, &dh);
	out = malloc((size_t)dw * dh * comps);
	double ew = (double)r->src_width * m / 8, eh = (double)r->src_height * m / 8;
	if (!out || resize_image_u8(pix, (size_t)sw * 4, sw, sh, ew, eh, out, dw, dh, comps) != 0) {
		rc = status_fail(err, errlen, -ENOMEM, "out of memory resizing to %ux%u", dw, dh);
		goto out;
	}

	c.err = jpeg_std_error(&je.mgr);
	je.mgr.error_exit = jerr_exit;
	je.mgr.emit_message = jerr_silent;
	have_c = 1;
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, &mem.buf, &mem.len);
	c.image_width = dw;
	c.image_height = dh;
	c.input_components = (int)comps;
	c.in_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, quality, TRUE);
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < dh) {
		JSAMPROW row = out + (size_t)c.next_scanline * dw * comps;
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	r->data = mem.buf;
	r->len = mem.len;
	r->width = dw;
	r->height = dh;
	mem.buf = NULL;
	rc = 0;
out:
	if (have_c)
		jpeg_destroy_compress(&c);
	jpeg_destroy_decompress(&d);
	free(pix);
	free(out);
	/* jpeg_mem_dest's buffer is ours once allocated, also after an error. */
	free(mem.buf);
	return rc;
}
