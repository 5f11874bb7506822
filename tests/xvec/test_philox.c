/* test_philox.c — Philox4x32-10 against the Random123 known-answer vectors,
 * and the uniform/normal mappings against their documented word use. */
#include "check.h"
#include "philox.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>

static void kat(const uint32_t ctr[4], const uint32_t key[2], const uint32_t want[4])
{
	uint32_t out[4];

	philox4x32_10(ctr, key, out);
	for (int i = 0; i < 4; i++)
		CHECKF(out[i] == want[i], "word %d: %08x, want %08x", i, out[i], want[i]);
}

int main(void)
{
	const uint32_t z4[4] = { 0, 0, 0, 0 }, z2[2] = { 0, 0 };
	const uint32_t w0[4] = { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 };
	const uint32_t f4[4] = { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff };
	const uint32_t f2[2] = { 0xffffffff, 0xffffffff };
	const uint32_t w1[4] = { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd };
	const uint32_t p4[4] = { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 };
	const uint32_t p2[2] = { 0xa4093822, 0x299f31d0 };
	const uint32_t w2[4] = { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 };

	kat(z4, z2, w0);
	kat(f4, f2, w1);
	kat(p4, p2, w2);

	/* the counter/key layout: block = ctr words 0-1, subsequence = words 2-3 */
	uint32_t out[4];
	philox_block(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull, out);
	for (int i = 0; i < 4; i++)
		CHECK(out[i] == w2[i]);

	/* uniforms: word i % 4 of block i / 4, as curand_uniform maps it */
	const uint64_t seed = 0x1234567890abcdefull, sub = 77;
	float u[37];
	philox_uniforms(seed, sub, 3, 37, u);
	for (int k = 0; k < 37; k++) {
		uint64_t i = 3 + (uint64_t)k;
		float want;

		philox_block(seed, sub, i / 4, out);
		want = (float)out[i % 4] * 2.3283064e-10f + 2.3283064e-10f / 2.0f;
		CHECKF(u[k] == want, "uniform %llu", (unsigned long long)i);
		CHECK(u[k] == philox_uniform(seed, sub, i));
		CHECK(u[k] > 0.0f && u[k] <= 1.0f);
	}

	/* normals: Box-Muller (sine branch) on words 0 and 1 of block i */
	float z[19];
	philox_normals(seed, sub, 5, 19, z);
	for (int k = 0; k < 19; k++) {
		uint64_t i = 5 + (uint64_t)k;

		philox_block(seed, sub, i, out);
		double uu = ((double)out[0] + 0.5) / 4294967296.0;
		double vv = ((double)out[1] + 0.5) / 4294967296.0 * 2.0 * M_PI;
		double want = sqrt(-2.0 * log(uu)) * sin(vv);
		CHECKF(fabs(z[k] - want) < 1e-4 * (1.0 + fabs(want)), "normal %llu: %g vs %g",
		       (unsigned long long)i, z[k], want);
		float one = philox_normal(seed, sub, i);
		CHECKF(fabs(z[k] - one) < 1e-6 * (1.0 + fabs(one)),
		       "normal %llu: bulk %.9g, one %.9g", (unsigned long long)i, z[k], one);
		CHECKF(fabs(one - want) < 1e-4 * (1.0 + fabs(want)), "normal %llu: %g vs %g",
		       (unsigned long long)i, one, want);
	}
	/* the bulk paths (several blocks at once) equal the one-at-a-time ones */
	static float big[1000];
	philox_uniforms(seed, sub, 3, 1000, big);
	for (int k = 0; k < 1000; k++)
		CHECKF(big[k] == philox_uniform(seed, sub, 3 + (uint64_t)k), "uniform %d", k);
	/* Bulk normals may run on AVX2 with glibc's vector logf/sinf (libmvec):
	 * the same Philox words and float steps, so they differ from the scalar
	 * ones only by those functions' last-bit rounding. Also across the
	 * 2^32 block boundary, where the counter's high word carries. */
	uint64_t starts[2] = { 13, (1ull << 32) - 13 };
	double worst = 0;
	for (int s = 0; s < 2; s++) {
		int n = s ? 40 : 1000;
		philox_normals(seed, sub, starts[s], (size_t)n, big);
		for (int k = 0; k < n; k++) {
			float want = philox_normal(seed, sub, starts[s] + (uint64_t)k);
			double d = fabs((double)big[k] - want) / (1.0 + fabs(want));
			worst = d > worst ? d : worst;
			CHECKF(d < 1e-6, "normal %llu: %.9g vs %.9g",
			       (unsigned long long)(starts[s] + (uint64_t)k), big[k], want);
		}
	}
	printf("bulk normals vs scalar: largest difference %.3g (relative to 1 + |z|)\n", worst);
	/* blocks past 2^32 carry into the counter's second word */
	philox_uniforms(seed, sub, (1ull << 34) - 6, 40, big);
	for (int k = 0; k < 40; k++)
		CHECK(big[k] == philox_uniform(seed, sub, (1ull << 34) - 6 + (uint64_t)k));
	return 0;
}
