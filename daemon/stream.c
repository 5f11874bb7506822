/* stream.c — a stream's ring, batch order and slot states, the loop's side (see
 * stream.h; the workers' side is stream_task.c). */
#include "stream_impl.h"

#include "gpu_pipeline.h"
#include "gpu_ring.h"
#include "gpu_slot.h"
#include "log.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void seq_to_batch(const struct stream *s, uint64_t seq, uint64_t *epoch, uint64_t *batch)
{
	uint64_t first = s->first_batches - s->opts.start_batch;
	if (seq < first) {
		*epoch = s->opts.epoch;
		*batch = s->opts.start_batch + seq;
		return;
	}
	seq -= first;
	*epoch = s->opts.epoch + 1 + seq / s->per_epoch;
	*batch = seq % s->per_epoch;
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

/* The device ring, made before the memfd: its table goes into the memfd,
 * after the slots, only when the ring exists (STREAM_OPENED then says
 * memory=device). A ring the device cannot hold is not the client's fault:
 * the stream is served from the host ring (placement gpu, batches copied
 * back), which is what the client is then told, and the log says why. The
 * table is returned in *table (NULL without a ring) for make_ring's memfd. */
static void device_ring(struct stream *s, const struct stream_gpu *gpu, uint8_t **table)
{
	char err[PROTO_TEXT_MAX];
	uint64_t size = proto_device_table_size(s->nslots, PROTO_TENSOR_ALIGN);
	uint8_t *t = calloc(1, size);
	int rc = t ? gpu_ring_create(&s->dring, gpu->device, s->nslots, s->geo.tensor_bytes,
				     (struct proto_device_table *)t,
				     (struct proto_device_slot *)(t + PROTO_DEVICE_TABLE_HEAD), err,
				     sizeof(err))
		   : status_fail(err, sizeof(err), -ENOMEM, "out of memory for a device table");
	*table = NULL;
	if (rc) {
		free(t);
		log_warn("stream %u: device batches were asked for, but its device ring cannot be "
			 "made (%s): its batches come through the host ring",
			 s->id, err);
		return;
	}
	*table = t;
	s->device_table = s->geo.ring_size;
	s->ring_bytes += size;
}

/* placement gpu/auto: the contexts that batches borrow, made later by the
 * workers that first need them (pinned and device memory take long to
 * allocate: not on the event loop). A batch holds a context from its first
 * claim to the end of its submission. Claims go to the oldest filling
 * batch, so a batch starts claiming only when no other is partly claimed,
 * and then every batch holding a context has a worker on it (running one
 * of its tasks or its submission), none of them the claiming worker: at
 * most workers - 1 are held. min(slots, workers) contexts therefore never
 * keep a batch waiting. */
static int gpu_setup(struct stream *s, const struct stream_gpu *gpu, char *err, size_t errlen)
{
	s->ngctx = s->nslots < s->workers ? s->nslots : s->workers;
	s->gctx = calloc(s->ngctx, sizeof(*s->gctx));
	if (!s->gctx)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	pthread_mutex_init(&s->gpu_lock, NULL);
	s->gpu_device = gpu->device;
	/* Batches copied back into host slots: the ring is page-locked (by
	 * the worker that makes the first context) so that the copy is one
	 * DMA, not a pageable copy through the driver's staging. */
	s->gpu_registering = !s->dring && gpu->device >= 0;
	s->placement = gpu->placement;
	s->active = gpu->placement == FEEDER_PLACEMENT_GPU ? FEEDER_PLACEMENT_GPU
							   : FEEDER_PLACEMENT_CPU;
	s->deciding = gpu->placement == FEEDER_PLACEMENT_AUTO;
	return 0;
}

/* Give the contexts no batch holds (all of them with held_too: a stream no
 * worker is on, where a batch left unfinished still marks its own) to
 * gpu_slot_retire (freeing them synchronises the device: not on this
 * thread). A held one is used by its batch's workers only, so the pool lock
 * the caller holds is all the exclusion needed. */
static void retire_contexts(struct stream *s, int held_too)
{
	for (uint32_t i = 0; i < s->ngctx; i++)
		if ((held_too || !s->gctx[i].busy) && s->gctx[i].g) {
			gpu_slot_retire(s->gctx[i].g);
			s->gctx[i].g = NULL;
		}
}

int stream_check_kind(const struct feeder_stream_opts *req, const struct dataset *ds, char *err,
		      size_t errlen)
{
	/* The pipeline each dataset kind is served by, and what it holds. */
	static const struct {
		uint32_t pipeline;
		const char *holds, *pipe;
	} by_kind[] = {
		[DSFORMAT_KIND_JPEG] = { FEEDER_PIPE_JPEG, "jpeg images", "jpeg" },
		[DSFORMAT_KIND_FEATURES] = { FEEDER_PIPE_FEATURES, "feature matrices", "features" },
		[DSFORMAT_KIND_WAVE] = { FEEDER_PIPE_WAVE, "waveforms", "wave" },
	};
	unsigned kind = ds->hdr.kind;
	if (kind >= sizeof(by_kind) / sizeof(by_kind[0]) || !by_kind[kind].pipe)
		return status_fail(err, errlen, FEEDER_EINVAL, "dataset '%s' is of unknown kind %u",
				   ds->name, kind);
	if (by_kind[kind].pipeline != req->pipeline) {
		const char *want = "?";
		for (size_t i = 0; i < sizeof(by_kind) / sizeof(by_kind[0]); i++)
			if (by_kind[i].pipe && by_kind[i].pipeline == req->pipeline)
				want = by_kind[i].holds;
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "dataset '%s' holds %s, not %s: open it with pipeline %s",
				   ds->name, by_kind[kind].holds, want, by_kind[kind].pipe);
	}
	if (req->pipeline == FEEDER_PIPE_WAVE) {
		int rc = wave_pipeline_supported(err, errlen);
		if (rc)
			return rc;
		if (ds->hdr.rate != WAVE_RATE)
			return status_fail(
				err, errlen, FEEDER_EINVAL,
				"dataset '%s' is sampled at %u Hz; the wave pipeline computes "
				"its features at %d Hz (pack it with --rate %d)",
				ds->name, ds->hdr.rate, WAVE_RATE, WAVE_RATE);
	}
	return 0;
}

int stream_create(struct stream **out, uint32_t id, struct dataset *ds,
		  const struct feeder_stream_opts *req, uint64_t page, unsigned workers, char *err,
		  size_t errlen)
{
	return stream_create_placed(out, id, ds, req, page, workers, NULL, err, errlen);
}

int stream_create_placed(struct stream **out, uint32_t id, struct dataset *ds,
			 const struct feeder_stream_opts *req, uint64_t page, unsigned workers,
			 const struct stream_gpu *gpu, char *err, size_t errlen)
{
	const struct dsformat_header *h = &ds->hdr;
	int rc_fail;
	struct stream *s = calloc(1, sizeof(*s));
	if (!s)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	s->id = id;
	s->opts = *req;
	s->stamp_us = (uint64_t)(mono_s() * 1e6);
	s->opened_us = s->stamp_us;
	s->memfd = -1;
	s->registered_device = -1;
	s->nslots = req->slots;
	if (ds->shards && req->start_sample) {
		/* Over a shard-block order each rank reads its own stretch of
		 * an epoch (sampler.h): what ranks of another world size took is
		 * no prefix of it. */
		rc_fail = status_fail(err, errlen, FEEDER_EINVAL,
				      "dataset '%s' is remote: its ranks read separate stretches "
				      "of each epoch, so a stream resumes at a batch (start_batch) "
				      "with the same world size, not at a sample (start_sample)",
				      ds->name);
		free(s);
		return rc_fail;
	}
	struct sampler first;
	int rc = sampler_init(&first, h->samples, req->seed, req->epoch, req->rank, req->world,
			      (int)req->shuffle, err, errlen);
	if (rc)
		goto fail;
	s->rank_len = sampler_len(&first);
	s->per_epoch = sampler_batches(&first, req->batch, (int)req->drop_last);
	/* The first epoch may begin at a sample position (elastic resume):
	 * this rank's share of what is left, which may be nothing. */
	rc = sampler_start(&first, req->start_sample, err, errlen);
	if (rc)
		goto fail;
	s->first_len = sampler_len(&first);
	s->first_batches = sampler_batches(&first, req->batch, (int)req->drop_last);
	if (s->per_epoch == 0) {
		rc = status_fail(err, errlen, FEEDER_EINVAL,
				 "dataset '%s' has %llu samples: rank %u of %u gets no batch of %u",
				 ds->name, (unsigned long long)h->samples, req->rank, req->world,
				 req->batch);
		goto fail;
	}
	if (req->start_batch > s->first_batches) {
		if (req->start_sample)
			rc = status_fail(
				err, errlen, FEEDER_EINVAL,
				"start batch %llu is past the %llu batches of rank %u of %u "
				"after start sample %llu",
				(unsigned long long)req->start_batch,
				(unsigned long long)s->first_batches, req->rank, req->world,
				(unsigned long long)req->start_sample);
		else
			rc = status_fail(err, errlen, FEEDER_EINVAL,
					 "start batch %llu is past the %llu batches of an epoch",
					 (unsigned long long)req->start_batch,
					 (unsigned long long)s->per_epoch);
		goto fail;
	}
	s->total = s->first_batches - req->start_batch + (uint64_t)(req->epochs - 1) * s->per_epoch;
	rc = proto_geometry(req, h->feat_dim, page, &s->geo, err, errlen);
	if (rc)
		goto fail;
	s->slots = calloc(s->nslots, sizeof(*s->slots));
	if (!s->slots) {
		rc = status_fail(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	s->ring_bytes = s->geo.ring_size;
	uint8_t *table = NULL;
	if (gpu && gpu->device_ring)
		device_ring(s, gpu, &table);
	rc = make_ring(s, err, errlen);
	if (rc) {
		free(table);
		gpu_ring_destroy(s->dring);
		goto fail;
	}
	if (table) {
		memcpy(s->map + s->device_table, table, s->ring_bytes - s->device_table);
		free(table);
	}
	for (uint32_t i = 0; i < s->nslots; i++) {
		s->slots[i].base = s->map + PROTO_RING_HEADER + (size_t)i * s->geo.slot_size;
		s->slots[i].ctx = -1;
	}
	/* Small tasks spread one batch over all workers; larger ones cut the
	 * locking per sample when batches are big. */
	uint32_t chunk = req->batch / (2 * (workers ? workers : 1));
	s->chunk = chunk < 1 ? 1 : chunk > 8 ? 8 : chunk;
	s->workers = workers ? workers : 1;
	dataset_ref(ds);
	s->ds = ds;
	atomic_fetch_add(&ds->streams, 1);
	if (gpu && gpu->placement != FEEDER_PLACEMENT_CPU &&
	    (rc = gpu_setup(s, gpu, err, errlen))) {
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

/* Give back the pages of the ring that no client batch lives in. The
 * client may keep the memfd (and its mapping) as long as it likes; the pages
 * are the daemon's, charged to memory_limit while the stream exists, so
 * they go back now (the seals allow it: a hole is not a shrink) and a kept
 * memfd reads zeros. Not so the slots the client holds or was announced
 * (SLOT_HELD): a trainer reads those until it releases them or exits,
 * whatever happened to the stream (a shutdown, a lost connection, a failed
 * stream); the caller charges them until then (stream_held_bytes). With no
 * slot held the whole ring goes, header and device table included. */
static void punch_unheld(struct stream *s)
{
	if (s->held == 0) {
		if (madvise(s->map, s->map_len, MADV_REMOVE) != 0)
			log_warn("stream %u: its ring's pages could not be released: %s", s->id,
				 strerror(errno));
		return;
	}
	for (uint32_t i = 0; i < s->nslots; i++)
		if (s->slots[i].state != SLOT_HELD &&
		    madvise(s->slots[i].base, s->geo.slot_size, MADV_REMOVE) != 0) {
			log_warn("stream %u: slot %u's pages could not be released: %s", s->id, i,
				 strerror(errno));
			return;
		}
}

uint64_t stream_held_bytes(const struct stream *s)
{
	return (uint64_t)s->held * s->geo.slot_size;
}

unsigned stream_device_held(const struct stream *s)
{
	return s->dring ? s->held : 0;
}

void stream_release_all(struct stream *s)
{
	for (uint32_t i = 0; i < s->nslots; i++)
		if (s->slots[i].state == SLOT_HELD)
			s->slots[i].state = SLOT_FREE;
	s->held = 0;
}

void stream_destroy(struct stream *s)
{
	if (!s)
		return;
	if (s->gctx) {
		retire_contexts(s, 1); /* no worker is on the stream */
		free(s->gctx);
		pthread_mutex_destroy(&s->gpu_lock);
	}
	gpu_ring_destroy(s->dring);
	if (s->registered_device >= 0)
		gpu_pipeline_host_unregister(s->registered_device, s->map);
	if (s->map) {
		punch_unheld(s);
		munmap(s->map, s->map_len);
	}
	if (s->memfd >= 0)
		close(s->memfd);
	/* The wants and layouts name the dataset's shards: before it goes. */
	stream_order_free(s);
	if (s->ds) {
		atomic_fetch_sub(&s->ds->streams, 1);
		dataset_unref(s->ds);
	}
	for (int c = 0; c < WAVE_CATEGORIES; c++)
		free(s->wave.cat[c]);
	for (int i = 0; i < 2; i++) {
		free(s->sources[i].verified);
		if (s->sources[i].d)
			dataset_unref(s->sources[i].d);
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
			char err[PROTO_TEXT_MAX];
			int rc = stream_order(s, sl, epoch, err, sizeof(err));
			if (rc) {
				s->fail_code = rc;
				memcpy(s->fail_msg, err, sizeof(s->fail_msg));
				return started;
			}
		}
		uint64_t len = epoch == s->opts.epoch ? s->first_len : s->rank_len;
		uint64_t left = len - batch * s->opts.batch;
		sl->state = SLOT_FILLING;
		sl->seq = s->next_assign++;
		sl->epoch = epoch;
		sl->batch = batch;
		sl->count = left < s->opts.batch ? (uint32_t)left : s->opts.batch;
		sl->claimed = sl->done = sl->replacements = 0;
		sl->work_s = 0;
		sl->on_gpu = 0;
		if (s->gctx) {
			if (s->deciding)
				sl->on_gpu = sl->seq >= STREAM_AUTO_BATCHES &&
					     sl->seq < 2 * STREAM_AUTO_BATCHES;
			else
				sl->on_gpu = s->active == FEEDER_PLACEMENT_GPU;
			/* placement=auto chose the CPU: the contexts (pinned
			 * memory, large) are of no more use. */
			if (!s->deciding && !sl->on_gpu)
				retire_contexts(s, 0);
		}
		sl->fills++;
		started++;
	}
	if (s->ds->shards)
		stream_want(s);
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
				   "RELEASE of slot %u, stream %u has %u slots", slot, s->id,
				   s->nslots);
	if (s->slots[slot].state != SLOT_HELD)
		return status_fail(
			err, errlen, FEEDER_EPROTO,
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

/* A client's totals run from its own stream's start, across reconnects,
 * and are whatever it sends: this stream counts only their increase since
 * the previous report, and at most the time it has been open in all (wait
 * and compute are disjoint spans of the trainer's time, so more is not a
 * measurement: the totals from before a reopen, or a forged report). An
 * increase beyond that room is scaled down to it, the wait's share kept.
 * So a stream's totals never exceed its age, and sums over streams
 * (feeder_trainer_wait_seconds_total) cannot wrap. */
void stream_note_trainer(struct stream *s, uint64_t wait_us, uint64_t compute_us, uint64_t now_us)
{
	uint64_t dw = wait_us - s->client_wait_raw, dc = compute_us - s->client_compute_raw;
	int backwards = wait_us < s->client_wait_raw || compute_us < s->client_compute_raw;
	s->client_wait_raw = wait_us;
	s->client_compute_raw = compute_us;
	s->trainer_reports = 1;
	if (backwards)
		return; /* not a total of this client's: counted from here */
	uint64_t age = now_us > s->opened_us ? now_us - s->opened_us : 0;
	uint64_t used = s->trainer_wait_us + s->trainer_compute_us;
	uint64_t room = age > used ? age - used : 0;
	if (dw > room || dc > room - dw) {
		double f = (double)room / ((double)dw + (double)dc);
		dw = (uint64_t)((double)dw * f);
		dw = dw < room ? dw : room;
		dc = room - dw;
	}
	s->trainer_wait_us += dw;
	s->trainer_compute_us += dc;
}

/* The trainer's wait share over the snapshots' window, or -1 unknown. */
static double window_share(const struct stream *s)
{
	if (!s->trainer_reports || s->snaps == 0)
		return -1;
	unsigned oldest = s->snaps <= STREAM_WAIT_WINDOW ? 0 : s->snap_next;
	uint64_t w = s->trainer_wait_us - s->snap_wait[oldest];
	uint64_t c = s->trainer_compute_us - s->snap_compute[oldest];
	return w + c ? (double)w / (double)(w + c) : -1;
}

int stream_starving(struct stream *s, uint64_t now_us, double share, uint64_t after_us,
		    double *share_now)
{
	double sh = window_share(s);
	*share_now = sh;
	if (share <= 0 || sh < 0 || sh <= share || stream_finished(s)) {
		s->starving_since_us = 0;
		if (sh >= 0 && sh <= share)
			s->starvation_said = 0; /* the next episode is warned again */
		return 0;
	}
	if (!s->starving_since_us)
		s->starving_since_us = now_us;
	if (s->starvation_said || now_us - s->starving_since_us < after_us)
		return 0;
	s->starvation_said = 1;
	return 1;
}

void stream_stage_seconds(const struct stream *s, double stage_s[FEEDER_STAGES])
{
	for (int i = 0; i < FEEDER_STAGES; i++)
		stage_s[i] += s->stage_s[i];
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
	r->placement = s->gctx ? s->placement : FEEDER_PLACEMENT_CPU;
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
	/* one snapshot a tick: the oldest of STREAM_WAIT_WINDOW + 1 is the
	 * window's start */
	s->snap_wait[s->snap_next] = s->trainer_wait_us;
	s->snap_compute[s->snap_next] = s->trainer_compute_us;
	s->snap_next = (s->snap_next + 1) % (STREAM_WAIT_WINDOW + 1);
	if (s->snaps <= STREAM_WAIT_WINDOW)
		s->snaps++;
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
	for (uint32_t i = 0; i < s->nslots; i++)
		r->filling += s->slots[i].state == SLOT_FILLING || s->slots[i].state == SLOT_GPU;
	r->trainer_reports = (uint32_t)s->trainer_reports;
	r->trainer_wait_us = s->trainer_wait_us;
	r->trainer_compute_us = s->trainer_compute_us;
	r->wait_share_10s = (float)window_share(s);
	uint64_t all = s->trainer_wait_us + s->trainer_compute_us;
	r->wait_share_total =
		s->trainer_reports && all ? (float)((double)s->trainer_wait_us / all) : -1.0f;
	r->bytes_per_s = s->rate * (double)s->geo.sample_bytes;
	memcpy(r->stage_s, s->stage_s, sizeof(r->stage_s));
	proto_opts_describe(&s->opts, r->settings, sizeof(r->settings));
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
