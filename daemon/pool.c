/* pool.c — worker threads and their fair schedule over clients and
 * streams (see pool.h). */
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

/* How far (worker seconds) a client that had no work may fall behind the
 * others' virtual time: coming back, it gets at most this much of a head
 * start instead of the workers for as long as it was idle. */
#define POOL_SLACK_S 0.05
/* A task is cut to about this much work (at least one sample): a worker on
 * a long task is a worker another client cannot have. */
#define POOL_TASK_S 0.004

struct worker {
	struct pool *pool;
	pthread_t thread;
	struct jpeg_worker *jw;
	int started;
};

/* A stream in the schedule: its client, the worker seconds it was charged
 * (virtual time) and what a sample costs it (smoothed, measured). */
struct entry {
	struct stream *s;
	uint32_t client;
	double vtime;
	double cost; /* seconds per sample; 0 until measured */
	double used; /* worker seconds actually spent on it */
	int skip;    /* claim: found without work during this claim */
};

struct client {
	uint32_t id;
	unsigned streams;
	double vtime; /* worker seconds charged to all its streams */
	double used;  /* worker seconds actually spent (pool_client_seconds) */
};

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct entry *e;
	size_t n, cap;
	struct client *c;
	size_t nc, ccap;
	double vclock; /* the virtual time of the last client served */
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

uint64_t pool_jpeg_fallbacks(const struct pool *p)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < p->nworkers; i++)
		if (p->workers[i].jw)
			n += jpeg_worker_fallbacks(p->workers[i].jw);
	return n;
}

static struct client *client_of(struct pool *p, uint32_t id)
{
	for (size_t i = 0; i < p->nc; i++)
		if (p->c[i].id == id)
			return &p->c[i];
	return NULL;
}

static struct entry *entry_of(struct pool *p, const struct stream *s)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->e[i].s == s)
			return &p->e[i];
	return NULL;
}

int pool_add(struct pool *p, struct stream *s, uint32_t client)
{
	if (p->n == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 16;
		struct entry *ne = realloc(p->e, ncap * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		p->e = ne;
		p->cap = ncap;
	}
	struct client *c = client_of(p, client);
	if (!c) {
		if (p->nc == p->ccap) {
			size_t ncap = p->ccap ? p->ccap * 2 : 16;
			struct client *nc = realloc(p->c, ncap * sizeof(*nc));
			if (!nc)
				return -ENOMEM;
			p->c = nc;
			p->ccap = ncap;
		}
		c = &p->c[p->nc++];
		/* A newcomer starts at the current virtual time: no debt, no
		 * credit. */
		*c = (struct client){ .id = client, .vtime = p->vclock };
	}
	c->streams++;
	/* Within its client, a new stream starts level with the client. */
	p->e[p->n++] = (struct entry){ .s = s, .client = client, .vtime = c->vtime };
	return 0;
}

unsigned pool_remove(struct pool *p, struct stream *s)
{
	struct entry *e = entry_of(p, s);
	if (e) {
		struct client *c = client_of(p, e->client);
		*e = p->e[--p->n];
		if (c && --c->streams == 0)
			*c = p->c[--p->nc];
	}
	return stream_set_closing(s);
}

double pool_stream_seconds(struct pool *p, const struct stream *s)
{
	struct entry *e = entry_of(p, s);
	return e ? e->used : 0;
}

double pool_client_seconds(struct pool *p, uint32_t client)
{
	struct client *c = client_of(p, client);
	return c ? c->used : 0;
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

/* Claim work fairly (pool lock held): the client with the least virtual
 * time that has work, then its stream with the least. Each claim is charged
 * its expected cost (samples x the stream's measured seconds per sample)
 * at once, so that workers claiming together spread over clients, and
 * corrected when the task is done (charge_done). Returns 1 with t filled. */
static int claim(struct pool *p, struct stream_task *t, double *charged)
{
	size_t nc = p->nc;
	unsigned char tried[nc ? nc : 1];
	memset(tried, 0, nc ? nc : 1);
	for (size_t round = 0; round < nc; round++) {
		struct client *best = NULL;
		for (size_t i = 0; i < nc; i++)
			if (!tried[i] && (!best || p->c[i].vtime < best->vtime))
				best = &p->c[i];
		tried[best - p->c] = 1;
		/* A client back from idling gets at most a small head start. */
		if (best->vtime < p->vclock - POOL_SLACK_S)
			best->vtime = p->vclock - POOL_SLACK_S;
		for (;;) {
			struct entry *e = NULL;
			for (size_t i = 0; i < p->n; i++)
				if (p->e[i].client == best->id && !p->e[i].skip &&
				    (!e || p->e[i].vtime < e->vtime))
					e = &p->e[i];
			if (!e)
				break;
			uint32_t max = e->cost > 0 ? (uint32_t)(POOL_TASK_S / e->cost) : 0;
			if (stream_claim(e->s, t, e->cost > 0 && max == 0 ? 1 : max)) {
				*charged = e->cost * t->count;
				e->vtime += *charged;
				best->vtime += *charged;
				p->vclock = best->vtime;
				for (size_t i = 0; i < p->n; i++)
					p->e[i].skip = 0;
				return 1;
			}
			e->skip = 1; /* no work now: not again in this claim */
		}
	}
	for (size_t i = 0; i < p->n; i++)
		p->e[i].skip = 0;
	return 0;
}

/* The task is done (pool lock held): charge what it really cost instead of
 * the estimate, and learn the stream's cost per sample. */
static void charge_done(struct pool *p, const struct stream_task *t, double charged)
{
	struct entry *e = entry_of(p, t->s);
	if (!e)
		return; /* removed meanwhile */
	struct client *c = client_of(p, e->client);
	double real = t->run_s, fix = real - charged;
	e->vtime += fix;
	e->used += real;
	if (c) {
		c->vtime += fix;
		c->used += real;
	}
	if (t->count) {
		double per = real / t->count;
		e->cost = e->cost == 0 ? per : 0.8 * e->cost + 0.2 * per;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pool *p = w->pool;
	struct stream_task t;
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		double charged = 0;
		if (!claim(p, &t, &charged)) {
			pthread_cond_wait(&p->work, &p->lock);
			continue;
		}
		pthread_mutex_unlock(&p->lock);
		stream_task_run(&t, w->jw);
		pthread_mutex_lock(&p->lock);
		charge_done(p, &t, charged);
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
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "worker pool needs at least one thread");
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
	free(p->e);
	free(p->c);
	free(p);
}
