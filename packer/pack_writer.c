/* pack_writer.c — one data.mdb or shard files and a manifest (see
 * pack_writer.h).
 *
 * A shard's CRC-32C is of its final file, so it can only be taken once the
 * shard is closed, by reading the file back. Done in line, that read cost
 * 45 % of a --restart none pack of 3000 images into tmpfs (0.30 s against
 * 0.21 s); a thread of its own takes each closed shard while the pack
 * goes on, and finish waits for it. */
#include "pack_writer.h"

#include "layout.h"

#include "manifest.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pack_writer {
	struct pack_dest *d;
	uint64_t shard_size; /* 0: unsharded */
	size_t initial_map;
	const struct dsformat_header *tmpl;
	const char *const *labels;
	struct dsstore_writer *cur;
	char cur_path[PATH_MAX + 32];
	/* the shard being written: its global first index and what it holds */
	uint64_t first, count, bytes, src_bytes, tiled;
	/* closed shards; done, their CRCs and sizes filled by the CRC thread
	 * under mu (the array may move: grown under mu too) */
	struct manifest_shard *done;
	size_t ndone, cap;
	pthread_t crc_tid;
	int crc_started, crc_stop, crc_rc;
	size_t crc_next; /* the next closed shard to checksum */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char crc_err[600];
};

/* The CRC thread: every closed shard's file, in order, until told to stop
 * with none left. */
static void *crc_thread(void *arg)
{
	struct pack_writer *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->crc_next == w->ndone && !w->crc_stop)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->crc_next == w->ndone)
			break;
		size_t i = w->crc_next;
		pthread_mutex_unlock(&w->mu);
		char name[32], path[PATH_MAX + 32], err[600];
		uint32_t crc = 0;
		uint64_t bytes = 0;
		pack_dest_shard_name((unsigned)i, name, sizeof(name));
		snprintf(path, sizeof(path), "%s/%s", w->d->tmp, name);
		int rc = layout_file_crc(path, &crc, &bytes, err, sizeof(err));
		pthread_mutex_lock(&w->mu);
		if (rc && !w->crc_rc) {
			w->crc_rc = rc;
			snprintf(w->crc_err, sizeof(w->crc_err), "%s", err);
		}
		w->done[i].crc = crc;
		w->done[i].bytes = bytes;
		w->crc_next++;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Let the CRC thread finish what is queued and end; its result. */
static int crc_join(struct pack_writer *w, char *err, size_t errlen)
{
	if (!w->crc_started)
		return 0;
	pthread_mutex_lock(&w->mu);
	w->crc_stop = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->crc_tid, NULL);
	w->crc_started = 0;
	return w->crc_rc ? status_fail(err, errlen, w->crc_rc, "%s", w->crc_err) : 0;
}

static int put_labels(struct pack_writer *w, char *err, size_t errlen)
{
	for (uint32_t k = 0; k < w->tmpl->classes; k++) {
		int rc = dsstore_writer_put_label(w->cur, k, w->labels[k], err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static int open_shard(struct pack_writer *w, char *err, size_t errlen)
{
	if (w->ndone >= MANIFEST_MAX_SHARDS - 1)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "more than %u shards: use a larger --shard-size",
				   MANIFEST_MAX_SHARDS);
	int rc = pack_dest_shard_path(w->d, (unsigned)w->ndone, w->cur_path, sizeof(w->cur_path),
				      err, errlen);
	if (rc)
		return rc;
	w->count = w->bytes = w->src_bytes = w->tiled = 0;
	return dsstore_writer_open_file(w->cur_path, w->initial_map, &w->cur, err, errlen);
}

/* Finish the current shard (labels, its own header), then take its size
 * and CRC-32C for the manifest. */
static int close_shard(struct pack_writer *w, char *err, size_t errlen)
{
	int rc = put_labels(w, err, errlen);
	if (rc)
		return rc;
	struct dsformat_header h = *w->tmpl;
	h.samples = w->count;
	h.source_bytes = w->src_bytes;
	h.tiled = w->tiled;
	rc = dsstore_writer_finish(w->cur, &h, err, errlen);
	w->cur = NULL;
	if (rc)
		return rc;
	if (!w->crc_started) {
		if ((rc = pthread_create(&w->crc_tid, NULL, crc_thread, w)))
			return status_fail(err, errlen, -rc, "cannot start a thread: %s",
					   strerror(rc));
		w->crc_started = 1;
	}
	pthread_mutex_lock(&w->mu);
	if (w->ndone == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		struct manifest_shard *p = realloc(w->done, cap * sizeof(*p));
		if (!p) {
			pthread_mutex_unlock(&w->mu);
			return status_fail(err, errlen, -ENOMEM, "out of memory");
		}
		w->done = p;
		w->cap = cap;
	}
	struct manifest_shard *s = &w->done[w->ndone];
	memset(s, 0, sizeof(*s));
	pack_dest_shard_name((unsigned)w->ndone, s->name, sizeof(s->name));
	s->first = w->first;
	s->count = w->count;
	w->ndone++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	w->first += w->count;
	return 0;
}

int pack_writer_open(struct pack_dest *d, uint64_t shard_size, size_t initial_map,
		     const struct dsformat_header *tmpl, const char *const *labels,
		     struct pack_writer **out, char *err, size_t errlen)
{
	struct pack_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->d = d;
	w->shard_size = shard_size;
	w->initial_map = initial_map;
	w->tmpl = tmpl;
	w->labels = labels;
	int rc = shard_size ? open_shard(w, err, errlen)
			    : dsstore_writer_open(d->tmp, initial_map, &w->cur, err, errlen);
	if (rc) {
		pack_writer_abort(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* Before a record of rec bytes: a new shard if it would take the current
 * one past the size (never for a shard's first record). */
static int make_room(struct pack_writer *w, uint64_t index, uint64_t rec, char *err, size_t errlen)
{
	if (!w->shard_size)
		return 0;
	if (index != w->first + w->count)
		return status_fail(err, errlen, -EINVAL, "sample %llu put out of order",
				   (unsigned long long)index);
	if (!w->count || w->bytes + rec <= w->shard_size)
		return 0;
	int rc = close_shard(w, err, errlen);
	return rc ? rc : open_shard(w, err, errlen);
}

static void counted(struct pack_writer *w, uint64_t rec, uint64_t src_bytes, uint32_t flags)
{
	w->count++;
	w->bytes += rec;
	w->src_bytes += src_bytes;
	w->tiled += (flags & DSFORMAT_FLAG_TILED) != 0;
}

int pack_writer_put_sample(struct pack_writer *w, uint64_t index, const struct dsformat_sample *s,
			   const void *payload, uint64_t src_bytes, char *err, size_t errlen)
{
	uint64_t rec = DSFORMAT_SAMPLE_HDR + (uint64_t)s->payload_len;
	int rc = make_room(w, index, rec, err, errlen);
	if (!rc)
		rc = dsstore_writer_put_sample(w->cur, index - w->first, s, payload, err, errlen);
	if (!rc)
		counted(w, rec, src_bytes, s->flags);
	return rc;
}

int pack_writer_put_sample_filled(struct pack_writer *w, uint64_t index, struct dsformat_sample *s,
				  dsstore_fill_fn fill, void *ctx, uint64_t src_bytes, char *err,
				  size_t errlen)
{
	uint64_t rec = DSFORMAT_SAMPLE_HDR + (uint64_t)s->payload_len;
	int rc = make_room(w, index, rec, err, errlen);
	if (!rc)
		rc = dsstore_writer_put_sample_filled(w->cur, index - w->first, s, fill, ctx, err,
						      errlen);
	if (!rc)
		counted(w, rec, src_bytes, s->flags);
	return rc;
}

int pack_writer_put_record(struct pack_writer *w, uint64_t index, const void *rec, size_t len,
			   uint32_t flags, char *err, size_t errlen)
{
	int rc = make_room(w, index, len, err, errlen);
	if (!rc)
		rc = dsstore_writer_put_record(w->cur, index - w->first, rec, len, err, errlen);
	if (!rc)
		counted(w, len, 0, flags);
	return rc;
}

int pack_writer_put_name(struct pack_writer *w, uint64_t index, const char *name, char *err,
			 size_t errlen)
{
	return dsstore_writer_put_name(w->cur, index - w->first, name, err, errlen);
}

int pack_writer_commit(struct pack_writer *w, char *err, size_t errlen)
{
	return dsstore_writer_commit(w->cur, err, errlen);
}

/* The manifest into tmp/MANIFEST_NAME (synced by pack_dest_commit). */
static int write_manifest(struct pack_writer *w, const struct dsformat_header *h, char *err,
			  size_t errlen)
{
	struct manifest m = { .header = *h, .nshards = w->ndone, .shards = w->done };
	char *text, why[400], path[PATH_MAX + 32];
	size_t len;
	int rc = manifest_encode(&m, &text, &len, why, sizeof(why));
	if (rc)
		return status_fail(err, errlen, rc, "%s: %s", w->d->dest, why);
	snprintf(path, sizeof(path), "%s/%s", w->d->tmp, MANIFEST_NAME);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = status_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
		free(text);
		return rc;
	}
	size_t off = 0;
	while (off < len && !rc) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rc = status_fail(err, errlen, n < 0 ? -errno : -EIO, "%s: %s", path,
					 n < 0 ? strerror(errno) : "short write");
		else
			off += (size_t)n;
	}
	if (close(fd) != 0 && !rc)
		rc = status_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	free(text);
	return rc;
}

int pack_writer_finish(struct pack_writer *w, const struct dsformat_header *h, char *err,
		       size_t errlen)
{
	int rc;
	if (!w->shard_size) {
		rc = put_labels(w, err, errlen);
		if (!rc) {
			rc = dsstore_writer_finish(w->cur, h, err, errlen);
			w->cur = NULL;
		}
		goto out;
	}
	if (w->count == 0 && w->ndone > 0) {
		/* a shard started for a sample that was then skipped */
		dsstore_writer_abort(w->cur);
		w->cur = NULL;
		unlink(w->cur_path);
	} else if ((rc = close_shard(w, err, errlen))) {
		goto out;
	}
	if ((rc = crc_join(w, err, errlen)))
		goto out;
	if (w->first != h->samples) {
		rc = status_fail(err, errlen, -EINVAL, "%llu samples written, the header says %llu",
				 (unsigned long long)w->first, (unsigned long long)h->samples);
		goto out;
	}
	rc = write_manifest(w, h, err, errlen);
out:
	pack_writer_abort(w);
	return rc;
}

void pack_writer_abort(struct pack_writer *w)
{
	if (!w)
		return;
	crc_join(w, NULL, 0);
	dsstore_writer_abort(w->cur);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w->done);
	free(w);
}
