/* server.h — feederd's event loop: the listening socket, client sessions,
 * message dispatch, stream lifetimes, signals, and live figures.
 *
 * One thread runs everything except decoding: an epoll loop over the
 * listening socket (bound here, or passed by systemd socket activation), one
 * SEQPACKET connection per client, a signalfd (SIGTERM/SIGINT stop, SIGHUP
 * rescans the datasets), an eventfd written by the worker pool when a slot
 * completes, and a timerfd for rates, STATUS= lines and the watchdog.
 *
 * Every client message is decoded and validated (proto_decode) before it
 * acts; a malformed one gets a fatal ERROR and only that client is dropped.
 * A client that disappears has its streams taken out of the schedule at
 * once; their rings are unmapped and their memory returned when the worker
 * tasks still running on them finish. */
#ifndef FEEDER_SERVER_H
#define FEEDER_SERVER_H

#include "config.h"

#include <stddef.h>

struct server;

/* Scan the datasets, open the socket, start the workers. Blocks SIGTERM,
 * SIGINT and SIGHUP in the calling thread (and so in the workers). */
int server_create(struct server **out, const struct config *cfg, char *err, size_t errlen);
/* Serve until SIGTERM or SIGINT: then stop accepting, say GOODBYE to every
 * client and return 0. Returns a negative code if the loop itself fails. */
int server_run(struct server *srv, char *err, size_t errlen);
/* Join the workers, free every stream and session, remove the socket file
 * if this server created it. */
void server_destroy(struct server *srv);

#endif
