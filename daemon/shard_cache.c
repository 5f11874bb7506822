/* shard_cache.c — the bounded on-disk cache of remote shards (shard_cache.h).
 *
 * One mutex guards every entry, set, wanter and counter; one condition
 * variable, broadcast on every change (gen), wakes both the fetchers and
 * the workers waiting in shard_set_get. Network, disk and CRC work happens
 * with the mutex released: the entry it concerns is marked FETCHING or
 * EVICTING first, so nobody else touches its file meanwhile.
 *
 * Files: DIR/<16 hex of a hash of bucket/key, size and CRC>-<shard name>,
 * fetched into DIR/.tmp-<that>-<random> and renamed once checked. */
#include "shard_cache.h"

#include "crc32c.h"
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NO_RANK UINT32_MAX
#define FILE_NAME_MAX (16 + 1 + MANIFEST_MAX_NAME)
#define FAILED_RETRY_S 5.0
#define WAIT_SLICE_MS 100

enum state {
	ST_ABSENT,   /* no checked file (an adopted one may be on disk, on_disk) */
	ST_FETCHING, /* a fetcher checks or fetches it, or makes room for it */
	ST_READY,    /* checked file on disk, store open */
	ST_FAILED,   /* the last fetch failed (err); retried after 5 s or on a get */
	ST_BAD,      /* disagreed with the manifest twice */
	ST_EVICTING, /* its file is being removed */
};

struct entry {
	char file[FILE_NAME_MAX + 1]; /* name in the cache folder */
	uint64_t hash;                /* of file, for the table */
	char *bucket, *key;           /* the object (NULL for a never-named adopted file) */
	uint64_t size;                /* manifest bytes (adopted: the file's size) */
	uint32_t crc;
	uint64_t disk_bytes; /* counted in c->bytes while on_disk */
	int on_disk, checked;
	enum state state;
	unsigned sets, readers, waiters;
	uint32_t rank;     /* lowest index in any wanter's list */
	int no_room;       /* a fetcher found no room for it */
	unsigned fail_seq; /* failures so far: a waiter returns the one after its start */
	int fail_code;
	char *fail_err;
	double failed_at;
	double wait_since; /* oldest waiter's start */
	struct dsstore *store;
	struct entry *hnext;               /* table chain */
	struct entry *lru_prev, *lru_next; /* files on disk, least recently used first */
	struct entry *wprev, *wnext;       /* entries with waiters */
};

struct wanter {
	struct shard_set *set;
	uint32_t who;
	size_t n;
	struct entry **ents;
	struct wanter *next;
};

struct shard_set {
	struct shard_cache *c;
	size_t n;
	struct entry **ents;
};

struct fetcher {
	struct shard_cache *c;
	struct s3_client *cl;
	uint64_t retries_seen;
	pthread_t thread;
	int started;
};

struct shard_cache {
	struct shard_cache_config cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	uint64_t gen; /* bumped on every change a sleeping fetcher may want */
	uint64_t reserved;
	unsigned room_waits; /* fetchers asleep until something makes room */
	struct shard_cache_stats st;
	struct entry **table;
	size_t nbuckets, nentries;
	struct entry *lru_head, *lru_tail;
	struct entry *waiting;
	struct wanter *wanters;
	struct fetcher *fetchers;
	unsigned nfetchers;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* FNV-1a: spreads names over the table and names the files. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}
#define FNV_START 0xcbf29ce484222325ull

/* Wait on c->cv for at most ms milliseconds (its clock is CLOCK_MONOTONIC).
 * Returns ETIMEDOUT or 0. */
static int timed_wait(struct shard_cache *c, long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return pthread_cond_timedwait(&c->cv, &c->mu, &ts);
}

static void changed(struct shard_cache *c)
{
	c->gen++;
	pthread_cond_broadcast(&c->cv);
}

static int path_of(const struct shard_cache *c, char *out, size_t len, const char *name)
{
	return (size_t)snprintf(out, len, "%s/%s", c->cfg.dir, name) >= len ? -ENAMETOOLONG : 0;
}

/* --- the table of entries, by file name --- */

static struct entry *find(struct shard_cache *c, const char *file, uint64_t h)
{
	for (struct entry *e = c->table[h & (c->nbuckets - 1)]; e; e = e->hnext)
		if (e->hash == h && !strcmp(e->file, file))
			return e;
	return NULL;
}

static int insert(struct shard_cache *c, struct entry *e)
{
	if (c->nentries + 1 > c->nbuckets) {
		size_t nb = c->nbuckets * 2;
		struct entry **t = calloc(nb, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < c->nbuckets; i++)
			for (struct entry *x = c->table[i], *nx; x; x = nx) {
				nx = x->hnext;
				x->hnext = t[x->hash & (nb - 1)];
				t[x->hash & (nb - 1)] = x;
			}
		free(c->table);
		c->table = t;
		c->nbuckets = nb;
	}
	struct entry **b = &c->table[e->hash & (c->nbuckets - 1)];
	e->hnext = *b;
	*b = e;
	c->nentries++;
	return 0;
}

/* Close a store open_store opened (its mapping no longer guarded). */
static void store_close(struct shard_cache *c, struct dsstore *s)
{
	if (!s)
		return;
	if (c->cfg.on_unmap) {
		const void *addr;
		size_t len;
		dsstore_map(s, &addr, &len);
		c->cfg.on_unmap(addr);
	}
	dsstore_close(s);
}

static void entry_free(struct shard_cache *c, struct entry *e)
{
	store_close(c, e->store);
	free(e->bucket);
	free(e->fail_err);
	free(e);
}

static void remove_entry(struct shard_cache *c, struct entry *e)
{
	struct entry **p = &c->table[e->hash & (c->nbuckets - 1)];
	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	c->nentries--;
	entry_free(c, e);
}

/* --- lists --- */

static void lru_unlink(struct shard_cache *c, struct entry *e)
{
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else if (c->lru_head == e)
		c->lru_head = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else if (c->lru_tail == e)
		c->lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

static void lru_push(struct shard_cache *c, struct entry *e)
{
	e->lru_prev = c->lru_tail;
	e->lru_next = NULL;
	if (c->lru_tail)
		c->lru_tail->lru_next = e;
	else
		c->lru_head = e;
	c->lru_tail = e;
}

static void lru_touch(struct shard_cache *c, struct entry *e)
{
	lru_unlink(c, e);
	lru_push(c, e);
}

static void disk_add(struct shard_cache *c, struct entry *e, uint64_t bytes)
{
	e->on_disk = 1;
	e->disk_bytes = bytes;
	c->st.bytes += bytes;
	if (c->st.bytes > c->st.peak_bytes)
		c->st.peak_bytes = c->st.bytes;
	lru_push(c, e);
}

static void disk_drop(struct shard_cache *c, struct entry *e)
{
	c->st.bytes -= e->disk_bytes;
	e->on_disk = 0;
	e->disk_bytes = 0;
	e->checked = 0;
	lru_unlink(c, e);
}

/* An entry nothing refers to and without a file goes. */
static void maybe_free(struct shard_cache *c, struct entry *e)
{
	if (!e->sets && !e->readers && !e->waiters && !e->on_disk && e->state != ST_FETCHING &&
	    e->state != ST_EVICTING)
		remove_entry(c, e);
}

/* --- opening: adopt what a previous run left --- */

static int valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n >= MANIFEST_MAX_NAME || s[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

static int cache_file_name(const char *s)
{
	for (int i = 0; i < 16; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[16] == '-' && valid_name(s + 17);
}

static struct entry *entry_new(const char *file)
{
	struct entry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	snprintf(e->file, sizeof(e->file), "%s", file);
	e->hash = fnv1a(FNV_START, file, strlen(file));
	e->rank = NO_RANK;
	return e;
}

static int scan_dir(struct shard_cache *c, char *err, size_t errlen)
{
	DIR *d = opendir(c->cfg.dir);
	if (!d)
		return status_fail(err, errlen, -errno, "cache folder %s: %s", c->cfg.dir,
				   strerror(errno));
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		char path[4096 + 256];
		if (path_of(c, path, sizeof(path), de->d_name))
			continue;
		if (!strncmp(de->d_name, ".tmp-", 5)) {
			/* A fetch that a crash or a stop cut short. */
			if (unlink(path) != 0 && errno != ENOENT)
				rc = status_fail(err, errlen, -errno, "cannot remove %s: %s", path,
						 strerror(errno));
			continue;
		}
		struct stat st;
		if (strlen(de->d_name) > FILE_NAME_MAX || !cache_file_name(de->d_name) ||
		    stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		struct entry *e = entry_new(de->d_name);
		if (!e || insert(c, e)) {
			free(e);
			rc = status_fail(err, errlen, -ENOMEM, "out of memory");
			break;
		}
		e->size = (uint64_t)st.st_size;
		disk_add(c, e, (uint64_t)st.st_size);
	}
	closedir(d);
	return rc;
}

/* --- wants --- */

static void rerank(struct shard_cache *c)
{
	for (struct wanter *w = c->wanters; w; w = w->next)
		for (size_t i = 0; i < w->n; i++)
			w->ents[i]->rank = NO_RANK;
	for (struct wanter *w = c->wanters; w; w = w->next)
		for (size_t i = 0; i < w->n; i++)
			if (w->ents[i]->rank > i)
				w->ents[i]->rank = (uint32_t)i;
}

static void wanter_free(struct wanter *w)
{
	for (size_t i = 0; i < w->n; i++)
		w->ents[i]->rank = NO_RANK;
	free(w->ents);
	free(w);
}

/* --- eviction --- */

static int evictable(const struct entry *e)
{
	return !e->readers && !e->waiters && (e->state == ST_READY || e->state == ST_ABSENT);
}

/* The file to remove for room: unnamed ones first, then unwanted ones
 * (least recently used first), then, for a worker's wait only, the wanted
 * one needed last. */
static struct entry *victim(struct shard_cache *c, int urgent)
{
	for (struct entry *e = c->lru_head; e; e = e->lru_next)
		if (evictable(e) && !e->sets)
			return e;
	for (struct entry *e = c->lru_head; e; e = e->lru_next)
		if (evictable(e) && e->rank == NO_RANK)
			return e;
	if (!urgent)
		return NULL;
	struct entry *best = NULL;
	for (struct entry *e = c->lru_head; e; e = e->lru_next)
		if (evictable(e) && (!best || e->rank > best->rank))
			best = e;
	return best;
}

/* Remove v's file; the mutex is released meanwhile (v is EVICTING). */
static void evict(struct shard_cache *c, struct entry *v)
{
	char path[4096 + 256];
	struct dsstore *store = v->store;
	v->store = NULL;
	v->state = ST_EVICTING;
	lru_unlink(c, v);
	pthread_mutex_unlock(&c->mu);
	store_close(c, store);
	if (path_of(c, path, sizeof(path), v->file) == 0)
		unlink(path);
	pthread_mutex_lock(&c->mu);
	disk_drop(c, v);
	v->state = ST_ABSENT;
	c->st.evictions++;
	maybe_free(c, v);
	changed(c);
}

/* Room for e's size: 1, or 0 when nothing more may go. */
static int make_room(struct shard_cache *c, struct entry *e, int urgent)
{
	while (c->st.bytes + c->reserved + e->size > c->cfg.limit) {
		if (c->stop)
			return 0;
		struct entry *v = victim(c, urgent);
		if (!v)
			return 0;
		evict(c, v);
	}
	return 1;
}

/* --- fetching --- */

/* The most urgent entry to fetch or check: waited for (oldest first),
 * then wanted (lowest rank). */
static int fetchable(struct entry *e, double now)
{
	if (e->state == ST_FAILED && now - e->failed_at >= FAILED_RETRY_S)
		e->state = ST_ABSENT;
	return e->state == ST_ABSENT && e->bucket;
}

static struct entry *pick(struct shard_cache *c)
{
	double now = now_s();
	struct entry *best = NULL;
	for (struct entry *e = c->waiting; e; e = e->wnext)
		if (fetchable(e, now) && (!best || e->wait_since < best->wait_since))
			best = e;
	if (best)
		return best;
	size_t best_i = SIZE_MAX;
	for (struct wanter *w = c->wanters; w; w = w->next)
		for (size_t i = 0; i < w->n && i < best_i; i++)
			if (fetchable(w->ents[i], now)) {
				best = w->ents[i];
				best_i = i;
				break;
			}
	return best;
}

static void set_failed(struct shard_cache *c, struct entry *e, enum state st, int code,
		       const char *why)
{
	if (st == ST_BAD && c->cfg.on_bad)
		c->cfg.on_bad(why);
	free(e->fail_err);
	e->fail_err = strdup(why);
	e->fail_code = code;
	e->fail_seq++;
	e->failed_at = now_s();
	e->state = st;
	c->st.failures++;
}

/* Size and CRC-32C of fd against the entry's: 0, or FEEDER_ECORRUPT with
 * what disagreed. */
static int check_fd(int fd, uint64_t size, uint32_t crc, char *why, size_t whylen)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return status_fail(why, whylen, -errno, "cannot stat it: %s", strerror(errno));
	if ((uint64_t)st.st_size != size)
		return status_fail(why, whylen, FEEDER_ECORRUPT,
				   "%llu bytes where the manifest says %llu",
				   (unsigned long long)st.st_size, (unsigned long long)size);
	size_t bl = (size_t)1 << 20;
	char *buf = malloc(bl);
	if (!buf)
		return status_fail(why, whylen, -ENOMEM, "out of memory");
	uint32_t got = 0;
	int rc = 0;
	for (uint64_t off = 0; off < size;) {
		size_t n = size - off < bl ? (size_t)(size - off) : bl;
		ssize_t r = pread(fd, buf, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = status_fail(why, whylen, r < 0 ? -errno : FEEDER_ECORRUPT,
					 "cannot read it back: %s",
					 r < 0 ? strerror(errno) : "short file");
			break;
		}
		got = crc32c(got, buf, (size_t)r);
		off += (uint64_t)r;
	}
	free(buf);
	if (rc == 0 && got != crc)
		rc = status_fail(why, whylen, FEEDER_ECORRUPT,
				 "CRC-32C %08x where the manifest says %08x", got, crc);
	return rc;
}

/* Open path as the entry's store; FEEDER_ECORRUPT-like refusals say why. */
static int open_store(struct shard_cache *c, const char *path, struct dsstore **out, char *why,
		      size_t whylen)
{
	struct dsstore *s;
	int rc = dsstore_open(path, &s, why, whylen);
	if (rc)
		return rc;
	if ((rc = dsstore_txn_reserve(s, c->cfg.readers, why, whylen))) {
		dsstore_close(s);
		return rc;
	}
	if (c->cfg.on_map) {
		const void *addr;
		size_t len;
		dsstore_map(s, &addr, &len);
		c->cfg.on_map(addr, len); /* full: faults there are not caught */
	}
	*out = s;
	return 0;
}

/* An adopted file, before its first use: 0 (store in *out), or not usable. */
static int check_adopted(struct shard_cache *c, struct entry *e, uint64_t size, uint32_t crc,
			 struct dsstore **out)
{
	char path[4096 + 256], why[512];
	if (path_of(c, path, sizeof(path), e->file))
		return -ENAMETOOLONG;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = check_fd(fd, size, crc, why, sizeof(why));
	close(fd);
	return rc ? rc : open_store(c, path, out, why, sizeof(why));
}

enum fetch_result { F_READY, F_FAILED, F_NOROOM };

/* Fetch e (claimed, its room reserved) into its file; the mutex is not
 * held. On F_READY *store is set. */
static enum fetch_result fetch(struct fetcher *f, struct entry *e, struct dsstore **store,
			       int *code, char *why, size_t whylen)
{
	struct shard_cache *c = f->c;
	char final[4096 + 256], tmp[4096 + 300], err[1024];
	int attempt = 0, rc;
	if (path_of(c, final, sizeof(final), e->file)) {
		*code = status_fail(why, whylen, -ENAMETOOLONG, "cache folder %s: name too long",
				    c->cfg.dir);
		return F_FAILED;
	}
	for (;;) {
		int fd = -1;
		for (int tries = 0; fd < 0 && tries < 100; tries++) {
			uint32_t r = 0;
			if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
				r = (uint32_t)(now_s() * 1e9) ^ (uint32_t)tries;
			snprintf(tmp, sizeof(tmp), "%s/.tmp-%s-%08x", c->cfg.dir, e->file, r);
			fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
			if (fd < 0 && errno != EEXIST)
				break;
		}
		if (fd < 0) {
			*code = status_fail(why, whylen, -errno, "cannot make a file in %s: %s",
					    c->cfg.dir, strerror(errno));
			return F_FAILED;
		}
		uint32_t got_crc = 0;
		rc = s3_get_range_fd(f->cl, e->bucket, e->key, 0, e->size, fd, 0, &got_crc, err,
				     sizeof(err));
		pthread_mutex_lock(&c->mu);
		uint64_t r = s3_client_retries(f->cl);
		c->st.retries += r - f->retries_seen;
		f->retries_seen = r;
		int stop = c->stop;
		pthread_mutex_unlock(&c->mu);
		if (stop) {
			close(fd);
			unlink(tmp);
			*code = status_fail(why, whylen, FEEDER_ECLOSED,
					    "the shard cache %s is closing", c->cfg.dir);
			return F_FAILED;
		}
		if (rc == -ENOSPC || rc == -EDQUOT) {
			close(fd);
			unlink(tmp);
			/* The disk holds less than cache_limit says: one more file
			 * goes, or the fetch waits for room. */
			pthread_mutex_lock(&c->mu);
			struct entry *v = c->stop ? NULL : victim(c, e->waiters > 0);
			if (v)
				evict(c, v);
			pthread_mutex_unlock(&c->mu);
			if (v)
				continue;
			return F_NOROOM;
		}
		if (rc < 0) {
			close(fd);
			unlink(tmp);
			*code = status_fail(why, whylen, rc, "%s", err);
			return F_FAILED;
		}
		pthread_mutex_lock(&c->mu);
		c->st.fetched_bytes += e->size;
		pthread_mutex_unlock(&c->mu);
		/* The size is the Range's (s3_get_range_fd fails on less), the
		 * checksum was taken as the bytes came: no second pass. */
		char what[512];
		rc = got_crc == e->crc ? 0
				       : status_fail(what, sizeof(what), FEEDER_ECORRUPT,
						     "CRC-32C %08x where the manifest says %08x",
						     got_crc, e->crc);
		close(fd);
		/* Opened before the rename: a file LMDB refuses never takes the
		 * final name. */
		if (rc == 0)
			rc = open_store(c, tmp, store, what, sizeof(what));
		if (rc == 0 && rename(tmp, final) != 0) {
			rc = -errno;
			store_close(c, *store);
			unlink(tmp);
			*code = status_fail(why, whylen, rc, "cannot rename %s to %s: %s", tmp,
					    final, strerror(-rc));
			return F_FAILED;
		}
		if (rc == 0)
			return F_READY;
		unlink(tmp);
		if (rc == -ENOMEM) {
			*code = status_fail(why, whylen, rc, "s3://%s/%s: %s", e->bucket, e->key,
					    what);
			return F_FAILED;
		}
		if (attempt++ == 0) {
			pthread_mutex_lock(&c->mu);
			c->st.refetches++;
			pthread_mutex_unlock(&c->mu);
			continue;
		}
		*code = status_fail(why, whylen, FEEDER_ECORRUPT,
				    "s3://%s/%s disagrees with its manifest twice: %s", e->bucket,
				    e->key, what);
		return F_FAILED;
	}
}

/* One job for e (claimed: FETCHING), mutex held on entry and exit.
 * Returns 1 when no room could be made (e is ABSENT again). */
static int work(struct fetcher *f, struct entry *e)
{
	struct shard_cache *c = f->c;
	struct dsstore *store = NULL;
	if (e->on_disk && !e->checked) {
		uint64_t size = e->size;
		uint32_t crc = e->crc;
		pthread_mutex_unlock(&c->mu);
		int rc = check_adopted(c, e, size, crc, &store);
		pthread_mutex_lock(&c->mu);
		if (rc == 0) {
			e->store = store;
			e->checked = 1;
			e->state = ST_READY;
			changed(c);
			return 0;
		}
		/* Not what the manifest names: fetch it anew. Its bytes count
		 * until the file is gone. */
		pthread_mutex_unlock(&c->mu);
		char path[4096 + 256];
		if (path_of(c, path, sizeof(path), e->file) == 0)
			unlink(path);
		pthread_mutex_lock(&c->mu);
		disk_drop(c, e);
		changed(c);
	}
	if (!make_room(c, e, e->waiters > 0)) {
		e->state = ST_ABSENT;
		e->no_room = 1;
		maybe_free(c, e);
		return 1;
	}
	e->no_room = 0;
	c->reserved += e->size;
	pthread_mutex_unlock(&c->mu);
	char why[1024];
	int code = 0;
	enum fetch_result r = fetch(f, e, &store, &code, why, sizeof(why));
	pthread_mutex_lock(&c->mu);
	c->reserved -= e->size;
	if (r == F_READY) {
		e->store = store;
		e->checked = 1;
		e->state = ST_READY;
		disk_add(c, e, e->size);
		c->st.fetches++;
	} else if (r == F_NOROOM) {
		e->state = ST_ABSENT;
		e->no_room = 1;
	} else {
		set_failed(c, e, code == FEEDER_ECORRUPT ? ST_BAD : ST_FAILED, code, why);
	}
	maybe_free(c, e);
	changed(c);
	return r == F_NOROOM;
}

static void *fetcher_main(void *arg)
{
	struct fetcher *f = arg;
	struct shard_cache *c = f->c;
	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		struct entry *e = pick(c);
		if (e) {
			e->state = ST_FETCHING;
			if (!work(f, e))
				continue;
			/* No room: sleep until something changes (a put, a
			 * close, a want, a new waiter). */
			uint64_t g = c->gen;
			c->room_waits++;
			while (!c->stop && c->gen == g)
				if (timed_wait(c, 1000) == ETIMEDOUT)
					break; /* a full disk may have emptied */
			c->room_waits--;
			continue;
		}
		timed_wait(c, 1000);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* --- the API --- */

int shard_cache_open(struct shard_cache **out, const struct shard_cache_config *cfg, char *err,
		     size_t errlen)
{
	if (!cfg->fetchers || !cfg->dir[0] || !cfg->limit)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"shard cache: a folder, a limit and at least one fetcher are needed");
	struct shard_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	c->cfg = *cfg;
	c->st.limit = cfg->limit;
	c->nbuckets = 1024;
	c->table = calloc(c->nbuckets, sizeof(*c->table));
	c->fetchers = calloc(cfg->fetchers, sizeof(*c->fetchers));
	int rc = 0;
	if (!c->table || !c->fetchers) {
		rc = status_fail(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (mkdir(cfg->dir, 0700) != 0 && errno != EEXIST) {
		rc = status_fail(err, errlen, -errno, "cannot make the cache folder %s: %s",
				 cfg->dir, strerror(errno));
		goto fail_sync;
	}
	if ((rc = scan_dir(c, err, errlen)))
		goto fail_sync;
	for (unsigned i = 0; i < cfg->fetchers; i++) {
		c->fetchers[i].c = c;
		if ((rc = s3_client_new(&cfg->s3, &c->fetchers[i].cl, err, errlen)))
			goto fail_sync;
	}
	for (unsigned i = 0; i < cfg->fetchers; i++) {
		int e = pthread_create(&c->fetchers[i].thread, NULL, fetcher_main, &c->fetchers[i]);
		if (e) {
			rc = status_fail(err, errlen, -e, "cannot start a shard fetcher: %s",
					 strerror(e));
			goto fail_sync;
		}
		c->fetchers[i].started = 1;
		c->nfetchers++;
	}
	*out = c;
	return 0;
fail_sync:
	c->nfetchers = cfg->fetchers;
	shard_cache_close(c);
	return rc;
fail:
	free(c->table);
	free(c->fetchers);
	free(c);
	return rc;
}

void shard_cache_close(struct shard_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	for (unsigned i = 0; i < c->nfetchers; i++) {
		if (c->fetchers[i].started)
			pthread_join(c->fetchers[i].thread, NULL);
		if (c->fetchers[i].cl)
			s3_client_free(c->fetchers[i].cl);
	}
	while (c->wanters) {
		struct wanter *w = c->wanters;
		c->wanters = w->next;
		wanter_free(w);
	}
	for (size_t i = 0; i < c->nbuckets; i++)
		for (struct entry *e = c->table[i], *n; e; e = n) {
			n = e->hnext;
			entry_free(c, e);
		}
	free(c->table);
	free(c->fetchers);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void shard_cache_stats(struct shard_cache *c, struct shard_cache_stats *st)
{
	pthread_mutex_lock(&c->mu);
	*st = c->st;
	pthread_mutex_unlock(&c->mu);
}

/* The entry for object bucket/key of the manifest's shard sh, made or
 * found (an adopted file or another set's). NULL when out of memory. */
static struct entry *entry_for(struct shard_cache *c, const char *bucket, const char *key,
			       const struct manifest_shard *sh)
{
	char file[FILE_NAME_MAX + 1];
	uint64_t h = fnv1a(FNV_START, bucket, strlen(bucket));
	h = fnv1a(h, "/", 1);
	h = fnv1a(h, key, strlen(key));
	h = fnv1a(h, &sh->bytes, sizeof(sh->bytes));
	h = fnv1a(h, &sh->crc, sizeof(sh->crc));
	snprintf(file, sizeof(file), "%016llx-%s", (unsigned long long)h, sh->name);
	uint64_t fh = fnv1a(FNV_START, file, strlen(file));
	struct entry *e = find(c, file, fh);
	if (!e) {
		if (!(e = entry_new(file)))
			return NULL;
		if (insert(c, e)) {
			free(e);
			return NULL;
		}
	}
	if (!e->bucket) {
		size_t bl = strlen(bucket), kl = strlen(key);
		if (!(e->bucket = malloc(bl + kl + 2))) {
			maybe_free(c, e);
			return NULL;
		}
		memcpy(e->bucket, bucket, bl + 1);
		e->key = e->bucket + bl + 1;
		memcpy(e->key, key, kl + 1);
		e->size = sh->bytes;
		e->crc = sh->crc;
	}
	e->sets++;
	return e;
}

int shard_set_open(struct shard_cache *c, const char *bucket, const char *prefix,
		   const struct manifest *m, struct shard_set **out, char *err, size_t errlen)
{
	struct shard_set *s = calloc(1, sizeof(*s));
	if (!s || !(s->ents = calloc(m->nshards ? m->nshards : 1, sizeof(*s->ents)))) {
		free(s);
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	}
	s->c = c;
	char key[S3_MAX_KEY + MANIFEST_MAX_NAME + 2];
	int rc = 0;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < m->nshards; i++) {
		if ((size_t)snprintf(key, sizeof(key), "%s%s%s", prefix, prefix[0] ? "/" : "",
				     m->shards[i].name) >= sizeof(key)) {
			rc = status_fail(err, errlen, FEEDER_EINVAL, "s3://%s/%s/%s: key too long",
					 bucket, prefix, m->shards[i].name);
			break;
		}
		if (!(s->ents[i] = entry_for(c, bucket, key, &m->shards[i]))) {
			rc = status_fail(err, errlen, -ENOMEM, "out of memory");
			break;
		}
		s->n++;
	}
	pthread_mutex_unlock(&c->mu);
	if (rc) {
		shard_set_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void shard_set_close(struct shard_set *s)
{
	if (!s)
		return;
	struct shard_cache *c = s->c;
	pthread_mutex_lock(&c->mu);
	for (struct wanter **p = &c->wanters; *p;) {
		struct wanter *w = *p;
		if (w->set == s) {
			*p = w->next;
			wanter_free(w);
		} else {
			p = &w->next;
		}
	}
	rerank(c);
	for (size_t i = 0; i < s->n; i++) {
		s->ents[i]->sets--;
		maybe_free(c, s->ents[i]);
	}
	changed(c);
	pthread_mutex_unlock(&c->mu);
	free(s->ents);
	free(s);
}

void shard_set_want(struct shard_set *s, uint32_t who, const uint32_t *shards, size_t n)
{
	struct shard_cache *c = s->c;
	struct entry **ents = NULL;
	size_t k = 0;
	if (n > SHARD_WANT_MAX)
		n = SHARD_WANT_MAX;
	if (n && !(ents = malloc(n * sizeof(*ents))))
		return; /* look-ahead is advice: without memory, none */
	for (size_t i = 0; i < n; i++)
		if (shards[i] < s->n)
			ents[k++] = s->ents[shards[i]];
	pthread_mutex_lock(&c->mu);
	struct wanter **p = &c->wanters;
	while (*p && !((*p)->set == s && (*p)->who == who))
		p = &(*p)->next;
	if (*p) {
		struct wanter *w = *p;
		*p = w->next;
		wanter_free(w);
	}
	if (k) {
		struct wanter *w = calloc(1, sizeof(*w));
		if (w) {
			w->set = s;
			w->who = who;
			w->n = k;
			w->ents = ents;
			ents = NULL;
			w->next = c->wanters;
			c->wanters = w;
		}
	}
	rerank(c);
	changed(c);
	pthread_mutex_unlock(&c->mu);
	free(ents);
}

static void waiting_add(struct shard_cache *c, struct entry *e, double t0)
{
	if (e->waiters++)
		return;
	e->wait_since = t0;
	e->wprev = NULL;
	e->wnext = c->waiting;
	if (c->waiting)
		c->waiting->wprev = e;
	c->waiting = e;
}

static void waiting_drop(struct shard_cache *c, struct entry *e)
{
	if (--e->waiters)
		return;
	if (e->wprev)
		e->wprev->wnext = e->wnext;
	else
		c->waiting = e->wnext;
	if (e->wnext)
		e->wnext->wprev = e->wprev;
	e->wprev = e->wnext = NULL;
}

int shard_set_get(struct shard_set *s, uint32_t i, struct dsstore **store, const void **map,
		  size_t *map_len, double *waited_s, char *err, size_t errlen)
{
	struct shard_cache *c = s->c;
	if (i >= s->n)
		return status_fail(err, errlen, FEEDER_EINVAL, "shard %u of %zu", i, s->n);
	struct entry *e = s->ents[i];
	int rc = 0;
	pthread_mutex_lock(&c->mu);
	if (e->state == ST_READY) {
		c->st.hits++;
		goto ready;
	}
	c->st.misses++;
	if (e->state == ST_BAD) {
		rc = status_fail(err, errlen, e->fail_code, "%s", e->fail_err);
		pthread_mutex_unlock(&c->mu);
		return rc;
	}
	if (e->state == ST_FAILED)
		e->state = ST_ABSENT; /* a new read tries again */
	double t0 = now_s(), last = t0, room_waited = 0;
	unsigned seq = e->fail_seq;
	waiting_add(c, e, t0);
	changed(c);
	for (;;) {
		if (e->state == ST_READY)
			break;
		if (e->fail_seq != seq) {
			rc = status_fail(err, errlen, e->fail_code, "%s", e->fail_err);
			break;
		}
		if (c->stop) {
			rc = status_fail(err, errlen, FEEDER_ECLOSED,
					 "the shard cache %s is closing", c->cfg.dir);
			break;
		}
		double now = now_s();
		/* Only waiting for room is bounded here: a fetch under way is
		 * bounded by the client's own tries and timeouts. */
		int for_room = e->no_room && e->state == ST_ABSENT;
		if (for_room)
			room_waited += now - last;
		last = now;
		if (for_room && room_waited >= c->cfg.wait_limit_s) {
			rc = status_fail(
				err, errlen, FEEDER_ETIMEDOUT,
				"no room for s3://%s/%s (%llu bytes) in the shard cache %s "
				"(limit %llu bytes, %llu held) within %.0f s",
				e->bucket, e->key, (unsigned long long)e->size, c->cfg.dir,
				(unsigned long long)c->cfg.limit, (unsigned long long)c->st.bytes,
				c->cfg.wait_limit_s);
			break;
		}
		timed_wait(c, WAIT_SLICE_MS);
	}
	waiting_drop(c, e);
	double w = now_s() - t0;
	c->st.wait_s += w;
	if (waited_s)
		*waited_s += w;
	if (rc) {
		pthread_mutex_unlock(&c->mu);
		return rc;
	}
ready:
	e->readers++;
	lru_touch(c, e);
	*store = e->store;
	pthread_mutex_unlock(&c->mu);
	dsstore_map(*store, map, map_len);
	return 0;
}

int shard_set_try(struct shard_set *s, uint32_t i, struct dsstore **store, const void **map,
		  size_t *map_len)
{
	struct shard_cache *c = s->c;
	if (i >= s->n)
		return -EAGAIN;
	struct entry *e = s->ents[i];
	pthread_mutex_lock(&c->mu);
	if (e->state != ST_READY) {
		pthread_mutex_unlock(&c->mu);
		return -EAGAIN;
	}
	c->st.hits++;
	e->readers++;
	lru_touch(c, e);
	*store = e->store;
	pthread_mutex_unlock(&c->mu);
	dsstore_map(*store, map, map_len);
	return 0;
}

void shard_set_put(struct shard_set *s, uint32_t i)
{
	struct shard_cache *c = s->c;
	if (i >= s->n)
		return;
	pthread_mutex_lock(&c->mu);
	/* Only the last reader's leaving can make room, and only a fetcher
	 * that found none cares: waking every thread on each put would be a
	 * broadcast per worker task (measured: a few % of a warm epoch). */
	if (s->ents[i]->readers && --s->ents[i]->readers == 0 && c->room_waits)
		changed(c);
	pthread_mutex_unlock(&c->mu);
}
