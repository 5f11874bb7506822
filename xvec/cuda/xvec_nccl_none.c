/* xvec_nccl_none.c — xvec_nccl.h in a build that found no nccl.h: no
 * communicator can be made, and the data-parallel CUDA trainer says why. */
#include "xvec_nccl.h"

#include "status.h"

int xvec_nccl_load(char *err, size_t errlen)
{
	return status_fail(err, errlen, FEEDER_ENODEV,
			   "this build has no NCCL (nccl.h was not found when it was built)");
}

int xvec_nccl_unique_id(struct xvec_nccl_id *id, char *err, size_t errlen)
{
	(void)id;
	return xvec_nccl_load(err, errlen);
}

int xvec_nccl_create(struct xvec_nccl **out, const struct xvec_nccl_id *id, int rank, int world,
		     int device, char *err, size_t errlen)
{
	(void)id, (void)rank, (void)world, (void)device;
	*out = NULL;
	return xvec_nccl_load(err, errlen);
}

void xvec_nccl_destroy(struct xvec_nccl *c, int abort)
{
	(void)c, (void)abort;
}

int xvec_nccl_sum_f(void *ctx, float *v, size_t n, cudaStream_t stream)
{
	(void)ctx, (void)v, (void)n, (void)stream;
	return FEEDER_ENODEV;
}

int xvec_nccl_sum_d(void *ctx, double *v, size_t n, cudaStream_t stream)
{
	(void)ctx, (void)v, (void)n, (void)stream;
	return FEEDER_ENODEV;
}

const char *xvec_nccl_about(void)
{
	return "no NCCL in this build";
}
