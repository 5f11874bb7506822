/* jpeg_pipeline_dump.c — run the jpeg pipeline on one file, for tests in
 * other languages (test_pil_parity.py holds it to PIL, i.e. to what
 * torchvision's transforms compute on PIL images). Prints the crop box
 * "x y w h flip" and writes the u8 NHWC output of jpeg_pipeline_run to OUT
 * and that of jpeg_pipeline_reference to OUT.ref (usage in main). */
#include "protocol.h"
#include "jpeg_pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

static int write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len) {
		fprintf(stderr, "jpeg_pipeline_dump: cannot write %s\n", path);
		if (f)
			fclose(f);
		return 1;
	}
	return fclose(f) != 0;
}

int main(int argc, char **argv)
{
	if (argc != 6 || (strcmp(argv[2], "train") && strcmp(argv[2], "eval"))) {
		fprintf(stderr, "usage: jpeg_pipeline_dump FILE.jpg train|eval SIZE KEY OUT\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		fprintf(stderr, "jpeg_pipeline_dump: cannot open %s\n", argv[1]);
		return 1;
	}
	static uint8_t jpeg[1 << 24];
	size_t len = fread(jpeg, 1, sizeof jpeg, f);
	fclose(f);
	if (len == sizeof jpeg) {
		fprintf(stderr, "jpeg_pipeline_dump: %s is larger than %zu bytes\n", argv[1],
			sizeof jpeg);
		return 1;
	}

	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, (uint32_t)atoi(argv[3]), !strcmp(argv[2], "train"));
	p.dtype = FEEDER_DTYPE_U8;
	p.layout = FEEDER_LAYOUT_NHWC;
	uint64_t key = strtoull(argv[4], NULL, 10);
	char err[256];
	struct jpeg_worker *w;
	if (jpeg_worker_create(&w, err, sizeof err)) {
		fprintf(stderr, "jpeg_pipeline_dump: %s\n", err);
		return 1;
	}
	size_t n = jpeg_pipeline_sample_bytes(&p);
	uint8_t *out = malloc(n), *ref = malloc(n);
	if (!out || !ref)
		return 1;
	if (jpeg_pipeline_run(w, &p, jpeg, len, key, out, err, sizeof err) ||
	    jpeg_pipeline_reference(w, &p, jpeg, len, key, ref, err, sizeof err)) {
		fprintf(stderr, "jpeg_pipeline_dump: %s\n", err);
		return 1;
	}
	int iw, ih, subsamp, colorspace; /* the planner needs the image size */
	tjhandle tj = tjInitDecompress();
	if (!tj || tjDecompressHeader3(tj, jpeg, len, &iw, &ih, &subsamp, &colorspace)) {
		fprintf(stderr, "jpeg_pipeline_dump: %s has no JPEG header\n", argv[1]);
		return 1;
	}
	tjDestroy(tj);
	struct jpeg_crop c;
	jpeg_pipeline_plan(&p.jpeg, (uint32_t)iw, (uint32_t)ih, key, &c);
	printf("%.17g %.17g %.17g %.17g %d\n", c.x, c.y, c.w, c.h, c.flip);
	char path[4096];
	snprintf(path, sizeof path, "%s.ref", argv[5]);
	int rc = write_file(argv[5], out, n) || write_file(path, ref, n);
	free(out);
	free(ref);
	jpeg_worker_destroy(w);
	return rc;
}
