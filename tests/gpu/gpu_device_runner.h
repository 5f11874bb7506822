/* gpu_device_runner.h — the gpu_cases.h runner that uses gpu_pipeline on
 * CUDA device 0, for the device tests. Batches alternate between the
 * context's own output buffer and an explicit device destination, and each
 * comes back to the host with the submit's one device-to-host copy. */
#ifndef FEEDER_GPU_DEVICE_RUNNER_H
#define FEEDER_GPU_DEVICE_RUNNER_H

#include "gpu_cases.h"
#include "gpu_pipeline.h"

static unsigned dev_runs;

/* Skip (77) with the reason when there is no device or no CUDA build. */
static inline void dev_require(void)
{
	char why[256];
	if (gpu_pipeline_devices(why, sizeof why) < 1)
		SKIP("%s", why);
}

static inline void *dev_open_jpeg(const struct feeder_stream_opts *p, uint32_t max_batch,
				  size_t staging)
{
	char err[256];
	struct gpu_pipeline *g;
	CHECKF(gpu_pipeline_create_jpeg(&g, 0, p, max_batch, staging, err, sizeof err) == 0, "%s",
	       err);
	return g;
}

static inline void *dev_open_features(const struct feeder_stream_opts *p, uint32_t dim,
				      uint32_t max_batch, size_t staging)
{
	char err[256];
	struct gpu_pipeline *g;
	CHECKF(gpu_pipeline_create_features(&g, 0, p, dim, max_batch, staging, err, sizeof err) ==
		       0,
	       "%s", err);
	return g;
}

static inline void dev_begin(void *ctx)
{
	char err[256];
	CHECKF(gpu_pipeline_begin(ctx, err, sizeof err) == 0, "%s", err);
}

static inline int dev_stage_jpeg(void *ctx, struct jpeg_worker *w, uint32_t i, const uint8_t *jpeg,
				 size_t len, uint64_t key, char *err, size_t errlen)
{
	return gpu_pipeline_stage_jpeg(ctx, w, i, jpeg, len, key, err, errlen);
}

static inline int dev_stage_features(void *ctx, uint32_t i, const struct dsformat_sample *s,
				     const uint8_t *payload, uint64_t key, char *err, size_t errlen)
{
	return gpu_pipeline_stage_features(ctx, i, s, payload, key, err, errlen);
}

static inline void dev_run(void *ctx, uint32_t n, void *out)
{
	char err[256];
	struct gpu_pipeline *g = ctx;
	void *dst = dev_runs++ % 2 ? gpu_pipeline_output(g) : NULL;
	CHECKF(gpu_pipeline_submit(g, n, dst, out, err, sizeof err) == 0, "%s", err);
	CHECK(gpu_pipeline_submit(g, n, dst, out, err, sizeof err) == FEEDER_EINVAL);
	CHECKF(gpu_pipeline_wait(g, err, sizeof err) == 0, "%s", err);
	CHECK(gpu_pipeline_wait(g, err, sizeof err) == 0);
}

static inline uint32_t dev_cpu_finished(void *ctx)
{
	return gpu_pipeline_cpu_finished(ctx);
}

static inline void dev_close(void *ctx)
{
	gpu_pipeline_destroy(ctx);
}

static const struct gpu_runner dev_runner = {
	"device",           dev_open_jpeg, dev_open_features, dev_begin, dev_stage_jpeg,
	dev_stage_features, dev_run,       dev_cpu_finished,  dev_close,
};

#endif
