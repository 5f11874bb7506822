/* wav.h — parse a RIFF/WAVE file held in memory and hand out its samples.
 *
 * `packer pack audio` reads each .wav file itself (io_uring, whole file in
 * one buffer) and passes the bytes here; the features module (fbank.h) then
 * turns the samples into frames. Feeder's speech pipeline expects exactly
 * what the Kaldi VoxCeleb recipe expects: PCM, mono, 16 kHz, 16-bit. Any other
 * layout is refused with a one-line reason rather than resampled or mixed
 * down, so that a dataset never silently holds features computed from audio
 * of the wrong rate.
 *
 * Chunks are walked in order; unknown chunks (LIST, fact, cue, bext, ...)
 * are skipped, odd-sized chunks are padded to even length as RIFF requires.
 * WAVE_FORMAT_EXTENSIBLE (0xFFFE) is accepted when its sub-format is PCM,
 * because it is the same sample data under a longer header. */
#ifndef FEEDER_WAV_H
#define FEEDER_WAV_H

#include <stddef.h>
#include <stdint.h>

#define WAV_RATE 16000
#define WAV_FORMAT_PCM 1
#define WAV_FORMAT_FLOAT 3
#define WAV_FORMAT_EXTENSIBLE 0xFFFE

/* What the "fmt " and "data" chunks say. format is the effective format:
 * the sub-format for WAVE_FORMAT_EXTENSIBLE. */
struct wav_info {
	uint16_t format;
	uint16_t channels;
	uint32_t rate;
	uint16_t bits;
	size_t data_off;   /* offset of the first sample byte in the buffer */
	size_t data_len;   /* bytes of sample data */
};

/* 1 if the first len bytes of a file (12 are enough) begin a RIFF/WAVE
 * file, the first thing wav_parse checks; else 0. For readers that look at
 * a file's head before reading the rest (packer's). */
int wav_sniff(const void *head, size_t len);

/* Walk the chunks of the len bytes at buf and fill *info. Checks the
 * structure only (RIFF/WAVE tags, a "fmt " chunk before a complete "data"
 * chunk), not the sample layout. Returns 0, or FEEDER_EFORMAT with a
 * sentence in err (e.g. "not a RIFF file", "data chunk declares 32000 bytes
 * but only 1000 remain (truncated)"). */
int wav_parse(const void *buf, size_t len, struct wav_info *info, char *err, size_t errlen);

/* Parse, require PCM mono 16 kHz 16-bit, and convert the samples to float
 * at their integer scale (a sample of 1000 becomes 1000.0f, as Kaldi reads
 * WAV files; the features' energy thresholds assume that scale). On success
 * *samples is a malloc'd array of *n floats that the caller frees (NULL when
 * *n is 0). Returns 0, FEEDER_EFORMAT with a sentence in err naming what is
 * wrong ("sample rate 44100 Hz, expected 16000", "2 channels, expected
 * mono"), or -ENOMEM. */
int wav_decode(const void *buf, size_t len, float **samples, size_t *n, char *err,
	       size_t errlen);

#endif
