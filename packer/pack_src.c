/* pack_src.c — the sources of a pack: the class-folder walker that `pack
 * images` and `pack audio` share, and the list reader (see pack_src.h).
 *
 * The walker lists each folder once, sorts the names, and classifies each
 * entry from readdir's d_type where it can (plain files, the usual case,
 * cost no stat); links and file systems without d_type cost one fstatat.
 * Every folder it enters is recorded by (device, inode) with the path it
 * was first met by: that is how a loop, or a second way into the same
 * folder, is recognised whether links are followed or a bind mount made it. */
#include "pack_src.h"

#include "pack_args.h"
#include "pack_msg.h"
#include "pack_utf8.h"
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 64

void pack_src_free(struct pack_src *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->paths[i]);
	free(s->paths);
	free(s->labels);
	free(s->lines);
	for (uint32_t i = 0; i < s->nclasses; i++)
		free(s->classes[i]);
	free(s->classes);
	memset(s, 0, sizeof(*s));
}

static int src_add(struct pack_src *s, const char *path, uint32_t label, unsigned long line)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		char **p = realloc(s->paths, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->paths = p;
		uint32_t *lb = realloc(s->labels, cap * sizeof(*lb));
		if (!lb)
			return -ENOMEM;
		s->labels = lb;
		unsigned long *ln = realloc(s->lines, cap * sizeof(*ln));
		if (!ln)
			return -ENOMEM;
		s->lines = ln;
		s->cap = cap;
	}
	if (!(s->paths[s->n] = strdup(path)))
		return -ENOMEM;
	s->lines[s->n] = line;
	s->labels[s->n++] = label;
	return 0;
}

/* ---- folders met so far, by (device, inode) ---- */

struct dir_seen {
	dev_t dev;
	ino_t ino;
	char *rel;  /* the path it was first met by, relative to SRC ("" for SRC) */
	int walked; /* 0: a class folder registered before its turn */
	int used;
};

struct dirset {
	struct dir_seen *e;
	size_t n, cap; /* cap: a power of two, at most half full */
};

static size_t dirset_slot(const struct dirset *d, dev_t dev, ino_t ino)
{
	uint64_t x = (uint64_t)dev * 0x9e3779b97f4a7c15ull ^ (uint64_t)ino;
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	size_t i = (size_t)x & (d->cap - 1);
	while (d->e[i].used && !(d->e[i].dev == dev && d->e[i].ino == ino))
		i = (i + 1) & (d->cap - 1);
	return i;
}

static struct dir_seen *dirset_find(const struct dirset *d, dev_t dev, ino_t ino)
{
	if (!d->cap)
		return NULL;
	struct dir_seen *e = &d->e[dirset_slot(d, dev, ino)];
	return e->used ? e : NULL;
}

/* Record a folder not in the set yet. 0 or -ENOMEM. */
static int dirset_add(struct dirset *d, dev_t dev, ino_t ino, const char *rel, int walked)
{
	if (2 * (d->n + 1) > d->cap) {
		struct dirset g = { .cap = d->cap ? 2 * d->cap : 64 };
		if (!(g.e = calloc(g.cap, sizeof(*g.e))))
			return -ENOMEM;
		for (size_t i = 0; i < d->cap; i++)
			if (d->e[i].used)
				g.e[dirset_slot(&g, d->e[i].dev, d->e[i].ino)] = d->e[i];
		g.n = d->n;
		free(d->e);
		*d = g;
	}
	struct dir_seen *e = &d->e[dirset_slot(d, dev, ino)];
	if (!(e->rel = strdup(rel)))
		return -ENOMEM;
	e->dev = dev;
	e->ino = ino;
	e->walked = walked;
	e->used = 1;
	d->n++;
	return 0;
}

static void dirset_free(struct dirset *d)
{
	for (size_t i = 0; i < d->cap; i++)
		if (d->e[i].used)
			free(d->e[i].rel);
	free(d->e);
	memset(d, 0, sizeof(*d));
}

/* ---- listing one folder ---- */

enum { ENT_FILE = 'f', ENT_DIR = 'd', ENT_DIRLINK = 'l' };

struct entry {
	char *name;
	char type; /* ENT_*: anything that is not a folder or a link to one is a file */
};

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static void entries_free(struct entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].name);
	free(e);
}

/* The entries of folder fd (consumed), hidden ones left out, sorted by name.
 * 0 or a negative errno. */
static int list_dir(int fd, struct entry **out, size_t *count)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = -errno;
		close(fd);
		return e;
	}
	struct entry *ents = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			struct entry *ne = realloc(ents, cap * sizeof(*ne));
			if (!ne) {
				rc = -ENOMEM;
				break;
			}
			ents = ne;
		}
		char type = ENT_FILE;
		unsigned char dt = de->d_type;
		struct stat st;
		if (dt == DT_UNKNOWN &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			dt = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
		if (dt == DT_DIR)
			type = ENT_DIR;
		else if (dt == DT_LNK && fstatat(dirfd(d), de->d_name, &st, 0) == 0 &&
			 S_ISDIR(st.st_mode))
			type = ENT_DIRLINK; /* a dangling link stays a file: the reader reports it */
		if (!(ents[n].name = strdup(de->d_name))) {
			rc = -ENOMEM;
			break;
		}
		ents[n++].type = type;
		errno = 0;
	}
	if (!rc && errno)
		rc = -errno;
	closedir(d);
	if (rc) {
		entries_free(ents, n);
		return rc;
	}
	if (n)
		qsort(ents, n, sizeof(*ents), cmp_entry);
	*out = ents;
	*count = n;
	return 0;
}

/* ---- the walk ---- */

struct walk {
	int srcfd;
	const char *src;
	const struct pack_tree_rules *r;
	struct pack_src *s;
	struct dirset seen;
	dev_t root_dev; /* the class folder being walked */
	ino_t root_ino;
	char *err;
	size_t errlen;
};

/* "SRC/rel", or "SRC" for rel "". */
static const char *show(const struct walk *w, const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", w->src, *rel ? "/" : "", rel);
	return buf;
}

static int is_sample(const struct walk *w, const char *name)
{
	return !w->r->is_sample || w->r->is_sample(name);
}

/* Open folder rel unless it was met before. 1 with *out set, 0 when it is
 * passed over (reported), or a negative errno with err filled. */
static int enter(struct walk *w, const char *rel, int *out)
{
	char a[PATH_MAX + 256], b[PATH_MAX + 256];
	int fd = openat(w->srcfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return status_fail(w->err, w->errlen, -errno, "%s: cannot list: %s",
				   show(w, rel, a, sizeof(a)), strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int rc = status_fail(w->err, w->errlen, -errno, "%s: %s",
				     show(w, rel, a, sizeof(a)), strerror(errno));
		close(fd);
		return rc;
	}
	struct dir_seen *e = dirset_find(&w->seen, st.st_dev, st.st_ino);
	if (e && (e->walked || st.st_dev != w->root_dev || st.st_ino != w->root_ino)) {
		pack_warn("%s: the same folder as %s, not walked again", show(w, rel, a, sizeof(a)),
			  show(w, e->rel, b, sizeof(b)));
		close(fd);
		return 0;
	}
	int rc = e ? 0 : dirset_add(&w->seen, st.st_dev, st.st_ino, rel, 1);
	if (rc) {
		close(fd);
		return status_fail(w->err, w->errlen, rc, "out of memory listing %s", w->src);
	}
	if (e)
		e->walked = 1;
	*out = fd;
	return 1;
}

/* Add the samples under folder rel with label, depth first in sorted order. */
static int walk(struct walk *w, const char *rel, uint32_t label, int depth)
{
	char a[PATH_MAX + 256];
	if (depth > MAX_DEPTH)
		return status_fail(w->err, w->errlen, -ELOOP, "%s: folders nested too deep",
				   show(w, rel, a, sizeof(a)));
	int fd = -1, rc = enter(w, rel, &fd);
	if (rc <= 0)
		return rc;
	struct entry *ents = NULL;
	size_t n = 0;
	if ((rc = list_dir(fd, &ents, &n)))
		return status_fail(w->err, w->errlen, rc, "%s: cannot list: %s",
				   show(w, rel, a, sizeof(a)), strerror(-rc));
	for (size_t i = 0; i < n && !rc; i++) {
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s", rel, ents[i].name) >= (int)sizeof(path)) {
			rc = status_fail(w->err, w->errlen, -ENAMETOOLONG, "%s/%s: path too long",
					 show(w, rel, a, sizeof(a)), ents[i].name);
			break;
		}
		if (ents[i].type == ENT_DIR || (ents[i].type == ENT_DIRLINK && w->r->follow_links))
			rc = walk(w, path, label, depth + 1);
		else if (ents[i].type == ENT_DIRLINK)
			pack_warn(
				"%s: a link to a folder, not followed (--follow-links follows it)",
				show(w, path, a, sizeof(a)));
		else if (is_sample(w, ents[i].name) && (rc = src_add(w->s, path, label, 0)))
			status_fail(w->err, w->errlen, rc, "out of memory listing %s", w->src);
	}
	entries_free(ents, n);
	return rc;
}

int pack_src_scan_tree(int srcfd, const char *src, const struct pack_tree_rules *r,
		       struct pack_src *s, char *err, size_t errlen)
{
	struct walk w = {
		.srcfd = srcfd, .src = src, .r = r, .s = s, .err = err, .errlen = errlen
	};
	char a[PATH_MAX + 256], b[PATH_MAX + 256];
	struct entry *ents = NULL;
	size_t n = 0, nclass = 0;
	struct stat st;
	int rc = fstat(srcfd, &st) != 0 ? -errno : 0;
	if (!rc)
		rc = dirset_add(&w.seen, st.st_dev, st.st_ino, "", 1);
	int fd = rc ? -1 : dup(srcfd);
	if (!rc)
		rc = fd < 0 ? -errno : list_dir(fd, &ents, &n);
	if (rc) {
		dirset_free(&w.seen);
		return status_fail(err, errlen, rc, "%s: cannot list: %s", src, strerror(-rc));
	}
	/* Class folders first registered, so that a link from one class into
	 * another's folder is recognised before that class's turn. ents[k]
	 * keeps only the classes (others freed and NULL). */
	struct {
		dev_t dev;
		ino_t ino;
	} *ids = calloc(n ? n : 1, sizeof(*ids));
	s->classes = calloc(n ? n : 1, sizeof(*s->classes));
	if (!ids || !s->classes)
		rc = status_fail(err, errlen, -ENOMEM, "out of memory listing %s", src);
	for (size_t i = 0; i < n && !rc; i++) {
		struct entry *e = &ents[i];
		int keep = 0;
		if (e->type == ENT_DIRLINK && !r->follow_links)
			pack_warn(
				"%s: a link to a folder, not followed (--follow-links follows it)",
				show(&w, e->name, a, sizeof(a)));
		else if (e->type == ENT_FILE && is_sample(&w, e->name))
			pack_warn("%s: not in a %s folder, ignored",
				  show(&w, e->name, a, sizeof(a)), r->class_noun);
		else if (e->type != ENT_FILE && fstatat(srcfd, e->name, &st, 0) == 0)
			keep = 1;
		struct dir_seen *d = keep ? dirset_find(&w.seen, st.st_dev, st.st_ino) : NULL;
		if (d) {
			pack_warn("%s: the same folder as %s, not a second %s",
				  show(&w, e->name, a, sizeof(a)), show(&w, d->rel, b, sizeof(b)),
				  r->class_noun);
			keep = 0;
		} else if (keep && (rc = dirset_add(&w.seen, st.st_dev, st.st_ino, e->name, 0))) {
			status_fail(err, errlen, rc, "out of memory listing %s", src);
		}
		struct entry kept = *e;
		e->name = NULL;
		if (keep && !rc) {
			ids[nclass].dev = st.st_dev;
			ids[nclass].ino = st.st_ino;
			ents[nclass++] = kept; /* nclass <= i: compacting in place */
		} else {
			free(kept.name);
		}
	}
	if (!rc && nclass == 0)
		rc = status_fail(err, errlen, FEEDER_EINVAL,
				 "%s: no %s folders (expected SRC/<%s>/<file>)", src, r->class_noun,
				 r->class_noun);
	for (size_t k = 0; k < nclass && !rc; k++) {
		long bad = pack_utf8_bad(ents[k].name);
		if (bad >= 0) {
			rc = status_fail(
				err, errlen, FEEDER_EINVAL,
				"%s: the %s folder name is not UTF-8 (byte 0x%02x at column %ld): "
				"it would be a label",
				show(&w, ents[k].name, a, sizeof(a)), r->class_noun,
				(unsigned char)ents[k].name[bad], bad + 1);
			break;
		}
		size_t before = s->n;
		w.root_dev = ids[k].dev;
		w.root_ino = ids[k].ino;
		rc = walk(&w, ents[k].name, s->nclasses, 0);
		if (rc)
			break;
		if (s->n == before && !r->keep_empty) {
			pack_warn("%s: no %s, not a %s", show(&w, ents[k].name, a, sizeof(a)),
				  r->sample_noun, r->class_noun);
			continue;
		}
		s->classes[s->nclasses++] = ents[k].name;
		ents[k].name = NULL;
	}
	for (size_t k = 0; k < nclass; k++)
		free(ents[k].name);
	free(ents);
	free(ids);
	dirset_free(&w.seen);
	return rc;
}

/* ---- list file ---- */

/* Label v's class name from a list line: the first line naming it says
 * it, the others must agree. names (ncap of them) grows to hold v. 0,
 * -ENOMEM, or FEEDER_EINVAL with the reason. */
static int list_name(char ***names, size_t *ncap, unsigned long long v, const char *name,
		     const char *file, unsigned long lineno, char *err, size_t errlen)
{
	if (v >= *ncap) {
		size_t nc = *ncap ? *ncap : 64;
		while (nc <= v)
			nc *= 2;
		char **nn = realloc(*names, nc * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		memset(nn + *ncap, 0, (nc - *ncap) * sizeof(*nn));
		*names = nn;
		*ncap = nc;
	}
	char **n = *names;
	if (n[v] && strcmp(n[v], name) != 0)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "%s:%lu: label %llu named '%s', earlier '%s'", file, lineno, v,
				   name, n[v]);
	if (!n[v] && !(n[v] = strdup(name)))
		return -ENOMEM;
	return 0;
}

int pack_src_read_list(const char *file, struct pack_src *s, char *err, size_t errlen)
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
			rc = status_fail(err, errlen, FEEDER_EINVAL,
					 "%s:%lu: line contains a NUL byte", file, lineno);
			break;
		}
		char *tab = strchr(line, '\t');
		if (!tab) {
			rc = status_fail(err, errlen, FEEDER_EINVAL,
					 "%s:%lu: expected 'path<TAB>label', found no tab", file,
					 lineno);
			break;
		}
		*tab = 0;
		char *lab = tab + 1, *name = strchr(lab, '\t');
		if (name)
			*name++ = 0;
		if (line[0] == 0) {
			rc = status_fail(err, errlen, FEEDER_EINVAL, "%s:%lu: empty path", file,
					 lineno);
			break;
		}
		unsigned long long v;
		if (argtab_parse_uint(lab, 0, PACK_SRC_MAX_CLASSES - 1, &v) != 0) {
			rc = status_fail(err, errlen, FEEDER_EINVAL,
					 "%s:%lu: label '%s' is not an integer in 0..%u", file,
					 lineno, lab, PACK_SRC_MAX_CLASSES - 1);
			break;
		}
		if (name && (!*name || strchr(name, '\t'))) {
			rc = status_fail(err, errlen, FEEDER_EINVAL,
					 "%s:%lu: class name column is empty or has a tab", file,
					 lineno);
			break;
		}
		long bad = name ? pack_utf8_bad(name) : -1;
		if (bad >= 0) {
			rc = status_fail(
				err, errlen, FEEDER_EINVAL,
				"%s:%lu: class name is not UTF-8 (byte 0x%02x at column %ld)", file,
				lineno, (unsigned char)name[bad], bad + 1);
			break;
		}
		if (name && (rc = list_name(&names, &ncap, v, name, file, lineno, err, errlen)))
			break;
		if ((int64_t)v > maxlabel)
			maxlabel = (int64_t)v;
		if ((rc = src_add(s, line, (uint32_t)v, lineno)))
			break;
	}
	if (!rc && ferror(f))
		rc = status_fail(err, errlen, -EIO, "%s: read error", file);
	fclose(f);
	free(line);
	if (rc == -ENOMEM)
		status_fail(err, errlen, rc, "out of memory reading %s", file);
	if (!rc && s->n == 0)
		rc = status_fail(err, errlen, FEEDER_EINVAL, "%s: the list has no entries", file);
	if (!rc) {
		uint32_t nclasses = (uint32_t)(maxlabel + 1);
		s->classes = calloc(nclasses, sizeof(char *));
		if (!s->classes)
			rc = status_fail(err, errlen, -ENOMEM, "out of memory");
		for (uint32_t c = 0; !rc && c < nclasses; c++) {
			char num[16];
			snprintf(num, sizeof(num), "%u", c);
			s->classes[c] = strdup(c < ncap && names[c] ? names[c] : num);
			if (!s->classes[c])
				rc = status_fail(err, errlen, -ENOMEM, "out of memory");
			else
				s->nclasses = c + 1;
		}
	}
	for (size_t i = 0; i < ncap; i++)
		free(names[i]);
	free(names);
	return rc;
}
