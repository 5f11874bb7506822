/* wav_write.h — write PCM 16-bit WAV files with the canonical 44-byte header.
 *
 * The data generators (gen-speech) produce WAV files that packer and the
 * feature extractor read back; this module only writes, so that it can stay
 * tiny and exact: RIFF/WAVE, one "fmt " chunk (PCM, 16 bits) and one "data"
 * chunk, nothing else, little-endian as the format demands. */
#ifndef FEEDER_WAV_WRITE_H
#define FEEDER_WAV_WRITE_H

#include <stddef.h>
#include <stdint.h>

#define WAV_WRITE_HEADER_BYTES 44

/* Fill hdr with the header of a PCM 16-bit file of `rate` Hz and `channels`
 * interleaved channels whose data chunk holds data_bytes bytes. Returns 0, or
 * FEEDER_EINVAL (with a sentence in err) when a field cannot be represented
 * (rate or channels 0, data too large for a 32-bit RIFF size). */
int wav_write_header(uint8_t hdr[WAV_WRITE_HEADER_BYTES], uint32_t rate, uint16_t channels,
		     uint64_t data_bytes, char *err, size_t errlen);

/* Write frames × channels interleaved samples as a WAV file at path. The file
 * is written to "path.tmp" and renamed into place only when complete, so a
 * reader never sees half a file. Returns 0 or a negative errno /
 * FEEDER_EINVAL, with a sentence naming the path in err. */
int wav_write_file(const char *path, const int16_t *samples, size_t frames, uint32_t rate,
		   uint16_t channels, char *err, size_t errlen);

#endif
