/* metrics.c — Prometheus /metrics on libmicrohttpd (see metrics.h).
 *
 * The socket is made here (TCP via getaddrinfo, or AF_UNIX) and handed to
 * MHD with MHD_OPTION_LISTEN_SOCKET, so both kinds work the same way. MHD
 * runs one internal polling thread; its limits are what keep abusive
 * clients contained: 16 connections (4 per address), 16 KiB of memory per
 * connection (a request with larger headers is answered 431 or closed),
 * and 5 s of idleness before a connection is dropped. */
#include "metrics.h"

#include "status.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <arpa/inet.h>

#define METRICS_CONNECTIONS 16
#define METRICS_PER_IP 4
#define METRICS_CONN_MEMORY (16 * 1024)
#define METRICS_IDLE_S 5

struct metrics {
	struct MHD_Daemon *mhd;
	int fd;
	char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_mutex_t lock;
	char *text;
	size_t len;
};

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

static int listen_tcp(struct metrics *m, const char *spec, char *bound, size_t boundlen,
		      char *err, size_t errlen)
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
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *ai;
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
		snprintf(bound, boundlen, ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", addr, port);
	return 0;
}

static int listen_unix(struct metrics *m, const char *spec, char *bound, size_t boundlen,
		       char *err, size_t errlen)
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

int metrics_start(struct metrics **out, const char *spec, char *bound, size_t boundlen, char *err,
		  size_t errlen)
{
	*out = NULL;
	struct metrics *m = calloc(1, sizeof *m);
	if (!m)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	m->fd = -1;
	pthread_mutex_init(&m->lock, NULL);
	int rc = spec[0] == '/' ? listen_unix(m, spec, bound, boundlen, err, errlen)
				: listen_tcp(m, spec, bound, boundlen, err, errlen);
	if (rc) {
		pthread_mutex_destroy(&m->lock);
		free(m);
		return rc;
	}
	/* A unix socket has no peer address for MHD's per-IP limit. */
	unsigned per_ip = spec[0] == '/' ? 0 : METRICS_PER_IP;
	m->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				  answer, m, MHD_OPTION_LISTEN_SOCKET, m->fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_CONNECTIONS,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_CONN_MEMORY,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_IDLE_S,
				  MHD_OPTION_END);
	if (!m->mhd) {
		metrics_stop(m);
		return status_fail(err, errlen, -EIO, "metrics_listen '%s': libmicrohttpd did not "
				   "start", spec);
	}
	*out = m;
	return 0;
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	if (m->mhd)
		MHD_stop_daemon(m->mhd);
	if (m->fd >= 0)
		close(m->fd);
	if (m->unix_path[0])
		unlink(m->unix_path);
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
