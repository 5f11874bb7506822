/* jpeg_fixture.h — what the jpeg pipeline tests share: one error buffer and
 * the calls that must succeed with it, samples read back in u8 units,
 * synthetic sources of every subsampling, and a libjpeg decode under
 * jpeg_rules.h with or without jpeg_huff. */
#ifndef FEEDER_JPEG_FIXTURE_H
#define FEEDER_JPEG_FIXTURE_H

#include "check.h"
#include "half.h"
#include "jpeg_huff.h"
#include "jpeg_pipeline.h"
#include "jpeg_rules.h"
#include "jpeg_synth.h"
#include "protocol.h"
#include "status.h"

#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[256];

/* Exactly n bytes: ASan sees any access past them. */
static inline void *xmalloc(size_t n)
{
	void *p = malloc(n);
	CHECK(p);
	return p;
}

/* A call ending in (err, sizeof err) that must return 0. */
#define OK(call) CHECKF((call) == 0, "%s", err)
#define RUN(w, o, j, len, key, out) OK(jpeg_pipeline_run(w, o, j, len, key, out, err, sizeof err))
#define REF(w, o, j, len, key, out)                                                                \
	OK(jpeg_pipeline_reference(w, o, j, len, key, out, err, sizeof err))

/* Element i of a sample of dtype in u8 units (floats: [0,1] times 255). */
static inline double sample_at(const void *s, int dtype, size_t i)
{
	if (dtype == FEEDER_DTYPE_U8)
		return ((const uint8_t *)s)[i];
	if (dtype == FEEDER_DTYPE_F16)
		return 255.0 * half_to_float(((const uint16_t *)s)[i]);
	return 255.0 * ((const float *)s)[i];
}

/* Mean |a - b| of n elements, in [0,1] units. */
static inline double sample_mad(const void *a, const void *b, int dtype, size_t n)
{
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += fabs(sample_at(a, dtype, i) - sample_at(b, dtype, i));
	return sum / (n * 255.0);
}

/* A photo-like JPEG as TurboJPEG writes it; noise: random pixels instead
 * (long Huffman codes, 10-bit values). */
struct src {
	const char *name;
	int w, h, subsamp, flags, quality, noise;
};

static inline uint8_t *src_encode(const struct src *s, unsigned seed, unsigned long *len)
{
	int ch = s->subsamp == TJSAMP_GRAY ? 1 : 3;
	size_t n = (size_t)s->w * s->h * ch;
	uint8_t *px = xmalloc(n);
	jpeg_synth_pixels(px, s->w, s->h, ch, seed);
	uint32_t st = seed * 747796405u + 1u;
	for (size_t i = 0; s->noise && i < n; i++) {
		st = st * 1664525u + 1013904223u;
		px[i] = (uint8_t)(st >> 24);
	}
	uint8_t *j = jpeg_synth_compress(px, s->w, s->h, ch, s->subsamp, s->quality, s->flags, len);
	CHECK(j);
	free(px);
	return j;
}

/* libjpeg's decompressor under jpeg_rules.h, and a jpeg_huff to install. */
struct dec {
	struct jpeg_decompress_struct ci;
	struct jpeg_rules_err err;
	struct jpeg_huff *huff;
};

/* How a decode reads the image: IDCT scale 1/scale; with crop, columns
 * from xoff (jpeg_crop_scanline widens to the iMCU) and rows from skip on. */
struct how {
	unsigned scale;
	int crop;
	uint32_t xoff, width, skip;
};

struct result {
	int ok;        /* 1 decoded, 0 refused */
	int installed; /* jpeg_huff_install said 1 */
	char msg[JMSG_LENGTH_MAX];
	uint8_t *px; /* rows of w RGBX pixels; the caller frees it */
	uint32_t w, rows;
};

/* The whole decode, with d->huff installed when huff; every libjpeg call
 * inside the setjmp scope. Fills r (r->px NULL on failure). */
static inline void rules_decode(struct dec *d, const uint8_t *j, size_t len, const struct how *how,
				int huff, struct result *r)
{
	struct jpeg_decompress_struct *ci = &d->ci;
	memset(r, 0, sizeof *r);
	uint8_t *volatile px = NULL;
	if (setjmp(d->err.jump)) {
		jpeg_abort_decompress(ci);
		free(px);
		snprintf(r->msg, sizeof r->msg, "%s", d->err.msg);
		return;
	}
	jpeg_mem_src(ci, j, (unsigned long)len);
	jpeg_read_header(ci, TRUE);
	ci->scale_num = 1;
	ci->scale_denom = how->scale;
	ci->out_color_space = JCS_EXT_RGBX;
	jpeg_start_decompress(ci);
	JDIMENSION xoff = 0, w = ci->output_width, skip = 0;
	if (how->crop) {
		xoff = how->xoff % ci->output_width;
		w = how->width % (ci->output_width - xoff) + 1;
		skip = how->skip % ci->output_height;
		jpeg_crop_scanline(ci, &xoff, &w);
	}
	if (huff)
		r->installed = jpeg_huff_install(ci, d->huff);
	if (skip)
		jpeg_skip_scanlines(ci, skip);
	uint32_t rows = ci->output_height - ci->output_scanline;
	px = xmalloc((size_t)w * 4 * rows + 1);
	while (ci->output_scanline < ci->output_height) {
		JSAMPROW row =
			px + (size_t)(ci->output_scanline - (ci->output_height - rows)) * w * 4;
		CHECK(jpeg_read_scanlines(ci, &row, 1) == 1);
	}
	jpeg_finish_decompress(ci);
	r->ok = 1;
	r->px = px;
	r->w = w;
	r->rows = rows;
}

static inline int same(const struct result *a, const struct result *b)
{
	return a->ok == b->ok && (!a->ok || (a->w == b->w && a->rows == b->rows &&
					     !memcmp(a->px, b->px, (size_t)a->w * 4 * a->rows)));
}

#endif
