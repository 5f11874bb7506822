/* cuda_test.h — shared helpers of the GPU x-vector tests (tests/xvec_cuda).
 *
 * Every test first asks cuda_info for a device and skips (exit 77) with its
 * reason when there is none, so the suite passes on machines without a GPU
 * while still compiling and linking all the CUDA code. The helpers move
 * arrays between host and device (failing the test on a CUDA error) and
 * measure how far a device result is from the CPU reference. */
#ifndef FEEDER_CUDA_TEST_H
#define FEEDER_CUDA_TEST_H

#include <cuda_runtime_api.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "cuda_info.h"

static inline void ct_require_device(void)
{
	struct cuda_info_device d;
	char why[256];

	if (cuda_info_devices(&d, why, sizeof(why)) < 1)
		SKIP("%s", why);
	printf("device: %s (compute %d.%d)\n", d.name, d.major, d.minor);
}

static inline void *ct_upload(const void *host, size_t bytes)
{
	void *d = NULL;

	CHECKF(cudaMalloc(&d, bytes ? bytes : 1) == cudaSuccess, "cudaMalloc %zu bytes", bytes);
	if (host && bytes)
		CHECK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
	/* a copy from pageable memory may still be in flight when cudaMemcpy
	 * returns, and the model's stream does not wait for the legacy stream */
	CHECK(cudaDeviceSynchronize() == cudaSuccess);
	return d;
}

/* host -> device, complete before any stream reads it (see ct_upload). */
static inline void ct_copy_to(void *dev, const void *host, size_t bytes)
{
	CHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
	CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

static inline void ct_download(void *host, const void *dev, size_t bytes)
{
	cudaError_t e = cudaDeviceSynchronize();

	CHECKF(e == cudaSuccess, "device: %s", cudaGetErrorString(e));
	CHECK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
}

/* max |a - b| / max(max |b|, 1e-30): one number per tensor, so a tolerance
 * reads as "agrees to this fraction of the tensor's scale". */
static inline double ct_relerr(const float *a, const float *b, size_t n)
{
	double d = 0.0, s = 0.0;

	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)a[i] - b[i]);

		if (e > d || e != e)
			d = e;
		if (fabs((double)b[i]) > s)
			s = fabs((double)b[i]);
	}
	return d / (s > 1e-30 ? s : 1e-30);
}

/* (B, C, T) -> (C, B, T) on the host, for comparing device layouts. */
static inline void ct_to_cbt(const float *x, int B, int C, int T, float *out)
{
	for (int b = 0; b < B; b++)
		for (int c = 0; c < C; c++)
			for (int t = 0; t < T; t++)
				out[((size_t)c * B + b) * T + t] = x[((size_t)b * C + c) * T + t];
}

#endif
