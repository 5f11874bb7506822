/* xvec.c — the x-vector trainer: `xvec train | embed | eval`.
 *
 * A client of feederd through libfeeder. `train` opens one stream of random
 * feature chunks (float32, (batch, feat_dim, chunk)) over all the epochs it
 * runs and feeds each batch straight from the shared-memory
 * slot into the model (xvec_model.h): no copy between the daemon's writer and
 * the first GEMM. It reports, per logging interval, the loss, accuracy,
 * samples/s and the fraction of step time spent waiting for data, and writes
 * checkpoints (xvec_checkpoint.h) that hold the stream position, so --resume
 * continues with exactly the loss sequence of an uninterrupted run.
 * `embed` and `eval` run the evaluation network on centered chunks of every
 * utterance of a (held-out) dataset; `eval` scores all same-speaker and
 * different-speaker pairs by cosine similarity and reports EER and minDCF.
 *
 * Input: pipeline features reads a dataset of feature matrices (packer pack
 * audio); pipeline wave one of waveforms (packer pack audio --store wave)
 * whose features feederd computes, augmented in training (--noise,
 * --reverb, --speed-p, --specaug-p). Checkpoints record the pipeline and the
 * features (xvec_position.h), which embed, eval and --resume follow and
 * refuse to contradict. eval --noise/--reverb is a noisy test condition:
 * since feederd augments in train mode only, a train-mode stream with
 * nothing random but the chunk's place, the noise and the reverberation.
 *
 * --device cuda trains with the CUDA model (cuda/xvec_cuda.h) fed through
 * cuda/xvec_feed.h (pinned ring, copies on a second stream overlapping the
 * previous step); the CPU model stays the host mirror that checkpoints are
 * written from. Where the CUDA model is not built or there is no device,
 * xvec says so instead of silently training on the CPU. The CUDA path has
 * been compiled but not yet run on a GPU.
 *
 * Data parallel: `mpirun -np N xvec train ...` (xvec_dist.h) trains N
 * replicas, each on its own stream (rank r of N, the node's feederd), with
 * the gradients averaged after every step (MPI_Allreduce) and --sync-bn for
 * batch-norm statistics of the global batch. Every step the ranks agree
 * that each has a batch (or all stop; a rank whose stream failed makes the
 * others stop with a message naming it), rank 0 logs (global samples/s, the
 * slowest rank's data wait, the all-reduce's share of the time) and writes
 * the checkpoint. With --device cuda each rank trains on one GPU of its node
 * and the sums run on the devices through NCCL, loaded at run time
 * (cuda/xvec_nccl.h): a run without it is refused, naming what is missing. */
#include "feeder.h"

#include "argtab.h"
#include "cuda_info.h"
#include "verify_metrics.h"
#include "xvec_checkpoint.h"
#include "xvec_dist.h"
#include "xvec_model.h"
#include "xvec_plot.h"
#include "xvec_position.h"
#include "xvec_train.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

/* Error lines begin with who: "xvec", or "xvec: rank 1 of 4" under MPI. */
static char who[48] = "xvec";
#define XERR(...) xerr(__VA_ARGS__)
__attribute__((format(printf, 1, 2))) static void xerr(const char *fmt, ...)
{
	/* One write per line: mpirun gathers every rank's stderr, and lines
	 * written in pieces would interleave. */
	char line[1024];
	int n = snprintf(line, sizeof line, "%s: ", who);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof line)
		vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	fputs(line, stderr);
	fflush(stderr);
}

struct args {
	const char *cmd;
	const char *dataset, *socket, *out, *resume, *checkpoint, *device, *precision;
	const char *log, *det, *plot_in;
	int autotune;
	int epochs, batch, chunk, log_every, slots, json;
	long stop_after, steps;
	int in_memory;
	float lr, noise_eps, dropout, weight_decay;
	int width, pool_width, embed;
	uint64_t seed;
	int timeout_ms;
	int placement;    /* enum feeder_placement */
	int reconnect_ms; /* feeder_set_reconnect; 0 off */
	int sync_bn;      /* --sync-bn: batch-norm over all ranks' batches */
	const char
		*trace; /* --trace PREFIX: each rank writes PREFIX.RANK, "epoch index" per sample */
	int check_replicas; /* --check-replicas: compare the ranks' parameters every step */
	/* The model's input: 0 where not given (train: features pipeline,
	 * fbank, 80 bins, 30 cepstra; embed, eval, --resume: the checkpoint's). */
	int pipeline; /* enum feeder_pipeline */
	int features; /* enum feeder_wave_features */
	int bins, ceps;
	/* Wave augmentation: datasets and probabilities (-1: not given). */
	const char *noise, *reverb;
	float aug_p, speed_p, specaug_p;
};

/* The command line: xvec's one struct args, the table that parses into it
 * and prints --help from it. */
static struct args args;
static int device_cuda; /* --device: args.device is its name */
static double reconnect_s;
static int want_help;

static const struct argtab_choice device_choices[] = { { "cpu", 0 }, { "cuda", 1 }, { NULL, 0 } };
static const struct argtab_choice placement_choices[] = { { "cpu", FEEDER_PLACEMENT_CPU },
							  { "gpu", FEEDER_PLACEMENT_GPU },
							  { "auto", FEEDER_PLACEMENT_AUTO },
							  { NULL, 0 } };
static const struct argtab_choice pipeline_choices[] = { { "features", FEEDER_PIPE_FEATURES },
							 { "wave", FEEDER_PIPE_WAVE },
							 { NULL, 0 } };
static const struct argtab_choice features_choices[] = { { "fbank", FEEDER_WAVE_FBANK },
							 { "mfcc", FEEDER_WAVE_MFCC },
							 { NULL, 0 } };

static struct argtab options[] = {
	ARGTAB_TEXT(
		"usage: xvec train --dataset NAME --out CKPT [options]\n"
		"       xvec embed --checkpoint CKPT --dataset NAME --out FILE [options]\n"
		"       xvec eval  --checkpoint CKPT --dataset NAME [--json] [--det FILE.svg] [options]\n"
		"       xvec plot  LOG.jsonl --out FILE.svg\n"
		"\ncommon:"),
	ARGTAB_STRING("dataset", 0, &args.dataset, "NAME", "the dataset feederd serves"),
	ARGTAB_STRING("out", 0, &args.out, "PATH",
		      "train: the checkpoint; embed: the x-vectors; plot: the SVG"),
	ARGTAB_STRING("checkpoint", 0, &args.checkpoint, "CKPT", "embed, eval: the model"),
	ARGTAB_STRING("socket", 0, &args.socket, "PATH",
		      "default $FEEDER_SOCKET, then " FEEDER_DEFAULT_SOCKET),
	ARGTAB_INT("batch", 0, &args.batch, 1, 65536, "B", "utterances a batch (64)"),
	ARGTAB_INT("chunk", 0, &args.chunk, 15, 100000, "L",
		   "frames a chunk (train 200, eval 300)"),
	ARGTAB_INT("slots", 0, &args.slots, 1, 256, "N", "batches feederd prepares ahead (4)"),
	ARGTAB_ENUM("device", 0, &device_cuda, device_choices, NULL, "where train runs (cpu)"),
	ARGTAB_INT("timeout-ms", 0, &args.timeout_ms, 0, 1e9, "MS",
		   "how long to wait for feederd (60000)"),
	ARGTAB_ENUM("placement", 0, &args.placement, placement_choices, NULL,
		    "where feederd preprocesses (cpu); gpu with --device cuda\n"
		    "takes batches in GPU memory (CUDA IPC)"),
	ARGTAB_REAL("reconnect", 0, &reconnect_s, 0, 1e6, "SEC",
		    "wait this long for a restarted feederd (0)"),
	ARGTAB_INT("seed", 0, &args.seed, 0, 1e18, "S", "the stream's and the model's seed (1)"),
	ARGTAB_FLAG("help", 'h', &want_help, "this text"),
	ARGTAB_TEXT("train:"),
	ARGTAB_INT("epochs", 0, &args.epochs, 1, 1e6, "E", "epochs (10)"),
	ARGTAB_REAL("lr", 0, &args.lr, 0, 10, "R", "learning rate (0.001)"),
	ARGTAB_REAL("noise-eps", 0, &args.noise_eps, 0, 100, "EPS", "input noise (0)"),
	ARGTAB_REAL("dropout", 0, &args.dropout, 0, 0.99, "P", "dropout (0)"),
	ARGTAB_REAL("weight-decay", 0, &args.weight_decay, 0, 10, "W", "weight decay (0)"),
	ARGTAB_INT("width", 0, &args.width, 1, 65536, "N", "frame layers' width (512)"),
	ARGTAB_INT("pool-width", 0, &args.pool_width, 1, 65536, "N",
		   "the layer before pooling (1500)"),
	ARGTAB_INT("embed", 0, &args.embed, 1, 65536, "N", "x-vector dimension (512)"),
	ARGTAB_INT("log-every", 0, &args.log_every, 1, 1e9, "N", "steps between log lines (10)"),
	ARGTAB_STRING("resume", 0, &args.resume, "CKPT", "continue training from CKPT"),
	ARGTAB_INT("stop-after", 0, &args.stop_after, 1, 1e15, "STEPS",
		   "stop after STEPS steps of this run"),
	ARGTAB_INT("steps", 0, &args.steps, 1, 1e15, "N", "stop after N steps in all"),
	ARGTAB_INT("in-memory", 0, &args.in_memory, 1, 4096, "K",
		   "benchmark: train on K batches held in memory instead\n"
		   "of the stream"),
	ARGTAB_STRING("log", 0, &args.log, "FILE.jsonl",
		      "one JSON object per log line: step, loss, accuracy,\n"
		      "samples/s, data wait, learning rate"),
	ARGTAB_TEXT("eval:"),
	ARGTAB_FLAG("json", 0, &args.json, "the result as one JSON object"),
	ARGTAB_STRING("det", 0, &args.det, "FILE.svg", "the DET curve, EER marked"),
	ARGTAB_TEXT("input: a dataset of feature matrices (packer pack audio), or of waveforms\n"
		    "(--store wave) whose features feederd computes. embed, eval and --resume\n"
		    "take them from the checkpoint and refuse others"),
	ARGTAB_ENUM("pipeline", 0, &args.pipeline, pipeline_choices, NULL,
		    "what the dataset holds (features)"),
	ARGTAB_ENUM("features", 0, &args.features, features_choices, NULL,
		    "wave: the features computed (fbank)"),
	ARGTAB_INT("bins", 0, &args.bins, 3, 256, "N", "wave: mel bins (80)"),
	ARGTAB_INT("ceps", 0, &args.ceps, 1, 256, "N", "wave, mfcc: cepstra (30)"),
	ARGTAB_TEXT("wave: in eval and embed --noise/--reverb make a noisy test condition\n"
		    "(random chunks of each utterance, seeded by --seed)"),
	ARGTAB_STRING("noise", 0, &args.noise, "NAME", "MUSAN-like noise/music/speech classes"),
	ARGTAB_STRING("reverb", 0, &args.reverb, "NAME", "room impulse responses"),
	ARGTAB_REAL("aug-p", 0, &args.aug_p, 0, 1, "P",
		    "the probability of each (train 0.6, eval 1)"),
	ARGTAB_REAL("speed-p", 0, &args.speed_p, 0, 1, "P", "train: speed 0.9x or 1.1x (0)"),
	ARGTAB_REAL("specaug-p", 0, &args.specaug_p, 0, 1, "P", "train: SpecAugment (0)"),
	ARGTAB_TEXT("cuda:"),
	ARGTAB_STRING("precision", 0, &args.precision, "fp32|tf32|bf16",
		      "the GEMMs' arithmetic (fp32)"),
	ARGTAB_FLAG("autotune", 0, &args.autotune, "pick each GEMM's fastest cuBLASLt algorithm"),
	ARGTAB_TEXT("mpirun -np N xvec train ... trains N data-parallel replicas (gradients\n"
		    "averaged every step; rank 0 logs and writes the checkpoint); --resume with\n"
		    "another number of ranks continues the epoch where all ranks had stopped"),
	ARGTAB_FLAG("sync-bn", 0, &args.sync_bn, "batch-norm statistics over all ranks"),
	ARGTAB_FLAG("check-replicas", 0, &args.check_replicas,
		    "fail unless every rank's parameters are equal after\n"
		    "each step"),
	ARGTAB_STRING("trace", 0, &args.trace, "PREFIX",
		      "each rank writes PREFIX.RANK: the epoch and dataset\n"
		      "index of every sample it trains on"),
	ARGTAB_END,
};

static void usage(FILE *f)
{
	argtab_help(f, options);
	fprintf(f, "data parallel in this build: %s\n", xvec_dist_about());
}

/* Copy a dataset name given as opt (NULL: none) into dst; 0 (said) when it
 * is not one. */
static int dataset_name_ok(const char *name, const char *opt, char dst[FEEDER_DATASET_MAX])
{
	if (!name)
		return 1;
	size_t n = strlen(name);
	if (n == 0 || n >= FEEDER_DATASET_MAX || name[0] == '.' ||
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
		    n) {
		XERR("%s '%s': not a dataset name (A-Z a-z 0-9 . _ -, not starting with '.', at "
		     "most %d bytes)\n",
		     opt, name, FEEDER_DATASET_MAX - 1);
		return 0;
	}
	memcpy(dst, name, n + 1);
	return 1;
}

/* The options that make sense together whatever the checkpoint says. */
static int check_input_args(const struct args *a)
{
	if (strcmp(a->cmd, "train") && (a->speed_p >= 0 || a->specaug_p >= 0)) {
		fprintf(stderr,
			"xvec %s: --speed-p and --specaug-p are options of train (the test "
			"condition is --noise and --reverb)\n",
			a->cmd);
		return -1;
	}
	if (a->aug_p >= 0 && !a->noise && !a->reverb) {
		XERR("--aug-p is the probability of --noise and --reverb: name one of them\n");
		return -1;
	}
	char name[FEEDER_DATASET_MAX];
	if (!dataset_name_ok(a->noise, "--noise", name) ||
	    !dataset_name_ok(a->reverb, "--reverb", name))
		return -1;
	return 0;
}

/* "--pipeline wave --features mfcc --bins 30 --ceps 30": the input as options. */
static void input_name(int pipeline, int features, int bins, int ceps, char *buf, size_t len)
{
	if (pipeline != FEEDER_PIPE_WAVE)
		snprintf(buf, len, "--pipeline features");
	else if (features == FEEDER_WAVE_MFCC)
		snprintf(buf, len, "--pipeline wave --features mfcc --bins %d --ceps %d", bins,
			 ceps);
	else
		snprintf(buf, len, "--pipeline wave --features fbank --bins %d", bins);
}

/* Settle the model's input: what the command line gives, the rest from the
 * checkpoint ck (NULL: a new model, then the defaults). A value given that
 * contradicts the checkpoint is refused, naming both: a model fed other
 * features than it learnt from scores nonsense without failing. from names
 * the checkpoint option in messages. 0, or -1 (said). */
static int resolve_input(struct args *a, const struct xvec_position *ck, const char *from)
{
	int wave_opts = a->features || a->bins || a->ceps || a->noise || a->reverb ||
			a->speed_p >= 0 || a->specaug_p >= 0;
	if (ck) {
		int cb = (int)ck->bins, cc = (int)ck->ceps, cf = (int)ck->features;
		int mis = (a->pipeline && a->pipeline != (int)ck->pipeline) ||
			  (ck->pipeline == FEEDER_PIPE_WAVE &&
			   ((a->features && a->features != cf) || (a->bins && a->bins != cb) ||
			    (a->ceps && (cf != FEEDER_WAVE_MFCC || a->ceps != cc))));
		if (mis) {
			char want[128], got[128];
			input_name((int)ck->pipeline, cf, cb, cc, want, sizeof want);
			input_name(a->pipeline ? a->pipeline : (int)ck->pipeline,
				   a->features ? a->features : cf, a->bins ? a->bins : cb,
				   a->ceps ? a->ceps : cc, got, sizeof got);
			XERR("%s: the model was trained on %s, not %s (its input must be made the same "
			     "way; leave these options out to take the checkpoint's)\n",
			     from, want, got);
			return -1;
		}
		a->pipeline = (int)ck->pipeline;
		if (ck->pipeline == FEEDER_PIPE_WAVE) {
			a->features = cf;
			a->bins = cb;
			a->ceps = cc;
		}
	}
	if (!a->pipeline)
		a->pipeline = FEEDER_PIPE_FEATURES;
	if (a->pipeline != FEEDER_PIPE_WAVE) {
		if (wave_opts) {
			XERR("--features, --bins, --ceps, --noise, --reverb, --aug-p, --speed-p and "
			     "--specaug-p are options of --pipeline wave%s\n",
			     ck ? " (the checkpoint's model was trained on --pipeline features)"
				: "");
			return -1;
		}
		return 0;
	}
	if (a->chunk > FEEDER_MAX_WAVE_CHUNK) {
		XERR("--chunk %d: the wave pipeline cuts at most %d frames\n", a->chunk,
		     FEEDER_MAX_WAVE_CHUNK);
		return -1;
	}
	if (!a->features)
		a->features = FEEDER_WAVE_FBANK;
	if (!a->bins)
		a->bins = 80;
	if (a->features != FEEDER_WAVE_MFCC) {
		if (a->ceps) {
			XERR("--ceps applies to --features mfcc\n");
			return -1;
		}
		return 0;
	}
	if (!a->ceps)
		a->ceps =
			a->bins < 30 ? a->bins : 30; /* --bins below 30: keep them all, as packer */
	if (a->ceps > a->bins) {
		XERR("--ceps %d is above --bins %d\n", a->ceps, a->bins);
		return -1;
	}
	return 0;
}

static void args_default(struct args *a)
{
	memset(a, 0, sizeof(*a));
	a->device = "cpu";
	a->precision = "fp32";
	a->epochs = 10;
	a->batch = 64;
	a->lr = 1e-3f;
	a->width = 512;
	a->pool_width = 1500;
	a->embed = 512;
	a->seed = 1;
	a->log_every = 10;
	a->slots = 4;
	a->stop_after = -1;
	a->steps = -1;
	a->timeout_ms = 60000;
	a->aug_p = a->speed_p = a->specaug_p = -1;
}

/* The options each command needs, and those that belong to another. */
static int check_command_args(const struct args *a)
{
	if (a->log && strcmp(a->cmd, "train")) {
		fprintf(stderr, "xvec %s: --log is an option of train\n", a->cmd);
		return -1;
	}
	if (a->det && strcmp(a->cmd, "eval")) {
		fprintf(stderr, "xvec %s: --det is an option of eval\n", a->cmd);
		return -1;
	}
	if (!a->dataset) {
		fprintf(stderr, "xvec %s: --dataset is required\n", a->cmd);
		return -1;
	}
	if (!strcmp(a->cmd, "train") && !a->out) {
		fprintf(stderr, "xvec train: --out CKPT is required\n");
		return -1;
	}
	if (strcmp(a->cmd, "train") && !a->checkpoint) {
		fprintf(stderr, "xvec %s: --checkpoint is required\n", a->cmd);
		return -1;
	}
	if (!strcmp(a->cmd, "embed") && !a->out) {
		fprintf(stderr, "xvec embed: --out FILE is required\n");
		return -1;
	}
	return 0;
}

/* The command line into a: 0, 1 after --help (printed), or -1 (said). */
static int parse_args(int argc, char **argv, struct args *a)
{
	args_default(a);
	if (argc < 2) {
		usage(stderr);
		return -1;
	}
	a->cmd = argv[1];
	if (!strcmp(a->cmd, "-h") || !strcmp(a->cmd, "--help")) {
		usage(stdout);
		return 1;
	}
	if (strcmp(a->cmd, "train") && strcmp(a->cmd, "embed") && strcmp(a->cmd, "eval") &&
	    strcmp(a->cmd, "plot")) {
		XERR("unknown command '%s' (train, embed, eval or plot)\n", a->cmd);
		return -1;
	}
	char err[512], *ops[2];
	int n;
	if (argtab_parse(options, argc - 1, argv + 1, ops, 2, &n, err, sizeof err)) {
		XERR("%s (see --help)\n", err);
		return -1;
	}
	if (want_help) {
		usage(stdout);
		return 1;
	}
	a->device = device_cuda ? "cuda" : "cpu";
	a->reconnect_ms = (int)(reconnect_s * 1000);
	if (!strcmp(a->cmd, "plot")) {
		if (n != 1 || !a->out) {
			fprintf(stderr, "xvec plot: usage: xvec plot LOG.jsonl --out FILE.svg\n");
			return -1;
		}
		a->plot_in = ops[0];
		return 0;
	}
	if (n > 0) {
		XERR("unexpected argument '%s'\n", ops[0]);
		return -1;
	}
	if (check_command_args(a))
		return -1;
	if (!a->chunk)
		a->chunk = strcmp(a->cmd, "train") ? 300 : 200;
	if (check_input_args(a))
		return -1;
	/* A new model's input is the command line's: settle it now. */
	if (!strcmp(a->cmd, "train") && !a->resume)
		return resolve_input(a, NULL, NULL);
	return 0;
}

/* --device cuda needs the CUDA model in this build and a usable device; say
 * exactly which is missing. eval and embed run on the CPU model. */
static int check_device(const struct args *a)
{
	if (!strcmp(a->device, "cpu"))
		return 0;
	char why[256];
	struct cuda_info_device d;
	int n = cuda_info_devices(&d, why, sizeof(why));
	if (xvec_trainer_cuda_built() && !strcmp(a->cmd, "train")) {
		if (n < 0) {
			XERR("--device cuda: %s\n", why);
			return -1;
		}
		if (a->in_memory) {
			XERR("--in-memory is a CPU benchmark mode\n");
			return -1;
		}
		printf("device: %s (sm_%d%d, %zu MiB)\n", d.name, d.major, d.minor,
		       d.total_mem >> 20);
		return 0;
	}
	if (xvec_trainer_cuda_built())
		fprintf(stderr,
			"xvec %s: --device cuda: only train runs on the GPU; %s runs on the "
			"CPU (use --device cpu)\n",
			a->cmd, a->cmd);
	else if (n < 0)
		XERR("--device cuda: %s; this build also has no CUDA trainer "
		     "(use --device cpu)\n",
		     why);
	else
		XERR("--device cuda: found %s, but this build has no CUDA "
		     "trainer (use --device cpu)\n",
		     d.name);
	return -1;
}

static int opts_for(const struct args *a, struct feeder_stream_opts *o, int train)
{
	feeder_stream_opts_init(o);
	if (feeder_stream_opts_set_dataset(o, a->dataset)) {
		XERR("--dataset '%s': not a dataset name (A-Z a-z 0-9 . _ -, "
		     "not starting with '.', at most %d bytes)\n",
		     a->dataset, FEEDER_DATASET_MAX - 1);
		return -1;
	}
	o->pipeline = (uint32_t)(a->pipeline ? a->pipeline : FEEDER_PIPE_FEATURES);
	o->batch = (uint32_t)a->batch;
	o->seed = a->seed;
	o->slots = (uint32_t)a->slots;
	o->dtype = FEEDER_DTYPE_F32;
	o->drop_last = train;
	o->features.chunk_len = (uint32_t)a->chunk;
	o->features.train = train;
	if (o->pipeline == FEEDER_PIPE_WAVE) {
		struct feeder_wave_opts *w = &o->wave;
		w->chunk_len = (uint32_t)a->chunk;
		w->train = train;
		/* resolve_input has set them */
		w->features = (uint32_t)a->features;
		w->bins = (uint32_t)a->bins;
		if (a->features == FEEDER_WAVE_MFCC)
			w->ceps = (uint32_t)a->ceps;
		if (!dataset_name_ok(a->noise, "--noise", w->noise) ||
		    !dataset_name_ok(a->reverb, "--reverb", w->rir))
			return -1;
		/* Train: each augmentation with its probability. Eval and embed
		 * with --noise or --reverb: the test condition, which feederd
		 * applies in train mode only; so train mode with nothing random
		 * but the chunk's place and the noise and reverberation. */
		float p = a->aug_p >= 0 ? a->aug_p : train ? 0.6f : 1.0f;
		w->noise_p = a->noise ? p : 0;
		w->reverb_p = a->reverb ? p : 0;
		if (!train && (a->noise || a->reverb)) {
			w->train = 1;
			w->dither = 0;
			w->gain_p = 0;
		}
		w->speed_p = train && a->speed_p > 0 ? a->speed_p : 0;
		w->specaug_p = train && a->specaug_p > 0 ? a->specaug_p : 0;
	}
	o->placement = a->placement;
	/* The CUDA trainer takes device-resident batches when the daemon
	 * preprocesses on a GPU this process sees (xvec_feed copies them on
	 * the device); libfeeder falls back to the host ring otherwise. */
	o->device_batches = train && !strcmp(a->device, "cuda");
	return 0;
}

/* One line: what the wave pipeline makes of each utterance. */
static void print_wave_input(const struct feeder_stream_opts *o, FILE *f)
{
	const struct feeder_wave_opts *w = &o->wave;
	char feat[64], aug[512] = "";
	size_t n = 0;
	if (w->features == FEEDER_WAVE_MFCC)
		snprintf(feat, sizeof feat, "mfcc %u ceps of %u bins", w->ceps, w->bins);
	else
		snprintf(feat, sizeof feat, "fbank %u bins", w->bins);
#define ADD(...) n += (size_t)snprintf(aug + n, n < sizeof aug ? sizeof aug - n : 0, __VA_ARGS__)
	if (w->noise_p > 0)
		ADD(", noise from '%s' p=%g", w->noise, w->noise_p);
	if (w->reverb_p > 0)
		ADD(", reverberation from '%s' p=%g", w->rir, w->reverb_p);
	if (w->speed_p > 0)
		ADD(", speed 0.9/1.1 p=%g", w->speed_p);
	if (w->specaug_p > 0)
		ADD(", specaugment p=%g", w->specaug_p);
#undef ADD
	fprintf(f, "input: wave pipeline, %s, %s chunks%s\n", feat, w->train ? "random" : "centred",
		aug[0] ? aug : ", no augmentation");
}

static int open_stream(struct feeder *f, const struct feeder_stream_opts *o, int timeout_ms,
		       struct feeder_stream **s, struct feeder_stream_info *info)
{
	int rc = feeder_stream_open(f, o, timeout_ms, s);
	if (rc) {
		XERR("opening a stream on '%s': %s\n", o->dataset,
		     feeder_last_error(f)[0] ? feeder_last_error(f) : feeder_strerror(rc));
		return rc;
	}
	feeder_stream_info(*s, info);
	return 0;
}

static int connect_daemon(const struct args *a, struct feeder **f)
{
	int rc = feeder_connect(a->socket, a->timeout_ms, f);
	if (rc)
		XERR("connecting to feederd: %s\n",
		     feeder_last_error(NULL)[0] ? feeder_last_error(NULL) : feeder_strerror(rc));
	else if (a->reconnect_ms)
		feeder_set_reconnect(*f, a->reconnect_ms);
	return rc;
}

/* The number of samples of dataset --dataset, from the daemon. */
static int dataset_samples(struct feeder *f, const struct args *a, uint64_t *n)
{
	struct feeder_dataset_status *ds = NULL;
	size_t k = 0;
	int rc = feeder_get_datasets(f, a->timeout_ms, &ds, &k);
	if (rc) {
		XERR("asking feederd for its datasets: %s\n", feeder_strerror(rc));
		return rc;
	}
	rc = -ENOENT;
	for (size_t i = 0; i < k; i++)
		if (!strcmp(ds[i].name, a->dataset)) {
			*n = ds[i].samples;
			rc = 0;
		}
	free(ds);
	if (rc)
		XERR("feederd serves no dataset '%s'\n", a->dataset);
	return rc;
}

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int save(struct xvec_model *m, const struct args *a, struct xvec_position *pos,
		uint64_t batches_per_epoch)
{
	uint8_t blob[XVEC_POSITION_SIZE];
	char err[512];
	xvec_position_wrap(pos, batches_per_epoch);
	xvec_position_encode(pos, blob);
	if (xvec_checkpoint_save(m, a->out, blob, sizeof(blob), err, sizeof(err))) {
		XERR("saving %s: %s\n", a->out, err);
		return -1;
	}
	return 0;
}

static void model_options(const struct args *a, struct xvec_options *xo)
{
	xo->lr = a->lr;
	xo->noise_eps = a->noise_eps;
	xo->dropout = a->dropout;
	xo->weight_decay = a->weight_decay;
}

/* --resume: the model and where its stream stopped. 0, 1 (error, said), or
 * 2 (nothing left to train, said). */
static int resume(struct args *a, int world, struct xvec_options *xo, struct xvec_model **m,
		  struct xvec_position *pos)
{
	uint8_t blob[XVEC_POSITION_SIZE];
	size_t bl = 0;
	char err[512];
	if (xvec_checkpoint_peek(a->resume, xo, err, sizeof(err))) {
		XERR("--resume %s: %s\n", a->resume, err);
		return 1;
	}
	model_options(a, xo);
	if (xvec_model_create(m, xo, a->batch, a->chunk, err, sizeof(err)) ||
	    xvec_checkpoint_load(*m, a->resume, blob, sizeof(blob), &bl, err, sizeof(err)) ||
	    xvec_position_decode(blob, bl, pos, err, sizeof(err))) {
		XERR("--resume %s: %s\n", a->resume, err);
		return 1;
	}
	char from[4200];
	snprintf(from, sizeof from, "--resume %s", a->resume);
	if (resolve_input(a, pos, from))
		return 1;
	/* Another world size resumes by sample position, whatever the batch. */
	if ((pos->world == (uint32_t)world && pos->batch != (uint32_t)a->batch) ||
	    pos->chunk != (uint32_t)a->chunk) {
		XERR("--resume %s: the checkpoint was written with --batch %u "
		     "--chunk %u, not %d and %d\n",
		     a->resume, pos->batch, pos->chunk, a->batch, a->chunk);
		return 1;
	}
	/* The epoch order is the stream seed's: another resumes elsewhere. */
	if (pos->seed != a->seed) {
		XERR("--resume %s: the checkpoint's stream was seeded with --seed %llu, not %llu\n",
		     a->resume, (unsigned long long)pos->seed, (unsigned long long)a->seed);
		return 1;
	}
	if (pos->epoch >= (uint64_t)a->epochs) {
		XERR("--resume %s: already trained %llu of %d epochs\n", a->resume,
		     (unsigned long long)pos->epoch, a->epochs);
		return 2;
	}
	return 0;
}

/* The resumed position against the dataset it continues on, before the
 * stream is opened at it: its sample count in *n. 0, or -1 (said). */
static int check_resume(struct feeder *f, const struct args *a, const struct xvec_position *pos,
			const struct xvec_model *m, uint64_t *n)
{
	char err[512];
	if (dataset_samples(f, a, n))
		return -1;
	if (xvec_position_check(pos, *n, err, sizeof(err))) {
		XERR("--resume %s: %s\n", a->resume, err);
		return -1;
	}
	printf("resuming from %s at epoch %llu batch %llu of %u rank%s (step %llu)\n", a->resume,
	       (unsigned long long)pos->epoch, (unsigned long long)pos->next_batch, pos->world,
	       pos->world == 1 ? "" : "s", (unsigned long long)xvec_model_step(m));
	return 0;
}

/* The model for the stream: created for the dataset, or checked against it
 * when resumed. */
static int fit_model(const struct args *a, const struct feeder_stream_info *info,
		     struct xvec_options *xo, struct xvec_model **m)
{
	char err[512];
	if (!*m) {
		xo->feat_dim = (int)info->shape[1];
		xo->num_speakers = (int)info->classes;
		if (xvec_model_create(m, xo, a->batch, a->chunk, err, sizeof(err))) {
			XERR("%s\n", err);
			return -1;
		}
		return 0;
	}
	if (xvec_model_options(*m)->feat_dim != (int)info->shape[1] ||
	    xvec_model_options(*m)->num_speakers != (int)info->classes) {
		XERR("--resume: the checkpoint's model (%d features, %d speakers) "
		     "does not fit dataset '%s' (%u, %u)\n",
		     xvec_model_options(*m)->feat_dim, xvec_model_options(*m)->num_speakers,
		     a->dataset, info->shape[1], info->classes);
		return -1;
	}
	return 0;
}

/* Under MPI: this rank's name in messages, the checks that need the world
 * size, and rank 0 alone speaking on stdout. 0 or -1 (said). */
static int train_join_world(const struct args *a, const struct xvec_dist *dist)
{
	if (dist->world <= 1)
		return 0;
	snprintf(who, sizeof who, "xvec: rank %d of %d", dist->rank, dist->world);
	char why[256];
	if (!strcmp(a->device, "cuda") && xvec_trainer_cuda_built() &&
	    xvec_trainer_cuda_dp_ready(why, sizeof why)) {
		XERR("--device cuda with %d ranks needs NCCL: %s\n", dist->world, why);
		return -1;
	}
	if (a->in_memory) {
		XERR("--in-memory is a one-process benchmark\n");
		return -1;
	}
	/* rank 0 speaks for the job; errors still come from every rank */
	if (dist->rank != 0 && !freopen("/dev/null", "w", stdout)) {
		XERR("/dev/null: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* The stream's options for training from pos: the epoch, batch or sample
 * it starts at, and this rank's share. An elastic resume (another world
 * size) goes on from where all the old ranks had stopped, by sample. */
static int train_stream_opts(const struct args *a, const struct xvec_dist *dist,
			     struct xvec_position *pos, uint64_t samples,
			     struct feeder_stream_opts *o)
{
	pos->pipeline = (uint32_t)a->pipeline;
	pos->features = a->pipeline == FEEDER_PIPE_WAVE ? (uint32_t)a->features : 0;
	pos->bins = a->pipeline == FEEDER_PIPE_WAVE ? (uint32_t)a->bins : 0;
	pos->ceps = a->pipeline == FEEDER_PIPE_WAVE && a->features == FEEDER_WAVE_MFCC
			    ? (uint32_t)a->ceps
			    : 0;
	if (opts_for(a, o, 1))
		return -1;
	o->epoch = pos->epoch;
	o->epochs = (uint32_t)(a->epochs - (int)pos->epoch);
	o->start_batch = pos->next_batch;
	o->start_sample = pos->start_sample;
	o->rank = (uint32_t)dist->rank;
	o->world = (uint32_t)dist->world;
	if (pos->world == (uint32_t)dist->world)
		return 0;
	o->start_sample = xvec_position_sample(pos);
	o->start_batch = 0;
	printf("elastic resume: %u ranks had taken %llu of the %llu samples of epoch %llu; "
	       "%d ranks share the rest\n",
	       pos->world, (unsigned long long)o->start_sample, (unsigned long long)samples,
	       (unsigned long long)pos->epoch, dist->world);
	pos->world = (uint32_t)dist->world;
	pos->start_sample = o->start_sample;
	pos->next_batch = 0;
	pos->batch = (uint32_t)a->batch;
	return 0;
}

/* What this run trains on and with, and the data-parallel reductions. 0 or
 * -1 (said). */
static int train_announce(const struct args *a, const struct feeder_stream_info *info,
			  const struct feeder_stream_opts *o, const struct xvec_options *xo,
			  const struct xvec_position *pos, struct xvec_model *m,
			  struct xvec_dist *dist)
{
	printf("xvec train: dataset %s, %llu utterances, %u speakers, %u-dim features, "
	       "batch %d x %d frames, %llu batches/epoch, epochs %llu..%d, device %s\n",
	       a->dataset, (unsigned long long)info->samples, info->classes, info->shape[1],
	       a->batch, a->chunk, (unsigned long long)info->batches_per_epoch,
	       (unsigned long long)pos->epoch, a->epochs - 1, a->device);
	if (a->pipeline == FEEDER_PIPE_WAVE)
		print_wave_input(o, stdout);
	printf("model: width %d, pool %d, embed %d, noise eps %g, dropout %g, lr %g\n", xo->width,
	       xo->pool_width, xo->embed, xo->noise_eps, xo->dropout, xo->lr);
	if (dist->world <= 1)
		return 0;
	printf("data parallel: %d ranks (%s), batch %d per rank = %d global, batch-norm %s\n",
	       dist->world, xvec_dist_about(), a->batch, a->batch * dist->world,
	       a->sync_bn ? "over all ranks (--sync-bn)" : "per rank");
	if (xvec_model_set_dp(m, dist->rank, dist->world, xvec_dist_sum_d, xvec_dist_sum_f, dist,
			      a->sync_bn, &dist->reduce_s)) {
		XERR("out of memory\n");
		return -1;
	}
	return 0;
}

/* The trainer for --device over the stream, with its --trace file. 0 or -1
 * (said). */
static int train_make_trainer(const struct args *a, const struct feeder_stream_info *info,
			      struct xvec_model *m, struct feeder *f, struct feeder_stream *s,
			      struct xvec_dist *dist, struct xvec_trainer **t)
{
	char err[512];
	int r;
	if (!strcmp(a->device, "cuda")) {
		struct xvec_cuda_train_opts co = { .precision = a->precision,
						   .autotune = a->autotune,
						   .batch = a->batch,
						   .feat_dim = (int)info->shape[1],
						   .chunk = a->chunk,
						   .timeout_ms = a->timeout_ms,
						   .log = stdout,
						   .local_rank = dist->local_rank };
		r = xvec_trainer_cuda_create(t, m, s, &co, err, sizeof(err));
	} else {
		r = xvec_trainer_cpu_create(t, m, f, s, a->chunk, a->in_memory, a->timeout_ms, err,
					    sizeof(err));
	}
	if (r) {
		XERR("--device %s: %s\n", a->device, err);
		return -1;
	}
	(*t)->dist = dist;
	(*t)->interrupted = &interrupted;
	(*t)->check_replicas = a->check_replicas;
	if (!a->trace)
		return 0;
	char path[4096];
	snprintf(path, sizeof path, "%s.%d", a->trace, dist->rank);
	if (!((*t)->trace = fopen(path, a->resume ? "a" : "w"))) {
		XERR("--trace %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Every rank ready, with as many batches an epoch as the others: the
 * ranks step in lockstep. Sets *started once this rank has joined the
 * agreement. 0 or -1 (said). */
static int train_agree_start(const struct args *a, const struct feeder_stream_info *info,
			     struct xvec_dist *dist, struct xvec_trainer *t, int *started)
{
	char err[512];
	if (dist->world <= 1)
		return 0;
	long v[3] = { 1, (long)info->batches_per_epoch, -(long)info->batches_per_epoch };
	*started = 1;
	if (xvec_dist_min(dist, v, 3)) {
		XERR("agreeing on the start with the other ranks failed (MPI)\n");
		return -1;
	}
	if (v[0] < 1) {
		XERR("stopping: another rank failed to start (its own line says why)\n");
		return -1;
	}
	if (v[1] != -v[2]) {
		XERR("the ranks have %ld to %ld batches an epoch (dataset '%s' does not share "
		     "evenly into batches of %d over %d ranks); choose another --batch\n",
		     v[1], -v[2], a->dataset, a->batch, dist->world);
		return -1;
	}
	if (!strcmp(a->device, "cuda") &&
	    xvec_trainer_cuda_join(t, dist, a->sync_bn, err, sizeof(err))) {
		XERR("--device cuda: %s\n", err);
		return -1;
	}
	return 0;
}

/* The training loop, its --log, and the checkpoint at the end. Returns the
 * exit status: 0, 130 when interrupted, 1 (said). */
static int train_run(const struct args *a, struct xvec_trainer *t, struct xvec_model *m,
		     struct xvec_dist *dist, struct xvec_position *pos,
		     const struct feeder_stream_info *info)
{
	char err[512];
	signal(SIGINT, on_sigint);
	signal(SIGTERM, on_sigint);
	struct xvec_train_limits lim = { .log_every = a->log_every,
					 .steps = a->steps,
					 .stop_after = a->stop_after,
					 .interrupted = &interrupted,
					 .lr = a->lr,
					 .world = dist->world,
					 .reduce_s = &dist->reduce_s };
	if (a->log && dist->rank == 0 && !(lim.jsonl = fopen(a->log, a->resume ? "a" : "w"))) {
		XERR("--log %s: %s\n", a->log, strerror(errno));
		return 1;
	}
	struct xvec_train_result res = { .epoch = pos->epoch, .next_batch = pos->next_batch };
	int trc = xvec_train_run(t, &lim, stdout, &res, err, sizeof(err));
	if (lim.jsonl && fclose(lim.jsonl) != 0 && !trc) {
		XERR("--log %s: %s\n", a->log, strerror(errno));
		return 1;
	}
	if (trc) {
		XERR("training: %s\n", err);
		return 1;
	}
	/* In-memory steps cycle a few batches: no stream position to keep.
	 * The replicas are equal: rank 0 writes the checkpoint. */
	if (!a->in_memory && dist->rank == 0) {
		pos->epoch = res.epoch;
		pos->next_batch = res.next_batch;
		if (save(m, a, pos, info->batches_per_epoch))
			return 1;
		printf("checkpoint: %s (step %llu)\n", a->out,
		       (unsigned long long)xvec_model_step(m));
	}
	return res.interrupted ? 130 : 0;
}

static void model_new_options(const struct args *a, struct xvec_options *xo)
{
	xvec_options_default(xo);
	xo->width = a->width;
	xo->pool_width = a->pool_width;
	xo->embed = a->embed;
	xo->seed = a->seed;
	model_options(a, xo);
}

static int cmd_train(const struct args *args)
{
	struct args ra = *args; /* the input settled by resolve_input */
	const struct args *a = &ra;
	struct feeder *f = NULL;
	struct feeder_stream *s = NULL;
	struct feeder_stream_info info;
	struct feeder_stream_opts o;
	struct xvec_model *m = NULL;
	struct xvec_trainer *t = NULL;
	struct xvec_position pos = { .batch = (uint32_t)a->batch,
				     .chunk = (uint32_t)a->chunk,
				     .seed = a->seed };
	struct xvec_options xo;
	char err[512];
	int rc = 1;
	struct xvec_dist dist;
	if (xvec_dist_init(&dist, err, sizeof(err))) {
		XERR("%s\n", err);
		return 1;
	}
	/* Under MPI every rank must reach the start together: one that fails
	 * before it still joins the agreement (below, at out) with "failed",
	 * so that the others stop instead of waiting for it. */
	int started = dist.world <= 1;
	if (train_join_world(a, &dist) || check_device(a))
		goto out;
	model_new_options(a, &xo);
	pos.world = (uint32_t)dist.world;
	if (a->resume && (rc = resume(&ra, dist.world, &xo, &m, &pos)) != 0) {
		rc = rc == 2 ? 0 : 1;
		goto out;
	}
	rc = 1;
	uint64_t samples = 0;
	if (connect_daemon(a, &f) || (a->resume && check_resume(f, a, &pos, m, &samples)) ||
	    train_stream_opts(a, &dist, &pos, samples, &o) ||
	    open_stream(f, &o, a->timeout_ms, &s, &info))
		goto out;
	if (info.ndim < 3 || info.shape[2] != (uint32_t)a->chunk) {
		XERR("stream on '%s' is not a features stream of %d frames\n", a->dataset,
		     a->chunk);
		goto out;
	}
	if (fit_model(a, &info, &xo, &m) || train_announce(a, &info, &o, &xo, &pos, m, &dist) ||
	    train_make_trainer(a, &info, m, f, s, &dist, &t) ||
	    train_agree_start(a, &info, &dist, t, &started))
		goto out;
	rc = train_run(a, t, m, &dist, &pos, &info);
out:
	if (!started) {
		long v[3] = { 0, 0, 0 }; /* "failed": let the others stop too */
		xvec_dist_min(&dist, v, 3);
	}
	/* The trainer before the stream: the CUDA feed holds slots of it. */
	if (t && t->trace && fclose(t->trace) != 0 && rc == 0) {
		XERR("--trace: %s\n", strerror(errno));
		rc = 1;
	}
	if (t)
		t->ops->destroy(t);
	if (s)
		feeder_stream_close(s);
	feeder_disconnect(f);
	xvec_model_destroy(m);
	xvec_dist_finish(&dist);
	return rc;
}

/* Embed every batch of stream s with m into emb, labels and names (NULL:
 * none), *n of them. 0 or -1 (said). */
static int embed_stream(const struct args *a, struct xvec_model *m, struct feeder_stream *s,
			const struct feeder_stream_info *info, float *emb, int32_t *labels,
			char *names, size_t *n)
{
	char err[512];
	int dim = xvec_model_options(m)->embed;
	*n = 0;
	for (;;) {
		struct feeder_batch b;
		int r = feeder_stream_next(s, a->timeout_ms, &b);
		if (r == FEEDER_EEND)
			return 0;
		if (r) {
			XERR("waiting for a batch: %s\n", feeder_strerror(r));
			return -1;
		}
		if (*n + b.count > info->samples) {
			XERR("the stream sent more utterances than the dataset has\n");
			return -1;
		}
		if (xvec_model_embed(m, b.data, (int)b.count, a->chunk, emb + *n * dim, err,
				     sizeof(err))) {
			XERR("%s\n", err);
			return -1;
		}
		memcpy(labels + *n, b.labels, sizeof(int32_t) * b.count);
		for (uint32_t i = 0; names && i < b.count; i++) {
			char *dst = names + (*n + i) * FEEDER_SAMPLE_NAME_MAX;
			const char *src =
				b.names ? b.names + (size_t)i * FEEDER_SAMPLE_NAME_MAX : "";
			if (src[0])
				snprintf(dst, FEEDER_SAMPLE_NAME_MAX, "%s", src);
			else
				snprintf(dst, FEEDER_SAMPLE_NAME_MAX, "#%llu",
					 (unsigned long long)b.indices[i]);
		}
		*n += b.count;
		feeder_batch_release(s, &b);
	}
}

/* Embeddings of every utterance of the dataset (centered chunks, eval mode),
 * with labels and, when names is not NULL, the utterances' names (the
 * dataset's, or "#INDEX" where it keeps none): FEEDER_SAMPLE_NAME_MAX bytes
 * each. */
static int compute_embeddings(const struct args *args, float **emb, int32_t **labels, char **names,
			      size_t *n, int *dim)
{
	struct args ra = *args; /* the input settled by resolve_input */
	const struct args *a = &ra;
	struct xvec_position pos;
	size_t bl = 0;
	struct feeder *f = NULL;
	struct feeder_stream *s = NULL;
	struct feeder_stream_info info;
	struct feeder_stream_opts o;
	struct xvec_model *m = NULL;
	struct xvec_options xo;
	char err[512];
	uint8_t blob[XVEC_POSITION_SIZE];
	int rc = -1;

	*emb = NULL;
	*labels = NULL;
	if (names)
		*names = NULL;
	if (check_device(a))
		return -1;
	if (xvec_checkpoint_peek(a->checkpoint, &xo, err, sizeof(err))) {
		XERR("%s: %s\n", a->checkpoint, err);
		return -1;
	}
	if (xvec_model_create(&m, &xo, a->batch, a->chunk, err, sizeof(err)) ||
	    xvec_checkpoint_load(m, a->checkpoint, blob, sizeof(blob), &bl, err, sizeof(err))) {
		XERR("%s: %s\n", a->checkpoint, err);
		goto out;
	}
	/* A checkpoint without a position (another program's) says nothing of
	 * its input: the command line's then. One with a position says how
	 * the model's input was made, which eval must follow: a damaged one is
	 * refused. Its place in the training set is not checked here (eval
	 * reads another dataset). */
	int known = bl > 0;
	if (known && xvec_position_decode(blob, bl, &pos, err, sizeof(err))) {
		XERR("--checkpoint %s: %s\n", a->checkpoint, err);
		goto out;
	}
	char from[4200];
	snprintf(from, sizeof from, "--checkpoint %s", a->checkpoint);
	if (resolve_input(&ra, known ? &pos : NULL, from))
		goto out;
	if (connect_daemon(a, &f))
		goto out;
	if (opts_for(a, &o, 0))
		goto out;
	if (a->pipeline == FEEDER_PIPE_WAVE && (a->noise || a->reverb) && !a->json)
		print_wave_input(&o, stdout);
	o.shuffle = 0; /* dataset order: embeddings line up with the dataset */
	o.names = names != NULL;
	if (open_stream(f, &o, a->timeout_ms, &s, &info))
		goto out;
	if (info.shape[1] != (uint32_t)xo.feat_dim) {
		XERR("dataset '%s' has %u-dim features, the model takes %d\n", a->dataset,
		     info.shape[1], xo.feat_dim);
		goto out;
	}
	*dim = xo.embed;
	*emb = malloc(sizeof(float) * (size_t)xo.embed * info.samples);
	*labels = malloc(sizeof(int32_t) * info.samples);
	if (names)
		*names = malloc((size_t)FEEDER_SAMPLE_NAME_MAX * info.samples);
	if (!*emb || !*labels || (names && !*names)) {
		XERR("out of memory for %llu embeddings\n", (unsigned long long)info.samples);
		goto out;
	}
	if (embed_stream(a, m, s, &info, *emb, *labels, names ? *names : NULL, n))
		goto out;
	rc = 0;
out:
	if (s)
		feeder_stream_close(s);
	feeder_disconnect(f);
	xvec_model_destroy(m);
	if (rc) {
		free(*emb);
		free(*labels);
		*emb = NULL;
		*labels = NULL;
		if (names) {
			free(*names);
			*names = NULL;
		}
	}
	return rc;
}

static int cmd_embed(const struct args *a)
{
	float *emb;
	int32_t *labels;
	char *names;
	size_t n;
	int dim;
	if (compute_embeddings(a, &emb, &labels, &names, &n, &dim))
		return 1;
	FILE *out = fopen(a->out, "w");
	if (!out) {
		XERR("%s: %s\n", a->out, strerror(errno));
		free(emb);
		free(labels);
		free(names);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		/* A name is one field: blanks inside it would split the line. */
		for (char *c = names + i * FEEDER_SAMPLE_NAME_MAX; *c; c++)
			if (*c == ' ' || *c == '\t' || *c == '\n')
				*c = '_';
		fprintf(out, "%s %d", names + i * FEEDER_SAMPLE_NAME_MAX, labels[i]);
		for (int j = 0; j < dim; j++)
			fprintf(out, " %.6g", emb[i * dim + j]);
		fputc('\n', out);
	}
	int bad = fclose(out) != 0;
	if (bad)
		XERR("writing %s: %s\n", a->out, strerror(errno));
	else
		printf("%zu x-vectors of dimension %d written to %s (one line each: utterance name, "
		       "label, values)\n",
		       n, dim, a->out);
	free(emb);
	free(labels);
	free(names);
	return bad;
}

/* xvec_plot_save's drawing of the DET curve. */
struct det_plot {
	double *pm, *pf, eer;
	size_t n;
	char title[256];
};

static int draw_det_plot(FILE *out, void *ctx, char *err, size_t errlen)
{
	const struct det_plot *d = ctx;
	return xvec_plot_det(out, d->pm, d->pf, d->n, d->eer, d->title, err, errlen);
}

/* Score every pair of utterances: cosine similarity of mean-centered
 * x-vectors (the usual step before PLDA, which this trainer does not do). */
static int cmd_eval(const struct args *a)
{
	float *emb;
	int32_t *labels;
	size_t n;
	int dim, rc = 1;
	char err[256];
	if (compute_embeddings(a, &emb, &labels, NULL, &n, &dim))
		return 1;
	float *tgt = NULL, *non = NULL;
	size_t nt = 0, nn = 0;
	double *mean = calloc((size_t)dim, sizeof(double));
	if (!mean || n < 2)
		goto out;
	for (size_t i = 0; i < n; i++)
		for (int j = 0; j < dim; j++)
			mean[j] += emb[i * dim + j] / (double)n;
	for (size_t i = 0; i < n; i++)
		for (int j = 0; j < dim; j++)
			emb[i * dim + j] -= (float)mean[j];
	size_t pairs = n * (n - 1) / 2;
	tgt = malloc(sizeof(float) * pairs);
	non = malloc(sizeof(float) * pairs);
	if (!tgt || !non)
		goto out;
	for (size_t i = 0; i < n; i++)
		for (size_t k = i + 1; k < n; k++) {
			float sc = verify_cosine(emb + i * dim, emb + k * dim, (size_t)dim);
			if (labels[i] == labels[k])
				tgt[nt++] = sc;
			else
				non[nn++] = sc;
		}
	double eer, dcf;
	if (verify_eer(tgt, nt, non, nn, &eer, err, sizeof(err)) ||
	    verify_min_dcf(tgt, nt, non, nn, 0.01, 1, 1, &dcf, NULL, err, sizeof(err))) {
		fprintf(stderr,
			"xvec eval: %s (need utterances of at least two speakers, one with "
			"two utterances)\n",
			err);
		goto out;
	}
	if (a->det) {
		struct det_plot d = { .eer = eer };
		snprintf(d.title, sizeof d.title, "DET: %s (%zu utterances, cosine scoring)",
			 a->dataset, n);
		int drc = verify_det(tgt, nt, non, nn, &d.pm, &d.pf, &d.n, err, sizeof(err));
		if (drc == 0)
			drc = xvec_plot_save(a->det, draw_det_plot, &d, err, sizeof(err));
		free(d.pm);
		free(d.pf);
		if (drc) {
			fprintf(stderr, "xvec eval: --det %s: %s\n", a->det, err);
			goto out;
		}
	}
	if (a->json)
		printf("{\"eer\": %.6f, \"min_dcf\": %.6f, \"utterances\": %zu, \"target_trials\": %zu, "
		       "\"nontarget_trials\": %zu}\n",
		       eer, dcf, n, nt, nn);
	else
		printf("EER %.2f %%  minDCF(p_target=0.01) %.4f  (%zu utterances, %zu target and %zu "
		       "non-target trials, cosine scoring)\n",
		       100 * eer, dcf, n, nt, nn);
	rc = 0;
out:
	if (rc && n < 2)
		fprintf(stderr, "xvec eval: dataset '%s' has fewer than two utterances\n",
			a->dataset);
	free(mean);
	free(tgt);
	free(non);
	free(emb);
	free(labels);
	return rc;
}

/* xvec_plot_save's drawing of the training log. */
struct log_plot {
	const char *log;
	size_t skipped;
};

static int draw_log_plot(FILE *out, void *ctx, char *err, size_t errlen)
{
	struct log_plot *lp = ctx;
	return xvec_plot_log(out, lp->log, &lp->skipped, err, errlen);
}

/* The training log as a picture: loss, accuracy and data wait by step. */
static int cmd_plot(const struct args *a)
{
	char err[512];
	struct log_plot lp = { .log = a->plot_in };
	if (xvec_plot_save(a->out, draw_log_plot, &lp, err, sizeof(err))) {
		fprintf(stderr, "xvec plot: %s\n", err);
		return 1;
	}
	if (lp.skipped)
		fprintf(stderr, "xvec plot: %s: %zu values that are not finite numbers left out\n",
			a->plot_in, lp.skipped);
	printf("plot of %s written to %s\n", a->plot_in, a->out);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = parse_args(argc, argv, &args);
	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(args.cmd, "train"))
		return cmd_train(&args);
	if (!strcmp(args.cmd, "embed"))
		return cmd_embed(&args);
	if (!strcmp(args.cmd, "plot"))
		return cmd_plot(&args);
	return cmd_eval(&args);
}
