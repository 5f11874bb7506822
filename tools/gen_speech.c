/* gen_speech.c — gen-speech: write a synthetic multi-speaker speech corpus.
 *
 *   gen-speech SPEAKERS UTTS DIR [--seed S] [--min-dur SEC --max-dur SEC]
 *              [--threads N]
 *
 * writes DIR/spk_NNN/utt_NNN.wav (16 kHz mono PCM 16-bit) for the x-vector
 * trainer's data path (gen-speech → features → packer → feederd → xvec), and
 * DIR/speakers.tsv with each speaker's drawn voice traits, for inspection
 * and tests. The voices and utterances come from speech_synth; every file is
 * a pure function of (seed, speaker, utterance), so the corpus is the same
 * whatever the thread count. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "detrand.h"
#include "speech_synth.h"
#include "status.h"
#include "wav_write.h"

#define MAX_COUNT 1000 /* names keep three digits */
#define MAX_DUR 60.0
#define MIN_DUR 0.1

static const char usage[] =
	"usage: gen-speech SPEAKERS UTTS DIR [--seed S] [--min-dur SEC --max-dur SEC] "
	"[--threads N]";

struct job {
	const char *dir;
	uint64_t seed;
	int speakers, utts;
	double min_dur, max_dur;
	pthread_mutex_t lock;
	int next;           /* next utterance index (speaker * utts + utt) to render */
	int failed;         /* first error code, 0 while all is well */
	char err[512];
	double seconds;     /* audio written */
};

static uint64_t speaker_key(uint64_t seed, int spk)
{
	return detrand_key(seed, 1, (uint64_t)spk);
}

static uint64_t utterance_key(uint64_t seed, int spk, int utt)
{
	return detrand_key(seed, 2 + (uint64_t)spk, (uint64_t)utt);
}

static int render_one(struct job *j, int index, char *err, size_t errlen)
{
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
	if (rc == 0) {
		pthread_mutex_lock(&j->lock);
		j->seconds += (double)n / SPEECH_SYNTH_RATE;
		pthread_mutex_unlock(&j->lock);
	}
	return rc;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	char err[512];

	for (;;) {
		int index, rc;

		pthread_mutex_lock(&j->lock);
		index = j->failed ? -1 : j->next < j->speakers * j->utts ? j->next++ : -1;
		pthread_mutex_unlock(&j->lock);
		if (index < 0)
			return NULL;
		rc = render_one(j, index, err, sizeof(err));
		if (rc < 0) {
			pthread_mutex_lock(&j->lock);
			if (!j->failed) {
				j->failed = rc;
				snprintf(j->err, sizeof(j->err), "%s", err);
			}
			pthread_mutex_unlock(&j->lock);
			return NULL;
		}
	}
}

static int make_dir(const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (mkdir(path, 0777) == 0)
		return 0;
	if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	if (errno == EEXIST)
		errno = ENOTDIR;
	return status_fail(err, errlen, -errno, "cannot create directory %s: %s", path,
			   strerror(errno));
}

/* Create the directories above path, like mkdir -p. */
static int make_parents(const char *path, char *err, size_t errlen)
{
	char buf[4096];
	size_t n = strlen(path);
	int rc;

	if (n >= sizeof(buf))
		return status_fail(err, errlen, -ENAMETOOLONG, "%s: path too long", path);
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i < n; i++) {
		if (buf[i] != '/' || buf[i - 1] == '/')
			continue;
		buf[i] = '\0';
		rc = make_dir(buf, err, errlen);
		if (rc < 0)
			return rc;
		buf[i] = '/';
	}
	return 0;
}

static int write_traits(const struct job *j, char *err, size_t errlen)
{
	char path[4096], tmp[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/speakers.tsv", j->dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return status_fail(err, errlen, -errno, "cannot create %s: %s", tmp, strerror(errno));
	fprintf(f, "speaker\tf0_hz\tf0_range_st\tjitter\tshimmer\tvtl_scale\tf1_dev\tf2_dev\t"
		   "f3_dev\tf4_dev\tbw_scale\ttilt\topen_quotient\trate\tbreathiness\n");
	for (int s = 0; s < j->speakers; s++) {
		struct speech_synth_speaker v;
		speech_synth_speaker(&v, speaker_key(j->seed, s));
		fprintf(f, "spk_%03d\t%.2f\t%.3f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.3f\t"
			   "%.3f\t%.3f\t%.3f\t%.3f\n",
			s, v.f0_hz, v.f0_range_st, v.jitter, v.shimmer, v.vtl_scale,
			v.formant_dev[0], v.formant_dev[1], v.formant_dev[2], v.formant_dev[3],
			v.bw_scale, v.tilt, v.open_quotient, v.rate, v.breathiness);
	}
	if (ferror(f) | fclose(f) || rename(tmp, path) != 0) {
		int e = errno ? errno : EIO;
		unlink(tmp);
		return status_fail(err, errlen, -e, "cannot write %s: %s", path, strerror(e));
	}
	return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_dur(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= MIN_DUR && v <= MAX_DUR))
		return -1;
	*out = v;
	return 0;
}

static int bad_usage(const char *why)
{
	fprintf(stderr, "gen-speech: %s; %s\n", why, usage);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"seed", required_argument, NULL, 's'},
		{"min-dur", required_argument, NULL, 'm'},
		{"max-dur", required_argument, NULL, 'M'},
		{"threads", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{0, 0, 0, 0},
	};
	struct job j = {.seed = 1, .min_dur = 2.0, .max_dur = 4.0};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int threads = cpus < 1 ? 1 : cpus > 8 ? 8 : (int)cpus;
	struct timespec t0, t1;
	pthread_t tid[64];
	char err[512];
	int c, started = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 's':
			errno = 0;
			j.seed = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || optarg[0] == '-')
				return bad_usage("--seed needs an unsigned integer");
			break;
		case 'm':
			if (parse_dur(optarg, &j.min_dur))
				return bad_usage("--min-dur needs seconds between 0.1 and 60");
			break;
		case 'M':
			if (parse_dur(optarg, &j.max_dur))
				return bad_usage("--max-dur needs seconds between 0.1 and 60");
			break;
		case 't':
			if (parse_int(optarg, 1, 64, &threads))
				return bad_usage("--threads needs an integer from 1 to 64");
			break;
		case 'h':
			printf("%s\n", usage);
			return 0;
		default:
			return bad_usage(optopt ? "an option is missing its value" : "unknown option");
		}
	}
	if (argc - optind != 3)
		return bad_usage("expected SPEAKERS UTTS DIR");
	if (parse_int(argv[optind], 1, MAX_COUNT, &j.speakers))
		return bad_usage("SPEAKERS must be an integer from 1 to 1000");
	if (parse_int(argv[optind + 1], 1, MAX_COUNT, &j.utts))
		return bad_usage("UTTS must be an integer from 1 to 1000");
	if (j.min_dur > j.max_dur)
		return bad_usage("--min-dur must not exceed --max-dur");
	j.dir = argv[optind + 2];
	if (strlen(j.dir) > 3000)
		return bad_usage("DIR is too long");

	if (make_parents(j.dir, err, sizeof(err)) < 0 || make_dir(j.dir, err, sizeof(err)) < 0)
		goto fail;
	for (int s = 0; s < j.speakers; s++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/spk_%03d", j.dir, s);
		if (make_dir(path, err, sizeof(err)) < 0)
			goto fail;
	}
	if (write_traits(&j, err, sizeof(err)) < 0)
		goto fail;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_mutex_init(&j.lock, NULL);
	if (threads > j.speakers * j.utts)
		threads = j.speakers * j.utts;
	for (int i = 0; i < threads; i++) {
		if (pthread_create(&tid[i], NULL, worker, &j) != 0)
			break;
		started++;
	}
	if (started == 0)
		worker(&j);
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	pthread_mutex_destroy(&j.lock);
	if (j.failed) {
		snprintf(err, sizeof(err), "%s", j.err);
		goto fail;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("gen-speech: wrote %d utterances of %d speakers (%.1f min of audio) to %s in %.2f s\n",
	       j.speakers * j.utts, j.speakers, j.seconds / 60.0, j.dir,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
	return 0;

fail:
	fprintf(stderr, "gen-speech: %s\n", err);
	return 1;
}
