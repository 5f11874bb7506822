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

int xvec_checkpoint_save(struct xvec_model *m, const char *path, const void *blob,
			 size_t bloblen, char *err, size_t errlen)
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
		return status_fail(err, errlen, FEEDER_EINVAL,
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
		rc = status_fail(err, errlen, -errno, "checkpoint %s: cannot create a temporary file: %s",
				 path, status_str(-errno));
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
		rc = status_fail(err, errlen, rc, "checkpoint %s: cannot write: %s", path, status_str(rc));
		goto out;
	}
	rc = xvec_fsync_dir(path);
	if (rc)
		rc = status_fail(err, errlen, rc, "checkpoint %s: cannot sync its directory: %s", path,
				 status_str(rc));
out:
	free(tmp);
	free(buf);
	return rc;
}

static int xvec_read_file(const char *path, uint8_t **out, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *buf = NULL;
	size_t got = 0;

	if (fd < 0)
		return status_fail(err, errlen, -errno, "checkpoint %s: cannot open: %s", path,
				   status_str(-errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return status_fail(err, errlen, FEEDER_EFORMAT, "checkpoint %s: not a regular file", path);
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return status_fail(err, errlen, -ENOMEM, "checkpoint %s: out of memory", path);
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int rc = r < 0 ? -errno : FEEDER_ECORRUPT;

			free(buf);
			close(fd);
			return status_fail(err, errlen, rc, "checkpoint %s: read failed: %s", path,
					   status_str(rc));
		}
		got += (size_t)r;
	}
	close(fd);
	*out = buf;
	*len = got;
	return 0;
}

int xvec_checkpoint_load(struct xvec_model *m, const char *path, void *blob, size_t blobcap,
			 size_t *bloblen, char *err, size_t errlen)
{
	const struct xvec_options *o = xvec_model_options(m);
	struct adam *a = xvec_model_adam(m);
	size_t n, nb, len = 0;
	float *params = xvec_model_params(m, &n);
	float *bn = xvec_model_bn_stats(m, &nb);
	uint8_t *buf = NULL;
	int rc = xvec_read_file(path, &buf, &len, err, errlen);

	if (rc)
		return rc;
	if (len < 12 || memcmp(buf, xvec_ckpt_magic, 8) != 0) {
		rc = status_fail(err, errlen, FEEDER_EFORMAT,
				 "checkpoint %s: not an x-vector checkpoint (bad magic)", path);
		goto out;
	}
	if (bytes_le32(buf + 8) != XVEC_CHECKPOINT_VERSION) {
		rc = status_fail(err, errlen, FEEDER_EVERSION,
				 "checkpoint %s: version %u, this build reads version %d", path,
				 bytes_le32(buf + 8), XVEC_CHECKPOINT_VERSION);
		goto out;
	}
	if (len < XVEC_CKPT_HEADER + 4) {
		rc = status_fail(err, errlen, FEEDER_ECORRUPT,
				 "checkpoint %s: truncated (%zu bytes, shorter than the header)", path, len);
		goto out;
	}
	uint64_t fn = bytes_le64(buf + 48), fnb = bytes_le64(buf + 56), fblob = bytes_le64(buf + 64);
	if (fn > SIZE_MAX / 16 || fnb > SIZE_MAX / 16 || fblob > XVEC_CHECKPOINT_MAX_BLOB ||
	    len != XVEC_CKPT_HEADER + 4 * (3 * fn + fnb) + fblob + 4) {
		rc = status_fail(err, errlen, FEEDER_ECORRUPT,
				 "checkpoint %s: truncated or damaged: %zu bytes, but its header "
				 "declares %llu parameters, %llu statistics and a %llu-byte blob",
				 path, len, (unsigned long long)fn, (unsigned long long)fnb,
				 (unsigned long long)fblob);
		goto out;
	}
	uint32_t want = bytes_le32(buf + len - 4), have = crc32c(0, buf, len - 4);
	if (want != have) {
		rc = status_fail(err, errlen, FEEDER_ECORRUPT,
				 "checkpoint %s: CRC-32C mismatch (stored %08x, computed %08x)", path,
				 want, have);
		goto out;
	}
	if (bytes_le32(buf + 12) != (uint32_t)o->feat_dim || bytes_le32(buf + 16) != (uint32_t)o->width ||
	    bytes_le32(buf + 20) != (uint32_t)o->pool_width || bytes_le32(buf + 24) != (uint32_t)o->embed ||
	    bytes_le32(buf + 28) != (uint32_t)o->num_speakers || fn != n || fnb != nb) {
		rc = status_fail(err, errlen, FEEDER_EINVAL,
				 "checkpoint %s: model shape feat_dim %u width %u pool %u embed %u "
				 "speakers %u differs from this model's %d/%d/%d/%d/%d",
				 path, bytes_le32(buf + 12), bytes_le32(buf + 16), bytes_le32(buf + 20),
				 bytes_le32(buf + 24), bytes_le32(buf + 28), o->feat_dim, o->width,
				 o->pool_width, o->embed, o->num_speakers);
		goto out;
	}
	if (fblob > blobcap) {
		rc = status_fail(err, errlen, FEEDER_EINVAL,
				 "checkpoint %s: its %llu-byte blob does not fit the %zu bytes given", path,
				 (unsigned long long)fblob, blobcap);
		goto out;
	}
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
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return status_fail(err, errlen, -errno, "checkpoint %s: cannot open: %s", path,
				   status_str(-errno));
	ssize_t r = read(fd, h, sizeof(h));
	close(fd);
	if (r < 12 || memcmp(h, xvec_ckpt_magic, 8) != 0)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "checkpoint %s: not an x-vector checkpoint (bad magic)", path);
	if (bytes_le32(h + 8) != XVEC_CHECKPOINT_VERSION)
		return status_fail(err, errlen, FEEDER_EVERSION,
				   "checkpoint %s: version %u, this build reads version %d", path,
				   bytes_le32(h + 8), XVEC_CHECKPOINT_VERSION);
	if (r != (ssize_t)sizeof(h))
		return status_fail(err, errlen, FEEDER_ECORRUPT,
				   "checkpoint %s: truncated (shorter than the header)", path);
	xvec_options_default(o);
	o->feat_dim = (int)bytes_le32(h + 12);
	o->width = (int)bytes_le32(h + 16);
	o->pool_width = (int)bytes_le32(h + 20);
	o->embed = (int)bytes_le32(h + 24);
	o->num_speakers = (int)bytes_le32(h + 28);
	o->seed = bytes_le64(h + 32);
	return 0;
}
