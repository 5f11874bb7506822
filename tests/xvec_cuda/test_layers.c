/* test_layers.c — each GPU kernel of tdnn_cuda.h against its CPU twin in tdnn.h.
 *
 * Same inputs on both sides (random from Philox), device results brought
 * back to the CPU layout and compared. The kernels do float32 arithmetic as
 * the CPU does, with sums in double, so the tolerance is a few float
 * roundings relative to each tensor's scale: 2e-5. Dropout masks must match
 * exactly (the GPU regenerates philox_uniform bit for bit), which the
 * comparison of dropped outputs checks: a differing mask element is an O(1)
 * error. Adam must agree to the last bit or nearly (1e-6). */
#include "cuda_test.h"
#include "adam.h"
#include "philox.h"
#include "tdnn.h"
#include "tdnn_cuda.h"

#include <string.h>

#define TOL 2e-5

static float *rnd(size_t n, uint64_t tag, float scale, float shift)
{
	float *p = malloc(sizeof(float) * (n ? n : 1));

	CHECK(p);
	philox_normals(77, tag, 0, n, p);
	for (size_t i = 0; i < n; i++)
		p[i] = p[i] * scale + shift;
	return p;
}

static float *dl(const float *dev, size_t n)
{
	float *h = malloc(sizeof(float) * n);

	CHECK(h);
	ct_download(h, dev, sizeof(float) * n);
	return h;
}

static void expect(const char *what, const float *gpu, const float *cpu, size_t n, double tol)
{
	double e = ct_relerr(gpu, cpu, n);

	printf("%-28s rel err %.3g (tolerance %.1g)\n", what, e, tol);
	CHECKF(e <= tol, "%s: relative error %g", what, e);
}

static void test_layout_and_splice(void)
{
	enum { B = 3, D = 4, T = 11 };
	static const int off[] = { -3, 0, 3 };
	int K = 3, left = 3, Tp = T - 6;
	float *x = rnd((size_t)B * D * T, 1, 1, 0), *xc = malloc(sizeof(float) * B * D * T);

	ct_to_cbt(x, B, D, T, xc);
	float *dX = ct_upload(x, sizeof(float) * B * D * T),
	      *dY = ct_upload(NULL, sizeof(float) * B * D * T);
	tdnn_cuda_to_cbt(dX, B, D, T, dY, 0);
	float *y = dl(dY, (size_t)B * D * T);
	CHECK(memcmp(y, xc, sizeof(float) * B * D * T) == 0);
	tdnn_cuda_from_cbt(dY, B, D, T, dX, 0);
	float *back = dl(dX, (size_t)B * D * T);
	CHECK(memcmp(back, x, sizeof(float) * B * D * T) == 0);

	/* splice: exact copies; unsplice: its adjoint, <S(x), s> = <x, S*(s)> */
	size_t ns = (size_t)K * D * B * Tp;
	float *dS = ct_upload(NULL, sizeof(float) * ns);
	tdnn_cuda_splice(dY, D, B, T, off, K, dS, 0);
	float *S = dl(dS, ns);
	for (int k = 0; k < K; k++)
		for (int d = 0; d < D; d++)
			for (int b = 0; b < B; b++)
				for (int t = 0; t < Tp; t++)
					CHECK(S[((size_t)k * D + d) * B * Tp + (size_t)b * Tp +
						t] ==
					      xc[((size_t)d * B + b) * T + t + left + off[k]]);
	float *s = rnd(ns, 2, 1, 0);
	CHECK(cudaMemcpy(dS, s, sizeof(float) * ns, cudaMemcpyHostToDevice) == cudaSuccess);
	tdnn_cuda_unsplice(dS, D, B, T, off, K, dX, 0);
	float *us = dl(dX, (size_t)B * D * T);
	double lhs = 0, rhs = 0;
	for (size_t i = 0; i < ns; i++)
		lhs += (double)S[i] * s[i];
	for (size_t i = 0; i < (size_t)B * D * T; i++)
		rhs += (double)xc[i] * us[i];
	printf("splice adjoint: %.9g vs %.9g\n", lhs, rhs);
	CHECKF(fabs(lhs - rhs) <= 1e-5 * (fabs(lhs) + 1), "splice adjoint %g vs %g", lhs, rhs);
	cudaFree(dX), cudaFree(dY), cudaFree(dS);
	free(x), free(xc), free(y), free(back), free(S), free(s), free(us);
}

/* Frame (channel_major, B x C x L) or segment (B x C) ReLU + BN + dropout. */
static void test_relu_bn(int cm, int B, int C, int L, float p)
{
	size_t n = (size_t)B * C * L;
	uint64_t seed = 5, subseq = tdnn_dropout_subseq(3, 1);
	float *a = rnd(n, 10, 1.0f, 0.3f), *bias = rnd(C, 11, 0.2f, 0),
	      *gamma = rnd(C, 12, 0.1f, 1);
	float *beta = rnd(C, 13, 0.1f, 0), *dy = rnd(n, 14, 1, 0);
	float rm[64], rv[64], mean[64], invstd[64], dg[64] = { 0 }, dbe[64] = { 0 }, db[64] = { 0 };
	float *ab = malloc(sizeof(float) * n), *r = malloc(sizeof(float) * n);
	float *y = malloc(sizeof(float) * n), *da = malloc(sizeof(float) * n);
	float *tmp = malloc(sizeof(float) * n);
	char what[64];

	CHECK(C <= 64);
	for (int c = 0; c < C; c++)
		rm[c] = 0.1f * c, rv[c] = 1.0f + 0.05f * c;
	/* CPU: the affine output includes the bias */
	for (int b = 0; b < B; b++)
		for (int c = 0; c < C; c++)
			for (int t = 0; t < L; t++)
				ab[((size_t)b * C + c) * L + t] =
					a[((size_t)b * C + c) * L + t] + bias[c];
	float *d_a, *d_y, *d_rm, *d_rv, *d_mean, *d_is, *d_dy;
	float *d_bias = ct_upload(bias, sizeof(float) * C),
	      *d_g = ct_upload(gamma, sizeof(float) * C);
	float *d_be = ct_upload(beta, sizeof(float) * C);
	if (cm) {
		ct_to_cbt(a, B, C, L, tmp);
		d_a = ct_upload(tmp, sizeof(float) * n);
	} else {
		d_a = ct_upload(a, sizeof(float) * n);
	}
	d_y = ct_upload(NULL, sizeof(float) * n);
	d_rm = ct_upload(rm, sizeof(float) * C);
	d_rv = ct_upload(rv, sizeof(float) * C);
	d_mean = ct_upload(NULL, sizeof(float) * C);
	d_is = ct_upload(NULL, sizeof(float) * C);

	/* evaluation mode first, from the initial running statistics */
	tdnn_relu_bn_eval(ab, B, C, L, gamma, beta, rm, rv, y);
	tdnn_cuda_relu_bn_eval(d_a, d_bias, B, C, L, cm, d_g, d_be, d_rm, d_rv, d_y, 0);
	float *ge = dl(d_y, n);
	if (cm)
		ct_to_cbt(y, B, C, L, tmp);
	snprintf(what, sizeof(what), "%s bn eval", cm ? "frame" : "segment");
	expect(what, ge, cm ? tmp : y, n, TOL);

	tdnn_relu_bn_train(ab, B, C, L, gamma, beta, rm, rv, r, mean, invstd, y);
	tdnn_dropout(y, n, p, seed, subseq);
	tdnn_cuda_relu_bn_train(d_a, d_bias, B, C, L, cm, d_g, d_be, d_rm, d_rv, d_mean, d_is, d_y,
				p, seed, subseq, 0);
	float *gr = dl(d_a, n), *gy = dl(d_y, n), *gm = dl(d_mean, C), *gi = dl(d_is, C);
	float *grm = dl(d_rm, C), *grv = dl(d_rv, C);
	snprintf(what, sizeof(what), "%s relu", cm ? "frame" : "segment");
	if (cm)
		ct_to_cbt(r, B, C, L, tmp);
	expect(what, gr, cm ? tmp : r, n, TOL);
	snprintf(what, sizeof(what), "%s bn+dropout %.1f", cm ? "frame" : "segment", p);
	if (cm)
		ct_to_cbt(y, B, C, L, tmp);
	expect(what, gy, cm ? tmp : y, n, TOL);
	expect("  batch mean", gm, mean, C, TOL);
	expect("  batch invstd", gi, invstd, C, TOL);
	expect("  running mean", grm, rm, C, TOL);
	expect("  running var", grv, rv, C, TOL);

	/* backward from the CPU's kept statistics, so only the kernel differs */
	CHECK(cudaMemcpy(d_mean, mean, sizeof(float) * C, cudaMemcpyHostToDevice) == cudaSuccess);
	CHECK(cudaMemcpy(d_is, invstd, sizeof(float) * C, cudaMemcpyHostToDevice) == cudaSuccess);
	if (cm) {
		ct_to_cbt(r, B, C, L, tmp);
		CHECK(cudaMemcpy(d_a, tmp, sizeof(float) * n, cudaMemcpyHostToDevice) ==
		      cudaSuccess);
		ct_to_cbt(dy, B, C, L, tmp);
		d_dy = ct_upload(tmp, sizeof(float) * n);
	} else {
		CHECK(cudaMemcpy(d_a, r, sizeof(float) * n, cudaMemcpyHostToDevice) == cudaSuccess);
		d_dy = ct_upload(dy, sizeof(float) * n);
	}
	float *d_dg = ct_upload(NULL, sizeof(float) * C),
	      *d_dbe = ct_upload(NULL, sizeof(float) * C);
	float *d_db = ct_upload(NULL, sizeof(float) * C);
	memcpy(da, dy, sizeof(float) * n);
	tdnn_dropout_backward(da, n, p, seed, subseq);
	tdnn_relu_bn_backward(r, B, C, L, gamma, mean, invstd, da, da, dg, dbe);
	for (int b = 0; b < B; b++)
		for (int c = 0; c < C; c++)
			for (int t = 0; t < L; t++)
				db[c] += da[((size_t)b * C + c) * L + t];
	tdnn_cuda_relu_bn_backward(d_a, B, C, L, cm, d_g, d_mean, d_is, d_dy, d_dg, d_dbe, d_db, p,
				   seed, subseq, 0);
	float *gda = dl(d_dy, n), *gdg = dl(d_dg, C), *gdbe = dl(d_dbe, C), *gdb = dl(d_db, C);
	if (cm)
		ct_to_cbt(da, B, C, L, tmp);
	snprintf(what, sizeof(what), "%s bn backward da", cm ? "frame" : "segment");
	expect(what, gda, cm ? tmp : da, n, TOL);
	expect("  dgamma", gdg, dg, C, TOL);
	expect("  dbeta", gdbe, dbe, C, TOL);
	expect("  dbias", gdb, db, C, TOL);

	cudaFree(d_a), cudaFree(d_y), cudaFree(d_rm), cudaFree(d_rv), cudaFree(d_mean);
	cudaFree(d_is), cudaFree(d_dy), cudaFree(d_bias), cudaFree(d_g), cudaFree(d_be);
	cudaFree(d_dg), cudaFree(d_dbe), cudaFree(d_db);
	free(a), free(bias), free(gamma), free(beta), free(dy), free(ab), free(r), free(y);
	free(da), free(tmp), free(ge), free(gr), free(gy), free(gm), free(gi), free(grm);
	free(grv), free(gda), free(gdg), free(gdbe), free(gdb);
}

static void test_pool(float eps)
{
	enum { B = 4, C = 6, T = 37 };
	size_t n = (size_t)B * C * T;
	uint64_t seed = 9, subseq = 4;
	float *x = rnd(n, 20, 1, 0.5f), *dout = rnd((size_t)B * 2 * C, 21, 1, 0);
	float *xn = malloc(sizeof(float) * n), *tmp = malloc(sizeof(float) * n);
	float out[B * 2 * C], *dx = malloc(sizeof(float) * n);
	char what[64];

	tdnn_noise_add(x, xn, n, eps, seed, subseq);
	tdnn_stats_pool_forward(xn, B, C, T, out);
	tdnn_stats_pool_backward(xn, B, C, T, out, dout, dx);
	ct_to_cbt(x, B, C, T, tmp);
	float *d_x = ct_upload(tmp, sizeof(float) * n), *d_out = ct_upload(NULL, sizeof(out));
	float *d_dout = ct_upload(dout, sizeof(out)), *d_dx = ct_upload(NULL, sizeof(float) * n);
	tdnn_cuda_pool_forward(d_x, B, C, T, eps, seed, subseq, d_out, 0);
	tdnn_cuda_pool_backward(d_x, B, C, T, eps, seed, subseq, d_out, d_dout, d_dx, 0);
	float *go = dl(d_out, (size_t)B * 2 * C), *gdx = dl(d_dx, n);
	snprintf(what, sizeof(what), "pool forward eps %.2f", eps);
	expect(what, go, out, (size_t)B * 2 * C, TOL);
	ct_to_cbt(dx, B, C, T, tmp);
	snprintf(what, sizeof(what), "pool backward eps %.2f", eps);
	expect(what, gdx, tmp, n, TOL);
	cudaFree(d_x), cudaFree(d_out), cudaFree(d_dout), cudaFree(d_dx);
	free(x), free(dout), free(xn), free(tmp), free(dx), free(go), free(gdx);
}

static void test_softmax(void)
{
	enum { B = 7, S = 300 };
	float *z = rnd((size_t)B * S, 30, 3, 0), *bias = rnd(S, 31, 0.5f, 0);
	float *zb = malloc(sizeof(float) * B * S), *probs = malloc(sizeof(float) * B * S);
	float *dz = malloc(sizeof(float) * B * S);
	int32_t labels[B];
	int correct;
	struct tdnn_cuda_acc acc;

	for (int i = 0; i < B; i++) {
		labels[i] = (int32_t)((i * 37) % S);
		for (int s = 0; s < S; s++)
			zb[i * S + s] = z[i * S + s] + bias[s];
	}
	/* make row 0's arg-max its label, so "correct" is exercised */
	zb[labels[0]] += 100.0f, z[labels[0]] += 100.0f;
	double loss = tdnn_softmax_xent(zb, labels, B, S, probs, dz, &correct);
	float *d_z = ct_upload(z, sizeof(float) * B * S), *d_b = ct_upload(bias, sizeof(float) * S);
	int32_t *d_l = ct_upload(labels, sizeof(labels));
	float *d_p = ct_upload(NULL, sizeof(float) * B * S),
	      *d_dz = ct_upload(NULL, sizeof(float) * B * S);
	double *d_rl = ct_upload(NULL, sizeof(double) * B);
	int *d_ok = ct_upload(NULL, sizeof(int) * B);
	struct tdnn_cuda_acc *d_acc = ct_upload(NULL, sizeof(acc));
	CHECK(cudaMemset(d_acc, 0, sizeof(acc)) == cudaSuccess);
	tdnn_cuda_softmax_xent(d_z, d_b, d_l, B, S, d_p, d_dz, d_rl, d_ok, d_acc, 0);
	float *gp = dl(d_p, (size_t)B * S), *gdz = dl(d_dz, (size_t)B * S);
	ct_download(&acc, d_acc, sizeof(acc));
	expect("softmax probs", gp, probs, (size_t)B * S, 1e-6);
	expect("softmax dlogits", gdz, dz, (size_t)B * S, 1e-6);
	printf("softmax loss %.9f (CPU %.9f), correct %d (CPU %d)\n", acc.last_loss, loss,
	       acc.last_correct, correct);
	CHECK(fabs(acc.last_loss - loss) <= 1e-9 * fabs(loss) + 1e-12);
	CHECK(acc.last_correct == correct && correct >= 1 && acc.steps == 1 && !acc.bad_label);
	labels[2] = S; /* out of range: flagged, not fatal */
	CHECK(cudaMemcpy(d_l, labels, sizeof(labels), cudaMemcpyHostToDevice) == cudaSuccess);
	tdnn_cuda_softmax_xent(d_z, d_b, d_l, B, S, d_p, d_dz, d_rl, d_ok, d_acc, 0);
	ct_download(&acc, d_acc, sizeof(acc));
	CHECK(acc.bad_label == 1 && acc.steps == 2);
	cudaFree(d_z), cudaFree(d_b), cudaFree(d_l), cudaFree(d_p), cudaFree(d_dz);
	cudaFree(d_rl), cudaFree(d_ok), cudaFree(d_acc);
	free(z), free(bias), free(zb), free(probs), free(dz), free(gp), free(gdz);
}

static void test_adam(void)
{
	enum { N = 5000, NDECAY = 3000, STEPS = 3 };
	struct adam a;
	char err[256];
	float *p = rnd(N, 40, 1, 0), *gpu_p;
	float *d_p = ct_upload(p, sizeof(float) * N), *d_g = ct_upload(NULL, sizeof(float) * N);
	float *d_m = ct_upload(NULL, sizeof(float) * N), *d_v = ct_upload(NULL, sizeof(float) * N);

	CHECKF(adam_init(&a, N, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, err, sizeof(err)) == 0, "%s",
	       err);
	CHECK(cudaMemset(d_m, 0, sizeof(float) * N) == cudaSuccess);
	CHECK(cudaMemset(d_v, 0, sizeof(float) * N) == cudaSuccess);
	for (int s = 0; s < STEPS; s++) {
		float *g = rnd(N, 41 + s, 1, 0);
		uint64_t t = a.t + 1;
		double bc1 = 1.0 - pow(a.beta1, (double)t), bc2 = 1.0 - pow(a.beta2, (double)t);

		CHECK(cudaMemcpy(d_g, g, sizeof(float) * N, cudaMemcpyHostToDevice) == cudaSuccess);
		tdnn_cuda_adam(d_p, d_g, d_m, d_v, N, NDECAY, (float)(a.lr / bc1),
			       (float)(1.0 / sqrt(bc2)), a.beta1, a.beta2, a.eps,
			       1.0f - a.lr * a.weight_decay, 1, NULL, 0);
		adam_step(&a, p, g, NDECAY);
		free(g);
	}
	gpu_p = dl(d_p, N);
	float *gm = dl(d_m, N), *gv = dl(d_v, N);
	size_t same = 0;
	for (int i = 0; i < N; i++)
		same += gpu_p[i] == p[i];
	printf("adam: %zu of %d parameters bit-identical after %d steps\n", same, N, STEPS);
	expect("adam parameters", gpu_p, p, N, 1e-6);
	expect("adam m", gm, a.m, N, 1e-6);
	expect("adam v", gv, a.v, N, 1e-6);
	adam_free(&a);
	cudaFree(d_p), cudaFree(d_g), cudaFree(d_m), cudaFree(d_v);
	free(p), free(gpu_p), free(gm), free(gv);
}

int main(void)
{
	ct_require_device();
	test_layout_and_splice();
	test_relu_bn(1, 5, 7, 13, 0.0f);
	test_relu_bn(1, 5, 7, 13, 0.3f);
	test_relu_bn(1, 3, 40, 300, 0.1f); /* channels longer than a block */
	test_relu_bn(0, 9, 11, 1, 0.0f);
	test_pool(0.0f);
	test_pool(0.25f);
	test_softmax();
	test_adam();
	return 0;
}
