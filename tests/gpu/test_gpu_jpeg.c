/* test_gpu_jpeg.c — the jpeg pipeline on a CUDA device against the CPU
 * pipeline (jpeg_pipeline_run) for the same params and aug_keys: train and
 * eval, u8/f16/f32, NCHW/NHWC, MAD <= 2/255 with the largest difference
 * printed, CPU-finished samples byte-identical (gpu_cases.h); and the
 * context's refusals: a destination that is not device memory, unstaged
 * samples, a second submit in flight. Skips (77) without a device. */
#include "protocol.h"
#include "gpu_device_runner.h"

static void refusals(void)
{
	char err[256];
	struct jpeg_worker *w;
	CHECK(jpeg_worker_create(&w, err, sizeof err) == 0);
	struct feeder_stream_opts p;
	proto_opts_jpeg(&p, 32, 1);
	struct gpu_pipeline *g = dev_open_jpeg(&p, 2, 0);
	CHECK(gpu_pipeline_sample_bytes(g) == jpeg_pipeline_sample_bytes(&p));
	CHECK(gpu_pipeline_output(g) != NULL);
	unsigned long len;
	uint8_t *jpeg = jpeg_synth(96, 80, TJSAMP_420, 85, 1, &len);
	CHECK(jpeg);
	dev_begin(g);
	CHECK(gpu_pipeline_stage_jpeg(g, w, 0, jpeg, len, 1, err, sizeof err) == 0);
	CHECK(gpu_pipeline_submit(g, 2, NULL, NULL, err, sizeof err) == FEEDER_EINVAL);
	printf("unstaged: %s\n", err);
	float host[4];
	CHECK(gpu_pipeline_submit(g, 1, host, NULL, err, sizeof err) == FEEDER_EINVAL);
	printf("host memory as device destination: %s\n", err);
	/* the context is still usable after refusals */
	float *out = malloc(gpu_pipeline_sample_bytes(g)),
	      *want = malloc(gpu_pipeline_sample_bytes(g));
	CHECK(out && want);
	CHECKF(gpu_pipeline_submit(g, 1, NULL, out, err, sizeof err) == 0, "%s", err);
	CHECKF(gpu_pipeline_begin(g, err, sizeof err) == 0, "%s", err); /* waits */
	CHECK(jpeg_pipeline_run(w, &p, jpeg, len, 1, want, err, sizeof err) == 0);
	double worst = 0;
	for (size_t i = 0; i < 3 * 32 * 32; i++)
		worst = fmax(worst, fabs((double)out[i] - want[i]));
	CHECKF(worst < 0.05, "after refusals: max abs diff %g", worst);
	gpu_pipeline_destroy(g);
	free(out);
	free(want);
	tjFree(jpeg);
	jpeg_worker_destroy(w);
}

int main(void)
{
	dev_require();
	refusals();
	gc_jpeg_all(&dev_runner);
	return 0;
}
