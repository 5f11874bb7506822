/* test_sampler.c — the epoch order: a bijection over [0, n) for many n,
 * a pure function of (seed, epoch), different across epochs, and split into
 * disjoint ranks that together cover the epoch; batch counts. */
#include "check.h"
#include "sampler.h"
#include "status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_bijection(uint64_t n, uint64_t seed, uint64_t epoch)
{
	struct sampler s;
	char err[256];
	CHECKF(sampler_init(&s, n, seed, epoch, 0, 1, 1, err, sizeof err) == 0, "%s", err);
	CHECK(sampler_len(&s) == n);
	uint8_t *seen = calloc(n, 1);
	CHECK(seen);
	for (uint64_t k = 0; k < n; k++) {
		uint64_t v = sampler_at(&s, k);
		CHECKF(v < n, "n=%llu k=%llu -> %llu", (unsigned long long)n,
		       (unsigned long long)k, (unsigned long long)v);
		CHECKF(!seen[v], "n=%llu: %llu appears twice", (unsigned long long)n,
		       (unsigned long long)v);
		seen[v] = 1;
	}
	free(seen);
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

int main(void)
{
	char err[256];
	static const uint64_t sizes[] = { 1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 97, 100, 101, 255,
					  256, 257, 1000, 4093, 65521, 65536, 65537, 1000000 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		for (uint64_t seed = 0; seed < 3; seed++)
			check_bijection(sizes[i], seed * 7919, seed + 1);

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
	for (size_t i = 0; i < sizeof rank_sizes / sizeof rank_sizes[0]; i++) {
		uint64_t m = rank_sizes[i];
		struct sampler all;
		CHECK(sampler_init(&all, m, 9, 1, 0, 1, 1, err, sizeof err) == 0);
		for (uint32_t w = 1; w <= 5; w++) {
			uint8_t *seen = calloc(m, 1);
			CHECK(seen);
			uint64_t total = 0, minlen = UINT64_MAX, maxlen = 0;
			for (uint32_t r = 0; r < w; r++) {
				struct sampler s;
				CHECKF(sampler_init(&s, m, 9, 1, r, w, 1, err, sizeof err) == 0, "%s", err);
				uint64_t len = sampler_len(&s);
				minlen = len < minlen ? len : minlen;
				maxlen = len > maxlen ? len : maxlen;
				total += len;
				for (uint64_t k = 0; k < len; k++) {
					uint64_t v = sampler_at(&s, k);
					CHECK(v < m);
					CHECKF(!seen[v], "n=%llu w=%u: %llu in two ranks",
					       (unsigned long long)m, w, (unsigned long long)v);
					seen[v] = 1;
					CHECK(v == sampler_at(&all, r + k * w));
				}
			}
			CHECKF(total == m, "n=%llu w=%u: ranks cover %llu", (unsigned long long)m, w,
			       (unsigned long long)total);
			CHECK(maxlen - minlen <= 1);
			free(seen);
		}
	}

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
