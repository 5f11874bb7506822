/* augment.h — the cheap speech augmentations: additive noise at an SNR,
 * babble, gain, and SpecAugment's time and frequency masks.
 *
 * feederd's wave pipeline calls these on ~2 s chunks (float samples at int16
 * scale) and on the features computed from them; reverb.h and speed.h hold
 * the costlier parts. Every random choice (which noise, its offset, the
 * SNR, the mask positions) is the caller's, drawn from detrand.h; these
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
 * SNR of 13 to 20 dB): struct augment_segment names each recording with its
 * offset; augment_add_babble sums them, each looped or cut to n, and adds the
 * sum at one SNR. Kaldi's augment_data_dir.py itself draws one SNR per
 * babble recording and scales each against the clean chunk;
 * augment_add_noise_ref with the clean energy does that. */
#ifndef FEEDER_AUGMENT_H
#define FEEDER_AUGMENT_H

#include <stddef.h>
#include <stdint.h>

/* One noise recording to read from: samples[0..len-1], from offset on. */
struct augment_segment {
	const float *samples;
	size_t len;
	size_t offset;
};

/* sum of x[i]^2 in double. */
double augment_energy(const float *x, size_t n);

/* Energy of the n noise samples read looped from offset (see above). */
double augment_noise_energy(const float *noise, size_t m, size_t offset, size_t n);

/* Add the noise segment (looped or cut to n from offset) to x at snr_db,
 * measured against x's own energy over the chunk. m == 0 does nothing. */
void augment_add_noise(float *x, size_t n, const float *noise, size_t m, size_t offset,
		       double snr_db);

/* The same, with the signal energy given: the noise is scaled so that
 * 10 log10(ref_energy / E_scaled_noise) == snr_db. For adding several noises
 * each at its own SNR against the clean chunk (pass augment_energy of the
 * chunk before the first). ref_energy <= 0 leaves x unchanged. */
void augment_add_noise_ref(float *x, size_t n, double ref_energy, const float *noise, size_t m,
			   size_t offset, double snr_db);

/* acc[i] += noise[(offset + i) mod m] for i in 0..n-1: one recording into
 * a babble sum (m == 0 adds nothing). */
void augment_accumulate(float *acc, size_t n, const float *noise, size_t m, size_t offset);

/* Babble: scratch (n floats, the caller's) := the sum of the k segments,
 * each looped or cut to n from its offset; then that sum is added to x at
 * snr_db as augment_add_noise does. */
void augment_add_babble(float *x, size_t n, const struct augment_segment *segs, size_t k,
			double snr_db, float *scratch);

/* x *= 10^(gain_db / 20). */
void augment_gain(float *x, size_t n, double gain_db);

/* SpecAugment on a row-major frames x dim matrix: set rows
 * start..start+width-1 (time mask) or columns start..start+width-1 of every
 * row (frequency mask) to value, clipped to the matrix; a mask that starts
 * past the edge or has width 0 changes nothing. value is what the model
 * should see for "no information": 0 after mean normalisation, else the
 * mean. */
void augment_time_mask(float *feat, uint32_t frames, uint32_t dim, uint32_t start, uint32_t width,
		       float value);
void augment_freq_mask(float *feat, uint32_t frames, uint32_t dim, uint32_t start, uint32_t width,
		       float value);

#endif
