/* listener.c — the listening socket, peer credentials, admission and
 * lingering close of refused connections (see listener.h). */
#include "listener.h"

#include "log.h"
#include "notify.h"
#include "protocol.h"
#include "session.h"
#include "sockmsg.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A connection refused at accept (or a session dropped for a fatal error):
 * its ERROR is sent and the socket half-closed, but the descriptor is kept
 * until the client hangs up. */
struct refused {
	struct watch w; /* first: epoll data points here */
	int fd;
	int done;          /* close at the next sweep */
	uint64_t until_us; /* give up waiting for the hang-up then */
	struct refused *next;
};

/* How long, and how many at once, refused connections are kept; past the
 * cap they are closed at once (the reason may then be lost, never a
 * descriptor). */
#define REFUSED_LINGER_US 2000000
#define REFUSED_MAX 256

/* ---- the socket ---------------------------------------------------------- */

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
		if (unlink(path) != 0 && errno != ENOENT) {
			int e = errno;
			close(fd);
			return status_fail(err, errlen, -e, "cannot remove the stale socket %s: %s",
					   path, strerror(e));
		}
	}
	/* Bind and listen under a temporary name, then rename into place: a
	 * client that sees the path can connect at once (no window between
	 * bind and listen). */
	struct sockaddr_un tmp = { .sun_family = AF_UNIX };
	int n = snprintf(tmp.sun_path, sizeof(tmp.sun_path), "%s.%d", path, (int)getpid());
	int use_tmp = n > 0 && (size_t)n < sizeof(tmp.sun_path);
	const struct sockaddr_un *at = use_tmp ? &tmp : &sa;
	if (use_tmp)
		unlink(tmp.sun_path); /* a leftover of our own pid, if any */
	mode_t old = umask(0117);     /* the socket file is created 0660 */
	int rc = bind(fd, (const struct sockaddr *)at, sizeof(*at));
	umask(old);
	if (rc != 0) {
		int e = errno;
		close(fd);
		return status_fail(err, errlen, -e, "cannot bind %s: %s", at->sun_path,
				   strerror(e));
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
			return status_fail(err, errlen, -e,
					   "cannot make %s mode 0660, group %s: %s", path,
					   srv->cfg.socket_group, strerror(e));
		return status_fail(err, errlen, -e, "cannot make %s mode 0660: %s", path,
				   strerror(e));
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

int listener_open(struct server *srv, char *err, size_t errlen)
{
	int lfd;
	int rc = notify_listen_fd(&lfd, err, errlen);
	if (rc)
		return rc;
	if (lfd < 0) {
		rc = bind_socket(srv, err, errlen);
		if (rc == 0)
			log_info("listening on %s", srv->cfg.socket_path);
		return rc;
	}
	int fl = fcntl(lfd, F_GETFL);
	if (fl < 0 || fcntl(lfd, F_SETFL, fl | O_NONBLOCK) != 0 ||
	    fcntl(lfd, F_SETFD, FD_CLOEXEC) != 0) {
		int e = errno;
		close(lfd);
		return status_fail(err, errlen, -e, "the socket passed by systemd: fcntl: %s",
				   strerror(e));
	}
	srv->listen_fd = lfd;
	log_info("listening on the socket passed by systemd");
	return 0;
}

void listener_close(struct server *srv)
{
	if (srv->listen_fd >= 0) {
		epoll_ctl(srv->epfd, EPOLL_CTL_DEL, srv->listen_fd, NULL); /* may not be watched */
		close(srv->listen_fd);
		srv->listen_fd = -1;
	}
	if (srv->bound) {
		if (unlink(srv->cfg.socket_path) != 0 && errno != ENOENT)
			log_warn("cannot remove %s: %s", srv->cfg.socket_path, strerror(errno));
		srv->bound = 0;
	}
}

/* ---- lingering close ------------------------------------------------------ */

void listener_linger(struct server *srv, int fd)
{
	if (shutdown(fd, SHUT_WR) != 0) {
		/* Already reset by the peer: nothing more reaches it. */
		close(fd);
		return;
	}
	struct refused *r = srv->nrefused < REFUSED_MAX ? calloc(1, sizeof(*r)) : NULL;
	if (r) {
		r->w.kind = WATCH_REFUSED;
		r->fd = fd;
		r->until_us = server_now_us() + REFUSED_LINGER_US;
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = &r->w };
		if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) == 0) {
			r->next = srv->refused;
			srv->refused = r;
			srv->nrefused++;
			return;
		}
		log_debug("lingering close: epoll_ctl: %s", strerror(errno));
		free(r);
	}
	close(fd);
}

void listener_linger_event(struct server *srv, struct watch *w, uint32_t events)
{
	(void)srv;
	struct refused *r = (struct refused *)w;
	uint8_t buf[PROTO_MAX_MESSAGE];
	for (;;) {
		ssize_t n = recv(r->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			r->done = 1;
		break;
	}
	if (events & (EPOLLHUP | EPOLLERR))
		r->done = 1;
}

void listener_sweep(struct server *srv, uint64_t now)
{
	for (struct refused **p = &srv->refused; *p;) {
		struct refused *r = *p;
		if (r->done || now == 0 || now >= r->until_us) {
			*p = r->next;
			close(r->fd); /* also leaves the epoll set */
			free(r);
			srv->nrefused--;
		} else {
			p = &r->next;
		}
	}
}

/* ---- admission ------------------------------------------------------------- */

/* Send a fatal ERROR to a connection that is not served and let it go. */
static void refuse(struct server *srv, int fd, uint32_t id, int code, const char *text)
{
	struct proto_msg m = { .type = PROTO_ERROR };
	m.u.error.code = code;
	m.u.error.fatal = 1;
	snprintf(m.u.error.message, sizeof(m.u.error.message), "%s", text);
	char err[256];
	int rc = sockmsg_send_msg(fd, &m, -1, err, sizeof(err));
	if (rc)
		log_debug("client %u: the refusal could not be sent: %s", id, err);
	listener_linger(srv, fd);
}

int listener_peer_in_groups(int fd, uid_t uid, gid_t gid, const gid_t *gids, unsigned n)
{
	if (uid == 0)
		return 1;
	for (unsigned i = 0; i < n; i++)
		if (gids[i] == gid)
			return 1;
	if (n == 0)
		return 0;
	gid_t some[64], *groups = some;
	socklen_t len = sizeof(some);
	int ok = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0;
	if (!ok && errno == ERANGE && (groups = malloc(len)) != NULL)
		ok = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0;
	int in = 0;
	for (size_t j = 0; ok && !in && j < len / sizeof(gid_t); j++)
		for (unsigned i = 0; i < n && !in; i++)
			in = groups[j] == gids[i];
	if (groups != some)
		free(groups);
	return in;
}

/* Root is always served (it could read the rings anyway); otherwise, when
 * allow_users or allow_groups is set, the peer's uid must be listed or one
 * of its groups. */
static int peer_allowed(const struct config *cfg, int fd, uid_t uid, gid_t gid)
{
	if (cfg->n_allow_uids == 0 && cfg->n_allow_gids == 0)
		return 1;
	for (unsigned i = 0; i < cfg->n_allow_uids; i++)
		if (cfg->allow_uids[i] == uid)
			return 1;
	return listener_peer_in_groups(fd, uid, gid, cfg->allow_gids, cfg->n_allow_gids);
}

/* Why the daemon has no room for this peer, or NULL. Admins (root,
 * admin_groups) may use the reserved connections; nobody passes
 * max_clients; nobody but an admin holds more than max_clients_per_user. */
static const char *no_room(struct server *srv, uid_t uid, int admin, char *why, size_t len)
{
	const struct config *cfg = &srv->cfg;
	if (srv->nsessions >= cfg->max_clients) {
		snprintf(why, len,
			 "the daemon serves its maximum number of clients (max_clients = %u)",
			 cfg->max_clients);
		return why;
	}
	if (admin)
		return NULL;
	if (srv->nsessions >= cfg->max_clients - cfg->reserved_connections) {
		snprintf(why, len,
			 "the daemon serves its maximum number of clients (max_clients = %u, "
			 "of which %u are reserved for administrators)",
			 cfg->max_clients, cfg->reserved_connections);
		return why;
	}
	unsigned mine = 0;
	for (struct session *c = srv->sessions; c; c = c->next)
		mine += c->uid == uid;
	if (mine >= cfg->max_clients_per_user) {
		snprintf(why, len, "user %u already has %u connections (max_clients_per_user = %u)",
			 (unsigned)uid, mine, cfg->max_clients_per_user);
		return why;
	}
	return NULL;
}

void listener_accept(struct server *srv)
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
		uint32_t id = ++srv->next_session;
		char text[PROTO_TEXT_MAX];
		if (!peer_allowed(&srv->cfg, fd, cred.uid, cred.gid)) {
			log_warn(
				"client %u (pid %d, uid %u, gid %u): not in allow_users/allow_groups; refused",
				id, (int)cred.pid, (unsigned)cred.uid, (unsigned)cred.gid);
			snprintf(
				text, sizeof(text),
				"user %u is not allowed to use feederd (not in allow_users or allow_groups)",
				(unsigned)cred.uid);
			refuse(srv, fd, id, FEEDER_EDENIED, text);
			continue;
		}
		int admin = listener_peer_in_groups(fd, cred.uid, cred.gid, srv->cfg.admin_gids,
						    srv->cfg.n_admin_gids);
		if (no_room(srv, cred.uid, admin, text, sizeof(text))) {
			log_warn("client %u (pid %d, uid %u): refused: %s", id, (int)cred.pid,
				 (unsigned)cred.uid, text);
			refuse(srv, fd, id, FEEDER_EQUOTA, text);
			continue;
		}
		/* Room for many BATCH_READY notices before a slow reader makes
		 * the loop queue them. */
		int sndbuf = 1 << 20;
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) != 0)
			log_debug("client %u: SO_SNDBUF: %s", id, strerror(errno));
		char err[256];
		if (session_create(srv, fd, cred.pid, cred.uid, cred.gid, admin, id, err,
				   sizeof(err)) != 0) {
			log_warn("client %u: %s; closed", id, err);
			close(fd);
			continue;
		}
		log_info("client %u connected: pid %d, uid %u, gid %u%s", id, (int)cred.pid,
			 (unsigned)cred.uid, (unsigned)cred.gid, admin ? " (admin)" : "");
	}
}
