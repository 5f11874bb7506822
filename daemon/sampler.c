/* sampler.c — a keyed bijection over [0, n) evaluated position by position
 * (Feistel network + cycle-walking), split across ranks like
 * DistributedSampler; see sampler.h. */
#include "sampler.h"

#include "detrand.h"
#include "status.h"

#include <inttypes.h>

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
			       .shuffle = shuffle != 0 };
	/* Balanced halves keep the Feistel network a good mixer; the domain
	 * 2^(2*half_bits) is then below 4n, so cycle-walking needs fewer than
	 * four rounds of the network on average. */
	uint32_t bits = 2;
	while (bits < 64 && (1ull << bits) < n)
		bits += 2;
	s->half_bits = bits / 2;
	s->half_mask = (1ull << s->half_bits) - 1;
	for (int i = 0; i < SAMPLER_ROUNDS; i++)
		s->keys[i] =
			detrand_mix(detrand_key(seed, epoch, (uint64_t)i) ^ 0x53414d504c455221ull);
	return 0;
}

int sampler_start(struct sampler *s, uint64_t start, char *err, size_t errlen)
{
	if (start > s->n)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "sampler: start position %" PRIu64 " is past the %" PRIu64
				   " samples of an epoch",
				   start, s->n);
	s->start = start;
	return 0;
}

uint64_t sampler_len(const struct sampler *s)
{
	if (s->rank >= s->n - s->start)
		return 0;
	return (s->n - s->start - 1 - s->rank) / s->world + 1;
}

static uint64_t feistel(const struct sampler *s, uint64_t x)
{
	uint64_t l = x >> s->half_bits, r = x & s->half_mask;
	for (int i = 0; i < SAMPLER_ROUNDS; i++) {
		uint64_t f = detrand_mix(r ^ s->keys[i]) & s->half_mask;
		uint64_t nl = r;
		r = l ^ f;
		l = nl;
	}
	return (l << s->half_bits) | r;
}

uint64_t sampler_permute(const struct sampler *s, uint64_t pos)
{
	/* Walking the cycle of pos inside the larger domain until it lands back
	 * in [0, n) keeps the map a bijection on [0, n); it terminates because
	 * pos itself is in [0, n). */
	if (!s->shuffle)
		return pos;
	uint64_t x = feistel(s, pos);
	while (x >= s->n)
		x = feistel(s, x);
	return x;
}

uint64_t sampler_at(const struct sampler *s, uint64_t k)
{
	return sampler_permute(s, s->start + s->rank + k * s->world);
}

uint64_t sampler_batches(const struct sampler *s, uint32_t batch, int drop_last)
{
	if (batch == 0)
		return 0;
	uint64_t len = sampler_len(s);
	return drop_last ? len / batch : (len + batch - 1) / batch;
}
