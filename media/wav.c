/* wav.c — RIFF/WAVE parsing for `packer pack audio` (see wav.h). */
#include "wav.h"

#include "bytes.h"
#include "status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The tail of the KSDATAFORMAT_SUBTYPE_PCM GUID; its first two bytes are the
 * plain format code. */
static const uint8_t wav_guid_tail[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
					  0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};

static int wav_parse_fmt(const uint8_t *p, uint32_t size, struct wav_info *info, char *err,
			 size_t errlen)
{
	if (size < 16)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "fmt chunk of %u bytes, expected at least 16", size);
	info->format = bytes_le16(p);
	info->channels = bytes_le16(p + 2);
	info->rate = bytes_le32(p + 4);
	info->bits = bytes_le16(p + 14);
	if (info->format == WAV_FORMAT_EXTENSIBLE) {
		/* cbSize(2) validBits(2) channelMask(4) subFormat(16) */
		if (size < 40)
			return status_fail(err, errlen, FEEDER_EFORMAT,
					   "extensible fmt chunk of %u bytes, expected 40", size);
		if (memcmp(p + 26, wav_guid_tail, sizeof(wav_guid_tail)) != 0)
			return status_fail(err, errlen, FEEDER_EFORMAT,
					   "extensible format with an unknown sub-format GUID");
		info->format = bytes_le16(p + 24);
	}
	return 0;
}

int wav_sniff(const void *head, size_t len)
{
	const uint8_t *p = head;
	return len >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WAVE", 4) == 0;
}

int wav_parse(const void *buf, size_t len, struct wav_info *info, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	memset(info, 0, sizeof(*info));
	if (len < 12 || memcmp(p, "RIFF", 4) != 0)
		return status_fail(err, errlen, FEEDER_EFORMAT, "not a RIFF file");
	if (memcmp(p + 8, "WAVE", 4) != 0)
		return status_fail(err, errlen, FEEDER_EFORMAT, "RIFF file of type '%.4s', not WAVE",
				   (const char *)p + 8);
	/* The RIFF size is ignored: streaming writers leave it 0 or wrong, and
	 * the chunk sizes below are checked against the real length anyway. */
	int have_fmt = 0;
	size_t off = 12;
	while (off < len) {
		if (len - off < 8)
			return status_fail(err, errlen, FEEDER_EFORMAT,
					   "chunk header cut off at byte %zu (truncated)", off);
		const char *id = (const char *)p + off;
		uint32_t size = bytes_le32(p + off + 4);
		size_t body = off + 8, left = len - body;
		if (memcmp(id, "data", 4) == 0) {
			if (!have_fmt)
				return status_fail(err, errlen, FEEDER_EFORMAT,
						   "data chunk before any fmt chunk");
			if (size > left)
				return status_fail(err, errlen, FEEDER_EFORMAT,
						   "data chunk declares %u bytes but only %zu remain (truncated)",
						   size, left);
			info->data_off = body;
			info->data_len = size;
			return 0;
		}
		if (size > left)
			return status_fail(err, errlen, FEEDER_EFORMAT,
					   "'%.4s' chunk declares %u bytes but only %zu remain (truncated)",
					   id, size, left);
		if (memcmp(id, "fmt ", 4) == 0) {
			int rc = wav_parse_fmt(p + body, size, info, err, errlen);
			if (rc < 0)
				return rc;
			have_fmt = 1;
		}
		off = body + size + (size & 1);
	}
	return status_fail(err, errlen, FEEDER_EFORMAT,
			   have_fmt ? "no data chunk" : "no fmt chunk");
}

int wav_decode(const void *buf, size_t len, float **samples, size_t *n, char *err,
	       size_t errlen)
{
	struct wav_info info;
	*samples = NULL;
	*n = 0;
	int rc = wav_parse(buf, len, &info, err, errlen);
	if (rc < 0)
		return rc;
	if (info.format != WAV_FORMAT_PCM)
		return status_fail(err, errlen, FEEDER_EFORMAT, "format %u (%s), expected 1 (PCM)",
				   info.format,
				   info.format == WAV_FORMAT_FLOAT ? "IEEE float" : "compressed");
	if (info.channels != 1)
		return status_fail(err, errlen, FEEDER_EFORMAT, "%u channels, expected mono",
				   info.channels);
	if (info.rate != WAV_RATE)
		return status_fail(err, errlen, FEEDER_EFORMAT, "sample rate %u Hz, expected %d",
				   info.rate, WAV_RATE);
	if (info.bits != 16)
		return status_fail(err, errlen, FEEDER_EFORMAT, "%u bits per sample, expected 16",
				   info.bits);
	if (info.data_len % 2)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "data chunk of %zu bytes is not a whole number of 16-bit samples",
				   info.data_len);
	size_t count = info.data_len / 2;
	if (count == 0)
		return 0;
	float *out = malloc(count * sizeof(*out));
	if (!out)
		return status_fail(err, errlen, -ENOMEM, "no memory for %zu samples", count);
	const uint8_t *d = (const uint8_t *)buf + info.data_off;
	for (size_t i = 0; i < count; i++)
		out[i] = (float)(int16_t)bytes_le16(d + 2 * i);
	*samples = out;
	*n = count;
	return 0;
}
