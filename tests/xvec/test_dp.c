/* test_dp.c — data-parallel training of the x-vector model, without MPI:
 * two replicas on two threads, their sums over "ranks" done through shared
 * memory (the same calls xvec_dist.c makes with MPI_Allreduce).
 *
 * With sync batch-norm, 2 ranks x 16 samples and 1 rank x 32 samples of the
 * same global batches (rank r takes rows r, r+2, ..., as feederd shares an
 * epoch) give the same parameters after 20 steps within 1e-5 relative, with
 * training noise and dropout on (drawn by each sample's global row), and
 * the averaged gradient of the first step equals one process's (so the
 * average is a mean, not a sum, which Adam alone would not show); the
 * two replicas are bit-identical after every step, with sync batch-norm and
 * without; a non-finite loss on one rank makes both refuse the step. */
#include "philox.h"
#include "xvec_test.h"

#include <errno.h>
#include <pthread.h>

enum { K = 5, G = 32, W = 2, D = 8, T = 20, STEPS = 20 };

/* The "communicator" of the two threads: each posts its buffer, both add
 * them in rank order, then each copies the sum back. */
struct comm {
	pthread_barrier_t bar;
	void *buf[W];
};

struct rank {
	struct comm *c;
	int r, poison_step;
	struct xvec_model *m;
	float x[G / W * D * T];
	int32_t labels[G / W];
	int refused;
	char err[256];
};

static int sum_any(struct rank *k, void *v, size_t n, int dbl)
{
	struct comm *c = k->c;
	size_t sz = dbl ? sizeof(double) : sizeof(float);
	void *tmp = malloc(n * sz);
	if (!tmp)
		return -12;
	c->buf[k->r] = v;
	pthread_barrier_wait(&c->bar);
	for (size_t i = 0; i < n; i++) {
		if (dbl)
			((double *)tmp)[i] = ((double *)c->buf[0])[i] + ((double *)c->buf[1])[i];
		else
			((float *)tmp)[i] = ((float *)c->buf[0])[i] + ((float *)c->buf[1])[i];
	}
	pthread_barrier_wait(&c->bar);
	memcpy(v, tmp, n * sz);
	free(tmp);
	return 0;
}

static int sum_d(void *ctx, double *v, size_t n)
{
	return sum_any(ctx, v, n, 1);
}
static int sum_f(void *ctx, float *v, size_t n)
{
	return sum_any(ctx, v, n, 0);
}

static struct xvec_model *model(int B)
{
	struct xvec_options o = xt_options(D, K);
	o.dropout = 0.1f, o.noise_eps = 0.1f, o.lr = 1e-3f, o.weight_decay = 1e-3f, o.seed = 4;
	return xt_model(&o, B, T);
}

/* Global batch s: G utterances of (D, T) features and their speakers. */
static void global_batch(int s, float *x, int32_t *labels)
{
	for (int i = 0; i < G; i++) {
		uint64_t id = (uint64_t)s * G + i;
		labels[i] = (int32_t)(philox_uniform(9, 1, id) * K) % K;
		philox_normals(9, 2 + id, 0, D * T, x + (size_t)i * D * T);
		for (int j = 0; j < D * T; j++)
			x[(size_t)i * D * T + j] += 0.5f * (float)labels[i];
	}
}

static float *gx;
static int32_t *glabels;
static struct rank ranks[W];
static float *snap[STEPS][W];
static float *grad0; /* rank 0's averaged gradient of the first step */

static void *run_rank(void *arg)
{
	struct rank *k = arg;
	size_t np;
	for (int s = 0; s < STEPS; s++) {
		/* this rank's rows of the global batch: r, r + W, ... */
		pthread_barrier_wait(&k->c->bar);
		for (int j = 0; j < G / W; j++) {
			int row = j * W + k->r;
			memcpy(k->x + (size_t)j * D * T, gx + ((size_t)s * G + row) * D * T,
			       sizeof(float) * D * T);
			k->labels[j] = glabels[s * G + row];
		}
		if (s == k->poison_step)
			k->x[3] = NAN;
		struct xvec_result res;
		int rc = xvec_model_train_step(k->m, k->x, k->labels, G / W, T, &res, k->err,
					       sizeof k->err);
		if (rc == -EDOM)
			k->refused++;
		else if (rc)
			return k->err;
		if (s == 0 && k->r == 0 && !grad0)
			grad0 = xt_dup(xvec_model_grads(k->m, &np), &np);
		snap[s][k->r] = xt_dup(xvec_model_params(k->m, &np), &np);
	}
	return NULL;
}

/* Train W replicas in threads; returns rank 0's model. */
static struct xvec_model *train_dp(int sync_bn, int poison_rank)
{
	struct comm c;
	pthread_barrier_init(&c.bar, NULL, W);
	pthread_t th[W];
	for (int r = 0; r < W; r++) {
		ranks[r] =
			(struct rank){ .c = &c, .r = r, .poison_step = r == poison_rank ? 7 : -1 };
		ranks[r].m = model(G / W);
		CHECK(xvec_model_set_dp(ranks[r].m, r, W, sum_d, sum_f, &ranks[r], sync_bn, NULL) ==
		      0);
	}
	for (int r = 0; r < W; r++)
		CHECK(pthread_create(&th[r], NULL, run_rank, &ranks[r]) == 0);
	for (int r = 0; r < W; r++) {
		void *ret;
		CHECK(pthread_join(th[r], &ret) == 0);
		CHECKF(ret == NULL, "rank %d: %s", r, (char *)ret);
	}
	size_t np;
	xvec_model_params(ranks[0].m, &np);
	for (int s = 0; s < STEPS; s++) {
		CHECKF(memcmp(snap[s][0], snap[s][1], np * sizeof(float)) == 0,
		       "sync_bn %d: the replicas differ after step %d", sync_bn, s);
		for (int r = 0; r < W; r++)
			free(snap[s][r]);
	}
	for (int r = 1; r < W; r++)
		xvec_model_destroy(ranks[r].m);
	pthread_barrier_destroy(&c.bar);
	return ranks[0].m;
}

int main(void)
{
	char err[256];
	gx = malloc(sizeof(float) * STEPS * G * D * T);
	glabels = malloc(sizeof(int32_t) * STEPS * G);
	CHECK(gx && glabels);
	for (int s = 0; s < STEPS; s++)
		global_batch(s, gx + (size_t)s * G * D * T, glabels + s * G);

	/* One process, the global batches whole. */
	struct xvec_model *one = model(G);
	float *g_one = NULL;
	size_t n1, n2;
	for (int s = 0; s < STEPS; s++) {
		CHECKF(xvec_model_train_step(one, gx + (size_t)s * G * D * T, glabels + s * G, G, T,
					     NULL, err, sizeof err) == 0,
		       "%s", err);
		if (s == 0)
			g_one = xt_dup(xvec_model_grads(one, &n1), &n1);
	}

	/* Two ranks with sync batch-norm: the same model. */
	struct xvec_model *two = train_dp(1, -1);
	const float *p1 = xvec_model_params(one, &n1), *p2 = xvec_model_params(two, &n2);
	CHECK(n1 == n2);
	double top, worst = xt_maxdiff(p1, p2, n1, &top);
	size_t nb1, nb2;
	const float *b1 = xvec_model_bn_stats(one, &nb1), *b2 = xvec_model_bn_stats(two, &nb2);
	double bn_worst = 0;
	for (size_t i = 0; i < nb1; i++) {
		double d = fabs((double)b1[i] - b2[i]) / (fabs(b1[i]) + 1e-3);
		bn_worst = d > bn_worst ? d : bn_worst;
	}
	printf("2 ranks x %d (sync batch-norm) vs 1 x %d, %d steps, noise and dropout on: "
	       "max |diff| %.3g of max |param| %.3g (%.3g relative); running statistics %.3g\n",
	       G / W, G, STEPS, worst, top, worst / top, bn_worst);
	CHECKF(worst / top <= 1e-5, "parameters differ by %.3g relative", worst / top);
	double gt, gw = xt_maxdiff(g_one, grad0, n1, &gt);
	printf("first step's gradient, averaged over 2 ranks vs one process: max |diff| %.3g of "
	       "max |g| %.3g (%.3g relative)\n",
	       gw, gt, gw / gt);
	CHECKF(gw / gt <= 1e-5, "the averaged gradient differs by %.3g relative", gw / gt);
	free(g_one);
	free(grad0);
	grad0 = NULL;
	CHECKF(bn_worst <= 1e-4, "running statistics differ by %.3g", bn_worst);
	CHECK(xvec_model_step(two) == STEPS);
	xvec_model_destroy(two);

	/* Per-rank batch-norm (PyTorch DDP's default): replicas still equal,
	 * checked inside train_dp; the model differs from one process's. */
	two = train_dp(0, -1);
	p2 = xvec_model_params(two, &n2);
	double d0 = xt_maxdiff(p1, p2, n1, &top);
	printf("per-rank batch-norm: replicas bit-identical after every step; %.3g from one "
	       "process's model\n",
	       d0);
	CHECK(d0 > 0);
	xvec_model_destroy(two);

	/* A NaN on rank 1 at step 7: both ranks refuse that step, and stay equal. */
	two = train_dp(1, 1);
	CHECKF(ranks[0].refused == 1 && ranks[1].refused == 1, "refused %d and %d",
	       ranks[0].refused, ranks[1].refused);
	CHECK(xvec_model_step(two) == STEPS - 1);
	printf("a non-finite loss on rank 1 at step 7: both ranks refused it (step %llu after %d)\n",
	       (unsigned long long)xvec_model_step(two), STEPS);
	xvec_model_destroy(two);
	xvec_model_destroy(one);
	free(grad0);
	free(gx);
	free(glabels);
	return 0;
}
