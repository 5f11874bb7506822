/* xvec_dist_mpi.c — xvec_dist over MPI (see xvec_dist.h). */
#include "xvec_dist.h"

#include "status.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Started by a launcher: Open MPI's mpirun, a PMI/PMIx launcher (srun,
 * MPICH's hydra). Without one, MPI_Init would make a singleton job, which
 * is slower to start and needs nothing of MPI. */
static int launched(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
					    "PMI_RANK", "MPI_LOCALNRANKS" };
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		if (getenv(vars[i]))
			return 1;
	return 0;
}

static int mpi_fail(int code, char *err, size_t errlen, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS)
		snprintf(msg, sizeof msg, "MPI error %d", code);
	return status_fail(err, errlen, -EIO, "%s: %s", what, msg);
}

/* The ranks that share this node (and its GPUs) number themselves 0..k-1. */
static int local_rank(struct xvec_dist *d, char *err, size_t errlen)
{
	MPI_Comm node;
	int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL,
				     &node);
	if (rc != MPI_SUCCESS)
		return mpi_fail(rc, err, errlen, "MPI_Comm_split_type");
	MPI_Comm_rank(node, &d->local_rank);
	MPI_Comm_free(&node);
	return 0;
}

int xvec_dist_init(struct xvec_dist *d, char *err, size_t errlen)
{
	*d = (struct xvec_dist){ .rank = 0, .world = 1 };
	if (!launched())
		return 0;
	int rc = MPI_Init(NULL, NULL);
	if (rc != MPI_SUCCESS)
		return mpi_fail(rc, err, errlen, "MPI_Init");
	d->mpi = 1;
	/* Errors come back as codes, to be reported with the rank's name. */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &d->world);
	return local_rank(d, err, errlen);
}

/* MPI counts are ints: large buffers go in pieces. */
static int sum_pieces(void *v, size_t n, MPI_Datatype t, size_t esize)
{
	for (size_t at = 0; at < n;) {
		size_t m = n - at > (size_t)INT_MAX ? (size_t)INT_MAX : n - at;
		int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)v + at * esize, (int)m, t, MPI_SUM,
				       MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS)
			return -EIO;
		at += m;
	}
	return 0;
}

int xvec_dist_sum_d(void *ctx, double *v, size_t n)
{
	struct xvec_dist *d = ctx;
	return d->world <= 1 ? 0 : sum_pieces(v, n, MPI_DOUBLE, sizeof *v);
}

int xvec_dist_sum_f(void *ctx, float *v, size_t n)
{
	struct xvec_dist *d = ctx;
	return d->world <= 1 ? 0 : sum_pieces(v, n, MPI_FLOAT, sizeof *v);
}

int xvec_dist_min(struct xvec_dist *d, long *v, int n)
{
	if (d->world <= 1)
		return 0;
	return MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_LONG, MPI_MIN, MPI_COMM_WORLD) == MPI_SUCCESS
		       ? 0
		       : -EIO;
}

int xvec_dist_max(struct xvec_dist *d, double *v, int n)
{
	if (d->world <= 1)
		return 0;
	return MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) == MPI_SUCCESS
		       ? 0
		       : -EIO;
}

int xvec_dist_bcast(struct xvec_dist *d, void *buf, size_t n, int root)
{
	if (d->world <= 1)
		return 0;
	if (n > (size_t)INT_MAX)
		return -EINVAL;
	return MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -EIO;
}

int xvec_dist_gather(struct xvec_dist *d, double v, double *out)
{
	if (d->world <= 1) {
		if (out)
			out[0] = v;
		return 0;
	}
	return MPI_Gather(&v, 1, MPI_DOUBLE, out, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD) == MPI_SUCCESS
		       ? 0
		       : -EIO;
}

void xvec_dist_abort(struct xvec_dist *d, int code)
{
	if (d->mpi && d->world > 1)
		MPI_Abort(MPI_COMM_WORLD, code);
}

void xvec_dist_finish(struct xvec_dist *d)
{
	if (d->mpi)
		MPI_Finalize();
	d->mpi = 0;
}

const char *xvec_dist_about(void)
{
	static char about[MPI_MAX_LIBRARY_VERSION_STRING + 16];
	char v[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0;
	if (!about[0]) {
		if (MPI_Get_library_version(v, &len) != MPI_SUCCESS)
			v[0] = 0;
		v[strcspn(v, ",\n")] = 0; /* "Open MPI v4.1.4" */
		snprintf(about, sizeof about, "MPI (%s)", v[0] ? v : "unknown");
	}
	return about;
}
