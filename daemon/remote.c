/* remote.c — the remote datasets' manifests, read at start and then by a
 * thread of their own, turned into dataset versions for the registry (see
 * remote.h). */
#include "remote.h"

#include "log.h"
#include "mapguard.h"
#include "registry.h"
#include "s3.h"
#include "shard_cache.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The start's reading tries twice: a store that cannot be reached should
 * not hold up the datasets that can be served (the thread tries again). */
#define REMOTE_START_TRIES 2
#define REMOTE_PENDING_MAX 64

struct remote_entry {
	struct config_remote cfg; /* name, url, bucket, prefix */
	char *text;               /* the manifest served (NULL: none yet) */
	size_t len;
	char why[PROTO_TEXT_MAX]; /* the last failure ("" when served) */
};

struct remote {
	struct shard_cache *cache;
	struct s3_config s3;
	struct s3_client *cl; /* the checking thread's (the start's before it) */
	unsigned check_s;
	uint32_t block; /* shuffle_block */
	uint64_t limit; /* cache_limit */
	struct remote_entry *e;
	size_t n;
	pthread_mutex_t lock; /* why[], pending[], stop */
	pthread_cond_t wake;
	int stop, started;
	pthread_t thread;
	struct dataset *pending[REMOTE_PENDING_MAX];
	size_t npending;
};

/* A version of e from its manifest m (taken over), referenced once. */
static int make_version(struct remote *r, struct remote_entry *e, struct manifest *m,
			struct dataset **out, char *err, size_t errlen)
{
	struct dataset *d = calloc(1, sizeof(*d));
	if (!d)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	int rc = shard_set_open(r->cache, e->cfg.bucket, e->cfg.prefix, m, &d->shards, err, errlen);
	if (rc) {
		free(d);
		return rc;
	}
	snprintf(d->name, sizeof(d->name), "%s", e->cfg.name);
	snprintf(d->url, sizeof(d->url), "%s", e->cfg.url);
	d->man = *m;
	*m = (struct manifest){ 0 };
	d->hdr = d->man.header;
	d->block = r->block;
	d->shard_first = malloc(d->man.nshards * sizeof(uint64_t));
	d->shard_count = malloc(d->man.nshards * sizeof(uint64_t));
	for (size_t i = 0; d->shard_first && d->shard_count && i < d->man.nshards; i++) {
		d->shard_first[i] = d->man.shards[i].first;
		d->shard_count[i] = d->man.shards[i].count;
	}
	atomic_init(&d->refs, 1);
	atomic_init(&d->streams, 0);
	pthread_mutex_init(&d->lock, NULL);
	if (!d->shard_first || !d->shard_count) {
		dataset_unref(d);
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	}
	/* A stream reads a block and wants the next ones (stream_ahead.c):
	 * a cache that cannot hold three blocks makes it fetch shards again. */
	uint64_t largest = 0;
	for (size_t i = 0; i < d->man.nshards; i++)
		if (d->man.shards[i].bytes > largest)
			largest = d->man.shards[i].bytes;
	uint64_t want =
		3 * (uint64_t)d->block < d->man.nshards ? 3 * (uint64_t)d->block : d->man.nshards;
	if (want * largest > r->limit)
		log_warn(
			"remote dataset '%s': cache_limit (%llu bytes) holds less than three blocks "
			"of shuffle_block = %u shards (%llu bytes): a stream will fetch shards "
			"more than once an epoch; raise cache_limit or lower shuffle_block",
			e->cfg.name, (unsigned long long)r->limit, d->block,
			(unsigned long long)(want * largest));
	*out = d;
	return 0;
}

/* Read e's manifest; a new version into *out when it differs from the one
 * served (else *out stays NULL). 0, or the failure in err. */
static int read_manifest(struct remote *r, struct s3_client *cl, struct remote_entry *e,
			 struct dataset **out, char *err, size_t errlen)
{
	char key[S3_MAX_KEY + 32];
	snprintf(key, sizeof(key), "%s%s%s", e->cfg.prefix, e->cfg.prefix[0] ? "/" : "",
		 MANIFEST_NAME);
	void *text = NULL;
	size_t len = 0;
	*out = NULL;
	int rc = s3_get(cl, e->cfg.bucket, key, MANIFEST_MAX_TEXT, &text, &len, err, errlen);
	if (rc == -ENOENT)
		rc = status_fail(err, errlen, -ENOENT,
				 "%s holds no dataset (no %s: not pushed, or its push is not "
				 "finished)",
				 e->cfg.url, MANIFEST_NAME);
	if (rc)
		return rc;
	if (e->text && e->len == len && memcmp(e->text, text, len) == 0) {
		free(text);
		return 0;
	}
	struct manifest m;
	char why[256];
	rc = manifest_decode(text, len, &m, why, sizeof(why));
	if (rc == 0 && m.header.samples == 0) {
		manifest_free(&m);
		rc = status_fail(why, sizeof(why), FEEDER_EINVAL, "the dataset has no samples");
	}
	if (rc) {
		free(text);
		return status_fail(err, errlen, rc, "%s/%s: %s", e->cfg.url, MANIFEST_NAME, why);
	}
	rc = make_version(r, e, &m, out, err, errlen);
	manifest_free(&m);
	if (rc) {
		free(text);
		return rc;
	}
	free(e->text);
	e->text = text;
	e->len = len;
	return 0;
}

/* One reading of e's manifest through cl: a new version queued for the
 * loop, a failure kept (and logged when it is new). */
static void check_one(struct remote *r, struct s3_client *cl, struct remote_entry *e)
{
	struct dataset *d = NULL;
	char err[PROTO_TEXT_MAX];
	int rc = read_manifest(r, cl, e, &d, err, sizeof(err));
	pthread_mutex_lock(&r->lock);
	if (rc && strcmp(e->why, err) != 0) {
		snprintf(e->why, sizeof(e->why), "%s", err);
		if (e->text)
			log_warn("remote dataset '%s': %s (still serving the version read "
				 "before)",
				 e->cfg.name, err);
		else
			log_err("remote dataset '%s' not served: %s", e->cfg.name, err);
	} else if (rc == 0) {
		e->why[0] = 0;
	}
	if (d && r->npending == REMOTE_PENDING_MAX) {
		/* The loop has not taken the last ones: read again next time. */
		dataset_unref(d);
		free(e->text);
		e->text = NULL;
		d = NULL;
	}
	if (d) {
		r->pending[r->npending++] = d;
		log_info("remote dataset '%s' (%s): %s, %llu samples in %zu shards, %u classes",
			 d->name, d->url, dsformat_kind_name(d->hdr.kind),
			 (unsigned long long)d->hdr.samples, d->man.nshards, d->hdr.classes);
	}
	pthread_mutex_unlock(&r->lock);
}

static void check_all(struct remote *r)
{
	for (size_t i = 0; i < r->n; i++)
		check_one(r, r->cl, &r->e[i]);
}

/* The start's reading of one manifest, on a thread of its own: a store
 * that does not answer costs the start its timeout once, not once per
 * dataset. */
struct start_read {
	struct remote *r;
	struct remote_entry *e;
	struct s3_client *cl;
	pthread_t thread;
	int started;
};

static void *start_read_main(void *arg)
{
	struct start_read *sr = arg;
	check_one(sr->r, sr->cl, sr->e);
	return NULL;
}

static int read_all_at_start(struct remote *r, char *err, size_t errlen)
{
	struct s3_config first = r->s3;
	first.tries = REMOTE_START_TRIES < r->s3.tries ? REMOTE_START_TRIES : r->s3.tries;
	struct start_read *sr = calloc(r->n, sizeof(*sr));
	if (!sr)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < r->n; i++) {
		sr[i].r = r;
		sr[i].e = &r->e[i];
		rc = s3_client_new(&first, &sr[i].cl, err, errlen);
		/* Without a thread it is read here, one after another. */
		if (rc == 0 && pthread_create(&sr[i].thread, NULL, start_read_main, &sr[i]) == 0)
			sr[i].started = 1;
		else if (rc == 0)
			check_one(r, sr[i].cl, sr[i].e);
	}
	for (size_t i = 0; i < r->n; i++) {
		if (sr[i].started)
			pthread_join(sr[i].thread, NULL);
		if (sr[i].cl)
			s3_client_free(sr[i].cl);
	}
	free(sr);
	return rc;
}

static void *checker(void *arg)
{
	struct remote *r = arg;
	pthread_mutex_lock(&r->lock);
	while (!r->stop) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += r->check_s;
		while (!r->stop && pthread_cond_timedwait(&r->wake, &r->lock, &until) != ETIMEDOUT)
			;
		if (r->stop)
			break;
		pthread_mutex_unlock(&r->lock);
		check_all(r);
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

static void bad_shard(const char *why)
{
	log_err("%s: its samples are replaced and counted as corrupt", why);
}

int remote_open(struct remote **out, const struct config *cfg, unsigned readers, char *err,
		size_t errlen)
{
	*out = NULL;
	struct config_remote *list = malloc(CONFIG_MAX_REMOTES * sizeof(*list));
	if (!list)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	int n = config_remotes(cfg->remote, list, err, errlen);
	if (n <= 0) {
		free(list);
		return n;
	}
	struct remote *r = calloc(1, sizeof(*r));
	if (!r) {
		free(list);
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->wake, NULL);
	r->check_s = cfg->remote_check;
	r->block = cfg->shuffle_block;
	r->limit = cfg->cache_limit;
	r->n = (size_t)n;
	r->e = calloc(r->n, sizeof(*r->e));
	int rc = r->e ? 0 : status_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < r->n; i++)
		r->e[i].cfg = list[i];
	free(list);
	if (rc == 0 && (rc = s3_config_load(&r->s3, err, errlen)) == 0)
		r->s3.tries = (int)cfg->fetch_tries;
	if (rc == 0) {
		struct shard_cache_config cc = { .limit = cfg->cache_limit,
						 .fetchers = cfg->fetchers,
						 .readers = readers,
						 .wait_limit_s = 60,
						 .s3 = r->s3 };
		snprintf(cc.dir, sizeof(cc.dir), "%s", cfg->cache_dir);
		cc.on_map = mapguard_register;
		cc.on_unmap = mapguard_unregister;
		cc.on_bad = bad_shard;
		rc = shard_cache_open(&r->cache, &cc, err, errlen);
	}
	if (rc == 0 && (rc = read_all_at_start(r, err, errlen)) == 0)
		rc = s3_client_new(&r->s3, &r->cl, err, errlen);
	if (rc == 0) {
		if ((rc = pthread_create(&r->thread, NULL, checker, r)) != 0)
			rc = status_fail(err, errlen, -rc, "cannot start a thread: %s",
					 strerror(rc));
		else
			r->started = 1;
	}
	if (rc) {
		remote_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

void remote_close(struct remote *r)
{
	if (!r)
		return;
	if (r->started) {
		pthread_mutex_lock(&r->lock);
		r->stop = 1;
		pthread_cond_broadcast(&r->wake);
		pthread_mutex_unlock(&r->lock);
		pthread_join(r->thread, NULL);
	}
	for (size_t i = 0; i < r->npending; i++)
		dataset_unref(r->pending[i]);
	for (size_t i = 0; r->e && i < r->n; i++)
		free(r->e[i].text);
	free(r->e);
	s3_client_free(r->cl);
	/* The registry let go of every version (and so of every shard set)
	 * before: the cache is closed last. */
	shard_cache_close(r->cache);
	pthread_cond_destroy(&r->wake);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

struct shard_cache *remote_cache(struct remote *r)
{
	return r ? r->cache : NULL;
}

size_t remote_take(struct remote *r, struct dataset **out, size_t max)
{
	if (!r)
		return 0;
	pthread_mutex_lock(&r->lock);
	size_t n = r->npending < max ? r->npending : max;
	memcpy(out, r->pending, n * sizeof(*out));
	memmove(r->pending, r->pending + n, (r->npending - n) * sizeof(*out));
	r->npending -= n;
	pthread_mutex_unlock(&r->lock);
	return n;
}

int remote_why(struct remote *r, const char *name, char *out, size_t outlen)
{
	if (!r)
		return 0;
	int found = 0;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->n && !found; i++)
		if (strcmp(r->e[i].cfg.name, name) == 0 && r->e[i].why[0]) {
			snprintf(out, outlen, "remote dataset '%s' is not served: %s", name,
				 r->e[i].why);
			found = 1;
		}
	pthread_mutex_unlock(&r->lock);
	return found;
}
