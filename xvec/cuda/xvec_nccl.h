/* xvec_nccl.h — NCCL for the data-parallel CUDA trainer, loaded at run time.
 *
 * `mpirun -np N xvec train --device cuda` sums the replicas' gradients (and,
 * with --sync-bn, their batch-norm statistics) on the GPUs with NCCL, on the
 * model's stream (xvec_cuda_set_dp). libnccl.so.2 is opened with dlopen when
 * the first communicator is made, not linked: xvec starts, and trains on the
 * CPU, on a machine without NCCL; only a multi-rank CUDA run needs it.
 *
 * Rank 0 makes the unique id (xvec_nccl_unique_id), the launcher's channel
 * carries it to the others (xvec_dist_bcast under MPI; a pipe in the
 * tests), and every rank makes its communicator from it (xvec_nccl_create).
 * Built where NCCL's header was found; elsewhere xvec_nccl_none.c says so.
 *
 * Functions return 0 or a negative code (FEEDER_ENODEV when NCCL cannot be
 * loaded, -EIO for an NCCL failure) with one sentence in err. */
#ifndef FEEDER_XVEC_NCCL_H
#define FEEDER_XVEC_NCCL_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL_UNIQUE_ID_BYTES: an ncclUniqueId as plain bytes. */
#define XVEC_NCCL_ID_BYTES 128
struct xvec_nccl_id {
	unsigned char bytes[XVEC_NCCL_ID_BYTES];
};

struct xvec_nccl;

/* Open libnccl.so.2 and find its functions (once per process; later calls
 * return the first answer). FEEDER_ENODEV with dlerror's sentence ("libnccl.so.2:
 * cannot open shared object file: ...") or "this build has no NCCL". */
int xvec_nccl_load(char *err, size_t errlen);

/* A new unique id (rank 0; loads NCCL). */
int xvec_nccl_unique_id(struct xvec_nccl_id *id, char *err, size_t errlen);

/* Rank `rank` of `world`'s communicator on CUDA device `device` (made the
 * current device) from rank 0's id; every rank calls it (it waits for all).
 * Loads NCCL. */
int xvec_nccl_create(struct xvec_nccl **out, const struct xvec_nccl_id *id, int rank, int world,
		     int device, char *err, size_t errlen);

/* Destroy the communicator (NULL: nothing). Call after the work enqueued on
 * it has completed (or with abort set, to give up on it). */
void xvec_nccl_destroy(struct xvec_nccl *c, int abort);

/* In-place sums over the ranks of n device floats / doubles, enqueued on
 * stream; ctx is the struct xvec_nccl (struct xvec_cuda_dp's sums). */
int xvec_nccl_sum_f(void *ctx, float *v, size_t n, cudaStream_t stream);
int xvec_nccl_sum_d(void *ctx, double *v, size_t n, cudaStream_t stream);

/* "NCCL 2.28.9" once loaded, else "NCCL (not loaded)" or "no NCCL in this build". */
const char *xvec_nccl_about(void);

#ifdef __cplusplus
}
#endif

#endif
