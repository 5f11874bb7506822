/* pack_dest.c — temporary destination, stale-leftover cleanup, signal
 * cleanup and atomic rename of a dataset (see pack_dest.h). */
#include "pack_dest.h"

#include "pack_msg.h"

#include "manifest.h"
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Paths the signal handler unlinks; precomputed because the handler may only
 * call async-signal-safe functions. Shard files are named in the handler
 * itself (by hand: snprintf is not async-signal-safe), up to the count
 * pack_dest_shard_path has handed out. */
#define SIG_FILES 4
static char sig_files[SIG_FILES][PATH_MAX + 16];
static char sig_dir[PATH_MAX];
static char sig_shard[PATH_MAX + 32];
static size_t sig_shard_prefix; /* bytes of "<tmp>/shard-" in sig_shard */
static volatile sig_atomic_t sig_nshards;
static volatile sig_atomic_t sig_armed;
static struct sigaction sig_old[3];
static const int sig_list[3] = { SIGINT, SIGTERM, SIGHUP };

/* "<prefix>NNNNN.mdb" for shard i into sig_shard: at least five digits, as
 * pack_dest_shard_name writes them. */
static void sig_shard_path(unsigned i)
{
	char digits[12];
	int n = 0;
	do {
		digits[n++] = (char)('0' + i % 10);
		i /= 10;
	} while (i);
	while (n < 5)
		digits[n++] = '0';
	size_t k = sig_shard_prefix;
	while (n)
		sig_shard[k++] = digits[--n];
	memcpy(sig_shard + k, ".mdb", 5);
}

static void on_signal(int sig)
{
	int saved = errno; /* the handler's unlinks must not change it */
	if (sig_armed) {
		for (int i = 0; i < SIG_FILES; i++)
			unlink(sig_files[i]);
		for (unsigned i = 0; i < (unsigned)sig_nshards; i++) {
			sig_shard_path(i);
			unlink(sig_shard);
		}
		rmdir(sig_dir);
		sig_armed = 0;
	}
	errno = saved;
	signal(sig, SIG_DFL);
	raise(sig);
}

static void arm_signals(const char *tmp)
{
	static const char *names[SIG_FILES] = { "data.mdb", "lock.mdb", "packer.pid",
						MANIFEST_NAME };
	for (int i = 0; i < SIG_FILES; i++)
		snprintf(sig_files[i], sizeof(sig_files[i]), "%s/%s", tmp, names[i]);
	snprintf(sig_dir, sizeof(sig_dir), "%s", tmp);
	snprintf(sig_shard, sizeof(sig_shard), "%s/shard-", tmp);
	sig_shard_prefix = strlen(sig_shard);
	sig_nshards = 0;
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

/* A name pack_dest_shard_name writes: "shard-" digits ".mdb". */
static int is_shard_name(const char *name)
{
	if (strncmp(name, "shard-", 6))
		return 0;
	size_t n = strspn(name + 6, "0123456789");
	return n >= 5 && !strcmp(name + 6 + n, ".mdb");
}

/* What --force may replace: an empty directory or one holding only LMDB's
 * data.mdb and lock.mdb (a dataset), or a manifest and its shard files (a
 * sharded one). Anything else might be someone's files. */
static int replaceable_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int ok = 1;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strcmp(e->d_name, "data.mdb") && strcmp(e->d_name, "lock.mdb") &&
		    strcmp(e->d_name, MANIFEST_NAME) && !is_shard_name(e->d_name))
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
		if (strncmp(e->d_name, base, blen) != 0 ||
		    strncmp(e->d_name + blen, ".tmp-", 5) != 0 || strlen(e->d_name + blen + 5) != 6)
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
					   "%s: already exists (use --force to replace it)",
					   d->dest);
		if (!S_ISDIR(st.st_mode) || !replaceable_dir(d->dest))
			return status_fail(
				err, errlen, -EEXIST,
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

void pack_dest_shard_name(unsigned i, char *out, size_t outlen)
{
	snprintf(out, outlen, "shard-%05u.mdb", i);
}

static void close_data_fd(struct pack_dest *d);

int pack_dest_shard_path(struct pack_dest *d, unsigned i, char *out, size_t outlen, char *err,
			 size_t errlen)
{
	char name[32];
	pack_dest_shard_name(i, name, sizeof(name));
	int n = snprintf(out, outlen, "%s/%s", d->tmp, name);
	if (n < 0 || (size_t)n >= outlen)
		return status_fail(err, errlen, -ENAMETOOLONG, "%s/%s: path too long", d->tmp,
				   name);
	/* before the file exists, so a signal never leaves it behind */
	if (sig_armed && (unsigned)sig_nshards <= i)
		sig_nshards = (sig_atomic_t)(i + 1);
	close_data_fd(d);
	snprintf(d->data_name, sizeof(d->data_name), "%s", name);
	return 0;
}

/* fsync every file in dir (a dataset's one data.mdb, or its shards and
 * manifest). */
static int fsync_files(const char *dir, char *err, size_t errlen)
{
	DIR *dp = opendir(dir);
	if (!dp)
		return status_fail(err, errlen, -errno, "%s: %s", dir, strerror(errno));
	int rc = 0;
	struct dirent *e;
	while (!rc && (e = readdir(dp))) {
		if (e->d_name[0] == '.')
			continue;
		char path[PATH_MAX + 300];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		rc = fsync_path(path, O_RDONLY);
		if (rc == -ENOENT)
			rc = 0;
		else if (rc)
			status_fail(err, errlen, rc, "%s: fsync: %s", path, strerror(-rc));
	}
	closedir(dp);
	return rc;
}

void pack_dest_writeback(struct pack_dest *d)
{
	if (!d->active)
		return;
	if (d->data_fd < 0) {
		char path[PATH_MAX + 48];
		if (snprintf(path, sizeof(path), "%s/%s", d->tmp,
			     d->data_name[0] ? d->data_name : "data.mdb") >= (int)sizeof(path))
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
	if ((rc = fsync_files(d->tmp, err, errlen)))
		goto fail;
	if ((rc = fsync_path(d->tmp, O_RDONLY | O_DIRECTORY))) {
		status_fail(err, errlen, rc, "%s: fsync: %s", d->tmp, strerror(-rc));
		goto fail;
	}
	struct stat st;
	if (lstat(d->dest, &st) == 0) {
		if (!d->force || !S_ISDIR(st.st_mode) || !replaceable_dir(d->dest)) {
			rc = status_fail(err, errlen, -EEXIST,
					 "%s: appeared while packing; not replacing it", d->dest);
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
			status_fail(err, errlen, rc, "%s: cannot replace it: %s", d->dest,
				    strerror(-rc));
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
