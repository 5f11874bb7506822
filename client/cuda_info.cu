/* cuda_info.cu — device discovery through the CUDA runtime (see cuda_info.h). */
extern "C" {
#include "cuda_info.h"
#include "status.h"
}

#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

extern "C" int cuda_info_built(void)
{
	return 1;
}

extern "C" int cuda_info_devices(struct cuda_info_device *dev, char *why, size_t whylen)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess)
		return status_fail(why, whylen, FEEDER_ENODEV, "no usable CUDA device: %s",
				   cudaGetErrorString(e));
	if (n == 0)
		return status_fail(why, whylen, FEEDER_ENODEV, "no CUDA device present");
	if (dev) {
		cudaDeviceProp p;
		if ((e = cudaGetDeviceProperties(&p, 0)) != cudaSuccess)
			return status_fail(why, whylen, FEEDER_ENODEV, "CUDA device 0: %s",
					   cudaGetErrorString(e));
		snprintf(dev->name, sizeof(dev->name), "%s", p.name);
		dev->major = p.major;
		dev->minor = p.minor;
		dev->total_mem = p.totalGlobalMem;
		dev->multiprocessors = p.multiProcessorCount;
	}
	return n;
}
