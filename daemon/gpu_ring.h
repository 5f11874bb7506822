/* gpu_ring.h — the device half of a device-resident stream ring: the batch
 * tensors of every slot in one allocation on feederd's GPU, shared with the
 * client through CUDA IPC, and per slot the two interprocess events that
 * order the daemon's writes and the client's reads (proto/protocol.h, "device
 * table"). The memfd ring still carries the ring and slot headers, the
 * labels and the device table, which gpu_ring_create fills.
 *
 * Order of a slot's life: the client records the slot's release event on its
 * CUDA stream after the work that reads the slot, then sends RELEASE; the
 * daemon does not write the slot again until that event has completed, which
 * it learns by polling (gpu_ring_release_done, from the event loop), never by
 * waiting: a worker thread must not stall on a trainer's GPU progress. The
 * daemon records the ready event once its write is queued; the client's
 * stream waits on it before reading (feeder_batch_wait). Neither side blocks
 * its CPU on the other's GPU work.
 *
 * The CUDA part lives in gpu_ring.cu (gpu_ring_none.c without CUDA: nothing
 * can be created, FEEDER_ENODEV). With the device GPU_SLOT_EMULATED (feederd
 * started with FEEDERD_GPU_EMULATE=1, tests only) the ring is emulated in
 * host memory and a release completes FEEDERD_GPU_EMULATE_RELEASE_MS
 * milliseconds (default 0) after the RELEASE message, standing in for a
 * trainer whose GPU work on a batch is slow; FEEDERD_GPU_EMULATE_DEVICE_KB
 * gives the emulated device that much memory for rings (unset: unlimited),
 * so that a ring too large for it fails as cudaMalloc would.
 *
 * A stream whose device ring cannot be created is not refused: feederd
 * serves it from the host ring (stream.c), as if device batches had not
 * been asked for, and says so in its log. */
#ifndef FEEDER_GPU_RING_H
#define FEEDER_GPU_RING_H

#include "protocol.h"

#include <stddef.h>
#include <stdint.h>

struct gpu_ring;

/* Allocate slots tensors of tensor_bytes (each at a 256-byte aligned stride)
 * on CUDA device `device`, create the events and fill the device table t
 * (PROTO_DEVICE_TABLE_HEAD bytes) and its slot entries. Returns 0,
 * FEEDER_ENODEV (no CUDA, no such device, IPC unsupported) or -ENOMEM, with
 * err filled. */
int gpu_ring_create(struct gpu_ring **out, int device, uint32_t slots, uint64_t tensor_bytes,
		    struct proto_device_table *t, struct proto_device_slot *entries, char *err,
		    size_t errlen);

/* Give the ring up. Never blocks: the memory and events are freed at once
 * if the daemon's own writes into the ring have completed, else parked and
 * freed by a later gpu_ring_collect. The caller guarantees the client can no
 * longer use it (it sent CLOSE_STREAM after closing its IPC handles, or its
 * process is gone). */
void gpu_ring_destroy(struct gpu_ring *r);

/* Free the parked rings whose writes have completed; returns how many are
 * still parked (the caller polls again while it is not 0). Thread-safe. */
unsigned gpu_ring_collect(void);

/* The device address of slot's tensor (host memory when emulated). */
void *gpu_ring_slot(const struct gpu_ring *r, uint32_t slot);

/* The client sent RELEASE of slot at now_us (microseconds, monotonic). */
void gpu_ring_note_release(struct gpu_ring *r, uint32_t slot, uint64_t now_us);

/* Whether the client's work before its last release of slot has run: 1 yes
 * (also for a slot never released), 0 not yet, or FEEDER_ENODEV with err
 * filled (the device failed). Does not block. */
int gpu_ring_release_done(struct gpu_ring *r, uint32_t slot, uint64_t now_us, char *err,
			  size_t errlen);

/* Record slot's ready event on cuda_stream (NULL: the legacy default stream)
 * after the work that writes the slot. 0 or FEEDER_ENODEV. */
int gpu_ring_mark_ready(struct gpu_ring *r, uint32_t slot, void *cuda_stream, char *err,
			size_t errlen);

#endif
