/* features_pipeline.c — chunk selection, cepstral mean/variance
 * normalization and the transposed (feat_dim, chunk_len) write for feature
 * matrices; see features_pipeline.h. */
#include "features_pipeline.h"

#include "bytes.h"
#include "detrand.h"
#include "half.h"
#include "protocol.h"
#include "status.h"

#include <math.h>
#include <string.h>
#ifdef __SSE2__
#include <xmmintrin.h>
#endif

#define FEAT_VAR_FLOOR FEATURES_VAR_FLOOR

size_t features_pipeline_sample_bytes(const struct feeder_stream_opts *o, uint32_t feat_dim)
{
	return (size_t)feat_dim * o->features.chunk_len * proto_dtype_size(o->dtype);
}

uint32_t features_pipeline_offset(const struct feeder_features_opts *p, uint32_t frames,
				  uint64_t aug_key)
{
	if (frames <= p->chunk_len)
		return 0;
	uint32_t span = frames - p->chunk_len;
	if (!p->train)
		return span / 2;
	struct detrand r;
	detrand_init(&r, aug_key);
	return (uint32_t)detrand_range(&r, 0, span);
}

/* The payload read one frame at a time (little-endian f16 or f32). */
struct matrix {
	const uint8_t *data;
	uint32_t frames, dim;
	int f16;
};

static inline float f32_le(const uint8_t *p)
{
	float f;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(&f, p, 4); /* the payload's byte order: a plain load */
#else
	uint32_t u = bytes_le32(p);
	memcpy(&f, &u, 4);
#endif
	return f;
}

/* Columns d0..d0+n-1 of frame t into out. One loop per dtype, without a
 * branch inside, so that gcc vectorizes the f32 one. */
static void matrix_row(const struct matrix *m, uint32_t t, uint32_t d0, uint32_t n, double *out)
{
	const size_t i = (size_t)t * m->dim + d0;
	if (m->f16) {
		for (uint32_t j = 0; j < n; j++)
			out[j] = half_to_float(bytes_le16(m->data + (i + j) * 2));
	} else {
		const uint8_t *p = m->data + i * 4;
		for (uint32_t j = 0; j < n; j++)
			out[j] = f32_le(p + 4 * j);
	}
}

/* Running sums over a window [lo, hi) of frames, moved one frame at a time. */
struct window {
	uint32_t lo, hi;
	double *sum, *sumsq; /* dim each; sumsq NULL: kept only for CVN */
};

/* Columns converted a row piece at a time. */
#define ROW 256

static void window_add(const struct matrix *m, struct window *w, uint32_t t, double sign)
{
	double row[ROW];
	for (uint32_t d0 = 0; d0 < m->dim; d0 += ROW) {
		const uint32_t n = m->dim - d0 < ROW ? m->dim - d0 : ROW;
		matrix_row(m, t, d0, n, row);
		double *sum = w->sum + d0;
		for (uint32_t j = 0; j < n; j++)
			sum[j] += sign * row[j];
		if (w->sumsq) {
			double *sumsq = w->sumsq + d0;
			for (uint32_t j = 0; j < n; j++)
				sumsq[j] += sign * row[j] * row[j];
		}
	}
}

/* Move w to [lo, hi): grow before shrinking so that it never goes empty. */
static void window_move(const struct matrix *m, struct window *w, uint32_t lo, uint32_t hi)
{
	while (w->hi < hi)
		window_add(m, w, w->hi++, 1.0);
	while (w->lo > lo)
		window_add(m, w, --w->lo, 1.0);
	while (w->lo < lo)
		window_add(m, w, w->lo++, -1.0);
	while (w->hi > hi)
		window_add(m, w, --w->hi, -1.0);
}

/* Kaldi's SlidingWindowCmnInternal window for frame t with center=true. */
static void sliding_bounds(uint32_t t, uint32_t frames, uint32_t window, uint32_t *lo, uint32_t *hi)
{
	int64_t start = (int64_t)t - window / 2, end = start + window;
	if (start < 0) {
		end -= start;
		start = 0;
	}
	if (end > frames) {
		start -= end - frames;
		end = frames;
		if (start < 0)
			start = 0;
	}
	*lo = (uint32_t)start;
	*hi = (uint32_t)end;
}

/* Also the GPU pipeline's check (daemon/gpu_staging.c). */
int features_pipeline_check_sample(const struct feeder_features_opts *p,
				   const struct dsformat_sample *s, const uint8_t *payload,
				   char *err, size_t errlen)
{
	if (s->frames == 0 || s->dim == 0 || s->dim > DSFORMAT_MAX_DIM)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "features: a %ux%u matrix is empty or too wide", s->frames,
				   s->dim);
	size_t elem = dsformat_dtype_size(s->dtype);
	if (elem != 2 && elem != 4)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "features: sample dtype %u is not f16 or f32", s->dtype);
	if ((uint64_t)s->frames * s->dim * elem != s->payload_len || !payload)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "features: %u bytes of payload do not hold %ux%u %s values",
				   s->payload_len, s->frames, s->dim,
				   dsformat_dtype_name(s->dtype));
	if (s->frames < p->chunk_len && p->pad == FEEDER_FEAT_PAD_SKIP)
		return FEATURES_SKIPPED;
	return 0;
}

/* One chunk's normalization: the running window over the utterance, and
 * each column's mean and deviation, made again only when the window moved
 * (every frame for sliding CMN, once otherwise): the same values as made
 * per element, at a fraction of the divisions. */
struct norm {
	const struct feeder_features_opts *p;
	struct matrix m;
	struct window w;
	uint32_t stats_lo, stats_hi; /* the window mean and dev were made of */
	double sum[DSFORMAT_MAX_DIM], sumsq[DSFORMAT_MAX_DIM];
	double mean[DSFORMAT_MAX_DIM], dev[DSFORMAT_MAX_DIM];
};

static void norm_init(struct norm *n, const struct feeder_features_opts *p,
		      const struct dsformat_sample *s, const uint8_t *payload)
{
	n->p = p;
	n->m = (struct matrix){ payload, s->frames, s->dim, dsformat_dtype_size(s->dtype) == 2 };
	memset(n->sum, 0, s->dim * sizeof(double));
	memset(n->sumsq, 0, s->dim * sizeof(double));
	n->w = (struct window){ 0, 0, n->sum, p->cvn ? n->sumsq : NULL };
	n->stats_lo = 1; /* none yet */
	n->stats_hi = 0;
	if (p->cmn == FEEDER_FEAT_CMN_UTT)
		window_move(&n->m, &n->w, 0, s->frames);
}

/* The statistics of utterance frame src's window. */
static void norm_stats(struct norm *n, uint32_t src)
{
	const struct feeder_features_opts *p = n->p;
	if (p->cmn == FEEDER_FEAT_CMN_SLIDING) {
		uint32_t lo, hi;
		sliding_bounds(src, n->m.frames, p->cmn_window, &lo, &hi);
		window_move(&n->m, &n->w, lo, hi);
	}
	if (p->cmn == FEEDER_FEAT_CMN_NONE || (n->w.lo == n->stats_lo && n->w.hi == n->stats_hi))
		return;
	double count = (double)(n->w.hi - n->w.lo);
	for (uint32_t d = 0; d < n->m.dim; d++) {
		n->mean[d] = n->sum[d] / count;
		if (p->cvn) {
			double var = n->sumsq[d] / count - n->mean[d] * n->mean[d];
			n->dev[d] = sqrt(var < FEAT_VAR_FLOOR ? FEAT_VAR_FLOOR : var);
		}
	}
	n->stats_lo = n->w.lo;
	n->stats_hi = n->w.hi;
}

/* Utterance frame src, normalized, into the dim floats at to. */
static void norm_frame(struct norm *n, uint32_t src, float *to)
{
	norm_stats(n, src);
	const uint32_t dim = n->m.dim;
	for (uint32_t d0 = 0; d0 < dim; d0 += ROW) {
		const uint32_t nd = dim - d0 < ROW ? dim - d0 : ROW;
		double row[ROW];
		matrix_row(&n->m, src, d0, nd, row);
		const double *mu = n->mean + d0, *sd = n->dev + d0;
		float *dst = to + d0;
		/* one loop per case, without a branch inside */
		if (n->p->cmn == FEEDER_FEAT_CMN_NONE)
			for (uint32_t j = 0; j < nd; j++)
				dst[j] = (float)row[j];
		else if (!n->p->cvn)
			for (uint32_t j = 0; j < nd; j++)
				dst[j] = (float)(row[j] - mu[j]);
		else
			for (uint32_t j = 0; j < nd; j++)
				dst[j] = (float)((row[j] - mu[j]) / sd[j]);
	}
}

/* A tile of nt normalized frames of dim columns (row after row), written
 * transposed as chunk frames t0.. of the (dim, len) output. */
static void write_tile(const float *tile, uint32_t nt, uint32_t dim, uint32_t len, uint32_t t0,
		       uint32_t dtype, void *out)
{
	uint32_t d = 0;
#ifdef __SSE2__
	/* f32, four frames by four columns a step: one 4x4 transpose in
	 * registers where element-wise stores took a quarter of the
	 * normalization (the wave pipeline's CMN, perf) */
	if (dtype != FEEDER_DTYPE_F16) {
		const uint32_t nt4 = nt & ~3u;
		for (; d + 4 <= dim; d += 4) {
			for (uint32_t i = 0; i < nt4; i += 4) {
				const float *src = tile + (size_t)i * dim + d;
				__m128 r0 = _mm_loadu_ps(src), r1 = _mm_loadu_ps(src + dim),
				       r2 = _mm_loadu_ps(src + 2 * dim),
				       r3 = _mm_loadu_ps(src + 3 * dim);
				_MM_TRANSPOSE4_PS(r0, r1, r2, r3);
				float *dst = (float *)out + (size_t)d * len + t0 + i;
				_mm_storeu_ps(dst, r0);
				_mm_storeu_ps(dst + len, r1);
				_mm_storeu_ps(dst + 2 * (size_t)len, r2);
				_mm_storeu_ps(dst + 3 * (size_t)len, r3);
			}
			for (uint32_t c = 0; c < 4; c++)
				for (uint32_t i = nt4; i < nt; i++)
					((float *)out)[(size_t)(d + c) * len + t0 + i] =
						tile[(size_t)i * dim + d + c];
		}
	}
#endif
	for (; d < dim; d++) {
		const size_t at = (size_t)d * len + t0;
		if (dtype == FEEDER_DTYPE_F16)
			for (uint32_t i = 0; i < nt; i++)
				((uint16_t *)out)[at + i] =
					half_from_float(tile[(size_t)i * dim + d]);
		else
			for (uint32_t i = 0; i < nt; i++)
				((float *)out)[at + i] = tile[(size_t)i * dim + d];
	}
}

int features_pipeline_normalize(const struct feeder_features_opts *p, uint32_t dtype,
				const struct dsformat_sample *s, const uint8_t *payload,
				uint64_t aug_key, void *out, char *err, size_t errlen)
{
	int rc = features_pipeline_check_sample(p, s, payload, err, errlen);
	if (rc)
		return rc;
	struct norm n;
	norm_init(&n, p, s, payload);
	const uint32_t dim = s->dim, len = p->chunk_len;
	uint32_t offset = features_pipeline_offset(p, s->frames, aug_key);
	/* Frames normalized into a tile of whole rows, then written
	 * transposed a tile at a time: element by element, the (feat_dim,
	 * chunk_len) layout's strided stores were most of this function. A
	 * tile holds up to 16 frames, fewer for wide ones. */
	float tile[DSFORMAT_MAX_DIM];
	const uint32_t bt = DSFORMAT_MAX_DIM / dim < 16 ? DSFORMAT_MAX_DIM / dim : 16;
	for (uint32_t t0 = 0; t0 < len; t0 += bt) {
		const uint32_t nt = len - t0 < bt ? len - t0 : bt;
		/* Too-short utterances repeat from their start (pad repeat). */
		for (uint32_t i = 0; i < nt; i++)
			norm_frame(&n, features_pipeline_source(p, s->frames, offset, t0 + i),
				   tile + (size_t)i * dim);
		write_tile(tile, nt, dim, len, t0, dtype, out);
	}
	return 0;
}

int features_pipeline_run(const struct feeder_stream_opts *o, const struct dsformat_sample *s,
			  const uint8_t *payload, uint64_t aug_key, void *out, char *err,
			  size_t errlen)
{
	return features_pipeline_normalize(&o->features, o->dtype, s, payload, aug_key, out, err,
					   errlen);
}

/* For the GPU pipeline (daemon/gpu_staging.c): the same chunk frames and
 * statistics windows as features_pipeline_run. */

uint32_t features_pipeline_source(const struct feeder_features_opts *p, uint32_t frames,
				  uint32_t offset, uint32_t t)
{
	return frames > p->chunk_len ? offset + t : t % frames;
}

void features_pipeline_window(const struct feeder_features_opts *p, uint32_t frames, uint32_t src,
			      uint32_t *lo, uint32_t *hi)
{
	if (p->cmn == FEEDER_FEAT_CMN_SLIDING) {
		sliding_bounds(src, frames, p->cmn_window, lo, hi);
	} else if (p->cmn == FEEDER_FEAT_CMN_UTT) {
		*lo = 0;
		*hi = frames;
	} else {
		*lo = 0;
		*hi = 0;
	}
}
