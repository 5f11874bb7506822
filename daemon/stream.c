/* stream.c — a stream's ring, batch order and slot filling (see stream.h). */
#include "stream.h"

#include "detrand.h"
#include "gpu_pipeline.h"
#include "gpu_ring.h"
#include "gpu_slot.h"
#include "log.h"
#include "mapguard.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* SLOT_GPU: every sample is staged and the worker that staged the last one
 * runs the batch on the GPU (stream_task_submit), without the pool lock.
 * SLOT_RELEASING: a device-ring slot the client released whose release
 * event has not completed yet (its GPU may still read the slot); polled by
 * stream_refill, never waited on. */
enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_DONE, SLOT_HELD, SLOT_GPU, SLOT_RELEASING };

struct slot {
	int state;
	uint64_t seq;            /* the stream's batch number (0 = first served) */
	uint64_t epoch, batch;   /* batch index within the epoch, for this rank */
	uint32_t count;          /* samples in this batch */
	uint32_t claimed, done;  /* samples handed to workers / written */
	uint32_t replacements;
	uint32_t fills;
	struct sampler order;    /* the epoch's order (copied: slots may straddle epochs) */
	uint8_t *base;           /* the slot in the mapping */
	int on_gpu;              /* this batch is staged for the GPU (placement gpu/auto) */
	double work_s;           /* worker seconds spent on this batch (placement=auto) */
};


struct stream {
	/* immutable after stream_create */
	uint32_t id;
	struct dataset *ds;
	struct feeder_stream_opts opts; /* as requested (proto_opts_check'ed) */
	struct proto_geometry geo;
	uint8_t *map;
	size_t map_len;
	int memfd;               /* until handed to the client, then -1 */
	uint32_t nslots;
	uint32_t chunk;          /* samples per worker task */
	uint64_t rank_len;       /* positions of this rank in an epoch */
	uint64_t per_epoch;      /* batches of this rank in a full epoch */
	uint64_t total;          /* batches this stream serves */
	struct slot *slots;
	unsigned workers;        /* the pool's threads */
	uint32_t placement;      /* requested: FEEDER_PLACEMENT_* (cpu without a GPU) */
	struct gpu_slot **gslots; /* per slot, placement gpu/auto */
	struct gpu_ring *dring;  /* device-resident ring, or NULL */
	int registered_device;   /* the ring is cudaHostRegister'ed for it, or -1 */
	uint64_t device_table;   /* its table's offset in the memfd, or 0 */
	size_t ring_bytes;       /* the memfd: geo.ring_size plus the device table */

	/* under the pool lock */
	uint64_t next_assign, next_send;
	unsigned inflight;       /* worker tasks running */
	unsigned releasing;      /* slots in SLOT_RELEASING */
	int closing;             /* removed from the pool: claim nothing more */
	int fail_code;           /* set by a worker; the loop reports and closes */
	char fail_msg[PROTO_TEXT_MAX];
	uint64_t samples, replacements, decode_errors; /* totals */
	int active;              /* FEEDER_PLACEMENT_CPU or _GPU: where new batches go */
	int deciding;            /* placement=auto still measures */
	uint32_t auto_cpu_n, auto_gpu_n;
	double auto_cpu_s, auto_gpu_stage_s, auto_gpu_dev_s;
	float auto_cpu_ms, auto_gpu_ms; /* the measured cost of a batch each way */

	/* event loop only */
	int fail_reported, end_sent;
	unsigned held;           /* slots the client holds */
	uint64_t batches_sent;
	uint64_t last_samples;   /* for the rate */
	double rate;             /* images per second, smoothed */
	uint64_t client_wait_us, ring_full_us, stamp_us;
};

/* How far a corrupt sample's replacement is searched for before the stream
 * gives up: a dataset this broken should fail loudly, not spin. */
#define STREAM_MAX_REPLACE_TRIES 4096

static void seq_to_batch(const struct stream *s, uint64_t seq, uint64_t *epoch, uint64_t *batch)
{
	uint64_t first = s->per_epoch - s->opts.start_batch;
	if (seq < first) {
		*epoch = s->opts.epoch;
		*batch = s->opts.start_batch + seq;
		return;
	}
	seq -= first;
	*epoch = s->opts.epoch + 1 + seq / s->per_epoch;
	*batch = seq % s->per_epoch;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int make_ring(struct stream *s, char *err, size_t errlen)
{
	int fd = memfd_create("feeder-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return status_fail(err, errlen, -errno, "memfd_create failed: %s", strerror(errno));
	if (ftruncate(fd, (off_t)s->ring_bytes) != 0) {
		int e = errno;
		close(fd);
		return status_fail(err, errlen, -e, "ring of %llu bytes cannot be sized: %s",
				   (unsigned long long)s->geo.ring_size, strerror(e));
	}
	/* Sealed before the client sees it: it cannot shrink the file under
	 * our mapping (which would turn our writes into SIGBUS), nor grow it,
	 * nor change the seals. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		int e = errno;
		close(fd);
		return status_fail(err, errlen, -e, "sealing the ring failed: %s", strerror(e));
	}
	void *map = mmap(NULL, s->ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		int e = errno;
		close(fd);
		return status_fail(err, errlen, -e, "mapping the ring failed: %s", strerror(e));
	}
	s->memfd = fd;
	s->map = map;
	s->map_len = s->ring_bytes;
	struct proto_ring_header *h = map;
	h->magic = PROTO_RING_MAGIC;
	h->version = PROTO_VERSION;
	h->stream = s->id;
	h->slots = s->nslots;
	h->slot_size = s->geo.slot_size;
	h->slot0_offset = PROTO_RING_HEADER;
	h->batch = s->opts.batch;
	h->dtype = s->opts.dtype;
	h->layout = s->opts.layout;
	h->ndim = s->geo.ndim;
	memcpy(h->shape, s->geo.shape, sizeof(h->shape));
	h->labels_offset = s->geo.labels_offset;
	h->tensor_offset = s->geo.tensor_offset;
	h->tensor_bytes = s->geo.tensor_bytes;
	h->indices_offset = s->geo.indices_offset;
	h->names_offset = s->geo.names_offset;
	return 0;
}

/* GPU contexts per slot and the device ring (after make_ring, which left
 * room for the device table). */
static int gpu_setup(struct stream *s, const struct stream_gpu *gpu, char *err, size_t errlen)
{
	s->gslots = calloc(s->nslots, sizeof(*s->gslots));
	if (!s->gslots)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < s->nslots; i++) {
		int rc = gpu_slot_create(&s->gslots[i], gpu->device, &s->opts, s->ds->hdr.feat_dim,
					 s->opts.batch, err, errlen);
		if (rc)
			return rc;
	}
	if (gpu->device_ring) {
		struct proto_device_table *t = (struct proto_device_table *)(s->map + s->device_table);
		int rc = gpu_ring_create(&s->dring, gpu->device, s->nslots, s->geo.tensor_bytes, t,
					 (struct proto_device_slot *)((uint8_t *)t +
								      PROTO_DEVICE_TABLE_HEAD),
					 err, errlen);
		if (rc)
			return rc;
	}
	/* Batches copied back into host slots: page-lock the ring so the copy
	 * is one DMA, not a pageable copy through the driver's staging. */
	if (!gpu->device_ring && gpu->device >= 0) {
		char why[200];
		if (gpu_pipeline_host_register(gpu->device, s->map, s->map_len, why, sizeof(why)) == 0)
			s->registered_device = gpu->device;
		else
			log_warn("stream %u: %s; copies go through pageable memory", s->id, why);
	}
	s->placement = gpu->placement;
	s->active = gpu->placement == FEEDER_PLACEMENT_GPU ? FEEDER_PLACEMENT_GPU : FEEDER_PLACEMENT_CPU;
	s->deciding = gpu->placement == FEEDER_PLACEMENT_AUTO;
	return 0;
}

int stream_check_kind(const struct feeder_stream_opts *req, const struct dataset *ds,
		      char *err, size_t errlen)
{
	unsigned kind = ds->hdr.kind;
	if (req->pipeline == FEEDER_PIPE_JPEG && kind != DSFORMAT_KIND_JPEG)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "dataset '%s' holds %s samples, not jpeg images: open it with "
				   "pipeline features", ds->name, dsformat_kind_name(kind));
	if (req->pipeline == FEEDER_PIPE_FEATURES && kind != DSFORMAT_KIND_FEATURES)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "dataset '%s' holds %s samples, not feature matrices: open it with "
				   "pipeline jpeg", ds->name, dsformat_kind_name(kind));
	return 0;
}

int stream_create(struct stream **out, uint32_t id, struct dataset *ds,
		  const struct feeder_stream_opts *req, uint64_t page, unsigned workers,
		  char *err, size_t errlen)
{
	return stream_create_placed(out, id, ds, req, page, workers, NULL, err, errlen);
}

int stream_create_placed(struct stream **out, uint32_t id, struct dataset *ds,
			 const struct feeder_stream_opts *req, uint64_t page, unsigned workers,
			 const struct stream_gpu *gpu, char *err, size_t errlen)
{
	const struct dsformat_header *h = &ds->hdr;
	if (stream_check_kind(req, ds, err, errlen))
		return FEEDER_EINVAL;
	struct stream *s = calloc(1, sizeof(*s));
	if (!s)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	s->id = id;
	s->opts = *req;
	s->stamp_us = (uint64_t)(mono_s() * 1e6);
	s->memfd = -1;
	s->registered_device = -1;
	s->nslots = req->slots;
	int rc = proto_opts_check(req, err, errlen);
	if (rc)
		goto fail;
	struct sampler first;
	rc = sampler_init(&first, h->samples, req->seed, req->epoch, req->rank, req->world,
			  (int)req->shuffle, err, errlen);
	if (rc)
		goto fail;
	s->rank_len = sampler_len(&first);
	s->per_epoch = sampler_batches(&first, req->batch, (int)req->drop_last);
	if (s->per_epoch == 0) {
		rc = status_fail(err, errlen, FEEDER_EINVAL,
				 "dataset '%s' has %llu samples: rank %u of %u gets no batch of %u",
				 ds->name, (unsigned long long)h->samples, req->rank, req->world,
				 req->batch);
		goto fail;
	}
	if (req->start_batch > s->per_epoch) {
		rc = status_fail(err, errlen, FEEDER_EINVAL,
				 "start batch %llu is past the %llu batches of an epoch",
				 (unsigned long long)req->start_batch, (unsigned long long)s->per_epoch);
		goto fail;
	}
	s->total = s->per_epoch - req->start_batch + (uint64_t)(req->epochs - 1) * s->per_epoch;
	rc = proto_geometry(req, h->feat_dim, page, &s->geo, err, errlen);
	if (rc)
		goto fail;
	s->slots = calloc(s->nslots, sizeof(*s->slots));
	if (!s->slots) {
		rc = status_fail(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	s->ring_bytes = s->geo.ring_size;
	if (gpu && gpu->device_ring) {
		s->device_table = s->geo.ring_size;
		s->ring_bytes += proto_device_table_size(s->nslots, PROTO_TENSOR_ALIGN);
	}
	rc = make_ring(s, err, errlen);
	if (rc)
		goto fail;
	for (uint32_t i = 0; i < s->nslots; i++)
		s->slots[i].base = s->map + PROTO_RING_HEADER + (size_t)i * s->geo.slot_size;
	/* Small tasks spread one batch over all workers; larger ones cut the
	 * locking per sample when batches are big. */
	uint32_t chunk = req->batch / (2 * (workers ? workers : 1));
	s->chunk = chunk < 1 ? 1 : chunk > 8 ? 8 : chunk;
	s->workers = workers ? workers : 1;
	dataset_ref(ds);
	s->ds = ds;
	atomic_fetch_add(&ds->streams, 1);
	if (gpu && gpu->placement != FEEDER_PLACEMENT_CPU && (rc = gpu_setup(s, gpu, err, errlen))) {
		stream_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
fail:
	free(s->slots);
	free(s);
	return rc;
}

void stream_destroy(struct stream *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; s->gslots && i < s->nslots; i++)
		gpu_slot_destroy(s->gslots[i]);
	free(s->gslots);
	gpu_ring_destroy(s->dring);
	if (s->registered_device >= 0)
		gpu_pipeline_host_unregister(s->registered_device, s->map);
	if (s->map) {
		/* The client may keep the memfd (and its mapping) as long as it
		 * likes; the pages are the daemon's, charged to memory_limit
		 * only while the stream exists, so they go back now (the seals
		 * allow it: a hole is not a shrink). The client then reads
		 * zeros. */
		if (madvise(s->map, s->map_len, MADV_REMOVE) != 0)
			log_warn("stream %u: its ring's pages could not be released: %s", s->id,
				 strerror(errno));
		munmap(s->map, s->map_len);
	}
	if (s->memfd >= 0)
		close(s->memfd);
	if (s->ds) {
		atomic_fetch_sub(&s->ds->streams, 1);
		dataset_unref(s->ds);
	}
	free(s->slots);
	free(s);
}

/* Device-ring slots whose release has completed become free. */
static void poll_releases(struct stream *s)
{
	uint64_t now = (uint64_t)(mono_s() * 1e6);
	for (uint32_t i = 0; i < s->nslots && s->releasing; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->state != SLOT_RELEASING)
			continue;
		char err[200];
		int rc = gpu_ring_release_done(s->dring, i, now, err, sizeof(err));
		if (rc == 0)
			continue;
		sl->state = SLOT_FREE;
		s->releasing--;
		if (rc < 0 && !s->fail_code) {
			s->fail_code = FEEDER_ENODEV;
			snprintf(s->fail_msg, sizeof(s->fail_msg), "GPU: %.200s", err);
		}
	}
}

unsigned stream_releasing(const struct stream *s)
{
	return s->releasing;
}

unsigned stream_refill(struct stream *s)
{
	unsigned started = 0;
	if (s->releasing)
		poll_releases(s);
	if (s->closing || s->fail_code)
		return 0;
	for (uint32_t i = 0; i < s->nslots && s->next_assign < s->total; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->state != SLOT_FREE)
			continue;
		uint64_t epoch, batch;
		seq_to_batch(s, s->next_assign, &epoch, &batch);
		if (sl->fills == 0 || sl->order.epoch != epoch) {
			char err[128];
			/* Cannot fail: the same arguments passed in stream_create. */
			if (sampler_init(&sl->order, s->ds->hdr.samples, s->opts.seed, epoch, s->opts.rank,
					 s->opts.world, (int)s->opts.shuffle, err, sizeof(err)) != 0)
				return started;
		}
		uint64_t left = s->rank_len - batch * s->opts.batch;
		sl->state = SLOT_FILLING;
		sl->seq = s->next_assign++;
		sl->epoch = epoch;
		sl->batch = batch;
		sl->count = left < s->opts.batch ? (uint32_t)left : s->opts.batch;
		sl->claimed = sl->done = sl->replacements = 0;
		sl->work_s = 0;
		sl->on_gpu = 0;
		if (s->gslots) {
			if (s->deciding)
				sl->on_gpu = sl->seq >= STREAM_AUTO_BATCHES &&
					     sl->seq < 2 * STREAM_AUTO_BATCHES;
			else
				sl->on_gpu = s->active == FEEDER_PLACEMENT_GPU;
			if (!s->deciding && !sl->on_gpu && s->gslots[i]) {
				/* placement=auto chose the CPU: the slot's staging
				 * memory (pinned, large) is of no more use. */
				gpu_slot_destroy(s->gslots[i]);
				s->gslots[i] = NULL;
			}
			char err[PROTO_TEXT_MAX];
			if (sl->on_gpu && gpu_slot_begin(s->gslots[i], err, sizeof(err)) != 0) {
				s->fail_code = FEEDER_ENODEV;
				snprintf(s->fail_msg, sizeof(s->fail_msg), "GPU: %.200s", err);
				return started;
			}
		}
		sl->fills++;
		started++;
	}
	return started;
}

/* Time the client spent with nothing to read (no slot held: it waits on
 * us) or with every slot held (we wait on it), up to now. */
static void account(struct stream *s, uint64_t now)
{
	uint64_t dt = now - s->stamp_us;
	s->stamp_us = now;
	if (stream_finished(s))
		return;
	if (s->held == 0)
		s->client_wait_us += dt;
	else if (s->held == s->nslots)
		s->ring_full_us += dt;
}

int stream_next_ready(struct stream *s, uint64_t now_us, struct proto_batch_ready *r)
{
	for (uint32_t i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->state != SLOT_DONE || sl->seq != s->next_send)
			continue;
		struct proto_slot_header *h = (struct proto_slot_header *)sl->base;
		memset(h, 0, sizeof(*h));
		h->epoch = sl->epoch;
		h->batch_index = sl->batch;
		h->samples = sl->count;
		h->replacements = sl->replacements;
		h->dtype = s->opts.dtype;
		h->layout = s->opts.layout;
		h->ndim = s->geo.ndim;
		memcpy(h->shape, s->geo.shape, sizeof(h->shape));
		h->shape[0] = sl->count;
		h->sequence = sl->fills;
		sl->state = SLOT_HELD;
		account(s, now_us);
		s->held++;
		s->batches_sent++;
		s->next_send++;
		memset(r, 0, sizeof(*r));
		r->stream = s->id;
		r->slot = i;
		r->epoch = sl->epoch;
		r->batch_index = sl->batch;
		r->samples = sl->count;
		r->replacements = sl->replacements;
		return 1;
	}
	return 0;
}

int stream_release(struct stream *s, uint32_t slot, uint64_t now_us, char *err, size_t errlen)
{
	if (slot >= s->nslots)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "RELEASE of slot %u, stream %u has %u slots", slot, s->id, s->nslots);
	if (s->slots[slot].state != SLOT_HELD)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "RELEASE of slot %u of stream %u, which the client does not hold", slot,
				   s->id);
	account(s, now_us);
	s->held--;
	if (s->dring) {
		gpu_ring_note_release(s->dring, slot, now_us);
		s->slots[slot].state = SLOT_RELEASING;
		s->releasing++;
	} else {
		s->slots[slot].state = SLOT_FREE;
	}
	return 0;
}

int stream_take_end(struct stream *s, struct proto_stream_end *e)
{
	if (!stream_finished(s) || s->end_sent)
		return 0;
	s->end_sent = 1;
	memset(e, 0, sizeof(*e));
	e->stream = s->id;
	e->reason = 0;
	e->batches_sent = s->batches_sent;
	return 1;
}

int stream_take_failure(struct stream *s, int *code, char *msg, size_t msglen)
{
	/* Its dataset was removed, replaced or found unreadable: fail it even
	 * if no worker is on it (every slot held). */
	if (!s->fail_code && dataset_gone(s->ds)) {
		s->fail_code = s->ds->gone_code ? s->ds->gone_code : FEEDER_ENODATASET;
		snprintf(s->fail_msg, sizeof(s->fail_msg), "%s", s->ds->gone_msg);
	}
	if (!s->fail_code || s->fail_reported)
		return 0;
	s->fail_reported = 1;
	*code = s->fail_code;
	snprintf(msg, msglen, "%s", s->fail_msg);
	return 1;
}

int stream_has_failed(const struct stream *s)
{
	return s->fail_code != 0;
}

unsigned stream_inflight(const struct stream *s)
{
	return s->inflight;
}

unsigned stream_set_closing(struct stream *s)
{
	s->closing = 1;
	return s->inflight;
}

uint32_t stream_id(const struct stream *s)
{
	return s->id;
}

struct dataset *stream_dataset(const struct stream *s)
{
	return s->ds;
}

uint64_t stream_ring_bytes(const struct stream *s)
{
	return s->ring_bytes;
}

const struct feeder_stream_opts *stream_opts(const struct stream *s)
{
	return &s->opts;
}

uint32_t stream_task_size(const struct stream *s)
{
	return s->chunk;
}

const uint8_t *stream_slot_memory(const struct stream *s, uint32_t slot)
{
	return slot < s->nslots ? s->slots[slot].base : NULL;
}

void stream_describe(const struct stream *s, struct proto_stream_opened *r)
{
	memset(r, 0, sizeof(*r));
	r->stream = s->id;
	r->slots = s->nslots;
	r->batch = s->opts.batch;
	r->slot_size = s->geo.slot_size;
	r->ring_size = s->ring_bytes;
	r->batches = s->total;
	r->batches_per_epoch = s->per_epoch;
	r->samples = s->ds->hdr.samples;
	r->classes = s->ds->hdr.classes;
	r->dtype = s->opts.dtype;
	r->layout = s->opts.layout;
	r->ndim = s->geo.ndim;
	memcpy(r->shape, s->geo.shape, sizeof(r->shape));
	r->labels_offset = s->geo.labels_offset;
	r->indices_offset = s->geo.indices_offset;
	r->names_offset = s->geo.names_offset;
	r->tensor_offset = s->geo.tensor_offset;
	r->tensor_bytes = s->geo.tensor_bytes;
	r->placement = s->gslots ? s->placement : FEEDER_PLACEMENT_CPU;
	r->memory = s->dring ? FEEDER_MEMORY_DEVICE : FEEDER_MEMORY_HOST;
	r->device_table = s->device_table;
}

int stream_take_memfd(struct stream *s)
{
	int fd = s->memfd;
	s->memfd = -1;
	return fd;
}

void stream_tick(struct stream *s, double dt, uint64_t now_us)
{
	double inst = dt > 0 ? (double)(s->samples - s->last_samples) / dt : 0;
	s->last_samples = s->samples;
	s->rate = s->rate == 0 ? inst : 0.5 * s->rate + 0.5 * inst;
	account(s, now_us);
}

double stream_rate(const struct stream *s)
{
	return s->rate;
}

void stream_status(struct stream *s, uint64_t now_us, struct feeder_stream_status *r)
{
	account(s, now_us);
	memset(r, 0, sizeof(*r));
	r->stream = s->id;
	snprintf(r->dataset, sizeof(r->dataset), "%s", s->ds->name);
	r->pipeline = s->opts.pipeline;
	r->batch = s->opts.batch;
	r->slots = s->nslots;
	r->ready = s->held;
	uint64_t epoch, batch;
	if (s->next_send < s->total)
		seq_to_batch(s, s->next_send, &epoch, &batch);
	else
		epoch = s->opts.epoch + s->opts.epochs - 1;
	r->epoch = epoch;
	r->batches_sent = s->batches_sent;
	r->batches_total = s->total;
	r->samples = s->samples;
	r->replacements = s->replacements;
	r->samples_per_s = s->rate;
	r->client_wait_us = s->client_wait_us;
	r->ring_full_us = s->ring_full_us;
	r->placement = s->opts.placement;
	r->active = (uint32_t)s->active;
	r->memory = s->dring ? FEEDER_MEMORY_DEVICE : FEEDER_MEMORY_HOST;
	r->deciding = (uint32_t)s->deciding;
	r->auto_cpu_ms = s->auto_cpu_ms;
	r->auto_gpu_ms = s->auto_gpu_ms;
}

void stream_totals(const struct stream *s, uint64_t *batches_sent, uint64_t *samples,
		   uint64_t *replacements, uint64_t *decode_errors)
{
	if (batches_sent)
		*batches_sent += s->batches_sent;
	if (samples)
		*samples += s->samples;
	if (replacements)
		*replacements += s->replacements;
	if (decode_errors)
		*decode_errors += s->decode_errors;
}

int stream_finished(const struct stream *s)
{
	return s->next_send >= s->total;
}

int stream_claim(struct stream *s, struct stream_task *t, uint32_t max)
{
	if (s->closing || s->fail_code)
		return 0;
	struct slot *best = NULL;
	for (uint32_t i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->state == SLOT_FILLING && sl->claimed < sl->count &&
		    (!best || sl->seq < best->seq))
			best = sl;
	}
	if (!best)
		return 0;
	memset(t, 0, sizeof(*t));
	t->s = s;
	t->slot = (uint32_t)(best - s->slots);
	t->first = best->claimed;
	uint32_t want = max && max < s->chunk ? max : s->chunk;
	t->count = best->count - best->claimed < want ? best->count - best->claimed : want;
	best->claimed += t->count;
	s->inflight++;
	return 1;
}

/* This worker's copy of the record being decoded: records are copied out
 * of the dataset's mapping under the SIGBUS guard, so that the CRC check and
 * the decoders (libjpeg keeps state across calls) never touch the mapping
 * and never need to be unwound. */
static _Thread_local struct {
	uint8_t *buf;
	size_t cap;
} scratch;

void stream_worker_exit(void)
{
	free(scratch.buf);
	scratch.buf = NULL;
	scratch.cap = 0;
}

/* Fetch sample index of the stream's dataset: its header into smp and its
 * payload into scratch.buf, beginning the read transaction *txn if there is
 * none. Returns 0, a negative code with a sentence, or STREAM_IO_FAULT when
 * the mapping faulted (then *txn is ended and NULL, and *fault_off says
 * where). A fault inside the transaction's begin leaks LMDB's small
 * transaction object: only a data file cut below its meta pages does that,
 * and the dataset is retired after REGISTRY_IO_FAIL_RUN of them. */
#define STREAM_IO_FAULT 2
static int fetch(struct stream *s, struct dsstore_txn **txn, uint64_t index,
		 struct dsformat_sample *smp, uint64_t *fault_off, char *err, size_t errlen)
{
	sigjmp_buf env;
	if (sigsetjmp(env, 0) == 0) {
		int rc = 0;
		const uint8_t *payload;
		mapguard_arm(&env);
		if (!*txn)
			rc = dsstore_txn_begin(s->ds->store, txn, err, errlen);
		if (rc == 0)
			rc = dsstore_get_sample(*txn, index, smp, &payload, err, errlen);
		if (rc == 0 && smp->payload_len > scratch.cap) {
			size_t cap = smp->payload_len < 65536 ? 65536 : (size_t)smp->payload_len;
			uint8_t *nb = realloc(scratch.buf, cap);
			if (nb) {
				scratch.buf = nb;
				scratch.cap = cap;
			} else {
				rc = status_fail(err, errlen, -ENOMEM,
						 "out of memory for a record of %u bytes", smp->payload_len);
			}
		}
		if (rc == 0 && smp->payload_len)
			memcpy(scratch.buf, payload, smp->payload_len);
		mapguard_disarm();
		return rc;
	}
	/* The mapping faulted: the lookup was abandoned halfway, so its
	 * transaction is not trusted any more (a read-only one owns no lock). */
	if (*txn) {
		dsstore_txn_end(*txn);
		*txn = NULL;
	}
	*fault_off = (uint64_t)((const uint8_t *)mapguard_fault_addr() - (const uint8_t *)s->ds->map);
	status_fail(err, errlen, -EIO, "I/O error (SIGBUS) reading dataset '%s'", s->ds->name);
	return STREAM_IO_FAULT;
}

/* Copy sample index's name (names option) into its field of the slot, ""
 * when the dataset keeps none; cut at a UTF-8 character boundary. Read under
 * the SIGBUS guard like the record: a fault leaves the name empty (the
 * sample itself was read fine a moment ago). */
static void fetch_name(struct dsstore_txn *txn, uint64_t index, char *dst)
{
	sigjmp_buf env;
	dst[0] = 0;
	if (sigsetjmp(env, 0) == 0) {
		const char *name;
		size_t len;
		mapguard_arm(&env);
		if (dsstore_get_name(txn, index, &name, &len) == 0) {
			if (len > FEEDER_SAMPLE_NAME_MAX - 1) {
				len = FEEDER_SAMPLE_NAME_MAX - 1;
				while (len > 0 && ((uint8_t)name[len] & 0xC0) == 0x80)
					len--;
			}
			memcpy(dst, name, len);
			dst[len] = 0;
		}
		mapguard_disarm();
		return;
	}
	dst[0] = 0;
}

/* Decode sample index into out; 0, FEATURES_SKIPPED, STREAM_IO_FAULT or a
 * negative code. */
static int run_sample(struct stream *s, struct dsstore_txn **txn, struct jpeg_worker *jw,
		      struct gpu_slot *gs, uint32_t pos_in_batch, uint64_t epoch, uint64_t index,
		      void *out, int32_t *label, uint64_t *fault_off, char *err, size_t errlen)
{
	struct dsformat_sample smp;
	int rc = fetch(s, txn, index, &smp, fault_off, err, errlen);
	if (rc)
		return rc;
	const uint8_t *payload = scratch.buf;
	rc = dsformat_sample_verify(&smp, payload, err, errlen);
	if (rc)
		return rc;
	/* The slot was sized from the dataset header; a record of another
	 * feature width (the CRC does not cover the record header) would make
	 * the features pipeline write past this sample's place (found by
	 * tests/fuzz, fuzz_features). */
	rc = dsformat_sample_check(&s->ds->hdr, &smp, err, errlen);
	if (rc)
		return rc;
	uint64_t key = detrand_key(s->opts.seed, epoch, index);
	if (gs)
		rc = gpu_slot_stage(gs, jw, pos_in_batch, &smp, payload, key, err, errlen);
	else if (s->opts.pipeline == FEEDER_PIPE_JPEG)
		rc = jpeg_pipeline_run(jw, &s->opts, payload, smp.payload_len, key, out, err, errlen);
	else
		rc = features_pipeline_run(&s->opts, &smp, payload, key, out, err, errlen);
	if (rc == 0)
		*label = (int32_t)smp.label;
	return rc;
}

/* The task fails with the retired dataset's reason. */
static void fail_gone(struct stream_task *t)
{
	const struct dataset *d = t->s->ds;
	t->fail_code = d->gone_code ? d->gone_code : FEEDER_ENODATASET;
	snprintf(t->fail_msg, sizeof(t->fail_msg), "%s", d->gone_msg);
}

void stream_task_run(struct stream_task *t, struct jpeg_worker *jw)
{
	struct stream *s = t->s;
	struct slot *sl = &s->slots[t->slot];
	char err[256];
	struct dsstore_txn *txn = NULL;
	int rc;
	int32_t *labels = (int32_t *)(sl->base + s->geo.labels_offset);
	uint64_t *indices = (uint64_t *)(sl->base + s->geo.indices_offset);
	char *names = s->geo.names_offset ? (char *)(sl->base + s->geo.names_offset) : NULL;
	uint8_t *tensor = sl->base + s->geo.tensor_offset;
	struct gpu_slot *gs = sl->on_gpu ? s->gslots[t->slot] : NULL;
	double t0 = mono_s();
	/* A device slot is only handed out once its release completed
	 * (SLOT_RELEASING): the client's GPU no longer reads it. */
	for (uint32_t i = t->first; i < t->first + t->count; i++) {
		uint8_t *out = tensor + (size_t)i * s->geo.sample_bytes;
		uint64_t pos = sl->batch * s->opts.batch + i;
		uint64_t tries = s->rank_len < STREAM_MAX_REPLACE_TRIES ? s->rank_len
									: STREAM_MAX_REPLACE_TRIES;
		int ok = 0;
		uint64_t faults = 0;
		for (uint64_t k = 0; k < tries; k++) {
			if (dataset_gone(s->ds)) {
				fail_gone(t);
				dsstore_txn_end(txn);
				return;
			}
			uint64_t index = sampler_at(&sl->order, (pos + k) % s->rank_len);
			uint64_t fault_off = 0;
			rc = run_sample(s, &txn, jw, gs, i, sl->epoch, index, out, &labels[i],
					&fault_off, err, sizeof(err));
			if (rc == 0) {
				dataset_note_io_ok(s->ds);
				indices[i] = index;
				if (names)
					fetch_name(txn, index, names + (size_t)i * FEEDER_SAMPLE_NAME_MAX);
				ok = 1;
				break;
			}
			if (rc == FEATURES_SKIPPED) {
				t->skipped++;
			} else {
				t->decode_errors++;
				if (rc == STREAM_IO_FAULT) {
					faults++;
					dataset_note_io_error(s->ds, fault_off);
					rc = -EIO;
				} else if (dataset_note_corrupt(s->ds, index)) {
					log_warn("dataset '%s': sample %llu is unusable and is replaced "
						 "in every stream: %s",
						 s->ds->name, (unsigned long long)index, err);
				}
				if (s->opts.on_error == FEEDER_ON_ERROR_FAIL) {
					t->fail_code = rc;
					status_fail(t->fail_msg, sizeof(t->fail_msg), 0,
						 "dataset '%s', sample %llu (epoch %llu, batch %llu): %s",
						 s->ds->name, (unsigned long long)index,
						 (unsigned long long)sl->epoch,
						 (unsigned long long)sl->batch, err);
					dsstore_txn_end(txn);
					return;
				}
			}
			if (k == 0)
				t->replacements++;
		}
		if (!ok) {
			/* Nothing this rank may read can be read: the dataset is
			 * unreadable, whatever the run in a row says. */
			if (faults == tries)
				dataset_retire(s->ds, -EIO,
					       "dataset '%s' is unreadable: %llu reads in a row failed with "
					       "an I/O error (SIGBUS) on its data.mdb",
					       s->ds->name, (unsigned long long)faults);
			if (dataset_gone(s->ds)) {
				fail_gone(t);
				break;
			}
			t->fail_code = FEEDER_ECORRUPT;
			status_fail(t->fail_msg, sizeof(t->fail_msg), 0,
				 "dataset '%s': no usable sample among %llu after position %llu of epoch %llu "
				 "(the last: %s)",
				 s->ds->name, (unsigned long long)tries, (unsigned long long)pos,
				 (unsigned long long)sl->epoch, err);
			break;
		}
	}
	t->run_s = mono_s() - t0;
	dsstore_txn_end(txn);
}

/* placement=auto: account a finished batch of the measuring phase and
 * decide once both ways have STREAM_AUTO_BATCHES. The CPU way costs its
 * worker seconds spread over the pool; the GPU way the larger of its staging
 * share and its device time (they overlap across slots). */
static void auto_note(struct stream *s, const struct slot *sl, double gpu_s)
{
	if (!s->deciding)
		return;
	if (sl->on_gpu) {
		s->auto_gpu_n++;
		s->auto_gpu_stage_s += sl->work_s;
		s->auto_gpu_dev_s += gpu_s;
	} else if (sl->seq < STREAM_AUTO_BATCHES) {
		s->auto_cpu_n++;
		s->auto_cpu_s += sl->work_s;
	}
	if (s->auto_cpu_n < STREAM_AUTO_BATCHES || s->auto_gpu_n < STREAM_AUTO_BATCHES)
		return;
	double cpu = s->auto_cpu_s / s->auto_cpu_n / s->workers;
	double stage = s->auto_gpu_stage_s / s->auto_gpu_n / s->workers;
	double dev = s->auto_gpu_dev_s / s->auto_gpu_n;
	double gpu = stage > dev ? stage : dev;
	s->auto_cpu_ms = (float)(cpu * 1e3);
	s->auto_gpu_ms = (float)(gpu * 1e3);
	s->active = gpu < cpu ? FEEDER_PLACEMENT_GPU : FEEDER_PLACEMENT_CPU;
	s->deciding = 0;
	log_info("stream %u: placement=auto chose %s: %.2f ms a batch on the CPU, %.2f ms on "
		 "the GPU (staging %.2f, device %.2f)",
		 s->id, s->active == FEEDER_PLACEMENT_GPU ? "gpu" : "cpu", cpu * 1e3, gpu * 1e3,
		 stage * 1e3, dev * 1e3);
}

int stream_task_finish(struct stream_task *t)
{
	struct stream *s = t->s;
	struct slot *sl = &s->slots[t->slot];
	int wake = 0;
	s->inflight--;
	s->replacements += t->replacements;
	s->decode_errors += t->decode_errors;
	if (t->fail_code && !s->fail_code) {
		s->fail_code = t->fail_code;
		memcpy(s->fail_msg, t->fail_msg, sizeof(s->fail_msg));
		wake = 1;
	}
	if (!t->fail_code) {
		s->samples += t->count;
		sl->replacements += t->replacements;
		sl->done += t->count;
		sl->work_s += t->run_s;
		if (sl->done == sl->count && sl->on_gpu && !s->fail_code) {
			/* This worker runs the batch on the GPU, holding the
			 * stream open meanwhile. */
			sl->state = SLOT_GPU;
			s->inflight++;
			t->submit = 1;
		} else if (sl->done == sl->count) {
			sl->state = SLOT_DONE;
			auto_note(s, sl, 0);
			wake = 1;
		}
	}
	if (s->closing && s->inflight == 0)
		wake = 1;
	return wake;
}

void stream_task_submit(struct stream_task *t)
{
	struct stream *s = t->s;
	struct slot *sl = &s->slots[t->slot];
	char err[256];
	double t0 = mono_s();
	void *dev = s->dring ? gpu_ring_slot(s->dring, t->slot) : NULL;
	void *host = s->dring ? NULL : sl->base + s->geo.tensor_offset;
	int rc = gpu_slot_run(s->gslots[t->slot], sl->count, dev, host, err, sizeof(err));
	if (rc == 0 && s->dring)
		rc = gpu_ring_mark_ready(s->dring, t->slot, NULL, err, sizeof(err));
	t->gpu_s = mono_s() - t0;
	if (rc) {
		t->fail_code = rc;
		snprintf(t->fail_msg, sizeof(t->fail_msg), "GPU batch of stream %u failed: %.200s", s->id,
			 err);
	}
}

int stream_submit_finish(struct stream_task *t)
{
	struct stream *s = t->s;
	struct slot *sl = &s->slots[t->slot];
	s->inflight--;
	if (t->fail_code) {
		if (!s->fail_code) {
			s->fail_code = t->fail_code;
			memcpy(s->fail_msg, t->fail_msg, sizeof(s->fail_msg));
		}
	} else {
		sl->state = SLOT_DONE;
		auto_note(s, sl, t->gpu_s);
	}
	return 1;
}
