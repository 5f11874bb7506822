/* pack_reader.c — the io_uring batch file reader (see pack_reader.h).
 *
 * The reader does all its file I/O through io_uring (statx, open, read,
 * close), so up to depth files are in flight while the caller CRCs and
 * writes earlier ones. Slots form a ring indexed by file index modulo depth;
 * a file is started only when its slot is free, so files come back strictly
 * in index order. */
#include "pack_reader.h"

#include "dsformat.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file goes through three io_uring operations, each submitted when the
 * previous one completes: STATX (type and size, without opening: a FIFO in
 * the tree is reported, never opened, so it cannot hang us, and a file over
 * the size limit is never read), OPENAT, READ (repeated after a short read;
 * with a sniff, the first read stops at PACK_READER_HEAD bytes and the rest
 * is read only if the sniff accepts them); then an unwaited CLOSE. In
 * direct mode the READ stops at PACK_READER_DIRECT_HEAD, an unwaited
 * FADVISE (WILLNEED) starts the rest from the disk, and the CLOSE waits
 * until the caller has read the rest and released the file. On a cold cache the
 * metadata reads then overlap just like the data reads. user_data carries
 * the slot number and the operation, because a CLOSE may complete after its
 * slot has moved on to the next file.
 *
 * Confined (the beneath option), every path is resolved by the kernel
 * under dirfd (openat2 with RESOLVE_BENEATH: an absolute path, a ".."
 * or a symbolic link that leaves it fails with EXDEV, checked at each
 * open, so no race between a check and the open). statx has no such
 * flag, so there a file starts with an O_PATH openat2 (PATH) and its
 * STATX looks at that descriptor: nothing about a file outside dirfd is
 * read either, not even its size. */
enum slot_state { SLOT_FREE, SLOT_BUSY, SLOT_DONE, SLOT_HELD };
enum { OP_STATX, OP_OPEN, OP_READ, OP_CLOSE, OP_FADVISE, OP_PATH, OP_BITS = 3 };

struct slot {
	enum slot_state state;
	size_t index;
	int fd;
	int pathfd; /* confined: the O_PATH descriptor its STATX reads */
	int error;
	uint8_t *buf;
	size_t cap, size, got;
	size_t want; /* end of the current read: the head, then size */
	int sniffed; /* the head was accepted (or there is no sniff) */
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
	int (*sniff)(const uint8_t *head, size_t len);
	const char *sniff_fail;
	int direct;
	int beneath;
	struct open_how how_path, how_read; /* beneath: openat2's, read at submission */
	char too_big[80];                   /* pack_reader_strerror's words for -EFBIG */
};

/* A slot keeps its buffer for the next file unless it grew past this: the
 * common small files then cost no allocation, and a few large ones do not
 * stay resident in every slot. */
#define KEEP_CAP ((size_t)4 << 20)

/* "64 MiB", "100 KiB" or "12345 bytes". */
static void size_words(char *out, size_t len, size_t n)
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(out, len, "%zu MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(out, len, "%zu KiB", n >> 10);
	else
		snprintf(out, len, "%zu bytes", n);
}

int pack_reader_open(int dirfd, const char *const *paths, size_t n,
		     const struct pack_reader_opts *o, struct pack_reader **out, char *err,
		     size_t errlen)
{
	static const struct pack_reader_opts none = { 0 };
	if (!o)
		o = &none;
	unsigned depth = o->depth;
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
	r->max_file = o->max_file ? o->max_file : DSFORMAT_MAX_PAYLOAD;
	r->sniff = o->sniff;
	r->sniff_fail = o->sniff_fail ? o->sniff_fail : "not the expected kind of file";
	r->direct = o->direct;
	r->beneath = o->beneath;
	r->how_path = (struct open_how){ .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH };
	r->how_read =
		(struct open_how){ .flags = O_RDONLY | O_CLOEXEC, .resolve = RESOLVE_BENEATH };
	char lim[32];
	size_words(lim, sizeof(lim), r->max_file);
	snprintf(r->too_big, sizeof(r->too_big), "larger than the %s limit (--max-file-size)", lim);
	for (unsigned i = 0; i < depth; i++)
		r->slots[i].fd = r->slots[i].pathfd = -1;
	*out = r;
	return 0;
}

unsigned pack_reader_depth(const struct pack_reader *r)
{
	return r->depth;
}

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

static void slot_close(struct pack_reader *r, struct slot *s)
{
	if (s->fd >= 0) {
		struct io_uring_sqe *sqe = get_sqe(r, s, OP_CLOSE);
		if (sqe)
			io_uring_prep_close(sqe, s->fd);
		else
			close(s->fd);
	}
	s->fd = -1;
}

static void slot_finish(struct pack_reader *r, struct slot *s, int error)
{
	slot_close(r, s);
	s->error = error;
	s->state = SLOT_DONE;
}

/* Direct mode: the head is in and accepted; the file stays open for
 * pack_reader_read_into and is closed by pack_reader_release. */
static void slot_finish_open(struct slot *s)
{
	s->error = 0;
	s->state = SLOT_DONE;
}

/* Confined, a file's STATX waits for its PATH open and reads that. */
static void queue_statx(struct pack_reader *r, struct slot *s)
{
	int path_first = r->beneath && s->pathfd < 0;
	struct io_uring_sqe *sqe = get_sqe(r, s, path_first ? OP_PATH : OP_STATX);
	if (!sqe)
		return slot_finish(r, s, -EBUSY);
	if (path_first)
		io_uring_prep_openat2(sqe, r->dirfd, r->paths[s->index], &r->how_path);
	else if (r->beneath)
		io_uring_prep_statx(sqe, s->pathfd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_SIZE,
				    &s->stx);
	else
		io_uring_prep_statx(sqe, r->dirfd, r->paths[s->index], 0, STATX_TYPE | STATX_SIZE,
				    &s->stx);
}

static void queue_open(struct pack_reader *r, struct slot *s)
{
	struct io_uring_sqe *sqe = get_sqe(r, s, OP_OPEN);
	if (!sqe)
		return slot_finish(r, s, -EBUSY);
	if (r->beneath)
		io_uring_prep_openat2(sqe, r->dirfd, r->paths[s->index], &r->how_read);
	else
		io_uring_prep_openat(sqe, r->dirfd, r->paths[s->index], O_RDONLY | O_CLOEXEC, 0);
}

static void drop_pathfd(struct slot *s)
{
	if (s->pathfd >= 0)
		close(s->pathfd);
	s->pathfd = -1;
}

static void queue_read(struct pack_reader *r, struct slot *s)
{
	struct io_uring_sqe *sqe = get_sqe(r, s, OP_READ);
	if (!sqe)
		return slot_finish(r, s, -EBUSY);
	io_uring_prep_read(sqe, s->fd, s->buf + s->got, (unsigned)(s->want - s->got), s->got);
}

/* Start the next file(s) while their slots are free. */
static void fill(struct pack_reader *r)
{
	while (r->next_submit < r->n) {
		struct slot *s = &r->slots[r->next_submit % r->depth];
		if (s->state != SLOT_FREE)
			break;
		s->index = r->next_submit++;
		s->got = s->size = s->want = 0;
		s->sniffed = !r->sniff;
		s->error = 0;
		s->state = SLOT_BUSY;
		queue_statx(r, s);
	}
}

/* Make s->buf hold need bytes, with a quarter more for the files after. */
static int slot_reserve(struct slot *s, size_t need)
{
	if (s->buf && s->cap >= need)
		return 0;
	size_t cap = need > 4096 ? need : 4096;
	cap += cap / 4;
	uint8_t *nb = realloc(s->buf, cap);
	if (!nb)
		return -ENOMEM;
	s->buf = nb;
	s->cap = cap;
	return 0;
}

static void on_statx(struct pack_reader *r, struct slot *s, int res)
{
	drop_pathfd(s);
	if (res < 0)
		return slot_finish(r, s, res);
	if (S_ISDIR(s->stx.stx_mode))
		return slot_finish(r, s, -EISDIR);
	if (!S_ISREG(s->stx.stx_mode))
		return slot_finish(r, s, -EINVAL);
	if (s->stx.stx_size > r->max_file)
		return slot_finish(r, s, -EFBIG);
	s->size = (size_t)s->stx.stx_size;
	size_t head = r->direct ? PACK_READER_DIRECT_HEAD : PACK_READER_HEAD;
	s->want = (r->direct || !s->sniffed) && s->size > head ? head : s->size;
	if (slot_reserve(s, s->want))
		return slot_finish(r, s, -ENOMEM);
	if (s->size == 0)
		return slot_finish(r, s, s->sniffed || r->sniff(s->buf, 0) ? 0 : -EILSEQ);
	queue_open(r, s);
}

static void on_read(struct pack_reader *r, struct slot *s, int res)
{
	if (res < 0)
		return slot_finish(r, s, res);
	if (res == 0) /* the file shrank after statx: keep what was read */
		s->size = s->want = s->got;
	s->got += (size_t)res;
	if (s->got < s->want)
		return queue_read(r, s); /* short read: continue at the new offset */
	if (!s->sniffed) {
		/* The head is in: refuse a file of the wrong kind before
		 * reading (and holding) the rest of it. */
		s->sniffed = 1;
		if (!r->sniff(s->buf, s->got))
			return slot_finish(r, s, -EILSEQ);
		if (s->got < s->size && !r->direct) {
			s->want = s->size;
			if (slot_reserve(s, s->size))
				return slot_finish(r, s, -ENOMEM);
			return queue_read(r, s);
		}
	}
	if (r->direct && s->got < s->size)
		return slot_finish_open(s);
	slot_finish(r, s, 0);
}

static void on_cqe(struct pack_reader *r, uint64_t data, int res)
{
	struct slot *s = &r->slots[data >> OP_BITS];
	unsigned op = data & ((1u << OP_BITS) - 1);
	r->inflight--;
	if (op == OP_CLOSE || op == OP_FADVISE)
		return;
	if (res == -EINTR || res == -EAGAIN) {
		if (op == OP_STATX || op == OP_PATH)
			return queue_statx(r, s);
		if (op == OP_OPEN)
			return queue_open(r, s);
		return queue_read(r, s);
	}
	if (op == OP_PATH) {
		if (res < 0)
			return slot_finish(r, s, res);
		s->pathfd = res;
		return queue_statx(r, s);
	}
	if (op == OP_STATX)
		return on_statx(r, s, res);
	if (op == OP_OPEN) {
		if (res < 0)
			return slot_finish(r, s, res);
		s->fd = res;
		if (r->direct && s->size > s->want) {
			/* The rest is read later, synchronously, by the caller:
			 * start it on its way from the disk now. */
			struct io_uring_sqe *sqe = get_sqe(r, s, OP_FADVISE);
			if (sqe)
				io_uring_prep_fadvise(sqe, s->fd, 0, (off_t)s->size,
						      POSIX_FADV_WILLNEED);
		}
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
					   "file reader: all %u slots are held by the caller",
					   r->depth);
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
	out->got = want->error ? 0 : want->got;
	out->slot = (unsigned)(want - r->slots);
	r->next_deliver++;
	return 1;
}

const char *pack_reader_strerror(const struct pack_reader *r, int error)
{
	if (error == -EINVAL)
		return "not a regular file";
	if (error == -EFBIG)
		return r->too_big;
	if (error == -EILSEQ)
		return r->sniff_fail;
	if (error == -ENODATA)
		return "shorter than when it was listed (changed while being packed)";
	if (error == -EXDEV)
		return "outside the source folder (--confine)";
	return strerror(-error);
}

int pack_reader_read_into(struct pack_reader *r, const struct pack_read *rd, uint8_t *dst)
{
	if (rd->slot >= r->depth || r->slots[rd->slot].state != SLOT_HELD || rd->error)
		return -EINVAL;
	const struct slot *s = &r->slots[rd->slot];
	memcpy(dst, s->buf, s->got);
	size_t at = s->got;
	while (at < s->size) {
		ssize_t n = pread(s->fd, dst + at, s->size - at, (off_t)at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		at += (size_t)n;
	}
	return 0;
}

void pack_reader_release(struct pack_reader *r, struct pack_read *rd)
{
	if (rd->slot < r->depth && r->slots[rd->slot].state == SLOT_HELD) {
		struct slot *s = &r->slots[rd->slot];
		slot_close(r, s);
		s->state = SLOT_FREE;
		if (s->cap > KEEP_CAP) {
			free(s->buf);
			s->buf = NULL;
			s->cap = 0;
		}
	}
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
		if (io_uring_submit_and_wait(&r->ring, 1) < 0 &&
		    io_uring_peek_cqe(&r->ring, &cqe) != 0)
			break;
		while (io_uring_peek_cqe(&r->ring, &cqe) == 0) {
			uint64_t data = io_uring_cqe_get_data64(cqe);
			struct slot *s = &r->slots[data >> OP_BITS];
			unsigned op = data & ((1u << OP_BITS) - 1);
			if (op == OP_OPEN && cqe->res >= 0)
				s->fd = cqe->res;
			if (op == OP_PATH && cqe->res >= 0)
				s->pathfd = cqe->res;
			io_uring_cqe_seen(&r->ring, cqe);
			r->inflight--;
		}
	}
	io_uring_queue_exit(&r->ring);
	for (unsigned i = 0; i < r->depth; i++) {
		if (r->slots[i].fd >= 0)
			close(r->slots[i].fd);
		drop_pathfd(&r->slots[i]);
		free(r->slots[i].buf);
	}
	free(r->slots);
	free(r);
}
