/* stream_impl.h — a stream's private layout, shared by stream.c (the ring,
 * batch order, slots and the loop's side) and stream_task.c (the workers'
 * side: claiming, decoding, finishing and submitting tasks). Nothing else
 * includes it: everyone else uses stream.h. */
#ifndef FEEDER_STREAM_IMPL_H
#define FEEDER_STREAM_IMPL_H

#include "stream.h"

#include <pthread.h>
#include <stdatomic.h>

#include <time.h>

/* SLOT_GPU: every sample is staged and the worker that staged the last one
 * runs the batch on the GPU (stream_task_submit), without the pool lock.
 * SLOT_RELEASING: a device-ring slot the client released whose release
 * event has not completed yet (its GPU may still read the slot); polled by
 * stream_refill, never waited on. */
enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_DONE, SLOT_HELD, SLOT_GPU, SLOT_RELEASING };

struct slot {
	int state;
	uint64_t seq;           /* the stream's batch number (0 = first served) */
	uint64_t epoch, batch;  /* batch index within the epoch, for this rank */
	uint32_t count;         /* samples in this batch */
	uint32_t claimed, done; /* samples handed to workers / written */
	uint32_t replacements;
	uint32_t fills;
	struct sampler order;          /* the epoch's order (copied: slots may straddle epochs) */
	struct sampler_blocks *blocks; /* a remote dataset's: the layout order reads (held) */
	uint8_t *base;                 /* the slot in the mapping */
	int on_gpu;                    /* this batch is staged for the GPU (placement gpu/auto) */
	int32_t ctx;                   /* on_gpu: its GPU context from its first claim until
				    its submission is accounted, else -1 (pool lock) */
	double work_s;                 /* worker seconds spent on this batch (placement=auto) */
};

/* A GPU context a stream lends to one batch at a time. g is made by the
 * first worker that needs it (under the stream's gpu_lock, never on the
 * event loop); busy says a batch holds it (pool lock). */
struct stream_gctx {
	struct gpu_slot *g;
	int busy;
};

#define STREAM_LAYOUTS 3

/* Seconds over which the trainer's data-wait share is reported. */
#define STREAM_WAIT_WINDOW 10

/* A dataset a wave stream's augmentation reads (noise or RIRs), and which
 * of its records this stream has checked the CRC of already. */
struct stream_source {
	struct dataset *d;
	const char *role; /* "wave.noise" or "wave.rir", for the log */
	uint32_t stream_id;
	atomic_uchar *verified; /* per record: SOURCE_UNSEEN, _OK or _BAD */
};
enum { SOURCE_UNSEEN = 0, SOURCE_OK = 1, SOURCE_BAD = 2 };

struct stream {
	/* immutable after stream_create */
	uint32_t id;
	struct dataset *ds;
	struct feeder_stream_opts opts; /* as requested (checked at admission only) */
	struct proto_geometry geo;
	uint8_t *map;
	size_t map_len;
	int memfd; /* until handed to the client, then -1 */
	uint32_t nslots;
	uint32_t chunk;         /* samples per worker task */
	uint64_t rank_len;      /* positions of this rank in an epoch */
	uint64_t per_epoch;     /* batches of this rank in a full epoch */
	uint64_t first_len;     /* positions of this rank in the first epoch (start_sample) */
	uint64_t first_batches; /* and its batches */
	uint64_t total;         /* batches this stream serves */
	struct slot *slots;
	unsigned workers;         /* the pool's threads */
	uint32_t placement;       /* requested: FEEDER_PLACEMENT_* (cpu without a GPU) */
	int gpu_device;           /* placement gpu/auto: CUDA ordinal or GPU_SLOT_EMULATED */
	struct stream_gctx *gctx; /* placement gpu/auto: ngctx contexts, else NULL */
	uint32_t ngctx;
	pthread_mutex_t gpu_lock;        /* making contexts, registering the ring (workers) */
	int gpu_registering;             /* the ring is to be cudaHostRegister'ed (gpu_lock) */
	struct gpu_ring *dring;          /* device-resident ring, or NULL */
	int registered_device;           /* the ring is cudaHostRegister'ed for it, or -1
				    (gpu_lock while workers run) */
	uint64_t device_table;           /* its table's offset in the memfd, or 0 */
	size_t ring_bytes;               /* the memfd: geo.ring_size plus the device table */
	struct stream_source sources[2]; /* wave: the noise and RIR datasets it reads */
	/* A remote dataset's: the layouts of the last epochs ordered (held),
	 * and the shards last wanted from the cache (stream_ahead.c; under the
	 * pool lock). */
	struct sampler_blocks *layout[STREAM_LAYOUTS];
	uint64_t layout_epoch[STREAM_LAYOUTS];
	uint32_t *want;
	size_t nwant;
	uint32_t *want_next;      /* where the next wants are worked out */
	struct wave_sources wave; /* wave: reading them (stream_sources_open) */

	/* under the pool lock */
	uint64_t next_assign, next_send;
	unsigned inflight;  /* worker tasks running */
	unsigned releasing; /* slots in SLOT_RELEASING */
	int closing;        /* removed from the pool: claim nothing more */
	int fail_code;      /* set by a worker; the loop reports and closes */
	char fail_msg[PROTO_TEXT_MAX];
	uint64_t samples, replacements, decode_errors; /* totals */
	int active;   /* FEEDER_PLACEMENT_CPU or _GPU: where new batches go */
	int deciding; /* placement=auto still measures */
	uint32_t auto_cpu_n, auto_gpu_n;
	double auto_cpu_s, auto_gpu_stage_s, auto_gpu_dev_s;
	float auto_cpu_ms, auto_gpu_ms; /* the measured cost of a batch each way */

	/* event loop only */
	int fail_reported, end_sent;
	unsigned held; /* slots the client holds */
	uint64_t batches_sent;
	uint64_t last_samples; /* for the rate */
	double rate;           /* images per second, smoothed */
	uint64_t client_wait_us, ring_full_us, stamp_us;
	/* the trainer's data wait as its client reports it with RELEASE, and
	 * one snapshot a tick for the share over the last STREAM_WAIT_WINDOW s */
	int trainer_reports;
	uint64_t trainer_wait_us, trainer_compute_us;
	uint64_t opened_us;                           /* the loop's clock at stream_create */
	uint64_t client_wait_raw, client_compute_raw; /* the last report as sent */
	uint64_t snap_wait[STREAM_WAIT_WINDOW + 1], snap_compute[STREAM_WAIT_WINDOW + 1];
	unsigned snaps, snap_next;
	uint64_t starving_since_us; /* 0: not starving */
	int starvation_said;        /* warned for this episode */
	/* worker seconds per enum feeder_stage (under the pool lock) */
	double stage_s[FEEDER_STAGES];
};

/* The order of epoch `epoch` into sl->order: the global permutation, or
 * over a remote dataset its shard-block layout (stream_ahead.c). 0 or
 * -ENOMEM. */
int stream_order(struct stream *s, struct slot *sl, uint64_t epoch, char *err, size_t errlen);
/* Over a remote dataset, tell the shard cache which shards the slots
 * being filled and the blocks after them read, soonest first. */
void stream_want(struct stream *s);
/* Let go of the layouts and the wants (stream_destroy). */
void stream_order_free(struct stream *s);

/* How far a corrupt sample's replacement is searched for before the stream
 * gives up: a dataset this broken should fail loudly, not spin. */
#define STREAM_MAX_REPLACE_TRIES 4096

static inline double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
