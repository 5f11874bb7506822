/* pack_dest.c — temporary destination, stale-leftover cleanup, signal
 * cleanup and atomic rename of a dataset (see pack_dest.h). */
#include "pack_dest.h"

#include "pack_msg.h"
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
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strcmp(e->d_name, "data.mdb") && strcmp(e->d_name, "lock.mdb"))
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
