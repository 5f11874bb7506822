/* pack_dest.h — a dataset's destination, written under a temporary name
 * and renamed into place only when complete.
 *
 * A pack calls pack_dest_begin (make DEST.tmp-XXXXXX beside DEST, cleaning
 * stale ones a killed pack left, and arm SIGINT/SIGTERM/SIGHUP cleanup),
 * opens the LMDB writer (proto/dsstore.h) on the temporary directory, and
 * ends with pack_dest_commit (fsync, atomic rename, fsync of the parent) or
 * pack_dest_abort on any error; so a reader never sees half a dataset and
 * an interrupted pack leaves nothing behind. Functions return 0 or a
 * negative errno with err filled. */
#ifndef FEEDER_PACK_DEST_H
#define FEEDER_PACK_DEST_H

#include <limits.h>
#include <stddef.h>

/* A dataset under construction. tmp is the directory to hand to
 * dsstore_writer_open; it lives in DEST's parent directory so the final
 * rename is atomic, and is named "<DEST>.tmp-XXXXXX", which no reader takes
 * for a dataset. It holds a file "packer.pid" naming the packing process,
 * so that the next pack into the same DEST can tell a leftover of a killed
 * pack (process gone) from a pack still running, and remove only the former.
 * The directory may hold only data.mdb, lock.mdb, packer.pid, a sharded
 * dataset's manifest (MANIFEST_NAME) and shard files named by
 * pack_dest_shard_path: those are the names the signal handler removes. */
struct pack_dest {
	char dest[PATH_MAX];
	char tmp[PATH_MAX];
	int force;
	int active;         /* tmp exists and belongs to us */
	int data_fd;        /* the file being written, opened by pack_dest_writeback; -1 if not */
	char data_name[32]; /* its name in tmp: "" for data.mdb, else the last shard's */
};

/* Prepare to write dest. Fails with -EEXIST (message "DEST: already exists
 * (use --force to replace it)") when dest exists and force is 0; with force,
 * an existing dest is replaced at commit time, but only if it is empty or a
 * dataset (holds nothing but data.mdb and lock.mdb, or a manifest and shard
 * files); anything else -EEXIST. Removes stale "<dest>.tmp-*"
 * directories of dead packs, creates the new temporary directory, and
 * installs SIGINT/SIGTERM/SIGHUP handlers that remove it and then die of the
 * same signal. Only one pack_dest may be active per process. */
int pack_dest_begin(struct pack_dest *d, const char *dest, int force, char *err, size_t errlen);

/* Finish: remove packer.pid, fsync every file in tmp, rename tmp to dest
 * (swapping atomically with an old dest under --force, then deleting the old
 * one), fsync the parent directory, disarm the signal handlers. Call after
 * dsstore_writer_finish. On failure the temporary directory is removed. */
int pack_dest_commit(struct pack_dest *d, char *err, size_t errlen);

/* Start writing tmp/data.mdb's dirty pages to disk now, without waiting
 * (sync_file_range). Call it every few tens of MB written: the disk then
 * works while packing goes on, and the final sync in dsstore_writer_finish
 * finds little left to do. Best effort: errors are ignored here and caught
 * by that final sync. */
void pack_dest_writeback(struct pack_dest *d);

/* Shard i's file name, "shard-NNNNN.mdb" (five digits or more). */
void pack_dest_shard_name(unsigned i, char *out, size_t outlen);

/* tmp/<shard i's name> into out, for dsstore_writer_open_file: from now on
 * the signal handler removes it (and every shard below i), and
 * pack_dest_writeback kicks it. 0 or -ENAMETOOLONG with a sentence. */
int pack_dest_shard_path(struct pack_dest *d, unsigned i, char *out, size_t outlen, char *err,
			 size_t errlen);

/* Remove the temporary directory and disarm the handlers. Safe to call on a
 * committed or never-begun pack_dest. */
void pack_dest_abort(struct pack_dest *d);

#endif
