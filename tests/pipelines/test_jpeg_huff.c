/* test_jpeg_huff.c — media/jpeg_huff.h against libjpeg-turbo's own Huffman
 * decoder.
 *
 *   1. Same pixels: photo-like JPEGs (jpeg_synth.h) of every chroma
 *      subsampling TurboJPEG writes, odd and tiny sizes, and noise at
 *      quality 100 (long codes and 10-bit values, the decoder's slow
 *      lookups), each as TurboJPEG wrote it (standard tables, no restart
 *      markers) and tiled by restart intervals (optimised tables, packer's
 *      transcode): decoded by libjpeg with and without jpeg_huff at IDCT
 *      scales 1/1 to 1/8 (1/8 decodes no AC coefficient), whole and
 *      through jpeg_crop_scanline + jpeg_skip_scanlines: every row equal,
 *      byte for byte. Progressive JPEGs are left to libjpeg.
 *   2. Damaged data: thousands of random byte flips, cuts, insertions and
 *      deletions in the entropy-coded data, decoded both ways under
 *      jpeg_rules.h: whatever jpeg_huff decodes, libjpeg decodes to the
 *      same pixels; whatever libjpeg refuses, jpeg_huff refuses. Where
 *      libjpeg decodes and jpeg_huff refuses, the reason must be one that
 *      libjpeg checks on some paths only (counted): bytes left over before
 *      a marker (where it has not read ahead), an invalid Huffman code
 *      (its fast path, taken without restart markers, decodes one as 0),
 *      a truncated scan (only where it reads to the end).
 *      Also JPEGs libjpeg compressed with restart intervals of 7 MCUs (the
 *      last one short), 50 (past what jpeg_huff decodes two at a time) and
 *      1.
 *   3. The pipeline: jpeg_pipeline_run with jpeg_huff (the default) and
 *      without writes identical samples, train and eval, tiled and not. */
#include "jpeg_fixture.h"
#include "jpeg_tiles.h"

static const struct src sources[] = {
	{ "420 500x375", 500, 375, TJSAMP_420, 0, 88, 0 },
	{ "420 odd 333x251", 333, 251, TJSAMP_420, 0, 75, 0 },
	{ "444 320x240", 320, 240, TJSAMP_444, 0, 95, 0 },
	{ "422 301x199", 301, 199, TJSAMP_422, 0, 88, 0 },
	{ "440 256x270", 256, 270, TJSAMP_440, 0, 88, 0 },
	{ "411 403x117", 403, 117, TJSAMP_411, 0, 88, 0 },
	{ "grey 287x311", 287, 311, TJSAMP_GRAY, 0, 88, 0 },
	{ "420 tiny 9x7", 9, 7, TJSAMP_420, 0, 88, 0 },
	{ "444 one pixel", 1, 1, TJSAMP_444, 0, 88, 0 },
	{ "noise 444 q100 200x150", 200, 150, TJSAMP_444, 0, 100, 1 },
	{ "noise 420 q100 257x161", 257, 161, TJSAMP_420, 0, 100, 1 },
	{ "noise grey q100 130x90", 130, 90, TJSAMP_GRAY, 0, 100, 1 },
	{ "420 progressive 240x180", 240, 180, TJSAMP_420, TJFLAG_PROGRESSIVE, 88, 0 },
};
#define NSRC (sizeof sources / sizeof sources[0])

/* The same photo-like pixels compressed by libjpeg with restart_interval
 * MCUs an interval (which need not divide the MCU count, unlike packer's
 * tiles): a short last interval, and intervals too long to pair. */
static uint8_t *encode_restart(int w, int h, unsigned restart, unsigned seed, unsigned long *len)
{
	uint8_t *px = xmalloc((size_t)w * h * 3);
	jpeg_synth_pixels(px, w, h, 3, seed);
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr e;
	c.err = jpeg_std_error(&e);
	jpeg_create_compress(&c);
	unsigned char *out = NULL;
	*len = 0;
	jpeg_mem_dest(&c, &out, len);
	c.image_width = (JDIMENSION)w;
	c.image_height = (JDIMENSION)h;
	c.input_components = 3;
	c.in_color_space = JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, 90, TRUE);
	c.restart_interval = restart;
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		JSAMPROW row = px + (size_t)c.next_scanline * w * 3;
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	free(px);
	return out; /* jpeg_mem_dest's malloc */
}

static uint32_t rng_state = 12345;

static uint32_t rnd(void)
{
	rng_state = rng_state * 1664525u + 1013904223u;
	return rng_state >> 8;
}

static unsigned same_pixels(struct dec *d, const uint8_t *j, size_t len, const char *name,
			    int progressive)
{
	static const unsigned scales[] = { 1, 2, 4, 8 };
	unsigned n = 0;
	for (size_t s = 0; s < 4; s++)
		for (int crop = 0; crop < 4; crop++) {
			struct how how = { scales[s], crop > 0, rnd(), rnd(), rnd() };
			struct result a, b;
			rules_decode(d, j, len, &how, 0, &a);
			rules_decode(d, j, len, &how, 1, &b);
			CHECKF(a.ok, "%s: libjpeg refused it: %s", name, a.msg);
			CHECKF(b.installed == !progressive, "%s: installed %d", name, b.installed);
			CHECKF(same(&a, &b), "%s at 1/%u (crop %d): pixels differ (%s)", name,
			       scales[s], crop, b.ok ? "decoded" : b.msg);
			free(a.px);
			free(b.px);
			n++;
		}
	return n;
}

/* One random kind of damage to the entropy-coded data of j. */
static uint8_t *damage(const uint8_t *j, size_t len, size_t *out_len)
{
	struct jpeg_tiles t; /* its entropy-coded data from t.entropy on */
	OK(jpeg_tiles_parse(j, len, &t, err, sizeof err));
	size_t s0 = t.entropy, span = len - 2 - s0; /* keep EOI */
	uint8_t *b = xmalloc(len + 1);
	size_t at = s0 + rnd() % span;
	switch (rnd() % 5) {
	case 0: /* flip bits of a byte */
	case 1:
		memcpy(b, j, len);
		b[at] ^= (uint8_t)(1 + rnd() % 255);
		*out_len = len;
		break;
	case 2: /* cut short */
		memcpy(b, j, at);
		*out_len = at;
		break;
	case 3: /* a byte more */
		memcpy(b, j, at);
		b[at] = (uint8_t)(rnd() % 3 == 0 ? 0xFF : rnd());
		memcpy(b + at + 1, j + at, len - at);
		*out_len = len + 1;
		break;
	default: /* a byte less */
		memcpy(b, j, at);
		memcpy(b + at, j + at + 1, len - at - 1);
		*out_len = len - 1;
		break;
	}
	return b;
}

struct totals {
	unsigned compared, pipelines, tried, both_ok, both_refused, stricter;
};

static void damaged(struct dec *d, const uint8_t *j, size_t len, const char *name, unsigned n,
		    struct totals *c)
{
	for (unsigned i = 0; i < n; i++) {
		size_t blen;
		uint8_t *b = damage(j, len, &blen);
		struct how how = { 1, 0, 0, 0, 0 };
		struct result a, r;
		rules_decode(d, b, blen, &how, 0, &a);
		rules_decode(d, b, blen, &how, 1, &r);
		c->tried++;
		CHECKF(a.ok || !r.ok, "%s damage %u: jpeg_huff decoded what libjpeg refused (%s)",
		       name, i, a.msg);
		if (a.ok && !r.ok) {
			CHECKF(strstr(r.msg, "extraneous bytes") ||
				       strstr(r.msg, "bad Huffman code") ||
				       strstr(r.msg, "Premature end of JPEG file"),
			       "%s damage %u: libjpeg decoded it, jpeg_huff said %s", name, i,
			       r.msg);
			c->stricter++;
		} else if (a.ok) {
			CHECKF(same(&a, &r), "%s damage %u: jpeg_huff decoded other pixels", name,
			       i);
			c->both_ok++;
		} else {
			c->both_refused++;
		}
		free(a.px);
		free(r.px);
		free(b);
	}
}

static void pipeline_equal(const uint8_t *j, size_t len, const char *name)
{
	struct jpeg_worker *w;
	OK(jpeg_worker_create(&w, err, sizeof err));
	for (int train = 0; train < 2; train++) {
		struct feeder_stream_opts o;
		proto_opts_jpeg(&o, 64, train);
		o.dtype = FEEDER_DTYPE_U8;
		size_t n = jpeg_pipeline_sample_bytes(&o);
		uint8_t *a = xmalloc(n), *b = xmalloc(n);
		for (uint64_t key = 0; key < 24; key++) {
			jpeg_worker_set_huff(w, 0);
			RUN(w, &o, j, len, key, a);
			jpeg_worker_set_huff(w, 1);
			RUN(w, &o, j, len, key, b);
			CHECKF(!memcmp(a, b, n), "%s: pipeline output differs (key %llu, train %d)",
			       name, (unsigned long long)key, train);
		}
		free(a);
		free(b);
	}
	jpeg_worker_destroy(w);
}

/* Pixels, damage and (with pipe) the pipeline for one JPEG; a progressive
 * one is left to libjpeg: its pixels only. */
static void check_jpeg(struct dec *d, const uint8_t *j, size_t len, const char *name, int prog,
		       int pipe, struct totals *t)
{
	t->compared += same_pixels(d, j, len, name, prog);
	if (prog)
		return;
	damaged(d, j, len, name, 150, t);
	if (pipe) {
		pipeline_equal(j, len, name);
		t->pipelines++;
	}
}

int main(void)
{
	struct dec d;
	if (setjmp(d.err.jump))
		CHECKF(0, "libjpeg: %s", d.err.msg);
	jpeg_rules_create(&d.ci, &d.err);
	d.huff = jpeg_huff_create();
	CHECK(d.huff);
	struct jpeg_tiler *t;
	OK(jpeg_tiler_create(&t, err, sizeof err));
	const struct jpeg_tiles_policy pols[] = { { 1, 0 }, { 0, JPEG_TILES_BYTES } };
	struct totals n = { 0 };
	for (size_t i = 0; i < NSRC; i++) {
		const struct src *s = &sources[i];
		unsigned long len;
		uint8_t *j = src_encode(s, (unsigned)i + 7, &len);
		check_jpeg(&d, j, len, s->name, (s->flags & TJFLAG_PROGRESSIVE) != 0, 1, &n);
		for (size_t k = 0; k < sizeof pols / sizeof pols[0]; k++) {
			struct jpeg_tiles_result r;
			OK(jpeg_tiles_transcode(t, j, len, &pols[k], &r, err, sizeof err));
			char name[96];
			snprintf(name, sizeof name, "%s tiled %u MCUs", s->name, r.restart);
			check_jpeg(&d, r.data, r.len, name, 0, k == 1, &n);
			free(r.data);
		}
		tjFree(j);
	}
	/* restart intervals of 7 MCUs over 23 x 15 (the last one short: 345 =
	 * 49 x 7 + 2), of 50 (too long to pair: one at a time) and of 1 */
	static const unsigned restarts[] = { 7, 50, 1 };
	for (size_t i = 0; i < 3; i++) {
		unsigned long len;
		uint8_t *j = encode_restart(361, 233, restarts[i], 40 + (unsigned)i, &len);
		char name[64];
		snprintf(name, sizeof name, "libjpeg restart %u 361x233", restarts[i]);
		check_jpeg(&d, j, len, name, 0, 1, &n);
		free(j);
	}
	jpeg_tiler_destroy(t);
	jpeg_huff_destroy(d.huff);
	jpeg_destroy_decompress(&d.ci);
	printf("same pixels in %u decodes (4 scales x whole/cropped+skipped, %zu sources x "
	       "untiled/tiled, 3 with libjpeg's restart intervals); %u damaged streams: %u decoded "
	       "alike, %u refused by both, %u refused by jpeg_huff only (left-over bytes, invalid "
	       "codes, truncation); pipeline output equal for %u JPEGs x 24 keys x train/eval\n",
	       n.compared, NSRC, n.tried, n.both_ok, n.both_refused, n.stricter, n.pipelines);
	CHECK(n.compared > 400 && n.both_refused > 0 && n.both_ok > 0);
	return 0;
}
