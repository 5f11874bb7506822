/* test_wav — the WAV reader accepts PCM mono 16 kHz 16-bit (skipping LIST
 * and other unknown chunks, padded to even length) and refuses every other
 * layout, a truncated data chunk and non-RIFF input with the right reason. */
#include "check.h"
#include "bytes.h"
#include "status.h"
#include "wav.h"

#include <stdlib.h>
#include <string.h>

struct wav_spec {
	uint16_t format, channels, bits;
	uint32_t rate;
	int list_chunk;    /* put an odd-sized LIST chunk before "fmt " and "data" */
	int extensible;    /* write WAVE_FORMAT_EXTENSIBLE with this sub-format */
	uint32_t cut;      /* bytes removed from the end of the file */
};

static const int16_t pcm[] = {0, 1, -1, 32767, -32768, 1234, -4321, 7};
#define NPCM (sizeof(pcm) / sizeof(pcm[0]))

/* Writes a WAV file into buf and returns its length. */
static size_t make_wav(uint8_t *buf, const struct wav_spec *s)
{
	size_t off = 12;
	memcpy(buf, "RIFF", 4);
	memcpy(buf + 8, "WAVE", 4);
	if (s->list_chunk) {
		static const char info[] = "INFOISFT\x05\0\0\0lavf\0"; /* 17 bytes: odd */
		memcpy(buf + off, "LIST", 4);
		bytes_put_le32(buf + off + 4, 17);
		memcpy(buf + off + 8, info, 17);
		buf[off + 8 + 17] = 0; /* pad byte */
		off += 8 + 18;
	}
	uint32_t fmt_len = s->extensible ? 40 : 16;
	memcpy(buf + off, "fmt ", 4);
	bytes_put_le32(buf + off + 4, fmt_len);
	uint8_t *f = buf + off + 8;
	bytes_put_le16(f, s->extensible ? WAV_FORMAT_EXTENSIBLE : s->format);
	bytes_put_le16(f + 2, s->channels);
	bytes_put_le32(f + 4, s->rate);
	bytes_put_le32(f + 8, s->rate * s->channels * s->bits / 8);
	bytes_put_le16(f + 12, s->channels * s->bits / 8);
	bytes_put_le16(f + 14, s->bits);
	if (s->extensible) {
		static const uint8_t tail[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
						 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};
		bytes_put_le16(f + 16, 22);
		bytes_put_le16(f + 18, s->bits);
		bytes_put_le32(f + 20, 4);
		bytes_put_le16(f + 24, s->format);
		memcpy(f + 26, tail, sizeof(tail));
	}
	off += 8 + fmt_len;
	memcpy(buf + off, "data", 4);
	bytes_put_le32(buf + off + 4, sizeof(pcm));
	for (size_t i = 0; i < NPCM; i++)
		bytes_put_le16(buf + off + 8 + 2 * i, (uint16_t)pcm[i]);
	off += 8 + sizeof(pcm);
	bytes_put_le32(buf + 4, (uint32_t)off - 8);
	return off - s->cut;
}

static const struct wav_spec good = {.format = 1, .channels = 1, .bits = 16, .rate = 16000};

static void expect_error(const struct wav_spec *s, const char *want)
{
	uint8_t buf[256];
	size_t len = make_wav(buf, s);
	float *x = NULL;
	size_t n = 0;
	char err[256] = "";
	int rc = wav_decode(buf, len, &x, &n, err, sizeof(err));
	CHECKF(rc == FEEDER_EFORMAT, "rc %d for a file that should fail with '%s'", rc, want);
	CHECKF(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
	CHECK(x == NULL && n == 0);
}

static void expect_samples(const struct wav_spec *s)
{
	uint8_t buf[256];
	size_t len = make_wav(buf, s);
	float *x = NULL;
	size_t n = 0;
	char err[256] = "";
	int rc = wav_decode(buf, len, &x, &n, err, sizeof(err));
	CHECKF(rc == 0, "%s", err);
	CHECK(n == NPCM);
	for (size_t i = 0; i < NPCM; i++)
		CHECKF(x[i] == (float)pcm[i], "sample %zu: %g != %d", i, x[i], pcm[i]);
	free(x);
}

int main(void)
{
	expect_samples(&good);

	struct wav_spec s = good;
	s.list_chunk = 1;
	expect_samples(&s);
	struct wav_info info;
	uint8_t buf[256];
	size_t len = make_wav(buf, &s);
	char err[256];
	CHECK(wav_parse(buf, len, &info, err, sizeof(err)) == 0);
	CHECK(info.data_off == 12 + 26 + 24 + 8);
	CHECK(info.data_len == sizeof(pcm));

	s = good;
	s.extensible = 1;
	expect_samples(&s);

	s = good;
	s.channels = 2;
	expect_error(&s, "2 channels, expected mono");
	s = good;
	s.rate = 44100;
	expect_error(&s, "sample rate 44100 Hz, expected 16000");
	s = good;
	s.format = 3;
	s.bits = 32;
	expect_error(&s, "format 3 (IEEE float), expected 1 (PCM)");
	s.extensible = 1;
	expect_error(&s, "format 3 (IEEE float), expected 1 (PCM)");
	s = good;
	s.bits = 8;
	expect_error(&s, "8 bits per sample, expected 16");
	s = good;
	s.cut = 3;
	expect_error(&s, "data chunk declares 16 bytes but only 13 remain (truncated)");
	s.list_chunk = 1;
	expect_error(&s, "truncated");

	/* Not RIFF at all, and RIFF that is not WAVE. */
	float *x = NULL;
	size_t n = 0;
	CHECK(wav_decode("hello, this is text", 19, &x, &n, err, sizeof(err)) == FEEDER_EFORMAT);
	CHECKF(strcmp(err, "not a RIFF file") == 0, "%s", err);
	CHECK(wav_decode("RIF", 3, &x, &n, err, sizeof(err)) == FEEDER_EFORMAT);
	len = make_wav(buf, &good);
	memcpy(buf + 8, "AVI ", 4);
	CHECK(wav_decode(buf, len, &x, &n, err, sizeof(err)) == FEEDER_EFORMAT);
	CHECKF(strstr(err, "not WAVE") != NULL, "%s", err);

	/* A file whose chunks stop before any data chunk. */
	len = make_wav(buf, &good);
	CHECK(wav_decode(buf, 12 + 24, &x, &n, err, sizeof(err)) == FEEDER_EFORMAT);
	CHECKF(strcmp(err, "no data chunk") == 0, "%s", err);
	CHECK(wav_decode(buf, 12, &x, &n, err, sizeof(err)) == FEEDER_EFORMAT);
	CHECKF(strcmp(err, "no fmt chunk") == 0, "%s", err);

	/* An empty data chunk is a valid, empty utterance. */
	len = make_wav(buf, &good);
	bytes_put_le32(buf + 12 + 24 + 4, 0);
	CHECK(wav_decode(buf, 12 + 24 + 8, &x, &n, err, sizeof(err)) == 0);
	CHECK(x == NULL && n == 0);
	return 0;
}
