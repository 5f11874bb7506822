/* xvec_train.h — the training loop of `xvec train`, and the two models it
 * drives: the CPU model (xvec_model.h), fed batch by batch from the stream,
 * and the CUDA model (cuda/xvec_cuda.h) fed through the overlapped device
 * feed (cuda/xvec_feed.h). The loop (xvec_train_run) owns what both share:
 * the logging interval and its line, the stop conditions (--steps,
 * --stop-after, SIGINT/SIGTERM), the end-of-run summary and the stream
 * position to checkpoint; a trainer only steps, reports an interval's
 * figures and brings the model back to the host.
 *
 * Every function returns 0 or a negative code with a sentence in err. */
#ifndef FEEDER_XVEC_TRAIN_H
#define FEEDER_XVEC_TRAIN_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "feeder.h"
#include "xvec_dist.h"
#include "xvec_model.h"

struct xvec_trainer;

/* One optimizer step's batch: where it was in the stream, and its size. */
struct xvec_step {
	uint64_t epoch, batch_index;
	uint32_t samples;
};

/* A logging interval's figures. */
struct xvec_interval {
	double loss;          /* mean over the interval's steps */
	double accuracy;      /* training accuracy over its samples */
	double wait_fraction; /* of the interval's wall time spent waiting for data */
};

struct xvec_trainer_ops {
	const char *wait_name; /* "wait" (CPU) or "gpu-wait": the log line's label */
	const char *waiter;    /* "" or "GPU ": who waits, in the summary */
	/* Take the next batch and train on it: 0, FEEDER_EEND at the stream's
	 * end, -EDOM when the loss stopped being finite, or another error. */
	int (*step)(struct xvec_trainer *t, struct xvec_step *s, char *err, size_t errlen);
	/* Figures since the last call, over dt seconds (then reset). */
	int (*interval)(struct xvec_trainer *t, double dt, struct xvec_interval *iv, char *err,
			size_t errlen);
	/* Fraction of total_s seconds the whole run waited for data. */
	double (*waited)(struct xvec_trainer *t, double total_s);
	uint64_t (*model_step)(const struct xvec_trainer *t);
	/* Make the host model (the one checkpoints are written from) current. */
	int (*finish)(struct xvec_trainer *t, char *err, size_t errlen);
	void (*destroy)(struct xvec_trainer *t);
};

/* Every trainer begins with this. dist (NULL: one process) makes the CPU
 * trainer agree with the other ranks every step: all train, or all stop
 * (a stream's end, a failed rank, an interrupt on any rank, which is set
 * in *interrupted); check_replicas compares the ranks' parameters after
 * every step. */
struct xvec_trainer {
	const struct xvec_trainer_ops *ops;
	struct xvec_dist *dist;
	volatile sig_atomic_t *interrupted;
	int check_replicas;
	FILE *trace; /* NULL, or "epoch index" of every sample trained on (CPU) */
};

/* Data parallel, for the trainers' steps: every rank says whether it has a
 * batch (have 1), reached the stream's end (0) or failed (-1), and whether
 * it was interrupted; all train only when all have one. Returns 1 to train,
 * 0 to stop at the end, or a negative code (this rank's own failure is
 * reported by the caller). */
int xvec_trainer_agree(struct xvec_trainer *t, int have, char *err, size_t errlen);

/* --check-replicas: the parameters p[0..n) after model step `step` equal on
 * every rank (compared by checksums); -EDOM says they differ. */
int xvec_trainer_check_replicas(struct xvec_trainer *t, const float *p, size_t n, uint64_t step,
				char *err, size_t errlen);

/* The CPU trainer: model m (not owned) trained on the batches of stream s
 * (of connection f, for its error sentences), or with in_memory > 0 on that
 * many batches read from s once and cycled (a benchmark of the model alone). */
int xvec_trainer_cpu_create(struct xvec_trainer **out, struct xvec_model *m, struct feeder *f,
			    struct feeder_stream *s, int chunk, int in_memory, int timeout_ms,
			    char *err, size_t errlen);

/* The CUDA trainer (cuda/xvec_train_cuda.c; xvec_train_cuda_none.c without
 * the CUDA model: FEEDER_ENODEV): m's weights copied to the current device,
 * batches of s fed by xvec_feed. precision "fp32", "tf32" or "bf16". */
struct xvec_cuda_train_opts {
	const char *precision;
	int autotune;
	int batch, feat_dim, chunk, timeout_ms;
	FILE *log;      /* autotune and precision lines */
	int local_rank; /* the device: this modulo the devices the process sees */
};
int xvec_trainer_cuda_create(struct xvec_trainer **out, struct xvec_model *m,
			     struct feeder_stream *s, const struct xvec_cuda_train_opts *o,
			     char *err, size_t errlen);
/* Whether this build has the CUDA trainer. */
int xvec_trainer_cuda_built(void);
/* Data-parallel CUDA training needs NCCL (cuda/xvec_nccl.h): 0 when it can
 * be loaded, else FEEDER_ENODEV and why ("libnccl.so.2: cannot open ..."). */
int xvec_trainer_cuda_dp_ready(char *err, size_t errlen);
/* Join the ranks of d (world > 1) on the GPUs: rank 0's NCCL unique id goes
 * to every rank over d, each makes its communicator, and from the next step
 * the CUDA trainer t sums its loss and gradients (and with sync_bn its
 * batch-norm statistics) over the ranks on the device, as the CPU model
 * does over MPI (xvec_model_set_dp). Every rank calls it, after they agreed
 * to start; all fail together. */
int xvec_trainer_cuda_join(struct xvec_trainer *t, struct xvec_dist *d, int sync_bn, char *err,
			   size_t errlen);

struct xvec_train_limits {
	int log_every;   /* steps per log line */
	long steps;      /* stop after this many steps of this run (<= 0: no limit) */
	long stop_after; /* stop once the model has taken this many steps (<= 0: none) */
	const volatile sig_atomic_t *interrupted; /* set by a signal handler: stop */
	FILE *jsonl;            /* NULL, or one JSON object per interval (xvec train --log) */
	double lr;              /* the learning rate, for the log */
	int world;              /* data-parallel ranks (samples/s are global); 0 or 1: one */
	const double *reduce_s; /* seconds this rank spent in gradient all-reduces, or NULL */
};

struct xvec_train_result {
	long steps;                 /* of this run */
	uint64_t epoch, next_batch; /* the stream position after the last step */
	int interrupted;
};

/* Train until the stream ends or a limit is reached, printing a line per
 * interval and a summary to out. result->epoch/next_batch start at the
 * caller's values and follow the batches trained on. The trainer's finish
 * has run when this returns 0. */
int xvec_train_run(struct xvec_trainer *t, const struct xvec_train_limits *lim, FILE *out,
		   struct xvec_train_result *result, char *err, size_t errlen);

#endif
