/* stream.c — a stream's ring, batch order and slot filling (see stream.h). */
#include "stream.h"

#include "detrand.h"
#include "log.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* How far a corrupt sample's replacement is searched for before the stream
 * gives up: a dataset this broken should fail loudly, not spin. */
#define STREAM_MAX_REPLACE_TRIES 4096

static void seq_to_batch(const struct stream *s, uint64_t seq, uint64_t *epoch, uint64_t *batch)
{
	uint64_t first = s->per_epoch - s->req.start_batch;
	if (seq < first) {
		*epoch = s->req.epoch;
		*batch = s->req.start_batch + seq;
		return;
	}
	seq -= first;
	*epoch = s->req.epoch + 1 + seq / s->per_epoch;
	*batch = seq % s->per_epoch;
}

static void params_from_request(struct stream *s)
{
	const struct proto_open_stream *o = &s->req;
	if (o->pipeline == PROTO_PIPE_JPEG) {
		struct jpeg_params *p = &s->jpeg;
		jpeg_params_default(p, o->jpeg.out_h, (int)o->jpeg.train);
		p->out_h = o->jpeg.out_h;
		p->out_w = o->jpeg.out_w;
		p->scale_min = o->jpeg.scale_min;
		p->scale_max = o->jpeg.scale_max;
		p->ratio_min = o->jpeg.ratio_min;
		p->ratio_max = o->jpeg.ratio_max;
		p->flip_p = o->jpeg.flip_p;
		p->resize_ratio = o->jpeg.resize_ratio;
		memcpy(p->mean, o->jpeg.mean, sizeof(p->mean));
		memcpy(p->std, o->jpeg.std, sizeof(p->std));
		p->dtype = (int)o->dtype;
		p->layout = (int)o->layout;
	} else {
		struct features_params *p = &s->feat;
		features_params_default(p, o->features.chunk_len, (int)o->features.train);
		p->pad = (int)o->features.pad;
		p->cmn = (int)o->features.cmn;
		if (o->features.cmn_window)
			p->cmn_window = o->features.cmn_window;
		p->cvn = (int)o->features.cvn;
		p->dtype = (int)o->dtype;
	}
}

static int make_ring(struct stream *s, char *err, size_t errlen)
{
	int fd = memfd_create("feeder-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return status_fail(err, errlen, -errno, "memfd_create failed: %s", strerror(errno));
	if (ftruncate(fd, (off_t)s->geo.ring_size) != 0) {
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
	void *map = mmap(NULL, s->geo.ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		int e = errno;
		close(fd);
		return status_fail(err, errlen, -e, "mapping the ring failed: %s", strerror(e));
	}
	s->memfd = fd;
	s->map = map;
	s->map_len = s->geo.ring_size;
	struct proto_ring_header *h = map;
	h->magic = PROTO_RING_MAGIC;
	h->version = PROTO_VERSION;
	h->stream = s->id;
	h->slots = s->nslots;
	h->slot_size = s->geo.slot_size;
	h->slot0_offset = PROTO_RING_HEADER;
	h->batch = s->req.batch;
	h->dtype = s->req.dtype;
	h->layout = s->req.layout;
	h->ndim = s->geo.ndim;
	memcpy(h->shape, s->geo.shape, sizeof(h->shape));
	h->labels_offset = s->geo.labels_offset;
	h->tensor_offset = s->geo.tensor_offset;
	h->tensor_bytes = s->geo.tensor_bytes;
	return 0;
}

int stream_create(struct stream **out, uint32_t id, struct dataset *ds,
		  const struct proto_open_stream *req, uint64_t page, unsigned workers,
		  char *err, size_t errlen)
{
	const struct dsformat_header *h = &ds->hdr;
	if (req->pipeline == PROTO_PIPE_JPEG && h->kind != DSFORMAT_KIND_JPEG)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "dataset '%s' holds %s samples, not jpeg images", ds->name,
				   dsformat_kind_name(h->kind));
	if (req->pipeline == PROTO_PIPE_FEATURES && h->kind != DSFORMAT_KIND_FEATURES)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "dataset '%s' holds %s samples, not feature matrices", ds->name,
				   dsformat_kind_name(h->kind));
	struct stream *s = calloc(1, sizeof(*s));
	if (!s)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	s->id = id;
	s->req = *req;
	s->memfd = -1;
	s->nslots = req->slots;
	int rc;
	params_from_request(s);
	if (req->pipeline == PROTO_PIPE_JPEG)
		rc = jpeg_params_check(&s->jpeg, err, errlen);
	else
		rc = features_params_check(&s->feat, err, errlen);
	if (rc)
		goto fail;
	struct sampler first;
	rc = sampler_init(&first, h->samples, req->seed, req->epoch, req->rank, req->world, err,
			  errlen);
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
	rc = make_ring(s, err, errlen);
	if (rc)
		goto fail;
	for (uint32_t i = 0; i < s->nslots; i++)
		s->slots[i].base = s->map + PROTO_RING_HEADER + (size_t)i * s->geo.slot_size;
	/* Small tasks spread one batch over all workers; larger ones cut the
	 * locking per sample when batches are big. */
	uint32_t chunk = req->batch / (2 * (workers ? workers : 1));
	s->chunk = chunk < 1 ? 1 : chunk > 8 ? 8 : chunk;
	dataset_ref(ds);
	s->ds = ds;
	atomic_fetch_add(&ds->streams, 1);
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
	if (s->map)
		munmap(s->map, s->map_len);
	if (s->memfd >= 0)
		close(s->memfd);
	if (s->ds) {
		atomic_fetch_sub(&s->ds->streams, 1);
		dataset_unref(s->ds);
	}
	free(s->slots);
	free(s);
}

unsigned stream_refill(struct stream *s)
{
	unsigned started = 0;
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
			if (sampler_init(&sl->order, s->ds->hdr.samples, s->req.seed, epoch, s->req.rank,
					 s->req.world, err, sizeof(err)) != 0)
				return started;
		}
		uint64_t left = s->rank_len - batch * s->req.batch;
		sl->state = SLOT_FILLING;
		sl->seq = s->next_assign++;
		sl->epoch = epoch;
		sl->batch = batch;
		sl->count = left < s->req.batch ? (uint32_t)left : s->req.batch;
		sl->claimed = sl->done = sl->replacements = 0;
		sl->fills++;
		started++;
	}
	return started;
}

int stream_next_ready(struct stream *s, struct proto_batch_ready *r)
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
		h->dtype = s->req.dtype;
		h->layout = s->req.layout;
		h->ndim = s->geo.ndim;
		memcpy(h->shape, s->geo.shape, sizeof(h->shape));
		h->shape[0] = sl->count;
		h->sequence = sl->fills;
		sl->state = SLOT_HELD;
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

int stream_release(struct stream *s, uint32_t slot, char *err, size_t errlen)
{
	if (slot >= s->nslots)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "RELEASE of slot %u, stream %u has %u slots", slot, s->id, s->nslots);
	if (s->slots[slot].state != SLOT_HELD)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "RELEASE of slot %u of stream %u, which the client does not hold", slot,
				   s->id);
	s->slots[slot].state = SLOT_FREE;
	return 0;
}

int stream_finished(const struct stream *s)
{
	return s->next_send >= s->total;
}

int stream_claim(struct stream *s, struct stream_task *t)
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
	t->count = best->count - best->claimed < s->chunk ? best->count - best->claimed : s->chunk;
	best->claimed += t->count;
	s->inflight++;
	return 1;
}

/* Decode sample index into out; 0, FEATURES_SKIPPED or a negative code. */
static int run_sample(struct stream *s, struct dsstore_txn *txn, struct jpeg_worker *jw,
		      uint64_t epoch, uint64_t index, void *out, int32_t *label, char *err,
		      size_t errlen)
{
	struct dsformat_sample smp;
	const uint8_t *payload;
	int rc = dsstore_get_sample(txn, index, &smp, &payload, err, errlen);
	if (rc)
		return rc;
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
	uint64_t key = detrand_key(s->req.seed, epoch, index);
	if (s->req.pipeline == PROTO_PIPE_JPEG)
		rc = jpeg_pipeline_run(jw, &s->jpeg, payload, smp.payload_len, key, out, err, errlen);
	else
		rc = features_pipeline_run(&s->feat, &smp, payload, key, out, err, errlen);
	if (rc == 0)
		*label = (int32_t)smp.label;
	return rc;
}

void stream_task_run(struct stream_task *t, struct jpeg_worker *jw)
{
	struct stream *s = t->s;
	struct slot *sl = &s->slots[t->slot];
	char err[256];
	struct dsstore_txn *txn;
	int rc = dsstore_txn_begin(s->ds->store, &txn, err, sizeof(err));
	if (rc) {
		t->fail_code = rc;
		status_fail(t->fail_msg, sizeof(t->fail_msg), 0, "dataset '%s': %s", s->ds->name, err);
		return;
	}
	int32_t *labels = (int32_t *)(sl->base + s->geo.labels_offset);
	uint8_t *tensor = sl->base + s->geo.tensor_offset;
	for (uint32_t i = t->first; i < t->first + t->count; i++) {
		uint8_t *out = tensor + (size_t)i * s->geo.sample_bytes;
		uint64_t pos = sl->batch * s->req.batch + i;
		uint64_t tries = s->rank_len < STREAM_MAX_REPLACE_TRIES ? s->rank_len
									: STREAM_MAX_REPLACE_TRIES;
		int ok = 0;
		for (uint64_t k = 0; k < tries; k++) {
			uint64_t index = sampler_at(&sl->order, (pos + k) % s->rank_len);
			rc = run_sample(s, txn, jw, sl->epoch, index, out, &labels[i], err, sizeof(err));
			if (rc == 0) {
				ok = 1;
				break;
			}
			if (rc == FEATURES_SKIPPED) {
				t->skipped++;
			} else {
				t->decode_errors++;
				if (dataset_note_corrupt(s->ds, index))
					log_warn("dataset '%s': sample %llu is unusable and is replaced "
						 "in every stream: %s",
						 s->ds->name, (unsigned long long)index, err);
				if (s->req.on_error == PROTO_ON_ERROR_FAIL) {
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
			t->fail_code = FEEDER_ECORRUPT;
			status_fail(t->fail_msg, sizeof(t->fail_msg), 0,
				 "dataset '%s': no usable sample among %llu after position %llu of epoch %llu",
				 s->ds->name, (unsigned long long)tries, (unsigned long long)pos,
				 (unsigned long long)sl->epoch);
			break;
		}
	}
	dsstore_txn_end(txn);
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
		if (sl->done == sl->count) {
			sl->state = SLOT_DONE;
			wake = 1;
		}
	}
	if (s->closing && s->inflight == 0)
		wake = 1;
	return wake;
}
