/* notify.h — feederd's side of the systemd service protocol: readiness,
 * status lines, stopping, the watchdog, and socket activation.
 *
 * With libsystemd (notify.c) these go through sd_notify and
 * sd_listen_fds, which do nothing when the daemon was not started by systemd
 * (no NOTIFY_SOCKET / LISTEN_FDS in the environment). Without libsystemd they
 * do nothing at all (notify_none.c) and the daemon always binds its own socket. */
#ifndef FEEDER_NOTIFY_H
#define FEEDER_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

void notify_ready(void);
void notify_stopping(void);
void notify_watchdog(void);
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The watchdog interval systemd asked for (WatchdogSec), in microseconds;
 * 0 when there is none. */
uint64_t notify_watchdog_usec(void);
/* Set *fd to the listening SEQPACKET Unix socket passed by socket
 * activation, or -1 when there is none, and return 0. Returns a negative
 * code with a sentence in err if systemd passed something else. */
int notify_listen_fd(int *fd, char *err, size_t errlen);

#endif
