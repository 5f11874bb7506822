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
 * --dir DIR takes up to 64 JPEGs found under DIR (e.g. gen-images output or
 * real photos) instead of the synthetic ones; the full decode then decodes
 * each at its own size. Options: the usage line in main. */
#define BENCH_NAME "pipeline_bench"
#include "bench_common.h"
#include "protocol.h"
#include "jpeg_pipeline.h"
#include "jpeg_synth.h"
#include "jpeg_tiles.h"
#include "resize.h"

#include <ftw.h>
#include <strings.h>
#include <sys/stat.h>

#define NIMG_MAX 64

/* Rates are of thread CPU time: steadier on a shared machine. */
#define now() bench_clock(CLOCK_THREAD_CPUTIME_ID)

struct bench {
	uint8_t *jpeg[NIMG_MAX];
	unsigned long len[NIMG_MAX];
	int n;
	int w, h; /* of the synthetic images; the largest of --dir's */
	double seconds;
};

static struct bench *loading;

static int take_jpeg(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)f;
	size_t l = strlen(path);
	if (type != FTW_F || l < 4 || strcasecmp(path + l - 4, ".jpg") || loading->n == NIMG_MAX)
		return loading->n == NIMG_MAX;
	FILE *fp = fopen(path, "rb");
	uint8_t *b = fp ? malloc((size_t)st->st_size) : NULL;
	if (!b || fread(b, 1, (size_t)st->st_size, fp) != (size_t)st->st_size)
		bench_fail("cannot read %s", path);
	fclose(fp);
	tjhandle tj = tjInitDecompress();
	int w, h, ss, cs;
	if (!tj || tjDecompressHeader3(tj, b, (unsigned long)st->st_size, &w, &h, &ss, &cs)) {
		free(b); /* not a JPEG we can size: skip it */
	} else {
		loading->jpeg[loading->n] = b;
		loading->len[loading->n++] = (unsigned long)st->st_size;
		loading->w = w > loading->w ? w : loading->w;
		loading->h = h > loading->h ? h : loading->h;
	}
	if (tj)
		tjDestroy(tj);
	return 0;
}

typedef int (*pipe_fn)(struct jpeg_worker *, const struct feeder_stream_opts *, const uint8_t *,
		       size_t, uint64_t, void *, char *, size_t);

/* Milliseconds per image in decoding and in transforming of the last
 * rate_pipeline run (the worker's own stage clocks). */
static double last_decode_ms, last_transform_ms;

static double rate_pipeline(const struct bench *b, struct jpeg_worker *w,
			    const struct feeder_stream_opts *p, pipe_fn fn, void *out)
{
	char err[256];
	double ds, ts;
	jpeg_worker_take_times(w, &ds, &ts);
	double t0 = now(), t;
	uint64_t n = 0;
	do {
		for (int i = 0; i < b->n; i++, n++)
			if (fn(w, p, b->jpeg[i], b->len[i], n, out, err, sizeof err))
				bench_fail("%s", err);
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
	if (!tj || !px)
		bench_fail("out of memory");
	double t0 = now(), t;
	uint64_t n = 0;
	do {
		for (int i = 0; i < b->n; i++, n++)
			if (tjDecompress2(tj, b->jpeg[i], b->len[i], px, 0, 0, 0, TJPF_RGB, 0))
				bench_fail("%s", tjGetErrorStr2(tj));
		t = now() - t0;
	} while (t < b->seconds);
	tjDestroy(tj);
	free(px);
	return n / t;
}

/* A row of the table: images/s of fn on b, against the full decode of the
 * plain images, and the stage times. */
static void row(const char *label, const struct bench *b, struct jpeg_worker *w,
		const struct feeder_stream_opts *p, void *out, double full)
{
	double r = rate_pipeline(b, w, p, jpeg_pipeline_run, out);
	printf("%-28s%8.0f images/s (%.2fx full decode; decode %.3f ms, transform %.3f ms)\n",
	       label, r, r / full, last_decode_ms, last_transform_ms);
}

int main(int argc, char **argv)
{
	struct bench b = { .w = 500, .h = 375, .seconds = 1.0 };
	const char *dir = NULL, *dtype_name = "f16", *resize = "auto";
	uint32_t size = 224;
	const struct bench_opt opts[] = {
		{ "--width", 'i', &b.w },        { "--height", 'i', &b.h },
		{ "--size", 'u', &size },        { "--seconds", 'd', &b.seconds },
		{ "--dtype", 's', &dtype_name }, { "--dir", 's', &dir },
		{ "--resize", 's', &resize }
	};
	bench_parse(argc, argv, opts, NULL);
	if (strcmp(resize, "auto") && strcmp(resize, "portable")) {
		fprintf(stderr,
			"usage: pipeline_bench [--width W --height H --size S "
			"--dtype u8|f16|f32 --seconds T --resize auto|portable --dir DIR]\n");
		return 2;
	}
	if (strcmp(dtype_name, "u8") && strcmp(dtype_name, "f32"))
		dtype_name = "f16";
	int dtype = !strcmp(dtype_name, "u8")    ? FEEDER_DTYPE_U8
		    : !strcmp(dtype_name, "f32") ? FEEDER_DTYPE_F32
						 : FEEDER_DTYPE_F16;
	int impl = !strcmp(resize, "auto") ? RESIZE_IMPL_AUTO : RESIZE_IMPL_PORTABLE;
	if (b.w < 16 || b.h < 16 || size < 1 || size > (uint32_t)(b.w < b.h ? b.w : b.h) ||
	    !(b.seconds > 0))
		bench_exit(2, "need 16 <= size <= image sides and seconds > 0");
	if (dir) {
		b.w = b.h = 0;
		loading = &b;
		if (nftw(dir, take_jpeg, 16, FTW_PHYS) < 0 || b.n == 0)
			bench_fail("no JPEGs under %s", dir);
	} else {
		b.n = 8;
		for (int i = 0; i < b.n; i++) {
			b.jpeg[i] =
				jpeg_synth(b.w, b.h, TJSAMP_420, 90, (unsigned)i + 1, &b.len[i]);
			if (!b.jpeg[i])
				bench_fail("could not make test images");
		}
	}
	resize_select(impl);
	char err[256];
	struct jpeg_worker *w;
	if (jpeg_worker_create(&w, err, sizeof err))
		bench_fail("%s", err);
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
	for (int i = 0; i < b.n; i++) {
		struct jpeg_tiles_result r;
		if (jpeg_tiles_transcode(tiler, b.jpeg[i], b.len[i], &pol, &r, err, sizeof err))
			bench_fail("transcode: %s", err);
		tb.jpeg[i] = r.data;
		tb.len[i] = r.len;
		restart = r.restart;
		plain_bytes += b.len[i];
		tiled_bytes += r.len;
	}
	jpeg_tiler_destroy(tiler);
	if (dir)
		printf("%d JPEGs from %s (up to %dx%d)", b.n, dir, b.w, b.h);
	else
		printf("8 synthetic images %dx%d 4:2:0 q90", b.w, b.h);
	printf(", output %ux%u %s, one thread, resize %s\n", size, size, dtype_name, resize);
	double full = rate_full_decode(&b);
	printf("%-28s%8.0f images/s\n", "full-size tjDecompress2", full);
	row("jpeg_pipeline_run train", &b, w, &train, out, full);
	row("jpeg_pipeline_run eval", &b, w, &eval, out, full);
	printf("%-28s%8.0f images/s\n", "jpeg_pipeline_reference",
	       rate_pipeline(&b, w, &train, jpeg_pipeline_reference, out));
	printf("tiled (restart %u MCUs, %+.1f %% bytes):\n", restart,
	       100.0 * ((double)tiled_bytes / plain_bytes - 1));
	printf("%-28s%8.0f images/s\n", "  full-size tjDecompress2", rate_full_decode(&tb));
	row("  jpeg_pipeline_run train", &tb, w, &train, out, full);
	row("  jpeg_pipeline_run eval", &tb, w, &eval, out, full);
	/* the same two with libjpeg's own Huffman decoder (jpeg_huff.h) */
	printf("  the same with libjpeg's Huffman decoder:\n");
	jpeg_worker_set_huff(w, 0);
	row("  jpeg_pipeline_run train", &tb, w, &train, out, full);
	row("  jpeg_pipeline_run eval", &tb, w, &eval, out, full);
	jpeg_worker_set_huff(w, 1);
	for (int i = 0; i < b.n; i++)
		free(tb.jpeg[i]);
	free(out);
	jpeg_worker_destroy(w);
	for (int i = 0; i < b.n; i++)
		if (dir)
			free(b.jpeg[i]);
		else
			tjFree(b.jpeg[i]);
	return 0;
}
