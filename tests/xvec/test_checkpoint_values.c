/* test_checkpoint_values.c — a checkpoint whose header fields or values are
 * out of range is refused, naming the field or tensor, even with a valid CRC.
 *
 * From one good checkpoint: header sizes out of range or not matching the
 * parameter count, a step past what dropout's counters allow, and NaN or
 * infinite parameters, Adam moments and batch-norm statistics, or a negative
 * second moment or running variance, each written with its CRC recomputed
 * (as a tool would leave them). xvec_checkpoint_peek and xvec_checkpoint_load
 * refuse each with FEEDER_ECORRUPT and a sentence naming it, and the model
 * is left as it was. */
#include "check.h"
#include "bytes.h"
#include "crc32c.h"
#include "philox.h"
#include "status.h"
#include "xvec_checkpoint.h"
#include "xvec_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { B = 4, D = 8, T = 20, S = 5, W = 16, P = 24, E = 12, HEADER = 80 };

static struct xvec_model *make(void)
{
	struct xvec_options o;
	struct xvec_model *m;
	char err[256];
	xvec_options_default(&o);
	o.feat_dim = D, o.width = W, o.pool_width = P, o.embed = E, o.num_speakers = S;
	CHECKF(xvec_model_create(&m, &o, B, T, err, sizeof(err)) == 0, "%s", err);
	return m;
}

static unsigned char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	CHECK(f);
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *p = malloc(*n);
	CHECK(p && fread(p, 1, *n, f) == *n);
	fclose(f);
	return p;
}

/* img (len bytes) with its CRC made right, written to path. */
static void write_sealed(const char *path, unsigned char *img, size_t len)
{
	bytes_put_le32(img + len - 4, crc32c(0, img, len - 4));
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(img, 1, len, f) == len && fclose(f) == 0);
}

/* Peek (when peek_too) and load of path must fail naming word; m unchanged. */
static void refused(struct xvec_model *m, const char *path, int peek_too, const char *word)
{
	size_t n;
	float *p = xvec_model_params(m, &n), *copy = malloc(sizeof(float) * n);
	char err[256] = "";
	struct xvec_options o;
	memcpy(copy, p, sizeof(float) * n);
	if (peek_too) {
		int rc = xvec_checkpoint_peek(path, &o, err, sizeof(err));
		printf("peek: %d: %s\n", rc, err);
		CHECKF(rc == FEEDER_ECORRUPT && strstr(err, word), "peek: %d '%s', want '%s'", rc,
		       err, word);
	}
	int rc = xvec_checkpoint_load(m, path, NULL, 0, NULL, err, sizeof(err));
	printf("load: %d: %s\n", rc, err);
	CHECKF(rc == FEEDER_ECORRUPT && strstr(err, word) && strstr(err, path),
	       "load: %d '%s', want '%s' and the path", rc, err, word);
	CHECK(memcmp(copy, p, sizeof(float) * n) == 0 && xvec_model_step(m) == 1);
	free(copy);
}

/* The good image with one u32 or u64 header field changed. */
static void header_field(struct xvec_model *m, const char *bad, const unsigned char *good,
			 size_t len, size_t off, int wide, uint64_t v, const char *word)
{
	unsigned char *img = malloc(len);
	memcpy(img, good, len);
	if (wide)
		bytes_put_le64(img + off, v);
	else
		bytes_put_le32(img + off, (uint32_t)v);
	write_sealed(bad, img, len);
	refused(m, bad, 1, word);
	free(img);
}

/* The good image with float k of the section that starts at float first set to v. */
static void value(struct xvec_model *m, const char *bad, const unsigned char *good, size_t len,
		  size_t first, size_t k, float v, const char *word)
{
	unsigned char *img = malloc(len);
	memcpy(img, good, len);
	memcpy(img + HEADER + 4 * (first + k), &v, 4);
	write_sealed(bad, img, len);
	refused(m, bad, 0, word);
	free(img);
}

int main(void)
{
	char dir[] = "/tmp/xvec_ckval_XXXXXX", path[256], bad[256], err[256];
	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/good.ckpt", dir);
	snprintf(bad, sizeof(bad), "%s/bad.ckpt", dir);

	struct xvec_model *a = make(), *b = make();
	float x[B * D * T];
	int32_t labels[B] = { 0, 1, 2, 3 };
	struct xvec_result r;
	philox_normals(3, 0, 0, B * D * T, x);
	CHECKF(xvec_model_train_step(a, x, labels, B, T, &r, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_model_train_step(b, x, labels, B, T, &r, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_checkpoint_save(a, path, NULL, 0, err, sizeof(err)) == 0, "%s", err);
	size_t len, n, nb;
	unsigned char *good = slurp(path, &len);
	xvec_model_params(a, &n);
	xvec_model_bn_stats(a, &nb);

	header_field(b, bad, good, len, 12, 0, 0, "feat_dim 0");
	header_field(b, bad, good, len, 16, 0, XVEC_MAX_SIZE + 1, "width 65537");
	header_field(b, bad, good, len, 24, 0, 1u << 31, "embed 2147483648");
	header_field(b, bad, good, len, 28, 0, 1, "speakers 1");
	/* in range, but not the sizes of the arrays the file holds */
	header_field(b, bad, good, len, 20, 0, 4096, "parameters");
	header_field(b, bad, good, len, 40, 1, 1ull << 63, "step 9223372036854775808");

	/* bn layer 3 (frame3): means at 2 * 2W, variances W later */
	size_t bn3 = 4 * (size_t)W;
	value(b, bad, good, len, 0, 5, NAN, "frame1.weight[5]");
	value(b, bad, good, len, 0, n - 1, INFINITY, "bn7.beta[11]");
	value(b, bad, good, len, n, 0, INFINITY, "Adam first moment of frame1.weight[0]");
	value(b, bad, good, len, 2 * n, 7, -1.0f, "Adam second moment of frame1.weight[7]");
	value(b, bad, good, len, 2 * n, n - E, NAN, "Adam second moment of bn7.beta[0]");
	value(b, bad, good, len, 3 * n, bn3 + 2, NAN, "bn3 running mean[2]");
	value(b, bad, good, len, 3 * n, bn3 + W, -0.5f, "bn3 running variance[0]");
	value(b, bad, good, len, 3 * n, nb - 1, INFINITY, "bn7 running variance[11]");

	/* the good file still loads, and a zero variance is a valid one */
	CHECKF(xvec_checkpoint_load(b, path, NULL, 0, NULL, err, sizeof(err)) == 0, "%s", err);
	unsigned char *img = malloc(len);
	memcpy(img, good, len);
	float zero = 0.0f;
	memcpy(img + HEADER + 4 * (3 * n + bn3 + W), &zero, 4);
	write_sealed(bad, img, len);
	CHECKF(xvec_checkpoint_load(b, bad, NULL, 0, NULL, err, sizeof(err)) == 0, "%s", err);

	free(img);
	free(good);
	xvec_model_destroy(a);
	xvec_model_destroy(b);
	unlink(path);
	unlink(bad);
	rmdir(dir);
	return 0;
}
