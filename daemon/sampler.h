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
 * Datasets kept as shards in object storage use a shard-block order instead
 * (sampler_blocks): a node caches only a few shards, so each epoch permutes
 * the shards (keyed by (seed, epoch)), groups consecutive places `width` at
 * a time into blocks, and shuffles uniformly only inside a block (the same
 * Feistel network over the block's samples, keyed by (seed, epoch, block)).
 * The epoch is then a sequence of blocks: reading one needs only its width
 * shards, at the price of batches drawn from those shards alone. Over that
 * order the ranks take contiguous stretches instead of every w-th position
 * (rank r: the r-th of w runs of lengths differing by at most one, in
 * order), so that each rank, and each node, reads about 1/w of the blocks
 * of an epoch rather than a share of every block: a node fetches its part
 * of the dataset, not all of it. The ranks are still disjoint and cover the
 * epoch, and a stream resumes at a batch exactly; what is lost is the
 * elastic resume of another world size (the stretches depend on w).
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
	uint64_t keys[SAMPLER_ROUNDS];       /* round keys derived from (seed, epoch) */
	const struct sampler_blocks *blocks; /* NULL: the global order over [0, n) */
	uint64_t stretch; /* blocks: where this rank's stretch begins (start included) */
};

/* Set up the order of epoch `epoch` of a dataset of n samples for rank
 * `rank` of `world`: the keyed permutation, or with shuffle 0 the dataset's
 * own order (as DataLoader(shuffle=False) gives for evaluation; still split
 * across ranks the same way). Returns 0, or FEEDER_EINVAL with a sentence in
 * err when n is 0, world is 0, rank >= world, or n >= 2^62. */
int sampler_init(struct sampler *s, uint64_t n, uint64_t seed, uint64_t epoch, uint32_t rank,
		 uint32_t world, int shuffle, char *err, size_t errlen);

/* Serve only epoch positions start.. (start <= n): rank r then takes
 * start+r, start+r+w, ... (over a shard-block order, its stretch of what
 * is left). 0, or FEEDER_EINVAL with a sentence in err. */
int sampler_start(struct sampler *s, uint64_t start, char *err, size_t errlen);

/* Positions this rank takes in the epoch: ceil((n - start - rank) / world),
 * 0 when start + rank >= n. */
uint64_t sampler_len(const struct sampler *s);

/* The epoch position of this rank's k-th sample (k < sampler_len):
 * start + rank + k*world, or over a shard-block order k places into the
 * rank's stretch. */
uint64_t sampler_pos(const struct sampler *s, uint64_t k);

/* The sample index at this rank's k-th position (k < sampler_len), i.e. the
 * permuted epoch position sampler_pos(s, k). O(1) expected (cycle-walking
 * takes fewer than 4 Feistel evaluations on average). */
uint64_t sampler_at(const struct sampler *s, uint64_t k);

/* The permutation itself: the sample index at epoch position pos < n
 * (independent of rank and world; pos itself without shuffle). */
uint64_t sampler_permute(const struct sampler *s, uint64_t pos);

/* Batches of `batch` samples this rank yields: floor(len / batch) with
 * drop_last, else ceil(len / batch) (the last one short). 0 if batch is 0. */
uint64_t sampler_batches(const struct sampler *s, uint32_t batch, int drop_last);

/* One epoch's shard-block layout, made once per epoch and shared read-only
 * by every slot of a stream that reads that epoch (reference counted; the
 * refs are atomic). */
struct sampler_blocks;

/* nshards >= 1 shards, shard i holding count[i] >= 1 samples whose global
 * indices start at first[i] (contiguous: first[0] = 0, first[i+1] =
 * first[i] + count[i]); width >= 1 shards per block. The layout of epoch
 * `epoch` for seed `seed` (shuffle 0: the dataset order, shards in place and
 * no shuffle inside blocks). One reference for the caller. 0, FEEDER_EINVAL
 * (bad arguments, sentence in err) or -ENOMEM. */
int sampler_blocks_new(struct sampler_blocks **out, const uint64_t *first, const uint64_t *count,
		       uint32_t nshards, uint32_t width, uint64_t seed, uint64_t epoch, int shuffle,
		       char *err, size_t errlen);
void sampler_blocks_ref(struct sampler_blocks *b);
void sampler_blocks_unref(struct sampler_blocks *b); /* NULL is fine */

/* Like sampler_init, over the blocks' dataset and epoch: s->n is the total
 * of the counts, seed/epoch/shuffle come from b; s->blocks = b (not
 * referenced by the sampler: the caller keeps b alive as long as s is
 * used). sampler_start, _len, _at, _permute and _batches then follow the
 * shard-block order, the ranks in stretches. 0 or FEEDER_EINVAL (sentence
 * in err). */
int sampler_init_blocks(struct sampler *s, const struct sampler_blocks *b, uint32_t rank,
			uint32_t world, char *err, size_t errlen);

/* The block holding epoch position pos (< n), and the number of blocks. */
uint32_t sampler_block_of(const struct sampler_blocks *b, uint64_t pos);
uint32_t sampler_block_count(const struct sampler_blocks *b);

/* Epoch positions [*begin, *end) of block blk (< sampler_block_count). */
void sampler_block_span(const struct sampler_blocks *b, uint32_t blk, uint64_t *begin,
			uint64_t *end);

/* The shards of block blk in place order into out (room for width of
 * them); returns how many. */
uint32_t sampler_block_shards(const struct sampler_blocks *b, uint32_t blk, uint32_t *out);

#endif
