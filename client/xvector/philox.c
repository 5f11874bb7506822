/* philox.c — Philox4x32-10 and the uniform/normal mappings of philox.h.
 *
 * The mappings copy cuRAND's float arithmetic (same constants, same order of
 * operations) so a GPU kernel drawing from curand_init(seed, subseq, offset)
 * matches the CPU reference value for value, up to libm rounding. */
#include "philox.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

/* cuRAND's CURAND_2POW32_INV and CURAND_2POW32_INV_2PI. */
#define PHILOX_2POW32_INV 2.3283064e-10f
#define PHILOX_2POW32_INV_2PI 1.4629181e-09f

void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
	uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
	uint32_t k0 = key[0], k1 = key[1];

	for (int r = 0; r < 10; r++) {
		uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
		uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
		uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
		uint32_t n1 = (uint32_t)p1;
		uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
		uint32_t n3 = (uint32_t)p0;
		c0 = n0; c1 = n1; c2 = n2; c3 = n3;
		k0 += PHILOX_W0;
		k1 += PHILOX_W1;
	}
	out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

void philox_block(uint64_t seed, uint64_t subseq, uint64_t block, uint32_t out[4])
{
	uint32_t ctr[4] = { (uint32_t)block, (uint32_t)(block >> 32),
			    (uint32_t)subseq, (uint32_t)(subseq >> 32) };
	uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };

	philox4x32_10(ctr, key, out);
}

static inline float philox_word_uniform(uint32_t w)
{
	return (float)w * PHILOX_2POW32_INV + (PHILOX_2POW32_INV / 2.0f);
}

static inline float philox_box_muller(uint32_t w0, uint32_t w1)
{
	float u = (float)w0 * PHILOX_2POW32_INV + (PHILOX_2POW32_INV / 2.0f);
	float v = (float)w1 * PHILOX_2POW32_INV_2PI + (PHILOX_2POW32_INV_2PI / 2.0f);

	return sqrtf(-2.0f * logf(u)) * sinf(v);
}

float philox_uniform(uint64_t seed, uint64_t subseq, uint64_t index)
{
	uint32_t w[4];

	philox_block(seed, subseq, index / 4, w);
	return philox_word_uniform(w[index % 4]);
}

float philox_normal(uint64_t seed, uint64_t subseq, uint64_t index)
{
	uint32_t w[4];

	philox_block(seed, subseq, index, w);
	return philox_box_muller(w[0], w[1]);
}

void philox_uniforms(uint64_t seed, uint64_t subseq, uint64_t first, size_t n, float *out)
{
	size_t k = 0;

	while (k < n) {
		uint64_t i = first + k;
		uint32_t w[4];

		philox_block(seed, subseq, i / 4, w);
		for (unsigned j = (unsigned)(i % 4); j < 4 && k < n; j++, k++)
			out[k] = philox_word_uniform(w[j]);
	}
}

void philox_normals(uint64_t seed, uint64_t subseq, uint64_t first, size_t n, float *out)
{
	for (size_t k = 0; k < n; k++) {
		uint32_t w[4];

		philox_block(seed, subseq, first + k, w);
		out[k] = philox_box_muller(w[0], w[1]);
	}
}
