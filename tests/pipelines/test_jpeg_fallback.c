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
#include "jpeg_decode.h"
#include "jpeg_fixture.h"

/* j with `extra` bytes (0x12 ...) put before its final EOI marker. */
static uint8_t *with_extra(const uint8_t *j, size_t len, size_t extra, size_t *out_len)
{
	CHECK(len > 2 && j[len - 2] == 0xFF && j[len - 1] == 0xD9);
	uint8_t *b = xmalloc(len + extra);
	memcpy(b, j, len - 2);
	memset(b + len - 2, 0x12, extra);
	memcpy(b + len - 2 + extra, j + len - 2, 2);
	*out_len = len + extra;
	return b;
}

static uint8_t *clean, *two, *nine;
static unsigned long clen;
static size_t tlen, nlen;

/* libjpeg's pixels of the two-byte file (the clean file's); jpeg_huff's
 * refusal of it. */
static uint8_t *verdicts(void)
{
	struct dec d;
	if (setjmp(d.err.jump))
		CHECKF(0, "libjpeg: %s", d.err.msg);
	jpeg_rules_create(&d.ci, &d.err);
	d.huff = jpeg_huff_create();
	CHECK(d.huff);
	const struct how whole = { 1, 0, 0, 0, 0 };
	struct result a, want, b;
	rules_decode(&d, clean, clen, &whole, 0, &a);
	rules_decode(&d, two, tlen, &whole, 0, &want);
	CHECK(a.ok);
	CHECKF(want.ok, "libjpeg refused the two-byte file: %s", want.msg);
	CHECK(!memcmp(a.px, want.px, (size_t)500 * 375 * 4));
	rules_decode(&d, two, tlen, &whole, 1, &b);
	CHECK(!b.ok && b.installed == 1);
	CHECKF(strstr(b.msg, "extraneous bytes"), "jpeg_huff said: %s", b.msg);
	free(a.px);
	jpeg_huff_destroy(d.huff);
	jpeg_destroy_decompress(&d.ci);
	return want.px;
}

static void whole_image(const uint8_t *want)
{
	struct jpeg_decoder *d;
	OK(jpeg_decoder_create(&d, err, sizeof err));
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
	OK(jpeg_decode_rgbx(d, clean, clen, 8, NULL, NULL, NULL, err, sizeof err));
	rc = jpeg_decode_rgbx(d, nine, nlen, 8, NULL, NULL, NULL, err, sizeof err);
	CHECKF(rc == FEEDER_EDECODE && strstr(err, "extraneous bytes"), "nine bytes: %d %s", rc,
	       err);
	CHECK(jpeg_decoder_fallbacks(d) == 1);
	jpeg_decoder_destroy(d);
}

/* whole: crops of the whole 500x375 image (train) or of its whole height
 * (eval), each sample counted once and the nine-byte file refused; else
 * the default crops, counted where they reached the end. Either way the
 * clean file's bytes. */
static void pipeline(int whole)
{
	struct jpeg_worker *w;
	OK(jpeg_worker_create(&w, err, sizeof err));
	uint64_t samples = 0;
	for (int train = 0; train < 2; train++) {
		struct feeder_stream_opts o;
		proto_opts_jpeg(&o, 64, train);
		o.dtype = FEEDER_DTYPE_U8;
		if (whole) {
			o.jpeg.scale_min = o.jpeg.scale_max = 1.0f;
			o.jpeg.ratio_min = o.jpeg.ratio_max = 500.0f / 375.0f;
			o.jpeg.resize_ratio = 1.0f;
			OK(proto_opts_check(&o, err, sizeof err));
		}
		size_t n = jpeg_pipeline_sample_bytes(&o);
		uint8_t *a = xmalloc(n), *b = xmalloc(n);
		for (uint64_t key = 0; key < (whole ? 8 : 16); key++) {
			uint64_t before = jpeg_worker_fallbacks(w);
			RUN(w, &o, clean, clen, key, a);
			CHECK(jpeg_worker_fallbacks(w) == (whole ? samples : before));
			RUN(w, &o, two, tlen, key, b);
			CHECKF(!memcmp(a, b, n),
			       "key %llu train %d: other pixels than the clean file's",
			       (unsigned long long)key, train);
			if (!whole) {
				CHECK(jpeg_worker_fallbacks(w) - before <= 1);
				continue;
			}
			samples++;
			CHECKF(jpeg_worker_fallbacks(w) == samples,
			       "fallbacks %llu after %llu samples",
			       (unsigned long long)jpeg_worker_fallbacks(w),
			       (unsigned long long)samples);
			int rc = jpeg_pipeline_run(w, &o, nine, nlen, key, b, err, sizeof err);
			CHECKF(rc == FEEDER_EDECODE, "nine bytes decoded: %d", rc);
			CHECK(jpeg_worker_fallbacks(w) == samples);
		}
		free(a);
		free(b);
	}
	jpeg_worker_destroy(w);
}

int main(void)
{
	clean = jpeg_synth(500, 375, TJSAMP_420, 88, 3, &clen);
	CHECK(clean);
	two = with_extra(clean, clen, 2, &tlen);
	nine = with_extra(clean, clen, 9, &nlen);
	uint8_t *want = verdicts();
	whole_image(want);
	pipeline(1);
	pipeline(0);
	free(want);
	free(two);
	free(nine);
	tjFree(clean);
	printf("jpeg_fallback: a JPEG only jpeg_huff refuses decodes to libjpeg's pixels, whole "
	       "and in crops that reach its end, each counted once; one libjpeg refuses too stays "
	       "refused\n");
	return 0;
}
