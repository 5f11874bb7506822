/* gpu_ring_dev.h — the CUDA half of gpu_ring (private to daemon/gpu_ring*):
 * gpu_ring.c keeps what every ring has (emulation, parking of rings whose
 * writes are still running) and calls these for a ring on a real device;
 * gpu_ring.cu implements them, gpu_ring_none.c answers FEEDER_ENODEV. */
#ifndef FEEDER_GPU_RING_DEV_H
#define FEEDER_GPU_RING_DEV_H

#include "protocol.h"

#include <stddef.h>
#include <stdint.h>

struct gpu_ring_dev;

int gpu_ring_dev_create(struct gpu_ring_dev **out, int device, uint32_t slots, uint64_t stride,
			struct proto_device_table *t, struct proto_device_slot *entries, char *err,
			size_t errlen);
/* 1 if the daemon's writes (the ready events) have all completed, or the
 * device failed (then nothing more will run); 0 if some are still running. */
int gpu_ring_dev_idle(struct gpu_ring_dev *d);
/* Free events and memory (call once gpu_ring_dev_idle said 1). */
void gpu_ring_dev_free(struct gpu_ring_dev *d);
void *gpu_ring_dev_slot(const struct gpu_ring_dev *d, uint32_t slot);
int gpu_ring_dev_release_done(struct gpu_ring_dev *d, uint32_t slot, char *err, size_t errlen);
int gpu_ring_dev_mark_ready(struct gpu_ring_dev *d, uint32_t slot, void *cuda_stream, char *err,
			    size_t errlen);

#endif
