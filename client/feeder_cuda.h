/* feeder_cuda.h — libfeeder's use of the CUDA runtime: page-locking a
 * stream's ring (feeder_stream_pin), and the device-resident rings of streams that
 * feederd serves from GPU memory (CUDA IPC memory and events, described by
 * the ring's device table, proto/protocol.h). Built from feeder_cuda.cu when
 * CUDA is present, from feeder_cuda_none.c otherwise. Internal: the names
 * avoid the feeder_ prefix so that the version script keeps them out of the
 * ABI. */
#ifndef FEEDER_CUDA_H
#define FEEDER_CUDA_H

#include <stddef.h>
#include <stdint.h>

struct proto_device_table;
struct proto_device_slot;

#ifdef __cplusplus
extern "C" {
#endif

/* cudaHostRegister(p, len, portable | mapped [| read-only]). Returns 0,
 * FEEDER_ENODEV (no device or driver), or -EIO with CUDA's reason. */
int fcuda_host_register(void *p, size_t len, int readonly, char *err, size_t errlen);
/* Undo fcuda_host_register; errors are ignored (the mapping goes next). */
void fcuda_host_unregister(void *p);

/* 1 if this process sees a CUDA device (and so may ask for device batches). */
int fcuda_device_usable(void);

/* Open a device ring: the device whose PCI bus id the table names, the
 * tensor buffer (cudaIpcOpenMemHandle) and each slot's two events. *base is
 * the buffer's address in this process, *device the ordinal here. Returns 0,
 * FEEDER_ENODEV (that GPU is not visible here) or -EIO with CUDA's reason. */
struct fcuda_ring;
int fcuda_ring_open(const struct proto_device_table *t, const struct proto_device_slot *slots,
		    uint32_t nslots, void **base, int *device, struct fcuda_ring **out, char *err,
		    size_t errlen);
/* Drain the ring's device (cudaDeviceSynchronize: the trainer's reads of
 * the ring may be queued on any stream), then destroy the events and close
 * the memory handle. NULL is a no-op. */
void fcuda_ring_close(struct fcuda_ring *r);
/* Make cuda_stream (NULL: the legacy default stream) wait for the daemon's
 * write of slot. */
int fcuda_ring_wait(struct fcuda_ring *r, uint32_t slot, void *cuda_stream, char *err,
		    size_t errlen);
/* Record, on cuda_stream, the point after which the daemon may overwrite slot. */
int fcuda_ring_release(struct fcuda_ring *r, uint32_t slot, void *cuda_stream, char *err,
		       size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
