/* wave_pipeline.c — augmented features of a waveform chunk (see
 * wave_pipeline.h). */
#include "wave_pipeline.h"

#include "augment.h"
#include "detrand.h"
#include "fbank.h"
#include "features_pipeline.h"
#include "pcm.h"
#include "probit.h"
#include "reverb.h"
#include "speed.h"
#include "status.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Feature extractors a worker keeps (streams of different bins or kinds). */
#define WAVE_FBANKS 4

/* One worker's state. */
struct wave_worker {
	struct fbank *fb[WAVE_FBANKS];
	int fb_kind[WAVE_FBANKS], fb_bins[WAVE_FBANKS], fb_ceps[WAVE_FBANKS];
	unsigned fb_next;
	struct reverb *rv;
	size_t rv_n;
	struct speed *sp;
	float *a, *b, *noise, *acc; /* chunk-sized scratch */
	size_t cap;
	float aux[WAVE_MAX_RIR]; /* an RIR as floats */
	struct wave_times times;
};

static _Thread_local struct wave_worker *ww;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int wave_pipeline_supported(char *err, size_t errlen)
{
	(void)err, (void)errlen;
	return 0;
}

size_t wave_pipeline_chunk_samples(uint32_t chunk_len)
{
	return chunk_len ? (size_t)(chunk_len - 1) * FBANK_FRAME_SHIFT + FBANK_FRAME_LEN : 0;
}

void wave_pipeline_worker_exit(void)
{
	if (!ww)
		return;
	for (unsigned i = 0; i < WAVE_FBANKS; i++)
		fbank_destroy(ww->fb[i]);
	reverb_destroy(ww->rv);
	speed_destroy(ww->sp);
	free(ww->a);
	free(ww->b);
	free(ww->noise);
	free(ww->acc);
	free(ww);
	ww = NULL;
}

void wave_pipeline_take_times(struct wave_times *t)
{
	if (ww) {
		*t = ww->times;
		memset(&ww->times, 0, sizeof(ww->times));
	} else {
		memset(t, 0, sizeof(*t));
	}
}

static int worker_get(size_t cap, char *err, size_t errlen)
{
	if (!ww) {
		ww = calloc(1, sizeof(*ww));
		if (!ww)
			return status_fail(err, errlen, -ENOMEM, "out of memory for a wave worker");
		int rc = speed_create(&ww->sp, err, errlen);
		if (rc) {
			free(ww);
			ww = NULL;
			return rc;
		}
	}
	if (cap > ww->cap) {
		float *p[4];
		for (int i = 0; i < 4; i++)
			p[i] = malloc(cap * sizeof(float));
		if (!p[0] || !p[1] || !p[2] || !p[3]) {
			for (int i = 0; i < 4; i++)
				free(p[i]);
			return status_fail(err, errlen, -ENOMEM,
					   "out of memory for a %zu-sample chunk", cap);
		}
		free(ww->a);
		free(ww->b);
		free(ww->noise);
		free(ww->acc);
		ww->a = p[0];
		ww->b = p[1];
		ww->noise = p[2];
		ww->acc = p[3];
		ww->cap = cap;
	}
	return 0;
}

static int worker_fbank(const struct feeder_wave_opts *w, struct fbank **out, char *err,
			size_t errlen)
{
	int kind = w->features == FEEDER_WAVE_MFCC ? FBANK_KIND_MFCC : FBANK_KIND_FBANK;
	int ceps = kind == FBANK_KIND_MFCC ? (int)w->ceps : 0;
	for (unsigned i = 0; i < WAVE_FBANKS; i++)
		if (ww->fb[i] && ww->fb_kind[i] == kind && ww->fb_bins[i] == (int)w->bins &&
		    ww->fb_ceps[i] == ceps) {
			*out = ww->fb[i];
			return 0;
		}
	struct fbank_opts fo;
	fbank_opts_default(&fo, kind);
	fo.bins = (int)w->bins;
	if (kind == FBANK_KIND_MFCC)
		fo.ceps = ceps;
	struct fbank *fb;
	int rc = fbank_create(&fo, &fb, err, errlen);
	if (rc)
		return rc;
	unsigned i = ww->fb_next++ % WAVE_FBANKS;
	fbank_destroy(ww->fb[i]);
	ww->fb[i] = fb;
	ww->fb_kind[i] = kind;
	ww->fb_bins[i] = (int)w->bins;
	ww->fb_ceps[i] = ceps;
	*out = fb;
	return 0;
}

/* Dither: a standard normal value per sample from a table of the normal
 * distribution's quantiles at (k + 0.5) / 65536, indexed by 16 random bits
 * (four samples per 64-bit draw). Box-Muller cost a log, a sqrt and a cos
 * per sample, half of an augmented chunk's time (tests/bench/speech_aug.sh);
 * dither only needs a deterministic noise of the right spread. */
#define DITHER_TABLE 65536
static float dither_q[DITHER_TABLE];
static pthread_once_t dither_once = PTHREAD_ONCE_INIT;

static void dither_init(void)
{
	for (int k = 0; k < DITHER_TABLE; k++)
		dither_q[k] = (float)probit((k + 0.5) / DITHER_TABLE);
}

static void add_dither(struct detrand *r, float *x, size_t n, float scale)
{
	pthread_once(&dither_once, dither_init);
	for (size_t i = 0; i < n; i += 4) {
		uint64_t bits = detrand_u64(r);
		for (size_t k = i; k < i + 4 && k < n; k++, bits >>= 16)
			x[k] += scale * dither_q[bits & 0xFFFF];
	}
}

/* A source's answer rc: 0 to go on with the augmentation, 1 to go without
 * it (a record that cannot be used), or WAVE_SOURCE_GONE. */
static int source_answer(int rc)
{
	return rc == 0 ? 0 : rc == WAVE_RECORD_BAD ? 1 : WAVE_SOURCE_GONE;
}

/* Additive noise of one category drawn among those the dataset has;
 * 0, 1 (left out: a record could not be used) or WAVE_SOURCE_GONE. */
static int add_noise(const struct feeder_wave_opts *w, const struct wave_sources *src,
		     struct detrand *r, float *x, size_t n, char *err, size_t errlen)
{
	int have[WAVE_CATEGORIES], k = 0;
	for (int c = 0; c < WAVE_CATEGORIES; c++)
		if (src->ncat[c])
			have[k++] = c;
	if (k == 0)
		return 0;
	int cat = have[detrand_range(r, 0, k - 1)];
	const float *range = cat == WAVE_NOISE   ? &w->snr_noise_min
			     : cat == WAVE_MUSIC ? &w->snr_music_min
						 : &w->snr_babble_min;
	double snr = detrand_between(r, range[0], range[1]);
	int parts = cat == WAVE_BABBLE ? (int)detrand_range(r, w->babble_min, w->babble_max) : 1;
	memset(ww->acc, 0, n * sizeof(float));
	for (int p = 0; p < parts; p++) {
		uint64_t idx = src->cat[cat][detrand_range(r, 0, (int64_t)src->ncat[cat] - 1)];
		size_t m;
		int rc = source_answer(src->noise.length(src->noise.ctx, idx, &m, err, errlen));
		if (rc)
			return rc;
		if (m == 0)
			continue;
		/* From a random offset, looped or cut to the chunk. */
		size_t off = (size_t)detrand_range(r, 0, (int64_t)m - 1);
		rc = source_answer(
			src->noise.read(src->noise.ctx, idx, off, n, ww->noise, err, errlen));
		if (rc)
			return rc;
		augment_accumulate(ww->acc, n, ww->noise, n, 0);
	}
	augment_add_noise(x, n, ww->acc, n, 0, snr);
	return 0;
}

/* The chunk of L samples the augmentations work on, at *x (ww->a, or
 * ww->b after a speed factor), and *factor, the speed factor drawn: speed
 * first, since it decides how many source samples make the chunk. 0,
 * WAVE_SKIPPED or an error. */
static int take_chunk(const struct feeder_wave_opts *w, const struct dsformat_sample *s,
		      const uint8_t *payload, struct detrand *r, float *factor, float **x,
		      char *err, size_t errlen)
{
	size_t L = wave_pipeline_chunk_samples(w->chunk_len), n = s->frames;
	int train = w->train != 0;
	double t0 = now_s();
	*factor = 1.0f;
	if (train && w->speed_p > 0 && detrand_uniform(r) < w->speed_p)
		*factor = detrand_range(r, 0, 1) ? 1.1f : 0.9f;
	size_t span = *factor == 1.0f ? L : (size_t)floor((double)L * *factor);
	while (speed_out_len(span, *factor) < L)
		span++;
	/* The perturbed chunk may come out a sample or two longer than L. */
	int rc = worker_get((span > L ? span : L) + 64, err, errlen);
	if (rc)
		return rc;
	if (n < span && w->pad == FEEDER_FEAT_PAD_SKIP)
		return WAVE_SKIPPED;
	size_t off = n <= span ? 0
		     : train   ? (size_t)detrand_range(r, 0, (int64_t)(n - span))
			       : (n - span) / 2;
	/* the span from off; a record shorter than the span is repeated from
	 * its start (pad repeat) */
	pcm_s16_read(payload, n, off, span, ww->a);
	*x = ww->a;
	double t1 = now_s();
	ww->times.chunk += t1 - t0;
	if (*factor != 1.0f) {
		size_t got;
		rc = speed_perturb(ww->sp, *factor, ww->a, span, ww->b, ww->cap, &got, err, errlen);
		if (rc)
			return rc;
		*x = ww->b; /* its first L samples */
	}
	ww->times.speed += now_s() - t1;
	return 0;
}

/* Reverberation of the L samples at x by an RIR drawn from src->rir (in
 * train mode, with probability reverb_p). An RIR that cannot be used (or
 * is empty, or silent) leaves the chunk dry. 0, WAVE_SOURCE_GONE or an
 * error. */
static int add_reverb(const struct feeder_wave_opts *w, const struct wave_sources *src,
		      struct detrand *r, float *x, size_t L, char *err, size_t errlen)
{
	if (!(w->train && w->reverb_p > 0 && src->rir.read && src->rir.count &&
	      detrand_uniform(r) < w->reverb_p))
		return 0;
	uint64_t idx = (uint64_t)detrand_range(r, 0, (int64_t)src->rir.count - 1);
	size_t m = 0;
	int use = source_answer(src->rir.length(src->rir.ctx, idx, &m, err, errlen));
	if (use == 0 && m > WAVE_MAX_RIR)
		m = WAVE_MAX_RIR;
	if (use == 0 && m > 0)
		use = source_answer(src->rir.read(src->rir.ctx, idx, 0, m, ww->aux, err, errlen));
	if (use == WAVE_SOURCE_GONE)
		return use;
	if (use != 0 || m == 0)
		return 0;
	int rc = 0;
	if (!ww->rv || ww->rv_n < L) {
		reverb_destroy(ww->rv);
		ww->rv = NULL;
		rc = reverb_create(L, WAVE_MAX_RIR, &ww->rv, err, errlen);
		ww->rv_n = rc ? 0 : L;
	}
	if (rc == 0)
		rc = reverb_apply(ww->rv, src->rir.key << 40 ^ idx, ww->aux, m, x, L, x, err,
				  errlen);
	/* a silent RIR record: reverb_apply's EINVAL, and the chunk dry */
	return rc == FEEDER_EINVAL ? 0 : rc;
}

/* The train-mode augmentations of the L samples at x after speed, in their
 * order: reverberation, additive noise, gain, dither. 0, WAVE_SOURCE_GONE
 * or an error. */
static int augment_chunk(const struct feeder_wave_opts *w, const struct wave_sources *src,
			 struct detrand *r, float *x, size_t L, char *err, size_t errlen)
{
	double t0 = now_s();
	int rc = add_reverb(w, src, r, x, L, err, errlen);
	if (rc)
		return rc;
	double t1 = now_s();
	ww->times.reverb += t1 - t0;
	int train = w->train != 0;
	if (train && w->noise_p > 0 && src->noise.read && detrand_uniform(r) < w->noise_p) {
		if (add_noise(w, src, r, x, L, err, errlen) == WAVE_SOURCE_GONE)
			return WAVE_SOURCE_GONE;
	}
	if (train && w->gain_p > 0 && detrand_uniform(r) < w->gain_p)
		augment_gain(x, L, detrand_between(r, w->gain_min_db, w->gain_max_db));
	if (train && w->dither > 0)
		add_dither(r, x, L, w->dither);
	ww->times.noise += now_s() - t1;
	return 0;
}

/* The features of the L samples at x, written at out as (dim, chunk_len)
 * of dtype by the features pipeline's normalization with the wave
 * stream's CMN (a centred chunk of a chunk_len matrix is the whole of
 * it). 0 or an error; *dim is the features' dimension. */
static int chunk_features(const struct feeder_wave_opts *w, uint32_t dtype, const float *x,
			  size_t L, void *out, uint32_t *dim, char *err, size_t errlen)
{
	double t0 = now_s();
	struct fbank *fb;
	int rc = worker_fbank(w, &fb, err, errlen);
	if (rc)
		return rc;
	float *m = NULL;
	uint32_t frames;
	rc = fbank_compute(fb, x, L, &m, &frames, dim, err, errlen);
	if (rc)
		return rc;
	const struct feeder_features_opts cmvn = { .chunk_len = w->chunk_len,
						   .pad = FEEDER_FEAT_PAD_REPEAT,
						   .cmn = w->cmn,
						   .cmn_window = w->cmn_window,
						   .cvn = w->cvn,
						   .train = 0 };
	struct dsformat_sample fs = { .frames = frames,
				      .dim = *dim,
				      .dtype = DSFORMAT_DTYPE_F32,
				      .payload_len = frames * *dim * 4 };
	rc = features_pipeline_normalize(&cmvn, dtype, &fs, (const uint8_t *)m, 0, out, err,
					 errlen);
	free(m);
	if (rc)
		return rc < 0 ? rc
			      : status_fail(err, errlen, FEEDER_EFORMAT, "chunk of %u frames",
					    frames);
	ww->times.features += now_s() - t0;
	return 0;
}

/* SpecAugment on the (dim, chunk_len) output at t (in train mode, with
 * probability specaug_p): zero bits are 0 in f16 and f32. */
static void spec_augment(const struct feeder_wave_opts *w, uint32_t dtype, struct detrand *r,
			 uint8_t *t, uint32_t dim)
{
	double t0 = now_s();
	if (w->train && w->specaug_p > 0 && detrand_uniform(r) < w->specaug_p) {
		size_t es = dtype == FEEDER_DTYPE_F16 ? 2 : 4, T = w->chunk_len;
		for (uint32_t k = 0; k < w->time_masks; k++) {
			size_t width = (size_t)detrand_range(
				r, 1, w->time_mask_max < T ? w->time_mask_max : (int64_t)T);
			size_t start = (size_t)detrand_range(r, 0, (int64_t)(T - width));
			for (uint32_t d = 0; d < dim; d++)
				memset(t + ((size_t)d * T + start) * es, 0, width * es);
		}
		for (uint32_t k = 0; k < w->freq_masks; k++) {
			size_t width = (size_t)detrand_range(
				r, 1, w->freq_mask_max < dim ? w->freq_mask_max : (int64_t)dim);
			size_t start = (size_t)detrand_range(r, 0, (int64_t)(dim - width));
			memset(t + start * T * es, 0, width * T * es);
		}
	}
	ww->times.specaug += now_s() - t0;
}

int wave_pipeline_run(const struct feeder_stream_opts *o, const struct wave_sources *src,
		      const struct dsformat_sample *s, const uint8_t *payload, uint64_t aug_key,
		      uint32_t classes, void *out, int32_t *label, char *err, size_t errlen)
{
	const struct feeder_wave_opts *w = &o->wave;
	size_t L = wave_pipeline_chunk_samples(w->chunk_len), n = s->frames;
	if (s->dtype != DSFORMAT_DTYPE_S16 || s->dim != 1 || s->payload_len != 2 * (size_t)n)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "record is not a waveform (%u x %u of dtype %s)", s->frames,
				   s->dim, dsformat_dtype_name(s->dtype));
	if (n == 0)
		return status_fail(err, errlen, FEEDER_EFORMAT, "waveform of no samples");
	/* Every draw from r, in a fixed order: the same bytes on any worker. */
	struct detrand r;
	detrand_init(&r, aug_key);
	float factor, *x;
	uint32_t dim;
	int rc = take_chunk(w, s, payload, &r, &factor, &x, err, errlen);
	if (rc == 0)
		rc = augment_chunk(w, src, &r, x, L, err, errlen);
	if (rc == 0)
		rc = chunk_features(w, o->dtype, x, L, out, &dim, err, errlen);
	if (rc)
		return rc;
	spec_augment(w, o->dtype, &r, out, dim);
	*label = (int32_t)s->label;
	if (factor != 1.0f && w->speed_labels == FEEDER_SPEED_NEW)
		*label += (int32_t)(classes * (factor < 1.0f ? 1u : 2u));
	return 0;
}
