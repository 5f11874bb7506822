/* philox.c — Philox4x32-10 and the uniform/normal mappings of philox.h.
 *
 * The mappings copy cuRAND's float arithmetic (same constants, same order of
 * operations) so a GPU kernel drawing from curand_init(seed, subseq, offset)
 * matches the CPU reference value for value, up to libm rounding. */
#include "philox.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PHILOX_HAVE_AVX2 1
#endif

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
		c0 = n0;
		c1 = n1;
		c2 = n2;
		c3 = n3;
		k0 += PHILOX_W0;
		k1 += PHILOX_W1;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

void philox_block(uint64_t seed, uint64_t subseq, uint64_t block, uint32_t out[4])
{
	uint32_t ctr[4] = { (uint32_t)block, (uint32_t)(block >> 32), (uint32_t)subseq,
			    (uint32_t)(subseq >> 32) };
	uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };

	philox4x32_10(ctr, key, out);
}

/* PHILOX_LANES consecutive blocks at once, structure-of-arrays: the lanes
 * are independent, so the compiler interleaves (and can vectorize) their
 * multiply chains; one block at a time is latency-bound. Bit-identical to
 * philox_block. */
#define PHILOX_LANES 8

static void philox_lanes(uint64_t seed, uint64_t subseq, uint64_t block,
			 uint32_t out[4][PHILOX_LANES])
{
	uint32_t c0[PHILOX_LANES], c1[PHILOX_LANES], c2[PHILOX_LANES], c3[PHILOX_LANES];
	uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);

	for (int j = 0; j < PHILOX_LANES; j++) {
		uint64_t b = block + (uint64_t)j;

		c0[j] = (uint32_t)b;
		c1[j] = (uint32_t)(b >> 32);
		c2[j] = (uint32_t)subseq;
		c3[j] = (uint32_t)(subseq >> 32);
	}
	for (int r = 0; r < 10; r++) {
		for (int j = 0; j < PHILOX_LANES; j++) {
			uint64_t p0 = (uint64_t)PHILOX_M0 * c0[j];
			uint64_t p1 = (uint64_t)PHILOX_M1 * c2[j];
			uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[j] ^ k0;
			uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[j] ^ k1;

			c1[j] = (uint32_t)p1;
			c3[j] = (uint32_t)p0;
			c0[j] = n0;
			c2[j] = n2;
		}
		k0 += PHILOX_W0;
		k1 += PHILOX_W1;
	}
	for (int j = 0; j < PHILOX_LANES; j++) {
		out[0][j] = c0[j];
		out[1][j] = c1[j];
		out[2][j] = c2[j];
		out[3][j] = c3[j];
	}
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

	/* a partial first block */
	while (k < n && (first + k) % 4 != 0) {
		out[k] = philox_uniform(seed, subseq, first + k);
		k++;
	}
	while (n - k >= 4 * PHILOX_LANES) {
		uint32_t w[4][PHILOX_LANES];

		philox_lanes(seed, subseq, (first + k) / 4, w);
		for (int j = 0; j < PHILOX_LANES; j++)
			for (int q = 0; q < 4; q++)
				out[k + 4 * (size_t)j + q] = philox_word_uniform(w[q][j]);
		k += 4 * PHILOX_LANES;
	}
	for (; k < n; k++)
		out[k] = philox_uniform(seed, subseq, first + k);
}

#if PHILOX_HAVE_AVX2
/* glibc's vector math (libmvec): logf and sinf of 8 floats, within 2 ulp of
 * the scalar ones. */
__m256 _ZGVdN8v_logf(__m256 x);
__m256 _ZGVdN8v_sinf(__m256 x);

/* The high and low 32 bits of the eight products m * c (32 x 32 -> 64):
 * _mm256_mul_epu32 multiplies the even lanes; the odd ones are shifted down
 * for a second multiply and the halves blended back in place. */
__attribute__((target("avx2"))) static inline void mul_hilo(__m256i m, __m256i c, __m256i *hi,
							    __m256i *lo)
{
	__m256i pe = _mm256_mul_epu32(c, m);
	__m256i po = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m);
	*hi = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
	*lo = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA);
}

/* (float)w of eight unsigned words, rounded once like the scalar cast. */
__attribute__((target("avx2"))) static inline __m256 u32_to_float(__m256i w)
{
	__m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(w, 16));
	__m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(w, _mm256_set1_epi32(0xFFFF)));
	return _mm256_add_ps(_mm256_mul_ps(hi, _mm256_set1_ps(65536.0f)), lo);
}

/* philox_normals for n a multiple of 8 whose block numbers first..first+n-1
 * share their high 32 bits: Philox on 8 blocks per AVX2 register (the same
 * words as philox4x32_10), Box-Muller through libmvec. About 4x the scalar
 * path; the normals differ from it by the vector logf/sinf's rounding. */
__attribute__((target("avx2,fma"))) static void normals_avx2(uint64_t seed, uint64_t subseq,
							     uint64_t first, size_t n, float *out)
{
	const __m256i m0 = _mm256_set1_epi32((int)PHILOX_M0),
		      m1 = _mm256_set1_epi32((int)PHILOX_M1);
	const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	const __m256 inv = _mm256_set1_ps(PHILOX_2POW32_INV);
	const __m256 inv_half = _mm256_set1_ps(PHILOX_2POW32_INV / 2.0f);
	const __m256 inv2pi = _mm256_set1_ps(PHILOX_2POW32_INV_2PI);
	const __m256 inv2pi_half = _mm256_set1_ps(PHILOX_2POW32_INV_2PI / 2.0f);
	const __m256 minus2 = _mm256_set1_ps(-2.0f);
	for (size_t k = 0; k < n; k += 8) {
		uint64_t b = first + k;
		__m256i c0 = _mm256_add_epi32(_mm256_set1_epi32((int)(uint32_t)b), lane);
		__m256i c1 = _mm256_set1_epi32((int)(uint32_t)(b >> 32));
		__m256i c2 = _mm256_set1_epi32((int)(uint32_t)subseq);
		__m256i c3 = _mm256_set1_epi32((int)(uint32_t)(subseq >> 32));
		uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
		for (int r = 0; r < 10; r++) {
			__m256i hi0, lo0, hi1, lo1;
			mul_hilo(m0, c0, &hi0, &lo0);
			mul_hilo(m1, c2, &hi1, &lo1);
			c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1),
					      _mm256_set1_epi32((int)k0));
			c1 = lo1;
			c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3),
					      _mm256_set1_epi32((int)k1));
			c3 = lo0;
			k0 += PHILOX_W0;
			k1 += PHILOX_W1;
		}
		/* No fused multiply-add: the same float steps as the scalar code. */
		__m256 u = _mm256_add_ps(_mm256_mul_ps(u32_to_float(c0), inv), inv_half);
		__m256 v = _mm256_add_ps(_mm256_mul_ps(u32_to_float(c1), inv2pi), inv2pi_half);
		__m256 r = _mm256_sqrt_ps(_mm256_mul_ps(minus2, _ZGVdN8v_logf(u)));
		_mm256_storeu_ps(out + k, _mm256_mul_ps(r, _ZGVdN8v_sinf(v)));
	}
}

static int use_avx2(void)
{
	static int cached = -1;
	if (cached < 0)
		cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	return cached;
}
#endif

void philox_normals(uint64_t seed, uint64_t subseq, uint64_t first, size_t n, float *out)
{
	size_t k = 0;

#if PHILOX_HAVE_AVX2
	if (use_avx2()) {
		/* Whole groups of 8 whose block numbers do not carry into the
		 * high word (all but one group in 2^29). */
		while (n - k >= 8) {
			uint64_t b = first + k;
			size_t m = (n - k) & ~(size_t)7;
			uint64_t room = 0x100000000ull - (b & 0xffffffffull);
			if (room < 8)
				break;
			if (m > room)
				m = (size_t)(room & ~7ull);
			normals_avx2(seed, subseq, b, m, out + k);
			k += m;
		}
	}
#endif
	while (n - k >= PHILOX_LANES) {
		uint32_t w[4][PHILOX_LANES];

		philox_lanes(seed, subseq, first + k, w);
		for (int j = 0; j < PHILOX_LANES; j++)
			out[k + (size_t)j] = philox_box_muller(w[0][j], w[1][j]);
		k += PHILOX_LANES;
	}
	for (; k < n; k++)
		out[k] = philox_normal(seed, subseq, first + k);
}
