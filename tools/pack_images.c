/* pack_images.c — `packer pack images`: JPEG files into a dataset.
 *
 * Sources:
 *   SRC DEST             ImageFolder: each sub-folder of SRC is a class; class
 *                        ids follow the sorted (strcmp) folder names, which
 *                        form the label table; files (searched recursively
 *                        inside each class folder) are packed in (class,
 *                        relative path) order, so packing is deterministic.
 *                        Names starting with '.' are ignored, as are plain
 *                        files directly in SRC (with a warning).
 *   --list FILE [SRC] DEST
 *                        one sample per line, "path<TAB>label[<TAB>name]",
 *                        in list order. Paths are relative to SRC, or to the
 *                        list file's folder when SRC is omitted. Labels are
 *                        integers; classes = max label + 1; a class's name is
 *                        the optional third column (the same on every line
 *                        that gives one) or else its decimal id. Blank lines
 *                        and lines starting with '#' are skipped; CRLF is ok.
 * The "names" database holds each sample's relative path.
 *
 * Data path: pack_reader keeps many io_uring reads in flight; the main thread
 * takes files in index order, checks the JPEG magic, computes the CRC-32C and
 * appends to the LMDB writer, committing about every 256 MB. With
 * --resize-shorter, --threads workers decode/resize/encode (jpeg_resize.c)
 * while the main thread keeps reading ahead and writes results in order. */
#include "packer.h"

#include "pack_args.h"
#include "pack_dest.h"
#include "pack_msg.h"
#include "pack_progress.h"
#include "pack_reader.h"

#include "crc32c.h"
#include "dsstore.h"
#include "jpeg_resize.h"
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

#define COMMIT_BYTES ((uint64_t)256 << 20)
#define MAX_CLASSES (1u << 24)

struct srclist {
	char **paths;     /* relative to dirfd */
	uint32_t *labels;
	size_t n, cap;
	char **classes;   /* label table */
	uint32_t nclasses;
};

static void srclist_free(struct srclist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->paths[i]);
	free(l->paths);
	free(l->labels);
	for (uint32_t i = 0; i < l->nclasses; i++)
		free(l->classes[i]);
	free(l->classes);
	memset(l, 0, sizeof(*l));
}

static int srclist_add(struct srclist *l, const char *path, uint32_t label)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		char **p = realloc(l->paths, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		l->paths = p;
		uint32_t *lb = realloc(l->labels, cap * sizeof(*lb));
		if (!lb)
			return -ENOMEM;
		l->labels = lb;
		l->cap = cap;
	}
	if (!(l->paths[l->n] = strdup(path)))
		return -ENOMEM;
	l->labels[l->n++] = label;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- ImageFolder ---- */

/* Names with a one-byte type prefix (see walk_class), sorted by name. */
static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a + 1, *(char *const *)b + 1);
}

/* Append every file under dirfd/rel (recursively) with label, in sorted
 * order at each level. */
static int walk_class(int dirfd, const char *rel, uint32_t label, struct srclist *l,
		      char *err, size_t errlen, int depth)
{
	if (depth > 64)
		return status_fail(err, errlen, -ELOOP, "%s: folders nested too deep", rel);
	int fd = openat(dirfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return status_fail(err, errlen, -errno, "%s: %s", rel, strerror(errno));
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return status_fail(err, errlen, -errno, "%s: %s", rel, strerror(errno));
	}
	/* Each name carries its d_type in a leading byte, so that plain files
	 * (the usual case) need no stat. */
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			char **nn = realloc(names, cap * sizeof(*nn));
			if (!nn) {
				rc = -ENOMEM;
				break;
			}
			names = nn;
		}
		size_t len = strlen(e->d_name);
		if (!(names[n] = malloc(len + 2))) {
			rc = -ENOMEM;
			break;
		}
		names[n][0] = (char)(e->d_type == DT_REG ? 'f' : '?');
		memcpy(names[n] + 1, e->d_name, len + 1);
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_name);
	for (size_t i = 0; i < n && !rc; i++) {
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s", rel, names[i] + 1) >= (int)sizeof(path)) {
			rc = status_fail(err, errlen, -ENAMETOOLONG, "%s/%s: path too long", rel, names[i] + 1);
			break;
		}
		struct stat st;
		/* Follow symlinks: trees of links into a cache are common. */
		if (names[i][0] != 'f' && fstatat(dirfd, path, &st, 0) == 0 && S_ISDIR(st.st_mode))
			rc = walk_class(dirfd, path, label, l, err, errlen, depth + 1);
		else
			rc = srclist_add(l, path, label); /* unreadable ones fail at read */
	}
	if (rc == -ENOMEM)
		status_fail(err, errlen, rc, "out of memory listing %s", rel);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

static int scan_folder(int dirfd, const char *src, struct srclist *l, char *err, size_t errlen)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return status_fail(err, errlen, -errno, "%s: %s", src, strerror(errno));
	}
	size_t cap = 0;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, 0) != 0 || !S_ISDIR(st.st_mode)) {
			pack_warn("%s/%s: not in a class folder, ignored", src, e->d_name);
			continue;
		}
		if (l->nclasses == cap) {
			cap = cap ? cap * 2 : 64;
			char **nc = realloc(l->classes, cap * sizeof(*nc));
			if (!nc) {
				rc = -ENOMEM;
				break;
			}
			l->classes = nc;
		}
		if (!(l->classes[l->nclasses] = strdup(e->d_name))) {
			rc = -ENOMEM;
			break;
		}
		l->nclasses++;
	}
	closedir(d);
	if (rc)
		return status_fail(err, errlen, rc, "out of memory listing %s", src);
	if (l->nclasses == 0)
		return status_fail(err, errlen, FEEDER_EINVAL, "%s: no class folders (expected SRC/<class>/<image>)", src);
	qsort(l->classes, l->nclasses, sizeof(*l->classes), cmp_str);
	for (uint32_t c = 0; c < l->nclasses; c++)
		if ((rc = walk_class(dirfd, l->classes[c], c, l, err, errlen, 0)))
			return rc;
	if (l->n == 0)
		return status_fail(err, errlen, FEEDER_EINVAL, "%s: no files in its %u class folders", src,
				   l->nclasses);
	return 0;
}

/* ---- --list ---- */

static int scan_list(const char *file, struct srclist *l, char *err, size_t errlen)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return status_fail(err, errlen, -errno, "%s: %s", file, strerror(errno));
	char *line = NULL, **names = NULL;
	size_t lcap = 0, ncap = 0;
	ssize_t len;
	unsigned long lineno = 0;
	int64_t maxlabel = -1;
	int rc = 0;
	while ((len = getline(&line, &lcap, f)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (len == 0 || line[0] == '#')
			continue;
		if ((size_t)len != strlen(line)) {
			rc = status_fail(err, errlen, FEEDER_EINVAL, "%s:%lu: line contains a NUL byte", file, lineno);
			break;
		}
		char *tab = strchr(line, '\t');
		if (!tab) {
			rc = status_fail(err, errlen, FEEDER_EINVAL,
					 "%s:%lu: expected 'path<TAB>label', found no tab", file, lineno);
			break;
		}
		*tab = 0;
		char *lab = tab + 1, *name = strchr(lab, '\t');
		if (name)
			*name++ = 0;
		if (line[0] == 0) {
			rc = status_fail(err, errlen, FEEDER_EINVAL, "%s:%lu: empty path", file, lineno);
			break;
		}
		unsigned long long v;
		if (pack_parse_uint(lab, 0, MAX_CLASSES - 1, &v) != 0) {
			rc = status_fail(err, errlen, FEEDER_EINVAL,
					 "%s:%lu: label '%s' is not an integer in 0..%u", file, lineno, lab,
					 MAX_CLASSES - 1);
			break;
		}
		if (name && (!*name || strchr(name, '\t'))) {
			rc = status_fail(err, errlen, FEEDER_EINVAL,
					 "%s:%lu: class name column is empty or has a tab", file, lineno);
			break;
		}
		if (name) {
			if (v >= ncap) {
				size_t nc = ncap ? ncap : 64;
				while (nc <= v)
					nc *= 2;
				char **nn = realloc(names, nc * sizeof(*nn));
				if (!nn) {
					rc = -ENOMEM;
					break;
				}
				memset(nn + ncap, 0, (nc - ncap) * sizeof(*nn));
				names = nn;
				ncap = nc;
			}
			if (names[v] && strcmp(names[v], name) != 0) {
				rc = status_fail(err, errlen, FEEDER_EINVAL,
						 "%s:%lu: label %llu named '%s', earlier '%s'", file, lineno, v,
						 name, names[v]);
				break;
			}
			if (!names[v] && !(names[v] = strdup(name))) {
				rc = -ENOMEM;
				break;
			}
		}
		if ((int64_t)v > maxlabel)
			maxlabel = (int64_t)v;
		if ((rc = srclist_add(l, line, (uint32_t)v)))
			break;
	}
	if (!rc && ferror(f))
		rc = status_fail(err, errlen, -EIO, "%s: read error", file);
	fclose(f);
	free(line);
	if (rc == -ENOMEM)
		status_fail(err, errlen, rc, "out of memory reading %s", file);
	if (!rc && l->n == 0)
		rc = status_fail(err, errlen, FEEDER_EINVAL, "%s: the list has no entries", file);
	if (!rc) {
		l->nclasses = (uint32_t)(maxlabel + 1);
		l->classes = calloc(l->nclasses, sizeof(char *));
		if (!l->classes)
			rc = status_fail(err, errlen, -ENOMEM, "out of memory");
		for (uint32_t c = 0; !rc && c < l->nclasses; c++) {
			char num[16];
			snprintf(num, sizeof(num), "%u", c);
			l->classes[c] = strdup(c < ncap && names[c] ? names[c] : num);
			if (!l->classes[c])
				rc = status_fail(err, errlen, -ENOMEM, "out of memory");
		}
	}
	for (size_t i = 0; i < ncap; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* ---- writing ---- */

/* Kick the disk every this many bytes (see pack_dest_writeback). */
#define WRITEBACK_BYTES ((uint64_t)32 << 20)

struct packer {
	struct dsstore_writer *w;
	struct pack_dest *dst;
	uint64_t since_writeback;
	const char *src;
	uint64_t next;        /* index of the next stored sample */
	uint64_t since_commit;
	uint64_t bytes;
	uint64_t skipped;
	int strict;
	struct pack_progress prog;
};

/* The no-decode sanity check: SOI marker followed by another marker. */
static int looks_like_jpeg(const uint8_t *p, size_t len)
{
	return len >= 4 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF && p[3] >= 0xC0 && p[3] != 0xFF;
}

/* A file that cannot be packed: warn and skip, or with --strict fail. */
static int bad_file(struct packer *pk, const char *path, const char *why, char *err, size_t errlen)
{
	if (pk->strict)
		return status_fail(err, errlen, FEEDER_EINVAL, "%s/%s: %s (--strict)", pk->src, path, why);
	pack_warn("%s/%s: %s, skipped", pk->src, path, why);
	pk->skipped++;
	return 0;
}

static int put_one(struct packer *pk, const uint8_t *data, size_t len, uint32_t label,
		   const char *name, char *err, size_t errlen)
{
	struct dsformat_sample s = { .label = label, .payload_len = (uint32_t)len,
				     .crc = crc32c(0, data, len) };
	int rc = dsstore_writer_put_sample(pk->w, pk->next, &s, data, err, errlen);
	if (!rc)
		rc = dsstore_writer_put_name(pk->w, pk->next, name, err, errlen);
	if (rc)
		return rc;
	pk->next++;
	pk->bytes += len;
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

static int pack_plain(struct packer *pk, struct pack_reader *rd, const struct srclist *l,
		      char *err, size_t errlen)
{
	struct pack_read f;
	int rc;
	while ((rc = pack_reader_next(rd, &f, err, errlen)) == 1) {
		if (f.error)
			rc = bad_file(pk, f.path, pack_read_strerror(f.error), err, errlen);
		else if (!looks_like_jpeg(f.data, f.len))
			rc = bad_file(pk, f.path, "not a JPEG file", err, errlen);
		else
			rc = put_one(pk, f.data, f.len, l->labels[f.index], f.path, err, errlen);
		pack_progress_add(&pk->prog, 1, f.len);
		pack_reader_release(rd, &f);
		if (rc)
			return rc;
	}
	return rc;
}

/* ---- resize workers ---- */

enum { JOB_QUEUED, JOB_DONE };

struct job {
	struct pack_read f;
	int state;
	int status; /* 0 resized, 1 keep the original, < 0 bad file */
	struct jpeg_resize_result res;
	char why[200];
};

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct job *jobs;
	uint64_t cap, pushed, taken, head;
	int stop;
	unsigned shorter;
	int quality;
};

static void *worker(void *arg)
{
	struct pool *p = arg;
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
			snprintf(j->why, sizeof(j->why), "%s", pack_read_strerror(j->f.error));
		} else if (!looks_like_jpeg(j->f.data, j->f.len)) {
			j->status = FEEDER_EDECODE;
			snprintf(j->why, sizeof(j->why), "not a JPEG file");
		} else {
			j->status = jpeg_resize(j->f.data, j->f.len, p->shorter, p->quality, &j->res,
						j->why, sizeof(j->why));
		}
		pthread_mutex_lock(&p->mu);
		j->state = JOB_DONE;
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static int write_job(struct packer *pk, struct job *j, const struct srclist *l, char *err, size_t errlen)
{
	if (j->status < 0)
		return bad_file(pk, j->f.path, j->why, err, errlen);
	if (j->status == 1)
		return put_one(pk, j->f.data, j->f.len, l->labels[j->f.index], j->f.path, err, errlen);
	return put_one(pk, j->res.data, j->res.len, l->labels[j->f.index], j->f.path, err, errlen);
}

static int pack_resized(struct packer *pk, struct pack_reader *rd, const struct srclist *l,
			unsigned threads, unsigned shorter, int quality, char *err, size_t errlen)
{
	struct pool p = { .cap = pack_reader_depth(rd) - 1, .shorter = shorter, .quality = quality };
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
			rc = write_job(pk, j, l, err, errlen);
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
	"usage: packer pack images [--resize-shorter N --quality Q --threads N] [--strict] [--force] "
	"[-v] (SRC | --list FILE [SRC]) DEST";

int pack_images_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "list", required_argument, NULL, 'l' },
		{ "resize-shorter", required_argument, NULL, 'r' },
		{ "quality", required_argument, NULL, 'q' },
		{ "threads", required_argument, NULL, 't' },
		{ "depth", required_argument, NULL, 'd' },
		{ "strict", no_argument, NULL, 's' },
		{ "force", no_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *list = NULL;
	unsigned long long shorter = 0, quality = 90, threads = 0, depth = 64;
	int strict = 0, force = 0, verbose = 0, c;
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
		case 's': strict = 1; break;
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
	struct srclist l = { 0 };
	struct pack_dest dst = { .data_fd = -1 };
	struct pack_reader *rd = NULL;
	struct packer pk = { .src = src, .strict = strict, .dst = &dst };

	int dirfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		pack_error("pack images: %s: %s", src, strerror(errno));
		return PACK_EXIT_USAGE;
	}
	rc = list ? scan_list(list, &l, err, sizeof(err)) : scan_folder(dirfd, src, &l, err, sizeof(err));
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
	if ((rc = dsstore_writer_open(dst.tmp, (size_t)1 << 30, &pk.w, err, sizeof(err))) ||
	    (rc = pack_reader_open(dirfd, (const char *const *)l.paths, l.n, (unsigned)depth, 0, &rd,
				   err, sizeof(err)))) {
		pack_error("pack images: %s", err);
		goto out;
	}
	pack_progress_init(&pk.prog, l.n, verbose);
	if (shorter)
		rc = pack_resized(&pk, rd, &l, (unsigned)threads, (unsigned)shorter, (int)quality, err,
				  sizeof(err));
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
				     .samples = pk.next, .classes = l.nclasses };
	snprintf(h.packer_version, sizeof(h.packer_version), "packer %s", FEEDER_VERSION);
	pack_options_string(argc, argv, 1, h.options, sizeof(h.options));
	rc = dsstore_writer_finish(pk.w, &h, err, sizeof(err));
	pk.w = NULL;
	if (rc || (rc = pack_dest_commit(&dst, err, sizeof(err)))) {
		pack_error("pack images: %s", err);
		goto out;
	}
	if (verbose || isatty(STDERR_FILENO))
		fprintf(stderr, "packer: packed %llu images (%u classes, %llu bytes) into %s, %llu skipped\n",
			(unsigned long long)pk.next, l.nclasses, (unsigned long long)pk.bytes, dst.dest,
			(unsigned long long)pk.skipped);
	status = 0;
out:
	pack_reader_close(rd);
	if (pk.w)
		dsstore_writer_abort(pk.w);
	pack_dest_abort(&dst);
	srclist_free(&l);
	close(dirfd);
	return status;
}
