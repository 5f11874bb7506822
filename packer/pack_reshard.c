/* pack_reshard.c — `packer reshard SRC DEST (--shard-size SIZE | --single)`:
 * a dataset's records copied into another layout (layout.h): shard files
 * of another size, or one data.mdb.
 *
 * Records are copied as they are stored (dsstore_get_record), header and
 * payload byte for byte, with their names; only the keys change (a shard
 * counts from 0). The new dataset carries the old one's header: its totals
 * (samples, source bytes, tiled records), options and packer version. DEST
 * is written like a pack's (pack_dest.h: a temporary folder renamed into
 * place, --force to replace a dataset). Only format version 3 is copied:
 * a shard header is written in version 3's layout.
 *
 * Order (pack_order.h): into shards the records are copied by default in a
 * permutation of the dataset's order seeded by --order-seed (--order
 * shuffled), each with its name; into --single, or with --order walk, in
 * the dataset's order, a shard at a time. A shuffled copy reads every
 * source shard at random, so all of them are open at once (one descriptor
 * and one mapping each), and the permutation takes 8 bytes a sample. */
#include "packer.h"

#include "layout.h"
#include "pack_args.h"
#include "pack_dest.h"
#include "pack_msg.h"
#include "pack_order.h"
#include "pack_writer.h"

#include "dsstore.h"
#include "status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define CMD "reshard"
#define COMMIT_BYTES ((uint64_t)4 << 20)

struct reshard {
	struct layout src;
	struct pack_dest dst;
	struct pack_writer *w;
	char **labels;
	uint32_t nlabels;
	uint64_t since_commit;
};

/* The label table of shard 0 (every shard has it), NUL-terminated. */
static int read_labels(struct reshard *r, char *err, size_t errlen)
{
	struct dsstore *ds;
	struct dsstore_txn *t;
	int rc = layout_open_shard(&r->src, 0, &ds, err, errlen);
	if (rc)
		return rc;
	if ((rc = dsstore_txn_begin(ds, &t, err, errlen))) {
		dsstore_close(ds);
		return rc;
	}
	uint32_t n = r->src.m.header.classes;
	r->labels = calloc(n ? n : 1, sizeof(*r->labels));
	if (!r->labels)
		rc = status_fail(err, errlen, -ENOMEM, "out of memory");
	for (uint32_t k = 0; !rc && k < n; k++) {
		const char *name;
		size_t len;
		if (dsstore_get_label(t, k, &name, &len) != 0) {
			rc = status_fail(err, errlen, FEEDER_ECORRUPT, "%s: label %u unreadable",
					 r->src.dir, k);
			break;
		}
		if (!(r->labels[k] = strndup(name, len)))
			rc = status_fail(err, errlen, -ENOMEM, "out of memory");
		r->nlabels = k + 1;
	}
	dsstore_txn_end(t);
	dsstore_close(ds);
	return rc;
}

/* Record j of the source shard open in t (global index src) into the
 * writer as global index dst, with its name. */
static int copy_record(struct reshard *r, struct dsstore_txn *t, uint64_t j, uint64_t src,
		       uint64_t dst, char *err, size_t errlen)
{
	const uint8_t *rec, *payload;
	size_t len;
	struct dsformat_sample s;
	char why[300], name[DSFORMAT_MAX_NAME + 1];
	int rc = dsstore_get_record(t, j, &rec, &len, why, sizeof(why));
	if (!rc)
		rc = dsformat_sample_decode(r->src.m.header.version, rec, len, &s, &payload, why,
					    sizeof(why));
	if (rc)
		return status_fail(err, errlen, rc, "%s: sample %llu: %s", r->src.dir,
				   (unsigned long long)src, why);
	if ((rc = pack_writer_put_record(r->w, dst, rec, len, s.flags, err, errlen)))
		return rc;
	const char *nm;
	size_t nlen;
	if (dsstore_get_name(t, j, &nm, &nlen) == 0) {
		if (nlen > DSFORMAT_MAX_NAME)
			nlen = DSFORMAT_MAX_NAME;
		memcpy(name, nm, nlen);
		name[nlen] = 0;
		if ((rc = pack_writer_put_name(r->w, dst, name, err, errlen)))
			return rc;
	}
	r->since_commit += len;
	if (r->since_commit >= COMMIT_BYTES) {
		r->since_commit = 0;
		rc = pack_writer_commit(r->w, err, errlen);
	}
	return rc;
}

/* Open source shard i and check its count against the manifest. */
static int open_shard(struct reshard *r, size_t i, struct dsstore **ds, char *err, size_t errlen)
{
	const struct manifest_shard *sh = &r->src.m.shards[i];
	int rc = layout_open_shard(&r->src, i, ds, err, errlen);
	if (rc)
		return rc;
	if (dsstore_header(*ds)->samples != sh->count) {
		rc = status_fail(err, errlen, FEEDER_ECORRUPT,
				 "%s/%s: holds %llu samples, the manifest says %llu", r->src.dir,
				 sh->name, (unsigned long long)dsstore_header(*ds)->samples,
				 (unsigned long long)sh->count);
		dsstore_close(*ds);
		*ds = NULL;
	}
	return rc;
}

/* Every record of source shard i into the writer, from global index
 * first: the dataset's order. */
static int copy_shard(struct reshard *r, size_t i, char *err, size_t errlen)
{
	const struct manifest_shard *sh = &r->src.m.shards[i];
	struct dsstore *ds;
	struct dsstore_txn *t;
	int rc = open_shard(r, i, &ds, err, errlen);
	if (rc)
		return rc;
	if ((rc = dsstore_txn_begin(ds, &t, err, errlen))) {
		dsstore_close(ds);
		return rc;
	}
	r->since_commit = 0; /* commits where they always were: the same files */
	for (uint64_t j = 0; j < sh->count && !rc; j++)
		rc = copy_record(r, t, j, sh->first + j, sh->first + j, err, errlen);
	dsstore_txn_end(t);
	dsstore_close(ds);
	return rc;
}

static void swap_u64(void *ctx, size_t i, size_t j)
{
	uint64_t *a = ctx, t = a[i];
	a[i] = a[j];
	a[j] = t;
}

/* Descriptors for n shards open at once and a few more: the soft limit
 * raised towards the hard one if it is lower. */
static void fd_room(size_t n)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)n + 64;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl); /* too few still: the open that fails says so */
}

/* Every record in the permutation of the dataset's order for seed: output
 * index g is source record perm[g]. */
static int copy_shuffled(struct reshard *r, uint64_t seed, char *err, size_t errlen)
{
	size_t ns = r->src.m.nshards;
	uint64_t n = r->src.m.header.samples;
	if (n > SIZE_MAX / sizeof(uint64_t))
		return status_fail(err, errlen, -ENOMEM, "%s: too many samples to shuffle",
				   r->src.dir);
	uint64_t *perm = malloc((n ? n : 1) * sizeof(*perm));
	struct dsstore **ds = calloc(ns, sizeof(*ds));
	struct dsstore_txn **t = calloc(ns, sizeof(*t));
	int rc = 0;
	if (!perm || !ds || !t)
		rc = status_fail(err, errlen, -ENOMEM, "out of memory");
	fd_room(ns);
	for (size_t i = 0; !rc && i < ns; i++)
		if (!(rc = open_shard(r, i, &ds[i], err, errlen)))
			rc = dsstore_txn_begin(ds[i], &t[i], err, errlen);
	for (uint64_t g = 0; !rc && g < n; g++)
		perm[g] = g;
	if (!rc)
		pack_order_permute((size_t)n, seed, swap_u64, perm);
	for (uint64_t g = 0; !rc && g < n; g++) {
		size_t i = manifest_find(&r->src.m, perm[g]);
		if (i == ns) /* the manifest's counts add up to the header's (layout_load) */
			rc = status_fail(err, errlen, FEEDER_ECORRUPT,
					 "%s: sample %llu lies in no shard", r->src.dir,
					 (unsigned long long)perm[g]);
		else
			rc = copy_record(r, t[i], perm[g] - r->src.m.shards[i].first, perm[g], g,
					 err, errlen);
	}
	for (size_t i = 0; ds && i < ns; i++) {
		if (t && t[i])
			dsstore_txn_end(t[i]);
		if (ds[i])
			dsstore_close(ds[i]);
	}
	free(t);
	free(ds);
	free(perm);
	return rc;
}

static int reshard_run(struct reshard *r, const char *dest, uint64_t shard_size, int force,
		       int shuffled, uint64_t seed)
{
	char err[1024];
	int rc = pack_dest_begin(&r->dst, dest, force, err, sizeof(err));
	if (rc) {
		pack_error("%s: %s", CMD, err);
		return rc == -EEXIST || rc == -EINVAL || rc == -ENOENT ? PACK_EXIT_USAGE
								       : PACK_EXIT_FAIL;
	}
	const struct dsformat_header *h = &r->src.m.header;
	rc = pack_writer_open(&r->dst, shard_size, (size_t)1 << 30, h,
			      (const char *const *)r->labels, &r->w, err, sizeof(err));
	if (!rc && shuffled)
		rc = copy_shuffled(r, seed, err, sizeof(err));
	for (size_t i = 0; !rc && !shuffled && i < r->src.m.nshards; i++)
		rc = copy_shard(r, i, err, sizeof(err));
	if (!rc) {
		rc = pack_writer_finish(r->w, h, err, sizeof(err));
		r->w = NULL;
	}
	if (!rc)
		rc = pack_dest_commit(&r->dst, err, sizeof(err));
	if (rc) {
		pack_error("%s: %s", CMD, err);
		return PACK_EXIT_FAIL;
	}
	return 0;
}

int packer_reshard_main(int argc, char **argv)
{
	unsigned long long shard_size = 0;
	int single = 0, force = 0, help = 0, n;
	struct pack_order_args order = { 0 };
	char *ops[2];
	struct argtab tab[] = {
		ARGTAB_SIZE("shard-size", 0, &shard_size, 1, PACK_MAX_SHARD_SIZE, "SIZE",
			    "shard files of about SIZE bytes of records each (K, M, G, T)"),
		ARGTAB_FLAG("single", 0, &single, "one data.mdb"),
		PACK_ORDER_ROWS(&order, "copy the records in a seeded random order, or in the\n"
					"dataset's (default: shuffled into shards, walk\n"
					"with --single)"),
		ARGTAB_FLAG("force", 0, &force, "replace DEST if it exists"),
		ARGTAB_FLAG("help", 'h', &help, "this text"),
		ARGTAB_END,
	};
	int rc = pack_args_parse(CMD, tab, argc, argv, ops, 2, &n);
	if (rc)
		return rc;
	if (help) {
		puts("usage: packer reshard SRC DEST (--shard-size SIZE | --single) "
		     "[--order shuffled|walk] [--order-seed N] [--force]");
		argtab_help(stdout, tab);
		return 0;
	}
	if (n < 2)
		return pack_usage_error(CMD, "missing SRC or DEST");
	if (!shard_size == !single)
		return pack_usage_error(CMD, "give one of --shard-size SIZE and --single");
	int shuffled = pack_order_shuffled(&order, !single, tab);
	struct reshard r = { 0 };
	char err[1024];
	if ((rc = layout_load(ops[0], 0, &r.src, err, sizeof(err)))) {
		pack_error("%s: %s", CMD, err);
		return PACK_EXIT_FAIL;
	}
	if (r.src.m.header.version != DSFORMAT_VERSION) {
		pack_error("%s: %s: format version %u; reshard copies version %d records only "
			   "(pack the sources again)",
			   CMD, ops[0], r.src.m.header.version, DSFORMAT_VERSION);
		rc = PACK_EXIT_USAGE;
	} else if ((rc = read_labels(&r, err, sizeof(err)))) {
		pack_error("%s: %s", CMD, err);
		rc = PACK_EXIT_FAIL;
	} else {
		rc = reshard_run(&r, ops[1], shard_size, force, shuffled, order.seed);
	}
	pack_writer_abort(r.w);
	pack_dest_abort(&r.dst);
	for (uint32_t k = 0; k < r.nlabels; k++)
		free(r.labels[k]);
	free(r.labels);
	layout_free(&r.src);
	return rc;
}
