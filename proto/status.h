/* status.h — Feeder's error codes, shared by every component.
 *
 * Functions across Feeder return 0 on success or a negative code: either a
 * negated errno (-ENOENT, -EIO, ...) or one of the FEEDER_E* codes below,
 * which cover failures that errno has no good word for. status_str() names
 * every code; the client library re-exports it as feeder_strerror(). */
#ifndef FEEDER_STATUS_H
#define FEEDER_STATUS_H

#include <stddef.h>

enum {
	FEEDER_EBASE = 10000,
	FEEDER_ECORRUPT = -(FEEDER_EBASE + 1),   /* stored data fails its checks (CRC, bounds) */
	FEEDER_EVERSION = -(FEEDER_EBASE + 2),   /* format or protocol version not supported */
	FEEDER_EFORMAT = -(FEEDER_EBASE + 3),    /* not a Feeder dataset / malformed record */
	FEEDER_EPROTO = -(FEEDER_EBASE + 4),     /* malformed protocol message */
	FEEDER_EDECODE = -(FEEDER_EBASE + 5),    /* payload could not be decoded (bad JPEG) */
	FEEDER_EQUOTA = -(FEEDER_EBASE + 6),     /* a memory or count limit would be exceeded */
	FEEDER_ENODATASET = -(FEEDER_EBASE + 7), /* no dataset of that name */
	FEEDER_EBADNAME = -(FEEDER_EBASE + 8),   /* a name that is not allowed (path escape) */
	FEEDER_EINVAL = -(FEEDER_EBASE + 9),     /* an option or argument out of range */
	FEEDER_ECLOSED = -(FEEDER_EBASE + 10),   /* the peer closed the connection */
	FEEDER_ETIMEDOUT = -(FEEDER_EBASE + 11), /* nothing arrived in time */
	FEEDER_EEND = -(FEEDER_EBASE + 12),      /* end of the epoch: no more batches */
	FEEDER_ENODEV = -(FEEDER_EBASE + 13),    /* no CUDA device / CUDA not built */
	FEEDER_EDENIED = -(FEEDER_EBASE + 14),   /* the peer is not allowed */
	FEEDER_ESTREAM = -(FEEDER_EBASE + 15),   /* the stream ended with an error */
};

/* A short English phrase for code (0, -errno or FEEDER_E*). Never NULL. */
const char *status_str(int code);

/* printf into buf (of len bytes) and return code: the idiom
 * `return status_fail(err, errlen, -EINVAL, "bad %s", x);` keeps error paths
 * to one line. buf may be NULL. */
int status_fail(char *buf, size_t len, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
