/* pool.h — feederd's worker threads and the fair schedule over streams.
 *
 * The pool keeps the list of streams that have work. Each idle worker scans
 * it round-robin and takes a few samples of the first stream that has any
 * (stream_claim); a stream's turn ends after a fixed number of samples, so
 * many streams from many clients progress at the same pace in images,
 * whatever their batch sizes.
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
int pool_add(struct pool *p, struct stream *s);          /* 0 or -ENOMEM */
/* Take s out of the schedule and mark it closing. Returns its in-flight
 * task count: the stream may be destroyed once that is 0. */
unsigned pool_remove(struct pool *p, struct stream *s);
/* Wake idle workers after batches were assigned. */
void pool_kick(struct pool *p);
unsigned pool_workers(const struct pool *p);

#endif
