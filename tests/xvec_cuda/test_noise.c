/* test_noise.c — the training noise on the GPU: its numbers, statistics and regeneration.
 *
 *  - uniforms (dropout masks) equal philox.c's bit for bit;
 *  - normals equal philox_normal to within a few ulp (CUDA's logf/sinf);
 *  - a million device normals have mean 0, variance 1, normal tails;
 *  - the pooling kernel adds eps * N(0,1) to a zero input: pooled means ~0,
 *    pooled standard deviations ~eps;
 *  - backward regenerates exactly the forward's noise: from the pooling
 *    gradient with d loss / d std = 1 the noisy input is recovered and
 *    equals x + eps * z with z the normals at the CPU indices, and a second
 *    backward gives the same bits;
 *  - evaluation ignores the noise: models differing only in eps give the
 *    same evaluation loss to the bit, and different training losses. */
#include "cuda_test.h"
#include "philox.h"
#include "tdnn_cuda.h"
#include "xvec_cuda.h"
#include "xvec_model.h"

#include <string.h>

static void test_numbers(void)
{
	enum { N = 1 << 20 };
	float *h = malloc(sizeof(float) * N), *c = malloc(sizeof(float) * N);
	float *d = ct_upload(NULL, sizeof(float) * N);
	size_t same = 0;
	double maxd = 0, s = 0, ss = 0, tails = 0;

	tdnn_cuda_uniforms(d, N, 42, 7, 3, 0);
	ct_download(h, d, sizeof(float) * N);
	philox_uniforms(42, 7, 3, N, c);
	for (int i = 0; i < N; i++)
		same += memcmp(&h[i], &c[i], sizeof(float)) == 0;
	printf("uniforms: %zu of %d bit-identical to philox.c\n", same, N);
	CHECK(same == N);

	tdnn_cuda_normals(d, N, 42, 7, 0, 0);
	ct_download(h, d, sizeof(float) * N);
	philox_normals(42, 7, 0, N, c);
	same = 0;
	for (int i = 0; i < N; i++) {
		double e = fabs((double)h[i] - c[i]) /
			   (fabs((double)c[i]) > 1 ? fabs((double)c[i]) : 1);

		same += h[i] == c[i];
		if (e > maxd)
			maxd = e;
		s += h[i];
		ss += (double)h[i] * h[i];
		tails += fabs(h[i]) > 3.0f;
	}
	double mean = s / N, var = ss / N - mean * mean;
	printf("normals: %zu of %d bit-identical, max relative difference %.3g; mean %.5f var %.5f "
	       "P(|z|>3) %.5f (normal: 0.00270)\n",
	       same, N, maxd, mean, var, tails / N);
	CHECKF(maxd < 4e-6, "normals differ from philox.c by %g", maxd);
	CHECK(fabs(mean) < 0.005 && fabs(var - 1) < 0.01 && fabs(tails / N - 0.0027) < 0.0005);
	cudaFree(d);
	free(h), free(c);
}

static void test_pool_noise(void)
{
	enum { B = 8, C = 64, T = 500 };
	size_t n = (size_t)B * C * T;
	const float eps = 0.5f;
	float *x = calloc(n, sizeof(float)), out[B * 2 * C], dout[B * 2 * C];
	float *d_x = ct_upload(x, sizeof(float) * n), *d_out = ct_upload(NULL, sizeof(out));
	float *d_dout, *d_dx = ct_upload(NULL, sizeof(float) * n),
		       *d_z = ct_upload(NULL, sizeof(float) * n);
	double ms = 0, sds = 0;

	tdnn_cuda_pool_forward(d_x, B, C, T, eps, 5, 9, d_out, 0);
	ct_download(out, d_out, sizeof(out));
	for (int b = 0; b < B; b++)
		for (int c = 0; c < C; c++) {
			ms += fabs(out[b * 2 * C + c]);
			sds += out[b * 2 * C + C + c];
		}
	ms /= B * C, sds /= B * C;
	printf("pooled noise: mean |mean| %.4f (expect ~%.4f), mean std %.4f (expect ~%.3f)\n", ms,
	       eps * 0.8 / sqrt(T), sds, eps);
	CHECK(ms < 3 * eps / sqrt(T) && fabs(sds - eps) < 0.02 * eps);

	/* d loss / d std = 1: dx = (v - mean) / (T std), so v = mean + dx T std */
	for (int i = 0; i < B * 2 * C; i++)
		dout[i] = (i % (2 * C)) < C ? 0.0f : 1.0f;
	d_dout = ct_upload(dout, sizeof(dout));
	philox_normals(1, 1, 0, n, x); /* a non-zero input this time */
	ct_copy_to(d_x, x, sizeof(float) * n);
	tdnn_cuda_pool_forward(d_x, B, C, T, eps, 5, 9, d_out, 0);
	tdnn_cuda_pool_backward(d_x, B, C, T, eps, 5, 9, d_out, d_dout, d_dx, 0);
	tdnn_cuda_normals(d_z, n, 5, 9, 0, 0);
	float *dx = malloc(sizeof(float) * n), *dx2 = malloc(sizeof(float) * n);
	float *z = malloc(sizeof(float) * n);
	ct_download(out, d_out, sizeof(out));
	ct_download(dx, d_dx, sizeof(float) * n);
	ct_download(z, d_z, sizeof(float) * n);
	double worst = 0;
	for (int c = 0; c < C; c++)
		for (int b = 0; b < B; b++)
			for (int t = 0; t < T; t++) {
				size_t i = ((size_t)c * B + b) * T + t; /* device (C, B, T) */
				size_t k = ((size_t)b * C + c) * T + t; /* CPU index */
				float m = out[b * 2 * C + c], sd = out[b * 2 * C + C + c];
				double v = m + (double)dx[i] * T * sd;
				double want = x[i] + (double)eps * z[k];
				double e = fabs(v - want);

				if (e > worst)
					worst = e;
			}
	printf("backward regenerates the noise: max |recovered - (x + eps z)| %.3g\n", worst);
	CHECK(worst < 1e-4);
	tdnn_cuda_pool_backward(d_x, B, C, T, eps, 5, 9, d_out, d_dout, d_dx, 0);
	ct_download(dx2, d_dx, sizeof(float) * n);
	CHECK(memcmp(dx, dx2, sizeof(float) * n) == 0);
	cudaFree(d_x), cudaFree(d_out), cudaFree(d_dout), cudaFree(d_dx), cudaFree(d_z);
	free(x), free(dx), free(dx2), free(z);
}

static double eval_or_train(float eps, int training)
{
	enum { B = 8, D = 6, T = 30 };
	struct xvec_options o;
	struct xvec_model *m;
	struct xvec_cuda *g;
	struct xvec_result r;
	char err[256];
	float x[B * D * T];
	int32_t labels[B];

	xvec_options_default(&o);
	o.feat_dim = D, o.width = 16, o.pool_width = 24, o.embed = 8, o.num_speakers = 4;
	o.noise_eps = eps, o.seed = 8;
	CHECKF(xvec_model_create(&m, &o, 1, XVEC_CONTEXT + 1, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_cuda_create(&g, m, NULL, B, T, err, sizeof(err)) == 0, "%s", err);
	philox_normals(12, 0, 0, B * D * T, x);
	for (int i = 0; i < B; i++)
		labels[i] = i % 4;
	float *d_x = ct_upload(x, sizeof(x));
	int32_t *d_l = ct_upload(labels, sizeof(labels));
	CHECKF(xvec_cuda_forward(g, d_x, d_l, B, T, training, &r, err, sizeof(err)) == 0, "%s",
	       err);
	xvec_cuda_destroy(g);
	xvec_model_destroy(m);
	cudaFree(d_x), cudaFree(d_l);
	return r.loss;
}

int main(void)
{
	ct_require_device();
	test_numbers();
	test_pool_noise();
	double e0 = eval_or_train(0.0f, 0), e1 = eval_or_train(0.5f, 0);
	double t0 = eval_or_train(0.0f, 1), t1 = eval_or_train(0.5f, 1);
	printf("eval loss eps 0: %.9f, eps 0.5: %.9f; training loss eps 0: %.9f, eps 0.5: %.9f\n",
	       e0, e1, t0, t1);
	CHECK(e0 == e1);
	CHECK(t0 != t1);
	return 0;
}
