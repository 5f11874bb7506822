/* stream.h — one client stream: its ring of batch slots in a sealed memfd,
 * which batch goes into which slot, and the work of filling a slot.
 *
 * A stream serves the batches of `epochs` epochs in order (the first one
 * from start_batch). The event loop thread (server.c, session.c) owns the order: it
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
 * Locking: every function except stream_create/destroy, stream_task_run and
 * those marked otherwise must be called with the pool lock held (pool_lock).
 * A stream is destroyed only after it was removed from the pool and its
 * in-flight count dropped to zero. The struct is private to stream.c. */
#ifndef FEEDER_STREAM_H
#define FEEDER_STREAM_H

#include "features_pipeline.h"
#include "jpeg_pipeline.h"
#include "protocol.h"
#include "registry.h"
#include "sampler.h"
#include "wave_pipeline.h"

#include <stddef.h>
#include <stdint.h>

struct stream_task {
	struct stream *s;
	uint32_t slot, first, count;
	/* results, filled by stream_task_run */
	uint32_t replacements, decode_errors, skipped;
	int fail_code; /* nonzero: the stream must fail (on_error=fail) */
	char fail_msg[PROTO_TEXT_MAX];
	double run_s;                  /* seconds stream_task_run took */
	double stage_s[FEEDER_STAGES]; /* of it, per enum feeder_stage */
	int submit;                    /* set by stream_task_finish: run the GPU batch */
	double gpu_s;                  /* seconds the GPU batch took */
};

/* Where a stream is preprocessed (server.c decides from the request and the
 * daemon's GPU). */
struct stream_gpu {
	uint32_t placement; /* FEEDER_PLACEMENT_GPU or _AUTO */
	int device;         /* CUDA ordinal, or GPU_SLOT_EMULATED */
	int device_ring;    /* batches in device memory shared by CUDA IPC */
};
struct gpu_slot;
struct gpu_ring;

/* Opaque outside stream.c: the loop and the sessions use the calls below. */
struct stream;

/* 0 if the pipeline req asks for suits what dataset ds holds, else
 * FEEDER_EINVAL with a sentence saying what the dataset holds. */
int stream_check_kind(const struct feeder_stream_opts *req, const struct dataset *ds, char *err,
		      size_t errlen);

/* Build the stream: geometry, the sealed memfd ring mapped here, the ring
 * header. req must have passed admission's checks (proto_opts_check, and
 * stream_check_kind against ds: daemon/session.c makes them once, and
 * neither the stream nor its workers check the options again). page is
 * the page size; workers is the pool size (for the task size). Returns 0
 * or a negative code (FEEDER_EINVAL for a start the dataset cannot serve:
 * no batch for this rank, start_batch past the epoch; -ENOMEM, ...) with a
 * sentence. Takes its own reference on ds. */
int stream_create(struct stream **out, uint32_t id, struct dataset *ds,
		  const struct feeder_stream_opts *req, uint64_t page, unsigned workers, char *err,
		  size_t errlen);
/* The same, preprocessed as gpu says (NULL: on the CPU; the jpeg and
 * features pipelines only): min(slots, workers) GPU contexts, made by the
 * workers when first needed, and, with gpu->device_ring, the tensors in
 * device memory and the device table after the slots in the memfd (or, if
 * the device cannot hold them, the host ring, with a warning in the log:
 * stream_describe then says memory=host). placement=auto runs its first
 * STREAM_AUTO_BATCHES batches on the CPU, the next as many on the GPU, and
 * keeps the cheaper (worker seconds per batch over the pool, against the
 * larger of the staging share and the device time). */
#define STREAM_AUTO_BATCHES 3
int stream_create_placed(struct stream **out, uint32_t id, struct dataset *ds,
			 const struct feeder_stream_opts *req, uint64_t page, unsigned workers,
			 const struct stream_gpu *gpu, char *err, size_t errlen);
void stream_destroy(struct stream *s);
/* Bytes of the slots the client holds or was announced (their pages outlive
 * stream_destroy), and how many of them are device-ring slots. */
uint64_t stream_held_bytes(const struct stream *s);
unsigned stream_device_held(const struct stream *s);
/* CLOSE_STREAM: the client let go of every batch, so stream_destroy may
 * give all of the ring back (pool lock held). */
void stream_release_all(struct stream *s);

/* ---- For the sessions and the loop (pool lock held unless noted) ---- */

/* Immutable facts, readable without the lock: the id, the dataset, the
 * bytes of ring memory the stream is charged (its memfd's slots), the
 * options as requested. */
uint32_t stream_id(const struct stream *s);
struct dataset *stream_dataset(const struct stream *s);
uint64_t stream_ring_bytes(const struct stream *s);
const struct feeder_stream_opts *stream_opts(const struct stream *s);
/* STREAM_OPENED for the stream, all but the tag (without the lock: only
 * immutable fields). */
void stream_describe(const struct stream *s, struct proto_stream_opened *r);
/* The ring's memfd, to be sent with STREAM_OPENED; the stream forgets it
 * (the caller closes it once sent). -1 the second time. */
int stream_take_memfd(struct stream *s);

/* Free the device-ring slots whose release completed, then assign the next
 * batches to free slots. Returns how many slots started. */
unsigned stream_refill(struct stream *s);
/* Device-ring slots released by the client whose release event has not
 * completed: while not 0 the loop polls (stream_refill) every millisecond. */
unsigned stream_releasing(const struct stream *s);
/* If the next batch in order is complete: write its slot header, mark it
 * held by the client (counted sent), fill r and return 1; else 0. now_us is
 * the loop's clock, for the wait accounting. */
int stream_next_ready(struct stream *s, uint64_t now_us, struct proto_batch_ready *r);
/* Once every batch was sent: fill e (STREAM_END, reason 0) and return 1,
 * only the first time. */
int stream_take_end(struct stream *s, struct proto_stream_end *e);
/* RELEASE of slot: 0, or FEEDER_EPROTO if the client does not hold it. */
int stream_release(struct stream *s, uint32_t slot, uint64_t now_us, char *err, size_t errlen);
/* The client's totals for the trainer's data wait (with RELEASE), received
 * at now_us (the loop's clock). The stream counts their increase, at most
 * the time it has been open in all (see stream.c). */
void stream_note_trainer(struct stream *s, uint64_t wait_us, uint64_t compute_us, uint64_t now_us);
/* 1 when every batch was sent. */
int stream_finished(const struct stream *s);
/* If the stream has failed (a worker's error, or its dataset was removed,
 * replaced or found unreadable) and that was not reported yet: fill *code
 * and msg and return 1, only the first time. A failed stream keeps its ring
 * and schedules nothing more. */
int stream_take_failure(struct stream *s, int *code, char *msg, size_t msglen);
/* 1 once the stream has failed (reported or not). */
int stream_has_failed(const struct stream *s);
/* Worker tasks running on it (it may be destroyed once 0 after removal). */
unsigned stream_inflight(const struct stream *s);
/* Take it out of the schedule: workers claim nothing more. Returns
 * stream_inflight. For pool_remove. */
unsigned stream_set_closing(struct stream *s);

/* Figures. stream_tick: once a second, dt seconds since the last, updates
 * the smoothed rate. stream_status fills everything but session, pid and
 * uid. stream_totals adds the stream's counters to the four totals (any may
 * be NULL). */
void stream_tick(struct stream *s, double dt, uint64_t now_us);
/* Once a tick: 1 exactly once per episode in which the trainer has waited
 * more than share (0..1) of its time for data for after_us, with the share
 * over the window in *share; 0 otherwise (share 0: never). */
int stream_starving(struct stream *s, uint64_t now_us, double share, uint64_t after_us,
		    double *share_now);
/* Worker seconds per stage of all of s's work so far (pool lock held). */
void stream_stage_seconds(const struct stream *s, double stage_s[FEEDER_STAGES]);
double stream_rate(const struct stream *s);
void stream_status(struct stream *s, uint64_t now_us, struct feeder_stream_status *r);
void stream_totals(const struct stream *s, uint64_t *batches_sent, uint64_t *samples,
		   uint64_t *replacements, uint64_t *decode_errors);

/* For tests: the samples of a worker task, and slot's memory. */
uint32_t stream_task_size(const struct stream *s);
const uint8_t *stream_slot_memory(const struct stream *s, uint32_t slot);

/* Worker side. Claim up to stream_task_size samples (and at most max, when
 * max > 0) of the oldest filling slot; returns 1 and fills t, or 0 if there
 * is nothing to do. */
int stream_claim(struct stream *s, struct stream_task *t, uint32_t max);
/* Decode the task's samples into the slot (no lock held). jw is the calling
 * thread's jpeg state. Records are read under the SIGBUS guard (mapguard.h):
 * a read that faults is an I/O error, replaced and counted like a corrupt
 * record (or failing the stream with on_error=fail); a retired dataset
 * (registry.h) fails the task with the dataset's reason. */
void stream_task_run(struct stream_task *t, struct jpeg_worker *jw);
/* Free the calling worker thread's record buffer (before it exits). */
void stream_worker_exit(void);

/* wave: take references on the noise and RIR datasets the stream's
 * augmentation reads (either may be NULL when not asked for), check that
 * they are waveforms at the stream dataset's rate, and index the noise
 * dataset's records by category (its classes noise, music, speech). Call
 * once after stream_create, before the pool sees the stream. Returns 0 or
 * FEEDER_EINVAL / -ENOMEM / -EIO with a sentence naming the dataset. */
int stream_sources_open(struct stream *s, struct dataset *noise, struct dataset *rir, char *err,
			size_t errlen);
/* Account a finished task. Returns 1 if the event loop has something to do
 * (a slot completed, the stream failed, or a closing stream drained). */
int stream_task_finish(struct stream_task *t);
/* After stream_task_finish set t->submit: run the completed batch on the
 * GPU and wait for it (no lock held), then account it (pool lock held;
 * returns 1 like stream_task_finish). */
void stream_task_submit(struct stream_task *t);
int stream_submit_finish(struct stream_task *t);

#endif
