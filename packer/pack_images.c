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
 * The "names" database holds each sample's relative path.
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
#include "pack_progress.h"
#include "pack_reader.h"
#include "pack_src.h"

#include "crc32c.h"
#include "dsstore.h"
#include "jpeg_decode.h"
#include "jpeg_resize.h"
#include "jpeg_tiles.h"
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
	struct dsstore_writer *w;
	struct pack_dest *dst;
	uint64_t since_writeback;
	const char *src;
	const char *list;     /* --list FILE, or NULL */
	const struct pack_src *in;
	uint64_t next;        /* index of the next stored sample */
	uint64_t since_commit;
	uint64_t bytes;
	uint64_t source_bytes; /* of the stored samples' files */
	uint64_t tiled;
	uint64_t untiled;      /* tiling asked for, the JPEG kept as it was */
	uint64_t skipped;
	int strict;
	struct pack_progress prog;
};

/* A file that cannot be packed: warn and skip, or with --strict fail. */
static int bad_file(struct packer *pk, const char *path, const char *why, char *err, size_t errlen)
{
	if (pk->strict)
		return status_fail(err, errlen, FEEDER_EINVAL, "%s/%s: %s (--strict)", pk->src, path, why);
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
		return status_fail(err, errlen, FEEDER_EINVAL, "%s:%lu: '%s' resolves outside %s (--confine)",
				   pk->list, pk->in->lines[f->index], f->path, pk->src);
	return status_fail(err, errlen, FEEDER_EINVAL, "%s/%s: resolves outside %s (--confine)",
			   pk->src, f->path, pk->src);
}

/* After a sample's record is written: its name, the counts, and the
 * periodic writeback and commit. */
static int stored(struct packer *pk, size_t len, uint32_t restart, size_t src_len,
		  const char *name, char *err, size_t errlen)
{
	int rc = dsstore_writer_put_name(pk->w, pk->next, name, err, errlen);
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
		if ((rc = dsstore_writer_commit(pk->w, err, errlen)))
			return rc;
	}
	return 0;
}

/* Store one sample: len bytes at data (restart: its interval when tiled, 0
 * when not) made from a source file of src_len bytes. */
static int put_one(struct packer *pk, const uint8_t *data, size_t len, uint32_t restart,
		   size_t src_len, uint32_t label, const char *name, char *err, size_t errlen)
{
	struct dsformat_sample s = { .label = label, .payload_len = (uint32_t)len,
				     .crc = crc32c(0, data, len),
				     .flags = restart ? DSFORMAT_FLAG_TILED : 0, .aux = restart };
	int rc = dsstore_writer_put_sample(pk->w, pk->next, &s, data, err, errlen);
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
	int rc = dsstore_writer_put_sample_filled(pk->w, pk->next, &s, fill_from_file, &d, err,
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
			rc = refused(pk, &f, f.error, pack_reader_strerror(rd, f.error), err, errlen);
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
	int rc = jpeg_tiles_transcode(t, j->f.data, j->f.len, &p->tiles, &r, j->why, sizeof(j->why));
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
			snprintf(j->why, sizeof(j->why), "%s", pack_reader_strerror(p->rd, j->f.error));
		} else if (zrc) {
			j->status = zrc;
			snprintf(j->why, sizeof(j->why), "%s", zerr);
		} else if (p->shorter) {
			j->status = jpeg_resize(z, j->f.data, j->f.len, p->shorter, p->quality, &p->tiles,
						&j->res, j->why, sizeof(j->why));
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
				pack_warn("%s/%s: stored as it is, not tiled: %s", pk->src, j->f.path,
					  j->why);
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
	struct pool p = { .rd = rd, .cap = pack_reader_depth(rd) - 1, .shorter = shorter,
			  .quality = quality, .tiles = *tiles };
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
			rc = status_fail(err, errlen, -rc, "cannot start a worker thread: %s", strerror(rc));
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
	"[--threads N] [--follow-links] [--max-file-size SIZE] [--confine] [--strict] [--force] [-v] "
	"(SRC | --list FILE [SRC]) DEST";

int pack_images_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "list", required_argument, NULL, 'l' },
		{ "resize-shorter", required_argument, NULL, 'r' },
		{ "restart", required_argument, NULL, 'R' },
		{ "quality", required_argument, NULL, 'q' },
		{ "threads", required_argument, NULL, 't' },
		{ "depth", required_argument, NULL, 'd' },
		{ "strict", no_argument, NULL, 's' },
		{ "follow-links", no_argument, NULL, 'L' },
		{ "confine", no_argument, NULL, 'C' },
		{ "max-file-size", required_argument, NULL, 'm' },
		{ "force", no_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *list = NULL;
	unsigned long long shorter = 0, quality = 90, threads = 0, depth = 64;
	unsigned long long max_file = PACK_MAX_FILE_DEFAULT;
	int strict = 0, force = 0, verbose = 0, follow_links = 0, confine = 0, c;
	struct jpeg_tiles_policy tiles = { 0, JPEG_TILES_BYTES };
	unsigned long long mcus;
	optind = 0;
	while ((c = pack_getopt(CMD, argc, argv, "vh", opts)) != -1) {
		switch (c) {
		case 'l': list = optarg; break;
		case 'r':
			if (pack_parse_uint(optarg, 1, 65535, &shorter))
				return pack_usage_error(CMD, "--resize-shorter '%s' is not an integer in 1..65535", optarg);
			break;
		case 'q':
			if (pack_parse_uint(optarg, 1, 100, &quality))
				return pack_usage_error(CMD, "--quality '%s' is not an integer in 1..100", optarg);
			break;
		case 't':
			if (pack_parse_uint(optarg, 1, 256, &threads))
				return pack_usage_error(CMD, "--threads '%s' is not an integer in 1..256", optarg);
			break;
		case 'd':
			if (pack_parse_uint(optarg, 32, 4096, &depth))
				return pack_usage_error(CMD, "--depth '%s' is not an integer in 32..4096", optarg);
			break;
		case 'R':
			if (!strcmp(optarg, "auto"))
				tiles = (struct jpeg_tiles_policy){ 0, JPEG_TILES_BYTES };
			else if (!strcmp(optarg, "none"))
				tiles = (struct jpeg_tiles_policy){ 0, 0 };
			else if (!pack_parse_uint(optarg, 1, 4096, &mcus))
				tiles = (struct jpeg_tiles_policy){ (unsigned)mcus, 0 };
			else
				return pack_usage_error(CMD, "--restart '%s' is not auto, none or a number of "
							     "MCUs in 1..4096", optarg);
			break;
		case 's': strict = 1; break;
		case 'L': follow_links = 1; break;
		case 'C': confine = 1; break;
		case 'm':
			if (pack_parse_size(optarg, 1, DSFORMAT_MAX_PAYLOAD, &max_file))
				return pack_usage_error(CMD, "--max-file-size '%s' is not a size from 1 to 1G (e.g. 64M)", optarg);
			break;
		case 'f': force = 1; break;
		case 'v': verbose = 1; break;
		case 'h':
			puts(usage_line);
			puts("  see 'packer --help' for the options; --depth N sets the number of reads in flight (default 64)");
			return 0;
		default: return PACK_EXIT_USAGE;
		}
	}
	int nops = argc - optind;
	if (nops < (list ? 1 : 2))
		return pack_usage_error(CMD, "%s", list ? "missing DEST" : "missing SRC or DEST");
	if (nops > 2)
		return pack_usage_error(CMD, "unexpected argument '%s'", argv[optind + 2]);
	const char *dest = argv[argc - 1];
	char srcbuf[PATH_MAX];
	const char *src;
	if (nops == 2) {
		src = argv[optind];
	} else {
		const char *slash = strrchr(list, '/');
		snprintf(srcbuf, sizeof(srcbuf), "%.*s", slash ? (int)(slash - list) : 1, slash ? list : ".");
		if (slash == list)
			snprintf(srcbuf, sizeof(srcbuf), "/");
		src = srcbuf;
	}
	if (!threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n > 0 ? (unsigned long long)n : 1;
	}
	if (shorter == 0 && quality != 90)
		pack_warn("--quality has no effect without --resize-shorter");

	char err[1024];
	int status = PACK_EXIT_FAIL, rc;
	struct pack_src l = { 0 };
	struct pack_dest dst = { .data_fd = -1 };
	struct pack_reader *rd = NULL;
	struct packer pk = { .src = src, .list = list, .in = &l, .strict = strict, .dst = &dst };

	int dirfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		pack_error("pack images: %s: %s", src, strerror(errno));
		return PACK_EXIT_USAGE;
	}
	if (list) {
		rc = pack_src_read_list(list, &l, err, sizeof(err));
	} else {
		struct pack_tree_rules rules = { .class_noun = "class", .sample_noun = "files",
						 .keep_empty = 1, .follow_links = follow_links };
		rc = pack_src_scan_tree(dirfd, src, &rules, &l, err, sizeof(err));
		if (!rc && l.n == 0)
			rc = status_fail(err, sizeof(err), FEEDER_EINVAL,
					 "%s: no files in its %u class folders", src, l.nclasses);
	}
	if (rc) {
		pack_error("pack images: %s", err);
		status = rc == -ENOMEM ? PACK_EXIT_FAIL : PACK_EXIT_USAGE;
		goto out;
	}
	if ((rc = pack_dest_begin(&dst, dest, force, err, sizeof(err)))) {
		pack_error("pack images: %s", err);
		status = rc == -EEXIST || rc == -EINVAL || rc == -ENOENT ? PACK_EXIT_USAGE : PACK_EXIT_FAIL;
		goto out;
	}
	/* Non-JPEGs are refused from their first bytes, files over
	 * --max-file-size from their size: neither is read whole. */
	int rewrite = shorter || tiles.mcus || tiles.bytes;
	struct pack_reader_opts ropts = { .depth = (unsigned)depth, .max_file = (size_t)max_file,
					  .sniff = jpeg_sniff, .sniff_fail = "not a JPEG file",
					  .direct = !rewrite, .beneath = confine };
	if ((rc = dsstore_writer_open(dst.tmp, (size_t)1 << 30, &pk.w, err, sizeof(err))) ||
	    (rc = pack_reader_open(dirfd, (const char *const *)l.paths, l.n, &ropts, &rd, err,
				   sizeof(err)))) {
		pack_error("pack images: %s", err);
		goto out;
	}
	pack_progress_init(&pk.prog, l.n, verbose);
	if (rewrite)
		rc = pack_rewritten(&pk, rd, &l, (unsigned)threads, (unsigned)shorter, (int)quality,
				    &tiles, err, sizeof(err));
	else
		rc = pack_plain(&pk, rd, &l, err, sizeof(err));
	if (rc) {
		pack_error("pack images: %s", err);
		status = rc == FEEDER_EINVAL ? PACK_EXIT_USAGE : PACK_EXIT_FAIL;
		goto out;
	}
	pack_progress_done(&pk.prog);
	if (pk.next == 0) {
		pack_error("pack images: %s: none of the %zu files is a readable JPEG", src, l.n);
		status = PACK_EXIT_USAGE;
		goto out;
	}
	for (uint32_t k = 0; k < l.nclasses; k++)
		if ((rc = dsstore_writer_put_label(pk.w, k, l.classes[k], err, sizeof(err)))) {
			pack_error("pack images: %s", err);
			goto out;
		}
	struct dsformat_header h = { .version = DSFORMAT_VERSION, .kind = DSFORMAT_KIND_JPEG,
				     .samples = pk.next, .classes = l.nclasses,
				     .source_bytes = pk.source_bytes, .tiled = pk.tiled };
	snprintf(h.packer_version, sizeof(h.packer_version), "packer %s", FEEDER_VERSION);
	pack_options_string(argc, argv, 1, h.options, sizeof(h.options));
	rc = dsstore_writer_finish(pk.w, &h, err, sizeof(err));
	pk.w = NULL;
	if (rc || (rc = pack_dest_commit(&dst, err, sizeof(err)))) {
		pack_error("pack images: %s", err);
		goto out;
	}
	if (verbose || isatty(STDERR_FILENO)) {
		fprintf(stderr, "packer: packed %llu images (%u classes, %llu bytes) into %s, %llu skipped\n",
			(unsigned long long)pk.next, l.nclasses, (unsigned long long)pk.bytes, dst.dest,
			(unsigned long long)pk.skipped);
		if (tiles.mcus || tiles.bytes)
			fprintf(stderr, "packer: %llu tiled by restart intervals, %llu stored as they were; "
					"%llu bytes from %llu of sources (%+.2f %%)\n",
				(unsigned long long)pk.tiled, (unsigned long long)pk.untiled,
				(unsigned long long)pk.bytes, (unsigned long long)pk.source_bytes,
				pk.source_bytes ? 100.0 * ((double)pk.bytes / pk.source_bytes - 1) : 0.0);
	}
	status = 0;
out:
	pack_reader_close(rd);
	if (pk.w)
		dsstore_writer_abort(pk.w);
	pack_dest_abort(&dst);
	pack_src_free(&l);
	close(dirfd);
	return status;
}
