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
#include "crc32c.h"
#include "dsstore.h"
#include "fbank.h"
#include "half.h"
#include "wav.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[256], packer[1024];

static void write_file(const char *rel, const void *data, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECKF(fd >= 0, "%s: %s", path, strerror(errno));
	CHECK(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

/* A PCM 16-bit WAV of n frames; with list, a LIST chunk precedes "data". */
static size_t make_wav(uint8_t *buf, const int16_t *x, size_t n, uint32_t rate, uint16_t ch,
		       int list)
{
	size_t off = 12;
	memcpy(buf, "RIFF", 4);
	memcpy(buf + 8, "WAVEfmt ", 8);
	bytes_put_le32(buf + 16, 16);
	bytes_put_le16(buf + 20, 1);
	bytes_put_le16(buf + 22, ch);
	bytes_put_le32(buf + 24, rate);
	bytes_put_le32(buf + 28, rate * ch * 2);
	bytes_put_le16(buf + 32, (uint16_t)(ch * 2));
	bytes_put_le16(buf + 34, 16);
	off = 36;
	if (list) {
		memcpy(buf + off, "LIST\x0b\0\0\0INFOIART\0\0\0\0", 20); /* 11 bytes + pad */
		off += 20;
	}
	memcpy(buf + off, "data", 4);
	bytes_put_le32(buf + off + 4, (uint32_t)(n * ch * 2));
	off += 8;
	for (size_t i = 0; i < n * ch; i++)
		bytes_put_le16(buf + off + 2 * i, (uint16_t)x[i % n]);
	off += n * ch * 2;
	bytes_put_le32(buf + 4, (uint32_t)off - 8);
	return off;
}

/* The utterances that must be packed, in their expected dataset order. */
#define NUTT 4
static const char *utt_names[NUTT] = {"alice/u1.wav", "alice/u2.wav", "bob/b1.wav", "bob/v1/b2.wav"};
static const uint32_t utt_labels[NUTT] = {0, 0, 1, 1};
static uint8_t *utt_bytes[NUTT];
static size_t utt_len[NUTT];

static void make_tree(void)
{
	char path[512];
	const char *dirs[] = {"src", "src/alice", "src/bob", "src/bob/v1", "src/zed_empty"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		CHECK(mkdir(path, 0755) == 0);
	}
	static int16_t x[24000];
	uint32_t s = 7;
	for (int u = 0; u < NUTT; u++) {
		size_t n = 8000 + 4000 * (size_t)u;
		double f0 = 120.0 + 60.0 * u;
		for (size_t i = 0; i < n; i++) {
			s = s * 1664525u + 1013904223u;
			/* A voiced part, a silent gap (VAD has something to drop) and
			 * noise, so that every mel bin carries energy. */
			double v = (i > n / 2 && i < n / 2 + 3200) ? 0.0
				: 3000.0 * sin(2.0 * M_PI * f0 * (double)i / 16000.0) +
					  (double)((int)(s >> 20) % 801 - 400);
			x[i] = (int16_t)lrint(v);
		}
		utt_bytes[u] = malloc(44 + 20 + 2 * n);
		CHECK(utt_bytes[u] != NULL);
		utt_len[u] = make_wav(utt_bytes[u], x, n, 16000, 1, u == 1);
		snprintf(path, sizeof(path), "src/%s", utt_names[u]);
		write_file(path, utt_bytes[u], utt_len[u]);
	}
	uint8_t buf[44 + 20 + 4 * 4410];
	write_file("src/alice/stereo.wav", buf, make_wav(buf, x, 2000, 16000, 2, 0));
	write_file("src/bob/cd.wav", buf, make_wav(buf, x, 4410, 44100, 1, 0));
	write_file("src/bob/tiny.WAV", buf, make_wav(buf, x, 100, 16000, 1, 0));
	write_file("src/bob/readme.txt", "not audio\n", 10);
	write_file("src/list.txt", "not a speaker\n", 14);
	write_file("src/lost.wav", buf, make_wav(buf, x, 1000, 16000, 1, 0));
}

/* Run packer with args; its stderr goes to root/stderr. Returns the exit
 * status. */
static int run_packer(const char *const *args)
{
	char *argv[32];
	int n = 0;
	argv[n++] = packer;
	for (; *args && n < 31; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	char log[512];
	snprintf(log, sizeof(log), "%s/stderr", root);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 2) < 0 || chdir(root) != 0)
			_exit(127);
		execv(packer, argv);
		_exit(127);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECKF(WIFEXITED(st), "packer died of signal %d", WTERMSIG(st));
	return WEXITSTATUS(st);
}

static char *read_stderr(void)
{
	static char text[8192];
	char path[512];
	snprintf(path, sizeof(path), "%s/stderr", root);
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	ssize_t got = read(fd, text, sizeof(text) - 1);
	close(fd);
	text[got > 0 ? got : 0] = 0;
	return text;
}

/* Open root/dest and compare everything with a fresh extraction. */
static void check_dataset(const char *dest, const struct fbank_opts *fo, uint32_t dtype)
{
	char path[512], err[512];
	snprintf(path, sizeof(path), "%s/%s", root, dest);
	struct dsstore *ds;
	CHECKF(dsstore_open(path, &ds, err, sizeof(err)) == 0, "%s", err);
	const struct dsformat_header *h = dsstore_header(ds);
	struct fbank *fb;
	CHECKF(fbank_create(fo, &fb, err, sizeof(err)) == 0, "%s", err);
	CHECK(h->kind == DSFORMAT_KIND_FEATURES);
	CHECKF(h->samples == NUTT, "%llu samples", (unsigned long long)h->samples);
	CHECK(h->classes == 2);
	CHECK(h->feat_dim == fbank_dim(fb));
	CHECK(h->dtype == dtype);
	struct dsstore_txn *t;
	CHECKF(dsstore_txn_begin(ds, &t, err, sizeof(err)) == 0, "%s", err);
	const char *name;
	size_t len;
	CHECK(dsstore_get_label(t, 0, &name, &len) == 0 && len == 5 && !memcmp(name, "alice", 5));
	CHECK(dsstore_get_label(t, 1, &name, &len) == 0 && len == 3 && !memcmp(name, "bob", 3));
	CHECK(dsstore_get_label(t, 2, &name, &len) == -ENOENT);
	for (uint64_t i = 0; i < NUTT; i++) {
		struct dsformat_sample s;
		const uint8_t *payload;
		CHECKF(dsstore_get_sample(t, i, &s, &payload, err, sizeof(err)) == 0, "%s", err);
		CHECKF(dsformat_sample_verify(&s, payload, err, sizeof(err)) == 0, "%s", err);
		CHECK(dsstore_get_name(t, i, &name, &len) == 0);
		CHECKF(len == strlen(utt_names[i]) && !memcmp(name, utt_names[i], len),
		       "sample %llu is '%.*s', expected %s", (unsigned long long)i, (int)len, name,
		       utt_names[i]);
		CHECK(s.label == utt_labels[i]);
		float *x, *m;
		size_t n;
		uint32_t frames, dim;
		CHECKF(wav_decode(utt_bytes[i], utt_len[i], &x, &n, err, sizeof(err)) == 0, "%s", err);
		CHECK(fbank_compute(fb, x, n, &m, &frames, &dim, err, sizeof(err)) == 0);
		CHECK(frames > 0);
		if (fo->vad)
			CHECKF(frames < fbank_frames(n), "VAD kept all %u frames of %s", frames,
			       utt_names[i]);
		CHECKF(s.frames == frames && s.dim == dim && s.dtype == dtype,
		       "%s: stored %u x %u dtype %u, computed %u x %u", utt_names[i], s.frames, s.dim,
		       s.dtype, frames, dim);
		CHECK(s.payload_len == (size_t)frames * dim * dsformat_dtype_size(dtype));
		for (size_t k = 0; k < (size_t)frames * dim; k++) {
			if (dtype == DSFORMAT_DTYPE_F16) {
				CHECKF(bytes_le16(payload + 2 * k) == half_from_float(m[k]),
				       "%s element %zu: %04x, expected %04x (%g)", utt_names[i], k,
				       bytes_le16(payload + 2 * k), half_from_float(m[k]), m[k]);
			} else {
				uint32_t bits;
				memcpy(&bits, &m[k], 4);
				CHECKF(bytes_le32(payload + 4 * k) == bits, "%s element %zu differs",
				       utt_names[i], k);
			}
		}
		free(x);
		free(m);
	}
	dsstore_txn_end(t);
	dsstore_close(ds);
	fbank_destroy(fb);
}

static int same_file(const char *a, const char *b)
{
	char pa[512], pb[512];
	snprintf(pa, sizeof(pa), "%s/%s/data.mdb", root, a);
	snprintf(pb, sizeof(pb), "%s/%s/data.mdb", root, b);
	FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
	CHECK(fa && fb);
	int same = 1, ca, cb;
	do {
		ca = fgetc(fa);
		cb = fgetc(fb);
		if (ca != cb)
			same = 0;
	} while (same && ca != EOF);
	fclose(fa);
	fclose(fb);
	return same;
}

int main(void)
{
	const char *build = getenv("FEEDER_BUILD");
	if (!build)
		SKIP("FEEDER_BUILD is not set (run under meson test)");
	snprintf(packer, sizeof(packer), "%s/tools/packer", build);
	if (access(packer, X_OK) != 0)
		SKIP("%s is not built", packer);
	const char *tmp = getenv("TMPDIR");
	char suffix[7] = {0}; /* mkdtemp replaces the six trailing 'X's */
	memset(suffix, 'X', 6);
	snprintf(root, sizeof(root), "%s/feeder-pack-audio-%s", tmp && *tmp ? tmp : "/tmp", suffix);
	CHECK(mkdtemp(root) != NULL);
	make_tree();

	/* Defaults: 40-bin fbank, f16. */
	const char *a1[] = {"pack", "audio", "--threads", "1", "src", "fb", NULL};
	int rc = run_packer(a1);
	char *log = read_stderr();
	CHECKF(rc == 0, "packer exited %d: %s", rc, log);
	CHECKF(strstr(log, "src/alice/stereo.wav: 2 channels, expected mono, skipped"), "%s", log);
	CHECKF(strstr(log, "src/bob/cd.wav: sample rate 44100 Hz, expected 16000, skipped"), "%s", log);
	CHECKF(strstr(log, "src/bob/tiny.WAV: 100 samples"), "%s", log);
	CHECKF(strstr(log, "src/zed_empty: no .wav files"), "%s", log);
	CHECKF(strstr(log, "src/lost.wav: not in a speaker folder, ignored"), "%s", log);
	CHECK(strstr(log, "readme") == NULL && strstr(log, "list.txt") == NULL);
	struct fbank_opts fo;
	fbank_opts_default(&fo, FBANK_KIND_FBANK);
	check_dataset("fb", &fo, DSFORMAT_DTYPE_F16);

	/* The same with 3 threads: the same bytes. */
	const char *a2[] = {"pack", "audio", "--threads", "3", "src", "fb3", NULL};
	CHECK(run_packer(a2) == 0);
	CHECK(same_file("fb", "fb3"));

	/* MFCC with VAD, f32, 24 bins and 20 cepstra. */
	const char *a3[] = {"pack", "audio", "--features", "mfcc", "--bins", "24", "--ceps", "20",
			    "--vad", "--dtype", "f32", "--threads", "2", "src", "mfcc", NULL};
	rc = run_packer(a3);
	CHECKF(rc == 0, "packer exited %d: %s", rc, read_stderr());
	fbank_opts_default(&fo, FBANK_KIND_MFCC);
	fo.bins = 24;
	fo.ceps = 20;
	fo.vad = 1;
	check_dataset("mfcc", &fo, DSFORMAT_DTYPE_F32);

	/* --strict: the stereo file is fatal and no dataset appears. */
	const char *a4[] = {"pack", "audio", "--strict", "src", "strict", NULL};
	rc = run_packer(a4);
	log = read_stderr();
	CHECKF(rc != 0, "--strict packed anyway: %s", log);
	CHECKF(strstr(log, "stereo.wav: 2 channels, expected mono"), "%s", log);
	char path[512];
	snprintf(path, sizeof(path), "%s/strict", root);
	CHECK(access(path, F_OK) != 0);

	/* Bad options are usage errors that name the option. */
	const char *a5[] = {"pack", "audio", "--features", "plp", "src", "x", NULL};
	CHECK(run_packer(a5) == 2 && strstr(read_stderr(), "plp"));
	const char *a6[] = {"pack", "audio", "--ceps", "13", "src", "x", NULL};
	CHECK(run_packer(a6) == 2 && strstr(read_stderr(), "--ceps"));

	for (int u = 0; u < NUTT; u++)
		free(utt_bytes[u]);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
	return 0;
}
