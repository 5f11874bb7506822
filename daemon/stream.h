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
 * its last sample is in. A sample that fails (bad CRC, undecodable) is
 * replaced by the next valid sample of this rank's epoch order, counted in
 * the batch header, or — with on_error=fail — fails the stream.
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

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_DONE, SLOT_HELD };

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
};

struct stream_task {
	struct stream *s;
	uint32_t slot, first, count;
	/* results, filled by stream_task_run */
	uint32_t replacements, decode_errors, skipped;
	int fail_code;           /* nonzero: the stream must fail (on_error=fail) */
	char fail_msg[PROTO_TEXT_MAX];
};

struct stream {
	/* immutable after stream_create */
	uint32_t id;
	void *owner;             /* the server's session */
	struct dataset *ds;
	struct proto_open_stream req;
	struct proto_geometry geo;
	struct jpeg_params jpeg;
	struct features_params feat;
	uint8_t *map;
	size_t map_len;
	int memfd;               /* until handed to the client, then -1 */
	uint32_t nslots;
	uint32_t chunk;          /* samples per worker task */
	uint64_t rank_len;       /* positions of this rank in an epoch */
	uint64_t per_epoch;      /* batches of this rank in a full epoch */
	uint64_t total;          /* batches this stream serves */
	struct slot *slots;

	/* under the pool lock */
	uint64_t next_assign, next_send;
	unsigned inflight;       /* worker tasks running */
	int closing;             /* removed from the pool: claim nothing more */
	int fail_code;           /* set by a worker; the loop reports and closes */
	char fail_msg[PROTO_TEXT_MAX];
	uint64_t samples, replacements, decode_errors; /* totals */

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
		  const struct proto_open_stream *req, uint64_t page, unsigned workers,
		  char *err, size_t errlen);
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
 * thread's jpeg state. */
void stream_task_run(struct stream_task *t, struct jpeg_worker *jw);
/* Account a finished task. Returns 1 if the event loop has something to do
 * (a slot completed, the stream failed, or a closing stream drained). */
int stream_task_finish(struct stream_task *t);

#endif
