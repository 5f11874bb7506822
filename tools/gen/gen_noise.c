/* gen_noise.c — gen-noise: write a synthetic stand-in for the MUSAN corpus,
 * the noise, music and babble sources of Kaldi-style speech augmentation.
 *
 *   gen-noise [--seed N] [--rate HZ] [--count N] [--seconds MIN:MAX]
 *             [--threads N] DEST
 *
 * writes DEST/noise/noise-synth-NNNN.wav, DEST/music/music-synth-NNNN.wav and
 * DEST/speech/speech-synth-NNNN.wav (N files of each, 16-bit mono PCM) and an
 * ANNOTATIONS file in each folder, one line per file whose first fields are
 * what Kaldi's make_musan.py reads (for music: name, genre, vocals Y/N,
 * musician), then what was drawn, for inspection and tests.
 *
 * noise: file i is of kind i % 6: white, pink (1/f, a pole-zero cascade),
 * brown (1/f^2, a leaky integrator), mains hum (50/60 Hz and harmonics over
 * a faint pink floor), fan (band-passed brownish noise, a blade-pass tone and
 * a rotation-rate flutter), and band-limited noise with a slow amplitude
 * modulation. music: a drawn key, mode, tempo and chord progression played by
 * additive-synthesis instruments tuned to A440 equal temperament (a chord
 * pad, a plucked bass, a melody of eighth notes) over an optional kick and
 * hi-hat. speech: speech_synth utterances of speakers drawn from a key domain
 * that gen-speech never uses, one speaker per file, so that babble made from
 * them never contains a training speaker.
 *
 * Every file is a pure function of (seed, category, index), whatever the
 * thread count; peaks are drawn between -8 and -4 dBFS. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "detrand.h"
#include "gen_util.h"
#include "speech_synth.h"
#include "status.h"
#include "wav_write.h"

#define MAX_COUNT 10000 /* names keep four digits */
#define MIN_SECONDS 0.1
#define MAX_SECONDS 600.0
#define NOTE_LEN 160 /* bytes of one ANNOTATIONS line */

/* Key domains (detrand_key's "epoch" argument). gen-speech draws its
 * speakers from epoch 1 and its utterances from epochs 2 and up (fewer than
 * 1002), so these constants keep babble speakers apart from any corpus it
 * writes. */
#define DOMAIN_FILE 0x67656e2d6e6f6900ull /* + category */
#define DOMAIN_SPEAKER 0x626162626c650001ull
#define DOMAIN_UTTERANCE 0x626162626c650002ull

enum { CAT_NOISE, CAT_MUSIC, CAT_SPEECH, NCAT };
static const char *const cat_name[NCAT] = { "noise", "music", "speech" };

enum { K_WHITE, K_PINK, K_BROWN, K_HUM, K_FAN, K_BAND, NKINDS };
static const char *const kind_name[NKINDS] = { "white", "pink", "brown", "hum", "fan", "band" };

static const char usage[] =
	"usage: gen-noise [--seed N] [--rate HZ] [--count N] [--seconds MIN:MAX] "
	"[--threads N] DEST";

struct job {
	const char *dest;
	uint64_t seed;
	int rate, count;
	double min_s, max_s;
	char *notes;     /* NCAT * count lines of NOTE_LEN, one per file */
	double *seconds; /* per file, summed at the end */
};

/* A direct-form-I biquad. */
struct biquad {
	double b0, b1, b2, a1, a2;
	double x1, x2, y1, y2;
};

static double biquad_run(struct biquad *q, double x)
{
	double y = q->b0 * x + q->b1 * q->x1 + q->b2 * q->x2 - q->a1 * q->y1 - q->a2 * q->y2;
	q->x2 = q->x1;
	q->x1 = x;
	q->y2 = q->y1;
	q->y1 = y;
	return y;
}

/* RBJ cookbook band-pass with 0 dB peak gain, and high-pass. */
static void biquad_bandpass(struct biquad *q, double f0, double qf, double fs)
{
	double w = 2.0 * M_PI * f0 / fs, al = sin(w) / (2.0 * qf), a0 = 1.0 + al;
	*q = (struct biquad){ .b0 = al / a0,
			      .b1 = 0.0,
			      .b2 = -al / a0,
			      .a1 = -2.0 * cos(w) / a0,
			      .a2 = (1.0 - al) / a0 };
}

static void biquad_highpass(struct biquad *q, double f0, double qf, double fs)
{
	double w = 2.0 * M_PI * f0 / fs, al = sin(w) / (2.0 * qf), c = cos(w), a0 = 1.0 + al;
	*q = (struct biquad){ .b0 = (1.0 + c) / 2.0 / a0,
			      .b1 = -(1.0 + c) / a0,
			      .b2 = (1.0 + c) / 2.0 / a0,
			      .a1 = -2.0 * c / a0,
			      .a2 = (1.0 - al) / a0 };
}

/* 1/f noise: white noise through first-order pole-zero sections, three per
 * decade, each zero half a step above its pole, so that the magnitude falls
 * by 10 dB per decade in power (3 dB/octave) with well under 1 dB of
 * ripple, from a few hertz up towards Nyquist. */
#define PINK_MAX 16
struct pink {
	int n;
	double p[PINK_MAX], z[PINK_MAX], x1[PINK_MAX], y1[PINK_MAX];
};

static void pink_init(struct pink *pk, double fs)
{
	const double step = pow(10.0, 1.0 / 3.0);
	double f = 3.0;

	memset(pk, 0, sizeof(*pk));
	while (pk->n < PINK_MAX && f < 0.45 * fs) {
		pk->p[pk->n] = exp(-2.0 * M_PI * f / fs);
		pk->z[pk->n] = exp(-2.0 * M_PI * f * sqrt(step) / fs);
		pk->n++;
		f *= step;
	}
}

static double pink_run(struct pink *pk, double x)
{
	for (int k = 0; k < pk->n; k++) {
		double y = x - pk->z[k] * pk->x1[k] + pk->p[k] * pk->y1[k];
		pk->x1[k] = x;
		pk->y1[k] = y;
		x = y;
	}
	return x;
}

/* Fill x[0..n) with one noise file of `kind`; the filters first run on half
 * a second of input that is thrown away, so that the file starts in their
 * steady state. What was drawn goes to note. */
static void render_noise(int kind, struct detrand *r, float *x, size_t n, double fs, char *note,
			 size_t notelen)
{
	const size_t warm = (size_t)(0.5 * fs);
	struct pink pk;
	struct biquad bp = { 0 }, bp2 = { 0 };
	char what[80] = "";
	double leak = exp(-2.0 * M_PI * 8.0 / fs), brown = 0.0;
	double mains = 0, blade = 0, flutter = 0, depth = 0, center = 0, qf = 0, mod = 0;
	double hamp[12] = { 0 }, hph[12] = { 0 }, mph = detrand_between(r, 0.0, 2.0 * M_PI);

	pink_init(&pk, fs);
	switch (kind) {
	case K_WHITE:
		break;
	case K_PINK:
		snprintf(what, sizeof(what), "slope=-10dB/decade");
		break;
	case K_BROWN:
		snprintf(what, sizeof(what), "slope=-20dB/decade corner=8Hz");
		break;
	case K_HUM:
		/* Mains hum: the fundamental, a strong second harmonic (magnetostriction)
		 * and odd harmonics falling off, each with its own level. */
		mains = detrand_uniform(r) < 0.5 ? 50.0 : 60.0;
		for (int k = 1; k <= 12; k++) {
			if (k * mains >= 0.45 * fs)
				break;
			hamp[k - 1] = pow(k, -1.1) *
				      (k == 2  ? 2.0
				       : k % 2 ? 1.0
					       : 0.4) *
				      pow(10.0, detrand_between(r, -6.0, 3.0) / 20.0);
			hph[k - 1] = detrand_between(r, 0.0, 2.0 * M_PI);
		}
		mod = detrand_between(r, 0.1, 0.5);
		snprintf(what, sizeof(what), "mains=%.0fHz", mains);
		break;
	case K_FAN:
		blade = detrand_between(r, 60.0, 250.0);
		flutter = detrand_between(r, 4.0, 20.0);
		depth = detrand_between(r, 0.1, 0.3);
		center = detrand_between(r, 200.0, 900.0);
		biquad_bandpass(&bp, center, 0.7, fs);
		for (int k = 1; k <= 3; k++) {
			hamp[k - 1] = 0.15 * pow(10.0, detrand_between(r, -6.0, 0.0) / 20.0) / k;
			hph[k - 1] = detrand_between(r, 0.0, 2.0 * M_PI);
		}
		snprintf(what, sizeof(what), "blade=%.1fHz flutter=%.1fHz band=%.0fHz", blade,
			 flutter, center);
		break;
	case K_BAND:
		center = exp(detrand_between(r, log(300.0), log(fmin(4000.0, 0.35 * fs))));
		qf = detrand_between(r, 1.0, 4.0);
		mod = detrand_between(r, 0.5, 8.0);
		depth = detrand_between(r, 0.3, 0.9);
		biquad_bandpass(&bp, center, qf, fs);
		bp2 = bp;
		snprintf(what, sizeof(what), "center=%.0fHz q=%.2f am=%.2fHz depth=%.2f", center,
			 qf, mod, depth);
		break;
	}

	for (size_t i = 0; i < warm + n; i++) {
		double w = gen_gauss(r), y = 0.0, t = (double)i / fs;

		switch (kind) {
		case K_WHITE:
			y = w;
			break;
		case K_PINK:
			y = pink_run(&pk, w);
			break;
		case K_BROWN:
			brown = leak * brown + w;
			y = brown;
			break;
		case K_HUM:
			y = 0.01 * pink_run(&pk, w);
			for (int k = 0; k < 12; k++)
				if (hamp[k] > 0.0)
					y += hamp[k] *
					     sin(2.0 * M_PI * (k + 1) * mains * t + hph[k]);
			y *= 1.0 + 0.1 * sin(2.0 * M_PI * mod * t + mph);
			break;
		case K_FAN:
			brown = leak * brown + w;
			y = biquad_run(&bp, 0.3 * brown + 2.0 * pink_run(&pk, w));
			for (int k = 0; k < 3; k++)
				y += hamp[k] * sin(2.0 * M_PI * (k + 1) * blade * t + hph[k]);
			y *= 1.0 + depth * sin(2.0 * M_PI * flutter * t + mph);
			break;
		case K_BAND:
			/* Two sections: skirts steep enough to sound band-limited. */
			y = biquad_run(&bp2, biquad_run(&bp, w));
			y *= 1.0 - depth * 0.5 * (1.0 + sin(2.0 * M_PI * mod * t + mph));
			break;
		}
		if (i >= warm)
			x[i - warm] = (float)y;
	}
	snprintf(note, notelen, "%s%s%s", kind_name[kind], what[0] ? " " : "", what);
}

/* Music. Equal temperament at A440: MIDI note m sounds at this frequency. */
static double midi_hz(double m)
{
	return 440.0 * exp2((m - 69.0) / 12.0);
}

struct timbre {
	int harmonics;
	double rolloff; /* harmonic k at k^-rolloff */
	double even;    /* extra gain of even harmonics (hollow when small) */
	double attack, decay, sustain, release; /* seconds, seconds, level, seconds */
};

/* Add one note: harmonics of midi_hz(m) under an attack-decay-sustain-release
 * envelope, held for `dur` seconds from t0, released after. */
static void add_note(float *x, size_t n, double fs, double t0, double dur, int m, double amp,
		     const struct timbre *tb)
{
	double f = midi_hz(m), amps[32];
	size_t i0 = (size_t)(t0 * fs), len = (size_t)((dur + tb->release) * fs);
	int nh = 0;

	for (int k = 1; k <= tb->harmonics && k <= 32; k++) {
		if (k * f >= 0.45 * fs)
			break;
		amps[nh++] = amp * pow(k, -tb->rolloff) * (k % 2 ? 1.0 : tb->even);
	}
	for (size_t j = 0; j < len && i0 + j < n; j++) {
		double t = j / fs, env, y = 0.0;

		if (t < tb->attack)
			env = t / tb->attack;
		else
			env = tb->sustain +
			      (1.0 - tb->sustain) * exp(-(t - tb->attack) / tb->decay);
		if (t > dur)
			env *= fmax(0.0, 1.0 - (t - dur) / tb->release);
		for (int k = 0; k < nh; k++)
			y += amps[k] * sin(2.0 * M_PI * (k + 1) * f * t);
		x[i0 + j] += (float)(env * y);
	}
}

static void add_kick(float *x, size_t n, double fs, double t0, double amp)
{
	size_t i0 = (size_t)(t0 * fs), len = (size_t)(0.35 * fs);
	double ph = 0.0;

	for (size_t j = 0; j < len && i0 + j < n; j++) {
		double t = j / fs;
		ph += 2.0 * M_PI * (50.0 + 90.0 * exp(-t / 0.03)) / fs;
		x[i0 + j] += (float)(amp * exp(-t / 0.09) * sin(ph));
	}
}

static void add_hat(float *x, size_t n, double fs, double t0, double amp, struct detrand *r)
{
	size_t i0 = (size_t)(t0 * fs), len = (size_t)(0.08 * fs);
	struct biquad hp;

	biquad_highpass(&hp, 0.3 * fs, 0.7, fs);
	for (size_t j = 0; j < len && i0 + j < n; j++)
		x[i0 + j] += (float)(amp * exp(-(j / fs) / 0.015) * biquad_run(&hp, gen_gauss(r)));
}

static void render_music(struct detrand *r, float *x, size_t n, double fs, char *note,
			 size_t notelen)
{
	static const int major[7] = { 0, 2, 4, 5, 7, 9, 11 }, minor[7] = { 0, 2, 3, 5, 7, 8, 10 };
	static const int progs[4][4] = {
		{ 0, 4, 5, 3 }, { 0, 3, 4, 0 }, { 5, 3, 0, 4 }, { 1, 4, 0, 5 }
	};
	int is_minor = detrand_uniform(r) < 0.5;
	const int *scale = is_minor ? minor : major;
	int root = (int)detrand_range(r, 45, 56), prog = (int)detrand_range(r, 0, 3);
	int drums = detrand_uniform(r) < 0.7, deg = (int)detrand_range(r, 7, 11);
	double bpm = detrand_between(r, 80.0, 150.0), beat = 60.0 / bpm, dur = (double)n / fs;
	struct timbre pad = {
		6, detrand_between(r, 1.3, 2.0), detrand_between(r, 0.5, 1.0), 0.08, 0.5, 0.7, 0.25
	};
	struct timbre bass = {
		8,   detrand_between(r, 1.0, 1.6), detrand_between(r, 0.6, 1.0), 0.005, 0.25, 0.3,
		0.08
	};
	struct timbre lead = { (int)detrand_range(r, 4, 10),
			       detrand_between(r, 0.8, 1.5),
			       detrand_between(r, 0.3, 1.0),
			       0.01,
			       0.15,
			       0.6,
			       0.05 };
	static const char *const names[12] = { "A",  "A#", "B", "C",  "C#", "D",
					       "D#", "E",  "F", "F#", "G",  "G#" };

	/* Scale degree d (any integer, 7 per octave) as a MIDI note over root. */
#define DEGREE(d) (root + 12 * ((d) >= 0 ? (d) / 7 : -((6 - (d)) / 7)) + scale[(((d) % 7) + 7) % 7])
	for (int bar = 0; bar * 4 * beat < dur; bar++) {
		double tb = bar * 4 * beat;
		int chord = progs[prog][bar % 4];

		for (int v = 0; v < 3; v++)
			add_note(x, n, fs, tb, 4 * beat - pad.release, DEGREE(chord + 2 * v) + 12,
				 0.12, &pad);
		for (int b = 0; b < 4; b += 2)
			add_note(x, n, fs, tb + b * beat, 0.9 * beat, DEGREE(chord) - 12, 0.35,
				 &bass);
		for (int e = 0; e < 8; e++) {
			double te = tb + e * beat / 2;
			/* A random walk over the scale that lands on a chord tone on
			 * each beat's first eighth. */
			deg += (int)detrand_range(r, -2, 2);
			deg = deg < 7 ? 7 : deg > 16 ? 16 : deg;
			if (e % 2 == 0)
				deg = chord + 7 + 2 * (int)detrand_range(r, 0, 2);
			if (detrand_uniform(r) < 0.2)
				continue; /* a rest */
			add_note(x, n, fs, te, 0.45 * beat, DEGREE(deg) + 12, 0.2, &lead);
		}
		if (drums)
			for (int e = 0; e < 8; e++) {
				if (e % 4 == 0)
					add_kick(x, n, fs, tb + e * beat / 2, 0.3);
				add_hat(x, n, fs, tb + e * beat / 2, 0.03, r);
			}
	}
#undef DEGREE
	snprintf(note, notelen, "synth N gen-noise key=%s%s bpm=%.1f drums=%s",
		 names[(root - 45 + 12) % 12], is_minor ? "m" : "", bpm, drums ? "yes" : "no");
}

/* Band-limited resampling from 16 kHz (the synthesizer's rate) to fs:
 * a Hann-windowed sinc cut off below the lower Nyquist frequency. */
static void resample(const int16_t *in, size_t nin, float *out, size_t nout, double fs)
{
	const double step = SPEECH_SYNTH_RATE / fs;
	const double cut = 0.45 * fmin(1.0, fs / SPEECH_SYNTH_RATE) * 2.0; /* of input rate */
	const double half = 16.0 / fmin(1.0, fs / SPEECH_SYNTH_RATE);

	for (size_t i = 0; i < nout; i++) {
		double t = i * step, y = 0.0;
		long j0 = (long)ceil(t - half), j1 = (long)floor(t + half);

		for (long j = j0 < 0 ? 0 : j0; j <= j1 && j < (long)nin; j++) {
			double d = j - t,
			       s = d == 0.0 ? 1.0 : sin(M_PI * cut * d) / (M_PI * cut * d);
			y += in[j] * cut * s * 0.5 * (1.0 + cos(M_PI * d / half));
		}
		out[i] = (float)y;
	}
}

static int render_speech(const struct job *j, int index, float *x, size_t n, char *note,
			 size_t notelen, char *err, size_t errlen)
{
	struct speech_synth_speaker v;
	size_t n16 = (size_t)ceil((double)n * SPEECH_SYNTH_RATE / j->rate);
	int16_t *pcm;
	int rc;

	if (n16 < 64)
		n16 = 64; /* the synthesizer's shortest utterance */
	pcm = malloc(n16 * sizeof(*pcm));
	if (!pcm)
		return status_fail(err, errlen, -ENOMEM, "no memory for %zu samples", n16);
	speech_synth_speaker(&v, detrand_key(j->seed, DOMAIN_SPEAKER, (uint64_t)index));
	rc = speech_synth_utterance(&v, detrand_key(j->seed, DOMAIN_UTTERANCE, (uint64_t)index),
				    pcm, n16, err, errlen);
	if (rc == 0) {
		if (j->rate == SPEECH_SYNTH_RATE)
			for (size_t i = 0; i < n; i++)
				x[i] = pcm[i];
		else
			resample(pcm, n16, x, n, j->rate);
		snprintf(note, notelen, "babble-%04d f0=%.1fHz vtl=%.3f", index, v.f0_hz,
			 v.vtl_scale);
	}
	free(pcm);
	return rc;
}

static int render_one(void *ctx, int job_index, char *err, size_t errlen)
{
	struct job *j = ctx;
	int cat = job_index / j->count, index = job_index % j->count;
	char *note = j->notes + (size_t)job_index * NOTE_LEN, desc[NOTE_LEN - 32], path[4096];
	double fs = j->rate, peak_db;
	struct detrand r;
	size_t n, fade;
	int16_t *pcm = NULL;
	float *x;
	int rc = 0;

	detrand_init(&r, detrand_key(j->seed, DOMAIN_FILE + (uint64_t)cat, (uint64_t)index));
	n = (size_t)llround(detrand_between(&r, j->min_s, j->max_s) * fs);
	peak_db = detrand_between(&r, -8.0, -4.0);
	if (n < 1)
		n = 1;
	x = calloc(n, sizeof(*x));
	pcm = malloc(n * sizeof(*pcm));
	if (!x || !pcm) {
		rc = status_fail(err, errlen, -ENOMEM, "no memory for %zu samples", n);
		goto out;
	}
	desc[0] = '\0';
	if (cat == CAT_NOISE)
		render_noise(index % NKINDS, &r, x, n, fs, desc, sizeof(desc));
	else if (cat == CAT_MUSIC)
		render_music(&r, x, n, fs, desc, sizeof(desc));
	else
		rc = render_speech(j, index, x, n, desc, sizeof(desc), err, errlen);
	if (rc < 0)
		goto out;
	/* 10 ms fades: no click where a file is cut into a mix. */
	fade = (size_t)(0.01 * fs);
	for (size_t i = 0; i < fade && i < n; i++) {
		float g = (float)i / (float)fade;
		x[i] *= g;
		x[n - 1 - i] *= g;
	}
	gen_to_pcm16(x, n, pow(10.0, peak_db / 20.0), pcm);
	snprintf(path, sizeof(path), "%s/%s/%s-synth-%04d.wav", j->dest, cat_name[cat],
		 cat_name[cat], index);
	rc = wav_write_file(path, pcm, n, (uint32_t)j->rate, 1, err, errlen);
	if (rc == 0) {
		snprintf(note, NOTE_LEN, "%s-synth-%04d %s peak=%.1fdBFS", cat_name[cat], index,
			 desc, peak_db);
		j->seconds[job_index] = (double)n / fs;
	}
out:
	free(x);
	free(pcm);
	return rc;
}

static int write_annotations(const struct job *j, char *err, size_t errlen)
{
	for (int c = 0; c < NCAT; c++) {
		char path[4096], tmp[4200];
		FILE *f;
		int rc;

		snprintf(path, sizeof(path), "%s/%s/ANNOTATIONS", j->dest, cat_name[c]);
		rc = gen_text_open(path, tmp, &f, err, errlen);
		if (rc < 0)
			return rc;
		for (int i = 0; i < j->count; i++)
			fprintf(f, "%s\n", j->notes + ((size_t)c * j->count + i) * NOTE_LEN);
		rc = gen_text_commit(f, tmp, path, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

#define PROG "gen-noise"

/* The command line into j; 0 to go on, else the exit status (1: --help
 * done, 2: bad usage, said). */
static int parse_args(int argc, char **argv, struct job *j, int *threads)
{
	int help = 0;
	char *ops[1];
	struct gen_range seconds = {
		.lo = MIN_SECONDS, .hi = MAX_SECONDS, .min = j->min_s, .max = j->max_s
	};
	struct argtab tab[] = {
		ARGTAB_FUNC("seed", 0, &j->seed, gen_arg_seed, "N",
			    "the corpus's seed (default 1)"),
		ARGTAB_INT("rate", 0, &j->rate, 8000, 48000, "HZ", "sample rate (default 16000)"),
		ARGTAB_INT("count", 0, &j->count, 1, MAX_COUNT, "N",
			   "files of each category (default 10)"),
		ARGTAB_FUNC("seconds", 0, &seconds, gen_arg_range, "MIN:MAX",
			    "each file's length is drawn from this range (default 3:8)"),
		ARGTAB_INT("threads", 0, threads, 1, 64, "N",
			   "render threads (default: CPUs, at most 8)"),
		ARGTAB_FLAG("help", 'h', &help, "this text"),
		ARGTAB_END,
	};
	int rc = gen_args_parse(PROG, usage, tab, &help, argc, argv, ops, 1, "DEST");
	if (rc)
		return rc;
	j->min_s = seconds.min;
	j->max_s = seconds.max;
	j->dest = ops[0];
	if (strlen(j->dest) > 3000)
		return gen_usage_error(PROG, usage, "DEST is too long");
	return 0;
}

int main(int argc, char **argv)
{
	struct job j = { .seed = 1, .rate = 16000, .count = 10, .min_s = 3.0, .max_s = 8.0 };
	int threads = gen_default_threads(), rc;
	struct timespec t0, t1;
	double total = 0.0;
	char err[512];
	rc = parse_args(argc, argv, &j, &threads);
	if (rc)
		return rc == 1 ? 0 : rc;

	j.notes = calloc((size_t)NCAT * j.count, NOTE_LEN);
	j.seconds = calloc((size_t)NCAT * j.count, sizeof(*j.seconds));
	if (!j.notes || !j.seconds) {
		rc = status_fail(err, sizeof(err), -ENOMEM, "no memory for %d file notes", j.count);
		goto out;
	}
	for (int k = 0; k < NCAT && rc == 0; k++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", j.dest, cat_name[k]);
		rc = gen_mkdirs(path, err, sizeof(err));
	}
	if (rc < 0)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = gen_run(NCAT * j.count, threads, render_one, &j, err, sizeof(err));
	if (rc == 0)
		rc = write_annotations(&j, err, sizeof(err));
	if (rc < 0)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int i = 0; i < NCAT * j.count; i++)
		total += j.seconds[i];
	printf("gen-noise: wrote %d noise, %d music and %d speech files (%.1f min of audio at "
	       "%d Hz) to %s in %.2f s\n",
	       j.count, j.count, j.count, total / 60.0, j.rate, j.dest,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
out:
	free(j.notes);
	free(j.seconds);
	if (rc < 0) {
		fprintf(stderr, "gen-noise: %s\n", err);
		return 1;
	}
	return 0;
}
