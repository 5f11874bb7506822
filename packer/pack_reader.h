/* pack_reader.h — read many files at once through io_uring and hand them
 * back whole, in index order.
 *
 * The pack subcommands read their sources through one reader: it keeps up
 * to depth files in flight (statx, open, read, close, all io_uring
 * operations) while the caller CRCs, decodes and writes earlier ones, and
 * hands files back strictly in index order, which is the order
 * dsstore_writer_put_sample (MDB_APPEND) needs. A file that cannot be read
 * is reported in its own pack_read, never as a failure of the reader. */
#ifndef FEEDER_PACK_READER_H
#define FEEDER_PACK_READER_H

#include <stddef.h>
#include <stdint.h>

/* One file handed back by pack_reader_next. data/len are the whole file
 * (len bytes, data valid until pack_reader_release); error is 0 or a negative
 * errno for this file alone (open, stat or read failed; -EISDIR a directory,
 * -EINVAL not a regular file, -EFBIG larger than max_file, -EILSEQ refused
 * by the sniff), in which case data is NULL. pack_reader_strerror words it
 * for a warning. */
struct pack_read {
	size_t index;     /* position in the paths array */
	const char *path; /* paths[index] */
	uint8_t *data;
	size_t len;
	size_t got; /* bytes at data: len, or in direct mode its head */
	int error;
	unsigned slot; /* internal */
};

struct pack_reader;

/* Bytes of a file read before its sniff decides whether to read the rest. */
#define PACK_READER_HEAD ((size_t)64 << 10)
/* The head a direct reader reads and hands back (the rest stays on disk). */
#define PACK_READER_DIRECT_HEAD ((size_t)4096)

struct pack_reader_opts {
	/* Files in flight or held at once (0 = 64; 32..4096 is used). */
	unsigned depth;
	/* Files larger than this are reported with -EFBIG without being
	 * opened (0 = DSFORMAT_MAX_PAYLOAD). The reader holds at most depth
	 * files, so this also bounds its memory: depth x max_file. */
	size_t max_file;
	/* Optional: which files are of the expected kind, judged from their
	 * first PACK_READER_HEAD bytes (the whole file when shorter) as soon
	 * as those are read; 0 refuses the file, which is then reported with
	 * -EILSEQ and read no further. Called on the caller's thread (inside
	 * pack_reader_next). */
	int (*sniff)(const uint8_t *head, size_t len);
	const char *sniff_fail; /* the words for -EILSEQ: "not a JPEG file" */
	/* Direct mode: files are handed back open with only their first
	 * PACK_READER_DIRECT_HEAD bytes read (got <= len), and the caller
	 * reads each one where it will keep it, with pack_reader_read_into:
	 * the packer reads straight into LMDB's reserved space, without a
	 * staging copy. The reader asks the kernel to read the rest ahead
	 * (POSIX_FADV_WILLNEED), so a cold disk still sees depth files in
	 * flight. */
	int direct;
	/* Confined: every path must resolve beneath dirfd, symbolic links
	 * and ".." included (openat2's RESOLVE_BENEATH, checked by the kernel
	 * at each open: no window between a check and the open). An absolute
	 * path or one that leaves dirfd is reported with -EXDEV, and nothing
	 * of it is read, not even its size. */
	int beneath;
};

/* Open a reader over n paths (borrowed, must outlive the reader), relative
 * to directory fd dirfd (AT_FDCWD for plain paths), with options o (NULL:
 * all defaults). Each slot keeps its buffer between files (up to 4 MiB), so
 * after warm-up small files cost no allocation. 0 or a negative errno. */
int pack_reader_open(int dirfd, const char *const *paths, size_t n,
		     const struct pack_reader_opts *o, struct pack_reader **out, char *err,
		     size_t errlen);

/* Wait for the next file in index order. Returns 1 and fills *out, 0 when all
 * n files have been handed out, or a negative code if io_uring itself failed
 * (per-file failures are in out->error, not here). The caller may hold
 * several pack_reads at once, up to the reader's depth; a reader with all
 * its slots held returns -EDEADLK instead of waiting forever. */
int pack_reader_next(struct pack_reader *r, struct pack_read *out, char *err, size_t errlen);

/* A pack_read's error in words for a warning: "not a regular file" for
 * -EINVAL, "larger than the 64 MiB limit (--max-file-size)" for -EFBIG, the
 * sniff's words for -EILSEQ, "outside the source folder (--confine)" for
 * -EXDEV, strerror otherwise. The string lives as long as the reader; safe
 * to call from any thread. */
const char *pack_reader_strerror(const struct pack_reader *r, int error);

/* Direct mode: copy rd's whole file (rd->len bytes) into dst, its head from
 * the reader and the rest read from the file. 0, -ENODATA if the file is now
 * shorter than its listed size (it changed while being packed), or a
 * negative errno of the read. */
int pack_reader_read_into(struct pack_reader *r, const struct pack_read *rd, uint8_t *dst);

/* Give back the slot of a pack_read; its data pointer becomes invalid. */
void pack_reader_release(struct pack_reader *r, struct pack_read *rd);

/* Number of slots (files that can be in flight or held at once). */
unsigned pack_reader_depth(const struct pack_reader *r);

void pack_reader_close(struct pack_reader *r);

#endif
