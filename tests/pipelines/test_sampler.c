/* test_sampler.c — the epoch order: a bijection over [0, n) for many n,
 * a pure function of (seed, epoch), different across epochs, and split into
 * disjoint ranks that together cover the epoch; batch counts; an epoch
 * stopped after P samples with one world size and resumed at P with
 * another is covered exactly once (elastic resume). The shard-block order
 * likewise, its ranks in stretches that share blocks only where they meet,
 * and each of its blocks holds exactly the samples of its shards. */
#include "check.h"
#include "sampler.h"
#include "status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The epoch order over [0, n) split among w ranks, for every w up to maxw:
 * disjoint, covering, lengths within one, rank r takes epoch positions r,
 * r+w, ... (with w 1: a bijection over [0, n)). */
static void check_ranks(uint64_t n, uint64_t seed, uint64_t epoch, uint32_t maxw)
{
	char err[256];
	struct sampler all;
	CHECKF(sampler_init(&all, n, seed, epoch, 0, 1, 1, err, sizeof err) == 0, "%s", err);
	for (uint32_t w = 1; w <= maxw; w++) {
		uint8_t *seen = calloc(n, 1);
		CHECK(seen);
		uint64_t total = 0, minlen = UINT64_MAX, maxlen = 0;
		for (uint32_t r = 0; r < w; r++) {
			struct sampler s;
			CHECKF(sampler_init(&s, n, seed, epoch, r, w, 1, err, sizeof err) == 0,
			       "%s", err);
			uint64_t len = sampler_len(&s);
			minlen = len < minlen ? len : minlen;
			maxlen = len > maxlen ? len : maxlen;
			total += len;
			for (uint64_t k = 0; k < len; k++) {
				uint64_t v = sampler_at(&s, k);
				CHECKF(v < n, "n=%llu k=%llu -> %llu", (unsigned long long)n,
				       (unsigned long long)k, (unsigned long long)v);
				CHECKF(!seen[v], "n=%llu w=%u: %llu twice", (unsigned long long)n,
				       w, (unsigned long long)v);
				seen[v] = 1;
				CHECK(v == sampler_at(&all, r + k * w));
			}
		}
		CHECKF(total == n, "n=%llu w=%u: ranks cover %llu", (unsigned long long)n, w,
		       (unsigned long long)total);
		CHECK(maxlen - minlen <= 1);
		free(seen);
	}
}

/* Number of positions where two orders agree; a shuffle should agree with
 * another one at about 1 position (n/n) and with the identity likewise. */
static uint64_t agreements(const struct sampler *a, const struct sampler *b, uint64_t n)
{
	uint64_t same = 0;
	for (uint64_t k = 0; k < n; k++)
		same += sampler_at(a, k) == sampler_at(b, k);
	return same;
}

/* Ranks 0..w1-1 take `steps` batches of `batch` each (P = steps * batch *
 * w1 positions of the epoch), then w2 ranks resume at P and take the rest:
 * every sample of the epoch exactly once. */
static void check_elastic(uint64_t n, uint32_t w1, uint32_t w2, uint32_t batch, uint64_t steps)
{
	char err[256];
	uint8_t *seen = calloc(n, 1);
	CHECK(seen);
	uint64_t p = steps * batch * w1, count = 0;
	for (uint32_t r = 0; r < w1; r++) {
		struct sampler s;
		CHECK(sampler_init(&s, n, 9, 3, r, w1, 1, err, sizeof err) == 0);
		for (uint64_t k = 0; k < steps * batch; k++) {
			uint64_t v = sampler_at(&s, k);
			CHECKF(!seen[v], "before: %llu twice", (unsigned long long)v);
			seen[v] = 1;
			count++;
		}
	}
	for (uint32_t r = 0; r < w2; r++) {
		struct sampler s;
		CHECK(sampler_init(&s, n, 9, 3, r, w2, 1, err, sizeof err) == 0);
		CHECKF(sampler_start(&s, p, err, sizeof err) == 0, "%s", err);
		uint64_t len = sampler_len(&s);
		CHECKF(len == (n - p > r ? (n - p - r + w2 - 1) / w2 : 0), "rank %u of %u: %llu", r,
		       w2, (unsigned long long)len);
		for (uint64_t k = 0; k < len; k++) {
			uint64_t v = sampler_at(&s, k);
			CHECKF(!seen[v], "n=%llu %u->%u ranks at %llu: %llu twice",
			       (unsigned long long)n, w1, w2, (unsigned long long)p,
			       (unsigned long long)v);
			seen[v] = 1;
			count++;
		}
	}
	CHECKF(count == n, "n=%llu %u->%u: %llu of %llu samples", (unsigned long long)n, w1, w2,
	       (unsigned long long)count, (unsigned long long)n);
	free(seen);
}

/* A dataset of nshards shards of uneven sizes (1 .. 1+spread samples). */
struct shards {
	uint32_t nshards;
	uint64_t *first, *count, n;
};

static struct shards make_shards(uint32_t nshards, uint64_t spread, uint64_t salt)
{
	struct shards d = { .nshards = nshards };
	d.first = calloc(nshards, sizeof *d.first);
	d.count = calloc(nshards, sizeof *d.count);
	CHECK(d.first && d.count);
	for (uint32_t i = 0; i < nshards; i++) {
		d.first[i] = d.n;
		d.count[i] = 1 + (i * 2654435761u + salt) % (spread + 1);
		d.n += d.count[i];
	}
	return d;
}

static struct sampler_blocks *blocks_of(const struct shards *d, uint32_t width, uint64_t seed,
					uint64_t epoch, int shuffle)
{
	char err[256];
	struct sampler_blocks *b = NULL;
	CHECKF(sampler_blocks_new(&b, d->first, d->count, d->nshards, width, seed, epoch, shuffle,
				  err, sizeof err) == 0,
	       "%s", err);
	return b;
}

/* The shard holding sample v (shards are contiguous and ascending). */
static uint32_t shard_of(const struct shards *d, uint64_t v)
{
	uint32_t lo = 0, hi = d->nshards - 1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		if (d->first[mid] <= v)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* One epoch of the shard-block order: the blocks tile [0, n) in order,
 * block of pos agrees with the spans, each block's positions map exactly
 * onto the samples of its shards (so the epoch is a permutation), the
 * shards are each in exactly one block; then ranks 1..maxw with a start
 * offset are disjoint and cover [start, n) as rank r taking start+r+k*w. */
static void check_blocks(const struct shards *d, uint32_t width, uint64_t seed, uint64_t epoch,
			 uint32_t maxw, uint64_t start)
{
	char err[256];
	struct sampler_blocks *b = blocks_of(d, width, seed, epoch, 1);
	struct sampler all;
	CHECKF(sampler_init_blocks(&all, b, 0, 1, err, sizeof err) == 0, "%s", err);
	CHECK(all.n == d->n && all.blocks == b && all.shuffle);
	uint32_t nb = sampler_block_count(b);
	CHECK(nb == (d->nshards + width - 1) / width);
	uint8_t *seen = calloc(d->n, 1), *shard_seen = calloc(d->nshards, 1);
	uint32_t *sh = calloc(width, sizeof *sh);
	CHECK(seen && shard_seen && sh);
	uint64_t expect_begin = 0;
	for (uint32_t blk = 0; blk < nb; blk++) {
		uint64_t begin, end;
		sampler_block_span(b, blk, &begin, &end);
		CHECK(begin == expect_begin && end > begin);
		expect_begin = end;
		uint32_t ns = sampler_block_shards(b, blk, sh);
		CHECK(ns >= 1 && ns <= width && (blk + 1 == nb || ns == width));
		uint64_t size = 0;
		for (uint32_t i = 0; i < ns; i++) {
			CHECK(sh[i] < d->nshards && !shard_seen[sh[i]]);
			shard_seen[sh[i]] = 1;
			size += d->count[sh[i]];
		}
		CHECKF(size == end - begin, "block %u: %llu positions, shards hold %llu", blk,
		       (unsigned long long)(end - begin), (unsigned long long)size);
		for (uint64_t pos = begin; pos < end; pos++) {
			CHECK(sampler_block_of(b, pos) == blk);
			uint64_t v = sampler_permute(&all, pos);
			CHECKF(v < d->n && !seen[v], "pos %llu -> %llu twice or out of range",
			       (unsigned long long)pos, (unsigned long long)v);
			seen[v] = 1;
			uint32_t s = shard_of(d, v), i = 0;
			while (i < ns && sh[i] != s)
				i++;
			CHECKF(i < ns, "block %u: sample %llu of shard %u is not one of its shards",
			       blk, (unsigned long long)v, s);
		}
	}
	CHECK(expect_begin == d->n);
	for (uint32_t w = 1; w <= maxw; w++) {
		memset(seen, 0, d->n);
		uint64_t total = 0, next = start;
		for (uint32_t r = 0; r < w; r++) {
			struct sampler s;
			CHECKF(sampler_init_blocks(&s, b, r, w, err, sizeof err) == 0, "%s", err);
			CHECKF(sampler_start(&s, start, err, sizeof err) == 0, "%s", err);
			uint64_t len = sampler_len(&s);
			total += len;
			/* Ranks take the stretches of what is left in order, of
			 * lengths differing by at most one. */
			CHECK(len == (d->n - start) / w || len == (d->n - start) / w + 1);
			for (uint64_t k = 0; k < len; k++) {
				uint64_t v = sampler_at(&s, k);
				CHECK(v < d->n && !seen[v]);
				seen[v] = 1;
				CHECKF(sampler_pos(&s, k) == next,
				       "w=%u r=%u k=%llu: position %llu, not %llu", w, r,
				       (unsigned long long)k,
				       (unsigned long long)sampler_pos(&s, k),
				       (unsigned long long)next);
				CHECK(v == sampler_permute(&all, next));
				next++;
			}
		}
		CHECKF(total == d->n - start, "w=%u start=%llu: ranks cover %llu of %llu", w,
		       (unsigned long long)start, (unsigned long long)total,
		       (unsigned long long)(d->n - start));
	}
	free(sh);
	free(shard_seen);
	free(seen);
	sampler_blocks_unref(b);
}

/* Positions where two block orders of the same dataset agree. */
static uint64_t block_agreements(const struct shards *d, uint32_t width, uint64_t seed1,
				 uint64_t epoch1, uint64_t seed2, uint64_t epoch2)
{
	char err[256];
	struct sampler_blocks *b1 = blocks_of(d, width, seed1, epoch1, 1);
	struct sampler_blocks *b2 = blocks_of(d, width, seed2, epoch2, 1);
	struct sampler s1, s2;
	CHECK(sampler_init_blocks(&s1, b1, 0, 1, err, sizeof err) == 0);
	CHECK(sampler_init_blocks(&s2, b2, 0, 1, err, sizeof err) == 0);
	uint64_t same = agreements(&s1, &s2, d->n);
	sampler_blocks_unref(b1);
	sampler_blocks_unref(b2);
	return same;
}

static void test_blocks(void)
{
	char err[256];
	static const struct {
		uint32_t nshards;
		uint64_t spread;
	} sets[] = { { 1, 0 },  { 1, 40 },  { 2, 3 },  { 3, 0 },
		     { 5, 17 }, { 13, 60 }, { 64, 9 }, { 100, 250 } };
	static const uint32_t widths[] = { 1, 2, 3, 4, 8, 64, 200 };
	for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
		struct shards d = make_shards(sets[i].nshards, sets[i].spread, i);
		for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
			for (uint64_t epoch = 0; epoch < 2; epoch++) {
				check_blocks(&d, widths[w], 7 + i, epoch, 3, 0);
				check_blocks(&d, widths[w], 7 + i, epoch, 3, d.n / 3);
				check_blocks(&d, widths[w], 7 + i, epoch, 2, d.n - 1);
				check_blocks(&d, widths[w], 7 + i, epoch, 2, d.n);
			}

		/* Shuffle 0: the dataset order, shards in place. */
		for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
			struct sampler_blocks *b = blocks_of(&d, widths[w], 7, 1, 0);
			struct sampler s;
			CHECK(sampler_init_blocks(&s, b, 0, 1, err, sizeof err) == 0);
			for (uint64_t k = 0; k < d.n; k++)
				CHECK(sampler_at(&s, k) == k);
			uint32_t sh[200];
			for (uint32_t blk = 0; blk < sampler_block_count(b); blk++) {
				uint32_t ns = sampler_block_shards(b, blk, sh);
				for (uint32_t j = 0; j < ns; j++)
					CHECK(sh[j] == blk * widths[w] + j);
			}
			sampler_blocks_unref(b);
		}
		free(d.first);
		free(d.count);
	}

	/* Determinism and variety: same (seed, epoch) same order, and other
	 * epochs or seeds a different one, the shard order included. */
	struct shards d = make_shards(40, 300, 1);
	static const uint32_t vwidths[] = { 1, 4, 40 };
	for (size_t w = 0; w < sizeof vwidths / sizeof vwidths[0]; w++) {
		CHECK(block_agreements(&d, vwidths[w], 5, 2, 5, 2) == d.n);
		uint64_t e = block_agreements(&d, vwidths[w], 5, 2, 5, 3);
		uint64_t s = block_agreements(&d, vwidths[w], 5, 2, 6, 2);
		CHECKF(e < d.n / 20 && s < d.n / 20, "width %u: %llu and %llu of %llu agree",
		       vwidths[w], (unsigned long long)e, (unsigned long long)s,
		       (unsigned long long)d.n);
	}
	uint32_t first_shards[8][4];
	for (uint64_t epoch = 0; epoch < 8; epoch++) {
		struct sampler_blocks *b = blocks_of(&d, 4, 5, epoch, 1);
		CHECK(sampler_block_shards(b, 0, first_shards[epoch]) == 4);
		sampler_blocks_unref(b);
	}
	for (int e = 1; e < 8; e++)
		CHECKF(memcmp(first_shards[e], first_shards[e - 1], sizeof first_shards[e]),
		       "epochs %d and %d start with the same shards", e - 1, e);
	/* Inside a block the samples are shuffled, not read shard by shard. */
	{
		struct sampler_blocks *b = blocks_of(&d, 40, 5, 0, 1);
		struct sampler s;
		CHECK(sampler_init_blocks(&s, b, 0, 1, err, sizeof err) == 0);
		uint64_t ascending = 0;
		for (uint64_t k = 1; k < d.n; k++)
			ascending += sampler_at(&s, k) == sampler_at(&s, k - 1) + 1;
		CHECKF(ascending < 40, "%llu ascending runs", (unsigned long long)ascending);
		/* A reference keeps the layout alive past the first unref. */
		sampler_blocks_ref(b);
		sampler_blocks_unref(b);
		CHECK(sampler_at(&s, 0) < d.n);
		sampler_blocks_unref(b);
		sampler_blocks_unref(NULL);
	}

	/* What the stretches buy: over the ranks of a world, every block is
	 * read by one rank but where two stretches meet, so the ranks
	 * together touch at most blocks + w - 1 of them (a strided split
	 * would have every rank touch every block). */
	{
		struct sampler_blocks *b = blocks_of(&d, 4, 11, 2, 1);
		uint32_t nb = sampler_block_count(b);
		uint8_t *touched = calloc(nb, 1);
		CHECK(touched);
		for (uint32_t w = 1; w <= 5; w++) {
			uint64_t sum = 0;
			for (uint32_t r = 0; r < w; r++) {
				struct sampler s;
				CHECK(sampler_init_blocks(&s, b, r, w, err, sizeof err) == 0);
				memset(touched, 0, nb);
				for (uint64_t k = 0; k < sampler_len(&s); k++)
					touched[sampler_block_of(b, sampler_pos(&s, k))] = 1;
				for (uint32_t blk = 0; blk < nb; blk++)
					sum += touched[blk];
			}
			CHECKF(sum <= nb + w - 1, "w=%u: the ranks touch %llu blocks of %u", w,
			       (unsigned long long)sum, nb);
		}
		free(touched);
		sampler_blocks_unref(b);
	}

	/* Bad arguments are errors with a sentence. */
	struct sampler_blocks *b = NULL;
	uint64_t first[3] = { 0, 4, 9 }, count[3] = { 4, 5, 2 };
	err[0] = 0;
	CHECK(sampler_blocks_new(&b, first, count, 0, 2, 1, 0, 1, err, sizeof err) ==
		      FEEDER_EINVAL &&
	      strstr(err, "no shards"));
	err[0] = 0;
	CHECK(sampler_blocks_new(&b, first, count, 3, 0, 1, 0, 1, err, sizeof err) ==
		      FEEDER_EINVAL &&
	      strstr(err, "at least one shard"));
	count[1] = 0;
	err[0] = 0;
	CHECK(sampler_blocks_new(&b, first, count, 3, 2, 1, 0, 1, err, sizeof err) ==
		      FEEDER_EINVAL &&
	      strstr(err, "shard 1 has no samples"));
	count[1] = 5;
	first[2] = 8;
	err[0] = 0;
	CHECK(sampler_blocks_new(&b, first, count, 3, 2, 1, 0, 1, err, sizeof err) ==
		      FEEDER_EINVAL &&
	      strstr(err, "shard 2 starts at sample 8, not 9"));
	first[2] = 9;
	first[0] = 1;
	CHECK(sampler_blocks_new(&b, first, count, 3, 2, 1, 0, 1, err, sizeof err) ==
	      FEEDER_EINVAL);
	first[0] = 0;
	uint64_t huge_first[2] = { 0, 1ull << 61 }, huge_count[2] = { 1ull << 61, 1ull << 61 };
	err[0] = 0;
	CHECK(sampler_blocks_new(&b, huge_first, huge_count, 2, 1, 1, 0, 1, err, sizeof err) ==
		      FEEDER_EINVAL &&
	      strstr(err, "2^62"));
	struct sampler s;
	err[0] = 0;
	CHECK(sampler_init_blocks(&s, NULL, 0, 1, err, sizeof err) == FEEDER_EINVAL && err[0]);
	CHECK(sampler_blocks_new(&b, first, count, 3, 2, 1, 0, 1, err, sizeof err) == 0);
	CHECK(sampler_init_blocks(&s, b, 2, 2, err, sizeof err) == FEEDER_EINVAL);
	CHECK(sampler_init_blocks(&s, b, 0, 0, err, sizeof err) == FEEDER_EINVAL);
	CHECK(sampler_init_blocks(&s, b, 1, 2, err, sizeof err) == 0 && s.n == 11);
	CHECK(sampler_start(&s, 12, err, sizeof err) == FEEDER_EINVAL);
	sampler_blocks_unref(b);
	free(d.first);
	free(d.count);
}

int main(void)
{
	char err[256];
	static const uint64_t sizes[] = { 1,   2,    3,    4,     5,     7,     8,      13,
					  16,  17,   31,   97,    100,   101,   255,    256,
					  257, 1000, 4093, 65521, 65536, 65537, 1000000 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		for (uint64_t seed = 0; seed < 3; seed++)
			check_ranks(sizes[i], seed * 7919, seed + 1, 1);

	/* Determinism and variety. */
	const uint64_t n = 10007;
	struct sampler a, b, c, d;
	CHECK(sampler_init(&a, n, 42, 3, 0, 1, 1, err, sizeof err) == 0);
	CHECK(sampler_init(&b, n, 42, 3, 0, 1, 1, err, sizeof err) == 0);
	CHECK(sampler_init(&c, n, 42, 4, 0, 1, 1, err, sizeof err) == 0);
	CHECK(sampler_init(&d, n, 43, 3, 0, 1, 1, err, sizeof err) == 0);
	CHECK(agreements(&a, &b, n) == n);
	CHECKF(agreements(&a, &c, n) < 20, "epochs 3 and 4 agree at %llu positions",
	       (unsigned long long)agreements(&a, &c, n));
	CHECKF(agreements(&a, &d, n) < 20, "seeds 42 and 43 agree at %llu positions",
	       (unsigned long long)agreements(&a, &d, n));
	uint64_t fixed = 0, ascending = 0;
	for (uint64_t k = 0; k < n; k++) {
		fixed += sampler_at(&a, k) == k;
		ascending += k && sampler_at(&a, k) == sampler_at(&a, k - 1) + 1;
	}
	CHECKF(fixed < 20 && ascending < 40, "order looks unshuffled: %llu fixed, %llu runs",
	       (unsigned long long)fixed, (unsigned long long)ascending);

	/* Ranks: disjoint, covering, lengths within one, rank r takes epoch
	 * positions r, r+w, ... */
	static const uint64_t rank_sizes[] = { 1, 2, 3, 10, 11, 97, 1003 };
	for (size_t i = 0; i < sizeof rank_sizes / sizeof rank_sizes[0]; i++)
		check_ranks(rank_sizes[i], 9, 1, 5);

	/* Batches: 11 samples, 3 ranks -> lengths 4, 4, 3. */
	struct sampler r0, r2;
	CHECK(sampler_init(&r0, 11, 5, 0, 0, 3, 1, err, sizeof err) == 0);
	CHECK(sampler_init(&r2, 11, 5, 0, 2, 3, 1, err, sizeof err) == 0);
	CHECK(sampler_len(&r0) == 4 && sampler_len(&r2) == 3);
	CHECK(sampler_batches(&r0, 2, 0) == 2 && sampler_batches(&r0, 2, 1) == 2);
	CHECK(sampler_batches(&r0, 3, 0) == 2 && sampler_batches(&r0, 3, 1) == 1);
	CHECK(sampler_batches(&r2, 3, 0) == 1 && sampler_batches(&r2, 3, 1) == 1);
	CHECK(sampler_batches(&r2, 4, 0) == 1 && sampler_batches(&r2, 4, 1) == 0);
	CHECK(sampler_batches(&r2, 0, 0) == 0);
	struct sampler big;
	CHECK(sampler_init(&big, 1000000, 1, 0, 0, 1, 1, err, sizeof err) == 0);
	CHECK(sampler_batches(&big, 256, 0) == 3907 && sampler_batches(&big, 256, 1) == 3906);
	/* A rank beyond the dataset gets nothing. */
	struct sampler tiny;
	CHECK(sampler_init(&tiny, 2, 5, 0, 3, 4, 1, err, sizeof err) == 0);
	CHECK(sampler_len(&tiny) == 0 && sampler_batches(&tiny, 1, 0) == 0);

	/* Elastic resume: 2 -> 1, 2 -> 4, 4 -> 3, 3 -> 2 ranks, mid-epoch,
	 * at the start and with nothing left; a start past the epoch is an
	 * error. */
	check_elastic(1000, 2, 1, 16, 10);
	check_elastic(1000, 2, 4, 16, 10);
	check_elastic(1003, 4, 3, 8, 7);
	check_elastic(997, 3, 2, 5, 33);
	check_elastic(500, 2, 3, 10, 0);
	check_elastic(640, 2, 4, 32, 10);
	struct sampler st;
	CHECK(sampler_init(&st, 10, 1, 0, 1, 2, 1, err, sizeof err) == 0);
	CHECK(sampler_start(&st, 10, err, sizeof err) == 0 && sampler_len(&st) == 0);
	CHECK(sampler_start(&st, 9, err, sizeof err) == 0 && sampler_len(&st) == 0);
	CHECK(sampler_start(&st, 8, err, sizeof err) == 0 && sampler_len(&st) == 1);
	err[0] = 0;
	CHECK(sampler_start(&st, 11, err, sizeof err) == FEEDER_EINVAL &&
	      strstr(err, "past the 10"));

	/* Bad arguments are errors with a sentence. */
	err[0] = 0;
	CHECK(sampler_init(&tiny, 0, 1, 0, 0, 1, 1, err, sizeof err) == FEEDER_EINVAL && err[0]);
	CHECK(sampler_init(&tiny, 10, 1, 0, 0, 0, 1, err, sizeof err) == FEEDER_EINVAL);
	CHECK(sampler_init(&tiny, 10, 1, 0, 2, 2, 1, err, sizeof err) == FEEDER_EINVAL);
	CHECK(sampler_init(&tiny, 1ull << 62, 1, 0, 0, 1, 1, err, sizeof err) == FEEDER_EINVAL);
	/* Near the top of the range evaluation still lands inside [0, n). */
	CHECK(sampler_init(&tiny, (1ull << 62) - 1, 1, 0, 0, 1, 1, err, sizeof err) == 0);
	CHECK(tiny.blocks == NULL);
	for (uint64_t k = 0; k < 1000; k++)
		CHECK(sampler_at(&tiny, k * 4611686018427ull) < (1ull << 62) - 1);

	test_blocks();
	return 0;
}
