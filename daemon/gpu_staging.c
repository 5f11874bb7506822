/* gpu_staging.c — worker-thread side of the GPU pipeline: region decode and
 * resize plans (jpeg) or frames and window tables (features) into a staging
 * block, with a CPU fallback when the block is full; see gpu_staging.h.
 *
 * Plain C with no CUDA calls, so feederd builds it with or without nvcc and
 * the layout is tested everywhere. Arena pieces are claimed with a
 * compare-and-swap on the bump pointer: workers never wait for each other,
 * and a claim that does not fit takes nothing.
 *
 * The arena always keeps room for a CPU-finished sample for every sample
 * not staged yet (the reserve): a region, plan or frames claim must leave
 * that much free, a finished sample's claim may use it. So however big the
 * regions of a batch are, every sample can still be staged, and the ones
 * that came too late for the device are finished on the CPU. The count of
 * unstaged samples only falls during a batch, so a claim that read an
 * older, larger count only kept more than it had to. */
#include "gpu_staging.h"

#include "resize.h"
#include "status.h"

#include <string.h>

/* Larger batches than this are refused: the descriptors alone would not
 * be small next to the samples any more, and no stream asks for them. */
#define GPU_STAGING_MAX_BATCH 65536u

static size_t align_up(size_t n)
{
	return (n + GPU_STAGING_ALIGN - 1) & ~(size_t)(GPU_STAGING_ALIGN - 1);
}

static size_t desc_bytes(uint32_t max_batch)
{
	return align_up((size_t)max_batch * sizeof(struct gpu_sample_desc));
}

static struct gpu_sample_desc *desc_at(const struct gpu_staging *st, uint32_t i)
{
	return (struct gpu_sample_desc *)st->base + i;
}

static size_t ready_bytes(const struct gpu_staging *st)
{
	return align_up(st->out.sample_bytes);
}

/* bytes of the arena (rounded up to the alignment), or NULL when there is
 * no room; with reserve set, also NULL unless the reserve stays free. */
static uint8_t *arena_take(struct gpu_staging *st, size_t bytes, int reserve)
{
	size_t n = align_up(bytes);
	if (n < bytes || n > st->cap)
		return NULL;
	size_t at = __atomic_load_n(&st->used, __ATOMIC_RELAXED);
	do {
		size_t keep =
			reserve ? __atomic_load_n(&st->unstaged, __ATOMIC_RELAXED) * ready_bytes(st)
				: 0;
		if (st->cap - at < n || st->cap - at - n < keep)
			return NULL;
	} while (!__atomic_compare_exchange_n(&st->used, &at, at + n, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return st->base + at;
}

static uint8_t *region_alloc(void *ctx, size_t bytes)
{
	return arena_take(ctx, bytes, 1);
}

size_t gpu_staging_default_bytes_jpeg(const struct feeder_stream_opts *p, uint32_t max_batch)
{
	size_t area = (size_t)p->jpeg.height * p->jpeg.width;
	/* 6x the output area of RGBX pixels (the region is 1.5x to 3x the
	 * output per side, more for images the IDCT cannot scale further);
	 * plans of up to 9 taps a side. */
	size_t region = align_up(area * 24);
	size_t plans = align_up(((size_t)p->jpeg.height + p->jpeg.width) * (2 + 9) * 4);
	/* plus the reserve: a finished sample each */
	size_t ready = align_up(jpeg_pipeline_sample_bytes(p));
	return desc_bytes(max_batch) + (size_t)max_batch * (region + plans + ready);
}

size_t gpu_staging_default_bytes_features(const struct feeder_stream_opts *o, uint32_t feat_dim,
					  uint32_t max_batch, uint32_t max_frames)
{
	const struct feeder_features_opts *p = &o->features;
	if (max_frames == 0)
		max_frames =
			2 * p->chunk_len + (p->cmn == FEEDER_FEAT_CMN_SLIDING ? p->cmn_window : 0);
	size_t frames = align_up((size_t)max_frames * feat_dim * 4);
	size_t table = align_up((size_t)p->chunk_len * 3 * 4);
	size_t ready = align_up(features_pipeline_sample_bytes(o, feat_dim));
	return desc_bytes(max_batch) + (size_t)max_batch * (frames + table + ready);
}

static int init_common(struct gpu_staging *st, void *base, size_t cap, uint32_t max_batch,
		       size_t sample_bytes, char *err, size_t errlen)
{
	if (max_batch == 0 || max_batch > GPU_STAGING_MAX_BATCH)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "gpu staging: batch size %u is outside 1..%u", max_batch,
				   GPU_STAGING_MAX_BATCH);
	if (!base || ((uintptr_t)base & (GPU_STAGING_ALIGN - 1)))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "gpu staging: the block is not %d-byte aligned",
				   GPU_STAGING_ALIGN);
	size_t need = desc_bytes(max_batch) + (size_t)max_batch * align_up(sample_bytes);
	if (cap < need)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "gpu staging: a %zu-byte block is smaller than the %zu bytes of "
				   "%u descriptors and as many finished samples",
				   cap, need, max_batch);
	st->base = base;
	st->cap = cap;
	st->arena = desc_bytes(max_batch);
	st->max_batch = max_batch;
	gpu_staging_reset(st);
	return 0;
}

int gpu_staging_init_jpeg(struct gpu_staging *st, void *base, size_t cap, uint32_t max_batch,
			  const struct feeder_stream_opts *p, char *err, size_t errlen)
{
	*st = (struct gpu_staging){ 0 };
	st->opts = *p;
	st->out = (struct gpu_out_params){
		.kind = GPU_KIND_JPEG,
		.dtype = (uint32_t)p->dtype,
		.layout = (uint32_t)p->layout,
		.out_h = p->jpeg.height,
		.out_w = p->jpeg.width,
		.sample_bytes = jpeg_pipeline_sample_bytes(p),
	};
	jpeg_pipeline_norm(&p->jpeg, st->out.mul, st->out.add);
	return init_common(st, base, cap, max_batch, st->out.sample_bytes, err, errlen);
}

int gpu_staging_init_features(struct gpu_staging *st, void *base, size_t cap, uint32_t max_batch,
			      const struct feeder_stream_opts *p, uint32_t feat_dim, char *err,
			      size_t errlen)
{
	if (feat_dim == 0 || feat_dim > DSFORMAT_MAX_DIM)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "gpu staging: feature dimension %u is outside 1..%u", feat_dim,
				   DSFORMAT_MAX_DIM);
	*st = (struct gpu_staging){ 0 };
	st->opts = *p;
	st->out = (struct gpu_out_params){
		.kind = GPU_KIND_FEATURES,
		.dtype = (uint32_t)p->dtype,
		.dim = feat_dim,
		.chunk_len = p->features.chunk_len,
		.cmn = p->features.cmn,
		.cvn = p->features.cvn,
		.sample_bytes = features_pipeline_sample_bytes(p, feat_dim),
	};
	return init_common(st, base, cap, max_batch, st->out.sample_bytes, err, errlen);
}

void gpu_staging_reset(struct gpu_staging *st)
{
	memset(st->base, 0, (size_t)st->max_batch * sizeof(struct gpu_sample_desc));
	__atomic_store_n(&st->used, st->arena, __ATOMIC_RELAXED);
	__atomic_store_n(&st->cpu_finished, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&st->unstaged, st->max_batch, __ATOMIC_RELAXED);
}

static int check_index(const struct gpu_staging *st, uint32_t kind, uint32_t index, char *err,
		       size_t errlen)
{
	/* (read only by the staging thread of this index, so no race) */
	if (st->out.kind != kind)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "gpu staging: a %s sample staged into a %s batch",
				   kind == GPU_KIND_JPEG ? "jpeg" : "features",
				   st->out.kind == GPU_KIND_JPEG ? "jpeg" : "features");
	if (index >= st->max_batch)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "gpu staging: sample index %u is beyond the batch size %u",
				   index, st->max_batch);
	if (desc_at(st, index)->mode != GPU_STAGE_EMPTY)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "gpu staging: sample %u is already staged in this batch", index);
	return 0;
}

/* Every output of plan a reads inside [0, len): the kernel trusts it. */
static int plan_fits(const struct resize_axis *a, uint32_t out_len, uint32_t len)
{
	if (a->out_len != out_len || a->taps == 0)
		return 0;
	for (uint32_t i = 0; i < out_len; i++)
		if (a->start[i] < 0 || a->count[i] < 1 || (uint32_t)a->count[i] > a->taps ||
		    (uint64_t)a->start[i] + (uint64_t)a->count[i] > len)
			return 0;
	return 1;
}

/* start, count, weights of plan a at t; returns the next free int32. */
static int32_t *put_plan(int32_t *t, const struct resize_axis *a)
{
	memcpy(t, a->start, a->out_len * sizeof(int32_t));
	memcpy(t + a->out_len, a->count, a->out_len * sizeof(int32_t));
	memcpy(t + 2 * (size_t)a->out_len, a->w, (size_t)a->out_len * a->taps * sizeof(float));
	return t + 2 * (size_t)a->out_len + (size_t)a->out_len * a->taps;
}

/* Record a decoded region and its plans in d. FEEDER_EQUOTA: no room for
 * the plans. */
static int stage_region(struct gpu_staging *st, struct gpu_sample_desc *d,
			const struct jpeg_region *r, char *err, size_t errlen)
{
	const struct resize_axis *ax = r->ax, *ay = r->ay;
	uint32_t W = st->out.out_w, H = st->out.out_h;
	if (r->stride > UINT32_MAX || r->stride < (size_t)r->cols * 4 ||
	    !plan_fits(ax, W, r->cols) || !plan_fits(ay, H, r->rows))
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"gpu staging: the resize plan of a %ux%u region reads outside it", r->cols,
			r->rows);
	size_t words = 2 * ((size_t)W + H) + (size_t)W * ax->taps + (size_t)H * ay->taps;
	int32_t *t = (int32_t *)arena_take(st, words * 4, 1);
	if (!t)
		return status_fail(err, errlen, FEEDER_EQUOTA,
				   "gpu staging: no room for resize plans");
	put_plan(put_plan(t, ax), ay);
	d->data = (uint64_t)(r->pixels - st->base);
	d->table = (uint64_t)((uint8_t *)t - st->base);
	d->stride = (uint32_t)r->stride;
	d->cols = r->cols;
	d->rows = r->rows;
	d->taps_x = ax->taps;
	d->taps_y = ay->taps;
	d->flip = r->flip ? 1 : 0;
	d->mode = GPU_STAGE_RESIZE;
	__atomic_fetch_sub(&st->unstaged, 1, __ATOMIC_RELAXED);
	return 0;
}

/* A piece for a CPU-finished sample, or NULL with err filled. An index
 * keeps the piece it got (d->spare) when finishing failed, so that its
 * replacement reuses it: the reserve then still covers every index. */
static uint8_t *take_ready(struct gpu_staging *st, struct gpu_sample_desc *d, uint32_t index,
			   char *err, size_t errlen)
{
	if (d->spare)
		return st->base + d->spare;
	uint8_t *ready = arena_take(st, st->out.sample_bytes, 0);
	if (!ready) {
		status_fail(err, errlen, FEEDER_EQUOTA,
			    "gpu staging: the %zu-byte staging block is full at sample %u", st->cap,
			    index);
		return NULL;
	}
	d->spare = (uint64_t)(ready - st->base);
	return ready;
}

/* Start staging index afresh, keeping its spare piece. */
static struct gpu_sample_desc *desc_clear(struct gpu_staging *st, uint32_t index)
{
	struct gpu_sample_desc *d = desc_at(st, index);
	*d = (struct gpu_sample_desc){ .spare = d->spare };
	return d;
}

static void mark_ready(struct gpu_staging *st, struct gpu_sample_desc *d, const uint8_t *ready)
{
	d->data = (uint64_t)(ready - st->base);
	d->mode = GPU_STAGE_READY;
	__atomic_fetch_add(&st->cpu_finished, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&st->unstaged, 1, __ATOMIC_RELAXED);
}

int gpu_staging_jpeg(struct gpu_staging *st, struct jpeg_worker *w, uint32_t index,
		     const uint8_t *jpeg, size_t len, uint64_t aug_key, char *err, size_t errlen)
{
	int rc = check_index(st, GPU_KIND_JPEG, index, err, errlen);
	if (rc)
		return rc;
	struct gpu_sample_desc *d = desc_clear(st, index);
	struct jpeg_region_dest dest = { region_alloc, st };
	struct jpeg_region r;
	rc = jpeg_pipeline_decode(w, &st->opts, jpeg, len, aug_key, &dest, &r, err, errlen);
	if (rc == 0)
		rc = stage_region(st, d, &r, err, errlen);
	if (rc != FEEDER_EQUOTA)
		return rc;
	uint8_t *ready = take_ready(st, d, index, err, errlen);
	if (!ready)
		return FEEDER_EQUOTA;
	rc = jpeg_pipeline_run(w, &st->opts, jpeg, len, aug_key, ready, err, errlen);
	if (rc)
		return rc;
	mark_ready(st, d, ready);
	return 0;
}

/* Chunk frame t's source frame and statistics window [lo, hi) (an empty
 * window at src when there are no statistics). */
static void frame_plan(const struct feeder_features_opts *p, uint32_t frames, uint32_t offset,
		       uint32_t t, uint32_t *src, uint32_t *lo, uint32_t *hi)
{
	*src = features_pipeline_source(p, frames, offset, t);
	features_pipeline_window(p, frames, *src, lo, hi);
	if (*hi <= *lo)
		*lo = *hi = *src;
}

/* The frames one features sample needs and its src/lo/hi table, in one
 * arena piece. FEEDER_EQUOTA (nothing taken): no room. */
static int stage_frames(struct gpu_staging *st, struct gpu_sample_desc *d,
			const struct dsformat_sample *s, const uint8_t *payload, uint64_t aug_key)
{
	const struct feeder_features_opts *p = &st->opts.features;
	const uint32_t len = p->chunk_len;
	uint32_t offset = features_pipeline_offset(p, s->frames, aug_key);
	uint32_t first = UINT32_MAX, end = 0, src, lo, hi;
	for (uint32_t t = 0; t < len; t++) {
		frame_plan(p, s->frames, offset, t, &src, &lo, &hi);
		first = lo < first ? lo : first;
		end = hi > end ? hi : end;
		first = src < first ? src : first;
		end = src + 1 > end ? src + 1 : end;
	}
	size_t row = (size_t)s->dim * dsformat_dtype_size(s->dtype);
	size_t table = align_up((size_t)len * 3 * 4);
	uint8_t *piece = arena_take(st, table + (size_t)(end - first) * row, 1);
	if (!piece)
		return FEEDER_EQUOTA;
	uint32_t *tab = (uint32_t *)piece;
	for (uint32_t t = 0; t < len; t++) {
		frame_plan(p, s->frames, offset, t, &src, &lo, &hi);
		tab[t] = src - first;
		tab[len + t] = lo - first;
		tab[2 * (size_t)len + t] = hi - first;
	}
	memcpy(piece + table, payload + (size_t)first * row, (size_t)(end - first) * row);
	d->data = (uint64_t)(piece + table - st->base);
	d->table = (uint64_t)(piece - st->base);
	d->cols = s->dim;
	d->rows = end - first;
	d->f16 = row == (size_t)s->dim * 2;
	d->mode = GPU_STAGE_FEATURES;
	__atomic_fetch_sub(&st->unstaged, 1, __ATOMIC_RELAXED);
	return 0;
}

int gpu_staging_features(struct gpu_staging *st, uint32_t index, const struct dsformat_sample *s,
			 const uint8_t *payload, uint64_t aug_key, char *err, size_t errlen)
{
	int rc = check_index(st, GPU_KIND_FEATURES, index, err, errlen);
	if (rc)
		return rc;
	struct gpu_sample_desc *d = desc_clear(st, index);
	rc = features_pipeline_check_sample(&st->opts.features, s, payload, err, errlen);
	if (rc)
		return rc;
	if (s->dim != st->out.dim)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "features: a sample of dimension %u in a batch of dimension %u",
				   s->dim, st->out.dim);
	if (stage_frames(st, d, s, payload, aug_key) == 0)
		return 0;
	uint8_t *ready = take_ready(st, d, index, err, errlen);
	if (!ready)
		return FEEDER_EQUOTA;
	rc = features_pipeline_run(&st->opts, s, payload, aug_key, ready, err, errlen);
	if (rc)
		return rc;
	mark_ready(st, d, ready);
	return 0;
}

int gpu_staging_bytes(const struct gpu_staging *st, uint32_t n, size_t *bytes, char *err,
		      size_t errlen)
{
	if (n == 0 || n > st->max_batch)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "gpu staging: a batch of %u samples is outside 1..%u", n,
				   st->max_batch);
	for (uint32_t i = 0; i < n; i++)
		if (desc_at(st, i)->mode == GPU_STAGE_EMPTY)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "gpu staging: sample %u of the batch was not staged", i);
	*bytes = __atomic_load_n(&st->used, __ATOMIC_RELAXED);
	return 0;
}

void gpu_staging_run_host(const struct gpu_staging *st, uint32_t n, void *out)
{
	const struct gpu_out_params *o = &st->out;
	for (uint32_t b = 0; b < n; b++) {
		const struct gpu_sample_desc *d = desc_at(st, b);
		uint8_t *sample = (uint8_t *)out + (size_t)b * o->sample_bytes;
		if (o->kind == GPU_KIND_JPEG) {
			for (uint32_t y = 0; y < o->out_h; y++)
				for (uint32_t x = 0; x < o->out_w; x++)
					gpu_jpeg_pixel(st->base, d, o, x, y, sample);
		} else {
			for (uint32_t k = 0; k < o->dim; k++)
				for (uint32_t t = 0; t < o->chunk_len; t++)
					gpu_features_value(st->base, d, o, k, t, sample);
		}
	}
}
