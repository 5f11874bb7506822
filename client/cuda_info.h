/* cuda_info.h — which CUDA devices this process can use, if any.
 *
 * The one place that asks the CUDA runtime about devices, so that every GPU
 * test and tool skips or fails with the same clear reason. Built from
 * cuda_info.cu when nvcc is present, from cuda_info_none.c otherwise. */
#ifndef FEEDER_CUDA_INFO_H
#define FEEDER_CUDA_INFO_H

#include <stddef.h>

struct cuda_info_device {
	char name[256];
	int major, minor; /* compute capability */
	size_t total_mem; /* bytes */
	int multiprocessors;
};

/* 1 if this build has CUDA code, 0 otherwise. */
int cuda_info_built(void);

/* Number of usable devices (>= 1) and, if dev is not NULL, a description of
 * device 0. Returns FEEDER_ENODEV with the reason in why (CUDA not built, no
 * driver, no device) when there is none. */
int cuda_info_devices(struct cuda_info_device *dev, char *why, size_t whylen);

#endif
