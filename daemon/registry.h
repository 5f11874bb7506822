/* registry.h — the datasets feederd serves: one per sub-directory of the
 * --datasets directory, served under the sub-directory's name.
 *
 * The server scans the directory at start and again on SIGHUP. Names are
 * checked with proto_name_check ([A-Za-z0-9._-], no leading '.'), symbolic
 * links are refused at every step (the sub-directory and its data.mdb), and
 * the dataset is opened through the descriptor of the sub-directory opened
 * with O_NOFOLLOW relative to the datasets directory, so nothing outside that
 * directory is ever opened, even if entries are renamed meanwhile.
 *
 * Datasets are reference counted: a stream holds its dataset while it runs,
 * so a rescan that drops or replaces a dataset never pulls its mapping from
 * under a worker. The registry itself is used by the event loop thread only;
 * a dataset (and its dsstore) may be read by any worker thread.
 *
 * Remote datasets (remote.h) are served beside them: each version read from
 * its manifest comes from remote_take at a rescan or check; a newer one
 * retires the version served.
 *
 * A version of a dataset that is no longer served is retired
 * (dataset_retire): streams still reading it end with an ERROR that says
 * why, instead of going on with data that is gone from disk. See registry.c
 * for when that happens (removed, replaced, unreadable). */
#ifndef FEEDER_REGISTRY_H
#define FEEDER_REGISTRY_H

#include "dsstore.h"
#include "manifest.h"
#include "protocol.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define REGISTRY_LOGGED_MAX 1024

struct shard_set;

struct dataset {
	char name[FEEDER_DATASET_MAX];
	struct dsstore *store; /* a local dataset's data.mdb; NULL for a remote one */
	/* A remote dataset (remote.h): where it lives, its manifest (the
	 * version served) and its shards in the daemon's cache. */
	char url[1100];
	struct manifest man;
	struct shard_set *shards;
	uint64_t *shard_first, *shard_count; /* per shard, for the epoch's layout */
	uint32_t block;                      /* shards shuffled together (shuffle_block) */
	struct dsformat_header hdr;
	dev_t dev; /* identity of data.mdb, to notice replacement */
	ino_t ino;
	struct timespec mtime, ctime; /* and size: to notice writes in place */
	off_t size;
	atomic_uint refs;
	atomic_uint streams;                  /* open streams reading it (for STATUS) */
	pthread_mutex_t lock;                 /* guards logged[] and the retirement */
	uint64_t logged[REGISTRY_LOGGED_MAX]; /* corrupt samples already logged */
	unsigned nlogged;
	const void *map; /* the data file's mapping (SIGBUS guard) */
	/* Retired: set once (release) after code and message are written;
	 * whoever reads it set (acquire) may read them without the lock. */
	atomic_int gone;
	int gone_code;
	char gone_msg[PROTO_TEXT_MAX];
	atomic_uint io_run; /* I/O errors in a row (reset by a good read) */
	atomic_int io_logged;
};

/* I/O errors in a row after which a dataset counts as unreadable and is
 * retired: streams end with one clear ERROR instead of searching thousands
 * of positions per sample for a replacement that cannot be read either. */
#define REGISTRY_IO_FAIL_RUN 64

struct registry;
struct remote;

/* Create a registry for dir and scan it; remote (or NULL) adds the remote
 * datasets' versions (remote.h) at every rescan and check. A directory that cannot be opened is
 * an error; datasets that fail to open are logged and skipped. Each dataset
 * opened keeps `readers` read transactions ready (one per worker thread:
 * dsstore_txn_reserve). */
int registry_open(struct registry **out, const char *dir, unsigned readers, struct remote *remote,
		  char *err, size_t errlen);
/* Scan again (SIGHUP): new datasets appear, removed ones disappear, changed
 * ones (data.mdb replaced or modified) and unreadable ones are reopened.
 * Versions no longer served are retired. Returns 0 or a negative code. */
int registry_rescan(struct registry *r, char *err, size_t errlen);
/* The periodic check: a served dataset whose data.mdb is gone, or is
 * another file (st_dev, st_ino), is retired and no longer served (the new
 * version is served after the next rescan). Returns how many were retired. */
unsigned registry_check(struct registry *r);
/* An inotify descriptor (readable when a served data file was written,
 * replaced or removed) for the event loop, or -1; on its events call
 * registry_on_event, which reads them and runs registry_check (returning
 * what that returns). */
int registry_fd(const struct registry *r);
unsigned registry_on_event(struct registry *r);
/* Why name is not served, if it was retired since the last rescan: a
 * sentence, or NULL. */
const char *registry_retired(struct registry *r, const char *name);
void registry_close(struct registry *r);

size_t registry_count(const struct registry *r);
/* The i-th dataset (sorted by name), not referenced: valid until the next
 * rescan, check or close. */
struct dataset *registry_at(const struct registry *r, size_t i);
/* The dataset called name with a reference taken, or NULL. */
struct dataset *registry_get(const struct registry *r, const char *name);

void dataset_ref(struct dataset *d);
void dataset_unref(struct dataset *d);
/* 1 the first time sample index is reported corrupt (the caller logs it),
 * 0 after that. Thread-safe. */
int dataset_note_corrupt(struct dataset *d, uint64_t index);
/* Retire d: code (FEEDER_ENODATASET, -EIO, ...) and a printf sentence for
 * the streams that read it. The first retirement wins. Thread-safe. */
void dataset_retire(struct dataset *d, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* 1 if d is retired; then d->gone_code and d->gone_msg are set. */
int dataset_gone(const struct dataset *d);
/* A read of d faulted (file: the file read, as a log line names it, such
 * as "its data.mdb"; fault_off: the offset in it). Logs the first one,
 * counts the run, and retires d after REGISTRY_IO_FAIL_RUN in a row.
 * Thread-safe. */
void dataset_note_io_error(struct dataset *d, const char *file, uint64_t fault_off);
/* A read of d succeeded: the run of I/O errors is over. Thread-safe. */
void dataset_note_io_ok(struct dataset *d);

#endif
