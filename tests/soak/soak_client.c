/* soak_client.c — one consumer of tests/soak.sh: streams a dataset through
 * libfeeder and appends one line per fully read batch to a record file, so
 * that a client killed with SIGKILL at any moment can be restarted and resume
 * at the batch after the last one it recorded.
 *
 *   soak_client --socket S --dataset D --record FILE --samples N
 *               [--batch B] [--seed S] [--epochs E] [--train 0|1] [--size PX]
 *               [--dtype u8|f16|f32] [--slots K] [--delay-ms MS] [--max-batches M]
 *               [--reconnect MS]
 *
 * A record line is "EPOCH BATCH COUNT LABEL:HASH ... end\n", HASH being the
 * CRC-32C of the sample's tensor bytes, written with one write() after the
 * batch was read and before it is released. On start the client drops a
 * trailing partial line (a kill in the middle of a write), then opens the
 * stream at the epoch and start_batch after the last complete line: the
 * daemon's batches are a pure function of (seed, epoch, batch), so the
 * record of a killed-and-restarted client must equal that of one that never
 * died. tests/soak.sh compares the two. With --reconnect it also lives
 * through restarts of the daemon (feeder_set_reconnect), which must not
 * change a byte of what it records either.
 *
 * Exit status: 0 done (all epochs recorded, or --max-batches reached), 1
 * failure. */
#include "check.h"
#include "crc32c.h"
#include "feeder.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 30000

struct args {
	const char *socket, *dataset, *record;
	uint64_t samples;
	uint32_t batch, epochs, size, slots, delay_ms;
	int reconnect_ms;
	uint64_t seed, max_batches;
	int train, dtype;
};

/* The last complete record line's (epoch, batch); truncates the file after
 * it. Returns 1 if there was one, 0 for an empty or missing record. */
static int record_last(const char *path, uint64_t *epoch, uint64_t *batch)
{
	FILE *f = fopen(path, "r+");
	if (!f) {
		CHECKF(errno == ENOENT, "%s: %s", path, strerror(errno));
		return 0;
	}
	char *line = NULL;
	size_t cap = 0;
	long good = 0;
	int found = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, f)) > 0) {
		unsigned long long e, b;
		if (n < 5 || line[n - 1] != '\n' || strcmp(line + n - 5, " end\n") != 0 ||
		    sscanf(line, "%llu %llu", &e, &b) != 2)
			break;
		*epoch = e;
		*batch = b;
		found = 1;
		good = ftell(f);
	}
	free(line);
	CHECKF(ftruncate(fileno(f), good) == 0, "truncate %s: %s", path, strerror(errno));
	fclose(f);
	return found;
}

static void usage(void)
{
	fprintf(stderr, "usage: soak_client --socket S --dataset D --record FILE --samples N "
			"[--batch B] [--seed S] [--epochs E] [--train 0|1] [--size PX] "
			"[--dtype u8|f16|f32] [--slots K] [--delay-ms MS] [--max-batches M] "
			"[--reconnect MS]\n");
	exit(1);
}

static void parse(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "socket", 1, 0, 's' },      { "dataset", 1, 0, 'd' },   { "record", 1, 0, 'r' },
		{ "samples", 1, 0, 'n' },     { "batch", 1, 0, 'b' },     { "seed", 1, 0, 'S' },
		{ "epochs", 1, 0, 'e' },      { "train", 1, 0, 't' },     { "size", 1, 0, 'z' },
		{ "dtype", 1, 0, 'T' },       { "slots", 1, 0, 'k' },     { "delay-ms", 1, 0, 'w' },
		{ "max-batches", 1, 0, 'm' }, { "reconnect", 1, 0, 'R' }, { 0, 0, 0, 0 },
	};
	*a = (struct args){ .batch = 8,
			    .epochs = 1000,
			    .size = 32,
			    .slots = 4,
			    .train = 1,
			    .dtype = FEEDER_DTYPE_U8 };
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			a->socket = optarg;
			break;
		case 'd':
			a->dataset = optarg;
			break;
		case 'r':
			a->record = optarg;
			break;
		case 'n':
			a->samples = strtoull(optarg, NULL, 10);
			break;
		case 'b':
			a->batch = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'S':
			a->seed = strtoull(optarg, NULL, 10);
			break;
		case 'e':
			a->epochs = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 't':
			a->train = atoi(optarg);
			break;
		case 'z':
			a->size = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'k':
			a->slots = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'w':
			a->delay_ms = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'm':
			a->max_batches = strtoull(optarg, NULL, 10);
			break;
		case 'R':
			a->reconnect_ms = atoi(optarg);
			break;
		case 'T':
			a->dtype = strcmp(optarg, "u8") == 0    ? FEEDER_DTYPE_U8
				   : strcmp(optarg, "f16") == 0 ? FEEDER_DTYPE_F16
				   : strcmp(optarg, "f32") == 0 ? FEEDER_DTYPE_F32
								: 0;
			if (!a->dtype)
				usage();
			break;
		default:
			usage();
		}
	}
	if (!a->socket || !a->dataset || !a->record || !a->samples || !a->batch || optind != argc)
		usage();
}

int main(int argc, char **argv)
{
	struct args a;
	parse(argc, argv, &a);
	uint64_t per_epoch = (a.samples + a.batch - 1) / a.batch;
	uint64_t epoch = 0, start = 0, last_e, last_b;
	if (record_last(a.record, &last_e, &last_b)) {
		epoch = last_e;
		start = last_b + 1;
		if (start == per_epoch) {
			epoch++;
			start = 0;
		}
	}
	if (epoch >= a.epochs)
		return 0;

	struct feeder *f;
	int rc = feeder_connect(a.socket, TIMEOUT_MS, &f);
	CHECKF(rc == 0, "connect: %s (%s)", feeder_last_error(NULL), feeder_strerror(rc));
	feeder_set_reconnect(f, a.reconnect_ms);
	struct feeder_stream_opts o;
	feeder_stream_opts_init(&o);
	snprintf(o.dataset, sizeof o.dataset, "%s", a.dataset);
	o.batch = a.batch;
	o.seed = a.seed;
	o.epoch = epoch;
	o.epochs = a.epochs - (uint32_t)epoch;
	o.start_batch = start;
	o.slots = a.slots;
	o.dtype = a.dtype;
	o.layout = a.dtype == FEEDER_DTYPE_U8 ? FEEDER_LAYOUT_NHWC : FEEDER_LAYOUT_NCHW;
	o.jpeg.height = o.jpeg.width = a.size;
	o.jpeg.train = a.train;
	struct feeder_stream *s;
	rc = feeder_stream_open(f, &o, TIMEOUT_MS, &s);
	CHECKF(rc == 0, "open %s at epoch %llu batch %llu: %s (%s)", a.dataset,
	       (unsigned long long)epoch, (unsigned long long)start, feeder_last_error(f),
	       feeder_strerror(rc));
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	CHECKF(info.batches_per_epoch == per_epoch && info.samples == a.samples,
	       "the stream has %llu batches per epoch of %llu samples, expected %llu of %llu",
	       (unsigned long long)info.batches_per_epoch, (unsigned long long)info.samples,
	       (unsigned long long)per_epoch, (unsigned long long)a.samples);

	int out = open(a.record, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	CHECKF(out >= 0, "%s: %s", a.record, strerror(errno));
	size_t cap = 64 + (size_t)a.batch * 24;
	char *line = malloc(cap);
	CHECK(line);
	for (uint64_t done = 0; !a.max_batches || done < a.max_batches; done++) {
		struct feeder_batch b;
		rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc == FEEDER_EEND)
			break;
		CHECKF(rc == 0, "next: %s (%s)", feeder_last_error(f), feeder_strerror(rc));
		CHECKF(b.epoch == epoch && b.batch_index == start,
		       "got epoch %llu batch %llu, expected epoch %llu batch %llu",
		       (unsigned long long)b.epoch, (unsigned long long)b.batch_index,
		       (unsigned long long)epoch, (unsigned long long)start);
		CHECK(b.count >= 1 && b.count <= a.batch && b.bytes % b.count == 0);
		size_t one = b.bytes / b.count;
		int len = snprintf(line, cap, "%llu %llu %u", (unsigned long long)b.epoch,
				   (unsigned long long)b.batch_index, b.count);
		for (uint32_t i = 0; i < b.count; i++)
			len += snprintf(line + len, cap - (size_t)len, " %d:%08x", b.labels[i],
					crc32c(0, (const uint8_t *)b.data + i * one, one));
		len += snprintf(line + len, cap - (size_t)len, " end\n");
		CHECK((size_t)len < cap);
		CHECKF(write(out, line, (size_t)len) == len, "write %s: %s", a.record,
		       strerror(errno));
		CHECK(feeder_batch_release(s, &b) == 0);
		if (++start == per_epoch) {
			epoch++;
			start = 0;
		}
		if (a.delay_ms) {
			struct timespec ts = { a.delay_ms / 1000,
					       (long)(a.delay_ms % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	free(line);
	close(out);
	feeder_stream_close(s);
	feeder_disconnect(f);
	return 0;
}
