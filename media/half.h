/* half.h — IEEE 754 binary16 <-> binary32 conversion.
 *
 * Batches may be delivered as float16 (dtype f16); the daemon's pipelines
 * convert each output value and the client and tests read them back. The
 * conversions here are portable bit manipulation with round-to-nearest-even,
 * correct for zeros, subnormals, infinities and NaN (quieted, sign kept),
 * so that results do not depend on the CPU. Header-only, no I/O. */
#ifndef FEEDER_HALF_H
#define FEEDER_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t half_from_float(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
	uint32_t ax = x & 0x7fffffffu;

	if (ax >= 0x7f800000u) /* inf or NaN */
		return sign | 0x7c00u | (ax > 0x7f800000u ? 0x0200u | ((ax >> 13) & 0x3ffu) : 0u);
	if (ax >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
		return sign | 0x7c00u;
	if (ax < 0x38800000u) {       /* below the smallest normal half: subnormal or zero */
		if (ax < 0x33000000u) /* < 2^-25: rounds to zero */
			return sign;
		uint32_t e = ax >> 23; /* 102..112 */
		uint32_t m = (ax & 0x7fffffu) | 0x800000u;
		uint32_t shift = 126 - e; /* value = m * 2^(e-150); half unit 2^-24 */
		uint32_t q = m >> shift;
		uint32_t rem = m & ((1u << shift) - 1);
		uint32_t halfway = 1u << (shift - 1);
		if (rem > halfway || (rem == halfway && (q & 1u)))
			q++;
		return sign | (uint16_t)q;
	}
	/* normal: rebias exponent, round the 13 dropped mantissa bits to even */
	uint32_t h = ((ax >> 13) - ((127 - 15) << 10));
	uint32_t rem = ax & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
		h++; /* may carry into the exponent, which is the right result */
	return sign | (uint16_t)h;
}

static inline float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t e = (h >> 10) & 0x1fu;
	uint32_t m = h & 0x3ffu;
	uint32_t x;

	if (e == 0x1f) { /* inf, or NaN made quiet as the hardware does */
		x = sign | 0x7f800000u | (m ? 0x400000u | (m << 13) : 0u);
	} else if (e != 0) {
		x = sign | ((e + (127 - 15)) << 23) | (m << 13);
	} else if (m == 0) {
		x = sign;
	} else { /* subnormal: normalize */
		e = 127 - 15 + 1;
		while (!(m & 0x400u)) {
			m <<= 1;
			e--;
		}
		x = sign | (e << 23) | ((m & 0x3ffu) << 13);
	}
	float f;
	memcpy(&f, &x, 4);
	return f;
}

/* Bulk conversions for the pipelines' output rows. On x86-64 CPUs with F16C
 * they use the hardware instructions, which round to nearest even and
 * treat subnormals and NaN exactly like the portable code above; elsewhere
 * they loop over it. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

__attribute__((target("avx,f16c"))) static inline void half_from_float_n_f16c(uint16_t *dst,
									      const float *src,
									      size_t n)
{
	size_t i = 0, body = n & ~(size_t)7;
	for (; i < body; i += 8)
		_mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
								       _MM_FROUND_TO_NEAREST_INT));
	for (; i < n; i++)
		dst[i] = half_from_float(src[i]);
}

__attribute__((target("avx,f16c"))) static inline void half_to_float_n_f16c(float *dst,
									    const uint16_t *src,
									    size_t n)
{
	size_t i = 0, body = n & ~(size_t)7;
	for (; i < body; i += 8)
		_mm256_storeu_ps(dst + i,
				 _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
	for (; i < n; i++)
		dst[i] = half_to_float(src[i]);
}

static inline int half_have_f16c(void)
{
	static int have = -1; /* every thread computes the same value */
	int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
	if (h < 0) {
		/* F16C is read from CPUID leaf 1 directly: clang 14's
		 * __builtin_cpu_supports does not know "f16c", and the fuzz
		 * harnesses (tests/fuzz) compile this header with clang. */
		unsigned a, b, c, d;
		h = __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) &&
		    (c & bit_F16C) != 0;
		__atomic_store_n(&have, h, __ATOMIC_RELAXED);
	}
	return h;
}
#endif

static inline void half_from_float_n(uint16_t *dst, const float *src, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
	if (half_have_f16c()) {
		half_from_float_n_f16c(dst, src, n);
		return;
	}
#endif
	for (size_t i = 0; i < n; i++)
		dst[i] = half_from_float(src[i]);
}

static inline void half_to_float_n(float *dst, const uint16_t *src, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
	if (half_have_f16c()) {
		half_to_float_n_f16c(dst, src, n);
		return;
	}
#endif
	for (size_t i = 0; i < n; i++)
		dst[i] = half_to_float(src[i]);
}

#endif
