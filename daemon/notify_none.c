/* notify_none.c — notify.h without libsystemd (Meson builds it instead of
 * notify.c): nothing to tell, no socket activation, no watchdog; feederd
 * then always binds its own socket. */
#include "notify.h"

void notify_ready(void)
{
}
void notify_stopping(void)
{
}
void notify_watchdog(void)
{
}
void notify_status(const char *fmt, ...)
{
	(void)fmt;
}
uint64_t notify_watchdog_usec(void)
{
	return 0;
}
int notify_listen_fd(int *fd, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	*fd = -1;
	return 0;
}
