/* gpu_pipeline.cu — the device half of the GPU pipeline: the per-device
 * context (stream, pinned staging, device buffers) and the one kernel per
 * batch that turns staged jpeg regions or feature frames into the batch
 * tensor; see gpu_pipeline.h.
 *
 * The kernels are the simplest correct form: one thread per output pixel
 * (jpeg, all three channels) or per output value (features), consecutive
 * threads on consecutive output elements so that writes coalesce, a
 * grid-stride loop so that any batch fits any grid. The per-element math
 * is gpu_staging.h's, shared with the host executor the CPU tests run.
 * Every CUDA call's result is checked and turned into an error sentence;
 * the staging block is only reused after the event that follows the copy
 * and the kernel has completed. */
extern "C" {
#include "gpu_pipeline.h"
#include "status.h"
}
#include "gpu_staging.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define GPU_THREADS 256
/* Grid cap: the grid-stride loop covers any remainder. */
#define GPU_MAX_BLOCKS (1u << 20)

struct gpu_pipeline {
	int device;
	cudaStream_t stream;
	cudaEvent_t done;
	int have_stream, have_event;
	uint8_t *host_stage; /* pinned staging block */
	uint8_t *dev_stage;  /* its device mirror */
	uint8_t *dev_out;    /* max_batch output samples */
	size_t stage_bytes;
	struct gpu_staging st;
	int in_flight;
};

/* "gpu pipeline: <what> on device N: <CUDA's reason>"; -ENOMEM for an
 * allocation failure, FEEDER_ENODEV for anything else the device reports. */
static int cuda_fail(char *err, size_t errlen, int device, cudaError_t e, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int cuda_fail(char *err, size_t errlen, int device, cudaError_t e, const char *fmt, ...)
{
	char what[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	int code = e == cudaErrorMemoryAllocation ? -ENOMEM : FEEDER_ENODEV;
	return status_fail(err, errlen, code, "gpu pipeline: %s on CUDA device %d: %s", what,
			   device, cudaGetErrorString(e));
}

__global__ void gpu_jpeg_kernel(const uint8_t *__restrict__ stage, struct gpu_out_params o,
				uint8_t *__restrict__ out, uint32_t n)
{
	const struct gpu_sample_desc *desc = (const struct gpu_sample_desc *)stage;
	const size_t per = (size_t)o.out_h * o.out_w, total = per * n;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint32_t b = (uint32_t)(i / per);
		size_t r = i - (size_t)b * per;
		uint32_t y = (uint32_t)(r / o.out_w), x = (uint32_t)(r - (size_t)y * o.out_w);
		gpu_jpeg_pixel(stage, &desc[b], &o, x, y, out + (size_t)b * o.sample_bytes);
	}
}

__global__ void gpu_features_kernel(const uint8_t *__restrict__ stage, struct gpu_out_params o,
				    uint8_t *__restrict__ out, uint32_t n)
{
	const struct gpu_sample_desc *desc = (const struct gpu_sample_desc *)stage;
	const size_t per = (size_t)o.dim * o.chunk_len, total = per * n;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint32_t b = (uint32_t)(i / per);
		size_t r = i - (size_t)b * per;
		uint32_t k = (uint32_t)(r / o.chunk_len),
			 t = (uint32_t)(r - (size_t)k * o.chunk_len);
		gpu_features_value(stage, &desc[b], &o, k, t, out + (size_t)b * o.sample_bytes);
	}
}

extern "C" int gpu_pipeline_built(void)
{
	return 1;
}

extern "C" int gpu_pipeline_devices(char *why, size_t whylen)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess)
		return status_fail(why, whylen, FEEDER_ENODEV, "no usable CUDA device: %s",
				   cudaGetErrorString(e));
	if (n == 0)
		return status_fail(why, whylen, FEEDER_ENODEV, "no CUDA device present");
	return n;
}

extern "C" void gpu_pipeline_destroy(struct gpu_pipeline *g)
{
	if (!g)
		return;
	/* Errors here have nowhere to go; the memory is released either way. */
	if (cudaSetDevice(g->device) == cudaSuccess && g->have_stream)
		(void)cudaStreamSynchronize(g->stream);
	if (g->dev_out)
		(void)cudaFree(g->dev_out);
	if (g->dev_stage)
		(void)cudaFree(g->dev_stage);
	if (g->host_stage)
		(void)cudaFreeHost(g->host_stage);
	if (g->have_event)
		(void)cudaEventDestroy(g->done);
	if (g->have_stream)
		(void)cudaStreamDestroy(g->stream);
	free(g);
}

/* Device, stream, event and the pinned staging block of stage_bytes; the
 * caller lays out the block, then calls alloc_device. */
static int create_common(struct gpu_pipeline **out, int device, size_t stage_bytes, char *err,
			 size_t errlen)
{
	*out = NULL;
	int n = gpu_pipeline_devices(err, errlen);
	if (n < 0)
		return n;
	if (device < 0 || device >= n)
		return status_fail(err, errlen, FEEDER_ENODEV,
				   "gpu pipeline: CUDA device %d does not exist (%d present)",
				   device, n);
	struct gpu_pipeline *g = (struct gpu_pipeline *)calloc(1, sizeof *g);
	if (!g)
		return status_fail(err, errlen, -ENOMEM, "gpu pipeline: out of memory");
	g->device = device;
	g->stage_bytes = stage_bytes;
	cudaError_t e = cudaSetDevice(device);
	if (e != cudaSuccess) {
		free(g);
		return cuda_fail(err, errlen, device, e, "selecting the device");
	}
	int rc = 0;
	if ((e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess) {
		rc = cuda_fail(err, errlen, device, e, "creating a stream");
		goto fail;
	}
	g->have_stream = 1;
	/* blocking: the thread that waits sleeps instead of spinning on a
	 * core that the decoding workers need */
	e = cudaEventCreateWithFlags(&g->done, cudaEventDisableTiming | cudaEventBlockingSync);
	if (e != cudaSuccess) {
		rc = cuda_fail(err, errlen, device, e, "creating an event");
		goto fail;
	}
	g->have_event = 1;
	if ((e = cudaHostAlloc((void **)&g->host_stage, stage_bytes, cudaHostAllocDefault)) !=
	    cudaSuccess) {
		g->host_stage = NULL;
		rc = cuda_fail(err, errlen, device, e,
			       "allocating %zu bytes of pinned staging memory", stage_bytes);
		goto fail;
	}
	*out = g;
	return 0;
fail:
	gpu_pipeline_destroy(g);
	return rc;
}

/* The device mirror of the staging block. */
static int alloc_device(struct gpu_pipeline *g, char *err, size_t errlen)
{
	cudaError_t e = cudaMalloc((void **)&g->dev_stage, g->stage_bytes);
	if (e != cudaSuccess) {
		g->dev_stage = NULL;
		return cuda_fail(err, errlen, g->device, e,
				 "allocating %zu bytes of device staging", g->stage_bytes);
	}
	return 0;
}

/* The output buffer, on first use only: a context whose batches always go
 * to the caller's device memory (a device ring's slot) never needs one. */
static int alloc_output(struct gpu_pipeline *g, char *err, size_t errlen)
{
	if (g->dev_out)
		return 0;
	cudaError_t e = cudaSetDevice(g->device);
	if (e != cudaSuccess)
		return cuda_fail(err, errlen, g->device, e, "selecting the device");
	size_t out_bytes = (size_t)g->st.max_batch * g->st.out.sample_bytes;
	e = cudaMalloc((void **)&g->dev_out, out_bytes);
	if (e != cudaSuccess) {
		g->dev_out = NULL;
		return cuda_fail(err, errlen, g->device, e, "allocating a %zu-byte output buffer",
				 out_bytes);
	}
	return 0;
}

extern "C" int gpu_pipeline_create_jpeg(struct gpu_pipeline **out, int device,
					const struct feeder_stream_opts *p, uint32_t max_batch,
					size_t staging_bytes, char *err, size_t errlen)
{
	*out = NULL;
	int rc;
	if (staging_bytes == 0)
		staging_bytes = gpu_staging_default_bytes_jpeg(p, max_batch);
	struct gpu_pipeline *g;
	if ((rc = create_common(&g, device, staging_bytes, err, errlen)))
		return rc;
	if ((rc = gpu_staging_init_jpeg(&g->st, g->host_stage, staging_bytes, max_batch, p, err,
					errlen)) ||
	    (rc = alloc_device(g, err, errlen))) {
		gpu_pipeline_destroy(g);
		return rc;
	}
	*out = g;
	return 0;
}

extern "C" int gpu_pipeline_create_features(struct gpu_pipeline **out, int device,
					    const struct feeder_stream_opts *p, uint32_t feat_dim,
					    uint32_t max_batch, size_t staging_bytes, char *err,
					    size_t errlen)
{
	*out = NULL;
	int rc;
	if (staging_bytes == 0)
		staging_bytes = gpu_staging_default_bytes_features(p, feat_dim, max_batch, 0);
	struct gpu_pipeline *g;
	if ((rc = create_common(&g, device, staging_bytes, err, errlen)))
		return rc;
	if ((rc = gpu_staging_init_features(&g->st, g->host_stage, staging_bytes, max_batch, p,
					    feat_dim, err, errlen)) ||
	    (rc = alloc_device(g, err, errlen))) {
		gpu_pipeline_destroy(g);
		return rc;
	}
	*out = g;
	return 0;
}

extern "C" int gpu_pipeline_wait(struct gpu_pipeline *g, char *err, size_t errlen)
{
	if (!g->in_flight)
		return 0;
	g->in_flight = 0;
	cudaError_t e = cudaSetDevice(g->device);
	if (e == cudaSuccess)
		e = cudaEventSynchronize(g->done);
	if (e != cudaSuccess)
		return cuda_fail(err, errlen, g->device, e, "running a batch");
	return 0;
}

extern "C" int gpu_pipeline_begin(struct gpu_pipeline *g, char *err, size_t errlen)
{
	int rc = gpu_pipeline_wait(g, err, errlen);
	gpu_staging_reset(&g->st);
	return rc;
}

extern "C" int gpu_pipeline_stage_jpeg(struct gpu_pipeline *g, struct jpeg_worker *w,
				       uint32_t index, const uint8_t *jpeg, size_t len,
				       uint64_t aug_key, char *err, size_t errlen)
{
	return gpu_staging_jpeg(&g->st, w, index, jpeg, len, aug_key, err, errlen);
}

extern "C" int gpu_pipeline_stage_features(struct gpu_pipeline *g, uint32_t index,
					   const struct dsformat_sample *s, const uint8_t *payload,
					   uint64_t aug_key, char *err, size_t errlen)
{
	return gpu_staging_features(&g->st, index, s, payload, aug_key, err, errlen);
}

/* dev_dst must be device (or managed) memory the context's device can
 * write: anything else would fault the kernel and poison the context. */
static int check_dst(const struct gpu_pipeline *g, const void *dev_dst, char *err, size_t errlen)
{
	cudaPointerAttributes a;
	cudaError_t e = cudaPointerGetAttributes(&a, dev_dst);
	if (e != cudaSuccess)
		return cuda_fail(err, errlen, g->device, e, "checking the output pointer");
	if ((a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged) ||
	    (a.type == cudaMemoryTypeDevice && a.device != g->device))
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"gpu pipeline: the output pointer is not memory of CUDA device %d",
			g->device);
	return 0;
}

extern "C" int gpu_pipeline_submit(struct gpu_pipeline *g, uint32_t n, void *dev_dst,
				   void *host_dst, char *err, size_t errlen)
{
	if (g->in_flight)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"gpu pipeline: a batch is already in flight (call gpu_pipeline_wait)");
	size_t bytes = 0;
	int rc = gpu_staging_bytes(&g->st, n, &bytes, err, errlen);
	if (rc)
		return rc;
	if (!dev_dst && (rc = alloc_output(g, err, errlen)))
		return rc;
	cudaError_t e = cudaSetDevice(g->device);
	if (e != cudaSuccess)
		return cuda_fail(err, errlen, g->device, e, "selecting the device");
	uint8_t *dst = dev_dst ? (uint8_t *)dev_dst : g->dev_out;
	if (dev_dst && (rc = check_dst(g, dev_dst, err, errlen)))
		return rc;
	const struct gpu_out_params o = g->st.out;
	size_t total = o.kind == GPU_KIND_JPEG ? (size_t)o.out_h * o.out_w * n
					       : (size_t)o.dim * o.chunk_len * n;
	size_t blocks = (total + GPU_THREADS - 1) / GPU_THREADS;
	unsigned grid = blocks > GPU_MAX_BLOCKS ? GPU_MAX_BLOCKS : (unsigned)blocks;

	e = cudaMemcpyAsync(g->dev_stage, g->host_stage, bytes, cudaMemcpyHostToDevice, g->stream);
	if (e != cudaSuccess) {
		rc = cuda_fail(err, errlen, g->device, e, "copying %zu staged bytes", bytes);
		goto drain;
	}
	if (o.kind == GPU_KIND_JPEG)
		gpu_jpeg_kernel<<<grid, GPU_THREADS, 0, g->stream>>>(g->dev_stage, o, dst, n);
	else
		gpu_features_kernel<<<grid, GPU_THREADS, 0, g->stream>>>(g->dev_stage, o, dst, n);
	if ((e = cudaGetLastError()) != cudaSuccess) {
		rc = cuda_fail(err, errlen, g->device, e, "launching the %s kernel",
			       o.kind == GPU_KIND_JPEG ? "jpeg" : "features");
		goto drain;
	}
	if (host_dst) {
		e = cudaMemcpyAsync(host_dst, dst, (size_t)n * o.sample_bytes,
				    cudaMemcpyDeviceToHost, g->stream);
		if (e != cudaSuccess) {
			rc = cuda_fail(err, errlen, g->device, e, "copying the batch to the host");
			goto drain;
		}
	}
	if ((e = cudaEventRecord(g->done, g->stream)) != cudaSuccess) {
		rc = cuda_fail(err, errlen, g->device, e, "recording the batch's event");
		goto drain;
	}
	g->in_flight = 1;
	return 0;
drain:
	/* Work already queued still reads the staging block: let it finish
	 * before the caller may reset it. */
	(void)cudaStreamSynchronize(g->stream);
	return rc;
}

extern "C" void *gpu_pipeline_output(struct gpu_pipeline *g)
{
	char err[200];
	return alloc_output(g, err, sizeof err) == 0 ? g->dev_out : NULL;
}

extern "C" size_t gpu_pipeline_sample_bytes(const struct gpu_pipeline *g)
{
	return g->st.out.sample_bytes;
}

extern "C" uint32_t gpu_pipeline_cpu_finished(const struct gpu_pipeline *g)
{
	return __atomic_load_n(&g->st.cpu_finished, __ATOMIC_RELAXED);
}

extern "C" int gpu_pipeline_host_register(int device, void *p, size_t len, char *err, size_t errlen)
{
	cudaError_t e = cudaSetDevice(device);
	if (e == cudaSuccess)
		e = cudaHostRegister(p, len, cudaHostRegisterPortable);
	return e == cudaSuccess ? 0 : cuda_fail(err, errlen, device, e, "registering a host ring");
}

extern "C" void gpu_pipeline_host_unregister(int device, void *p)
{
	if (cudaSetDevice(device) == cudaSuccess)
		cudaHostUnregister(p);
	cudaGetLastError();
}
