/* jpeg_pipeline.h — one JPEG in, one training-ready image tensor out.
 *
 * feederd's worker threads call jpeg_pipeline_run once per sample and let it
 * write straight into the batch slot in shared memory. Train mode is
 * torchvision's RandomResizedCrop(size, scale, ratio) + RandomHorizontalFlip(p)
 * with the randomness drawn from detrand keyed by the sample's aug_key; eval
 * mode is Resize(round(size * resize_ratio)) on the shorter side +
 * CenterCrop(size). Both end with ToTensor + Normalize(mean, std) (u8 output
 * skips the normalization and carries raw 0..255 pixels).
 *
 * Only the crop's region is decoded (jpeg_crop_scanline for the columns,
 * jpeg_skip_scanlines for the rows above), and libjpeg-turbo's IDCT scaling
 * (1/2, 1/4, 1/8) is used when the region is at least that many times the
 * output size in both dimensions. The resize is an antialiased separable
 * triangle filter (like PIL / torchvision antialias=True) fused with the flip,
 * the normalization, the dtype conversion and the layout write.
 *
 * jpeg_pipeline_reference does the same thing the slow, obvious way (full
 * decode at scale 1, crop, same resize); tests hold the fast path to it. */
#ifndef FEEDER_JPEG_PIPELINE_H
#define FEEDER_JPEG_PIPELINE_H

#include "feeder_types.h"

#include <stddef.h>
#include <stdint.h>

/* The crop a sample gets: the box (x, y, w, h) in full-image pixel units
 * that is resized to width x height, and whether it is mirrored. In train mode
 * the box is whole pixels (torchvision's get_params); in eval mode it is the
 * part of the image that the centre crop of the resized image covers, which
 * is fractional. Exposed so that tests and tools can check it. */
struct jpeg_crop {
	double x, y, w, h;
	int flip;
};

/* Eval mode resizes the shorter side to round(max(height, width) *
 * resize_ratio), so the centre crop always fits (resize_ratio >= 1). */

/* Bytes one sample occupies: 3 * jpeg.height * jpeg.width * (1, 2 or 4). */
size_t jpeg_pipeline_sample_bytes(const struct feeder_stream_opts *o);

/* The crop box of an img_w x img_h image for aug_key (pure function). */
void jpeg_pipeline_plan(const struct feeder_jpeg_opts *p, uint32_t img_w, uint32_t img_h,
			uint64_t aug_key, struct jpeg_crop *c);

/* Per-thread decoder state and scratch buffers; never shared between
 * threads. Create returns 0 or -ENOMEM. */
struct jpeg_worker;
int jpeg_worker_create(struct jpeg_worker **out, char *err, size_t errlen);
void jpeg_worker_destroy(struct jpeg_worker *w);
/* Seconds w spent decoding (entropy decode, IDCT of the region) and
 * transforming (resampling, normalising, converting) since the last call;
 * resets them. For feederd's per-stage accounting. */
void jpeg_worker_take_times(struct jpeg_worker *w, double *decode_s, double *transform_s);
/* Samples w has decoded from a sub-image of a JPEG tiled by restart
 * intervals (media/jpeg_tiles.h) rather than from the whole image, since
 * it was created. */
uint64_t jpeg_worker_cuts(const struct jpeg_worker *w);
/* Samples w decoded with libjpeg's Huffman decoder because
 * media/jpeg_huff.h's refused them on a verdict libjpeg does not share
 * (jpeg_huff_or_libjpeg: packer verify --decode follows the same policy),
 * since it was created. Safe to call from another thread. */
uint64_t jpeg_worker_fallbacks(const struct jpeg_worker *w);
/* Whether w Huffman-decodes with media/jpeg_huff.h (on, the default) or
 * with libjpeg's own decoder (off: for tests and benchmarks to compare).
 * jpeg_pipeline_reference always uses libjpeg's. */
void jpeg_worker_set_huff(struct jpeg_worker *w, int on);

/* Decode, crop, resize, flip, normalize and write ONE sample of
 * jpeg_pipeline_sample_bytes(o) bytes at out (3 x height x width in o->layout
 * and o->dtype; the options of o->jpeg). o must have passed proto_opts_check
 * (feederd's admission checks every stream's options once; nothing here
 * checks them again). Returns 0, FEEDER_EDECODE with the reason (corrupt or
 * unsupported JPEG, e.g. CMYK) or -ENOMEM. On error the content of out is
 * unspecified. */
int jpeg_pipeline_run(struct jpeg_worker *w, const struct feeder_stream_opts *o,
		      const uint8_t *jpeg, size_t len, uint64_t aug_key, void *out, char *err,
		      size_t errlen);

/* The slow reference of jpeg_pipeline_run: full decode at scale 1, the same
 * crop, the same resize. For tests; same arguments and results. */
int jpeg_pipeline_reference(struct jpeg_worker *w, const struct feeder_stream_opts *o,
			    const uint8_t *jpeg, size_t len, uint64_t aug_key, void *out, char *err,
			    size_t errlen);

/* For the GPU pipeline (daemon/gpu_staging.c), which decodes on worker
 * threads and resizes on the device with exactly this pipeline's choices.
 *
 * A decoded region: rows x cols RGBX pixels (4 bytes each, the 4th
 * ignored) at pixels, rows stride bytes apart, and the resize plans (owned
 * by the worker, valid until its next call) rebased so that plan pixel 0 is
 * column 0 / row 0 of the region; flip as in struct jpeg_crop. */
struct resize_axis;
struct jpeg_region {
	uint8_t *pixels;
	size_t stride;
	uint32_t cols, rows;
	int flip;
	const struct resize_axis *ax, *ay;
};

/* Where jpeg_pipeline_decode puts the region: alloc(ctx, bytes) returns
 * memory for it, or NULL when there is no room. */
struct jpeg_region_dest {
	uint8_t *(*alloc)(void *ctx, size_t bytes);
	void *ctx;
};

/* The first half of jpeg_pipeline_run: parse, plan the crop, pick the IDCT
 * scale, decode only the needed region into dest's memory and plan the
 * resize. Returns 0, -ENOMEM, FEEDER_EDECODE (as jpeg_pipeline_run) or
 * FEEDER_EQUOTA when dest->alloc has no room (nothing decoded). */
int jpeg_pipeline_decode(struct jpeg_worker *w, const struct feeder_stream_opts *o,
			 const uint8_t *jpeg, size_t len, uint64_t aug_key,
			 const struct jpeg_region_dest *dest, struct jpeg_region *r, char *err,
			 size_t errlen);

/* value = pixel (0..255) * mul[c] + add[c]: Normalize(mean, std) of p. */
void jpeg_pipeline_norm(const struct feeder_jpeg_opts *p, float mul[3], float add[3]);

#endif
