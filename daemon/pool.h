/* pool.h — feederd's worker threads and the fair schedule over streams.
 *
 * The pool keeps the streams that may have work, grouped by client. Worker
 * time is shared fairly first between clients, then between a client's
 * streams, weighted by what the work costs (measured seconds per sample,
 * not sample counts): each client and stream has a virtual time, the
 * worker seconds charged to it, and an idle worker takes a few samples
 * (stream_claim) of the stream with the least virtual time of the client
 * with the least that has work. So a client with eight streams of
 * 1024x1024 float outputs gets half the workers next to a client with one
 * small stream, not 98 % of them; and a client that was idle comes back
 * with a small head start, not with everything it missed.
 * Workers decode without the lock, then account the result; when a slot
 * completes, a stream fails or a closing stream drains, they write to the
 * event loop's eventfd.
 *
 * One mutex (pool_lock) guards the list and every stream's scheduling state;
 * the event loop takes it to assign batches, collect completed slots and
 * remove streams. Critical sections are a few dozen instructions; decoding
 * (milliseconds per sample) never holds it. */
#ifndef FEEDER_POOL_H
#define FEEDER_POOL_H

#include <stddef.h>
#include <stdint.h>

struct pool;
struct stream;

/* Start workers threads (each with its own decoder state). wake_fd is an
 * eventfd the workers write 1 to. Returns 0 or a negative code. */
int pool_create(struct pool **out, unsigned workers, int wake_fd, char *err, size_t errlen);
/* Stop and join every worker (each finishes the task it is on), then free. */
void pool_destroy(struct pool *p);

void pool_lock(struct pool *p);
void pool_unlock(struct pool *p);
/* The following need the lock held. */
/* Add s, a stream of client (any key naming who is served; feederd uses
 * the peer's pid, so that a process's connections share one fair share).
 * 0 or -ENOMEM. */
int pool_add(struct pool *p, struct stream *s, uint32_t client);
/* Take s out of the schedule and mark it closing. Returns its in-flight
 * task count: the stream may be destroyed once that is 0. */
unsigned pool_remove(struct pool *p, struct stream *s);
/* Wake idle workers after batches were assigned. */
void pool_kick(struct pool *p);
unsigned pool_workers(const struct pool *p);
/* Samples the workers decoded with libjpeg's Huffman decoder after
 * media/jpeg_huff.h's alone refused them (jpeg_worker_fallbacks, summed). */
uint64_t pool_jpeg_fallbacks(const struct pool *p);
/* Worker seconds spent on client's streams since its first stream came
 * (while it has any). */
double pool_client_seconds(struct pool *p, uint32_t client);
/* Worker seconds spent on s since it was added. */
double pool_stream_seconds(struct pool *p, const struct stream *s);

#endif
