/* speech_synth.c — Klatt-style speech-like synthesis (see speech_synth.h).
 *
 * An utterance is rendered in three steps: plan a sequence of segments
 * (phone-like units with formant, voicing, aspiration and frication
 * targets), build an intonation contour over it at the control rate (one
 * value per BLOCK samples), then run the source-filter model sample by
 * sample while every control parameter glides towards its segment's target
 * through one-pole smoothers, which gives the smooth transitions. Reference
 * formants are adult male averages; a speaker scales them by its vocal tract
 * length and per-formant deviations, an utterance perturbs them slightly and
 * each vowel token a little more. */
#include "speech_synth.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detrand.h"
#include "gen_util.h"
#include "status.h"

#define FS ((double)SPEECH_SYNTH_RATE)
#define BLOCK 32 /* samples per control update: 2 ms */
#define NFORM 5  /* cascade formants F1–F5 */
#define NYQ_GUARD 7600.0

enum seg_kind { SEG_PAUSE, SEG_VOWEL, SEG_NASAL, SEG_FRIC, SEG_ASP, SEG_CLOSURE, SEG_BURST };

struct seg {
	int kind;
	size_t start, len;             /* in samples */
	double f[NFORM], f_end[NFORM]; /* cascade formant targets at start and end (diphthongs) */
	double bw[NFORM];
	double av, ah, af;          /* voicing, aspiration and frication amplitude targets */
	double ff[2], fb[2], fg[2]; /* frication resonances: frequency, bandwidth, gain */
	double accent;              /* pitch accent height, semitones (vowels) */
	int phrase;                 /* intonation phrase: pauses start a new one */
};

struct plan {
	struct seg *segs;
	size_t n, cap;
	size_t pos, limit;
	int phrase;
};

/* Peterson & Barney (1952) adult male averages of F1–F3 (Hz). */
static const double vowel_ref[][3] = {
	{ 270, 2290, 3010 }, /* i */
	{ 390, 1990, 2550 }, /* ɪ */
	{ 530, 1840, 2480 }, /* ɛ */
	{ 660, 1720, 2410 }, /* æ */
	{ 730, 1090, 2440 }, /* ɑ */
	{ 570, 840, 2410 },  /* ɔ */
	{ 440, 1020, 2240 }, /* ʊ */
	{ 300, 870, 2240 },  /* u */
	{ 640, 1190, 2390 }, /* ʌ */
	{ 490, 1350, 1690 }, /* ɝ */
};
#define NVOWELS (sizeof(vowel_ref) / sizeof(vowel_ref[0]))
static const double nasal_ref[][3] = { { 280, 1000, 2200 } /* m */, { 280, 1500, 2500 } /* n */ };
static const double f45_ref[2] = { 3350, 4400 };
static const double bw_ref[NFORM] = { 70, 100, 150, 250, 320 };

/* Frication noise shapes: two resonances (Hz, bandwidth Hz, relative gain). */
struct fric_shape {
	double f1, b1, g1, f2, b2, g2;
};
static const struct fric_shape fric_ref[] = {
	{ 4800, 900, 1.0, 6800, 1400, 0.6 },  /* s */
	{ 2600, 500, 1.0, 4000, 1200, 0.7 },  /* ʃ */
	{ 1700, 2500, 0.3, 5500, 3000, 0.4 }, /* f */
	{ 3800, 2500, 0.3, 6200, 2000, 0.4 }, /* θ */
};
static const struct fric_shape burst_ref[] = {
	{ 900, 1500, 0.5, 2500, 2000, 0.2 },  /* p b */
	{ 4200, 1500, 1.0, 6000, 1500, 0.5 }, /* t d */
	{ 2000, 600, 1.0, 3500, 1200, 0.4 },  /* k g */
};
#define NFRICS (sizeof(fric_ref) / sizeof(fric_ref[0]))
#define NBURSTS (sizeof(burst_ref) / sizeof(burst_ref[0]))

/* Uniform noise in [-sqrt 3, sqrt 3): unit variance, cheaper than a Gaussian
 * and spectrally just as white. */
static inline double noise(struct detrand *r)
{
	return (detrand_uniform(r) * 2.0 - 1.0) * 1.7320508075688772;
}

void speech_synth_speaker(struct speech_synth_speaker *spk, uint64_t key)
{
	struct detrand r;
	double z;

	detrand_init(&r, key);
	/* Log-uniform over the range of adult voices; a higher voice tends to
	 * come with a shorter tract (higher formants), as between men and
	 * women, but not strictly, so pitch alone does not name the speaker. */
	z = detrand_uniform(&r);
	spk->f0_hz = 85.0 * exp(z * log(255.0 / 85.0));
	spk->vtl_scale = 0.92 + 0.24 * z + detrand_between(&r, -0.07, 0.07);
	for (int i = 0; i < 4; i++)
		spk->formant_dev[i] = 1.0 + detrand_between(&r, -0.06, 0.06);
	spk->bw_scale = detrand_between(&r, 0.8, 1.4);
	spk->f0_range_st = detrand_between(&r, 1.5, 4.5);
	spk->jitter = detrand_between(&r, 0.003, 0.02);
	spk->shimmer = detrand_between(&r, 0.02, 0.10);
	spk->tilt = detrand_between(&r, 0.1, 0.7);
	spk->open_quotient = detrand_between(&r, 0.45, 0.75);
	spk->rate = detrand_between(&r, 0.8, 1.25);
	spk->breathiness = detrand_between(&r, 0.02, 0.25);
}

/* Append a segment of dur_s seconds at the plan's position, cut at its
 * limit. Returns the new segment (targets zeroed except the phrase), NULL
 * when the plan is full or out of memory (*oom set). */
static struct seg *plan_add(struct plan *p, int kind, double dur_s, int *oom)
{
	size_t len = (size_t)(dur_s * FS);
	struct seg *s;

	if (p->pos >= p->limit || len == 0)
		return NULL;
	if (len > p->limit - p->pos)
		len = p->limit - p->pos;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct seg *ns = realloc(p->segs, cap * sizeof(*ns));
		if (!ns) {
			*oom = 1;
			return NULL;
		}
		p->segs = ns;
		p->cap = cap;
	}
	s = &p->segs[p->n++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->start = p->pos;
	s->len = len;
	s->phrase = p->phrase;
	p->pos += len;
	return s;
}

/* Formant targets of one vowel or nasal token for this speaker and
 * utterance: reference × tract scale × per-formant deviation × token
 * variation, kept ordered and below Nyquist. */
static void token_formants(const double ref[3], const double *scale, double bw_scale,
			   struct detrand *r, double f[NFORM], double bw[NFORM])
{
	for (int i = 0; i < NFORM; i++) {
		double base = i < 3 ? ref[i] : f45_ref[i - 3];
		double tok = i < 3 ? 1.0 + 0.03 * gen_gauss(r) : 1.0;
		f[i] = base * scale[i] * tok;
		if (i > 0 && f[i] < f[i - 1] + 150.0)
			f[i] = f[i - 1] + 150.0;
		if (f[i] > NYQ_GUARD)
			f[i] = NYQ_GUARD;
		bw[i] = bw_ref[i] * bw_scale * (1.0 + 0.08 * gen_gauss(r));
	}
}

static void copy_formants(struct seg *s, const double f[NFORM], const double bw[NFORM])
{
	memcpy(s->f, f, sizeof(s->f));
	memcpy(s->f_end, f, sizeof(s->f_end));
	memcpy(s->bw, bw, sizeof(s->bw));
}

static void set_fric(struct seg *s, const struct fric_shape *sh, double scale, double amp)
{
	/* Front cavities scale less than the whole tract: use its square root. */
	double k = sqrt(scale);
	s->ff[0] = fmin(sh->f1 * k, NYQ_GUARD);
	s->ff[1] = fmin(sh->f2 * k, NYQ_GUARD);
	s->fb[0] = sh->b1;
	s->fb[1] = sh->b2;
	s->fg[0] = sh->g1;
	s->fg[1] = sh->g2;
	s->af = amp;
}

/* One consonant next to a vowel whose formants (f, bw) it takes on, as
 * coarticulation does. Onsets may be aspirated /h/; codas not. */
static int add_consonant(struct plan *p, struct detrand *r, double rate, double tract,
			 const double f[NFORM], const double bw[NFORM], int onset)
{
	double c = detrand_uniform(r);
	int oom = 0;
	struct seg *s;

	if (c < 0.35) { /* fricative, voiced one time in three */
		int voiced = detrand_uniform(r) < 0.33;
		s = plan_add(p, SEG_FRIC, detrand_between(r, 0.07, 0.14) / rate, &oom);
		if (!s)
			return oom;
		copy_formants(s, f, bw);
		set_fric(s, &fric_ref[detrand_range(r, 0, NFRICS - 1)], tract, voiced ? 0.6 : 1.0);
		s->av = voiced ? 0.3 : 0.0;
	} else if (c < 0.5 && onset) { /* /h/ */
		s = plan_add(p, SEG_ASP, detrand_between(r, 0.05, 0.09) / rate, &oom);
		if (!s)
			return oom;
		copy_formants(s, f, bw);
		s->ah = 0.5;
	} else if (c < 0.7) { /* nasal murmur */
		double nf[NFORM], nbw[NFORM], scale[NFORM];
		for (int i = 0; i < NFORM; i++)
			scale[i] = tract;
		token_formants(nasal_ref[detrand_range(r, 0, 1)], scale, 1.0, r, nf, nbw);
		nbw[0] = 100.0;
		nbw[1] = 250.0;
		s = plan_add(p, SEG_NASAL, detrand_between(r, 0.05, 0.09) / rate, &oom);
		if (!s)
			return oom;
		copy_formants(s, nf, nbw);
		s->av = 0.35;
	} else { /* stop: closure (a voice bar if voiced), burst, aspiration */
		int voiced = detrand_uniform(r) < 0.5;
		const struct fric_shape *b = &burst_ref[detrand_range(r, 0, NBURSTS - 1)];
		s = plan_add(p, SEG_CLOSURE, detrand_between(r, 0.04, 0.08) / rate, &oom);
		if (!s)
			return oom;
		copy_formants(s, f, bw);
		s->av = voiced ? 0.06 : 0.0;
		s = plan_add(p, SEG_BURST, detrand_between(r, 0.008, 0.02), &oom);
		if (!s)
			return oom;
		copy_formants(s, f, bw);
		set_fric(s, b, tract, voiced ? 0.8 : 1.3);
		if (!voiced && onset) {
			s = plan_add(p, SEG_ASP, detrand_between(r, 0.025, 0.05) / rate, &oom);
			if (!s)
				return oom;
			copy_formants(s, f, bw);
			s->ah = 0.4;
		}
	}
	return 0;
}

/* Plan the segments of an utterance of `samples` samples. */
static int plan_utterance(struct plan *p, const struct speech_synth_speaker *spk, struct detrand *r,
			  size_t samples, double rate, double tract)
{
	double lead = detrand_between(r, 0.08, 0.25) * FS,
	       trail = detrand_between(r, 0.08, 0.25) * FS;
	double scale[NFORM];
	int oom = 0;

	if (lead + trail > samples / 3.0) {
		double k = (samples / 3.0) / (lead + trail);
		lead *= k;
		trail *= k;
	}
	for (int i = 0; i < NFORM; i++)
		scale[i] = tract * (i < 4 ? spk->formant_dev[i] : 1.0);

	/* Pauses asked longer than needed are cut at the limit, which makes
	 * the lead and trail end exactly where planned. */
	p->limit = (size_t)lead;
	plan_add(p, SEG_PAUSE, lead / FS + 1.0, &oom);
	p->limit = samples - (size_t)trail;
	while (!oom && p->pos < p->limit) {
		double f[NFORM], bw[NFORM];
		struct seg *v;
		int stressed = detrand_uniform(r) < 0.45;

		token_formants(vowel_ref[detrand_range(r, 0, NVOWELS - 1)], scale, spk->bw_scale, r,
			       f, bw);
		bw[0] += 120.0 * spk->breathiness; /* an open glottis damps F1 */
		if (detrand_uniform(r) < 0.65 && add_consonant(p, r, rate, tract, f, bw, 1))
			break;
		v = plan_add(p, SEG_VOWEL,
			     detrand_between(r, 0.08, 0.2) * (stressed ? 1.35 : 1.0) / rate, &oom);
		if (!v)
			break;
		copy_formants(v, f, bw);
		if (detrand_uniform(r) < 0.2) { /* diphthong: glide to a second vowel */
			double g[NFORM], gb[NFORM];
			token_formants(vowel_ref[detrand_range(r, 0, NVOWELS - 1)], scale,
				       spk->bw_scale, r, g, gb);
			memcpy(v->f_end, g, sizeof(v->f_end));
			memcpy(f, g, sizeof(g));
		}
		v->av = detrand_between(r, 0.75, 1.0) * (stressed ? 1.0 : 0.8);
		v->ah = 0.0;
		v->accent = stressed ? spk->f0_range_st * detrand_between(r, 0.4, 1.0) : 0.0;
		if (detrand_uniform(r) < 0.3 && add_consonant(p, r, rate, tract, f, bw, 0))
			break;
		if (detrand_uniform(r) < 0.12 && p->pos + 0.4 * FS < p->limit) {
			plan_add(p, SEG_PAUSE, detrand_between(r, 0.12, 0.35) / rate, &oom);
			p->phrase++;
		}
	}
	if (oom)
		return -ENOMEM;
	p->limit = samples;
	p->phrase++;
	plan_add(p, SEG_PAUSE, (double)samples / FS + 1.0, &oom);
	return oom ? -ENOMEM : 0;
}

/* Intonation: per-phrase declination, a bump on each accented vowel and a
 * slow random wander, in semitones at the control rate, then smoothed. */
static void f0_contour(const struct plan *p, const struct speech_synth_speaker *spk,
		       struct detrand *r, double f0, double *track, size_t nblocks)
{
	double wander = 0.0, sm, a = 1.0 - exp(-BLOCK / (FS * 0.03));
	size_t i, k = 0;

	for (i = 0; i < nblocks; i++) {
		size_t t = i * BLOCK;
		const struct seg *s;
		double st;

		while (k + 1 < p->n && t >= p->segs[k].start + p->segs[k].len)
			k++;
		s = &p->segs[k];
		/* The phrase's extent: from its first to its last segment. */
		size_t first = k, last = k;
		while (first > 0 && p->segs[first - 1].phrase == s->phrase)
			first--;
		while (last + 1 < p->n && p->segs[last + 1].phrase == s->phrase)
			last++;
		size_t p0 = p->segs[first].start;
		size_t p1 = p->segs[last].start + p->segs[last].len;
		double x = p1 > p0 ? (double)(t - p0) / (double)(p1 - p0) : 0.0;

		st = spk->f0_range_st * (0.2 - 0.7 * x);
		if (s->kind == SEG_VOWEL && s->accent > 0.0) {
			double y = (double)(t - s->start) / (double)s->len;
			st += s->accent * sin(M_PI * fmin(1.0, y * 0.8 + 0.1));
		}
		wander += -0.01 * wander + 0.08 * gen_gauss(r);
		track[i] = st + wander;
	}
	sm = track[0];
	for (i = 0; i < nblocks; i++) {
		sm += (track[i] - sm) * a;
		track[i] = fmin(500.0, fmax(50.0, f0 * exp2(sm / 12.0)));
	}
}

struct reson {
	double a, b, c, y1, y2;
};

/* Klatt's digital resonator, unity gain at DC. */
static void reson_set(struct reson *q, double f, double bw)
{
	double rr = exp(-M_PI * bw / FS);
	q->c = -rr * rr;
	q->b = 2.0 * rr * cos(2.0 * M_PI * f / FS);
	q->a = 1.0 - q->b - q->c;
}

/* The same resonator scaled to unity gain at its peak, so that a noise
 * shape's level does not depend on how narrow it is. */
static void reson_set_peak(struct reson *q, double f, double bw)
{
	double w = 2.0 * M_PI * f / FS, re, im;
	reson_set(q, f, bw);
	re = 1.0 - q->b * cos(w) - q->c * cos(2.0 * w);
	im = q->b * sin(w) + q->c * sin(2.0 * w);
	q->a = sqrt(re * re + im * im);
}

static inline double reson_run(struct reson *q, double x)
{
	double y = q->a * x + q->b * q->y1 + q->c * q->y2;
	q->y2 = q->y1;
	q->y1 = y;
	return y;
}

/* RMS of this voice saying a neutral vowel at f0 (no jitter). The voicing is
 * scaled by its inverse so that open quotient, tilt, pitch and tract change
 * the timbre but not the vocal effort, which keeps vowels and frication in
 * proportion for every speaker. */
static double voice_rms(const struct speech_synth_speaker *spk, double f0, double tract)
{
	struct reson casc[NFORM] = { { 0 } };
	double ph = 0.0, src = 0.0, sum2 = 0.0;
	const int warm = SPEECH_SYNTH_RATE / 50, n = SPEECH_SYNTH_RATE / 10;

	for (int j = 0; j < NFORM; j++)
		reson_set(&casc[j], (500.0 + 1000.0 * j) * tract, bw_ref[j] * spk->bw_scale);
	for (int i = 0; i < warm + n; i++) {
		double tau, y = 0.0;
		ph += f0 / FS;
		ph -= floor(ph);
		tau = ph / spk->open_quotient;
		if (tau < 1.0)
			y = 2.0 * tau - 3.0 * tau * tau;
		src = (1.0 - spk->tilt) * y + spk->tilt * src;
		y = src;
		for (int j = 0; j < NFORM; j++)
			y = reson_run(&casc[j], y);
		if (i >= warm)
			sum2 += y * y;
	}
	return sqrt(sum2 / n);
}

/* The tract's formants one block further towards segment s's, at x of its
 * length (a is the glide's step). */
static void glide_formants(const struct seg *s, double x, double a, double cf[NFORM],
			   double cbw[NFORM], struct reson casc[NFORM])
{
	for (int j = 0; j < NFORM; j++) {
		double tf = s->f[j] + (s->f_end[j] - s->f[j]) * x;
		cf[j] += (tf - cf[j]) * a;
		cbw[j] += (s->bw[j] - cbw[j]) * a;
		reson_set(&casc[j], cf[j], cbw[j]);
	}
}

/* The formants the tract starts from: the first segment after the
 * opening pause, or a neutral tract for a plan of pauses only. */
static void start_formants(const struct plan *p, double tract, double cf[NFORM], double cbw[NFORM])
{
	for (int j = 0; j < NFORM; j++) {
		cf[j] = p->segs[1 < p->n ? 1 : 0].f[j];
		cbw[j] = p->segs[1 < p->n ? 1 : 0].bw[j];
		if (cf[j] <= 0.0) {
			cf[j] = (500.0 + 1000.0 * j) * tract;
			cbw[j] = bw_ref[j];
		}
	}
}

/* The channel: a mild random tilt, then the level and background noise;
 * buf (the tract's output) to 16-bit PCM in out. */
static void add_channel(struct detrand *r, float *buf, int16_t *out, size_t samples, double chan,
			double level_db, double snr_db, double ncol)
{
	double sum2 = 0, peak = 0, prev = 0, nstate = 0;
	for (size_t i = 0; i < samples; i++) {
		double y = buf[i] - chan * prev;
		prev = buf[i];
		buf[i] = (float)y;
		sum2 += y * y;
		if (fabs(y) > peak)
			peak = fabs(y);
	}
	double gain = sum2 > 0.0 ? pow(10.0, level_db / 20.0) / sqrt(sum2 / samples) : 0.0;
	if (peak * gain > 0.9)
		gain = 0.9 / peak;
	double nlev = pow(10.0, level_db / 20.0) * pow(10.0, -snr_db / 20.0) *
		      sqrt((1.0 + ncol) / (1.0 - ncol));
	for (size_t i = 0; i < samples; i++) {
		nstate = (1.0 - ncol) * noise(r) + ncol * nstate;
		double y = (buf[i] * gain + nlev * nstate) * 32767.0;
		y = y > 32767.0 ? 32767.0 : y < -32768.0 ? -32768.0 : y;
		out[i] = (int16_t)lrint(y);
	}
}

/* Over 100 lines: the block loop carries a dozen filter and envelope states from block to block. */
int speech_synth_utterance(const struct speech_synth_speaker *spk, uint64_t key, int16_t *out,
			   size_t samples, char *err, size_t errlen)
{
	struct detrand r;
	struct plan p = { 0 };
	struct reson casc[NFORM] = { { 0 } }, fric[2] = { { 0 } };
	size_t nblocks, k = 0, i;
	double *track = NULL;
	float *buf = NULL;
	double f0, tract, rate, breath, level_db, snr_db, chan, ncol;
	double cf[NFORM], cbw[NFORM], cav = 0, cah = 0, caf = 0;
	double vnorm, ph = 0, pf, pamp = 1, src = 0;
	const double a_form = 1.0 - exp(-BLOCK / (FS * 0.018));
	const double a_amp = 1.0 - exp(-BLOCK / (FS * 0.008));
	const double a_fric = 1.0 - exp(-BLOCK / (FS * 0.003));
	int rc;

	if (samples < 2 * BLOCK)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "utterance of %zu samples is too short to synthesize", samples);
	detrand_init(&r, key);
	/* This utterance's take on the voice. */
	f0 = spk->f0_hz * exp2(0.6 * gen_gauss(&r) / 12.0);
	tract = spk->vtl_scale * (1.0 + 0.012 * gen_gauss(&r));
	rate = spk->rate * detrand_between(&r, 0.9, 1.1);
	breath = spk->breathiness * detrand_between(&r, 0.8, 1.2);
	level_db = detrand_between(&r, -30.0, -20.0);
	snr_db = detrand_between(&r, 25.0, 40.0);
	chan = detrand_between(&r, -0.2, 0.4);
	ncol = detrand_between(&r, 0.0, 0.95);

	nblocks = (samples + BLOCK - 1) / BLOCK;
	track = malloc(nblocks * sizeof(*track));
	buf = malloc(samples * sizeof(*buf));
	if (!track || !buf) {
		rc = status_fail(err, errlen, -ENOMEM, "no memory for a %zu-sample utterance",
				 samples);
		goto out;
	}
	rc = plan_utterance(&p, spk, &r, samples, rate, tract);
	if (rc < 0) {
		status_fail(err, errlen, rc, "no memory to plan a %zu-sample utterance", samples);
		goto out;
	}
	f0_contour(&p, spk, &r, f0, track, nblocks);

	start_formants(&p, tract, cf, cbw);
	vnorm = voice_rms(spk, f0, tract);
	vnorm = vnorm > 0.0 ? 0.25 / vnorm : 0.0;
	pf = track[0];
	for (size_t b = 0; b < nblocks; b++) {
		size_t t0 = b * BLOCK, t1 = t0 + BLOCK < samples ? t0 + BLOCK : samples;
		const struct seg *s;
		double x;

		while (k + 1 < p.n && t0 >= p.segs[k].start + p.segs[k].len)
			k++;
		s = &p.segs[k];
		x = s->len ? (double)(t0 - s->start) / (double)s->len : 0.0;
		if (s->kind != SEG_PAUSE)
			glide_formants(s, x, a_form, cf, cbw, casc);
		cav += (s->av - cav) * a_amp;
		cah += (s->ah - cah) * a_amp;
		caf += (s->af - caf) * a_fric;
		if (s->af > 0.0)
			for (int j = 0; j < 2; j++)
				reson_set_peak(&fric[j], s->ff[j], s->fb[j]);

		for (i = t0; i < t1; i++) {
			double g = 0.0, tau, n1 = noise(&r), v, y;

			ph += pf / FS;
			if (ph >= 1.0) { /* a new glottal period: draw its jitter and shimmer */
				ph -= floor(ph);
				pf = track[b] * (1.0 + spk->jitter * gen_gauss(&r));
				pamp = 1.0 + spk->shimmer * gen_gauss(&r);
			}
			tau = ph / spk->open_quotient;
			if (tau < 1.0) /* derivative of the KLGLOTT88 flow tau^2 - tau^3 */
				g = (2.0 * tau - 3.0 * tau * tau) * pamp;
			src = (1.0 - spk->tilt) * g + spk->tilt * src;
			v = vnorm * cav * src +
			    n1 * (0.05 * cah + 0.04 * breath * cav * (tau < 1.0 ? 1.0 : 0.4));
			y = v;
			for (int j = 0; j < NFORM; j++)
				y = reson_run(&casc[j], y);
			if (caf > 1e-4) {
				double n2 = noise(&r) * caf * 0.12;
				y += reson_run(&fric[0], n2) * s->fg[0] +
				     reson_run(&fric[1], n2) * s->fg[1];
			}
			buf[i] = (float)y;
		}
	}

	add_channel(&r, buf, out, samples, chan, level_db, snr_db, ncol);
	rc = 0;
out:
	free(p.segs);
	free(track);
	free(buf);
	return rc;
}
