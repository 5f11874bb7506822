/* sockmsg.h — send and receive one SOCK_SEQPACKET message, optionally with a
 * file descriptor (SCM_RIGHTS).
 *
 * Both feederd and libfeeder talk through these two calls, so that message
 * boundaries, truncation (an oversized message), descriptor passing and
 * EINTR are handled once. Sockets may be blocking or not. */
#ifndef FEEDER_SOCKMSG_H
#define FEEDER_SOCKMSG_H

#include <stddef.h>

struct proto_msg;

/* Send len bytes as one message; pass_fd >= 0 travels with it. Never raises
 * SIGPIPE (MSG_NOSIGNAL). Returns 0, -EAGAIN on a full non-blocking socket,
 * FEEDER_ECLOSED if the peer is gone, or another -errno, with a sentence. */
int sockmsg_send(int sock, const void *buf, size_t len, int pass_fd, char *err, size_t errlen);

/* Encode m and send it (see sockmsg_send). */
int sockmsg_send_msg(int sock, const struct proto_msg *m, int pass_fd, char *err, size_t errlen);

/* Receive one message into buf (cap bytes). Returns its length (> 0), -EAGAIN
 * if nothing is waiting on a non-blocking socket, FEEDER_ECLOSED at end of
 * stream, FEEDER_EPROTO if the message was larger than cap (the rest is
 * discarded by the kernel), empty (0 bytes from a peer that is still
 * connected), or carried unexpected control data, or -errno.
 * A received descriptor is stored in *fd (close-on-exec) when fd is not NULL;
 * else it is closed. *fd is -1 when none came. */
int sockmsg_recv(int sock, void *buf, size_t cap, int *fd, char *err, size_t errlen);

/* Receive and decode one protocol message (buffer of PROTO_MAX_MESSAGE + 1
 * bytes, so that an oversized message is caught). Returns 0 or as above, or
 * proto_decode's codes. */
int sockmsg_recv_msg(int sock, struct proto_msg *m, int *fd, char *err, size_t errlen);

#endif
