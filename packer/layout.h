/* layout.h — a dataset on disk as a list of shard files, whichever way it
 * was packed: a sharded dataset's folder (read from its manifest, see
 * proto/manifest.h) or a single-file dataset (one LMDB environment, DEST/
 * data.mdb), which is one shard named "data.mdb" whose manifest is made
 * here from its header and file. packer's inspect, verify, cat, reshard and
 * push all start here. Functions return 0 or a negative code with one
 * sentence in err naming the path. */
#ifndef FEEDER_LAYOUT_H
#define FEEDER_LAYOUT_H

#include "manifest.h"

#include <stddef.h>
#include <stdint.h>

struct dsstore;

struct layout {
	char dir[4096];    /* the dataset's folder */
	int sharded;       /* 1: dir holds MANIFEST_NAME; 0: a single data.mdb */
	struct manifest m; /* read (sharded) or made (single; its CRC computed
			    * only when layout_load is asked for it) */
	/* A single dataset's store, opened (and its pages checked) to make
	 * the manifest and kept for the first layout_open_shard, so that the
	 * file is not opened and checked twice. */
	struct dsstore *kept;
};

/* Load the dataset at dir. with_crc: for a single-file dataset, compute
 * the file's CRC-32C (reads the whole file); a sharded dataset's come from
 * its manifest. */
int layout_load(const char *dir, int with_crc, struct layout *l, char *err, size_t errlen);

/* dir/<shard i's name> into out. 0, or -ENAMETOOLONG with a sentence. */
int layout_shard_path(const struct layout *l, size_t i, char *out, size_t outlen, char *err,
		      size_t errlen);

/* Open shard i through dsstore (read-only): a single dataset's folder, so
 * that messages name it as before, or the shard file. The caller closes
 * *ds. 0 or dsstore_open's code with its sentence. */
int layout_open_shard(struct layout *l, size_t i, struct dsstore **ds, char *err, size_t errlen);

/* CRC-32C and size of the file at path, read sequentially with read() in
 * 64 KiB pieces (never loaded whole). 0 or a negative errno with a sentence. */
int layout_file_crc(const char *path, uint32_t *crc, uint64_t *bytes, char *err, size_t errlen);

void layout_free(struct layout *l);

#endif
