/* session.c — one client connection: outbound queue, dispatch and request
 * handlers (see session.h). */
#include "session.h"

#include "gpu_slot.h"
#include "listener.h"
#include "log.h"
#include "pool.h"
#include "registry.h"
#include "shard_cache.h"
#include "sockmsg.h"
#include "status.h"
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* A message the client's socket could not take yet. */
struct outmsg {
	struct outmsg *next;
	int fd; /* descriptor to pass with it (owned), or -1 */
	size_t len;
	uint8_t buf[];
};

static double mib(uint64_t b)
{
	return (double)b / (1024.0 * 1024.0);
}

/* ---- sending ---------------------------------------------------------- */

static void set_want_out(struct session *c, int on)
{
	if (c->want_out == on)
		return;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0),
				  .data.ptr = &c->w };
	if (epoll_ctl(c->srv->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0) {
		c->want_out = on;
	} else {
		/* Without EPOLLOUT the queue would never drain: give up on it. */
		log_warn("client %u (pid %d): epoll_ctl: %s; disconnecting", c->id, (int)c->pid,
			 strerror(errno));
		c->dead = 1;
	}
}

static void out_free(struct outmsg *o)
{
	if (o->fd >= 0)
		close(o->fd);
	free(o);
}

void session_flush(struct session *c)
{
	char err[256];
	while (c->out_head && !c->dead) {
		struct outmsg *o = c->out_head;
		int rc = sockmsg_send(c->fd, o->buf, o->len, o->fd, err, sizeof(err));
		if (rc == -EAGAIN)
			break;
		if (rc) {
			if (rc != FEEDER_ECLOSED)
				log_warn("client %u (pid %d): %s; disconnecting", c->id,
					 (int)c->pid, err);
			c->dead = 1;
			break;
		}
		c->out_head = o->next;
		if (!c->out_head)
			c->out_tail = NULL;
		c->out_bytes -= o->len;
		out_free(o);
	}
	if (!c->dead)
		set_want_out(c, c->out_head != NULL);
}

static void drop_out(struct session *c)
{
	while (c->out_head) {
		struct outmsg *o = c->out_head;
		c->out_head = o->next;
		out_free(o);
	}
	c->out_tail = NULL;
	c->out_bytes = 0;
}

/* Messages keep their order: once one had to wait, the rest queue behind it
 * until the client reads; the event loop never blocks on a client. */
void session_send(struct session *c, const struct proto_msg *m, int fd)
{
	char err[256];
	if (c->dead)
		return;
	uint8_t buf[PROTO_MAX_MESSAGE];
	int len = proto_encode(m, buf, sizeof(buf));
	if (len < 0) {
		log_err("client %u: message %s cannot be encoded", c->id, proto_type_name(m->type));
		return;
	}
	if (!c->out_head) {
		int rc = sockmsg_send(c->fd, buf, (size_t)len, fd, err, sizeof(err));
		if (rc == 0)
			return;
		if (rc != -EAGAIN) {
			if (rc != FEEDER_ECLOSED)
				log_warn("client %u (pid %d): %s; disconnecting", c->id,
					 (int)c->pid, err);
			c->dead = 1;
			return;
		}
	}
	/* Replies are small and a reading client takes them at once: a queue
	 * this long means a client that does not read, which must not grow the
	 * daemon (each queued byte is the daemon's memory). */
	if (c->out_bytes + (size_t)len > c->srv->cfg.max_queued) {
		log_warn("client %u (pid %d, uid %u): %zu bytes of replies unread, over max_queued "
			 "(%llu); disconnecting",
			 c->id, (int)c->pid, (unsigned)c->uid, c->out_bytes,
			 (unsigned long long)c->srv->cfg.max_queued);
		c->srv->dropped_clients++;
		c->dead = 1;
		return;
	}
	struct outmsg *o = malloc(sizeof(*o) + (size_t)len);
	int dfd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (!o || (fd >= 0 && dfd < 0)) {
		free(o);
		if (dfd >= 0)
			close(dfd);
		log_warn("client %u (pid %d): cannot queue a message; disconnecting", c->id,
			 (int)c->pid);
		c->dead = 1;
		return;
	}
	o->next = NULL;
	o->fd = dfd;
	o->len = (size_t)len;
	memcpy(o->buf, buf, (size_t)len);
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	c->out_bytes += (size_t)len;
	set_want_out(c, 1);
}

void session_error(struct session *c, int code, uint32_t stream, uint32_t tag, int fatal,
		   const char *text)
{
	struct proto_msg m = { .type = PROTO_ERROR };
	m.u.error.code = code < 0 ? code : FEEDER_EINVAL;
	m.u.error.stream = stream;
	m.u.error.tag = tag;
	m.u.error.fatal = fatal ? 1 : 0;
	snprintf(m.u.error.message, sizeof(m.u.error.message), "%s", text);
	session_send(c, &m, -1);
	if (fatal)
		c->dead = 1;
}

/* ---- streams ---------------------------------------------------------- */

/* Whether the daemon is draining and s's client may still read its device
 * ring: then s outlives its session until the daemon exits. */
static int keep_for_drain(const struct server *srv, const struct stream *s)
{
	return srv->draining && server_now_us() < srv->drain_end_us && stream_device_held(s);
}

/* Take s away from c and the schedule; free it now or once the workers let
 * go of it (or at the daemon's exit, keep_for_drain). */
static void close_stream(struct session *c, struct stream *s)
{
	struct server *srv = c->srv;
	for (size_t i = 0; i < c->nstreams; i++)
		if (c->streams[i] == s) {
			c->streams[i] = c->streams[--c->nstreams];
			break;
		}
	c->mem -= stream_ring_bytes(s);
	pool_lock(srv->pool);
	unsigned inflight = pool_remove(srv->pool, s);
	int keep = keep_for_drain(srv, s);
	pool_unlock(srv->pool);
	log_debug("stream %u closed", stream_id(s));
	if (keep)
		server_stream_keep(srv, s);
	else if (inflight == 0)
		server_stream_gone(srv, s);
	else
		server_stream_zombie(srv, s);
}

static struct stream *find_stream(struct session *c, uint32_t id)
{
	for (size_t i = 0; i < c->nstreams; i++)
		if (stream_id(c->streams[i]) == id)
			return c->streams[i];
	return NULL;
}

unsigned session_service(struct session *c, uint64_t now)
{
	struct server *srv = c->srv;
	unsigned started = 0;
	struct {
		uint32_t id;
		int code;
		char msg[PROTO_TEXT_MAX];
	} failed[8];
	size_t nfailed = 0;
	int more = 0;
	pool_lock(srv->pool);
	for (size_t i = 0; i < c->nstreams && !c->dead; i++) {
		struct stream *s = c->streams[i];
		/* A failed stream keeps its ring (the client may still read held
		 * batches, or copy from a device ring) until CLOSE_STREAM or the
		 * disconnect; it only has to be told. */
		if (nfailed < 8 &&
		    stream_take_failure(s, &failed[nfailed].code, failed[nfailed].msg,
					sizeof(failed[nfailed].msg))) {
			failed[nfailed++].id = stream_id(s);
			continue;
		}
		if (nfailed == 8)
			more = 1;
		if (stream_has_failed(s))
			continue;
		struct proto_msg m = { .type = PROTO_BATCH_READY };
		while (stream_next_ready(s, now, &m.u.ready))
			session_send(c, &m, -1);
		struct proto_msg e = { .type = PROTO_STREAM_END };
		if (stream_take_end(s, &e.u.end))
			session_send(c, &e, -1);
		started += stream_refill(s);
		if (stream_releasing(s))
			srv->releases_pending = 1;
	}
	if (started)
		pool_kick(srv->pool);
	pool_unlock(srv->pool);
	for (size_t i = 0; i < nfailed; i++) {
		log_warn("client %u (pid %d): stream %u fails: %s", c->id, (int)c->pid,
			 failed[i].id, failed[i].msg);
		session_error(c, failed[i].code, failed[i].id, 0, 0, failed[i].msg);
	}
	if (more)
		server_wake(srv);
	return started;
}

/* ---- requests ---------------------------------------------------------- */

static void handle_hello(struct session *c, const struct proto_hello *h)
{
	struct server *srv = c->srv;
	c->hello = 1;
	log_info("client %u: HELLO from '%s' (pid %d, uid %u, gid %u)", c->id, h->agent,
		 (int)c->pid, (unsigned)c->uid, (unsigned)c->gid);
	struct proto_msg m = { .type = PROTO_WELCOME };
	m.u.welcome.session = c->id;
	m.u.welcome.max_streams = srv->cfg.max_streams_per_client;
	m.u.welcome.max_slots =
		srv->cfg.max_slots < FEEDER_MAX_SLOTS ? srv->cfg.max_slots : FEEDER_MAX_SLOTS;
	m.u.welcome.quota = srv->cfg.client_quota;
	snprintf(m.u.welcome.agent, sizeof(m.u.welcome.agent), "feederd %s", FEEDER_VERSION);
	session_send(c, &m, -1);
}

/* 0 when the request may be built: options in range, limits, the dataset
 * (*ds: a reference, to drop), the ring's size; else the code and err. */
static int admit(struct session *c, const struct feeder_stream_opts *o, struct dataset **ds,
		 char *err, size_t errlen)
{
	struct server *srv = c->srv;
	*ds = NULL;
	/* Out-of-range options are a refusal the client can correct, not a
	 * protocol error: the connection stays usable. The one check of a
	 * stream's options: the stream, its workers and the pipelines trust
	 * them after it. */
	int rc = proto_opts_check(o, err, errlen);
	if (rc)
		return rc;
	if (c->nstreams >= srv->cfg.max_streams_per_client)
		return status_fail(err, errlen, FEEDER_EQUOTA,
				   "client already has %zu streams, the limit is %u", c->nstreams,
				   srv->cfg.max_streams_per_client);
	if (o->slots > srv->cfg.max_slots)
		return status_fail(err, errlen, FEEDER_EQUOTA,
				   "stream asks for %u slots, the daemon allows %u", o->slots,
				   srv->cfg.max_slots);
	*ds = registry_get(srv->reg, o->dataset);
	if (!*ds) {
		const char *why = registry_retired(srv->reg, o->dataset);
		if (why)
			return status_fail(err, errlen, FEEDER_ENODATASET, "%s", why);
		return status_fail(err, errlen, FEEDER_ENODATASET,
				   "no dataset named '%s' is served (%zu datasets available)",
				   o->dataset, registry_count(srv->reg));
	}
	if (dataset_gone(*ds))
		return status_fail(err, errlen,
				   (*ds)->gone_code ? (*ds)->gone_code : FEEDER_ENODATASET, "%s",
				   (*ds)->gone_msg);
	/* Check the kind and the size before building anything. */
	if ((rc = stream_check_kind(o, *ds, err, errlen)))
		return rc;
	struct proto_geometry g;
	rc = proto_geometry(o, (*ds)->hdr.feat_dim, srv->page, &g, err, errlen);
	if (rc)
		return rc;
	if (c->mem + g.ring_size > srv->cfg.client_quota)
		return status_fail(
			err, errlen, FEEDER_EQUOTA,
			"stream ring of %.1f MiB would bring this client to %.1f MiB, over "
			"its quota of %.1f MiB",
			mib(g.ring_size), mib(c->mem + g.ring_size), mib(srv->cfg.client_quota));
	if (srv->mem_used + g.ring_size > srv->cfg.memory_limit)
		return status_fail(
			err, errlen, FEEDER_EQUOTA,
			"stream ring of %.1f MiB does not fit: %.1f of the daemon's %.1f MiB "
			"are in use",
			mib(g.ring_size), mib(srv->mem_used), mib(srv->cfg.memory_limit));
	if (o->placement == FEEDER_PLACEMENT_GPU && o->pipeline == FEEDER_PIPE_WAVE)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "placement=gpu: the wave pipeline runs on the CPU only (ask for "
				   "placement=cpu, or auto, which serves it on the CPU)");
	if (o->placement == FEEDER_PLACEMENT_GPU && srv->gpu == -1)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"placement=gpu, but feederd runs without a GPU (start it with --gpu N, "
			"or ask for placement=auto or cpu)");
	return 0;
}

/* The noise and RIR datasets a wave stream's augmentation names. */
static int open_wave_sources(struct server *srv, struct stream *s,
			     const struct feeder_stream_opts *o, char *err, size_t errlen)
{
	const char *names[2] = { o->wave.noise, o->wave.rir },
		   *opt[2] = { "wave.noise", "wave.rir" };
	struct dataset *d[2] = { NULL, NULL };
	int rc = 0;
	for (int i = 0; i < 2 && rc == 0; i++) {
		if (!names[i][0])
			continue;
		d[i] = registry_get(srv->reg, names[i]);
		if (!d[i])
			rc = status_fail(err, errlen, FEEDER_ENODATASET,
					 "%s: no dataset named '%s' is served", opt[i], names[i]);
		else if (dataset_gone(d[i]))
			rc = status_fail(err, errlen, FEEDER_ENODATASET, "%s: %s", opt[i],
					 d[i]->gone_msg);
	}
	if (rc == 0)
		rc = stream_sources_open(s, d[0], d[1], err, errlen);
	for (int i = 0; i < 2; i++)
		if (d[i])
			dataset_unref(d[i]);
	return rc;
}

static void handle_open(struct session *c, const struct proto_open_stream *req)
{
	struct server *srv = c->srv;
	char err[PROTO_TEXT_MAX];
	const struct feeder_stream_opts *o = &req->opts;
	uint32_t tag = req->tag;
	struct dataset *ds = NULL;
	struct stream *s = NULL;
	int rc = srv->draining
			 ? status_fail(err, sizeof(err), FEEDER_ECLOSED, "feederd is shutting down")
			 : admit(c, o, &ds, err, sizeof(err));
	if (rc == 0 && c->nstreams == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 4;
		struct stream **ns = realloc(c->streams, ncap * sizeof(*ns));
		if (ns) {
			c->streams = ns;
			c->cap = ncap;
		} else {
			rc = status_fail(err, sizeof(err), -ENOMEM, "daemon out of memory");
		}
	}
	/* Placement: gpu needs the daemon's GPU; auto without one, or for the
	 * wave pipeline (CPU only), is cpu. Device-resident batches only for
	 * gpu, when the client can take them (emulated in host memory under
	 * FEEDERD_GPU_EMULATE, for tests of the release protocol). */
	int on_gpu = o->placement != FEEDER_PLACEMENT_CPU && o->pipeline != FEEDER_PIPE_WAVE &&
		     srv->gpu != -1;
	struct stream_gpu gpu = { .placement = o->placement,
				  .device = srv->gpu,
				  .device_ring = on_gpu && o->placement == FEEDER_PLACEMENT_GPU &&
						 o->device_batches };
	uint32_t id = srv->next_stream + 1 ? srv->next_stream + 1 : 1;
	if (rc == 0)
		rc = stream_create_placed(&s, id, ds, o, srv->page, pool_workers(srv->pool),
					  on_gpu ? &gpu : NULL, err, sizeof(err));
	if (ds)
		dataset_unref(ds);
	if (rc == 0 && o->pipeline == FEEDER_PIPE_WAVE) {
		rc = open_wave_sources(srv, s, o, err, sizeof(err));
		if (rc) {
			stream_destroy(s);
			s = NULL;
		}
	}
	if (rc) {
		log_info("client %u: OPEN_STREAM of '%s' refused: %s", c->id, o->dataset, err);
		session_error(c, rc, 0, tag, 0, err);
		return;
	}
	srv->next_stream = id;
	struct proto_msg m = { .type = PROTO_STREAM_OPENED };
	stream_describe(s, &m.u.opened);
	m.u.opened.tag = tag;
	int memfd = stream_take_memfd(s);
	session_send(c, &m, memfd);
	close(memfd);
	c->streams[c->nstreams++] = s;
	c->mem += stream_ring_bytes(s);
	srv->mem_used += stream_ring_bytes(s);
	char from[48] = "";
	if (o->start_sample)
		snprintf(from, sizeof from, " of the share after sample %llu",
			 (unsigned long long)o->start_sample);
	char settings[FEEDER_SETTINGS_MAX];
	proto_opts_describe(o, settings, sizeof settings);
	log_info("client %u: stream %u opened: '%s' batch %u, %u slots of %.2f MiB, %llu batches, "
		 "rank %u/%u, seed %llu, epoch %llu+%u from batch %llu%s%s; %s",
		 c->id, id, o->dataset, o->batch, m.u.opened.slots, mib(m.u.opened.slot_size),
		 (unsigned long long)m.u.opened.batches, o->rank, o->world,
		 (unsigned long long)o->seed, (unsigned long long)o->epoch, o->epochs - 1,
		 (unsigned long long)o->start_batch, from, o->shuffle ? "" : ", unshuffled",
		 settings);
	pool_lock(srv->pool);
	/* Fairness is between processes (a trainer's loaders each have their
	 * own connection); a peer the kernel could not name is its own. */
	int arc = pool_add(srv->pool, s, c->pid > 0 ? (uint32_t)c->pid : 0x80000000u | c->id);
	pool_unlock(srv->pool);
	if (arc) {
		session_error(c, -ENOMEM, id, 0, 0, "daemon out of memory");
		close_stream(c, s);
		return;
	}
	session_service(c, server_now_us());
}

static void handle_release(struct session *c, const struct proto_release *r)
{
	struct server *srv = c->srv;
	struct stream *s = find_stream(c, r->stream);
	if (!s) {
		/* The stream may have failed or ended while this was in flight. */
		log_debug("client %u: RELEASE for stream %u, which is gone", c->id, r->stream);
		return;
	}
	char err[256];
	uint64_t now = server_now_us();
	pool_lock(srv->pool);
	int rc = stream_release(s, r->slot, now, err, sizeof(err));
	if (rc == 0)
		stream_note_trainer(s, r->wait_us, r->compute_us, now);
	if (rc == 0 && stream_refill(s))
		pool_kick(srv->pool);
	if (rc == 0 && stream_releasing(s))
		srv->releases_pending = 1;
	pool_unlock(srv->pool);
	if (rc) {
		srv->protocol_errors++;
		log_warn("client %u (pid %d): %s; disconnecting", c->id, (int)c->pid, err);
		session_error(c, rc, r->stream, 0, 1, err);
	}
}

static void handle_close(struct session *c, const struct proto_close_stream *r)
{
	struct stream *s = find_stream(c, r->stream);
	if (!s) {
		/* Not this client's: it cannot close, or learn about, another's. */
		char err[PROTO_TEXT_MAX];
		snprintf(err, sizeof(err),
			 "CLOSE_STREAM of stream %u, which this client does not have", r->stream);
		log_info("client %u (pid %d): %s", c->id, (int)c->pid, err);
		session_error(c, FEEDER_EINVAL, r->stream, 0, 0, err);
		return;
	}
	struct proto_msg m = { .type = PROTO_STREAM_END };
	m.u.end.stream = r->stream;
	m.u.end.reason = 1;
	pool_lock(c->srv->pool);
	stream_totals(s, &m.u.end.batches_sent, NULL, NULL, NULL);
	/* Closing is letting go of every batch: the whole ring goes back. */
	stream_release_all(s);
	pool_unlock(c->srv->pool);
	close_stream(c, s);
	session_send(c, &m, -1);
}

static void status_summary(struct session *c)
{
	struct server *srv = c->srv;
	struct proto_msg m = { .type = PROTO_STATUS_REPLY };
	struct feeder_status *r = &m.u.status_reply;
	r->uptime_ms = (server_now_us() - srv->start_us) / 1000;
	r->clients = srv->nsessions;
	r->workers = pool_workers(srv->pool);
	r->datasets = (uint32_t)registry_count(srv->reg);
	r->memory_used = srv->mem_used;
	r->memory_limit = srv->cfg.memory_limit;
	r->batches = srv->done_batches;
	r->samples = srv->done_samples;
	r->replacements = srv->done_replacements;
	r->decode_errors = srv->done_decode_errors;
	pool_lock(srv->pool);
	for (struct session *s = srv->sessions; s; s = s->next)
		for (size_t i = 0; i < s->nstreams; i++) {
			r->streams++;
			stream_totals(s->streams[i], &r->batches, &r->samples, &r->replacements,
				      &r->decode_errors);
		}
	for (size_t i = 0; i < srv->nzombies; i++)
		stream_totals(srv->zombies[i], &r->batches, &r->samples, NULL, NULL);
	server_stage_seconds(srv, r->stage_s);
	pool_unlock(srv->pool);
	r->protocol_errors = srv->protocol_errors;
	r->samples_per_s = srv->rate;
	r->workers_busy = srv->workers_busy;
	if (srv->cache) {
		struct shard_cache_stats cs;
		shard_cache_stats(srv->cache, &cs);
		r->cache_bytes = cs.bytes;
		r->cache_limit = cs.limit;
		r->cache_peak_bytes = cs.peak_bytes;
		r->cache_hits = cs.hits;
		r->cache_misses = cs.misses;
		r->cache_fetches = cs.fetches;
		r->cache_fetched_bytes = cs.fetched_bytes;
		r->cache_retries = cs.retries;
		r->cache_failures = cs.failures;
		r->cache_wait_s = cs.wait_s;
	}
	session_send(c, &m, -1);
}

static void handle_status(struct session *c, uint32_t what)
{
	struct server *srv = c->srv;
	if (what == PROTO_STATUS_SUMMARY) {
		status_summary(c);
		return;
	}
	struct proto_msg m;
	uint32_t count = 0;
	if (what == PROTO_STATUS_DATASETS) {
		for (size_t i = 0; i < registry_count(srv->reg); i++) {
			const struct dataset *d = registry_at(srv->reg, i);
			memset(&m, 0, sizeof(m));
			m.type = PROTO_DATASET_INFO;
			snprintf(m.u.dataset.name, sizeof(m.u.dataset.name), "%s", d->name);
			m.u.dataset.kind = d->hdr.kind;
			m.u.dataset.classes = d->hdr.classes;
			m.u.dataset.samples = d->hdr.samples;
			m.u.dataset.feat_dim = d->hdr.feat_dim;
			m.u.dataset.streams = atomic_load(&((struct dataset *)d)->streams);
			session_send(c, &m, -1);
			count++;
		}
	} else {
		/* Whose streams a client sees: its own uid's, or everyone's for
		 * root and admin_groups (pids, uids and dataset names of other
		 * users are theirs). */
		uint64_t now = server_now_us();
		pool_lock(srv->pool);
		for (struct session *s = srv->sessions; s; s = s->next) {
			if (!c->admin && s->uid != c->uid)
				continue;
			for (size_t i = 0; i < s->nstreams; i++) {
				memset(&m, 0, sizeof(m));
				m.type = PROTO_STREAM_INFO;
				struct feeder_stream_status *r = &m.u.stream;
				stream_status(s->streams[i], now, r);
				r->session = s->id;
				r->pid = (uint32_t)s->pid;
				r->uid = (uint32_t)s->uid;
				session_send(c, &m, -1);
				count++;
			}
		}
		pool_unlock(srv->pool);
	}
	memset(&m, 0, sizeof(m));
	m.type = PROTO_LIST_END;
	m.u.list_end.count = count;
	session_send(c, &m, -1);
}

static void dispatch(struct session *c, const struct proto_msg *m)
{
	char err[256];
	if (!proto_type_from_client(m->type)) {
		snprintf(err, sizeof(err), "%s is a daemon message, a client cannot send it",
			 proto_type_name(m->type));
		goto bad;
	}
	if (!c->hello && m->type != PROTO_HELLO) {
		snprintf(err, sizeof(err), "%s before HELLO", proto_type_name(m->type));
		goto bad;
	}
	switch (m->type) {
	case PROTO_HELLO:
		if (c->hello) {
			snprintf(err, sizeof(err), "a second HELLO");
			goto bad;
		}
		handle_hello(c, &m->u.hello);
		return;
	case PROTO_OPEN_STREAM:
		handle_open(c, &m->u.open);
		return;
	case PROTO_RELEASE:
		handle_release(c, &m->u.release);
		return;
	case PROTO_CLOSE_STREAM:
		handle_close(c, &m->u.close);
		return;
	case PROTO_STATUS:
		handle_status(c, m->u.status.what);
		return;
	}
	snprintf(err, sizeof(err), "%s is not handled", proto_type_name(m->type));
bad:
	c->srv->protocol_errors++;
	log_warn("client %u (pid %d, uid %u): %s; disconnecting", c->id, (int)c->pid,
		 (unsigned)c->uid, err);
	session_error(c, FEEDER_EPROTO, 0, 0, 1, err);
}

void session_input(struct session *c)
{
	struct server *srv = c->srv;
	size_t cap = srv->cfg.max_message;
	uint8_t buf[PROTO_MAX_MESSAGE + 1];
	/* A bounded number per turn, so one chatty client cannot starve the
	 * others or the completion events. */
	for (int turn = 0; turn < 64 && !c->dead; turn++) {
		char err[256];
		/* sockmsg_recv reports anything longer than cap (MSG_TRUNC), so
		 * max_message itself is the largest message accepted. */
		int n = sockmsg_recv(c->fd, buf, cap, NULL, err, sizeof(err));
		if (n == -EAGAIN)
			return;
		if (n == FEEDER_ECLOSED) {
			c->dead = 1;
			return;
		}
		struct proto_msg m;
		int rc = n < 0 ? n : proto_decode(buf, (size_t)n, &m, err, sizeof(err));
		if (rc) {
			if (rc == FEEDER_EPROTO || rc == FEEDER_EVERSION || rc == FEEDER_EBADNAME)
				srv->protocol_errors++;
			log_warn("client %u (pid %d, uid %u): %s; disconnecting", c->id,
				 (int)c->pid, (unsigned)c->uid, err);
			session_error(c, rc, 0, 0, 1, err);
			return;
		}
		dispatch(c, &m);
	}
}

/* ---- lifetime ---------------------------------------------------------- */

int session_create(struct server *srv, int fd, pid_t pid, uid_t uid, gid_t gid, int admin,
		   uint32_t id, char *err, size_t errlen)
{
	struct session *c = calloc(1, sizeof(*c));
	if (!c)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	*c = (struct session){ .w = { WATCH_SESSION },
			       .srv = srv,
			       .fd = fd,
			       .id = id,
			       .pid = pid,
			       .uid = uid,
			       .gid = gid,
			       .admin = admin,
			       .since_us = server_now_us() };
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = &c->w };
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		int e = errno;
		free(c);
		return status_fail(err, errlen, -e, "epoll_ctl: %s", strerror(e));
	}
	c->next = srv->sessions;
	srv->sessions = c;
	srv->nsessions++;
	return 0;
}

/* Bytes of the ring slots c's client holds, which outlive its streams. */
static uint64_t held_bytes(struct session *c)
{
	uint64_t bytes = 0;
	pool_lock(c->srv->pool);
	for (size_t i = 0; i < c->nstreams; i++)
		bytes += stream_held_bytes(c->streams[i]);
	pool_unlock(c->srv->pool);
	return bytes;
}

/* A client that closes its streams (or releases batches) and hangs up at
 * once leaves those messages unread behind the first reply that could not
 * be sent: take them, so that what it let go of is not charged as held. */
static void take_last_words(struct session *c)
{
	uint8_t buf[PROTO_MAX_MESSAGE + 1];
	for (int i = 0; i < 1024 && c->nstreams; i++) {
		char err[256];
		struct proto_msg m;
		int n = sockmsg_recv(c->fd, buf, c->srv->cfg.max_message, NULL, err, sizeof(err));
		if (n < 0 || proto_decode(buf, (size_t)n, &m, err, sizeof(err)) != 0)
			return;
		struct stream *s = NULL;
		if (m.type == PROTO_CLOSE_STREAM)
			s = find_stream(c, m.u.close.stream);
		else if (m.type == PROTO_RELEASE)
			s = find_stream(c, m.u.release.stream);
		if (!s)
			continue;
		pool_lock(c->srv->pool);
		if (m.type == PROTO_CLOSE_STREAM)
			stream_release_all(s);
		else
			stream_release(s, m.u.release.slot, server_now_us(), err, sizeof(err));
		pool_unlock(c->srv->pool);
		if (m.type == PROTO_CLOSE_STREAM)
			close_stream(c, s);
	}
}

void session_drop(struct session *c)
{
	struct server *srv = c->srv;
	take_last_words(c);
	/* A connection lost while its client holds batches (it reconnects, or
	 * was dropped): those slots stay intact in its mapping, so they stay
	 * charged until it exits; a stopping daemon charges nothing more. */
	if (!srv->stop)
		server_retain(srv, c->pid, held_bytes(c));
	while (c->nstreams)
		close_stream(c, c->streams[c->nstreams - 1]);
	if (epoll_ctl(srv->epfd, EPOLL_CTL_DEL, c->fd, NULL) != 0)
		log_debug("client %u: epoll_ctl DEL: %s", c->id, strerror(errno));
	/* A session dropped for a fatal error may still have unread input
	 * queued (a client that sent more after its bad message): closing at
	 * once would reset the connection and lose the ERROR that says why. */
	listener_linger(srv, c->fd);
	for (struct session **pp = &srv->sessions; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	srv->nsessions--;
	log_info("client %u (pid %d): disconnected", c->id, (int)c->pid);
	drop_out(c);
	free(c->streams);
	free(c);
	/* The session's streams may have held slots other streams wait on
	 * only through memory: let the workers look again. */
	pool_lock(srv->pool);
	pool_kick(srv->pool);
	pool_unlock(srv->pool);
}
