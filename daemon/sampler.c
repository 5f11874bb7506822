/* sampler.c — a keyed bijection over [0, n) evaluated position by position
 * (Feistel network + cycle-walking), split across ranks like
 * DistributedSampler; the shard-block order runs the same network inside
 * each block of shards. See sampler.h. */
#include "sampler.h"

#include "detrand.h"
#include "status.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Tags that keep the key streams of the global order, the shard
 * permutation and the in-block networks apart. */
#define TAG_GLOBAL 0x53414d504c455221ull
#define TAG_SHARDS 0x5348415244532121ull
#define TAG_BLOCK 0x424c4f434b4b4559ull

/* The Feistel network over 2^(2*half_bits): its half size and round keys. */
static uint32_t feistel_half_bits(uint64_t n)
{
	/* Balanced halves keep the Feistel network a good mixer; the domain
	 * 2^(2*half_bits) is then below 4n, so cycle-walking needs fewer than
	 * four rounds of the network on average. */
	uint32_t bits = 2;
	while (bits < 64 && (1ull << bits) < n)
		bits += 2;
	return bits / 2;
}

static void feistel_keys(uint64_t *keys, uint64_t seed, uint64_t epoch, uint64_t salt, uint64_t tag)
{
	for (int i = 0; i < SAMPLER_ROUNDS; i++)
		keys[i] = detrand_mix(detrand_key(seed, epoch, salt | (uint64_t)i) ^ tag);
}

static inline uint64_t feistel(uint32_t half_bits, uint64_t half_mask, const uint64_t *keys,
			       uint64_t x)
{
	uint64_t l = x >> half_bits, r = x & half_mask;
	for (int i = 0; i < SAMPLER_ROUNDS; i++) {
		uint64_t f = detrand_mix(r ^ keys[i]) & half_mask;
		uint64_t nl = r;
		r = l ^ f;
		l = nl;
	}
	return (l << half_bits) | r;
}

/* Walking the cycle of x inside the larger domain until it lands back in
 * [0, n) keeps the map a bijection on [0, n); it terminates because x
 * itself is in [0, n). */
static inline uint64_t feistel_walk(uint32_t half_bits, uint64_t half_mask, const uint64_t *keys,
				    uint64_t n, uint64_t x)
{
	x = feistel(half_bits, half_mask, keys, x);
	while (x >= n)
		x = feistel(half_bits, half_mask, keys, x);
	return x;
}

/* One block's network (64 bytes: one cache line per block). */
struct block_key {
	uint64_t half_mask;
	uint32_t half_bits;
	uint64_t keys[SAMPLER_ROUNDS];
};

struct sampler_blocks {
	atomic_uint refs;
	uint64_t n, seed, epoch;
	int shuffle;
	uint32_t nshards, width, nblocks;
	uint64_t *start;  /* nblocks + 1: first epoch position of each block; start[nblocks] = n */
	uint64_t *pstart; /* nshards + 1: first epoch position of each place; pstart[nshards] = n */
	uint64_t *delta;  /* nshards: sample index - epoch position inside a place (mod 2^64) */
	uint32_t *place;  /* nshards: the shard at each place */
	struct block_key *keys; /* nblocks */
};

static void blocks_free(struct sampler_blocks *b)
{
	free(b->start);
	free(b->pstart);
	free(b->delta);
	free(b->place);
	free(b->keys);
	free(b);
}

int sampler_blocks_new(struct sampler_blocks **out, const uint64_t *first, const uint64_t *count,
		       uint32_t nshards, uint32_t width, uint64_t seed, uint64_t epoch, int shuffle,
		       char *err, size_t errlen)
{
	*out = NULL;
	if (nshards == 0 || !first || !count)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "sampler: the dataset has no shards");
	if (width == 0)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "sampler: a block must hold at least one shard");
	uint64_t n = 0;
	for (uint32_t i = 0; i < nshards; i++) {
		if (count[i] == 0)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "sampler: shard %" PRIu32 " has no samples", i);
		if (first[i] != n)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "sampler: shard %" PRIu32 " starts at sample %" PRIu64
					   ", not %" PRIu64 " (shards must follow each other)",
					   i, first[i], n);
		if (count[i] >= (1ull << 62) - n)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "sampler: the shards hold 2^62 samples or more");
		n += count[i];
	}
	struct sampler_blocks *b = calloc(1, sizeof *b);
	if (!b)
		return -ENOMEM;
	uint32_t nblocks = (nshards - 1) / width + 1;
	*b = (struct sampler_blocks){ .n = n,
				      .seed = seed,
				      .epoch = epoch,
				      .shuffle = shuffle != 0,
				      .nshards = nshards,
				      .width = width,
				      .nblocks = nblocks };
	atomic_init(&b->refs, 1);
	b->start = malloc(((size_t)nblocks + 1) * sizeof *b->start);
	b->pstart = malloc(((size_t)nshards + 1) * sizeof *b->pstart);
	b->delta = malloc((size_t)nshards * sizeof *b->delta);
	b->place = malloc((size_t)nshards * sizeof *b->place);
	b->keys = malloc((size_t)nblocks * sizeof *b->keys);
	if (!b->start || !b->pstart || !b->delta || !b->place || !b->keys) {
		blocks_free(b);
		return -ENOMEM;
	}
	for (uint32_t j = 0; j < nshards; j++)
		b->place[j] = j;
	if (b->shuffle) {
		/* Fisher-Yates: every shard order equally likely. */
		struct detrand r;
		detrand_init(&r, detrand_mix(detrand_key(seed, epoch, 0) ^ TAG_SHARDS));
		for (uint32_t j = nshards - 1; j > 0; j--) {
			uint32_t k = (uint32_t)detrand_range(&r, 0, j);
			uint32_t t = b->place[j];
			b->place[j] = b->place[k];
			b->place[k] = t;
		}
	}
	uint64_t pos = 0;
	for (uint32_t j = 0; j < nshards; j++) {
		if (j % width == 0)
			b->start[j / width] = pos;
		b->pstart[j] = pos;
		b->delta[j] = first[b->place[j]] - pos;
		pos += count[b->place[j]];
	}
	b->pstart[nshards] = n;
	b->start[nblocks] = n;
	for (uint32_t k = 0; k < nblocks; k++) {
		struct block_key *bk = &b->keys[k];
		bk->half_bits = feistel_half_bits(b->start[k + 1] - b->start[k]);
		bk->half_mask = (1ull << bk->half_bits) - 1;
		feistel_keys(bk->keys, seed, epoch, (uint64_t)k << 8, TAG_BLOCK);
	}
	*out = b;
	return 0;
}

void sampler_blocks_ref(struct sampler_blocks *b)
{
	atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}

void sampler_blocks_unref(struct sampler_blocks *b)
{
	if (b && atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
		blocks_free(b);
}

uint32_t sampler_block_count(const struct sampler_blocks *b)
{
	return b->nblocks;
}

/* The last i in [lo, hi] with a[i] <= x (a ascending, a[lo] <= x). */
static uint32_t last_at_or_before(const uint64_t *a, uint32_t lo, uint32_t hi, uint64_t x)
{
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		if (a[mid] <= x)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

uint32_t sampler_block_of(const struct sampler_blocks *b, uint64_t pos)
{
	return last_at_or_before(b->start, 0, b->nblocks - 1, pos);
}

void sampler_block_span(const struct sampler_blocks *b, uint32_t blk, uint64_t *begin,
			uint64_t *end)
{
	*begin = b->start[blk];
	*end = b->start[blk + 1];
}

uint32_t sampler_block_shards(const struct sampler_blocks *b, uint32_t blk, uint32_t *out)
{
	uint32_t lo = blk * b->width, hi = b->nshards - lo < b->width ? b->nshards : lo + b->width;
	for (uint32_t j = lo; j < hi; j++)
		out[j - lo] = b->place[j];
	return hi - lo;
}

static uint64_t blocks_permute(const struct sampler_blocks *b, uint64_t pos)
{
	uint32_t blk = sampler_block_of(b, pos);
	uint64_t begin = b->start[blk];
	const struct block_key *bk = &b->keys[blk];
	uint64_t p = begin + feistel_walk(bk->half_bits, bk->half_mask, bk->keys,
					  b->start[blk + 1] - begin, pos - begin);
	/* The last place of the block starting at or before p. */
	uint32_t lo = blk * b->width,
		 hi = b->nshards - lo <= b->width ? b->nshards - 1 : lo + b->width - 1;
	return p + b->delta[last_at_or_before(b->pstart, lo, hi, p)];
}

int sampler_init(struct sampler *s, uint64_t n, uint64_t seed, uint64_t epoch, uint32_t rank,
		 uint32_t world, int shuffle, char *err, size_t errlen)
{
	if (n == 0)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "sampler: the dataset has no samples");
	if (n >= (1ull << 62))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "sampler: %" PRIu64 " samples is more than 2^62", n);
	if (world == 0)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "sampler: world size must be at least 1");
	if (rank >= world)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "sampler: rank %" PRIu32 " is not below world size %" PRIu32,
				   rank, world);
	*s = (struct sampler){ .n = n,
			       .seed = seed,
			       .epoch = epoch,
			       .rank = rank,
			       .world = world,
			       .shuffle = shuffle != 0,
			       .blocks = NULL };
	s->half_bits = feistel_half_bits(n);
	s->half_mask = (1ull << s->half_bits) - 1;
	feistel_keys(s->keys, seed, epoch, 0, TAG_GLOBAL);
	return 0;
}

/* Where rank's stretch of [start, n) begins: the w runs have lengths
 * q + 1 (the first m mod w of them) and q, q = m div w, m = n - start. */
static uint64_t stretch_begin(const struct sampler *s)
{
	uint64_t m = s->n - s->start, q = m / s->world, rem = m % s->world;
	return s->start + (uint64_t)s->rank * q + (s->rank < rem ? s->rank : rem);
}

int sampler_init_blocks(struct sampler *s, const struct sampler_blocks *b, uint32_t rank,
			uint32_t world, char *err, size_t errlen)
{
	if (!b)
		return status_fail(err, errlen, FEEDER_EINVAL, "sampler: no shard-block layout");
	int rc = sampler_init(s, b->n, b->seed, b->epoch, rank, world, b->shuffle, err, errlen);
	if (rc == 0) {
		s->blocks = b;
		s->stretch = stretch_begin(s);
	}
	return rc;
}

int sampler_start(struct sampler *s, uint64_t start, char *err, size_t errlen)
{
	if (start > s->n)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "sampler: start position %" PRIu64 " is past the %" PRIu64
				   " samples of an epoch",
				   start, s->n);
	s->start = start;
	if (s->blocks)
		s->stretch = stretch_begin(s);
	return 0;
}

uint64_t sampler_len(const struct sampler *s)
{
	if (s->rank >= s->n - s->start)
		return 0;
	return (s->n - s->start - 1 - s->rank) / s->world + 1;
}

uint64_t sampler_permute(const struct sampler *s, uint64_t pos)
{
	if (!s->shuffle)
		return pos;
	if (s->blocks)
		return blocks_permute(s->blocks, pos);
	return feistel_walk(s->half_bits, s->half_mask, s->keys, s->n, pos);
}

uint64_t sampler_pos(const struct sampler *s, uint64_t k)
{
	return s->blocks ? s->stretch + k : s->start + s->rank + k * s->world;
}

uint64_t sampler_at(const struct sampler *s, uint64_t k)
{
	return sampler_permute(s, sampler_pos(s, k));
}

uint64_t sampler_batches(const struct sampler *s, uint32_t batch, int drop_last)
{
	if (batch == 0)
		return 0;
	uint64_t len = sampler_len(s);
	return drop_last ? len / batch : (len + batch - 1) / batch;
}
