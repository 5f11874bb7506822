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
 * so a rescan that drops or replaces a dataset never pulls it from under a
 * stream. The registry itself is used by the event loop thread only; a
 * dataset (and its dsstore) may be read by any worker thread. */
#ifndef FEEDER_REGISTRY_H
#define FEEDER_REGISTRY_H

#include "dsstore.h"
#include "protocol.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define REGISTRY_LOGGED_MAX 1024

struct dataset {
	char name[PROTO_NAME_MAX];
	struct dsstore *store;
	struct dsformat_header hdr;
	dev_t dev;                 /* identity of data.mdb, to notice replacement */
	ino_t ino;
	struct timespec mtime;
	atomic_uint refs;
	atomic_uint streams;       /* open streams reading it (for STATUS) */
	pthread_mutex_t lock;      /* guards logged[] */
	uint64_t logged[REGISTRY_LOGGED_MAX]; /* corrupt samples already logged */
	unsigned nlogged;
};

struct registry;

/* Create a registry for dir and scan it. A directory that cannot be opened is
 * an error; datasets that fail to open are logged and skipped. */
int registry_open(struct registry **out, const char *dir, char *err, size_t errlen);
/* Scan again: new datasets appear, removed ones disappear, changed ones
 * (data.mdb replaced) are reopened. Streams keep the dataset they hold. */
int registry_rescan(struct registry *r, char *err, size_t errlen);
void registry_close(struct registry *r);

size_t registry_count(const struct registry *r);
/* The i-th dataset (sorted by name), not referenced: valid until the next
 * rescan or close. */
struct dataset *registry_at(const struct registry *r, size_t i);
/* The dataset called name with a reference taken, or NULL. */
struct dataset *registry_get(const struct registry *r, const char *name);

void dataset_ref(struct dataset *d);
void dataset_unref(struct dataset *d);
/* 1 the first time sample index is reported corrupt (the caller logs it),
 * 0 after that. Thread-safe. */
int dataset_note_corrupt(struct dataset *d, uint64_t index);

#endif
