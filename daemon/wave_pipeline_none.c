/* wave_pipeline_none.c — the wave pipeline in a feederd built without the
 * audio libraries (FFTW, libsndfile, libsoxr; daemon/meson.build picks this
 * file or wave_pipeline.c): wave streams are refused with the reason. */
#include "wave_pipeline.h"

#include "status.h"

#include <string.h>

int wave_pipeline_supported(char *err, size_t errlen)
{
	return status_fail(err, errlen, FEEDER_EINVAL,
			   "this feederd was built without the audio libraries (FFTW, libsndfile, "
			   "libsoxr): no wave pipeline");
}

size_t wave_pipeline_chunk_samples(uint32_t chunk_len)
{
	return chunk_len ? (size_t)(chunk_len - 1) * 160 + 400 : 0;
}

int wave_pipeline_run(const struct feeder_stream_opts *o, const struct wave_sources *src,
		      const struct dsformat_sample *s, const uint8_t *payload, uint64_t aug_key,
		      uint32_t classes, void *out, int32_t *label, char *err, size_t errlen)
{
	(void)o, (void)src, (void)s, (void)payload, (void)aug_key, (void)classes, (void)out,
		(void)label;
	return wave_pipeline_supported(err, errlen);
}

void wave_pipeline_take_times(struct wave_times *t)
{
	memset(t, 0, sizeof(*t));
}
void wave_pipeline_worker_exit(void)
{
}
