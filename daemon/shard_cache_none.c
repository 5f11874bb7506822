/* shard_cache_none.c — shard_cache.h without libcurl (Meson builds it
 * instead of shard_cache.c): no S3 client, so no remote dataset can be
 * served; opening a cache or a shard set says how to get one, and the
 * figures are all 0. */
#include "shard_cache.h"

#include <errno.h>

#include "status.h"

#include <string.h>

#define NO_S3 "remote datasets (s3://) need feederd built with libcurl (meson -Ds3=enabled)"

int shard_cache_open(struct shard_cache **out, const struct shard_cache_config *cfg, char *err,
		     size_t errlen)
{
	(void)cfg;
	*out = NULL;
	return status_fail(err, errlen, FEEDER_EINVAL, NO_S3);
}

void shard_cache_close(struct shard_cache *c)
{
	(void)c;
}

void shard_cache_stats(struct shard_cache *c, struct shard_cache_stats *st)
{
	(void)c;
	memset(st, 0, sizeof(*st));
}

int shard_set_open(struct shard_cache *c, const char *bucket, const char *prefix,
		   const struct manifest *m, struct shard_set **out, char *err, size_t errlen)
{
	(void)c;
	(void)bucket;
	(void)prefix;
	(void)m;
	*out = NULL;
	return status_fail(err, errlen, FEEDER_EINVAL, NO_S3);
}

void shard_set_close(struct shard_set *s)
{
	(void)s;
}

void shard_set_want(struct shard_set *s, uint32_t who, const uint32_t *shards, size_t n)
{
	(void)s;
	(void)who;
	(void)shards;
	(void)n;
}

int shard_set_get(struct shard_set *s, uint32_t i, struct dsstore **store, const void **map,
		  size_t *map_len, double *waited_s, char *err, size_t errlen)
{
	(void)s;
	(void)i;
	(void)waited_s;
	*store = NULL;
	*map = NULL;
	*map_len = 0;
	return status_fail(err, errlen, FEEDER_EINVAL, NO_S3);
}

int shard_set_try(struct shard_set *s, uint32_t i, struct dsstore **store, const void **map,
		  size_t *map_len)
{
	(void)s;
	(void)i;
	*store = NULL;
	*map = NULL;
	*map_len = 0;
	return -EAGAIN;
}

void shard_set_put(struct shard_set *s, uint32_t i)
{
	(void)s;
	(void)i;
}
