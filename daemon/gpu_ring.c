/* gpu_ring.c — what every device ring has, on a device or emulated (see
 * gpu_ring.h): the slot stride, the emulation of a ring in host memory for
 * tests, and the parking of rings given up while the daemon's writes into
 * them still run (freeing device memory a kernel writes is undefined, and
 * waiting for it on the event loop would stall every client). The CUDA
 * calls are gpu_ring_dev_* (gpu_ring.cu, or gpu_ring_none.c). */
#include "gpu_ring.h"

#include "gpu_ring_dev.h"
#include "gpu_slot.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct gpu_ring {
	uint32_t slots;
	uint64_t stride;
	struct gpu_ring_dev *dev; /* on a device, else NULL (emulated) */
	/* emulated */
	uint8_t *host;         /* the tensors */
	uint64_t *released_at; /* per slot: RELEASE time (us), 0 = done */
	uint64_t release_us;   /* how long an emulated release takes */
	struct gpu_ring *next; /* parked */
};

static pthread_mutex_t parked_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpu_ring *parked;

static void ring_free(struct gpu_ring *r)
{
	if (r->dev)
		gpu_ring_dev_free(r->dev);
	free(r->host);
	free(r->released_at);
	free(r);
}

static uint64_t emulated_release_us(void)
{
	const char *v = getenv("FEEDERD_GPU_EMULATE_RELEASE_MS");
	char *end;
	unsigned long ms = v ? strtoul(v, &end, 10) : 0;
	return v && *v && !*end && ms <= 60000 ? (uint64_t)ms * 1000 : 0;
}

/* The emulated device's memory for rings, FEEDERD_GPU_EMULATE_DEVICE_KB
 * KiB (unset: unlimited), so that tests meet a ring the device cannot hold
 * as a real one would (cudaMalloc out of memory). */
static int emulated_room(uint64_t bytes, char *err, size_t errlen)
{
	const char *v = getenv("FEEDERD_GPU_EMULATE_DEVICE_KB");
	char *end;
	unsigned long long kb = v ? strtoull(v, &end, 10) : 0;
	if (!v || !*v || *end || kb > UINT64_MAX / 1024 || bytes <= kb * 1024)
		return 0;
	return status_fail(err, errlen, -ENOMEM,
			   "cudaMalloc of the device ring failed: out of memory (%llu bytes on an "
			   "emulated device of %llu KiB)",
			   (unsigned long long)bytes, kb);
}

int gpu_ring_create(struct gpu_ring **out, int device, uint32_t slots, uint64_t tensor_bytes,
		    struct proto_device_table *t, struct proto_device_slot *entries, char *err,
		    size_t errlen)
{
	*out = NULL;
	struct gpu_ring *r = calloc(1, sizeof(*r));
	if (!r)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	r->slots = slots;
	r->stride = (tensor_bytes + 255) / 256 * 256;
	if (slots && r->stride > UINT64_MAX / slots) {
		free(r);
		return status_fail(err, errlen, FEEDER_EQUOTA, "device ring size overflows");
	}
	int rc;
	if (device == GPU_SLOT_EMULATED && (rc = emulated_room(r->stride * slots, err, errlen))) {
		free(r);
		return rc;
	}
	if (device == GPU_SLOT_EMULATED) {
		r->host = calloc(slots ? slots : 1, r->stride);
		r->released_at = calloc(slots ? slots : 1, sizeof(*r->released_at));
		r->release_us = emulated_release_us();
		memset(t, 0, sizeof(*t));
		t->magic = PROTO_DEVICE_MAGIC;
		t->device = (uint32_t)device;
		t->tensor_stride = r->stride;
		memset(entries, 0, (size_t)slots * sizeof(*entries));
		rc = r->host && r->released_at ? 0
					       : status_fail(err, errlen, -ENOMEM, "out of memory");
	} else {
		rc = gpu_ring_dev_create(&r->dev, device, slots, r->stride, t, entries, err,
					 errlen);
	}
	if (rc) {
		ring_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void gpu_ring_destroy(struct gpu_ring *r)
{
	if (!r)
		return;
	if (!r->dev || gpu_ring_dev_idle(r->dev)) {
		ring_free(r);
		return;
	}
	pthread_mutex_lock(&parked_lock);
	r->next = parked;
	parked = r;
	pthread_mutex_unlock(&parked_lock);
}

unsigned gpu_ring_collect(void)
{
	unsigned left = 0;
	pthread_mutex_lock(&parked_lock);
	for (struct gpu_ring **p = &parked; *p;) {
		struct gpu_ring *r = *p;
		if (gpu_ring_dev_idle(r->dev)) {
			*p = r->next;
			ring_free(r);
		} else {
			left++;
			p = &r->next;
		}
	}
	pthread_mutex_unlock(&parked_lock);
	return left;
}

void *gpu_ring_slot(const struct gpu_ring *r, uint32_t slot)
{
	if (slot >= r->slots)
		return NULL;
	return r->dev ? gpu_ring_dev_slot(r->dev, slot) : r->host + (uint64_t)slot * r->stride;
}

void gpu_ring_note_release(struct gpu_ring *r, uint32_t slot, uint64_t now_us)
{
	/* On a device the client recorded the event before it sent RELEASE. */
	if (!r->dev && slot < r->slots)
		r->released_at[slot] = now_us ? now_us : 1;
}

int gpu_ring_release_done(struct gpu_ring *r, uint32_t slot, uint64_t now_us, char *err,
			  size_t errlen)
{
	if (slot >= r->slots)
		return status_fail(err, errlen, FEEDER_EINVAL, "slot %u of %u", slot, r->slots);
	if (r->dev)
		return gpu_ring_dev_release_done(r->dev, slot, err, errlen);
	if (r->released_at[slot] && now_us - r->released_at[slot] < r->release_us)
		return 0;
	r->released_at[slot] = 0;
	return 1;
}

int gpu_ring_mark_ready(struct gpu_ring *r, uint32_t slot, void *cuda_stream, char *err,
			size_t errlen)
{
	if (slot >= r->slots)
		return status_fail(err, errlen, FEEDER_EINVAL, "slot %u of %u", slot, r->slots);
	/* Emulated writes are finished when the submitting worker returns. */
	return r->dev ? gpu_ring_dev_mark_ready(r->dev, slot, cuda_stream, err, errlen) : 0;
}
