/* order_client.c — what a batch says about where its samples came from,
 * against a real feederd (run by test_order.sh):
 *
 *   order_client --socket S --datasets DIR CASE DATASET
 *
 *   indices    every batch's indices are the records the sampler puts at
 *              its positions, and the labels are those records' labels;
 *   noshuffle  shuffle=0 serves each rank its every world-th record in
 *              dataset order (0, w, 2w, ... for rank 0), epochs alike;
 *   names      names=1 carries each sample's name exactly as the dataset
 *              stores it (read here from the LMDB file), names=0 carries none;
 *   badopt     an option out of range is refused with FEEDER_EINVAL and the
 *              daemon's sentence naming the field, and the same connection
 *              then opens a good stream (the refusal is not fatal).
 *
 * Exit 0 pass, 1 fail. */
#include "check.h"
#include "dsstore.h"
#include "feeder.h"
#include "sampler.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_MS 20000

static const char *sock_path, *datasets_dir;

static struct feeder *connect_or_die(void)
{
	struct feeder *f;
	int rc = feeder_connect(sock_path, TIMEOUT_MS, &f);
	CHECKF(rc == 0, "connect: %s", feeder_last_error(NULL));
	return f;
}

static struct dsstore *open_store(const char *name, struct dsstore_txn **txn)
{
	char dir[4096], err[512];
	snprintf(dir, sizeof dir, "%s/%s", datasets_dir, name);
	struct dsstore *ds;
	CHECKF(dsstore_open(dir, &ds, err, sizeof err) == 0, "%s", err);
	CHECKF(dsstore_txn_begin(ds, txn, err, sizeof err) == 0, "%s", err);
	return ds;
}

static void small_opts(struct feeder_stream_opts *o, const char *dataset)
{
	feeder_stream_opts_init(o);
	CHECK(feeder_stream_opts_set_dataset(o, dataset) == 0);
	o->jpeg.height = o->jpeg.width = 16;
	o->dtype = FEEDER_DTYPE_U8;
	o->batch = 5;
	o->slots = 3;
	o->seed = 77;
}

/* Every batch of stream s: indices[i] must be expect(epoch, position) and
 * labels[i] the label of that record. Returns the batches seen. */
static unsigned walk(struct feeder *f, struct feeder_stream *s, const struct feeder_stream_opts *o,
		     struct dsstore_txn *txn, uint64_t n)
{
	struct feeder_batch b;
	unsigned batches = 0;
	char err[512];
	int rc;
	while ((rc = feeder_stream_next(s, TIMEOUT_MS, &b)) == 0) {
		struct sampler sm;
		CHECKF(sampler_init(&sm, n, o->seed, b.epoch, o->rank, o->world, (int)o->shuffle, err,
				    sizeof err) == 0, "%s", err);
		CHECK(b.indices != NULL && b.replacements == 0);
		for (uint32_t i = 0; i < b.count; i++) {
			uint64_t want = sampler_at(&sm, b.batch_index * o->batch + i);
			if (!o->shuffle)
				CHECKF(want == o->rank + (b.batch_index * o->batch + i) * o->world,
				       "unshuffled position %llu is record %llu",
				       (unsigned long long)(b.batch_index * o->batch + i),
				       (unsigned long long)want);
			CHECKF(b.indices[i] == want, "epoch %llu batch %llu sample %u: index %llu, "
			       "the sampler says %llu", (unsigned long long)b.epoch,
			       (unsigned long long)b.batch_index, i, (unsigned long long)b.indices[i],
			       (unsigned long long)want);
			struct dsformat_sample smp;
			const uint8_t *payload;
			CHECK(dsstore_get_sample(txn, want, &smp, &payload, err, sizeof err) == 0);
			CHECKF(b.labels[i] == (int32_t)smp.label, "record %llu has label %u, batch says %d",
			       (unsigned long long)want, smp.label, b.labels[i]);
		}
		CHECK(feeder_batch_release(s, &b) == 0);
		batches++;
	}
	CHECKF(rc == FEEDER_EEND, "next: %s", feeder_last_error(f));
	return batches;
}

static int case_indices(const char *dataset, int shuffle)
{
	struct dsstore_txn *txn;
	struct dsstore *ds = open_store(dataset, &txn);
	uint64_t n = dsstore_header(ds)->samples;
	struct feeder *f = connect_or_die();
	unsigned total = 0;
	for (uint32_t rank = 0; rank < 2; rank++) {
		struct feeder_stream_opts o;
		small_opts(&o, dataset);
		o.shuffle = (uint32_t)shuffle;
		o.epochs = 2;
		o.rank = rank;
		o.world = 2;
		struct feeder_stream *s;
		CHECKF(feeder_stream_open(f, &o, TIMEOUT_MS, &s) == 0, "%s", feeder_last_error(f));
		total += walk(f, s, &o, txn, n);
		CHECK(feeder_stream_close(s) == 0);
	}
	feeder_disconnect(f);
	dsstore_txn_end(txn);
	dsstore_close(ds);
	printf("%s: %u batches over 2 ranks x 2 epochs, every index and label as the sampler "
	       "says\n", shuffle ? "indices" : "noshuffle", total);
	return 0;
}

static int case_names(const char *dataset)
{
	struct dsstore_txn *txn;
	struct dsstore *ds = open_store(dataset, &txn);
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	small_opts(&o, dataset);
	o.names = 1;
	struct feeder_stream *s;
	CHECKF(feeder_stream_open(f, &o, TIMEOUT_MS, &s) == 0, "%s", feeder_last_error(f));
	struct feeder_batch b;
	unsigned named = 0;
	int rc;
	while ((rc = feeder_stream_next(s, TIMEOUT_MS, &b)) == 0) {
		CHECK(b.names != NULL);
		for (uint32_t i = 0; i < b.count; i++) {
			const char *got = b.names + (size_t)i * FEEDER_SAMPLE_NAME_MAX;
			const char *want;
			size_t len;
			CHECKF(dsstore_get_name(txn, b.indices[i], &want, &len) == 0,
			       "the dataset keeps no name for record %llu",
			       (unsigned long long)b.indices[i]);
			CHECKF(strlen(got) == len && memcmp(got, want, len) == 0,
			       "record %llu: name '%s', the dataset says '%.*s'",
			       (unsigned long long)b.indices[i], got, (int)len, want);
			named++;
		}
		CHECK(feeder_batch_release(s, &b) == 0);
	}
	CHECKF(rc == FEEDER_EEND, "next: %s", feeder_last_error(f));
	CHECK(feeder_stream_close(s) == 0);
	/* Without the option: no names. */
	o.names = 0;
	CHECKF(feeder_stream_open(f, &o, TIMEOUT_MS, &s) == 0, "%s", feeder_last_error(f));
	CHECK(feeder_stream_next(s, TIMEOUT_MS, &b) == 0 && b.names == NULL && b.indices != NULL);
	CHECK(feeder_batch_release(s, &b) == 0);
	CHECK(feeder_stream_close(s) == 0);
	feeder_disconnect(f);
	dsstore_txn_end(txn);
	dsstore_close(ds);
	printf("names: %u names equal to the dataset's\n", named);
	return 0;
}

static int case_badopt(const char *dataset)
{
	struct feeder *f = connect_or_die();
	struct feeder_stream_opts o;
	struct feeder_stream *s;
	/* Each refusal names the field and leaves the connection usable. */
	const char *fields[] = { "batch", "jpeg.height", "shuffle", "rank", "jpeg.scale_min" };
	for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
		small_opts(&o, dataset);
		switch (k) {
		case 0: o.batch = 0; break;
		case 1: o.jpeg.height = 9000; break;
		case 2: o.shuffle = 2; break;
		case 3: o.rank = 3; o.world = 2; break;
		case 4: o.jpeg.scale_min = 0.9f; o.jpeg.scale_max = 0.2f; break;
		}
		int rc = feeder_stream_open(f, &o, TIMEOUT_MS, &s);
		CHECKF(rc == FEEDER_EINVAL, "%s out of range: %d (%s)", fields[k], rc,
		       feeder_last_error(f));
		CHECKF(strstr(feeder_last_error(f), fields[k]), "'%s' does not name %s",
		       feeder_last_error(f), fields[k]);
	}
	small_opts(&o, dataset);
	CHECKF(feeder_stream_open(f, &o, TIMEOUT_MS, &s) == 0, "after refusals: %s",
	       feeder_last_error(f));
	struct feeder_batch b;
	CHECK(feeder_stream_next(s, TIMEOUT_MS, &b) == 0 && b.count == 5);
	CHECK(feeder_batch_release(s, &b) == 0);
	CHECK(feeder_stream_close(s) == 0);
	feeder_disconnect(f);
	printf("badopt: 5 refusals with FEEDER_EINVAL naming the field, then a good stream on the "
	       "same connection\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "datasets", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 's')
			sock_path = optarg;
		else if (opt == 'd')
			datasets_dir = optarg;
		else
			return 2;
	}
	if (!sock_path || !datasets_dir || optind + 2 != argc) {
		fprintf(stderr, "usage: order_client --socket S --datasets DIR CASE DATASET\n");
		return 2;
	}
	const char *c = argv[optind], *dataset = argv[optind + 1];
	if (!strcmp(c, "indices"))
		return case_indices(dataset, 1);
	if (!strcmp(c, "noshuffle"))
		return case_indices(dataset, 0);
	if (!strcmp(c, "names"))
		return case_names(dataset);
	if (!strcmp(c, "badopt"))
		return case_badopt(dataset);
	fprintf(stderr, "order_client: unknown case '%s'\n", c);
	return 2;
}
