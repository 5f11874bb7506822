/* connection.c — libfeeder's connection to feederd: dialling and greeting
 * the daemon, sending and receiving messages, dispatching those nobody waits
 * for, and re-dialling a restarted daemon (see connection.h, feeder.h). */
#include "connection.h"

#include "feeder_cuda.h"
#include "sockmsg.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static __thread char connect_err[ERR_MAX];

/* feeder_connect with timeout 0: how long the one connection may take to be
 * greeted. */
#define CONNECT_ONCE_GREET_MS 10000

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

int64_t conn_now_ms(void)
{
	return (int64_t)(conn_now_us() / 1000);
}

uint64_t conn_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Milliseconds left until deadline (-1 = none) as a poll timeout. */
int conn_left_ms(int64_t deadline)
{
	if (deadline < 0)
		return -1;
	int64_t l = deadline - conn_now_ms();
	return l <= 0 ? 0 : (l > 1000000000 ? 1000000000 : (int)l);
}

int64_t conn_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : conn_now_ms() + timeout_ms;
}

int conn_set_dead(struct feeder *f, int code, const char *fmt, ...)
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

struct feeder_stream *conn_find_stream(struct feeder *f, uint32_t id)
{
	for (struct feeder_stream *s = f->streams; s; s = s->next)
		if (s->geo.stream == id)
			return s;
	return NULL;
}

/* Handle a message that is not the answer someone is waiting for. Returns 0
 * or the connection's death code. */
int conn_dispatch(struct feeder *f, const struct proto_msg *m)
{
	struct feeder_stream *s;
	switch (m->type) {
	case PROTO_BATCH_READY: {
		const struct proto_batch_ready *r = &m->u.ready;
		s = conn_find_stream(f, r->stream);
		if (!s)
			return 0; /* a stream we are closing: nothing to do */
		if (r->slot >= s->geo.slots || s->state[r->slot] != SLOT_DAEMON ||
		    r->samples > s->geo.batch || s->qlen >= s->geo.slots)
			return conn_set_dead(
				f, FEEDER_EPROTO,
				"daemon announced slot %u of stream %u, which it does not own",
				r->slot, r->stream);
		s->state[r->slot] = SLOT_QUEUED;
		s->queue[(s->qhead + s->qlen) % s->geo.slots] = *r;
		s->qlen++;
		return 0;
	}
	case PROTO_STREAM_END:
		if ((s = conn_find_stream(f, m->u.end.stream)))
			s->ended = 1;
		return 0;
	case PROTO_ERROR: {
		const struct proto_error *e = &m->u.error;
		if (e->fatal || (e->stream == 0 && e->tag == 0))
			return conn_set_dead(f, e->code, "feederd: %s", e->message);
		if (e->stream && (s = conn_find_stream(f, e->stream))) {
			if (s->closing)
				s->ended = 1; /* the answer to our CLOSE_STREAM */
			else if (!s->failed) {
				s->failed = e->code;
				snprintf(s->fail_msg, sizeof s->fail_msg, "%s", e->message);
			}
		}
		return 0;
	}
	case PROTO_GOODBYE:
		return conn_set_dead(f, FEEDER_ECLOSED, "feederd is shutting down");
	case PROTO_STREAM_OPENED: {
		/* The answer to an open that gave up waiting: the daemon holds a
		 * ring for nobody, so give it back. */
		struct proto_msg c = { .type = PROTO_CLOSE_STREAM };
		c.u.close.stream = m->u.opened.stream;
		return conn_send(f, &c);
	}
	default:
		/* Replies to requests nobody is waiting for any more (a timed-out
		 * open, a status reply): harmless. */
		return 0;
	}
}

/* Wait until deadline for one message. Returns 0 (m filled; *fd set if fd is
 * not NULL), FEEDER_ETIMEDOUT, or the connection's death code. */
int conn_recv(struct feeder *f, int64_t deadline, struct proto_msg *m, int *fd)
{
	if (fd)
		*fd = -1;
	if (f->dead)
		return f->dead;
	struct pollfd p = { .fd = f->sock, .events = POLLIN };
	for (;;) {
		int n = poll(&p, 1, conn_left_ms(deadline));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return conn_set_dead(f, -errno, "waiting for feederd failed: %s",
					     strerror(errno));
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
		return conn_set_dead(f, rc, "feederd closed the connection");
	if (rc < 0)
		return conn_set_dead(f, rc, "bad message from feederd: %s", err);
	if (!fd || m->type != PROTO_STREAM_OPENED) {
		if (fd && *fd >= 0) {
			close(*fd);
			*fd = -1;
			return conn_set_dead(f, FEEDER_EPROTO,
					     "feederd passed a descriptor with %s",
					     proto_type_name(m->type));
		}
	}
	return 0;
}

int conn_send(struct feeder *f, const struct proto_msg *m)
{
	if (f->dead)
		return f->dead;
	char err[ERR_MAX];
	int rc = sockmsg_send_msg(f->sock, m, -1, err, sizeof err);
	if (rc == FEEDER_ECLOSED) {
		/* The daemon usually said why before it closed (GOODBYE, a fatal
		 * ERROR): read what is left so that the caller gets that reason. */
		struct proto_msg left;
		while (!f->dead && conn_recv(f, 0, &left, NULL) == 0)
			conn_dispatch(f, &left);
	}
	if (rc < 0)
		return conn_set_dead(f, rc, "sending %s to feederd failed: %s",
				     proto_type_name(m->type), err);
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
		if (!retry || conn_left_ms(deadline) == 0)
			return connect_fail(-1, -e, "cannot connect to feederd at %s: %s", path,
					    strerror(e));
		int wait = conn_left_ms(deadline);
		usleep((useconds_t)(wait < 0 || wait > 20 ? 20 : wait) * 1000);
	}
}

/* HELLO / WELCOME on f->sock. Returns 0 or the failure (f->err says why). */
static int greet(struct feeder *f, int64_t deadline)
{
	struct proto_msg m = { .type = PROTO_HELLO };
	m.u.hello.pid = (uint32_t)getpid();
	snprintf(m.u.hello.agent, sizeof m.u.hello.agent, "libfeeder %s", FEEDER_VERSION);
	int rc = conn_send(f, &m);
	while (rc == 0) {
		rc = conn_recv(f, deadline, &m, NULL);
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
		rc = conn_set_dead(f, FEEDER_EPROTO, "feederd answered HELLO with %s",
				   proto_type_name(m.type));
	}
	if (rc == FEEDER_ETIMEDOUT)
		snprintf(f->err, sizeof f->err, "feederd at %s did not answer HELLO in time",
			 f->path);
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
	int64_t deadline = conn_deadline(timeout_ms);
	int sock = dial(path, deadline);
	/* One attempt still gives a daemon that accepted time to answer. */
	if (timeout_ms == 0)
		deadline = conn_deadline(CONNECT_ONCE_GREET_MS);
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

/* Tell the daemon that f's streams are closed, without waiting for it (a
 * daemon that does not read must not hold us): every batch goes with the
 * mappings, so their slots may go back at once. A connection closed without
 * this is a client that may still hold batches (its slots stay charged
 * until it exits). */
static void close_all_quietly(struct feeder *f)
{
	if (f->dead || f->sock < 0 || fcntl(f->sock, F_SETFL, O_NONBLOCK) != 0)
		return;
	char err[ERR_MAX];
	for (struct feeder_stream *s = f->streams; s; s = s->next) {
		if (!s->geo.stream || s->closing)
			continue;
		struct proto_msg m = { .type = PROTO_CLOSE_STREAM };
		m.u.close.stream = s->geo.stream;
		if (sockmsg_send_msg(f->sock, &m, -1, err, sizeof err) != 0)
			return;
	}
}

void feeder_disconnect(struct feeder *f)
{
	if (!f)
		return;
	close_all_quietly(f);
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

/* ---- Surviving a daemon restart ------------------------------------------- */

/* Connection losses that a restarted daemon cures. Refusals and protocol
 * errors are not among them: they would happen again. */
int conn_lost(int code)
{
	return code == FEEDER_ECLOSED || code == -ECONNRESET || code == -EPIPE ||
	       code == -ECONNREFUSED || code == -ENOENT;
}

/* After the call that met `code` on f: when reconnecting is enabled and code
 * is a lost connection, dial again with exponential backoff (10 ms doubling
 * to 1 s) until the reconnect timeout, greet, and reopen every stream.
 * Returns 0 when f works again, else the code to give the caller. */
int conn_revive(struct feeder *f, int code)
{
	if (!f->reconnect_ms || !f->dead || !conn_lost(code))
		return code;
	char why[ERR_MAX];
	snprintf(why, sizeof why, "%s", f->err);
	int64_t deadline = conn_deadline(f->reconnect_ms);
	int backoff = 10;
	int rc = code;
	for (;;) {
		if (f->sock >= 0)
			close(f->sock);
		f->sock = -1;
		for (struct feeder_stream *s = f->streams; s; s = s->next)
			if (s->ring)
				stream_detach(s);
		int wait = conn_left_ms(deadline);
		if (wait == 0)
			break;
		usleep((useconds_t)(wait < 0 || wait > backoff ? backoff : wait) * 1000);
		backoff = backoff >= 500 ? 1000 : backoff * 2;
		int sock = dial(f->path, conn_now_ms());
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
		int64_t step = deadline < 0 ? conn_now_ms() + 10000 : deadline;
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
			conn_set_dead(f, rc, "%s", why);
		if (!conn_lost(rc))
			break;
	}
	f->dead = 0;
	f->err[0] = '\0';
	return conn_set_dead(f, rc, "feederd at %s went away and could not be reached again: %s",
			     f->path, why);
}
