/* dsformat.h — the on-disk contract of a Feeder dataset, encode and decode.
 *
 * A dataset is one LMDB environment (see dsstore.h for the I/O) with four
 * named databases:
 *   "meta"    key "header" -> the dataset header (DSFORMAT_HEADER_SIZE bytes)
 *   "labels"  key class id, u32 big-endian -> class name, UTF-8, no NUL
 *   "samples" key sample index, u64 big-endian -> sample header + payload
 *   "names"   key sample index, u64 big-endian -> the source name (optional)
 *
 * All header fields are little-endian. A sample value (format versions 2
 * and 3) is a 32-byte header
 *   u32 label | u32 payload_len | u32 crc32c(payload) | u32 frames | u32 dim
 *   | u8 dtype | u8 reserved | u16 flags | u32 aux | u32 crc32c(bytes 0..27)
 * followed by payload_len bytes: JPEG bytes (kind jpeg), a frames x dim
 * row-major matrix of float16/float32 (kind features), or `frames` samples
 * of one channel of 16-bit PCM (kind wave: dim 1, dtype s16, at the rate the
 * dataset header gives at bytes 36..39). The last field is a
 * CRC of the header itself, so that a changed label, length or shape is
 * caught like a changed payload.
 *
 * Version 3 says how a JPEG is tiled (media/jpeg_tiles.h): flags bit 0
 * (DSFORMAT_FLAG_TILED) marks a payload that packer rewrote with restart
 * intervals forming a grid, aux holding the interval in MCUs (else flags
 * and aux are 0, as in version 2). The dataset header adds, at bytes
 * 328..343, the bytes the stored samples' source files had and how many
 * records are tiled, so that `packer inspect` can say what tiling cost.
 * The tiling is a fact about the JPEG itself (its restart markers), which
 * feederd reads from the payload; a version 2 reader refuses a version 3
 * dataset by its version, and version 1 and 2 datasets are still read
 * (version 1 records have the first 24 bytes only: dtype then three
 * reserved bytes, no header CRC).
 *
 * This module does no I/O: it turns bytes into validated structs and back,
 * so that packer, the daemon and the fuzzers share one implementation. */
#ifndef FEEDER_DSFORMAT_H
#define FEEDER_DSFORMAT_H

#include <stddef.h>
#include <stdint.h>

#define DSFORMAT_MAGIC "FEEDERDS"
#define DSFORMAT_VERSION 3          /* what packer writes */
#define DSFORMAT_VERSION_MIN 1      /* the oldest still read */
#define DSFORMAT_HEADER_SIZE 344    /* version 3; encode writes this */
#define DSFORMAT_HEADER_SIZE_V2 328 /* versions 1 and 2 */
#define DSFORMAT_SAMPLE_HDR 32      /* of a version 2 or 3 record */
#define DSFORMAT_FLAG_TILED 1u      /* jpeg: restart intervals on a grid, aux MCUs each */
#define DSFORMAT_SAMPLE_HDR_V1 24
/* The fewest bytes of data.mdb one record (or label) and its key take: a
 * bound on the counts a file of some size can hold. */
#define DSFORMAT_MIN_RECORD 16
#define DSFORMAT_MAX_NAME 4096
/* Guards against absurd header values in corrupt or hostile datasets. */
#define DSFORMAT_MAX_PAYLOAD (1u << 30)
#define DSFORMAT_MAX_DIM 4096

/* A reader of version 3 that predates kind wave refuses it by its kind
 * ("dataset kind 3 is unknown"), so the kind needed no new version. */
enum dsformat_kind { DSFORMAT_KIND_JPEG = 1, DSFORMAT_KIND_FEATURES = 2, DSFORMAT_KIND_WAVE = 3 };
enum dsformat_dtype {
	DSFORMAT_DTYPE_NONE = 0,
	DSFORMAT_DTYPE_F16 = 1,
	DSFORMAT_DTYPE_F32 = 2,
	DSFORMAT_DTYPE_S16 = 3, /* wave: little-endian 16-bit PCM */
};
/* The sample rates a wave dataset may declare. */
#define DSFORMAT_RATE_MIN 1000
#define DSFORMAT_RATE_MAX 384000

struct dsformat_header {
	uint32_t version;        /* DSFORMAT_VERSION when written */
	uint32_t kind;           /* enum dsformat_kind */
	uint64_t samples;        /* number of records in "samples", keys 0..samples-1 */
	uint32_t classes;        /* number of records in "labels", ids 0..classes-1 */
	uint32_t feat_dim;       /* features: columns per frame; wave: 1; jpeg: 0 */
	uint32_t dtype;          /* features: f16 or f32; wave: s16; jpeg: 0 */
	uint32_t rate;           /* wave: samples per second (bytes 36..39, 0 in other kinds) */
	char packer_version[32]; /* NUL-terminated */
	char options[256];       /* NUL-terminated, the packer's command line options */
	uint64_t source_bytes;   /* version 3: the stored samples' source files, in bytes */
	uint64_t tiled;          /* version 3: records with DSFORMAT_FLAG_TILED */
};

struct dsformat_sample {
	uint32_t label;
	uint32_t payload_len;
	uint32_t crc;    /* CRC-32C of the payload */
	uint32_t frames; /* features: rows; wave: samples; jpeg: 0 */
	uint32_t dim;    /* features: columns; wave: 1; jpeg: 0 */
	uint32_t dtype;  /* features: enum dsformat_dtype; wave: s16; jpeg: 0 */
	uint32_t flags;  /* version 3: DSFORMAT_FLAG_*; versions 1, 2: 0 */
	uint32_t aux;    /* version 3, tiled: the restart interval in MCUs; else 0 */
};

/* Bytes of a record's header in a dataset of version v (0 if unknown). */
size_t dsformat_sample_hdr_size(uint32_t version);

const char *dsformat_kind_name(uint32_t kind);   /* "jpeg", "features", "wave", "?" */
const char *dsformat_dtype_name(uint32_t dtype); /* "f16", "f32", "s16", "none", "?" */
size_t dsformat_dtype_size(uint32_t dtype);      /* bytes per element, 0 if none */

/* Encode h into out (DSFORMAT_HEADER_SIZE bytes, version 3's layout).
 * Strings are truncated. */
void dsformat_header_encode(const struct dsformat_header *h, uint8_t *out);

/* Decode and validate a header record of len bytes (DSFORMAT_HEADER_SIZE_V2
 * for versions 1 and 2, DSFORMAT_HEADER_SIZE for 3). Returns 0, or
 * FEEDER_EFORMAT (wrong magic or size, bad field) / FEEDER_EVERSION, with a
 * sentence in err. */
int dsformat_header_decode(const void *buf, size_t len, struct dsformat_header *h, char *err,
			   size_t errlen);

/* Encode a sample header into out (DSFORMAT_SAMPLE_HDR bytes, version 3,
 * its header CRC included). */
void dsformat_sample_encode(const struct dsformat_sample *s, uint8_t *out);

/* Decode the header of a sample value of len bytes of a dataset of format
 * version, check the header CRC (version 2: FEEDER_ECORRUPT "record header
 * damaged") and that the lengths agree (payload_len == len - header,
 * frames*dim*dtype size == payload_len for features). *payload points into
 * buf. Does not check the payload's CRC (see dsformat_sample_verify).
 * Returns 0 or FEEDER_EFORMAT/ECORRUPT/EVERSION. */
int dsformat_sample_decode(uint32_t version, const void *buf, size_t len, struct dsformat_sample *s,
			   const uint8_t **payload, char *err, size_t errlen);

/* 0 if crc32c(payload) matches s->crc, else FEEDER_ECORRUPT with a sentence
 * saying the payload is damaged. */
int dsformat_sample_verify(const struct dsformat_sample *s, const uint8_t *payload, char *err,
			   size_t errlen);

/* The same check for a CRC already computed (crc32c_copy's, over the copy
 * the caller made of the payload). */
int dsformat_sample_crc_check(const struct dsformat_sample *s, uint32_t computed, char *err,
			      size_t errlen);

/* 0 if sample s fits the dataset whose header is h: label below h->classes
 * (when classes > 0; a dataset without a label table has opaque labels);
 * for features, the header's dtype and feat_dim (readers size their output
 * by the header, so a record of another width would write past it); for
 * wave, one column of s16 and no flags; for
 * jpeg, no matrix fields, and flags/aux as version 3 defines them (an
 * unknown flag, a tiled record without an interval, a features record
 * with either). Else FEEDER_ECORRUPT with a sentence. (Version 1
 * records have no header CRC, and a header CRC does not say the values fit
 * this dataset: these fields need their own check.)
 * (Added by the fuzzing work: a features record wider than the dataset made
 * feederd write past a batch slot.) */
int dsformat_sample_check(const struct dsformat_header *h, const struct dsformat_sample *s,
			  char *err, size_t errlen);

/* LMDB keys. */
void dsformat_sample_key(uint64_t index, uint8_t out[8]);
uint64_t dsformat_sample_key_decode(const uint8_t in[8]);
void dsformat_label_key(uint32_t id, uint8_t out[4]);

#endif
