/* gpu_ring.cu — the CUDA half of device-resident stream rings (see
 * gpu_ring_dev.h and gpu_ring.h): one cudaMalloc for all slots, exported
 * by cudaIpcGetMemHandle, and per slot an interprocess ready event (the
 * daemon's write) and release event (the client's read). Nothing here
 * blocks on the client: its release events are queried, never waited on. */
extern "C" {
#include "gpu_ring_dev.h"
#include "status.h"
}

#include <cuda_runtime.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct gpu_ring_dev {
	int device;
	uint32_t slots;
	uint64_t stride;
	uint8_t *base;
	cudaEvent_t *ready, *release;
	int failed; /* the device reported an error: nothing more runs */
};

static int fail(char *err, size_t errlen, cudaError_t e, const char *what)
{
	cudaGetLastError();
	return status_fail(err, errlen, e == cudaErrorMemoryAllocation ? -ENOMEM : FEEDER_ENODEV,
			   "%s failed: %s", what, cudaGetErrorString(e));
}

extern "C" int gpu_ring_dev_idle(struct gpu_ring_dev *d)
{
	if (d->failed || cudaSetDevice(d->device) != cudaSuccess) {
		cudaGetLastError();
		return 1;
	}
	for (uint32_t i = 0; i < d->slots; i++) {
		if (!d->ready || !d->ready[i])
			continue;
		cudaError_t e = cudaEventQuery(d->ready[i]);
		if (e == cudaErrorNotReady)
			return 0;
		if (e != cudaSuccess) {
			/* A sticky error: no work of this context runs any more. */
			cudaGetLastError();
			d->failed = 1;
			return 1;
		}
	}
	return 1;
}

extern "C" void gpu_ring_dev_free(struct gpu_ring_dev *d)
{
	if (!d)
		return;
	if (cudaSetDevice(d->device) == cudaSuccess) {
		for (uint32_t i = 0; i < d->slots; i++) {
			if (d->ready && d->ready[i])
				cudaEventDestroy(d->ready[i]);
			if (d->release && d->release[i])
				cudaEventDestroy(d->release[i]);
		}
		if (d->base)
			cudaFree(d->base);
	}
	cudaGetLastError();
	free(d->ready);
	free(d->release);
	free(d);
}

extern "C" int gpu_ring_dev_create(struct gpu_ring_dev **out, int device, uint32_t slots,
				   uint64_t stride, struct proto_device_table *t,
				   struct proto_device_slot *entries, char *err, size_t errlen)
{
	*out = NULL;
	cudaError_t e = cudaSetDevice(device);
	if (e != cudaSuccess)
		return fail(err, errlen, e, "cudaSetDevice");
	int ipc = 0;
	if (cudaDeviceGetAttribute(&ipc, cudaDevAttrIpcEventSupport, device) != cudaSuccess ||
	    !ipc) {
		cudaGetLastError();
		return status_fail(err, errlen, FEEDER_ENODEV,
				   "GPU %d does not support CUDA IPC events", device);
	}
	struct gpu_ring_dev *d = (struct gpu_ring_dev *)calloc(1, sizeof *d);
	if (d) {
		d->ready = (cudaEvent_t *)calloc(slots, sizeof(cudaEvent_t));
		d->release = (cudaEvent_t *)calloc(slots, sizeof(cudaEvent_t));
	}
	if (!d || !d->ready || !d->release) {
		if (d) {
			free(d->ready);
			free(d->release);
			free(d);
		}
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	}
	d->device = device;
	d->slots = slots;
	d->stride = stride;
	int rc = 0;
	if ((e = cudaMalloc((void **)&d->base, stride * slots)) != cudaSuccess) {
		d->base = NULL;
		rc = fail(err, errlen, e, "cudaMalloc of the device ring");
	}
	memset(t, 0, sizeof *t);
	t->magic = PROTO_DEVICE_MAGIC;
	t->device = device;
	t->tensor_stride = stride;
	if (rc == 0 && (e = cudaDeviceGetPCIBusId(t->pci_bus_id, (int)sizeof t->pci_bus_id,
						  device)) != cudaSuccess)
		rc = fail(err, errlen, e, "cudaDeviceGetPCIBusId");
	cudaIpcMemHandle_t mh;
	if (rc == 0 && (e = cudaIpcGetMemHandle(&mh, d->base)) != cudaSuccess)
		rc = fail(err, errlen, e, "cudaIpcGetMemHandle");
	if (rc == 0)
		memcpy(t->mem_handle, &mh, sizeof mh);
	const unsigned flags = cudaEventInterprocess | cudaEventDisableTiming;
	for (uint32_t i = 0; rc == 0 && i < slots; i++) {
		cudaIpcEventHandle_t eh;
		if ((e = cudaEventCreateWithFlags(&d->ready[i], flags)) != cudaSuccess ||
		    (e = cudaIpcGetEventHandle(&eh, d->ready[i])) != cudaSuccess) {
			rc = fail(err, errlen, e, "creating the ready event of a slot");
			break;
		}
		memcpy(entries[i].ready_event, &eh, sizeof eh);
		if ((e = cudaEventCreateWithFlags(&d->release[i], flags)) != cudaSuccess ||
		    (e = cudaIpcGetEventHandle(&eh, d->release[i])) != cudaSuccess) {
			rc = fail(err, errlen, e, "creating the release event of a slot");
			break;
		}
		memcpy(entries[i].release_event, &eh, sizeof eh);
	}
	if (rc) {
		/* Nothing was queued on the ring yet. */
		gpu_ring_dev_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

extern "C" void *gpu_ring_dev_slot(const struct gpu_ring_dev *d, uint32_t slot)
{
	return d->base + (uint64_t)slot * d->stride;
}

extern "C" int gpu_ring_dev_release_done(struct gpu_ring_dev *d, uint32_t slot, char *err,
					 size_t errlen)
{
	cudaError_t e = cudaSetDevice(d->device);
	if (e == cudaSuccess)
		e = cudaEventQuery(d->release[slot]);
	if (e == cudaErrorNotReady) {
		cudaGetLastError();
		return 0;
	}
	if (e != cudaSuccess) {
		d->failed = 1;
		return fail(err, errlen, e, "querying the client's release of a slot");
	}
	return 1;
}

extern "C" int gpu_ring_dev_mark_ready(struct gpu_ring_dev *d, uint32_t slot, void *cuda_stream,
				       char *err, size_t errlen)
{
	cudaError_t e = cudaSetDevice(d->device);
	if (e == cudaSuccess)
		e = cudaEventRecord(d->ready[slot], (cudaStream_t)cuda_stream);
	return e == cudaSuccess ? 0 : fail(err, errlen, e, "recording a slot's ready event");
}
