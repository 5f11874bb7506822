/* registry.c — scan, open and reference-count the served datasets (see
 * registry.h).
 *
 * Datasets that change while served. A stream reads exactly one version of
 * its dataset (the mapping it was opened on), so it can never mix two; what
 * remains to decide is whether it may go on once that version is gone from
 * disk. It may not: a version that is no longer served is retired, and every
 * stream still on it ends with an ERROR naming the dataset and the reason;
 * streams on other datasets go on untouched.
 *
 *  - Removed (the directory or its data.mdb deleted, even though the open
 *    file keeps the data readable): "dataset 'x' was removed from DIR".
 *    Noticed by the periodic check (registry_check, about once a second
 *    from the server's timer) or a SIGHUP rescan.
 *  - Replaced (data.mdb is another file: st_dev/st_ino differ, as after
 *    `packer --force` or `rm -rf x && mv new x`): the periodic check retires
 *    the old version and stops serving the name; the new version is opened
 *    by the next SIGHUP (the operator's "serve what is on disk now", like new
 *    datasets), and only new streams get it.
 *  - Modified in place (the same data.mdb, but its mtime, ctime or size
 *    moved: `cp` onto it): retired by the periodic check like a replacement,
 *    with its own reason, since the mapping now shows other bytes.
 *  - Unreadable (REGISTRY_IO_FAIL_RUN reads in a row failed with SIGBUS,
 *    see mapguard.h): retired, still listed, new streams refused with the
 *    reason until a SIGHUP reopens it (after the disk was fixed).
 *
 * A retired version is freed when its last stream lets go of it. */
#include "registry.h"

#include "log.h"
#include "mapguard.h"
#include "remote.h"
#include "shard_cache.h"
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

/* Names retired since the last rescan, remembered for the refusal of a
 * stream asking for one of them. */
#define REGISTRY_RETIRED_MAX 64

struct registry {
	char dir[4096];
	struct remote *remote;    /* the remote datasets, or NULL */
	char why[PROTO_TEXT_MAX]; /* registry_retired's answer for a remote dataset */
	int ino_fd;               /* inotify on the served data files, or -1 */
	int no_watch;             /* FEEDERD_DISK_FAULT_TEST: writes in place not checked */
	unsigned readers;         /* read transactions reserved per dataset */
	struct dataset **items;
	size_t n;
	struct {
		char name[FEEDER_DATASET_MAX];
		char msg[PROTO_TEXT_MAX];
	} retired[REGISTRY_RETIRED_MAX];
	unsigned nretired;
};

void dataset_ref(struct dataset *d)
{
	atomic_fetch_add(&d->refs, 1);
}

void dataset_unref(struct dataset *d)
{
	if (!d || atomic_fetch_sub(&d->refs, 1) != 1)
		return;
	if (d->store) {
		mapguard_unregister(d->map);
		dsstore_close(d->store);
	}
	if (d->shards)
		shard_set_close(d->shards);
	manifest_free(&d->man);
	free(d->shard_first);
	free(d->shard_count);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

int dataset_note_corrupt(struct dataset *d, uint64_t index)
{
	int first = 1;
	pthread_mutex_lock(&d->lock);
	for (unsigned i = 0; i < d->nlogged; i++)
		if (d->logged[i] == index) {
			first = 0;
			break;
		}
	if (first && d->nlogged < REGISTRY_LOGGED_MAX)
		d->logged[d->nlogged++] = index;
	else if (first)
		first = 0; /* past the cap: counted, no longer logged one by one */
	pthread_mutex_unlock(&d->lock);
	return first;
}

void dataset_retire(struct dataset *d, int code, const char *fmt, ...)
{
	pthread_mutex_lock(&d->lock);
	if (!atomic_load_explicit(&d->gone, memory_order_relaxed)) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(d->gone_msg, sizeof(d->gone_msg), fmt, ap);
		va_end(ap);
		d->gone_code = code;
		atomic_store_explicit(&d->gone, 1, memory_order_release);
		log_warn("%s; streams reading it end", d->gone_msg);
	}
	pthread_mutex_unlock(&d->lock);
}

int dataset_gone(const struct dataset *d)
{
	return atomic_load_explicit(&((struct dataset *)d)->gone, memory_order_acquire);
}

void dataset_note_io_error(struct dataset *d, const char *file, uint64_t fault_off)
{
	if (atomic_exchange(&d->io_logged, 1) == 0)
		log_err("I/O error (SIGBUS) reading dataset '%s' (at byte %llu of %s): "
			"samples that cannot be read are replaced and counted",
			d->name, (unsigned long long)fault_off, file);
	unsigned run = atomic_fetch_add(&d->io_run, 1) + 1;
	if (run == REGISTRY_IO_FAIL_RUN)
		dataset_retire(d, -EIO,
			       "dataset '%s' is unreadable: %u reads in a row failed with an I/O "
			       "error (SIGBUS), the last on %s",
			       d->name, run, file);
}

void dataset_note_io_ok(struct dataset *d)
{
	/* Read first: a store on every sample would bounce the cache line
	 * between workers. */
	if (atomic_load_explicit(&d->io_run, memory_order_relaxed))
		atomic_store_explicit(&d->io_run, 0, memory_order_relaxed);
}

/* Whether data.mdb (st, the same inode) was written to since d opened it:
 * `cp new data.mdb` onto the served file, or a tool writing in place. Its
 * mtime, ctime or size moved. */
static int changed_in_place(const struct dataset *d, const struct stat *st)
{
	return d->mtime.tv_sec != st->st_mtim.tv_sec || d->mtime.tv_nsec != st->st_mtim.tv_nsec ||
	       d->ctime.tv_sec != st->st_ctim.tv_sec || d->ctime.tv_nsec != st->st_ctim.tv_nsec ||
	       d->size != st->st_size;
}

/* Open the dataset in sub-directory name of dirfd; NULL (and a log line when
 * it looked like a dataset) if it is not one. */
static struct dataset *open_one(int dirfd, const char *dir, const char *name,
				const struct registry *old)
{
	char err[512];
	if (proto_name_check(name, err, sizeof(err)) != 0) {
		if (name[0] != '.')
			log_warn("dataset directory entry '%s' skipped: %s", name, err);
		return NULL;
	}
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return NULL;
	if (S_ISLNK(st.st_mode)) {
		/* Served datasets are what lies in the datasets directory: a
		 * link could point anywhere the daemon can read (an operator
		 * with write access to the directory could expose any file). */
		log_warn(
			"dataset entry '%s' skipped: it is a symbolic link, and feederd serves only "
			"datasets that are directories inside %s",
			name, dir);
		return NULL;
	}
	if (!S_ISDIR(st.st_mode))
		return NULL;
	int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0) {
		log_warn("dataset '%s' skipped: cannot open its directory: %s", name,
			 strerror(errno));
		return NULL;
	}
	struct stat dst;
	if (fstatat(sub, "data.mdb", &dst, AT_SYMLINK_NOFOLLOW) != 0) {
		close(sub);
		return NULL; /* a directory without a dataset: not ours */
	}
	if (!S_ISREG(dst.st_mode)) {
		log_warn("dataset '%s' skipped: data.mdb is not a regular file", name);
		close(sub);
		return NULL;
	}
	/* Unchanged since the last scan: share the open one. */
	for (size_t i = 0; old && i < old->n; i++) {
		struct dataset *o = old->items[i];
		if (strcmp(o->name, name) == 0 && !dataset_gone(o) && o->dev == dst.st_dev &&
		    o->ino == dst.st_ino && !changed_in_place(o, &dst)) {
			close(sub);
			dataset_ref(o);
			return o;
		}
	}
	char path[4200];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", sub);
	if (access(path, F_OK) != 0) /* no /proc: the name was checked above */
		snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct dataset *d = calloc(1, sizeof(*d));
	if (!d) {
		close(sub);
		return NULL;
	}
	int rc = dsstore_open(path, &d->store, err, sizeof(err));
	close(sub);
	if (rc == 0 && (rc = dsstore_txn_reserve(d->store, old->readers, err, sizeof(err))))
		dsstore_close(d->store);
	if (rc) {
		log_warn("dataset '%s' skipped: %s", name, err);
		free(d);
		return NULL;
	}
	snprintf(d->name, sizeof(d->name), "%s", name);
	size_t map_len;
	dsstore_map(d->store, &d->map, &map_len);
	if (mapguard_register(d->map, map_len) != 0) {
		log_warn("dataset '%s': %d mappings are guarded already; an I/O error on this one "
			 "would stop feederd",
			 name, MAPGUARD_MAX);
		d->map = NULL;
	}
	d->hdr = *dsstore_header(d->store);
	d->dev = dst.st_dev;
	d->ino = dst.st_ino;
	d->mtime = dst.st_mtim;
	d->ctime = dst.st_ctim;
	d->size = dst.st_size;
	atomic_init(&d->refs, 1);
	atomic_init(&d->streams, 0);
	pthread_mutex_init(&d->lock, NULL);
	log_info("dataset '%s': %s, %llu samples, %u classes", name,
		 dsformat_kind_name(d->hdr.kind), (unsigned long long)d->hdr.samples,
		 d->hdr.classes);
	return d;
}

static void retire_version(struct registry *r, int dirfd, struct dataset *d, int served_again);
static void watch_all(struct registry *r);
static unsigned take_remote(struct registry *r);

static int is_remote(const struct dataset *d)
{
	return d->url[0] != 0;
}

static int by_name(const void *a, const void *b)
{
	const struct dataset *x = *(struct dataset *const *)a, *y = *(struct dataset *const *)b;
	return strcmp(x->name, y->name);
}

int registry_rescan(struct registry *r, char *err, size_t errlen)
{
	int dirfd = open(r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return status_fail(err, errlen, -errno, "datasets directory %s: %s", r->dir,
				   strerror(errno));
	int lfd = dup(dirfd);
	DIR *dp = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!dp) {
		int e = errno;
		if (lfd >= 0)
			close(lfd);
		close(dirfd);
		return status_fail(err, errlen, -e, "datasets directory %s: %s", r->dir,
				   strerror(e));
	}
	struct dataset **items = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(dp))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct dataset *d = open_one(dirfd, r->dir, de->d_name, r);
		if (!d)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct dataset **ni = realloc(items, ncap * sizeof(*ni));
			if (!ni) {
				dataset_unref(d);
				break;
			}
			items = ni;
			cap = ncap;
		}
		items[n++] = d;
	}
	closedir(dp);
	/* Remote datasets are not in the directory: they stay as they are. */
	for (size_t i = 0; i < r->n; i++) {
		if (!is_remote(r->items[i]))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct dataset **ni = realloc(items, ncap * sizeof(*ni));
			if (!ni)
				break;
			items = ni;
			cap = ncap;
		}
		dataset_ref(r->items[i]);
		items[n++] = r->items[i];
	}
	if (n)
		qsort(items, n, sizeof(*items), by_name);
	r->nretired = 0;
	for (size_t i = 0; i < r->n; i++) {
		struct dataset *o = r->items[i];
		int kept = 0, renamed = 0;
		for (size_t j = 0; j < n && !kept; j++) {
			kept = items[j] == o;
			renamed |= strcmp(items[j]->name, o->name) == 0;
		}
		if (!kept)
			retire_version(r, dirfd, o, renamed);
		dataset_unref(o);
	}
	close(dirfd);
	free(r->items);
	r->items = items;
	r->n = n;
	watch_all(r);
	take_remote(r);
	return 0;
}

static void remember(struct registry *r, const struct dataset *d)
{
	if (r->nretired == REGISTRY_RETIRED_MAX)
		return;
	snprintf(r->retired[r->nretired].name, sizeof(r->retired[0].name), "%s", d->name);
	snprintf(r->retired[r->nretired].msg, sizeof(r->retired[0].msg), "%s", d->gone_msg);
	r->nretired++;
}

/* d is no longer served: retire it with the reason, found on disk now. */
static void retire_version(struct registry *r, int dirfd, struct dataset *d, int served_again)
{
	char sub[FEEDER_DATASET_MAX + 16];
	struct stat st;
	snprintf(sub, sizeof(sub), "%s/data.mdb", d->name);
	if (served_again)
		dataset_retire(d, FEEDER_ENODATASET,
			       "dataset '%s' was replaced in %s; streams of the old version end, "
			       "new streams read the new one",
			       d->name, r->dir);
	else if (dirfd < 0 || fstatat(dirfd, sub, &st, AT_SYMLINK_NOFOLLOW) != 0)
		dataset_retire(d, FEEDER_ENODATASET, "dataset '%s' was removed from %s", d->name,
			       r->dir);
	else
		dataset_retire(d, FEEDER_ENODATASET,
			       "dataset '%s' in %s changed on disk and can no longer be served "
			       "(see feederd's log)",
			       d->name, r->dir);
	if (!served_again)
		remember(r, d);
}

unsigned registry_check(struct registry *r)
{
	int dirfd = open(r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0 && errno != ENOENT && errno != ENOTDIR)
		return 0; /* cannot tell (EMFILE, EACCES...): try again next time */
	unsigned dropped = 0;
	size_t keep = 0;
	for (size_t i = 0; i < r->n; i++) {
		struct dataset *d = r->items[i];
		char sub[FEEDER_DATASET_MAX + 16];
		struct stat st;
		snprintf(sub, sizeof(sub), "%s/data.mdb", d->name);
		int removed = 0, replaced = 0, modified = 0;
		if (is_remote(d)) {
			/* remote.c watches it */
		} else if (dirfd < 0) {
			removed = 1;
		} else if (fstatat(dirfd, d->name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			removed = errno == ENOENT || errno == ENOTDIR;
		} else if (!S_ISDIR(st.st_mode)) {
			/* A symbolic link put in its place is no longer the
			 * dataset either (open_one refuses links). */
			removed = 1;
		} else if (fstatat(dirfd, sub, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			removed = errno == ENOENT || errno == ENOTDIR;
		} else {
			replaced = st.st_dev != d->dev || st.st_ino != d->ino;
			modified = !replaced && !r->no_watch && changed_in_place(d, &st);
		}
		if (!removed && !replaced && !modified) {
			r->items[keep++] = d;
			continue;
		}
		if (removed)
			dataset_retire(d, FEEDER_ENODATASET, "dataset '%s' was removed from %s",
				       d->name, r->dir);
		else if (modified)
			/* Its pages now hold other bytes than the ones its
			 * records and offsets were read from: nothing of the old
			 * version may be served, and the new bytes are not a
			 * dataset until packer says so (SIGHUP reopens it). */
			dataset_retire(
				d, FEEDER_ENODATASET,
				"dataset '%s' was modified in place in %s (data.mdb written "
				"while served); its streams end, and feederd serves it again "
				"after SIGHUP",
				d->name, r->dir);
		else
			dataset_retire(
				d, FEEDER_ENODATASET,
				"dataset '%s' was replaced in %s; streams of the old version "
				"end, and feederd serves the new one after SIGHUP",
				d->name, r->dir);
		remember(r, d);
		dataset_unref(d);
		dropped++;
	}
	r->n = keep;
	if (dirfd >= 0)
		close(dirfd);
	return dropped + take_remote(r);
}

/* Serve the remote datasets' new versions: a first one is added, a later
 * one retires the version served (its streams end, as for a local dataset
 * replaced on disk). Returns how many were retired. */
static unsigned take_remote(struct registry *r)
{
	struct dataset *got[16];
	size_t n;
	unsigned retired = 0;
	while ((n = remote_take(r->remote, got, 16)) > 0) {
		for (size_t k = 0; k < n; k++) {
			struct dataset *d = got[k];
			size_t i = 0;
			while (i < r->n && strcmp(r->items[i]->name, d->name) != 0)
				i++;
			if (i < r->n && !is_remote(r->items[i])) {
				log_warn(
					"remote dataset '%s' (%s) not served: the datasets directory "
					"has one of that name",
					d->name, d->url);
				dataset_unref(d);
				continue;
			}
			if (i < r->n) {
				dataset_retire(
					r->items[i], FEEDER_ENODATASET,
					"dataset '%s' changed at %s (a new manifest); streams of "
					"the old version end, new streams read the new one",
					d->name, d->url);
				dataset_unref(r->items[i]);
				r->items[i] = d;
				retired++;
				continue;
			}
			struct dataset **ni = realloc(r->items, (r->n + 1) * sizeof(*ni));
			if (!ni) {
				dataset_unref(d);
				continue;
			}
			r->items = ni;
			r->items[r->n++] = d;
			qsort(r->items, r->n, sizeof(*r->items), by_name);
		}
	}
	return retired;
}

/* Watch every served data.mdb, so that a write in place, a replacement or
 * a removal is seen at once (registry_fd), not at the next periodic check.
 * A watch that cannot be added leaves that dataset to the periodic check. */
static void watch_all(struct registry *r)
{
	if (r->ino_fd < 0)
		return;
	for (size_t i = 0; i < r->n; i++) {
		char path[4200];
		if (is_remote(r->items[i]))
			continue;
		snprintf(path, sizeof(path), "%s/%s/data.mdb", r->dir, r->items[i]->name);
		if (inotify_add_watch(r->ino_fd, path,
				      IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF |
					      IN_MOVE_SELF) < 0)
			log_debug("dataset '%s': no inotify watch (%s); checked once a second",
				  r->items[i]->name, strerror(errno));
	}
}

int registry_fd(const struct registry *r)
{
	return r->ino_fd;
}

unsigned registry_on_event(struct registry *r)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int any = 0;
	for (;;) {
		ssize_t n = read(r->ino_fd, buf, sizeof(buf));
		if (n > 0) {
			any = 1;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		break;
	}
	return any ? registry_check(r) : 0;
}

const char *registry_retired(struct registry *r, const char *name)
{
	for (unsigned i = 0; i < r->nretired; i++)
		if (strcmp(r->retired[i].name, name) == 0)
			return r->retired[i].msg;
	if (remote_why(r->remote, name, r->why, sizeof(r->why)))
		return r->why;
	return NULL;
}

int registry_open(struct registry **out, const char *dir, unsigned readers, struct remote *remote,
		  char *err, size_t errlen)
{
	struct registry *r = calloc(1, sizeof(*r));
	if (!r)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	r->readers = readers;
	r->remote = remote;
	if (snprintf(r->dir, sizeof(r->dir), "%s", dir) >= (int)sizeof(r->dir)) {
		free(r);
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "datasets directory path is too long");
	}
	/* The fault tests truncate a served data.mdb to stand for a disk that
	 * loses pages (which changes no metadata): they turn the watch off, so
	 * that the SIGBUS path, not this one, sees the loss. */
	const char *t = getenv("FEEDERD_DISK_FAULT_TEST");
	r->no_watch = t && strcmp(t, "1") == 0;
	if (r->no_watch)
		log_warn("FEEDERD_DISK_FAULT_TEST=1: writes to served data files are not watched "
			 "(for tests only)");
	r->ino_fd = r->no_watch ? -1 : inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (r->ino_fd < 0 && !r->no_watch)
		log_warn("inotify: %s; changed datasets are noticed within a second instead",
			 strerror(errno));
	int rc = registry_rescan(r, err, errlen);
	if (rc) {
		if (r->ino_fd >= 0)
			close(r->ino_fd);
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void registry_close(struct registry *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		dataset_unref(r->items[i]);
	if (r->ino_fd >= 0)
		close(r->ino_fd);
	free(r->items);
	free(r);
}

size_t registry_count(const struct registry *r)
{
	return r->n;
}

struct dataset *registry_at(const struct registry *r, size_t i)
{
	return i < r->n ? r->items[i] : NULL;
}

struct dataset *registry_get(const struct registry *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->items[i]->name, name) == 0) {
			dataset_ref(r->items[i]);
			return r->items[i];
		}
	return NULL;
}
