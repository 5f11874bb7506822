/* test_grad_layers.c — finite-difference gradient checks of each TDNN layer kind:
 * the TDNN affine with every context of the network, ReLU + batch norm in
 * training mode (frame and segment layouts), statistics pooling, dropout,
 * and the output affine with softmax cross-entropy. Each analytic float32
 * backward is compared with central differences of the double reference in
 * xvec_ref.h (tolerance in gradcheck.h). */
#include "check.h"
#include "gradcheck.h"
#include "philox.h"
#include "tdnn.h"
#include "xvec_ref.h"

#include <string.h>

static uint64_t draw_sub;

/* n standard normals (as float and double) from a fresh Philox subsequence. */
static void randn(float *f, double *d, size_t n, float scale)
{
	philox_normals(42, draw_sub++, 0, n, f);
	for (size_t i = 0; i < n; i++) {
		f[i] *= scale;
		if (d)
			d[i] = f[i];
	}
}

static double dot(const double *a, const float *b, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

static void check_tdnn(const int *off, int K)
{
	enum { B = 2, D = 3, T = 11, H = 4 };
	int Tp = T - tdnn_context_left(off, K) - tdnn_context_right(off, K);
	size_t nx = B * D * T, nw = (size_t)H * K * D, ny = (size_t)B * H * Tp;
	float x[B * D * T], W[H * 5 * D], b[H], R[B * H * T], y[B * H * T];
	float dx[B * D * T], dW[H * 5 * D] = { 0 }, db[H] = { 0 };
	double xd[B * D * T], Wd[H * 5 * D], bd[H], yd[B * H * T], num[H * 5 * D * 2 + B * D * T];
	char what[64];

	randn(x, xd, nx, 1), randn(W, Wd, nw, 0.5f), randn(b, bd, H, 0.5f), randn(R, NULL, ny, 1);
	tdnn_affine_forward(x, B, D, T, off, K, W, b, H, y);
	ref_tdnn(xd, B, D, T, off, K, Wd, bd, H, yd);
	for (size_t i = 0; i < ny; i++)
		CHECKF(fabs(y[i] - yd[i]) < 1e-5 * (1 + fabs(yd[i])), "tdnn forward %zu", i);
	tdnn_affine_backward(x, R, B, D, T, off, K, W, H, dx, dW, db);

	double *vars[3] = { xd, Wd, bd };
	size_t nv[3] = { nx, nw, H };
	const float *an[3] = { dx, dW, db };
	const char *names[3] = { "x", "W", "b" };
	for (int v = 0; v < 3; v++) {
		GRAD_NUMERIC(num, vars[v], nv[v], 1, i,
			     (ref_tdnn(xd, B, D, T, off, K, Wd, bd, H, yd), dot(yd, R, ny)));
		snprintf(what, sizeof(what), "tdnn ctx %d..%d (%d taps) d%s", off[0], off[K - 1], K,
			 names[v]);
		gradcheck(what, an[v], num, nv[v]);
	}
}

static void check_relu_bn(int B, int C, int L)
{
	size_t n = (size_t)B * C * L;
	float a[n], R[n], r[n], y[n], da[n];
	double ad[n], yd[n], num[n];
	float g[8], be[8], rm[8] = { 0 }, rv[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, mean[8], is[8];
	float dg[8] = { 0 }, dbe[8] = { 0 };
	double gd[8], bed[8];
	char what[64];

	randn(a, ad, n, 1), randn(R, NULL, n, 1), randn(g, gd, C, 1), randn(be, bed, C, 1);
	tdnn_relu_bn_train(a, B, C, L, g, be, rm, rv, r, mean, is, y);
	memcpy(yd, ad, sizeof(double) * n);
	ref_relu_bn(yd, B, C, L, gd, bed);
	for (size_t i = 0; i < n; i++)
		CHECKF(fabs(y[i] - yd[i]) < 1e-4 * (1 + fabs(yd[i])), "bn forward %zu: %g vs %g", i,
		       y[i], yd[i]);
	tdnn_relu_bn_backward(r, B, C, L, g, mean, is, R, da, dg, dbe);

	double *vars[3] = { ad, gd, bed };
	size_t nv[3] = { n, (size_t)C, (size_t)C };
	const float *an[3] = { da, dg, dbe };
	const char *names[3] = { "a", "gamma", "beta" };
	for (int v = 0; v < 3; v++) {
		GRAD_NUMERIC(num, vars[v], nv[v], 1, i,
			     (memcpy(yd, ad, sizeof(double) * n), ref_relu_bn(yd, B, C, L, gd, bed),
			      dot(yd, R, n)));
		snprintf(what, sizeof(what), "relu+bn (%d,%d,%d) d%s", B, C, L, names[v]);
		gradcheck(what, an[v], num, nv[v]);
	}
}

static void check_pool(void)
{
	enum { B = 2, C = 3, T = 7 };
	float x[B * C * T], out[B * 2 * C], R[B * 2 * C], dx[B * C * T];
	double xd[B * C * T], od[B * 2 * C], num[B * C * T];

	randn(x, xd, B * C * T, 1), randn(R, NULL, B * 2 * C, 1);
	tdnn_stats_pool_forward(x, B, C, T, out);
	ref_pool(xd, B, C, T, od);
	for (int i = 0; i < B * 2 * C; i++)
		CHECK(fabs(out[i] - od[i]) < 1e-5 * (1 + fabs(od[i])));
	tdnn_stats_pool_backward(x, B, C, T, out, R, dx);
	GRAD_NUMERIC(num, xd, B * C * T, 1, i, (ref_pool(xd, B, C, T, od), dot(od, R, B * 2 * C)));
	gradcheck("stats pooling dx", dx, num, B * C * T);
}

static void check_dropout(void)
{
	enum { N = 203 };
	float x[N], dy[N], dy0[N], y[N], mask[N];
	double xd[N], yd[N], num[N];
	int dropped = 0;

	randn(x, xd, N, 1), randn(dy, NULL, N, 1);
	memcpy(dy0, dy, sizeof(dy));
	memcpy(y, x, sizeof(y));
	tdnn_dropout(y, N, 0.3f, 9, 5);
	memcpy(yd, xd, sizeof(yd));
	ref_dropout(yd, N, 0.3f, 9, 5);
	for (int i = 0; i < N; i++) {
		CHECK(fabs(y[i] - yd[i]) < 1e-6 * (1 + fabs(yd[i])));
		dropped += y[i] == 0.0f;
	}
	CHECKF(dropped > 30 && dropped < 95, "%d of %d dropped at p 0.3", dropped, N);
	/* dropout is elementwise: d y_i / d x_i is the mask, which backward
	 * must regenerate from the counters */
	GRAD_NUMERIC(num, xd, N, 1, i,
		     (memcpy(yd, xd, sizeof(yd)), ref_dropout(yd, N, 0.3f, 9, 5), yd[i]));
	for (int i = 0; i < N; i++)
		mask[i] = 1.0f;
	tdnn_dropout_backward(mask, N, 0.3f, 9, 5);
	gradcheck("dropout mask", mask, num, N);
	tdnn_dropout_backward(dy, N, 0.3f, 9, 5);
	for (int i = 0; i < N; i++)
		CHECK(dy[i] == dy0[i] * mask[i]);
}

static void check_dense_xent(void)
{
	enum { B = 4, I = 6, S = 5 };
	float x[B * I], W[S * I], b[S], z[B * S], p[B * S], dz[B * S], dx[B * I];
	float dW[S * I] = { 0 }, db[S] = { 0 };
	double xd[B * I], Wd[S * I], bd[S], zd[B * S], num[S * I];
	int32_t labels[B] = { 0, 3, 4, 3 };
	int correct;

	randn(x, xd, B * I, 1), randn(W, Wd, S * I, 0.7f), randn(b, bd, S, 0.3f);
	tdnn_dense_forward(x, B, I, W, b, S, z);
	double loss = tdnn_softmax_xent(z, labels, B, S, p, dz, &correct);
	ref_dense(xd, B, I, Wd, bd, S, zd);
	CHECKF(fabs(loss - ref_xent(zd, labels, B, S)) < 1e-5, "loss %g vs %g", loss,
	       ref_xent(zd, labels, B, S));
	tdnn_dense_backward(x, dz, B, I, W, S, dx, dW, db);

	double *vars[3] = { xd, Wd, bd };
	size_t nv[3] = { B * I, S * I, S };
	const float *an[3] = { dx, dW, db };
	const char *names[3] = { "affine+softmax-CE dx", "affine+softmax-CE dW",
				 "affine+softmax-CE db" };
	for (int v = 0; v < 3; v++) {
		GRAD_NUMERIC(num, vars[v], nv[v], 1, i,
			     (ref_dense(xd, B, I, Wd, bd, S, zd), ref_xent(zd, labels, B, S)));
		gradcheck(names[v], an[v], num, nv[v]);
	}
}

int main(void)
{
	for (int l = 0; l < 4; l++)
		check_tdnn(ref_ctx[l], ref_nctx[l]);
	check_relu_bn(3, 4, 5);
	check_relu_bn(6, 5, 1);
	check_pool();
	check_dropout();
	check_dense_xent();
	return 0;
}
