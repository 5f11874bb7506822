/* detrand.h — deterministic randomness for augmentation.
 *
 * Every random choice a pipeline makes for one sample (crop box, flip, chunk
 * offset) comes from a small PRNG seeded by detrand_key(seed, epoch, index),
 * so the same stream request always yields the same bytes, whichever worker
 * thread handles the sample and in whatever order. The generator is
 * xoshiro256** seeded through splitmix64; it is not cryptographic. The
 * generators (gen-speech) draw from it the same way, so that a corpus is a
 * pure function of its seed. All functions are pure or act only on the
 * caller's struct (thread-safe). */
#ifndef FEEDER_DETRAND_H
#define FEEDER_DETRAND_H

#include <stdint.h>

struct detrand {
	uint64_t s[4];
};

/* splitmix64 finalizer: a well-mixed 64-bit function of x. */
uint64_t detrand_mix(uint64_t x);

/* The augmentation key of sample `index` in epoch `epoch` of a stream with
 * seed `seed`. Different inputs give unrelated keys. */
uint64_t detrand_key(uint64_t seed, uint64_t epoch, uint64_t index);

/* Seed r from key (any value, 0 included). */
void detrand_init(struct detrand *r, uint64_t key);

/* Next 64 random bits. */
uint64_t detrand_u64(struct detrand *r);

/* Uniform double in [0, 1), 53 random bits. */
double detrand_uniform(struct detrand *r);

/* Uniform double in [lo, hi): lo + (hi - lo) * detrand_uniform(r). */
double detrand_between(struct detrand *r, double lo, double hi);

/* Uniform integer in [lo, hi] inclusive (lo <= hi), without modulo bias. */
int64_t detrand_range(struct detrand *r, int64_t lo, int64_t hi);

#endif
