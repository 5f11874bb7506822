/* test_pool_fair.c — daemon/pool.c shares its workers between streams by
 * images: a stream of batch 64 (8-sample tasks) and one of batch 4
 * (2-sample tasks) with equal work queued progress at the same pace on one
 * worker, and every slot completes with the right labels. Drives
 * registry/stream/pool directly, without sockets. */
#include "check.h"
#include "crc32c.h"
#include "dsstore.h"
#include "pool.h"
#include "registry.h"
#include "stream.h"
#include "../pipelines/jpeg_synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define N 64

static char err[512];

int main(void)
{
	char dir[64];
	size_t plen = (size_t)snprintf(dir, sizeof(dir), "/tmp/feeder-fair-");
	memset(dir + plen, 'X', 6); /* mkdtemp's template */
	dir[plen + 6] = 0;
	CHECK(mkdtemp(dir));
	char ds[128];
	snprintf(ds, sizeof(ds), "%s/tiny", dir);
	CHECK(mkdir(ds, 0755) == 0);
	struct dsstore_writer *w;
	CHECKF(dsstore_writer_open(ds, 0, &w, err, sizeof(err)) == 0, "%s", err);
	for (unsigned i = 0; i < N; i++) {
		unsigned long len;
		uint8_t *jpg = jpeg_synth(24, 20, TJSAMP_420, 90, i, &len);
		CHECK(jpg);
		struct dsformat_sample s = { .label = i % 5, .payload_len = (uint32_t)len,
					     .crc = crc32c(0, jpg, len) };
		CHECK(dsstore_writer_put_sample(w, i, &s, jpg, err, sizeof(err)) == 0);
		tjFree(jpg);
	}
	for (uint32_t c = 0; c < 5; c++)
		CHECK(dsstore_writer_put_label(w, c, "class", err, sizeof(err)) == 0);
	struct dsformat_header h = { .version = DSFORMAT_VERSION, .kind = DSFORMAT_KIND_JPEG,
				     .samples = N, .classes = 5 };
	CHECKF(dsstore_writer_finish(w, &h, err, sizeof(err)) == 0, "%s", err);

	struct registry *reg;
	CHECKF(registry_open(&reg, dir, err, sizeof(err)) == 0, "%s", err);
	struct dataset *d = registry_get(reg, "tiny");
	CHECK(d);
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(efd >= 0);

	/* Equal work: 4 slots x 64 and 64 slots x 4 = 256 samples each. */
	struct feeder_stream_opts a, b;
	proto_opts_jpeg(&a, 16, 1);
	strcpy(a.dataset, "tiny");
	a.batch = 64;
	a.slots = 4;
	a.epochs = 10;
	b = a;
	b.batch = 4;
	b.slots = 64;
	struct stream *sa, *sb;
	CHECKF(stream_create(&sa, 1, d, &a, 4096, 1, err, sizeof(err)) == 0, "%s", err);
	CHECKF(stream_create(&sb, 2, d, &b, 4096, 1, err, sizeof(err)) == 0, "%s", err);
	CHECK(stream_task_size(sa) == 8 && stream_task_size(sb) == 2);

	struct pool *p;
	CHECKF(pool_create(&p, 1, efd, err, sizeof(err)) == 0, "%s", err);
	pool_lock(p);
	CHECK(pool_add(p, sa) == 0 && pool_add(p, sb) == 0);
	CHECK(stream_refill(sa) == 4 && stream_refill(sb) == 64);
	pool_kick(p);
	pool_unlock(p);
	/* Watch the pace while both have work. */
	uint64_t worst = 0, na = 0, nb = 0;
	for (;;) {
		pool_lock(p);
		na = nb = 0;
		stream_totals(sa, NULL, &na, NULL, NULL);
		stream_totals(sb, NULL, &nb, NULL, NULL);
		pool_unlock(p);
		uint64_t diff = na > nb ? na - nb : nb - na;
		if (diff > worst && na < 256 && nb < 256)
			worst = diff;
		if (na + nb >= 512)
			break;
		usleep(200);
	}
	CHECKF(worst <= 16, "streams drifted apart by %llu samples", (unsigned long long)worst);

	/* Every slot complete, indices those of the sampler's order, labels
	 * those of the records. */
	pool_lock(p);
	for (int k = 0; k < 2; k++) {
		struct stream *s = k ? sb : sa;
		const struct feeder_stream_opts *o = k ? &b : &a;
		struct proto_stream_opened g;
		stream_describe(s, &g);
		struct proto_batch_ready r;
		unsigned got = 0;
		while (stream_next_ready(s, 0, &r)) {
			const uint8_t *slot = stream_slot_memory(s, r.slot);
			const int32_t *labels = (const void *)(slot + g.labels_offset);
			const uint64_t *indices = (const void *)(slot + g.indices_offset);
			struct sampler order;
			CHECK(sampler_init(&order, N, o->seed, r.epoch, 0, 1, 1, err, sizeof(err)) == 0);
			for (uint32_t i = 0; i < r.samples; i++) {
				uint64_t idx = sampler_at(&order, r.batch_index * o->batch + i);
				CHECK(indices[i] == idx && labels[i] == (int32_t)(idx % 5));
			}
			got++;
		}
		CHECK(got == g.slots);
	}
	CHECK(pool_remove(p, sa) == 0 && pool_remove(p, sb) == 0);
	pool_unlock(p);
	pool_destroy(p);
	stream_destroy(sa);
	stream_destroy(sb);
	dataset_unref(d);
	registry_close(reg);
	close(efd);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
