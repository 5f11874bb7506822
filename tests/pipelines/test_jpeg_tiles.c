/* test_jpeg_tiles.c — restart-interval tiling (media/jpeg_tiles.h) and the
 * jpeg pipeline's sub-image path.
 *
 *   1. Lossless: photo-like JPEGs (jpeg_synth.h) of every chroma
 *      subsampling TurboJPEG writes (4:4:4, 4:2:2, 4:2:0, 4:4:0, 4:1:1,
 *      grey), baseline and progressive, even and odd sizes, transcoded with
 *      fixed-MCU and byte policies: the tiled JPEG decodes to the source's
 *      pixels bit for bit and parses as a grid of the interval the policy
 *      names. A JPEG compressed straight to tiles (jpeg_tiles_encode)
 *      decodes like the same pixels compressed untiled.
 *   2. Cut: random rectangles of the grid, rectangles touching each border
 *      and single intervals: the sub-image decodes, and its pixels equal
 *      the whole image's except within one MCU of an edge that was cut.
 *   3. Pipeline: jpeg_pipeline_run on the tiled JPEG (which decodes the
 *      crop's sub-image) against jpeg_pipeline_reference (whole decode, same
 *      crop and resize): mean |diff| <= 2/255, train and eval, u8/f16/f32,
 *      NCHW/NHWC, many keys (crops at every border, IDCT scales 1..8); and
 *      against jpeg_pipeline_run on the untiled source, which it should
 *      equal (max difference printed).
 *   4. Damaged tiling: a restart marker renumbered, one removed, one added,
 *      the stream cut short: FEEDER_EDECODE from the pipeline, never a
 *      crash. */
#include "jpeg_decode.h"
#include "jpeg_fixture.h"
#include "jpeg_tiles.h"

static const struct src sources[] = {
	{ "420 500x375", 500, 375, TJSAMP_420, 0, 88, 0 },
	{ "420 odd 333x251", 333, 251, TJSAMP_420, 0, 88, 0 },
	{ "444 320x240", 320, 240, TJSAMP_444, 0, 88, 0 },
	{ "422 301x199", 301, 199, TJSAMP_422, 0, 88, 0 },
	{ "440 256x270", 256, 270, TJSAMP_440, 0, 88, 0 },
	{ "411 403x117", 403, 117, TJSAMP_411, 0, 88, 0 },
	{ "grey 287x311", 287, 311, TJSAMP_GRAY, 0, 88, 0 },
	{ "420 progressive 480x360", 480, 360, TJSAMP_420, TJFLAG_PROGRESSIVE, 88, 0 },
	{ "444 progressive odd 203x157", 203, 157, TJSAMP_444, TJFLAG_PROGRESSIVE, 88, 0 },
	{ "420 small 40x24", 40, 24, TJSAMP_420, 0, 88, 0 },
};
#define NSRC (sizeof sources / sizeof sources[0])

static struct jpeg_decoder *dec;

static uint8_t *decode(const uint8_t *j, size_t len, uint32_t *w, uint32_t *h)
{
	uint8_t *px;
	OK(jpeg_decode_rgbx(dec, j, len, 8, &px, w, h, err, sizeof err));
	return px;
}

/* 1 if the RGB of pixel rows/cols differ anywhere */
static size_t differing(const uint8_t *a, uint32_t aw, uint32_t ax, uint32_t ay, const uint8_t *b,
			uint32_t bw, uint32_t bx, uint32_t by, uint32_t w, uint32_t h)
{
	size_t n = 0;
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			n += memcmp(a + 4 * ((size_t)(y + ay) * aw + x + ax),
				    b + 4 * ((size_t)(y + by) * bw + x + bx), 3) != 0;
	return n;
}

static unsigned lossless(void)
{
	struct jpeg_tiler *t;
	OK(jpeg_tiler_create(&t, err, sizeof err));
	const struct jpeg_tiles_policy pols[] = {
		{ 1, 0 }, { 3, 0 }, { 0, JPEG_TILES_BYTES }, { 0, 64 }
	};
	unsigned checked = 0;
	for (size_t i = 0; i < NSRC; i++) {
		unsigned long len;
		uint8_t *j = src_encode(&sources[i], (unsigned)i + 1, &len);
		uint32_t w0, h0;
		uint8_t *px0 = decode(j, len, &w0, &h0);
		for (size_t k = 0; k < sizeof pols / sizeof pols[0]; k++) {
			struct jpeg_tiles_result r;
			OK(jpeg_tiles_transcode(t, j, len, &pols[k], &r, err, sizeof err));
			struct jpeg_tiles ti;
			OK(jpeg_tiles_parse(r.data, r.len, &ti, err, sizeof err));
			CHECKF(ti.grid && ti.restart == r.restart && r.restart >= 1 &&
				       ti.mcus_x % r.restart == 0,
			       "%s: not a grid (restart %u, %u MCUs a row)", sources[i].name,
			       ti.restart, ti.mcus_x);
			if (pols[k].mcus)
				CHECK(r.restart == jpeg_tiles_choose(ti.mcus_x, pols[k].mcus));
			uint32_t w1, h1;
			uint8_t *px1 = decode(r.data, r.len, &w1, &h1);
			CHECKF(w1 == w0 && h1 == h0 &&
				       differing(px0, w0, 0, 0, px1, w1, 0, 0, w0, h0) == 0,
			       "%s: transcoded pixels differ", sources[i].name);
			free(px1);
			free(r.data);
			checked++;
		}
		free(px0);
		tjFree(j);
	}
	/* Straight to tiles: the same pixels as an untiled compression. */
	int w = 301, h = 203;
	uint8_t *px = xmalloc((size_t)w * h * 3);
	jpeg_synth_pixels(px, w, h, 3, 9);
	struct jpeg_tiles_result a, b;
	const struct jpeg_tiles_policy none = { 0, 0 }, bytes = { 0, JPEG_TILES_BYTES };
	OK(jpeg_tiles_encode(t, px, (size_t)w * 3, w, h, 3, 85, &none, &a, err, sizeof err));
	OK(jpeg_tiles_encode(t, px, (size_t)w * 3, w, h, 3, 85, &bytes, &b, err, sizeof err));
	struct jpeg_tiles ta, tb;
	CHECK(jpeg_tiles_parse(a.data, a.len, &ta, err, sizeof err) == 0 && !ta.grid &&
	      ta.restart == 0);
	CHECK(jpeg_tiles_parse(b.data, b.len, &tb, err, sizeof err) == 0 && tb.grid);
	uint32_t aw, ah, bw, bh;
	uint8_t *pa = decode(a.data, a.len, &aw, &ah), *pb = decode(b.data, b.len, &bw, &bh);
	CHECK(aw == bw && ah == bh && differing(pa, aw, 0, 0, pb, bw, 0, 0, aw, ah) == 0);
	free(pa);
	free(pb);
	free(a.data);
	free(b.data);
	free(px);
	jpeg_tiler_destroy(t);
	return checked;
}

/* 2. Cut rectangles out of a tiled image and compare with its whole decode. */
static unsigned cuts(const uint8_t *j, size_t len, const char *name, uint32_t *rng)
{
	struct jpeg_tiles t;
	CHECKF(jpeg_tiles_parse(j, len, &t, err, sizeof err) == 0 && t.grid, "%s", name);
	uint32_t W, H;
	uint8_t *whole = decode(j, len, &W, &H);
	struct jpeg_tiles_buf sub = { 0 };
	unsigned n = 0;
	for (int k = 0; k < 60; k++) {
		uint32_t c0, c1, r0, r1;
		if (k < 4) { /* the corners, one interval each */
			c0 = k & 1 ? t.cols - 1 : 0;
			r0 = k & 2 ? t.mcus_y - 1 : 0;
			c1 = c0 + 1;
			r1 = r0 + 1;
		} else {
			*rng = *rng * 1664525u + 1013904223u;
			c0 = (*rng >> 8) % t.cols;
			*rng = *rng * 1664525u + 1013904223u;
			c1 = c0 + 1 + (*rng >> 8) % (t.cols - c0);
			*rng = *rng * 1664525u + 1013904223u;
			r0 = (*rng >> 8) % t.mcus_y;
			*rng = *rng * 1664525u + 1013904223u;
			r1 = r0 + 1 + (*rng >> 8) % (t.mcus_y - r0);
		}
		if (c0 == 0 && r0 == 0 && c1 == t.cols && r1 == t.mcus_y)
			continue;
		CHECKF(jpeg_tiles_cut(&t, j, len, c0, c1, r0, r1, &sub, err, sizeof err) == 0,
		       "%s: %s", name, err);
		uint32_t sw, sh;
		uint8_t *px = decode(sub.data, sub.len, &sw, &sh);
		uint32_t ox = c0 * t.restart * t.mcu_w, oy = r0 * t.mcu_h;
		CHECK(ox + sw <= W && oy + sh <= H);
		CHECK(sw == (c1 == t.cols ? W - ox : (c1 - c0) * t.restart * t.mcu_w));
		CHECK(sh == (r1 == t.mcus_y ? H - oy : (r1 - r0) * t.mcu_h));
		/* all but one MCU along each cut edge */
		uint32_t l = c0 ? t.mcu_w : 0, top = r0 ? t.mcu_h : 0;
		uint32_t rgt = c1 < t.cols ? t.mcu_w : 0, bot = r1 < t.mcus_y ? t.mcu_h : 0;
		if (sw > l + rgt && sh > top + bot) {
			size_t d = differing(px, sw, l, top, whole, W, ox + l, oy + top,
					     sw - l - rgt, sh - top - bot);
			CHECKF(d == 0, "%s: %zu pixels of intervals %u..%u x rows %u..%u differ",
			       name, d, c0, c1, r0, r1);
		}
		free(px);
		n++;
	}
	free(sub.data);
	free(whole);
	return n;
}

/* 3. The pipeline on a tiled JPEG against its reference and the untiled
 * source. Returns the worst MAD against the reference. */
static double pipeline(const uint8_t *tiled, size_t tlen, const uint8_t *plain, size_t plen,
		       const char *name, struct jpeg_worker *w, double *max_vs_plain)
{
	static const int dtypes[] = { FEEDER_DTYPE_U8, FEEDER_DTYPE_F32, FEEDER_DTYPE_F16 };
	double worst = 0;
	size_t n = 3 * 96 * 112;
	uint8_t *a = xmalloc(n * 4), *b = xmalloc(n * 4), *c = xmalloc(n * 4);
	for (int train = 0; train <= 1; train++)
		for (int dt = 0; dt < 3; dt++)
			for (int key = 0; key < 40; key++) {
				struct feeder_stream_opts o;
				/* small outputs reach 1/8 */
				proto_opts_jpeg(&o, key % 3 ? 112 : 40, train);
				o.jpeg.height = key % 3 ? 96 : 32;
				o.dtype = dtypes[dt];
				o.layout = key % 2 ? FEEDER_LAYOUT_NHWC : FEEDER_LAYOUT_NCHW;
				/* floats in [0,1] units (u8 is not normalized) */
				for (int ch = 0; ch < 3; ch++) {
					o.jpeg.mean[ch] = 0;
					o.jpeg.std[ch] = 1;
				}
				uint64_t k = (uint64_t)key * 7919 + 3;
				RUN(w, &o, tiled, tlen, k, a);
				REF(w, &o, tiled, tlen, k, b);
				RUN(w, &o, plain, plen, k, c);
				size_t m = (size_t)3 * o.jpeg.width * o.jpeg.height;
				double mad = sample_mad(a, b, o.dtype, m);
				for (size_t i = 0; i < m; i++)
					*max_vs_plain =
						fmax(*max_vs_plain, fabs(sample_at(a, o.dtype, i) -
									 sample_at(c, o.dtype, i)));
				CHECKF(mad <= 2.0 / 255,
				       "%s: key %d train %d dtype %d: MAD %.4f vs reference", name,
				       key, train, dt, mad);
				worst = mad > worst ? mad : worst;
			}
	free(a);
	free(b);
	free(c);
	return worst;
}

/* 4. Damaged tiling. */
static void damaged(const uint8_t *j, size_t len, struct jpeg_worker *w)
{
	struct jpeg_tiles t;
	OK(jpeg_tiles_parse(j, len, &t, err, sizeof err));
	CHECK(t.grid);
	/* the first RST marker in the stream */
	size_t at = 0;
	for (size_t i = t.entropy; i + 1 < len; i++)
		if (j[i] == 0xFF && j[i + 1] == 0xD0) {
			at = i;
			break;
		}
	CHECK(at);
	uint8_t *bad = xmalloc(len + 2);
	struct feeder_stream_opts o;
	proto_opts_jpeg(&o, 64, 0);
	o.dtype = FEEDER_DTYPE_U8;
	uint8_t out[3 * 64 * 64];
	const char *what[] = { "renumbered", "removed", "added", "cut short" };
	for (int k = 0; k < 4; k++) {
		size_t n = len;
		memcpy(bad, j, len);
		if (k == 0) {
			bad[at + 1] = 0xD3;
		} else if (k == 1) {
			memmove(bad + at, bad + at + 2, len - at - 2);
			n = len - 2;
		} else if (k == 2) {
			memmove(bad + at + 2, bad + at, len - at);
			n = len + 2;
		} else {
			n = at + (len - at) / 3;
		}
		for (int train = 0; train <= 1; train++)
			for (uint64_t key = 0; key < 20; key++) {
				o.jpeg.train = (uint32_t)train;
				int rc =
					jpeg_pipeline_run(w, &o, bad, n, key, out, err, sizeof err);
				CHECKF(rc == FEEDER_EDECODE, "marker %s: key %llu gave %d (%s)",
				       what[k], (unsigned long long)key, rc, err);
			}
		printf("damaged tiling (marker %s): FEEDER_EDECODE: %s\n", what[k], err);
	}
	free(bad);
}

int main(void)
{
	OK(jpeg_decoder_create(&dec, err, sizeof err));
	unsigned n = lossless();
	printf("lossless: %u transcodes (10 sources x 4 policies) decode to the source's pixels; "
	       "straight-to-tiles encode equals untiled encode\n",
	       n);

	struct jpeg_tiler *t;
	struct jpeg_worker *w;
	OK(jpeg_tiler_create(&t, err, sizeof err));
	OK(jpeg_worker_create(&w, err, sizeof err));
	uint32_t rng = 5;
	unsigned ncut = 0;
	double worst = 0, vs_plain = 0;
	for (size_t i = 0; i < NSRC; i++) {
		unsigned long len;
		uint8_t *j = src_encode(&sources[i], (unsigned)i + 11, &len);
		const struct jpeg_tiles_policy p = { 2, 0 };
		struct jpeg_tiles_result r;
		OK(jpeg_tiles_transcode(t, j, len, &p, &r, err, sizeof err));
		ncut += cuts(r.data, r.len, sources[i].name, &rng);
		uint64_t cut0 = jpeg_worker_cuts(w);
		double vp = 0, wm = pipeline(r.data, r.len, j, len, sources[i].name, w, &vp);
		uint64_t cut = jpeg_worker_cuts(w) - cut0;
		/* 240 samples of the tiled JPEG through the fast path (the
		 * reference and the untiled source never cut); a 40x24 image
		 * is one interval wide and two MCUs high, so a crop and its
		 * margin always need all of it */
		CHECKF((cut > 0 || sources[i].w < 64) && cut <= 240, "%s: %llu samples cut",
		       sources[i].name, (unsigned long long)cut);
		printf("%-28s restart %u MCUs: %3llu of 240 samples from a sub-image; vs reference "
		       "worst MAD %.4f; vs the untiled source max |diff| %.2f/255\n",
		       sources[i].name, r.restart, (unsigned long long)cut, wm, vp);
		worst = wm > worst ? wm : worst;
		vs_plain = vp > vs_plain ? vp : vs_plain;
		if (i == 0)
			damaged(r.data, r.len, w);
		free(r.data);
		tjFree(j);
	}
	printf("cut: %u sub-images equal the whole decode away from their cut edges\n", ncut);
	printf("pipeline on tiled JPEGs: worst MAD vs reference %.4f (bound %.4f); max |diff| vs "
	       "the untiled source %.2f/255\n",
	       worst, 2.0 / 255, vs_plain);
	jpeg_worker_destroy(w);
	jpeg_tiler_destroy(t);
	jpeg_decoder_destroy(dec);
	return 0;
}
