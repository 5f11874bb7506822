/* sampler.h — the order of an epoch, as a pure function of (seed, epoch).
 *
 * feederd's streams ask the sampler which sample goes at each position of
 * an epoch. The order is a keyed bijection over [0, n) (a Feistel network
 * over the smallest even power of two that holds n, with cycle-walking back
 * into [0, n)), so any position can be evaluated on its own: a stream can
 * start at batch k without building a permutation, and no memory grows with
 * the dataset. Like PyTorch's DistributedSampler, rank r of w takes the epoch
 * positions r, r+w, r+2w, ... < n: ranks are disjoint and together cover the
 * epoch exactly once (no padding, so their lengths differ by at most one).
 * An epoch may also start at a position p (sampler_start): the ranks then
 * share what is left the same way, p+r, p+r+w, ..., which is how a job
 * resumes mid-epoch with another world size (elastic resume).
 *
 * The struct is caller-owned and plain (no allocation, nothing to free);
 * after sampler_init it is read-only and may be shared between threads. */
#ifndef FEEDER_SAMPLER_H
#define FEEDER_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#define SAMPLER_ROUNDS 6

struct sampler {
	uint64_t n; /* samples in the epoch */
	uint64_t seed, epoch;
	uint32_t rank, world;
	uint64_t start;     /* epoch positions before it are not served (elastic resume) */
	int shuffle;        /* 0: the identity order (dataset order) */
	uint32_t half_bits; /* bits of each Feistel half; domain = 2^(2*half_bits) >= n */
	uint64_t half_mask;
	uint64_t keys[SAMPLER_ROUNDS]; /* round keys derived from (seed, epoch) */
};

/* Set up the order of epoch `epoch` of a dataset of n samples for rank
 * `rank` of `world`: the keyed permutation, or with shuffle 0 the dataset's
 * own order (as DataLoader(shuffle=False) gives for evaluation; still split
 * across ranks the same way). Returns 0, or FEEDER_EINVAL with a sentence in
 * err when n is 0, world is 0, rank >= world, or n >= 2^62. */
int sampler_init(struct sampler *s, uint64_t n, uint64_t seed, uint64_t epoch, uint32_t rank,
		 uint32_t world, int shuffle, char *err, size_t errlen);

/* Serve only epoch positions start.. (start <= n): rank r then takes
 * start+r, start+r+w, ... 0, or FEEDER_EINVAL with a sentence in err. */
int sampler_start(struct sampler *s, uint64_t start, char *err, size_t errlen);

/* Positions this rank takes in the epoch: ceil((n - start - rank) / world),
 * 0 when start + rank >= n. */
uint64_t sampler_len(const struct sampler *s);

/* The sample index at this rank's k-th position (k < sampler_len), i.e. the
 * permuted epoch position start + rank + k*world. O(1) expected (cycle-walking takes
 * fewer than 4 Feistel evaluations on average). */
uint64_t sampler_at(const struct sampler *s, uint64_t k);

/* The permutation itself: the sample index at epoch position pos < n
 * (independent of rank and world; pos itself without shuffle). */
uint64_t sampler_permute(const struct sampler *s, uint64_t pos);

/* Batches of `batch` samples this rank yields: floor(len / batch) with
 * drop_last, else ceil(len / batch) (the last one short). 0 if batch is 0. */
uint64_t sampler_batches(const struct sampler *s, uint32_t batch, int drop_last);

#endif
