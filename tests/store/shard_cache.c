/* shard_cache.c — drives daemon/shard_cache.h against a real S3 server for
 * tests/store/shard_cache.sh: reads the dataset's manifest from the bucket,
 * opens the cache and one shard set, and reads shards through it, checking
 * every byte against the local copy of the dataset (the whole file through
 * the mapping, and every record, name and label through the store).
 *
 *   shard_cache_test DIR LIMIT BUCKET PREFIX LOCALDS read I...
 *       want I... (soonest first) and get/put each in turn, withdrawing
 *       each shard from the want list once read, as a stream does
 *   shard_cache_test DIR LIMIT BUCKET PREFIX LOCALDS get I [I...]
 *       get/put each, no want; a failure prints "rc CODE" and "err SENTENCE"
 *       and goes on to the next
 *
 * A thread samples the bytes of every file in DIR (temporaries included)
 * every millisecond. At the end it prints "name value" lines: the cache's
 * stats, "dir_peak" (the sampled maximum) and "ok N" (shards read and
 * equal). Exit 0 when every read shard matched, 1 otherwise, 2 for usage. */
#include "dsstore.h"
#include "manifest.h"
#include "s3.h"
#include "shard_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static atomic_int done;
static atomic_ullong dir_peak;

static uint64_t dir_bytes(void)
{
	DIR *d = opendir(dir);
	uint64_t sum = 0;
	struct dirent *de;
	char path[8192];
	struct stat st;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
	}
	closedir(d);
	return sum;
}

static void *sampler(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		uint64_t b = dir_bytes();
		if (b > atomic_load(&dir_peak))
			atomic_store(&dir_peak, b);
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return NULL;
}

static int read_file(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	if (!f || fstat(fileno(f), &st) != 0) {
		if (f)
			fclose(f);
		return -1;
	}
	*len = (size_t)st.st_size;
	*buf = malloc(*len ? *len : 1);
	int rc = *buf && fread(*buf, 1, *len, f) == *len ? 0 : -1;
	fclose(f);
	return rc;
}

/* The cached store and mapping of shard sh against LOCALDS/NAME. */
static int same(const char *local_dir, const struct manifest_shard *sh, struct dsstore *got,
		const void *map, size_t map_len)
{
	char path[8192], err[512];
	uint8_t *file;
	size_t len;
	snprintf(path, sizeof(path), "%s/%s", local_dir, sh->name);
	if (read_file(path, &file, &len)) {
		fprintf(stderr, "cannot read %s\n", path);
		return -1;
	}
	int bad = len != sh->bytes || map_len < len || memcmp(map, file, len) != 0;
	free(file);
	if (bad) {
		fprintf(stderr, "%s: the cached file's bytes differ from the local file's\n",
			sh->name);
		return -1;
	}
	struct dsstore *want;
	struct dsstore_txn *ta = NULL, *tb = NULL;
	if (dsstore_open(path, &want, err, sizeof(err)) ||
	    dsstore_txn_begin(want, &ta, err, sizeof(err)) ||
	    dsstore_txn_begin(got, &tb, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	const struct dsformat_header *ha = dsstore_header(want), *hb = dsstore_header(got);
	bad = ha->samples != hb->samples || ha->classes != hb->classes || ha->kind != hb->kind ||
	      ha->version != hb->version || ha->samples != sh->count;
	for (uint64_t i = 0; !bad && i < sh->count; i++) {
		const uint8_t *ra, *rb;
		const char *na, *nb;
		size_t la, lb, nla = 0, nlb = 0;
		if (dsstore_get_record(ta, i, &ra, &la, err, sizeof(err)) ||
		    dsstore_get_record(tb, i, &rb, &lb, err, sizeof(err)) || la != lb ||
		    memcmp(ra, rb, la) != 0)
			bad = 1;
		int a = dsstore_get_name(ta, i, &na, &nla), b = dsstore_get_name(tb, i, &nb, &nlb);
		if (a != b || nla != nlb || (a == 0 && memcmp(na, nb, nla) != 0))
			bad = 1;
	}
	for (uint32_t k = 0; !bad && k < ha->classes; k++) {
		const char *na, *nb;
		size_t nla = 0, nlb = 0;
		int a = dsstore_get_label(ta, k, &na, &nla),
		    b = dsstore_get_label(tb, k, &nb, &nlb);
		if (a != b || nla != nlb || (a == 0 && memcmp(na, nb, nla) != 0))
			bad = 1;
	}
	dsstore_txn_end(ta);
	dsstore_txn_end(tb);
	dsstore_close(want);
	if (bad)
		fprintf(stderr, "%s: a record, name or label differs from the local shard's\n",
			sh->name);
	return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 8 || (strcmp(argv[6], "read") && strcmp(argv[6], "get"))) {
		fprintf(stderr, "usage: shard_cache_test DIR LIMIT BUCKET PREFIX LOCALDS "
				"read|get I...\n");
		return 2;
	}
	dir = argv[1];
	const char *bucket = argv[3], *prefix = argv[4], *local_dir = argv[5];
	int reading = !strcmp(argv[6], "read");
	size_t n = (size_t)argc - 7;
	uint32_t *order = calloc(n, sizeof(*order));
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)strtoul(argv[7 + i], NULL, 10);

	char err[1024], key[S3_MAX_KEY + 64];
	struct shard_cache_config cfg = { .limit = strtoull(argv[2], NULL, 10),
					  .fetchers = 2,
					  .readers = 2,
					  .wait_limit_s = 20 };
	snprintf(cfg.dir, sizeof(cfg.dir), "%s", dir);
	struct s3_client *cl;
	void *text;
	size_t text_len;
	struct manifest m;
	snprintf(key, sizeof(key), "%s%s%s", prefix, prefix[0] ? "/" : "", MANIFEST_NAME);
	if (s3_config_load(&cfg.s3, err, sizeof(err)) ||
	    s3_client_new(&cfg.s3, &cl, err, sizeof(err)) ||
	    s3_get(cl, bucket, key, MANIFEST_MAX_TEXT, &text, &text_len, err, sizeof(err)) ||
	    manifest_decode(text, text_len, &m, err, sizeof(err))) {
		fprintf(stderr, "shard_cache_test: %s\n", err);
		return 1;
	}
	free(text);
	s3_client_free(cl);

	struct shard_cache *c;
	struct shard_set *s;
	if (shard_cache_open(&c, &cfg, err, sizeof(err))) {
		fprintf(stderr, "shard_cache_test: %s\n", err);
		return 1;
	}
	if (shard_set_open(c, bucket, prefix, &m, &s, err, sizeof(err))) {
		fprintf(stderr, "shard_cache_test: %s\n", err);
		shard_cache_close(c);
		return 1;
	}
	pthread_t th;
	pthread_create(&th, NULL, sampler, NULL);

	int failed = 0, ok = 0;
	double waited = 0;
	for (size_t k = 0; k < n; k++) {
		uint32_t i = order[k];
		if (i >= m.nshards) {
			fprintf(stderr, "shard_cache_test: no shard %u\n", i);
			failed = 1;
			break;
		}
		if (reading)
			shard_set_want(s, 7, order + k, n - k);
		struct dsstore *store;
		const void *map;
		size_t map_len;
		int rc = shard_set_get(s, i, &store, &map, &map_len, &waited, err, sizeof(err));
		if (rc) {
			printf("rc %d\nerr %s\n", rc, err);
			failed |= reading;
			continue;
		}
		if (same(local_dir, &m.shards[i], store, map, map_len) == 0)
			ok++;
		else
			failed = 1;
		shard_set_put(s, i);
	}
	if (reading)
		shard_set_want(s, 7, NULL, 0);
	atomic_store(&done, 1);
	pthread_join(th, NULL);
	uint64_t b = dir_bytes();
	if (b > atomic_load(&dir_peak))
		atomic_store(&dir_peak, b);

	struct shard_cache_stats st;
	shard_cache_stats(c, &st);
	shard_set_close(s);
	shard_cache_close(c);
	manifest_free(&m);
	free(order);
	printf("ok %d\nbytes %llu\npeak_bytes %llu\ndir_peak %llu\nhits %llu\nmisses %llu\n"
	       "fetches %llu\nfetched_bytes %llu\nretries %llu\nrefetches %llu\nfailures %llu\n"
	       "evictions %llu\nwaited %s\n",
	       ok, (unsigned long long)st.bytes, (unsigned long long)st.peak_bytes,
	       (unsigned long long)atomic_load(&dir_peak), (unsigned long long)st.hits,
	       (unsigned long long)st.misses, (unsigned long long)st.fetches,
	       (unsigned long long)st.fetched_bytes, (unsigned long long)st.retries,
	       (unsigned long long)st.refetches, (unsigned long long)st.failures,
	       (unsigned long long)st.evictions,
	       st.wait_s > 0 && waited > 0 && waited <= st.wait_s + 1e-9 ? "yes" : "no");
	return failed;
}
