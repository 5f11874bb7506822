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
#include "bytes.h"
#include "crc32c.h"
#include "philox.h"
#include "status.h"
#include "xvec_test.h"

#include <unistd.h>

/* W and E: the width and x-vector size of xt_options. */
enum { B = 4, D = 8, T = 20, S = 5, W = 16, E = 12, HEADER = 80 };

/* The good checkpoint's image (len bytes), where its damaged copies go, and
 * the model that must refuse them. */
static unsigned char *good;
static size_t len;
static char bad[256];
static struct xvec_model *m;

/* The good image with n bytes at off set to v and its CRC made right, written
 * to bad. */
static void write_sealed(size_t off, const void *v, size_t n)
{
	unsigned char *img = malloc(len);
	memcpy(img, good, len);
	memcpy(img + off, v, n);
	bytes_put_le32(img + len - 4, crc32c(0, img, len - 4));
	check_write_file(bad, img, len);
	free(img);
}

/* The good image with one u32 or u64 header field changed. */
static void header_field(size_t off, int wide, uint64_t v, const char *word)
{
	unsigned char le[8];
	if (wide)
		bytes_put_le64(le, v);
	else
		bytes_put_le32(le, (uint32_t)v);
	write_sealed(off, le, wide ? 8 : 4);
	xt_refused(m, bad, 1, FEEDER_ECORRUPT, word);
}

/* The good image with float k of the section that starts at float first set to v. */
static void value(size_t first, size_t k, float v, const char *word)
{
	write_sealed(HEADER + 4 * (first + k), &v, 4);
	xt_refused(m, bad, 0, FEEDER_ECORRUPT, word);
}

int main(void)
{
	char dir[] = "/tmp/xvec_ckval_XXXXXX", path[256], err[256];
	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/good.ckpt", dir);
	snprintf(bad, sizeof(bad), "%s/bad.ckpt", dir);

	struct xvec_options o = xt_options(D, S);
	struct xvec_model *a = xt_model(&o, B, T);
	m = xt_model(&o, B, T);
	float x[B * D * T];
	int32_t labels[B] = { 0, 1, 2, 3 };
	struct xvec_result r;
	philox_normals(3, 0, 0, B * D * T, x);
	CHECKF(xvec_model_train_step(a, x, labels, B, T, &r, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_model_train_step(m, x, labels, B, T, &r, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_checkpoint_save(a, path, NULL, 0, err, sizeof(err)) == 0, "%s", err);
	size_t n, nb;
	good = check_read_file(path, &len);
	xvec_model_params(a, &n);
	xvec_model_bn_stats(a, &nb);

	header_field(12, 0, 0, "feat_dim 0");
	header_field(16, 0, XVEC_MAX_SIZE + 1, "width 65537");
	header_field(24, 0, 1u << 31, "embed 2147483648");
	header_field(28, 0, 1, "speakers 1");
	/* in range, but not the sizes of the arrays the file holds */
	header_field(20, 0, 4096, "parameters");
	header_field(40, 1, 1ull << 63, "step 9223372036854775808");

	/* bn layer 3 (frame3): means at 2 * 2W, variances W later */
	size_t bn3 = 4 * (size_t)W;
	value(0, 5, NAN, "frame1.weight[5]");
	value(0, n - 1, INFINITY, "bn7.beta[11]");
	value(n, 0, INFINITY, "Adam first moment of frame1.weight[0]");
	value(2 * n, 7, -1.0f, "Adam second moment of frame1.weight[7]");
	value(2 * n, n - E, NAN, "Adam second moment of bn7.beta[0]");
	value(3 * n, bn3 + 2, NAN, "bn3 running mean[2]");
	value(3 * n, bn3 + W, -0.5f, "bn3 running variance[0]");
	value(3 * n, nb - 1, INFINITY, "bn7 running variance[11]");

	/* the good file still loads, and a zero variance is a valid one */
	CHECKF(xvec_checkpoint_load(m, path, NULL, 0, NULL, err, sizeof(err)) == 0, "%s", err);
	write_sealed(HEADER + 4 * (3 * n + bn3 + W), &(float){ 0.0f }, 4);
	CHECKF(xvec_checkpoint_load(m, bad, NULL, 0, NULL, err, sizeof(err)) == 0, "%s", err);

	free(good);
	xvec_model_destroy(a);
	xvec_model_destroy(m);
	unlink(path);
	unlink(bad);
	rmdir(dir);
	return 0;
}
