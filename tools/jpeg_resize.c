/* jpeg_resize.c — DCT-scaled decode, antialiased resize, re-encode (see
 * jpeg_resize.h). Uses the libjpeg API of libjpeg-turbo rather than the
 * TurboJPEG one because it offers every M/8 scale and colour conversion
 * to gray or RGB in the decoder. libjpeg reports errors by longjmp out of
 * an error_exit hook; each call keeps its own jmp_buf. */
#include "jpeg_resize.h"

#include "status.h"

#include <errno.h>
#include <math.h>
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

/* Filter taps for one axis: out pixel i takes in pixels start[i] ..
 * start[i]+count[i]-1 with weights w[i*maxtaps ...]. */
struct taps {
	unsigned *start, *count, maxtaps;
	float *w;
};

static void taps_free(struct taps *t)
{
	free(t->start);
	free(t->count);
	free(t->w);
}

/* extent is the width of the source image in source pixels; it is smaller
 * than in when the decoder's M/8 scaling rounded the pixel count up (the
 * last pixel then covers less than a whole step), and using it keeps the
 * output aligned with the original instead of stretched by up to a pixel. */
static int taps_make(struct taps *t, unsigned in, double extent, unsigned out)
{
	double scale = extent / out, support = scale > 1 ? scale : 1;
	t->maxtaps = (unsigned)ceil(support) * 2 + 2;
	t->start = calloc(out, sizeof(unsigned));
	t->count = calloc(out, sizeof(unsigned));
	t->w = calloc((size_t)out * t->maxtaps, sizeof(float));
	if (!t->start || !t->count || !t->w) {
		taps_free(t);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < out; i++) {
		double center = (i + 0.5) * scale;
		long lo = (long)floor(center - support), hi = (long)ceil(center + support);
		if (lo < 0)
			lo = 0;
		if (hi > (long)in)
			hi = (long)in;
		double sum = 0;
		unsigned n = 0;
		float *w = t->w + (size_t)i * t->maxtaps;
		for (long x = lo; x < hi && n < t->maxtaps; x++, n++) {
			double d = fabs((double)x + 0.5 - center) / support;
			w[n] = d < 1 ? (float)(1 - d) : 0;
			sum += w[n];
		}
		if (sum <= 0) { /* cannot happen for in >= 1, but never divide by 0 */
			w[0] = 1;
			sum = 1;
			n = n ? n : 1;
		}
		for (unsigned k = 0; k < n; k++)
			w[k] = (float)(w[k] / sum);
		t->start[i] = (unsigned)lo;
		t->count[i] = n;
	}
	return 0;
}

static int resize_extent(const uint8_t *src, unsigned sw, unsigned sh, double ew, double eh,
			 unsigned comps, uint8_t *dst, unsigned dw, unsigned dh)
{
	struct taps tx = { 0 }, ty = { 0 };
	float *tmp = malloc((size_t)sh * dw * comps * sizeof(float));
	int rc = -ENOMEM;
	if (!tmp || taps_make(&tx, sw, ew, dw) || taps_make(&ty, sh, eh, dh))
		goto out;
	/* Horizontal pass into floats, then vertical pass with rounding. */
	for (unsigned y = 0; y < sh; y++) {
		const uint8_t *row = src + (size_t)y * sw * comps;
		float *trow = tmp + (size_t)y * dw * comps;
		for (unsigned x = 0; x < dw; x++) {
			const float *w = tx.w + (size_t)x * tx.maxtaps;
			const uint8_t *p = row + (size_t)tx.start[x] * comps;
			for (unsigned c = 0; c < comps; c++) {
				float acc = 0;
				for (unsigned k = 0; k < tx.count[x]; k++)
					acc += w[k] * p[(size_t)k * comps + c];
				trow[(size_t)x * comps + c] = acc;
			}
		}
	}
	size_t rowlen = (size_t)dw * comps;
	for (unsigned y = 0; y < dh; y++) {
		const float *w = ty.w + (size_t)y * ty.maxtaps;
		uint8_t *drow = dst + (size_t)y * rowlen;
		for (size_t j = 0; j < rowlen; j++) {
			float acc = 0;
			const float *col = tmp + (size_t)ty.start[y] * rowlen + j;
			for (unsigned k = 0; k < ty.count[y]; k++)
				acc += w[k] * col[(size_t)k * rowlen];
			long v = lrintf(acc);
			drow[j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
		}
	}
	rc = 0;
out:
	taps_free(&tx);
	taps_free(&ty);
	free(tmp);
	return rc;
}

int jpeg_resize_pixels(const uint8_t *src, unsigned sw, unsigned sh, unsigned comps,
		       uint8_t *dst, unsigned dw, unsigned dh)
{
	return resize_extent(src, sw, sh, sw, sh, comps, dst, dw, dh);
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
	unsigned sshort = d.image_width < d.image_height ? d.image_width : d.image_height;
	if (sshort <= shorter) {
		rc = 1;
		goto out;
	}
	unsigned comps;
	if (d.jpeg_color_space == JCS_GRAYSCALE) {
		d.out_color_space = JCS_GRAYSCALE;
		comps = 1;
	} else if (d.jpeg_color_space == JCS_YCbCr || d.jpeg_color_space == JCS_RGB) {
		d.out_color_space = JCS_RGB;
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
	pix = malloc((size_t)sw * sh * comps);
	if (!pix) {
		rc = status_fail(err, errlen, -ENOMEM, "out of memory for a %ux%u image", sw, sh);
		goto out;
	}
	while (d.output_scanline < sh) {
		JSAMPROW row = pix + (size_t)d.output_scanline * sw * comps;
		jpeg_read_scanlines(&d, &row, 1);
	}
	jpeg_finish_decompress(&d);

	unsigned dw, dh;
	target_size(r->src_width, r->src_height, shorter, &dw, &dh);
	out = malloc((size_t)dw * dh * comps);
	double ew = (double)r->src_width * m / 8, eh = (double)r->src_height * m / 8;
	if (!out || resize_extent(pix, sw, sh, ew, eh, comps, out, dw, dh) != 0) {
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
