/* xvec_train_cpu.c — the CPU trainer behind xvec_train.h: each batch is
 * trained on straight from its shared-memory slot (no copy between the
 * daemon's writer and the first GEMM) and released after the step. With
 * in_memory K, K batches are read once and cycled: the same work with the
 * data path taken away, to measure the model alone. */
#include "xvec_train.h"

#include "status.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cpu_trainer {
	struct xvec_trainer base;
	struct xvec_model *m;
	struct feeder *f;
	struct feeder_stream *s;
	int chunk, timeout_ms;
	/* in-memory mode */
	int in_memory;
	float *mem;
	int32_t *mem_labels;
	size_t batch_floats;
	uint32_t batch;
	long taken;
	/* since the last interval, and in all */
	double wait_int, wait_all, loss_sum;
	long correct, seen, steps;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cpu_step(struct xvec_trainer *base, struct xvec_step *out, char *err, size_t errlen)
{
	struct cpu_trainer *t = (struct cpu_trainer *)base;
	struct feeder_batch b;
	const float *x;
	const int32_t *labels;
	const uint64_t *indices = NULL;
	uint32_t count;
	double t0 = now_s();
	if (t->in_memory) {
		int k = (int)(t->taken++ % t->in_memory);
		x = t->mem + (size_t)k * t->batch_floats;
		labels = t->mem_labels + (size_t)k * t->batch;
		count = t->batch;
		out->epoch = 0;
		out->batch_index = (uint64_t)k;
	} else {
		int r = feeder_stream_next(t->s, t->timeout_ms, &b);
		if (base->dist && base->dist->world > 1) {
			int go = xvec_trainer_agree(base,
						    r == 0             ? 1
						    : r == FEEDER_EEND ? 0
								       : -1,
						    err, errlen);
			if (go != 1 && r == 0)
				feeder_batch_release(t->s, &b);
			if (go < 0 && r == 0)
				return go;
			if (go == 0 && (r == 0 || r == FEEDER_EEND))
				return FEEDER_EEND; /* every rank stops at the same step */
		}
		if (r == FEEDER_EEND)
			return r;
		if (r)
			return status_fail(err, errlen, r, "waiting for a batch: %s",
					   r == FEEDER_ESTREAM || r == FEEDER_ECLOSED
						   ? feeder_last_error(t->f)
						   : feeder_strerror(r));
		x = b.data;
		labels = b.labels;
		indices = b.indices;
		count = b.count;
		out->epoch = b.epoch;
		out->batch_index = b.batch_index;
	}
	double t1 = now_s();
	/* before the step: the slot goes back to the daemon after it */
	if (base->trace && indices)
		for (uint32_t i = 0; i < count; i++)
			fprintf(base->trace, "%llu %llu\n", (unsigned long long)out->epoch,
				(unsigned long long)indices[i]);
	struct xvec_result res;
	int rc = xvec_model_train_step(t->m, x, labels, (int)count, t->chunk, &res, err, errlen);
	if (!t->in_memory)
		feeder_batch_release(t->s, &b);
	if (rc)
		return rc;
	if (base->check_replicas && base->dist && base->dist->world > 1) {
		size_t n;
		const float *p = xvec_model_params(t->m, &n);
		if ((rc = xvec_trainer_check_replicas(base, p, n, xvec_model_step(t->m), err,
						      errlen)))
			return rc;
	}
	out->samples = count;
	t->wait_int += t1 - t0;
	t->wait_all += t1 - t0;
	t->loss_sum += res.loss;
	t->correct += res.correct;
	t->seen += count;
	t->steps++;
	if (!isfinite(res.loss))
		return status_fail(err, errlen, -EDOM, "loss became %g at step %llu (lower --lr?)",
				   res.loss, (unsigned long long)xvec_model_step(t->m));
	return 0;
}

static int cpu_interval(struct xvec_trainer *base, double dt, struct xvec_interval *iv, char *err,
			size_t errlen)
{
	struct cpu_trainer *t = (struct cpu_trainer *)base;
	/* Data parallel: the loss and accuracy of all ranks' samples, and the
	 * data wait of the rank that waited most. */
	double sums[3] = { t->loss_sum, (double)t->correct, (double)t->seen };
	double wait = dt > 0 ? t->wait_int / dt : 0;
	int world = base->dist && base->dist->world > 1 ? base->dist->world : 1;
	if (world > 1 &&
	    (xvec_dist_sum_d(base->dist, sums, 3) || xvec_dist_max(base->dist, &wait, 1)))
		return status_fail(err, errlen, -EIO,
				   "gathering the interval's figures failed (MPI)");
	iv->loss = t->steps ? sums[0] / world / (double)t->steps : 0;
	iv->accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0;
	iv->wait_fraction = wait;
	t->wait_int = t->loss_sum = 0;
	t->correct = t->seen = t->steps = 0;
	return 0;
}

static double cpu_waited(struct xvec_trainer *base, double total_s)
{
	struct cpu_trainer *t = (struct cpu_trainer *)base;
	return total_s > 0 ? t->wait_all / total_s : 0;
}

static uint64_t cpu_model_step(const struct xvec_trainer *base)
{
	return xvec_model_step(((const struct cpu_trainer *)base)->m);
}

static int cpu_finish(struct xvec_trainer *base, char *err, size_t errlen)
{
	(void)base, (void)err, (void)errlen;
	return 0; /* the model is the host model */
}

static void cpu_destroy(struct xvec_trainer *base)
{
	struct cpu_trainer *t = (struct cpu_trainer *)base;
	if (!t)
		return;
	free(t->mem);
	free(t->mem_labels);
	free(t);
}

static const struct xvec_trainer_ops cpu_ops = {
	.wait_name = "wait",
	.waiter = "",
	.step = cpu_step,
	.interval = cpu_interval,
	.waited = cpu_waited,
	.model_step = cpu_model_step,
	.finish = cpu_finish,
	.destroy = cpu_destroy,
};

/* Read the in-memory batches (full ones) from the stream. */
static int fill_memory(struct cpu_trainer *t, char *err, size_t errlen)
{
	struct feeder_stream_info info;
	feeder_stream_info(t->s, &info);
	t->batch = info.batch;
	t->batch_floats = (size_t)info.batch * info.shape[1] * (size_t)t->chunk;
	t->mem = malloc(sizeof(float) * t->batch_floats * (size_t)t->in_memory);
	t->mem_labels = malloc(sizeof(int32_t) * t->batch * (size_t)t->in_memory);
	if (!t->mem || !t->mem_labels)
		return status_fail(err, errlen, -ENOMEM, "out of memory for --in-memory");
	for (int k = 0; k < t->in_memory; k++) {
		struct feeder_batch b;
		int r = feeder_stream_next(t->s, t->timeout_ms, &b);
		if (r || b.count != t->batch || b.bytes != sizeof(float) * t->batch_floats) {
			if (r == 0)
				feeder_batch_release(t->s, &b);
			return status_fail(err, errlen, r ? r : FEEDER_EINVAL,
					   "--in-memory: could not fetch full batch %d: %s", k,
					   r ? feeder_strerror(r) : "a short batch");
		}
		memcpy(t->mem + (size_t)k * t->batch_floats, b.data, b.bytes);
		memcpy(t->mem_labels + (size_t)k * t->batch, b.labels, sizeof(int32_t) * t->batch);
		feeder_batch_release(t->s, &b);
	}
	return 0;
}

int xvec_trainer_cpu_create(struct xvec_trainer **out, struct xvec_model *m, struct feeder *f,
			    struct feeder_stream *s, int chunk, int in_memory, int timeout_ms,
			    char *err, size_t errlen)
{
	*out = NULL;
	struct cpu_trainer *t = calloc(1, sizeof(*t));
	if (!t)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	t->base.ops = &cpu_ops;
	t->m = m;
	t->f = f;
	t->s = s;
	t->chunk = chunk;
	t->timeout_ms = timeout_ms;
	t->in_memory = in_memory;
	if (in_memory) {
		int rc = fill_memory(t, err, errlen);
		if (rc) {
			cpu_destroy(&t->base);
			return rc;
		}
	}
	*out = &t->base;
	return 0;
}
