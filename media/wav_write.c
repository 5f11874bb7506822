/* wav_write.c — PCM 16-bit WAV writer (see wav_write.h). */
#include "wav_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "status.h"

int wav_write_header(uint8_t hdr[WAV_WRITE_HEADER_BYTES], uint32_t rate, uint16_t channels,
		     uint64_t data_bytes, char *err, size_t errlen)
{
	const uint16_t bits = 16;
	uint32_t block = (uint32_t)channels * (bits / 8);

	if (rate == 0 || channels == 0)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "WAV rate %u Hz with %u channels is not a valid format", rate,
				   channels);
	if (data_bytes > UINT32_MAX - 36 || (uint64_t)rate * block > UINT32_MAX)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"WAV data of %llu bytes at %u Hz does not fit a 32-bit RIFF file",
			(unsigned long long)data_bytes, rate);
	memcpy(hdr, "RIFF", 4);
	bytes_put_le32(hdr + 4, (uint32_t)(36 + data_bytes));
	memcpy(hdr + 8, "WAVEfmt ", 8);
	bytes_put_le32(hdr + 16, 16); /* fmt chunk size for plain PCM */
	bytes_put_le16(hdr + 20, 1);  /* WAVE_FORMAT_PCM */
	bytes_put_le16(hdr + 22, channels);
	bytes_put_le32(hdr + 24, rate);
	bytes_put_le32(hdr + 28, rate * block); /* byte rate */
	bytes_put_le16(hdr + 32, (uint16_t)block);
	bytes_put_le16(hdr + 34, bits);
	memcpy(hdr + 36, "data", 4);
	bytes_put_le32(hdr + 40, (uint32_t)data_bytes);
	return 0;
}

int wav_write_file(const char *path, const int16_t *samples, size_t frames, uint32_t rate,
		   uint16_t channels, char *err, size_t errlen)
{
	uint8_t hdr[WAV_WRITE_HEADER_BYTES];
	uint8_t buf[8192];
	size_t count, i, fill = 0;
	char tmp[4096];
	FILE *f;
	int rc;

	if (channels != 0 && frames > (SIZE_MAX / 2) / channels)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "%s: too many samples for a WAV file", path);
	count = frames * channels;
	rc = wav_write_header(hdr, rate, channels, (uint64_t)count * 2, err, errlen);
	if (rc < 0)
		return rc;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return status_fail(err, errlen, -ENAMETOOLONG, "%s: path too long", path);
	f = fopen(tmp, "wb");
	if (!f)
		return status_fail(err, errlen, -errno, "cannot create %s: %s", tmp,
				   strerror(errno));
	errno = 0;
	if (fwrite(hdr, 1, sizeof(hdr), f) != sizeof(hdr))
		goto write_failed;
	for (i = 0; i < count; i++) {
		bytes_put_le16(buf + fill, (uint16_t)samples[i]);
		fill += 2;
		if (fill == sizeof(buf)) {
			if (fwrite(buf, 1, fill, f) != fill)
				goto write_failed;
			fill = 0;
		}
	}
	if (fill && fwrite(buf, 1, fill, f) != fill)
		goto write_failed;
	if (fclose(f) != 0) {
		f = NULL;
		goto write_failed;
	}
	if (rename(tmp, path) != 0) {
		rc = -errno;
		unlink(tmp);
		return status_fail(err, errlen, rc, "cannot rename %s to %s: %s", tmp, path,
				   strerror(-rc));
	}
	return 0;

write_failed:
	rc = errno ? -errno : -EIO;
	if (f)
		fclose(f);
	unlink(tmp);
	return status_fail(err, errlen, rc, "cannot write %s: %s", tmp, strerror(-rc));
}
