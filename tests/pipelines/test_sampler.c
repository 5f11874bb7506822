/* test_sampler.c — the epoch order: a bijection over [0, n) for many n,
 * a pure function of (seed, epoch), different across epochs, and split into
 * disjoint ranks that together cover the epoch; batch counts; an epoch
 * stopped after P samples with one world size and resumed at P with
 * another is covered exactly once (elastic resume). */
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
	for (uint64_t k = 0; k < 1000; k++)
		CHECK(sampler_at(&tiny, k * 4611686018427ull) < (1ull << 62) - 1);
	return 0;
}
