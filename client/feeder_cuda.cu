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
		return status_fail(err, errlen, -EIO, "cudaHostRegister of %zu bytes failed: %s", len,
				   cudaGetErrorString(e));
	}
	return 0;
}

extern "C" void fcuda_host_unregister(void *p)
{
	cudaHostUnregister(p);
	cudaGetLastError();
}
