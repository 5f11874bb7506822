/* fuzz_jpeg.c — arbitrary bytes as one JPEG sample of a dataset.
 *
 * feederd's workers run jpeg_pipeline_run on whatever a dataset holds, and a
 * dataset may hold anything (a truncated upload, a PNG renamed .jpg, a
 * hostile file). Each input goes through several parameter sets that together
 * cover train and eval, every dtype, both layouts, down- and up-scaling, the
 * IDCT scaling path and odd output sizes. The worker is kept across inputs,
 * as a daemon thread keeps it, so state left behind by a failed sample is
 * exercised too. On success every output value must be inside the range that
 * normalizing pixels in [0, 1] can give (the resize filter has no negative
 * lobes), and finite; the output buffer is exactly the promised size, so ASan
 * sees any write past it. The seeds include JPEGs tiled by restart intervals
 * on a grid (jpegtran -restart), which the pipeline decodes through a cut
 * sub-image (media/jpeg_tiles.c): damaged tiling (a marker renumbered,
 * missing or added, offsets past the end) must be an error, not a crash.
 * The first parameter set runs twice more, Huffman-decoding with libjpeg's
 * own decoder and with media/jpeg_huff.h (the worker's default), which must
 * agree: the same output where both decode and so does libjpeg's decode of
 * the whole image (jpeg_pipeline_reference: on a stream damaged further
 * down, libjpeg's fast path can leave coefficients of an attempt it
 * abandoned at a marker in the crop's blocks), and where only libjpeg decodes,
 * jpeg_huff's reason must be one libjpeg checks only on some paths: bytes
 * left over before a marker (only where it has not read ahead), an
 * invalid Huffman code (its fast path, for JPEGs without restart markers,
 * decodes one as a zero), a scan the file ends in (only where the crop
 * makes libjpeg read to the end); or else libjpeg must refuse the whole
 * image too (jpeg_huff decodes an interval or two past the crop's last
 * row, libjpeg a few bytes). */
#include "protocol.h"
#include "fuzz.h"

#include "half.h"
#include "jpeg_pipeline.h"
#include "status.h"

#include <errno.h>
#include <math.h>
#include <string.h>

struct pset {
	uint32_t out_h, out_w;
	int train, dtype, layout;
	float scale_min, flip_p, resize_ratio;
};

static const struct pset psets[] = {
	{ 32, 32, 1, FEEDER_DTYPE_F32, FEEDER_LAYOUT_NCHW, 0.08f, 0.5f, 0 },
	{ 24, 40, 0, FEEDER_DTYPE_U8, FEEDER_LAYOUT_NHWC, 0, 0, 256.0f / 224.0f },
	{ 17, 9, 1, FEEDER_DTYPE_F16, FEEDER_LAYOUT_NHWC, 0.5f, 1.0f, 0 },
	{ 8, 8, 0, FEEDER_DTYPE_F16, FEEDER_LAYOUT_NCHW, 0, 0, 1.0f },
	{ 96, 72, 0, FEEDER_DTYPE_F32, FEEDER_LAYOUT_NHWC, 0, 0, 1.5f },
	{ 5, 64, 1, FEEDER_DTYPE_U8, FEEDER_LAYOUT_NCHW, 0.01f, 0.0f, 0 },
};
#define N_PSETS (sizeof(psets) / sizeof(psets[0]))

static void params_of(const struct pset *s, struct feeder_stream_opts *p)
{
	proto_opts_jpeg(p, 32, s->train);
	p->jpeg.height = s->out_h;
	p->jpeg.width = s->out_w;
	p->dtype = s->dtype;
	p->layout = s->layout;
	if (s->train) {
		p->jpeg.scale_min = s->scale_min;
		p->jpeg.flip_p = s->flip_p;
	} else {
		p->jpeg.resize_ratio = s->resize_ratio;
	}
}

static void check_output(const struct feeder_stream_opts *p, const void *out, size_t bytes)
{
	if (p->dtype == FEEDER_DTYPE_U8)
		return; /* every byte value is a pixel value */
	size_t n = bytes / (p->dtype == FEEDER_DTYPE_F16 ? 2 : 4);
	size_t plane = (size_t)p->jpeg.height * p->jpeg.width;
	for (size_t i = 0; i < n; i++) {
		float v;
		if (p->dtype == FEEDER_DTYPE_F16)
			v = half_to_float(((const uint16_t *)out)[i]);
		else
			v = ((const float *)out)[i];
		int c = p->layout == FEEDER_LAYOUT_NHWC ? (int)(i % 3) : (int)(i / plane);
		float lo = (0.0f - p->jpeg.mean[c]) / p->jpeg.std[c],
		      hi = (1.0f - p->jpeg.mean[c]) / p->jpeg.std[c];
		/* f16 rounds to 11 significant bits; allow that and float noise. */
		float tol = 0.01f * (fabsf(lo) + fabsf(hi));
		FUZZ_CHECK(isfinite(v) && v >= lo - tol && v <= hi + tol,
			   "element %zu (channel %d) = %g outside [%g, %g]", i, c, v, lo, hi);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jpeg_worker *w;
	char err[256] = "";
	if (!w && jpeg_worker_create(&w, err, sizeof(err)) != 0) {
		fprintf(stderr, "fuzz_jpeg: %s\n", err);
		abort();
	}
	/* The augmentation key follows the bytes so that an input replays the
	 * same crops; FNV-1a is enough to spread it. */
	uint64_t key = 1469598103934665603ull;
	for (size_t i = 0; i < size; i++)
		key = (key ^ data[i]) * 1099511628211ull;
	{
		struct feeder_stream_opts p;
		params_of(&psets[0], &p);
		size_t bytes = jpeg_pipeline_sample_bytes(&p);
		uint8_t *a = malloc(bytes), *b = malloc(bytes);
		char berr[256] = "";
		if (a && b) {
			jpeg_worker_set_huff(w, 0);
			int ra = jpeg_pipeline_run(w, &p, data, size, key, a, err, sizeof(err));
			jpeg_worker_set_huff(w, 1);
			int rb = jpeg_pipeline_run(w, &p, data, size, key, b, berr, sizeof(berr));
			FUZZ_CHECK(rb != 0 || ra == 0, "jpeg_huff decoded what libjpeg refused: %s",
				   err);
			int stricter = ra == 0 && rb != 0 && !strstr(berr, "extraneous bytes") &&
				       !strstr(berr, "bad Huffman code") &&
				       !strstr(berr, "Premature end of JPEG file");
			int differ = ra == 0 && rb == 0 && memcmp(a, b, bytes);
			/* b is free now: the whole image through libjpeg, which
			 * must refuse it too (the damage lies outside the crop,
			 * in the interval jpeg_huff decoded ahead) */
			char why[256];
			if (stricter)
				FUZZ_CHECK(
					jpeg_pipeline_reference(w, &p, data, size, key, b, why,
								sizeof(why)) != 0,
					"libjpeg decodes the whole image, jpeg_huff refused a crop: %s",
					berr);
			if (differ)
				FUZZ_CHECK(jpeg_pipeline_reference(w, &p, data, size, key, b, why,
								   sizeof(why)) != 0,
					   "jpeg_huff decoded other pixels");
		}
		free(a);
		free(b);
	}
	for (size_t k = 0; k < N_PSETS; k++) {
		struct feeder_stream_opts p;
		params_of(&psets[k], &p);
		FUZZ_CHECK(proto_opts_check(&p, err, sizeof(err)) == 0, "param set %zu: %s", k,
			   err);
		size_t bytes = jpeg_pipeline_sample_bytes(&p);
		void *out = malloc(bytes);
		if (!out)
			return 0;
		err[0] = '\0';
		int rc = jpeg_pipeline_run(w, &p, data, size, key + k, out, err, sizeof(err));
		if (rc == 0) {
			check_output(&p, out, bytes);
		} else {
			FUZZ_CHECK(rc == FEEDER_EDECODE || rc == FEEDER_EINVAL || rc == -ENOMEM,
				   "param set %zu: code %d", k, rc);
			FUZZ_CHECK_ERR(err, sizeof(err));
		}
		free(out);
	}
	return 0;
}
