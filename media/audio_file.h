/* audio_file.h — decode an audio file held in memory into one channel of
 * float samples at the rate a dataset wants.
 *
 * `packer pack audio` reads each source file itself (io_uring, or a Kaldi
 * pipe's output) and passes the bytes here. libsndfile decodes them: WAV
 * (RIFF, RF64, WAVE_FORMAT_EXTENSIBLE) in any PCM width or float, FLAC,
 * OGG/Vorbis, AIFF, and the rest of what the installed libsndfile reads.
 * One channel is kept (the first, or the one asked for: a mix-down would
 * change what a two-microphone recording sounds like, and the recipes keep
 * one channel); a file at another rate is resampled with libsoxr
 * (media/resample.h) to the target rate.
 *
 * Samples come out at int16 scale (a full-scale sine peaks at 32768, as
 * Kaldi reads WAV files): the feature recipe's energy thresholds (VAD) and
 * the dither scale assume it. A 16-bit file at the target rate decodes to
 * exactly its integer values, whatever the container.
 *
 * Thread-safe: every call has its own libsndfile handle over the caller's
 * buffer. */
#ifndef FEEDER_AUDIO_FILE_H
#define FEEDER_AUDIO_FILE_H

#include <stddef.h>
#include <stdint.h>

/* What decoding found before conversion (for messages and `-v` output). */
struct audio_file_info {
	uint32_t rate; /* the file's sample rate */
	uint32_t channels;
	uint64_t frames; /* per channel, at the file's rate */
	char format[64]; /* e.g. "WAV PCM 24-bit", "FLAC 16-bit", "OGG Vorbis" */
};

/* 1 if the first len bytes (12 are enough) begin a file of a container this
 * module decodes (RIFF/WAVE, RF64, FLAC, OGG, AIFF/AIFC, Sun/NeXT .au, CAF,
 * W64), else 0: the check packer's reader makes before reading a file whole. */
int audio_file_sniff(const void *head, size_t len);

/* Decode the len bytes at buf, keep channel `channel` (0-based), resample to
 * `rate` Hz if the file has another rate. On success *samples is a malloc'd
 * array of *n floats at int16 scale (NULL when *n is 0) and *info, if not
 * NULL, says what the file was. Returns 0; FEEDER_EFORMAT with a sentence in
 * err naming what is wrong ("not an audio file libsndfile reads: ...",
 * "2 channels, channel 3 asked", "truncated: 1000 of 16000 frames"); or
 * -ENOMEM. `max_frames` bounds the decoded length (FEEDER_EQUOTA beyond it),
 * so that a tiny compressed file cannot claim hours of audio. */
int audio_file_decode(const void *buf, size_t len, uint32_t channel, uint32_t rate,
		      uint64_t max_frames, float **samples, size_t *n, struct audio_file_info *info,
		      char *err, size_t errlen);

#endif
