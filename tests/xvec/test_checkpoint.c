/* test_checkpoint.c — checkpoint round trip, rejection of damaged files, exact resume.
 *
 * Saving and loading restores parameters, Adam moments, step, running
 * statistics, seed and the caller's blob bit for bit; a flipped byte, a
 * truncated file, a wrong magic or version, or another model shape is
 * refused with a sentence and leaves the model untouched, as is a FIFO or
 * a directory (at once: opening a FIFO must not wait for a writer); and N steps
 * straight give the same losses, bit for bit, as N/2 steps, a save, a load
 * into a fresh model and N/2 more (with dropout and noise on). */
#include "philox.h"
#include "status.h"
#include "xvec_test.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

enum { B = 4, D = 8, T = 20, S = 5, STEPS = 8 };

static struct xvec_model *make(uint64_t seed, int width)
{
	struct xvec_options o = xt_options(D, S);
	o.width = width;
	o.noise_eps = 0.3f, o.dropout = 0.2f, o.seed = seed, o.lr = 1e-2f, o.weight_decay = 0.01f;
	return xt_model(&o, B, T);
}

/* Batch k of a fixed stream. */
static void batch(int k, float *x, int32_t *labels)
{
	philox_normals(99, (uint64_t)k, 0, B * D * T, x);
	for (int i = 0; i < B; i++)
		labels[i] = (k * 3 + i) % S;
}

static double step(struct xvec_model *m, int k)
{
	float x[B * D * T];
	int32_t labels[B];
	struct xvec_result r;
	char err[256];

	batch(k, x, labels);
	CHECKF(xvec_model_train_step(m, x, labels, B, T, &r, err, sizeof(err)) == 0, "%s", err);
	return r.loss;
}

/* img's first len bytes, written to path, must be refused with code,
 * naming word. */
static void expect_reject(struct xvec_model *m, const char *path, const unsigned char *img,
			  size_t len, int code, const char *word)
{
	check_write_file(path, img, len);
	xt_refused(m, path, 0, code, word);
}

int main(void)
{
	char dir[] = "/tmp/xvec_ckpt_XXXXXX", path[256], bad[300], err[256], got[64];
	const char blob[] = "epoch=3 batch=1234";
	size_t gotlen = 0;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/model.ckpt", dir);
	snprintf(bad, sizeof(bad), "%s/bad.ckpt", dir);

	/* round trip */
	struct xvec_model *a = make(5, 16), *b = make(6, 16);
	double straight[STEPS];
	for (int k = 0; k < 3; k++)
		step(a, k);
	CHECKF(xvec_checkpoint_save(a, path, blob, sizeof(blob), err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_checkpoint_load(b, path, got, sizeof(got), &gotlen, err, sizeof(err)) == 0,
	       "%s", err);
	size_t n, nb;
	xvec_model_params(a, &n);
	xvec_model_bn_stats(a, &nb);
	CHECK(gotlen == sizeof(blob) && memcmp(got, blob, sizeof(blob)) == 0);
	CHECK(memcmp(xvec_model_params(a, &n), xvec_model_params(b, &n), sizeof(float) * n) == 0);
	CHECK(memcmp(xvec_model_adam(a)->m, xvec_model_adam(b)->m, sizeof(float) * n) == 0);
	CHECK(memcmp(xvec_model_adam(a)->v, xvec_model_adam(b)->v, sizeof(float) * n) == 0);
	CHECK(memcmp(xvec_model_bn_stats(a, &nb), xvec_model_bn_stats(b, &nb),
		     sizeof(float) * nb) == 0);
	CHECK(xvec_model_step(b) == 3 && xvec_model_options(b)->seed == 5);
	/* nothing but the checkpoint is left in the directory */
	DIR *dh = opendir(dir);
	struct dirent *de;
	int files = 0;
	while ((de = readdir(dh)))
		if (de->d_name[0] != '.') {
			files++;
			CHECKF(strcmp(de->d_name, "model.ckpt") == 0, "left over: %s", de->d_name);
		}
	closedir(dh);
	CHECK(files == 1);

	/* damaged files */
	size_t len;
	unsigned char *img = check_read_file(path, &len);
	img[len / 2] ^= 0x10;
	expect_reject(b, bad, img, len, FEEDER_ECORRUPT, "CRC");
	img[len / 2] ^= 0x10;
	expect_reject(b, bad, img, len - 7, FEEDER_ECORRUPT, "truncated");
	expect_reject(b, bad, img, 40, FEEDER_ECORRUPT, "truncated");
	img[0] ^= 1;
	expect_reject(b, bad, img, len, FEEDER_EFORMAT, "magic");
	img[0] ^= 1;
	img[8] = 9;
	expect_reject(b, bad, img, len, FEEDER_EVERSION, "version");
	img[8] = 1;
	struct xvec_model *other = make(5, 17);
	xt_refused(other, path, 0, FEEDER_EINVAL, "shape");
	CHECK(xvec_checkpoint_load(b, path, got, 4, NULL, err, sizeof(err)) == FEEDER_EINVAL);
	/* a FIFO (no writer) and a directory are refused at once, not waited on */
	snprintf(bad, sizeof(bad), "%s/fifo", dir);
	CHECK(mkfifo(bad, 0600) == 0);
	alarm(10);
	xt_refused(b, bad, 1, FEEDER_EFORMAT, "not a regular file");
	xt_refused(b, dir, 0, FEEDER_EFORMAT, "not a regular file");
	alarm(0);
	unlink(bad);
	snprintf(bad, sizeof(bad), "%s/missing.ckpt", dir);
	CHECK(xvec_checkpoint_load(b, bad, got, sizeof(got), NULL, err, sizeof(err)) == -ENOENT);
	xvec_model_destroy(other);
	free(img);
	xvec_model_destroy(a);
	xvec_model_destroy(b);

	/* exact resume */
	a = make(5, 16);
	for (int k = 0; k < STEPS; k++)
		straight[k] = step(a, k);
	b = make(5, 16);
	for (int k = 0; k < STEPS / 2; k++)
		CHECK(step(b, k) == straight[k]);
	CHECK(xvec_checkpoint_save(b, path, NULL, 0, err, sizeof(err)) == 0);
	xvec_model_destroy(b);
	b = make(77, 16);
	CHECKF(xvec_checkpoint_load(b, path, NULL, 0, &gotlen, err, sizeof(err)) == 0, "%s", err);
	CHECK(gotlen == 0);
	for (int k = STEPS / 2; k < STEPS; k++) {
		double l = step(b, k);

		printf("step %d: straight %.9f, resumed %.9f\n", k, straight[k], l);
		CHECKF(l == straight[k], "step %d: loss %.9g after resume, %.9g straight", k, l,
		       straight[k]);
	}
	CHECK(memcmp(xvec_model_params(a, &n), xvec_model_params(b, &n), sizeof(float) * n) == 0);
	xvec_model_destroy(a);
	xvec_model_destroy(b);

	unlink(path);
	rmdir(dir);
	return 0;
}
