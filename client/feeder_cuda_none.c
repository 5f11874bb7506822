/* feeder_cuda_none.c — libfeeder's CUDA helpers (feeder_cuda.h) in a build
 * without CUDA: pinning and device rings answer FEEDER_ENODEV, and no device
 * is usable, so streams take their batches in the host ring. Meson builds
 * this file instead of feeder_cuda.cu when nvcc is absent. */
#include "feeder_cuda.h"

#include "status.h"

int fcuda_host_register(void *p, size_t len, int readonly, char *err, size_t errlen)
{
	(void)p, (void)len, (void)readonly;
	return status_fail(err, errlen, FEEDER_ENODEV, "libfeeder was built without CUDA");
}

void fcuda_host_unregister(void *p)
{
	(void)p;
}

int fcuda_device_usable(void)
{
	return 0;
}

int fcuda_ring_open(const struct proto_device_table *t, const struct proto_device_slot *slots,
		    uint32_t nslots, void **base, int *device, struct fcuda_ring **out, char *err,
		    size_t errlen)
{
	(void)t, (void)slots, (void)nslots, (void)base, (void)device;
	*out = NULL;
	return status_fail(err, errlen, FEEDER_ENODEV, "libfeeder was built without CUDA");
}

void fcuda_ring_close(struct fcuda_ring *r)
{
	(void)r;
}

int fcuda_ring_wait(struct fcuda_ring *r, uint32_t slot, void *cuda_stream, char *err,
		    size_t errlen)
{
	(void)r, (void)slot, (void)cuda_stream;
	return status_fail(err, errlen, FEEDER_ENODEV, "libfeeder was built without CUDA");
}

int fcuda_ring_release(struct fcuda_ring *r, uint32_t slot, void *cuda_stream, char *err,
		       size_t errlen)
{
	(void)r, (void)slot, (void)cuda_stream;
	return status_fail(err, errlen, FEEDER_ENODEV, "libfeeder was built without CUDA");
}
