/* log.h — feederd's log: one line per event on stderr, prefixed with its
 * syslog priority the sd-daemon way ("<3>stream 4: ..."), so journald files
 * each line at the right level and a terminal still reads well.
 *
 * Any thread may log; each line is written with a single write(2), so lines
 * from worker threads never interleave. Lines above the configured level are
 * dropped before formatting. */
#ifndef FEEDER_LOG_H
#define FEEDER_LOG_H

#include <syslog.h>

/* Lines with a priority numerically above level (LOG_ERR..LOG_DEBUG) are
 * dropped. The default is LOG_INFO. */
void log_set_level(int level);
int log_enabled(int prio);

void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
