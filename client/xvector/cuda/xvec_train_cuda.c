/* xvec_train_cuda.c — the CUDA trainer behind xvec_train.h: the model lives
 * on the device (xvec_cuda.h), batches come through the overlapped feed
 * (xvec_feed.h: the next batch is copied on a second stream while this step
 * computes), and the loss is read back only once per logging interval. The
 * host model m is the mirror checkpoints are written from: finish copies the
 * device state back into it. */
#include "xvec_train.h"

#include "status.h"
#include "xvec_cuda.h"
#include "xvec_feed.h"

#include <errno.h>
#include <stdlib.h>

struct cuda_trainer {
	struct xvec_trainer base;
	struct xvec_model *m;
	struct xvec_cuda *g;
	struct xvec_feed *feed;
	int timeout_ms;
	struct xvec_feed_stats st;
};

static int cuda_step(struct xvec_trainer *base, struct xvec_step *out, char *err, size_t errlen)
{
	struct cuda_trainer *t = (struct cuda_trainer *)base;
	struct xvec_feed_batch b;
	int rc = xvec_feed_next(t->feed, t->timeout_ms, &b, err, errlen);
	if (rc)
		return rc;
	if ((rc = xvec_cuda_train_step(t->g, b.x, b.labels, b.batch, b.frames, err, errlen)) ||
	    (rc = xvec_feed_prefetch(t->feed, t->timeout_ms, err, errlen)))
		return rc;
	out->epoch = b.epoch;
	out->batch_index = b.index;
	out->samples = (uint32_t)b.batch;
	return 0;
}

static int cuda_interval(struct xvec_trainer *base, double dt, struct xvec_interval *iv,
			 char *err, size_t errlen)
{
	(void)dt;
	struct cuda_trainer *t = (struct cuda_trainer *)base;
	struct xvec_cuda_metrics mt;
	int rc = xvec_cuda_metrics(t->g, &mt, 1, err, errlen);
	if (rc == -EDOM)
		return status_fail(err, errlen, -EDOM, "loss became non-finite by step %llu "
				   "(lower --lr?)", (unsigned long long)xvec_cuda_step(t->g));
	if (rc || (rc = xvec_feed_stats(t->feed, &t->st, err, errlen)))
		return rc;
	iv->loss = mt.loss;
	iv->accuracy = mt.accuracy;
	iv->wait_fraction = t->st.wait_fraction; /* since the first batch */
	return 0;
}

static double cuda_waited(struct xvec_trainer *base, double total_s)
{
	(void)total_s;
	struct cuda_trainer *t = (struct cuda_trainer *)base;
	char err[256];
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
