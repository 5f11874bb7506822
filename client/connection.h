/* connection.h — libfeeder's insides shared by its modules: the
 * connection (connection.c: socket, message dispatch, reconnecting), the
 * streams (feeder_stream.c: rings, batches) and the daemon's figures
 * (status_query.c). Not installed; the API is feeder.h.
 *
 * A connection multiplexes its streams over one SEQPACKET socket, so the
 * call that waits on the socket dispatches every message that arrives
 * (conn_dispatch): BATCH_READY to its stream's queue, STREAM_END and stream
 * ERRORs to their stream, GOODBYE and fatal ERRORs kill the connection. */
#ifndef FEEDER_CONNECTION_H
#define FEEDER_CONNECTION_H

#include "feeder.h"
#include "protocol.h"

#include <stdint.h>
#include <sys/un.h>

#define ERR_MAX 320
/* How long feeder_stream_close waits for the daemon to confirm. */
#define CLOSE_WAIT_MS 2000

enum slot_state { SLOT_DAEMON = 0, SLOT_QUEUED = 1, SLOT_HELD = 2 };

/* The ring of a stream on a connection that was lost (the daemon restarted)
 * while the caller holds batches of it: kept (memfd, mapping, device ring)
 * until the last of them is released, then retired: its pages and
 * descriptors go, and only an empty read-only mapping of its address range
 * stays until the stream closes, so that a stale pointer into a released
 * batch (a Python view kept too long) reads zeros instead of faulting. */
struct old_ring {
	struct old_ring *next;
	uint8_t *ring;
	uint64_t size;
	uint32_t slots, held;
	uint8_t *state;         /* NULL once retired */
	struct fcuda_ring *dev; /* the device ring its device batches are in */
	int fd, pinned;
};

struct feeder_stream {
	struct feeder *f;
	struct feeder_stream *next;
	struct proto_stream_opened geo;
	struct feeder_stream_opts opts;  /* as first asked, to reopen after a reconnect */
	uint64_t total;                  /* batches of the whole stream */
	uint64_t delivered;              /* batches feeder_stream_next has handed out */
	uint64_t next_epoch, next_batch; /* where the stream goes on after them */
	struct old_ring *old;            /* rings of lost connections still in use */
	uint64_t sample_bytes;
	int fd;
	uint8_t *ring;
	int readonly;
	int pinned;             /* the ring is registered with CUDA */
	int want_pin;           /* feeder_stream_pin succeeded: pin reopened rings too */
	struct fcuda_ring *dev; /* FEEDER_MEMORY_DEVICE: the opened device ring */
	uint8_t *dev_base;      /* its tensor buffer here */
	uint64_t dev_stride;    /* bytes between slots' tensors */
	int dev_ordinal;
	struct proto_batch_ready *queue; /* circular, geo.slots entries */
	uint32_t qhead, qlen;
	uint8_t *state; /* enum slot_state per slot */
	int ended;      /* STREAM_END received (or, once CLOSE_STREAM
					    was sent, the daemon's answer to it) */
	int closing;    /* CLOSE_STREAM sent */
	int failed;     /* stream ERROR received: its code */
	char fail_msg[PROTO_TEXT_MAX];
	/* The trainer's data wait, sent with each RELEASE (feederd shows it):
	 * time blocked in feeder_stream_next, and time between a batch handed
	 * out and the next call (the trainer's compute). */
	uint64_t wait_us, compute_us, last_return_us;
};

struct feeder {
	int sock;
	int dead; /* 0, or the code every call now returns */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int reconnect_ms;    /* feeder_set_reconnect: 0 off, < 0 forever */
	uint32_t reconnects; /* connections re-established so far */
	uint32_t next_tag;
	struct feeder_stream *streams;
	struct proto_welcome welcome;
	char err[ERR_MAX];
};

/* Monotonic milliseconds (and microseconds); the poll timeout left until
 * deadline (-1: none); the deadline of a timeout (< 0: none). */
int64_t conn_now_ms(void);
uint64_t conn_now_us(void);
int conn_left_ms(int64_t deadline);
int64_t conn_deadline(int timeout_ms);

/* Mark f dead with code and the sentence (the first death wins); returns
 * f's death code. */
int conn_set_dead(struct feeder *f, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Send m; 0 or the connection's death code. */
int conn_send(struct feeder *f, const struct proto_msg *m);
/* Wait until deadline for one message: 0 (m filled; *fd the descriptor that
 * came with STREAM_OPENED when fd is not NULL), FEEDER_ETIMEDOUT, or the
 * connection's death code. */
int conn_recv(struct feeder *f, int64_t deadline, struct proto_msg *m, int *fd);
/* Handle a message nobody is waiting for: 0 or the death code. */
int conn_dispatch(struct feeder *f, const struct proto_msg *m);
/* After a call met `code`: reconnect (feeder_set_reconnect) when code is a
 * lost connection, reopening every stream; 0 when f works again, else the
 * code to return. */
int conn_revive(struct feeder *f, int code);
/* Whether code is a lost connection that a restarted daemon cures. */
int conn_lost(int code);
/* The open stream with daemon id `id`, or NULL. */
struct feeder_stream *conn_find_stream(struct feeder *f, uint32_t id);

/* feeder_stream.c, for the connection: free s (unmapping its rings); after a lost
 * connection, keep s's held rings and forget the rest (stream_detach); on
 * the new connection, reopen s at the batch after the last one delivered
 * (stream_reopen: 0, or the code that kills the connection; a refusal only
 * fails s). */
void stream_free(struct feeder_stream *s);
void stream_detach(struct feeder_stream *s);
int stream_reopen(struct feeder_stream *s, int64_t deadline);

#endif
