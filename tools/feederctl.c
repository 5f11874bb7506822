/* feederctl.c — ask a running feederd how it is doing.
 *
 *   feederctl [--socket PATH] [--timeout MS] status|datasets|streams [--json]
 *
 * One connection, one STATUS request (proto/protocol.h), the answer printed
 * as a table or, with --json, as one JSON object. The socket is --socket,
 * else $FEEDER_SOCKET, else /run/feeder/feederd.sock. Exit status: 0 ok,
 * 1 the daemon could not be reached or answered with an error, 2 usage. */
#include "protocol.h"
#include "sockmsg.h"
#include "status.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef FEEDER_VERSION
#define FEEDER_VERSION "unknown"
#endif

#define DEFAULT_SOCKET "/run/feeder/feederd.sock"
/* Streams and datasets listed at most (a guard against a runaway daemon). */
#define MAX_ENTRIES 65536

static const char usage_text[] =
	"usage: feederctl [--socket PATH] [--timeout MS] COMMAND [--json]\n"
	"\n"
	"Show what a running feederd is doing.\n"
	"\n"
	"commands:\n"
	"  status     uptime, clients, streams, memory, throughput, error counts\n"
	"  datasets   the datasets it serves\n"
	"  streams    every open stream: batches, images/s, replacements, client wait\n"
	"\n"
	"  --socket PATH  daemon socket (default $FEEDER_SOCKET, else " DEFAULT_SOCKET ")\n"
	"  --timeout MS   give up after MS milliseconds (default 5000)\n"
	"  --json         one JSON object instead of a table\n";

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Receive one message before deadline; an ERROR is turned into its code. */
static int recv_until(int sock, int64_t deadline, struct proto_msg *m, char *err, size_t errlen)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left < 0)
			left = 0;
		int n = poll(&p, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return status_fail(err, errlen, -errno, "poll: %s", strerror(errno));
		if (n == 0)
			return status_fail(err, errlen, FEEDER_ETIMEDOUT, "feederd did not answer in time");
		break;
	}
	int rc = sockmsg_recv_msg(sock, m, NULL, err, errlen);
	if (rc < 0)
		return rc;
	if (m->type == PROTO_ERROR)
		return status_fail(err, errlen, m->u.error.code, "feederd: %s", m->u.error.message);
	if (m->type == PROTO_GOODBYE)
		return status_fail(err, errlen, FEEDER_ECLOSED, "feederd is shutting down");
	return 0;
}

static int connect_daemon(const char *path, int64_t deadline, int *out, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path)
		return status_fail(err, errlen, -ENAMETOOLONG, "socket path '%s' is too long", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return status_fail(err, errlen, -errno, "socket: %s", strerror(errno));
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) != 0) {
		int e = errno;
		close(s);
		return status_fail(err, errlen, -e, "cannot connect to feederd at %s: %s", path,
				   strerror(e));
	}
	struct proto_msg m = { .type = PROTO_HELLO };
	m.u.hello.pid = (uint32_t)getpid();
	snprintf(m.u.hello.agent, sizeof m.u.hello.agent, "feederctl %s", FEEDER_VERSION);
	int rc = sockmsg_send_msg(s, &m, -1, err, errlen);
	if (rc == 0)
		rc = recv_until(s, deadline, &m, err, errlen);
	if (rc == 0 && m.type != PROTO_WELCOME)
		rc = status_fail(err, errlen, FEEDER_EPROTO, "feederd answered HELLO with %s",
				 proto_type_name(m.type));
	if (rc) {
		close(s);
		return rc;
	}
	*out = s;
	return 0;
}

static void human_bytes(uint64_t b, char *buf, size_t len)
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

static void print_status(const struct proto_status_reply *r, const char *path, int json)
{
	if (json) {
		printf("{\"socket\": ");
		json_str(path);
		printf(", \"uptime_ms\": %" PRIu64 ", \"clients\": %u, "
		       "\"streams\": %u, \"workers\": %u, \"datasets\": %u, \"memory_used\": %" PRIu64
		       ", \"memory_limit\": %" PRIu64 ", \"batches\": %" PRIu64 ", \"samples\": %" PRIu64
		       ", \"replacements\": %" PRIu64 ", \"decode_errors\": %" PRIu64
		       ", \"protocol_errors\": %" PRIu64 ", \"images_per_s\": %.1f}\n",
		       r->uptime_ms, r->clients, r->streams, r->workers, r->datasets,
		       r->memory_used, r->memory_limit, r->batches, r->samples, r->replacements,
		       r->decode_errors, r->protocol_errors, r->images_per_s);
		return;
	}
	uint64_t s = r->uptime_ms / 1000;
	char used[32], limit[32];
	human_bytes(r->memory_used, used, sizeof used);
	human_bytes(r->memory_limit, limit, sizeof limit);
	printf("feederd at %s\n", path);
	printf("  uptime        %" PRIu64 "h%02" PRIu64 "m%02" PRIu64 "s\n", s / 3600, s / 60 % 60,
	       s % 60);
	printf("  clients       %u\n  streams       %u\n  workers       %u\n  datasets      %u\n",
	       r->clients, r->streams, r->workers, r->datasets);
	printf("  ring memory   %s of %s\n", used, limit);
	printf("  batches       %" PRIu64 "\n  samples       %" PRIu64 "\n", r->batches, r->samples);
	printf("  images/s      %.1f\n", r->images_per_s);
	printf("  replacements  %" PRIu64 "\n  decode errors %" PRIu64
	       "\n  bad messages  %" PRIu64 "\n", r->replacements, r->decode_errors,
	       r->protocol_errors);
}

static const char *pipeline_name(uint32_t p)
{
	return p == PROTO_PIPE_JPEG ? "jpeg" : p == PROTO_PIPE_FEATURES ? "features" : "?";
}

static const char *kind_name(uint32_t k)
{
	return k == 1 ? "jpeg" : k == 2 ? "features" : "?";
}

/* Receive DATASET_INFO or STREAM_INFO entries up to LIST_END and print them. */

static const char *placement_name(uint32_t p)
{
	return p == PROTO_PLACE_GPU ? "gpu" : p == PROTO_PLACE_AUTO ? "auto" : "cpu";
}

/* "cpu", "gpu (device memory)", "auto: measuring", "auto -> gpu (cpu 12.1
 * ms, gpu 3.2 ms a batch)": what placement=auto chose, and why. */
static void placement_text(const struct proto_stream_info *s, char *buf, size_t len)
{
	const char *mem = s->memory == PROTO_MEM_DEVICE ? " (device memory)" : "";
	if (s->placement != PROTO_PLACE_AUTO)
		snprintf(buf, len, "%s%s", placement_name(s->active), mem);
	else if (s->deciding)
		snprintf(buf, len, "auto: measuring");
	else if (s->auto_cpu_ms > 0 && s->auto_gpu_ms > 0)
		snprintf(buf, len, "auto -> %s (cpu %.1f ms, gpu %.1f ms a batch)%s",
			 placement_name(s->active), (double)s->auto_cpu_ms, (double)s->auto_gpu_ms, mem);
	else
		snprintf(buf, len, "auto -> %s (no GPU)", placement_name(s->active));
}

static int print_list(int sock, uint32_t what, int64_t deadline, int json, char *err,
		      size_t errlen)
{
	uint32_t want = what == PROTO_STATUS_DATASETS ? PROTO_DATASET_INFO : PROTO_STREAM_INFO;
	if (json)
		printf("{\"%s\": [", what == PROTO_STATUS_DATASETS ? "datasets" : "streams");
	else if (what == PROTO_STATUS_DATASETS)
		printf("%-24s %-8s %10s %8s %8s %7s\n", "NAME", "KIND", "SAMPLES", "CLASSES", "FEAT_DIM",
		       "STREAMS");
	else
		printf("%6s %7s %7s %6s %-16s %-8s %5s %5s %5s %6s %17s %9s %6s %10s %10s  %s\n", "ID",
		       "SESSION", "PID", "UID", "DATASET", "PIPELINE", "BATCH", "SLOTS", "READY", "EPOCH",
		       "BATCHES", "IMAGES/S", "REPL", "WAIT_MS", "FULL_MS", "PLACEMENT");
	uint32_t n = 0;
	for (;;) {
		struct proto_msg m;
		int rc = recv_until(sock, deadline, &m, err, errlen);
		if (rc) {
			if (json)
				printf("]}\n");
			return rc;
		}
		if (m.type == PROTO_LIST_END) {
			if (m.u.list_end.count != n) {
				if (json)
					printf("]}\n");
				return status_fail(err, errlen, FEEDER_EPROTO,
						   "feederd listed %u entries but counted %u", n,
						   m.u.list_end.count);
			}
			break;
		}
		if (m.type != want || n == MAX_ENTRIES) {
			if (json)
				printf("]}\n");
			return status_fail(err, errlen, FEEDER_EPROTO, "unexpected %s in a listing",
					   proto_type_name(m.type));
		}
		if (m.type == PROTO_DATASET_INFO) {
			const struct proto_dataset_info *d = &m.u.dataset;
			if (json)
				printf("%s{\"name\": \"%s\", \"kind\": \"%s\", \"samples\": %" PRIu64
				       ", \"classes\": %u, \"feat_dim\": %u, \"streams\": %u}",
				       n ? ", " : "", d->name, kind_name(d->kind), d->samples, d->classes,
				       d->feat_dim, d->streams);
			else
				printf("%-24s %-8s %10" PRIu64 " %8u %8u %7u\n", d->name, kind_name(d->kind),
				       d->samples, d->classes, d->feat_dim, d->streams);
		} else {
			const struct proto_stream_info *s = &m.u.stream;
			if (json)
				printf("%s{\"stream\": %u, \"session\": %u, \"pid\": %u, \"uid\": %u, "
				       "\"dataset\": \"%s\", \"pipeline\": \"%s\", \"batch\": %u, "
				       "\"slots\": %u, \"ready\": %u, \"epoch\": %" PRIu64
				       ", \"batches_sent\": %" PRIu64 ", \"batches_total\": %" PRIu64
				       ", \"samples\": %" PRIu64 ", \"replacements\": %" PRIu64
				       ", \"images_per_s\": %.1f, \"client_wait_us\": %" PRIu64
				       ", \"ring_full_us\": %" PRIu64 ", \"placement\": \"%s\", "
				       "\"active\": \"%s\", \"memory\": \"%s\", \"deciding\": %s, "
				       "\"auto_cpu_ms\": %.3f, \"auto_gpu_ms\": %.3f}",
				       n ? ", " : "", s->stream, s->session, s->pid, s->uid, s->dataset,
				       pipeline_name(s->pipeline), s->batch, s->slots, s->ready, s->epoch,
				       s->batches_sent, s->batches_total, s->samples, s->replacements,
				       s->images_per_s, s->client_wait_us, s->ring_full_us,
				       placement_name(s->placement), placement_name(s->active),
				       s->memory == PROTO_MEM_DEVICE ? "device" : "host",
				       s->deciding ? "true" : "false", (double)s->auto_cpu_ms,
				       (double)s->auto_gpu_ms);
			else {
				char batches[40];
				snprintf(batches, sizeof batches, "%" PRIu64 "/%" PRIu64, s->batches_sent,
					 s->batches_total);
				char place[96];
				placement_text(s, place, sizeof place);
				printf("%6u %7u %7u %6u %-16s %-8s %5u %5u %5u %6" PRIu64
				       " %17s %9.1f %6" PRIu64 " %10.1f %10.1f  %s\n",
				       s->stream, s->session, s->pid, s->uid, s->dataset,
				       pipeline_name(s->pipeline), s->batch, s->slots, s->ready, s->epoch,
				       batches, s->images_per_s, s->replacements,
				       (double)s->client_wait_us / 1000, (double)s->ring_full_us / 1000,
				       place);
			}
		}
		n++;
	}
	if (json)
		printf("]}\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = getenv("FEEDER_SOCKET");
	if (!path || !*path)
		path = DEFAULT_SOCKET;
	const char *cmd = NULL;
	int json = 0;
	long timeout = 5000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage_text, stdout);
			return 0;
		} else if (strcmp(a, "--version") == 0) {
			printf("feederctl %s\n", FEEDER_VERSION);
			return 0;
		} else if (strcmp(a, "--json") == 0) {
			json = 1;
		} else if (strcmp(a, "--socket") == 0 && i + 1 < argc) {
			path = argv[++i];
		} else if (strcmp(a, "--timeout") == 0 && i + 1 < argc) {
			char *end;
			timeout = strtol(argv[++i], &end, 10);
			if (*end || timeout <= 0 || timeout > 3600000) {
				fprintf(stderr, "feederctl: --timeout: '%s' is not a number of "
						"milliseconds from 1 to 3600000\n", argv[i]);
				return 2;
			}
		} else if (a[0] == '-') {
			fprintf(stderr, "feederctl: unknown or incomplete option '%s' (try --help)\n", a);
			return 2;
		} else if (!cmd) {
			cmd = a;
		} else {
			fprintf(stderr, "feederctl: unexpected argument '%s' (try --help)\n", a);
			return 2;
		}
	}
	uint32_t what;
	if (!cmd) {
		fputs(usage_text, stderr);
		return 2;
	} else if (strcmp(cmd, "status") == 0) {
		what = PROTO_STATUS_SUMMARY;
	} else if (strcmp(cmd, "datasets") == 0) {
		what = PROTO_STATUS_DATASETS;
	} else if (strcmp(cmd, "streams") == 0) {
		what = PROTO_STATUS_STREAMS;
	} else {
		fprintf(stderr, "feederctl: unknown command '%s' (status, datasets or streams)\n", cmd);
		return 2;
	}
	char err[512];
	int64_t deadline = now_ms() + timeout;
	int sock = -1;
	int rc = connect_daemon(path, deadline, &sock, err, sizeof err);
	if (rc) {
		fprintf(stderr, "feederctl: %s\n", err);
		return 1;
	}
	struct proto_msg m = { .type = PROTO_STATUS };
	m.u.status.what = what;
	rc = sockmsg_send_msg(sock, &m, -1, err, sizeof err);
	if (rc == 0 && what == PROTO_STATUS_SUMMARY) {
		rc = recv_until(sock, deadline, &m, err, sizeof err);
		if (rc == 0 && m.type != PROTO_STATUS_REPLY)
			rc = status_fail(err, sizeof err, FEEDER_EPROTO, "feederd answered STATUS with %s",
					 proto_type_name(m.type));
		if (rc == 0)
			print_status(&m.u.status_reply, path, json);
	} else if (rc == 0) {
		rc = print_list(sock, what, deadline, json, err, sizeof err);
	}
	close(sock);
	if (rc) {
		fflush(stdout);
		fprintf(stderr, "feederctl: %s\n", err);
		return 1;
	}
	return 0;
}
