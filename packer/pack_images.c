/* pack_images.c — `packer pack images`: JPEG files into a dataset.
 *
 * Sources (pack_src.h):
 *   SRC DEST             ImageFolder: each sub-folder of SRC is a class, ids
 *                        in sorted (strcmp) folder-name order, the names the
 *                        label table; every file below a class folder, in
 *                        (class, relative path) order, so packing is
 *                        deterministic; an empty class folder is still a
 *                        class. Links to folders are followed only with
 *                        --follow-links, and then each folder once.
 *   --list FILE [SRC] DEST
 *                        one sample per line, "path<TAB>label[<TAB>name]",
 *                        in list order. Paths are relative to SRC, or to the
 *                        list file's folder when SRC is omitted.
 * The "names" database holds each sample's relative path. With --shard-size
 * (or --order shuffled) the samples are written in a permutation of that
 * order seeded by --order-seed (pack_order.h), applied to the list before
 * any file is read; --order walk keeps the order above.
 *
 * Tiling (--restart, default auto): every JPEG is rewritten with restart
 * intervals on a grid (media/jpeg_tiles.h) by lossless transcoding, so that
 * feederd can decode a crop's intervals instead of the whole image; one
 * that cannot be transcoded (12-bit, damaged) is stored as it is. Records
 * say whether they are tiled (dsformat.h, version 3), the header what the
 * sources weighed.
 *
 * Data path: pack_reader keeps many io_uring reads in flight, refusing a
 * file over --max-file-size from its size and a non-JPEG from its first
 * bytes (jpeg_sniff), before reading either whole; the main thread takes
 * files in index order, computes the CRC-32C and appends to the LMDB
 * writer, committing every few MB. With tiling or --resize-shorter,
 * --threads workers transcode or decode/resize/encode (jpeg_resize.c) while
 * the main thread keeps reading ahead and writes results in order; with
 * --restart none and no resize, files are stored as they are and read
 * straight into the records' LMDB-reserved space (the reader's direct
 * mode: it opens, sniffs and asks for read-ahead; no staging copy). */
#include "packer.h"

#include "pack_args.h"
#include "pack_dest.h"
#include "pack_msg.h"
#include "pack_order.h"
#include "pack_progress.h"
#include "pack_reader.h"
#include "pack_src.h"
#include "pack_writer.h"

#include "crc32c.h"
#include "dsstore.h"
#include "jpeg_decode.h"
#include "jpeg_resize.h"
#include "jpeg_tiles.h"
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Commit small transactions: LMDB writes a transaction's pages (its own
 * malloc'd copies) at commit, so a few MB of them are still in cache
 * when written, and their memory is reused by the next one instead of
 * being faulted in fresh. At 256 MB the write of those cold pages was 43 %
 * of a --restart none pack into tmpfs (perf); at 4 MB it is 16 %. */
#define COMMIT_BYTES ((uint64_t)4 << 20)

/* ---- writing ---- */

/* Kick the disk every this many bytes (see pack_dest_writeback). */
#define WRITEBACK_BYTES ((uint64_t)32 << 20)

struct packer {
	struct pack_writer *w;
	struct dsformat_header hdr; /* every shard's; the totals set at the end */
	struct pack_dest *dst;
	uint64_t since_writeback;
	const char *src;
	const char *list; /* --list FILE, or NULL */
	const struct pack_src *in;
	uint64_t next; /* index of the next stored sample */
	uint64_t since_commit;
	uint64_t bytes;
	uint64_t source_bytes; /* of the stored samples' files */
	uint64_t tiled;
	uint64_t untiled; /* tiling asked for, the JPEG kept as it was */
	uint64_t skipped;
	int strict;
	struct pack_progress prog;
};

/* A file that cannot be packed: warn and skip, or with --strict fail. */
static int bad_file(struct packer *pk, const char *path, const char *why, char *err, size_t errlen)
{
	if (pk->strict)
		return status_fail(err, errlen, FEEDER_EINVAL, "%s/%s: %s (--strict)", pk->src,
				   path, why);
	pack_warn("%s/%s: %s, skipped", pk->src, path, why);
	pk->skipped++;
	return 0;
}

/* A file the reader could not give (error) or that cannot be packed (why).
 * One outside SRC under --confine is the list's fault, not the file's:
 * fatal, naming the list's line. */
static int refused(struct packer *pk, const struct pack_read *f, int error, const char *why,
		   char *err, size_t errlen)
{
	if (error != -EXDEV)
		return bad_file(pk, f->path, why, err, errlen);
	if (pk->list)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "%s:%lu: '%s' resolves outside %s (--confine)", pk->list,
				   pk->in->lines[f->index], f->path, pk->src);
	return status_fail(err, errlen, FEEDER_EINVAL, "%s/%s: resolves outside %s (--confine)",
			   pk->src, f->path, pk->src);
}

/* After a sample's record is written: its name, the counts, and the
 * periodic writeback and commit. */
static int stored(struct packer *pk, size_t len, uint32_t restart, size_t src_len, const char *name,
		  char *err, size_t errlen)
{
	int rc = pack_writer_put_name(pk->w, pk->next, name, err, errlen);
	if (rc)
		return rc;
	pk->next++;
	pk->bytes += len;
	pk->source_bytes += src_len;
	pk->tiled += restart != 0;
	pk->since_commit += len;
	pk->since_writeback += len;
	if (pk->since_writeback >= WRITEBACK_BYTES) {
		pk->since_writeback = 0;
		pack_dest_writeback(pk->dst);
	}
	if (pk->since_commit >= COMMIT_BYTES) {
		pk->since_commit = 0;
		if ((rc = pack_writer_commit(pk->w, err, errlen)))
			return rc;
	}
	return 0;
}

/* Store one sample: len bytes at data (restart: its interval when tiled, 0
 * when not) made from a source file of src_len bytes. */
static int put_one(struct packer *pk, const uint8_t *data, size_t len, uint32_t restart,
		   size_t src_len, uint32_t label, const char *name, char *err, size_t errlen)
{
	struct dsformat_sample s = { .label = label,
				     .payload_len = (uint32_t)len,
				     .crc = crc32c(0, data, len),
				     .flags = restart ? DSFORMAT_FLAG_TILED : 0,
				     .aux = restart };
	int rc = pack_writer_put_sample(pk->w, pk->next, &s, data, src_len, err, errlen);
	return rc ? rc : stored(pk, len, restart, src_len, name, err, errlen);
}

/* A file stored as it is, read by the reader straight into the record's
 * reserved space (no staging copy); the CRC is taken there, while the
 * bytes are still in cache. */
struct direct_fill {
	struct pack_reader *rd;
	const struct pack_read *f;
	int error; /* the file's own failure, for a warning */
};

static int fill_from_file(void *ctx, uint8_t *payload, size_t len, struct dsformat_sample *s)
{
	struct direct_fill *d = ctx;
	d->error = pack_reader_read_into(d->rd, d->f, payload);
	if (d->error)
		return d->error;
	s->crc = crc32c(0, payload, len);
	return 0;
}

static int put_direct(struct packer *pk, struct pack_reader *rd, const struct pack_read *f,
		      uint32_t label, char *err, size_t errlen)
{
	struct dsformat_sample s = { .label = label, .payload_len = (uint32_t)f->len };
	struct direct_fill d = { .rd = rd, .f = f };
	int rc = pack_writer_put_sample_filled(pk->w, pk->next, &s, fill_from_file, &d, f->len, err,
					       errlen);
	if (rc && rc == d.error) /* the file's fault, not the store's */
		return bad_file(pk, f->path, pack_reader_strerror(rd, d.error), err, errlen);
	return rc ? rc : stored(pk, f->len, 0, f->len, f->path, err, errlen);
}

static int pack_plain(struct packer *pk, struct pack_reader *rd, const struct pack_src *l,
		      char *err, size_t errlen)
{
	struct pack_read f;
	int rc;
	while ((rc = pack_reader_next(rd, &f, err, errlen)) == 1) {
		if (f.error) /* the reader's sniff refused non-JPEGs (jpeg_sniff) */
			rc = refused(pk, &f, f.error, pack_reader_strerror(rd, f.error), err,
				     errlen);
		else
			rc = put_direct(pk, rd, &f, l->labels[f.index], err, errlen);
		pack_progress_add(&pk->prog, 1, f.len);
		pack_reader_release(rd, &f);
		if (rc)
			return rc;
	}
	return rc;
}

/* ---- transcode and resize workers ---- */

enum { JOB_QUEUED, JOB_DONE };

struct job {
	struct pack_read f;
	int state;
	int status; /* 0 rewritten (res), 1 keep the original (why: the reason
		       tiling was not done, if asked), < 0 bad file */
	struct jpeg_resize_result res;
	char why[200];
};

struct pool {
	const struct pack_reader *rd;
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct job *jobs;
	uint64_t cap, pushed, taken, head;
	int stop;
	unsigned shorter;
	int quality;
	struct jpeg_tiles_policy tiles;
};

/* Tile a JPEG kept at its size: 0 with j->res set, or 1 (kept as it is, the
 * reason in j->why), or -ENOMEM. */
static int tile_job(struct jpeg_tiler *t, const struct pool *p, struct job *j)
{
	struct jpeg_tiles_result r;
	int rc =
		jpeg_tiles_transcode(t, j->f.data, j->f.len, &p->tiles, &r, j->why, sizeof(j->why));
	if (rc)
		return rc;
	j->res.data = r.data;
	j->res.len = r.len;
	j->res.restart = r.restart;
	return 0;
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	struct jpeg_resizer *z = NULL;
	struct jpeg_tiler *t = NULL;
	char zerr[200];
	int zrc = p->shorter ? jpeg_resizer_create(&z, zerr, sizeof(zerr))
			     : jpeg_tiler_create(&t, zerr, sizeof(zerr));
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->taken == p->pushed && !p->stop)
			pthread_cond_wait(&p->work, &p->mu);
		if (p->taken == p->pushed)
			break;
		struct job *j = &p->jobs[p->taken++ % p->cap];
		pthread_mutex_unlock(&p->mu);
		if (j->f.error) {
			j->status = j->f.error;
			snprintf(j->why, sizeof(j->why), "%s",
				 pack_reader_strerror(p->rd, j->f.error));
		} else if (zrc) {
			j->status = zrc;
			snprintf(j->why, sizeof(j->why), "%s", zerr);
		} else if (p->shorter) {
			j->status = jpeg_resize(z, j->f.data, j->f.len, p->shorter, p->quality,
						&p->tiles, &j->res, j->why, sizeof(j->why));
			if (j->status == 1 && j->res.data)
				j->status = 0; /* kept at its size, tiled */
		} else {
			j->status = tile_job(t, p, j);
		}
		pthread_mutex_lock(&p->mu);
		j->state = JOB_DONE;
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	jpeg_resizer_destroy(z);
	jpeg_tiler_destroy(t);
	return NULL;
}

static int write_job(struct packer *pk, struct job *j, const struct pack_src *l, int tiling,
		     char *err, size_t errlen)
{
	if (j->status == -ENOMEM) /* the machine's problem, not the file's */
		return status_fail(err, errlen, -ENOMEM, "%s/%s: %s", pk->src, j->f.path, j->why);
	if (j->status < 0)
		return refused(pk, &j->f, j->f.error, j->why, err, errlen);
	uint32_t label = l->labels[j->f.index];
	if (j->status == 1) {
		if (tiling) {
			pk->untiled++;
			if (pk->prog.verbose)
				pack_warn("%s/%s: stored as it is, not tiled: %s", pk->src,
					  j->f.path, j->why);
		}
		return put_one(pk, j->f.data, j->f.len, 0, j->f.len, label, j->f.path, err, errlen);
	}
	return put_one(pk, j->res.data, j->res.len, j->res.restart, j->f.len, label, j->f.path, err,
		       errlen);
}

static int pack_rewritten(struct packer *pk, struct pack_reader *rd, const struct pack_src *l,
			  unsigned threads, unsigned shorter, int quality,
			  const struct jpeg_tiles_policy *tiles, char *err, size_t errlen)
{
	struct pool p = { .rd = rd,
			  .cap = pack_reader_depth(rd) - 1,
			  .shorter = shorter,
			  .quality = quality,
			  .tiles = *tiles };
	int tiling = tiles->mcus || tiles->bytes;
	pthread_t *tids = calloc(threads, sizeof(*tids));
	p.jobs = calloc(p.cap, sizeof(*p.jobs));
	if (!tids || !p.jobs) {
		free(tids);
		free(p.jobs);
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	}
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.work, NULL);
	pthread_cond_init(&p.done, NULL);
	unsigned started = 0;
	int rc = 0;
	for (; started < threads; started++)
		if ((rc = pthread_create(&tids[started], NULL, worker, &p)) != 0) {
			rc = status_fail(err, errlen, -rc, "cannot start a worker thread: %s",
					 strerror(rc));
			break;
		}
	int more = 1;
	pthread_mutex_lock(&p.mu);
	while (!rc) {
		/* Write every finished job at the head, in order. */
		while (p.head < p.pushed && p.jobs[p.head % p.cap].state == JOB_DONE) {
			struct job *j = &p.jobs[p.head % p.cap];
			pthread_mutex_unlock(&p.mu);
			rc = write_job(pk, j, l, tiling, err, errlen);
			pack_progress_add(&pk->prog, 1, j->f.len);
			pack_reader_release(rd, &j->f);
			free(j->res.data);
			j->res.data = NULL;
			pthread_mutex_lock(&p.mu);
			p.head++;
			if (rc)
				break;
		}
		if (rc)
			break;
		if (more && p.pushed - p.head < p.cap) {
			struct pack_read f;
			pthread_mutex_unlock(&p.mu);
			int r = pack_reader_next(rd, &f, err, errlen);
			pthread_mutex_lock(&p.mu);
			if (r < 0) {
				rc = r;
				break;
			}
			if (r == 0) {
				more = 0;
				continue;
			}
			struct job *j = &p.jobs[p.pushed % p.cap];
			memset(j, 0, sizeof(*j));
			j->f = f;
			j->state = JOB_QUEUED;
			p.pushed++;
			pthread_cond_signal(&p.work);
			continue;
		}
		if (!more && p.head == p.pushed)
			break;
		pthread_cond_wait(&p.done, &p.mu);
	}
	p.stop = 1;
	/* On an error, let workers drain what is queued; their results are
	 * dropped below. */
	pthread_cond_broadcast(&p.work);
	pthread_mutex_unlock(&p.mu);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	for (uint64_t k = p.head; k < p.pushed; k++) {
		struct job *j = &p.jobs[k % p.cap];
		pack_reader_release(rd, &j->f);
		free(j->res.data);
	}
	pthread_cond_destroy(&p.work);
	pthread_cond_destroy(&p.done);
	pthread_mutex_destroy(&p.mu);
	free(p.jobs);
	free(tids);
	return rc;
}

/* ---- command ---- */

#define CMD "pack images"

static const char usage_line[] =
	"usage: packer pack images [--restart auto|none|MCUS] [--resize-shorter N --quality Q] "
	"[--threads N] [--follow-links] [--max-file-size SIZE] [--shard-size SIZE] "
	"[--order shuffled|walk] [--order-seed N] [--confine] [--strict] [--force] [-v] "
	"(SRC | --list FILE [SRC]) DEST";

/* The command line of pack images. */
struct images_args {
	const char *list, *src, *dest;
	unsigned long long shorter, quality, threads, depth, max_file, shard_size;
	int strict, force, verbose, follow_links, confine, help;
	int shuffled; /* --order, settled */
	struct pack_order_args order;
	struct jpeg_tiles_policy tiles;
	char srcbuf[PATH_MAX];
};

/* --restart auto|none|MCUS into a struct jpeg_tiles_policy. */
static int parse_restart(const char *arg, void *dst, char *err, size_t errlen)
{
	struct jpeg_tiles_policy *tiles = dst;
	unsigned long long mcus;
	if (!strcmp(arg, "auto"))
		*tiles = (struct jpeg_tiles_policy){ 0, JPEG_TILES_BYTES };
	else if (!strcmp(arg, "none"))
		*tiles = (struct jpeg_tiles_policy){ 0, 0 };
	else if (!argtab_parse_uint(arg, 1, 4096, &mcus))
		*tiles = (struct jpeg_tiles_policy){ (unsigned)mcus, 0 };
	else
		return status_fail(err, errlen, -EINVAL,
				   "is not auto, none or a number of MCUs in 1..4096");
	return 0;
}

#define IMAGES_TABLE_ROWS 18

/* The options of pack images, their values going to a. */
static void images_table(struct images_args *a, struct argtab tab[IMAGES_TABLE_ROWS])
{
	const struct argtab t[IMAGES_TABLE_ROWS] = {
		ARGTAB_STRING("list", 0, &a->list, "FILE",
			      "pack the files listed in FILE (path<TAB>label[<TAB>name])"),
		ARGTAB_FUNC("restart", 0, &a->tiles, parse_restart, "auto|none|MCUS",
			    "tile each JPEG by restart intervals, losslessly, so feederd\n"
			    "decodes only a crop's intervals (default auto: ~256 coded\n"
			    "bytes an interval; MCUS: that many MCUs; none: as is)"),
		ARGTAB_INT("resize-shorter", 0, &a->shorter, 1, 65535, "N",
			   "pre-resize so the shorter side is N pixels"),
		ARGTAB_INT("quality", 0, &a->quality, 1, 100, "Q",
			   "JPEG quality of resized images (1-100, default 90)"),
		ARGTAB_INT("threads", 0, &a->threads, 1, 256, "N",
			   "transcode/resize worker threads (default: online CPUs)"),
		ARGTAB_INT("depth", 0, &a->depth, 32, 4096, "N", "reads in flight (default 64)"),
		ARGTAB_FLAG("follow-links", 0, &a->follow_links,
			    "follow symbolic links to folders (each folder once)"),
		ARGTAB_SIZE("max-file-size", 0, &a->max_file, 1, DSFORMAT_MAX_PAYLOAD, "SIZE",
			    "skip larger files unread (default 64M; K, M, G)"),
		ARGTAB_SIZE("shard-size", 0, &a->shard_size, 1, PACK_MAX_SHARD_SIZE, "SIZE",
			    "write DEST as shard files of about SIZE bytes of records\n"
			    "each and a manifest (K, M, G, T; default: one data.mdb)"),
		PACK_ORDER_ROWS(&a->order, "write the samples in a seeded random order of all the\n"
					   "files, or in the order they are walked or listed\n"
					   "(default: shuffled with --shard-size, else walk)"),
		ARGTAB_FLAG("confine", 0, &a->confine,
			    "every file must resolve inside SRC (symbolic links and ..\n"
			    "included; absolute list paths are refused): else fatal"),
		ARGTAB_FLAG("strict", 0, &a->strict,
			    "a bad or unreadable file is fatal, not skipped"),
		ARGTAB_FLAG("force", 0, &a->force, "replace DEST if it exists"),
		ARGTAB_FLAG("verbose", 'v', &a->verbose,
			    "progress lines even when stderr is not a terminal"),
		ARGTAB_FLAG("help", 'h', &a->help, "this text"),
		ARGTAB_END,
	};
	memcpy(tab, t, sizeof t);
}

void pack_images_help(FILE *f)
{
	struct images_args a;
	struct argtab tab[IMAGES_TABLE_ROWS];
	images_table(&a, tab);
	argtab_help(f, tab);
}

/* SRC of --list FILE [SRC] DEST without SRC: FILE's folder. */
static void images_list_folder(struct images_args *a)
{
	const char *slash = strrchr(a->list, '/');
	snprintf(a->srcbuf, sizeof(a->srcbuf), "%.*s", slash ? (int)(slash - a->list) : 1,
		 slash ? a->list : ".");
	if (slash == a->list)
		snprintf(a->srcbuf, sizeof(a->srcbuf), "/");
	a->src = a->srcbuf;
}

/* 0, -1 after --help, or PACK_EXIT_USAGE (said). */
static int images_parse_args(int argc, char **argv, struct images_args *a)
{
	struct argtab tab[IMAGES_TABLE_ROWS];
	char *ops[2];
	int n;
	memset(a, 0, sizeof(*a));
	a->quality = 90;
	a->depth = 64;
	a->max_file = PACK_MAX_FILE_DEFAULT;
	a->tiles = (struct jpeg_tiles_policy){ 0, JPEG_TILES_BYTES };
	images_table(a, tab);
	int rc = pack_args_parse(CMD, tab, argc, argv, ops, 2, &n);
	if (rc)
		return rc;
	if (a->help) {
		puts(usage_line);
		argtab_help(stdout, tab);
		return -1;
	}
	if (n < (a->list ? 1 : 2))
		return pack_usage_error(CMD, "%s",
					a->list ? "missing DEST" : "missing SRC or DEST");
	a->dest = ops[n - 1];
	if (n == 2)
		a->src = ops[0];
	else
		images_list_folder(a);
	if (!a->threads) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		a->threads = cpus > 0 ? (unsigned long long)cpus : 1;
	}
	if (a->shorter == 0 && a->quality != 90)
		pack_warn("--quality has no effect without --resize-shorter");
	a->shuffled = pack_order_shuffled(&a->order, a->shard_size != 0, tab);
	return 0;
}

/* The files to pack: --list FILE's, or the class folders' under SRC
 * (dirfd). 0, or PACK_EXIT_USAGE / PACK_EXIT_FAIL (said). */
static int images_sources(const struct images_args *a, int dirfd, struct pack_src *l)
{
	char err[1024];
	int rc;
	if (a->list) {
		rc = pack_src_read_list(a->list, l, err, sizeof(err));
	} else {
		struct pack_tree_rules rules = { .class_noun = "class",
						 .sample_noun = "files",
						 .keep_empty = 1,
						 .follow_links = a->follow_links };
		rc = pack_src_scan_tree(dirfd, a->src, &rules, l, err, sizeof(err));
		if (!rc && l->n == 0)
			rc = status_fail(err, sizeof(err), FEEDER_EINVAL,
					 "%s: no files in its %u class folders", a->src,
					 l->nclasses);
	}
	if (!rc)
		return 0;
	pack_error("pack images: %s", err);
	return rc == -ENOMEM ? PACK_EXIT_FAIL : PACK_EXIT_USAGE;
}

/* Read, rewrite if asked and store every file of l, in order. 0, or
 * PACK_EXIT_USAGE / PACK_EXIT_FAIL (said). */
static int images_store(const struct images_args *a, struct packer *pk, int dirfd,
			const struct pack_src *l)
{
	char err[1024];
	size_t errlen = sizeof(err);
	/* Non-JPEGs are refused from their first bytes, files over
	 * --max-file-size from their size: neither is read whole. */
	int rewrite = a->shorter || a->tiles.mcus || a->tiles.bytes;
	struct pack_reader_opts ropts = { .depth = (unsigned)a->depth,
					  .max_file = (size_t)a->max_file,
					  .sniff = jpeg_sniff,
					  .sniff_fail = "not a JPEG file",
					  .direct = !rewrite,
					  .beneath = a->confine };
	struct pack_reader *rd = NULL;
	int rc = pack_reader_open(dirfd, (const char *const *)l->paths, l->n, &ropts, &rd, err,
				  errlen);
	if (rc) {
		pack_error("pack images: %s", err);
		return PACK_EXIT_FAIL;
	}
	pack_progress_init(&pk->prog, l->n, a->verbose);
	if (rewrite)
		rc = pack_rewritten(pk, rd, l, (unsigned)a->threads, (unsigned)a->shorter,
				    (int)a->quality, &a->tiles, err, errlen);
	else
		rc = pack_plain(pk, rd, l, err, errlen);
	pack_reader_close(rd);
	if (rc) {
		pack_error("pack images: %s", err);
		return rc == FEEDER_EINVAL ? PACK_EXIT_USAGE : PACK_EXIT_FAIL;
	}
	pack_progress_done(&pk->prog);
	return 0;
}

/* The header every shard carries (its counts set by the writer). */
static void images_header(struct packer *pk, const struct pack_src *l, int argc, char **argv)
{
	pk->hdr = (struct dsformat_header){ .version = DSFORMAT_VERSION,
					    .kind = DSFORMAT_KIND_JPEG,
					    .classes = l->nclasses };
	snprintf(pk->hdr.packer_version, sizeof(pk->hdr.packer_version), "packer %s",
		 FEEDER_VERSION);
	pack_options_string(argc, argv, 1, pk->hdr.options, sizeof(pk->hdr.options));
}

/* The labels and the header; the dataset then renamed into place. */
static int images_finish(struct packer *pk, char *err, size_t errlen)
{
	struct dsformat_header h = pk->hdr;
	h.samples = pk->next;
	h.source_bytes = pk->source_bytes;
	h.tiled = pk->tiled;
	int rc = pack_writer_finish(pk->w, &h, err, errlen);
	pk->w = NULL;
	return rc ? rc : pack_dest_commit(pk->dst, err, errlen);
}

static void images_report(const struct images_args *a, const struct packer *pk, unsigned classes)
{
	if (!a->verbose && !isatty(STDERR_FILENO))
		return;
	fprintf(stderr,
		"packer: packed %llu images (%u classes, %llu bytes) into %s, %llu skipped\n",
		(unsigned long long)pk->next, classes, (unsigned long long)pk->bytes, pk->dst->dest,
		(unsigned long long)pk->skipped);
	if (a->tiles.mcus || a->tiles.bytes)
		fprintf(stderr,
			"packer: %llu tiled by restart intervals, %llu stored as they were; "
			"%llu bytes from %llu of sources (%+.2f %%)\n",
			(unsigned long long)pk->tiled, (unsigned long long)pk->untiled,
			(unsigned long long)pk->bytes, (unsigned long long)pk->source_bytes,
			pk->source_bytes ? 100.0 * ((double)pk->bytes / pk->source_bytes - 1)
					 : 0.0);
}

/* Pack l into DEST. 0, or PACK_EXIT_USAGE / PACK_EXIT_FAIL (said). */
static int images_pack(const struct images_args *a, struct packer *pk, int dirfd,
		       const struct pack_src *l, int argc, char **argv)
{
	char err[1024];
	int rc = pack_dest_begin(pk->dst, a->dest, a->force, err, sizeof(err));
	if (rc) {
		pack_error("pack images: %s", err);
		return rc == -EEXIST || rc == -EINVAL || rc == -ENOENT ? PACK_EXIT_USAGE
								       : PACK_EXIT_FAIL;
	}
	images_header(pk, l, argc, argv);
	if ((rc = pack_writer_open(pk->dst, a->shard_size, (size_t)1 << 30, &pk->hdr,
				   (const char *const *)l->classes, &pk->w, err, sizeof(err)))) {
		pack_error("pack images: %s", err);
		return PACK_EXIT_FAIL;
	}
	if ((rc = images_store(a, pk, dirfd, l)))
		return rc;
	if (pk->next == 0) {
		pack_error("pack images: %s: none of the %zu files is a readable JPEG", a->src,
			   l->n);
		return PACK_EXIT_USAGE;
	}
	if ((rc = images_finish(pk, err, sizeof(err)))) {
		pack_error("pack images: %s", err);
		return PACK_EXIT_FAIL;
	}
	images_report(a, pk, l->nclasses);
	return 0;
}

int pack_images_main(int argc, char **argv)
{
	struct images_args a;
	int status = images_parse_args(argc, argv, &a);
	if (status)
		return status < 0 ? 0 : status;
	struct pack_src l = { 0 };
	struct pack_dest dst = { .data_fd = -1 };
	struct packer pk = {
		.src = a.src, .list = a.list, .in = &l, .strict = a.strict, .dst = &dst
	};
	int dirfd = open(a.src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		pack_error("pack images: %s: %s", a.src, strerror(errno));
		return PACK_EXIT_USAGE;
	}
	status = images_sources(&a, dirfd, &l);
	if (!status && a.shuffled)
		pack_order_src(&l, a.order.seed);
	if (!status)
		status = images_pack(&a, &pk, dirfd, &l, argc, argv);
	if (pk.w)
		pack_writer_abort(pk.w);
	pack_dest_abort(&dst);
	pack_src_free(&l);
	close(dirfd);
	return status;
}
