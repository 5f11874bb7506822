/* shard_cache.h — the bounded on-disk cache of remote datasets' shards,
 * one per daemon, shared by every stream and every dataset it serves.
 *
 * A remote dataset version (a manifest read from s3://bucket/prefix) is a
 * shard set: per shard of its manifest, an entry of the cache. Entries are
 * identified by what their file holds (the object's URL, size and CRC-32C
 * from the manifest), so a new version of a dataset that keeps some shards
 * finds them cached, and a restarted daemon adopts the files it left in
 * cache_dir (checked against the CRC before first use).
 *
 * Fetching. Fetcher threads (cfg.fetchers of them, each with its own S3
 * client) GET a whole shard into a temporary file in cache_dir, check its
 * size and CRC-32C against the manifest, open it (dsstore_open checks its
 * pages) and only then rename it to its final name: a shard is never used
 * before it is complete and checked, and a crash leaves at most a
 * temporary file, removed at the next open. A body cut short is resumed by
 * a Range request (s3_get_range_fd); 429/5xx/SlowDown are retried by the
 * client (cfg.s3.tries). A file that disagrees with the manifest is fetched
 * once more; if it disagrees again the shard is bad: shard_set_get says
 * FEEDER_ECORRUPT and its samples are replaced like corrupt records.
 *
 * What is fetched first. Streams say which shards they will read next, in
 * sampler order (shard_set_want); a shard a worker waits for comes first,
 * then the wanted ones by how soon any stream needs them. Look-ahead only
 * fills space that nothing wanted occupies: eviction removes, least
 * recently used first, shards of retired versions, then shards no stream
 * wants; never a shard a worker holds (shard_set_get .. shard_set_put) and
 * never a wanted one, except that a worker waiting for a shard may push
 * out the wanted shard needed last (without that a cache smaller than the
 * look-ahead would wait forever). Every evicted file can be fetched again.
 * When even that leaves no room (every byte held by readers), or the disk
 * is full (ENOSPC), the fetch waits for room and the worker's wait ends
 * after cfg.wait_limit_s with an error naming the cache.
 *
 * Threads: every call is thread-safe (one mutex, never held across I/O). */
#ifndef FEEDER_SHARD_CACHE_H
#define FEEDER_SHARD_CACHE_H

#include "dsstore.h"
#include "manifest.h"
#include "s3.h"

#include <stddef.h>
#include <stdint.h>

struct shard_cache_config {
	char dir[4096];      /* cache_dir: created if missing (mode 0700) */
	uint64_t limit;      /* cache_limit: bytes of shard files at most */
	unsigned fetchers;   /* parallel fetches, >= 1 */
	unsigned readers;    /* read transactions reserved per opened shard (workers) */
	double wait_limit_s; /* longest a worker waits for room in the cache */
	struct s3_config s3; /* endpoint, credentials, tries */
	/* Called (when not NULL) with each shard's mapping once its store is
	 * open and before it is closed: feederd's SIGBUS guard (mapguard.h). */
	int (*on_map)(const void *addr, size_t len);
	void (*on_unmap)(const void *addr);
	/* Called (when not NULL) once with the sentence of a shard that
	 * disagrees with its manifest twice (its samples are replaced from
	 * then on): the daemon's log. */
	void (*on_bad)(const char *why);
};

/* What operators see (feederctl status/top, /metrics). */
struct shard_cache_stats {
	uint64_t bytes, limit;  /* shard files on disk now, and the limit */
	uint64_t peak_bytes;    /* the most bytes on disk at any time */
	uint64_t hits, misses;  /* shard_set_get: found ready / had to wait */
	uint64_t fetches;       /* shard fetches completed and checked */
	uint64_t fetched_bytes; /* bytes received from the store */
	uint64_t retries;       /* requests retried (5xx, SlowDown, resets, Range resumes) */
	uint64_t refetches;     /* fetches repeated after a size or CRC mismatch */
	uint64_t failures;      /* fetches that failed for good (store errors, bad shards) */
	uint64_t evictions;     /* shard files removed to make room */
	double wait_s;          /* worker seconds spent waiting in shard_set_get */
};

struct shard_cache;
struct shard_set;

/* Create cache_dir if needed, remove temporary files left there, note the
 * shard files already there (adopted when a set names them; the rest are
 * removed when room is needed), and start the fetchers. */
int shard_cache_open(struct shard_cache **out, const struct shard_cache_config *cfg, char *err,
		     size_t errlen);
/* Stop the fetchers (an unfinished fetch is abandoned and its temporary
 * file removed) and free everything. Every set must be closed. Files stay
 * in cache_dir for the next start. */
void shard_cache_close(struct shard_cache *c);
void shard_cache_stats(struct shard_cache *c, struct shard_cache_stats *st);

/* Register a version of a remote dataset: m (copied) read from
 * s3://bucket/prefix/MANIFEST_NAME; shard i is the object prefix/NAME. */
int shard_set_open(struct shard_cache *c, const char *bucket, const char *prefix,
		   const struct manifest *m, struct shard_set **out, char *err, size_t errlen);
/* The version is no longer served and nobody reads it: its wants are
 * dropped and its shards become the first to evict (files another set
 * shares stay). */
void shard_set_close(struct shard_set *s);

/* The most shards one wanter wants at once (more are ignored). */
#define SHARD_WANT_MAX 4096

/* Look-ahead: the shards wanter `who` (a stream id, != 0) reads next,
 * soonest first (n <= SHARD_WANT_MAX), replacing what it wanted before;
 * n = 0 withdraws. Fetches start in the background; never blocks on I/O. */
void shard_set_want(struct shard_set *s, uint32_t who, const uint32_t *shards, size_t n);

/* A worker's read of shard i: waits until it is cached (fetching it first
 * if nobody is), then returns its store (*store, and its mapping in *map,
 * *map_len) with a reader's hold that keeps the file from eviction until
 * shard_set_put. The wait is counted in the stats and added to *waited_s
 * when not NULL. Returns 0; FEEDER_ECORRUPT when the shard disagreed with
 * the manifest twice (its samples are corrupt); a negative code when it
 * could not be fetched (the store's error after the retries, naming
 * s3://bucket/key) or no room came within wait_limit_s. */
int shard_set_get(struct shard_set *s, uint32_t i, struct dsstore **store, const void **map,
		  size_t *map_len, double *waited_s, char *err, size_t errlen);
/* shard_set_get without the wait: -EAGAIN (nothing counted) when shard i
 * is not ready now. A worker holding other shards tries first and lets
 * them go before it waits, so that no two workers each hold what the
 * other waits for room for. */
int shard_set_try(struct shard_set *s, uint32_t i, struct dsstore **store, const void **map,
		  size_t *map_len);
void shard_set_put(struct shard_set *s, uint32_t i);

#endif
