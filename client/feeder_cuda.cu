/* feeder_cuda.cu — page-locks a stream's ring with cudaHostRegister so that
 * copies of its batches to the GPU are single DMAs (see feeder_cuda.h). The
 * ring is a MAP_SHARED memfd mapping, which cudaHostRegister accepts like any
 * other host memory. */
extern "C" {
#include "feeder_cuda.h"
#include "status.h"
}

#include <cuda_runtime.h>
#include <errno.h>

extern "C" int fcuda_host_register(void *p, size_t len, int readonly, char *err, size_t errlen)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0)
		return status_fail(err, errlen, FEEDER_ENODEV, "cannot pin the ring: %s",
				   e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
	unsigned flags = cudaHostRegisterPortable | cudaHostRegisterMapped;
	if (readonly)
		flags |= cudaHostRegisterReadOnly;
	e = cudaHostRegister(p, len, flags);
	if (e != cudaSuccess) {
		cudaGetLastError(); /* clear the sticky-free error so later calls work */
		return status_fail(err, errlen, -EIO, "cudaHostRegister of %zu bytes failed: %s",
				   len, cudaGetErrorString(e));
	}
	return 0;
}

extern "C" void fcuda_host_unregister(void *p)
{
	cudaHostUnregister(p);
	cudaGetLastError();
}

/* ---- Device-resident rings ------------------------------------------------ */

extern "C" {
#include "protocol.h"
}

#include <stdlib.h>
#include <string.h>

/* Up to this many CUDA devices in one process have bridge events (see
 * fcuda_ring_release); more are refused with a sentence. */
#define FCUDA_MAX_DEVICES 64

struct fcuda_ring {
	int device;
	void *base;
	uint32_t nslots;
	cudaEvent_t *ready, *release;
	/* A release recorded on a trainer stream of another device reaches the
	 * IPC event through an event of that device (bridge[dev]) waited on by
	 * a stream of the ring's device (link): an event and the stream it is
	 * recorded on must belong to the same device. Made when first needed. */
	cudaEvent_t bridge[FCUDA_MAX_DEVICES];
	cudaStream_t link;
};

extern "C" int fcuda_device_usable(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		cudaGetLastError();
		return 0;
	}
	return n > 0;
}

static int cuda_fail(char *err, size_t errlen, cudaError_t e, const char *what)
{
	cudaGetLastError();
	return status_fail(err, errlen, -EIO, "%s failed: %s", what, cudaGetErrorString(e));
}

/* CUDA calls act on the current device; the trainer's choice of current
 * device is restored after each of ours. */
struct device_scope {
	int saved;
	bool ok;
	explicit device_scope(int dev) : saved(0), ok(false)
	{
		if (cudaGetDevice(&saved) != cudaSuccess)
			return;
		ok = cudaSetDevice(dev) == cudaSuccess;
	}
	~device_scope()
	{
		cudaSetDevice(saved);
	}
};

/* The device a stream belongs to: the legacy default stream (NULL) is the
 * caller's current device's. CUDA before 12.8 cannot tell for other streams;
 * they are taken to be on the current device there too. */
static cudaError_t stream_device(cudaStream_t st, int *dev)
{
#if CUDART_VERSION >= 12080
	if (st)
		return cudaStreamGetDevice(st, dev);
#endif
	return cudaGetDevice(dev);
}

extern "C" void fcuda_ring_close(struct fcuda_ring *r)
{
	if (!r)
		return;
	for (int d = 0; d < FCUDA_MAX_DEVICES; d++)
		if (r->bridge[d]) {
			device_scope scope(d);
			cudaEventSynchronize(r->bridge[d]);
			cudaEventDestroy(r->bridge[d]);
		}
	{
		device_scope scope(r->device);
		/* Work the trainer queued on any stream may still read the ring
		 * (a device-to-device copy of a batch) or wait on its events:
		 * closing the handles under it is undefined behaviour and can
		 * poison the trainer's context. Which streams is not known here,
		 * so the whole device is drained; a ring closes rarely (stream
		 * close, reconnect). */
		cudaDeviceSynchronize();
		for (uint32_t i = 0; i < r->nslots; i++) {
			if (r->ready && r->ready[i])
				cudaEventDestroy(r->ready[i]);
			if (r->release && r->release[i])
				cudaEventDestroy(r->release[i]);
		}
		if (r->link)
			cudaStreamDestroy(r->link);
		if (r->base)
			cudaIpcCloseMemHandle(r->base);
		cudaGetLastError();
	}
	free(r->ready);
	free(r->release);
	free(r);
}

extern "C" int fcuda_ring_open(const struct proto_device_table *t,
			       const struct proto_device_slot *slots, uint32_t nslots, void **base,
			       int *device, struct fcuda_ring **out, char *err, size_t errlen)
{
	*out = NULL;
	char bus[sizeof t->pci_bus_id + 1];
	memcpy(bus, t->pci_bus_id, sizeof t->pci_bus_id);
	bus[sizeof t->pci_bus_id] = '\0';
	int dev = -1;
	cudaError_t e = cudaDeviceGetByPCIBusId(&dev, bus);
	if (e != cudaSuccess) {
		cudaGetLastError();
		return status_fail(err, errlen, FEEDER_ENODEV,
				   "feederd's GPU%s%s is not visible to this process: %s",
				   bus[0] ? " " : "", bus, cudaGetErrorString(e));
	}
	struct fcuda_ring *r = (struct fcuda_ring *)calloc(1, sizeof *r);
	if (r) {
		r->ready = (cudaEvent_t *)calloc(nslots, sizeof(cudaEvent_t));
		r->release = (cudaEvent_t *)calloc(nslots, sizeof(cudaEvent_t));
	}
	if (!r || !r->ready || !r->release) {
		if (r) {
			free(r->ready);
			free(r->release);
			free(r);
		}
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	}
	r->device = dev;
	r->nslots = nslots;
	int rc = 0;
	{
		device_scope scope(dev);
		if (!scope.ok)
			rc = status_fail(err, errlen, -EIO, "cannot use GPU %s", bus);
		cudaIpcMemHandle_t mh;
		memcpy(&mh, t->mem_handle, sizeof mh);
		if (rc == 0 &&
		    (e = cudaIpcOpenMemHandle(&r->base, mh, cudaIpcMemLazyEnablePeerAccess)) !=
			    cudaSuccess) {
			r->base = NULL;
			rc = cuda_fail(err, errlen, e, "cudaIpcOpenMemHandle of the ring");
		}
		for (uint32_t i = 0; rc == 0 && i < nslots; i++) {
			cudaIpcEventHandle_t eh;
			memcpy(&eh, slots[i].ready_event, sizeof eh);
			if ((e = cudaIpcOpenEventHandle(&r->ready[i], eh)) != cudaSuccess) {
				r->ready[i] = NULL;
				rc = cuda_fail(err, errlen, e, "cudaIpcOpenEventHandle (ready)");
				break;
			}
			memcpy(&eh, slots[i].release_event, sizeof eh);
			if ((e = cudaIpcOpenEventHandle(&r->release[i], eh)) != cudaSuccess) {
				r->release[i] = NULL;
				rc = cuda_fail(err, errlen, e, "cudaIpcOpenEventHandle (release)");
			}
		}
	}
	if (rc) {
		fcuda_ring_close(r);
		return rc;
	}
	*base = r->base;
	*device = dev;
	*out = r;
	return 0;
}

extern "C" int fcuda_ring_wait(struct fcuda_ring *r, uint32_t slot, void *cuda_stream, char *err,
			       size_t errlen)
{
	if (slot >= r->nslots)
		return status_fail(err, errlen, FEEDER_EINVAL, "slot %u of %u", slot, r->nslots);
	/* No device switch: a stream may wait on another device's event, and
	 * the legacy default stream must stay the caller's current device's. */
	cudaError_t e = cudaStreamWaitEvent((cudaStream_t)cuda_stream, r->ready[slot], 0);
	return e == cudaSuccess ? 0 : cuda_fail(err, errlen, e, "cudaStreamWaitEvent");
}

extern "C" int fcuda_ring_release(struct fcuda_ring *r, uint32_t slot, void *cuda_stream, char *err,
				  size_t errlen)
{
	if (slot >= r->nslots)
		return status_fail(err, errlen, FEEDER_EINVAL, "slot %u of %u", slot, r->nslots);
	cudaStream_t st = (cudaStream_t)cuda_stream;
	int sd = -1;
	cudaError_t e = stream_device(st, &sd);
	if (e != cudaSuccess)
		return cuda_fail(err, errlen, e, "finding the device of the release stream");
	if (sd == r->device) {
		/* Same device: record the IPC event on the trainer's stream. For
		 * NULL that is the current device's legacy stream, which is the
		 * ring's here. */
		e = cudaEventRecord(r->release[slot], st);
		return e == cudaSuccess ? 0 : cuda_fail(err, errlen, e, "cudaEventRecord");
	}
	if (sd < 0 || sd >= FCUDA_MAX_DEVICES)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "release stream on CUDA device %d, beyond the %d supported", sd,
				   FCUDA_MAX_DEVICES);
	/* Another device: mark the point on the trainer's stream with an event
	 * of its own device, and have the ring's device record the IPC event
	 * once that point is passed. */
	if (!r->bridge[sd]) {
		device_scope scope(sd);
		e = scope.ok ? cudaEventCreateWithFlags(&r->bridge[sd], cudaEventDisableTiming)
			     : cudaErrorInvalidDevice;
		if (e != cudaSuccess) {
			r->bridge[sd] = NULL;
			return cuda_fail(err, errlen, e, "creating a release bridge event");
		}
	}
	{
		/* For a NULL stream the current device is sd already. */
		device_scope scope(sd);
		e = cudaEventRecord(r->bridge[sd], st);
	}
	if (e != cudaSuccess)
		return cuda_fail(err, errlen, e, "cudaEventRecord (bridge)");
	device_scope scope(r->device);
	if (!r->link &&
	    (e = cudaStreamCreateWithFlags(&r->link, cudaStreamNonBlocking)) != cudaSuccess) {
		r->link = NULL;
		return cuda_fail(err, errlen, e, "creating the release link stream");
	}
	if ((e = cudaStreamWaitEvent(r->link, r->bridge[sd], 0)) != cudaSuccess ||
	    (e = cudaEventRecord(r->release[slot], r->link)) != cudaSuccess)
		return cuda_fail(err, errlen, e, "recording the release across devices");
	return 0;
}
