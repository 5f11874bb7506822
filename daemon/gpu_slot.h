/* gpu_slot.h — one batch's GPU preprocessing context, as feederd's streams
 * use it: worker threads stage a batch's samples (entropy decode of the
 * crop region, or the frames a chunk needs) and the worker that completes
 * the batch submits it, which runs the resize / normalization / dtype /
 * layout (or the features normalization) as one kernel and waits for it. A
 * stream holds a few of them and lends one to each batch it runs on the GPU
 * (gpu_setup in stream.c says how many); workers create them when first
 * needed and gpu_slot_retire frees them on a thread of its own, since
 * pinned and device memory are slow to allocate and free, and freeing
 * synchronises the device.
 *
 * The context runs on a CUDA device (gpu_pipeline.h) or, for tests on
 * machines without a GPU, on an emulated device: the same staging block and
 * the same per-element code (gpu_staging_run_host) executed on the host by
 * the submitting thread. feederd emulates only when started with --gpu N and
 * FEEDERD_GPU_EMULATE=1 in its environment, and says so in its log; the
 * emulation runs everything of the GPU placement path except the CUDA
 * kernels, copies and IPC. */
#ifndef FEEDER_GPU_SLOT_H
#define FEEDER_GPU_SLOT_H

#include "dsformat.h"
#include "features_pipeline.h"
#include "jpeg_pipeline.h"

#include <stddef.h>
#include <stdint.h>

struct gpu_slot;

/* Device index meaning "emulated on the host". */
#define GPU_SLOT_EMULATED (-2)

/* A context for batches of up to max_batch samples of a stream with
 * options o (o->pipeline: jpeg, or features of feat_dim columns). Returns
 * 0, FEEDER_ENODEV, -ENOMEM, or FEEDER_EINVAL for another pipeline (wave
 * runs on the CPU only), with err filled. Blocks for as long as CUDA takes
 * to allocate: not on the event loop. */
int gpu_slot_create(struct gpu_slot **out, int device, const struct feeder_stream_opts *o,
		    uint32_t feat_dim, uint32_t max_batch, char *err, size_t errlen);
/* Free g now (blocks: synchronises the device). NULL is a no-op. */
void gpu_slot_destroy(struct gpu_slot *g);
/* Give g up without blocking: a thread of this module frees it (or, if that
 * thread cannot be started, the caller does now). No batch of g may be in
 * flight or staging. NULL is a no-op. */
void gpu_slot_retire(struct gpu_slot *g);
/* Wait until every retired context is freed: at shutdown, once no stream
 * is left to retire one, so that feederd exits with its memory given back. */
void gpu_slot_reap_wait(void);

/* Empty the staging for a new batch (no batch may be in flight). */
int gpu_slot_begin(struct gpu_slot *g, char *err, size_t errlen);

/* Stage sample index: a jpeg record, or a features record. Returns what
 * gpu_pipeline_stage_* return (0, FEEDER_EDECODE, FEATURES_SKIPPED, ...). */
int gpu_slot_stage(struct gpu_slot *g, struct jpeg_worker *w, uint32_t index,
		   const struct dsformat_sample *s, const uint8_t *payload, uint64_t aug_key,
		   char *err, size_t errlen);

/* Make samples 0..n-1 into dev_dst (device memory of the context's device,
 * or NULL) and/or host_dst (a host slot), and wait until they are there. */
int gpu_slot_run(struct gpu_slot *g, uint32_t n, void *dev_dst, void *host_dst, char *err,
		 size_t errlen);

/* Samples of the last batch finished on the CPU for lack of staging room. */
uint32_t gpu_slot_cpu_finished(const struct gpu_slot *g);

#endif
