/* xvec_train_cuda_none.c — xvec_train.h's CUDA trainer in a build without
 * the CUDA model (no nvcc): none can be made, and xvec says so. */
#include "xvec_train.h"

#include "status.h"

int xvec_trainer_cuda_built(void)
{
	return 0;
}

int xvec_trainer_cuda_create(struct xvec_trainer **out, struct xvec_model *m,
			     struct feeder_stream *s, const struct xvec_cuda_train_opts *o,
			     char *err, size_t errlen)
{
	(void)m, (void)s, (void)o;
	*out = NULL;
	return status_fail(err, errlen, FEEDER_ENODEV,
			   "this build has no CUDA trainer (built without nvcc); use --device cpu");
}

int xvec_trainer_cuda_dp_ready(char *err, size_t errlen)
{
	return status_fail(err, errlen, FEEDER_ENODEV, "this build has no CUDA trainer");
}

int xvec_trainer_cuda_join(struct xvec_trainer *t, struct xvec_dist *d, int sync_bn, char *err,
			   size_t errlen)
{
	(void)t, (void)d, (void)sync_bn;
	return xvec_trainer_cuda_dp_ready(err, errlen);
}
