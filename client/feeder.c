/* feeder.c — libfeeder: the client side of feederd's protocol (see feeder.h
 * for the API contract and proto/protocol.h for the wire format).
 *
 * One connection multiplexes any number of streams over one SEQPACKET
 * socket, so whichever call is waiting on the socket (feeder_stream_next of one
 * stream, feeder_stream_open, feeder_stream_close) dispatches every message
 * that arrives: BATCH_READY goes to its stream's queue, STREAM_END and
 * stream ERRORs mark their stream, GOODBYE and fatal ERRORs mark the
 * connection dead. A stream's queue never holds more than `slots` entries,
 * because the daemon announces a slot only after the client released it;
 * anything that breaks that rule is a protocol error, not a crash. */
#include "status.h" /* before feeder.h: it provides the FEEDER_E* codes */

#include "feeder.h"
#include "feeder_config.h"
#if FEEDER_HAVE_CUDA
#include "feeder_cuda.h"
#endif
#include "protocol.h"
#include "sockmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef FEEDER_VERSION
#define FEEDER_VERSION "unknown"
#endif

#define ERR_MAX 320
/* How long feeder_stream_close waits for the daemon to confirm. */
#define CLOSE_WAIT_MS 2000

enum slot_state { SLOT_DAEMON = 0, SLOT_QUEUED = 1, SLOT_HELD = 2 };

/* The ring of a stream on a connection that was lost (the daemon restarted):
 * kept mapped until the stream closes, because the caller may still hold, or
 * point into, batches of it. */
struct old_ring {
	struct old_ring *next;
	uint8_t *ring;
	uint64_t size;
	uint32_t slots, held;
	uint8_t *state;
	int fd, pinned;
};

struct feeder_stream {
	struct feeder *f;
	struct feeder_stream *next;
	struct proto_stream_opened geo;
	struct proto_open_stream req;    /* as first asked, to reopen after a reconnect */
	uint64_t total;                  /* batches of the whole stream */
	uint64_t delivered;              /* batches feeder_stream_next has handed out */
	uint64_t next_epoch, next_batch; /* where the stream goes on after them */
	struct old_ring *old;            /* rings of lost connections still in use */
	uint64_t sample_bytes;
	int fd;
	uint8_t *ring;
	int readonly;
	int pinned;                      /* the ring is registered with CUDA */
	int want_pin;                    /* feeder_stream_pin was called: pin reopened rings too */
	struct fcuda_ring *dev;          /* PROTO_MEM_DEVICE: the opened device ring */
	uint8_t *dev_base;               /* its tensor buffer here */
	uint64_t dev_stride;             /* bytes between slots' tensors */
	int dev_ordinal;
	struct proto_batch_ready *queue; /* circular, geo.slots entries */
	uint32_t qhead, qlen;
	uint8_t *state;                  /* enum slot_state per slot */
	int ended;                       /* STREAM_END received */
	int failed;                      /* stream ERROR received: its code */
	char fail_msg[PROTO_TEXT_MAX];
};

struct feeder {
	int sock;
	int dead;                        /* 0, or the code every call now returns */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int reconnect_ms;                /* feeder_set_reconnect: 0 off, < 0 forever */
	uint32_t reconnects;             /* connections re-established so far */
	uint32_t next_tag;
	struct feeder_stream *streams;
	struct proto_welcome welcome;
	char err[ERR_MAX];
};

static __thread char connect_err[ERR_MAX];

#if !FEEDER_HAVE_CUDA
static int fcuda_host_register(void *p, size_t len, int readonly, char *err, size_t errlen)
{
	(void)p, (void)len, (void)readonly;
	return status_fail(err, errlen, FEEDER_ENODEV, "libfeeder was built without CUDA");
}

static void fcuda_host_unregister(void *p)
{
	(void)p;
}

struct fcuda_ring;
static int fcuda_device_usable(void)
{
	return 0;
}

static int fcuda_ring_open(const struct proto_device_table *t, const struct proto_device_slot *slots,
			   uint32_t nslots, void **base, int *device, struct fcuda_ring **out,
			   char *err, size_t errlen)
{
	(void)t, (void)slots, (void)nslots, (void)base, (void)device;
	*out = NULL;
	return status_fail(err, errlen, FEEDER_ENODEV, "libfeeder was built without CUDA");
}

static void fcuda_ring_close(struct fcuda_ring *r)
{
	(void)r;
}

static int fcuda_ring_wait(struct fcuda_ring *r, uint32_t slot, void *cuda_stream, char *err,
			   size_t errlen)
{
	(void)r, (void)slot, (void)cuda_stream;
	return status_fail(err, errlen, FEEDER_ENODEV, "libfeeder was built without CUDA");
}

static int fcuda_ring_release(struct fcuda_ring *r, uint32_t slot, void *cuda_stream, char *err,
			      size_t errlen)
{
	(void)r, (void)slot, (void)cuda_stream;
	return status_fail(err, errlen, FEEDER_ENODEV, "libfeeder was built without CUDA");
}
#endif

const char *feeder_strerror(int code)
{
	return status_str(code);
}

const char *feeder_last_error(const struct feeder *f)
{
	return f ? f->err : connect_err;
}

int feeder_fd(const struct feeder *f)
{
	return f->sock;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until deadline (-1 = none) as a poll timeout. */
static int left_ms(int64_t deadline)
{
	if (deadline < 0)
		return -1;
	int64_t l = deadline - now_ms();
	return l <= 0 ? 0 : (l > 1000000000 ? 1000000000 : (int)l);
}

static int64_t deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

static int set_dead(struct feeder *f, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int set_dead(struct feeder *f, int code, const char *fmt, ...)
{
	if (!f->dead) {
		f->dead = code;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(f->err, sizeof f->err, fmt, ap);
		va_end(ap);
	}
	return f->dead;
}

static int send_msg(struct feeder *f, const struct proto_msg *m);
static int revive(struct feeder *f, int code);

static struct feeder_stream *find_stream(struct feeder *f, uint32_t id)
{
	for (struct feeder_stream *s = f->streams; s; s = s->next)
		if (s->geo.stream == id)
			return s;
	return NULL;
}

/* Handle a message that is not the answer someone is waiting for. Returns 0
 * or the connection's death code. */
static int dispatch(struct feeder *f, const struct proto_msg *m)
{
	struct feeder_stream *s;
	switch (m->type) {
	case PROTO_BATCH_READY: {
		const struct proto_batch_ready *r = &m->u.ready;
		s = find_stream(f, r->stream);
		if (!s)
			return 0; /* a stream we are closing: nothing to do */
		if (r->slot >= s->geo.slots || s->state[r->slot] != SLOT_DAEMON ||
		    r->samples > s->geo.batch || s->qlen >= s->geo.slots)
			return set_dead(f, FEEDER_EPROTO,
					"daemon announced slot %u of stream %u, which it does not own",
					r->slot, r->stream);
		s->state[r->slot] = SLOT_QUEUED;
		s->queue[(s->qhead + s->qlen) % s->geo.slots] = *r;
		s->qlen++;
		return 0;
	}
	case PROTO_STREAM_END:
		if ((s = find_stream(f, m->u.end.stream)))
			s->ended = 1;
		return 0;
	case PROTO_ERROR: {
		const struct proto_error *e = &m->u.error;
		if (e->fatal || (e->stream == 0 && e->tag == 0))
			return set_dead(f, e->code, "feederd: %s", e->message);
		if (e->stream && (s = find_stream(f, e->stream)) && !s->failed) {
			s->failed = e->code;
			snprintf(s->fail_msg, sizeof s->fail_msg, "%s", e->message);
		}
		return 0;
	}
	case PROTO_GOODBYE:
		return set_dead(f, FEEDER_ECLOSED, "feederd is shutting down");
	case PROTO_STREAM_OPENED: {
		/* The answer to an open that gave up waiting: the daemon holds a
		 * ring for nobody, so give it back. */
		struct proto_msg c = { .type = PROTO_CLOSE_STREAM };
		c.u.close.stream = m->u.opened.stream;
		return send_msg(f, &c);
	}
	default:
		/* Replies to requests nobody is waiting for any more (a timed-out
		 * open, a status reply): harmless. */
		return 0;
	}
}

/* Wait until deadline for one message. Returns 0 (m filled; *fd set if fd is
 * not NULL), FEEDER_ETIMEDOUT, or the connection's death code. */
static int recv_one(struct feeder *f, int64_t deadline, struct proto_msg *m, int *fd)
{
	if (fd)
		*fd = -1;
	if (f->dead)
		return f->dead;
	struct pollfd p = { .fd = f->sock, .events = POLLIN };
	for (;;) {
		int n = poll(&p, 1, left_ms(deadline));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return set_dead(f, -errno, "waiting for feederd failed: %s", strerror(errno));
		if (n == 0) {
			snprintf(f->err, sizeof f->err, "nothing arrived from feederd in time");
			return FEEDER_ETIMEDOUT;
		}
		break;
	}
	char err[ERR_MAX];
	int rc = sockmsg_recv_msg(f->sock, m, fd, err, sizeof err);
	if (rc == -EAGAIN) {
		snprintf(f->err, sizeof f->err, "nothing arrived from feederd in time");
		return FEEDER_ETIMEDOUT;
	}
	if (rc == FEEDER_ECLOSED)
		return set_dead(f, rc, "feederd closed the connection");
	if (rc < 0)
		return set_dead(f, rc, "bad message from feederd: %s", err);
	if (!fd || m->type != PROTO_STREAM_OPENED) {
		if (fd && *fd >= 0) {
			close(*fd);
			*fd = -1;
			return set_dead(f, FEEDER_EPROTO, "feederd passed a descriptor with %s",
					proto_type_name(m->type));
		}
	}
	return 0;
}

static int send_msg(struct feeder *f, const struct proto_msg *m)
{
	if (f->dead)
		return f->dead;
	char err[ERR_MAX];
	int rc = sockmsg_send_msg(f->sock, m, -1, err, sizeof err);
	if (rc == FEEDER_ECLOSED) {
		/* The daemon usually said why before it closed (GOODBYE, a fatal
		 * ERROR): read what is left so that the caller gets that reason. */
		struct proto_msg left;
		while (!f->dead && recv_one(f, 0, &left, NULL) == 0)
			dispatch(f, &left);
	}
	if (rc < 0)
		return set_dead(f, rc, "sending %s to feederd failed: %s", proto_type_name(m->type),
				err);
	return 0;
}

/* ---- Connections --------------------------------------------------------- */

static int connect_fail(int sock, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int connect_fail(int sock, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(connect_err, sizeof connect_err, fmt, ap);
	va_end(ap);
	if (sock >= 0)
		close(sock);
	return code;
}

/* Connect a SEQPACKET socket to path, retrying a socket that does not exist
 * yet or refuses (the daemon is starting) until deadline (-1: forever,
 * now: once). Returns the socket or a negative code with connect_err set. */
static int dial(const char *path, int64_t deadline)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path)
		return connect_fail(-1, -ENAMETOOLONG, "socket path '%s' is longer than %zu bytes",
				    path, sizeof sa.sun_path - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	for (;;) {
		int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (sock < 0)
			return connect_fail(-1, -errno, "socket: %s", strerror(errno));
		if (connect(sock, (struct sockaddr *)&sa, sizeof sa) == 0)
			return sock;
		int e = errno;
		close(sock);
		int retry = e == ENOENT || e == ECONNREFUSED || e == EAGAIN || e == EINTR;
		if (!retry || left_ms(deadline) == 0)
			return connect_fail(-1, -e, "cannot connect to feederd at %s: %s", path,
					    strerror(e));
		int wait = left_ms(deadline);
		usleep((useconds_t)(wait < 0 || wait > 20 ? 20 : wait) * 1000);
	}
}

/* HELLO / WELCOME on f->sock. Returns 0 or the failure (f->err says why). */
static int greet(struct feeder *f, int64_t deadline)
{
	struct proto_msg m = { .type = PROTO_HELLO };
	m.u.hello.pid = (uint32_t)getpid();
	snprintf(m.u.hello.agent, sizeof m.u.hello.agent, "libfeeder %s", FEEDER_VERSION);
	int rc = send_msg(f, &m);
	while (rc == 0) {
		rc = recv_one(f, deadline, &m, NULL);
		if (rc)
			break;
		if (m.type == PROTO_WELCOME) {
			f->welcome = m.u.welcome;
			return 0;
		}
		if (m.type == PROTO_ERROR) {
			rc = m.u.error.code;
			snprintf(f->err, sizeof f->err, "feederd refused the connection: %s",
				 m.u.error.message);
			break;
		}
		rc = set_dead(f, FEEDER_EPROTO, "feederd answered HELLO with %s",
			      proto_type_name(m.type));
	}
	if (rc == FEEDER_ETIMEDOUT)
		snprintf(f->err, sizeof f->err, "feederd at %s did not answer HELLO in time", f->path);
	return rc;
}

int feeder_connect(const char *path, int timeout_ms, struct feeder **out)
{
	*out = NULL;
	connect_err[0] = '\0';
	if (!path || !*path)
		path = getenv("FEEDER_SOCKET");
	if (!path || !*path)
		path = FEEDER_DEFAULT_SOCKET;
	int64_t deadline = deadline_of(timeout_ms);
	int sock = dial(path, deadline);
	if (sock < 0)
		return sock;
	struct feeder *f = calloc(1, sizeof *f);
	if (!f)
		return connect_fail(sock, -ENOMEM, "out of memory");
	f->sock = sock;
	f->next_tag = 1;
	snprintf(f->path, sizeof f->path, "%s", path); /* dial checked its length */
	int rc = greet(f, deadline);
	if (rc == 0) {
		*out = f;
		return 0;
	}
	snprintf(connect_err, sizeof connect_err, "%s", f->err);
	close(f->sock);
	free(f);
	return rc;
}

static void ring_unmap(uint8_t *ring, uint64_t size, int fd, int pinned)
{
	if (pinned)
		fcuda_host_unregister(ring);
	if (ring)
		munmap(ring, size);
	if (fd >= 0)
		close(fd);
}

static void stream_free(struct feeder_stream *s)
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
		ring_unmap(o->ring, o->size, o->fd, o->pinned);
		free(o->state);
		free(o);
	}
	free(s->queue);
	free(s->state);
	free(s);
}

void feeder_disconnect(struct feeder *f)
{
	if (!f)
		return;
	while (f->streams)
		stream_free(f->streams);
	if (f->sock >= 0)
		close(f->sock);
	free(f);
}

int feeder_set_reconnect(struct feeder *f, int timeout_ms)
{
	f->reconnect_ms = timeout_ms;
	return 0;
}

uint32_t feeder_get_reconnects(const struct feeder *f)
{
	return f->reconnects;
}

/* ---- Streams ------------------------------------------------------------ */

void feeder_stream_opts_init(struct feeder_stream_opts *o)
{
	struct proto_open_stream p;
	proto_open_stream_defaults(&p, 224, 1);
	memset(o, 0, sizeof *o);
	o->pipeline = FEEDER_PIPE_JPEG;
	o->batch = 32;
	o->epochs = p.epochs;
	o->world = p.world;
	o->slots = p.slots;
	o->dtype = (int)p.dtype;
	o->layout = (int)p.layout;
	o->on_error = FEEDER_ON_ERROR_REPLACE;
	o->jpeg.height = p.jpeg.out_h;
	o->jpeg.width = p.jpeg.out_w;
	o->jpeg.train = 1;
	o->jpeg.scale_min = p.jpeg.scale_min;
	o->jpeg.scale_max = p.jpeg.scale_max;
	o->jpeg.ratio_min = p.jpeg.ratio_min;
	o->jpeg.ratio_max = p.jpeg.ratio_max;
	o->jpeg.flip_p = p.jpeg.flip_p;
	o->jpeg.resize_ratio = p.jpeg.resize_ratio;
	memcpy(o->jpeg.mean, p.jpeg.mean, sizeof o->jpeg.mean);
	memcpy(o->jpeg.std, p.jpeg.std, sizeof o->jpeg.std);
	o->features.chunk_len = 200;
	o->features.pad = FEEDER_FEAT_PAD_REPEAT;
	o->features.cmn = FEEDER_FEAT_CMN_SLIDING;
	o->features.cmn_window = 300;
	o->features.cvn = 0;
	o->features.train = 1;
}

/* Options as OPEN_STREAM carries them. Values that do not fit the wire
 * (negative enums) are caught here; ranges are the daemon's to check. */
static int opts_to_proto(struct feeder *f, const struct feeder_stream_opts *o,
			 struct proto_open_stream *p)
{
	memset(p, 0, sizeof *p);
	if (!o->dataset || !*o->dataset)
		return status_fail(f->err, sizeof f->err, FEEDER_EINVAL, "no dataset name given");
	if (strlen(o->dataset) >= sizeof p->dataset)
		return status_fail(f->err, sizeof f->err, FEEDER_EBADNAME,
				   "dataset name '%.40s...' is longer than %zu bytes", o->dataset,
				   sizeof p->dataset - 1);
	if (o->pipeline < 0 || o->dtype < 0 || o->layout < 0 || o->on_error < 0 ||
	    o->drop_last < 0 || o->jpeg.train < 0 || o->features.pad < 0 || o->features.cmn < 0 ||
	    o->features.cvn < 0 || o->features.train < 0)
		return status_fail(f->err, sizeof f->err, FEEDER_EINVAL,
				   "stream options: a negative enum value");
	snprintf(p->dataset, sizeof p->dataset, "%s", o->dataset);
	p->pipeline = (uint32_t)o->pipeline;
	p->batch = o->batch;
	p->seed = o->seed;
	p->epoch = o->epoch;
	p->epochs = o->epochs;
	p->rank = o->rank;
	p->world = o->world;
	p->start_batch = o->start_batch;
	p->drop_last = (uint32_t)o->drop_last;
	p->slots = o->slots;
	p->dtype = (uint32_t)o->dtype;
	p->layout = (uint32_t)o->layout;
	p->on_error = (uint32_t)o->on_error;
	if (o->placement < 0 || o->placement > FEEDER_PLACEMENT_AUTO)
		return status_fail(f->err, sizeof f->err, FEEDER_EINVAL,
				   "stream options: placement %d is not cpu, gpu or auto", o->placement);
	p->flags = (uint32_t)o->placement;
	/* Device batches only where this process can open them; otherwise the
	 * daemon serves the host ring (the documented fallback). */
	if (o->device_batches && o->placement != FEEDER_PLACEMENT_CPU && fcuda_device_usable())
		p->flags |= PROTO_FLAG_DEVICE_OK;
	if (o->pipeline == FEEDER_PIPE_JPEG) {
		p->jpeg.out_h = o->jpeg.height;
		p->jpeg.out_w = o->jpeg.width;
		p->jpeg.train = (uint32_t)o->jpeg.train;
		p->jpeg.scale_min = o->jpeg.scale_min;
		p->jpeg.scale_max = o->jpeg.scale_max;
		p->jpeg.ratio_min = o->jpeg.ratio_min;
		p->jpeg.ratio_max = o->jpeg.ratio_max;
		p->jpeg.flip_p = o->jpeg.flip_p;
		p->jpeg.resize_ratio = o->jpeg.resize_ratio;
		memcpy(p->jpeg.mean, o->jpeg.mean, sizeof p->jpeg.mean);
		memcpy(p->jpeg.std, o->jpeg.std, sizeof p->jpeg.std);
	} else if (o->pipeline == FEEDER_PIPE_FEATURES) {
		p->features.chunk_len = o->features.chunk_len;
		p->features.pad = (uint32_t)o->features.pad;
		p->features.cmn = (uint32_t)o->features.cmn;
		p->features.cmn_window = o->features.cmn_window;
		p->features.cvn = (uint32_t)o->features.cvn;
		p->features.train = (uint32_t)o->features.train;
	}
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
		return status_fail(f->err, sizeof f->err, FEEDER_EPROTO,
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
		return status_fail(f->err, sizeof f->err, -errno, "mapping the ring of stream %u: %s",
				   g->stream, strerror(errno));
	s->ring = p;
	const struct proto_ring_header *h = p;
	if (h->magic != PROTO_RING_MAGIC || h->version != PROTO_VERSION || h->stream != g->stream ||
	    h->slots != g->slots || h->slot_size != g->slot_size ||
	    h->slot0_offset != PROTO_RING_HEADER || h->tensor_offset != g->tensor_offset ||
	    h->labels_offset != g->labels_offset || h->tensor_bytes != g->tensor_bytes)
		return status_fail(f->err, sizeof f->err, FEEDER_EPROTO,
				   "ring header of stream %u disagrees with STREAM_OPENED", g->stream);
	if (g->memory != PROTO_MEM_DEVICE)
		return 0;
	/* The decoder checked that the table lies inside the ring. */
	const struct proto_device_table *t =
		(const struct proto_device_table *)(s->ring + g->device_table);
	if (t->magic != PROTO_DEVICE_MAGIC || t->tensor_stride < g->tensor_bytes)
		return status_fail(f->err, sizeof f->err, FEEDER_EPROTO,
				   "device table of stream %u is malformed", g->stream);
	void *base = NULL;
	int rc = fcuda_ring_open(t, (const struct proto_device_slot *)((const uint8_t *)t +
								    PROTO_DEVICE_TABLE_HEAD),
				 g->slots, &base, &s->dev_ordinal, &s->dev, f->err, sizeof f->err);
	if (rc)
		return rc;
	s->dev_base = base;
	s->dev_stride = t->tensor_stride;
	return 0;
}

/* Send OPEN_STREAM p and wait until deadline for its answer. On success the
 * geometry is in *g and the ring's descriptor in *fd. A refusal returns the
 * daemon's code with its sentence in f->err and leaves f usable. */
static int ask_open(struct feeder *f, struct proto_open_stream *p, int64_t deadline,
		    struct proto_stream_opened *g, int *ring_fd)
{
	*ring_fd = -1;
	struct proto_msg m = { .type = PROTO_OPEN_STREAM };
	uint32_t tag = f->next_tag++;
	if (f->next_tag == 0)
		f->next_tag = 1;
	p->tag = tag;
	m.u.open = *p;
	int rc = send_msg(f, &m);
	if (rc)
		return rc;
	int fd = -1;
	for (;;) {
		rc = recv_one(f, deadline, &m, &fd);
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
		if ((rc = dispatch(f, &m)))
			return rc;
	}
	*g = m.u.opened;
	if (fd < 0)
		return set_dead(f, FEEDER_EPROTO, "STREAM_OPENED arrived without the ring descriptor");
	if (g->batch != p->batch || g->slots != p->slots || find_stream(f, g->stream) ||
	    g->ndim != 4 || g->tensor_bytes % g->batch) {
		close(fd);
		return set_dead(f, FEEDER_EPROTO, "STREAM_OPENED does not match the request");
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
		send_msg(f, &c);
		snprintf(f->err, sizeof f->err, "%s", keep);
		ring_unmap(s->ring, g->ring_size, s->fd, 0);
		s->ring = NULL;
		s->fd = -1;
	}
	return rc;
}

int feeder_stream_open(struct feeder *f, const struct feeder_stream_opts *o, int timeout_ms,
		       struct feeder_stream **out)
{
	*out = NULL;
	struct proto_open_stream p;
	int rc = opts_to_proto(f, o, &p);
	if (rc)
		return rc;
	int64_t deadline = deadline_of(timeout_ms);
	struct proto_stream_opened g;
	int fd;
	rc = ask_open(f, &p, deadline, &g, &fd);
	if (rc && revive(f, rc) == 0) /* the daemon restarted: ask the new one */
		rc = ask_open(f, &p, deadline, &g, &fd);
	if (rc)
		return rc;
	struct feeder_stream *s = calloc(1, sizeof *s);
	if (!s) {
		close(fd);
		return status_fail(f->err, sizeof f->err, -ENOMEM, "out of memory");
	}
	s->f = f;
	s->fd = -1;
	s->req = p;
	s->total = g.batches;
	s->next_epoch = p.epoch;
	s->next_batch = p.start_batch;
	s->next = f->streams;
	f->streams = s;
	if ((rc = stream_attach(s, &g, fd))) {
		stream_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* ---- Surviving a daemon restart ------------------------------------------- */

/* Connection losses that a restarted daemon cures. Refusals and protocol
 * errors are not among them: they would happen again. */
static int lost_connection(int code)
{
	return code == FEEDER_ECLOSED || code == -ECONNRESET || code == -EPIPE ||
	       code == -ECONNREFUSED || code == -ENOENT;
}

/* The connection is gone: keep the rings whose batches the caller still
 * holds, drop everything else of it. */
static void stream_detach(struct feeder_stream *s)
{
	/* A device ring dies with the daemon that allocated it. */
	fcuda_ring_close(s->dev);
	s->dev = NULL;
	s->dev_base = NULL;
	uint32_t held = 0;
	for (uint32_t i = 0; s->state && i < s->geo.slots; i++)
		held += s->state[i] == SLOT_HELD;
	/* The ring stays mapped until the stream is closed, not only while
	 * batches of it are held: callers (the Python views) may keep stale
	 * pointers into released slots, which must read old data, not fault. */
	struct old_ring *o = calloc(1, sizeof *o);
	uint8_t *state = s->state ? malloc(s->geo.slots) : NULL;
	if (o && state) {
		memcpy(state, s->state, s->geo.slots);
		*o = (struct old_ring){ .next = s->old, .ring = s->ring, .size = s->geo.ring_size,
					.slots = s->geo.slots,
					.held = held, .state = state, .fd = s->fd,
					.pinned = s->pinned };
		s->old = o;
	} else {
		free(o);
		free(state);
		ring_unmap(s->ring, s->geo.ring_size, s->fd, s->pinned);
	}
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
static int stream_reopen(struct feeder_stream *s, int64_t deadline)
{
	struct feeder *f = s->f;
	uint64_t last_epoch = s->req.epoch + s->req.epochs - 1;
	if (s->delivered == s->total || s->next_epoch > last_epoch) {
		s->ended = 1;
		return 0;
	}
	struct proto_open_stream p = s->req;
	p.epoch = s->next_epoch;
	p.start_batch = s->next_batch;
	p.epochs = (uint32_t)(last_epoch - s->next_epoch + 1);
	struct proto_stream_opened g;
	int fd;
	int rc = ask_open(f, &p, deadline, &g, &fd);
	if (rc == 0 && (g.batches != s->total - s->delivered || g.tensor_bytes != s->geo.tensor_bytes ||
			g.batches_per_epoch != s->geo.batches_per_epoch ||
			memcmp(g.shape, s->geo.shape, sizeof g.shape) != 0)) {
		struct proto_msg c = { .type = PROTO_CLOSE_STREAM };
		c.u.close.stream = g.stream;
		close(fd);
		send_msg(f, &c);
		rc = status_fail(f->err, sizeof f->err, FEEDER_ESTREAM,
				 "the restarted feederd serves dataset '%s' with another geometry",
				 s->req.dataset);
	}
	if (rc == 0)
		rc = stream_attach(s, &g, fd);
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

/* After the call that met `code` on f: when reconnecting is enabled and code
 * is a lost connection, dial again with exponential backoff (10 ms doubling
 * to 1 s) until the reconnect timeout, greet, and reopen every stream.
 * Returns 0 when f works again, else the code to give the caller. */
static int revive(struct feeder *f, int code)
{
	if (!f->reconnect_ms || !f->dead || !lost_connection(code))
		return code;
	char why[ERR_MAX];
	snprintf(why, sizeof why, "%s", f->err);
	int64_t deadline = deadline_of(f->reconnect_ms);
	int backoff = 10;
	int rc = code;
	for (;;) {
		if (f->sock >= 0)
			close(f->sock);
		f->sock = -1;
		for (struct feeder_stream *s = f->streams; s; s = s->next)
			if (s->ring)
				stream_detach(s);
		int wait = left_ms(deadline);
		if (wait == 0)
			break;
		usleep((useconds_t)(wait < 0 || wait > backoff ? backoff : wait) * 1000);
		backoff = backoff >= 500 ? 1000 : backoff * 2;
		int sock = dial(f->path, now_ms());
		if (sock < 0) {
			rc = sock;
			snprintf(why, sizeof why, "%s", connect_err);
			continue;
		}
		f->sock = sock;
		f->dead = 0;
		f->err[0] = '\0';
		/* A daemon that accepts but never answers must not hold us past
		 * the reconnect timeout. */
		int64_t step = deadline < 0 ? now_ms() + 10000 : deadline;
		rc = greet(f, step);
		/* Streams that had ended still reopen: batches queued before the
		 * loss went with the old connection. */
		for (struct feeder_stream *s = f->streams; rc == 0 && s; s = s->next)
			if (!s->failed) {
				s->ended = 0;
				rc = stream_reopen(s, step);
			}
		if (rc == 0) {
			f->reconnects++;
			return 0;
		}
		snprintf(why, sizeof why, "%s", f->err);
		if (!f->dead)
			set_dead(f, rc, "%s", why);
		if (!lost_connection(rc))
			break;
	}
	f->dead = 0;
	f->err[0] = '\0';
	return set_dead(f, rc, "feederd at %s went away and could not be reached again: %s",
			f->path, why);
}

void feeder_stream_info(const struct feeder_stream *s, struct feeder_stream_info *info)
{
	const struct proto_stream_opened *g = &s->geo;
	memset(info, 0, sizeof *info);
	info->id = g->stream;
	info->slots = g->slots;
	info->batch = g->batch;
	info->dtype = (int)g->dtype;
	info->layout = (int)g->layout;
	info->ndim = g->ndim;
	memcpy(info->shape, g->shape, sizeof info->shape);
	info->batches = s->total;
	info->batches_per_epoch = g->batches_per_epoch;
	info->samples = g->samples;
	info->classes = g->classes;
	info->ring = s->ring;
	info->ring_size = (size_t)g->ring_size;
	info->slot_size = (size_t)g->slot_size;
	info->placement = (int)g->placement;
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
	b->dtype = (int)g->dtype;
	b->layout = (int)g->layout;
	b->labels = (const int32_t *)(slot + g->labels_offset);
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
	int64_t deadline = deadline_of(timeout_ms);
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
			return 0;
		}
		if (s->failed)
			return status_fail(f->err, sizeof f->err, FEEDER_ESTREAM,
					   "stream %u failed in feederd: %s", s->geo.stream, s->fail_msg);
		if (s->ended)
			return status_fail(f->err, sizeof f->err, FEEDER_EEND,
					   "stream %u has delivered all its batches", s->geo.stream);
		struct proto_msg m;
		int rc = recv_one(f, deadline, &m, NULL);
		if (rc == 0)
			rc = dispatch(f, &m);
		if (rc && (rc = revive(f, rc)))
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
 * tell anybody (the ring is unmapped when the stream closes). */
static int release_old(struct feeder_stream *s, struct feeder_batch *b)
{
	struct feeder *f = s->f;
	for (struct old_ring *o = s->old; o; o = o->next) {
		if (!in_ring(o->ring, o->size, b))
			continue;
		if (b->slot >= o->slots || o->state[b->slot] != SLOT_HELD)
			break;
		o->state[b->slot] = SLOT_DAEMON;
		o->held--;
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
		return status_fail(f->err, sizeof f->err, FEEDER_EINVAL,
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
				   "batch (stream %u, slot %u) is not held from stream %u", b->stream,
				   b->slot, s->geo.stream);
	if (s->dev) {
		int rc = fcuda_ring_release(s->dev, b->slot, cuda_stream, f->err, sizeof f->err);
		if (rc)
			return rc;
	}
	s->state[b->slot] = SLOT_DAEMON;
	struct proto_msg m = { .type = PROTO_RELEASE };
	m.u.release.stream = s->geo.stream;
	m.u.release.slot = b->slot;
	memset(b, 0, sizeof *b);
	int rc = send_msg(f, &m);
	/* With reconnecting on, the slot went with the lost connection and the
	 * next feeder_stream_next reconnects: nothing for the caller to do. */
	if (rc && f->reconnect_ms && lost_connection(rc))
		return 0;
	return rc;
}

int feeder_stream_close(struct feeder_stream *s)
{
	if (!s)
		return 0;
	struct feeder *f = s->f;
	int rc = 0;
	/* A failed stream is already gone in the daemon. */
	if (!s->failed && !f->dead) {
		struct proto_msg m = { .type = PROTO_CLOSE_STREAM };
		m.u.close.stream = s->geo.stream;
		s->ended = 0;
		rc = send_msg(f, &m);
		int64_t deadline = deadline_of(CLOSE_WAIT_MS);
		while (rc == 0 && !s->ended && !s->failed) {
			rc = recv_one(f, deadline, &m, NULL);
			if (rc == 0)
				rc = dispatch(f, &m);
		}
	}
	stream_free(s);
	return rc;
}

int feeder_stream_pin(struct feeder_stream *s)
{
	struct feeder *f = s->f;
	s->want_pin = 1;
	if (s->pinned)
		return 0;
	int rc = fcuda_host_register(s->ring, (size_t)s->geo.ring_size, s->readonly, f->err,
				     sizeof f->err);
	if (rc == 0)
		s->pinned = 1;
	return rc;
}
