/* protocol.c — encode, decode and validate feederd's messages (see protocol.h).
 *
 * Each message type has one field walker that both encodes and decodes, so
 * the two directions cannot drift apart and the payload length of a type is
 * simply where its walker ends. Validation of field values is separate and
 * runs only on decode. */
#include "protocol.h"

#include "bytes.h"
#include "status.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* What a walk does with each field. The two option modes walk only the
 * stream options (walk_opts): DEFAULT sets each one to its documented
 * default, CHECK tests it against its range. */
enum walk_mode { W_ENCODE, W_DECODE, W_SIZE, W_DEFAULT, W_CHECK };

struct cur {
	uint8_t *p; /* payload start (encode: writable; decode: read) */
	size_t len; /* payload bytes available */
	size_t off;
	enum walk_mode mode;
	const char *bad; /* decode: first string field that is not clean */
	char *err;       /* check: the sentence of the first option out of range */
	size_t errlen;
	int fail; /* check: an option was out of range */
};

static bool moving(const struct cur *c)
{
	return c->mode == W_ENCODE || c->mode == W_DECODE || c->mode == W_SIZE;
}

static void w_u32(struct cur *c, uint32_t *v)
{
	if (c->mode != W_SIZE) {
		if (c->mode == W_ENCODE)
			bytes_put_le32(c->p + c->off, *v);
		else
			*v = bytes_le32(c->p + c->off);
	}
	c->off += 4;
}

static void w_i32(struct cur *c, int32_t *v)
{
	uint32_t u = (uint32_t)*v;
	w_u32(c, &u);
	*v = (int32_t)u;
}

static void w_u64(struct cur *c, uint64_t *v)
{
	if (c->mode != W_SIZE) {
		if (c->mode == W_ENCODE)
			bytes_put_le64(c->p + c->off, *v);
		else
			*v = bytes_le64(c->p + c->off);
	}
	c->off += 8;
}

static void w_f32(struct cur *c, float *v)
{
	uint32_t u;
	memcpy(&u, v, 4);
	w_u32(c, &u);
	memcpy(v, &u, 4);
}

static void w_f64(struct cur *c, double *v)
{
	uint64_t u;
	memcpy(&u, v, 8);
	w_u64(c, &u);
	memcpy(v, &u, 8);
}

/* A fixed field of n bytes holding a NUL-terminated string followed by
 * zeros. Encode truncates to n-1 bytes; decode records the first field that
 * breaks the rule (so that no uninitialised or hidden bytes pass). */
static void w_str(struct cur *c, char *s, size_t n, const char *field)
{
	if (c->mode != W_SIZE) {
		uint8_t *q = c->p + c->off;
		if (c->mode == W_ENCODE) {
			size_t l = strnlen(s, n - 1);
			memset(q, 0, n);
			memcpy(q, s, l);
		} else {
			const uint8_t *nul = memchr(q, 0, n);
			bool clean = nul != NULL;
			for (const uint8_t *r = nul; clean && r < q + n; r++)
				clean = *r == 0;
			if (!clean && !c->bad)
				c->bad = field;
			memcpy(s, q, n);
			s[n - 1] = 0;
		}
	}
	c->off += n;
}

/* ---- stream options: encoding, defaults and ranges, one line each ---- */

static void opt_fail(struct cur *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void opt_fail(struct cur *c, const char *fmt, ...)
{
	if (c->fail)
		return;
	c->fail = 1;
	va_list ap;
	va_start(ap, fmt);
	if (c->errlen)
		vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
}

static void o_u32(struct cur *c, uint32_t *v, const char *name, uint32_t def, uint32_t lo,
		  uint32_t hi)
{
	if (moving(c))
		w_u32(c, v);
	else if (c->mode == W_DEFAULT)
		*v = def;
	else if (*v < lo || *v > hi)
		opt_fail(c, "%s %u is not within %u..%u", name, *v, lo, hi);
}

static void o_u64(struct cur *c, uint64_t *v, const char *name, uint64_t def, uint64_t lo,
		  uint64_t hi)
{
	if (moving(c))
		w_u64(c, v);
	else if (c->mode == W_DEFAULT)
		*v = def;
	else if (*v < lo || *v > hi)
		opt_fail(c, "%s %llu is not within %llu..%llu", name, (unsigned long long)*v,
			 (unsigned long long)lo, (unsigned long long)hi);
}

/* A finite number in [lo, hi]. */
static void o_f32(struct cur *c, float *v, const char *name, float def, float lo, float hi)
{
	if (moving(c))
		w_f32(c, v);
	else if (c->mode == W_DEFAULT)
		*v = def;
	else if (!isfinite(*v) || *v < lo || *v > hi)
		opt_fail(c, "%s %g is not within [%g, %g]", name, (double)*v, (double)lo,
			 (double)hi);
}

/* One of the values that names[] names (NULL entries are not values). */
static void o_enum(struct cur *c, uint32_t *v, const char *name, uint32_t def,
		   const char *const *names, uint32_t n)
{
	if (moving(c)) {
		w_u32(c, v);
	} else if (c->mode == W_DEFAULT) {
		*v = def;
	} else if (*v >= n || !names[*v]) {
		char list[128] = "";
		size_t used = 0;
		for (uint32_t i = 0; i < n && used < sizeof(list); i++)
			if (names[i])
				used += (size_t)snprintf(list + used, sizeof(list) - used,
							 "%s%s=%u", used ? ", " : "", names[i], i);
		opt_fail(c, "%s %u is unknown (%s)", name, *v, list);
	}
}

static const char *const pipeline_names[] = { [FEEDER_PIPE_JPEG] = "jpeg",
					      [FEEDER_PIPE_FEATURES] = "features",
					      [FEEDER_PIPE_WAVE] = "wave" };
static const char *const
	wave_features_names[] = { [FEEDER_WAVE_FBANK] = "fbank", [FEEDER_WAVE_MFCC] = "mfcc" };
static const char
	*const speed_labels_names[] = { [FEEDER_SPEED_SAME] = "same", [FEEDER_SPEED_NEW] = "new" };
static const char *const dtype_names
	[] = { [FEEDER_DTYPE_U8] = "u8", [FEEDER_DTYPE_F16] = "f16", [FEEDER_DTYPE_F32] = "f32" };
static const char
	*const layout_names[] = { [FEEDER_LAYOUT_NCHW] = "NCHW", [FEEDER_LAYOUT_NHWC] = "NHWC" };
static const char *const on_error_names
	[] = { [FEEDER_ON_ERROR_REPLACE] = "replace", [FEEDER_ON_ERROR_FAIL] = "fail" };
static const char *const placement_names[] = { [FEEDER_PLACEMENT_CPU] = "cpu",
					       [FEEDER_PLACEMENT_GPU] = "gpu",
					       [FEEDER_PLACEMENT_AUTO] = "auto" };
static const char *const
	pad_names[] = { [FEEDER_FEAT_PAD_REPEAT] = "repeat", [FEEDER_FEAT_PAD_SKIP] = "skip" };
static const char *const cmn_names[] = { [FEEDER_FEAT_CMN_NONE] = "none",
					 [FEEDER_FEAT_CMN_UTT] = "utt",
					 [FEEDER_FEAT_CMN_SLIDING] = "sliding" };
#define ENUM(c, v, name, def, names)                                                               \
	o_enum(c, v, name, def, names, (uint32_t)(sizeof(names) / sizeof(names[0])))

static void walk_jpeg(struct cur *c, struct feeder_jpeg_opts *j)
{
	static const float mean[3] = { 0.485f, 0.456f, 0.406f },
			   std[3] = { 0.229f, 0.224f, 0.225f };
	static const char *const mean_names[3] = { "jpeg.mean[0]", "jpeg.mean[1]", "jpeg.mean[2]" };
	static const char *const std_names[3] = { "jpeg.std[0]", "jpeg.std[1]", "jpeg.std[2]" };
	o_u32(c, &j->height, "jpeg.height", 224, 1, FEEDER_MAX_SIDE);
	o_u32(c, &j->width, "jpeg.width", 224, 1, FEEDER_MAX_SIDE);
	o_u32(c, &j->train, "jpeg.train", 1, 0, 1);
	o_f32(c, &j->scale_min, "jpeg.scale_min", 0.08f, 1e-6f, 1);
	o_f32(c, &j->scale_max, "jpeg.scale_max", 1, 1e-6f, 1);
	o_f32(c, &j->ratio_min, "jpeg.ratio_min", 3.0f / 4.0f, 1e-6f, 100);
	o_f32(c, &j->ratio_max, "jpeg.ratio_max", 4.0f / 3.0f, 1e-6f, 100);
	o_f32(c, &j->flip_p, "jpeg.flip_p", 0.5f, 0, 1);
	o_f32(c, &j->resize_ratio, "jpeg.resize_ratio", 256.0f / 224.0f, 1, 8);
	for (int i = 0; i < 3; i++)
		o_f32(c, &j->mean[i], mean_names[i], mean[i], -1000, 1000);
	for (int i = 0; i < 3; i++)
		o_f32(c, &j->std[i], std_names[i], std[i], 1e-6f, 1000);
}

static void walk_features(struct cur *c, struct feeder_features_opts *f)
{
	o_u32(c, &f->chunk_len, "features.chunk_len", 200, 1, FEEDER_MAX_CHUNK);
	ENUM(c, &f->pad, "features.pad", FEEDER_FEAT_PAD_REPEAT, pad_names);
	ENUM(c, &f->cmn, "features.cmn", FEEDER_FEAT_CMN_SLIDING, cmn_names);
	o_u32(c, &f->cmn_window, "features.cmn_window", 300, 1, FEEDER_MAX_CHUNK);
	o_u32(c, &f->cvn, "features.cvn", 0, 0, 1);
	o_u32(c, &f->train, "features.train", 1, 0, 1);
}

static void walk_wave(struct cur *c, struct feeder_wave_opts *w)
{
	o_u32(c, &w->chunk_len, "wave.chunk_len", 200, 1, FEEDER_MAX_WAVE_CHUNK);
	o_u32(c, &w->train, "wave.train", 1, 0, 1);
	ENUM(c, &w->pad, "wave.pad", FEEDER_FEAT_PAD_REPEAT, pad_names);
	ENUM(c, &w->features, "wave.features", FEEDER_WAVE_FBANK, wave_features_names);
	o_u32(c, &w->bins, "wave.bins", 80, 3, FEEDER_MAX_WAVE_BINS);
	o_u32(c, &w->ceps, "wave.ceps", 30, 1, 256);
	o_f32(c, &w->dither, "wave.dither", 0, 0, 1000);
	ENUM(c, &w->cmn, "wave.cmn", FEEDER_FEAT_CMN_UTT, cmn_names);
	o_u32(c, &w->cmn_window, "wave.cmn_window", 300, 1, FEEDER_MAX_CHUNK);
	o_u32(c, &w->cvn, "wave.cvn", 0, 0, 1);
	if (moving(c))
		w_str(c, w->noise, FEEDER_DATASET_MAX, "wave.noise");
	else if (c->mode == W_DEFAULT)
		memset(w->noise, 0, sizeof(w->noise));
	o_f32(c, &w->noise_p, "wave.noise_p", 0, 0, 1);
	o_f32(c, &w->snr_noise_min, "wave.snr_noise_min", 0, -30, 100);
	o_f32(c, &w->snr_noise_max, "wave.snr_noise_max", 15, -30, 100);
	o_f32(c, &w->snr_music_min, "wave.snr_music_min", 5, -30, 100);
	o_f32(c, &w->snr_music_max, "wave.snr_music_max", 15, -30, 100);
	o_f32(c, &w->snr_babble_min, "wave.snr_babble_min", 13, -30, 100);
	o_f32(c, &w->snr_babble_max, "wave.snr_babble_max", 20, -30, 100);
	o_u32(c, &w->babble_min, "wave.babble_min", 3, 1, 16);
	o_u32(c, &w->babble_max, "wave.babble_max", 7, 1, 16);
	if (moving(c))
		w_str(c, w->rir, FEEDER_DATASET_MAX, "wave.rir");
	else if (c->mode == W_DEFAULT)
		memset(w->rir, 0, sizeof(w->rir));
	o_f32(c, &w->reverb_p, "wave.reverb_p", 0, 0, 1);
	o_f32(c, &w->speed_p, "wave.speed_p", 0, 0, 1);
	ENUM(c, &w->speed_labels, "wave.speed_labels", FEEDER_SPEED_SAME, speed_labels_names);
	o_f32(c, &w->gain_p, "wave.gain_p", 0, 0, 1);
	o_f32(c, &w->gain_min_db, "wave.gain_min_db", -6, -60, 60);
	o_f32(c, &w->gain_max_db, "wave.gain_max_db", 6, -60, 60);
	o_f32(c, &w->specaug_p, "wave.specaug_p", 0, 0, 1);
	o_u32(c, &w->time_masks, "wave.time_masks", 1, 0, 16);
	o_u32(c, &w->time_mask_max, "wave.time_mask_max", 10, 1, FEEDER_MAX_WAVE_CHUNK);
	o_u32(c, &w->freq_masks, "wave.freq_masks", 1, 0, 16);
	o_u32(c, &w->freq_mask_max, "wave.freq_mask_max", 8, 1, 256);
}

/* Every stream option. Checking skips the pipeline the stream does not use. */
static void walk_opts(struct cur *c, struct feeder_stream_opts *o)
{
	if (moving(c))
		w_str(c, o->dataset, FEEDER_DATASET_MAX, "dataset");
	else if (c->mode == W_DEFAULT)
		memset(o->dataset, 0, sizeof(o->dataset));
	ENUM(c, &o->pipeline, "pipeline", FEEDER_PIPE_JPEG, pipeline_names);
	o_u32(c, &o->batch, "batch", 32, 1, FEEDER_MAX_BATCH);
	o_u64(c, &o->seed, "seed", 0, 0, UINT64_MAX);
	o_u64(c, &o->epoch, "epoch", 0, 0, UINT64_MAX - FEEDER_MAX_EPOCHS);
	o_u32(c, &o->epochs, "epochs", 1, 1, FEEDER_MAX_EPOCHS);
	o_u32(c, &o->shuffle, "shuffle", 1, 0, 1);
	o_u64(c, &o->start_batch, "start_batch", 0, 0, UINT64_MAX);
	o_u64(c, &o->start_sample, "start_sample", 0, 0, UINT64_MAX);
	o_u32(c, &o->rank, "rank", 0, 0, FEEDER_MAX_WORLD - 1);
	o_u32(c, &o->world, "world", 1, 1, FEEDER_MAX_WORLD);
	o_u32(c, &o->drop_last, "drop_last", 0, 0, 1);
	o_u32(c, &o->slots, "slots", 4, 1, FEEDER_MAX_SLOTS);
	ENUM(c, &o->dtype, "dtype", FEEDER_DTYPE_F32, dtype_names);
	ENUM(c, &o->layout, "layout", FEEDER_LAYOUT_NCHW, layout_names);
	ENUM(c, &o->on_error, "on_error", FEEDER_ON_ERROR_REPLACE, on_error_names);
	o_u32(c, &o->names, "names", 0, 0, 1);
	ENUM(c, &o->placement, "placement", FEEDER_PLACEMENT_CPU, placement_names);
	o_u32(c, &o->device_batches, "device_batches", 0, 0, 1);
	if (c->mode != W_CHECK || o->pipeline == FEEDER_PIPE_JPEG)
		walk_jpeg(c, &o->jpeg);
	if (c->mode != W_CHECK || o->pipeline == FEEDER_PIPE_FEATURES)
		walk_features(c, &o->features);
	if (c->mode != W_CHECK || o->pipeline == FEEDER_PIPE_WAVE)
		walk_wave(c, &o->wave);
}

void proto_opts_default(struct feeder_stream_opts *o)
{
	memset(o, 0, sizeof(*o));
	struct cur c = { .mode = W_DEFAULT };
	walk_opts(&c, o);
}

void proto_opts_jpeg(struct feeder_stream_opts *o, uint32_t size, int train)
{
	proto_opts_default(o);
	o->pipeline = FEEDER_PIPE_JPEG;
	o->jpeg.height = o->jpeg.width = size;
	o->jpeg.train = train ? 1 : 0;
}

void proto_opts_features(struct feeder_stream_opts *o, uint32_t chunk_len, int train)
{
	proto_opts_default(o);
	o->pipeline = FEEDER_PIPE_FEATURES;
	o->features.chunk_len = chunk_len;
	o->features.train = train ? 1 : 0;
}

/* The wave options' relations: ranges in order, datasets named where their
 * augmentation is asked for. */
static void wave_check(struct cur *c, const struct feeder_wave_opts *w)
{
#define RANGE(lo, hi)                                                                              \
	{                                                                                          \
#lo, #hi, offsetof(struct feeder_wave_opts, lo),                                   \
			offsetof(struct feeder_wave_opts, hi)                                      \
	}
	static const struct {
		const char *lo_name, *hi_name;
		size_t lo, hi;
	} ranges[] = {
		RANGE(snr_noise_min, snr_noise_max),
		RANGE(snr_music_min, snr_music_max),
		RANGE(snr_babble_min, snr_babble_max),
		RANGE(gain_min_db, gain_max_db),
	};
#undef RANGE
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		float lo, hi;
		memcpy(&lo, (const char *)w + ranges[i].lo, sizeof(lo));
		memcpy(&hi, (const char *)w + ranges[i].hi, sizeof(hi));
		if (lo > hi)
			opt_fail(c, "wave.%s %g is above wave.%s %g", ranges[i].lo_name, (double)lo,
				 ranges[i].hi_name, (double)hi);
	}
	if (w->babble_min > w->babble_max)
		opt_fail(c, "wave.babble_min %u is above wave.babble_max %u", w->babble_min,
			 w->babble_max);
	if (w->features == FEEDER_WAVE_MFCC && w->ceps > w->bins)
		opt_fail(c, "wave.ceps %u is above wave.bins %u", w->ceps, w->bins);
	if (w->cvn && w->cmn == FEEDER_FEAT_CMN_NONE)
		opt_fail(c, "wave.cvn (variance normalization) needs wave.cmn utt or sliding");
	if (w->noise_p > 0 && !w->noise[0])
		opt_fail(c, "wave.noise_p %g asks for noise, but wave.noise names no dataset",
			 (double)w->noise_p);
	if (w->reverb_p > 0 && !w->rir[0])
		opt_fail(c,
			 "wave.reverb_p %g asks for reverberation, but wave.rir names no dataset",
			 (double)w->reverb_p);
}

int proto_opts_check(const struct feeder_stream_opts *o, char *err, size_t errlen)
{
	/* The walker takes non-const pointers because it also decodes; it
	 * only reads when checking. */
	struct feeder_stream_opts copy = *o;
	struct cur c = { .mode = W_CHECK, .err = err, .errlen = errlen };
	walk_opts(&c, &copy);
	/* What no single field's range says. */
	if (!c.fail && o->rank >= o->world)
		opt_fail(&c, "rank %u is not below world %u", o->rank, o->world);
	if (!c.fail && o->pipeline == FEEDER_PIPE_JPEG && o->jpeg.scale_min > o->jpeg.scale_max)
		opt_fail(&c, "jpeg.scale_min %g is above jpeg.scale_max %g",
			 (double)o->jpeg.scale_min, (double)o->jpeg.scale_max);
	if (!c.fail && o->pipeline == FEEDER_PIPE_JPEG && o->jpeg.ratio_min > o->jpeg.ratio_max)
		opt_fail(&c, "jpeg.ratio_min %g is above jpeg.ratio_max %g",
			 (double)o->jpeg.ratio_min, (double)o->jpeg.ratio_max);
	if (!c.fail && o->pipeline != FEEDER_PIPE_JPEG && o->dtype == FEEDER_DTYPE_U8)
		opt_fail(&c, "dtype u8 is not available for %s streams (f16 or f32)",
			 pipeline_names[o->pipeline]);
	if (!c.fail && o->pipeline != FEEDER_PIPE_JPEG && o->layout != FEEDER_LAYOUT_NCHW)
		opt_fail(&c, "%s streams have layout NCHW (batch, dim, time) only",
			 pipeline_names[o->pipeline]);
	if (!c.fail && o->pipeline == FEEDER_PIPE_WAVE)
		wave_check(&c, &o->wave);
	if (!c.fail && o->pipeline == FEEDER_PIPE_FEATURES && o->features.cvn &&
	    o->features.cmn == FEEDER_FEAT_CMN_NONE)
		opt_fail(&c,
			 "features.cvn (variance normalization) needs features.cmn utt or sliding");
	return c.fail ? FEEDER_EINVAL : 0;
}

/* ---- stream options in one line (feederctl, the daemon's log) ---- */

struct line {
	char *buf;
	size_t len, used;
	int cut;
};

static void put(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct line *l, const char *fmt, ...)
{
	if (l->cut)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(l->buf + l->used, l->len - l->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= l->len - l->used) {
		l->cut = 1;
		l->used = l->len - 1;
	} else {
		l->used += (size_t)n;
	}
}

static const char *enum_name(const char *const *names, size_t n, uint32_t v)
{
	return v < n && names[v] ? names[v] : "?";
}
#define NAME(names, v) enum_name(names, sizeof(names) / sizeof(names[0]), v)

static void put_cmn(struct line *l, uint32_t cmn, uint32_t window, uint32_t cvn)
{
	put(l, ", cmn %s", NAME(cmn_names, cmn));
	if (cmn == FEEDER_FEAT_CMN_SLIDING)
		put(l, " %u", window);
	if (cvn)
		put(l, "+cvn");
}

static void describe_wave(struct line *l, const struct feeder_wave_opts *w)
{
	if (w->features == FEEDER_WAVE_MFCC)
		put(l, "wave mfcc %u ceps %u bins", w->ceps, w->bins);
	else
		put(l, "wave %s %u", NAME(wave_features_names, w->features), w->bins);
	put(l, ", chunk %u %s", w->chunk_len, w->train ? "train" : "eval");
	if (w->pad != FEEDER_FEAT_PAD_REPEAT)
		put(l, " pad %s", NAME(pad_names, w->pad));
	put_cmn(l, w->cmn, w->cmn_window, w->cvn);
	if (!w->train) {
		put(l, ", no augmentation");
		return;
	}
	if (w->noise_p > 0 && w->noise[0])
		put(l, ", noise=%.*s p=%g snr %g..%g/%g..%g/%g..%g babble %u..%u",
		    FEEDER_DATASET_MAX - 1, w->noise, (double)w->noise_p, (double)w->snr_noise_min,
		    (double)w->snr_noise_max, (double)w->snr_music_min, (double)w->snr_music_max,
		    (double)w->snr_babble_min, (double)w->snr_babble_max, w->babble_min,
		    w->babble_max);
	else
		put(l, ", noise off");
	if (w->reverb_p > 0 && w->rir[0])
		put(l, ", rir=%.*s p=%g", FEEDER_DATASET_MAX - 1, w->rir, (double)w->reverb_p);
	else
		put(l, ", rir off");
	if (w->speed_p > 0)
		put(l, ", speed p=%g labels=%s", (double)w->speed_p,
		    NAME(speed_labels_names, w->speed_labels));
	else
		put(l, ", speed off");
	if (w->gain_p > 0)
		put(l, ", gain p=%g %g..%g dB", (double)w->gain_p, (double)w->gain_min_db,
		    (double)w->gain_max_db);
	else
		put(l, ", gain off");
	if (w->specaug_p > 0)
		put(l, ", specaug p=%g t%ux%u f%ux%u", (double)w->specaug_p, w->time_masks,
		    w->time_mask_max, w->freq_masks, w->freq_mask_max);
	else
		put(l, ", specaug off");
	if (w->dither > 0)
		put(l, ", dither %g", (double)w->dither);
	else
		put(l, ", dither off");
}

void proto_opts_describe(const struct feeder_stream_opts *o, char *buf, size_t len)
{
	if (len == 0)
		return;
	struct line l = { .buf = buf, .len = len };
	buf[0] = 0;
	if (o->pipeline == FEEDER_PIPE_JPEG) {
		const struct feeder_jpeg_opts *j = &o->jpeg;
		put(&l, "jpeg %ux%u %s", j->height, j->width, j->train ? "train" : "eval");
		if (j->train)
			put(&l, ", scale %.3g..%.3g ratio %.3g..%.3g, flip p=%g",
			    (double)j->scale_min, (double)j->scale_max, (double)j->ratio_min,
			    (double)j->ratio_max, (double)j->flip_p);
		else
			put(&l, ", resize %.3g + center crop", (double)j->resize_ratio);
		put(&l, ", %s %s", NAME(dtype_names, o->dtype), NAME(layout_names, o->layout));
	} else if (o->pipeline == FEEDER_PIPE_FEATURES) {
		const struct feeder_features_opts *f = &o->features;
		put(&l, "features chunk %u %s, pad %s", f->chunk_len, f->train ? "train" : "eval",
		    NAME(pad_names, f->pad));
		put_cmn(&l, f->cmn, f->cmn_window, f->cvn);
		put(&l, ", %s", NAME(dtype_names, o->dtype));
	} else if (o->pipeline == FEEDER_PIPE_WAVE) {
		describe_wave(&l, &o->wave);
		put(&l, ", %s", NAME(dtype_names, o->dtype));
	} else {
		put(&l, "pipeline %u", o->pipeline);
	}
	if (l.cut && len >= 4)
		memcpy(buf + len - 4, "...", 4);
	/* Printable ASCII only, whatever the names held. */
	for (char *p = buf; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
}
#undef NAME

/* Returns false for an unknown type.
 * Over 100 lines: one case per message type listing its fields in wire
 * order; the switch is the wire format's table, read top to bottom. */
static bool walk(struct cur *c, uint32_t type, struct proto_msg *m)
{
	switch (type) {
	case PROTO_HELLO:
		w_u32(c, &m->u.hello.pid);
		w_str(c, m->u.hello.agent, PROTO_AGENT_MAX, "agent");
		return true;
	case PROTO_WELCOME: {
		struct proto_welcome *w = &m->u.welcome;
		w_u32(c, &w->session);
		w_u32(c, &w->max_streams);
		w_u32(c, &w->max_slots);
		w_u32(c, &w->reserved);
		w_u64(c, &w->quota);
		w_str(c, w->agent, PROTO_AGENT_MAX, "agent");
		return true;
	}
	case PROTO_OPEN_STREAM:
		w_u32(c, &m->u.open.tag);
		walk_opts(c, &m->u.open.opts);
		return true;
	case PROTO_STREAM_OPENED: {
		struct proto_stream_opened *o = &m->u.opened;
		w_u32(c, &o->tag);
		w_u32(c, &o->stream);
		w_u32(c, &o->slots);
		w_u32(c, &o->batch);
		w_u64(c, &o->slot_size);
		w_u64(c, &o->ring_size);
		w_u64(c, &o->batches);
		w_u64(c, &o->batches_per_epoch);
		w_u64(c, &o->samples);
		w_u32(c, &o->classes);
		w_u32(c, &o->dtype);
		w_u32(c, &o->layout);
		w_u32(c, &o->ndim);
		for (int i = 0; i < 4; i++)
			w_u32(c, &o->shape[i]);
		w_u64(c, &o->labels_offset);
		w_u64(c, &o->indices_offset);
		w_u64(c, &o->names_offset);
		w_u64(c, &o->tensor_offset);
		w_u64(c, &o->tensor_bytes);
		w_u32(c, &o->placement);
		w_u32(c, &o->memory);
		w_u64(c, &o->device_table);
		return true;
	}
	case PROTO_BATCH_READY: {
		struct proto_batch_ready *r = &m->u.ready;
		w_u32(c, &r->stream);
		w_u32(c, &r->slot);
		w_u64(c, &r->epoch);
		w_u64(c, &r->batch_index);
		w_u32(c, &r->samples);
		w_u32(c, &r->replacements);
		return true;
	}
	case PROTO_RELEASE:
		w_u32(c, &m->u.release.stream);
		w_u32(c, &m->u.release.slot);
		w_u64(c, &m->u.release.wait_us);
		w_u64(c, &m->u.release.compute_us);
		return true;
	case PROTO_CLOSE_STREAM:
		w_u32(c, &m->u.close.stream);
		return true;
	case PROTO_STREAM_END:
		w_u32(c, &m->u.end.stream);
		w_u32(c, &m->u.end.reason);
		w_u64(c, &m->u.end.batches_sent);
		return true;
	case PROTO_ERROR:
		w_i32(c, &m->u.error.code);
		w_u32(c, &m->u.error.stream);
		w_u32(c, &m->u.error.tag);
		w_u32(c, &m->u.error.fatal);
		w_str(c, m->u.error.message, PROTO_TEXT_MAX, "message");
		return true;
	case PROTO_GOODBYE:
		w_u32(c, &m->u.goodbye.reason);
		return true;
	case PROTO_STATUS:
		w_u32(c, &m->u.status.what);
		return true;
	case PROTO_STATUS_REPLY: {
		struct feeder_status *s = &m->u.status_reply;
		w_u64(c, &s->uptime_ms);
		w_u32(c, &s->clients);
		w_u32(c, &s->streams);
		w_u32(c, &s->workers);
		w_u32(c, &s->datasets);
		w_u64(c, &s->memory_used);
		w_u64(c, &s->memory_limit);
		w_u64(c, &s->batches);
		w_u64(c, &s->samples);
		w_u64(c, &s->replacements);
		w_u64(c, &s->decode_errors);
		w_u64(c, &s->protocol_errors);
		w_f64(c, &s->samples_per_s);
		w_f64(c, &s->workers_busy);
		for (int i = 0; i < FEEDER_STAGES; i++)
			w_f64(c, &s->stage_s[i]);
		w_u64(c, &s->cache_bytes);
		w_u64(c, &s->cache_limit);
		w_u64(c, &s->cache_peak_bytes);
		w_u64(c, &s->cache_hits);
		w_u64(c, &s->cache_misses);
		w_u64(c, &s->cache_fetches);
		w_u64(c, &s->cache_fetched_bytes);
		w_u64(c, &s->cache_retries);
		w_u64(c, &s->cache_failures);
		w_f64(c, &s->cache_wait_s);
		return true;
	}
	case PROTO_DATASET_INFO: {
		struct feeder_dataset_status *d = &m->u.dataset;
		w_str(c, d->name, FEEDER_DATASET_MAX, "name");
		w_u32(c, &d->kind);
		w_u32(c, &d->classes);
		w_u64(c, &d->samples);
		w_u32(c, &d->feat_dim);
		w_u32(c, &d->streams);
		return true;
	}
	case PROTO_STREAM_INFO: {
		struct feeder_stream_status *s = &m->u.stream;
		w_u32(c, &s->stream);
		w_u32(c, &s->session);
		w_u32(c, &s->pid);
		w_u32(c, &s->uid);
		w_str(c, s->dataset, FEEDER_DATASET_MAX, "dataset");
		w_u32(c, &s->pipeline);
		w_u32(c, &s->batch);
		w_u32(c, &s->slots);
		w_u32(c, &s->ready);
		w_u64(c, &s->epoch);
		w_u64(c, &s->batches_sent);
		w_u64(c, &s->batches_total);
		w_u64(c, &s->samples);
		w_u64(c, &s->replacements);
		w_f64(c, &s->samples_per_s);
		w_u64(c, &s->client_wait_us);
		w_u64(c, &s->ring_full_us);
		w_u32(c, &s->placement);
		w_u32(c, &s->active);
		w_u32(c, &s->memory);
		w_u32(c, &s->deciding);
		w_f32(c, &s->auto_cpu_ms);
		w_f32(c, &s->auto_gpu_ms);
		w_u32(c, &s->filling);
		w_u32(c, &s->trainer_reports);
		w_u64(c, &s->trainer_wait_us);
		w_u64(c, &s->trainer_compute_us);
		w_f32(c, &s->wait_share_10s);
		w_f32(c, &s->wait_share_total);
		w_f64(c, &s->bytes_per_s);
		for (int i = 0; i < FEEDER_STAGES; i++)
			w_f64(c, &s->stage_s[i]);
		w_str(c, s->settings, FEEDER_SETTINGS_MAX, "settings");
		return true;
	}
	case PROTO_LIST_END:
		w_u32(c, &m->u.list_end.count);
		return true;
	}
	return false;
}

const char *proto_type_name(uint32_t type)
{
	static const char *const names[] = {
		[PROTO_HELLO] = "HELLO",
		[PROTO_WELCOME] = "WELCOME",
		[PROTO_OPEN_STREAM] = "OPEN_STREAM",
		[PROTO_STREAM_OPENED] = "STREAM_OPENED",
		[PROTO_BATCH_READY] = "BATCH_READY",
		[PROTO_RELEASE] = "RELEASE",
		[PROTO_CLOSE_STREAM] = "CLOSE_STREAM",
		[PROTO_STREAM_END] = "STREAM_END",
		[PROTO_ERROR] = "ERROR",
		[PROTO_GOODBYE] = "GOODBYE",
		[PROTO_STATUS] = "STATUS",
		[PROTO_STATUS_REPLY] = "STATUS_REPLY",
		[PROTO_DATASET_INFO] = "DATASET_INFO",
		[PROTO_STREAM_INFO] = "STREAM_INFO",
		[PROTO_LIST_END] = "LIST_END",
	};
	if (type == 0 || type > PROTO_TYPE_MAX)
		return "?";
	return names[type];
}

int proto_type_from_client(uint32_t type)
{
	return type == PROTO_HELLO || type == PROTO_OPEN_STREAM || type == PROTO_RELEASE ||
	       type == PROTO_CLOSE_STREAM || type == PROTO_STATUS;
}

size_t proto_payload_len(uint32_t type)
{
	struct cur c = { .mode = W_SIZE };
	struct proto_msg m;
	if (!walk(&c, type, &m))
		return 0;
	return c.off;
}

int proto_encode(const struct proto_msg *m, void *buf, size_t cap)
{
	size_t plen = proto_payload_len(m->type);
	if (plen == 0)
		return FEEDER_EINVAL;
	if (cap < PROTO_HEADER_SIZE + plen)
		return FEEDER_EINVAL;
	uint8_t *p = buf;
	bytes_put_le32(p, PROTO_MAGIC);
	bytes_put_le16(p + 4, PROTO_VERSION);
	bytes_put_le16(p + 6, m->type);
	bytes_put_le32(p + 8, (uint32_t)plen);
	bytes_put_le32(p + 12, 0);
	/* The walker takes non-const pointers because it also decodes; on
	 * encode it only reads, so a private copy keeps the caller's const. */
	struct proto_msg copy = *m;
	struct cur c = { .p = p + PROTO_HEADER_SIZE, .len = plen, .mode = W_ENCODE };
	walk(&c, m->type, &copy);
	return (int)(PROTO_HEADER_SIZE + plen);
}

int proto_name_check(const char *name, char *err, size_t errlen)
{
	size_t n = strnlen(name, FEEDER_DATASET_MAX);
	if (n == 0)
		return status_fail(err, errlen, FEEDER_EBADNAME, "dataset name is empty");
	if (n >= FEEDER_DATASET_MAX)
		return status_fail(err, errlen, FEEDER_EBADNAME,
				   "dataset name is longer than %d characters",
				   FEEDER_DATASET_MAX - 1);
	if (name[0] == '.')
		return status_fail(err, errlen, FEEDER_EBADNAME,
				   "dataset name '%s' starts with '.'", name);
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return status_fail(
				err, errlen, FEEDER_EBADNAME,
				"dataset name '%.*s' has a character other than A-Z a-z 0-9 . _ -",
				(int)n, name);
	}
	return 0;
}

/* OPEN_STREAM is well formed when its dataset name is allowed; whether its
 * options are in range is proto_opts_check's (a refusal, not a protocol
 * error). */
static int check_open(const struct proto_open_stream *o, char *err, size_t errlen)
{
	return proto_name_check(o->opts.dataset, err, errlen);
}

static int check_msg(const struct proto_msg *m, char *err, size_t errlen)
{
	switch (m->type) {
	case PROTO_OPEN_STREAM:
		return check_open(&m->u.open, err, errlen);
	case PROTO_WELCOME:
		if (m->u.welcome.reserved)
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "WELCOME: reserved field is not 0");
		return 0;
	case PROTO_STREAM_OPENED: {
		const struct proto_stream_opened *o = &m->u.opened;
		if (o->stream == 0 || o->slots == 0 || o->slots > FEEDER_MAX_SLOTS ||
		    o->batch == 0 || o->batch > FEEDER_MAX_BATCH || o->ndim == 0 || o->ndim > 4)
			return status_fail(
				err, errlen, FEEDER_EPROTO,
				"STREAM_OPENED: stream, slots, batch or ndim out of range");
		if (o->dtype < FEEDER_DTYPE_U8 || o->dtype > FEEDER_DTYPE_F32 ||
		    (o->layout != FEEDER_LAYOUT_NCHW && o->layout != FEEDER_LAYOUT_NHWC))
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "STREAM_OPENED: dtype %u or layout %u is unknown",
					   o->dtype, o->layout);
		if (o->placement > FEEDER_PLACEMENT_AUTO || o->memory > FEEDER_MEMORY_DEVICE ||
		    (o->memory == FEEDER_MEMORY_HOST) != (o->device_table == 0))
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "STREAM_OPENED: placement %u, memory %u or device table "
					   "offset out of range",
					   o->placement, o->memory);
		/* The client maps ring_size bytes and indexes slots with these
		 * numbers: they must describe a ring that fits. */
		uint64_t slots_end = PROTO_RING_HEADER + o->slots * o->slot_size;
		if (o->slot_size == 0 ||
		    o->slot_size > (UINT64_MAX - PROTO_RING_HEADER) / o->slots ||
		    (o->memory == FEEDER_MEMORY_HOST && o->ring_size != slots_end) ||
		    (o->memory == FEEDER_MEMORY_DEVICE &&
		     (o->device_table < slots_end || o->device_table % PROTO_TENSOR_ALIGN ||
		      o->device_table > UINT64_MAX / 2 ||
		      o->ring_size != o->device_table + proto_device_table_size(
								o->slots, PROTO_TENSOR_ALIGN))) ||
		    o->labels_offset < PROTO_SLOT_HEADER ||
		    o->labels_offset + 4ull * o->batch > o->indices_offset ||
		    o->indices_offset + 8ull * o->batch >
			    (o->names_offset ? o->names_offset : o->tensor_offset) ||
		    (o->names_offset &&
		     o->names_offset + (uint64_t)FEEDER_SAMPLE_NAME_MAX * o->batch >
			     o->tensor_offset) ||
		    o->tensor_offset % PROTO_TENSOR_ALIGN || o->tensor_bytes > o->slot_size ||
		    o->tensor_offset > o->slot_size - o->tensor_bytes)
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "STREAM_OPENED: ring geometry is inconsistent");
		return 0;
	}
	case PROTO_BATCH_READY:
		if (m->u.ready.samples == 0 || m->u.ready.samples > FEEDER_MAX_BATCH ||
		    m->u.ready.replacements > m->u.ready.samples || m->u.ready.stream == 0)
			return status_fail(
				err, errlen, FEEDER_EPROTO,
				"BATCH_READY: stream %u, samples %u or replacements %u out of range",
				m->u.ready.stream, m->u.ready.samples, m->u.ready.replacements);
		return 0;
	case PROTO_RELEASE:
		if (m->u.release.stream == 0)
			return status_fail(err, errlen, FEEDER_EPROTO, "RELEASE: stream id is 0");
		return 0;
	case PROTO_CLOSE_STREAM:
		if (m->u.close.stream == 0)
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "CLOSE_STREAM: stream id is 0");
		return 0;
	case PROTO_STREAM_END:
		if (m->u.end.reason > 1)
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "STREAM_END: reason %u is unknown", m->u.end.reason);
		return 0;
	case PROTO_ERROR:
		if (m->u.error.code >= 0 || m->u.error.fatal > 1)
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "ERROR: code %d is not negative or fatal %u not 0/1",
					   m->u.error.code, m->u.error.fatal);
		return 0;
	case PROTO_STATUS:
		if (m->u.status.what < PROTO_STATUS_SUMMARY ||
		    m->u.status.what > PROTO_STATUS_STREAMS)
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "STATUS: request %u is unknown", m->u.status.what);
		return 0;
	case PROTO_DATASET_INFO:
		return proto_name_check(m->u.dataset.name, err, errlen);
	case PROTO_STREAM_INFO:
		/* The settings line is shown as it is: printable ASCII only. */
		for (const char *p = m->u.stream.settings; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				return status_fail(
					err, errlen, FEEDER_EPROTO,
					"STREAM_INFO: settings byte 0x%02x is not printable",
					(unsigned)(unsigned char)*p);
		if (m->u.stream.dataset[0])
			return proto_name_check(m->u.stream.dataset, err, errlen);
		return 0;
	}
	return 0;
}

int proto_decode(const void *buf, size_t len, struct proto_msg *m, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	if (len < PROTO_HEADER_SIZE)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "message of %zu bytes is shorter than the %d-byte header", len,
				   PROTO_HEADER_SIZE);
	if (len > PROTO_MAX_MESSAGE)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "message of %zu bytes is larger than the limit of %d", len,
				   PROTO_MAX_MESSAGE);
	uint32_t magic = bytes_le32(p);
	if (magic != PROTO_MAGIC)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "message has the wrong magic 0x%08x (not a Feeder client?)",
				   magic);
	uint16_t version = bytes_le16(p + 4);
	if (version != PROTO_VERSION)
		return status_fail(err, errlen, FEEDER_EVERSION,
				   "message is protocol version %u, this build speaks version %d",
				   version, PROTO_VERSION);
	uint16_t type = bytes_le16(p + 6);
	size_t plen = proto_payload_len(type);
	if (plen == 0)
		return status_fail(err, errlen, FEEDER_EPROTO, "message type %u is unknown", type);
	uint32_t hlen = bytes_le32(p + 8);
	if (bytes_le32(p + 12) != 0)
		return status_fail(err, errlen, FEEDER_EPROTO, "%s: reserved header field is not 0",
				   proto_type_name(type));
	if (hlen != plen)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "%s: header says %u payload bytes, the type has %zu",
				   proto_type_name(type), hlen, plen);
	if (len - PROTO_HEADER_SIZE != plen)
		return status_fail(
			err, errlen, FEEDER_EPROTO,
			"%s: %zu payload bytes arrived, the type has %zu (truncated or padded)",
			proto_type_name(type), len - PROTO_HEADER_SIZE, plen);
	memset(m, 0, sizeof(*m));
	m->type = type;
	struct cur c = { .p = (uint8_t *)p + PROTO_HEADER_SIZE, .len = plen, .mode = W_DECODE };
	walk(&c, type, m);
	if (c.bad)
		return status_fail(
			err, errlen, FEEDER_EPROTO,
			"%s: field '%s' is not a NUL-terminated string padded with zeros",
			proto_type_name(type), c.bad);
	return check_msg(m, err, errlen);
}

uint64_t proto_device_table_size(uint32_t slots, uint64_t page)
{
	uint64_t n = PROTO_DEVICE_TABLE_HEAD + (uint64_t)slots * PROTO_DEVICE_SLOT_ENTRY;
	return (n + page - 1) / page * page;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

int proto_geometry(const struct feeder_stream_opts *o, uint32_t feat_dim, uint64_t page,
		   struct proto_geometry *g, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	uint64_t es = proto_dtype_size(o->dtype);
	if (es == 0 || page == 0 || (page & (page - 1)) || o->batch == 0 || o->slots == 0)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "stream geometry: bad dtype, batch or page");
	g->ndim = 4;
	if (o->pipeline == FEEDER_PIPE_FEATURES || o->pipeline == FEEDER_PIPE_WAVE) {
		/* wave: the dimension is the features the daemon computes. */
		uint32_t chunk = o->features.chunk_len;
		if (o->pipeline == FEEDER_PIPE_WAVE) {
			feat_dim =
				o->wave.features == FEEDER_WAVE_MFCC ? o->wave.ceps : o->wave.bins;
			chunk = o->wave.chunk_len;
		}
		if (feat_dim == 0)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "stream geometry: feature dimension 0");
		g->shape[0] = o->batch;
		g->shape[1] = feat_dim;
		g->shape[2] = chunk;
		g->shape[3] = 1;
		g->sample_bytes = (uint64_t)feat_dim * chunk * es;
	} else {
		uint32_t h = o->jpeg.height, w = o->jpeg.width;
		g->shape[0] = o->batch;
		if (o->layout == FEEDER_LAYOUT_NHWC) {
			g->shape[1] = h;
			g->shape[2] = w;
			g->shape[3] = 3;
		} else {
			g->shape[1] = 3;
			g->shape[2] = h;
			g->shape[3] = w;
		}
		g->sample_bytes = 3ull * h * w * es;
	}
	/* Each factor is bounded (batch 2^16, side 2^13, chunk 2^16, dim 2^12,
	 * slots 2^8), so the products below stay far from 2^64. */
	g->tensor_bytes = g->sample_bytes * o->batch;
	g->labels_offset = PROTO_SLOT_HEADER;
	g->indices_offset = align_up(g->labels_offset + 4ull * o->batch, 8);
	uint64_t end = g->indices_offset + 8ull * o->batch;
	if (o->names) {
		g->names_offset = end;
		end += (uint64_t)FEEDER_SAMPLE_NAME_MAX * o->batch;
	}
	g->tensor_offset = align_up(end, page > PROTO_TENSOR_ALIGN ? page : PROTO_TENSOR_ALIGN);
	g->slot_size = align_up(g->tensor_offset + g->tensor_bytes, page);
	g->ring_size = PROTO_RING_HEADER + g->slot_size * o->slots;
	if (g->ring_size > (1ull << 50))
		return status_fail(err, errlen, FEEDER_EQUOTA,
				   "stream ring of %llu bytes is beyond any memory",
				   (unsigned long long)g->ring_size);
	return 0;
}
