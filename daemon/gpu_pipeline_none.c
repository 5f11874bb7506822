/* gpu_pipeline_none.c — gpu_pipeline.h in a build without CUDA (no nvcc, or
 * -Dcuda=disabled): every entry point refuses with FEEDER_ENODEV and a
 * sentence saying why, so feederd can turn `--gpu` into a clear start-up
 * error and placement=auto into cpu. */
#include "gpu_pipeline.h"

#include "status.h"

static int none(char *err, size_t errlen)
{
	return status_fail(err, errlen, FEEDER_ENODEV,
			   "gpu pipeline: feederd was built without CUDA (nvcc was not found or "
			   "-Dcuda=disabled), so it cannot preprocess on a GPU");
}

int gpu_pipeline_built(void)
{
	return 0;
}

int gpu_pipeline_devices(char *why, size_t whylen)
{
	return none(why, whylen);
}

int gpu_pipeline_create_jpeg(struct gpu_pipeline **out, int device,
			     const struct feeder_stream_opts *p, uint32_t max_batch,
			     size_t staging_bytes, char *err, size_t errlen)
{
	(void)device, (void)p, (void)max_batch, (void)staging_bytes;
	*out = NULL;
	return none(err, errlen);
}

int gpu_pipeline_create_features(struct gpu_pipeline **out, int device,
				 const struct feeder_stream_opts *p, uint32_t feat_dim,
				 uint32_t max_batch, size_t staging_bytes, char *err, size_t errlen)
{
	(void)device, (void)p, (void)feat_dim, (void)max_batch, (void)staging_bytes;
	*out = NULL;
	return none(err, errlen);
}

void gpu_pipeline_destroy(struct gpu_pipeline *g)
{
	(void)g;
}

int gpu_pipeline_begin(struct gpu_pipeline *g, char *err, size_t errlen)
{
	(void)g;
	return none(err, errlen);
}

int gpu_pipeline_stage_jpeg(struct gpu_pipeline *g, struct jpeg_worker *w, uint32_t index,
			    const uint8_t *jpeg, size_t len, uint64_t aug_key, char *err,
			    size_t errlen)
{
	(void)g, (void)w, (void)index, (void)jpeg, (void)len, (void)aug_key;
	return none(err, errlen);
}

int gpu_pipeline_stage_features(struct gpu_pipeline *g, uint32_t index,
				const struct dsformat_sample *s, const uint8_t *payload,
				uint64_t aug_key, char *err, size_t errlen)
{
	(void)g, (void)index, (void)s, (void)payload, (void)aug_key;
	return none(err, errlen);
}

int gpu_pipeline_submit(struct gpu_pipeline *g, uint32_t n, void *dev_dst, void *host_dst,
			char *err, size_t errlen)
{
	(void)g, (void)n, (void)dev_dst, (void)host_dst;
	return none(err, errlen);
}

int gpu_pipeline_wait(struct gpu_pipeline *g, char *err, size_t errlen)
{
	(void)g;
	return none(err, errlen);
}

void *gpu_pipeline_output(struct gpu_pipeline *g)
{
	(void)g;
	return NULL;
}

size_t gpu_pipeline_sample_bytes(const struct gpu_pipeline *g)
{
	(void)g;
	return 0;
}

uint32_t gpu_pipeline_cpu_finished(const struct gpu_pipeline *g)
{
	(void)g;
	return 0;
}

int gpu_pipeline_host_register(int device, void *p, size_t len, char *err, size_t errlen)
{
	(void)device, (void)p, (void)len;
	return none(err, errlen);
}

void gpu_pipeline_host_unregister(int device, void *p)
{
	(void)device, (void)p;
}
