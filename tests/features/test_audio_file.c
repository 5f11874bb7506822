/* test_audio_file — media/audio_file.c, the packer's audio decoder: the same
 * speech written by libsndfile as WAV (16-bit, 24-bit, 32-bit float,
 * WAVE_FORMAT_EXTENSIBLE), FLAC, AIFF and OGG/Vorbis, mono or stereo, at
 * 16 kHz or 44.1 kHz, decodes to the 16-bit integers themselves (lossless
 * containers at the target rate), to the same signal within resampling
 * tolerance (44.1 kHz), or within the codec's error (Vorbis); the channel
 * asked is the one kept; a tone keeps its frequency through resampling;
 * and damaged input gets a sentence: truncated, not audio, a missing
 * channel, too long for the bound. */
#include "audio_file.h"
#include "resample.h"
#include "signals.h"
#include "status.h"

#include <sndfile.h>
#include <string.h>
#include <unistd.h>

#define N16 8000 /* 0.5 s at 16 kHz */

static int16_t speech[N16];

/* A harmonic tone with a moving pitch and some noise: something with
 * energy at every frequency the features look at. */
static void make_signal(void)
{
	uint32_t s = 11;
	double ph = 0.0;
	for (size_t i = 0; i < N16; i++) {
		double f0 = 110.0 + 40.0 * sin(2.0 * M_PI * 3.0 * (double)i / 16000.0);
		ph += 2.0 * M_PI * f0 / 16000.0;
		double v = 0.0;
		for (int h = 1; h <= 12; h++)
			v += 2500.0 / h * sin(h * ph);
		s = s * 1664525u + 1013904223u;
		speech[i] = (int16_t)lrint(v + (double)((int)(s >> 22) % 401 - 200));
	}
}

/* A file of n frames x channels as libsndfile writes it in `format`,
 * read back into memory. Channel c > 0 carries the signal divided by c + 1. */
struct mem {
	uint8_t *p;
	size_t len;
};

static struct mem encode(int format, int rate, int channels, const int16_t *x, size_t n)
{
	FILE *f = tmpfile();
	CHECK(f != NULL);
	SF_INFO si = { .samplerate = rate, .channels = channels, .format = format };
	SNDFILE *sf = sf_open_fd(fileno(f), SFM_WRITE, &si, 0);
	CHECKF(sf != NULL, "cannot write format %x: %s", format, sf_strerror(NULL));
	/* Integers go in as shorts (exact in any PCM width); a float file gets
	 * the normalised values a float WAV holds (sample / 32768). */
	short *frame = malloc(n * (size_t)channels * sizeof(short));
	float *fl = malloc(n * (size_t)channels * sizeof(float));
	CHECK(frame != NULL && fl != NULL);
	for (size_t i = 0; i < n; i++)
		for (int c = 0; c < channels; c++) {
			frame[i * (size_t)channels + (size_t)c] = (short)(x[i] / (c + 1));
			fl[i * (size_t)channels + (size_t)c] = (float)(x[i] / (c + 1)) / 32768.0f;
		}
	if ((format & SF_FORMAT_SUBMASK) == SF_FORMAT_FLOAT)
		CHECK(sf_writef_float(sf, fl, (sf_count_t)n) == (sf_count_t)n);
	else
		CHECK(sf_writef_short(sf, frame, (sf_count_t)n) == (sf_count_t)n);
	CHECK(sf_close(sf) == 0);
	struct mem m = { .len = (size_t)lseek(fileno(f), 0, SEEK_END) };
	m.p = malloc(m.len);
	CHECK(m.p != NULL && pread(fileno(f), m.p, m.len, 0) == (ssize_t)m.len);
	fclose(f);
	free(frame);
	free(fl);
	return m;
}

static float *decode(const struct mem *m, uint32_t channel, uint32_t rate, size_t *n,
		     struct audio_file_info *info)
{
	float *x;
	char err[256];
	int rc = audio_file_decode(m->p, m->len, channel, rate, 1u << 24, &x, n, info, err,
				   sizeof(err));
	CHECKF(rc == 0, "%s", err);
	return x;
}

/* Lossless at the target rate: the integers exactly. */
static void exact(int format, const char *name, int channels, uint32_t channel)
{
	struct mem m = encode(format, 16000, channels, speech, N16);
	struct audio_file_info info;
	size_t n;
	float *x = decode(&m, channel, 16000, &n, &info);
	CHECKF(n == N16 && info.rate == 16000 && info.channels == (uint32_t)channels,
	       "%s: %zu samples, %u Hz, %u channels", name, n, info.rate, info.channels);
	for (size_t i = 0; i < n; i++)
		CHECKF(x[i] == (float)(speech[i] / (int)(channel + 1)),
		       "%s sample %zu: %g, expected %d", name, i, x[i],
		       speech[i] / (int)(channel + 1));
	printf("%-28s %s: %zu samples exact\n", name, info.format, n);
	free(x);
	free(m.p);
}

static double rms_diff(const float *a, const float *b, size_t n, size_t skip)
{
	double d = 0.0, e = 0.0;
	for (size_t i = skip; i < n - skip; i++) {
		d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		e += (double)b[i] * b[i];
	}
	return sqrt(d / e);
}

static void expect_error(const void *buf, size_t len, uint32_t channel, uint64_t max, int code,
			 const char *want)
{
	float *x = (float *)1;
	size_t n = 1;
	char err[256] = "";
	int rc = audio_file_decode(buf, len, channel, 16000, max, &x, &n, NULL, err, sizeof(err));
	CHECKF(rc == code, "rc %d, expected %d for '%s' (%s)", rc, code, want, err);
	CHECKF(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
	CHECK(x == NULL && n == 0);
	printf("refused: %s\n", err);
}

int main(void)
{
	make_signal();
	exact(SF_FORMAT_WAV | SF_FORMAT_PCM_16, "wav pcm16", 1, 0);
	exact(SF_FORMAT_WAV | SF_FORMAT_PCM_24, "wav pcm24", 1, 0);
	exact(SF_FORMAT_WAV | SF_FORMAT_PCM_32, "wav pcm32", 1, 0);
	exact(SF_FORMAT_WAV | SF_FORMAT_FLOAT, "wav float", 1, 0);
	exact(SF_FORMAT_WAVEX | SF_FORMAT_PCM_16, "wav extensible", 1, 0);
	exact(SF_FORMAT_RF64 | SF_FORMAT_PCM_16, "rf64", 1, 0);
	exact(SF_FORMAT_FLAC | SF_FORMAT_PCM_16, "flac", 1, 0);
	exact(SF_FORMAT_AIFF | SF_FORMAT_PCM_16, "aiff", 1, 0);
	exact(SF_FORMAT_WAV | SF_FORMAT_PCM_16, "wav stereo, channel 1", 2, 0);
	exact(SF_FORMAT_FLAC | SF_FORMAT_PCM_16, "flac stereo, channel 2", 2, 1);

	/* The same speech at 44.1 kHz (made by the same resampler from 16 kHz,
	 * so that the two files hold one signal), stereo FLAC: back at 16 kHz
	 * it matches the original but for what lies above the resampler's pass
	 * band (91 % of 8 kHz, removed on each of the two conversions: the
	 * noise above 7.3 kHz, about 1 % of the signal's rms). */
	float *f16 = malloc(N16 * sizeof(float)), *f44, *back;
	CHECK(f16 != NULL);
	for (size_t i = 0; i < N16; i++)
		f16[i] = speech[i];
	size_t n44, n;
	char err[256];
	CHECK(resample_float(f16, N16, 16000, 44100, &f44, &n44, err, sizeof(err)) == 0);
	CHECK(n44 == 22050);
	int16_t *s44 = malloc(n44 * sizeof(int16_t));
	CHECK(s44 != NULL);
	for (size_t i = 0; i < n44; i++)
		s44[i] = (int16_t)lrintf(f44[i]);
	struct mem m = encode(SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 44100, 2, s44, n44);
	struct audio_file_info info;
	back = decode(&m, 0, 16000, &n, &info);
	CHECK(n == N16 && info.rate == 44100 && info.channels == 2);
	double d = rms_diff(back, f16, N16, 64);
	printf("flac 44.1 kHz stereo -> 16 kHz: relative rms difference %.2e\n", d);
	CHECKF(d < 2e-2, "44.1 kHz FLAC differs from the 16 kHz original by %g (rms, relative)", d);
	free(back);
	free(m.p);

	/* Resampling keeps a tone's frequency: zero crossings of 1 kHz. */
	float *tone = sig_tone(44100, 1000.0, 44100.0, 10000.0), *t16;
	CHECK(resample_float(tone, 44100, 44100, 16000, &t16, &n, err, sizeof(err)) == 0);
	CHECK(n == 16000);
	int cross = 0;
	double peak = 0;
	for (size_t i = 100; i < n - 100; i++) {
		cross += (t16[i - 1] < 0) != (t16[i] < 0);
		peak = fmax(peak, fabs(t16[i]));
	}
	printf("1 kHz tone 44.1 -> 16 kHz: %d zero crossings in %zu samples, peak %.1f\n", cross,
	       n - 200, peak);
	CHECKF(abs(cross - 2 * 1000 * (int)(n - 200) / 16000) <= 2, "%d crossings", cross);
	CHECKF(fabs(peak - 10000.0) < 100.0, "peak %g", peak);
	free(tone);
	free(t16);

	/* OGG/Vorbis is lossy: close, not equal. */
	m = encode(SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1, speech, N16);
	back = decode(&m, 0, 16000, &n, &info);
	CHECK(n == N16);
	d = rms_diff(back, f16, N16, 0);
	printf("ogg vorbis: relative rms difference %.2e\n", d);
	CHECKF(d < 0.2, "vorbis differs by %g", d);
	free(back);
	free(m.p);

	/* Damage. */
	m = encode(SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, speech, N16);
	expect_error(m.p, m.len - 1000, 0, 1u << 24, FEEDER_EFORMAT,
		     "truncated: the data chunk declares 16000 bytes, 15000 are present");
	expect_error(m.p, m.len, 1, 1u << 24, FEEDER_EFORMAT, "1 channel, channel 2 asked");
	expect_error(m.p, m.len, 0, 1000, FEEDER_EQUOTA, "over the limit of 1000");
	expect_error("hello, this is text, not audio", 30, 0, 1u << 24, FEEDER_EFORMAT,
		     "not an audio file libsndfile reads");
	expect_error(m.p, 20, 0, 1u << 24, FEEDER_EFORMAT,
		     "chunk 'fmt ' at byte 12 declares 16 bytes");
	/* A LIST chunk claiming 4 GB in a small file made libsndfile 1.2.0's
	 * parser loop for minutes (fuzz_audio): refused by its bounds first. */
	uint8_t list[64];
	memcpy(list, m.p, 36);
	memcpy(list + 36, "LIST\x05\0\xff\xff", 8);
	memset(list + 44, 0xff, sizeof(list) - 44);
	expect_error(list, sizeof(list), 0, 1u << 24, FEEDER_EFORMAT,
		     "chunk 'LIST' at byte 36 declares 4294901765 bytes, 20 remain (damaged)");
	free(m.p);
	m = encode(SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, speech, N16);
	expect_error(m.p, m.len / 2, 0, 1u << 24, FEEDER_EFORMAT, "FLAC");
	free(m.p);

	/* The sniff: the containers by their first bytes, text refused. */
	CHECK(audio_file_sniff("RIFF\0\0\0\0WAVE", 12) &&
	      audio_file_sniff("fLaC\0\0\0\0\0\0\0\0", 12) &&
	      audio_file_sniff("OggS\0\0\0\0\0\0\0\0", 12) &&
	      audio_file_sniff("FORM\0\0\0\0AIFF", 12));
	CHECK(!audio_file_sniff("RIFF\0\0\0\0AVI ", 12) && !audio_file_sniff("hello world!", 12) &&
	      !audio_file_sniff("RIFF", 4));
	free(f16);
	free(f44);
	free(s44);
	printf("audio_file: ok\n");
	return 0;
}
