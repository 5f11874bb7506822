/* fuzz_wav.c — arbitrary bytes as a .wav file for `packer pack audio`.
 *
 * The packer reads whatever lies in a speech corpus. wav_parse must walk any
 * chunk list without reading past the buffer; what it accepts must describe
 * sample bytes inside the buffer. wav_decode must then either refuse the
 * layout with a sentence or return exactly data_len / 2 samples equal to the
 * little-endian 16-bit values at data_off. */
#include "fuzz.h"

#include "bytes.h"
#include "status.h"
#include "wav.h"

#include <errno.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wav_info info;
	char err[256] = "";
	int rc = wav_parse(data, size, &info, err, sizeof(err));
	if (rc != 0) {
		FUZZ_CHECK(rc == FEEDER_EFORMAT, "code %d", rc);
		FUZZ_CHECK_ERR(err, sizeof(err));
	} else {
		FUZZ_CHECK(info.data_off <= size && info.data_len <= size - info.data_off,
			   "data [%zu, +%zu) outside %zu bytes", info.data_off, info.data_len, size);
	}

	float *samples = NULL;
	size_t n = 0;
	err[0] = '\0';
	int drc = wav_decode(data, size, &samples, &n, err, sizeof(err));
	if (drc != 0) {
		FUZZ_CHECK(drc == FEEDER_EFORMAT || drc == -ENOMEM, "code %d", drc);
		FUZZ_CHECK_ERR(err, sizeof(err));
		FUZZ_CHECK(samples == NULL || n == 0, "samples returned with an error");
		free(samples);
		return 0;
	}
	FUZZ_CHECK(rc == 0, "wav_decode accepted what wav_parse refused");
	FUZZ_CHECK(info.format == WAV_FORMAT_PCM && info.channels == 1 && info.rate == WAV_RATE &&
			   info.bits == 16,
		   "decoded format %u, %u channels, %u Hz, %u bits", info.format, info.channels,
		   info.rate, info.bits);
	FUZZ_CHECK(n == info.data_len / 2, "%zu samples from %zu bytes", n, info.data_len);
	for (size_t i = 0; i < n; i++) {
		int16_t v = (int16_t)bytes_le16(data + info.data_off + 2 * i);
		FUZZ_CHECK(samples[i] == (float)v, "sample %zu = %g, file holds %d", i, samples[i], v);
	}
	free(samples);
	return 0;
}
