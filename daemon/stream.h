/* stream.h — one client stream: its ring of batch slots in a sealed memfd,
 * which batch goes into which slot, and the work of filling a slot.
 *
 * A stream serves the batches of `epochs` epochs in order (the first one
 * from start_batch). The event loop thread (server.c) owns the order: it
 * assigns the next batch to each free slot (stream_refill), sends
 * BATCH_READY for completed slots strictly in batch order (stream_next_ready)
 * and frees a slot on RELEASE (stream_release). Worker threads (pool.c) fill
 * the slots: each claims a few samples of a filling slot (stream_claim),
 * decodes them straight into the shared memory (stream_task_run, without
 * any lock) and reports back (stream_task_finish); the slot completes when
 * its last sample is in. A sample that fails (bad CRC, undecodable, an I/O
 * error on the dataset's mapping) is replaced by the next valid sample of
 * this rank's epoch order, counted in the batch header, or — with
 * on_error=fail — fails the stream.
 *
 * Locking: every function except stream_create/destroy and stream_task_run
 * must be called with the pool lock held (pool_lock); the fields marked
 * "immutable" may be read without it. A stream is destroyed only after it was
 * removed from the pool and its in-flight count dropped to zero. */
#ifndef FEEDER_STREAM_H
#define FEEDER_STREAM_H

#include "features_pipeline.h"
#include "jpeg_pipeline.h"
#include "protocol.h"
#include "registry.h"
#include "sampler.h"

#include <stddef.h>
#include <stdint.h>

/* SLOT_GPU: every sample is staged and the worker that staged the last one
 * runs the batch on the GPU (stream_task_submit), without the pool lock. */
enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_DONE, SLOT_HELD, SLOT_GPU };

struct slot {
	int state;
	uint64_t seq;            /* the stream's batch number (0 = first served) */
	uint64_t epoch, batch;   /* batch index within the epoch, for this rank */
	uint32_t count;          /* samples in this batch */
	uint32_t claimed, done;  /* samples handed to workers / written */
	uint32_t replacements;
	uint32_t fills;
	struct sampler order;    /* the epoch's order (copied: slots may straddle epochs) */
	uint8_t *base;           /* the slot in the mapping */
	int on_gpu;              /* this batch is staged for the GPU (placement gpu/auto) */
	double work_s;           /* worker seconds spent on this batch (placement=auto) */
};

struct stream_task {
	struct stream *s;
	uint32_t slot, first, count;
	/* results, filled by stream_task_run */
	uint32_t replacements, decode_errors, skipped;
	int fail_code;           /* nonzero: the stream must fail (on_error=fail) */
	char fail_msg[PROTO_TEXT_MAX];
	double run_s;            /* seconds stream_task_run took */
	int submit;              /* set by stream_task_finish: run the GPU batch */
	double gpu_s;            /* seconds the GPU batch took */
};

/* Where a stream is preprocessed (server.c decides from the request and the
 * daemon's GPU). */
struct stream_gpu {
	uint32_t placement;      /* FEEDER_PLACEMENT_GPU or _AUTO */
	int device;              /* CUDA ordinal, or GPU_SLOT_EMULATED */
	int device_ring;         /* batches in device memory shared by CUDA IPC */
};
struct gpu_slot;
struct gpu_ring;

struct stream {
	/* immutable after stream_create */
	uint32_t id;
	void *owner;             /* the server's session */
	struct dataset *ds;
	struct feeder_stream_opts opts; /* as requested (proto_opts_check'ed) */
	struct proto_geometry geo;
	uint8_t *map;
	size_t map_len;
	int memfd;               /* until handed to the client, then -1 */
	uint32_t nslots;
	uint32_t chunk;          /* samples per worker task */
	uint64_t rank_len;       /* positions of this rank in an epoch */
	uint64_t per_epoch;      /* batches of this rank in a full epoch */
	uint64_t total;          /* batches this stream serves */
	struct slot *slots;
	unsigned workers;        /* the pool's threads */
	uint32_t placement;      /* requested: PROTO_PLACE_* (cpu without a GPU) */
	struct gpu_slot **gslots; /* per slot, placement gpu/auto */
	struct gpu_ring *dring;  /* device-resident ring, or NULL */
	uint64_t device_table;   /* its table's offset in the memfd, or 0 */
	size_t ring_bytes;       /* the memfd: geo.ring_size plus the device table */

	/* under the pool lock */
	uint64_t next_assign, next_send;
	unsigned inflight;       /* worker tasks running */
	int closing;             /* removed from the pool: claim nothing more */
	int fail_code;           /* set by a worker; the loop reports and closes */
	char fail_msg[PROTO_TEXT_MAX];
	uint64_t samples, replacements, decode_errors; /* totals */
	int active;              /* FEEDER_PLACEMENT_CPU or _GPU: where new batches go */
	int deciding;            /* placement=auto still measures */
	uint32_t auto_cpu_n, auto_gpu_n;
	double auto_cpu_s, auto_gpu_stage_s, auto_gpu_dev_s;
	float auto_cpu_ms, auto_gpu_ms; /* the measured cost of a batch each way */

	/* event loop only */
	int fail_reported, end_sent;
	unsigned held;           /* slots the client holds */
	uint64_t batches_sent;
	uint64_t last_samples;   /* for the rate */
	double rate;             /* images per second, smoothed */
	uint64_t client_wait_us, ring_full_us, stamp_us;
};

/* Validate the request against the dataset and build the stream: geometry,
 * the sealed memfd ring mapped here, the ring header. page is the page size;
 * workers is the pool size (for the task size). Returns 0 or a negative code
 * (FEEDER_EINVAL for options the dataset cannot serve, -ENOMEM, ...) with a
 * sentence. Takes its own reference on ds. */
int stream_create(struct stream **out, uint32_t id, struct dataset *ds,
		  const struct feeder_stream_opts *req, uint64_t page, unsigned workers,
		  char *err, size_t errlen);
/* The same, preprocessed as gpu says (NULL: on the CPU): a GPU context per
 * slot and, with gpu->device_ring, the tensors in device memory and the
 * device table after the slots in the memfd. placement=auto runs its first
 * STREAM_AUTO_BATCHES batches on the CPU, the next as many on the GPU, and
 * keeps the cheaper (worker seconds per batch over the pool, against the
 * larger of the staging share and the device time). */
#define STREAM_AUTO_BATCHES 3
int stream_create_placed(struct stream **out, uint32_t id, struct dataset *ds,
			 const struct feeder_stream_opts *req, uint64_t page, unsigned workers,
			 const struct stream_gpu *gpu, char *err, size_t errlen);
void stream_destroy(struct stream *s);

/* Assign the next batches to free slots. Returns how many slots started. */
unsigned stream_refill(struct stream *s);
/* If the next batch in order is complete: write its slot header, mark it
 * held, fill r and return 1; else 0. */
int stream_next_ready(struct stream *s, struct proto_batch_ready *r);
/* RELEASE of slot: 0, or FEEDER_EPROTO if the client does not hold it. */
int stream_release(struct stream *s, uint32_t slot, char *err, size_t errlen);
/* 1 when every batch was sent. */
int stream_finished(const struct stream *s);

/* Worker side. Claim up to s->chunk samples of the oldest filling slot;
 * returns 1 and fills t, or 0 if there is nothing to do. */
int stream_claim(struct stream *s, struct stream_task *t);
/* Decode the task's samples into the slot (no lock held). jw is the calling
 * thread's jpeg state. Records are read under the SIGBUS guard (mapguard.h):
 * a read that faults is an I/O error, replaced and counted like a corrupt
 * record (or failing the stream with on_error=fail); a retired dataset
 * (registry.h) fails the task with the dataset's reason. */
void stream_task_run(struct stream_task *t, struct jpeg_worker *jw);
/* Free the calling worker thread's record buffer (before it exits). */
void stream_worker_exit(void);
/* Account a finished task. Returns 1 if the event loop has something to do
 * (a slot completed, the stream failed, or a closing stream drained). */
int stream_task_finish(struct stream_task *t);
/* After stream_task_finish set t->submit: run the completed batch on the
 * GPU and wait for it (no lock held), then account it (pool lock held;
 * returns 1 like stream_task_finish). */
void stream_task_submit(struct stream_task *t);
int stream_submit_finish(struct stream_task *t);

#endif
