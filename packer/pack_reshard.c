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
 * a shard header is written in version 3's layout. */
#include "packer.h"

#include "layout.h"
#include "pack_args.h"
#include "pack_dest.h"
#include "pack_msg.h"
#include "pack_writer.h"

#include "dsstore.h"
#include "status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "reshard"
#define COMMIT_BYTES ((uint64_t)4 << 20)

struct reshard {
	struct layout src;
	struct pack_dest dst;
	struct pack_writer *w;
	char **labels;
	uint32_t nlabels;
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

/* Every record of source shard i into the writer, from global index
 * first. */
static int copy_shard(struct reshard *r, size_t i, char *err, size_t errlen)
{
	const struct manifest_shard *sh = &r->src.m.shards[i];
	struct dsstore *ds;
	struct dsstore_txn *t;
	int rc = layout_open_shard(&r->src, i, &ds, err, errlen);
	if (rc)
		return rc;
	if (dsstore_header(ds)->samples != sh->count) {
		rc = status_fail(err, errlen, FEEDER_ECORRUPT,
				 "%s/%s: holds %llu samples, the manifest says %llu", r->src.dir,
				 sh->name, (unsigned long long)dsstore_header(ds)->samples,
				 (unsigned long long)sh->count);
		dsstore_close(ds);
		return rc;
	}
	if ((rc = dsstore_txn_begin(ds, &t, err, errlen))) {
		dsstore_close(ds);
		return rc;
	}
	uint32_t version = r->src.m.header.version;
	uint64_t since_commit = 0;
	char why[300], name[DSFORMAT_MAX_NAME + 1];
	for (uint64_t j = 0; j < sh->count && !rc; j++) {
		uint64_t g = sh->first + j;
		const uint8_t *rec, *payload;
		size_t len;
		struct dsformat_sample s;
		rc = dsstore_get_record(t, j, &rec, &len, why, sizeof(why));
		if (!rc)
			rc = dsformat_sample_decode(version, rec, len, &s, &payload, why,
						    sizeof(why));
		if (rc) {
			rc = status_fail(err, errlen, rc, "%s: sample %llu: %s", r->src.dir,
					 (unsigned long long)g, why);
			break;
		}
		if ((rc = pack_writer_put_record(r->w, g, rec, len, s.flags, err, errlen)))
			break;
		const char *nm;
		size_t nlen;
		if (dsstore_get_name(t, j, &nm, &nlen) == 0) {
			if (nlen > DSFORMAT_MAX_NAME)
				nlen = DSFORMAT_MAX_NAME;
			memcpy(name, nm, nlen);
			name[nlen] = 0;
			rc = pack_writer_put_name(r->w, g, name, err, errlen);
		}
		since_commit += len;
		if (!rc && since_commit >= COMMIT_BYTES) {
			since_commit = 0;
			rc = pack_writer_commit(r->w, err, errlen);
		}
	}
	dsstore_txn_end(t);
	dsstore_close(ds);
	return rc;
}

static int reshard_run(struct reshard *r, const char *dest, uint64_t shard_size, int force)
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
	for (size_t i = 0; !rc && i < r->src.m.nshards; i++)
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
	char *ops[2];
	struct argtab tab[] = {
		ARGTAB_SIZE("shard-size", 0, &shard_size, 1, PACK_MAX_SHARD_SIZE, "SIZE",
			    "shard files of about SIZE bytes of records each (K, M, G, T)"),
		ARGTAB_FLAG("single", 0, &single, "one data.mdb"),
		ARGTAB_FLAG("force", 0, &force, "replace DEST if it exists"),
		ARGTAB_FLAG("help", 'h', &help, "this text"),
		ARGTAB_END,
	};
	int rc = pack_args_parse(CMD, tab, argc, argv, ops, 2, &n);
	if (rc)
		return rc;
	if (help) {
		puts("usage: packer reshard SRC DEST (--shard-size SIZE | --single) [--force]");
		argtab_help(stdout, tab);
		return 0;
	}
	if (n < 2)
		return pack_usage_error(CMD, "missing SRC or DEST");
	if (!shard_size == !single)
		return pack_usage_error(CMD, "give one of --shard-size SIZE and --single");
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
		rc = reshard_run(&r, ops[1], shard_size, force);
	}
	pack_writer_abort(r.w);
	pack_dest_abort(&r.dst);
	for (uint32_t k = 0; k < r.nlabels; k++)
		free(r.labels[k]);
	free(r.labels);
	layout_free(&r.src);
	return rc;
}
