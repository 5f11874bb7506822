/* log.c — priority-prefixed lines on stderr (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_int log_level = LOG_INFO;

void log_set_level(int level)
{
	atomic_store(&log_level, level);
}

int log_enabled(int prio)
{
	return prio <= atomic_load(&log_level);
}

void log_msg(int prio, const char *fmt, ...)
{
	if (!log_enabled(prio))
		return;
	char line[1024];
	int n = snprintf(line, sizeof(line), "<%d>", prio);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	/* A failed log write has nowhere to be reported. */
	ssize_t w = write(STDERR_FILENO, line, len);
	(void)w;
}
