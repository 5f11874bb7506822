/* gpu_slot.c — a batch's GPU context on a CUDA device or emulated on the
 * host, and the thread that frees retired ones (see gpu_slot.h). */
#include "gpu_slot.h"

#include "gpu_pipeline.h"
#include "gpu_staging.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

struct gpu_slot {
	int kind;                /* GPU_KIND_JPEG / _FEATURES */
	struct gpu_pipeline *gp; /* on a device; NULL when emulated */
	struct gpu_staging st;   /* emulated: the staging block in host memory */
	void *block;
	struct gpu_slot *next; /* retired, waiting for the reaper */
};

/* Retired contexts and the thread that frees them, started on first use
 * and never joined: what it has not freed at exit the process does. */
static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reap_cond = PTHREAD_COND_INITIALIZER;
static struct gpu_slot *reap_list;
static int reaping;                                           /* the reaper holds a list */
static pthread_cond_t reaped_cond = PTHREAD_COND_INITIALIZER; /* ...and let it go */
static int reaper_state; /* 0 not started, 1 running, -1 could not start */

int gpu_slot_create(struct gpu_slot **out, int device, const struct feeder_stream_opts *o,
		    uint32_t feat_dim, uint32_t max_batch, char *err, size_t errlen)
{
	int jp = o->pipeline == FEEDER_PIPE_JPEG;
	*out = NULL;
	if (!jp && o->pipeline != FEEDER_PIPE_FEATURES)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "gpu slot: only the jpeg and features pipelines run on a GPU");
	struct gpu_slot *g = calloc(1, sizeof(*g));
	if (!g)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	g->kind = jp ? GPU_KIND_JPEG : GPU_KIND_FEATURES;
	int rc;
	if (device != GPU_SLOT_EMULATED) {
		rc = jp ? gpu_pipeline_create_jpeg(&g->gp, device, o, max_batch, 0, err, errlen)
			: gpu_pipeline_create_features(&g->gp, device, o, feat_dim, max_batch, 0,
						       err, errlen);
	} else {
		size_t cap = jp ? gpu_staging_default_bytes_jpeg(o, max_batch)
				: gpu_staging_default_bytes_features(o, feat_dim, max_batch, 0);
		g->block = aligned_alloc(GPU_STAGING_ALIGN, (cap + GPU_STAGING_ALIGN - 1) /
								    GPU_STAGING_ALIGN *
								    GPU_STAGING_ALIGN);
		if (!g->block)
			rc = status_fail(err, errlen, -ENOMEM,
					 "out of memory for a staging block of %zu bytes", cap);
		else if (jp)
			rc = gpu_staging_init_jpeg(&g->st, g->block, cap, max_batch, o, err,
						   errlen);
		else
			rc = gpu_staging_init_features(&g->st, g->block, cap, max_batch, o,
						       feat_dim, err, errlen);
	}
	if (rc) {
		gpu_slot_destroy(g);
		return rc;
	}
	*out = g;
	return 0;
}

void gpu_slot_destroy(struct gpu_slot *g)
{
	if (!g)
		return;
	gpu_pipeline_destroy(g->gp);
	free(g->block);
	free(g);
}

static void *reaper(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&reap_lock);
	for (;;) {
		while (!reap_list)
			pthread_cond_wait(&reap_cond, &reap_lock);
		struct gpu_slot *list = reap_list;
		reap_list = NULL;
		reaping = 1;
		pthread_mutex_unlock(&reap_lock);
		while (list) {
			struct gpu_slot *next = list->next;
			gpu_slot_destroy(list);
			list = next;
		}
		pthread_mutex_lock(&reap_lock);
		reaping = 0;
		pthread_cond_broadcast(&reaped_cond);
	}
	return NULL;
}

/* reap_lock held. The thread takes no signal: feederd's loop reads them
 * (signalfd), whichever thread starts this one. */
static int reaper_running(void)
{
	if (reaper_state == 0) {
		pthread_t t;
		pthread_attr_t a;
		sigset_t all, old;
		reaper_state = -1;
		sigfillset(&all);
		if (pthread_attr_init(&a) == 0) {
			if (pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0 &&
			    pthread_sigmask(SIG_SETMASK, &all, &old) == 0) {
				if (pthread_create(&t, &a, reaper, NULL) == 0)
					reaper_state = 1;
				pthread_sigmask(SIG_SETMASK, &old, NULL);
			}
			pthread_attr_destroy(&a);
		}
	}
	return reaper_state == 1;
}

void gpu_slot_retire(struct gpu_slot *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&reap_lock);
	int queued = reaper_running();
	if (queued) {
		g->next = reap_list;
		reap_list = g;
		pthread_cond_signal(&reap_cond);
	}
	pthread_mutex_unlock(&reap_lock);
	if (!queued)
		gpu_slot_destroy(g);
}

void gpu_slot_reap_wait(void)
{
	pthread_mutex_lock(&reap_lock);
	while (reaper_state == 1 && (reap_list || reaping))
		pthread_cond_wait(&reaped_cond, &reap_lock);
	pthread_mutex_unlock(&reap_lock);
}

int gpu_slot_begin(struct gpu_slot *g, char *err, size_t errlen)
{
	if (g->gp)
		return gpu_pipeline_begin(g->gp, err, errlen);
	gpu_staging_reset(&g->st);
	return 0;
}

int gpu_slot_stage(struct gpu_slot *g, struct jpeg_worker *w, uint32_t index,
		   const struct dsformat_sample *s, const uint8_t *payload, uint64_t aug_key,
		   char *err, size_t errlen)
{
	if (g->kind == GPU_KIND_JPEG)
		return g->gp ? gpu_pipeline_stage_jpeg(g->gp, w, index, payload, s->payload_len,
						       aug_key, err, errlen)
			     : gpu_staging_jpeg(&g->st, w, index, payload, s->payload_len, aug_key,
						err, errlen);
	return g->gp ? gpu_pipeline_stage_features(g->gp, index, s, payload, aug_key, err, errlen)
		     : gpu_staging_features(&g->st, index, s, payload, aug_key, err, errlen);
}

int gpu_slot_run(struct gpu_slot *g, uint32_t n, void *dev_dst, void *host_dst, char *err,
		 size_t errlen)
{
	if (g->gp) {
		int rc = gpu_pipeline_submit(g->gp, n, dev_dst, host_dst, err, errlen);
		return rc ? rc : gpu_pipeline_wait(g->gp, err, errlen);
	}
	/* Emulated: an emulated device ring (gpu_ring.c) is host memory too. */
	void *dst = dev_dst ? dev_dst : host_dst;
	if (!dst)
		return status_fail(err, errlen, FEEDER_EINVAL, "gpu slot: no output given");
	size_t bytes;
	int rc = gpu_staging_bytes(&g->st, n, &bytes, err, errlen);
	if (rc == 0)
		gpu_staging_run_host(&g->st, n, dst);
	return rc;
}

uint32_t gpu_slot_cpu_finished(const struct gpu_slot *g)
{
	return g->gp ? gpu_pipeline_cpu_finished(g->gp) : g->st.cpu_finished;
}
