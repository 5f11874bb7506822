/* pack_common.h — the pieces every `packer pack <kind>` subcommand shares.
 *
 * packer.c dispatches `pack images` to pack_images_main (pack_images.c) and
 * `pack audio` to pack_audio_main (pack_audio.c, built when present). Both
 * build a dataset the same way:
 *
 *   pack_dest_begin      make DEST.tmp-XXXXXX beside DEST (cleaning stale
 *                        ones a killed pack left), arm SIGINT/SIGTERM cleanup
 *   dsstore_writer_open  on dest.tmp, put samples/labels/names, finish
 *   pack_dest_commit     fsync, rename the temporary directory to DEST,
 *                        fsync the parent — or pack_dest_abort on any error
 *
 * Source files are read through pack_reader, an io_uring batch reader that
 * keeps many reads in flight and hands files back in index order, which is
 * the order dsstore_writer_put_sample (MDB_APPEND) needs.
 *
 * Conventions of the pack subcommands: exit 0 on success, 1 on a runtime
 * failure, 2 (PACK_EXIT_USAGE) on bad usage or bad input (empty source,
 * existing DEST without --force, a bad list line); messages go to stderr as
 * one line starting "packer: ". Everything here returns 0 or a negative
 * errno / FEEDER_E* code and fills err; nothing here exits. */
#ifndef FEEDER_PACK_COMMON_H
#define FEEDER_PACK_COMMON_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PACK_EXIT_OK 0
#define PACK_EXIT_FAIL 1
#define PACK_EXIT_USAGE 2

/* Subcommand entry points; argv[0] is the kind word ("images", "audio"),
 * options and operands follow. They return the process exit status. */
int pack_images_main(int argc, char **argv);
int pack_audio_main(int argc, char **argv);

/* ---- messages ---- */

/* Print "packer: warning: <message>\n" to stderr, first clearing a progress
 * line if one is showing. */
void pack_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "packer: <message>\n" to stderr (same clearing). */
void pack_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Join argv[first..argc) with spaces into out (at most outlen-1 chars,
 * truncated), for struct dsformat_header.options. */
void pack_options_string(int argc, char **argv, int first, char *out, size_t outlen);

/* Parse a decimal unsigned number in [min, max] (whole string). 0 or -EINVAL. */
int pack_parse_uint(const char *s, unsigned long long min, unsigned long long max,
		    unsigned long long *out);

/* ---- temporary destination and atomic rename ---- */

/* A dataset under construction. tmp is the directory to hand to
 * dsstore_writer_open; it lives in DEST's parent directory so the final
 * rename is atomic, and is named "<DEST>.tmp-XXXXXX", which no reader takes
 * for a dataset. It holds a file "packer.pid" naming the packing process,
 * so that the next pack into the same DEST can tell a leftover of a killed
 * pack (process gone) from a pack still running, and remove only the former.
 * The directory may hold only data.mdb, lock.mdb and packer.pid: those are
 * the names the signal handler removes. */
struct pack_dest {
	char dest[PATH_MAX];
	char tmp[PATH_MAX];
	int force;
	int active;  /* tmp exists and belongs to us */
	int data_fd; /* tmp/data.mdb, opened by pack_dest_writeback; -1 if not */
};

/* Prepare to write dest. Fails with -EEXIST (message "DEST: already exists
 * (use --force to replace it)") when dest exists and force is 0; with force,
 * an existing dest is replaced at commit time, but only if it is empty or a
 * dataset (holds nothing but data.mdb and lock.mdb); anything else -EEXIST. Removes stale "<dest>.tmp-*"
 * directories of dead packs, creates the new temporary directory, and
 * installs SIGINT/SIGTERM/SIGHUP handlers that remove it and then die of the
 * same signal. Only one pack_dest may be active per process. */
int pack_dest_begin(struct pack_dest *d, const char *dest, int force, char *err, size_t errlen);

/* Finish: fsync every file in tmp, remove packer.pid, rename tmp to dest
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

/* Remove the temporary directory and disarm the handlers. Safe to call on a
 * committed or never-begun pack_dest. */
void pack_dest_abort(struct pack_dest *d);

/* ---- io_uring batch file reader ---- */

/* One file handed back by pack_reader_next. data/len are the whole file
 * (len bytes, data valid until pack_reader_release); error is 0 or a negative
 * errno for this file alone (open, stat or read failed; -EISDIR a directory,
 * -EINVAL not a regular file, -EFBIG larger than max_file), in which case
 * data is NULL. pack_read_strerror words it for a warning. */
struct pack_read {
	size_t index;     /* position in the paths array */
	const char *path; /* paths[index] */
	uint8_t *data;
	size_t len;
	int error;
	unsigned slot;    /* internal */
};

struct pack_reader;

/* Open a reader over n paths (borrowed, must outlive the reader), relative
 * to directory fd dirfd (AT_FDCWD for plain paths). depth is the number of
 * files in flight (0 = 64; at least 32 is used). Files larger than max_file
 * bytes (0 = DSFORMAT_MAX_PAYLOAD) are reported with -EFBIG. Each slot keeps
 * its buffer between files, so after warm-up no allocation happens. */
int pack_reader_open(int dirfd, const char *const *paths, size_t n, unsigned depth,
		     size_t max_file, struct pack_reader **out, char *err, size_t errlen);

/* Wait for the next file in index order. Returns 1 and fills *out, 0 when all
 * n files have been handed out, or a negative code if io_uring itself failed
 * (per-file failures are in out->error, not here). The caller may hold
 * several pack_reads at once, up to the reader's depth; a reader with all
 * its slots held returns -EDEADLK instead of waiting forever. */
int pack_reader_next(struct pack_reader *r, struct pack_read *out, char *err, size_t errlen);

/* "not a regular file" for -EINVAL, "larger than the size limit" for
 * -EFBIG, strerror otherwise. */
const char *pack_read_strerror(int error);

/* Give back the slot of a pack_read; its data pointer becomes invalid. */
void pack_reader_release(struct pack_reader *r, struct pack_read *rd);

/* Number of slots (files that can be in flight or held at once). */
unsigned pack_reader_depth(const struct pack_reader *r);

void pack_reader_close(struct pack_reader *r);

/* ---- progress line ---- */

/* A progress line on stderr: "packer: 1234/20000 files  850 files/s
 * 93.2 MB/s  ETA 0:22". Shown (redrawn with \r at most 4 times a second)
 * when stderr is a terminal; otherwise silent unless verbose, in which case
 * one plain line is printed every 2 seconds. */
struct pack_progress {
	uint64_t total;
	uint64_t files, bytes;
	double start, last;
	int tty, verbose;
	const char *what; /* noun for the count, default "files" */
};

void pack_progress_init(struct pack_progress *p, uint64_t total, int verbose);
/* Add files and bytes done, redraw if due. */
void pack_progress_add(struct pack_progress *p, uint64_t files, uint64_t bytes);
/* Final line (terminal or verbose): totals, rate and elapsed time. */
void pack_progress_done(struct pack_progress *p);

/* Monotonic seconds. */
double pack_now(void);

#endif
