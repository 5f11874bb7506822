/* gpu_staging.h — the host half of the GPU pipeline: what worker threads
 * put into pinned staging memory for a batch, and the per-element math the
 * device runs on it.
 *
 * A staging block is one allocation (pinned host memory, mirrored byte for
 * byte in device memory by one copy per batch): an array of max_batch
 * sample descriptors, then an arena that worker threads fill concurrently
 * (a lock-free bump allocator). For a jpeg sample a worker decodes only the
 * crop's region with the CPU pipeline's own code (jpeg_pipeline_decode, the
 * same region, IDCT scale and resize plans) straight into the arena, and
 * stores the two resize plans (PIL-style triangle weights from
 * resize_axis_plan) next to it; for a features sample it copies the frames
 * the chunk and its statistics need and a table of source frame and
 * statistics window per chunk frame (features_pipeline_source/_window).
 * When the arena has no room for a sample, the worker finishes that sample
 * on the CPU (jpeg_pipeline_run / features_pipeline_run) into a smaller
 * arena piece and the device only copies it. The arena always keeps that
 * much room for every sample not staged yet, so a batch never fails for
 * lack of staging room.
 *
 * gpu_jpeg_pixel and gpu_features_value are the device's per-element work
 * (gpu_pipeline.cu's kernels call them, one thread per output pixel or
 * value). They compile for the host too: gpu_staging_run_host runs them over
 * a batch, so the staging layout and the math are tested against the CPU
 * pipelines on machines without a GPU (tests/gpu/test_gpu_staging.c).
 *
 * Offsets in descriptors are bytes from the start of the block, so they
 * mean the same in the host and the device copy. Thread safety: stage calls
 * for different indices may run concurrently; reset and run_host (and the
 * device submission) must not overlap any stage call. */
#ifndef FEEDER_GPU_STAGING_H
#define FEEDER_GPU_STAGING_H

#ifdef __cplusplus
extern "C" {
#endif
#include "features_pipeline.h"
#include "half.h"
#include "jpeg_pipeline.h"
#ifdef __cplusplus
}
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define GPU_HD __host__ __device__
#else
#define GPU_HD
#endif

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the staging block holds little-endian frames as packed; this host is not little-endian"
#endif

enum { GPU_KIND_JPEG = 1, GPU_KIND_FEATURES = 2 };

/* What a descriptor holds. */
enum {
	GPU_STAGE_EMPTY = 0,    /* not staged yet: the batch cannot be submitted */
	GPU_STAGE_RESIZE = 1,   /* jpeg region + resize plans: the device resizes */
	GPU_STAGE_FEATURES = 2, /* frames + source/window table: the device normalizes */
	GPU_STAGE_READY = 3,    /* finished on the CPU: the device copies it */
};

/* Arena pieces are aligned to this (the widest element, and float4 loads). */
#define GPU_STAGING_ALIGN 16

struct gpu_sample_desc {
	uint32_t mode;  /* GPU_STAGE_* */
	uint32_t flip;  /* RESIZE: mirror left-right */
	uint64_t data;  /* RESIZE: region pixels; FEATURES: frames; READY: the sample */
	uint64_t table; /* RESIZE: x plan then y plan; FEATURES: src, lo, hi (chunk_len u32 each) */
	uint32_t stride;         /* RESIZE: bytes from one region row to the next */
	uint32_t cols;           /* RESIZE: region columns; FEATURES: feature dimension */
	uint32_t rows;           /* RESIZE: region rows; FEATURES: frames staged */
	uint32_t taps_x, taps_y; /* RESIZE: weights stored per output column / row */
	uint32_t f16;            /* FEATURES: frames are float16 (else float32) */
	uint64_t spare;          /* a finished-sample piece this index owns already (0: none) */
};

/* A RESIZE plan table at desc.table: for the x axis, int32 start[out_w],
 * int32 count[out_w], float w[out_w * taps_x] (start and count in region
 * columns); then the same for the y axis with out_h and taps_y. */

/* What every sample of the batch becomes. */
struct gpu_out_params {
	uint32_t kind;           /* GPU_KIND_* */
	uint32_t dtype, layout;  /* enum feeder_dtype, feeder_layout (features: dim-major) */
	uint32_t out_h, out_w;   /* jpeg */
	float mul[3], add[3];    /* jpeg f16/f32: value = pixel * mul + add */
	uint32_t dim, chunk_len; /* features */
	uint32_t cmn, cvn;       /* features: enum feeder_feat_cmn, 0/1 */
	uint64_t sample_bytes;   /* one output sample */
};

struct gpu_staging {
	uint8_t *base;         /* the block (caller's memory) */
	size_t cap;            /* its bytes */
	size_t arena;          /* where the arena starts */
	size_t used;           /* bump pointer, bytes from base (<= cap); atomic */
	uint32_t cpu_finished; /* READY samples this batch; atomic */
	uint32_t unstaged;     /* of max_batch, not staged yet this batch; atomic */
	uint32_t max_batch;
	struct gpu_out_params out;
	struct feeder_stream_opts opts; /* what the samples become */
};

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of a staging block that holds max_batch typical samples: jpeg
 * regions of up to 6x the output area (the CPU pipeline's IDCT scaling
 * keeps a region between 1.5x and 3x the output per side, 2.25x to 9x the
 * area), features of up to max_frames frames each (0: twice the chunk plus
 * the cmn window), and the reserve of a finished sample each. Larger
 * samples fall back to the CPU, so the size trades pinned memory against
 * CPU work: gpu_pipeline_cpu_finished tells. */
size_t gpu_staging_default_bytes_jpeg(const struct feeder_stream_opts *p, uint32_t max_batch);
size_t gpu_staging_default_bytes_features(const struct feeder_stream_opts *p, uint32_t feat_dim,
					  uint32_t max_batch, uint32_t max_frames);

/* Lay out a staging block of cap bytes at base (16-byte aligned) for
 * batches of up to max_batch jpeg samples made with p, or features samples
 * of feat_dim columns made with p, and reset it. p must have passed
 * proto_opts_check (feederd's admission: nothing here checks it again).
 * Returns 0 or FEEDER_EINVAL (max_batch or feat_dim out of range,
 * misaligned base, a block smaller than the descriptors and max_batch
 * finished samples: below that a batch could run out of room). */
int gpu_staging_init_jpeg(struct gpu_staging *st, void *base, size_t cap, uint32_t max_batch,
			  const struct feeder_stream_opts *p, char *err, size_t errlen);
int gpu_staging_init_features(struct gpu_staging *st, void *base, size_t cap, uint32_t max_batch,
			      const struct feeder_stream_opts *p, uint32_t feat_dim, char *err,
			      size_t errlen);

/* Empty the block for the next batch: every descriptor EMPTY, arena empty. */
void gpu_staging_reset(struct gpu_staging *st);

/* Stage jpeg sample `index` (< max_batch, not staged yet in this batch)
 * with worker w (one per thread). Returns 0, or what jpeg_pipeline_run
 * returns for a bad image (FEEDER_EDECODE ...), or FEEDER_EINVAL for a bad
 * or already staged index. (FEEDER_EQUOTA, a full block, is checked for
 * but cannot happen: the reserve keeps room for every sample.) On error
 * the descriptor stays EMPTY: stage a replacement at the same index. */
int gpu_staging_jpeg(struct gpu_staging *st, struct jpeg_worker *w, uint32_t index,
		     const uint8_t *jpeg, size_t len, uint64_t aug_key, char *err, size_t errlen);

/* Stage features sample `index`: s and payload as for features_pipeline_run.
 * Returns 0, FEATURES_SKIPPED (too short with pad=skip; stage a
 * replacement), FEEDER_EFORMAT (bad matrix, or a dim other than the
 * block's) or FEEDER_EINVAL (bad or already staged index). */
int gpu_staging_features(struct gpu_staging *st, uint32_t index, const struct dsformat_sample *s,
			 const uint8_t *payload, uint64_t aug_key, char *err, size_t errlen);

/* Bytes of the block to copy to the device for a batch of n samples (the
 * descriptors and the used arena), after checking that samples 0..n-1 are
 * all staged. Returns 0 or FEEDER_EINVAL (n out of range, a sample not
 * staged) with the sentence in err. */
int gpu_staging_bytes(const struct gpu_staging *st, uint32_t n, size_t *bytes, char *err,
		      size_t errlen);

/* The device's work done on the host, sample after sample: n samples of
 * out.sample_bytes each at out. For tests; call gpu_staging_bytes first. */
void gpu_staging_run_host(const struct gpu_staging *st, uint32_t n, void *out);

#ifdef __cplusplus
}
#endif

/* float16 bits <-> float, round to nearest even both ways, identically on
 * the host (half.h) and the device (the hardware conversions). */
GPU_HD static inline float gpu_half_to_float(uint16_t h)
{
#if defined(__CUDA_ARCH__)
	return __half2float(__ushort_as_half(h));
#else
	return half_to_float(h);
#endif
}

GPU_HD static inline uint16_t gpu_half_from_float(float f)
{
#if defined(__CUDA_ARCH__)
	return __half_as_ushort(__float2half_rn(f));
#else
	return half_from_float(f);
#endif
}

/* Store value v at element idx of out in dtype (u8: v is a 0..255 pixel,
 * rounded and clamped as resize.c does). */
GPU_HD static inline void gpu_store(void *out, uint32_t dtype, size_t idx, float v)
{
	if (dtype == FEEDER_DTYPE_U8) {
		float r = v + 0.5f;
		r = r < 0.0f ? 0.0f : r > 255.0f ? 255.0f : r;
		((uint8_t *)out)[idx] = (uint8_t)r;
	} else if (dtype == FEEDER_DTYPE_F16) {
		((uint16_t *)out)[idx] = gpu_half_from_float(v);
	} else {
		((float *)out)[idx] = v;
	}
}

/* Copy element idx of a CPU-finished sample. */
GPU_HD static inline void gpu_copy_elem(void *out, const uint8_t *ready, uint32_t dtype, size_t idx)
{
	if (dtype == FEEDER_DTYPE_U8)
		((uint8_t *)out)[idx] = ready[idx];
	else if (dtype == FEEDER_DTYPE_F16)
		((uint16_t *)out)[idx] = ((const uint16_t *)ready)[idx];
	else
		((float *)out)[idx] = ((const float *)ready)[idx];
}

/* Output pixel (xo, y) of a jpeg sample, all three channels, into out (the
 * sample's first byte). The separable filter runs in resize.c's order: a
 * horizontal sum per contributing row, then the vertical sum; the flip
 * reads the mirrored column so that neighbouring threads write neighbouring
 * elements. */
GPU_HD static inline void gpu_jpeg_pixel(const uint8_t *stage, const struct gpu_sample_desc *d,
					 const struct gpu_out_params *o, uint32_t xo, uint32_t y,
					 void *out)
{
	const uint32_t W = o->out_w, H = o->out_h;
	const size_t plane = (size_t)H * W;
	size_t idx[3];
	for (int c = 0; c < 3; c++)
		idx[c] = o->layout == FEEDER_LAYOUT_NHWC ? ((size_t)y * W + xo) * 3 + c
							 : c * plane + (size_t)y * W + xo;
	if (d->mode == GPU_STAGE_READY) {
		for (int c = 0; c < 3; c++)
			gpu_copy_elem(out, stage + d->data, o->dtype, idx[c]);
		return;
	}
	const uint32_t x = d->flip ? W - 1 - xo : xo;
	const int32_t *xs = (const int32_t *)(stage + d->table), *xc = xs + W;
	const float *xw = (const float *)(xc + W);
	const int32_t *ys = (const int32_t *)(xw + (size_t)W * d->taps_x), *yc = ys + H;
	const float *yw = (const float *)(yc + H);
	const float *wx = xw + (size_t)x * d->taps_x, *wy = yw + (size_t)y * d->taps_y;
	const uint8_t *px = stage + d->data + (size_t)xs[x] * 4;
	const int32_t nx = xc[x], ny = yc[y];
	float acc[3] = { 0.0f, 0.0f, 0.0f };
	for (int32_t k = 0; k < ny; k++) {
		const uint8_t *row = px + (size_t)(ys[y] + k) * d->stride;
		float h[3] = { 0.0f, 0.0f, 0.0f };
		for (int32_t j = 0; j < nx; j++) {
			const uint8_t *p = row + (size_t)j * 4;
			h[0] += wx[j] * p[0];
			h[1] += wx[j] * p[1];
			h[2] += wx[j] * p[2];
		}
		for (int c = 0; c < 3; c++)
			acc[c] += wy[k] * h[c];
	}
	for (int c = 0; c < 3; c++) {
		float v = o->dtype == FEEDER_DTYPE_U8 ? acc[c] : acc[c] * o->mul[c] + o->add[c];
		gpu_store(out, o->dtype, idx[c], v);
	}
}

/* Frame f, column k of a features sample's staged frames. */
GPU_HD static inline double gpu_frame_at(const uint8_t *frames, const struct gpu_sample_desc *d,
					 uint32_t f, uint32_t k)
{
	size_t i = (size_t)f * d->cols + k;
	if (d->f16)
		return gpu_half_to_float(((const uint16_t *)frames)[i]);
	return ((const float *)frames)[i];
}

/* Output value (k, t) of a features sample (feature k of chunk frame t)
 * into out (the sample's first byte), as features_pipeline_run computes
 * it: minus the mean of the frame's statistics window and, with cvn,
 * divided by its standard deviation, all in double. */
GPU_HD static inline void gpu_features_value(const uint8_t *stage, const struct gpu_sample_desc *d,
					     const struct gpu_out_params *o, uint32_t k, uint32_t t,
					     void *out)
{
	const uint32_t len = o->chunk_len;
	const size_t idx = (size_t)k * len + t;
	if (d->mode == GPU_STAGE_READY) {
		gpu_copy_elem(out, stage + d->data, o->dtype, idx);
		return;
	}
	const uint32_t *tab = (const uint32_t *)(stage + d->table);
	const uint32_t src = tab[t], lo = tab[len + t], hi = tab[2 * (size_t)len + t];
	const uint8_t *frames = stage + d->data;
	double x = gpu_frame_at(frames, d, src, k);
	if (o->cmn != FEEDER_FEAT_CMN_NONE && hi > lo) {
		double sum = 0.0, sumsq = 0.0;
		for (uint32_t f = lo; f < hi; f++) {
			double v = gpu_frame_at(frames, d, f, k);
			sum += v;
			sumsq += v * v;
		}
		double n = (double)(hi - lo), mean = sum / n;
		x -= mean;
		if (o->cvn) {
			double var = sumsq / n - mean * mean;
			x /= sqrt(var < FEATURES_VAR_FLOOR ? FEATURES_VAR_FLOOR : var);
		}
	}
	gpu_store(out, o->dtype, idx, (float)x);
}

#endif
