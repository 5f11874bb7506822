/* stream_task.c — the worker side of a stream (see stream.h): claiming a
 * share of a slot's batch, fetching and decoding its samples (replacing the
 * corrupt ones), finishing the slot, and submitting a staged batch to the
 * GPU. The ring and the order of batches are stream.c's. */
#include "stream_impl.h"

#include "crc32c.h"
#include "detrand.h"
#include "gpu_pipeline.h"
#include "gpu_ring.h"
#include "gpu_slot.h"
#include "log.h"
#include "mapguard.h"
#include "pcm.h"
#include "shard_cache.h"
#include "status.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels say EINVAL */
#endif

/* A slot's first fill writes into shmem pages that do not exist yet, and a
 * page fault for each 4 KiB was 9 % of the workers' time over the first
 * batches of a 256 x 224^2 f16 stream (perf). One MADV_POPULATE_WRITE for
 * the task's range allocates the same pages without the faults (a quarter
 * less time for the first touch). Where the kernel cannot, the writes fault
 * as before: nothing depends on it. */
static void populate(uint8_t *p, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~((uintptr_t)page - 1);
	uintptr_t b = ((uintptr_t)p + len + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
	(void)madvise((void *)a, b - a, MADV_POPULATE_WRITE);
}

/* A GPU batch borrows a context at its first claim (see gpu_setup in
 * stream.c for why one is always free); 0 if none is, and the claim waits
 * for a batch to give one back. */
static int bind_context(struct stream *s, struct slot *sl)
{
	if (!sl->on_gpu || sl->ctx >= 0)
		return 1;
	for (uint32_t i = 0; i < s->ngctx; i++)
		if (!s->gctx[i].busy) {
			s->gctx[i].busy = 1;
			sl->ctx = (int32_t)i;
			return 1;
		}
	return 0;
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
	if (!best || !bind_context(s, best))
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
	wave_pipeline_worker_exit();
}

/* What a task reads from: a local dataset's store, or over a remote
 * dataset the few shards the task has met so far (a block interleaves
 * its shards sample by sample), each held from the cache with its read
 * transaction until the task ends or needs room for another. */
#define READER_HOLDS 4
struct hold {
	uint32_t shard;
	struct dsstore *store;
	const void *map;
	uint64_t first; /* its first global index */
	struct dsstore_txn *txn;
};
struct reader {
	struct hold h[READER_HOLDS];
	unsigned n;        /* holds in use (remote) */
	struct hold *cur;  /* the one being read */
	struct hold local; /* a local dataset's store */
	uint64_t index;    /* the sample being read, in cur's store's numbering */
};

static void hold_drop(struct stream *s, struct reader *r, unsigned i)
{
	dsstore_txn_end(r->h[i].txn);
	shard_set_put(s->ds->shards, r->h[i].shard);
	r->h[i] = r->h[--r->n];
}

static void reader_end(struct stream *s, struct reader *r)
{
	while (r->n)
		hold_drop(s, r, 0);
	dsstore_txn_end(r->local.txn);
	r->local.txn = NULL;
	r->cur = NULL;
}

/* Positive results of run_sample, apart from FEATURES_SKIPPED (1),
 * STREAM_IO_FAULT (2) and WAVE_SOURCE_GONE (3). */
#define STREAM_SHARD_BAD 13
#define STREAM_FETCH_FAILED 14

/* The file r read last, as a log line names it. */
static const char *reader_file(const struct stream *s, const struct reader *r, char *buf,
			       size_t len)
{
	if (!s->ds->shards || !r->cur)
		return "its data.mdb";
	snprintf(buf, len, "its cached shard %s", s->ds->man.shards[r->cur->shard].name);
	return buf;
}

/* Point r at the store holding index: for a remote dataset, its shard,
 * waited for if the cache has not got it yet (the wait is counted as the
 * read stage's). 0; STREAM_SHARD_BAD when the shard disagrees with its
 * manifest; STREAM_FETCH_FAILED when it cannot be fetched (err says why,
 * naming the object). */
static int reader_seek(struct stream *s, struct reader *r, uint64_t index, char *err, size_t errlen)
{
	struct dataset *d = s->ds;
	if (!d->shards) {
		r->local.store = d->store;
		r->local.map = d->map;
		r->cur = &r->local;
		r->index = index;
		return 0;
	}
	uint32_t shard = (uint32_t)manifest_find(&d->man, index);
	unsigned i = 0;
	while (i < r->n && r->h[i].shard != shard)
		i++;
	if (i == r->n) {
		struct hold h = { .shard = shard, .first = d->man.shards[shard].first };
		size_t len;
		if (r->n == READER_HOLDS)
			hold_drop(s, r, 0);
		int rc = shard_set_try(d->shards, shard, &h.store, &h.map, &len);
		if (rc) {
			/* Waiting: let go of the others first (see shard_set_try). */
			while (r->n)
				hold_drop(s, r, 0);
			rc = shard_set_get(d->shards, shard, &h.store, &h.map, &len, NULL, err,
					   errlen);
		}
		if (rc == FEEDER_ECORRUPT)
			return STREAM_SHARD_BAD;
		if (rc)
			return STREAM_FETCH_FAILED;
		i = r->n++;
		r->h[i] = h;
	}
	r->cur = &r->h[i];
	r->index = index - r->cur->first;
	return 0;
}

/* Fetch sample index of the stream's dataset: its header into smp and its
 * payload into scratch.buf, and the copy's CRC-32C into *crc (taken while
 * copying: one pass), beginning the hold's read transaction if there is
 * none. Returns 0, a negative code with a sentence, STREAM_SHARD_BAD or
 * STREAM_FETCH_FAILED (reader_seek), or STREAM_IO_FAULT when the mapping
 * faulted (then the transaction is ended and NULL, and *fault_off says
 * where). A fault inside the transaction's begin loses nothing: a
 * transaction per worker was reserved (dsstore_txn_reserve) and the hold
 * holds it before LMDB reads the map. */
#define STREAM_IO_FAULT 2
static int fetch(struct stream *s, struct reader *r, uint64_t index, struct dsformat_sample *smp,
		 uint32_t *crc, uint64_t *fault_off, char *err, size_t errlen)
{
	int rc = reader_seek(s, r, index, err, errlen);
	if (rc)
		return rc;
	struct hold *h = r->cur;
	sigjmp_buf env;
	if (sigsetjmp(env, 0) == 0) {
		const uint8_t *payload;
		mapguard_arm(&env);
		if (!h->txn)
			rc = dsstore_txn_begin(h->store, &h->txn, err, errlen);
		if (rc == 0)
			rc = dsstore_get_sample(h->txn, r->index, smp, &payload, err, errlen);
		if (rc == 0 && smp->payload_len > scratch.cap) {
			size_t cap = smp->payload_len < 65536 ? 65536 : (size_t)smp->payload_len;
			uint8_t *nb = realloc(scratch.buf, cap);
			if (nb) {
				scratch.buf = nb;
				scratch.cap = cap;
			} else {
				rc = status_fail(err, errlen, -ENOMEM,
						 "out of memory for a record of %u bytes",
						 smp->payload_len);
			}
		}
		if (rc == 0)
			*crc = crc32c_copy(0, scratch.buf, payload, smp->payload_len);
		mapguard_disarm();
		return rc;
	}
	/* The mapping faulted: the lookup was abandoned halfway, so its
	 * transaction is not trusted any more (a read-only one owns no lock). */
	if (h->txn) {
		dsstore_txn_end(h->txn);
		h->txn = NULL;
	}
	*fault_off = (uint64_t)((const uint8_t *)mapguard_fault_addr() - (const uint8_t *)h->map);
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

/* struct wave_source over a noise or RIR dataset (ctx: struct
 * stream_source): the record's header is checked on every read, its
 * payload's CRC the first time this stream reads it (verified[]), and only
 * the samples asked for are read, under the SIGBUS guard like fetch. */
static int source_record(const struct stream_source *src, struct dsstore_txn **txn, uint64_t index,
			 struct dsformat_sample *smp, const uint8_t **payload, char *err,
			 size_t errlen)
{
	const struct dataset *d = src->d;
	int rc = dsstore_txn_begin(d->store, txn, err, errlen);
	if (rc == 0)
		rc = dsstore_get_sample(*txn, index, smp, payload, err, errlen);
	if (rc == 0)
		rc = dsformat_sample_check(&d->hdr, smp, err, errlen);
	if (rc == 0 &&
	    atomic_load_explicit(&src->verified[index], memory_order_relaxed) == SOURCE_UNSEEN) {
		rc = dsformat_sample_verify(smp, *payload, err, errlen);
		if (rc == 0)
			atomic_store_explicit(&src->verified[index], SOURCE_OK,
					      memory_order_relaxed);
	}
	return rc;
}

/* Reads the record under the guard. A record that cannot be used is
 * WAVE_RECORD_BAD (logged the first time this stream meets it: the chunks
 * that draw it go without that augmentation, and the sample being made is
 * not to blame); a dataset that is gone, a negative code whose sentence
 * names it. */
static int source_guarded(struct stream_source *src, uint64_t index, size_t offset, size_t n,
			  float *out, size_t *len, char *err, size_t errlen)
{
	struct dataset *d = src->d;
	struct dsstore_txn *volatile txn = NULL;
	sigjmp_buf env;
	volatile int rc = 0;
	if (dataset_gone(d))
		return status_fail(err, errlen, d->gone_code ? d->gone_code : FEEDER_ENODATASET,
				   "%s dataset: %s", src->role, d->gone_msg);
	if (atomic_load_explicit(&src->verified[index], memory_order_relaxed) == SOURCE_BAD)
		return WAVE_RECORD_BAD;
	if (sigsetjmp(env, 0) == 0) {
		struct dsstore_txn *t = NULL;
		struct dsformat_sample smp;
		const uint8_t *payload;
		mapguard_arm(&env);
		rc = source_record(src, &t, index, &smp, &payload, err, errlen);
		txn = t;
		if (rc == 0 && len)
			*len = smp.frames;
		if (rc == 0 && out) {
			size_t m = smp.frames;
			if (offset >= m)
				rc = status_fail(err, errlen, FEEDER_EINVAL,
						 "offset %zu of %zu samples", offset, m);
			else
				pcm_s16_read(payload, m, offset, n, out);
		}
		mapguard_disarm();
	} else {
		txn = NULL; /* abandoned halfway: not trusted (a read-only one owns no lock) */
		rc = status_fail(err, errlen, -EIO, "I/O error (SIGBUS)");
	}
	if (txn)
		dsstore_txn_end(txn);
	if (rc == 0)
		return 0;
	if (dataset_gone(d))
		return status_fail(err, errlen, d->gone_code ? d->gone_code : FEEDER_ENODATASET,
				   "%s dataset: %s", src->role, d->gone_msg);
	if (atomic_exchange_explicit(&src->verified[index], SOURCE_BAD, memory_order_relaxed) !=
	    SOURCE_BAD)
		log_warn("stream %u: %s dataset '%s', record %llu cannot be used (%s): chunks that "
			 "draw it go without it",
			 src->stream_id, src->role, d->name, (unsigned long long)index, err);
	return WAVE_RECORD_BAD;
}

static int source_length(void *ctx, uint64_t index, size_t *n, char *err, size_t errlen)
{
	return source_guarded(ctx, index, 0, 0, NULL, n, err, errlen);
}

static int source_read(void *ctx, uint64_t index, size_t offset, size_t n, float *out, char *err,
		       size_t errlen)
{
	return source_guarded(ctx, index, offset, n, out, NULL, err, errlen);
}

/* The noise dataset's records by category: its classes named as
 * wave_category says, read under the SIGBUS guard. */
static int index_noise(struct stream *s, struct dataset *d, char *err, size_t errlen)
{
	int64_t cat_of[WAVE_CATEGORIES];
	uint64_t n = d->hdr.samples;
	struct dsstore_txn *volatile txn = NULL;
	sigjmp_buf env;
	volatile int rc = 0, found = 0;
	for (int c = 0; c < WAVE_CATEGORIES; c++) {
		s->wave.cat[c] = malloc((n ? n : 1) * sizeof(uint64_t));
		if (!s->wave.cat[c])
			return status_fail(err, errlen, -ENOMEM,
					   "out of memory indexing dataset '%s'", d->name);
		cat_of[c] = -1;
	}
	if (sigsetjmp(env, 0) == 0) {
		mapguard_arm(&env);
		struct dsstore_txn *t = NULL;
		rc = dsstore_txn_begin(d->store, &t, err, errlen);
		txn = t;
		for (uint32_t k = 0; rc == 0 && k < d->hdr.classes; k++) {
			const char *name;
			size_t len;
			if (dsstore_get_label(txn, k, &name, &len) != 0)
				continue;
			int c = wave_category(name, len);
			if (c >= 0)
				cat_of[c] = k, found++;
		}
		for (uint64_t i = 0; rc == 0 && found && i < n; i++) {
			struct dsformat_sample smp;
			const uint8_t *payload;
			if (dsstore_get_sample(txn, i, &smp, &payload, err, errlen) != 0)
				continue; /* a damaged record is never drawn */
			for (int c = 0; c < WAVE_CATEGORIES; c++)
				if (cat_of[c] == (int64_t)smp.label)
					s->wave.cat[c][s->wave.ncat[c]++] = i;
		}
		mapguard_disarm();
	} else {
		txn = NULL;
		rc = status_fail(err, errlen, -EIO, "I/O error (SIGBUS) indexing dataset '%s'",
				 d->name);
	}
	if (txn)
		dsstore_txn_end(txn);
	if (rc)
		return rc;
	if (s->wave.ncat[WAVE_NOISE] + s->wave.ncat[WAVE_MUSIC] + s->wave.ncat[WAVE_BABBLE] == 0)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"noise dataset '%s' has no records in a class named noise, music or "
			"speech (MUSAN's layout)",
			d->name);
	return 0;
}

int stream_sources_open(struct stream *s, struct dataset *noise, struct dataset *rir, char *err,
			size_t errlen)
{
	struct dataset *ds[2] = { noise, rir };
	const char *what[2] = { "wave.noise", "wave.rir" };
	for (int i = 0; i < 2; i++) {
		struct dataset *d = ds[i];
		if (!d)
			continue;
		if (d->hdr.kind != DSFORMAT_KIND_WAVE || d->hdr.rate != s->ds->hdr.rate)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "%s dataset '%s' holds %s%s, not waveforms at %u Hz",
					   what[i], d->name, dsformat_kind_name(d->hdr.kind),
					   d->hdr.kind == DSFORMAT_KIND_WAVE ? " at another rate"
									     : "",
					   s->ds->hdr.rate);
		if (d->hdr.samples == 0)
			return status_fail(err, errlen, FEEDER_EINVAL, "%s dataset '%s' is empty",
					   what[i], d->name);
		if (!d->store)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "%s dataset '%s' is remote: noise and impulse response "
					   "datasets are read at random and must be local",
					   what[i], d->name);
		struct stream_source *src = &s->sources[i];
		src->verified = calloc(d->hdr.samples, sizeof(*src->verified));
		if (!src->verified)
			return status_fail(err, errlen, -ENOMEM, "out of memory for dataset '%s'",
					   d->name);
		dataset_ref(d);
		src->d = d;
		src->role = what[i];
		src->stream_id = s->id;
		struct wave_source *w = i ? &s->wave.rir : &s->wave.noise;
		*w = (struct wave_source){ .length = source_length,
					   .read = source_read,
					   .ctx = src,
					   .count = d->hdr.samples,
					   .key = detrand_mix((uint64_t)d->ino ^
							      ((uint64_t)d->mtime.tv_nsec << 20) ^
							      (uint64_t)d->mtime.tv_sec) };
	}
	return noise ? index_noise(s, noise, err, errlen) : 0;
}

/* Decode sample index into out; 0, FEATURES_SKIPPED, STREAM_IO_FAULT or a
 * negative code. */
static int run_sample(struct stream *s, struct reader *rd, struct jpeg_worker *jw,
		      struct gpu_slot *gs, uint32_t pos_in_batch, uint64_t epoch, uint64_t index,
		      void *out, int32_t *label, uint64_t *fault_off, double *stage_s, char *err,
		      size_t errlen)
{
	struct dsformat_sample smp;
	int32_t wave_label = 0;
	double t0 = mono_s();
	uint32_t crc = 0;
	int rc = fetch(s, rd, index, &smp, &crc, fault_off, err, errlen);
	const uint8_t *payload = scratch.buf;
	if (rc == 0)
		rc = dsformat_sample_crc_check(&smp, crc, err, errlen);
	double t1 = mono_s();
	stage_s[FEEDER_STAGE_READ] += t1 - t0;
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
		rc = jpeg_pipeline_run(jw, &s->opts, payload, smp.payload_len, key, out, err,
				       errlen);
	else if (s->opts.pipeline == FEEDER_PIPE_WAVE)
		rc = wave_pipeline_run(&s->opts, &s->wave, &smp, payload, key, s->ds->hdr.classes,
				       out, &wave_label, err, errlen);
	else
		rc = features_pipeline_run(&s->opts, &smp, payload, key, out, err, errlen);
	double spent = mono_s() - t1, decode_s = 0, transform_s = 0;
	if (jw)
		jpeg_worker_take_times(jw, &decode_s, &transform_s);
	if (s->opts.pipeline != FEEDER_PIPE_JPEG) {
		stage_s[FEEDER_STAGE_FEATURES] += spent;
	} else {
		/* the rest of the time (resampling, or staging for the GPU) */
		stage_s[FEEDER_STAGE_DECODE] += decode_s;
		stage_s[FEEDER_STAGE_TRANSFORM] += spent > decode_s ? spent - decode_s : 0;
	}
	if (rc == 0)
		*label = s->opts.pipeline == FEEDER_PIPE_WAVE ? wave_label : (int32_t)smp.label;
	return rc;
}

/* The context the task's batch borrowed, made now if no batch had it
 * before (pinned and device memory: on this worker, not on the event loop);
 * the first also page-locks a host ring for the copies back. Workers of
 * one batch share the context, so they make it under the stream's
 * gpu_lock. 0, or the reason in err. */
static int gpu_context(struct stream *s, const struct slot *sl, struct gpu_slot **out, char *err,
		       size_t errlen)
{
	struct stream_gctx *c = &s->gctx[sl->ctx];
	int rc = 0;
	pthread_mutex_lock(&s->gpu_lock);
	if (!c->g) {
		rc = gpu_slot_create(&c->g, s->gpu_device, &s->opts, s->ds->hdr.feat_dim,
				     s->opts.batch, err, errlen);
		if (rc == 0)
			log_debug("stream %u: GPU context %d of %u made", s->id, sl->ctx, s->ngctx);
	}
	if (rc == 0 && s->gpu_registering) {
		char why[200];
		s->gpu_registering = 0;
		if (gpu_pipeline_host_register(s->gpu_device, s->map, s->map_len, why,
					       sizeof(why)) == 0)
			s->registered_device = s->gpu_device;
		else
			log_warn("stream %u: %s; copies go through pageable memory", s->id, why);
	}
	*out = c->g;
	pthread_mutex_unlock(&s->gpu_lock);
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
	char err[256], file[MANIFEST_MAX_NAME + 32];
	struct reader rd = { .n = 0 };
	int rc;
	int32_t *labels = (int32_t *)(sl->base + s->geo.labels_offset);
	uint64_t *indices = (uint64_t *)(sl->base + s->geo.indices_offset);
	char *names = s->geo.names_offset ? (char *)(sl->base + s->geo.names_offset) : NULL;
	uint8_t *tensor = sl->base + s->geo.tensor_offset;
	struct gpu_slot *gs = NULL;
	if (sl->on_gpu && (rc = gpu_context(s, sl, &gs, err, sizeof(err)))) {
		t->fail_code = rc;
		snprintf(t->fail_msg, sizeof(t->fail_msg), "GPU: %.200s", err);
		return;
	}
	double t0 = mono_s();
	if (!gs && sl->seq < s->nslots && t->count)
		populate(tensor + (size_t)t->first * s->geo.sample_bytes,
			 (size_t)t->count * s->geo.sample_bytes);
	/* A device slot is only handed out once its release completed
	 * (SLOT_RELEASING): the client's GPU no longer reads it. */
	for (uint32_t i = t->first; i < t->first + t->count; i++) {
		uint8_t *out = tensor + (size_t)i * s->geo.sample_bytes;
		uint64_t pos = sl->batch * s->opts.batch + i;
		/* The epoch's own share: shorter in a first epoch that starts at
		 * a sample position. */
		uint64_t len = sampler_len(&sl->order);
		uint64_t tries = len < STREAM_MAX_REPLACE_TRIES ? len : STREAM_MAX_REPLACE_TRIES;
		int ok = 0;
		uint64_t faults = 0;
		for (uint64_t k = 0; k < tries; k++) {
			if (dataset_gone(s->ds)) {
				fail_gone(t);
				reader_end(s, &rd);
				return;
			}
			uint64_t index = sampler_at(&sl->order, (pos + k) % len);
			uint64_t fault_off = 0;
			rc = run_sample(s, &rd, jw, gs, i, sl->epoch, index, out, &labels[i],
					&fault_off, t->stage_s, err, sizeof(err));
			if (rc == 0) {
				dataset_note_io_ok(s->ds);
				indices[i] = index;
				if (names)
					fetch_name(rd.cur->txn, rd.index,
						   names + (size_t)i * FEEDER_SAMPLE_NAME_MAX);
				ok = 1;
				break;
			}
			if (rc == WAVE_SOURCE_GONE) {
				/* a noise or RIR dataset removed: the stream cannot go
				 * on as asked; its samples are not to blame */
				t->fail_code = FEEDER_ENODATASET;
				snprintf(t->fail_msg, sizeof(t->fail_msg), "%s", err);
				reader_end(s, &rd);
				return;
			}
			if (rc == STREAM_FETCH_FAILED) {
				/* the store would not give the shard: the samples are
				 * not to blame, and their replacements would wait on it
				 * as well */
				t->fail_code = -EIO;
				snprintf(t->fail_msg, sizeof(t->fail_msg), "dataset '%s': %.170s",
					 s->ds->name, err);
				reader_end(s, &rd);
				return;
			}
			if (rc == FEATURES_SKIPPED) {
				t->skipped++;
			} else {
				t->decode_errors++;
				if (rc == STREAM_IO_FAULT) {
					faults++;
					dataset_note_io_error(
						s->ds, reader_file(s, &rd, file, sizeof(file)),
						fault_off);
					rc = -EIO;
				} else if (rc == STREAM_SHARD_BAD) {
					/* the cache logs the shard once */
					rc = FEEDER_ECORRUPT;
				} else if (dataset_note_corrupt(s->ds, index)) {
					/* Logged once per dataset, by the first stream it
					 * fails in: whether it fails may depend on the
					 * stream's options, so others decide for themselves. */
					log_warn(
						"dataset '%s': sample %llu is unusable in stream %u (%s); %s, "
						"other streams try it themselves, and it is not "
						"logged again",
						s->ds->name, (unsigned long long)index, s->id, err,
						s->opts.on_error == FEEDER_ON_ERROR_FAIL
							? "that stream fails (on_error fail)"
							: "that stream reads the next sample of its "
							  "order in its place");
				}
				if (s->opts.on_error == FEEDER_ON_ERROR_FAIL) {
					t->fail_code = rc;
					status_fail(
						t->fail_msg, sizeof(t->fail_msg), 0,
						"dataset '%s', sample %llu (epoch %llu, batch %llu): %s",
						s->ds->name, (unsigned long long)index,
						(unsigned long long)sl->epoch,
						(unsigned long long)sl->batch, err);
					reader_end(s, &rd);
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
				dataset_retire(
					s->ds, -EIO,
					"dataset '%s' is unreadable: %llu reads in a row failed with "
					"an I/O error (SIGBUS), the last on %s",
					s->ds->name, (unsigned long long)faults,
					reader_file(s, &rd, file, sizeof(file)));
			if (dataset_gone(s->ds)) {
				fail_gone(t);
				break;
			}
			t->fail_code = FEEDER_ECORRUPT;
			status_fail(
				t->fail_msg, sizeof(t->fail_msg), 0,
				"dataset '%s': no usable sample among %llu after position %llu of epoch %llu "
				"(the last: %s)",
				s->ds->name, (unsigned long long)tries, (unsigned long long)pos,
				(unsigned long long)sl->epoch, err);
			break;
		}
	}
	t->run_s = mono_s() - t0;
	reader_end(s, &rd);
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
	for (int i = 0; i < FEEDER_STAGES; i++)
		s->stage_s[i] += t->stage_s[i];
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
	struct gpu_slot *gs = s->gctx[sl->ctx].g;
	/* A device ring's slot takes the batch straight from the kernel. */
	void *dev = s->dring ? gpu_ring_slot(s->dring, t->slot) : NULL;
	void *host = s->dring ? NULL : sl->base + s->geo.tensor_offset;
	int rc = gpu_slot_run(gs, sl->count, dev, host, err, sizeof(err));
	if (rc == 0 && s->dring)
		rc = gpu_ring_mark_ready(s->dring, t->slot, NULL, err, sizeof(err));
	/* Empty for the next batch that borrows it (here, not under the pool
	 * lock). */
	if (rc == 0)
		rc = gpu_slot_begin(gs, err, sizeof(err));
	t->gpu_s = mono_s() - t0;
	if (rc) {
		t->fail_code = rc;
		snprintf(t->fail_msg, sizeof(t->fail_msg), "GPU batch of stream %u failed: %.200s",
			 s->id, err);
	}
}

int stream_submit_finish(struct stream_task *t)
{
	struct stream *s = t->s;
	struct slot *sl = &s->slots[t->slot];
	s->inflight--;
	s->stage_s[FEEDER_STAGE_GPU] += t->gpu_s;
	s->gctx[sl->ctx].busy = 0;
	sl->ctx = -1;
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
