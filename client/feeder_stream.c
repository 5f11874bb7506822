/* feeder_stream.c — libfeeder's streams: asking for one, mapping and checking its
 * ring, handing out batches in order and taking them back, and reopening a
 * stream on a restarted daemon at the exact batch (see feeder.h). */
#include "connection.h"

#include "feeder_cuda.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void ring_unmap(uint8_t *ring, uint64_t size, int fd, int pinned)
{
	if (pinned)
		fcuda_host_unregister(ring);
	if (ring)
		munmap(ring, size);
	if (fd >= 0)
		close(fd);
}

/* The last batch of an old ring was released (or none was held when its
 * connection was lost): let go of its memory and descriptors, keeping only
 * the address range (see struct old_ring). The device ring closes first:
 * fcuda_ring_close lets the copies queued from it finish. */
static void old_ring_retire(struct old_ring *o)
{
	fcuda_ring_close(o->dev);
	o->dev = NULL;
	if (o->pinned)
		fcuda_host_unregister(o->ring);
	o->pinned = 0;
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->ring &&
	    mmap(o->ring, o->size, PROT_READ,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED) {
		munmap(o->ring, o->size);
		o->ring = NULL;
	}
	free(o->state);
	o->state = NULL;
	o->held = 0;
}

void stream_free(struct feeder_stream *s)
{
	struct feeder *f = s->f;
	for (struct feeder_stream **pp = &f->streams; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	fcuda_ring_close(s->dev);
	ring_unmap(s->ring, s->geo.ring_size, s->fd, s->pinned);
	while (s->old) {
		struct old_ring *o = s->old;
		s->old = o->next;
		old_ring_retire(o);
		if (o->ring)
			munmap(o->ring, o->size);
		free(o);
	}
	free(s->queue);
	free(s->state);
	free(s);
}

/* ---- Streams ------------------------------------------------------------ */

void feeder_stream_opts_init(struct feeder_stream_opts *o)
{
	proto_opts_default(o);
}

int feeder_stream_opts_set_dataset(struct feeder_stream_opts *o, const char *name)
{
	char err[PROTO_TEXT_MAX];
	if (!name)
		return FEEDER_EBADNAME;
	int rc = proto_name_check(name, err, sizeof err);
	if (rc)
		return rc;
	memset(o->dataset, 0, sizeof o->dataset);
	memcpy(o->dataset, name, strlen(name));
	return 0;
}

/* Map the ring that came with STREAM_OPENED and check that it is what the
 * message describes, so that no later access can fault. */
static int stream_map(struct feeder *f, struct feeder_stream *s)
{
	const struct proto_stream_opened *g = &s->geo;
	struct stat st;
	if (fstat(s->fd, &st) != 0)
		return status_fail(f->err, sizeof f->err, -errno, "ring of stream %u: fstat: %s",
				   g->stream, strerror(errno));
	if (st.st_size < 0 || (uint64_t)st.st_size < g->ring_size || g->ring_size > SIZE_MAX)
		return status_fail(
			f->err, sizeof f->err, FEEDER_EPROTO,
			"ring of stream %u is %lld bytes, smaller than the %llu announced",
			g->stream, (long long)st.st_size, (unsigned long long)g->ring_size);
	/* A ring that could shrink under us would turn reads into SIGBUS. */
	int seals = fcntl(s->fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return status_fail(f->err, sizeof f->err, FEEDER_EPROTO,
				   "ring of stream %u is not sealed against shrinking", g->stream);
	void *p = mmap(NULL, g->ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (p == MAP_FAILED && (errno == EACCES || errno == EPERM)) {
		p = mmap(NULL, g->ring_size, PROT_READ, MAP_SHARED, s->fd, 0);
		s->readonly = 1;
	}
	if (p == MAP_FAILED)
		return status_fail(f->err, sizeof f->err, -errno,
				   "mapping the ring of stream %u: %s", g->stream, strerror(errno));
	s->ring = p;
	const struct proto_ring_header *h = p;
	if (h->magic != PROTO_RING_MAGIC || h->version != PROTO_VERSION || h->stream != g->stream ||
	    h->slots != g->slots || h->slot_size != g->slot_size ||
	    h->slot0_offset != PROTO_RING_HEADER || h->tensor_offset != g->tensor_offset ||
	    h->labels_offset != g->labels_offset || h->tensor_bytes != g->tensor_bytes ||
	    h->indices_offset != g->indices_offset || h->names_offset != g->names_offset)
		return status_fail(f->err, sizeof f->err, FEEDER_EPROTO,
				   "ring header of stream %u disagrees with STREAM_OPENED",
				   g->stream);
	if (g->memory != FEEDER_MEMORY_DEVICE)
		return 0;
	/* The decoder checked that the table lies inside the ring. */
	const struct proto_device_table *t =
		(const struct proto_device_table *)(s->ring + g->device_table);
	if (t->magic != PROTO_DEVICE_MAGIC || t->tensor_stride < g->tensor_bytes)
		return status_fail(f->err, sizeof f->err, FEEDER_EPROTO,
				   "device table of stream %u is malformed", g->stream);
	void *base = NULL;
	int rc = fcuda_ring_open(
		t, (const struct proto_device_slot *)((const uint8_t *)t + PROTO_DEVICE_TABLE_HEAD),
		g->slots, &base, &s->dev_ordinal, &s->dev, f->err, sizeof f->err);
	if (rc)
		return rc;
	s->dev_base = base;
	s->dev_stride = t->tensor_stride;
	return 0;
}

/* Send OPEN_STREAM with options o and wait until deadline for its answer.
 * On success the geometry is in *g and the ring's descriptor in *fd. A
 * refusal returns the daemon's code with its sentence in f->err and leaves
 * f usable. */
static int ask_open(struct feeder *f, const struct feeder_stream_opts *o, int64_t deadline,
		    struct proto_stream_opened *g, int *ring_fd)
{
	*ring_fd = -1;
	struct proto_msg m = { .type = PROTO_OPEN_STREAM };
	uint32_t tag = f->next_tag++;
	if (f->next_tag == 0)
		f->next_tag = 1;
	m.u.open.tag = tag;
	m.u.open.opts = *o;
	/* Device batches only where this process can open them; otherwise the
	 * daemon serves the host ring (the documented fallback). The test
	 * switch FEEDER_TEST_CLAIM_DEVICE=1 asks anyway, so that a daemon with
	 * an emulated GPU offers a device ring this process cannot open, and
	 * the fallback of feeder_stream_open (host_instead) runs without one. */
	const char *claim = getenv("FEEDER_TEST_CLAIM_DEVICE");
	/* Asked last: the probe initialises CUDA, which a host stream must not
	 * pay for (nor hold a context on every GPU for). */
	if (o->device_batches && !(claim && strcmp(claim, "1") == 0) && !fcuda_device_usable())
		m.u.open.opts.device_batches = 0;
	int rc = conn_send(f, &m);
	if (rc)
		return rc;
	int fd = -1;
	for (;;) {
		rc = conn_recv(f, deadline, &m, &fd);
		if (rc)
			return rc;
		if (m.type == PROTO_STREAM_OPENED && m.u.opened.tag == tag)
			break;
		if (m.type == PROTO_ERROR && !m.u.error.fatal && m.u.error.tag == tag)
			return status_fail(f->err, sizeof f->err, m.u.error.code, "feederd: %s",
					   m.u.error.message);
		if (fd >= 0) { /* an answer to an open that timed out earlier */
			close(fd);
			fd = -1;
		}
		if ((rc = conn_dispatch(f, &m)))
			return rc;
	}
	*g = m.u.opened;
	if (fd < 0)
		return conn_set_dead(f, FEEDER_EPROTO,
				     "STREAM_OPENED arrived without the ring descriptor");
	if (g->batch != o->batch || g->slots != o->slots || conn_find_stream(f, g->stream) ||
	    g->ndim != 4 || g->tensor_bytes % g->batch) {
		close(fd);
		return conn_set_dead(f, FEEDER_EPROTO, "STREAM_OPENED does not match the request");
	}
	*ring_fd = fd;
	return 0;
}

/* Take the ring that ask_open delivered into s (queue, slot states, mapping,
 * CUDA registration when asked for). On failure the daemon is told to close
 * the stream; s is left without a ring. */
static int stream_attach(struct feeder_stream *s, const struct proto_stream_opened *g, int fd)
{
	struct feeder *f = s->f;
	s->fd = fd;
	s->geo = *g;
	s->sample_bytes = g->tensor_bytes / g->batch;
	s->qhead = s->qlen = 0;
	int rc = 0;
	if (!s->queue)
		s->queue = calloc(g->slots, sizeof *s->queue);
	if (!s->state)
		s->state = calloc(g->slots, 1);
	if (!s->queue || !s->state)
		rc = status_fail(f->err, sizeof f->err, -ENOMEM, "out of memory");
	else
		rc = stream_map(f, s);
	if (rc == 0 && s->want_pin) {
		rc = fcuda_host_register(s->ring, (size_t)g->ring_size, s->readonly, f->err,
					 sizeof f->err);
		s->pinned = rc == 0;
	}
	if (rc) {
		/* The daemon has the stream; tell it we will not use it. */
		struct proto_msg c = { .type = PROTO_CLOSE_STREAM };
		c.u.close.stream = g->stream;
		char keep[ERR_MAX];
		snprintf(keep, sizeof keep, "%s", f->err);
		conn_send(f, &c);
		snprintf(f->err, sizeof f->err, "%s", keep);
		ring_unmap(s->ring, g->ring_size, s->fd, 0);
		s->ring = NULL;
		s->fd = -1;
		/* Stream ids start at 1: the daemon's answer to that CLOSE
		 * (STREAM_END) must not end this stream when it is reopened. */
		s->geo.stream = 0;
	}
	return rc;
}

/* The daemon offered a device ring that cannot be opened here (its GPU is
 * not visible to this process, or CUDA IPC failed): stream_attach gave that
 * stream back; ask again for the host ring, as feeder.h promises, and say so
 * once per process on stderr (the trainer asked for device batches and gets
 * host ones: worth knowing, not worth failing). */
static int host_instead(struct feeder_stream *s, struct feeder_stream_opts *p, int64_t deadline,
			struct proto_stream_opened *g)
{
	static int said;
	struct feeder *f = s->f;
	if (!said) {
		said = 1;
		fprintf(stderr,
			"libfeeder: device batches of dataset '%s' are not available in "
			"this process (%s); its batches come through the host ring\n",
			s->opts.dataset, f->err);
	}
	p->device_batches = 0;
	s->opts.device_batches = 0;
	int fd;
	int rc = ask_open(f, p, deadline, g, &fd);
	if (rc == 0)
		rc = stream_attach(s, g, fd);
	return rc;
}

int feeder_stream_open(struct feeder *f, const struct feeder_stream_opts *o, int timeout_ms,
		       struct feeder_stream **out)
{
	*out = NULL;
	/* The daemon drops a connection that sends a name it may not open
	 * (a path escape is hostile); a caller's mistake is refused here so
	 * that, as documented, the connection stays usable. */
	int rc = proto_name_check(o->dataset, f->err, sizeof f->err);
	if (rc)
		return rc;
	int64_t deadline = conn_deadline(timeout_ms);
	struct proto_stream_opened g;
	int fd;
	rc = ask_open(f, o, deadline, &g, &fd);
	if (rc && conn_revive(f, rc) == 0) /* the daemon restarted: ask the new one */
		rc = ask_open(f, o, deadline, &g, &fd);
	if (rc)
		return rc;
	struct feeder_stream *s = calloc(1, sizeof *s);
	if (!s) {
		close(fd);
		return status_fail(f->err, sizeof f->err, -ENOMEM, "out of memory");
	}
	s->f = f;
	s->fd = -1;
	s->opts = *o;
	s->total = g.batches;
	s->next_epoch = o->epoch;
	s->next_batch = o->start_batch;
	s->next = f->streams;
	f->streams = s;
	rc = stream_attach(s, &g, fd);
	if (rc && g.memory == FEEDER_MEMORY_DEVICE && !f->dead) {
		rc = host_instead(s, &s->opts, deadline, &g);
		s->total = g.batches;
	}
	if (rc) {
		stream_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* ---- Surviving a daemon restart (conn_revive drives these) --------------- */

/* The connection is gone: keep the ring while the caller holds batches of
 * it, retire it otherwise. Host batches stay intact in the memfd whatever
 * the daemon does; device batches while the daemon keeps its memory (until
 * its shutdown drain ends, when it stops gracefully; not at all after a
 * crash). */
void stream_detach(struct feeder_stream *s)
{
	uint32_t held = 0;
	for (uint32_t i = 0; s->state && i < s->geo.slots; i++)
		held += s->state[i] == SLOT_HELD;
	struct old_ring *o = calloc(1, sizeof *o);
	uint8_t *state = s->state ? malloc(s->geo.slots) : NULL;
	if (o && state) {
		memcpy(state, s->state, s->geo.slots);
		*o = (struct old_ring){ .next = s->old,
					.ring = s->ring,
					.size = s->geo.ring_size,
					.slots = s->geo.slots,
					.held = held,
					.state = state,
					.fd = s->fd,
					.pinned = s->pinned,
					.dev = s->dev };
		s->old = o;
		if (held == 0)
			old_ring_retire(o);
	} else {
		free(o);
		free(state);
		fcuda_ring_close(s->dev);
		ring_unmap(s->ring, s->geo.ring_size, s->fd, s->pinned);
	}
	s->dev = NULL;
	s->dev_base = NULL;
	s->ring = NULL;
	s->fd = -1;
	s->pinned = 0;
	s->qhead = s->qlen = 0;
	/* Ids are per daemon: the new one may hand this id to another stream
	 * (ids are never 0, so nothing matches until the reopen). */
	s->geo.stream = 0;
	if (s->state)
		memset(s->state, SLOT_DAEMON, s->geo.slots);
}

/* Reopen s on the new connection at the batch after the last one the caller
 * got, so that the batches it sees stay one gap-free, duplicate-free run. */
int stream_reopen(struct feeder_stream *s, int64_t deadline)
{
	struct feeder *f = s->f;
	uint64_t last_epoch = s->opts.epoch + s->opts.epochs - 1;
	if (s->delivered == s->total || s->next_epoch > last_epoch) {
		s->ended = 1;
		return 0;
	}
	struct feeder_stream_opts p = s->opts;
	p.epoch = s->next_epoch;
	p.start_batch = s->next_batch;
	/* Only the first epoch starts at a sample position. */
	p.start_sample = s->next_epoch == s->opts.epoch ? s->opts.start_sample : 0;
	p.epochs = (uint32_t)(last_epoch - s->next_epoch + 1);
	struct proto_stream_opened g;
	int fd;
	int rc = ask_open(f, &p, deadline, &g, &fd);
	if (rc == 0 &&
	    (g.batches != s->total - s->delivered || g.tensor_bytes != s->geo.tensor_bytes ||
	     g.batches_per_epoch != s->geo.batches_per_epoch ||
	     memcmp(g.shape, s->geo.shape, sizeof g.shape) != 0)) {
		struct proto_msg c = { .type = PROTO_CLOSE_STREAM };
		c.u.close.stream = g.stream;
		close(fd);
		conn_send(f, &c);
		rc = status_fail(f->err, sizeof f->err, FEEDER_ESTREAM,
				 "the restarted feederd serves dataset '%s' with another geometry",
				 s->opts.dataset);
	}
	if (rc == 0) {
		rc = stream_attach(s, &g, fd);
		if (rc && g.memory == FEEDER_MEMORY_DEVICE && !f->dead)
			rc = host_instead(s, &p, deadline, &g);
	}
	if (rc && !f->dead) {
		/* Refused by the new daemon (the dataset is gone, ...): this
		 * stream fails, the others go on. */
		s->failed = rc;
		snprintf(s->fail_msg, sizeof s->fail_msg, "reopening after a reconnect: %.200s",
			 f->err);
		return 0;
	}
	return rc;
}

void feeder_stream_info(const struct feeder_stream *s, struct feeder_stream_info *info)
{
	const struct proto_stream_opened *g = &s->geo;
	memset(info, 0, sizeof *info);
	info->id = g->stream;
	info->slots = g->slots;
	info->batch = g->batch;
	info->dtype = g->dtype;
	info->layout = g->layout;
	info->ndim = g->ndim;
	memcpy(info->shape, g->shape, sizeof info->shape);
	info->batches = s->total;
	info->batches_per_epoch = g->batches_per_epoch;
	info->samples = g->samples;
	info->classes = g->classes;
	info->ring = s->ring;
	info->ring_size = (size_t)g->ring_size;
	info->slot_size = (size_t)g->slot_size;
	info->placement = g->placement;
	info->memory = s->dev ? FEEDER_MEMORY_DEVICE : FEEDER_MEMORY_HOST;
	info->device = s->dev ? s->dev_ordinal : -1;
}

static void fill_batch(struct feeder_stream *s, const struct proto_batch_ready *r,
		       struct feeder_batch *b)
{
	const struct proto_stream_opened *g = &s->geo;
	uint8_t *slot = s->ring + PROTO_RING_HEADER + (uint64_t)r->slot * g->slot_size;
	b->data = slot + g->tensor_offset;
	b->bytes = (size_t)(s->sample_bytes * r->samples);
	b->ndim = g->ndim;
	memcpy(b->shape, g->shape, sizeof b->shape);
	b->shape[0] = r->samples;
	b->dtype = g->dtype;
	b->layout = g->layout;
	b->labels = (const int32_t *)(slot + g->labels_offset);
	b->indices = (const uint64_t *)(slot + g->indices_offset);
	b->names = g->names_offset ? (const char *)(slot + g->names_offset) : NULL;
	b->count = r->samples;
	b->epoch = r->epoch;
	b->batch_index = r->batch_index;
	b->replacements = r->replacements;
	b->slot = r->slot;
	b->stream = r->stream;
	b->memory = FEEDER_MEMORY_HOST;
	b->device = -1;
	if (s->dev) {
		b->data = s->dev_base + (uint64_t)r->slot * s->dev_stride;
		b->memory = FEEDER_MEMORY_DEVICE;
		b->device = s->dev_ordinal;
	}
}

int feeder_stream_next(struct feeder_stream *s, int timeout_ms, struct feeder_batch *b)
{
	struct feeder *f = s->f;
	memset(b, 0, sizeof *b);
	int64_t deadline = conn_deadline(timeout_ms);
	uint64_t enter = conn_now_us();
	if (s->last_return_us) {
		s->compute_us += enter - s->last_return_us;
		s->last_return_us = 0;
	}
	for (;;) {
		if (s->qlen) {
			struct proto_batch_ready r = s->queue[s->qhead];
			s->qhead = (s->qhead + 1) % s->geo.slots;
			s->qlen--;
			s->state[r.slot] = SLOT_HELD;
			fill_batch(s, &r, b);
			s->delivered++;
			s->next_epoch = r.epoch;
			s->next_batch = r.batch_index + 1;
			if (s->next_batch >= s->geo.batches_per_epoch) {
				s->next_epoch++;
				s->next_batch = 0;
			}
			s->last_return_us = conn_now_us();
			s->wait_us += s->last_return_us - enter;
			return 0;
		}
		if (s->failed)
			return status_fail(f->err, sizeof f->err, FEEDER_ESTREAM,
					   "stream %u failed in feederd: %s", s->geo.stream,
					   s->fail_msg);
		if (s->ended)
			return status_fail(f->err, sizeof f->err, FEEDER_EEND,
					   "stream %u has delivered all its batches",
					   s->geo.stream);
		struct proto_msg m;
		int rc = conn_recv(f, deadline, &m, NULL);
		if (rc == 0)
			rc = conn_dispatch(f, &m);
		if (rc && (rc = conn_revive(f, rc)))
			return rc;
	}
}

/* Whether b is a batch of s's current ring (else of a ring of a lost
 * connection, or not of s at all). Its labels are in the host ring for
 * either memory kind, so they tell which ring it came from. */
static int in_ring(const uint8_t *ring, uint64_t size, const struct feeder_batch *b)
{
	const uint8_t *l = (const uint8_t *)b->labels;
	return ring && l >= ring && l < ring + size;
}

static int batch_is_current(const struct feeder_stream *s, const struct feeder_batch *b)
{
	return in_ring(s->ring, s->geo.ring_size, b) &&
	       b->memory == (s->dev ? FEEDER_MEMORY_DEVICE : FEEDER_MEMORY_HOST);
}

/* Release a batch of a ring left over from a lost connection: nothing to
 * tell anybody; the ring is retired with its last batch. */
static int release_old(struct feeder_stream *s, struct feeder_batch *b)
{
	struct feeder *f = s->f;
	for (struct old_ring *o = s->old; o; o = o->next) {
		if (!in_ring(o->ring, o->size, b))
			continue;
		if (!o->state || b->slot >= o->slots || o->state[b->slot] != SLOT_HELD)
			break;
		o->state[b->slot] = SLOT_DAEMON;
		if (--o->held == 0)
			old_ring_retire(o);
		memset(b, 0, sizeof *b);
		return 0;
	}
	return status_fail(f->err, sizeof f->err, FEEDER_EINVAL,
			   "batch (stream %u, slot %u) is not held from stream %u", b->stream,
			   b->slot, s->geo.stream);
}

int feeder_batch_wait(struct feeder_stream *s, const struct feeder_batch *b, void *cuda_stream)
{
	if (b->memory != FEEDER_MEMORY_DEVICE)
		return 0;
	struct feeder *f = s->f;
	if (!batch_is_current(s, b) || b->slot >= s->geo.slots || s->state[b->slot] != SLOT_HELD)
		return status_fail(
			f->err, sizeof f->err, FEEDER_EINVAL,
			"batch (stream %u, slot %u) is not a held device batch of stream %u",
			b->stream, b->slot, s->geo.stream);
	return fcuda_ring_wait(s->dev, b->slot, cuda_stream, f->err, sizeof f->err);
}

int feeder_batch_release(struct feeder_stream *s, struct feeder_batch *b)
{
	return feeder_batch_release_on(s, b, NULL);
}

int feeder_batch_release_on(struct feeder_stream *s, struct feeder_batch *b, void *cuda_stream)
{
	struct feeder *f = s->f;
	if (!batch_is_current(s, b))
		return release_old(s, b);
	if (b->stream != s->geo.stream || b->slot >= s->geo.slots || s->state[b->slot] != SLOT_HELD)
		return status_fail(f->err, sizeof f->err, FEEDER_EINVAL,
				   "batch (stream %u, slot %u) is not held from stream %u",
				   b->stream, b->slot, s->geo.stream);
	if (s->dev) {
		int rc = fcuda_ring_release(s->dev, b->slot, cuda_stream, f->err, sizeof f->err);
		if (rc)
			return rc;
	}
	s->state[b->slot] = SLOT_DAEMON;
	struct proto_msg m = { .type = PROTO_RELEASE };
	m.u.release.stream = s->geo.stream;
	m.u.release.slot = b->slot;
	m.u.release.wait_us = s->wait_us;
	m.u.release.compute_us =
		s->compute_us + (s->last_return_us ? conn_now_us() - s->last_return_us : 0);
	memset(b, 0, sizeof *b);
	int rc = conn_send(f, &m);
	/* With reconnecting on, the slot went with the lost connection and the
	 * next feeder_stream_next reconnects: nothing for the caller to do. */
	if (rc && f->reconnect_ms && conn_lost(rc))
		return 0;
	return rc;
}

int feeder_stream_close(struct feeder_stream *s)
{
	if (!s)
		return 0;
	struct feeder *f = s->f;
	int rc = 0;
	/* The daemon frees a device ring once the stream is closed: our copies
	 * from it must be done and our IPC handles closed before we say so
	 * (fcuda_ring_close synchronizes the ring's device first). */
	fcuda_ring_close(s->dev);
	s->dev = NULL;
	s->dev_base = NULL;
	/* A failed stream's ring stays in the daemon until it is closed too. */
	if (!f->dead) {
		struct proto_msg m = { .type = PROTO_CLOSE_STREAM };
		m.u.close.stream = s->geo.stream;
		s->ended = 0;
		s->closing = 1;
		rc = conn_send(f, &m);
		int64_t deadline = conn_deadline(CLOSE_WAIT_MS);
		while (rc == 0 && !s->ended) {
			rc = conn_recv(f, deadline, &m, NULL);
			if (rc == 0)
				rc = conn_dispatch(f, &m);
		}
	}
	stream_free(s);
	return rc;
}

int feeder_stream_pin(struct feeder_stream *s)
{
	struct feeder *f = s->f;
	if (s->pinned)
		return 0;
	int rc = fcuda_host_register(s->ring, (size_t)s->geo.ring_size, s->readonly, f->err,
				     sizeof f->err);
	/* Only a pin that worked is redone on a reopened ring: a caller that
	 * went on without one must not lose its stream to the same refusal
	 * after a reconnect. */
	if (rc == 0)
		s->pinned = s->want_pin = 1;
	return rc;
}
