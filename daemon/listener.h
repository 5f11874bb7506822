/* listener.h — feederd's listening socket and who may connect to it.
 *
 * listener_open binds the configured socket (0660, socket_group, created
 * under a temporary name and renamed into place so a client that sees the
 * path can connect at once) or takes the one systemd passed. listener_accept
 * takes every waiting connection, asks the kernel who it is (SO_PEERCRED,
 * SO_PEERGROUPS), and either makes a session or refuses it with a fatal
 * ERROR saying why: not in allow_users/allow_groups, the daemon full
 * (max_clients, with reserved_connections kept for root and admin_groups),
 * or the user at max_clients_per_user.
 *
 * A refused connection — and a session dropped for a fatal error — lingers
 * half-closed (listener_linger) until the peer hangs up or a short time
 * passes: closing at once would reset a connection whose unread input is
 * still queued and lose the ERROR that explains the refusal. */
#ifndef FEEDER_LISTENER_H
#define FEEDER_LISTENER_H

#include "server_state.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bind the socket or take systemd's; sets srv->listen_fd (non-blocking,
 * close-on-exec) and srv->bound. Returns 0 or a negative code with err. */
int listener_open(struct server *srv, char *err, size_t errlen);
/* Stop listening: close the socket and remove the file if we made it. */
void listener_close(struct server *srv);

/* Accept and admit or refuse every waiting connection. */
void listener_accept(struct server *srv);

/* Half-close fd and keep it until the peer hangs up (or a few seconds), so
 * that what was sent last reaches it; fd is the listener's from here. */
void listener_linger(struct server *srv, int fd);
/* A lingering connection's events (r is the watch the loop got). */
void listener_linger_event(struct server *srv, struct watch *w, uint32_t events);
/* Close lingering connections that hung up or waited long enough (all of
 * them when now_us is 0). */
void listener_sweep(struct server *srv, uint64_t now_us);

/* Whether the peer on fd (uid, gid) is root or in one of the n groups gids
 * (its primary group or a supplementary one it had when it connected). */
int listener_peer_in_groups(int fd, uid_t uid, gid_t gid, const gid_t *gids, unsigned n);

#endif
