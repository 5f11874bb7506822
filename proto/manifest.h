/* manifest.h — a sharded dataset's table of contents, encode and decode.
 *
 * A sharded dataset is a folder of ordinary dataset files (each an LMDB
 * data file that dsstore_open reads alone, its samples keyed 0..n-1 and its
 * header counting only them) plus this manifest, named MANIFEST_NAME, which
 * says how the shards make one dataset: the whole dataset's header and, per
 * shard in sample order, its file name, the global index of its first
 * sample, its sample count, its size in bytes and the CRC-32C of the whole
 * file. The same manifest sits beside the shards in object storage, where
 * it is written last, so a half-pushed dataset has none.
 *
 * The text form, one record a line, fields separated by one space, '\n'
 * line ends, nothing else (no comments, no blank lines):
 *   feeder-manifest 1
 *   header <2 * DSFORMAT_HEADER_SIZE lowercase hex digits: dsformat_header_encode's bytes>
 *   shards <N>
 *   shard <name> <first> <count> <bytes> <crc32c as 8 lowercase hex digits>   (N lines)
 *   end
 * Shard names are 1..MANIFEST_MAX_NAME-1 characters of [A-Za-z0-9._-], not
 * starting with '.', unique. The ranges are contiguous from 0 and add up to
 * the header's sample count; every count is at least 1 (a dataset of no
 * samples has one shard of 0 samples), every size at least 1.
 *
 * No I/O here: packer, feederd and the fuzzer share this one parser. */
#ifndef FEEDER_MANIFEST_H
#define FEEDER_MANIFEST_H

#include "dsformat.h"

#include <stddef.h>
#include <stdint.h>

#define MANIFEST_NAME "feeder.manifest"
#define MANIFEST_VERSION 1
#define MANIFEST_MAX_NAME 64
#define MANIFEST_MAX_SHARDS 1000000u
/* The largest manifest text decode accepts (1,000,000 shard lines fit). */
#define MANIFEST_MAX_TEXT (128u << 20)

struct manifest_shard {
	char name[MANIFEST_MAX_NAME]; /* NUL-terminated */
	uint64_t first;               /* global index of its sample 0 */
	uint64_t count;               /* samples in the shard */
	uint64_t bytes;               /* size of the shard file */
	uint32_t crc;                 /* CRC-32C of the shard file's bytes */
};

struct manifest {
	struct dsformat_header header; /* the whole dataset's (samples = all shards') */
	size_t nshards;
	struct manifest_shard *shards; /* malloc'd, nshards entries, in sample order */
};

/* Parse and validate len bytes of manifest text into m (m->shards is
 * malloc'd; free with manifest_free). Returns 0, or FEEDER_EFORMAT /
 * FEEDER_EVERSION / -ENOMEM with one sentence in err naming the line. */
int manifest_decode(const char *text, size_t len, struct manifest *m, char *err, size_t errlen);

/* The text form of m, malloc'd and NUL-terminated in *text (its length in
 * *len). Validates m as decode would. 0, FEEDER_EFORMAT or -ENOMEM. */
int manifest_encode(const struct manifest *m, char **text, size_t *len, char *err, size_t errlen);

/* The shard holding global sample index (binary search); m->nshards if
 * index is past the end. */
size_t manifest_find(const struct manifest *m, uint64_t index);

void manifest_free(struct manifest *m);

#endif
