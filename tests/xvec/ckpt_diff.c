/* ckpt_diff.c — how far apart two xvec checkpoints' models are, for the
 * data-parallel tests: prints
 *   params N max_abs A max_param P relative A/P bn_relative R steps S1 S2
 * (bn_relative: running statistics, each difference over |value| + 1e-3).
 * usage: ckpt_diff A B. Exit 0, or 1 with the reason on stderr. */
#include "xvec_checkpoint.h"
#include "xvec_test.h"

static struct xvec_model *load(const char *path)
{
	struct xvec_options o;
	struct xvec_model *m = NULL;
	char err[512];
	static unsigned char blob[4096]; /* the trainer's position; not compared */
	if (xvec_checkpoint_peek(path, &o, err, sizeof err) ||
	    xvec_model_create(&m, &o, 1, 32, err, sizeof err) ||
	    xvec_checkpoint_load(m, path, blob, sizeof blob, NULL, err, sizeof err)) {
		fprintf(stderr, "ckpt_diff: %s: %s\n", path, err);
		xvec_model_destroy(m);
		return NULL;
	}
	return m;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: ckpt_diff A B\n");
		return 1;
	}
	struct xvec_model *a = load(argv[1]), *b = load(argv[2]);
	if (!a || !b)
		return 1;
	size_t na, nb, sa, sb;
	const float *pa = xvec_model_params(a, &na), *pb = xvec_model_params(b, &nb);
	const float *ba = xvec_model_bn_stats(a, &sa), *bb = xvec_model_bn_stats(b, &sb);
	if (na != nb || sa != sb) {
		fprintf(stderr, "ckpt_diff: the models differ in shape (%zu and %zu parameters)\n",
			na, nb);
		return 1;
	}
	double top, worst = xt_maxdiff(pa, pb, na, &top), bn = 0;
	for (size_t i = 0; i < sa; i++)
		bn = fmax(bn, fabs((double)ba[i] - bb[i]) / (fabs(ba[i]) + 1e-3));
	printf("params %zu max_abs %.3g max_param %.3g relative %.3g bn_relative %.3g steps %llu %llu\n",
	       na, worst, top, top > 0 ? worst / top : worst, bn,
	       (unsigned long long)xvec_model_step(a), (unsigned long long)xvec_model_step(b));
	xvec_model_destroy(a);
	xvec_model_destroy(b);
	return 0;
}
