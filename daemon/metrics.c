/* metrics.c — Prometheus /metrics on libmicrohttpd (see metrics.h).
 *
 * The socket is made here (TCP via getaddrinfo, or AF_UNIX) and handed to
 * MHD with MHD_OPTION_LISTEN_SOCKET, so both kinds work the same way. MHD
 * runs one internal polling thread; its limits are what keep abusive
 * clients contained: 16 connections (4 per address), 16 KiB of memory per
 * connection (a request with larger headers is answered 431 or closed),
 * and 5 s of idleness before a connection is dropped. */
#include "metrics.h"

#include "config.h"
#include "log.h"
#include "status.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#define METRICS_CONNECTIONS 16
#define METRICS_PER_PEER 4
#define METRICS_CONN_MEMORY (16 * 1024)
#define METRICS_IDLE_S 5
#define METRICS_REQUEST_S 5

/* One accepted connection, from MHD's start notification to its end. */
struct metrics_conn {
	int fd;               /* -1: the entry is free */
	uid_t uid;            /* the peer's, on a unix socket */
	uint64_t deadline_ns; /* UINT64_MAX: already shut down */
};

struct metrics {
	struct MHD_Daemon *mhd;
	int fd;
	int is_unix;
	char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_mutex_t lock;
	char *text;
	size_t len;
	/* the connections and the reaper that holds them to their deadline */
	pthread_mutex_t conn_lock;
	pthread_cond_t conn_wake;
	struct metrics_conn conns[METRICS_CONNECTIONS];
	pthread_t reaper;
	int reaper_started, stopping;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The peer's user on a unix socket; (uid_t)-1, one peer of its own, when
 * the kernel does not say. */
static uid_t peer_uid(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return (uid_t)-1;
	return cred.uid;
}

/* A free entry for a connection from uid, or NULL when there is none or
 * (unix socket) that user already holds METRICS_PER_PEER. conn_lock held. */
static struct metrics_conn *conn_slot(struct metrics *m, uid_t uid)
{
	struct metrics_conn *free_slot = NULL;
	unsigned same = 0;
	for (unsigned i = 0; i < METRICS_CONNECTIONS; i++) {
		struct metrics_conn *e = &m->conns[i];
		if (e->fd < 0)
			free_slot = free_slot ? free_slot : e;
		else if (m->is_unix && e->uid == uid)
			same++;
	}
	return same < METRICS_PER_PEER ? free_slot : NULL;
}

static void conn_start(struct metrics *m, struct MHD_Connection *c, void **ctx)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return;
	int fd = ci->connect_fd;
	uid_t uid = m->is_unix ? peer_uid(fd) : 0;
	pthread_mutex_lock(&m->conn_lock);
	struct metrics_conn *e = conn_slot(m, uid);
	if (e) {
		e->fd = fd;
		e->uid = uid;
		e->deadline_ns = now_ns() + METRICS_REQUEST_S * 1000000000ull;
		pthread_cond_signal(&m->conn_wake);
	} else {
		/* over the peer's share: MHD sees the end and closes it */
		shutdown(fd, SHUT_RDWR);
	}
	*ctx = e;
	pthread_mutex_unlock(&m->conn_lock);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **ctx,
			  enum MHD_ConnectionNotificationCode code)
{
	struct metrics *m = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		conn_start(m, c, ctx);
		return;
	}
	pthread_mutex_lock(&m->conn_lock);
	struct metrics_conn *e = *ctx;
	if (e)
		e->fd = -1;
	*ctx = NULL;
	pthread_mutex_unlock(&m->conn_lock);
}

/* A request answered: a kept-alive connection gets the time for its next. */
static void on_completed(void *cls, struct MHD_Connection *c, void **req,
			 enum MHD_RequestTerminationCode why)
{
	(void)req;
	struct metrics *m = cls;
	if (why != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		return; /* the connection ends */
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	pthread_mutex_lock(&m->conn_lock);
	struct metrics_conn *e = ci ? ci->socket_context : NULL;
	if (e && e->fd >= 0 && e->deadline_ns != UINT64_MAX)
		e->deadline_ns = now_ns() + METRICS_REQUEST_S * 1000000000ull;
	pthread_mutex_unlock(&m->conn_lock);
}

/* Shut down the connections past their deadline; the next deadline, or
 * UINT64_MAX for none. conn_lock held. */
static uint64_t reap(struct metrics *m, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	for (unsigned i = 0; i < METRICS_CONNECTIONS; i++) {
		struct metrics_conn *e = &m->conns[i];
		if (e->fd < 0 || e->deadline_ns == UINT64_MAX)
			continue;
		if (e->deadline_ns <= now) {
			shutdown(e->fd, SHUT_RDWR);
			e->deadline_ns = UINT64_MAX;
		} else if (e->deadline_ns < next) {
			next = e->deadline_ns;
		}
	}
	return next;
}

static void *reaper(void *arg)
{
	struct metrics *m = arg;
	pthread_mutex_lock(&m->conn_lock);
	while (!m->stopping) {
		uint64_t next = reap(m, now_ns());
		if (next == UINT64_MAX) {
			pthread_cond_wait(&m->conn_wake, &m->conn_lock);
		} else {
			struct timespec at = { .tv_sec = (time_t)(next / 1000000000u),
					       .tv_nsec = (long)(next % 1000000000u) };
			pthread_cond_timedwait(&m->conn_wake, &m->conn_lock, &at);
		}
	}
	pthread_mutex_unlock(&m->conn_lock);
	return NULL;
}

/* The table, its lock, and the reaper's condition on the monotonic clock. */
static void conns_init(struct metrics *m)
{
	for (unsigned i = 0; i < METRICS_CONNECTIONS; i++)
		m->conns[i].fd = -1;
	pthread_mutex_init(&m->conn_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->conn_wake, &ca);
	pthread_condattr_destroy(&ca);
}

static void conns_stop(struct metrics *m)
{
	if (!m->reaper_started)
		return;
	pthread_mutex_lock(&m->conn_lock);
	m->stopping = 1;
	pthread_cond_signal(&m->conn_wake);
	pthread_mutex_unlock(&m->conn_lock);
	pthread_join(m->reaper, NULL);
	m->reaper_started = 0;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	(void)version, (void)upload, (void)state;
	struct metrics *m = cls;
	struct MHD_Response *r;
	unsigned code = MHD_HTTP_OK;
	if (*upload_len) {
		*upload_len = 0; /* a body: ignored, then refused below */
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		static const char msg[] = "only GET /metrics\n";
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
		r = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg,
						    MHD_RESPMEM_PERSISTENT);
	} else if (strcmp(url, "/metrics") != 0) {
		static const char msg[] = "not found: feederd serves /metrics\n";
		code = MHD_HTTP_NOT_FOUND;
		r = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg,
						    MHD_RESPMEM_PERSISTENT);
	} else {
		pthread_mutex_lock(&m->lock);
		r = MHD_create_response_from_buffer(m->len, m->text ? m->text : (char *)"",
						    MHD_RESPMEM_MUST_COPY);
		pthread_mutex_unlock(&m->lock);
		if (r)
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
						"text/plain; version=0.0.4; charset=utf-8");
	}
	if (!r)
		return MHD_NO;
	enum MHD_Result rc = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return rc;
}

static int listen_tcp(struct metrics *m, const char *spec, char *bound, size_t boundlen, char *err,
		      size_t errlen)
{
	char host[256];
	const char *colon = strrchr(spec, ':');
	size_t hl = (size_t)(colon - spec);
	if (hl >= sizeof host)
		return status_fail(err, errlen, FEEDER_EINVAL, "metrics_listen '%s': host too long",
				   spec);
	memcpy(host, spec, hl);
	host[hl] = 0;
	if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') { /* [::1]:9477 */
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = 0;
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV },
			*ai;
	int g = getaddrinfo(host, colon + 1, &hints, &ai);
	if (g)
		return status_fail(err, errlen, FEEDER_EINVAL, "metrics_listen '%s': %s", spec,
				   gai_strerror(g));
	int rc = -EADDRNOTAVAIL;
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		int one = 1;
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) {
			m->fd = fd;
			rc = 0;
			break;
		}
		rc = -errno;
		close(fd);
	}
	freeaddrinfo(ai);
	if (rc)
		return status_fail(err, errlen, rc, "metrics_listen '%s': %s", spec, strerror(-rc));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char addr[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (getsockname(m->fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &in->sin_addr, addr, sizeof addr);
			port = ntohs(in->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *in = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &in->sin6_addr, addr, sizeof addr);
			port = ntohs(in->sin6_port);
		}
	}
	if (bound)
		snprintf(bound, boundlen, ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", addr,
			 port);
	return 0;
}

static int listen_unix(struct metrics *m, const char *spec, char *bound, size_t boundlen, char *err,
		       size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(spec);
	if (len >= sizeof sa.sun_path)
		return status_fail(err, errlen, FEEDER_EINVAL, "metrics_listen '%s': path too long",
				   spec);
	memcpy(sa.sun_path, spec, len + 1);
	struct stat st;
	if (lstat(spec, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "metrics_listen '%s': exists and is not a socket", spec);
		unlink(spec);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return status_fail(err, errlen, -errno, "metrics socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 64) != 0) {
		int rc = -errno;
		close(fd);
		return status_fail(err, errlen, rc, "metrics_listen '%s': %s", spec, strerror(-rc));
	}
	m->fd = fd;
	memcpy(m->unix_path, sa.sun_path, sizeof m->unix_path);
	if (bound && boundlen > len)
		memcpy(bound, spec, len + 1);
	return 0;
}

/* libmicrohttpd's own messages (a client gone mid-request, ...) as debug
 * lines of the log: unprefixed lines on stderr, one per connection reaped,
 * would let any HTTP client write the daemon's log. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	if (!log_enabled(LOG_DEBUG))
		return;
	char line[256];
	vsnprintf(line, sizeof line, fmt, ap);
	line[strcspn(line, "\n")] = 0;
	log_debug("metrics: %s", line);
}

/* Say so when the address bound serves beyond this machine. */
static void warn_exposed(const char *bound)
{
	char why[512];
	if (config_metrics_exposed(bound, why, sizeof why))
		log_warn("metrics: %s", why);
}

int metrics_start(struct metrics **out, const char *spec, char *bound, size_t boundlen, char *err,
		  size_t errlen)
{
	*out = NULL;
	struct metrics *m = calloc(1, sizeof *m);
	if (!m)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	m->fd = -1;
	m->is_unix = spec[0] == '/';
	pthread_mutex_init(&m->lock, NULL);
	conns_init(m);
	char addr[160] = "";
	int rc = m->is_unix ? listen_unix(m, spec, addr, sizeof addr, err, errlen)
			    : listen_tcp(m, spec, addr, sizeof addr, err, errlen);
	if (rc == 0 && (rc = pthread_create(&m->reaper, NULL, reaper, m)) != 0)
		rc = status_fail(err, errlen, -rc,
				 "metrics: no thread for the request deadlines: %s", strerror(rc));
	if (rc) {
		metrics_stop(m);
		return rc;
	}
	m->reaper_started = 1;
	/* A unix socket has no peer address: conn_start counts by user. */
	unsigned per_ip = m->is_unix ? 0 : METRICS_PER_PEER;
	m->mhd = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, answer, m,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, m->fd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_CONNECTIONS,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)METRICS_CONN_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)METRICS_IDLE_S, MHD_OPTION_NOTIFY_CONNECTION, on_connection, m,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, m, MHD_OPTION_END);
	if (!m->mhd) {
		metrics_stop(m);
		return status_fail(err, errlen, -EIO,
				   "metrics_listen '%s': libmicrohttpd did not "
				   "start",
				   spec);
	}
	if (!m->is_unix)
		warn_exposed(addr);
	if (bound)
		snprintf(bound, boundlen, "%s", addr);
	*out = m;
	return 0;
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	conns_stop(m);
	if (m->mhd) {
		MHD_stop_daemon(m->mhd);
		m->fd = -1; /* MHD closes the listening socket it was given */
	}
	if (m->fd >= 0)
		close(m->fd);
	if (m->unix_path[0])
		unlink(m->unix_path);
	pthread_cond_destroy(&m->conn_wake);
	pthread_mutex_destroy(&m->conn_lock);
	pthread_mutex_destroy(&m->lock);
	free(m->text);
	free(m);
}

void metrics_publish(struct metrics *m, const char *text, size_t len)
{
	char *copy = malloc(len + 1);
	if (!copy)
		return; /* scrapes keep the previous text */
	memcpy(copy, text, len);
	copy[len] = 0;
	pthread_mutex_lock(&m->lock);
	char *old = m->text;
	m->text = copy;
	m->len = len;
	pthread_mutex_unlock(&m->lock);
	free(old);
}
