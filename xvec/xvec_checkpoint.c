/* xvec_checkpoint.c — the x-vector checkpoint file (format in xvec_checkpoint.h).
 *
 * The whole file is built in memory and checked in memory: checkpoints are
 * tens of megabytes at most, and a single buffer keeps validation
 * all-or-nothing. */
#include "xvec_checkpoint.h"
#include "bytes.h"
#include "crc32c.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "xvec_checkpoint stores float arrays in host order, which must be little-endian"
#endif

#define XVEC_CKPT_HEADER 80
static const char xvec_ckpt_magic[8] = "FDRXVEC";

static int xvec_write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int xvec_fsync_dir(const char *path)
{
	char *copy = strdup(path);
	int fd, rc = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		rc = -errno;
	else if (fsync(fd) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	free(copy);
	return rc;
}

int xvec_checkpoint_save(struct xvec_model *m, const char *path, const void *blob, size_t bloblen,
			 char *err, size_t errlen)
{
	const struct xvec_options *o = xvec_model_options(m);
	struct adam *a = xvec_model_adam(m);
	size_t n, nb;
	float *params = xvec_model_params(m, &n);
	float *bn = xvec_model_bn_stats(m, &nb);
	size_t total = XVEC_CKPT_HEADER + sizeof(float) * (3 * n + nb) + bloblen + 4;
	uint8_t *buf, *p;
	char *tmp;
	int fd, rc;

	if (bloblen > XVEC_CHECKPOINT_MAX_BLOB || (bloblen && !blob))
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"checkpoint %s: blob of %zu bytes is missing or over the %u-byte limit",
			path, bloblen, XVEC_CHECKPOINT_MAX_BLOB);
	buf = malloc(total);
	if (!buf)
		return status_fail(err, errlen, -ENOMEM, "checkpoint %s: out of memory", path);
	memset(buf, 0, XVEC_CKPT_HEADER);
	memcpy(buf, xvec_ckpt_magic, 8);
	bytes_put_le32(buf + 8, XVEC_CHECKPOINT_VERSION);
	bytes_put_le32(buf + 12, (uint32_t)o->feat_dim);
	bytes_put_le32(buf + 16, (uint32_t)o->width);
	bytes_put_le32(buf + 20, (uint32_t)o->pool_width);
	bytes_put_le32(buf + 24, (uint32_t)o->embed);
	bytes_put_le32(buf + 28, (uint32_t)o->num_speakers);
	bytes_put_le64(buf + 32, o->seed);
	bytes_put_le64(buf + 40, a->t);
	bytes_put_le64(buf + 48, n);
	bytes_put_le64(buf + 56, nb);
	bytes_put_le64(buf + 64, bloblen);
	p = buf + XVEC_CKPT_HEADER;
	memcpy(p, params, sizeof(float) * n), p += sizeof(float) * n;
	memcpy(p, a->m, sizeof(float) * n), p += sizeof(float) * n;
	memcpy(p, a->v, sizeof(float) * n), p += sizeof(float) * n;
	memcpy(p, bn, sizeof(float) * nb), p += sizeof(float) * nb;
	if (bloblen)
		memcpy(p, blob, bloblen);
	p += bloblen;
	bytes_put_le32(p, crc32c(0, buf, total - 4));

	if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0) {
		free(buf);
		return status_fail(err, errlen, -ENOMEM, "checkpoint %s: out of memory", path);
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		rc = status_fail(err, errlen, -errno,
				 "checkpoint %s: cannot create a temporary file: %s", path,
				 status_str(-errno));
		goto out;
	}
	rc = xvec_write_all(fd, buf, total);
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		rc = status_fail(err, errlen, rc, "checkpoint %s: cannot write: %s", path,
				 status_str(rc));
		goto out;
	}
	rc = xvec_fsync_dir(path);
	if (rc)
		rc = status_fail(err, errlen, rc, "checkpoint %s: cannot sync its directory: %s",
				 path, status_str(rc));
out:
	free(tmp);
	free(buf);
	return rc;
}

/* Open path for reading if it is a regular file. O_NONBLOCK so that a FIFO
 * is refused instead of waiting for a writer (regular files ignore it). */
static int xvec_open_regular(const char *path, struct stat *st, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return status_fail(err, errlen, -errno, "checkpoint %s: cannot open: %s", path,
				   status_str(-errno));
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return status_fail(
			err, errlen, FEEDER_EFORMAT,
			"checkpoint %s: not a regular file (a FIFO, device or directory?)", path);
	}
	return fd;
}

/* Read up to n bytes from fd at its position; the count, or -errno. */
static ssize_t xvec_read_full(int fd, uint8_t *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static int xvec_read_file(const char *path, uint8_t **out, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	int fd = xvec_open_regular(path, &st, err, errlen);
	uint8_t *buf;

	if (fd < 0)
		return fd;
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return status_fail(err, errlen, -ENOMEM, "checkpoint %s: out of memory", path);
	}
	ssize_t r = xvec_read_full(fd, buf, (size_t)st.st_size);
	close(fd);
	if (r != (ssize_t)st.st_size) {
		int rc = r < 0 ? (int)r : FEEDER_ECORRUPT;

		free(buf);
		return status_fail(err, errlen, rc, "checkpoint %s: read failed: %s", path,
				   status_str(rc));
	}
	*out = buf;
	*len = (size_t)r;
	return 0;
}

/* The model's sizes from the header h into o, each in range, named in a
 * message when not. */
static int xvec_header_sizes(const uint8_t *h, const char *path, struct xvec_options *o, char *err,
			     size_t errlen)
{
	int *dst[] = { &o->feat_dim, &o->width, &o->pool_width, &o->embed, &o->num_speakers };
	static const char *const names[] = { "feat_dim", "width", "pool_width", "embed",
					     "speakers" };
	for (int i = 0; i < 5; i++) {
		uint32_t v = bytes_le32(h + 12 + 4 * i), lo = i == 4 ? 2 : 1;
		uint32_t hi = i == 4 ? XVEC_MAX_SPEAKERS : XVEC_MAX_SIZE;
		if (v < lo || v > hi)
			return status_fail(err, errlen, FEEDER_ECORRUPT,
					   "checkpoint %s: header: %s %u is out of range %u..%u",
					   path, names[i], v, lo, hi);
		*dst[i] = (int)v;
	}
	return 0;
}

/* The header h of a file of len bytes, every field checked: magic,
 * version, the model's sizes in range and agreeing with the parameter and
 * statistics counts, the blob within its limit, the length what they add up
 * to, the step in range. Fills o with the shape and seed, the rest defaulted. */
static int xvec_check_header(const uint8_t *h, size_t len, const char *path, struct xvec_options *o,
			     char *err, size_t errlen)
{
	if (len < 12 || memcmp(h, xvec_ckpt_magic, 8) != 0)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "checkpoint %s: not an x-vector checkpoint (bad magic)", path);
	if (bytes_le32(h + 8) != XVEC_CHECKPOINT_VERSION)
		return status_fail(err, errlen, FEEDER_EVERSION,
				   "checkpoint %s: version %u, this build reads version %d", path,
				   bytes_le32(h + 8), XVEC_CHECKPOINT_VERSION);
	if (len < XVEC_CKPT_HEADER + 4)
		return status_fail(err, errlen, FEEDER_ECORRUPT,
				   "checkpoint %s: truncated (%zu bytes, shorter than the header)",
				   path, len);
	xvec_options_default(o);
	int rc = xvec_header_sizes(h, path, o, err, errlen);
	if (rc)
		return rc;
	o->seed = bytes_le64(h + 32);
	uint64_t step = bytes_le64(h + 40), fn = bytes_le64(h + 48), fnb = bytes_le64(h + 56);
	uint64_t fblob = bytes_le64(h + 64);
	size_t n, nb;
	xvec_model_sizes(o, &n, &nb);
	if (fn != n || fnb != nb)
		return status_fail(
			err, errlen, FEEDER_ECORRUPT,
			"checkpoint %s: header: %llu parameters and %llu statistics, but its "
			"sizes make %zu and %zu",
			path, (unsigned long long)fn, (unsigned long long)fnb, n, nb);
	if (fblob > XVEC_CHECKPOINT_MAX_BLOB ||
	    len != XVEC_CKPT_HEADER + 4 * (3 * n + nb) + fblob + 4)
		return status_fail(err, errlen, FEEDER_ECORRUPT,
				   "checkpoint %s: truncated or damaged: %zu bytes, but its header "
				   "declares %zu parameters, %zu statistics and a %llu-byte blob",
				   path, len, n, nb, (unsigned long long)fblob);
	if (step >= XVEC_MAX_STEP)
		return status_fail(
			err, errlen, FEEDER_ECORRUPT,
			"checkpoint %s: header: step %llu is beyond the %llu a model can take",
			path, (unsigned long long)step, (unsigned long long)XVEC_MAX_STEP);
	return 0;
}

/* The header's shape is m's. */
static int xvec_same_shape(const struct xvec_options *f, const struct xvec_options *o,
			   const char *path, char *err, size_t errlen)
{
	if (f->feat_dim == o->feat_dim && f->width == o->width && f->pool_width == o->pool_width &&
	    f->embed == o->embed && f->num_speakers == o->num_speakers)
		return 0;
	return status_fail(err, errlen, FEEDER_EINVAL,
			   "checkpoint %s: model shape feat_dim %d width %d pool %d embed %d "
			   "speakers %d differs from this model's %d/%d/%d/%d/%d",
			   path, f->feat_dim, f->width, f->pool_width, f->embed, f->num_speakers,
			   o->feat_dim, o->width, o->pool_width, o->embed, o->num_speakers);
}

/* The file buf of len bytes, checked whole before anything is copied. */
static int xvec_check_file(struct xvec_model *m, const uint8_t *buf, size_t len, const char *path,
			   size_t blobcap, char *err, size_t errlen)
{
	struct xvec_options f;
	size_t n, nb;
	int rc = xvec_check_header(buf, len, path, &f, err, errlen);

	if (rc)
		return rc;
	uint32_t want = bytes_le32(buf + len - 4), have = crc32c(0, buf, len - 4);
	if (want != have)
		return status_fail(err, errlen, FEEDER_ECORRUPT,
				   "checkpoint %s: CRC-32C mismatch (stored %08x, computed %08x)",
				   path, want, have);
	rc = xvec_same_shape(&f, xvec_model_options(m), path, err, errlen);
	if (rc)
		return rc;
	uint64_t fblob = bytes_le64(buf + 64);
	if (fblob > blobcap)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"checkpoint %s: its %llu-byte blob does not fit the %zu bytes given", path,
			(unsigned long long)fblob, blobcap);
	xvec_model_params(m, &n);
	xvec_model_bn_stats(m, &nb);
	const float *p = (const float *)(const void *)(buf + XVEC_CKPT_HEADER);
	char why[256];
	if (xvec_model_check_state(m, p, p + n, p + 2 * n, p + 3 * n, why, sizeof(why)))
		return status_fail(err, errlen, FEEDER_ECORRUPT, "checkpoint %s: %s", path, why);
	return 0;
}

int xvec_checkpoint_load(struct xvec_model *m, const char *path, void *blob, size_t blobcap,
			 size_t *bloblen, char *err, size_t errlen)
{
	struct adam *a = xvec_model_adam(m);
	size_t n, nb, len = 0;
	float *params = xvec_model_params(m, &n);
	float *bn = xvec_model_bn_stats(m, &nb);
	uint8_t *buf = NULL;
	int rc = xvec_read_file(path, &buf, &len, err, errlen);

	if (rc)
		return rc;
	rc = xvec_check_file(m, buf, len, path, blobcap, err, errlen);
	if (rc)
		goto out;
	uint64_t fblob = bytes_le64(buf + 64);
	const uint8_t *p = buf + XVEC_CKPT_HEADER;
	memcpy(params, p, sizeof(float) * n), p += sizeof(float) * n;
	memcpy(a->m, p, sizeof(float) * n), p += sizeof(float) * n;
	memcpy(a->v, p, sizeof(float) * n), p += sizeof(float) * n;
	memcpy(bn, p, sizeof(float) * nb), p += sizeof(float) * nb;
	if (fblob)
		memcpy(blob, p, fblob);
	if (bloblen)
		*bloblen = fblob;
	a->t = bytes_le64(buf + 40);
	xvec_model_set_seed(m, bytes_le64(buf + 32));
out:
	free(buf);
	return rc;
}

int xvec_checkpoint_peek(const char *path, struct xvec_options *o, char *err, size_t errlen)
{
	uint8_t h[XVEC_CKPT_HEADER];
	struct stat st;
	int fd = xvec_open_regular(path, &st, err, errlen);

	if (fd < 0)
		return fd;
	ssize_t r = xvec_read_full(fd, h, sizeof(h));
	close(fd);
	if (r < 0)
		return status_fail(err, errlen, (int)r, "checkpoint %s: read failed: %s", path,
				   status_str((int)r));
	/* A header shorter than the file says is a truncated file. */
	size_t len = r == (ssize_t)sizeof(h) ? (size_t)st.st_size : (size_t)r;
	return xvec_check_header(h, len, path, o, err, errlen);
}
