/* pool.c — worker threads taking samples from streams round-robin (see
 * pool.h). */
#include "pool.h"

#include "jpeg_pipeline.h"
#include "log.h"
#include "status.h"
#include "stream.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Samples a stream may take before the next stream's turn. */
#define POOL_QUANTUM 8

struct worker {
	struct pool *pool;
	pthread_t thread;
	struct jpeg_worker *jw;
	int started;
};

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct stream **streams;
	size_t n, cap, rr;
	uint32_t credit;         /* samples taken from streams[rr] in this turn */
	int stop;
	int wake_fd;
	unsigned nworkers;
	struct worker *workers;
};

void pool_lock(struct pool *p)
{
	pthread_mutex_lock(&p->lock);
}

void pool_unlock(struct pool *p)
{
	pthread_mutex_unlock(&p->lock);
}

unsigned pool_workers(const struct pool *p)
{
	return p->nworkers;
}

int pool_add(struct pool *p, struct stream *s)
{
	if (p->n == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 16;
		struct stream **ns = realloc(p->streams, ncap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		p->streams = ns;
		p->cap = ncap;
	}
	p->streams[p->n++] = s;
	return 0;
}

unsigned pool_remove(struct pool *p, struct stream *s)
{
	for (size_t i = 0; i < p->n; i++) {
		if (p->streams[i] != s)
			continue;
		memmove(&p->streams[i], &p->streams[i + 1], (p->n - i - 1) * sizeof(*p->streams));
		p->n--;
		if (p->rr > i)
			p->rr--;
		else if (p->rr == i)
			p->credit = 0;
		if (p->rr >= p->n)
			p->rr = 0;
		break;
	}
	return stream_set_closing(s);
}

void pool_kick(struct pool *p)
{
	pthread_cond_broadcast(&p->work);
}

static void wake_loop(struct pool *p)
{
	uint64_t one = 1;
	/* A full eventfd counter still wakes the loop: nothing is lost. */
	ssize_t w = write(p->wake_fd, &one, sizeof(one));
	(void)w;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pool *p = w->pool;
	struct stream_task t;
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		int found = 0;
		for (size_t j = 0; j < p->n; j++) {
			size_t i = (p->rr + j) % p->n;
			if (!stream_claim(p->streams[i], &t))
				continue;
			/* Each stream's turn lasts POOL_QUANTUM samples whatever its
			 * task size, so streams share the workers by images, not by
			 * claims (a batch-256 stream takes 8 samples a claim, a
			 * batch-4 one a single sample). */
			p->credit = i == p->rr ? p->credit + t.count : t.count;
			p->rr = i;
			if (p->credit >= POOL_QUANTUM) {
				p->rr = (i + 1) % p->n;
				p->credit = 0;
			}
			found = 1;
			break;
		}
		if (!found) {
			pthread_cond_wait(&p->work, &p->lock);
			continue;
		}
		pthread_mutex_unlock(&p->lock);
		stream_task_run(&t, w->jw);
		pthread_mutex_lock(&p->lock);
		if (stream_task_finish(&t))
			wake_loop(p);
		if (t.submit) {
			/* The last sample of a GPU batch is staged: this worker
			 * runs the batch on the device, outside the lock. */
			pthread_mutex_unlock(&p->lock);
			stream_task_submit(&t);
			pthread_mutex_lock(&p->lock);
			if (stream_submit_finish(&t))
				wake_loop(p);
		}
	}
	pthread_mutex_unlock(&p->lock);
	stream_worker_exit();
	return NULL;
}

int pool_create(struct pool **out, unsigned workers, int wake_fd, char *err, size_t errlen)
{
	if (workers == 0)
		return status_fail(err, errlen, FEEDER_EINVAL, "worker pool needs at least one thread");
	struct pool *p = calloc(1, sizeof(*p));
	if (!p)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	p->workers = calloc(workers, sizeof(*p->workers));
	if (!p->workers) {
		free(p);
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	p->wake_fd = wake_fd;
	p->nworkers = workers;
	int rc = 0;
	for (unsigned i = 0; i < workers; i++) {
		struct worker *w = &p->workers[i];
		w->pool = p;
		rc = jpeg_worker_create(&w->jw, err, errlen);
		if (rc)
			break;
		int e = pthread_create(&w->thread, NULL, worker_main, w);
		if (e) {
			rc = status_fail(err, errlen, -e, "starting worker thread %u failed: %s", i,
					 strerror(e));
			break;
		}
		w->started = 1;
	}
	if (rc) {
		pool_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
}

void pool_destroy(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nworkers; i++) {
		if (p->workers[i].started)
			pthread_join(p->workers[i].thread, NULL);
		if (p->workers[i].jw)
			jpeg_worker_destroy(p->workers[i].jw);
	}
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p->workers);
	free(p->streams);
	free(p);
}
