/* jpeg_pipeline.c — region decode with libjpeg-turbo (crop, skip, IDCT
 * scaling), then resize.c's fused resample-and-write; see jpeg_pipeline.h.
 *
 * libjpeg reports errors through longjmp: every libjpeg call of a sample
 * happens inside decode_region(), which owns the setjmp, so no local state
 * of the caller is live across a jump. Warnings (corrupt data that libjpeg
 * would paper over with grey) are treated as errors: a training sample that
 * decodes to garbage is worse than a replaced one. */
#include "jpeg_pipeline.h"

#include "detrand.h"
#include "jpeg_huff.h"
#include "jpeg_rules.h"
#include "jpeg_tiles.h"
#include "protocol.h"
#include "resize.h"
#include "status.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jpeglib.h>

struct jpeg_worker {
	struct jpeg_decompress_struct cinfo;
	struct jpeg_rules_err jerr;
	uint8_t *region;
	size_t region_cap;
	float *scratch;
	size_t scratch_cap;
	struct resize_axis ax, ay;
	struct jpeg_huff *huff;       /* media/jpeg_huff.h's decoder state */
	int huff_off;                 /* jpeg_worker_set_huff(w, 0) */
	struct jpeg_tiles_buf sub;    /* the crop's sub-image of a tiled JPEG */
	uint32_t sub_x, sub_y;        /* its top-left pixel in the whole image */
	uint64_t cuts;                /* samples decoded from a sub-image */
	uint64_t fallbacks;           /* decoded by libjpeg's Huffman decoder after huff refused */
	double decode_s, transform_s; /* since the last jpeg_worker_take_times */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint64_t jpeg_worker_cuts(const struct jpeg_worker *w)
{
	return w->cuts;
}

/* Read by the event loop (metrics) while w's thread counts. */
uint64_t jpeg_worker_fallbacks(const struct jpeg_worker *w)
{
	return __atomic_load_n(&w->fallbacks, __ATOMIC_RELAXED);
}

void jpeg_worker_set_huff(struct jpeg_worker *w, int on)
{
	w->huff_off = !on;
}

void jpeg_worker_take_times(struct jpeg_worker *w, double *decode_s, double *transform_s)
{
	*decode_s = w->decode_s;
	*transform_s = w->transform_s;
	w->decode_s = w->transform_s = 0;
}

size_t jpeg_pipeline_sample_bytes(const struct feeder_stream_opts *o)
{
	return (size_t)3 * o->jpeg.height * o->jpeg.width * proto_dtype_size(o->dtype);
}

/* torchvision.transforms.RandomResizedCrop.get_params, drawing from r. */
static void plan_train(const struct feeder_jpeg_opts *p, uint32_t W, uint32_t H, struct detrand *r,
		       struct jpeg_crop *c)
{
	double area = (double)W * H;
	double lr0 = log(p->ratio_min), lr1 = log(p->ratio_max);
	for (int attempt = 0; attempt < 10; attempt++) {
		double target =
			area * (p->scale_min + (p->scale_max - p->scale_min) * detrand_uniform(r));
		double ar = exp(lr0 + (lr1 - lr0) * detrand_uniform(r));
		/* rint rounds half to even, like Python's round(). */
		double w = rint(sqrt(target * ar)), h = rint(sqrt(target / ar));
		if (w > 0 && w <= W && h > 0 && h <= H) {
			c->y = (double)detrand_range(r, 0, (int64_t)(H - h));
			c->x = (double)detrand_range(r, 0, (int64_t)(W - w));
			c->w = w;
			c->h = h;
			return;
		}
	}
	double in_ratio = (double)W / H, w, h;
	if (in_ratio < p->ratio_min) {
		w = W;
		h = rint(w / p->ratio_min);
	} else if (in_ratio > p->ratio_max) {
		h = H;
		w = rint(h * p->ratio_max);
	} else {
		w = W;
		h = H;
	}
	w = w < 1 ? 1 : w > W ? W : w;
	h = h < 1 ? 1 : h > H ? H : h;
	c->w = w;
	c->h = h;
	c->y = floor((H - h) / 2);
	c->x = floor((W - w) / 2);
}

/* Resize(round(side * resize_ratio)) on the shorter side, then CenterCrop,
 * expressed as the box of the original image that the crop covers. */
static void plan_eval(const struct feeder_jpeg_opts *p, uint32_t W, uint32_t H, struct jpeg_crop *c)
{
	uint32_t side = p->height > p->width ? p->height : p->width;
	double target = rint((double)side * p->resize_ratio);
	double new_w, new_h;
	/* torchvision: the longer side becomes int(target * long / short). */
	if (W <= H) {
		new_w = target;
		new_h = floor(target * H / W);
	} else {
		new_h = target;
		new_w = floor(target * W / H);
	}
	double top = rint((new_h - p->height) / 2.0), left = rint((new_w - p->width) / 2.0);
	double sx = W / new_w, sy = H / new_h;
	c->x = left * sx;
	c->y = top * sy;
	c->w = p->width * sx;
	c->h = p->height * sy;
	c->flip = 0;
}

void jpeg_pipeline_plan(const struct feeder_jpeg_opts *p, uint32_t img_w, uint32_t img_h,
			uint64_t aug_key, struct jpeg_crop *c)
{
	if (!p->train) {
		plan_eval(p, img_w, img_h, c);
		return;
	}
	struct detrand r;
	detrand_init(&r, aug_key);
	plan_train(p, img_w, img_h, &r, c);
	c->flip = detrand_uniform(&r) < p->flip_p;
}

int jpeg_worker_create(struct jpeg_worker **out, char *err, size_t errlen)
{
	struct jpeg_worker *w = calloc(1, sizeof *w);
	if (!w || !(w->huff = jpeg_huff_create())) {
		free(w);
		return status_fail(err, errlen, -ENOMEM, "jpeg worker: out of memory");
	}
	if (setjmp(w->jerr.jump)) {
		int rc = status_fail(err, errlen, -ENOMEM, "jpeg worker: %s", w->jerr.msg);
		jpeg_huff_destroy(w->huff);
		free(w);
		return rc;
	}
	jpeg_rules_create(&w->cinfo, &w->jerr);
	*out = w;
	return 0;
}

void jpeg_worker_destroy(struct jpeg_worker *w)
{
	if (!w)
		return;
	jpeg_destroy_decompress(&w->cinfo);
	free(w->region);
	free(w->scratch);
	free(w->sub.data);
	jpeg_huff_destroy(w->huff);
	resize_axis_free(&w->ax);
	resize_axis_free(&w->ay);
	free(w);
}

static int grow_bytes(void **p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	void *q = realloc(*p, need);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = need;
	return 0;
}

/* The largest IDCT downscale that keeps the result within the reference's
 * tolerance. With chroma subsampled in one direction only (4:2:2, 4:4:0,
 * 4:1:1) libjpeg-turbo cannot scale the chroma IDCT to match and its
 * scaled output drifts in colour (measured: blue off by 2-3/255 on average
 * at 1/4, more at 1/8), so such images stop at 1/2. */
static unsigned max_idct_scale(const struct jpeg_decompress_struct *ci)
{
	for (int i = 0; i < ci->num_components; i++) {
		const jpeg_component_info *comp = &ci->comp_info[i];
		if (ci->max_h_samp_factor * comp->v_samp_factor !=
		    ci->max_v_samp_factor * comp->h_samp_factor)
			return 2;
	}
	return 8;
}

/* When the JPEG's restart intervals form a grid (jpeg_tiles.h), cut the
 * intervals covering full-size pixels [x0, x1) x [y0, y1) into w->sub,
 * with a margin of `margin` pixels along an axis where a component is
 * subsampled (its upsampling reads the neighbouring sample, which a cut
 * takes away). Returns 1 when cut, with the sub-image's top-left pixel in
 * w->sub_x, w->sub_y; 0 when the whole image is to be decoded (no grid, or
 * the rectangle covers it); a negative code with a sentence for a damaged
 * stream. */
static int cut_sub(struct jpeg_worker *w, const uint8_t *jpeg, size_t len, double x0, double x1,
		   double y0, double y1, double margin, char *err, size_t errlen)
{
	struct jpeg_tiles t;
	if (jpeg_tiles_parse(jpeg, len, &t, err, errlen) || !t.grid)
		return 0; /* libjpeg read these headers: only the grid is news */
	double span = (double)t.restart * t.mcu_w, mx = t.sub_h ? margin : 0,
	       my = t.sub_v ? margin : 0;
	double px0 = x0 - mx, px1 = x1 + mx, py0 = y0 - my, py1 = y1 + my;
	uint32_t c0 = px0 <= 0 ? 0 : (uint32_t)(px0 / span);
	uint32_t r0 = py0 <= 0 ? 0 : (uint32_t)(py0 / t.mcu_h);
	double cc1 = ceil(px1 / span), rr1 = ceil(py1 / t.mcu_h);
	uint32_t c1 = cc1 >= t.cols ? t.cols : (uint32_t)cc1;
	uint32_t r1 = rr1 >= t.mcus_y ? t.mcus_y : (uint32_t)rr1;
	if (c0 == 0 && r0 == 0 && c1 == t.cols && r1 == t.mcus_y)
		return 0;
	int rc = jpeg_tiles_cut(&t, jpeg, len, c0, c1, r0, r1, &w->sub, err, errlen);
	if (rc)
		return rc;
	w->sub_x = c0 * t.restart * t.mcu_w;
	w->sub_y = r0 * t.mcu_h;
	return 1;
}

/* The IDCT scale 1/s to decode crop c at: the scaled region must stay at
 * least 1.5x the output. At 1-1.5x the IDCT's own low-pass, not the resize
 * filter, shapes the result, and on small detailed images that drifted
 * past the 2/255 tolerance (MAD up to 0.0125 at 64-px sources, tests/e2e
 * concurrent); with the 1.5x margin the worst seen is 0.0062. */
static unsigned idct_scale(struct jpeg_decompress_struct *ci, const struct feeder_jpeg_opts *p,
			   const struct jpeg_crop *c, int reference)
{
	unsigned s = 1, smax = reference ? 1 : max_idct_scale(ci);
	while (s < smax && c->w >= 3.0 * s * p->width && c->h >= 3.0 * s * p->height)
		s *= 2;
	return s;
}

/* Plan both resize axes for crop c on the ow x oh image decoded at scale
 * 1/s, and the pixels they read: span = {x0, x1, y0, y1} (the whole image
 * for the reference). 0 or -ENOMEM. */
static int plan_axes(struct jpeg_worker *w, const struct feeder_jpeg_opts *p,
		     const struct jpeg_crop *c, unsigned s, int32_t ow, int32_t oh, int reference,
		     int32_t span[4])
{
	/* Train crops resize the cropped image, so the filter stays inside the
	 * box; eval resizes the whole image and then crops, so it may reach
	 * outside the box. Planned on the whole image (at scale 1/s). */
	double bx = c->x / s, by = c->y / s, bw = c->w / s, bh = c->h / s;
	int32_t xlo = 0, xhi = ow, ylo = 0, yhi = oh;
	if (p->train) {
		xlo = (int32_t)floor(bx);
		ylo = (int32_t)floor(by);
		xhi = (int32_t)ceil(bx + bw);
		yhi = (int32_t)ceil(by + bh);
		xhi = xhi > ow ? ow : xhi;
		yhi = yhi > oh ? oh : yhi;
	}
	if (resize_axis_plan(&w->ax, bx, bw, p->width, xlo, xhi) ||
	    resize_axis_plan(&w->ay, by, bh, p->height, ylo, yhi))
		return -ENOMEM;
	resize_axis_span(&w->ax, &span[0], &span[1]);
	resize_axis_span(&w->ay, &span[2], &span[3]);
	if (reference) {
		span[0] = 0;
		span[1] = ow;
		span[2] = 0;
		span[3] = oh;
	}
	return 0;
}

/* Memory for a region of rows x stride bytes at r->pixels: from dest (the
 * GPU path's staging) or w's own, with the resize's scratch. 0,
 * FEEDER_EQUOTA (no room in dest) or -ENOMEM, with err filled. */
static int region_memory(struct jpeg_worker *w, const struct jpeg_region_dest *dest, size_t stride,
			 size_t rows, struct jpeg_region *r, char *err, size_t errlen)
{
	if (dest) {
		r->pixels = dest->alloc(dest->ctx, stride * rows);
		if (!r->pixels)
			return status_fail(
				err, errlen, FEEDER_EQUOTA,
				"jpeg: no room for a %zux%zu region in the staging memory",
				stride / 4, rows);
		return 0;
	}
	size_t need_scratch = resize_scratch_floats(&w->ax, &w->ay) * sizeof(float);
	if (grow_bytes((void **)&w->region, &w->region_cap, stride * rows) ||
	    grow_bytes((void **)&w->scratch, &w->scratch_cap, need_scratch))
		return status_fail(err, errlen, -ENOMEM, "jpeg: out of memory for a %zux%zu region",
				   stride / 4, rows);
	r->pixels = w->region;
	return 0;
}

/* Decoded rows [first, last) into region, stride bytes apart, then the
 * decompressor finished (or aborted, when rows are left below). 0 or
 * FEEDER_EDECODE. */
static int read_rows(struct jpeg_decompress_struct *ci, uint8_t *region, size_t stride,
		     JDIMENSION first, JDIMENSION last, char *err, size_t errlen)
{
	if (first > 0)
		jpeg_skip_scanlines(ci, first);
	while (ci->output_scanline < last) {
		JSAMPROW rowp[16];
		JDIMENSION want = last - ci->output_scanline;
		want = want > 16 ? 16 : want;
		for (JDIMENSION k = 0; k < want; k++)
			rowp[k] = region + (ci->output_scanline - first + k) * stride;
		if (jpeg_read_scanlines(ci, rowp, want) == 0) {
			jpeg_abort_decompress(ci);
			return status_fail(err, errlen, FEEDER_EDECODE, "jpeg: no rows decoded");
		}
	}
	if (ci->output_scanline < ci->output_height)
		jpeg_abort_decompress(ci);
	else
		jpeg_finish_decompress(ci);
	return 0;
}

/* Plan both axes for crop c seen at IDCT scale 1/s, decode the rows and
 * columns they need into w->region (or into memory from dest, the GPU
 * path's staging), and rebase the plans onto it. Fills r. With reference
 * set, decode the whole image at scale 1 instead. The Huffman decoding is
 * huff's (media/jpeg_huff.h), or libjpeg's when huff is NULL. A JPEG tiled
 * by restart intervals is decoded from the sub-image of the intervals the
 * region needs
 * (cut_sub): its cost follows the crop's area, where otherwise libjpeg must
 * Huffman-decode every row above the crop. Returns 0 or a negative code
 * with err filled; on error the decompressor is reset for the next
 * sample. The helpers it calls may longjmp back to its setjmp: none of
 * its locals changed after the setjmp is read there. */
static int decode_region(struct jpeg_worker *w, const struct feeder_jpeg_opts *p,
			 const uint8_t *jpeg, size_t len, uint64_t aug_key, int reference,
			 struct jpeg_huff *huff, const struct jpeg_region_dest *dest,
			 struct jpeg_region *r, char *err, size_t errlen)
{
	struct jpeg_decompress_struct *ci = &w->cinfo;
	if (setjmp(w->jerr.jump)) {
		jpeg_abort_decompress(ci);
		return status_fail(err, errlen, FEEDER_EDECODE, "jpeg: %s", w->jerr.msg);
	}
	jpeg_mem_src(ci, jpeg, (unsigned long)len);
	jpeg_read_header(ci, TRUE);
	int rc = jpeg_rules_check_header(ci, "jpeg", err, errlen);
	if (rc) {
		jpeg_abort_decompress(ci);
		return rc;
	}
	struct jpeg_crop c;
	jpeg_pipeline_plan(p, ci->image_width, ci->image_height, aug_key, &c);
	unsigned s = idct_scale(ci, p, &c, reference);
	ci->scale_num = 1;
	ci->scale_denom = s;
	ci->out_color_space = JCS_EXT_RGBX; /* 4-byte pixels for resize.c */
	jpeg_calc_output_dimensions(ci);
	int32_t span[4];
	if (plan_axes(w, p, &c, s, (int32_t)ci->output_width, (int32_t)ci->output_height, reference,
		      span)) {
		jpeg_abort_decompress(ci);
		return status_fail(err, errlen, -ENOMEM, "jpeg: out of memory for the resize plan");
	}
	int32_t x0 = span[0], x1 = span[1], y0 = span[2], y1 = span[3];

	/* The sub-image, if there is one to cut; (sx, sy) below is its origin
	 * at scale 1/s (MCUs are multiples of 8 pixels, so it is whole). */
	w->sub_x = w->sub_y = 0;
	if (!reference && ci->restart_interval && !ci->progressive_mode && !ci->arith_code) {
		/* two pixels of the decoded scale: a 2x-subsampled sample */
		rc = cut_sub(w, jpeg, len, (double)x0 * s, (double)x1 * s, (double)y0 * s,
			     (double)y1 * s, 2.0 * s, err, errlen);
		if (rc < 0) {
			jpeg_abort_decompress(ci);
			return rc;
		}
		if (rc == 1) {
			jpeg_abort_decompress(ci);
			jpeg_mem_src(ci, w->sub.data, (unsigned long)w->sub.len);
			jpeg_read_header(ci, TRUE);
			ci->scale_num = 1;
			ci->scale_denom = s;
			ci->out_color_space = JCS_EXT_RGBX;
			w->cuts++;
		}
	}
	jpeg_start_decompress(ci);
	int32_t sx = (int32_t)(w->sub_x / s), sy = (int32_t)(w->sub_y / s);
	int32_t dw = (int32_t)ci->output_width, dh = (int32_t)ci->output_height;
	if (x0 < sx || y0 < sy || x1 - sx > dw || y1 - sy > dh) {
		jpeg_abort_decompress(ci);
		return status_fail(
			err, errlen, FEEDER_EDECODE,
			"jpeg: the sub-image (%dx%d at %d,%d) misses the region %d..%d x %d..%d",
			dw, dh, sx, sy, x0, x1, y0, y1);
	}
	JDIMENSION xoff = (JDIMENSION)(x0 - sx), cw = (JDIMENSION)(x1 - x0);
	if (xoff > 0 || cw < (JDIMENSION)dw)
		jpeg_crop_scanline(ci, &xoff, &cw); /* widens to iMCU boundaries */
	if (huff)
		jpeg_huff_install(ci, huff);
	resize_axis_rebase(&w->ax, (int32_t)xoff + sx);
	resize_axis_rebase(&w->ay, y0);

	size_t stride = (size_t)cw * 4, rows = (size_t)(y1 - y0);
	rc = region_memory(w, dest, stride, rows, r, err, errlen);
	if (rc) {
		jpeg_abort_decompress(ci);
		return rc;
	}
	r->stride = stride;
	r->cols = (uint32_t)cw;
	r->rows = (uint32_t)rows;
	r->flip = c.flip;
	r->ax = &w->ax;
	r->ay = &w->ay;
	return read_rows(ci, r->pixels, stride, (JDIMENSION)(y0 - sy), (JDIMENSION)(y1 - sy), err,
			 errlen);
}

/* decode_region's arguments, for jpeg_huff_or_libjpeg's callback, and the
 * staging memory a first try took (dest->alloc): a second try reuses it. */
struct region_call {
	struct jpeg_worker *w;
	const struct feeder_jpeg_opts *p;
	const uint8_t *jpeg;
	size_t len;
	uint64_t aug_key;
	int reference;
	const struct jpeg_region_dest *dest;
	struct jpeg_region *r;
	char *err;
	size_t errlen;
	uint8_t *taken;
	size_t taken_bytes;
};

static uint8_t *alloc_once(void *ctx, size_t bytes)
{
	struct region_call *a = ctx;
	if (!a->taken || a->taken_bytes < bytes) {
		a->taken = a->dest->alloc(a->dest->ctx, bytes);
		a->taken_bytes = a->taken ? bytes : 0;
	}
	return a->taken;
}

static int region_try(void *ctx, struct jpeg_huff *huff)
{
	struct region_call *a = ctx;
	struct jpeg_region_dest once = { alloc_once, a };
	*a->r = (struct jpeg_region){ 0 };
	return decode_region(a->w, a->p, a->jpeg, a->len, a->aug_key, a->reference, huff,
			     a->dest ? &once : NULL, a->r, a->err, a->errlen);
}

/* decode_region under jpeg_huff_or_libjpeg's policy: with w's Huffman
 * decoder (unless it is off, or for the reference), and libjpeg's where
 * that one alone refuses; counted in w->fallbacks. */
static int decode_sample(struct jpeg_worker *w, const struct feeder_jpeg_opts *p,
			 const uint8_t *jpeg, size_t len, uint64_t aug_key, int reference,
			 const struct jpeg_region_dest *dest, struct jpeg_region *r, char *err,
			 size_t errlen)
{
	struct region_call a = {
		w, p, jpeg, len, aug_key, reference, dest, r, err, errlen, NULL, 0
	};
	uint64_t cuts = w->cuts;
	int fell_back;
	struct jpeg_huff *huff = reference || w->huff_off ? NULL : w->huff;
	int rc = jpeg_huff_or_libjpeg(huff, region_try, &a, &fell_back);
	if (fell_back)
		__atomic_fetch_add(&w->fallbacks, 1, __ATOMIC_RELAXED);
	if (w->cuts > cuts) /* a sample, not a try */
		w->cuts = cuts + 1;
	return rc;
}

static int run(struct jpeg_worker *w, const struct feeder_stream_opts *o, const uint8_t *jpeg,
	       size_t len, uint64_t aug_key, void *out, int reference, char *err, size_t errlen)
{
	if (!jpeg || len == 0)
		return status_fail(err, errlen, FEEDER_EDECODE, "jpeg: empty payload");
	struct jpeg_region r = { 0 };
	double t0 = now_s();
	int rc = decode_sample(w, &o->jpeg, jpeg, len, aug_key, reference, NULL, &r, err, errlen);
	double t1 = now_s();
	w->decode_s += t1 - t0;
	if (rc)
		return rc;
	struct resize_out ro = {
		.out = out, .dtype = (int)o->dtype, .layout = (int)o->layout, .flip = r.flip
	};
	jpeg_pipeline_norm(&o->jpeg, ro.mul, ro.add);
	resize_rgb(r.pixels, r.stride, &w->ax, &w->ay, w->scratch, &ro);
	w->transform_s += now_s() - t1;
	return 0;
}

int jpeg_pipeline_run(struct jpeg_worker *w, const struct feeder_stream_opts *o,
		      const uint8_t *jpeg, size_t len, uint64_t aug_key, void *out, char *err,
		      size_t errlen)
{
	return run(w, o, jpeg, len, aug_key, out, 0, err, errlen);
}

int jpeg_pipeline_reference(struct jpeg_worker *w, const struct feeder_stream_opts *o,
			    const uint8_t *jpeg, size_t len, uint64_t aug_key, void *out, char *err,
			    size_t errlen)
{
	return run(w, o, jpeg, len, aug_key, out, 1, err, errlen);
}

/* The GPU pipeline's host side (daemon/gpu_staging.c): the same region
 * decode and resize plans as jpeg_pipeline_run, into memory the caller
 * provides, and the same normalization constants. */

void jpeg_pipeline_norm(const struct feeder_jpeg_opts *p, float mul[3], float add[3])
{
	for (int c = 0; c < 3; c++) {
		mul[c] = 1.0f / (255.0f * p->std[c]);
		add[c] = -p->mean[c] / p->std[c];
	}
}

int jpeg_pipeline_decode(struct jpeg_worker *w, const struct feeder_stream_opts *o,
			 const uint8_t *jpeg, size_t len, uint64_t aug_key,
			 const struct jpeg_region_dest *dest, struct jpeg_region *r, char *err,
			 size_t errlen)
{
	if (!jpeg || len == 0)
		return status_fail(err, errlen, FEEDER_EDECODE, "jpeg: empty payload");
	double t0 = now_s();
	int rc = decode_sample(w, &o->jpeg, jpeg, len, aug_key, 0, dest, r, err, errlen);
	w->decode_s += now_s() - t0;
	return rc;
}
