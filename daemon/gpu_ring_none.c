/* gpu_ring_none.c — gpu_ring_dev.h for builds without CUDA: no ring can be
 * created on a device (emulated rings, gpu_ring.c, need none of this). */
#include "gpu_ring_dev.h"

#include "status.h"

int gpu_ring_dev_create(struct gpu_ring_dev **out, int device, uint32_t slots, uint64_t stride,
			struct proto_device_table *t, struct proto_device_slot *entries, char *err,
			size_t errlen)
{
	(void)device, (void)slots, (void)stride, (void)t, (void)entries;
	*out = NULL;
	return status_fail(err, errlen, FEEDER_ENODEV, "feederd was built without CUDA");
}

/* Never called: no ring has a device part in this build. */
int gpu_ring_dev_idle(struct gpu_ring_dev *d)
{
	(void)d;
	return 1;
}

void gpu_ring_dev_free(struct gpu_ring_dev *d)
{
	(void)d;
}

void *gpu_ring_dev_slot(const struct gpu_ring_dev *d, uint32_t slot)
{
	(void)d, (void)slot;
	return NULL;
}

int gpu_ring_dev_release_done(struct gpu_ring_dev *d, uint32_t slot, char *err, size_t errlen)
{
	(void)d, (void)slot;
	return status_fail(err, errlen, FEEDER_ENODEV, "feederd was built without CUDA");
}

int gpu_ring_dev_mark_ready(struct gpu_ring_dev *d, uint32_t slot, void *cuda_stream, char *err,
			    size_t errlen)
{
	(void)d, (void)slot, (void)cuda_stream;
	return status_fail(err, errlen, FEEDER_ENODEV, "feederd was built without CUDA");
}
