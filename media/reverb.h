/* reverb.h — reverberation of a speech chunk by a room impulse response
 * (RIR), by FFT convolution (FFTW, single precision).
 *
 * feederd's wave pipeline convolves each ~2 s chunk (16 kHz, float samples
 * at int16 scale) with an RIR that the caller drew from an RIR dataset; the
 * draw is the caller's (detrand.h), this module takes no randomness. With h
 * the RIR of L samples and x the chunk of n samples:
 *
 *   1. h is normalised to unit energy, h / sqrt(sum h^2);
 *   2. it is aligned on its direct path, the index d of the largest |h[k]|
 *      (the first one on a tie): y[t] = sum_k h[k] x[t + d - k] for
 *      t = 0..n-1, with x taken as 0 outside 0..n-1. The output has the
 *      input's length and is not delayed; the reverberant tail that would
 *      run past the chunk's end is cut, as is the part of the sound that
 *      reaches the chunk from before its start;
 *   3. y is scaled so that its energy (sum over the n samples) equals x's,
 *      so that levels stay comparable and a later SNR means the same thing
 *      (if y is all zero, it stays zero).
 *
 * Step 1 does not change the result (step 3 rescales anyway); it is kept so
 * that the spectra in the cache have a bounded range.
 *
 * The circular convolution is computed with one real FFT of a size N >=
 * n + max(d, L - 1 - d) (no wrap-around reaches the kept samples), rounded up
 * to a size from a short ladder of sizes that FFTW_ESTIMATE transforms fast
 * (2^k times 1, 135/128, 9/8, 75/64, 45/32, 27/16 or 225/128). One FFT of
 * the whole chunk beats overlap-save at these sizes: with L up to 1.5 s the
 * blocks would be as long as the chunk anyway, and with short RIRs the many
 * small blocks cost as much as the one big transform.
 *
 * Each worker owns a struct reverb: FFTW plans for the sizes it met (at most
 * REVERB_PLANS, least recently used replaced), scratch, and a cache of RIR
 * spectra (REVERB_CACHE_SLOTS entries, least recently used replaced) keyed
 * by a caller-given uint64 (for example dataset generation << 32 | RIR
 * index), so that a worker that draws the same RIR again does not transform
 * it again. A key must always name the same RIR samples: the cache checks
 * the length but not the samples. A cache hit and a miss give the same bytes.
 * Memory: the scratch plus up to REVERB_CACHE_SLOTS spectra of N/2 + 1
 * complex floats for the largest N (for max_n 32000 and max_rir 24000,
 * N = 57600: 7.4 MB if all slots fill).
 *
 * Threads: a struct reverb is used by one thread at a time. FFTW's planner
 * is not thread-safe; plans are made and destroyed under a mutex of this
 * module, with FFTW_ESTIMATE so that every run computes in the same order. */
#ifndef FEEDER_REVERB_H
#define FEEDER_REVERB_H

#include <stddef.h>
#include <stdint.h>

#define REVERB_CACHE_SLOTS 32
#define REVERB_PLANS 8

struct reverb;

/* A reverberator for chunks of up to max_n samples and RIRs of up to max_rir
 * samples (both >= 1; their sum at most 2^28). The scratch is sized for
 * them now; plans are made on first use of each FFT size. Returns 0 and sets
 * *out, FEEDER_EINVAL with a sentence, or -ENOMEM. */
int reverb_create(size_t max_n, size_t max_rir, struct reverb **out, char *err, size_t errlen);

/* Reverberate the n samples at x with the rir_len samples at rir (the
 * semantics above) into out, which is x itself or does not overlap it.
 * rir_key names the RIR in the cache. n == 0 does nothing. Returns 0,
 * FEEDER_EINVAL when n > max_n, rir_len is 0 or > max_rir, or the RIR is
 * silent or not finite, or -ENOMEM when a plan cannot be made; with a
 * sentence in err. On an error out is unchanged. */
int reverb_apply(struct reverb *r, uint64_t rir_key, const float *rir, size_t rir_len,
		 const float *x, size_t n, float *out, char *err, size_t errlen);

/* The FFT size used for n samples with an RIR of rir_len samples whose
 * direct path is at d (for tests and benchmarks). */
size_t reverb_fft_size(size_t n, size_t rir_len, size_t d);

void reverb_destroy(struct reverb *r);

#endif
