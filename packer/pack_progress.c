/* pack_progress.c — the progress line (see pack_progress.h). */
#include "pack_progress.h"

#include "pack_msg.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double pack_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void pack_progress_init(struct pack_progress *p, uint64_t total, int verbose)
{
	memset(p, 0, sizeof(*p));
	p->total = total;
	p->tty = isatty(STDERR_FILENO);
	p->verbose = verbose;
	p->start = p->last = pack_now();
	p->what = "files";
}

static void progress_draw(struct pack_progress *p, double now, int final)
{
	double el = now - p->start;
	double fps = el > 0 ? (double)p->files / el : 0,
	       mbs = el > 0 ? (double)p->bytes / el / 1e6 : 0;
	char eta[32] = "";
	if (!final && fps > 0 && p->total > p->files) {
		unsigned long s = (unsigned long)((double)(p->total - p->files) / fps + 0.5);
		snprintf(eta, sizeof(eta), "  ETA %lu:%02lu", s / 60, s % 60);
	} else if (final) {
		snprintf(eta, sizeof(eta), "  in %.1f s", el);
	}
	if (p->tty)
		fputs("\r\033[K", stderr);
	fprintf(stderr, "packer: %llu/%llu %s  %.0f %s/s  %.1f MB/s%s",
		(unsigned long long)p->files, (unsigned long long)p->total, p->what, fps, p->what,
		mbs, eta);
	if (p->tty && !final) {
		pack_msg_line_shown(1);
	} else {
		fputc('\n', stderr);
		pack_msg_line_shown(0);
	}
	fflush(stderr);
}

void pack_progress_add(struct pack_progress *p, uint64_t files, uint64_t bytes)
{
	p->files += files;
	p->bytes += bytes;
	if (!p->tty && !p->verbose)
		return;
	/* Checking the clock every file costs a vDSO call: cheap enough. */
	double now = pack_now();
	if (now - p->last < (p->tty ? 0.25 : 2.0))
		return;
	p->last = now;
	progress_draw(p, now, 0);
}

void pack_progress_done(struct pack_progress *p)
{
	if (!p->tty && !p->verbose)
		return;
	progress_draw(p, pack_now(), 1);
}
