/* cuda_info_none.c — cuda_info for builds without nvcc: there is no device. */
#include "cuda_info.h"
#include "status.h"

int cuda_info_built(void)
{
	return 0;
}

int cuda_info_devices(struct cuda_info_device *dev, char *why, size_t whylen)
{
	(void)dev;
	return status_fail(why, whylen, FEEDER_ENODEV,
			   "this build has no CUDA support (nvcc was not found at configure time)");
}
