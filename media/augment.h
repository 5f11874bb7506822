/* augment.h — the cheap speech augmentations: additive noise at an SNR,
 * babble, gain. (SpecAugment's masks are zeroed straight in the batch
 * tensor by daemon/wave_pipeline.c.)
 *
 * feederd's wave pipeline calls these on ~2 s chunks (float samples at int16
 * scale) and on the features computed from them; reverb.h and speed.h hold
 * the costlier parts. Every random choice (which noise, its offset, the
 * SNR) is the caller's, drawn from detrand.h; these
 * functions are pure apart from writing the caller's buffers, so they are
 * thread-safe and give the same bytes for the same arguments.
 *
 * Noise segments. A noise recording of m samples is read from `offset` on
 * and looped: the i-th of the n samples used is noise[(offset + i) mod m].
 * So a recording longer than the chunk is cut to n samples, a shorter one
 * wraps around to its start. An offset >= m is taken mod m.
 *
 * SNR. Energies are sums of squares (in double) over the chunk: E_x over
 * x's n samples, E_v over the n noise samples actually added. The noise is
 * scaled by g with 10 log10(E_x / (g^2 E_v)) == snr_db, so the SNR is
 * exact for the chunk that is seen, not for the whole recordings. When E_x
 * or E_v is 0 (or snr_db is not finite), x is left unchanged.
 *
 * Babble (Kaldi's recipe: 3 to 7 speech recordings summed, then added at an
 * SNR of 13 to 20 dB): augment_accumulate each recording, looped or cut to
 * n, into a zeroed sum, then augment_add_noise the sum at one SNR. (Kaldi's
 * augment_data_dir.py draws one SNR per babble recording instead; wespeaker
 * and this pipeline, one for the sum.) */
#ifndef FEEDER_AUGMENT_H
#define FEEDER_AUGMENT_H

#include <stddef.h>
#include <stdint.h>

/* sum of x[i]^2 in double. */
double augment_energy(const float *x, size_t n);

/* Energy of the n noise samples read looped from offset (see above). */
double augment_noise_energy(const float *noise, size_t m, size_t offset, size_t n);

/* Add the noise segment (looped or cut to n from offset) to x at snr_db,
 * measured against x's own energy over the chunk. m == 0 does nothing. */
void augment_add_noise(float *x, size_t n, const float *noise, size_t m, size_t offset,
		       double snr_db);

/* acc[i] += noise[(offset + i) mod m] for i in 0..n-1: one recording into
 * a babble sum (m == 0 adds nothing). */
void augment_accumulate(float *acc, size_t n, const float *noise, size_t m, size_t offset);

/* x *= 10^(gain_db / 20). */
void augment_gain(float *x, size_t n, double gain_db);

#endif
