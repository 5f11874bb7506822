/* remote.h — the datasets feederd serves from object storage: the
 * `remote` setting's NAME=s3://BUCKET/PREFIX entries.
 *
 * Each is served by its manifest (PREFIX/feeder.manifest, written last by
 * `packer push`, so a half-pushed dataset is never seen) and read through
 * the daemon's one shard cache (shard_cache.h). Manifests are read at start
 * (a store that cannot be reached then refuses that dataset with one line
 * naming the URL; the others are served) and again every remote_check
 * seconds by a thread of this module: a dataset that could not be read
 * comes when its store answers, and a manifest that changed makes a new
 * version. The event loop takes new versions with remote_take and serves
 * them (registry.c), retiring the old version like a local dataset
 * replaced on disk: its streams end with the reason, new streams read the
 * new one. A store that stops answering does not retire what is served;
 * streams then wait on their fetches and fail with the store's error. */
#ifndef FEEDER_REMOTE_H
#define FEEDER_REMOTE_H

#include "config.h"

#include <stddef.h>

struct dataset;
struct remote;
struct shard_cache;

/* Nothing configured: *out = NULL and 0. Otherwise the credentials and
 * endpoint (s3.h), the shard cache, the first reading of every manifest
 * and the checking thread; fails only for what the configuration itself
 * gets wrong (a URL, the cache directory, no credentials), with one line. */
int remote_open(struct remote **out, const struct config *cfg, unsigned readers, char *err,
		size_t errlen);
void remote_close(struct remote *r);
struct shard_cache *remote_cache(struct remote *r);

/* Versions made since the last call, at most max, each referenced for the
 * caller (loop thread). */
size_t remote_take(struct remote *r, struct dataset **out, size_t max);

/* Why remote dataset name is not served (the last reading's failure),
 * copied into out: 1; 0 when name is not a remote dataset that failed. */
int remote_why(struct remote *r, const char *name, char *out, size_t outlen);

#endif
