/* notify.c — sd_notify and sd_listen_fds wrappers (see notify.h); built
 * when libsystemd is found, notify_none.c otherwise. */
#include "notify.h"

#include "status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>

#include <systemd/sd-daemon.h>

void notify_ready(void)
{
	sd_notify(0, "READY=1");
}
void notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}
void notify_watchdog(void)
{
	sd_notify(0, "WATCHDOG=1");
}

void notify_status(const char *fmt, ...)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "STATUS=");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	sd_notify(0, line);
}

uint64_t notify_watchdog_usec(void)
{
	uint64_t usec = 0;
	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	return usec;
}

int notify_listen_fd(int *fd, char *err, size_t errlen)
{
	*fd = -1;
	int n = sd_listen_fds(1);
	if (n < 0)
		return status_fail(err, errlen, n, "socket activation: %s", status_str(n));
	if (n == 0)
		return 0;
	if (n > 1)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "socket activation passed %d sockets, feederd takes one", n);
	if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_SEQPACKET, 1, NULL, 0) <= 0)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "socket activation passed a descriptor that is not a listening "
				   "SOCK_SEQPACKET Unix socket (ListenSequentialPacket=)");
	*fd = SD_LISTEN_FDS_START;
	return 0;
}
