/* pcm.h — 16-bit PCM samples as the audio code computes on them: floats at
 * int16 scale. Waveform datasets (`packer pack audio --store wave`) keep
 * little-endian s16; feederd's wave pipeline cuts chunks from them and reads
 * noise and RIR records through this, and the stage benchmark does too.
 * Built at -O3 with the rest of media/, where gcc vectorizes the loop. */
#ifndef FEEDER_PCM_H
#define FEEDER_PCM_H

#include <stddef.h>
#include <stdint.h>

/* n samples of the little-endian s16 samples at payload (frames of them)
 * from sample offset (< frames) on, looped over the frames, as floats at
 * int16 scale into out. Copied in contiguous runs: a wrap test per sample
 * kept the conversion scalar. No frames, or an offset past them: n zeros
 * (callers check first; this only keeps a mistake from looping forever). */
void pcm_s16_read(const uint8_t *payload, size_t frames, size_t offset, size_t n, float *out);

#endif
