/* packer_push.c — `packer push DATASET s3://bucket/prefix`: every shard
 * file of the dataset (layout.h) uploaded to prefix/<shard name>, then the
 * manifest to prefix/feeder.manifest — last, so that a dataset whose push
 * failed or is still running has no manifest and is never read.
 *
 * The work is a list of uploads: a shard up to the part size is one PUT, a
 * larger one a multipart upload of parts of that size. --jobs threads, each
 * with its own S3 client (a client is one connection), take the next
 * upload from the list, so parts of one shard and several shards go up at
 * once. The first thread to take a part of a shard begins its multipart
 * upload; the one that finishes its last part completes it. On any failure
 * the threads stop taking work, every multipart upload begun and not
 * completed is aborted (its parts would otherwise be stored, and billed,
 * until a lifecycle rule removes them), and no manifest is written. */
#include "packer_push.h"

#include "layout.h"
#include "pack_args.h"
#include "pack_msg.h"
#include "pack_progress.h"
#include "packer.h"

#include "s3.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CMD "push"
#define MIN_PART ((unsigned long long)5 << 20)
#define MAX_PART ((unsigned long long)5 << 30)
#define MAX_PARTS 10000
#define ETAG_MAX 256

struct shard_up {
	char path[4096];
	char key[S3_MAX_KEY];
	uint64_t bytes, part; /* part: the part size, when nparts > 0 */
	int nparts;           /* 0: one PUT */
	int parts_left;       /* under push.lock */
	pthread_mutex_t begin_lock;
	int begun, begin_failed, completed;
	char id[1024];
	char *etags; /* nparts * ETAG_MAX */
};

struct job {
	size_t shard;
	int part; /* 0: the whole shard in one PUT; else its part number */
};

struct push {
	char bucket[S3_MAX_BUCKET];
	struct s3_config cfg;
	struct shard_up *s;
	size_t ns;
	struct job *jobs;
	size_t njobs, next;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int failed, running;
	char err[1024];
	uint64_t bytes_done, shards_done;
};

static void push_fail(struct push *p, const char *err)
{
	pthread_mutex_lock(&p->lock);
	if (!p->failed) {
		p->failed = 1;
		snprintf(p->err, sizeof(p->err), "%s", err);
	}
	pthread_mutex_unlock(&p->lock);
}

static void push_progress(struct push *p, uint64_t bytes, int shard_done)
{
	pthread_mutex_lock(&p->lock);
	p->bytes_done += bytes;
	p->shards_done += (uint64_t)shard_done;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* The shard's file, whose size must still be the manifest's. */
static int open_shard(const struct shard_up *sh, int *fd, char *err, size_t errlen)
{
	struct stat st;
	*fd = open(sh->path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return status_fail(err, errlen, -errno, "%s: %s", sh->path, strerror(errno));
	if (fstat(*fd, &st) != 0 || (uint64_t)st.st_size != sh->bytes) {
		int rc = status_fail(err, errlen, FEEDER_ECORRUPT,
				     "%s: %llu bytes, but the manifest says %llu (changed since "
				     "it was packed?)",
				     sh->path, (unsigned long long)st.st_size,
				     (unsigned long long)sh->bytes);
		close(*fd);
		*fd = -1;
		return rc;
	}
	return 0;
}

static int begin_once(struct push *p, struct s3_client *cl, struct shard_up *sh, char *err,
		      size_t errlen)
{
	int rc = 0;
	pthread_mutex_lock(&sh->begin_lock);
	/* Another thread's begin failed while this one waited: the push is
	 * over, and that thread reports why. */
	if (sh->begin_failed) {
		rc = status_fail(err, errlen, -ECANCELED, "cancelled");
	} else if (!sh->begun) {
		rc = s3_multipart_begin(cl, p->bucket, sh->key, sh->id, sizeof(sh->id), err,
					errlen);
		sh->begun = rc == 0;
		sh->begin_failed = rc != 0;
		/* Kept before a waiting thread can say "cancelled". */
		if (rc)
			push_fail(p, err);
	}
	pthread_mutex_unlock(&sh->begin_lock);
	return rc;
}

static int do_job(struct push *p, struct s3_client *cl, const struct job *j, char *err,
		  size_t errlen)
{
	struct shard_up *sh = &p->s[j->shard];
	int fd, rc;
	if (j->part == 0) {
		if ((rc = open_shard(sh, &fd, err, errlen)))
			return rc;
		rc = s3_put_fd(cl, p->bucket, sh->key, fd, 0, sh->bytes, err, errlen);
		close(fd);
		if (rc == 0)
			push_progress(p, sh->bytes, 1);
		return rc;
	}
	if ((rc = begin_once(p, cl, sh, err, errlen)) || (rc = open_shard(sh, &fd, err, errlen)))
		return rc;
	uint64_t off = (uint64_t)(j->part - 1) * sh->part;
	uint64_t len = sh->bytes - off < sh->part ? sh->bytes - off : sh->part;
	rc = s3_multipart_put(cl, p->bucket, sh->key, sh->id, j->part, fd, off, len,
			      sh->etags + (size_t)(j->part - 1) * ETAG_MAX, ETAG_MAX, err, errlen);
	close(fd);
	if (rc)
		return rc;
	pthread_mutex_lock(&p->lock);
	int left = --sh->parts_left;
	pthread_mutex_unlock(&p->lock);
	if (left == 0) {
		char **etags = malloc((size_t)sh->nparts * sizeof(char *));
		if (!etags)
			return status_fail(err, errlen, -ENOMEM, "out of memory");
		for (int i = 0; i < sh->nparts; i++)
			etags[i] = sh->etags + (size_t)i * ETAG_MAX;
		rc = s3_multipart_complete(cl, p->bucket, sh->key, sh->id, sh->nparts, etags, err,
					   errlen);
		free(etags);
		if (rc)
			return rc;
		sh->completed = 1;
	}
	push_progress(p, len, left == 0);
	return 0;
}

static void *worker(void *arg)
{
	struct push *p = arg;
	struct s3_client *cl = NULL;
	char err[1024];
	if (s3_client_new(&p->cfg, &cl, err, sizeof(err)))
		push_fail(p, err);
	for (;;) {
		pthread_mutex_lock(&p->lock);
		int stop = p->failed || p->next >= p->njobs || !cl;
		struct job j = stop ? (struct job){ 0, 0 } : p->jobs[p->next++];
		pthread_mutex_unlock(&p->lock);
		if (stop)
			break;
		if (do_job(p, cl, &j, err, sizeof(err))) {
			push_fail(p, err);
			break;
		}
	}
	s3_client_free(cl);
	pthread_mutex_lock(&p->lock);
	p->running--;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* The list of uploads, shard by shard; 0 or a sentence. */
static int plan(struct push *p, const struct layout *l, const char *prefix, uint64_t part_size,
		char *err, size_t errlen)
{
	p->ns = l->m.nshards;
	p->s = calloc(p->ns, sizeof(*p->s));
	if (!p->s)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	size_t njobs = 0;
	for (size_t i = 0; i < p->ns; i++) {
		struct shard_up *sh = &p->s[i];
		const struct manifest_shard *ms = &l->m.shards[i];
		pthread_mutex_init(&sh->begin_lock, NULL);
		int rc = layout_shard_path(l, i, sh->path, sizeof(sh->path), err, errlen);
		if (rc)
			return rc;
		if ((size_t)snprintf(sh->key, sizeof(sh->key), "%s%s%s", prefix, *prefix ? "/" : "",
				     ms->name) >= sizeof(sh->key))
			return status_fail(err, errlen, FEEDER_EINVAL, "the key %s/%s is too long",
					   prefix, ms->name);
		sh->bytes = ms->bytes;
		if (sh->bytes > part_size) {
			/* S3 takes at most 10,000 parts: a larger shard gets
			 * larger parts (whole MiB). */
			uint64_t part = part_size;
			if ((sh->bytes + part - 1) / part > MAX_PARTS)
				part = ((sh->bytes + MAX_PARTS - 1) / MAX_PARTS + (1u << 20) - 1) &
				       ~(uint64_t)((1u << 20) - 1);
			sh->part = part;
			sh->nparts = (int)((sh->bytes + part - 1) / part);
			sh->parts_left = sh->nparts;
			sh->etags = calloc((size_t)sh->nparts, ETAG_MAX);
			if (!sh->etags)
				return status_fail(err, errlen, -ENOMEM, "out of memory");
			njobs += (size_t)sh->nparts;
		} else {
			njobs++;
		}
	}
	p->jobs = calloc(njobs ? njobs : 1, sizeof(*p->jobs));
	if (!p->jobs)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < p->ns; i++) {
		if (!p->s[i].nparts)
			p->jobs[p->njobs++] = (struct job){ i, 0 };
		for (int k = 1; k <= p->s[i].nparts; k++)
			p->jobs[p->njobs++] = (struct job){ i, k };
	}
	return 0;
}

/* Run the uploads on jobs threads, the progress line drawn from here. */
static int run_uploads(struct push *p, unsigned jobs, int verbose)
{
	struct pack_progress prog;
	pack_progress_init(&prog, p->ns, verbose);
	prog.what = "shards";
	if (jobs > p->njobs)
		jobs = p->njobs ? (unsigned)p->njobs : 1;
	pthread_t *t = calloc(jobs, sizeof(*t));
	if (!t) {
		snprintf(p->err, sizeof(p->err), "out of memory");
		return -ENOMEM;
	}
	unsigned started = 0;
	pthread_mutex_lock(&p->lock);
	for (; started < jobs; started++) {
		if (pthread_create(&t[started], NULL, worker, p) != 0)
			break;
		p->running++;
	}
	if (!started) {
		p->failed = 1;
		snprintf(p->err, sizeof(p->err), "cannot start a thread");
	}
	uint64_t shown_bytes = 0, shown_shards = 0;
	while (p->running > 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250 * 1000000L;
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
		uint64_t b = p->bytes_done - shown_bytes, s = p->shards_done - shown_shards;
		shown_bytes = p->bytes_done;
		shown_shards = p->shards_done;
		pthread_mutex_unlock(&p->lock);
		pack_progress_add(&prog, s, b);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	if (!p->failed)
		pack_progress_done(&prog);
	return p->failed ? -EIO : 0;
}

/* After a failure: no multipart upload left open. */
static void abort_open_uploads(struct push *p)
{
	struct s3_client *cl;
	char err[1024];
	int any = 0;
	for (size_t i = 0; i < p->ns; i++)
		any |= p->s[i].begun && !p->s[i].completed;
	if (!any)
		return;
	if (s3_client_new(&p->cfg, &cl, err, sizeof(err))) {
		pack_warn("%s: cannot abort the open multipart uploads: %s", CMD, err);
		return;
	}
	for (size_t i = 0; i < p->ns; i++) {
		struct shard_up *sh = &p->s[i];
		if (sh->begun && !sh->completed &&
		    s3_multipart_abort(cl, p->bucket, sh->key, sh->id, err, sizeof(err)))
			pack_warn("%s: %s (abort it, or let a lifecycle rule remove it)", CMD, err);
	}
	s3_client_free(cl);
}

static int publish(struct push *p, const struct layout *l, const char *prefix, char *err,
		   size_t errlen)
{
	char key[S3_MAX_KEY], *text;
	size_t len;
	if ((size_t)snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "/" : "",
			     MANIFEST_NAME) >= sizeof(key))
		return status_fail(err, errlen, FEEDER_EINVAL, "the key %s/%s is too long", prefix,
				   MANIFEST_NAME);
	int rc = manifest_encode(&l->m, &text, &len, err, errlen);
	if (rc)
		return rc;
	struct s3_client *cl;
	if ((rc = s3_client_new(&p->cfg, &cl, err, errlen)) == 0) {
		rc = s3_put(cl, p->bucket, key, text, len, err, errlen);
		s3_client_free(cl);
	}
	free(text);
	return rc;
}

static void push_free(struct push *p)
{
	for (size_t i = 0; p->s && i < p->ns; i++) {
		pthread_mutex_destroy(&p->s[i].begin_lock);
		free(p->s[i].etags);
	}
	free(p->s);
	free(p->jobs);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	/* The configuration held the secret key. */
	memset(&p->cfg, 0, sizeof(p->cfg));
}

int packer_push_main(int argc, char **argv)
{
	unsigned jobs = 8;
	unsigned long long part_size = 64ull << 20;
	int verbose = 0, help = 0, n;
	char *ops[2];
	struct argtab tab[] = {
		ARGTAB_INT("jobs", 'j', &jobs, 1, 64, "N",
			   "uploads at once, each on its own connection (default 8)"),
		ARGTAB_SIZE("part-size", 0, &part_size, MIN_PART, MAX_PART, "SIZE",
			    "a shard larger than SIZE goes up in parts of SIZE (multipart\n"
			    "upload; 5M to 5G, default 64M)"),
		ARGTAB_FLAG("verbose", 'v', &verbose,
			    "a progress line every 2 s when not on a terminal"),
		ARGTAB_FLAG("help", 'h', &help, "this text"),
		ARGTAB_END,
	};
	int rc = pack_args_parse(CMD, tab, argc, argv, ops, 2, &n);
	if (rc)
		return rc;
	if (help) {
		puts("usage: packer push DEST s3://BUCKET/PREFIX [--jobs N] [--part-size SIZE] [-v]");
		argtab_help(stdout, tab);
		return 0;
	}
	if (n < 2)
		return pack_usage_error(CMD, "missing DEST or s3://BUCKET/PREFIX");
	struct push p = { 0 };
	char prefix[S3_MAX_KEY], err[1024];
	if (s3_url_parse(ops[1], p.bucket, prefix, err, sizeof(err)))
		return pack_usage_error(CMD, "%s", err);
	if (s3_config_load(&p.cfg, err, sizeof(err))) {
		pack_error("%s: %s", CMD, err);
		return PACK_EXIT_USAGE;
	}
	struct layout l;
	if (layout_load(ops[0], 1, &l, err, sizeof(err))) {
		pack_error("%s: %s", CMD, err);
		memset(&p.cfg, 0, sizeof(p.cfg));
		return PACK_EXIT_FAIL;
	}
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	rc = PACK_EXIT_OK;
	if (plan(&p, &l, prefix, part_size, err, sizeof(err))) {
		pack_error("%s: %s", CMD, err);
		rc = PACK_EXIT_FAIL;
	} else if (run_uploads(&p, jobs, verbose)) {
		abort_open_uploads(&p);
		pack_error("%s: %s (no manifest written)", CMD, p.err);
		rc = PACK_EXIT_FAIL;
	} else if (publish(&p, &l, prefix, err, sizeof(err))) {
		pack_error("%s: %s (the shards are up, the manifest is not)", CMD, err);
		rc = PACK_EXIT_FAIL;
	} else {
		uint64_t total = 0;
		for (size_t i = 0; i < p.ns; i++)
			total += p.s[i].bytes;
		printf("pushed %zu shard%s (%llu bytes) and %s to s3://%s%s%s\n", p.ns,
		       p.ns == 1 ? "" : "s", (unsigned long long)total, MANIFEST_NAME, p.bucket,
		       *prefix ? "/" : "", prefix);
	}
	push_free(&p);
	layout_free(&l);
	return rc;
}
