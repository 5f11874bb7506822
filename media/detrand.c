/* detrand.c — splitmix64 key derivation and xoshiro256** for augmentation
 * randomness; see detrand.h. */
#include "detrand.h"

uint64_t detrand_mix(uint64_t x)
{
	uint64_t z = x + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t detrand_key(uint64_t seed, uint64_t epoch, uint64_t index)
{
	/* Chained rather than xor-ed together, so that (seed, epoch, index)
	 * and permutations of it do not collide. */
	uint64_t h = detrand_mix(seed ^ 0x6665656465722121ull);
	h = detrand_mix(h ^ epoch);
	return detrand_mix(h ^ index);
}

void detrand_init(struct detrand *r, uint64_t key)
{
	uint64_t x = key;
	for (int i = 0; i < 4; i++) {
		x += 0x9e3779b97f4a7c15ull;
		r->s[i] = detrand_mix(x);
	}
	/* xoshiro must not start from the all-zero state. */
	if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
		r->s[0] = 1;
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t detrand_u64(struct detrand *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

double detrand_uniform(struct detrand *r)
{
	return (double)(detrand_u64(r) >> 11) * 0x1.0p-53;
}

double detrand_between(struct detrand *r, double lo, double hi)
{
	return lo + (hi - lo) * detrand_uniform(r);
}

int64_t detrand_range(struct detrand *r, int64_t lo, int64_t hi)
{
	uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
	if (span == 0) /* the whole 64-bit range */
		return (int64_t)detrand_u64(r);
	/* Reject the low 2^64 mod span values so every residue is equally likely. */
	uint64_t threshold = -span % span;
	uint64_t x;
	do
		x = detrand_u64(r);
	while (x < threshold);
	return (int64_t)((uint64_t)lo + x % span);
}
