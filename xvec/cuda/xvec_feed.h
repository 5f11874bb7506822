/* xvec_feed.h — feeding the GPU trainer from a libfeeder stream with overlapped copies.
 *
 * The daemon writes each batch into a slot of the stream's shared ring,
 * which feeder_stream_pin() registers with cudaHostRegister, so the host-to-device
 * copy of a batch is one DMA straight from the slot. This module runs those
 * copies on a second CUDA stream while the trainer's stream computes:
 *
 *   xvec_feed_next(f, &b)      batch k: the compute stream waits (on the GPU,
 *                              through an event, not on the host) for its copy
 *   xvec_cuda_train_step(g, b.x, b.labels, ...)   enqueue step k
 *   xvec_feed_prefetch(f)      fetch batch k+1 from the daemon and start its
 *                              copy; it runs while step k computes
 *
 * Two device buffers alternate; the copy into a buffer waits for the step
 * that last read it (an event on the compute stream). A slot is released to
 * the daemon as soon as its copy has completed (polled at every call), so
 * the trainer holds at most two slots: streams want slots >= 3.
 *
 * GPU wait: the time from the end of step k to the moment the compute
 * stream may start step k+1 (both marked by events on the compute stream),
 * which counts a late copy and a daemon that was late with the batch alike.
 * xvec_feed_stats reports its sum and its fraction of the compute stream's
 * elapsed time.
 *
 * Functions return 0 or a negative code (FEEDER_EEND at the end of the
 * stream, the codes of feeder_stream_next, FEEDER_EINVAL for a batch of the wrong
 * shape or type, -EIO for CUDA failures) with a sentence in err. */
#ifndef FEEDER_XVEC_FEED_H
#define FEEDER_XVEC_FEED_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

struct feeder_stream;
struct xvec_feed;

/* A batch on the device, valid until the next xvec_feed_next. */
struct xvec_feed_batch {
	const float *x;        /* (batch, feat_dim, frames) float32, device */
	const int32_t *labels; /* batch, device */
	int batch, feat_dim, frames;
	uint64_t epoch, index; /* as libfeeder numbered it */
};

struct xvec_feed_stats {
	uint64_t batches;     /* handed out */
	double wait_ms;       /* compute stream waiting for data */
	double span_ms;       /* compute stream time from the first batch to now */
	double wait_fraction; /* wait_ms / span_ms (0 before two batches) */
};

/* Pin s's ring (feeder_stream_pin; where CUDA refuses, one warning line on
 * stderr and the copies run from pageable memory), create the copy stream and two device buffers
 * for batches up to max_batch x feat_dim x frames float32. compute is the
 * stream the batches are consumed on (xvec_cuda_stream). The feed does not
 * own s: destroy the feed before closing s. */
int xvec_feed_create(struct xvec_feed **out, struct feeder_stream *s, cudaStream_t compute,
		     int max_batch, int feat_dim, int frames, char *err, size_t errlen);

/* The next batch, waiting up to timeout_ms for the daemon if it has not been
 * prefetched. Orders the compute stream after its copy. The previous batch
 * is taken to be consumed by the work enqueued before this call (its buffer
 * is reused two batches later). */
int xvec_feed_next(struct xvec_feed *f, int timeout_ms, struct xvec_feed_batch *b, char *err,
		   size_t errlen);

/* Call right after enqueuing the work on the batch of the last
 * xvec_feed_next: marks the end of that work, fetches the following batch
 * (waiting up to timeout_ms) and starts its copy. FEEDER_EEND is not an
 * error here: the next xvec_feed_next reports it. */
int xvec_feed_prefetch(struct xvec_feed *f, int timeout_ms, char *err, size_t errlen);

/* Waits for the compute stream and fills st. */
int xvec_feed_stats(struct xvec_feed *f, struct xvec_feed_stats *st, char *err, size_t errlen);

/* Wait for the copies, release any held slots, free. NULL is a no-op. */
void xvec_feed_destroy(struct xvec_feed *f);

#ifdef __cplusplus
}
#endif

#endif
