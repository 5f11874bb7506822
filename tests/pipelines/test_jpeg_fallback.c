/* test_jpeg_fallback.c — where media/jpeg_huff.h alone refuses a JPEG that
 * libjpeg's own decoder takes without a warning, feederd's pipeline and
 * packer's whole-image decoder (verify --decode, --resize-shorter) both
 * fall back to libjpeg's decoder (jpeg_huff_or_libjpeg) and count it.
 *
 * The JPEG: a clean baseline one with two bytes put before its EOI marker.
 * libjpeg has read them ahead into its bit buffer when the scan ends and
 * drops them without a word (djpeg is silent); jpeg_huff finds them left
 * over and refuses the scan ("extraneous bytes"). With nine bytes libjpeg
 * warns too: that refusal stands, and nothing is counted.
 *
 *   1. The verdicts as they are: libjpeg decodes the two-byte file, to the
 *      clean file's pixels; jpeg_huff refuses it.
 *   2. jpeg_decode_rgbx delivers libjpeg's pixels, fallbacks = 1; a clean
 *      file adds nothing; the nine-byte file is refused, nothing added.
 *   3. jpeg_pipeline_run, train and eval, with crops that reach the last
 *      row (where the bytes are met: the whole image in train mode, the
 *      whole height in eval mode), delivers the bytes it delivers for the
 *      clean file, jpeg_worker_fallbacks = 1 a sample; the nine-byte file
 *      is refused and not counted. With the default crops the same bytes
 *      too, counted only where a crop reached the end. */
#include "check.h"
#include "jpeg_decode.h"
#include "jpeg_huff.h"
#include "jpeg_pipeline.h"
#include "jpeg_rules.h"
#include "jpeg_synth.h"
#include "protocol.h"
#include "status.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* j with `extra` bytes (0x12 ...) put before its final EOI marker. */
static uint8_t *with_extra(const uint8_t *j, size_t len, size_t extra, size_t *out_len)
{
	CHECK(len > 2 && j[len - 2] == 0xFF && j[len - 1] == 0xD9);
	uint8_t *b = malloc(len + extra);
	CHECK(b);
	memcpy(b, j, len - 2);
	memset(b + len - 2, 0x12, extra);
	memcpy(b + len - 2 + extra, j + len - 2, 2);
	*out_len = len + extra;
	return b;
}

struct dec {
	struct jpeg_decompress_struct ci;
	struct jpeg_rules_err err;
};

/* A whole decode under jpeg_rules.h, with h (or libjpeg's decoder for
 * NULL): 1 and the RGBX pixels in *px (malloc'd), or 0 with the reason in
 * d->err.msg. */
static int decode_with(struct dec *d, const uint8_t *j, size_t len, struct jpeg_huff *h,
		       uint8_t **px)
{
	struct jpeg_decompress_struct *ci = &d->ci;
	uint8_t *volatile buf = NULL;
	*px = NULL;
	if (setjmp(d->err.jump)) {
		jpeg_abort_decompress(ci);
		free(buf);
		return 0;
	}
	jpeg_mem_src(ci, j, (unsigned long)len);
	jpeg_read_header(ci, TRUE);
	ci->dct_method = JDCT_ISLOW;
	ci->out_color_space = JCS_EXT_RGBX;
	jpeg_start_decompress(ci);
	if (h)
		CHECK(jpeg_huff_install(ci, h) == 1);
	size_t stride = (size_t)ci->output_width * 4;
	buf = malloc(stride * ci->output_height);
	CHECK(buf);
	while (ci->output_scanline < ci->output_height) {
		JSAMPROW row = buf + ci->output_scanline * stride;
		CHECK(jpeg_read_scanlines(ci, &row, 1) == 1);
	}
	jpeg_finish_decompress(ci);
	*px = buf;
	return 1;
}

static void verdicts(const uint8_t *clean, size_t clen, const uint8_t *two, size_t tlen,
		     uint8_t **want)
{
	struct dec d;
	if (setjmp(d.err.jump))
		CHECKF(0, "libjpeg: %s", d.err.msg);
	jpeg_rules_create(&d.ci, &d.err);
	struct jpeg_huff *h = jpeg_huff_create();
	CHECK(h);
	uint8_t *a, *b;
	CHECK(decode_with(&d, clean, clen, NULL, &a));
	CHECKF(decode_with(&d, two, tlen, NULL, want), "libjpeg refused the two-byte file: %s",
	       d.err.msg);
	CHECK(!memcmp(a, *want, (size_t)500 * 375 * 4));
	CHECK(!decode_with(&d, two, tlen, h, &b));
	CHECKF(strstr(d.err.msg, "extraneous bytes"), "jpeg_huff said: %s", d.err.msg);
	free(a);
	jpeg_huff_destroy(h);
	jpeg_destroy_decompress(&d.ci);
}

static void whole_image(const uint8_t *clean, size_t clen, const uint8_t *two, size_t tlen,
			const uint8_t *nine, size_t nlen, const uint8_t *want)
{
	struct jpeg_decoder *d;
	char err[256];
	CHECK(jpeg_decoder_create(&d, err, sizeof err) == 0);
	uint8_t *px;
	uint32_t w, h;
	int rc = jpeg_decode_rgbx(d, two, tlen, 8, &px, &w, &h, err, sizeof err);
	CHECKF(rc == 0, "jpeg_decode_rgbx refused the two-byte file: %s", err);
	CHECK(w == 500 && h == 375);
	/* RGBX: the 4th byte is unspecified */
	for (size_t i = 0; i < (size_t)w * h; i++)
		CHECKF(!memcmp(px + 4 * i, want + 4 * i, 3), "pixel %zu differs from libjpeg's", i);
	free(px);
	CHECKF(jpeg_decoder_fallbacks(d) == 1, "fallbacks %llu",
	       (unsigned long long)jpeg_decoder_fallbacks(d));
	CHECK(jpeg_decode_rgbx(d, clean, clen, 8, NULL, NULL, NULL, err, sizeof err) == 0);
	rc = jpeg_decode_rgbx(d, nine, nlen, 8, NULL, NULL, NULL, err, sizeof err);
	CHECKF(rc == FEEDER_EDECODE && strstr(err, "extraneous bytes"), "nine bytes: %d %s", rc,
	       err);
	CHECK(jpeg_decoder_fallbacks(d) == 1);
	jpeg_decoder_destroy(d);
}

/* Crops of the whole 500x375 image (train), or of its whole height
 * (eval), when whole; else the defaults. */
static void crop_opts(struct feeder_stream_opts *o, int train, int whole)
{
	proto_opts_jpeg(o, 64, train);
	o->dtype = FEEDER_DTYPE_U8;
	if (!whole)
		return;
	o->jpeg.scale_min = o->jpeg.scale_max = 1.0f;
	o->jpeg.ratio_min = o->jpeg.ratio_max = 500.0f / 375.0f;
	o->jpeg.resize_ratio = 1.0f;
}

static void pipeline(const uint8_t *clean, size_t clen, const uint8_t *two, size_t tlen,
		     const uint8_t *nine, size_t nlen)
{
	char err[256];
	struct jpeg_worker *w;
	CHECK(jpeg_worker_create(&w, err, sizeof err) == 0);
	uint64_t samples = 0;
	for (int train = 0; train < 2; train++) {
		struct feeder_stream_opts o;
		crop_opts(&o, train, 1);
		CHECKF(proto_opts_check(&o, err, sizeof err) == 0, "%s", err);
		size_t n = jpeg_pipeline_sample_bytes(&o);
		uint8_t *a = malloc(n), *b = malloc(n);
		CHECK(a && b);
		for (uint64_t key = 0; key < 8; key++) {
			CHECK(jpeg_pipeline_run(w, &o, clean, clen, key, a, err, sizeof err) == 0);
			CHECK(jpeg_worker_fallbacks(w) == samples);
			int rc = jpeg_pipeline_run(w, &o, two, tlen, key, b, err, sizeof err);
			CHECKF(rc == 0, "key %llu train %d: %s", (unsigned long long)key, train,
			       err);
			CHECKF(!memcmp(a, b, n),
			       "key %llu train %d: other pixels than the clean file's",
			       (unsigned long long)key, train);
			samples++;
			CHECKF(jpeg_worker_fallbacks(w) == samples,
			       "fallbacks %llu after %llu samples",
			       (unsigned long long)jpeg_worker_fallbacks(w),
			       (unsigned long long)samples);
			rc = jpeg_pipeline_run(w, &o, nine, nlen, key, b, err, sizeof err);
			CHECKF(rc == FEEDER_EDECODE, "nine bytes decoded: %d", rc);
			CHECK(jpeg_worker_fallbacks(w) == samples);
		}
		free(a);
		free(b);
	}
	jpeg_worker_destroy(w);
}

static void default_crops(const uint8_t *clean, size_t clen, const uint8_t *two, size_t tlen)
{
	char err[256];
	struct jpeg_worker *w;
	CHECK(jpeg_worker_create(&w, err, sizeof err) == 0);
	for (int train = 0; train < 2; train++) {
		struct feeder_stream_opts o;
		crop_opts(&o, train, 0);
		size_t n = jpeg_pipeline_sample_bytes(&o);
		uint8_t *a = malloc(n), *b = malloc(n);
		CHECK(a && b);
		for (uint64_t key = 0; key < 16; key++) {
			uint64_t before = jpeg_worker_fallbacks(w);
			CHECK(jpeg_pipeline_run(w, &o, clean, clen, key, a, err, sizeof err) == 0);
			CHECKF(jpeg_pipeline_run(w, &o, two, tlen, key, b, err, sizeof err) == 0,
			       "%s", err);
			CHECKF(!memcmp(a, b, n), "default crop, key %llu train %d: other pixels",
			       (unsigned long long)key, train);
			CHECK(jpeg_worker_fallbacks(w) - before <= 1);
		}
		free(a);
		free(b);
	}
	jpeg_worker_destroy(w);
}

int main(void)
{
	unsigned long clen;
	uint8_t *clean = jpeg_synth(500, 375, TJSAMP_420, 88, 3, &clen);
	CHECK(clean);
	size_t tlen, nlen;
	uint8_t *two = with_extra(clean, clen, 2, &tlen), *nine = with_extra(clean, clen, 9, &nlen);
	uint8_t *want;
	verdicts(clean, clen, two, tlen, &want);
	whole_image(clean, clen, two, tlen, nine, nlen, want);
	pipeline(clean, clen, two, tlen, nine, nlen);
	default_crops(clean, clen, two, tlen);
	free(want);
	free(two);
	free(nine);
	tjFree(clean);
	printf("jpeg_fallback: a JPEG only jpeg_huff refuses decodes to libjpeg's pixels, whole "
	       "and in crops that reach its end, each counted once; one libjpeg refuses too stays "
	       "refused\n");
	return 0;
}
