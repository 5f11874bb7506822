/* gpu_pipeline.h — the jpeg and features pipelines with their arithmetic on
 * a CUDA device, one batch at a time.
 *
 * A gpu_pipeline is a per-device context for one kind of batch: a CUDA
 * stream, a pinned staging block (gpu_staging.h) sized for max_batch
 * samples, its mirror in device memory, and a device output buffer of
 * max_batch samples (allocated on its first use: a context that writes
 * straight into a device ring never has one). A batch goes:
 *
 *   gpu_pipeline_begin            (waits for the previous batch, empties staging)
 *   gpu_pipeline_stage_jpeg/_features   per sample, from any worker threads
 *   gpu_pipeline_submit           one host-to-device copy, ONE kernel, and
 *                                 optionally one device-to-host copy
 *   gpu_pipeline_wait             the batch is in place (or its CUDA error)
 *
 * Worker threads only decode into host memory (no CUDA calls); begin,
 * submit and wait belong to one thread at a time and must not overlap a
 * stage call (the caller's pool hands the batch over with a barrier or a
 * lock). A context holds one batch in flight: to overlap staging the next
 * batch with the device work of this one, use two contexts.
 *
 * The kernels compute what jpeg_pipeline_run and features_pipeline_run
 * compute (same region, IDCT scale, resize weights, crop, flip,
 * normalization, dtype and layout; same chunk, windows and statistics):
 * tests/gpu holds them to the CPU pipelines. Built from gpu_pipeline.cu
 * with nvcc; without CUDA, gpu_pipeline_none.c answers FEEDER_ENODEV. */
#ifndef FEEDER_GPU_PIPELINE_H
#define FEEDER_GPU_PIPELINE_H

#include "dsformat.h"
#include "features_pipeline.h"
#include "jpeg_pipeline.h"

#include <stddef.h>
#include <stdint.h>

struct gpu_pipeline;

/* 1 if this build has the CUDA pipeline, 0 if not. */
int gpu_pipeline_built(void);

/* Number of CUDA devices (>= 1), or FEEDER_ENODEV with the reason in why
 * (built without CUDA, no driver, no device). */
int gpu_pipeline_devices(char *why, size_t whylen);

/* A context on CUDA device `device` for batches of up to max_batch jpeg
 * samples made with p (which must have passed proto_opts_check: feederd's
 * admission; nothing here checks it again). staging_bytes sizes the pinned
 * staging block (0: gpu_staging_default_bytes_jpeg); samples that do not
 * fit are finished on the CPU. Returns 0, FEEDER_ENODEV (no such device,
 * CUDA not built), FEEDER_EINVAL (max_batch out of range, or staging_bytes
 * below the descriptors plus max_batch finished samples) or -ENOMEM (host
 * or device memory), with err filled. */
int gpu_pipeline_create_jpeg(struct gpu_pipeline **out, int device,
			     const struct feeder_stream_opts *p, uint32_t max_batch,
			     size_t staging_bytes, char *err, size_t errlen);

/* The same for features samples of feat_dim columns made with p. staging
 * 0: gpu_staging_default_bytes_features(p, feat_dim, max_batch, 0). */
int gpu_pipeline_create_features(struct gpu_pipeline **out, int device,
				 const struct feeder_stream_opts *p, uint32_t feat_dim,
				 uint32_t max_batch, size_t staging_bytes, char *err,
				 size_t errlen);

/* Waits for any batch in flight, then frees everything. NULL is a no-op. */
void gpu_pipeline_destroy(struct gpu_pipeline *g);

/* Start a batch: wait for the one in flight (returning its error, if any,
 * after which the context is still usable) and empty the staging block. */
int gpu_pipeline_begin(struct gpu_pipeline *g, char *err, size_t errlen);

/* Stage sample `index` of the batch: as gpu_staging_jpeg / _features. */
int gpu_pipeline_stage_jpeg(struct gpu_pipeline *g, struct jpeg_worker *w, uint32_t index,
			    const uint8_t *jpeg, size_t len, uint64_t aug_key, char *err,
			    size_t errlen);
int gpu_pipeline_stage_features(struct gpu_pipeline *g, uint32_t index,
				const struct dsformat_sample *s, const uint8_t *payload,
				uint64_t aug_key, char *err, size_t errlen);

/* Make samples 0..n-1 (all staged) into n consecutive samples of
 * gpu_pipeline_sample_bytes each at dev_dst, device memory of the context's
 * device (a device-resident ring slot; NULL: the context's own buffer,
 * gpu_pipeline_output). If host_dst is not NULL, the result is also copied
 * there (a host ring slot; pinned or cudaHostRegister'ed memory keeps the
 * copy asynchronous). Returns once the work is queued: 0, or FEEDER_EINVAL
 * (n, unstaged samples, a batch already in flight), -ENOMEM (no room for
 * the output buffer) or FEEDER_ENODEV (a CUDA error) with err filled. Neither destination may be touched before
 * gpu_pipeline_wait returns. */
int gpu_pipeline_submit(struct gpu_pipeline *g, uint32_t n, void *dev_dst, void *host_dst,
			char *err, size_t errlen);

/* Wait for the submitted batch. 0 (also when none is in flight), or
 * FEEDER_ENODEV with the CUDA error in err. */
int gpu_pipeline_wait(struct gpu_pipeline *g, char *err, size_t errlen);

/* The context's device output buffer: max_batch samples, allocated now if
 * it was not yet (NULL if that fails). */
void *gpu_pipeline_output(struct gpu_pipeline *g);

/* Bytes of one output sample. */
size_t gpu_pipeline_sample_bytes(const struct gpu_pipeline *g);

/* Page-lock len bytes of host memory at p (a stream's memfd ring) for
 * device's copies, so that a host-ring slot is written by DMA without a
 * driver staging copy (cudaHostRegister). 0, or FEEDER_ENODEV with err
 * filled (the copies then still work, through pageable memory). */
int gpu_pipeline_host_register(int device, void *p, size_t len, char *err, size_t errlen);
/* Undo it (no copy into p may be in flight). */
void gpu_pipeline_host_unregister(int device, void *p);

/* Samples of the current batch that were finished on the CPU because the
 * staging block was full (a sign that staging_bytes is too small). */
uint32_t gpu_pipeline_cpu_finished(const struct gpu_pipeline *g);

#endif
