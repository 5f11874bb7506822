/* test_pack_audio — `packer pack audio` end to end: the test writes a small
 * speaker-per-folder tree of WAV files (two speakers, one utterance with a
 * LIST chunk, one in a sub-folder, plus a stereo file, a 44.1 kHz file and
 * a too-short one), packs it, and
 * reads the dataset back with dsstore: header (kind, dim, dtype, counts),
 * labels = sorted folder names, names = "speaker/file.wav", CRCs, and every
 * stored matrix equal, bit for bit, to fbank_compute on the same file's
 * samples (converted to f16 with round-to-nearest-even, or kept f32). It
 * also checks the warnings naming the skipped files, that --strict fails
 * without leaving DEST behind, and that --threads does not change a byte. */
#include "check.h"

#include "bytes.h"
#include "dsstore.h"
#include "fbank.h"
#include "half.h"
#include "resample.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[256], packer[1024], log_text[8192];

static void write_file(const char *rel, const void *data, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "wb");
	CHECKF(f && fwrite(data, 1, len, f) == len && fclose(f) == 0, "%s: %s", path,
	       strerror(errno));
}

/* A PCM 16-bit WAV of n frames; with list, a LIST chunk (an INFO entry of
 * odd length, padded) precedes "data". Channel 0 is x, channel c > 0 is
 * x / (c + 1), so that the channel kept can be told from the others. */
static size_t make_wav(uint8_t *buf, const int16_t *x, size_t n, uint32_t rate, uint16_t ch,
		       int list)
{
	memcpy(buf, "RIFF", 4);
	memcpy(buf + 8, "WAVEfmt ", 8);
	bytes_put_le32(buf + 16, 16);
	bytes_put_le16(buf + 20, 1);
	bytes_put_le16(buf + 22, ch);
	bytes_put_le32(buf + 24, rate);
	bytes_put_le32(buf + 28, rate * ch * 2);
	bytes_put_le16(buf + 32, (uint16_t)(ch * 2));
	bytes_put_le16(buf + 34, 16);
	size_t off = 36;
	if (list) {
		memcpy(buf + off, "LIST\x10\0\0\0INFOIART\x03\0\0\0ab\0\0", 24);
		off += 24;
	}
	memcpy(buf + off, "data", 4);
	bytes_put_le32(buf + off + 4, (uint32_t)(n * ch * 2));
	off += 8;
	for (size_t i = 0; i < n; i++)
		for (uint16_t c = 0; c < ch; c++)
			bytes_put_le16(buf + off + 2 * (i * ch + c),
				       (uint16_t)(int16_t)(x[i] / (c + 1)));
	off += n * ch * 2;
	bytes_put_le32(buf + 4, (uint32_t)off - 8);
	return off;
}

/* The utterances that must be packed, in their expected dataset order: a
 * LIST chunk, a sub-folder, a stereo file (channel 1 kept) and a 44.1 kHz
 * one (resampled to 16 kHz). */
#define NUTT 6
static const struct utt {
	const char *name;
	uint32_t label, rate;
	uint16_t ch;
	int list;
} utts[NUTT] = {
	{ "alice/stereo.wav", 0, 16000, 2, 0 }, { "alice/u1.wav", 0, 16000, 1, 0 },
	{ "alice/u2.wav", 0, 16000, 1, 1 },     { "bob/b1.wav", 1, 16000, 1, 0 },
	{ "bob/cd.wav", 1, 44100, 1, 0 },       { "bob/v1/b2.wav", 1, 16000, 1, 0 },
};
static int16_t *utt_x[NUTT];
static size_t utt_n[NUTT];

static void make_tree(void)
{
	char path[600];
	snprintf(path, sizeof(path), "cd '%s' && mkdir -p src/alice src/bob/v1 src/zed_empty",
		 root);
	CHECK(system(path) == 0);
	uint32_t s = 7;
	for (int u = 0; u < NUTT; u++) {
		size_t n = (8000 + 4000 * (size_t)u) * utts[u].rate / 16000;
		double f0 = 120.0 + 60.0 * u;
		int16_t *x = utt_x[u] = malloc(n * sizeof(int16_t));
		CHECK(x != NULL);
		utt_n[u] = n;
		for (size_t i = 0; i < n; i++) {
			s = s * 1664525u + 1013904223u;
			/* A voiced part, a silent gap (VAD has something to drop) and
			 * noise, so that every mel bin carries energy. */
			double v =
				(i > n / 2 && i < n / 2 + 3200)
					? 0.0
					: 3000.0 * sin(2.0 * M_PI * f0 * (double)i / utts[u].rate) +
						  (double)((int)(s >> 20) % 801 - 400);
			x[i] = (int16_t)lrint(v);
		}
		uint8_t *bytes = malloc(44 + 24 + 2 * n * utts[u].ch);
		CHECK(bytes != NULL);
		size_t len = make_wav(bytes, x, n, utts[u].rate, utts[u].ch, utts[u].list);
		snprintf(path, sizeof(path), "src/%s", utts[u].name);
		write_file(path, bytes, len);
		free(bytes);
	}
	uint8_t buf[44 + 24 + 4 * 4410];
	write_file("src/bob/tiny.WAV", buf, make_wav(buf, utt_x[0], 100, 16000, 1, 0));
	size_t len = make_wav(buf, utt_x[0], 2000, 16000, 1, 0);
	write_file("src/bob/cut.wav", buf, len - 1000); /* truncated */
	write_file("src/bob/readme.txt", "not audio\n", 10);
	write_file("src/bob/fake.wav", "not audio at all\n", 17);
	write_file("src/list.txt", "not a speaker\n", 14);
	write_file("src/lost.wav", buf, len);
}

/* Run `packer pack audio OPTIONS... src DEST` (the arguments after dest,
 * up to a NULL) in root; it must exit with want. Returns its stderr. */
static const char *pack(int want, const char *dest, ...)
{
	char cmd[2048], log[512];
	int n = snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' pack audio", root, packer);
	va_list ap;
	va_start(ap, dest);
	for (const char *arg; (arg = va_arg(ap, const char *)) != NULL;)
		n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " %s", arg);
	va_end(ap);
	snprintf(cmd + n, sizeof(cmd) - (size_t)n, " src %s 2>stderr", dest);
	int st = system(cmd);
	snprintf(log, sizeof(log), "%s/stderr", root);
	FILE *f = fopen(log, "r");
	CHECK(f != NULL);
	log_text[fread(log_text, 1, sizeof(log_text) - 1, f)] = 0;
	fclose(f);
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == want, "%s: status %#x, not exit %d: %s", cmd, st,
	       want, log_text);
	return log_text;
}

/* The last pack's stderr says text. */
static void logged(const char *text)
{
	CHECKF(strstr(log_text, text), "stderr lacks '%s': %s", text, log_text);
}

/* root/dest opened, with a transaction. */
static struct dsstore *open_dest(const char *dest, struct dsstore_txn **t)
{
	char path[512], err[512];
	snprintf(path, sizeof(path), "%s/%s", root, dest);
	struct dsstore *ds;
	CHECKF(dsstore_open(path, &ds, err, sizeof(err)) == 0, "%s", err);
	CHECKF(dsstore_txn_begin(ds, t, err, sizeof(err)) == 0, "%s", err);
	return ds;
}

/* Utterance i as packer must read it: channel `channel` of the stereo file
 * (0 of the others), resampled with the same resampler where the rates
 * differ; *n samples. */
static float *utt_samples(int i, int channel, uint32_t rate, size_t *n)
{
	char err[256];
	float *x = malloc(utt_n[i] * sizeof(float)), *y;
	CHECK(x != NULL);
	for (size_t k = 0; k < utt_n[i]; k++)
		x[k] = (float)(utts[i].ch > 1 ? utt_x[i][k] / (channel + 1) : utt_x[i][k]);
	*n = utt_n[i];
	if (utts[i].rate == rate)
		return x;
	CHECKF(resample_float(x, utt_n[i], utts[i].rate, rate, &y, n, err, sizeof(err)) == 0, "%s",
	       err);
	free(x);
	return y;
}

/* root/dest holds features of every utterance: each matrix the same as a
 * fresh extraction with fo of the same samples. */
static void check_dataset(const char *dest, const struct fbank_opts *fo, uint32_t dtype)
{
	char err[512];
	struct dsstore_txn *t;
	struct dsstore *ds = open_dest(dest, &t);
	const struct dsformat_header *h = dsstore_header(ds);
	struct fbank *fb;
	CHECKF(fbank_create(fo, &fb, err, sizeof(err)) == 0, "%s", err);
	CHECK(h->kind == DSFORMAT_KIND_FEATURES && h->classes == 2 &&
	      h->feat_dim == fbank_dim(fb) && h->dtype == dtype);
	CHECKF(h->samples == NUTT, "%llu samples", (unsigned long long)h->samples);
	const char *name;
	size_t len;
	CHECK(dsstore_get_label(t, 0, &name, &len) == 0 && len == 5 && !memcmp(name, "alice", 5));
	CHECK(dsstore_get_label(t, 1, &name, &len) == 0 && len == 3 && !memcmp(name, "bob", 3));
	CHECK(dsstore_get_label(t, 2, &name, &len) == -ENOENT);
	for (int i = 0; i < NUTT; i++) {
		struct dsformat_sample s;
		const uint8_t *payload;
		CHECKF(dsstore_get_sample(t, i, &s, &payload, err, sizeof(err)) == 0, "%s", err);
		CHECKF(dsformat_sample_verify(&s, payload, err, sizeof(err)) == 0, "%s", err);
		CHECK(dsstore_get_name(t, i, &name, &len) == 0);
		CHECKF(len == strlen(utts[i].name) && !memcmp(name, utts[i].name, len),
		       "sample %d is '%.*s', expected %s", i, (int)len, name, utts[i].name);
		CHECK(s.label == utts[i].label);
		float *m;
		size_t n;
		uint32_t frames, dim;
		float *x = utt_samples(i, 0, 16000, &n);
		CHECK(fbank_compute(fb, x, n, &m, &frames, &dim, err, sizeof(err)) == 0);
		CHECK(frames > 0);
		if (fo->vad)
			CHECKF(frames < fbank_frames(n), "VAD kept all %u frames of %s", frames,
			       utts[i].name);
		CHECKF(s.frames == frames && s.dim == dim && s.dtype == dtype,
		       "%s: stored %u x %u dtype %u, computed %u x %u", utts[i].name, s.frames,
		       s.dim, s.dtype, frames, dim);
		CHECK(s.payload_len == (size_t)frames * dim * dsformat_dtype_size(dtype));
		for (size_t k = 0; k < (size_t)frames * dim; k++) {
			if (dtype == DSFORMAT_DTYPE_F16) {
				CHECKF(bytes_le16(payload + 2 * k) == half_from_float(m[k]),
				       "%s element %zu: %04x, expected %04x (%g)", utts[i].name, k,
				       bytes_le16(payload + 2 * k), half_from_float(m[k]), m[k]);
			} else {
				uint32_t bits;
				memcpy(&bits, &m[k], 4);
				CHECKF(bytes_le32(payload + 4 * k) == bits,
				       "%s element %zu differs", utts[i].name, k);
			}
		}
		free(x);
		free(m);
	}
	dsstore_txn_end(t);
	dsstore_close(ds);
	fbank_destroy(fb);
}

/* root/dest, a wave dataset at rate, holds the utterances that have
 * channel `channel` (0: all, and tiny.WAV, too short for a frame of
 * features; 1: the stereo file alone), their samples rounded and clipped
 * to 16 bits as packer does. */
static void check_wave(const char *dest, uint32_t rate, int channel)
{
	char err[512];
	struct dsstore_txn *t;
	struct dsstore *ds = open_dest(dest, &t);
	const struct dsformat_header *h = dsstore_header(ds);
	CHECK(h->kind == DSFORMAT_KIND_WAVE && h->rate == rate && h->feat_dim == 1 &&
	      h->dtype == DSFORMAT_DTYPE_S16 && h->classes == 2);
	CHECKF(h->samples == (channel ? 1 : NUTT + 1), "%llu samples",
	       (unsigned long long)h->samples);
	for (uint64_t j = 0, i = 0; j < h->samples; j++, i++) {
		struct dsformat_sample s;
		const uint8_t *payload;
		const char *name;
		size_t len, n;
		CHECKF(dsstore_get_sample(t, j, &s, &payload, err, sizeof(err)) == 0, "%s", err);
		CHECKF(dsformat_sample_check(h, &s, err, sizeof(err)) == 0, "%s", err);
		CHECK(dsstore_get_name(t, j, &name, &len) == 0);
		if (len == 12 && !memcmp(name, "bob/tiny.WAV", 12)) {
			CHECK(s.frames == 100 * rate / 16000);
			i--;
			continue;
		}
		while (i < NUTT && utts[i].ch <= channel)
			i++;
		CHECK(i < NUTT);
		CHECKF(len == strlen(utts[i].name) && !memcmp(name, utts[i].name, len),
		       "record %llu is %.*s, expected %s", (unsigned long long)j, (int)len,
		       (const char *)name, utts[i].name);
		CHECK(s.label == utts[i].label);
		float *x = utt_samples((int)i, channel, rate, &n);
		CHECKF(s.frames == n && s.dim == 1 && s.payload_len == 2 * n,
		       "%s: %u samples stored, %zu expected", utts[i].name, s.frames, n);
		for (size_t k = 0; k < n; k++) {
			float v = rintf(x[k]);
			v = v > 32767.0f ? 32767.0f : v < -32768.0f ? -32768.0f : v;
			CHECKF((int16_t)bytes_le16(payload + 2 * k) == (int16_t)v,
			       "%s sample %zu: %d, expected %g", utts[i].name, k,
			       (int16_t)bytes_le16(payload + 2 * k), v);
		}
		free(x);
	}
	dsstore_txn_end(t);
	dsstore_close(ds);
}

int main(void)
{
	const char *build = getenv("FEEDER_BUILD");
	if (!build)
		SKIP("FEEDER_BUILD is not set (run under meson test)");
	snprintf(packer, sizeof(packer), "%s/packer/packer", build);
	if (access(packer, X_OK) != 0)
		SKIP("%s is not built", packer);
	const char *tmp = getenv("TMPDIR");
	char suffix[7] = { 0 }; /* mkdtemp replaces the six trailing 'X's */
	memset(suffix, 'X', 6);
	snprintf(root, sizeof(root), "%s/feeder-pack-audio-%s", tmp && *tmp ? tmp : "/tmp", suffix);
	CHECK(mkdtemp(root) != NULL);
	make_tree();

	/* Defaults: 40-bin fbank, f16. */
	pack(0, "fb", "--threads", "1", NULL);
	logged("src/bob/cut.wav: truncated: the data chunk declares 4000 bytes, 3000 are present, "
	       "skipped");
	logged("src/bob/fake.wav: not an audio file");
	logged("src/bob/tiny.WAV: 100 samples");
	logged("src/zed_empty: no audio files");
	logged("src/lost.wav: not in a speaker folder, ignored");
	CHECK(strstr(log_text, "readme") == NULL && strstr(log_text, "list.txt") == NULL);
	struct fbank_opts fo;
	fbank_opts_default(&fo, FBANK_KIND_FBANK);
	check_dataset("fb", &fo, DSFORMAT_DTYPE_F16);

	/* The same with 3 threads: the same bytes. */
	pack(0, "fb3", "--threads", "3", NULL);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "cmp -s '%s/fb/data.mdb' '%s/fb3/data.mdb'", root, root);
	CHECKF(system(cmd) == 0, "%s: the files differ", cmd);

	/* MFCC with VAD, f32, 24 bins and 20 cepstra. */
	pack(0, "mfcc", "--features", "mfcc", "--bins", "24", "--ceps", "20", "--vad", "--dtype",
	     "f32", "--threads", "2", NULL);
	fbank_opts_default(&fo, FBANK_KIND_MFCC);
	fo.bins = 24;
	fo.ceps = 20;
	fo.vad = 1;
	check_dataset("mfcc", &fo, DSFORMAT_DTYPE_F32);

	/* --strict: the truncated file is fatal and no dataset appears. */
	pack(2, "strict", "--strict", NULL);
	logged("cut.wav: truncated");
	snprintf(cmd, sizeof(cmd), "%s/strict", root);
	CHECK(access(cmd, F_OK) != 0);

	/* Waveforms at 16 kHz: the integers themselves where nothing is
	 * resampled. */
	pack(0, "wave", "--store", "wave", NULL);
	check_wave("wave", 16000, 0);
	/* At 8 kHz, the second channel of the stereo file: mono files have
	 * no channel 2 and are skipped, each named. */
	pack(0, "wave8", "--store", "wave", "--rate", "8000", "--channel", "2", NULL);
	logged("src/alice/u1.wav: 1 channel, channel 2 asked, skipped");
	check_wave("wave8", 8000, 1);
	pack(0, "wave8", "--store", "wave", "--rate", "8000", "--force", NULL);
	check_wave("wave8", 8000, 0);
	/* Bad options are usage errors that name the option. */
	pack(2, "x", "--features", "plp", NULL);
	logged("plp");
	pack(2, "x", "--ceps", "13", NULL);
	logged("--ceps");
	pack(2, "x", "--rate", "8000", NULL);
	logged("--rate 8000");
	pack(2, "x", "--store", "wave", "--bins", "20", NULL);
	logged("--bins applies to --store features");
	pack(2, "x", "--channel", "0", NULL);
	logged("--channel '0'");

	for (int u = 0; u < NUTT; u++)
		free(utt_x[u]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
	return 0;
}
