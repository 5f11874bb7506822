/* pack_writer.h — the dataset a pack writes: one data.mdb, or, with
 * --shard-size, shard files and their manifest (proto/manifest.h).
 *
 * pack images and pack audio drive this one writer the way they drove
 * dsstore_writer: samples in increasing global index order, each followed
 * by its name, periodic commits, then finish with the whole dataset's
 * header. Unsharded, every call goes straight to one dsstore_writer on
 * DEST.tmp/data.mdb, in the same order as before, so the file is the same
 * byte for byte. Sharded, a new shard file (pack_dest_shard_path) is
 * started before a sample that would take the current one's record bytes
 * past the shard size (a sample is never split; one larger than the size
 * has a shard of its own); each shard is an ordinary dataset with its own
 * samples keyed from 0, every label, names, and a header counting its own
 * samples (source bytes and tiled records too), closed as soon as it is
 * full; finish writes the manifest last. Functions return 0 or a negative
 * code with a sentence in err; on any error call pack_writer_abort (the
 * caller's pack_dest_abort removes the files). */
#ifndef FEEDER_PACK_WRITER_H
#define FEEDER_PACK_WRITER_H

#include "dsstore.h"
#include "pack_dest.h"

#include <stddef.h>
#include <stdint.h>

struct pack_writer;

/* Start writing into d's temporary folder. shard_size 0: one data.mdb
 * (initial_map as dsstore_writer_open takes it); else shards of about
 * shard_size record bytes each. tmpl: the dataset's header as every shard
 * carries it (samples, source_bytes and tiled are counted here); labels:
 * the class names, nlabels of them (tmpl->classes), written into every
 * shard. Both are kept by pointer until pack_writer_finish. */
int pack_writer_open(struct pack_dest *d, uint64_t shard_size, size_t initial_map,
		     const struct dsformat_header *tmpl, const char *const *labels,
		     struct pack_writer **out, char *err, size_t errlen);

/* dsstore_writer_put_sample and _put_sample_filled by global index (the
 * next one, index order), src_bytes the sample's source file size for the
 * shard's header. */
int pack_writer_put_sample(struct pack_writer *w, uint64_t index, const struct dsformat_sample *s,
			   const void *payload, uint64_t src_bytes, char *err, size_t errlen);
int pack_writer_put_sample_filled(struct pack_writer *w, uint64_t index, struct dsformat_sample *s,
				  dsstore_fill_fn fill, void *ctx, uint64_t src_bytes, char *err,
				  size_t errlen);
/* A record copied as it is (dsstore_get_record's bytes), flags its
 * decoded header's (for the shard's tiled count). */
int pack_writer_put_record(struct pack_writer *w, uint64_t index, const void *rec, size_t len,
			   uint32_t flags, char *err, size_t errlen);
/* The name of the sample just put. */
int pack_writer_put_name(struct pack_writer *w, uint64_t index, const char *name, char *err,
			 size_t errlen);
int pack_writer_commit(struct pack_writer *w, char *err, size_t errlen);

/* Write the labels and h (the whole dataset's header) into the single
 * data.mdb, or close the last shard and write the manifest with h and
 * every shard's name, range, size and CRC-32C. Consumes w either way. */
int pack_writer_finish(struct pack_writer *w, const struct dsformat_header *h, char *err,
		       size_t errlen);
void pack_writer_abort(struct pack_writer *w);

#endif
