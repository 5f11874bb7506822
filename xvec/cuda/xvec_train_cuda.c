/* xvec_train_cuda.c — the CUDA trainer behind xvec_train.h: the model lives
 * on the device (xvec_cuda.h), batches come through the overlapped feed
 * (xvec_feed.h: the next batch is copied on a second stream while this step
 * computes), and the loss is read back only once per logging interval. The
 * host model m is the mirror checkpoints are written from: finish copies the
 * device state back into it. Under MPI each rank drives one GPU, and the
 * replicas' sums run on the devices through NCCL (xvec_nccl.h), joined after
 * the ranks agreed to start (xvec_trainer_cuda_join); the host only agrees
 * with the other ranks on each step, as the CPU trainer does. */
#include "xvec_train.h"

#include "status.h"
#include "xvec_cuda.h"
#include "xvec_feed.h"
#include "xvec_nccl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct cuda_trainer {
	struct xvec_trainer base;
	struct xvec_model *m;
	struct xvec_cuda *g;
	struct xvec_feed *feed;
	struct xvec_nccl *nccl; /* data parallel: the ranks' communicator */
	int timeout_ms, device;
	FILE *log;
	struct xvec_feed_stats st;
};

static int world_of(const struct xvec_trainer *base)
{
	return base->dist && base->dist->world > 1 ? base->dist->world : 1;
}

/* The next batch; data parallel, all ranks take a step or none
 * (xvec_trainer_agree), since every step's device sums need every rank. */
static int cuda_next(struct cuda_trainer *t, struct xvec_feed_batch *b, char *err, size_t errlen)
{
	int r = xvec_feed_next(t->feed, t->timeout_ms, b, err, errlen);
	if (world_of(&t->base) <= 1)
		return r;
	int go = xvec_trainer_agree(&t->base, r == 0 ? 1 : r == FEEDER_EEND ? 0 : -1, err, errlen);
	if (r != 0 && r != FEEDER_EEND)
		return r; /* this rank's own failure, which err says */
	if (go < 0)
		return go;
	return go == 1 ? 0 : FEEDER_EEND; /* every rank stops at the same step */
}

/* --check-replicas: the device parameters through the host mirror. */
static int cuda_check_replicas(struct cuda_trainer *t, char *err, size_t errlen)
{
	size_t n;
	int rc = xvec_cuda_to_model(t->g, t->m, err, errlen);
	if (rc)
		return rc;
	const float *p = xvec_model_params(t->m, &n);
	return xvec_trainer_check_replicas(&t->base, p, n, xvec_cuda_step(t->g), err, errlen);
}

static int cuda_step(struct xvec_trainer *base, struct xvec_step *out, char *err, size_t errlen)
{
	struct cuda_trainer *t = (struct cuda_trainer *)base;
	struct xvec_feed_batch b;
	int rc = cuda_next(t, &b, err, errlen);
	if (rc)
		return rc;
	if ((rc = xvec_cuda_train_step(t->g, b.x, b.labels, b.batch, b.frames, err, errlen)) ||
	    (rc = xvec_feed_prefetch(t->feed, t->timeout_ms, err, errlen)))
		return rc;
	if (base->check_replicas && world_of(base) > 1 &&
	    (rc = cuda_check_replicas(t, err, errlen)))
		return rc;
	out->epoch = b.epoch;
	out->batch_index = b.index;
	out->samples = (uint32_t)b.batch;
	return 0;
}

static int cuda_interval(struct xvec_trainer *base, double dt, struct xvec_interval *iv, char *err,
			 size_t errlen)
{
	(void)dt;
	struct cuda_trainer *t = (struct cuda_trainer *)base;
	struct xvec_cuda_metrics mt;
	memset(&mt, 0, sizeof mt); /* left as it was when the device fails */
	int rc = xvec_cuda_metrics(t->g, &mt, 1, err, errlen);
	if (rc == -EDOM)
		rc = status_fail(err, errlen, -EDOM,
				 "loss became non-finite by step %llu (lower "
				 "--lr?)",
				 (unsigned long long)xvec_cuda_step(t->g));
	if (!rc)
		rc = xvec_feed_stats(t->feed, &t->st, err, errlen);
	iv->loss = mt.loss;
	iv->accuracy = mt.accuracy;
	iv->wait_fraction = t->st.wait_fraction; /* since the first batch */
	int world = world_of(base);
	if (world == 1)
		return rc;
	/* Data parallel: the mean loss and accuracy of all ranks' equal batches,
	 * the data wait of the rank that waited most; every rank takes part
	 * even after its own failure, so that none waits for it. */
	double v[3] = { mt.loss, mt.accuracy, rc ? 1.0 : 0.0 }, w = iv->wait_fraction;
	if (xvec_dist_sum_d(base->dist, v, 3) || xvec_dist_max(base->dist, &w, 1))
		return rc ? rc
			  : status_fail(err, errlen, -EIO,
					"gathering the interval's figures "
					"failed (MPI)");
	if (rc)
		return rc;
	if (v[2] > 0)
		return status_fail(err, errlen, -ECANCELED,
				   "stopping: another rank failed (its own "
				   "line says why)");
	iv->loss = v[0] / world;
	iv->accuracy = v[1] / world;
	iv->wait_fraction = w;
	base->dist->reduce_s = xvec_cuda_reduce_s(t->g);
	return 0;
}

static double cuda_waited(struct xvec_trainer *base, double total_s)
{
	(void)total_s;
	struct cuda_trainer *t = (struct cuda_trainer *)base;
	char err[256];
	if (world_of(base) > 1)
		base->dist->reduce_s = xvec_cuda_reduce_s(t->g);
	if (xvec_feed_stats(t->feed, &t->st, err, sizeof(err)) != 0)
		return 0;
	return t->st.wait_fraction;
}

static uint64_t cuda_model_step(const struct xvec_trainer *base)
{
	return xvec_cuda_step(((const struct cuda_trainer *)base)->g);
}

static int cuda_finish(struct xvec_trainer *base, char *err, size_t errlen)
{
	struct cuda_trainer *t = (struct cuda_trainer *)base;
	int rc = xvec_cuda_to_model(t->g, t->m, err, errlen);
	if (rc)
		return status_fail(err, errlen, rc, "copying the model back from the GPU: %.400s",
				   err);
	return 0;
}

static void cuda_destroy(struct xvec_trainer *base)
{
	struct cuda_trainer *t = (struct cuda_trainer *)base;
	if (!t)
		return;
	/* The feed first (its buffers are read by compute-stream work, which
	 * it waits for; it still holds slots of the stream), then the model. */
	xvec_feed_destroy(t->feed);
	xvec_cuda_destroy(t->g);
	xvec_nccl_destroy(t->nccl, 0); /* after the model: its stream has finished with it */
	free(t);
}

static const struct xvec_trainer_ops cuda_ops = {
	.wait_name = "gpu-wait",
	.waiter = "GPU ",
	.step = cuda_step,
	.interval = cuda_interval,
	.waited = cuda_waited,
	.model_step = cuda_model_step,
	.finish = cuda_finish,
	.destroy = cuda_destroy,
};

int xvec_trainer_cuda_built(void)
{
	return 1;
}

int xvec_trainer_cuda_dp_ready(char *err, size_t errlen)
{
	return xvec_nccl_load(err, errlen);
}

/* Every rank's rc is 0, or all fail: with this rank's own error, or with
 * "another rank failed". */
static int all_ok(struct xvec_dist *d, int rc, const char *what, char *err, size_t errlen)
{
	long v = rc ? 0 : 1;
	if (xvec_dist_min(d, &v, 1))
		return rc ? rc
			  : status_fail(err, errlen, -EIO,
					"agreeing with the other ranks on "
					"%s failed (MPI)",
					what);
	if (rc)
		return rc;
	return v ? 0
		 : status_fail(err, errlen, -ECANCELED,
			       "stopping: another rank failed %s "
			       "(its own line says why)",
			       what);
}

/* Rank 0's unique id to every rank: a flag byte (rank 0 made one) and the id. */
static int share_id(struct xvec_dist *d, struct xvec_nccl_id *id, char *err, size_t errlen)
{
	unsigned char msg[1 + XVEC_NCCL_ID_BYTES];
	int rc = 0;
	memset(msg, 0, sizeof msg);
	if (d->rank == 0) {
		rc = xvec_nccl_unique_id(id, err, errlen);
		msg[0] = rc == 0;
		memcpy(msg + 1, id->bytes, sizeof id->bytes);
	}
	if (xvec_dist_bcast(d, msg, sizeof msg, 0))
		return rc ? rc
			  : status_fail(err, errlen, -EIO,
					"sending the NCCL id to the ranks "
					"failed (MPI)");
	if (rc)
		return rc;
	if (!msg[0])
		return status_fail(err, errlen, -ECANCELED,
				   "stopping: rank 0 could not make the "
				   "NCCL id (its own line says why)");
	memcpy(id->bytes, msg + 1, sizeof id->bytes);
	return 0;
}

int xvec_trainer_cuda_join(struct xvec_trainer *base, struct xvec_dist *d, int sync_bn, char *err,
			   size_t errlen)
{
	struct cuda_trainer *t = (struct cuda_trainer *)base;
	struct xvec_nccl_id id;
	memset(&id, 0, sizeof id);
	int rc = share_id(d, &id, err, errlen);
	if (rc)
		return rc;
	rc = xvec_nccl_create(&t->nccl, &id, d->rank, d->world, t->device, err, errlen);
	if ((rc = all_ok(d, rc, "to make its NCCL communicator", err, errlen)))
		goto fail;
	struct xvec_cuda_dp dp = { .rank = d->rank,
				   .world = d->world,
				   .sync_bn = sync_bn,
				   .sum_f = xvec_nccl_sum_f,
				   .sum_d = xvec_nccl_sum_d,
				   .ctx = t->nccl };
	rc = xvec_cuda_set_dp(t->g, &dp, err, errlen);
	if ((rc = all_ok(d, rc, "to set up data parallelism on its GPU", err, errlen)))
		goto fail;
	if (t->log && d->rank == 0)
		fprintf(t->log, "data parallel on the GPUs: %s, rank %d on device %d\n",
			xvec_nccl_about(), d->rank, t->device);
	return 0;
fail:
	xvec_cuda_set_dp(t->g, NULL, err, errlen); /* keeps err: it only fails with a dp */
	xvec_nccl_destroy(t->nccl, 1);
	t->nccl = NULL;
	return rc;
}

int xvec_trainer_cuda_create(struct xvec_trainer **out, struct xvec_model *m,
			     struct feeder_stream *s, const struct xvec_cuda_train_opts *o,
			     char *err, size_t errlen)
{
	*out = NULL;
	struct xvec_cuda_config cfg;
	xvec_cuda_config_default(&cfg);
	int rc = xvec_cuda_parse_precision(o->precision, &cfg.precision, err, errlen);
	if (rc)
		return rc;
	cfg.autotune = o->autotune;
	cfg.log = o->log;
	struct cuda_trainer *t = calloc(1, sizeof(*t));
	if (!t)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	t->base.ops = &cuda_ops;
	t->m = m;
	t->timeout_ms = o->timeout_ms;
	t->log = o->log;
	int devices = 0;
	if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1)
		devices = 1; /* xvec_cuda_create says why there is none */
	t->device = cfg.device = (o->local_rank > 0 ? o->local_rank : 0) % devices;
	if ((rc = xvec_cuda_create(&t->g, m, &cfg, o->batch, o->chunk, err, errlen)) ||
	    (rc = xvec_feed_create(&t->feed, s, xvec_cuda_stream(t->g), o->batch, o->feat_dim,
				   o->chunk, err, errlen))) {
		cuda_destroy(&t->base);
		return rc;
	}
	if (o->log)
		fprintf(o->log, "precision %s%s\n", xvec_cuda_precision_name(cfg.precision),
			cfg.autotune ? ", autotuned" : "");
	*out = &t->base;
	return 0;
}
