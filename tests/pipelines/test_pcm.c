/* test_pcm — media/pcm.c: s16 samples read as floats from an offset,
 * looped over the record (the wave pipeline's chunk cut and its noise
 * reads): values, sign, the wrap at the record's end, several wraps, a run
 * inside the record, and silence for an empty record. */
#include "check.h"
#include "pcm.h"

#include <stdint.h>

int main(void)
{
	/* 5 samples, little-endian: 1, -2, 32767, -32768, 300 */
	const int16_t v[5] = { 1, -2, 32767, -32768, 300 };
	uint8_t payload[10];
	for (int i = 0; i < 5; i++) {
		payload[2 * i] = (uint8_t)((uint16_t)v[i] & 0xff);
		payload[2 * i + 1] = (uint8_t)((uint16_t)v[i] >> 8);
	}
	float out[23];
	pcm_s16_read(payload, 5, 3, 23, out); /* from sample 3, four wraps and a bit */
	for (int i = 0; i < 23; i++)
		CHECKF(out[i] == (float)v[(3 + i) % 5], "sample %d: %g, want %d", i, out[i],
		       v[(3 + i) % 5]);
	pcm_s16_read(payload, 5, 1, 3, out); /* inside: no wrap */
	CHECK(out[0] == -2.0f && out[1] == 32767.0f && out[2] == -32768.0f);
	out[0] = out[1] = 9.0f;
	pcm_s16_read(payload, 0, 0, 2, out); /* nothing to loop over */
	CHECK(out[0] == 0.0f && out[1] == 0.0f);
	pcm_s16_read(payload, 5, 0, 0, out); /* n 0 */
	return 0;
}
