/* xvec_feed.cu — double-buffered host-to-device copies of libfeeder batches (see xvec_feed.h).
 *
 * Each of the two buffers carries four events: `copied` (copy stream: its
 * copy is done), `consumed` (compute stream: the step that read it is done),
 * and the timing pair `end`/`ready` for the wait in front of the batch it
 * holds. The host never blocks on the current step: it only polls `copied`
 * to release slots, and reads a timing pair two batches after it was
 * recorded, when it is long complete.
 *
 * Where CUDA refuses to register the ring (cudaHostRegister can fail on
 * memory limits, some containers and drivers), the copies run from pageable
 * memory instead, after one warning. A copy from pageable memory may return
 * before the DMA has read the slot, or may block until it has: CUDA promises
 * neither. So a slot goes back only once its `copied` event has completed,
 * never on the strength of cudaMemcpyAsync having returned, pinned or not. */
#include "xvec_feed.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "status.h"
#include "feeder.h"
}

struct xf_buf {
	float *x;
	int32_t *labels;
	cudaEvent_t copied, consumed, end, ready;
	struct feeder_batch hb;
	int held;   /* hb's slot not yet released */
	int loaded; /* copy issued, batch not yet handed out */
	int in_use; /* handed out; its reader's end not yet marked */
	int consumed_recorded, end_recorded, pending;
	struct xvec_feed_batch meta;
};

struct xvec_feed {
	struct feeder_stream *s;
	cudaStream_t compute, copy;
	struct xf_buf buf[2];
	int cur; /* buffer handed out last, -1 before the first */
	int ended;
	int max_batch, feat_dim, frames;
	cudaEvent_t first, now;
	int started;
	uint64_t batches;
	double wait_ms;
};

#define XF_CUDA(call, what)                                                                        \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess)                                                             \
			return status_fail(err, errlen, -EIO, "x-vector feed: %s: %s", (what),     \
					   cudaGetErrorString(e_));                                \
	} while (0)

/* Give back every slot whose copy has completed. */
static int xf_release_done(struct xvec_feed *f, char *err, size_t errlen)
{
	for (int i = 0; i < 2; i++) {
		struct xf_buf *b = &f->buf[i];

		if (!b->held)
			continue;
		cudaError_t e = cudaEventQuery(b->copied);
		if (e == cudaErrorNotReady)
			continue;
		XF_CUDA(e, "copy a batch to the device");
		int rc = feeder_batch_release(f->s, &b->hb);
		b->held = 0;
		if (rc && rc != FEEDER_ECLOSED)
			return status_fail(err, errlen, rc,
					   "x-vector feed: cannot release a slot: %s",
					   feeder_strerror(rc));
	}
	return 0;
}

/* Mark on the compute stream that the work enqueued so far is all that
 * reads buffer i: the next copy into it waits for that point. */
static int xf_mark_consumed(struct xvec_feed *f, int i, char *err, size_t errlen)
{
	struct xf_buf *b = &f->buf[i];

	if (!b->in_use)
		return 0;
	XF_CUDA(cudaEventRecord(b->consumed, f->compute), "mark a batch consumed");
	b->consumed_recorded = 1;
	b->in_use = 0;
	return 0;
}

/* Fetch the stream's next batch into buffer i and start its copy. */
static int xf_issue(struct xvec_feed *f, int i, int timeout_ms, char *err, size_t errlen)
{
	struct xf_buf *b = &f->buf[i];
	int rc;

	if (b->held) {
		/* its previous copy must finish before the slot goes back */
		XF_CUDA(cudaEventSynchronize(b->copied), "copy a batch to the device");
		rc = feeder_batch_release(f->s, &b->hb);
		b->held = 0;
		if (rc && rc != FEEDER_ECLOSED)
			return status_fail(err, errlen, rc,
					   "x-vector feed: cannot release a slot: %s",
					   feeder_strerror(rc));
	}
	rc = feeder_stream_next(f->s, timeout_ms, &b->hb);
	if (rc == FEEDER_EEND) {
		f->ended = 1;
		return status_fail(err, errlen, rc,
				   "x-vector feed: the stream has no more batches");
	}
	if (rc)
		return status_fail(err, errlen, rc, "x-vector feed: no batch: %s",
				   feeder_strerror(rc));
	const struct feeder_batch *h = &b->hb;
	size_t floats = (size_t)h->count * f->feat_dim * f->frames;
	if (h->dtype != FEEDER_DTYPE_F32 || h->ndim < 3 || h->shape[1] != (uint32_t)f->feat_dim ||
	    h->shape[2] != (uint32_t)f->frames || h->count < 1 ||
	    h->count > (uint32_t)f->max_batch || h->bytes != floats * sizeof(float)) {
		uint32_t count = h->count, d = h->shape[1], t = h->shape[2];

		feeder_batch_release(f->s, &b->hb);
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"x-vector feed: a batch of %u x %u x %u is not float32 %d x %d x %d", count,
			d, t, f->max_batch, f->feat_dim, f->frames);
	}
	b->held = 1;
	if (b->consumed_recorded)
		XF_CUDA(cudaStreamWaitEvent(f->copy, b->consumed, 0),
			"order a copy after its reader");
	if (h->memory == FEEDER_MEMORY_DEVICE) {
		/* feederd wrote the batch into GPU memory shared with us: the
		 * copy stream waits for that write on the GPU, the copy stays on
		 * the device, and the slot goes back ordered after the copy. */
		rc = feeder_batch_wait(f->s, h, f->copy);
		if (rc)
			return status_fail(err, errlen, rc,
					   "x-vector feed: waiting for a device batch "
					   "failed: %s",
					   feeder_strerror(rc));
		XF_CUDA(cudaMemcpyAsync(b->x, h->data, h->bytes, cudaMemcpyDeviceToDevice, f->copy),
			"copy a device batch");
	} else {
		XF_CUDA(cudaMemcpyAsync(b->x, h->data, h->bytes, cudaMemcpyHostToDevice, f->copy),
			"copy a batch to the device");
	}
	XF_CUDA(cudaMemcpyAsync(b->labels, h->labels, sizeof(int32_t) * h->count,
				cudaMemcpyHostToDevice, f->copy),
		"copy labels to the device");
	XF_CUDA(cudaEventRecord(b->copied, f->copy), "record a copy");
	b->loaded = 1;
	b->meta.x = b->x;
	b->meta.labels = b->labels;
	b->meta.batch = (int)h->count;
	b->meta.feat_dim = f->feat_dim;
	b->meta.frames = f->frames;
	b->meta.epoch = h->epoch;
	b->meta.index = h->batch_index;
	return 0;
}

/* Add a buffer's completed wait measurement. */
static int xf_harvest(struct xvec_feed *f, struct xf_buf *b, char *err, size_t errlen)
{
	float ms;

	if (!b->pending)
		return 0;
	XF_CUDA(cudaEventSynchronize(b->ready), "time the wait for data");
	XF_CUDA(cudaEventElapsedTime(&ms, b->end, b->ready), "time the wait for data");
	f->wait_ms += ms;
	b->pending = 0;
	return 0;
}

/* Register s's ring with CUDA, or say (one line on stderr) that its batches
 * will be copied from pageable memory. FEEDER_TEST_NO_PIN=1 takes the
 * second way without asking CUDA, for the tests of that path. */
static void xf_pin(struct feeder_stream *s)
{
	const char *no_pin = getenv("FEEDER_TEST_NO_PIN");
	int test = no_pin && strcmp(no_pin, "1") == 0;
	int rc = test ? FEEDER_ENODEV : feeder_stream_pin(s);

	if (rc)
		fprintf(stderr,
			"x-vector feed: warning: the stream's ring is not registered with "
			"CUDA (%s): copying batches from pageable memory, more slowly\n",
			test ? "FEEDER_TEST_NO_PIN=1" : feeder_strerror(rc));
}

int xvec_feed_create(struct xvec_feed **out, struct feeder_stream *s, cudaStream_t compute,
		     int max_batch, int feat_dim, int frames, char *err, size_t errlen)
{
	struct xvec_feed *f;
	int rc;

	*out = NULL;
	if (max_batch < 1 || feat_dim < 1 || frames < 1)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector feed: batch shape %d x %d x %d is empty", max_batch,
				   feat_dim, frames);
	xf_pin(s);
	f = (struct xvec_feed *)calloc(1, sizeof(*f));
	if (!f)
		return status_fail(err, errlen, -ENOMEM, "x-vector feed: out of memory");
	f->s = s;
	f->compute = compute;
	f->cur = -1;
	f->max_batch = max_batch;
	f->feat_dim = feat_dim;
	f->frames = frames;
	rc = 0;
	if (cudaStreamCreateWithFlags(&f->copy, cudaStreamNonBlocking) != cudaSuccess) {
		f->copy = NULL;
		rc = status_fail(err, errlen, -EIO, "x-vector feed: cannot create the copy stream");
	}
	size_t bytes = sizeof(float) * (size_t)max_batch * feat_dim * frames;
	for (int i = 0; i < 2 && !rc; i++) {
		struct xf_buf *b = &f->buf[i];

		if (cudaMalloc((void **)&b->x, bytes) != cudaSuccess ||
		    cudaMalloc((void **)&b->labels, sizeof(int32_t) * max_batch) != cudaSuccess ||
		    cudaEventCreateWithFlags(&b->copied, cudaEventDisableTiming) != cudaSuccess ||
		    cudaEventCreateWithFlags(&b->consumed, cudaEventDisableTiming) != cudaSuccess ||
		    cudaEventCreate(&b->end) != cudaSuccess ||
		    cudaEventCreate(&b->ready) != cudaSuccess)
			rc = status_fail(
				err, errlen, -ENOMEM,
				"x-vector feed: cannot allocate device buffers of %zu bytes",
				bytes);
	}
	if (!rc &&
	    (cudaEventCreate(&f->first) != cudaSuccess || cudaEventCreate(&f->now) != cudaSuccess))
		rc = status_fail(err, errlen, -EIO, "x-vector feed: cannot create events");
	if (rc) {
		xvec_feed_destroy(f);
		return rc;
	}
	*out = f;
	return 0;
}

int xvec_feed_next(struct xvec_feed *f, int timeout_ms, struct xvec_feed_batch *bt, char *err,
		   size_t errlen)
{
	int i = f->cur < 0 ? 0 : 1 - f->cur;
	struct xf_buf *b = &f->buf[i];
	int rc = xf_release_done(f, err, errlen);

	memset(bt, 0, sizeof(*bt));
	/* without a prefetch since the last batch, its step ends here */
	if (!rc && f->cur >= 0)
		rc = xf_mark_consumed(f, f->cur, err, errlen);
	if (rc)
		return rc;
	if (!b->loaded) {
		if (f->ended)
			return status_fail(err, errlen, FEEDER_EEND,
					   "x-vector feed: the stream has no more batches");
		rc = xf_issue(f, i, timeout_ms, err, errlen);
		if (rc)
			return rc;
	}
	XF_CUDA(cudaStreamWaitEvent(f->compute, b->copied, 0), "order a step after its copy");
	if (b->end_recorded) {
		XF_CUDA(cudaEventRecord(b->ready, f->compute), "time the wait for data");
		b->end_recorded = 0;
		b->pending = 1;
	}
	if (!f->started) {
		XF_CUDA(cudaEventRecord(f->first, f->compute), "time the first batch");
		f->started = 1;
	}
	b->loaded = 0;
	b->in_use = 1;
	f->cur = i;
	f->batches++;
	*bt = b->meta;
	return 0;
}

int xvec_feed_prefetch(struct xvec_feed *f, int timeout_ms, char *err, size_t errlen)
{
	if (f->cur < 0)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector feed: prefetch before the first xvec_feed_next");
	struct xf_buf *b = &f->buf[1 - f->cur];
	int rc = xf_mark_consumed(f, f->cur, err, errlen);

	if (rc)
		return rc;
	if (b->loaded)
		return xf_release_done(f, err, errlen);
	rc = xf_harvest(f, b, err, errlen);
	if (rc)
		return rc;
	XF_CUDA(cudaEventRecord(b->end, f->compute), "time the wait for data");
	b->end_recorded = 1;
	if (f->ended)
		return 0;
	rc = xf_issue(f, 1 - f->cur, timeout_ms, err, errlen);
	if (rc == FEEDER_EEND)
		rc = 0;
	if (rc)
		return rc;
	return xf_release_done(f, err, errlen);
}

int xvec_feed_stats(struct xvec_feed *f, struct xvec_feed_stats *st, char *err, size_t errlen)
{
	float span = 0.0f;

	memset(st, 0, sizeof(*st));
	for (int i = 0; i < 2; i++) {
		int rc = xf_harvest(f, &f->buf[i], err, errlen);

		if (rc)
			return rc;
	}
	if (f->started) {
		XF_CUDA(cudaEventRecord(f->now, f->compute), "time the compute stream");
		XF_CUDA(cudaEventSynchronize(f->now), "wait for the compute stream");
		XF_CUDA(cudaEventElapsedTime(&span, f->first, f->now), "time the compute stream");
	}
	st->batches = f->batches;
	st->wait_ms = f->wait_ms;
	st->span_ms = span;
	st->wait_fraction = span > 0.0f ? f->wait_ms / span : 0.0;
	return 0;
}

void xvec_feed_destroy(struct xvec_feed *f)
{
	if (!f)
		return;
	/* The compute stream's work may still read the buffers (the last
	 * step), and the copy stream may still write them: both must be done
	 * before they are freed (cudaFree's implicit sync is not a contract). */
	if (f->compute)
		cudaStreamSynchronize(f->compute);
	if (f->copy)
		cudaStreamSynchronize(f->copy);
	for (int i = 0; i < 2; i++) {
		struct xf_buf *b = &f->buf[i];

		if (b->held)
			feeder_batch_release(f->s, &b->hb);
		cudaFree(b->x);
		cudaFree(b->labels);
		if (b->copied)
			cudaEventDestroy(b->copied);
		if (b->consumed)
			cudaEventDestroy(b->consumed);
		if (b->end)
			cudaEventDestroy(b->end);
		if (b->ready)
			cudaEventDestroy(b->ready);
	}
	if (f->first)
		cudaEventDestroy(f->first);
	if (f->now)
		cudaEventDestroy(f->now);
	if (f->copy)
		cudaStreamDestroy(f->copy);
	free(f);
}
