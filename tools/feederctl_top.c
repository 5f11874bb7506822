/* feederctl_top.c — `feederctl top`: is my GPU starving, live.
 *
 * One frame a second: the daemon (uptime, clients, workers and how busy
 * they are, ring memory, the shard cache of remote datasets when there is
 * one, where the workers' time goes by stage) and one
 * line per stream (client pid, dataset, pipeline, samples/s, MB/s, the
 * share of the trainer's time spent waiting for data over the last 10 s
 * and since the stream opened, the ring: slots being filled / held by the
 * trainer / all, replacements, placement). Plain ANSI (clear, home), so it
 * works over ssh and in tmux; the terminal is put in non-canonical mode to
 * read 'q' and restored on any exit. `--once` prints one frame for
 * scripts. */
#include "feederctl.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int frame(struct feeder *f, const char *path, int timeout_ms, FILE *out)
{
	struct feeder_status st;
	struct feeder_stream_status *ss = NULL;
	size_t n = 0;
	int rc = feeder_get_status(f, timeout_ms, &st);
	if (rc == 0)
		rc = feeder_get_streams(f, timeout_ms, &ss, &n);
	if (rc) {
		free(ss);
		return rc;
	}
	uint64_t up = st.uptime_ms / 1000;
	char used[32], limit[32];
	fctl_human_bytes(st.memory_used, used, sizeof used);
	fctl_human_bytes(st.memory_limit, limit, sizeof limit);
	fprintf(out,
		"feederd at %s  up %" PRIu64 "h%02" PRIu64 "m%02" PRIu64 "s  %u clients  "
		"%u streams  %u datasets\n",
		path, up / 3600, up / 60 % 60, up % 60, st.clients, st.streams, st.datasets);
	char busy[16];
	fctl_share_text((float)st.workers_busy, busy, sizeof busy);
	fprintf(out, "workers %u, busy %s (last 10 s)  samples/s %.1f  ring memory %s of %s\n",
		st.workers, busy, st.samples_per_s, used, limit);
	double sum = 0;
	for (int i = 0; i < FEEDER_STAGES; i++)
		sum += st.stage_s[i];
	if (st.cache_limit > 0) {
		char cb[32], cl[32], fb[32];
		fctl_human_bytes(st.cache_bytes, cb, sizeof cb);
		fctl_human_bytes(st.cache_limit, cl, sizeof cl);
		fctl_human_bytes(st.cache_fetched_bytes, fb, sizeof fb);
		fprintf(out,
			"shard cache %s of %s  hits %" PRIu64 "  misses %" PRIu64
			"  fetched %" PRIu64 " (%s)  failures %" PRIu64 "  waited %.2f s\n",
			cb, cl, st.cache_hits, st.cache_misses, st.cache_fetches, fb,
			st.cache_failures, st.cache_wait_s);
	}
	fprintf(out, "worker time:");
	for (int i = 0; i < FEEDER_STAGES; i++)
		fprintf(out, "  %s %.0f %%", fctl_stage_names[i],
			sum > 0 ? 100 * st.stage_s[i] / sum : 0);
	fprintf(out, "\n\n%6s %7s %-16s %-8s %10s %8s %8s %8s %9s %6s  %s\n", "STREAM", "PID",
		"DATASET", "PIPELINE", "SAMPLES/S", "MB/S", "WAIT10S", "WAITALL", "RING", "REPL",
		"PLACEMENT");
	for (size_t i = 0; i < n; i++) {
		const struct feeder_stream_status *s = &ss[i];
		char w10[16], wall[16], ring[32], place[96];
		fctl_share_text(s->wait_share_10s, w10, sizeof w10);
		fctl_share_text(s->wait_share_total, wall, sizeof wall);
		snprintf(ring, sizeof ring, "%u/%u/%u", s->filling, s->ready, s->slots);
		fctl_placement_text(s, place, sizeof place);
		fprintf(out, "%6u %7u %-16s %-8s %10.1f %8.1f %8s %8s %9s %6" PRIu64 "  %s\n",
			s->stream, s->pid, s->dataset, fctl_pipeline_name(s->pipeline),
			s->samples_per_s, s->bytes_per_s / 1e6, w10, wall, ring, s->replacements,
			place);
	}
	if (n == 0)
		fprintf(out, "(no streams)\n");
	free(ss);
	return 0;
}

int fctl_top(struct feeder *f, const char *path, int once, int interval_ms, int timeout_ms)
{
	if (once) {
		int rc = frame(f, path, timeout_ms, stdout);
		if (rc)
			fprintf(stderr, "feederctl: %s\n", feeder_last_error(f));
		return rc ? 1 : 0;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "feederctl top: needs a terminal (use --once for one frame)\n");
		return 1;
	}
	struct termios saved, raw;
	if (tcgetattr(STDIN_FILENO, &saved) != 0) {
		fprintf(stderr, "feederctl top: %s\n", strerror(errno));
		return 1;
	}
	raw = saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	fputs("\x1b[?25l", stdout); /* hide the cursor */
	int rc = 0;
	while (!stop) {
		/* Build the frame first, then clear and draw: no flicker. */
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);
		if (!mem) {
			rc = -ENOMEM;
			break;
		}
		rc = frame(f, path, timeout_ms, mem);
		fclose(mem);
		if (rc) {
			free(buf);
			break;
		}
		fputs("\x1b[H\x1b[2J", stdout);
		fwrite(buf, 1, len, stdout);
		fputs("\n(q quits)", stdout);
		fflush(stdout);
		free(buf);
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		if (poll(&p, 1, interval_ms) > 0) {
			char c;
			if (read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
				break;
		}
	}
	fputs("\x1b[?25h\n", stdout);
	fflush(stdout);
	tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	if (rc) {
		fprintf(stderr, "feederctl: %s\n", feeder_last_error(f));
		return 1;
	}
	return 0;
}
