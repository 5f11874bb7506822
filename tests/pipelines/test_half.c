/* test_half.c — float16 conversion: exact round trip of every half value,
 * round-to-nearest-even on ties, overflow, subnormals, NaN. */
#include "check.h"
#include "half.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static uint32_t bits(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	return x;
}

int main(void)
{
	/* Every half survives half -> float -> half. */
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = half_to_float((uint16_t)h);
		uint16_t back = half_from_float(f);
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
			CHECKF(isnan(f) && (back & 0x7c00) == 0x7c00 && (back & 0x3ff) &&
				       (back & 0x8000) == (h & 0x8000),
			       "NaN %04x -> %04x", h, back);
			continue;
		}
		CHECKF(back == h, "%04x -> %g -> %04x", h, f, back);
	}
	/* The bulk conversions (F16C where the CPU has it) agree bit for bit. */
	static uint16_t all[0x10000], back16[0x10000];
	static float f32[0x10000], sweep[0x10000];
	for (uint32_t h = 0; h < 0x10000; h++)
		all[h] = (uint16_t)h;
	half_to_float_n(f32, all, 0x10000);
	for (uint32_t h = 0; h < 0x10000; h++) {
		float want = half_to_float((uint16_t)h);
		CHECKF(bits(f32[h]) == bits(want), "bulk %04x -> %08x, scalar %08x", h,
		       bits(f32[h]), bits(want));
	}
	for (uint32_t i = 0; i < 0x10000; i++) {
		uint32_t x = i * 0x9e3779b1u; /* spread over all float bit patterns */
		memcpy(&sweep[i], &x, 4);
	}
	half_from_float_n(back16, sweep, 0x10000);
	for (uint32_t i = 0; i < 0x10000; i++) {
		uint16_t want = half_from_float(sweep[i]);
		CHECKF(back16[i] == want, "bulk %08x -> %04x, scalar %04x", bits(sweep[i]),
		       back16[i], want);
	}

	/* Known values. */
	CHECK(half_from_float(1.0f) == 0x3c00);
	CHECK(half_from_float(-2.0f) == 0xc000);
	CHECK(half_from_float(65504.0f) == 0x7bff);
	CHECK(half_from_float(65519.0f) == 0x7bff);
	CHECK(half_from_float(65520.0f) == 0x7c00);
	CHECK(half_from_float(1e10f) == 0x7c00);
	CHECK(half_from_float(-INFINITY) == 0xfc00);
	CHECK(half_from_float(0.0f) == 0 && half_from_float(-0.0f) == 0x8000);
	CHECK(half_from_float(0x1p-24f) == 0x0001);
	CHECK(half_from_float(0x1p-25f) == 0x0000);        /* tie -> even (0) */
	CHECK(half_from_float(0x1.8p-24f) == 0x0002);      /* tie -> even (2) */
	CHECK(half_from_float(0x1.000002p-25f) == 0x0001); /* just above the tie */
	CHECK(half_from_float(0x1p-14f) == 0x0400);
	CHECK(half_from_float(0x1.ffcp-15f) == 0x0400); /* subnormal rounding carries to normal */
	/* Ties between normal halves: 1 + 2^-11 lies between 1 and 1 + 2^-10. */
	CHECK(half_from_float(1.0f + 0x1p-11f) == 0x3c00);
	CHECK(half_from_float(1.0f + 3 * 0x1p-11f) == 0x3c02);
	CHECK(half_from_float(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);
	CHECK(half_to_float(0x3555) == 0x1.554p-2f);
	CHECK(isnan(half_to_float(half_from_float(NAN))));
	/* Nearest: for a sweep of floats, no other half is closer. */
	for (float f = -70000.0f; f < 70000.0f; f += 13.37f) {
		uint16_t h = half_from_float(f);
		if ((h & 0x7c00) == 0x7c00)
			continue;
		double d = fabs((double)half_to_float(h) - f);
		double up = fabs((double)half_to_float((uint16_t)(h + 1)) - f);
		double dn = fabs((double)half_to_float((uint16_t)(h - 1)) - f);
		CHECKF(!(d > up) && !(d > dn), "%g -> %04x (%08x)", f, h, bits(f));
	}
	return 0;
}
