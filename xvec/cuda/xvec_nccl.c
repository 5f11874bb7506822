/* xvec_nccl.c — xvec_nccl.h over libnccl.so.2, opened with dlopen.
 *
 * The function pointers are typed from nccl.h's own declarations
 * (__typeof__), so a mismatch with the header the build found is a compile
 * error; only the library itself is found at run time. */
#include "xvec_nccl.h"

#include "status.h"

#include <dlfcn.h>
#include <errno.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(ncclUniqueId) == XVEC_NCCL_ID_BYTES, "ncclUniqueId's size");

static struct {
	__typeof__(ncclGetVersion) *get_version;
	__typeof__(ncclGetUniqueId) *get_unique_id;
	__typeof__(ncclCommInitRank) *comm_init_rank;
	__typeof__(ncclCommDestroy) *comm_destroy;
	__typeof__(ncclCommAbort) *comm_abort;
	__typeof__(ncclAllReduce) *all_reduce;
	__typeof__(ncclGetErrorString) *error_string;
	int rc;
	char why[256];
	char about[64];
} nccl;

static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;

struct xvec_nccl {
	ncclComm_t comm;
	int rank, world;
};

static int nccl_symbol(void *lib, const char *name, void *fn)
{
	void *p = dlsym(lib, name);
	if (!p) {
		snprintf(nccl.why, sizeof nccl.why, "libnccl.so.2 has no %s", name);
		return -1;
	}
	memcpy(fn, &p, sizeof p); /* object pointer to function pointer, as POSIX allows */
	return 0;
}

static void nccl_open(void)
{
	void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();
		snprintf(nccl.why, sizeof nccl.why, "%s", e ? e : "libnccl.so.2: cannot be opened");
		nccl.rc = FEEDER_ENODEV;
		return;
	}
	if (nccl_symbol(lib, "ncclGetVersion", &nccl.get_version) ||
	    nccl_symbol(lib, "ncclGetUniqueId", &nccl.get_unique_id) ||
	    nccl_symbol(lib, "ncclCommInitRank", &nccl.comm_init_rank) ||
	    nccl_symbol(lib, "ncclCommDestroy", &nccl.comm_destroy) ||
	    nccl_symbol(lib, "ncclCommAbort", &nccl.comm_abort) ||
	    nccl_symbol(lib, "ncclAllReduce", &nccl.all_reduce) ||
	    nccl_symbol(lib, "ncclGetErrorString", &nccl.error_string)) {
		dlclose(lib);
		nccl.rc = FEEDER_ENODEV;
		return;
	}
	int v = 0;
	if (nccl.get_version(&v) != ncclSuccess)
		v = 0;
	/* NCCL_VERSION: major * 1000 + minor * 100 + patch up to 2.8, then * 10000 */
	int big = v >= 10000;
	snprintf(nccl.about, sizeof nccl.about, "NCCL %d.%d.%d", big ? v / 10000 : v / 1000,
		 big ? v / 100 % 100 : v / 100 % 10, v % 100);
	nccl.rc = 0; /* the library stays open for the process's life */
}

int xvec_nccl_load(char *err, size_t errlen)
{
	pthread_once(&nccl_once, nccl_open);
	if (nccl.rc)
		return status_fail(err, errlen, nccl.rc, "%s", nccl.why);
	return 0;
}

static int nccl_fail(ncclResult_t r, char *err, size_t errlen, const char *what)
{
	return status_fail(err, errlen, -EIO, "%s: %s", what, nccl.error_string(r));
}

int xvec_nccl_unique_id(struct xvec_nccl_id *id, char *err, size_t errlen)
{
	ncclUniqueId u;
	int rc = xvec_nccl_load(err, errlen);
	if (rc)
		return rc;
	ncclResult_t r = nccl.get_unique_id(&u);
	if (r != ncclSuccess)
		return nccl_fail(r, err, errlen, "ncclGetUniqueId");
	memcpy(id->bytes, &u, sizeof u);
	return 0;
}

int xvec_nccl_create(struct xvec_nccl **out, const struct xvec_nccl_id *id, int rank, int world,
		     int device, char *err, size_t errlen)
{
	*out = NULL;
	int rc = xvec_nccl_load(err, errlen);
	if (rc)
		return rc;
	if (world < 1 || rank < 0 || rank >= world)
		return status_fail(err, errlen, FEEDER_EINVAL, "NCCL: rank %d of %d", rank, world);
	cudaError_t e = cudaSetDevice(device);
	if (e != cudaSuccess)
		return status_fail(err, errlen, -EIO, "NCCL: CUDA device %d: %s", device,
				   cudaGetErrorString(e));
	struct xvec_nccl *c = calloc(1, sizeof *c);
	if (!c)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	ncclUniqueId u;
	memcpy(&u, id->bytes, sizeof u);
	ncclResult_t r = nccl.comm_init_rank(&c->comm, world, u, rank);
	if (r != ncclSuccess) {
		free(c);
		return nccl_fail(r, err, errlen, "ncclCommInitRank");
	}
	c->rank = rank;
	c->world = world;
	*out = c;
	return 0;
}

void xvec_nccl_destroy(struct xvec_nccl *c, int abort)
{
	if (!c)
		return;
	if (abort)
		nccl.comm_abort(c->comm);
	else
		nccl.comm_destroy(c->comm);
	free(c);
}

static int nccl_sum(struct xvec_nccl *c, void *v, size_t n, ncclDataType_t t, cudaStream_t st)
{
	return nccl.all_reduce(v, v, n, t, ncclSum, c->comm, st) == ncclSuccess ? 0 : -EIO;
}

int xvec_nccl_sum_f(void *ctx, float *v, size_t n, cudaStream_t stream)
{
	return nccl_sum(ctx, v, n, ncclFloat32, stream);
}

int xvec_nccl_sum_d(void *ctx, double *v, size_t n, cudaStream_t stream)
{
	return nccl_sum(ctx, v, n, ncclFloat64, stream);
}

const char *xvec_nccl_about(void)
{
	return nccl.about[0] ? nccl.about : "NCCL (not loaded)";
}
