/* status.h — Feeder's error codes, shared by every component.
 *
 * Functions across Feeder return 0 on success or a negative code: either a
 * negated errno (-ENOENT, -EIO, ...) or one of the FEEDER_E* codes below,
 * which cover failures that errno has no good word for (defined in
 * feeder_types.h, the contract libfeeder's users see too). status_str()
 * names every code; the client library re-exports it as feeder_strerror(). */
#ifndef FEEDER_STATUS_H
#define FEEDER_STATUS_H

#include "feeder_types.h"

#include <stddef.h>

/* A short English phrase for code (0, -errno or FEEDER_E*). Never NULL. */
const char *status_str(int code);

/* printf into buf (of len bytes) and return code: the idiom
 * `return status_fail(err, errlen, -EINVAL, "bad %s", x);` keeps error paths
 * to one line. buf may be NULL. */
int status_fail(char *buf, size_t len, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
