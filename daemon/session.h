/* session.h — one client connection of feederd: its outbound queue, the
 * dispatch of its messages and the handlers of every request (HELLO,
 * OPEN_STREAM, RELEASE, CLOSE_STREAM, STATUS), and the streams it owns.
 *
 * The listener (listener.c) makes a session for each accepted connection;
 * the loop (server.c) hands it its socket's events (session_input,
 * session_flush), lets it service its streams after worker completions
 * (session_service), and drops it when it is dead (session_drop). Every
 * message is decoded and validated (proto_decode) before it acts; a
 * malformed one gets a fatal ERROR and only that client is dropped.
 *
 * Messages to the client are sent at once when the socket takes them, and
 * queued in order otherwise; the queue is bounded in bytes (max_queued): a
 * client that stops reading its replies is dropped with a logged reason,
 * not allowed to grow the daemon. All of it runs on the loop's thread. */
#ifndef FEEDER_SESSION_H
#define FEEDER_SESSION_H

#include "protocol.h"
#include "server_state.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct outmsg;

struct session {
	struct watch w; /* first: epoll data points here */
	struct server *srv;
	int fd;
	uint32_t id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	int admin; /* root or in admin_groups: sees every stream */
	int hello;
	int dead;          /* drop at the end of this loop turn */
	uint64_t since_us; /* accepted at (the HELLO deadline runs from here) */
	struct stream **streams;
	size_t nstreams, cap;
	uint64_t mem;                       /* ring bytes held */
	struct outmsg *out_head, *out_tail; /* waiting for the socket to drain */
	size_t out_bytes;                   /* their bytes (max_queued bounds it) */
	int want_out;                       /* EPOLLOUT is armed */
	struct session *next;
};

/* A new session for connection fd (non-blocking) of the peer cred, with id,
 * watched by the loop's epoll and linked into srv->sessions. Returns 0, or
 * a negative code (the caller closes fd). */
int session_create(struct server *srv, int fd, pid_t pid, uid_t uid, gid_t gid, int admin,
		   uint32_t id, char *err, size_t errlen);

/* The socket is readable: decode and handle up to a turn's worth of
 * messages. */
void session_input(struct session *c);
/* The socket is writable: send queued messages in order. */
void session_flush(struct session *c);

/* Send what is ready of each stream of c, end what is finished, report what
 * failed, refill free slots. Pool lock NOT held. Returns slots started. */
unsigned session_service(struct session *c, uint64_t now_us);

/* Send m (with descriptor fd, which stays the caller's; -1 for none). */
void session_send(struct session *c, const struct proto_msg *m, int fd);
/* An ERROR; fatal ones mark the session dead. */
void session_error(struct session *c, int code, uint32_t stream, uint32_t tag, int fatal,
		   const char *text);

/* Close every stream of c, stop watching it, close its socket (lingering,
 * so that a last fatal ERROR is not lost), unlink and free it. */
void session_drop(struct session *c);

#endif
