/* pack_common.c — temporary destination, io_uring reader, progress line and
 * messages shared by the pack subcommands (see pack_common.h).
 *
 * The reader does all its file I/O through io_uring (statx, open, read,
 * close), so up to depth files are in flight while the caller CRCs and
 * writes earlier ones. Slots form a ring indexed by file index modulo depth;
 * a file is started only when its slot is free, so files come back strictly
 * in index order. */
#include "pack_common.h"

#include "dsformat.h"
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- messages ---- */

static int progress_showing; /* a \r progress line is on the terminal */

static void clear_progress(void)
{
	if (progress_showing) {
		fputs("\r\033[K", stderr);
		progress_showing = 0;
	}
}

void pack_warn(const char *fmt, ...)
{
	va_list ap;
	clear_progress();
	fputs("packer: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void pack_error(const char *fmt, ...)
{
	va_list ap;
	clear_progress();
	fputs("packer: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void pack_options_string(int argc, char **argv, int first, char *out, size_t outlen)
{
	size_t n = 0;
	if (!outlen)
		return;
	out[0] = 0;
	for (int i = first; i < argc && n + 1 < outlen; i++) {
		int w = snprintf(out + n, outlen - n, "%s%s", n ? " " : "", argv[i]);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

int pack_parse_uint(const char *s, unsigned long long min, unsigned long long max,
		    unsigned long long *out)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

double pack_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- temporary destination ---- */

/* Paths the signal handler unlinks; precomputed because the handler may only
 * call async-signal-safe functions. */
static char sig_files[3][PATH_MAX + 16];
static char sig_dir[PATH_MAX];
static volatile sig_atomic_t sig_armed;
static struct sigaction sig_old[3];
static const int sig_list[3] = { SIGINT, SIGTERM, SIGHUP };

static void on_signal(int sig)
{
	if (sig_armed) {
		for (int i = 0; i < 3; i++)
			unlink(sig_files[i]);
		rmdir(sig_dir);
		sig_armed = 0;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void arm_signals(const char *tmp)
{
	static const char *names[3] = { "data.mdb", "lock.mdb", "packer.pid" };
	for (int i = 0; i < 3; i++)
		snprintf(sig_files[i], sizeof(sig_files[i]), "%s/%s", tmp, names[i]);
	snprintf(sig_dir, sizeof(sig_dir), "%s", tmp);
	sig_armed = 1;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sig_list[i], &sa, &sig_old[i]);
}

static void disarm_signals(void)
{
	if (!sig_armed)
		return;
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	sig_armed = 0;
	for (int i = 0; i < 3; i++)
		sigaction(sig_list[i], &sig_old[i], NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Remove a directory that holds only plain files (a dataset or a temporary
 * directory). Refuses (-ENOTEMPTY) to touch anything with sub-directories, so
 * a mistyped --force can never delete a tree. */
static int remove_flat_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int dfd = dirfd(d), rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
			rc = -ENOTEMPTY;
			break;
		}
	}
	if (!rc) {
		rewinddir(d);
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (unlinkat(dfd, e->d_name, 0) != 0 && errno != ENOENT)
				rc = -errno;
		}
	}
	closedir(d);
	if (!rc && rmdir(dir) != 0)
		rc = -errno;
	return rc;
}

/* What --force may replace: an empty directory or one holding only LMDB's
 * data.mdb and lock.mdb (a dataset). Anything else might be someone's files. */
static int replaceable_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int ok = 1;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "data.mdb") &&
		    strcmp(e->d_name, "lock.mdb"))
			ok = 0;
	closedir(d);
	return ok;
}

static void split_path(const char *path, char *parent, size_t plen, const char **base)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		snprintf(parent, plen, ".");
		*base = path;
	} else if (slash == path) {
		snprintf(parent, plen, "/");
		*base = slash + 1;
	} else {
		snprintf(parent, plen, "%.*s", (int)(slash - path), path);
		*base = slash + 1;
	}
}

/* snprintf that reports truncation, so an over-long path is an error and
 * not a different file. */
static int fmt_path(char *out, size_t len, const char *a, const char *b)
{
	int n = snprintf(out, len, "%s%s", a, b);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A temporary directory of a pack whose process is gone (or that never got
 * as far as writing its pid). */
static int tmp_is_stale(const char *dir)
{
	char path[PATH_MAX + 16], buf[32];
	if (fmt_path(path, sizeof(path), dir, "/packer.pid"))
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = 0;
	long pid = strtol(buf, NULL, 10);
	if (pid <= 0)
		return 1;
	return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

static void clean_stale_tmps(const char *parent, const char *base)
{
	DIR *d = opendir(parent);
	if (!d)
		return;
	size_t blen = strlen(base);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, base, blen) != 0 || strncmp(e->d_name + blen, ".tmp-", 5) != 0 ||
		    strlen(e->d_name + blen + 5) != 6)
			continue;
		char path[PATH_MAX * 2];
		snprintf(path, sizeof(path), "%s/%s", parent, e->d_name);
		if (tmp_is_stale(path) && remove_flat_dir(path) == 0)
			pack_warn("removed %s, left by an interrupted pack", path);
	}
	closedir(d);
}

int pack_dest_begin(struct pack_dest *d, const char *dest, int force, char *err, size_t errlen)
{
	char parent[PATH_MAX];
	const char *base;
	struct stat st;

	memset(d, 0, sizeof(*d));
	d->data_fd = -1;
	size_t len = strlen(dest);
	while (len > 1 && dest[len - 1] == '/')
		len--;
	if (len == 0 || len + 16 >= sizeof(d->dest))
		return status_fail(err, errlen, -EINVAL, "%s: bad destination path", dest);
	memcpy(d->dest, dest, len);
	d->dest[len] = 0;
	d->force = force;
	split_path(d->dest, parent, sizeof(parent), &base);
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return status_fail(err, errlen, -EINVAL, "%s: bad destination path", dest);
	if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode))
		return status_fail(err, errlen, -ENOENT, "%s: parent directory %s does not exist",
				   d->dest, parent);
	if (lstat(d->dest, &st) == 0) {
		if (!force)
			return status_fail(err, errlen, -EEXIST,
					   "%s: already exists (use --force to replace it)", d->dest);
		if (!S_ISDIR(st.st_mode) || !replaceable_dir(d->dest))
			return status_fail(err, errlen, -EEXIST,
					   "%s: exists and is not a dataset; --force will not replace it",
					   d->dest);
	}
	clean_stale_tmps(parent, base);
	if (fmt_path(d->tmp, sizeof(d->tmp), d->dest, ".tmp-XXXXXX") || !mkdtemp(d->tmp))
		return status_fail(err, errlen, -errno, "%s: cannot create temporary directory: %s",
				   d->tmp, strerror(errno));
	d->active = 1;
	arm_signals(d->tmp);
	char pidpath[PATH_MAX + 16], pidbuf[32];
	snprintf(pidpath, sizeof(pidpath), "%s/packer.pid", d->tmp);
	int fd = open(pidpath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		int rc = status_fail(err, errlen, -errno, "%s: %s", pidpath, strerror(errno));
		pack_dest_abort(d);
		return rc;
	}
	int n = snprintf(pidbuf, sizeof(pidbuf), "%ld\n", (long)getpid());
	ssize_t w = write(fd, pidbuf, (size_t)n);
	close(fd);
	if (w != n) {
		int rc = status_fail(err, errlen, -EIO, "%s: short write", pidpath);
		pack_dest_abort(d);
		return rc;
	}
	return 0;
}

static int fsync_path(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) == 0 ? 0 : -errno;
	close(fd);
	return rc;
}

void pack_dest_writeback(struct pack_dest *d)
{
	if (!d->active)
		return;
	if (d->data_fd < 0) {
		char path[PATH_MAX + 16];
		if (fmt_path(path, sizeof(path), d->tmp, "/data.mdb"))
			return;
		d->data_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (d->data_fd < 0)
			return;
	}
	sync_file_range(d->data_fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

static void close_data_fd(struct pack_dest *d)
{
	if (d->data_fd >= 0)
		close(d->data_fd);
	d->data_fd = -1;
}

int pack_dest_commit(struct pack_dest *d, char *err, size_t errlen)
{
	char path[PATH_MAX + 16], parent[PATH_MAX];
	const char *base;
	int rc;

	close_data_fd(d);
	if (!d->active)
		return status_fail(err, errlen, -EINVAL, "%s: nothing to commit", d->dest);
	snprintf(path, sizeof(path), "%s/packer.pid", d->tmp);
	unlink(path);
	static const char *files[2] = { "data.mdb", "lock.mdb" };
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", d->tmp, files[i]);
		rc = fsync_path(path, O_RDONLY);
		if (rc && rc != -ENOENT) {
			status_fail(err, errlen, rc, "%s: fsync: %s", path, strerror(-rc));
			goto fail;
		}
	}
	if ((rc = fsync_path(d->tmp, O_RDONLY | O_DIRECTORY))) {
		status_fail(err, errlen, rc, "%s: fsync: %s", d->tmp, strerror(-rc));
		goto fail;
	}
	struct stat st;
	if (lstat(d->dest, &st) == 0) {
		if (!d->force || !S_ISDIR(st.st_mode) || !replaceable_dir(d->dest)) {
			rc = status_fail(err, errlen, -EEXIST, "%s: appeared while packing; not replacing it",
					 d->dest);
			goto fail;
		}
		/* Swap so that DEST is never missing, then delete the old one
		 * (now under the temporary name). */
		if (renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->dest, RENAME_EXCHANGE) == 0) {
			rc = remove_flat_dir(d->tmp);
			if (rc)
				pack_warn("%s: old dataset kept under %s (%s)", d->dest, d->tmp,
					  strerror(-rc));
			goto synced;
		}
		if ((rc = remove_flat_dir(d->dest))) {
			status_fail(err, errlen, rc, "%s: cannot replace it: %s", d->dest, strerror(-rc));
			goto fail;
		}
	}
	if (rename(d->tmp, d->dest) != 0) {
		rc = status_fail(err, errlen, -errno, "%s: rename from %s: %s", d->dest, d->tmp,
				 strerror(errno));
		goto fail;
	}
synced:
	d->active = 0;
	disarm_signals();
	split_path(d->dest, parent, sizeof(parent), &base);
	if ((rc = fsync_path(parent, O_RDONLY | O_DIRECTORY)))
		return status_fail(err, errlen, rc, "%s: fsync: %s", parent, strerror(-rc));
	return 0;
fail:
	pack_dest_abort(d);
	return rc;
}

void pack_dest_abort(struct pack_dest *d)
{
	close_data_fd(d);
	if (!d->active)
		return;
	remove_flat_dir(d->tmp);
	d->active = 0;
	disarm_signals();
}

/* ---- io_uring batch reader ---- */

/* A file goes through three io_uring operations, each submitted when the
 * previous one completes: STATX (type and size, without opening: a FIFO in
 * the tree is reported, never opened, so it cannot hang us), OPENAT, READ
 * (repeated after a short read); then an unwaited CLOSE. On a cold cache the
 * metadata reads then overlap just like the data reads. user_data carries
 * the slot number and the operation, because a CLOSE may complete after its
 * slot has moved on to the next file. */
enum slot_state { SLOT_FREE, SLOT_BUSY, SLOT_DONE, SLOT_HELD };
enum { OP_STATX, OP_OPEN, OP_READ, OP_CLOSE, OP_BITS = 2 };

struct slot {
	enum slot_state state;
	size_t index;
	int fd;
	int error;
	uint8_t *buf;
	size_t cap, size, got;
	struct statx stx;
};

struct pack_reader {
	struct io_uring ring;
	int dirfd;
	const char *const *paths;
	size_t n, next_submit, next_deliver;
	size_t max_file;
	unsigned depth, inflight;
	struct slot *slots;
};

int pack_reader_open(int dirfd, const char *const *paths, size_t n, unsigned depth,
		     size_t max_file, struct pack_reader **out, char *err, size_t errlen)
{
	if (depth == 0)
		depth = 64;
	if (depth < 32)
		depth = 32;
	if (depth > 4096)
		depth = 4096;
	struct pack_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	r->slots = calloc(depth, sizeof(*r->slots));
	if (!r->slots) {
		free(r);
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	}
	/* Room for one operation per slot plus the CLOSEs still pending. */
	int rc = io_uring_queue_init(depth * 2, &r->ring, 0);
	if (rc < 0) {
		free(r->slots);
		free(r);
		return status_fail(err, errlen, rc, "io_uring setup: %s", strerror(-rc));
	}
	/* Reads that miss the page cache, and every statx and open, run on
	 * io_uring's worker threads; the default cap on those (a few per CPU)
	 * would leave most of depth waiting on a cold cache. */
	unsigned workers[2] = { depth, depth };
	io_uring_register_iowq_max_workers(&r->ring, workers);
	r->dirfd = dirfd;
	r->paths = paths;
	r->n = n;
	r->depth = depth;
	r->max_file = max_file ? max_file : DSFORMAT_MAX_PAYLOAD;
	for (unsigned i = 0; i < depth; i++)
		r->slots[i].fd = -1;
	*out = r;
	return 0;
}

unsigned pack_reader_depth(const struct pack_reader *r) { return r->depth; }

static struct io_uring_sqe *get_sqe(struct pack_reader *r, struct slot *s, unsigned op)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	if (!sqe) {
		/* The ring is full of unsubmitted entries: hand them over. */
		io_uring_submit(&r->ring);
		sqe = io_uring_get_sqe(&r->ring);
	}
	if (sqe) {
		io_uring_sqe_set_data64(sqe, (uint64_t)(s - r->slots) << OP_BITS | op);
		r->inflight++;
	}
	return sqe;
}

static void slot_finish(struct pack_reader *r, struct slot *s, int error)
{
	if (s->fd >= 0) {
		struct io_uring_sqe *sqe = get_sqe(r, s, OP_CLOSE);
		if (sqe)
			io_uring_prep_close(sqe, s->fd);
		else
			close(s->fd);
	}
	s->fd = -1;
	s->error = error;
	s->state = SLOT_DONE;
}

static void queue_statx(struct pack_reader *r, struct slot *s)
{
	struct io_uring_sqe *sqe = get_sqe(r, s, OP_STATX);
	if (!sqe)
		return slot_finish(r, s, -EBUSY);
	io_uring_prep_statx(sqe, r->dirfd, r->paths[s->index], 0, STATX_TYPE | STATX_SIZE, &s->stx);
}

static void queue_open(struct pack_reader *r, struct slot *s)
{
	struct io_uring_sqe *sqe = get_sqe(r, s, OP_OPEN);
	if (!sqe)
		return slot_finish(r, s, -EBUSY);
	io_uring_prep_openat(sqe, r->dirfd, r->paths[s->index], O_RDONLY | O_CLOEXEC, 0);
}

static void queue_read(struct pack_reader *r, struct slot *s)
{
	struct io_uring_sqe *sqe = get_sqe(r, s, OP_READ);
	if (!sqe)
		return slot_finish(r, s, -EBUSY);
	io_uring_prep_read(sqe, s->fd, s->buf + s->got, (unsigned)(s->size - s->got), s->got);
}

/* Start the next file(s) while their slots are free. */
static void fill(struct pack_reader *r)
{
	while (r->next_submit < r->n) {
		struct slot *s = &r->slots[r->next_submit % r->depth];
		if (s->state != SLOT_FREE)
			break;
		s->index = r->next_submit++;
		s->got = s->size = 0;
		s->error = 0;
		s->state = SLOT_BUSY;
		queue_statx(r, s);
	}
}

static void on_statx(struct pack_reader *r, struct slot *s, int res)
{
	if (res < 0)
		return slot_finish(r, s, res);
	if (S_ISDIR(s->stx.stx_mode))
		return slot_finish(r, s, -EISDIR);
	if (!S_ISREG(s->stx.stx_mode))
		return slot_finish(r, s, -EINVAL);
	if (s->stx.stx_size > r->max_file)
		return slot_finish(r, s, -EFBIG);
	s->size = (size_t)s->stx.stx_size;
	if (s->cap < s->size || !s->buf) {
		size_t cap = s->size > 4096 ? s->size : 4096;
		cap += cap / 4;
		uint8_t *nb = realloc(s->buf, cap);
		if (!nb)
			return slot_finish(r, s, -ENOMEM);
		s->buf = nb;
		s->cap = cap;
	}
	if (s->size == 0)
		return slot_finish(r, s, 0);
	queue_open(r, s);
}

static void on_read(struct pack_reader *r, struct slot *s, int res)
{
	if (res < 0)
		return slot_finish(r, s, res);
	if (res == 0) {
		/* The file shrank after statx: keep what was read. */
		s->size = s->got;
		return slot_finish(r, s, 0);
	}
	s->got += (size_t)res;
	if (s->got < s->size)
		return queue_read(r, s); /* short read: continue at the new offset */
	slot_finish(r, s, 0);
}

static void on_cqe(struct pack_reader *r, uint64_t data, int res)
{
	struct slot *s = &r->slots[data >> OP_BITS];
	unsigned op = data & ((1u << OP_BITS) - 1);
	r->inflight--;
	if (op == OP_CLOSE)
		return;
	if (res == -EINTR || res == -EAGAIN) {
		if (op == OP_STATX)
			return queue_statx(r, s);
		if (op == OP_OPEN)
			return queue_open(r, s);
		return queue_read(r, s);
	}
	if (op == OP_STATX)
		return on_statx(r, s, res);
	if (op == OP_OPEN) {
		if (res < 0)
			return slot_finish(r, s, res);
		s->fd = res;
		return queue_read(r, s);
	}
	on_read(r, s, res);
}

int pack_reader_next(struct pack_reader *r, struct pack_read *out, char *err, size_t errlen)
{
	if (r->next_deliver >= r->n)
		return 0;
	struct slot *want = &r->slots[r->next_deliver % r->depth];
	for (;;) {
		fill(r);
		if (want->state == SLOT_DONE && want->index == r->next_deliver)
			break;
		if (want->state == SLOT_HELD || (want->state == SLOT_FREE && r->inflight == 0))
			return status_fail(err, errlen, -EDEADLK,
					   "file reader: all %u slots are held by the caller", r->depth);
		int rc = io_uring_submit_and_wait(&r->ring, 1);
		if (rc < 0 && rc != -EINTR)
			return status_fail(err, errlen, rc, "io_uring submit: %s", strerror(-rc));
		/* Reap everything that is ready, then loop to refill and check. */
		struct io_uring_cqe *cqe;
		while (io_uring_peek_cqe(&r->ring, &cqe) == 0) {
			uint64_t data = io_uring_cqe_get_data64(cqe);
			int res = cqe->res;
			io_uring_cqe_seen(&r->ring, cqe);
			on_cqe(r, data, res);
		}
	}
	want->state = SLOT_HELD;
	out->index = want->index;
	out->path = r->paths[want->index];
	out->error = want->error;
	out->data = want->error ? NULL : want->buf;
	out->len = want->error ? 0 : want->size;
	out->slot = (unsigned)(want - r->slots);
	r->next_deliver++;
	return 1;
}

const char *pack_read_strerror(int error)
{
	if (error == -EINVAL)
		return "not a regular file";
	if (error == -EFBIG)
		return "larger than the size limit";
	return strerror(-error);
}

void pack_reader_release(struct pack_reader *r, struct pack_read *rd)
{
	if (rd->slot < r->depth && r->slots[rd->slot].state == SLOT_HELD)
		r->slots[rd->slot].state = SLOT_FREE;
	rd->data = NULL;
}

void pack_reader_close(struct pack_reader *r)
{
	if (!r)
		return;
	/* Let operations in flight land before their buffers go away; files
	 * they open are closed below, no new ones are started. */
	while (r->inflight > 0) {
		struct io_uring_cqe *cqe;
		if (io_uring_submit_and_wait(&r->ring, 1) < 0 && io_uring_peek_cqe(&r->ring, &cqe) != 0)
			break;
		while (io_uring_peek_cqe(&r->ring, &cqe) == 0) {
			uint64_t data = io_uring_cqe_get_data64(cqe);
			struct slot *s = &r->slots[data >> OP_BITS];
			if ((data & ((1u << OP_BITS) - 1)) == OP_OPEN && cqe->res >= 0)
				s->fd = cqe->res;
			io_uring_cqe_seen(&r->ring, cqe);
			r->inflight--;
		}
	}
	io_uring_queue_exit(&r->ring);
	for (unsigned i = 0; i < r->depth; i++) {
		if (r->slots[i].fd >= 0)
			close(r->slots[i].fd);
		free(r->slots[i].buf);
	}
	free(r->slots);
	free(r);
}

/* ---- progress ---- */

void pack_progress_init(struct pack_progress *p, uint64_t total, int verbose)
{
	memset(p, 0, sizeof(*p));
	p->total = total;
	p->tty = isatty(STDERR_FILENO);
	p->verbose = verbose;
	p->start = p->last = pack_now();
	p->what = "files";
}

static void progress_draw(struct pack_progress *p, double now, int final)
{
	double el = now - p->start;
	double fps = el > 0 ? (double)p->files / el : 0, mbs = el > 0 ? (double)p->bytes / el / 1e6 : 0;
	char eta[32] = "";
	if (!final && fps > 0 && p->total > p->files) {
		unsigned long s = (unsigned long)((double)(p->total - p->files) / fps + 0.5);
		snprintf(eta, sizeof(eta), "  ETA %lu:%02lu", s / 60, s % 60);
	} else if (final) {
		snprintf(eta, sizeof(eta), "  in %.1f s", el);
	}
	if (p->tty)
		fputs("\r\033[K", stderr);
	fprintf(stderr, "packer: %llu/%llu %s  %.0f %s/s  %.1f MB/s%s", (unsigned long long)p->files,
		(unsigned long long)p->total, p->what, fps, p->what, mbs, eta);
	if (p->tty && !final) {
		progress_showing = 1;
	} else {
		fputc('\n', stderr);
		progress_showing = 0;
	}
	fflush(stderr);
}

void pack_progress_add(struct pack_progress *p, uint64_t files, uint64_t bytes)
{
	p->files += files;
	p->bytes += bytes;
	if (!p->tty && !p->verbose)
		return;
	/* Checking the clock every file costs a vDSO call: cheap enough. */
	double now = pack_now();
	if (now - p->last < (p->tty ? 0.25 : 2.0))
		return;
	p->last = now;
	progress_draw(p, now, 0);
}

void pack_progress_done(struct pack_progress *p)
{
	if (!p->tty && !p->verbose)
		return;
	progress_draw(p, pack_now(), 1);
}
