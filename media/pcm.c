/* pcm.c — s16 PCM to floats (see pcm.h). */
#include "pcm.h"

#include "bytes.h"

#include <string.h>

void pcm_s16_read(const uint8_t *payload, size_t frames, size_t offset, size_t n, float *out)
{
	if (frames == 0 || offset >= frames) { /* nothing to loop over: silence */
		memset(out, 0, n * sizeof(float));
		return;
	}
	for (size_t i = 0, pos = offset; i < n; pos = 0) {
		size_t run = frames - pos < n - i ? frames - pos : n - i;
		const uint8_t *p = payload + 2 * pos;
		for (size_t j = 0; j < run; j++)
			out[i + j] = (float)(int16_t)bytes_le16(p + 2 * j);
		i += run;
	}
}
