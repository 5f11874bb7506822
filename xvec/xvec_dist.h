/* xvec_dist.h — the processes of a data-parallel `xvec train`: MPI.
 *
 * `mpirun -np N xvec train ...` (or Slurm's srun) starts N ranks; each opens
 * its own stream with its rank and world (disjoint shares of each epoch, on
 * the feederd of its node, $FEEDER_SOCKET), trains a replica of the model,
 * and the replicas' gradients are averaged with MPI_Allreduce after every
 * backward pass (xvec_model_set_dp; with --device cuda on the GPUs through
 * NCCL, whose unique id xvec_dist_bcast carries), so they stay identical.
 * Rank 0 logs and writes the checkpoint. A build without MPI (xvec_dist_none.c), or a run
 * not started by an MPI launcher, is one rank of one.
 *
 * Every function returns 0 or a negative code with a sentence in err. */
#ifndef FEEDER_XVEC_DIST_H
#define FEEDER_XVEC_DIST_H

#include <stddef.h>

struct xvec_dist {
	int rank, world;
	int local_rank;  /* this rank's place among the ranks of its node (its GPU) */
	int mpi;         /* MPI was initialized (and must be finalized) */
	double reduce_s; /* seconds in gradient sums, this rank */
};

/* Join the job: rank and world from MPI when launched by mpirun or srun
 * (their environment says so), else 0 of 1 without touching MPI. */
int xvec_dist_init(struct xvec_dist *d, char *err, size_t errlen);

/* Sums over every rank, in place; every rank must call them in the same
 * order with the same n (the model's training step does). ctx is the
 * struct xvec_dist. 0 or a negative code. */
int xvec_dist_sum_d(void *ctx, double *v, size_t n);
int xvec_dist_sum_f(void *ctx, float *v, size_t n);
/* Element-wise least / largest of v[0..n) over the ranks (whether every
 * rank has a batch; the slowest rank's wait). */
int xvec_dist_min(struct xvec_dist *d, long *v, int n);
int xvec_dist_max(struct xvec_dist *d, double *v, int n);

/* Rank root's n bytes of buf to every rank (the NCCL unique id). */
int xvec_dist_bcast(struct xvec_dist *d, void *buf, size_t n, int root);

/* Rank 0 gets every rank's v in out[0..world) (out may be NULL elsewhere). */
int xvec_dist_gather(struct xvec_dist *d, double v, double *out);

/* A failed rank ends the whole job, so that no rank waits forever on it
 * (MPI_Abort); the others are ended by the launcher. Does not return under
 * MPI; returns with a world of one. */
void xvec_dist_abort(struct xvec_dist *d, int code);
/* Leave the job (MPI_Finalize) after a clean end. */
void xvec_dist_finish(struct xvec_dist *d);

/* "MPI (Open MPI v4.1.4, ...)" or "no MPI in this build". */
const char *xvec_dist_about(void);

#endif
