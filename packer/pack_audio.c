/* pack_audio.c — `packer pack audio SRC DEST`: a speaker-per-folder tree of
 * audio files, or (--kaldi) a Kaldi data directory, becomes a features
 * dataset (DSFORMAT_KIND_FEATURES) or a waveform dataset (--store wave,
 * DSFORMAT_KIND_WAVE).
 *
 * Tree: SRC holds one folder per speaker; the speakers, sorted by folder
 * name (bytewise), are the classes 0..S-1 and their names the label table.
 * The audio files (by suffix, case-insensitive: .wav, .flac, .ogg, ...)
 * anywhere under a speaker folder are its utterances, walked by the same
 * walker as `pack images` (pack_src.h; VoxCeleb is laid out
 * speaker/video/utterance.wav); the "names" database records the path below
 * SRC. Folders without an audio file are not classes, files directly in SRC
 * belong to no speaker: both are reported and ignored. A speaker all of
 * whose files are skipped stays a class (labels are fixed before any file is
 * read) with no samples; `packer inspect` shows it in the histogram.
 *
 * Kaldi (kaldi_dir.h): the utterances grouped by recording, so that a
 * recording is read and decoded once for all its segments; the files among
 * the recordings go through the io_uring reader, a wav.scp command
 * (--allow-pipes) is run by the worker that decodes it. Speakers sorted by
 * name are the classes, utterance ids the names.
 *
 * Order (pack_order.h): with --shard-size (or --order shuffled) the files of
 * a tree are written in a seeded permutation of the walk, and the Kaldi
 * recordings in one of theirs (a recording's utterances stay together, so
 * that it is still read once); the header's options say so.
 *
 * packer.c dispatches here. Sources come from pack_reader's io_uring reads
 * in order; a batch of up to half the reader's depth is held (the other half
 * keeps reading ahead), decoded (media/audio_file.h: libsndfile, one
 * channel, libsoxr to --rate) and turned into records by --threads workers,
 * each with its own fbank extractor (FFTW plans are per thread), and the
 * results are written in order, so the output does not depend on the
 * thread count. A record is a frames x dim row-major matrix (fbank.h's Kaldi
 * recipe), little-endian float16 (round to nearest even, media/half.h) or
 * float32, or the waveform as 16-bit PCM, with its CRC-32C.
 *
 * A source that cannot be read or decoded is skipped with a warning naming
 * it (a recording: with all its utterances), or ends the pack under
 * --strict. An utterance with no frames (shorter than 25 ms, or all silence
 * under --vad) is valid input without features: it is skipped with a
 * warning even under --strict. */
#include "packer.h"

#include "pack_args.h"
#include "pack_dest.h"
#include "pack_writer.h"
#include "pack_msg.h"
#include "pack_order.h"
#include "pack_progress.h"
#include "pack_reader.h"
#include "pack_src.h"

#include "crc32c.h"
#include "dsstore.h"
#include "fbank.h"
#include "half.h"
#include "status.h"
#include "audio_file.h"
#include "kaldi_dir.h"

#include "bytes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define AUDIO_MAX_THREADS 256

struct audio_opts {
	struct fbank_opts fb;
	int wave;         /* --store wave: 16-bit PCM, no features */
	uint32_t rate;    /* --rate: what every file is resampled to */
	uint32_t channel; /* --channel, 0-based here */
	uint32_t dtype;
	unsigned threads;
	int force, strict, verbose, follow_links;
	int kaldi, allow_pipes; /* --kaldi: SRC is a Kaldi data directory */
	unsigned long long max_file;
	unsigned long long shard_size; /* --shard-size, 0: one data.mdb */
	int shuffled;                  /* --order, settled */
	uint64_t order_seed;
};

/* One record to write, or why there is none. */
struct audio_out {
	uint8_t *payload;
	uint32_t len, frames, dim, crc;
	int rc;    /* 0, or the error that skips it (or ends the pack) */
	int empty; /* decoded fine but has no frames */
	char msg[256];
};

/* One source in flight: a file of the tree (one utterance), or a Kaldi
 * recording (its utterances: the whole of it, or its segments), read by
 * the io_uring reader or, for a wav.scp pipe, by running the command on a
 * worker. */
struct audio_item {
	struct pack_read rd;
	int pipe;              /* kaldi: the bytes come from recos[reco]'s command */
	size_t reco;           /* kaldi: the recording */
	size_t first, n;       /* its utterances: order[first .. first + n) (tree: one) */
	struct audio_out *out; /* n of them */
	int rc;                /* reading or decoding failed: all n are lost */
	char msg[256];
};

struct audio_batch {
	const struct pack_reader *r;
	struct audio_item *items;
	size_t n;
	atomic_size_t next;
	const struct audio_opts *o;
	const struct kaldi_dir *kd;
	const size_t *order;
};

struct audio_worker {
	pthread_t tid;
	struct audio_batch *batch;
	struct fbank *fb;
};

static const char audio_about[] =
	"usage: packer pack audio [options] SRC DEST\n"
	"\n"
	"Pack a speaker-per-folder tree of audio files as Kaldi-style features or as\n"
	"waveforms: SRC/<speaker>/<utterance>.wav (or .flac, .ogg, .aiff, ...);\n"
	"speakers sorted by name are the classes. Files are decoded by libsndfile\n"
	"(WAV of any PCM width or float, FLAC, OGG/Vorbis, ...) and resampled to\n"
	"--rate with libsoxr; of several channels one is kept.\n";

static const char audio_recipe[] =
	"Frames are 25 ms every 10 ms (snip-edges), Povey window, 512-point FFT, mel\n"
	"filters from 20 to 7600 Hz, natural log floored at FLT_EPSILON, no dither.\n";

#define CMD "pack audio"

/* The command line's values before they are settled into struct audio_opts. */
struct audio_args {
	int wave, kind, vad, dtype, help;
	unsigned channel;
	unsigned long long bins, ceps, threads;
	struct pack_order_args order;
};

static const struct argtab_choice audio_stores[] = { { "features", 0 },
						     { "wave", 1 },
						     { NULL, 0 } };
static const struct argtab_choice audio_kinds[] = { { "fbank", FBANK_KIND_FBANK },
						    { "mfcc", FBANK_KIND_MFCC },
						    { NULL, 0 } };
static const struct argtab_choice audio_dtypes[] = { { "f16", DSFORMAT_DTYPE_F16 },
						     { "f32", DSFORMAT_DTYPE_F32 },
						     { NULL, 0 } };

/* The options that make sense together; 0 or PACK_EXIT_USAGE (said). */
static int audio_check_args(const struct argtab *tab, const struct audio_args *a,
			    const struct audio_opts *o)
{
	static const char *const feature_opts[] = { "features", "bins", "ceps", "vad", "dtype" };
	if (a->ceps && a->kind != FBANK_KIND_MFCC)
		return pack_usage_error(CMD, "%s", "--ceps applies to --features mfcc only");
	for (size_t i = 0; a->wave && i < sizeof feature_opts / sizeof *feature_opts; i++)
		if (argtab_given(tab, feature_opts[i]))
			return pack_usage_error(CMD, "--%s applies to --store features only",
						feature_opts[i]);
	if (o->allow_pipes && !o->kaldi)
		return pack_usage_error(CMD, "%s", "--allow-pipes applies to --kaldi only");
	if (!o->wave && o->rate != FBANK_RATE)
		return pack_usage_error(CMD,
					"--rate %u: features are computed at %d Hz (--store wave "
					"keeps other rates)",
					o->rate, FBANK_RATE);
	return 0;
}

/* The defaults the options leave to the program: the features' settings and
 * the thread count. */
static void audio_settle(const struct audio_args *a, struct audio_opts *o)
{
	o->wave = a->wave;
	o->channel = a->channel - 1;
	o->dtype = a->wave ? DSFORMAT_DTYPE_S16 : (uint32_t)a->dtype;
	fbank_opts_default(&o->fb, a->kind);
	if (a->bins)
		o->fb.bins = (int)a->bins;
	if (a->ceps)
		o->fb.ceps = (int)a->ceps;
	else if (a->kind == FBANK_KIND_MFCC && o->fb.ceps > o->fb.bins)
		o->fb.ceps = o->fb.bins; /* --bins below 30 without --ceps: keep them all */
	o->fb.vad = a->vad;
	unsigned long long threads = a->threads;
	if (!threads) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		threads = cpus < 1                   ? 1
			  : cpus > AUDIO_MAX_THREADS ? AUDIO_MAX_THREADS
						     : (unsigned long long)cpus;
	}
	o->threads = (unsigned)threads;
}

/* Parse the command line into o and the operands SRC and DEST. 0, -1 after
 * --help, or PACK_EXIT_USAGE (said). */
static int audio_parse_args(int argc, char **argv, struct audio_opts *o, char *ops[2])
{
	struct audio_args a = { .kind = FBANK_KIND_FBANK,
				.dtype = DSFORMAT_DTYPE_F16,
				.channel = 1 };
	memset(o, 0, sizeof(*o));
	o->rate = FBANK_RATE;
	o->max_file = PACK_MAX_FILE_DEFAULT;
	struct argtab tab[] = {
		ARGTAB_ENUM("store", 0, &a.wave, audio_stores, NULL,
			    "Kaldi features (default) or 16-bit PCM waveforms\n"
			    "(for feederd's wave pipeline, noise and RIR sets)"),
		ARGTAB_INT("rate", 0, &o->rate, DSFORMAT_RATE_MIN, DSFORMAT_RATE_MAX, "HZ",
			   "sample rate to resample to (default 16000; features: 16000)"),
		ARGTAB_INT("channel", 0, &a.channel, 1, 1024, "N",
			   "channel kept of a multi-channel file (default 1, the first)"),
		ARGTAB_FLAG("kaldi", 0, &o->kaldi,
			    "SRC is a Kaldi data directory: wav.scp, utt2spk, optional\n"
			    "segments and utt2dur; utterance ids are the names,\n"
			    "speakers sorted by name the classes"),
		ARGTAB_FLAG("allow-pipes", 0, &o->allow_pipes,
			    "run wav.scp's commands (\"utt cmd |\"): they are shell\n"
			    "commands, refused without this"),
		ARGTAB_ENUM("features", 0, &a.kind, audio_kinds, NULL,
			    "log mel filterbank (default) or MFCC"),
		ARGTAB_INT("bins", 0, &a.bins, 3, FBANK_FFT_LEN / 2, "N",
			   "mel bins (default 40 for fbank, 30 for mfcc)"),
		ARGTAB_INT("ceps", 0, &a.ceps, 1, FBANK_FFT_LEN / 2, "N",
			   "MFCC cepstra kept (default 30, at most --bins)"),
		ARGTAB_FLAG("vad", 0, &a.vad,
			    "drop unvoiced frames (Kaldi compute-vad, VoxCeleb settings)"),
		ARGTAB_ENUM("dtype", 0, &a.dtype, audio_dtypes, NULL,
			    "stored feature element type (default f16)"),
		ARGTAB_INT("threads", 0, &a.threads, 1, AUDIO_MAX_THREADS, "N",
			   "feature worker threads (default: online CPUs)"),
		ARGTAB_FLAG("strict", 0, &o->strict,
			    "an unreadable or non-conforming file is fatal, not skipped"),
		ARGTAB_FLAG("follow-links", 0, &o->follow_links,
			    "follow symbolic links to folders (each folder is walked once)"),
		ARGTAB_SIZE("max-file-size", 0, &o->max_file, 1, DSFORMAT_MAX_PAYLOAD, "SIZE",
			    "skip larger files unread (default 64M; K, M, G suffixes)"),
		ARGTAB_SIZE("shard-size", 0, &o->shard_size, 1, PACK_MAX_SHARD_SIZE, "SIZE",
			    "write DEST as shard files of about SIZE bytes of records\n"
			    "each and a manifest (K, M, G, T; default: one data.mdb)"),
		PACK_ORDER_ROWS(&a.order,
				"write the utterances in a seeded random order (--kaldi:\n"
				"of the recordings, each with its utterances), or in\n"
				"the order they are walked (default: shuffled with\n"
				"--shard-size, else walk)"),
		ARGTAB_FLAG("force", 0, &o->force, "replace DEST if it exists"),
		ARGTAB_FLAG("verbose", 'v', &o->verbose,
			    "progress lines even when stderr is not a terminal"),
		ARGTAB_FLAG("help", 'h', &a.help, "this text"),
		ARGTAB_END,
	};
	int n, rc = pack_args_parse(CMD, tab, argc, argv, ops, 2, &n);
	if (rc)
		return rc;
	if (a.help) {
		printf("%s\n", audio_about);
		argtab_help(stdout, tab);
		printf("\n%s", audio_recipe);
		return -1;
	}
	if (n < 2)
		return pack_usage_error(CMD, "%s", "missing SRC or DEST");
	o->wave = a.wave;
	if ((rc = audio_check_args(tab, &a, o)))
		return rc;
	audio_settle(&a, o);
	o->shuffled = pack_order_shuffled(&a.order, o->shard_size != 0, tab);
	o->order_seed = a.order.seed;
	return 0;
}

/* ---- the source tree ---- */

/* The reader's check of a file's first bytes. */
static int audio_sniff(const uint8_t *head, size_t len)
{
	return audio_file_sniff(head, len);
}

/* The suffixes of the containers audio_file decodes (case-insensitive). */
static int audio_is_audio(const char *name)
{
	static const char *const ext[] = { ".wav",  ".flac", ".ogg", ".oga", ".aif", ".aiff",
					   ".aifc", ".au",   ".snd", ".caf", ".w64", ".rf64" };
	const char *dot = strrchr(name, '.');
	for (size_t i = 0; dot && i < sizeof(ext) / sizeof(ext[0]); i++)
		if (strcasecmp(dot, ext[i]) == 0)
			return 1;
	return 0;
}

/* ---- one utterance ---- */

/* 16-bit PCM of float samples at int16 scale: rounded, clipped (a float
 * file may exceed full scale; resampling may overshoot a full-scale edge). */
static void audio_put_s16(uint8_t *out, const float *x, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float v = rintf(x[i]);
		v = v > 32767.0f ? 32767.0f : v < -32768.0f ? -32768.0f : v;
		bytes_put_le16(out + 2 * i, (uint16_t)(int16_t)v);
	}
}

/* The record of n samples into it: the waveform, or its features. */
static void audio_encode(struct audio_out *it, const float *x, size_t n, struct fbank *fb,
			 const struct audio_opts *o)
{
	float *m = NULL;
	size_t count, esize = dsformat_dtype_size(o->dtype);
	if (o->wave) {
		if (n == 0) {
			it->empty = 1;
			snprintf(it->msg, sizeof(it->msg), "no samples");
			return;
		}
		it->frames = (uint32_t)n; /* n <= DSFORMAT_MAX_PAYLOAD / 2: the decoder's bound */
		it->dim = 1;
		count = n;
	} else {
		it->rc = fbank_compute(fb, x, n, &m, &it->frames, &it->dim, it->msg,
				       sizeof(it->msg));
		if (it->rc < 0)
			return;
		if (it->frames == 0) {
			it->empty = 1;
			if (n < FBANK_FRAME_LEN)
				snprintf(it->msg, sizeof(it->msg),
					 "%zu samples, shorter than one 25 ms frame", n);
			else
				snprintf(it->msg, sizeof(it->msg), "all %u frames are unvoiced",
					 fbank_frames(n));
			return;
		}
		count = (size_t)it->frames * it->dim;
	}
	if (count > DSFORMAT_MAX_PAYLOAD / esize) {
		it->rc = status_fail(it->msg, sizeof(it->msg), FEEDER_EQUOTA,
				     "%u frames x %u is over the %u-byte payload limit", it->frames,
				     it->dim, DSFORMAT_MAX_PAYLOAD);
		goto out;
	}
	it->payload = malloc(count * esize);
	if (!it->payload) {
		it->rc = status_fail(it->msg, sizeof(it->msg), -ENOMEM, "no memory for %u frames",
				     it->frames);
		goto out;
	}
	if (o->wave)
		audio_put_s16(it->payload, x, n);
	for (size_t i = 0; m && i < count; i++) {
		if (o->dtype == DSFORMAT_DTYPE_F16) {
			bytes_put_le16(it->payload + 2 * i, half_from_float(m[i]));
		} else {
			uint32_t bits;
			memcpy(&bits, &m[i], 4);
			bytes_put_le32(it->payload + 4 * i, bits);
		}
	}
	it->len = (uint32_t)(count * esize);
	it->crc = crc32c(0, it->payload, it->len);
out:
	free(m);
}

static void audio_process(const struct audio_batch *b, struct audio_item *it, struct fbank *fb)
{
	const struct audio_opts *o = b->o;
	float *samples = NULL;
	size_t n = 0;
	uint8_t *piped = NULL;
	const uint8_t *bytes = it->rd.data;
	size_t len = it->rd.len;
	if (it->pipe) {
		it->rc = kaldi_pipe_read(b->kd->recos[it->reco].source, (size_t)o->max_file, &piped,
					 &len, it->msg, sizeof(it->msg));
		if (it->rc < 0)
			return;
		if (!audio_file_sniff(piped, len)) {
			it->rc = status_fail(
				it->msg, sizeof(it->msg), FEEDER_EFORMAT,
				"the command's output is not an audio file (WAV, FLAC, ...)");
			goto out;
		}
		bytes = piped;
	} else if (it->rd.error) {
		it->rc = it->rd.error;
		snprintf(it->msg, sizeof(it->msg), "%s", pack_reader_strerror(b->r, it->rd.error));
		return;
	}
	it->rc = audio_file_decode(bytes, len, o->channel, o->rate, DSFORMAT_MAX_PAYLOAD / 2,
				   &samples, &n, NULL, it->msg, sizeof(it->msg));
	if (it->rc)
		goto out;
	for (size_t j = 0; j < it->n; j++) {
		const struct kaldi_utt *u = b->kd ? &b->kd->utts[b->order[it->first + j]] : NULL;
		size_t first = 0, count = n;
		if (u && b->kd->has_segments) {
			it->out[j].rc =
				kaldi_segment_samples(u->start, u->end, o->rate, n, &first, &count,
						      it->out[j].msg, sizeof(it->out[j].msg));
			if (it->out[j].rc)
				continue;
		}
		audio_encode(&it->out[j], samples + first, count, fb, o);
	}
out:
	free(piped);
	free(samples);
}

static void *audio_worker_run(void *arg)
{
	struct audio_worker *w = arg;
	struct audio_batch *b = w->batch;
	size_t i;
	while ((i = atomic_fetch_add(&b->next, 1)) < b->n)
		audio_process(b, &b->items[i], w->fb);
	return NULL;
}

/* Features of every item of b, on up to nworkers threads. */
static void audio_run_batch(struct audio_batch *b, struct audio_worker *w, unsigned nworkers)
{
	atomic_store(&b->next, 0);
	unsigned use = nworkers < b->n ? nworkers : (unsigned)b->n, started = 0;
	for (unsigned t = 1; t < use; t++) {
		w[t].batch = b;
		if (pthread_create(&w[t].tid, NULL, audio_worker_run, &w[t]) != 0)
			break; /* fewer threads: the ones running take the rest */
		started++;
	}
	w[0].batch = b;
	audio_worker_run(&w[0]);
	for (unsigned t = 1; t <= started; t++)
		pthread_join(w[t].tid, NULL);
}

/* ---- the pack ---- */

/* A Kaldi recording and its utterances, order[first .. first + n). */
struct audio_group {
	size_t reco, first, n;
};

struct audio_pack {
	struct kaldi_dir kd; /* --kaldi */
	size_t *order;       /* utterances by recording, then id */
	struct audio_group *groups;
	size_t ngroups, next_group;
	const char **kpaths; /* the files among the recordings, for the reader */
	size_t nkpaths;
	const char *src, *dest;
	struct audio_opts o;
	struct pack_src s;
	int srcfd;
	struct pack_dest pd;
	struct pack_writer *w;
	struct dsformat_header hdr; /* every shard's; the totals set at the end */
	struct pack_reader *r;
	struct audio_worker *workers;
	struct audio_item *items;
	struct pack_progress prog;
	uint64_t packed, skipped, empty;
	uint32_t dim;
};

/* The settings the records were made with; the order appended when it is
 * shuffled (a walk's string is as it always was). */
static void audio_options_string(const struct audio_pack *p, char *out, size_t len)
{
	const struct fbank_opts *f = &p->o.fb;
	int n = p->o.wave ? snprintf(out, len,
				     "store=wave rate=%u channel=%u resampler=soxr-hq dtype=s16",
				     p->o.rate, p->o.channel + 1)
			  : snprintf(out, len, "features=%s bins=%d",
				     f->kind == FBANK_KIND_MFCC ? "mfcc" : "fbank", f->bins);
	if (!p->o.wave && f->kind == FBANK_KIND_MFCC && n > 0 && (size_t)n < len)
		n += snprintf(out + n, len - (size_t)n, " ceps=%d lifter=%g use-energy=%d", f->ceps,
			      f->lifter, f->use_energy);
	if (!p->o.wave && n > 0 && (size_t)n < len)
		n += snprintf(
			out + n, len - (size_t)n,
			" low-freq=%g high-freq=%g window=%s frame=25ms shift=10ms snip-edges=1 dither=0"
			" vad=%d dtype=%s",
			f->low_freq, f->high_freq,
			f->window == FBANK_WINDOW_HAMMING ? "hamming" : "povey", f->vad,
			dsformat_dtype_name(p->o.dtype));
	if (!p->o.wave && n > 0 && (size_t)n < len && f->vad)
		n += snprintf(
			out + n, len - (size_t)n,
			" vad-threshold=%g vad-mean-scale=%g vad-proportion=%g vad-context=%d",
			f->vad_threshold, f->vad_mean_scale, f->vad_proportion, f->vad_context);
	if (n > 0 && (size_t)n < len && p->o.shuffled)
		snprintf(out + n, len - (size_t)n, " order=shuffled order-seed=%llu",
			 (unsigned long long)p->o.order_seed);
}

/* What a message names: the tree's file, or the Kaldi recording and its
 * source. */
static void audio_what(const struct audio_pack *p, const struct audio_item *it, char *out,
		       size_t len)
{
	if (p->o.kaldi)
		snprintf(out, len, "recording %s (%s%s)", p->kd.recos[it->reco].id,
			 p->kd.recos[it->reco].source, it->pipe ? " |" : "");
	else
		snprintf(out, len, "%s/%s", p->src, it->rd.path);
}

/* Store or skip the finished items of one batch, in order. Returns 0, or an
 * exit status. */
static int audio_store_batch(struct audio_pack *p, struct audio_batch *b, char *err, size_t errlen)
{
	char what[512];
	for (size_t i = 0; i < b->n; i++) {
		struct audio_item *it = &b->items[i];
		pack_progress_add(&p->prog, 1, it->rd.len);
		audio_what(p, it, what, sizeof(what));
		if (it->rc == -ENOMEM) {
			pack_error("pack audio: %s: %s", what, it->msg);
			return PACK_EXIT_FAIL;
		}
		if (it->rc < 0) {
			if (p->o.strict) {
				pack_error("pack audio: %s: %s (--strict)", what, it->msg);
				return PACK_EXIT_USAGE;
			}
			if (p->o.kaldi)
				pack_warn("%s: %s, its %zu utterance%s skipped", what, it->msg,
					  it->n, it->n == 1 ? "" : "s");
			else
				pack_warn("%s: %s, skipped", what, it->msg);
			p->skipped += it->n;
			continue;
		}
		for (size_t j = 0; j < it->n; j++) {
			struct audio_out *o = &it->out[j];
			const struct kaldi_utt *u =
				p->o.kaldi ? &p->kd.utts[p->order[it->first + j]] : NULL;
			char uwhat[600];
			if (u)
				snprintf(uwhat, sizeof(uwhat), "utterance %s of %s", u->id, what);
			else
				snprintf(uwhat, sizeof(uwhat), "%s", what);
			if (o->rc == -ENOMEM) {
				pack_error("pack audio: %s: %s", uwhat, o->msg);
				return PACK_EXIT_FAIL;
			}
			if (o->rc < 0) {
				if (p->o.strict) {
					pack_error("pack audio: %s: %s (--strict)", uwhat, o->msg);
					return PACK_EXIT_USAGE;
				}
				pack_warn("%s: %s, skipped", uwhat, o->msg);
				p->skipped++;
				continue;
			}
			if (o->empty) {
				pack_warn("%s: %s, no %s, skipped", uwhat, o->msg,
					  p->o.wave ? "samples" : "features");
				p->empty++;
				continue;
			}
			struct dsformat_sample s = {
				.label = u ? u->speaker : p->s.labels[it->rd.index],
				.payload_len = o->len,
				.crc = o->crc,
				.frames = o->frames,
				.dim = o->dim,
				.dtype = p->o.dtype,
			};
			if (pack_writer_put_sample(p->w, p->packed, &s, o->payload, 0, err,
						   errlen) < 0 ||
			    pack_writer_put_name(p->w, p->packed, u ? u->id : it->rd.path, err,
						 errlen) < 0) {
				pack_error("pack audio: %s: %s", p->dest, err);
				return PACK_EXIT_FAIL;
			}
			p->packed++;
		}
	}
	if (pack_writer_commit(p->w, err, errlen) < 0) {
		pack_error("pack audio: %s: %s", p->dest, err);
		return PACK_EXIT_FAIL;
	}
	return 0;
}

static void audio_batch_clear(struct pack_reader *r, struct audio_batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct audio_item *it = &b->items[i];
		for (size_t j = 0; j < it->n; j++)
			free(it->out[j].payload);
		free(it->out);
		if (!it->pipe)
			pack_reader_release(r, &it->rd);
		memset(it, 0, sizeof(*it));
	}
	b->n = 0;
}

/* The next source into *it: the reader's next file, or the next Kaldi
 * recording (a pipe's command is run by the worker). Returns 1, 0 at the
 * end, or a negative code with a sentence. */
static int audio_next(struct audio_pack *p, struct audio_item *it, char *err, size_t errlen)
{
	memset(it, 0, sizeof(*it));
	if (p->o.kaldi) {
		if (p->next_group == p->ngroups)
			return 0;
		const struct audio_group *g = &p->groups[p->next_group++];
		it->reco = g->reco;
		it->first = g->first;
		it->n = g->n;
		it->pipe = p->kd.recos[g->reco].is_pipe;
	} else {
		it->n = 1;
	}
	it->out = calloc(it->n, sizeof(*it->out));
	if (!it->out)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	if (it->pipe)
		return 1;
	int rc = pack_reader_next(p->r, &it->rd, err, errlen);
	if (rc == 0 && p->o.kaldi)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "the reader ended before the recordings");
	if (!p->o.kaldi)
		it->first = it->rd.index;
	return rc;
}

static int audio_pack_run(struct audio_pack *p, char *err, size_t errlen)
{
	/* A file over --max-file-size, or one that does not begin as a WAV,
	 * is refused before it is read whole. */
	struct pack_reader_opts ropts = { .max_file = (size_t)p->o.max_file,
					  .sniff = audio_sniff,
					  .sniff_fail =
						  "not an audio file (WAV, FLAC, OGG, AIFF, ...)" };
	int rc = p->o.kaldi ? pack_reader_open(p->srcfd, p->kpaths, p->nkpaths, &ropts, &p->r, err,
					       errlen)
			    : pack_reader_open(p->srcfd, (const char *const *)p->s.paths, p->s.n,
					       &ropts, &p->r, err, errlen);
	if (rc < 0) {
		pack_error("pack audio: %s", err);
		return PACK_EXIT_FAIL;
	}
	size_t cap = pack_reader_depth(p->r) / 2;
	p->items = calloc(cap, sizeof(*p->items));
	if (!p->items) {
		pack_error("pack audio: out of memory");
		return PACK_EXIT_FAIL;
	}
	struct audio_batch b = { .r = p->r,
				 .items = p->items,
				 .o = &p->o,
				 .kd = p->o.kaldi ? &p->kd : NULL,
				 .order = p->order };
	pack_progress_init(&p->prog, p->o.kaldi ? p->ngroups : p->s.n, p->o.verbose);
	p->prog.what = p->o.kaldi ? "recordings" : "files";
	int status = 0, done = 0;
	while (!done && status == 0) {
		while (b.n < cap) {
			rc = audio_next(p, &b.items[b.n], err, errlen);
			if (rc < 0) {
				pack_error("pack audio: %s", err);
				status = PACK_EXIT_FAIL;
				break;
			}
			if (rc == 0) {
				free(b.items[b.n].out);
				b.items[b.n].out = NULL;
				done = 1;
				break;
			}
			b.n++;
		}
		if (status == 0 && b.n) {
			audio_run_batch(&b, p->workers, p->o.threads);
			status = audio_store_batch(p, &b, err, errlen);
		}
		audio_batch_clear(p->r, &b);
	}
	if (status)
		return status;
	pack_progress_done(&p->prog);
	if (p->packed == 0) {
		pack_error("pack audio: %s: none of the %zu %s gave %s", p->src,
			   p->o.kaldi ? p->kd.nutts : p->s.n,
			   p->o.kaldi ? "utterances" : "audio files",
			   p->o.wave ? "samples" : "features");
		return PACK_EXIT_USAGE;
	}
	struct dsformat_header h = p->hdr;
	h.samples = p->packed;
	rc = pack_writer_finish(p->w, &h, err, errlen);
	p->w = NULL; /* finish consumes the writer, on success and on failure */
	if (rc < 0) {
		pack_error("pack audio: %s: %s", p->dest, err);
		return PACK_EXIT_FAIL;
	}
	if (pack_dest_commit(&p->pd, err, errlen) < 0) {
		pack_error("pack audio: %s", err);
		return PACK_EXIT_FAIL;
	}
	char what[64];
	if (p->o.wave)
		snprintf(what, sizeof(what), "16-bit waveforms at %u Hz", p->o.rate);
	else
		snprintf(what, sizeof(what), "%u x %s features", p->dim,
			 dsformat_dtype_name(p->o.dtype));
	if (p->skipped || p->empty || p->o.verbose)
		fprintf(stderr,
			"packer: %s: %llu utterances of %u speakers, %s"
			" (%llu unreadable or bad files skipped, %llu without %s)\n",
			p->dest, (unsigned long long)p->packed, h.classes, what,
			(unsigned long long)p->skipped, (unsigned long long)p->empty,
			p->o.wave ? "samples" : "frames");
	return 0;
}

static int order_cmp(const void *a, const void *b, void *arg)
{
	const struct kaldi_dir *kd = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	size_t rx = kd->utts[x].reco, ry = kd->utts[y].reco;
	return rx != ry ? (rx < ry ? -1 : 1) : x < y ? -1 : x > y;
}

static void swap_groups(void *ctx, size_t i, size_t j)
{
	struct audio_group *g = ctx, t = g[i];
	g[i] = g[j];
	g[j] = t;
}

/* --kaldi: read the data directory, group its utterances by recording (a
 * recording is read and decoded once for all its segments) and list the
 * files among them for the reader. Relative paths are the working
 * directory's, as in Kaldi. Returns 0 or an exit status. */
static int audio_load_kaldi(struct audio_pack *p)
{
	char err[512];
	int rc = kaldi_dir_load(p->src, &p->kd, err, sizeof(err));
	if (rc < 0) {
		pack_error("pack audio: %s", err);
		return rc == -ENOMEM ? PACK_EXIT_FAIL : PACK_EXIT_USAGE;
	}
	if (p->kd.nspeakers > PACK_SRC_MAX_CLASSES) {
		pack_error("pack audio: %s: %u speakers, more than %u", p->src, p->kd.nspeakers,
			   PACK_SRC_MAX_CLASSES);
		return PACK_EXIT_USAGE;
	}
	size_t n = p->kd.nutts;
	p->order = malloc(n * sizeof(*p->order));
	p->groups = malloc(n * sizeof(*p->groups));
	p->kpaths = malloc(n * sizeof(*p->kpaths));
	if (!p->order || !p->groups || !p->kpaths) {
		pack_error("pack audio: out of memory");
		return PACK_EXIT_FAIL;
	}
	for (size_t i = 0; i < n; i++)
		p->order[i] = i;
	qsort_r(p->order, n, sizeof(*p->order), order_cmp, &p->kd);
	for (size_t i = 0; i < n; i++) {
		size_t r = p->kd.utts[p->order[i]].reco;
		if (p->ngroups && p->groups[p->ngroups - 1].reco == r) {
			p->groups[p->ngroups - 1].n++;
			continue;
		}
		if (p->kd.recos[r].is_pipe && !p->o.allow_pipes) {
			pack_error("pack audio: %s/wav.scp: recording %s is a command (\"%s |\"); "
				   "commands run only with --allow-pipes",
				   p->src, p->kd.recos[r].id, p->kd.recos[r].source);
			return PACK_EXIT_USAGE;
		}
		p->groups[p->ngroups++] = (struct audio_group){ .reco = r, .first = i, .n = 1 };
	}
	/* Whole recordings are shuffled, not utterances: a recording is still
	 * read once, its utterances (segments of it) stay together in id order. */
	if (p->o.shuffled)
		pack_order_permute(p->ngroups, p->o.order_seed, swap_groups, p->groups);
	for (size_t g = 0; g < p->ngroups; g++)
		if (!p->kd.recos[p->groups[g].reco].is_pipe)
			p->kpaths[p->nkpaths++] = p->kd.recos[p->groups[g].reco].source;
	return 0;
}

int pack_audio_main(int argc, char **argv)
{
	struct audio_pack p;
	char err[512];
	char *ops[2];
	memset(&p, 0, sizeof(p));
	p.srcfd = -1;
	int rc = audio_parse_args(argc, argv, &p.o, ops);
	if (rc)
		return rc < 0 ? 0 : rc;
	p.src = ops[0];
	p.dest = ops[1];

	/* One extractor per worker; this also validates the feature options
	 * before anything touches DEST. */
	p.workers = calloc(p.o.threads, sizeof(*p.workers));
	if (!p.workers) {
		pack_error("pack audio: out of memory");
		return PACK_EXIT_FAIL;
	}
	int status = 0;
	for (unsigned t = 0; !p.o.wave && t < p.o.threads && status == 0; t++) {
		rc = fbank_create(&p.o.fb, &p.workers[t].fb, err, sizeof(err));
		if (rc < 0) {
			pack_error("pack audio: %s", err);
			status = rc == -ENOMEM ? PACK_EXIT_FAIL : PACK_EXIT_USAGE;
		}
	}
	if (status)
		goto out;
	p.dim = p.o.wave ? 1 : fbank_dim(p.workers[0].fb);

	if (p.o.kaldi) {
		status = audio_load_kaldi(&p);
		if (status)
			goto out;
		p.srcfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (p.srcfd < 0) {
			pack_error("pack audio: the working directory: %s", strerror(errno));
			status = PACK_EXIT_FAIL;
			goto out;
		}
		goto dest;
	}
	p.srcfd = open(p.src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p.srcfd < 0) {
		pack_error("pack audio: %s: %s", p.src, strerror(errno));
		status = PACK_EXIT_USAGE;
		goto out;
	}
	struct pack_tree_rules rules = { .class_noun = "speaker",
					 .sample_noun = "audio files",
					 .is_sample = audio_is_audio,
					 .follow_links = p.o.follow_links };
	rc = pack_src_scan_tree(p.srcfd, p.src, &rules, &p.s, err, sizeof(err));
	if (rc < 0) {
		pack_error("pack audio: %s", err);
		status = rc == -ENOMEM ? PACK_EXIT_FAIL : PACK_EXIT_USAGE;
		goto out;
	}
	if (p.s.n == 0) {
		pack_error(
			"pack audio: %s: no audio files in speaker folders (SRC/<speaker>/*.wav)",
			p.src);
		status = PACK_EXIT_USAGE;
		goto out;
	}
	if (p.o.shuffled)
		pack_order_src(&p.s, p.o.order_seed);
dest:
	rc = pack_dest_begin(&p.pd, p.dest, p.o.force, err, sizeof(err));
	if (rc < 0) {
		pack_error("pack audio: %s", err);
		status = rc == -EEXIST ? PACK_EXIT_USAGE : PACK_EXIT_FAIL;
		goto out;
	}
	p.hdr = (struct dsformat_header){
		.version = DSFORMAT_VERSION,
		.kind = p.o.wave ? DSFORMAT_KIND_WAVE : DSFORMAT_KIND_FEATURES,
		.classes = p.o.kaldi ? p.kd.nspeakers : p.s.nclasses,
		.feat_dim = p.o.wave ? 1 : p.dim,
		.dtype = p.o.dtype,
		.rate = p.o.wave ? p.o.rate : 0,
	};
	snprintf(p.hdr.packer_version, sizeof(p.hdr.packer_version), "%s", FEEDER_VERSION);
	audio_options_string(&p, p.hdr.options, sizeof(p.hdr.options));
	rc = pack_writer_open(&p.pd, p.o.shard_size, 0, &p.hdr,
			      p.o.kaldi ? p.kd.speakers : (const char *const *)p.s.classes, &p.w,
			      err, sizeof(err));
	if (rc < 0) {
		pack_error("pack audio: %s", err);
		status = PACK_EXIT_FAIL;
		goto out;
	}
	status = audio_pack_run(&p, err, sizeof(err));
out:
	if (p.w)
		pack_writer_abort(p.w);
	if (status)
		pack_dest_abort(&p.pd);
	pack_reader_close(p.r);
	free(p.items);
	for (unsigned t = 0; p.workers && t < p.o.threads; t++)
		fbank_destroy(p.workers[t].fb);
	free(p.workers);
	pack_src_free(&p.s);
	kaldi_dir_free(&p.kd);
	free(p.order);
	free(p.groups);
	free(p.kpaths);
	if (p.srcfd >= 0)
		close(p.srcfd);
	return status;
}
