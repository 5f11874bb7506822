/* xvec_train.c — the one training loop of `xvec train` (see xvec_train.h). */
#include "xvec_train.h"

#include "status.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int xvec_trainer_agree(struct xvec_trainer *t, int have, char *err, size_t errlen)
{
	long v[2] = { have, t->interrupted && *t->interrupted ? -1 : 0 };
	if (xvec_dist_min(t->dist, v, 2))
		return status_fail(err, errlen, -EIO,
				   "agreeing on the step with the other ranks "
				   "failed (MPI)");
	if (v[1] < 0 && t->interrupted)
		*t->interrupted = 1; /* one rank was interrupted: all stop after this step */
	if (v[0] < 0 && have >= 0)
		return status_fail(err, errlen, -ECANCELED,
				   "stopping: another rank failed (its own "
				   "line says why)");
	return v[0] > 0;
}

int xvec_trainer_check_replicas(struct xvec_trainer *t, const float *p, size_t n, uint64_t step,
				char *err, size_t errlen)
{
	double c[4] = { 0, 0, 0, 0 };
	for (size_t i = 0; i < n; i++) {
		c[0] += p[i];
		c[1] += p[i] * (double)(i % 1021 + 1);
	}
	c[2] = -c[0];
	c[3] = -c[1];
	if (xvec_dist_max(t->dist, c, 4))
		return status_fail(err, errlen, -EIO,
				   "comparing parameters with the other ranks "
				   "failed (MPI)");
	if (c[0] != -c[2] || c[1] != -c[3])
		return status_fail(err, errlen, -EDOM,
				   "the replicas' parameters differ after step "
				   "%llu (checksums %.17g..%.17g)",
				   (unsigned long long)step, -c[2], c[0]);
	return 0;
}

int xvec_train_run(struct xvec_trainer *t, const struct xvec_train_limits *lim, FILE *out,
		   struct xvec_train_result *result, char *err, size_t errlen)
{
	const struct xvec_trainer_ops *ops = t->ops;
	double t_start = now_s(), t_int = t_start;
	long int_steps = 0;
	uint64_t int_samples = 0, samples = 0;
	/* samples/s of all ranks together: they take equal batches in lockstep */
	uint64_t world = lim->world > 1 ? (uint64_t)lim->world : 1;
	struct xvec_step s;
	int rc;

	result->steps = 0;
	result->interrupted = 0;
	for (;;) {
		rc = ops->step(t, &s, err, errlen);
		if (rc == FEEDER_EEND)
			break;
		if (rc)
			return rc;
		result->epoch = s.epoch;
		result->next_batch = s.batch_index + 1;
		result->steps++;
		int_steps++;
		int_samples += s.samples;
		samples += s.samples;
		int last = lim->steps > 0 && result->steps >= lim->steps;
		int stop = lim->stop_after > 0 && ops->model_step(t) >= (uint64_t)lim->stop_after;
		int intr = lim->interrupted && *lim->interrupted;
		if (int_steps >= lim->log_every || last || stop || intr) {
			double now = now_s(), dt = now - t_int;
			struct xvec_interval iv;
			if ((rc = ops->interval(t, dt, &iv, err, errlen)))
				return rc;
			fprintf(out,
				"step %llu epoch %llu batch %llu loss %.9g acc %.3f samples/s %.1f "
				"%s %.1f%%\n",
				(unsigned long long)ops->model_step(t), (unsigned long long)s.epoch,
				(unsigned long long)s.batch_index, iv.loss, iv.accuracy,
				(double)(int_samples * world) / dt, ops->wait_name,
				100.0 * iv.wait_fraction);
			fflush(out);
			if (lim->jsonl) {
				fprintf(lim->jsonl,
					"{\"step\": %llu, \"epoch\": %llu, \"batch\": %llu, "
					"\"loss\": %.9g, \"accuracy\": %.6f, \"samples_per_s\": %.2f, "
					"\"data_wait\": %.6f, \"lr\": %g, \"seconds\": %.3f}\n",
					(unsigned long long)ops->model_step(t),
					(unsigned long long)s.epoch,
					(unsigned long long)s.batch_index, iv.loss, iv.accuracy,
					(double)(int_samples * world) / dt, iv.wait_fraction,
					lim->lr, now - t_start);
				fflush(lim->jsonl);
			}
			t_int = now;
			int_steps = 0;
			int_samples = 0;
		}
		if (intr)
			result->interrupted = 1;
		if (last || stop || intr)
			break;
	}
	double total = now_s() - t_start;
	fprintf(out,
		"trained %ld steps in %.2f s: %.1f samples/s, %swaiting for data %.2f%% of "
		"the time\n",
		result->steps, total, total > 0 ? (double)(samples * world) / total : 0.0,
		ops->waiter, 100.0 * ops->waited(t, total));
	if (world > 1 && lim->reduce_s)
		fprintf(out,
			"data parallel: %llu ranks; the gradient all-reduce took %.2f%% of rank "
			"0's time (%.3f s)\n",
			(unsigned long long)world, total > 0 ? 100.0 * *lim->reduce_s / total : 0.0,
			*lim->reduce_s);
	if (world > 1 && t->dist) {
		/* every rank's data wait, on rank 0's summary */
		double *w = t->dist->rank == 0 ? calloc(world, sizeof(double)) : NULL;
		if (xvec_dist_gather(t->dist, ops->waited(t, total), w) == 0 && w) {
			fprintf(out, "waiting for data, per rank:");
			for (uint64_t r = 0; r < world; r++)
				fprintf(out, " %.2f%%", 100.0 * w[r]);
			fprintf(out, "\n");
		}
		free(w);
	}
	return ops->finish(t, err, errlen);
}
