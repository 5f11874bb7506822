/* feeder_cuda.h — libfeeder's use of the CUDA runtime: page-locking a
 * stream's ring (feeder_pin). Built from feeder_cuda.cu when CUDA is
 * present; feeder.c has the no-CUDA versions. Internal: the names avoid the
 * feeder_ prefix so that the version script keeps them out of the ABI. */
#ifndef FEEDER_CUDA_H
#define FEEDER_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cudaHostRegister(p, len, portable | mapped [| read-only]). Returns 0,
 * FEEDER_ENODEV (no device or driver), or -EIO with CUDA's reason. */
int fcuda_host_register(void *p, size_t len, int readonly, char *err, size_t errlen);
/* Undo fcuda_host_register; errors are ignored (the mapping goes next). */
void fcuda_host_unregister(void *p);

#ifdef __cplusplus
}
#endif

#endif
