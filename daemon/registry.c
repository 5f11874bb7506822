/* registry.c — scan, open and reference-count the served datasets (see
 * registry.h). */
#include "registry.h"

#include "log.h"
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct registry {
	char dir[4096];
	struct dataset **items;
	size_t n;
};

void dataset_ref(struct dataset *d)
{
	atomic_fetch_add(&d->refs, 1);
}

void dataset_unref(struct dataset *d)
{
	if (!d || atomic_fetch_sub(&d->refs, 1) != 1)
		return;
	dsstore_close(d->store);
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
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
		return NULL;
	int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0) {
		log_warn("dataset '%s' skipped: cannot open its directory: %s", name, strerror(errno));
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
		if (strcmp(o->name, name) == 0 && o->dev == dst.st_dev && o->ino == dst.st_ino &&
		    o->mtime.tv_sec == dst.st_mtim.tv_sec && o->mtime.tv_nsec == dst.st_mtim.tv_nsec) {
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
	if (rc) {
		log_warn("dataset '%s' skipped: %s", name, err);
		free(d);
		return NULL;
	}
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->hdr = *dsstore_header(d->store);
	d->dev = dst.st_dev;
	d->ino = dst.st_ino;
	d->mtime = dst.st_mtim;
	atomic_init(&d->refs, 1);
	atomic_init(&d->streams, 0);
	pthread_mutex_init(&d->lock, NULL);
	log_info("dataset '%s': %s, %llu samples, %u classes", name, dsformat_kind_name(d->hdr.kind),
		 (unsigned long long)d->hdr.samples, d->hdr.classes);
	return d;
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
		return status_fail(err, errlen, -e, "datasets directory %s: %s", r->dir, strerror(e));
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
	close(dirfd);
	if (n)
		qsort(items, n, sizeof(*items), by_name);
	for (size_t i = 0; i < r->n; i++)
		dataset_unref(r->items[i]);
	free(r->items);
	r->items = items;
	r->n = n;
	return 0;
}

int registry_open(struct registry **out, const char *dir, char *err, size_t errlen)
{
	struct registry *r = calloc(1, sizeof(*r));
	if (!r)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	if (snprintf(r->dir, sizeof(r->dir), "%s", dir) >= (int)sizeof(r->dir)) {
		free(r);
		return status_fail(err, errlen, FEEDER_EINVAL, "datasets directory path is too long");
	}
	int rc = registry_rescan(r, err, errlen);
	if (rc) {
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
