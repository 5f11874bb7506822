/* xvec_dist_none.c — xvec_dist in a build without MPI: one rank of one. */
#include "xvec_dist.h"

int xvec_dist_init(struct xvec_dist *d, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	*d = (struct xvec_dist){ .rank = 0, .world = 1 };
	return 0;
}

int xvec_dist_sum_d(void *ctx, double *v, size_t n)
{
	(void)ctx, (void)v, (void)n;
	return 0;
}

int xvec_dist_sum_f(void *ctx, float *v, size_t n)
{
	(void)ctx, (void)v, (void)n;
	return 0;
}

int xvec_dist_min(struct xvec_dist *d, long *v, int n)
{
	(void)d, (void)v, (void)n;
	return 0;
}

int xvec_dist_max(struct xvec_dist *d, double *v, int n)
{
	(void)d, (void)v, (void)n;
	return 0;
}

int xvec_dist_bcast(struct xvec_dist *d, void *buf, size_t n, int root)
{
	(void)d, (void)buf, (void)n, (void)root;
	return 0;
}

int xvec_dist_gather(struct xvec_dist *d, double v, double *out)
{
	(void)d;
	if (out)
		out[0] = v;
	return 0;
}

void xvec_dist_abort(struct xvec_dist *d, int code)
{
	(void)d, (void)code;
}

void xvec_dist_finish(struct xvec_dist *d)
{
	(void)d;
}

const char *xvec_dist_about(void)
{
	return "no MPI in this build";
}
