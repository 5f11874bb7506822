/* gpu_ring.cu — device-resident stream rings on CUDA (see gpu_ring.h). */
extern "C" {
#include "gpu_ring.h"
#include "status.h"
}

#include <cuda_runtime.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct gpu_ring {
	int device;
	uint32_t slots;
	uint64_t stride;
	uint8_t *base;
	cudaEvent_t *ready, *release;
};

static int fail(char *err, size_t errlen, cudaError_t e, const char *what)
{
	cudaGetLastError();
	return status_fail(err, errlen, e == cudaErrorMemoryAllocation ? -ENOMEM : FEEDER_ENODEV,
			   "%s failed: %s", what, cudaGetErrorString(e));
}

extern "C" void gpu_ring_destroy(struct gpu_ring *r)
{
	if (!r)
		return;
	if (cudaSetDevice(r->device) == cudaSuccess) {
		/* Pending writes must not land in freed memory. */
		cudaDeviceSynchronize();
		for (uint32_t i = 0; i < r->slots; i++) {
			if (r->ready && r->ready[i])
				cudaEventDestroy(r->ready[i]);
			if (r->release && r->release[i])
				cudaEventDestroy(r->release[i]);
		}
		if (r->base)
			cudaFree(r->base);
	}
	cudaGetLastError();
	free(r->ready);
	free(r->release);
	free(r);
}

extern "C" int gpu_ring_create(struct gpu_ring **out, int device, uint32_t slots,
			       uint64_t tensor_bytes, struct proto_device_table *t,
			       struct proto_device_slot *entries, char *err, size_t errlen)
{
	*out = NULL;
	cudaError_t e = cudaSetDevice(device);
	if (e != cudaSuccess)
		return fail(err, errlen, e, "cudaSetDevice");
	int ipc = 0;
	if (cudaDeviceGetAttribute(&ipc, cudaDevAttrIpcEventSupport, device) != cudaSuccess || !ipc) {
		cudaGetLastError();
		return status_fail(err, errlen, FEEDER_ENODEV,
				   "GPU %d does not support CUDA IPC events", device);
	}
	struct gpu_ring *r = (struct gpu_ring *)calloc(1, sizeof *r);
	if (r) {
		r->ready = (cudaEvent_t *)calloc(slots, sizeof(cudaEvent_t));
		r->release = (cudaEvent_t *)calloc(slots, sizeof(cudaEvent_t));
	}
	if (!r || !r->ready || !r->release) {
		if (r) {
			free(r->ready);
			free(r->release);
			free(r);
		}
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	}
	r->device = device;
	r->slots = slots;
	r->stride = (tensor_bytes + 255) / 256 * 256;
	int rc = 0;
	if (slots && r->stride > UINT64_MAX / slots)
		rc = status_fail(err, errlen, FEEDER_EQUOTA, "device ring size overflows");
	if (rc == 0 && (e = cudaMalloc((void **)&r->base, r->stride * slots)) != cudaSuccess) {
		r->base = NULL;
		rc = fail(err, errlen, e, "cudaMalloc of the device ring");
	}
	memset(t, 0, sizeof *t);
	t->magic = PROTO_DEVICE_MAGIC;
	t->device = device;
	t->tensor_stride = r->stride;
	if (rc == 0 && (e = cudaDeviceGetPCIBusId(t->pci_bus_id, (int)sizeof t->pci_bus_id,
						   device)) != cudaSuccess)
		rc = fail(err, errlen, e, "cudaDeviceGetPCIBusId");
	cudaIpcMemHandle_t mh;
	if (rc == 0 && (e = cudaIpcGetMemHandle(&mh, r->base)) != cudaSuccess)
		rc = fail(err, errlen, e, "cudaIpcGetMemHandle");
	if (rc == 0)
		memcpy(t->mem_handle, &mh, sizeof mh);
	const unsigned flags = cudaEventInterprocess | cudaEventDisableTiming;
	for (uint32_t i = 0; rc == 0 && i < slots; i++) {
		cudaIpcEventHandle_t eh;
		if ((e = cudaEventCreateWithFlags(&r->ready[i], flags)) != cudaSuccess ||
		    (e = cudaIpcGetEventHandle(&eh, r->ready[i])) != cudaSuccess) {
			rc = fail(err, errlen, e, "creating the ready event of a slot");
			break;
		}
		memcpy(entries[i].ready_event, &eh, sizeof eh);
		if ((e = cudaEventCreateWithFlags(&r->release[i], flags)) != cudaSuccess ||
		    (e = cudaIpcGetEventHandle(&eh, r->release[i])) != cudaSuccess) {
			rc = fail(err, errlen, e, "creating the release event of a slot");
			break;
		}
		memcpy(entries[i].release_event, &eh, sizeof eh);
	}
	if (rc) {
		gpu_ring_destroy(r);
		return rc;
	}
	*out = r;
	return 0;
}

extern "C" void *gpu_ring_slot(const struct gpu_ring *r, uint32_t slot)
{
	return slot < r->slots ? r->base + (uint64_t)slot * r->stride : NULL;
}

extern "C" int gpu_ring_wait_release(struct gpu_ring *r, uint32_t slot, char *err, size_t errlen)
{
	if (slot >= r->slots)
		return status_fail(err, errlen, FEEDER_EINVAL, "slot %u of %u", slot, r->slots);
	cudaError_t e = cudaEventSynchronize(r->release[slot]);
	return e == cudaSuccess ? 0 : fail(err, errlen, e, "waiting for the client's release");
}

extern "C" int gpu_ring_mark_ready(struct gpu_ring *r, uint32_t slot, void *cuda_stream,
				   char *err, size_t errlen)
{
	if (slot >= r->slots)
		return status_fail(err, errlen, FEEDER_EINVAL, "slot %u of %u", slot, r->slots);
	cudaError_t e = cudaSetDevice(r->device);
	if (e == cudaSuccess)
		e = cudaEventRecord(r->ready[slot], (cudaStream_t)cuda_stream);
	return e == cudaSuccess ? 0 : fail(err, errlen, e, "recording a slot's ready event");
}
