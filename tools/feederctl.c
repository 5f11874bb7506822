/* feederctl.c — ask a running feederd how it is doing.
 *
 *   feederctl [--socket PATH] [--timeout MS] status|datasets|streams [--json]
 *   feederctl [--socket PATH] top [--once] [--interval MS]
 *
 * A libfeeder client like any trainer: feeder_connect, then
 * feeder_get_status / _datasets / _streams, the answer printed as a table or,
 * with --json, as one JSON object. The socket is --socket, else
 * $FEEDER_SOCKET, else FEEDER_DEFAULT_SOCKET. Exit status: 0 ok, 1 the
 * daemon could not be reached or answered with an error, 2 usage. */
#include "feederctl.h"

#include "argtab.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
	"usage: feederctl [--socket PATH] [--timeout MS] COMMAND [--json]\n"
	"\n"
	"Show what a running feederd is doing.\n"
	"\n"
	"commands:\n"
	"  status     uptime, clients, streams, memory, throughput, error counts\n"
	"  datasets   the datasets it serves\n"
	"  streams    open streams (your own; everyone's for root and the admin group):\n"
	"             batches, samples/s, the trainer's data wait, replacements, placement,\n"
	"             and under each row its pipeline's settings (augmentation included)\n"
	"  top        a live view of the daemon and its streams, refreshed every second;\n"
	"             q quits (--once: one frame on stdout)\n"
	"\n";

/* The command line. */
static struct {
	const char *path;
	int json, once, version, help;
	int timeout, interval;
} args = { .timeout = 5000, .interval = 1000 };

static struct argtab options[] = {
	ARGTAB_STRING("socket", 0, &args.path, "PATH",
		      "daemon socket (default $FEEDER_SOCKET, else " FEEDER_DEFAULT_SOCKET ")"),
	ARGTAB_INT("timeout", 0, &args.timeout, 1, 3600000, "MS",
		   "give up after MS milliseconds (default 5000)"),
	ARGTAB_FLAG("json", 0, &args.json, "one JSON object instead of a table"),
	ARGTAB_FLAG("once", 0, &args.once, "top: print one frame and exit"),
	ARGTAB_INT("interval", 0, &args.interval, 100, 3600000, "MS",
		   "top: refresh period (default 1000)"),
	ARGTAB_FLAG("version", 0, &args.version, "print the version"),
	ARGTAB_FLAG("help", 'h', &args.help, "this text"),
	ARGTAB_END,
};

void fctl_human_bytes(uint64_t b, char *buf, size_t len)
{
	const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

/* A JSON string literal of s (paths may hold quotes or control bytes). */
static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_status(const struct feeder_status *r, const char *path, int json)
{
	if (json) {
		printf("{\"socket\": ");
		json_str(path);
		printf(", \"uptime_ms\": %" PRIu64 ", \"clients\": %u, "
		       "\"streams\": %u, \"workers\": %u, \"datasets\": %u, \"memory_used\": %" PRIu64
		       ", \"memory_limit\": %" PRIu64 ", \"batches\": %" PRIu64
		       ", \"samples\": %" PRIu64 ", \"replacements\": %" PRIu64
		       ", \"decode_errors\": %" PRIu64 ", \"protocol_errors\": %" PRIu64
		       ", \"samples_per_s\": %.1f"
		       ", \"workers_busy\": %.4f, \"stage_seconds\": {",
		       r->uptime_ms, r->clients, r->streams, r->workers, r->datasets,
		       r->memory_used, r->memory_limit, r->batches, r->samples, r->replacements,
		       r->decode_errors, r->protocol_errors, r->samples_per_s, r->workers_busy);
		for (int i = 0; i < FEEDER_STAGES; i++)
			printf("%s\"%s\": %.6f", i ? ", " : "", fctl_stage_names[i], r->stage_s[i]);
		printf("}, \"cache\": {\"bytes\": %" PRIu64 ", \"limit\": %" PRIu64
		       ", \"peak_bytes\": %" PRIu64 ", \"hits\": %" PRIu64 ", \"misses\": %" PRIu64
		       ", \"fetches\": %" PRIu64 ", \"fetched_bytes\": %" PRIu64
		       ", \"retries\": %" PRIu64 ", \"failures\": %" PRIu64
		       ", \"wait_seconds\": %.6f}}\n",
		       r->cache_bytes, r->cache_limit, r->cache_peak_bytes, r->cache_hits,
		       r->cache_misses, r->cache_fetches, r->cache_fetched_bytes, r->cache_retries,
		       r->cache_failures, r->cache_wait_s);
		return;
	}
	uint64_t s = r->uptime_ms / 1000;
	char used[32], limit[32];
	fctl_human_bytes(r->memory_used, used, sizeof used);
	fctl_human_bytes(r->memory_limit, limit, sizeof limit);
	printf("feederd at %s\n", path);
	printf("  uptime        %" PRIu64 "h%02" PRIu64 "m%02" PRIu64 "s\n", s / 3600, s / 60 % 60,
	       s % 60);
	printf("  clients       %u\n  streams       %u\n  workers       %u\n  datasets      %u\n",
	       r->clients, r->streams, r->workers, r->datasets);
	printf("  ring memory   %s of %s\n", used, limit);
	printf("  batches       %" PRIu64 "\n  samples       %" PRIu64 "\n", r->batches,
	       r->samples);
	printf("  samples/s     %.1f\n", r->samples_per_s);
	char busy[16];
	fctl_share_text((float)r->workers_busy, busy, sizeof busy);
	printf("  workers busy  %s (last 10 s)\n", busy);
	printf("  replacements  %" PRIu64 "\n  decode errors %" PRIu64 "\n  bad messages  %" PRIu64
	       "\n",
	       r->replacements, r->decode_errors, r->protocol_errors);
	if (r->cache_limit > 0) {
		char cb[32], cl[32], cp[32], fb[32];
		fctl_human_bytes(r->cache_bytes, cb, sizeof cb);
		fctl_human_bytes(r->cache_limit, cl, sizeof cl);
		fctl_human_bytes(r->cache_peak_bytes, cp, sizeof cp);
		fctl_human_bytes(r->cache_fetched_bytes, fb, sizeof fb);
		printf("  shard cache   %s of %s (peak %s), %" PRIu64 " hits, %" PRIu64 " misses\n",
		       cb, cl, cp, r->cache_hits, r->cache_misses);
		printf("  fetched       %" PRIu64 " shards, %s, %" PRIu64 " retries, %" PRIu64
		       " failures, waited %.2f s\n",
		       r->cache_fetches, fb, r->cache_retries, r->cache_failures, r->cache_wait_s);
	}
}

const char *const fctl_stage_names[FEEDER_STAGES] = {
	"read", "decode", "transform", "features", "gpu",
};

void fctl_share_text(float share, char *buf, size_t len)
{
	if (share < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.0f %%", 100.0 * share);
}

const char *fctl_pipeline_name(uint32_t p)
{
	return p == FEEDER_PIPE_JPEG       ? "jpeg"
	       : p == FEEDER_PIPE_FEATURES ? "features"
	       : p == FEEDER_PIPE_WAVE     ? "wave"
					   : "?";
}

static const char *kind_name(uint32_t k)
{
	return k == 1 ? "jpeg" : k == 2 ? "features" : k == 3 ? "wave" : "?";
}

static const char *placement_name(uint32_t p)
{
	return p == FEEDER_PLACEMENT_GPU ? "gpu" : p == FEEDER_PLACEMENT_AUTO ? "auto" : "cpu";
}

/* "cpu", "gpu (device memory)", "auto: measuring", "auto -> gpu (cpu 12.1
 * ms, gpu 3.2 ms a batch)": what placement=auto chose, and why. */
void fctl_placement_text(const struct feeder_stream_status *s, char *buf, size_t len)
{
	const char *mem = s->memory == FEEDER_MEMORY_DEVICE ? " (device memory)" : "";
	if (s->placement != FEEDER_PLACEMENT_AUTO)
		snprintf(buf, len, "%s%s", placement_name(s->active), mem);
	else if (s->deciding)
		snprintf(buf, len, "auto: measuring");
	else if (s->auto_cpu_ms > 0 && s->auto_gpu_ms > 0)
		snprintf(buf, len, "auto -> %s (cpu %.1f ms, gpu %.1f ms a batch)%s",
			 placement_name(s->active), (double)s->auto_cpu_ms, (double)s->auto_gpu_ms,
			 mem);
	else
		snprintf(buf, len, "auto -> %s (no GPU)", placement_name(s->active));
}

static void print_datasets(const struct feeder_dataset_status *d, size_t n, int json)
{
	if (json)
		printf("{\"datasets\": [");
	else
		printf("%-24s %-8s %10s %8s %8s %7s\n", "NAME", "KIND", "SAMPLES", "CLASSES",
		       "FEAT_DIM", "STREAMS");
	for (size_t i = 0; i < n; i++) {
		if (json)
			printf("%s{\"name\": \"%s\", \"kind\": \"%s\", \"samples\": %" PRIu64
			       ", \"classes\": %u, \"feat_dim\": %u, \"streams\": %u}",
			       i ? ", " : "", d[i].name, kind_name(d[i].kind), d[i].samples,
			       d[i].classes, d[i].feat_dim, d[i].streams);
		else
			printf("%-24s %-8s %10" PRIu64 " %8u %8u %7u\n", d[i].name,
			       kind_name(d[i].kind), d[i].samples, d[i].classes, d[i].feat_dim,
			       d[i].streams);
	}
	if (json)
		printf("]}\n");
}

/* s as a JSON string's contents: the daemon's text is printable ASCII
 * (proto_decode checks it); quotes and backslashes are escaped. */
static void print_json_text(const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
}

static void print_streams(const struct feeder_stream_status *st, size_t n, int json)
{
	if (json)
		printf("{\"streams\": [");
	else
		printf("%6s %7s %7s %6s %-16s %-8s %5s %5s %5s %6s %17s %9s %6s %8s %10s %10s  %s\n",
		       "ID", "SESSION", "PID", "UID", "DATASET", "PIPELINE", "BATCH", "SLOTS",
		       "READY", "EPOCH", "BATCHES", "SAMPLES/S", "REPL", "DATAWAIT", "WAIT_MS",
		       "FULL_MS", "PLACEMENT");
	for (size_t i = 0; i < n; i++) {
		const struct feeder_stream_status *s = &st[i];
		if (json) {
			printf("%s{\"stream\": %u, \"session\": %u, \"pid\": %u, \"uid\": %u, "
			       "\"dataset\": \"%s\", \"pipeline\": \"%s\", \"batch\": %u, "
			       "\"slots\": %u, \"ready\": %u, \"epoch\": %" PRIu64
			       ", \"batches_sent\": %" PRIu64 ", \"batches_total\": %" PRIu64
			       ", \"samples\": %" PRIu64 ", \"replacements\": %" PRIu64
			       ", \"samples_per_s\": %.1f, \"batches_per_s\": %.2f"
			       ", \"client_wait_us\": %" PRIu64 ", \"ring_full_us\": %" PRIu64
			       ", \"placement\": \"%s\", "
			       "\"active\": \"%s\", \"memory\": \"%s\", \"deciding\": %s, "
			       "\"auto_cpu_ms\": %.3f, \"auto_gpu_ms\": %.3f, \"filling\": %u, "
			       "\"trainer_reports\": %s, \"trainer_wait_us\": %" PRIu64
			       ", \"trainer_compute_us\": %" PRIu64 ", \"wait_share_10s\": %.4f, "
			       "\"wait_share_total\": %.4f, \"bytes_per_s\": %.1f, \"stage_seconds\": {",
			       i ? ", " : "", s->stream, s->session, s->pid, s->uid, s->dataset,
			       fctl_pipeline_name(s->pipeline), s->batch, s->slots, s->ready,
			       s->epoch, s->batches_sent, s->batches_total, s->samples,
			       s->replacements, s->samples_per_s,
			       s->batch ? s->samples_per_s / s->batch : 0.0, s->client_wait_us,
			       s->ring_full_us, placement_name(s->placement),
			       placement_name(s->active),
			       s->memory == FEEDER_MEMORY_DEVICE ? "device" : "host",
			       s->deciding ? "true" : "false", (double)s->auto_cpu_ms,
			       (double)s->auto_gpu_ms, s->filling,
			       s->trainer_reports ? "true" : "false", s->trainer_wait_us,
			       s->trainer_compute_us, (double)s->wait_share_10s,
			       (double)s->wait_share_total, s->bytes_per_s);
			for (int k = 0; k < FEEDER_STAGES; k++)
				printf("%s\"%s\": %.6f", k ? ", " : "", fctl_stage_names[k],
				       s->stage_s[k]);
			printf("}, \"settings\": \"");
			print_json_text(s->settings);
			printf("\"}");
			continue;
		}
		char batches[40];
		snprintf(batches, sizeof batches, "%" PRIu64 "/%" PRIu64, s->batches_sent,
			 s->batches_total);
		char place[96];
		fctl_placement_text(s, place, sizeof place);
		char wait[16];
		fctl_share_text(s->wait_share_10s, wait, sizeof wait);
		printf("%6u %7u %7u %6u %-16s %-8s %5u %5u %5u %6" PRIu64 " %17s %9.1f %6" PRIu64
		       " %8s %10.1f %10.1f  %s\n",
		       s->stream, s->session, s->pid, s->uid, s->dataset,
		       fctl_pipeline_name(s->pipeline), s->batch, s->slots, s->ready, s->epoch,
		       batches, s->samples_per_s, s->replacements, wait,
		       (double)s->client_wait_us / 1000, (double)s->ring_full_us / 1000, place);
		/* The pipeline's settings (augmentation included) under the row. */
		if (s->settings[0])
			printf("%6s %s\n", "", s->settings);
	}
	if (json)
		printf("]}\n");
}

/* The command word from the command line; NULL when done (--help,
 * --version: *rc 0) or wrong (said: *rc 2). */
static const char *parse_args(int argc, char **argv, int *rc)
{
	char err[512], *ops[1];
	int n;
	*rc = 2;
	if (argtab_parse(options, argc, argv, ops, 1, &n, err, sizeof err)) {
		fprintf(stderr, "feederctl: %s (try --help)\n", err);
		return NULL;
	}
	*rc = 0;
	if (args.help || args.version) {
		if (args.help) {
			fputs(usage_text, stdout);
			argtab_help(stdout, options);
		} else {
			printf("feederctl %s\n", FEEDER_VERSION);
		}
		return NULL;
	}
	*rc = 2;
	if (n < 1) {
		fputs(usage_text, stderr);
		argtab_help(stderr, options);
		return NULL;
	}
	const char *cmd = ops[0];
	if (strcmp(cmd, "status") && strcmp(cmd, "datasets") && strcmp(cmd, "streams") &&
	    strcmp(cmd, "top")) {
		fprintf(stderr,
			"feederctl: unknown command '%s' (status, datasets, streams or top)\n",
			cmd);
		return NULL;
	}
	if ((args.once || args.interval != 1000) && strcmp(cmd, "top")) {
		fprintf(stderr, "feederctl: --once and --interval are options of top\n");
		return NULL;
	}
	if (args.json && !strcmp(cmd, "top")) {
		fprintf(stderr, "feederctl: top has no --json (feederctl streams --json has the "
				"same figures)\n");
		return NULL;
	}
	*rc = 0;
	return cmd;
}

int main(int argc, char **argv)
{
	int rc;
	const char *cmd = parse_args(argc, argv, &rc);
	if (!cmd)
		return rc;
	const char *path = args.path;
	int json = args.json;
	if (!path || !*path)
		path = getenv("FEEDER_SOCKET");
	if (!path || !*path)
		path = FEEDER_DEFAULT_SOCKET;
	struct feeder *f;
	/* One attempt: a daemon that is not there is an answer, not a wait. */
	rc = feeder_connect(path, 0, &f);
	if (rc) {
		fprintf(stderr, "feederctl: %s\n", feeder_last_error(NULL));
		return 1;
	}
	int ms = args.timeout;
	if (strcmp(cmd, "top") == 0) {
		rc = fctl_top(f, path, args.once, args.interval, ms);
		feeder_disconnect(f);
		return rc;
	}
	if (strcmp(cmd, "status") == 0) {
		struct feeder_status st;
		rc = feeder_get_status(f, ms, &st);
		if (rc == 0)
			print_status(&st, path, json);
	} else if (strcmp(cmd, "datasets") == 0) {
		struct feeder_dataset_status *d;
		size_t n;
		rc = feeder_get_datasets(f, ms, &d, &n);
		if (rc == 0)
			print_datasets(d, n, json);
		free(d);
	} else {
		struct feeder_stream_status *s;
		size_t n;
		rc = feeder_get_streams(f, ms, &s, &n);
		if (rc == 0)
			print_streams(s, n, json);
		free(s);
	}
	if (rc) {
		fflush(stdout);
		fprintf(stderr, "feederctl: %s\n", feeder_last_error(f));
	}
	feeder_disconnect(f);
	return rc ? 1 : 0;
}
