/* pack_msg.h — packer's messages: one line each on stderr, starting
 * "packer: ".
 *
 * On a terminal a progress line (pack_progress.h) may be showing, redrawn in
 * place with \r; every message first clears it, so that a warning never
 * lands in the middle of it. The progress module tells this one when its
 * line is up (pack_msg_line_shown). Not thread-safe: packer prints from its
 * main thread only. */
#ifndef FEEDER_PACK_MSG_H
#define FEEDER_PACK_MSG_H

/* "packer: warning: <message>\n". */
void pack_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "packer: <message>\n". */
void pack_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A usage error of subcommand cmd ("pack images", "inspect"; NULL for
 * packer itself): "packer: [cmd: ]<message> (try 'packer [cmd ]--help')".
 * Returns PACK_EXIT_USAGE, for `return pack_usage_error(...)`. */
int pack_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A \r progress line is now showing (1) or finished with a newline (0). */
void pack_msg_line_shown(int shown);

#endif
