/* pack_msg.c — packer's one-line messages (see pack_msg.h). */
#include "pack_msg.h"

#include "packer.h"

#include <stdarg.h>
#include <stdio.h>

static int line_shown; /* a \r progress line is on the terminal */

void pack_msg_line_shown(int shown)
{
	line_shown = shown;
}

static void clear_line(void)
{
	if (line_shown) {
		fputs("\r\033[K", stderr);
		line_shown = 0;
	}
}

static void say(const char *prefix, const char *fmt, va_list ap)
{
	clear_line();
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void pack_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say("packer: warning: ", fmt, ap);
	va_end(ap);
}

void pack_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say("packer: ", fmt, ap);
	va_end(ap);
}

int pack_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	clear_line();
	fprintf(stderr, "packer: %s%s", cmd ? cmd : "", cmd ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try 'packer %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
	return PACK_EXIT_USAGE;
}
