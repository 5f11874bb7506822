/* gpu_ring_none.c — gpu_ring.h for builds without CUDA: nothing can be
 * created, so no stream ever has a device ring. */
#include "gpu_ring.h"

#include "status.h"

int gpu_ring_create(struct gpu_ring **out, int device, uint32_t slots, uint64_t tensor_bytes,
		    struct proto_device_table *t, struct proto_device_slot *entries, char *err,
		    size_t errlen)
{
	(void)device, (void)slots, (void)tensor_bytes, (void)t, (void)entries;
	*out = NULL;
	return status_fail(err, errlen, FEEDER_ENODEV, "feederd was built without CUDA");
}

void gpu_ring_destroy(struct gpu_ring *r)
{
	(void)r;
}

void *gpu_ring_slot(const struct gpu_ring *r, uint32_t slot)
{
	(void)r, (void)slot;
	return NULL;
}

int gpu_ring_wait_release(struct gpu_ring *r, uint32_t slot, char *err, size_t errlen)
{
	(void)r, (void)slot;
	return status_fail(err, errlen, FEEDER_ENODEV, "feederd was built without CUDA");
}

int gpu_ring_mark_ready(struct gpu_ring *r, uint32_t slot, void *cuda_stream, char *err,
			size_t errlen)
{
	(void)r, (void)slot, (void)cuda_stream;
	return status_fail(err, errlen, FEEDER_ENODEV, "feederd was built without CUDA");
}
