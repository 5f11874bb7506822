/* test_jpeg_pipeline.c — the jpeg pipeline against its reference and
 * against plain decodes.
 *
 * Photo-like JPEGs are made in memory (jpeg_synth.h). For train and eval
 * params and many augmentation keys, chosen so that the IDCT scale 1, 1/2,
 * 1/4 and 1/8 paths all run (4:2:2 and 4:4:0 images stop at 1/2), the fast
 * path (region decode, scaled IDCT) must stay within a mean absolute
 * difference of 2/255 of the reference (full decode, same crop, same resize)
 * in u8 and f32, and f16 within half precision of f32. Also: the crop box
 * follows RandomResizedCrop's rules, an identity resize reproduces
 * tjDecompress2's pixels, flip mirrors, NHWC is the transpose of NCHW,
 * normalization numbers, determinism, and corrupt input gives FEEDER_EDECODE
 * without a crash. */
#include "jpeg_fixture.h"

struct image {
	const char *name;
	int w, h, subsamp, quality;
	uint8_t *jpeg;
	unsigned long len;
};

static struct jpeg_worker *worker;
static unsigned scale_seen[9];

/* The IDCT scale the pipeline picks for this crop (its documented rule). */
static unsigned scale_for(const struct feeder_stream_opts *p, const struct image *im, uint64_t key)
{
	struct jpeg_crop c;
	jpeg_pipeline_plan(&p->jpeg, (uint32_t)im->w, (uint32_t)im->h, key, &c);
	unsigned s = 1, smax = im->subsamp == TJSAMP_422 || im->subsamp == TJSAMP_440 ? 2 : 8;
	while (s < smax && c.w >= 2.0 * s * p->jpeg.width && c.h >= 2.0 * s * p->jpeg.height)
		s *= 2;
	return s;
}

/* Fast path vs reference in u8, f32 (mean 0, std 1: [0,1] units) and f16. */
static void compare(const struct image *im, struct feeder_stream_opts p, uint64_t key,
		    double *worst)
{
	size_t n = (size_t)3 * p.jpeg.height * p.jpeg.width;
	float *fast = xmalloc(n * 4), *ref = xmalloc(n * 4);
	uint8_t *fast8 = xmalloc(n), *ref8 = xmalloc(n);
	uint16_t *fast16 = xmalloc(n * 2);
	for (int c = 0; c < 3; c++) {
		p.jpeg.mean[c] = 0;
		p.jpeg.std[c] = 1;
	}
	p.dtype = FEEDER_DTYPE_F32;
	RUN(worker, &p, im->jpeg, im->len, key, fast);
	REF(worker, &p, im->jpeg, im->len, key, ref);
	double m = sample_mad(fast, ref, FEEDER_DTYPE_F32, n);
	unsigned s = scale_for(&p, im, key);
	scale_seen[s]++;
	CHECKF(m <= 2.0 / 255, "%s %ux%u train=%d key=%llu scale 1/%u: f32 MAD %.5f", im->name,
	       p.jpeg.width, p.jpeg.height, p.jpeg.train, (unsigned long long)key, s, m);
	if (m > *worst)
		*worst = m;
	for (size_t i = 0; i < n; i++)
		CHECKF(ref[i] >= -1e-5f && ref[i] <= 1.00001f, "reference value %f out of [0,1]",
		       ref[i]);

	p.dtype = FEEDER_DTYPE_U8;
	RUN(worker, &p, im->jpeg, im->len, key, fast8);
	REF(worker, &p, im->jpeg, im->len, key, ref8);
	double m8 = sample_mad(fast8, ref8, FEEDER_DTYPE_U8, n);
	CHECKF(m8 <= 2.0 / 255, "%s key=%llu: u8 MAD %.5f", im->name, (unsigned long long)key, m8);
	/* u8 is the f32 result rounded. */
	for (size_t i = 0; i < n; i++)
		CHECKF(fabsf(fast8[i] - fast[i] * 255.0f) <= 0.5001f, "u8 %u vs f32 %f", fast8[i],
		       fast[i] * 255.0f);

	p.dtype = FEEDER_DTYPE_F16;
	RUN(worker, &p, im->jpeg, im->len, key, fast16);
	for (size_t i = 0; i < n; i++) {
		float h = half_to_float(fast16[i]);
		CHECKF(fabsf(h - fast[i]) <= fabsf(fast[i]) * 0x1p-11f + 0x1p-25f,
		       "f16 %f vs f32 %f", h, fast[i]);
	}
	free(fast);
	free(ref);
	free(fast8);
	free(ref8);
	free(fast16);
}

static void check_plan(void)
{
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 224, 1);
	unsigned flips = 0, fallback = 0;
	const int n = 4000;
	for (int k = 0; k < n; k++) {
		struct jpeg_crop c, c2;
		jpeg_pipeline_plan(&p.jpeg, 640, 480, (uint64_t)k, &c);
		jpeg_pipeline_plan(&p.jpeg, 640, 480, (uint64_t)k, &c2);
		CHECK(c.x == c2.x && c.y == c2.y && c.w == c2.w && c.h == c2.h &&
		      c.flip == c2.flip);
		CHECK(c.x == floor(c.x) && c.y == floor(c.y) && c.w == floor(c.w) &&
		      c.h == floor(c.h));
		CHECK(c.w >= 1 && c.h >= 1 && c.x >= 0 && c.y >= 0);
		CHECK(c.x + c.w <= 640 && c.y + c.h <= 480);
		double frac = c.w * c.h / (640.0 * 480), ratio = c.w / c.h;
		if (c.w == 640 && c.h == 480 && c.x == 0 && c.y == 0) {
			fallback++;
			continue;
		}
		/* Rounding w and h to whole pixels moves area and ratio a bit. */
		CHECKF(frac >= 0.08 * 0.9 && frac <= 1.0, "area fraction %f", frac);
		CHECKF(ratio >= 0.75 * 0.95 && ratio <= 4.0 / 3 * 1.05, "ratio %f", ratio);
		flips += c.flip;
	}
	CHECKF(fallback < n / 20, "%u fallbacks", fallback);
	CHECKF(abs((int)flips - (int)(n - fallback) / 2) < n / 20, "%u flips of %d", flips, n);
	/* An image too narrow for any allowed ratio falls back to the
	 * centre crop with the ratio clamped. */
	struct jpeg_crop c;
	jpeg_pipeline_plan(&p.jpeg, 1000, 50, 3, &c);
	CHECK(c.h == 50 && c.w == rint(50 * 4.0 / 3) && c.x == floor((1000 - c.w) / 2) && c.y == 0);
	/* Eval: 256 on the shorter side, centre 224. 640x480 -> 341x256. */
	proto_opts_jpeg(&p, 224, 0);
	jpeg_pipeline_plan(&p.jpeg, 640, 480, 99, &c);
	double sx = 640.0 / 341, sy = 480.0 / 256;
	CHECK(fabs(c.x - rint((341 - 224) / 2.0) * sx) < 1e-9 && fabs(c.w - 224 * sx) < 1e-9);
	CHECK(fabs(c.y - 16 * sy) < 1e-9 && fabs(c.h - 224 * sy) < 1e-9 && c.flip == 0);
}

/* Eval with an image of exactly the output size and resize_ratio 1 is an
 * identity: the output must be tjDecompress2's pixels. */
static void check_identity(void)
{
	unsigned long len;
	uint8_t *jpeg = jpeg_synth(72, 72, TJSAMP_420, 90, 7, &len);
	CHECK(jpeg);
	uint8_t *px = xmalloc(72 * 72 * 3), *out = xmalloc(72 * 72 * 3);
	tjhandle tj = tjInitDecompress();
	CHECK(tj);
	CHECK(tjDecompress2(tj, jpeg, len, px, 72, 0, 72, TJPF_RGB, 0) == 0);
	tjDestroy(tj);
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 0, 0);
	p.jpeg.width = 72;
	p.jpeg.height = 72;
	p.jpeg.resize_ratio = 1;
	p.dtype = FEEDER_DTYPE_U8;
	p.layout = FEEDER_LAYOUT_NHWC;
	RUN(worker, &p, jpeg, len, 0, out);
	CHECKF(!memcmp(out, px, 72 * 72 * 3), "identity resize differs from tjDecompress2");
	free(px);
	free(out);
	tjFree(jpeg);
}

static void check_layout_flip_norm(const struct image *im)
{
	struct feeder_stream_opts p, nhwc_p, flip_p, u8_p;
	proto_opts_jpeg(&p, 0, 1);
	p.jpeg.height = 48;
	p.jpeg.width = 40;
	p.jpeg.flip_p = 0;
	nhwc_p = flip_p = u8_p = p;
	nhwc_p.layout = FEEDER_LAYOUT_NHWC;
	flip_p.jpeg.flip_p = 1;
	u8_p.dtype = FEEDER_DTYPE_U8;
	size_t hw = 48 * 40, n = hw * 3;
	float *nchw = xmalloc(n * 4), *nhwc = xmalloc(n * 4), *flip = xmalloc(n * 4),
	      *again = xmalloc(n * 4);
	uint8_t *u8 = xmalloc(n);
	for (uint64_t key = 0; key < 6; key++) {
		RUN(worker, &p, im->jpeg, im->len, key, nchw);
		RUN(worker, &p, im->jpeg, im->len, key, again);
		CHECK(memcmp(nchw, again, n * 4) == 0); /* determinism */
		RUN(worker, &nhwc_p, im->jpeg, im->len, key, nhwc);
		RUN(worker, &flip_p, im->jpeg, im->len, key, flip);
		RUN(worker, &u8_p, im->jpeg, im->len, key, u8);
		/* NHWC is the transpose, a flip the mirror; normalized output
		 * is (u8-equivalent/255 - mean) / std. */
		for (size_t c = 0; c < 3; c++)
			for (size_t i = 0; i < hw; i++) {
				float v = nchw[c * hw + i];
				float want =
					(u8[c * hw + i] / 255.0f - p.jpeg.mean[c]) / p.jpeg.std[c];
				CHECK(v == nhwc[i * 3 + c]);
				CHECK(v == flip[c * hw + i / 40 * 40 + 39 - i % 40]);
				CHECKF(fabsf(v - want) <= 0.5f / 255 / p.jpeg.std[c] + 1e-5f,
				       "normalized %f, from u8 %f", v, want);
			}
	}
	/* Different keys give different crops. */
	RUN(worker, &p, im->jpeg, im->len, 100, again);
	CHECK(memcmp(nchw, again, n * 4) != 0);

	/* A flat colour: every output value is the known normalized number. */
	unsigned long len;
	uint8_t flat[64 * 64 * 3];
	for (size_t i = 0; i < sizeof flat; i += 3) {
		flat[i] = 200;
		flat[i + 1] = 100;
		flat[i + 2] = 50;
	}
	uint8_t *jpeg = jpeg_synth_compress(flat, 64, 64, 3, TJSAMP_444, 100, 0, &len);
	CHECK(jpeg);
	const float want[3] = { (200 / 255.0f - 0.485f) / 0.229f, (100 / 255.0f - 0.456f) / 0.224f,
				(50 / 255.0f - 0.406f) / 0.225f };
	RUN(worker, &p, jpeg, len, 1, nchw);
	for (size_t c = 0; c < 3; c++)
		for (size_t i = 0; i < hw; i++)
			CHECKF(fabsf(nchw[c * hw + i] - want[c]) <= 1.01f / 255 / p.jpeg.std[c],
			       "flat colour channel %zu: %f, want %f", c, nchw[c * hw + i],
			       want[c]);
	tjFree(jpeg);
	free(nchw);
	free(nhwc);
	free(flip);
	free(again);
	free(u8);
}

/* A worker that has decoded other images (and failed on some) gives the
 * same bytes as a new one: no state leaks between samples. */
static void check_fresh_worker(const struct image *im)
{
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 96, 1);
	p.dtype = FEEDER_DTYPE_F16;
	size_t n = jpeg_pipeline_sample_bytes(&p);
	uint8_t *a = xmalloc(n), *b = xmalloc(n);
	struct jpeg_worker *fresh;
	OK(jpeg_worker_create(&fresh, err, sizeof err));
	for (uint64_t key = 0; key < 4; key++) {
		RUN(worker, &p, im->jpeg, im->len, key, a);
		RUN(fresh, &p, im->jpeg, im->len, key, b);
		CHECK(memcmp(a, b, n) == 0);
		CHECK(jpeg_pipeline_run(fresh, &p, im->jpeg, im->len / 3, key, b, err,
					sizeof err) == FEEDER_EDECODE);
	}
	jpeg_worker_destroy(fresh);
	free(a);
	free(b);
}

/* Images smaller than the output, one pixel wide or tall: upscaled, no
 * crash, values in range. */
static void check_tiny(void)
{
	static const int dims[][2] = { { 1, 1 }, { 8, 1 }, { 1, 300 }, { 17, 9 } };
	double worst = 0;
	for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
		struct image im = { "tiny", dims[i][0], dims[i][1], TJSAMP_420, 90, NULL, 0 };
		im.jpeg = jpeg_synth(im.w, im.h, im.subsamp, im.quality, 5, &im.len);
		CHECK(im.jpeg);
		for (int train = 0; train <= 1; train++) {
			struct feeder_stream_opts p;
			proto_opts_jpeg(&p, 32, train);
			for (uint64_t key = 0; key < 3; key++)
				compare(&im, p, key, &worst);
		}
		tjFree(im.jpeg);
	}
}

/* want: a phrase the error must contain, or NULL for any reason. */
static void expect_decode_error(const char *what, const uint8_t *buf, size_t len, const char *want)
{
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 32, 0);
	float *out = xmalloc(jpeg_pipeline_sample_bytes(&p));
	err[0] = 0;
	int rc = jpeg_pipeline_run(worker, &p, buf, len, 0, out, err, sizeof err);
	CHECKF(rc == FEEDER_EDECODE && err[0] && (!want || strstr(err, want)), "%s: rc %d (%s)",
	       what, rc, err);
	rc = jpeg_pipeline_reference(worker, &p, buf, len, 0, out, err, sizeof err);
	CHECKF(rc == FEEDER_EDECODE && err[0], "%s (reference): rc %d (%s)", what, rc, err);
	free(out);
}

static void check_corrupt(const struct image *im)
{
	expect_decode_error("zero length", im->jpeg, 0, "empty");
	expect_decode_error("truncated to half", im->jpeg, im->len / 2, NULL);
	expect_decode_error("header only", im->jpeg, 200, NULL);
	uint8_t junk[4096];
	uint32_t s = 1;
	for (size_t i = 0; i < sizeof junk; i++) {
		s = s * 1664525u + 1013904223u;
		junk[i] = (uint8_t)(s >> 24);
	}
	expect_decode_error("random bytes", junk, sizeof junk, NULL);
	junk[0] = 0xff;
	junk[1] = 0xd8; /* a JPEG start marker, then noise */
	expect_decode_error("SOI then noise", junk, sizeof junk, NULL);

	/* Flipped bytes in the entropy-coded data: either an error or an
	 * image, never a crash; and the worker still works afterwards. */
	uint8_t *copy = xmalloc(im->len);
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 64, 1);
	float *out = xmalloc(jpeg_pipeline_sample_bytes(&p));
	for (int t = 0; t < 20; t++) {
		memcpy(copy, im->jpeg, im->len);
		for (int k = 0; k < 8; k++) {
			s = s * 1664525u + 1013904223u;
			copy[600 + (s >> 8) % (im->len - 600)] ^= (uint8_t)(1u << (s % 8));
		}
		int rc = jpeg_pipeline_run(worker, &p, copy, im->len, (uint64_t)t, out, err,
					   sizeof err);
		CHECKF(rc == 0 || rc == FEEDER_EDECODE, "bit flips: rc %d", rc);
	}
	RUN(worker, &p, im->jpeg, im->len, 0, out);
	free(out);

	/* A header claiming 20000x20000 pixels is refused before decoding. */
	memcpy(copy, im->jpeg, im->len);
	size_t sof = 0;
	for (size_t i = 2; i + 9 < im->len && !sof; i++)
		if (copy[i] == 0xff && copy[i + 1] == 0xc0)
			sof = i;
	CHECK(sof);
	copy[sof + 5] = 20000 >> 8; /* height */
	copy[sof + 6] = 20000 & 0xff;
	copy[sof + 7] = 20000 >> 8; /* width */
	copy[sof + 8] = 20000 & 0xff;
	expect_decode_error("20000x20000 header", copy, im->len, "over the 134217728-pixel limit");
	free(copy);

	/* CMYK is refused with a reason. */
	uint8_t cmyk[32 * 32 * 4];
	memset(cmyk, 90, sizeof cmyk);
	unsigned long len;
	uint8_t *jpeg = jpeg_synth_compress(cmyk, 32, 32, 4, TJSAMP_444, 90, 0, &len);
	CHECK(jpeg);
	expect_decode_error("CMYK", jpeg, len, "CMYK");
	tjFree(jpeg);
}

static void check_params(void)
{
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 224, 1);
	CHECK(proto_opts_check(&p, err, sizeof err) == 0);
	CHECK(jpeg_pipeline_sample_bytes(&p) == 3 * 224 * 224 * 4);
	p.dtype = FEEDER_DTYPE_F16;
	CHECK(jpeg_pipeline_sample_bytes(&p) == 3 * 224 * 224 * 2);
#define REFUSED(stmt)                                                                              \
	do {                                                                                       \
		struct feeder_stream_opts bad = p;                                                 \
		stmt;                                                                              \
		CHECKF(proto_opts_check(&bad, err, sizeof err) == FEEDER_EINVAL, "%s", #stmt);     \
	} while (0)
	REFUSED(bad.jpeg.width = 0);
	REFUSED(bad.dtype = 9);
	REFUSED(bad.jpeg.scale_min = NAN);
	REFUSED(bad.jpeg.std[1] = 0);
	CHECK(strstr(err, "std"));
	REFUSED(bad.jpeg.train = 0; bad.jpeg.resize_ratio = 0.5f);
}

int main(void)
{
	OK(jpeg_worker_create(&worker, err, sizeof err));
	struct image images[] = {
		{ "640x480 4:2:0", 640, 480, TJSAMP_420, 90, NULL, 0 },
		{ "503x377 4:2:2", 503, 377, TJSAMP_422, 85, NULL, 0 },
		{ "1280x960 4:2:0", 1280, 960, TJSAMP_420, 92, NULL, 0 },
		{ "300x200 grey", 300, 200, TJSAMP_GRAY, 90, NULL, 0 },
		{ "333x500 4:4:4", 333, 500, TJSAMP_444, 95, NULL, 0 },
		{ "360x270 4:4:0", 360, 270, TJSAMP_440, 90, NULL, 0 },
	};
	const size_t nimg = sizeof images / sizeof images[0];
	for (size_t i = 0; i < nimg; i++) {
		images[i].jpeg = jpeg_synth(images[i].w, images[i].h, images[i].subsamp,
					    images[i].quality, (unsigned)i + 1, &images[i].len);
		CHECK(images[i].jpeg);
	}
	check_params();
	check_plan();
	check_identity();

	static const uint32_t sizes[] = { 224, 64, 32 };
	double worst = 0;
	for (size_t i = 0; i < nimg; i++)
		for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
			for (int train = 0; train <= 1; train++) {
				struct feeder_stream_opts p;
				proto_opts_jpeg(&p, sizes[s], train);
				if (sizes[s] > (uint32_t)images[i].w ||
				    sizes[s] > (uint32_t)images[i].h)
					continue;
				int keys = train ? 12 : 1; /* eval ignores the key */
				for (int k = 0; k < keys; k++)
					compare(&images[i], p, (uint64_t)(k * 1000 + s), &worst);
			}
	/* A non-square output. */
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 0, 1);
	p.jpeg.height = 40;
	p.jpeg.width = 72;
	for (int k = 0; k < 6; k++)
		compare(&images[0], p, (uint64_t)k, &worst);
	p.jpeg.train = 0;
	compare(&images[1], p, 0, &worst);

	fprintf(stderr,
		"worst MAD %.5f (limit %.5f); IDCT scales used: 1:%u 1/2:%u 1/4:%u 1/8:%u\n", worst,
		2.0 / 255, scale_seen[1], scale_seen[2], scale_seen[4], scale_seen[8]);
	CHECK(scale_seen[1] && scale_seen[2] && scale_seen[4] && scale_seen[8]);

	check_layout_flip_norm(&images[1]);
	check_fresh_worker(&images[2]);
	check_tiny();
	check_corrupt(&images[0]);
	for (size_t i = 0; i < nimg; i++)
		tjFree(images[i].jpeg);
	jpeg_worker_destroy(worker);
	return 0;
}
