/* philox.h — Philox4x32-10 counter-based random numbers for the x-vector model.
 *
 * Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC 2011), the
 * generator behind Random123 and cuRAND's curandStatePhilox4_32_10_t. Every
 * random number in the trainer (dropout masks, the training noise, weight
 * init) is a pure function of (seed, subsequence, index), so backward passes
 * regenerate what forward used instead of storing it, and a resumed run sees
 * the same numbers as an uninterrupted one.
 *
 * Counter and key layout, chosen to equal cuRAND's device API so that a CUDA
 * kernel can reproduce these values with
 *     curand_init(seed, subseq, offset, &state)    (curandStatePhilox4_32_10_t)
 *   key     = { seed & 0xffffffff, seed >> 32 }
 *   counter = { n & 0xffffffff, n >> 32, subseq & 0xffffffff, subseq >> 32 }
 * where n is the block number (offset / 4); each block yields four 32-bit
 * words w0..w3.
 *
 *   philox_uniform(seed, subseq, i): word i % 4 of block i / 4, mapped like
 *     curand_uniform: w * 2^-32 + 2^-33 (in float), a value in (0, 1].
 *     Equals curand_uniform() after curand_init(seed, subseq, i).
 *   philox_normal(seed, subseq, i): block i (one whole block per element),
 *     Box-Muller on its words w0 and w1 exactly as cuRAND's
 *     _curand_box_muller: u = w0 * 2^-32 + 2^-33, v = w1 * 2pi 2^-32 + pi 2^-32
 *     (float constants 2.3283064e-10f and 1.4629181e-09f),
 *     z = sqrtf(-2 logf(u)) * sinf(v). Words w2 and w3 are unused. Equals
 *     curand_normal() after curand_init(seed, subseq, 4 * i), up to the
 *     device's fast __sincosf/logf (about 1e-6 absolute). */
#ifndef FEEDER_PHILOX_H
#define FEEDER_PHILOX_H

#include <stddef.h>
#include <stdint.h>

/* One Philox4x32-10 block: out = bijection_key(ctr). */
void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* The four words of block number `block` under the counter/key layout above. */
void philox_block(uint64_t seed, uint64_t subseq, uint64_t block, uint32_t out[4]);

/* A uniform float in (0, 1]; see the layout above. */
float philox_uniform(uint64_t seed, uint64_t subseq, uint64_t index);

/* A standard normal float; see the layout above. */
float philox_normal(uint64_t seed, uint64_t subseq, uint64_t index);

/* out[k] = philox_uniform(seed, subseq, first + k) for k < n, computing each
 * block once. */
void philox_uniforms(uint64_t seed, uint64_t subseq, uint64_t first, size_t n, float *out);

/* out[k] = philox_normal(seed, subseq, first + k) for k < n. */
void philox_normals(uint64_t seed, uint64_t subseq, uint64_t first, size_t n, float *out);

#endif
