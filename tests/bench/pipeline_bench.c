/* pipeline_bench.c — single-thread speed of the jpeg pipeline (not a test).
 *
 * Makes a few photo-like JPEGs in memory (jpeg_synth.h) and reports, on one
 * thread, images/s of: full-size tjDecompress2 (the cost of decoding whole
 * images, what a naive loader pays before it even crops), jpeg_pipeline_run
 * in train mode (random resized crop + flip) and eval mode, and the slow
 * reference; then train and eval again on the same images tiled by restart
 * intervals as packer stores them (media/jpeg_tiles.h, the default policy),
 * which the pipeline decodes from the crop's sub-image. The region decode
 * with IDCT scaling must beat the full decode.
 * --resize portable measures with resize_rgb's plain C path instead of the
 * fastest one this CPU runs (resize.h, resize_select), for before/after.
 *
 *   pipeline_bench [--width W --height H --size S --dtype u8|f16|f32 --seconds T
 *                   --resize auto|portable]
 */
#include "protocol.h"
#include "jpeg_pipeline.h"
#include "jpeg_synth.h"
#include "jpeg_tiles.h"
#include "resize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NIMG 8

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: steadier on a shared machine */
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct bench {
	uint8_t *jpeg[NIMG];
	unsigned long len[NIMG];
	int w, h;
	double seconds;
};

typedef int (*pipe_fn)(struct jpeg_worker *, const struct feeder_stream_opts *, const uint8_t *, size_t,
		       uint64_t, void *, char *, size_t);

/* Milliseconds per image in decoding and in transforming of the last
 * rate_pipeline run (the worker's own stage clocks). */
static double last_decode_ms, last_transform_ms;

static double rate_pipeline(const struct bench *b, struct jpeg_worker *w, const struct feeder_stream_opts *p,
			    pipe_fn fn, void *out)
{
	char err[256];
	double ds, ts;
	jpeg_worker_take_times(w, &ds, &ts);
	double t0 = now(), t;
	uint64_t n = 0;
	do {
		for (int i = 0; i < NIMG; i++, n++)
			if (fn(w, p, b->jpeg[i], b->len[i], n, out, err, sizeof err)) {
				fprintf(stderr, "pipeline_bench: %s\n", err);
				exit(1);
			}
		t = now() - t0;
	} while (t < b->seconds);
	jpeg_worker_take_times(w, &ds, &ts);
	last_decode_ms = 1e3 * ds / n;
	last_transform_ms = 1e3 * ts / n;
	return n / t;
}

static double rate_full_decode(const struct bench *b)
{
	tjhandle tj = tjInitDecompress();
	uint8_t *px = malloc((size_t)b->w * b->h * 3);
	if (!tj || !px) {
		fprintf(stderr, "pipeline_bench: out of memory\n");
		exit(1);
	}
	double t0 = now(), t;
	uint64_t n = 0;
	do {
		for (int i = 0; i < NIMG; i++, n++)
			if (tjDecompress2(tj, b->jpeg[i], b->len[i], px, b->w, 0, b->h, TJPF_RGB, 0)) {
				fprintf(stderr, "pipeline_bench: %s\n", tjGetErrorStr2(tj));
				exit(1);
			}
		t = now() - t0;
	} while (t < b->seconds);
	tjDestroy(tj);
	free(px);
	return n / t;
}

int main(int argc, char **argv)
{
	struct bench b = { .w = 500, .h = 375, .seconds = 1.0 };
	uint32_t size = 224;
	int dtype = FEEDER_DTYPE_F16;
	int impl = RESIZE_IMPL_AUTO;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) {
			fprintf(stderr, "pipeline_bench: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--width"))
			b.w = atoi(v);
		else if (!strcmp(a, "--height"))
			b.h = atoi(v);
		else if (!strcmp(a, "--size"))
			size = (uint32_t)atoi(v);
		else if (!strcmp(a, "--seconds"))
			b.seconds = atof(v);
		else if (!strcmp(a, "--dtype"))
			dtype = !strcmp(v, "u8") ? FEEDER_DTYPE_U8 : !strcmp(v, "f32") ? FEEDER_DTYPE_F32
										     : FEEDER_DTYPE_F16;
		else if (!strcmp(a, "--resize") && (!strcmp(v, "auto") || !strcmp(v, "portable")))
			impl = !strcmp(v, "auto") ? RESIZE_IMPL_AUTO : RESIZE_IMPL_PORTABLE;
		else {
			fprintf(stderr, "usage: pipeline_bench [--width W --height H --size S "
					"--dtype u8|f16|f32 --seconds T --resize auto|portable]\n");
			return 2;
		}
	}
	if (b.w < 16 || b.h < 16 || size < 1 || size > (uint32_t)(b.w < b.h ? b.w : b.h) ||
	    !(b.seconds > 0)) {
		fprintf(stderr, "pipeline_bench: need 16 <= size <= image sides and seconds > 0\n");
		return 2;
	}
	for (int i = 0; i < NIMG; i++) {
		b.jpeg[i] = jpeg_synth(b.w, b.h, TJSAMP_420, 90, (unsigned)i + 1, &b.len[i]);
		if (!b.jpeg[i]) {
			fprintf(stderr, "pipeline_bench: could not make test images\n");
			return 1;
		}
	}
	resize_select(impl);
	char err[256];
	struct jpeg_worker *w;
	if (jpeg_worker_create(&w, err, sizeof err)) {
		fprintf(stderr, "pipeline_bench: %s\n", err);
		return 1;
	}
	struct feeder_stream_opts train, eval;
	proto_opts_jpeg(&train, size, 1);
	proto_opts_jpeg(&eval, size, 0);
	train.dtype = eval.dtype = dtype;
	void *out = malloc(jpeg_pipeline_sample_bytes(&train));
	if (!out)
		return 1;
	struct bench tb = b;
	struct jpeg_tiler *tiler;
	const struct jpeg_tiles_policy pol = { 0, JPEG_TILES_BYTES };
	size_t plain_bytes = 0, tiled_bytes = 0;
	unsigned restart = 0;
	if (jpeg_tiler_create(&tiler, err, sizeof err))
		return 1;
	for (int i = 0; i < NIMG; i++) {
		struct jpeg_tiles_result r;
		if (jpeg_tiles_transcode(tiler, b.jpeg[i], b.len[i], &pol, &r, err, sizeof err)) {
			fprintf(stderr, "pipeline_bench: transcode: %s\n", err);
			return 1;
		}
		tb.jpeg[i] = r.data;
		tb.len[i] = r.len;
		restart = r.restart;
		plain_bytes += b.len[i];
		tiled_bytes += r.len;
	}
	jpeg_tiler_destroy(tiler);
	double ms[4][2];
	double full = rate_full_decode(&b);
	double tr = rate_pipeline(&b, w, &train, jpeg_pipeline_run, out);
	ms[0][0] = last_decode_ms, ms[0][1] = last_transform_ms;
	double ev = rate_pipeline(&b, w, &eval, jpeg_pipeline_run, out);
	ms[1][0] = last_decode_ms, ms[1][1] = last_transform_ms;
	double ref = rate_pipeline(&b, w, &train, jpeg_pipeline_reference, out);
	double tfull = rate_full_decode(&tb);
	double ttr = rate_pipeline(&tb, w, &train, jpeg_pipeline_run, out);
	ms[2][0] = last_decode_ms, ms[2][1] = last_transform_ms;
	double tev = rate_pipeline(&tb, w, &eval, jpeg_pipeline_run, out);
	ms[3][0] = last_decode_ms, ms[3][1] = last_transform_ms;
	printf("images %dx%d 4:2:0 q90, output %ux%u %s, one thread, resize %s\n", b.w, b.h, size,
	       size, dtype == FEEDER_DTYPE_U8 ? "u8" : dtype == FEEDER_DTYPE_F32 ? "f32" : "f16",
	       impl == RESIZE_IMPL_PORTABLE ? "portable" : "auto");
	printf("full-size tjDecompress2     %8.0f images/s\n", full);
	printf("jpeg_pipeline_run train     %8.0f images/s (%.2fx full decode; decode %.3f ms, "
	       "transform %.3f ms)\n", tr, tr / full, ms[0][0], ms[0][1]);
	printf("jpeg_pipeline_run eval      %8.0f images/s (%.2fx full decode; decode %.3f ms, "
	       "transform %.3f ms)\n", ev, ev / full, ms[1][0], ms[1][1]);
	printf("jpeg_pipeline_reference     %8.0f images/s\n", ref);
	printf("tiled (restart %u MCUs, %+.1f %% bytes):\n", restart,
	       100.0 * ((double)tiled_bytes / plain_bytes - 1));
	printf("  full-size tjDecompress2   %8.0f images/s\n", tfull);
	printf("  jpeg_pipeline_run train   %8.0f images/s (%.2fx full decode; decode %.3f ms, "
	       "transform %.3f ms)\n", ttr, ttr / full, ms[2][0], ms[2][1]);
	printf("  jpeg_pipeline_run eval    %8.0f images/s (%.2fx full decode; decode %.3f ms, "
	       "transform %.3f ms)\n", tev, tev / full, ms[3][0], ms[3][1]);
	for (int i = 0; i < NIMG; i++)
		free(tb.jpeg[i]);
	free(out);
	jpeg_worker_destroy(w);
	for (int i = 0; i < NIMG; i++)
		tjFree(b.jpeg[i]);
	return 0;
}
