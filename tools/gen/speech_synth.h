/* speech_synth.h — a Klatt-style source-filter synthesizer of speech-like
 * audio for synthetic speaker-recognition data.
 *
 * gen-speech calls it to make utterances that an x-vector trainer can learn
 * speakers from. A speaker is a set of stable voice traits (pitch, vocal
 * tract length, bandwidths, spectral tilt, rate, breathiness) drawn once from
 * a key; an utterance is a fresh random string of phone-like segments
 * (vowels, nasals, fricatives, stops, pauses) rendered with that voice: a
 * jittered glottal pulse train and aspiration noise through cascaded formant
 * resonators, frication noise through a parallel branch, an intonation
 * contour, smoothed transitions and a little background noise. Each
 * utterance also moves the voice a little (pitch, tract, level), so identity
 * is learnable but not trivial. Everything is a pure function of the keys:
 * the same keys give the same samples on any thread. */
#ifndef FEEDER_SPEECH_SYNTH_H
#define FEEDER_SPEECH_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#define SPEECH_SYNTH_RATE 16000

struct speech_synth_speaker {
	double f0_hz;          /* typical fundamental frequency */
	double f0_range_st;    /* intonation excursion, semitones */
	double jitter;         /* relative period-to-period F0 perturbation */
	double shimmer;        /* relative period-to-period amplitude perturbation */
	double vtl_scale;      /* formant scale: 1 is the reference adult male tract */
	double formant_dev[4]; /* per-formant deviation from a uniform scale */
	double bw_scale;       /* formant bandwidth scale */
	double tilt;           /* one-pole low-pass coefficient on the glottal source */
	double open_quotient;  /* open fraction of a glottal period */
	double rate;           /* speaking rate (1 is average; segments last 1/rate) */
	double breathiness;    /* aspiration noise relative to voicing */
};

/* Draw a speaker's traits from key. */
void speech_synth_speaker(struct speech_synth_speaker *spk, uint64_t key);

/* Render one utterance of exactly `samples` samples at SPEECH_SYNTH_RATE
 * into out (caller-owned, `samples` long) as 16-bit PCM. The phone
 * sequence, intonation, level and noise come from key. Returns 0, or
 * -ENOMEM / FEEDER_EINVAL with a sentence in err. */
int speech_synth_utterance(const struct speech_synth_speaker *spk, uint64_t key, int16_t *out,
			   size_t samples, char *err, size_t errlen);

#endif
