/* gpu_ring.h — the device half of a device-resident stream ring: the batch
 * tensors of every slot in one allocation on feederd's GPU, shared with the
 * client through CUDA IPC, and per slot the two interprocess events that
 * order the daemon's writes and the client's reads (proto/protocol.h, "device
 * table"). The memfd ring still carries the ring and slot headers, the
 * labels and the device table, which gpu_ring_create fills.
 *
 * Order of a slot's life: the daemon waits for the slot's release event (the
 * client recorded it on its CUDA stream when it released the slot, after the
 * work that read it) before it writes the slot, and records the ready event
 * once the write is queued; the client's stream waits on the ready event
 * before reading (feeder_batch_wait). Neither side blocks its CPU on the
 * other's GPU work. Without CUDA, gpu_ring_none.c answers FEEDER_ENODEV. */
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

/* Frees the events and the memory (a client that still has it open keeps
 * nothing valid: the daemon destroys a ring only once the stream is gone). */
void gpu_ring_destroy(struct gpu_ring *r);

/* The device address of slot's tensor. */
void *gpu_ring_slot(const struct gpu_ring *r, uint32_t slot);

/* Block until the client's work before its last release of slot has run
 * (returns at once for a slot never released). 0 or FEEDER_ENODEV. */
int gpu_ring_wait_release(struct gpu_ring *r, uint32_t slot, char *err, size_t errlen);

/* Record slot's ready event on cuda_stream (NULL: the legacy default stream)
 * after the work that writes the slot. 0 or FEEDER_ENODEV. */
int gpu_ring_mark_ready(struct gpu_ring *r, uint32_t slot, void *cuda_stream, char *err,
			size_t errlen);

#endif
