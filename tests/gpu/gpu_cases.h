/* gpu_cases.h — the cases the GPU pipeline is held to, shared by the host
 * test (test_gpu_staging.c: staging + gpu_staging_run_host, everywhere) and
 * the device tests (test_gpu_jpeg.c, test_gpu_features.c: gpu_pipeline on a
 * CUDA device).
 *
 * A runner stages a batch and produces its output; every case compares the
 * result with the CPU pipeline (jpeg_pipeline_run / features_pipeline_run)
 * for the same params and aug_keys:
 *   jpeg: train and eval, u8/f16/f32, NCHW/NHWC, photo-like JPEGs whose
 *   crops take every IDCT scale (4:2:0 and 4:2:2, and one image smaller than
 *   the output), mean absolute difference <= 2/255 in [0, 1] pixel units
 *   (the jpeg pipeline's promise) and the largest difference reported; a
 *   staging block too small for regions makes CPU-finished samples, which
 *   must be byte-identical.
 *   features: f16 and f32 matrices shorter than, equal to and longer than
 *   the chunk, cmn none / utt / sliding (300 and 7 frames), cvn, f16/f32
 *   output, train and eval; f32 within 1e-4, f16 within one half ulp. */
#ifndef FEEDER_GPU_CASES_H
#define FEEDER_GPU_CASES_H

#include "protocol.h"
#include "check.h"
#include "features_pipeline.h"
#include "gpu_staging.h"
#include "half.h"
#include "jpeg_pipeline.h"
#include "jpeg_synth.h"
#include "status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gpu_runner {
	const char *name;
	/* A context for batches of up to max_batch samples; staging 0 means
	 * the default size. */
	void *(*open_jpeg)(const struct feeder_stream_opts *p, uint32_t max_batch, size_t staging);
	void *(*open_features)(const struct feeder_stream_opts *p, uint32_t dim, uint32_t max_batch,
			       size_t staging);
	void (*begin)(void *ctx);
	int (*stage_jpeg)(void *ctx, struct jpeg_worker *w, uint32_t i, const uint8_t *jpeg,
			  size_t len, uint64_t key, char *err, size_t errlen);
	int (*stage_features)(void *ctx, uint32_t i, const struct dsformat_sample *s,
			      const uint8_t *payload, uint64_t key, char *err, size_t errlen);
	/* Make the n staged samples into out (host memory). */
	void (*run)(void *ctx, uint32_t n, void *out);
	uint32_t (*cpu_finished)(void *ctx);
	void (*close)(void *ctx);
};

struct gc_image {
	const char *name;
	int w, h, subsamp;
	uint8_t *jpeg;
	unsigned long len;
};

#define GC_NIMG 4
static struct gc_image gc_images[GC_NIMG] = {
	{ "1600x1200 4:2:0", 1600, 1200, TJSAMP_420, NULL, 0 },
	{ "500x375 4:2:0", 500, 375, TJSAMP_420, NULL, 0 },
	{ "640x480 4:2:2", 640, 480, TJSAMP_422, NULL, 0 },
	{ "40x44 4:4:4", 40, 44, TJSAMP_444, NULL, 0 },
};

static inline void gc_make_images(void)
{
	for (int i = 0; i < GC_NIMG; i++) {
		struct gc_image *im = &gc_images[i];
		im->jpeg = jpeg_synth(im->w, im->h, im->subsamp, 90, (unsigned)i + 3, &im->len);
		CHECKF(im->jpeg, "could not encode %s", im->name);
	}
}

static inline void gc_free_images(void)
{
	for (int i = 0; i < GC_NIMG; i++)
		tjFree(gc_images[i].jpeg);
}

/* Value e of a jpeg output in [0, 1] pixel units. */
static inline double gc_pixel(const struct feeder_stream_opts *p, const void *out, size_t e)
{
	size_t plane = (size_t)p->jpeg.height * p->jpeg.width;
	int c = p->layout == FEEDER_LAYOUT_NHWC ? (int)(e % 3) : (int)(e / plane);
	if (p->dtype == FEEDER_DTYPE_U8)
		return ((const uint8_t *)out)[e] / 255.0;
	double v = p->dtype == FEEDER_DTYPE_F16 ? half_to_float(((const uint16_t *)out)[e])
						: ((const float *)out)[e];
	return v * p->jpeg.std[c] + p->jpeg.mean[c];
}

static inline const char *gc_dtype(int d)
{
	return d == FEEDER_DTYPE_U8 ? "u8" : d == FEEDER_DTYPE_F16 ? "f16" : "f32";
}

/* One jpeg batch: every image with several keys, against jpeg_pipeline_run.
 * With staging 0 (the default size) some big regions may be finished on
 * the CPU; with 1 MiB a sample every region fits and the device resizes
 * all of them. Returns the worst MAD; *max_abs gets the largest difference. */
static inline double gc_jpeg_batch(const struct gpu_runner *r, struct jpeg_worker *w,
				   const struct feeder_stream_opts *p, size_t staging,
				   double *max_abs)
{
	enum { KEYS = 3, N = GC_NIMG * KEYS };
	char err[256];
	size_t sb = jpeg_pipeline_sample_bytes(p),
	       elems = (size_t)3 * p->jpeg.height * p->jpeg.width;
	uint8_t *got = malloc(sb * N), *want = malloc(sb);
	CHECK(got && want);
	void *ctx = r->open_jpeg(p, N, staging ? staging : 0);
	r->begin(ctx);
	for (uint32_t i = 0; i < N; i++) {
		const struct gc_image *im = &gc_images[i % GC_NIMG];
		uint64_t key = 1000003ull * (i + 1);
		CHECKF(r->stage_jpeg(ctx, w, i, im->jpeg, im->len, key, err, sizeof err) == 0,
		       "%s: stage %s: %s", r->name, im->name, err);
	}
	r->run(ctx, N, got);
	CHECKF(!staging || r->cpu_finished(ctx) == 0,
	       "%s: %u samples fell back to the CPU with %zu bytes of staging", r->name,
	       r->cpu_finished(ctx), staging);
	if (!staging)
		printf("%s jpeg: default staging: %u of %d samples finished on the CPU\n", r->name,
		       r->cpu_finished(ctx), (int)N);
	double worst = 0;
	for (uint32_t i = 0; i < N; i++) {
		const struct gc_image *im = &gc_images[i % GC_NIMG];
		uint64_t key = 1000003ull * (i + 1);
		CHECKF(jpeg_pipeline_run(w, p, im->jpeg, im->len, key, want, err, sizeof err) == 0,
		       "cpu %s: %s", im->name, err);
		double sum = 0;
		for (size_t e = 0; e < elems; e++) {
			double d = fabs(gc_pixel(p, got + i * sb, e) - gc_pixel(p, want, e));
			CHECKF(d == d, "%s: NaN at element %zu of %s", r->name, e, im->name);
			sum += d;
			*max_abs = d > *max_abs ? d : *max_abs;
		}
		double mad = sum / elems;
		CHECKF(mad <= 2.0 / 255, "%s: %s %s %s %s key %llu: MAD %.5f > 2/255", r->name,
		       im->name, p->jpeg.train ? "train" : "eval", gc_dtype(p->dtype),
		       p->layout == FEEDER_LAYOUT_NHWC ? "NHWC" : "NCHW", (unsigned long long)key,
		       mad);
		worst = mad > worst ? mad : worst;
	}
	r->close(ctx);
	free(got);
	free(want);
	return worst;
}

/* The smallest staging block there is: the descriptors and room for every
 * sample finished on the CPU. The reserve leaves no room for any region,
 * so every sample is finished on the CPU and must be byte-identical. */
static inline void gc_jpeg_fallback(const struct gpu_runner *r, struct jpeg_worker *w)
{
	enum { N = GC_NIMG };
	char err[256];
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 64, 1);
	p.dtype = FEEDER_DTYPE_U8;
	size_t sb = jpeg_pipeline_sample_bytes(&p);
	size_t desc = (N * sizeof(struct gpu_sample_desc) + 15) & ~(size_t)15;
	uint8_t *got = malloc(sb * N), *want = malloc(sb);
	CHECK(got && want);
	void *ctx = r->open_jpeg(&p, N, desc + N * ((sb + 15) & ~(size_t)15));
	r->begin(ctx);
	for (uint32_t i = 0; i < N; i++)
		CHECKF(r->stage_jpeg(ctx, w, i, gc_images[i].jpeg, gc_images[i].len, i + 7, err,
				     sizeof err) == 0,
		       "%s: fallback stage %u: %s", r->name, i, err);
	CHECKF(r->cpu_finished(ctx) == N, "%s: %u of %d samples finished on the CPU", r->name,
	       r->cpu_finished(ctx), N);
	r->run(ctx, N, got);
	for (uint32_t i = 0; i < N; i++) {
		CHECK(jpeg_pipeline_run(w, &p, gc_images[i].jpeg, gc_images[i].len, i + 7, want,
					err, sizeof err) == 0);
		CHECKF(memcmp(got + i * sb, want, sb) == 0, "%s: CPU-finished sample %u differs",
		       r->name, i);
	}
	r->close(ctx);
	free(got);
	free(want);
}

static inline void gc_jpeg_all(const struct gpu_runner *r)
{
	char err[256];
	struct jpeg_worker *w;
	CHECKF(jpeg_worker_create(&w, err, sizeof err) == 0, "%s", err);
	gc_make_images();
	const int dtypes[3] = { FEEDER_DTYPE_U8, FEEDER_DTYPE_F16, FEEDER_DTYPE_F32 };
	const int layouts[2] = { FEEDER_LAYOUT_NCHW, FEEDER_LAYOUT_NHWC };
	for (int train = 0; train <= 1; train++)
		for (int di = 0; di < 3; di++)
			for (int li = 0; li < 2; li++) {
				struct feeder_stream_opts p;
				proto_opts_jpeg(&p, 64, train);
				p.jpeg.height = 48; /* not square: a swapped axis shows */
				p.dtype = dtypes[di];
				p.layout = layouts[li];
				double max_abs = 0;
				double mad = gc_jpeg_batch(r, w, &p, (size_t)GC_NIMG * 3 << 20,
							   &max_abs);
				printf("%s jpeg %s %s %s: worst MAD %.6f (%.3f/255), max abs diff %.6f "
				       "(%.2f/255)\n",
				       r->name, train ? "train" : "eval ", gc_dtype(p.dtype),
				       p.layout == FEEDER_LAYOUT_NHWC ? "NHWC" : "NCHW", mad,
				       mad * 255, max_abs, max_abs * 255);
			}
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 64, 1);
	double max_abs = 0;
	gc_jpeg_batch(r, w, &p, 0, &max_abs);
	gc_jpeg_fallback(r, w);
	printf("%s jpeg: CPU-finished samples are byte-identical\n", r->name);
	gc_free_images();
	jpeg_worker_destroy(w);
}

/* A frames x dim matrix with per-dimension offsets and scales (so that
 * normalization matters), as packed: f16 or f32 little-endian. */
static inline uint8_t *gc_matrix(uint32_t frames, uint32_t dim, int f16, unsigned seed,
				 struct dsformat_sample *s)
{
	size_t elem = f16 ? 2 : 4;
	uint8_t *m = malloc((size_t)frames * dim * elem);
	CHECK(m);
	uint32_t state = seed * 2654435761u + 1;
	for (uint32_t t = 0; t < frames; t++)
		for (uint32_t d = 0; d < dim; d++) {
			state = state * 1664525u + 1013904223u;
			float noise = (float)((state >> 8) & 0xffff) / 65536.0f - 0.5f;
			float v =
				3.0f + 0.25f * d + (1.0f + 0.1f * d) * sinf(0.05f * t + d) + noise;
			size_t i = (size_t)t * dim + d;
			if (f16) {
				uint16_t h = half_from_float(v);
				memcpy(m + i * 2, &h, 2);
			} else {
				memcpy(m + i * 4, &v, 4);
			}
		}
	*s = (struct dsformat_sample){
		.label = seed,
		.payload_len = (uint32_t)((size_t)frames * dim * elem),
		.frames = frames,
		.dim = dim,
		.dtype = f16 ? DSFORMAT_DTYPE_F16 : DSFORMAT_DTYPE_F32,
	};
	return m;
}

static inline void gc_features_all(const struct gpu_runner *r)
{
	enum { DIM = 24, LEN = 40, NUTT = 8 };
	const uint32_t frames[NUTT] = { 13, 40, 41, 500, 29, 40, 77, 1200 };
	struct dsformat_sample s[NUTT];
	uint8_t *m[NUTT];
	for (int u = 0; u < NUTT; u++)
		m[u] = gc_matrix(frames[u], DIM, u % 2, (unsigned)u + 1, &s[u]); /* f32, f16, ... */
	const struct {
		int cmn, window, cvn;
	} norms[] = {
		{ FEEDER_FEAT_CMN_NONE, 300, 0 },    { FEEDER_FEAT_CMN_UTT, 300, 0 },
		{ FEEDER_FEAT_CMN_UTT, 300, 1 },     { FEEDER_FEAT_CMN_SLIDING, 300, 0 },
		{ FEEDER_FEAT_CMN_SLIDING, 300, 1 }, { FEEDER_FEAT_CMN_SLIDING, 7, 0 },
		{ FEEDER_FEAT_CMN_SLIDING, 7, 1 },
	};
	char err[256];
	for (size_t ni = 0; ni < sizeof norms / sizeof norms[0]; ni++)
		for (int dt = 0; dt < 2; dt++)
			for (int train = 0; train <= 1; train++) {
				struct feeder_stream_opts p;
				proto_opts_features(&p, LEN, train);
				p.features.cmn = norms[ni].cmn;
				p.features.cmn_window = (uint32_t)norms[ni].window;
				p.features.cvn = norms[ni].cvn;
				p.dtype = dt ? FEEDER_DTYPE_F16 : FEEDER_DTYPE_F32;
				size_t sb = features_pipeline_sample_bytes(&p, DIM);
				uint8_t *got = malloc(sb * NUTT), *want = malloc(sb);
				CHECK(got && want);
				/* room for every whole utterance: the device does all */
				void *ctx = r->open_features(&p, DIM, NUTT, (size_t)NUTT << 17);
				r->begin(ctx);
				for (uint32_t i = 0; i < NUTT; i++)
					CHECKF(r->stage_features(ctx, i, &s[i], m[i], 77 * i + 5,
								 err, sizeof err) == 0,
					       "%s: stage features %u: %s", r->name, i, err);
				r->run(ctx, NUTT, got);
				CHECKF(r->cpu_finished(ctx) == 0,
				       "%s: %u features samples finished on the CPU", r->name,
				       r->cpu_finished(ctx));
				double max_abs = 0;
				for (uint32_t i = 0; i < NUTT; i++) {
					CHECKF(features_pipeline_run(&p, &s[i], m[i], 77 * i + 5,
								     want, err, sizeof err) == 0,
					       "cpu features: %s", err);
					for (size_t e = 0; e < (size_t)DIM * LEN; e++) {
						double a, b;
						if (dt) {
							a = half_to_float(
								((uint16_t *)(got + i * sb))[e]);
							b = half_to_float(((uint16_t *)want)[e]);
						} else {
							a = ((float *)(got + i * sb))[e];
							b = ((float *)want)[e];
						}
						double d = fabs(a - b);
						/* f16: one unit in the last place (2^-10 relative) */
						double tol =
							dt ? fmax(1e-4, fabs(b) / 1024.0) : 1e-4;
						CHECKF(d <= tol,
						       "%s: features cmn %d window %d cvn %d %s %s: "
						       "utterance %u (%u frames) element %zu: %.7f vs %.7f",
						       r->name, p.features.cmn,
						       (int)p.features.cmn_window, p.features.cvn,
						       dt ? "f16" : "f32", train ? "train" : "eval",
						       i, frames[i], e, a, b);
						max_abs = d > max_abs ? d : max_abs;
					}
				}
				printf("%s features cmn %-7s window %3u cvn %d %s %s: max abs diff %.3g\n",
				       r->name,
				       p.features.cmn == FEEDER_FEAT_CMN_NONE  ? "none"
				       : p.features.cmn == FEEDER_FEAT_CMN_UTT ? "utt"
									       : "sliding",
				       p.features.cmn_window, p.features.cvn, dt ? "f16" : "f32",
				       train ? "train" : "eval", max_abs);
				r->close(ctx);
				free(got);
				free(want);
			}
	/* pad=skip: a too-short utterance is refused, and the batch still
	 * takes a replacement at the same index. */
	struct feeder_stream_opts p;
	proto_opts_features(&p, LEN, 1);
	p.features.pad = FEEDER_FEAT_PAD_SKIP;
	void *ctx = r->open_features(&p, DIM, 1, 0);
	r->begin(ctx);
	CHECK(r->stage_features(ctx, 0, &s[0], m[0], 1, err, sizeof err) == FEATURES_SKIPPED);
	CHECKF(r->stage_features(ctx, 0, &s[3], m[3], 1, err, sizeof err) == 0, "%s", err);
	size_t sb = features_pipeline_sample_bytes(&p, DIM);
	float *got = malloc(sb), *want = malloc(sb);
	CHECK(got && want);
	r->run(ctx, 1, got);
	CHECK(features_pipeline_run(&p, &s[3], m[3], 1, want, err, sizeof err) == 0);
	for (size_t e = 0; e < (size_t)DIM * LEN; e++)
		CHECKF(fabs((double)got[e] - want[e]) <= 1e-4, "pad skip replacement element %zu",
		       e);
	/* A matrix of another width than the batch's is refused. */
	r->begin(ctx);
	struct dsformat_sample narrow;
	uint8_t *mn = gc_matrix(50, DIM - 1, 0, 9, &narrow);
	CHECK(r->stage_features(ctx, 0, &narrow, mn, 1, err, sizeof err) == FEEDER_EFORMAT);
	printf("%s features: pad skip and width checks ok (%s)\n", r->name, err);
	free(mn);
	r->close(ctx);

	/* A block with room for one finished sample only: the 1200-frame
	 * utterance is finished on the CPU, bit for bit. */
	proto_opts_features(&p, LEN, 1);
	size_t desc = (sizeof(struct gpu_sample_desc) + 15) & ~(size_t)15;
	ctx = r->open_features(&p, DIM, 1, desc + ((sb + 15) & ~(size_t)15));
	r->begin(ctx);
	CHECKF(r->stage_features(ctx, 0, &s[7], m[7], 3, err, sizeof err) == 0, "%s", err);
	CHECK(r->cpu_finished(ctx) == 1);
	r->run(ctx, 1, got);
	CHECK(features_pipeline_run(&p, &s[7], m[7], 3, want, err, sizeof err) == 0);
	CHECK(memcmp(got, want, sb) == 0);
	printf("%s features: CPU-finished sample is byte-identical\n", r->name);
	free(got);
	free(want);
	r->close(ctx);
	for (int u = 0; u < NUTT; u++)
		free(m[u]);
}

#endif
