/* fuzz_audio.c — arbitrary bytes as an audio file for `packer pack audio`.
 *
 * The packer reads whatever lies in a speech corpus (and whatever a Kaldi
 * pipe prints). audio_file_decode hands the bytes to libsndfile and the
 * samples to libsoxr; whatever it is given, it must either refuse with a
 * sentence and return nothing, or return samples (no NaN) within its bound:
 * never read past the buffer (the virtual I/O callbacks are ours), never
 * crash. Seeds: WAV variants, FLAC, OGG/Vorbis (corpus/audio). */
#include "fuzz.h"

#include "audio_file.h"
#include "status.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_FRAMES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	float *samples = NULL;
	size_t n = 0;
	char err[256] = "";
	struct audio_file_info info;
	/* Channel 1 of 2 and a rate other than most seeds': the channel
	 * check and the resampler are run too. */
	uint32_t channel = size > 0 && (data[size - 1] & 1) ? 1 : 0;
	uint32_t rate = size > 1 && (data[size - 2] & 1) ? 8000 : 16000;
	int rc = audio_file_decode(data, size, channel, rate, FUZZ_MAX_FRAMES, &samples, &n, &info,
				   err, sizeof(err));
	if (rc != 0) {
		FUZZ_CHECK(rc == FEEDER_EFORMAT || rc == FEEDER_EQUOTA || rc == -ENOMEM, "code %d",
			   rc);
		FUZZ_CHECK_ERR(err, sizeof(err));
		FUZZ_CHECK(samples == NULL && n == 0, "samples returned with an error");
		return 0;
	}
	FUZZ_CHECK(n <= (size_t)FUZZ_MAX_FRAMES, "%zu samples past the bound", n);
	FUZZ_CHECK((n == 0) == (samples == NULL), "%zu samples at %p", n, (void *)samples);
	FUZZ_CHECK(channel < info.channels, "channel %u of %u decoded", channel, info.channels);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(!isnan(samples[i]), "sample %zu is NaN", i);
	free(samples);
	return 0;
}
