/* restart_client.c — a libfeeder consumer for the daemon-restart fault test
 * (test_daemon_restart.sh) and, built as tests/soak/soak_client, for the soak
 * (tests/soak.sh): it streams a dataset with reconnecting switched on and
 * writes one line per batch it receives,
 *
 *   EPOCH BATCH LABEL:HASH LABEL:HASH ...
 *
 * HASH being FNV-1a of the sample's bytes, so that the script can compare a
 * run during which feederd was killed and restarted with an undisturbed one,
 * line by line, and check that every sample of every epoch came exactly once.
 * Like a trainer that copies one batch while it computes on the other, it
 * holds the previous batch while it waits for the next; after a reconnect it
 * re-hashes that held batch (it lives in the ring of the dead daemon) to show
 * that it stayed intact. At the end it prints "batches N reconnects R", and
 * "ring fds F maps M": the most ring memfds it had open and mapped at once
 * over the run (a ring of a lost connection must go once no batch of it is
 * held, so F and M stay at 2 however often the daemon restarts).
 *
 *   restart_client --socket S --dataset NAME --out FILE [--reconnect MS]
 *                  [--delay-ms D] [--epochs E] [--batch B] [--eval]
 *                  [--placement cpu|gpu|auto] [--device-batches] [--dump FILE]
 *                  [--seed S] [--size PX] [--dtype u8|f16|f32] [--layout nchw|nhwc]
 *                  [--max-batches M] [--resume --samples N]
 *
 * The placement test (tests/gpu/test_placement.sh) uses it too: --placement
 * asks feederd to preprocess on its GPU, and --dump writes every batch's
 * tensor bytes (u8, 32x32) to FILE for a comparison within tolerance.
 *
 * --resume is the soak's: a client killed with SIGKILL at any moment is
 * started again on its FILE, drops a trailing partial line (each line is
 * one write), and opens the stream at the batch after the last complete
 * line; the daemon's batches are a pure function of (seed, epoch, batch), so
 * the record of a killed-and-restarted client must equal that of one that
 * never died. Each batch must then be the one after the last.
 *
 * Exit status: 0 when the stream ended normally (or after M batches), 1
 * otherwise. */
#include "feeder.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TIMEOUT_MS 30000

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static uint64_t batch_hash(const struct feeder_batch *b)
{
	return fnv1a(b->data, b->bytes) ^ fnv1a((const uint8_t *)b->labels, b->count * 4u);
}

/* Ring memfds this process has open, and mappings of them (/proc/self). */
static void count_rings(unsigned *fds, unsigned *maps)
{
	*fds = *maps = 0;
	char path[300];
	DIR *d = opendir("/proc/self/fd");
	for (struct dirent *e; d && (e = readdir(d));) {
		char target[256] = "";
		snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
		*fds += readlink(path, target, sizeof target - 1) > 0 &&
			strstr(target, "memfd:feeder-ring") != NULL;
	}
	if (d)
		closedir(d);
	FILE *m = fopen("/proc/self/maps", "r");
	char line[512];
	while (m && fgets(line, sizeof line, m))
		*maps += strstr(line, "memfd:feeder-ring") != NULL;
	if (m)
		fclose(m);
}

/* The (epoch, batch) of the last complete line of path, which is cut after
 * it. Returns 1 if there was one, 0 for an empty or missing file, -1. */
static int record_last(const char *path, unsigned long long *epoch, unsigned long long *batch)
{
	FILE *f = fopen(path, "r+");
	if (!f)
		return errno == ENOENT ? 0 : -1;
	char *line = NULL;
	size_t cap = 0;
	long good = 0;
	ssize_t n;
	unsigned long long e, b;
	while ((n = getline(&line, &cap, f)) > 0 && line[n - 1] == '\n' &&
	       sscanf(line, "%llu %llu", &e, &b) == 2) {
		*epoch = e;
		*batch = b;
		good = ftell(f);
	}
	free(line);
	int rc = ftruncate(fileno(f), good);
	fclose(f);
	return rc ? -1 : good > 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: restart_client --socket S --dataset NAME --out FILE [OPTIONS] "
			"(restart_client.c lists them)\n");
	return 1;
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *dataset = NULL, *out = NULL, *dump = NULL, *place = "cpu";
	const char *dtype = "u8", *layout = "nchw";
	long reconnect = 20000, delay_ms = 0, epochs = 1, batch = 4, seed = 7, size = 32;
	long samples = 0, max_batches = 0;
	int eval = 0, device_batches = 0, resume = 0;
	const struct {
		const char *name;
		const char **str;
		long *num;
		int *flag;
	} opts[] = {
		{ "--socket", &sock, 0, 0 },
		{ "--dataset", &dataset, 0, 0 },
		{ "--out", &out, 0, 0 },
		{ "--dump", &dump, 0, 0 },
		{ "--placement", &place, 0, 0 },
		{ "--dtype", &dtype, 0, 0 },
		{ "--layout", &layout, 0, 0 },
		{ "--reconnect", 0, &reconnect, 0 },
		{ "--delay-ms", 0, &delay_ms, 0 },
		{ "--epochs", 0, &epochs, 0 },
		{ "--batch", 0, &batch, 0 },
		{ "--seed", 0, &seed, 0 },
		{ "--size", 0, &size, 0 },
		{ "--samples", 0, &samples, 0 },
		{ "--max-batches", 0, &max_batches, 0 },
		{ "--eval", 0, 0, &eval },
		{ "--device-batches", 0, 0, &device_batches },
		{ "--resume", 0, 0, &resume },
	};
	const size_t nopts = sizeof opts / sizeof opts[0];
	for (int i = 1; i < argc; i++) {
		size_t k = 0;
		while (k < nopts && strcmp(argv[i], opts[k].name) != 0)
			k++;
		if (k == nopts || (!opts[k].flag && i + 1 == argc))
			return usage();
		if (opts[k].flag)
			*opts[k].flag = 1;
		else if (opts[k].str)
			*opts[k].str = argv[++i];
		else
			*opts[k].num = atol(argv[++i]);
	}
	if (!sock || !dataset || !out || batch < 1 || (resume && samples < 1))
		return usage();
	/* Where the record left off: the batch after its last line. */
	unsigned long long epoch = 0, start = 0, per_epoch = (samples + batch - 1) / batch;
	int found = resume ? record_last(out, &epoch, &start) : 0;
	if (found < 0) {
		perror(out);
		return 1;
	}
	if (found && ++start == per_epoch) {
		epoch++;
		start = 0;
	}
	if (epoch >= (unsigned long long)epochs)
		return 0;
	FILE *fo = fopen(out, resume ? "a" : "w"), *fd = dump ? fopen(dump, "w") : NULL;
	if (!fo || (dump && !fd)) {
		perror(fo ? dump : out);
		return 1;
	}
	struct feeder *f;
	int rc = feeder_connect(sock, TIMEOUT_MS, &f);
	if (rc) {
		fprintf(stderr, "restart_client: connect: %s\n", feeder_last_error(NULL));
		return 1;
	}
	feeder_set_reconnect(f, (int)reconnect);
	struct feeder_stream_opts o;
	feeder_stream_opts_init(&o);
	snprintf(o.dataset, sizeof o.dataset, "%s", dataset);
	o.batch = (uint32_t)batch;
	o.seed = (uint64_t)seed;
	o.epoch = epoch;
	o.epochs = (uint32_t)(epochs - (long)epoch);
	o.start_batch = start;
	o.slots = 3;
	o.dtype = strcmp(dtype, "f16") == 0   ? FEEDER_DTYPE_F16
		  : strcmp(dtype, "f32") == 0 ? FEEDER_DTYPE_F32
					      : FEEDER_DTYPE_U8;
	o.layout = strcmp(layout, "nhwc") == 0 ? FEEDER_LAYOUT_NHWC : FEEDER_LAYOUT_NCHW;
	o.jpeg.height = o.jpeg.width = (uint32_t)size;
	o.jpeg.train = !eval;
	o.placement = strcmp(place, "gpu") == 0    ? FEEDER_PLACEMENT_GPU
		      : strcmp(place, "auto") == 0 ? FEEDER_PLACEMENT_AUTO
						   : FEEDER_PLACEMENT_CPU;
	o.device_batches = (uint32_t)device_batches;
	struct feeder_stream *s;
	if ((rc = feeder_stream_open(f, &o, TIMEOUT_MS, &s))) {
		fprintf(stderr, "restart_client: open at epoch %llu batch %llu: %s\n", epoch, start,
			feeder_last_error(f));
		return 1;
	}
	struct feeder_stream_info info;
	feeder_stream_info(s, &info);
	if (samples && (info.batches_per_epoch != per_epoch || info.samples != (uint64_t)samples)) {
		fprintf(stderr,
			"restart_client: %llu batches per epoch of %llu samples, not %llu of %ld\n",
			(unsigned long long)info.batches_per_epoch,
			(unsigned long long)info.samples, per_epoch, samples);
		return 1;
	}
	struct feeder_batch held = { 0 }, b;
	uint64_t held_hash = 0, n = 0;
	uint32_t seen_reconnects = 0;
	unsigned max_fds = 0, max_maps = 0;
	int status = 0;
	while (!max_batches || n < (uint64_t)max_batches) {
		rc = feeder_stream_next(s, TIMEOUT_MS, &b);
		if (rc == FEEDER_EEND)
			break;
		if (rc) {
			fprintf(stderr, "restart_client: next after %llu batches: %s: %s\n",
				(unsigned long long)n, feeder_strerror(rc), feeder_last_error(f));
			status = 1;
			break;
		}
		if (b.count < 1 || b.count > batch || b.bytes % b.count ||
		    (samples && (b.epoch != epoch || b.batch_index != start))) {
			fprintf(stderr,
				"restart_client: got epoch %llu batch %llu of %u samples (%zu bytes), "
				"expected epoch %llu batch %llu\n",
				(unsigned long long)b.epoch, (unsigned long long)b.batch_index,
				b.count, b.bytes, epoch, start);
			status = 1;
			break;
		}
		if (samples && ++start == per_epoch) {
			epoch++;
			start = 0;
		}
		if (feeder_get_reconnects(f) != seen_reconnects) {
			seen_reconnects = feeder_get_reconnects(f);
			if (held.data && batch_hash(&held) != held_hash) {
				fprintf(stderr, "restart_client: the batch held across the restart "
						"changed\n");
				status = 1;
			}
			fprintf(stderr,
				"restart_client: reconnected (%u) before epoch %llu batch %llu\n",
				seen_reconnects, (unsigned long long)b.epoch,
				(unsigned long long)b.batch_index);
		}
		unsigned fds, maps;
		count_rings(&fds, &maps);
		max_fds = fds > max_fds ? fds : max_fds;
		max_maps = maps > max_maps ? maps : max_maps;
		/* One line is one write (it is far shorter than the buffer). */
		fprintf(fo, "%llu %llu", (unsigned long long)b.epoch,
			(unsigned long long)b.batch_index);
		size_t one = b.bytes / b.count;
		for (uint32_t i = 0; i < b.count; i++)
			fprintf(fo, " %d:%016llx", b.labels[i],
				(unsigned long long)fnv1a((const uint8_t *)b.data + i * one, one));
		fputc('\n', fo);
		fflush(fo);
		if (fd && fwrite(b.data, 1, b.bytes, fd) != b.bytes) {
			perror(dump);
			status = 1;
			break;
		}
		n++;
		if (held.data && (rc = feeder_batch_release(s, &held))) {
			fprintf(stderr, "restart_client: release: %s\n", feeder_last_error(f));
			status = 1;
			break;
		}
		held = b;
		held_hash = batch_hash(&held);
		if (delay_ms)
			usleep((useconds_t)delay_ms * 1000);
	}
	if (held.data)
		feeder_batch_release(s, &held);
	printf("batches %llu reconnects %u\n", (unsigned long long)n, feeder_get_reconnects(f));
	printf("ring fds %u maps %u\n", max_fds, max_maps);
	feeder_stream_close(s);
	feeder_disconnect(f);
	fclose(fo);
	if (fd && fclose(fd) != 0)
		status = 1;
	return status;
}
