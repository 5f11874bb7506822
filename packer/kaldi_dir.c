/* kaldi_dir.c — Kaldi data directories (see kaldi_dir.h): the line reader
 * and the cross-file checks, the command runner for "cmd |" sources, and
 * segment boundaries in samples.
 *
 * Each file is read whole and cut into lines and fields in place, so that
 * the ids, paths and speaker names handed out point into the file's own
 * text: a corpus of a million utterances costs a few arrays, not millions
 * of small allocations. Lookups are binary searches in arrays sorted by
 * (id, line); checks that can fail on many lines report the earliest one,
 * as a reader going down the file would, whatever the sort did. */
#include "kaldi_dir.h"

#include "pack_utf8.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- reading the files ---- */

/* One record of any of the files: wav.scp (val: source), segments (val:
 * recording, a/b: start/end), utt2spk (val: speaker), utt2dur (a). */
struct rec {
	char *id, *val;
	double a, b;
	size_t line;
	int pipe;
};

struct recs {
	struct rec *r;
	size_t n, cap;
};

struct file {
	const char *name; /* "wav.scp": DIR/name in messages */
	char *text;       /* the whole file, NUL-terminated */
	size_t len;
	size_t pos, line; /* where the next line starts, its number - 1 */
};

struct ctx {
	const char *dir, *sep; /* sep: "/" unless dir ends with one */
	int dfd;
	char *err;
	size_t errlen;
};

static int line_fail(const struct ctx *c, const struct file *f, size_t line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int line_fail(const struct ctx *c, const struct file *f, size_t line, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return status_fail(c->err, c->errlen, FEEDER_EFORMAT, "%s%s%s:%zu: %s", c->dir, c->sep,
			   f->name, line, why);
}

/* Read f->name from the directory. 0, 1 when it does not exist and is not
 * required, FEEDER_EFORMAT when it does not exist and is, or -errno. */
static int file_read(const struct ctx *c, struct file *f, int required)
{
	int fd = openat(c->dfd, f->name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT && !required)
			return 1;
		if (e == ENOENT)
			return status_fail(
				c->err, c->errlen, FEEDER_EFORMAT,
				"%s%s%s: no such file (a Kaldi data directory has wav.scp and utt2spk)",
				c->dir, c->sep, f->name);
		return status_fail(c->err, c->errlen, -e, "%s%s%s: %s", c->dir, c->sep, f->name,
				   strerror(e));
	}
	struct stat st;
	int rc = 0;
	size_t cap = 4096, len = 0;
	char *t = NULL;
	if (fstat(fd, &st) != 0)
		rc = status_fail(c->err, c->errlen, -errno, "%s%s%s: %s", c->dir, c->sep, f->name,
				 strerror(errno));
	else if (S_ISDIR(st.st_mode))
		rc = status_fail(c->err, c->errlen, FEEDER_EFORMAT, "%s%s%s: is a directory",
				 c->dir, c->sep, f->name);
	/* The size is a hint only (the file may be a pipe or grow): read to EOF. */
	else if (S_ISREG(st.st_mode) && st.st_size > 0 &&
		 (unsigned long long)st.st_size < SIZE_MAX / 2)
		cap = (size_t)st.st_size + 1;
	if (!rc && !(t = malloc(cap)))
		rc = -ENOMEM;
	while (!rc) {
		if (len + 1 >= cap) {
			char *nt = cap > SIZE_MAX / 2 ? NULL : realloc(t, cap * 2);
			if (!nt) {
				rc = -ENOMEM;
				break;
			}
			t = nt;
			cap *= 2;
		}
		ssize_t got = read(fd, t + len, cap - 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			rc = status_fail(c->err, c->errlen, -errno, "%s%s%s: %s", c->dir, c->sep,
					 f->name, strerror(errno));
		else if (got == 0)
			break;
		else
			len += (size_t)got;
	}
	close(fd);
	if (rc == -ENOMEM)
		status_fail(c->err, c->errlen, rc, "%s%s%s: out of memory", c->dir, c->sep,
			    f->name);
	if (rc) {
		free(t);
		return rc;
	}
	t[len] = 0;
	f->text = t;
	f->len = len;
	return 0;
}

/* The next line of f, NUL-terminated in place, its CR of a CRLF removed.
 * 1 and *out; 0 at the end of the file; FEEDER_EFORMAT for an empty or
 * blank line or a control character. */
static int file_line(const struct ctx *c, struct file *f, char **out)
{
	if (f->pos >= f->len)
		return 0;
	char *s = f->text + f->pos;
	char *nl = memchr(s, '\n', f->len - f->pos);
	size_t n = nl ? (size_t)(nl - s) : f->len - f->pos;
	f->pos += n + (nl != NULL);
	f->line++;
	if (n && s[n - 1] == '\r')
		n--;
	s[n] = 0;
	/* Kaldi's scp reader stops at an empty line (the file is invalid), and
	 * a blank line is as empty: it has no id. */
	if (strspn(s, " \t") == n)
		return line_fail(c, f, f->line, "empty line");
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return line_fail(c, f, f->line, "control character 0x%02x in the line", ch);
	}
	*out = s;
	return 1;
}

/* Ids and speakers become the dataset's sample names and its label table
 * (pack_utf8.h). Paths and commands are bytes, as the file system's, and
 * not checked. */
static int field_utf8(const struct ctx *c, const struct file *f, size_t line, const char *what,
		      const char *s)
{
	long i = pack_utf8_bad(s);
	if (i >= 0)
		return line_fail(c, f, line, "%s is not UTF-8 (byte 0x%02x at column %ld)", what,
				 (unsigned char)s[i], i + 1);
	return 0;
}

static char *skip_blank(char *s)
{
	return s + strspn(s, " \t");
}

static char *skip_field(char *s)
{
	return s + strcspn(s, " \t");
}

static size_t count_fields(char *s)
{
	size_t n = 0;
	for (s = skip_blank(s); *s; s = skip_blank(skip_field(s)))
		n++;
	return n;
}

/* Cut s into exactly n fields (the caller counted them). */
static void split_fields(char *s, char **fld, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		s = skip_blank(s);
		fld[i] = s;
		s = skip_field(s);
		if (*s)
			*s++ = 0;
	}
}

static int recs_add(struct recs *v, const struct rec *r)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 256;
		struct rec *nr = realloc(v->r, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		v->r = nr;
		v->cap = cap;
	}
	v->r[v->n++] = *r;
	return 0;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	int c = strcmp(x->id, y->id);
	return c ? c : (x->line > y->line) - (x->line < y->line);
}

static int cmp_key_rec(const void *key, const void *r)
{
	return strcmp(key, ((const struct rec *)r)->id);
}

static const struct rec *recs_find(const struct recs *v, const char *id)
{
	return bsearch(id, v->r, v->n, sizeof(*v->r), cmp_key_rec);
}

/* Sort v by (id, line) and refuse a duplicate id, naming the earliest line
 * that repeats an id and where that id was first. */
static int recs_sort_unique(const struct ctx *c, const struct file *f, struct recs *v,
			    const char *noun)
{
	qsort(v->r, v->n, sizeof(*v->r), cmp_rec);
	const struct rec *dup = NULL, *first = NULL, *group = v->r;
	for (size_t i = 1; i < v->n; i++) {
		if (strcmp(v->r[i].id, group->id) != 0) {
			group = &v->r[i];
			continue;
		}
		if (!dup || v->r[i].line < dup->line) {
			dup = &v->r[i];
			first = group;
		}
	}
	if (dup)
		return line_fail(c, f, dup->line, "duplicate %s \"%s\" (also on line %zu)", noun,
				 dup->id, first->line);
	return 0;
}

/* A number of seconds as Kaldi writes them: decimal, finite, the whole
 * field (strtod alone would also take "inf", "nan" and hex). */
static int parse_seconds(const char *s, double *v)
{
	if (!*s || strspn(s, "0123456789.eE+-") != strlen(s))
		return -1;
	char *end;
	double x = strtod(s, &end);
	if (end == s || *end || !isfinite(x))
		return -1;
	*v = x;
	return 0;
}

/* wav.scp: "<recording> <path>" or "<recording> <command> |". */
static int parse_wav_scp(const struct ctx *c, struct file *f, struct recs *v)
{
	char *s;
	int rc;
	while ((rc = file_line(c, f, &s)) == 1) {
		struct rec r = { .line = f->line };
		size_t nf = count_fields(s);
		r.id = skip_blank(s);
		char *e = skip_field(r.id);
		if (nf < 2)
			return line_fail(c, f, r.line, "expected \"recording path\", got %zu field",
					 nf);
		char *rest = skip_blank(e);
		*e = 0;
		size_t n = strlen(rest);
		while (n && (rest[n - 1] == ' ' || rest[n - 1] == '\t'))
			rest[--n] = 0;
		if (rest[n - 1] == '|') {
			rest[--n] = 0;
			while (n && (rest[n - 1] == ' ' || rest[n - 1] == '\t'))
				rest[--n] = 0;
			if (!n)
				return line_fail(c, f, r.line, "no command before \"|\"");
			r.pipe = 1;
		}
		if (rest[0] == '|')
			return line_fail(
				c, f, r.line,
				"\"%.100s\" is an output pipe (an input command ends with \"|\")",
				rest);
		if (r.pipe) {
			/* the command is the rest of the line, spaces and all */
		} else if (nf > 2) {
			return line_fail(
				c, f, r.line,
				"expected \"recording path\", got %zu fields (a command must end with \"|\")",
				nf);
		} else if (strchr(rest, '|')) {
			return line_fail(
				c, f, r.line,
				"\"|\" inside path \"%.100s\" (a command must end with \"|\")",
				rest);
		} else if (strcmp(rest, "-") == 0) {
			return line_fail(c, f, r.line, "standard input (\"-\") is not supported");
		} else {
			/* Kaldi reads "file:1234" as a byte offset into an archive. */
			const char *d = rest + n;
			while (d > rest && d[-1] >= '0' && d[-1] <= '9')
				d--;
			if (d < rest + n && d > rest && d[-1] == ':')
				return line_fail(c, f, r.line,
						 "\"%.100s\": ark offsets are not supported", rest);
		}
		r.val = rest;
		if ((rc = field_utf8(c, f, r.line, "the recording id", r.id)))
			return rc;
		if (recs_add(v, &r))
			return -ENOMEM;
	}
	return rc;
}

/* segments: "<utterance> <recording> <start> <end>". */
static int parse_segments(const struct ctx *c, struct file *f, struct recs *v)
{
	char *s, *fld[4];
	int rc;
	while ((rc = file_line(c, f, &s)) == 1) {
		struct rec r = { .line = f->line };
		size_t nf = count_fields(s);
		if (nf == 5)
			return line_fail(c, f, r.line,
					 "a channel field is not supported (mono recordings only)");
		if (nf != 4)
			return line_fail(
				c, f, r.line,
				"expected \"utterance recording start end\", got %zu field%s", nf,
				nf == 1 ? "" : "s");
		split_fields(s, fld, 4);
		if (parse_seconds(fld[2], &r.a))
			return line_fail(c, f, r.line, "start \"%.40s\" is not a number", fld[2]);
		if (parse_seconds(fld[3], &r.b))
			return line_fail(c, f, r.line, "end \"%.40s\" is not a number", fld[3]);
		if (r.a < 0)
			return line_fail(c, f, r.line, "start %s is negative", fld[2]);
		if (r.b != -1.0 && r.b <= r.a)
			return line_fail(
				c, f, r.line,
				"end %s is not after start %s (nor -1, the end of the recording)",
				fld[3], fld[2]);
		r.id = fld[0];
		r.val = fld[1];
		if ((rc = field_utf8(c, f, r.line, "the utterance id", r.id)))
			return rc;
		if (recs_add(v, &r))
			return -ENOMEM;
	}
	return rc;
}

/* utt2spk "<utterance> <speaker>" (dur 0) or utt2dur "<utterance> <seconds>" (dur 1). */
static int parse_pairs(const struct ctx *c, struct file *f, struct recs *v, int dur)
{
	char *s, *fld[2];
	int rc;
	while ((rc = file_line(c, f, &s)) == 1) {
		struct rec r = { .line = f->line };
		size_t nf = count_fields(s);
		if (nf != 2)
			return line_fail(c, f, r.line, "expected \"%s\", got %zu field%s",
					 dur ? "utterance seconds" : "utterance speaker", nf,
					 nf == 1 ? "" : "s");
		split_fields(s, fld, 2);
		/* Kaldi's validate_data_dir.sh wants every duration > 0. */
		if (dur && (parse_seconds(fld[1], &r.a) || !(r.a > 0)))
			return line_fail(c, f, r.line,
					 "duration \"%.40s\" is not a positive number", fld[1]);
		r.id = fld[0];
		r.val = fld[1];
		if (!dur && (rc = field_utf8(c, f, r.line, "the speaker", r.val)))
			return rc;
		if (recs_add(v, &r))
			return -ENOMEM;
	}
	return rc;
}

/* Every record of v whose id is not in `in` is an error: the earliest. */
static int check_ids_in(const struct ctx *c, const struct file *f, const struct recs *v,
			const struct recs *in, const char *in_name)
{
	const struct rec *bad = NULL;
	for (size_t i = 0; i < v->n; i++)
		if ((!bad || v->r[i].line < bad->line) && !recs_find(in, v->r[i].id))
			bad = &v->r[i];
	if (bad)
		return line_fail(c, f, bad->line, "utterance \"%s\" is not in %s", bad->id,
				 in_name);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

enum kind { WAV_SCP, SEGMENTS, UTT2SPK, UTT2DUR };

/* Read and parse one file. 0, 1 when an optional file is absent, or an
 * error; a file without lines is one. */
static int read_and_parse(const struct ctx *c, struct file *f, int required, struct recs *v,
			  enum kind k)
{
	int rc = file_read(c, f, required);
	if (rc)
		return rc;
	rc = k == WAV_SCP    ? parse_wav_scp(c, f, v)
	     : k == SEGMENTS ? parse_segments(c, f, v)
			     : parse_pairs(c, f, v, k == UTT2DUR);
	if (rc)
		return rc;
	if (v->n == 0)
		return status_fail(c->err, c->errlen, FEEDER_EFORMAT,
				   "%s%s%s: the file has no lines", c->dir, c->sep, f->name);
	return 0;
}

void kaldi_dir_free(struct kaldi_dir *d)
{
	free(d->utts);
	free(d->recos);
	free(d->speakers);
	for (size_t i = 0; i < sizeof(d->text) / sizeof(d->text[0]); i++)
		free(d->text[i]);
	memset(d, 0, sizeof(*d));
}

/* The speakers: utt2spk's second column, sorted, each once. 0, -ENOMEM or
 * FEEDER_EFORMAT with the reason. */
static int speaker_names(const struct ctx *c, const struct recs *spk, const char ***out, size_t *ns)
{
	const char **names = malloc(spk->n * sizeof(*names));
	if (!(*out = names))
		return -ENOMEM;
	for (size_t i = 0; i < spk->n; i++)
		names[i] = spk->r[i].val;
	qsort(names, spk->n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < spk->n; i++)
		if (!*ns || strcmp(names[*ns - 1], names[i]) != 0)
			names[(*ns)++] = names[i];
	if (*ns > UINT32_MAX)
		return status_fail(c->err, c->errlen, FEEDER_EFORMAT,
				   "%s%sutt2spk: more than %u speakers", c->dir, c->sep,
				   UINT32_MAX);
	return 0;
}

/* out's recordings and utterances, joined from the checked files. 0 or
 * -ENOMEM. */
static int fill_utts(struct kaldi_dir *out, const struct recs *w, const struct recs *utt,
		     const struct recs *spk, const struct recs *dur, const char **names, size_t ns,
		     int has_seg)
{
	out->recos = malloc(w->n * sizeof(*out->recos));
	out->utts = malloc(utt->n * sizeof(*out->utts));
	if (!out->recos || !out->utts)
		return -ENOMEM;
	for (size_t i = 0; i < w->n; i++)
		out->recos[i] = (struct kaldi_reco){ w->r[i].id, w->r[i].val, w->r[i].pipe };
	for (size_t i = 0; i < utt->n; i++) {
		const struct rec *u = &utt->r[i];
		struct kaldi_utt *o = &out->utts[i];
		const struct rec *sp = recs_find(spk, u->id),
				 *du = dur->n ? recs_find(dur, u->id) : NULL;
		const char **sn = bsearch(&sp->val, names, ns, sizeof(*names), cmp_str);
		o->id = u->id;
		o->speaker_name = *sn;
		o->speaker = (uint32_t)(sn - names);
		o->reco = has_seg ? (size_t)(recs_find(w, u->val) - w->r) : i;
		o->source = w->r[o->reco].val;
		o->is_pipe = w->r[o->reco].pipe;
		o->start = has_seg ? u->a : 0;
		o->end = has_seg ? u->b : -1;
		o->dur = du ? du->a : -1;
	}
	return 0;
}

int kaldi_dir_load(const char *dir, struct kaldi_dir *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	size_t dl = strlen(dir);
	struct ctx c = {
		.dir = dir, .sep = dl && dir[dl - 1] == '/' ? "" : "/", .err = err, .errlen = errlen
	};
	c.dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.dfd < 0)
		return status_fail(err, errlen, -errno, "%s: %s", dir, strerror(errno));
	struct file fw = { .name = "wav.scp" }, fs = { .name = "segments" },
		    fp = { .name = "utt2spk" }, fdur = { .name = "utt2dur" };
	struct recs w = { 0 }, seg = { 0 }, spk = { 0 }, dur = { 0 };
	const struct recs *utt = &w; /* the utterances: the segments, or else the recordings */
	const struct file *uttf = &fw;
	const char **names = NULL;
	size_t ns = 0;
	int rc, has_seg;

	if ((rc = read_and_parse(&c, &fw, 1, &w, WAV_SCP)) ||
	    (rc = recs_sort_unique(&c, &fw, &w, "recording")))
		goto out;
	rc = read_and_parse(&c, &fs, 0, &seg, SEGMENTS);
	if (rc < 0 || (!rc && (rc = recs_sort_unique(&c, &fs, &seg, "utterance"))))
		goto out;
	has_seg = rc == 0;
	if (has_seg) {
		utt = &seg;
		uttf = &fs;
		const struct rec *bad = NULL;
		for (size_t i = 0; i < seg.n; i++)
			if ((!bad || seg.r[i].line < bad->line) && !recs_find(&w, seg.r[i].val))
				bad = &seg.r[i];
		if (bad) {
			rc = line_fail(&c, &fs, bad->line, "recording \"%s\" is not in wav.scp",
				       bad->val);
			goto out;
		}
	}

	if ((rc = read_and_parse(&c, &fp, 1, &spk, UTT2SPK)) ||
	    (rc = recs_sort_unique(&c, &fp, &spk, "utterance")) ||
	    (rc = check_ids_in(&c, &fp, &spk, utt, uttf->name)))
		goto out;
	{
		const struct rec *bad = NULL;
		for (size_t i = 0; i < utt->n; i++)
			if ((!bad || utt->r[i].line < bad->line) && !recs_find(&spk, utt->r[i].id))
				bad = &utt->r[i];
		if (bad) {
			rc = line_fail(&c, uttf, bad->line,
				       "utterance \"%s\" has no speaker in utt2spk", bad->id);
			goto out;
		}
	}
	rc = read_and_parse(&c, &fdur, 0, &dur, UTT2DUR);
	if (rc < 0 || (!rc && ((rc = recs_sort_unique(&c, &fdur, &dur, "utterance")) ||
			       (rc = check_ids_in(&c, &fdur, &dur, utt, uttf->name)))))
		goto out;
	rc = 0;
	if ((rc = speaker_names(&c, &spk, &names, &ns)) ||
	    (rc = fill_utts(out, &w, utt, &spk, &dur, names, ns, has_seg)))
		goto out;
	out->nutts = utt->n;
	out->nrecos = w.n;
	out->speakers = names;
	out->nspeakers = (uint32_t)ns;
	out->has_segments = has_seg;
	out->text[0] = fw.text;
	out->text[1] = fs.text;
	out->text[2] = fp.text;
	fw.text = fs.text = fp.text = NULL;
	names = NULL;
out:
	if (rc == -ENOMEM)
		status_fail(err, errlen, rc, "%s: out of memory", dir);
	if (rc)
		kaldi_dir_free(out);
	free(names);
	free(w.r);
	free(seg.r);
	free(spk.r);
	free(dur.r);
	free(fw.text);
	free(fs.text);
	free(fp.text);
	free(fdur.text);
	close(c.dfd);
	return rc;
}

/* ---- commands ---- */

/* The command as messages show it: its first 80 bytes, not cutting a UTF-8
 * character, then "...". */
static const char *show_cmd(const char *cmd, char *buf, size_t len)
{
	size_t n = strlen(cmd);
	if (n <= 80) {
		snprintf(buf, len, "%s", cmd);
		return buf;
	}
	n = 80;
	while (n && ((unsigned char)cmd[n] & 0xc0) == 0x80)
		n--;
	snprintf(buf, len, "%.*s...", (int)n, cmd);
	return buf;
}

/* Run cmd under /bin/sh with its stdout into a pipe whose read end is *fd.
 * 0 or a negative errno with err. */
static int pipe_spawn(const char *cmd, pid_t *pid, int *fd, char *err, size_t errlen)
{
	char shown[96];
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return status_fail(err, errlen, -errno, "command \"%s\": cannot make a pipe: %s",
				   show_cmd(cmd, shown, sizeof(shown)), strerror(errno));
	/* The child gets /dev/null for stdin (a command waiting on the
	 * terminal would hang the pack), default signal dispositions (packer's
	 * ignored ones would otherwise survive exec: a pipeline ignoring SIGPIPE
	 * does not stop when its reader does) and a process group of its own,
	 * so that killing it kills the whole pipeline the shell made. */
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t all, none;
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	sigemptyset(&none);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETPGROUP);
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	int e = posix_spawn(pid, "/bin/sh", &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(fds[1]);
	if (e) {
		close(fds[0]);
		return status_fail(err, errlen, -e, "command \"%s\": cannot run /bin/sh: %s",
				   show_cmd(cmd, shown, sizeof(shown)), strerror(e));
	}
	*fd = fds[0];
	return 0;
}

/* All of fd into *b (*n bytes), at most max_bytes. 0 or a negative errno
 * with err; *b is the caller's to free either way. */
static int pipe_slurp(int fd, const char *cmd, size_t max_bytes, uint8_t **b, size_t *n, char *err,
		      size_t errlen)
{
	char shown[96];
	/* Read one byte past the limit to know the output is larger. */
	size_t limit = max_bytes < SIZE_MAX ? max_bytes + 1 : SIZE_MAX;
	size_t cap = 0;
	for (;;) {
		if (*n == cap) {
			if (cap == limit)
				return status_fail(err, errlen, -EFBIG,
						   "command \"%s\": output larger than %zu bytes",
						   show_cmd(cmd, shown, sizeof(shown)), max_bytes);
			size_t nc = cap ? (cap > limit / 2 ? limit : 2 * cap)
					: (limit < 65536 ? limit : 65536);
			uint8_t *nb = realloc(*b, nc);
			if (!nb)
				return status_fail(err, errlen, -ENOMEM,
						   "command \"%s\": out of memory for its output",
						   show_cmd(cmd, shown, sizeof(shown)));
			*b = nb;
			cap = nc;
		}
		ssize_t got = read(fd, *b + *n, cap - *n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return status_fail(err, errlen, -errno,
					   "command \"%s\": reading its output: %s",
					   show_cmd(cmd, shown, sizeof(shown)), strerror(errno));
		if (got == 0)
			return 0;
		*n += (size_t)got;
	}
}

/* Wait for pid; how it ended, as the command's verdict (n: the bytes it
 * wrote). 0 or -errno with err. */
static int pipe_verdict(pid_t pid, const char *cmd, size_t n, char *err, size_t errlen)
{
	char shown[96];
	int st;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (w < 0)
		return status_fail(err, errlen, -errno, "command \"%s\": cannot wait for it: %s",
				   show_cmd(cmd, shown, sizeof(shown)), strerror(errno));
	if (WIFSIGNALED(st))
		return status_fail(err, errlen, -EIO, "command \"%s\" killed by signal %d",
				   show_cmd(cmd, shown, sizeof(shown)), WTERMSIG(st));
	if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
		return status_fail(err, errlen, -EIO, "command \"%s\" exited with status %d%s",
				   show_cmd(cmd, shown, sizeof(shown)), WEXITSTATUS(st),
				   WEXITSTATUS(st) == 127   ? " (command not found)"
				   : WEXITSTATUS(st) == 126 ? " (not executable)"
							    : "");
	if (n == 0)
		return status_fail(err, errlen, -EIO, "command \"%s\" wrote nothing",
				   show_cmd(cmd, shown, sizeof(shown)));
	return 0;
}

int kaldi_pipe_read(const char *cmd, size_t max_bytes, uint8_t **buf, size_t *len, char *err,
		    size_t errlen)
{
	*buf = NULL;
	*len = 0;
	pid_t pid;
	int fd;
	int rc = pipe_spawn(cmd, &pid, &fd, err, errlen);
	if (rc)
		return rc;
	uint8_t *b = NULL;
	size_t n = 0;
	rc = pipe_slurp(fd, cmd, max_bytes, &b, &n, err, errlen);
	if (rc)
		kill(-pid, SIGKILL);
	close(fd);
	if (rc) {
		/* reap it; the reading error is the one to report */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	} else {
		rc = pipe_verdict(pid, cmd, n, err, errlen);
	}
	if (rc) {
		free(b);
		return rc;
	}
	*buf = b;
	*len = n;
	return 0;
}

/* ---- segments in samples ---- */

int kaldi_segment_samples(double start, double end, uint32_t rate, size_t total, size_t *first,
			  size_t *count, char *err, size_t errlen)
{
	*first = *count = 0;
	char seg[64];
	if (end < 0)
		snprintf(seg, sizeof(seg), "%.3f s to the end", start);
	else
		snprintf(seg, sizeof(seg), "%.3f-%.3f s", start, end);
	if (!rate)
		return status_fail(err, errlen, FEEDER_EINVAL, "segment %s: sample rate 0", seg);
	if (!(start >= 0) || isnan(end) || (end >= 0 && !(end > start)))
		return status_fail(err, errlen, FEEDER_EINVAL, "segment %s: not a segment", seg);
	/* extract-segments (Kaldi since 2019) checks the times against the
	 * recording's length, cuts an end that overshoots by at most
	 * --max-overshoot, then rounds both to samples: (int)(t * rate + 0.5).
	 * It computes the length in single precision; double here. */
	double length = (double)total / rate;
	if (start > length)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "segment %s starts after the end of the recording (%.3f s)", seg,
				   length);
	if (end > length + KALDI_MAX_OVERSHOOT)
		return status_fail(
			err, errlen, FEEDER_EFORMAT,
			"segment %s ends more than %.1f s after the end of the recording (%.3f s)",
			seg, KALDI_MAX_OVERSHOOT, length);
	size_t a = (size_t)(start * rate + 0.5);
	size_t b = end < 0 || end > length ? total : (size_t)(end * rate + 0.5);
	if (a > total)
		a = total;
	if (b > total)
		b = total;
	if (b <= a)
		return status_fail(
			err, errlen, FEEDER_EFORMAT,
			"segment %s holds no sample of the recording (%zu samples at %u Hz)", seg,
			total, rate);
	*first = a;
	*count = b - a;
	return 0;
}
