/* dsstore.h — reading and writing a Feeder dataset's LMDB environment.
 *
 * The record encodings live in dsformat.h; this module owns the LMDB side:
 * which named databases exist, how a writer grows the map instead of failing
 * with MDB_MAP_FULL, and how readers open a finished dataset read-only without
 * a lock file (datasets are immutable once packed, so readers need no locks,
 * and the daemon can serve them from read-only paths).
 *
 * packer writes through dsstore_writer; feederd and packer's inspect, verify
 * and cat read through dsstore. */
#ifndef FEEDER_DSSTORE_H
#define FEEDER_DSSTORE_H

#include "dsformat.h"

#include <stddef.h>
#include <stdint.h>

struct dsstore;
struct dsstore_txn;
struct dsstore_writer;

/* Open the dataset in directory dir read-only (dir may also be a regular
 * file: one shard of a sharded dataset, see manifest.h): check the LMDB file's page
 * structure (lmdb_check.h), then validate the dataset header (magic,
 * version, sample and class counts against the databases). Returns 0 and sets
 * *out, or a negative code with a sentence in err. */
int dsstore_open(const char *dir, struct dsstore **out, char *err, size_t errlen);
void dsstore_close(struct dsstore *ds);
const struct dsformat_header *dsstore_header(const struct dsstore *ds);
/* The read-only mapping of the data file that record pointers point into.
 * Reading it can raise SIGBUS if the file shrinks or the disk fails after
 * the open (dsstore_open refuses a file already shorter than its pages);
 * feederd registers it with its SIGBUS guard (daemon/mapguard.h). */
void dsstore_map(const struct dsstore *ds, const void **addr, size_t *len);

/* A read transaction: one per thread at a time. Pointers returned by the
 * getters stay valid until the transaction is ended (they point into the
 * map). Ended transactions are kept and renewed by the next begin; *out is
 * set before LMDB first reads the map, so a caller whose SIGBUS guard jumps
 * out of a begin holds what to end. */
int dsstore_txn_begin(struct dsstore *ds, struct dsstore_txn **out, char *err, size_t errlen);
void dsstore_txn_end(struct dsstore_txn *t);
/* Make n transactions now, while the file is known good, for later begins
 * to renew: a begin that must make a new one can lose LMDB's object to a
 * fault of the map (mdb_txn_begin reads it before returning the object);
 * a renewal cannot. feederd reserves one per worker at open. 0 or a
 * negative code with a sentence. */
int dsstore_txn_reserve(struct dsstore *ds, unsigned n, char *err, size_t errlen);

/* Fetch sample index: decode its header (length checks, not the CRC; call
 * dsformat_sample_verify for that). Returns 0, -ENOENT if absent, or
 * FEEDER_ECORRUPT/EFORMAT with a sentence. */
int dsstore_get_sample(struct dsstore_txn *t, uint64_t index, struct dsformat_sample *s,
		       const uint8_t **payload, char *err, size_t errlen);
/* Sample index's whole record as stored (header and payload, *len bytes,
 * not decoded), for copying it unchanged. 0, -ENOENT, or FEEDER_ECORRUPT
 * with a sentence. */
int dsstore_get_record(struct dsstore_txn *t, uint64_t index, const uint8_t **rec, size_t *len,
		       char *err, size_t errlen);
/* Class name of id (not NUL-terminated: *len bytes). 0 or -ENOENT. */
int dsstore_get_label(struct dsstore_txn *t, uint32_t id, const char **name, size_t *len);
/* Source name of sample index, if the packer stored one. 0 or -ENOENT. */
int dsstore_get_name(struct dsstore_txn *t, uint64_t index, const char **name, size_t *len);

/* Writer. Creates a new environment in dir (which must exist and be empty),
 * with an initial map of initial_map bytes (0 = 64 MiB) that grows by
 * doubling as data arrives. Samples must be put in increasing index order
 * (they are appended). Writes go into one large transaction that the caller
 * commits when convenient (dsstore_writer_commit); nothing is synced until
 * dsstore_writer_finish, which writes the header, syncs, and shrinks the data
 * file to its used size. On any error call dsstore_writer_abort. */
int dsstore_writer_open(const char *dir, size_t initial_map, struct dsstore_writer **out, char *err,
			size_t errlen);
/* The same, writing the data file path itself (a shard, see manifest.h)
 * instead of a data.mdb in a folder. */
int dsstore_writer_open_file(const char *path, size_t initial_map, struct dsstore_writer **out,
			     char *err, size_t errlen);
int dsstore_writer_put_sample(struct dsstore_writer *w, uint64_t index,
			      const struct dsformat_sample *s, const void *payload, char *err,
			      size_t errlen);
/* Put sample index with its s->payload_len bytes written in place: fill
 * gets LMDB's reserved space for the payload (MDB_RESERVE) and fills it
 * before anything else is written, as LMDB requires; it may complete *s
 * (the CRC of what it wrote), whose header is written after it. When fill
 * returns non-zero nothing of the sample is kept and that code is returned
 * (a caller tells its own failures from the store's through ctx). */
typedef int (*dsstore_fill_fn)(void *ctx, uint8_t *payload, size_t len, struct dsformat_sample *s);
int dsstore_writer_put_sample_filled(struct dsstore_writer *w, uint64_t index,
				     struct dsformat_sample *s, dsstore_fill_fn fill, void *ctx,
				     char *err, size_t errlen);
/* Put sample index's record as dsstore_get_record gave it (index order). */
int dsstore_writer_put_record(struct dsstore_writer *w, uint64_t index, const void *rec, size_t len,
			      char *err, size_t errlen);
int dsstore_writer_put_label(struct dsstore_writer *w, uint32_t id, const char *name, char *err,
			     size_t errlen);
int dsstore_writer_put_name(struct dsstore_writer *w, uint64_t index, const char *name, char *err,
			    size_t errlen);
int dsstore_writer_commit(struct dsstore_writer *w, char *err, size_t errlen);
/* Times the map was grown so far (for tests and -v output). */
unsigned dsstore_writer_grows(const struct dsstore_writer *w);
int dsstore_writer_finish(struct dsstore_writer *w, const struct dsformat_header *h, char *err,
			  size_t errlen);
void dsstore_writer_abort(struct dsstore_writer *w);

#endif
