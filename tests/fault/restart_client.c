/* restart_client.c — a libfeeder consumer for the daemon-restart fault test
 * (test_daemon_restart.sh): it streams a dataset with reconnecting switched
 * on and writes one line per batch it receives,
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
 *
 * The placement test (tests/gpu/test_placement.sh) uses it too: --placement
 * asks feederd to preprocess on its GPU, and --dump writes every batch's
 * tensor bytes (u8, 32x32) to FILE for a comparison within tolerance.
 *
 * Exit status: 0 when the stream ended normally, 1 otherwise. */
#include "feeder.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
	char path[64], target[256];
	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, target, sizeof target - 1);
		if (n > 0) {
			target[n] = '\0';
			*fds += strstr(target, "memfd:feeder-ring") != NULL;
		}
	}
	FILE *m = fopen("/proc/self/maps", "r");
	char line[512];
	while (m && fgets(line, sizeof line, m))
		*maps += strstr(line, "memfd:feeder-ring") != NULL;
	if (m)
		fclose(m);
}

static int usage(void)
{
	fprintf(stderr,
		"usage: restart_client --socket S --dataset NAME --out FILE [--reconnect MS] "
		"[--delay-ms D] [--epochs E] [--batch B] [--eval] [--placement P] [--device-batches] "
		"[--dump FILE]\n");
	return 1;
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *dataset = NULL, *out = NULL, *dump = NULL;
	int placement = FEEDER_PLACEMENT_CPU, device_batches = 0;
	int reconnect = 20000, delay_ms = 0, train = 1;
	unsigned epochs = 1, batch = 4;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--eval") == 0) {
			train = 0;
			continue;
		}
		if (strcmp(a, "--device-batches") == 0) {
			device_batches = 1;
			continue;
		}
		if (!v)
			return usage();
		if (strcmp(a, "--socket") == 0)
			sock = v;
		else if (strcmp(a, "--dataset") == 0)
			dataset = v;
		else if (strcmp(a, "--out") == 0)
			out = v;
		else if (strcmp(a, "--reconnect") == 0)
			reconnect = atoi(v);
		else if (strcmp(a, "--delay-ms") == 0)
			delay_ms = atoi(v);
		else if (strcmp(a, "--epochs") == 0)
			epochs = (unsigned)atoi(v);
		else if (strcmp(a, "--batch") == 0)
			batch = (unsigned)atoi(v);
		else if (strcmp(a, "--dump") == 0)
			dump = v;
		else if (strcmp(a, "--placement") == 0)
			placement = strcmp(v, "gpu") == 0    ? FEEDER_PLACEMENT_GPU
				    : strcmp(v, "auto") == 0 ? FEEDER_PLACEMENT_AUTO
							     : FEEDER_PLACEMENT_CPU;
		else
			return usage();
		i++;
	}
	if (!sock || !dataset || !out)
		return usage();
	FILE *fo = fopen(out, "w");
	if (!fo) {
		perror(out);
		return 1;
	}
	FILE *fd = dump ? fopen(dump, "w") : NULL;
	if (dump && !fd) {
		perror(dump);
		return 1;
	}
	struct feeder *f;
	int rc = feeder_connect(sock, 10000, &f);
	if (rc) {
		fprintf(stderr, "restart_client: connect: %s\n", feeder_last_error(NULL));
		return 1;
	}
	feeder_set_reconnect(f, reconnect);
	struct feeder_stream_opts o;
	feeder_stream_opts_init(&o);
	snprintf(o.dataset, sizeof o.dataset, "%s", dataset);
	o.batch = batch;
	o.seed = 7;
	o.epochs = epochs;
	o.slots = 3;
	o.dtype = FEEDER_DTYPE_U8;
	o.jpeg.height = o.jpeg.width = 32;
	o.jpeg.train = train;
	o.placement = placement;
	o.device_batches = (uint32_t)device_batches;
	struct feeder_stream *s;
	if ((rc = feeder_stream_open(f, &o, 10000, &s))) {
		fprintf(stderr, "restart_client: open: %s\n", feeder_last_error(f));
		return 1;
	}
	struct feeder_batch held = { 0 }, b;
	uint64_t held_hash = 0, n = 0;
	uint32_t seen_reconnects = 0;
	unsigned max_fds = 0, max_maps = 0;
	int status = 0;
	for (;;) {
		rc = feeder_stream_next(s, 30000, &b);
		if (rc == FEEDER_EEND)
			break;
		if (rc) {
			fprintf(stderr, "restart_client: next after %llu batches: %s: %s\n",
				(unsigned long long)n, feeder_strerror(rc), feeder_last_error(f));
			status = 1;
			break;
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
