/* gen_speech.c — gen-speech: write a synthetic multi-speaker speech corpus.
 *
 *   gen-speech SPEAKERS UTTS DIR [--seed S] [--min-dur SEC --max-dur SEC]
 *              [--threads N] [--kaldi KDIR]
 *
 * writes DIR/spk_NNN/utt_NNN.wav (16 kHz mono PCM 16-bit) for the x-vector
 * trainer's data path (gen-speech → features → packer → feederd → xvec), and
 * DIR/speakers.tsv with each speaker's drawn voice traits, for inspection
 * and tests. The voices and utterances come from speech_synth; every file is
 * a pure function of (seed, speaker, utterance), so the corpus is the same
 * whatever the thread count.
 *
 * --kaldi KDIR also writes a Kaldi data directory describing the same
 * utterances under the same audio, for Kaldi-style recipes and for tests of
 * readers of one: wav.scp, segments, utt2spk, spk2utt, utt2dur and
 * reco2dur. Utterance ids are speaker-prefixed (spk_003-utt_007) so that
 * sorting by utterance sorts by speaker, as Kaldi requires. To exercise
 * segments, the last min(4, UTTS / 2) utterances of each speaker are not
 * listed by their own files but as segments of one recording
 * (KDIR/wav/spk_NNN-rec.wav: each utterance after 0.3 s of silence, padded
 * with silence to a 10 ms boundary, so that the two-decimal times Kaldi
 * writes cut exactly the utterance and its padding). Since a data directory
 * with a segments file must list every utterance there, the others get a
 * segment over their whole file (ending on the last whole 10 ms). One
 * wav.scp entry, the first, is a pipe ("cat FILE |"), as Kaldi allows. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "detrand.h"
#include "gen_util.h"
#include "speech_synth.h"
#include "status.h"
#include "wav_write.h"

#define MAX_COUNT 1000 /* names keep three digits */
#define MAX_DUR 60.0
#define MIN_DUR 0.1
#define REC_MAX_UTTS 4                       /* utterances per recording, at most */
#define REC_GAP (SPEECH_SYNTH_RATE * 3 / 10) /* silence before each, samples */
#define CENTI (SPEECH_SYNTH_RATE / 100)      /* samples in 10 ms */

static const char usage[] =
	"usage: gen-speech SPEAKERS UTTS DIR [--seed S] [--min-dur SEC --max-dur SEC] "
	"[--threads N] [--kaldi KDIR]";

struct job {
	const char *dir;
	uint64_t seed;
	int speakers, utts;
	double min_dur, max_dur;
	size_t *samples; /* per utterance index: its length */
};

static uint64_t speaker_key(uint64_t seed, int spk)
{
	return detrand_key(seed, 1, (uint64_t)spk);
}

static uint64_t utterance_key(uint64_t seed, int spk, int utt)
{
	return detrand_key(seed, 2 + (uint64_t)spk, (uint64_t)utt);
}

/* Utterance index (speaker * utts + utt), on one of gen_run's threads. */
static int render_one(void *ctx, int index, char *err, size_t errlen)
{
	struct job *j = ctx;
	int spk = index / j->utts, utt = index % j->utts;
	struct speech_synth_speaker voice;
	uint64_t key = utterance_key(j->seed, spk, utt);
	struct detrand r;
	size_t lo = (size_t)(j->min_dur * SPEECH_SYNTH_RATE + 0.999999);
	size_t hi = (size_t)(j->max_dur * SPEECH_SYNTH_RATE);
	size_t n;
	int16_t *pcm;
	char path[4096];
	int rc;

	/* The duration has its own stream so that it does not shift the
	 * synthesizer's draws. */
	detrand_init(&r, detrand_mix(key ^ 0x6475726174696f6eull));
	n = (size_t)((j->min_dur + (j->max_dur - j->min_dur) * detrand_uniform(&r)) *
		     SPEECH_SYNTH_RATE);
	n = n < lo ? lo : n > hi ? hi : n;
	speech_synth_speaker(&voice, speaker_key(j->seed, spk));
	pcm = malloc(n * sizeof(*pcm));
	if (!pcm)
		return status_fail(err, errlen, -ENOMEM, "no memory for %zu samples", n);
	rc = speech_synth_utterance(&voice, key, pcm, n, err, errlen);
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/spk_%03d/utt_%03d.wav", j->dir, spk, utt);
		rc = wav_write_file(path, pcm, n, SPEECH_SYNTH_RATE, 1, err, errlen);
	}
	free(pcm);
	if (rc == 0)
		j->samples[index] = n;
	return rc;
}

static int write_traits(const struct job *j, char *err, size_t errlen)
{
	char path[4096], tmp[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/speakers.tsv", j->dir);
	int rc = gen_text_open(path, tmp, &f, err, errlen);
	if (rc < 0)
		return rc;
	fprintf(f, "speaker\tf0_hz\tf0_range_st\tjitter\tshimmer\tvtl_scale\tf1_dev\tf2_dev\t"
		   "f3_dev\tf4_dev\tbw_scale\ttilt\topen_quotient\trate\tbreathiness\n");
	for (int s = 0; s < j->speakers; s++) {
		struct speech_synth_speaker v;
		speech_synth_speaker(&v, speaker_key(j->seed, s));
		fprintf(f,
			"spk_%03d\t%.2f\t%.3f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.3f\t"
			"%.3f\t%.3f\t%.3f\t%.3f\n",
			s, v.f0_hz, v.f0_range_st, v.jitter, v.shimmer, v.vtl_scale,
			v.formant_dev[0], v.formant_dev[1], v.formant_dev[2], v.formant_dev[3],
			v.bw_scale, v.tilt, v.open_quotient, v.rate, v.breathiness);
	}
	return gen_text_commit(f, tmp, path, err, errlen);
}

/* The Kaldi data directory (--kaldi). */

/* Speaker recordings hold utterances [rec_first(utts), utts). */
static int rec_first(int utts)
{
	int k = utts / 2 < REC_MAX_UTTS ? utts / 2 : REC_MAX_UTTS;
	return utts - k;
}

static size_t round_centi(size_t n)
{
	return (n + CENTI - 1) / CENTI * CENTI;
}

/* Read back an utterance that render_one wrote: exactly n mono 16-bit
 * samples at SPEECH_SYNTH_RATE into out. The file must begin with the very
 * header wav_write gives such data, which is all the parsing it needs. */
static int read_utterance(const char *path, int16_t *out, size_t n, char *err, size_t errlen)
{
	uint8_t want[WAV_WRITE_HEADER_BYTES], got[WAV_WRITE_HEADER_BYTES], buf[8192];
	FILE *f;
	int rc;

	rc = wav_write_header(want, SPEECH_SYNTH_RATE, 1, 2 * (uint64_t)n, err, errlen);
	if (rc < 0)
		return rc;
	f = fopen(path, "rb");
	if (!f)
		return status_fail(err, errlen, -errno, "cannot open %s: %s", path,
				   strerror(errno));
	if (fread(got, 1, sizeof(got), f) != sizeof(got) || memcmp(got, want, sizeof(got)) != 0) {
		fclose(f);
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "%s changed under gen-speech: not the %zu samples it wrote",
				   path, n);
	}
	for (size_t i = 0; i < n;) {
		size_t want_n = n - i < sizeof(buf) / 2 ? n - i : sizeof(buf) / 2;
		if (fread(buf, 2, want_n, f) != want_n) {
			fclose(f);
			return status_fail(err, errlen, -EIO, "%s: cannot read its samples", path);
		}
		for (size_t k = 0; k < want_n; k++)
			out[i + k] = (int16_t)bytes_le16(buf + 2 * k);
		i += want_n;
	}
	fclose(f);
	return 0;
}

/* Write speaker spk's recording to KDIR/wav and return where each of its
 * utterances starts and ends in it (samples, multiples of CENTI) and its
 * length. */
static int write_recording(const struct job *j, const char *kdir, int spk, size_t *start,
			   size_t *end, size_t *total, char *err, size_t errlen)
{
	int first = rec_first(j->utts);
	size_t len = REC_GAP, pos = 0;
	char path[4096];
	int16_t *pcm;
	int rc = 0;

	for (int u = first; u < j->utts; u++)
		len += REC_GAP + round_centi(j->samples[spk * j->utts + u]);
	pcm = calloc(len, sizeof(*pcm));
	if (!pcm)
		return status_fail(err, errlen, -ENOMEM, "no memory for a %zu-sample recording",
				   len);
	for (int u = first; u < j->utts && rc == 0; u++) {
		size_t n = j->samples[spk * j->utts + u];

		pos += REC_GAP;
		start[u - first] = pos;
		snprintf(path, sizeof(path), "%s/spk_%03d/utt_%03d.wav", j->dir, spk, u);
		rc = read_utterance(path, pcm + pos, n, err, errlen);
		pos += round_centi(n);
		end[u - first] = pos;
	}
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/wav/spk_%03d-rec.wav", kdir, spk);
		rc = wav_write_file(path, pcm, len, SPEECH_SYNTH_RATE, 1, err, errlen);
	}
	*total = len;
	free(pcm);
	return rc;
}

enum { K_WAV, K_SEGMENTS, K_UTT2SPK, K_SPK2UTT, K_UTT2DUR, K_RECO2DUR, K_FILES };
static const char *const kaldi_name[K_FILES] = { "wav.scp", "segments", "utt2spk",
						 "spk2utt", "utt2dur",  "reco2dur" };

/* Times as Kaldi writes them: seconds with two decimals, from samples that
 * are whole centiseconds (or are cut down to them). */
#define CS_FMT "%zu.%02zu"
#define CS_ARG(samples) (size_t)((samples) / CENTI / 100), (size_t)((samples) / CENTI % 100)

static int write_kaldi(const struct job *j, const char *kdir_arg, char *err, size_t errlen)
{
	char *corpus = NULL, *kdir = NULL, path[K_FILES][4096], tmp[K_FILES][4200];
	size_t start[REC_MAX_UTTS], end[REC_MAX_UTTS], rec_len = 0;
	FILE *f[K_FILES] = { 0 };
	int first = rec_first(j->utts), rc;

	snprintf(path[0], sizeof(path[0]), "%s/wav", kdir_arg);
	rc = gen_mkdirs(path[0], err, errlen);
	if (rc < 0)
		return rc;
	/* wav.scp holds absolute paths, one token each. */
	corpus = realpath(j->dir, NULL);
	kdir = realpath(kdir_arg, NULL);
	if (!corpus || !kdir) {
		rc = status_fail(err, errlen, -errno, "cannot resolve %s: %s",
				 corpus ? kdir_arg : j->dir, strerror(errno));
		goto out;
	}
	if (strpbrk(corpus, " \t\n") || strpbrk(kdir, " \t\n") || strlen(corpus) > 3000 ||
	    strlen(kdir) > 3000) {
		rc = status_fail(err, errlen, FEEDER_EINVAL,
				 "%s or %s has white space in its absolute path or is too long; a "
				 "Kaldi wav.scp cannot name it",
				 j->dir, kdir_arg);
		goto out;
	}
	for (int k = 0; k < K_FILES; k++) {
		snprintf(path[k], sizeof(path[k]), "%s/%s", kdir, kaldi_name[k]);
		rc = gen_text_open(path[k], tmp[k], &f[k], err, errlen);
		if (rc < 0)
			goto out;
	}
	/* The ids are built so that writing speaker by speaker, and within a
	 * speaker the recording ("spk_NNN-rec") before the utterances
	 * ("spk_NNN-utt_NNN"), is already the C-locale order Kaldi checks. */
	for (int s = 0; s < j->speakers; s++) {
		if (first < j->utts) {
			rc = write_recording(j, kdir, s, start, end, &rec_len, err, errlen);
			if (rc < 0)
				goto out;
			fprintf(f[K_WAV], "spk_%03d-rec %s/wav/spk_%03d-rec.wav\n", s, kdir, s);
			fprintf(f[K_RECO2DUR], "spk_%03d-rec %.9g\n", s,
				(double)rec_len / SPEECH_SYNTH_RATE);
		}
		fprintf(f[K_SPK2UTT], "spk_%03d", s);
		for (int u = 0; u < j->utts; u++) {
			size_t n = j->samples[s * j->utts + u], a = 0, b = n / CENTI * CENTI;
			char rec[32];

			if (u < first) {
				snprintf(rec, sizeof(rec), "spk_%03d-utt_%03d", s, u);
				if (s == 0 && u == 0)
					fprintf(f[K_WAV], "%s cat %s/spk_%03d/utt_%03d.wav |\n",
						rec, corpus, s, u);
				else
					fprintf(f[K_WAV], "%s %s/spk_%03d/utt_%03d.wav\n", rec,
						corpus, s, u);
				fprintf(f[K_RECO2DUR], "%s %.9g\n", rec,
					(double)n / SPEECH_SYNTH_RATE);
			} else {
				snprintf(rec, sizeof(rec), "spk_%03d-rec", s);
				a = start[u - first];
				b = end[u - first];
			}
			fprintf(f[K_SEGMENTS], "spk_%03d-utt_%03d %s " CS_FMT " " CS_FMT "\n", s, u,
				rec, CS_ARG(a), CS_ARG(b));
			fprintf(f[K_UTT2SPK], "spk_%03d-utt_%03d spk_%03d\n", s, u, s);
			fprintf(f[K_SPK2UTT], " spk_%03d-utt_%03d", s, u);
			fprintf(f[K_UTT2DUR], "spk_%03d-utt_%03d " CS_FMT "\n", s, u,
				CS_ARG(b - a));
		}
		fprintf(f[K_SPK2UTT], "\n");
	}
	for (int k = 0; k < K_FILES; k++) {
		rc = gen_text_commit(f[k], tmp[k], path[k], err, errlen);
		f[k] = NULL;
		if (rc < 0)
			goto out;
	}
out:
	for (int k = 0; k < K_FILES; k++)
		if (f[k]) {
			fclose(f[k]);
			unlink(tmp[k]);
		}
	free(corpus);
	free(kdir);
	return rc;
}

#define PROG "gen-speech"

/* The command line into j; 0 to go on, else the exit status (1: --help
 * done, 2: bad usage, said). */
static int parse_args(int argc, char **argv, struct job *j, int *threads, const char **kaldi)
{
	int help = 0;
	char *ops[3];
	struct argtab tab[] = {
		ARGTAB_FUNC("seed", 0, &j->seed, gen_arg_seed, "S",
			    "the corpus's seed (default 1)"),
		ARGTAB_REAL("min-dur", 0, &j->min_dur, MIN_DUR, MAX_DUR, "SEC",
			    "shortest utterance (default 2)"),
		ARGTAB_REAL("max-dur", 0, &j->max_dur, MIN_DUR, MAX_DUR, "SEC",
			    "longest utterance (default 4)"),
		ARGTAB_INT("threads", 0, threads, 1, 64, "N",
			   "render threads (default: CPUs, at most 8)"),
		ARGTAB_STRING("kaldi", 0, kaldi, "KDIR", "also write a Kaldi data directory there"),
		ARGTAB_FLAG("help", 'h', &help, "this text"),
		ARGTAB_END,
	};
	int rc = gen_args_parse(PROG, usage, tab, &help, argc, argv, ops, 3, "SPEAKERS UTTS DIR");
	if (rc)
		return rc;
	unsigned long long speakers, utts;
	if (argtab_parse_uint(ops[0], 1, MAX_COUNT, &speakers))
		return gen_usage_error(PROG, usage, "SPEAKERS must be an integer from 1 to %d",
				       MAX_COUNT);
	if (argtab_parse_uint(ops[1], 1, MAX_COUNT, &utts))
		return gen_usage_error(PROG, usage, "UTTS must be an integer from 1 to %d",
				       MAX_COUNT);
	if (j->min_dur > j->max_dur)
		return gen_usage_error(PROG, usage, "--min-dur must not exceed --max-dur");
	if (*kaldi && strlen(*kaldi) > 3000)
		return gen_usage_error(PROG, usage, "--kaldi DIR is too long");
	j->speakers = (int)speakers;
	j->utts = (int)utts;
	j->dir = ops[2];
	if (strlen(j->dir) > 3000)
		return gen_usage_error(PROG, usage, "DIR is too long");
	return 0;
}

int main(int argc, char **argv)
{
	struct job j = { .seed = 1, .min_dur = 2.0, .max_dur = 4.0 };
	int threads = gen_default_threads();
	struct timespec t0, t1;
	const char *kaldi = NULL;
	char err[512];
	int rc = parse_args(argc, argv, &j, &threads, &kaldi);
	if (rc)
		return rc == 1 ? 0 : rc;

	for (int s = 0; s < j.speakers; s++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/spk_%03d", j.dir, s);
		if (gen_mkdirs(path, err, sizeof(err)) < 0)
			goto fail;
	}
	if (write_traits(&j, err, sizeof(err)) < 0)
		goto fail;
	j.samples = calloc((size_t)j.speakers * j.utts, sizeof(*j.samples));
	if (!j.samples) {
		snprintf(err, sizeof(err), "no memory for %d utterance lengths",
			 j.speakers * j.utts);
		goto fail;
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (gen_run(j.speakers * j.utts, threads, render_one, &j, err, sizeof(err)) < 0)
		goto fail;
	double seconds = 0;
	for (int i = 0; i < j.speakers * j.utts; i++)
		seconds += (double)j.samples[i] / SPEECH_SYNTH_RATE;
	if (kaldi && write_kaldi(&j, kaldi, err, sizeof(err)) < 0)
		goto fail;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("gen-speech: wrote %d utterances of %d speakers (%.1f min of audio) to %s%s%s "
	       "in %.2f s\n",
	       j.speakers * j.utts, j.speakers, seconds / 60.0, j.dir,
	       kaldi ? " and a Kaldi data directory to " : "", kaldi ? kaldi : "",
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
	free(j.samples);
	return 0;

fail:
	free(j.samples);
	fprintf(stderr, "gen-speech: %s\n", err);
	return 1;
}
