/* pack_progress.h — the progress line of a long packer run (pack, verify).
 *
 * Counts files (or samples) and bytes and shows the rate and the time left;
 * on a terminal the line is redrawn in place, and pack_msg's messages clear
 * it before they print. */
#ifndef FEEDER_PACK_PROGRESS_H
#define FEEDER_PACK_PROGRESS_H

#include <stdint.h>

/* A progress line on stderr: "packer: 1234/20000 files  850 files/s
 * 93.2 MB/s  ETA 0:22". Shown (redrawn with \r at most 4 times a second)
 * when stderr is a terminal; otherwise silent unless verbose, in which case
 * one plain line is printed every 2 seconds. */
struct pack_progress {
	uint64_t total;
	uint64_t files, bytes;
	double start, last;
	int tty, verbose;
	const char *what; /* noun for the count, default "files" */
};

void pack_progress_init(struct pack_progress *p, uint64_t total, int verbose);
/* Add files and bytes done, redraw if due. */
void pack_progress_add(struct pack_progress *p, uint64_t files, uint64_t bytes);
/* Final line (terminal or verbose): totals, rate and elapsed time. */
void pack_progress_done(struct pack_progress *p);

/* Monotonic seconds. */
double pack_now(void);

#endif
