/* server.c — sockets, sessions, dispatch and the epoll loop (see server.h). */
#include "server.h"

#include "gpu_pipeline.h"
#include "gpu_slot.h"
#include "log.h"
#include "mapguard.h"
#include "notify.h"
#include "pool.h"
#include "protocol.h"
#include "registry.h"
#include "sockmsg.h"
#include "status.h"
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* What an epoll event points at: the fixed descriptors, or a session. */
enum watch_kind { WATCH_LISTEN = 1, WATCH_SIGNAL, WATCH_WAKE, WATCH_TIMER, WATCH_SESSION,
		  WATCH_REFUSED };
struct watch {
	int kind;
};

struct session {
	struct watch w;          /* first: epoll data points here */
	struct server *srv;
	int fd;
	uint32_t id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	int hello;
	int dead;                /* drop at the end of this loop turn */
	struct stream **streams;
	size_t nstreams, cap;
	uint64_t mem;            /* ring bytes held */
	struct outmsg *out_head, *out_tail; /* waiting for the socket to drain */
	unsigned nout;
	int want_out;            /* EPOLLOUT is armed */
	struct session *next;
};

/* A message the client's socket could not take yet. */
struct outmsg {
	struct outmsg *next;
	int fd;                  /* descriptor to pass with it (owned), or -1 */
	size_t len;
	uint8_t buf[PROTO_MAX_MESSAGE];
};

/* A connection refused at accept (max_clients, allow lists): its ERROR is
 * sent and the socket half-closed, but the descriptor is kept until the
 * client hangs up. Closing at once would lose the reason: when the client's
 * HELLO is still unread, the kernel resets the connection and the client's
 * next recv fails with ECONNRESET instead of returning the queued ERROR. */
struct refused {
	struct watch w;          /* first: epoll data points here */
	int fd;
	int done;                /* close at the end of this loop turn */
	uint64_t until_us;       /* give up waiting for the hang-up then */
	struct refused *next;
};

/* How long, and how many at once, refused connections are kept; past the
 * cap they are closed at once (the reason may then be lost, never a
 * descriptor). */
#define REFUSED_LINGER_US 2000000
#define REFUSED_MAX 256

/* A client that leaves this many messages unread is not reading at all. */
#define SESSION_MAX_QUEUED 65536

struct server {
	struct config cfg;
	int epfd, listen_fd, sig_fd, wake_fd, timer_fd;
	int bound;               /* we created cfg.socket_path (remove at exit) */
	struct watch w_listen, w_signal, w_wake, w_timer;
	struct registry *reg;
	struct pool *pool;
	uint64_t page;
	struct session *sessions;
	unsigned nsessions;
	uint32_t next_session, next_stream;
	struct stream **zombies; /* closed, waiting for in-flight tasks */
	size_t nzombies, zcap;
	uint64_t mem_used;
	uint64_t start_us, last_tick_us, last_status_us, last_check_us;
	uint64_t watchdog_us;
	int stop;
	/* totals of streams already gone, and counters of the loop */
	uint64_t done_batches, done_samples, done_replacements, done_decode_errors;
	uint64_t protocol_errors;
	double rate;
	struct refused *refused; /* connections refused, waiting for the hang-up */
	unsigned nrefused;
	int gpu;                 /* --gpu: CUDA ordinal, GPU_SLOT_EMULATED, or -1 */
};

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

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
	if (epoll_ctl(c->srv->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->want_out = on;
}

static void out_free(struct outmsg *o)
{
	if (o->fd >= 0)
		close(o->fd);
	free(o);
}

/* Send queued messages in order until the socket is full again. */
static void flush_out(struct session *c)
{
	char err[256];
	while (c->out_head && !c->dead) {
		struct outmsg *o = c->out_head;
		int rc = sockmsg_send(c->fd, o->buf, o->len, o->fd, err, sizeof(err));
		if (rc == -EAGAIN)
			break;
		if (rc) {
			if (rc != FEEDER_ECLOSED)
				log_warn("client %u (pid %d): %s; disconnecting", c->id, (int)c->pid, err);
			c->dead = 1;
			break;
		}
		c->out_head = o->next;
		if (!c->out_head)
			c->out_tail = NULL;
		c->nout--;
		out_free(o);
	}
	set_want_out(c, c->out_head != NULL && !c->dead);
}

static void drop_out(struct session *c)
{
	while (c->out_head) {
		struct outmsg *o = c->out_head;
		c->out_head = o->next;
		out_free(o);
	}
	c->out_tail = NULL;
	c->nout = 0;
}

/* Send m (with descriptor fd, which stays the caller's). Messages keep their
 * order: once one had to wait, the rest queue behind it until the client
 * reads; the event loop never blocks on a client. */
static void send_to(struct session *c, const struct proto_msg *m, int fd)
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
				log_warn("client %u (pid %d): %s; disconnecting", c->id, (int)c->pid, err);
			c->dead = 1;
			return;
		}
	}
	if (c->nout >= SESSION_MAX_QUEUED) {
		log_warn("client %u (pid %d): %u messages unread; disconnecting", c->id, (int)c->pid,
			 c->nout);
		c->dead = 1;
		return;
	}
	struct outmsg *o = malloc(sizeof(*o));
	int dfd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (!o || (fd >= 0 && dfd < 0)) {
		free(o);
		if (dfd >= 0)
			close(dfd);
		log_warn("client %u (pid %d): cannot queue a message; disconnecting", c->id, (int)c->pid);
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
	c->nout++;
	set_want_out(c, 1);
}

static void send_error(struct session *c, int code, uint32_t stream, uint32_t tag, int fatal,
		       const char *text)
{
	struct proto_msg m = { .type = PROTO_ERROR };
	m.u.error.code = code < 0 ? code : FEEDER_EINVAL;
	m.u.error.stream = stream;
	m.u.error.tag = tag;
	m.u.error.fatal = fatal ? 1 : 0;
	snprintf(m.u.error.message, sizeof(m.u.error.message), "%s", text);
	send_to(c, &m, -1);
	if (fatal)
		c->dead = 1;
}

/* ---- streams ---------------------------------------------------------- */

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

static void zombie_add(struct server *srv, struct stream *s)
{
	if (srv->nzombies == srv->zcap) {
		size_t ncap = srv->zcap ? srv->zcap * 2 : 16;
		struct stream **nz = realloc(srv->zombies, ncap * sizeof(*nz));
		if (!nz) {
			/* Cannot track it: leak the ring rather than free it
			 * under a running worker. */
			log_err("stream %u: out of memory while closing; its ring is leaked", s->id);
			return;
		}
		srv->zombies = nz;
		srv->zcap = ncap;
	}
	srv->zombies[srv->nzombies++] = s;
}

static void stream_gone(struct server *srv, struct stream *s)
{
	srv->mem_used -= s->geo.ring_size;
	srv->done_batches += s->batches_sent;
	srv->done_samples += s->samples;
	srv->done_replacements += s->replacements;
	srv->done_decode_errors += s->decode_errors;
	stream_destroy(s);
}

/* Take s away from its session and the schedule; free it now or once the
 * workers let go of it. */
static void close_stream(struct server *srv, struct session *c, struct stream *s)
{
	for (size_t i = 0; i < c->nstreams; i++)
		if (c->streams[i] == s) {
			c->streams[i] = c->streams[--c->nstreams];
			break;
		}
	c->mem -= s->geo.ring_size;
	pool_lock(srv->pool);
	unsigned inflight = pool_remove(srv->pool, s);
	pool_unlock(srv->pool);
	log_debug("stream %u closed (%llu batches sent)", s->id, (unsigned long long)s->batches_sent);
	if (inflight == 0)
		stream_gone(srv, s);
	else
		zombie_add(srv, s);
}

static struct stream *find_stream(struct session *c, uint32_t id)
{
	for (size_t i = 0; i < c->nstreams; i++)
		if (c->streams[i]->id == id)
			return c->streams[i];
	return NULL;
}

/* Send what is ready, end what is finished, refill free slots. Pool lock held. */
static unsigned service_stream(struct session *c, struct stream *s, uint64_t now)
{
	struct proto_msg m = { .type = PROTO_BATCH_READY };
	while (stream_next_ready(s, &m.u.ready)) {
		account(s, now);
		s->held++;
		s->batches_sent++;
		send_to(c, &m, -1);
	}
	if (stream_finished(s) && !s->end_sent) {
		s->end_sent = 1;
		struct proto_msg e = { .type = PROTO_STREAM_END };
		e.u.end.stream = s->id;
		e.u.end.reason = 0;
		e.u.end.batches_sent = s->batches_sent;
		send_to(c, &e, -1);
	}
	return stream_refill(s);
}

static void service_all(struct server *srv)
{
	uint64_t now = now_us();
	struct stream *failed[64];
	struct session *failed_owner[64];
	size_t nfailed = 0;
	unsigned started = 0;
	pool_lock(srv->pool);
	for (struct session *c = srv->sessions; c; c = c->next) {
		for (size_t i = 0; i < c->nstreams; i++) {
			struct stream *s = c->streams[i];
			/* Its dataset was removed, replaced or found unreadable:
			 * end it even if no worker is on it (every slot held). */
			if (!s->fail_code && dataset_gone(s->ds)) {
				s->fail_code = s->ds->gone_code ? s->ds->gone_code : FEEDER_ENODATASET;
				snprintf(s->fail_msg, sizeof(s->fail_msg), "%s", s->ds->gone_msg);
			}
			if (s->fail_code) {
				if (!s->fail_reported && nfailed < 64) {
					s->fail_reported = 1;
					failed[nfailed] = s;
					failed_owner[nfailed++] = c;
				}
				continue;
			}
			started += service_stream(c, s, now);
		}
	}
	if (started)
		pool_kick(srv->pool);
	/* Closed streams whose last task has finished. */
	size_t keep = 0;
	struct stream *drained[64];
	size_t ndrained = 0;
	for (size_t i = 0; i < srv->nzombies; i++) {
		if (srv->zombies[i]->inflight == 0 && ndrained < 64)
			drained[ndrained++] = srv->zombies[i];
		else
			srv->zombies[keep++] = srv->zombies[i];
	}
	srv->nzombies = keep;
	/* More than one turn's worth: come back for the rest. */
	if (nfailed == 64 || ndrained == 64) {
		uint64_t one = 1;
		ssize_t w = write(srv->wake_fd, &one, sizeof(one));
		(void)w;
	}
	pool_unlock(srv->pool);
	for (size_t i = 0; i < ndrained; i++)
		stream_gone(srv, drained[i]);
	for (size_t i = 0; i < nfailed; i++) {
		struct stream *s = failed[i];
		struct session *c = failed_owner[i];
		log_warn("client %u (pid %d): stream %u fails: %s", c->id, (int)c->pid, s->id,
			 s->fail_msg);
		send_error(c, s->fail_code, s->id, 0, 0, s->fail_msg);
		close_stream(srv, c, s);
	}
}

/* ---- requests ---------------------------------------------------------- */

static void handle_hello(struct server *srv, struct session *c, const struct proto_hello *h)
{
	c->hello = 1;
	log_info("client %u: HELLO from '%s' (pid %d, uid %u, gid %u)", c->id, h->agent, (int)c->pid,
		 (unsigned)c->uid, (unsigned)c->gid);
	struct proto_msg m = { .type = PROTO_WELCOME };
	m.u.welcome.session = c->id;
	m.u.welcome.max_streams = srv->cfg.max_streams_per_client;
	m.u.welcome.max_slots = srv->cfg.max_slots < FEEDER_MAX_SLOTS ? srv->cfg.max_slots : FEEDER_MAX_SLOTS;
	m.u.welcome.quota = srv->cfg.client_quota;
	snprintf(m.u.welcome.agent, sizeof(m.u.welcome.agent), "feederd %s", FEEDER_VERSION);
	send_to(c, &m, -1);
}

static void handle_open(struct server *srv, struct session *c, const struct proto_open_stream *req)
{
	char err[PROTO_TEXT_MAX];
	const struct feeder_stream_opts *o = &req->opts;
	uint32_t tag = req->tag;
	/* Out-of-range options are a refusal the client can correct, not a
	 * protocol error: the connection stays usable. */
	if (proto_opts_check(o, err, sizeof(err)) != 0) {
		log_info("client %u: OPEN_STREAM of '%s' refused: %s", c->id, o->dataset, err);
		send_error(c, FEEDER_EINVAL, 0, tag, 0, err);
		return;
	}
	if (c->nstreams >= srv->cfg.max_streams_per_client) {
		snprintf(err, sizeof(err), "client already has %zu streams, the limit is %u",
			 c->nstreams, srv->cfg.max_streams_per_client);
		send_error(c, FEEDER_EQUOTA, 0, tag, 0, err);
		return;
	}
	if (o->slots > srv->cfg.max_slots) {
		snprintf(err, sizeof(err), "stream asks for %u slots, the daemon allows %u", o->slots,
			 srv->cfg.max_slots);
		send_error(c, FEEDER_EQUOTA, 0, tag, 0, err);
		return;
	}
	struct dataset *ds = registry_get(srv->reg, o->dataset);
	if (!ds) {
		const char *why = registry_retired(srv->reg, o->dataset);
		if (why)
			snprintf(err, sizeof(err), "%s", why);
		else
			snprintf(err, sizeof(err), "no dataset named '%s' is served (%zu datasets available)",
				 o->dataset, registry_count(srv->reg));
		send_error(c, FEEDER_ENODATASET, 0, tag, 0, err);
		return;
	}
	if (dataset_gone(ds)) {
		int code = ds->gone_code ? ds->gone_code : FEEDER_ENODATASET;
		snprintf(err, sizeof(err), "%s", ds->gone_msg);
		dataset_unref(ds);
		log_info("client %u: OPEN_STREAM of '%s' refused: %s", c->id, o->dataset, err);
		send_error(c, code, 0, tag, 0, err);
		return;
	}
	/* Check the size before building anything. */
	struct proto_geometry g;
	int rc = proto_geometry(o, ds->hdr.feat_dim, srv->page, &g, err, sizeof(err));
	if (rc == 0 && c->mem + g.ring_size > srv->cfg.client_quota) {
		rc = FEEDER_EQUOTA;
		snprintf(err, sizeof(err),
			 "stream ring of %.1f MiB would bring this client to %.1f MiB, over its quota of %.1f MiB",
			 mib(g.ring_size), mib(c->mem + g.ring_size), mib(srv->cfg.client_quota));
	} else if (rc == 0 && srv->mem_used + g.ring_size > srv->cfg.memory_limit) {
		rc = FEEDER_EQUOTA;
		snprintf(err, sizeof(err),
			 "stream ring of %.1f MiB does not fit: %.1f of the daemon's %.1f MiB are in use",
			 mib(g.ring_size), mib(srv->mem_used), mib(srv->cfg.memory_limit));
	}
	/* Placement: gpu needs the daemon's GPU; auto without one is cpu.
	 * Device-resident batches only for gpu, when the client can take them
	 * and the GPU is real. */
	uint32_t placement = o->placement;
	struct stream_gpu gpu = { .placement = placement, .device = srv->gpu };
	if (rc == 0 && placement == FEEDER_PLACEMENT_GPU && srv->gpu == -1) {
		rc = FEEDER_EINVAL;
		snprintf(err, sizeof(err), "placement=gpu, but feederd runs without a GPU (start it "
			 "with --gpu N, or ask for placement=auto or cpu)");
	}
	gpu.device_ring = placement == FEEDER_PLACEMENT_GPU && o->device_batches &&
			  srv->gpu >= 0;
	struct stream *s = NULL;
	uint32_t id = srv->next_stream + 1 ? srv->next_stream + 1 : 1;
	if (rc == 0)
		rc = stream_create_placed(&s, id, ds, o, srv->page, pool_workers(srv->pool),
					  placement != FEEDER_PLACEMENT_CPU && srv->gpu != -1 ? &gpu : NULL,
					  err, sizeof(err));
	dataset_unref(ds);
	if (rc) {
		log_info("client %u: OPEN_STREAM of '%s' refused: %s", c->id, o->dataset, err);
		send_error(c, rc, 0, tag, 0, err);
		return;
	}
	if (c->nstreams == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 4;
		struct stream **ns = realloc(c->streams, ncap * sizeof(*ns));
		if (!ns) {
			stream_destroy(s);
			send_error(c, -ENOMEM, 0, tag, 0, "daemon out of memory");
			return;
		}
		c->streams = ns;
		c->cap = ncap;
	}
	srv->next_stream = id;
	s->owner = c;
	s->stamp_us = now_us();
	struct proto_msg m = { .type = PROTO_STREAM_OPENED };
	struct proto_stream_opened *r = &m.u.opened;
	r->tag = tag;
	r->stream = s->id;
	r->slots = s->nslots;
	r->batch = o->batch;
	r->slot_size = s->geo.slot_size;
	r->ring_size = s->geo.ring_size;
	r->batches = s->total;
	r->batches_per_epoch = s->per_epoch;
	r->samples = ds->hdr.samples;
	r->classes = ds->hdr.classes;
	r->dtype = o->dtype;
	r->layout = o->layout;
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
	r->ring_size = s->ring_bytes;
	send_to(c, &m, s->memfd);
	close(s->memfd);
	s->memfd = -1;
	c->streams[c->nstreams++] = s;
	c->mem += s->geo.ring_size;
	srv->mem_used += s->geo.ring_size;
	log_info("client %u: stream %u opened: '%s' batch %u, %u slots of %.2f MiB, %llu batches, "
		 "rank %u/%u, seed %llu, epoch %llu+%u from batch %llu",
		 c->id, s->id, o->dataset, o->batch, s->nslots, mib(s->geo.slot_size),
		 (unsigned long long)s->total, o->rank, o->world, (unsigned long long)o->seed,
		 (unsigned long long)o->epoch, o->epochs - 1, (unsigned long long)o->start_batch);
	pool_lock(srv->pool);
	int arc = pool_add(srv->pool, s);
	unsigned started = arc == 0 ? service_stream(c, s, now_us()) : 0;
	if (started)
		pool_kick(srv->pool);
	pool_unlock(srv->pool);
	if (arc) {
		send_error(c, -ENOMEM, s->id, 0, 0, "daemon out of memory");
		close_stream(srv, c, s);
	}
}

static void handle_release(struct server *srv, struct session *c, const struct proto_release *r)
{
	struct stream *s = find_stream(c, r->stream);
	if (!s) {
		/* The stream may have failed or ended while this was in flight. */
		log_debug("client %u: RELEASE for stream %u, which is gone", c->id, r->stream);
		return;
	}
	char err[256];
	pool_lock(srv->pool);
	int rc = stream_release(s, r->slot, err, sizeof(err));
	unsigned started = 0;
	if (rc == 0) {
		account(s, now_us());
		s->held--;
		started = stream_refill(s);
		if (started)
			pool_kick(srv->pool);
	}
	pool_unlock(srv->pool);
	if (rc) {
		srv->protocol_errors++;
		log_warn("client %u (pid %d): %s; disconnecting", c->id, (int)c->pid, err);
		send_error(c, rc, s->id, 0, 1, err);
	}
}

static void handle_close(struct server *srv, struct session *c, const struct proto_close_stream *r)
{
	struct stream *s = find_stream(c, r->stream);
	struct proto_msg m = { .type = PROTO_STREAM_END };
	m.u.end.stream = r->stream;
	m.u.end.reason = 1;
	if (s) {
		m.u.end.batches_sent = s->batches_sent;
		close_stream(srv, c, s);
	}
	send_to(c, &m, -1);
}

static double live_rate(struct server *srv)
{
	double r = 0;
	for (struct session *c = srv->sessions; c; c = c->next)
		for (size_t i = 0; i < c->nstreams; i++)
			r += c->streams[i]->rate;
	return r;
}

static void handle_status(struct server *srv, struct session *c, uint32_t what)
{
	struct proto_msg m;
	uint32_t count = 0;
	if (what == PROTO_STATUS_SUMMARY) {
		memset(&m, 0, sizeof(m));
		m.type = PROTO_STATUS_REPLY;
		struct feeder_status *r = &m.u.status_reply;
		r->uptime_ms = (now_us() - srv->start_us) / 1000;
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
				struct stream *st = s->streams[i];
				r->streams++;
				r->batches += st->batches_sent;
				r->samples += st->samples;
				r->replacements += st->replacements;
				r->decode_errors += st->decode_errors;
			}
		for (size_t i = 0; i < srv->nzombies; i++) {
			r->batches += srv->zombies[i]->batches_sent;
			r->samples += srv->zombies[i]->samples;
		}
		pool_unlock(srv->pool);
		r->protocol_errors = srv->protocol_errors;
		r->samples_per_s = live_rate(srv);
		send_to(c, &m, -1);
		return;
	}
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
			send_to(c, &m, -1);
			count++;
		}
	} else {
		uint64_t now = now_us();
		pool_lock(srv->pool);
		for (struct session *s = srv->sessions; s; s = s->next)
			for (size_t i = 0; i < s->nstreams; i++) {
				struct stream *st = s->streams[i];
				account(st, now);
				memset(&m, 0, sizeof(m));
				m.type = PROTO_STREAM_INFO;
				struct feeder_stream_status *r = &m.u.stream;
				r->stream = st->id;
				r->session = s->id;
				r->pid = (uint32_t)s->pid;
				r->uid = (uint32_t)s->uid;
				snprintf(r->dataset, sizeof(r->dataset), "%s", st->ds->name);
				r->pipeline = st->opts.pipeline;
				r->batch = st->opts.batch;
				r->slots = st->nslots;
				r->ready = st->held;
				uint64_t ep;
				if (st->next_send < st->total) {
					uint64_t first = st->per_epoch - st->opts.start_batch;
					ep = st->next_send < first ? st->opts.epoch
						: st->opts.epoch + 1 + (st->next_send - first) / st->per_epoch;
				} else {
					ep = st->opts.epoch + st->opts.epochs - 1;
				}
				r->epoch = ep;
				r->batches_sent = st->batches_sent;
				r->batches_total = st->total;
				r->samples = st->samples;
				r->replacements = st->replacements;
				r->samples_per_s = st->rate;
				r->client_wait_us = st->client_wait_us;
				r->ring_full_us = st->ring_full_us;
				r->placement = st->opts.placement;
				r->active = (uint32_t)st->active;
				r->memory = st->dring ? FEEDER_MEMORY_DEVICE : FEEDER_MEMORY_HOST;
				r->deciding = (uint32_t)st->deciding;
				r->auto_cpu_ms = st->auto_cpu_ms;
				r->auto_gpu_ms = st->auto_gpu_ms;
				send_to(c, &m, -1);
				count++;
			}
		pool_unlock(srv->pool);
	}
	memset(&m, 0, sizeof(m));
	m.type = PROTO_LIST_END;
	m.u.list_end.count = count;
	send_to(c, &m, -1);
}

static void dispatch(struct server *srv, struct session *c, const struct proto_msg *m)
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
		handle_hello(srv, c, &m->u.hello);
		return;
	case PROTO_OPEN_STREAM:
		handle_open(srv, c, &m->u.open);
		return;
	case PROTO_RELEASE:
		handle_release(srv, c, &m->u.release);
		return;
	case PROTO_CLOSE_STREAM:
		handle_close(srv, c, &m->u.close);
		return;
	case PROTO_STATUS:
		handle_status(srv, c, m->u.status.what);
		return;
	}
	snprintf(err, sizeof(err), "%s is not handled", proto_type_name(m->type));
bad:
	srv->protocol_errors++;
	log_warn("client %u (pid %d, uid %u): %s; disconnecting", c->id, (int)c->pid,
		 (unsigned)c->uid, err);
	send_error(c, FEEDER_EPROTO, 0, 0, 1, err);
}

/* ---- sessions ---------------------------------------------------------- */

static void linger_close(struct server *srv, int fd);

static void drop_session(struct server *srv, struct session *c)
{
	while (c->nstreams)
		close_stream(srv, c, c->streams[c->nstreams - 1]);
	epoll_ctl(srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	/* A session dropped for a fatal error may still have unread input
	 * queued (a client that sent more after its bad message): closing at
	 * once would reset the connection and lose the ERROR that says why. */
	linger_close(srv, c->fd);
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
	/* Streams of the session may have freed slots other streams wait on
	 * only through memory: let the workers look again. */
	pool_lock(srv->pool);
	pool_kick(srv->pool);
	pool_unlock(srv->pool);
}

static void drop_dead(struct server *srv)
{
	for (struct session *c = srv->sessions, *next; c; c = next) {
		next = c->next;
		if (c->dead)
			drop_session(srv, c);
	}
}

/* ---- accepting ---------------------------------------------------------- */

static void refused_input(struct refused *r)
{
	uint8_t buf[PROTO_MAX_MESSAGE];
	for (;;) {
		ssize_t n = recv(r->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			r->done = 1;
		return;
	}
}

/* Close refused connections that hung up or waited long enough (all of
 * them when now is 0). */
static void drop_refused(struct server *srv, uint64_t now)
{
	for (struct refused **p = &srv->refused; *p;) {
		struct refused *r = *p;
		if (r->done || now == 0 || now >= r->until_us) {
			*p = r->next;
			close(r->fd);
			free(r);
			srv->nrefused--;
		} else {
			p = &r->next;
		}
	}
}

/* Half-close fd and keep it until the peer hangs up (or REFUSED_LINGER_US),
 * so that what was sent last (a fatal ERROR) reaches it. */
static void linger_close(struct server *srv, int fd)
{
	shutdown(fd, SHUT_WR);
	struct refused *r = srv->nrefused < REFUSED_MAX ? calloc(1, sizeof(*r)) : NULL;
	if (r) {
		r->w.kind = WATCH_REFUSED;
		r->fd = fd;
		r->until_us = now_us() + REFUSED_LINGER_US;
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = &r->w };
		if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) == 0) {
			r->next = srv->refused;
			srv->refused = r;
			srv->nrefused++;
			return;
		}
		free(r);
	}
	close(fd);
}

/* Send a fatal ERROR to a connection that is not served and let it go. */
static void refuse(struct server *srv, int fd, uint32_t id, int code, const char *text)
{
	struct session tmp = { .fd = fd, .id = id, .srv = srv };
	send_error(&tmp, code, 0, 0, 1, text);
	drop_out(&tmp);
	linger_close(srv, fd);
}

/* Root is always served (it could read the rings anyway); otherwise, when
 * allow_users or allow_groups is set, the peer's uid must be listed or its
 * primary or one of its supplementary groups (SO_PEERGROUPS, the groups the
 * client had when it connected) must be. */
static int peer_allowed(const struct config *cfg, int fd, uid_t uid, gid_t gid)
{
	if (cfg->n_allow_uids == 0 && cfg->n_allow_gids == 0)
		return 1;
	if (uid == 0)
		return 1;
	for (unsigned i = 0; i < cfg->n_allow_uids; i++)
		if (cfg->allow_uids[i] == uid)
			return 1;
	for (unsigned i = 0; i < cfg->n_allow_gids; i++)
		if (cfg->allow_gids[i] == gid)
			return 1;
	if (cfg->n_allow_gids == 0)
		return 0;
	gid_t some[64], *groups = some;
	socklen_t len = sizeof(some);
	int ok = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0;
	if (!ok && errno == ERANGE && (groups = malloc(len)) != NULL)
		ok = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0;
	int allowed = 0;
	for (size_t j = 0; ok && !allowed && j < len / sizeof(gid_t); j++)
		for (unsigned i = 0; i < cfg->n_allow_gids && !allowed; i++)
			allowed = groups[j] == cfg->allow_gids[i];
	if (groups != some)
		free(groups);
	return allowed;
}

static void accept_clients(struct server *srv)
{
	for (;;) {
		int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_warn("accept failed: %s", strerror(errno));
			return;
		}
		/* The kernel's word on who connected; a peer it cannot name
		 * is nobody (uid -1), which no allow list contains. */
		struct ucred cred = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
		socklen_t len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
			cred = (struct ucred){ .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
		struct session tmp = { .fd = fd, .pid = cred.pid, .uid = cred.uid, .gid = cred.gid,
				       .srv = srv };
		uint32_t id = ++srv->next_session;
		tmp.id = id;
		if (!peer_allowed(&srv->cfg, fd, cred.uid, cred.gid)) {
			log_warn("client %u (pid %d, uid %u, gid %u): not in allow_users/allow_groups; refused",
				 id, (int)cred.pid, (unsigned)cred.uid, (unsigned)cred.gid);
			char text[PROTO_TEXT_MAX];
			snprintf(text, sizeof(text),
				 "user %u is not allowed to use feederd (not in allow_users or allow_groups)",
				 (unsigned)cred.uid);
			refuse(srv, fd, id, FEEDER_EDENIED, text);
			continue;
		}
		if (srv->nsessions >= srv->cfg.max_clients) {
			log_warn("client %u (pid %d, uid %u): refused, %u clients is the limit", id,
				 (int)cred.pid, (unsigned)cred.uid, srv->cfg.max_clients);
			char text[PROTO_TEXT_MAX];
			snprintf(text, sizeof(text),
				 "the daemon serves its maximum number of clients (max_clients = %u)",
				 srv->cfg.max_clients);
			refuse(srv, fd, id, FEEDER_EQUOTA, text);
			continue;
		}
		/* Room for many BATCH_READY notices before a slow reader makes
		 * the loop queue them. */
		int sndbuf = 1 << 20;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
		struct session *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		*c = tmp;
		c->w.kind = WATCH_SESSION;
		c->srv = srv;
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = &c->w };
		if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			log_warn("client %u: epoll: %s", id, strerror(errno));
			close(fd);
			free(c);
			continue;
		}
		c->next = srv->sessions;
		srv->sessions = c;
		srv->nsessions++;
		log_info("client %u connected: pid %d, uid %u, gid %u", id, (int)cred.pid,
			 (unsigned)cred.uid, (unsigned)cred.gid);
	}
}

static void session_input(struct server *srv, struct session *c)
{
	size_t cap = srv->cfg.max_message < PROTO_MAX_MESSAGE ? srv->cfg.max_message : PROTO_MAX_MESSAGE;
	if (cap < PROTO_HEADER_SIZE)
		cap = PROTO_HEADER_SIZE;
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
			log_warn("client %u (pid %d, uid %u): %s; disconnecting", c->id, (int)c->pid,
				 (unsigned)c->uid, err);
			send_error(c, rc, 0, 0, 1, err);
			return;
		}
		dispatch(srv, c, &m);
	}
}

/* ---- signals, ticks ------------------------------------------------------ */

static void tick(struct server *srv)
{
	uint64_t now = now_us();
	double dt = (double)(now - srv->last_tick_us) / 1e6;
	srv->last_tick_us = now;
	unsigned streams = 0;
	pool_lock(srv->pool);
	for (struct session *c = srv->sessions; c; c = c->next)
		for (size_t i = 0; i < c->nstreams; i++) {
			struct stream *s = c->streams[i];
			double inst = dt > 0 ? (double)(s->samples - s->last_samples) / dt : 0;
			s->last_samples = s->samples;
			s->rate = s->rate == 0 ? inst : 0.5 * s->rate + 0.5 * inst;
			account(s, now);
			streams++;
		}
	pool_unlock(srv->pool);
	srv->rate = live_rate(srv);
	/* The watchdog may tick faster; the status line needs no more than
	 * one update a second. */
	if (now - srv->last_status_us >= 900000) {
		srv->last_status_us = now;
		notify_status("%u clients, %u streams, %.0f images/s, %.0f MiB of rings",
			      srv->nsessions, streams, srv->rate, mib(srv->mem_used));
	}
	if (srv->watchdog_us)
		notify_watchdog();
	/* Datasets removed or replaced on disk: about once a second. */
	if (now - srv->last_check_us >= 900000) {
		srv->last_check_us = now;
		if (registry_check(srv->reg))
			service_all(srv);
	}
}

static void handle_signal(struct server *srv)
{
	struct signalfd_siginfo si;
	while (read(srv->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			char err[512];
			int rc = registry_rescan(srv->reg, err, sizeof(err));
			if (rc)
				log_err("SIGHUP: rescanning the datasets failed: %s", err);
			else
				log_notice("SIGHUP: %zu datasets served", registry_count(srv->reg));
			/* End the streams of versions that are no longer served. */
			service_all(srv);
		} else {
			log_notice("%s: shutting down", strsignal((int)si.ssi_signo));
			srv->stop = 1;
		}
	}
}

/* ---- setup ------------------------------------------------------------- */

static int bind_socket(struct server *srv, char *err, size_t errlen)
{
	const char *path = srv->cfg.socket_path;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return status_fail(err, errlen, FEEDER_EINVAL, "socket path %s is too long", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return status_fail(err, errlen, -errno, "socket: %s", strerror(errno));
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			close(fd);
			return status_fail(err, errlen, -EEXIST,
					   "socket path %s exists and is not a socket", path);
		}
		/* A socket file left by a daemon that died: reuse the path
		 * unless a daemon still answers there. */
		int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		int live = probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (probe >= 0)
			close(probe);
		if (live) {
			close(fd);
			return status_fail(err, errlen, -EADDRINUSE,
					   "another feederd is serving on %s", path);
		}
		unlink(path);
	}
	/* Bind and listen under a temporary name, then rename into place: a
	 * client that sees the path can connect at once (no window between
	 * bind and listen). */
	struct sockaddr_un tmp = { .sun_family = AF_UNIX };
	int n = snprintf(tmp.sun_path, sizeof(tmp.sun_path), "%s.%d", path, (int)getpid());
	int use_tmp = n > 0 && (size_t)n < sizeof(tmp.sun_path);
	const struct sockaddr_un *at = use_tmp ? &tmp : &sa;
	if (use_tmp)
		unlink(tmp.sun_path);
	mode_t old = umask(0117); /* the socket file is created 0660 */
	int rc = bind(fd, (const struct sockaddr *)at, sizeof(*at));
	umask(old);
	if (rc != 0) {
		int e = errno;
		close(fd);
		return status_fail(err, errlen, -e, "cannot bind %s: %s", at->sun_path, strerror(e));
	}
	/* Mode and group are who may connect at all: a socket that cannot be
	 * given them is not served (a wider one would let others in, a
	 * narrower one lock out the group the operator named). */
	rc = chmod(at->sun_path, 0660);
	if (rc == 0 && srv->cfg.socket_gid != (gid_t)-1)
		rc = chown(at->sun_path, (uid_t)-1, srv->cfg.socket_gid);
	if (rc != 0) {
		int e = errno;
		unlink(at->sun_path);
		close(fd);
		if (srv->cfg.socket_gid != (gid_t)-1)
			return status_fail(err, errlen, -e, "cannot make %s mode 0660, group %s: %s",
					   path, srv->cfg.socket_group, strerror(e));
		return status_fail(err, errlen, -e, "cannot make %s mode 0660: %s", path, strerror(e));
	}
	if (listen(fd, 128) != 0 || (use_tmp && rename(tmp.sun_path, path) != 0)) {
		int e = errno;
		unlink(at->sun_path);
		close(fd);
		return status_fail(err, errlen, -e, "listen on %s: %s", path, strerror(e));
	}
	srv->bound = 1;
	srv->listen_fd = fd;
	return 0;
}

static int watch_fd(struct server *srv, int fd, struct watch *w, int kind, char *err, size_t errlen)
{
	w->kind = kind;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = w };
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
		return status_fail(err, errlen, -errno, "epoll_ctl: %s", strerror(errno));
	return 0;
}

/* --gpu N: the device must be there (a clear start-up error otherwise).
 * FEEDERD_GPU_EMULATE=1 runs GPU placement on the host instead, for tests
 * on machines without a GPU (gpu_slot.h). */
static int gpu_check(struct server *srv, char *err, size_t errlen)
{
	int want = srv->cfg.gpu;
	if (want < 0)
		return 0;
	const char *emu = getenv("FEEDERD_GPU_EMULATE");
	if (emu && strcmp(emu, "1") == 0) {
		srv->gpu = GPU_SLOT_EMULATED;
		log_warn("--gpu %d: the GPU is emulated on the host (FEEDERD_GPU_EMULATE=1), for tests "
			 "only: no CUDA kernel, copy or IPC runs", want);
		return 0;
	}
	char why[256];
	int n = gpu_pipeline_devices(why, sizeof(why));
	if (n < 0)
		return status_fail(err, errlen, FEEDER_ENODEV, "--gpu %d: %s", want, why);
	if (want >= n)
		return status_fail(err, errlen, FEEDER_ENODEV,
				   "--gpu %d: this machine has %d CUDA device%s (0..%d)", want, n,
				   n == 1 ? "" : "s", n - 1);
	srv->gpu = want;
	log_info("preprocessing on GPU %d for streams with placement gpu or auto", want);
	return 0;
}

int server_create(struct server **out, const struct config *cfg, char *err, size_t errlen)
{
	struct server *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	srv->cfg = *cfg;
	srv->epfd = srv->listen_fd = srv->sig_fd = srv->wake_fd = srv->timer_fd = -1;
	srv->gpu = -1;
	srv->start_us = srv->last_tick_us = now_us();
	long pg = sysconf(_SC_PAGESIZE);
	srv->page = pg > 0 ? (uint64_t)pg : 4096;
	int rc;

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	srv->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	srv->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	srv->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (srv->sig_fd < 0 || srv->wake_fd < 0 || srv->timer_fd < 0 || srv->epfd < 0) {
		rc = status_fail(err, errlen, -errno, "event descriptors: %s", strerror(errno));
		goto fail;
	}
	/* Before any dataset is mapped: I/O errors on a mapping must never
	 * take the daemon down (mapguard.h). */
	rc = mapguard_install(err, errlen);
	if (rc)
		goto fail;
	if ((rc = gpu_check(srv, err, errlen)))
		goto fail;
	rc = registry_open(&srv->reg, cfg->datasets_dir, err, errlen);
	if (rc)
		goto fail;
	int lfd;
	rc = notify_listen_fd(&lfd, err, errlen);
	if (rc)
		goto fail;
	if (lfd >= 0) {
		int fl = fcntl(lfd, F_GETFL);
		fcntl(lfd, F_SETFL, fl | O_NONBLOCK);
		fcntl(lfd, F_SETFD, FD_CLOEXEC);
		srv->listen_fd = lfd;
		log_info("listening on the socket passed by systemd");
	} else {
		rc = bind_socket(srv, err, errlen);
		if (rc)
			goto fail;
		log_info("listening on %s", cfg->socket_path);
	}
	rc = pool_create(&srv->pool, cfg->workers, srv->wake_fd, err, errlen);
	if (rc)
		goto fail;
	if ((rc = watch_fd(srv, srv->listen_fd, &srv->w_listen, WATCH_LISTEN, err, errlen)) ||
	    (rc = watch_fd(srv, srv->sig_fd, &srv->w_signal, WATCH_SIGNAL, err, errlen)) ||
	    (rc = watch_fd(srv, srv->wake_fd, &srv->w_wake, WATCH_WAKE, err, errlen)) ||
	    (rc = watch_fd(srv, srv->timer_fd, &srv->w_timer, WATCH_TIMER, err, errlen)))
		goto fail;
	/* Figures once a second; the watchdog at half its interval if that is
	 * shorter. */
	uint64_t period = 1000000;
	srv->watchdog_us = notify_watchdog_usec();
	if (srv->watchdog_us && srv->watchdog_us / 2 < period)
		period = srv->watchdog_us / 2 ? srv->watchdog_us / 2 : 1;
	struct itimerspec its = {
		.it_interval = { (time_t)(period / 1000000), (long)(period % 1000000) * 1000 },
		.it_value = { (time_t)(period / 1000000), (long)(period % 1000000) * 1000 },
	};
	timerfd_settime(srv->timer_fd, 0, &its, NULL);
	log_info("feederd %s: %u workers, %zu datasets from %s, memory limit %.0f MiB",
		 FEEDER_VERSION, cfg->workers, registry_count(srv->reg), cfg->datasets_dir,
		 mib(cfg->memory_limit));
	*out = srv;
	return 0;
fail:
	server_destroy(srv);
	return rc;
}

int server_run(struct server *srv, char *err, size_t errlen)
{
	notify_ready();
	notify_status("0 clients, 0 streams, %zu datasets", registry_count(srv->reg));
	struct epoll_event evs[64];
	while (!srv->stop) {
		int n = epoll_wait(srv->epfd, evs, 64, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return status_fail(err, errlen, -errno, "epoll_wait: %s", strerror(errno));
		}
		int wake = 0;
		for (int i = 0; i < n; i++) {
			struct watch *w = evs[i].data.ptr;
			switch (w->kind) {
			case WATCH_LISTEN:
				accept_clients(srv);
				break;
			case WATCH_SIGNAL:
				handle_signal(srv);
				break;
			case WATCH_WAKE: {
				uint64_t v;
				ssize_t r = read(srv->wake_fd, &v, sizeof(v));
				(void)r;
				wake = 1;
				break;
			}
			case WATCH_TIMER: {
				uint64_t v;
				ssize_t r = read(srv->timer_fd, &v, sizeof(v));
				(void)r;
				tick(srv);
				break;
			}
			case WATCH_SESSION: {
				struct session *c = (struct session *)w;
				if (evs[i].events & EPOLLOUT)
					flush_out(c);
				if (evs[i].events & EPOLLIN)
					session_input(srv, c);
				if (!(evs[i].events & EPOLLIN) && (evs[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)))
					c->dead = 1;
				break;
			}
			case WATCH_REFUSED: {
				struct refused *r = (struct refused *)w;
				refused_input(r);
				if (evs[i].events & (EPOLLHUP | EPOLLERR))
					r->done = 1;
				break;
			}
			}
		}
		/* Completions first, then sessions that went away (whose
		 * pointers later events in this batch no longer use). */
		if (wake)
			service_all(srv);
		drop_dead(srv);
		/* The timer's tick wakes this loop at least once a second. */
		if (srv->refused)
			drop_refused(srv, now_us());
	}
	/* Stop accepting, tell everyone, let the rest go in server_destroy. */
	notify_stopping();
	if (srv->listen_fd >= 0) {
		epoll_ctl(srv->epfd, EPOLL_CTL_DEL, srv->listen_fd, NULL);
		close(srv->listen_fd);
		srv->listen_fd = -1;
	}
	if (srv->bound) {
		unlink(srv->cfg.socket_path);
		srv->bound = 0;
	}
	struct proto_msg bye = { .type = PROTO_GOODBYE };
	for (struct session *c = srv->sessions; c; c = c->next) {
		send_to(c, &bye, -1);
		c->dead = 1;
	}
	drop_dead(srv);
	return 0;
}

void server_destroy(struct server *srv)
{
	if (!srv)
		return;
	/* Sessions left (server_run failed): close them; their streams become
	 * zombies until the workers are joined below. */
	while (srv->sessions && srv->pool)
		drop_session(srv, srv->sessions);
	pool_destroy(srv->pool);
	srv->pool = NULL;
	drop_refused(srv, 0);
	for (size_t i = 0; i < srv->nzombies; i++)
		stream_gone(srv, srv->zombies[i]);
	free(srv->zombies);
	registry_close(srv->reg);
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	if (srv->bound)
		unlink(srv->cfg.socket_path);
	for (int *fd = (int[]){ srv->epfd, srv->sig_fd, srv->wake_fd, srv->timer_fd, -2 }; *fd != -2; fd++)
		if (*fd >= 0)
			close(*fd);
	free(srv);
}
