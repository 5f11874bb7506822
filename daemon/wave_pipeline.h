/* wave_pipeline.h — one utterance's waveform in, one augmented chunk of
 * features out.
 *
 * For speaker models trained as the Kaldi x-vector recipe and wespeaker
 * train them: every epoch sees each utterance differently. From a record of
 * a wave dataset (16-bit PCM at 16 kHz, packer pack audio --store wave) the
 * worker cuts the samples of chunk_len frames (random in train mode,
 * centred in eval), and in train mode applies, each with its probability
 * (struct feeder_wave_opts): speed perturbation (media/speed.h),
 * reverberation by a room impulse response drawn from an RIR dataset
 * (media/reverb.h), additive noise, music or babble drawn from a noise
 * dataset at an SNR drawn from the category's range (media/augment.h), a
 * gain, and dither. Then the Kaldi features (media/fbank.h, the packer's
 * code), and the chunk's normalization, transposition and conversion by the
 * features pipeline's code (features_pipeline_normalize on the chunk's
 * matrix, with a struct feeder_features_opts made of the wave options),
 * and SpecAugment's masks on the result (masked cells are 0, the normalized
 * mean). The output is (feat_dim, chunk_len), as the features pipeline's.
 *
 * Every draw comes from detrand keyed by aug_key, in a fixed order, so the
 * same request gives the same bytes on any worker. The noise and RIR
 * datasets are read through struct wave_source, which the stream provides
 * (daemon/stream_task.c reads them under the SIGBUS guard).
 *
 * Per-worker state (FFTW plans and spectra, soxr resamplers, scratch) lives
 * in thread-local storage, made on a worker's first wave sample and freed
 * by wave_pipeline_worker_exit. */
#ifndef FEEDER_WAVE_PIPELINE_H
#define FEEDER_WAVE_PIPELINE_H

#include "dsformat.h"
#include "feeder_types.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The sample rate the pipeline computes features at. */
#define WAVE_RATE 16000
/* RIRs longer than this are cut (2 s: past any RT60 the recipes draw). */
#define WAVE_MAX_RIR 32000

/* A dataset of waveforms the pipeline draws from (noise or RIRs). */
struct wave_source {
	/* The samples record `index` holds, its header checked (and its
	 * payload's CRC, the first time the stream reads the record). Returns
	 * 0; WAVE_RECORD_BAD for a record that cannot be used (damaged, or an
	 * I/O error reading it: the source has logged it, and the pipeline goes
	 * on without that augmentation); or a negative code with a sentence
	 * when the dataset cannot be read at all (removed, replaced). NULL: no
	 * such dataset. */
	int (*length)(void *ctx, uint64_t index, size_t *n, char *err, size_t errlen);
	/* n samples of record `index` from sample `offset` on (below its
	 * length), looped over the record, as floats at int16 scale into out.
	 * Only what is used is read: a minutes-long noise costs its chunk.
	 * Returns as length does. */
	int (*read)(void *ctx, uint64_t index, size_t offset, size_t n, float *out, char *err,
		    size_t errlen);
	void *ctx;
	uint64_t key;   /* names the dataset in a worker's RIR spectra cache */
	uint64_t count; /* records */
};

/* Noise categories, by the class names of a noise dataset. */
enum { WAVE_NOISE = 0, WAVE_MUSIC = 1, WAVE_BABBLE = 2, WAVE_CATEGORIES = 3 };
/* The category a noise dataset's class of this name holds (the class
 * names of MUSAN's folders: noise, music, speech), or -1. */
static inline int wave_category(const char *name, size_t len)
{
	static const char *const cls[WAVE_CATEGORIES] = { "noise", "music", "speech" };
	for (int c = 0; c < WAVE_CATEGORIES; c++)
		if (len == strlen(cls[c]) && memcmp(name, cls[c], len) == 0)
			return c;
	return -1;
}

struct wave_sources {
	struct wave_source noise, rir;
	/* The noise dataset's record indices per category. */
	uint64_t *cat[WAVE_CATEGORIES];
	uint64_t ncat[WAVE_CATEGORIES];
};

/* Worker seconds per stage, summed on this thread since the last take. */
struct wave_times {
	double chunk, speed, reverb, noise, features, specaug;
};

/* Returned (a positive value, not an error) when an utterance is shorter
 * than the chunk and pad is FEEDER_FEAT_PAD_SKIP. Same as FEATURES_SKIPPED. */
#define WAVE_SKIPPED 1
/* A wave_source's answer for a record it cannot use (see above). */
#define WAVE_RECORD_BAD 2
/* wave_pipeline_run's answer when a noise or RIR dataset can no longer be
 * read (err names it): the stream fails; the sample itself is not to blame. */
#define WAVE_SOURCE_GONE 3

/* 0 where this feederd has the wave pipeline; FEEDER_EINVAL with a
 * sentence where it was built without the audio libraries
 * (wave_pipeline_none.c). */
int wave_pipeline_supported(char *err, size_t errlen);

/* Samples of a chunk of chunk_len frames (25 ms windows every 10 ms). */
size_t wave_pipeline_chunk_samples(uint32_t chunk_len);

/* Write sample s (a wave record: s->frames samples of s16 at payload) as
 * (feat_dim, chunk_len) at out and its label (the record's, or a speed
 * factor's new speaker: label + classes x k) at *label. o must have passed
 * proto_opts_check (feederd's admission checks every stream's options
 * once; nothing here checks them again). Returns 0,
 * WAVE_SKIPPED, WAVE_SOURCE_GONE, or a negative code with a sentence (the
 * record is not a waveform, out of memory). A noise or RIR record that
 * cannot be used costs only that augmentation of this chunk. */
int wave_pipeline_run(const struct feeder_stream_opts *o, const struct wave_sources *src,
		      const struct dsformat_sample *s, const uint8_t *payload, uint64_t aug_key,
		      uint32_t classes, void *out, int32_t *label, char *err, size_t errlen);

/* This thread's stage times since the last call (then reset). */
void wave_pipeline_take_times(struct wave_times *t);

/* Free this thread's state (a worker thread's exit). */
void wave_pipeline_worker_exit(void);

#endif
