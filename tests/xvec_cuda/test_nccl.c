/* test_nccl.c — data-parallel GPU training over NCCL (xvec_nccl.h, xvec_cuda_set_dp).
 *
 * `test_nccl one` (xvec_cuda_nccl_one): a one-rank communicator on one GPU.
 * Its sums of known float and double buffers give the buffers back, and
 * training steps that take the data-parallel path through it (the loss and
 * gradient sums, the 1 / world scaling, sync batch-norm's split kernels
 * with their sums, dropout and noise by global row) leave the parameters,
 * Adam moments and running statistics bit for bit as a model without it.
 *
 * `test_nccl two` (xvec_cuda_nccl_two): one process per GPU (2 to 4),
 * forked, rank 0's unique id passed to the others through pipes; sums of
 * known buffers give the known totals, then each rank trains STEPS steps on
 * its rows of a global batch (local row j is global row j * world + rank)
 * with dropout, noise and sync batch-norm, and
 *   (i)   the parameters are bit-identical on every rank;
 *   (ii)  they match one process training on the whole global batch: the
 *         first step's averaged gradient to 1e-3 of its norm (the fp32
 *         summation-order tolerance of test_network.c; the ranks add in
 *         another order); every parameter within Adam's bound of two runs,
 *         2 * lr * (1 - beta1) / sqrt(1 - beta2) per step; and the change
 *         of the parameters other than the biases ahead of batch norm to
 *         5 % of the reference's change, as a whole. Those biases have a
 *         zero gradient in exact arithmetic, so Adam turns their rounding
 *         noise, which the order of the sums changes, into steps of about
 *         lr either way (BENCHMARKS.md, data-parallel xvec): only the bound
 *         holds them;
 *   (iii) the running batch-norm statistics are bit-identical on every rank
 *         (synced) and match the reference's to 1e-3 of their largest value
 *         plus what those biases can move them: momentum x STEPS x Adam's
 *         bound.
 * The parent never touches CUDA (a child probes the devices), since a
 * process that has initialized CUDA cannot use it in a forked child.
 *
 * Both skip (77) with the reason without a GPU or without NCCL; `two` also
 * with fewer than 2 GPUs. */
#include "cuda_test.h"
#include "philox.h"
#include "tdnn.h"
#include "xvec_cuda.h"
#include "xvec_model.h"
#include "xvec_nccl.h"

#include <math.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { D = 8, WIDTH = 16, POOL = 24, EMBED = 12, SPK = 5, B = 4, T = 20, STEPS = 3, MAXW = 4 };

static void options(struct xvec_options *o)
{
	xvec_options_default(o);
	o->feat_dim = D, o->width = WIDTH, o->pool_width = POOL, o->embed = EMBED;
	o->num_speakers = SPK;
	o->dropout = 0.1f, o->noise_eps = 0.1f, o->lr = 1e-3f, o->seed = 5;
}

/* Rows first, first + stride, ... (n of them) of step's global batch: the
 * same rows in whichever process asks. */
static void batch(uint64_t step, int first, int stride, int n, float *x, int32_t *labels)
{
	for (int j = 0; j < n; j++) {
		uint64_t g = (uint64_t)j * stride + first;
		philox_normals(7, (step << 20) + g + 1, 0, D * T, x + (size_t)j * D * T);
		labels[j] = (int32_t)(philox_uniform(7, step, g) * SPK) % SPK;
	}
}

struct run {
	struct xvec_model *m; /* the host mirror */
	struct xvec_cuda *g;
	float *d_x;
	int32_t *d_l;
};

static void run_open(struct run *r, int device, int rows)
{
	struct xvec_options o;
	struct xvec_cuda_config cfg;
	char err[256];
	options(&o);
	CHECKF(xvec_model_create(&r->m, &o, 1, XVEC_CONTEXT + 1, err, sizeof(err)) == 0, "%s", err);
	xvec_cuda_config_default(&cfg);
	cfg.device = device; /* fp32, the splice strategy: the same GEMMs everywhere */
	CHECKF(xvec_cuda_create(&r->g, r->m, &cfg, rows, T, err, sizeof(err)) == 0, "%s", err);
	r->d_x = ct_upload(NULL, sizeof(float) * rows * D * T);
	r->d_l = ct_upload(NULL, sizeof(int32_t) * rows);
}

static void run_close(struct run *r)
{
	xvec_cuda_destroy(r->g);
	xvec_model_destroy(r->m);
	cudaFree(r->d_x);
	cudaFree(r->d_l);
}

/* Steps of n rows each: rows first, first + stride, ... of each step's batch. */
static void run_steps(struct run *r, int first, int stride, int n, float *grads0)
{
	float *x = malloc(sizeof(float) * n * D * T);
	int32_t *labels = malloc(sizeof(int32_t) * n);
	cudaStream_t st = xvec_cuda_stream(r->g);
	char err[256];
	CHECK(x && labels);
	for (int s = 0; s < STEPS; s++) {
		batch((uint64_t)s, first, stride, n, x, labels);
		CHECK(cudaMemcpyAsync(r->d_x, x, sizeof(float) * n * D * T, cudaMemcpyHostToDevice,
				      st) == cudaSuccess);
		CHECK(cudaMemcpyAsync(r->d_l, labels, sizeof(int32_t) * n, cudaMemcpyHostToDevice,
				      st) == cudaSuccess);
		CHECK(cudaStreamSynchronize(st) == cudaSuccess);
		CHECKF(xvec_cuda_train_step(r->g, r->d_x, r->d_l, n, T, err, sizeof(err)) == 0,
		       "%s", err);
		if (s == 0 && grads0) {
			size_t np;
			xvec_model_params(r->m, &np);
			CHECKF(xvec_cuda_grads(r->g, grads0, np, err, sizeof(err)) == 0, "%s", err);
		}
	}
	struct xvec_cuda_metrics mt;
	CHECKF(xvec_cuda_metrics(r->g, &mt, 1, err, sizeof(err)) == 0, "%s", err);
	CHECKF(mt.steps == STEPS && isfinite(mt.last_loss), "%lld steps, last loss %g", mt.steps,
	       mt.last_loss);
	CHECKF(xvec_cuda_to_model(r->g, r->m, err, sizeof(err)) == 0, "%s", err);
	free(x);
	free(labels);
}

static struct xvec_cuda_dp dp_over(struct xvec_nccl *c, int rank, int world)
{
	struct xvec_cuda_dp dp = { .rank = rank,
				   .world = world,
				   .sync_bn = 1,
				   .sum_f = xvec_nccl_sum_f,
				   .sum_d = xvec_nccl_sum_d,
				   .ctx = c };
	return dp;
}

/* Sums over world ranks of v[i] = rank + 1 + i % 7 (floats and doubles, an
 * odd length): world (world + 1) / 2 + world * (i % 7), exactly. */
static void check_sums(struct xvec_nccl *c, int rank, int world)
{
	enum { N = (1 << 16) + 3 };
	float *f = malloc(sizeof(float) * N);
	double *d = malloc(sizeof(double) * N);
	cudaStream_t st;
	CHECK(f && d);
	CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
	for (int i = 0; i < N; i++)
		f[i] = (float)(d[i] = rank + 1 + i % 7);
	float *df = ct_upload(f, sizeof(float) * N);
	double *dd = ct_upload(d, sizeof(double) * N);
	CHECK(xvec_nccl_sum_f(c, df, N, st) == 0);
	CHECK(xvec_nccl_sum_d(c, dd, N, st) == 0);
	CHECK(cudaStreamSynchronize(st) == cudaSuccess);
	ct_download(f, df, sizeof(float) * N);
	ct_download(d, dd, sizeof(double) * N);
	for (int i = 0; i < N; i++) {
		double want = world * (world + 1) / 2 + world * (i % 7);
		CHECKF(f[i] == (float)want && d[i] == want, "rank %d: sum %d is %g / %g, not %g",
		       rank, i, f[i], d[i], want);
	}
	printf("rank %d: sums of %d floats and doubles over %d rank(s) exact\n", rank, N, world);
	cudaFree(df);
	cudaFree(dd);
	cudaStreamDestroy(st);
	free(f);
	free(d);
}

/* ---- one ------------------------------------------------------------------ */

static void same_bytes(const char *what, const void *a, const void *b, size_t bytes)
{
	CHECKF(memcmp(a, b, bytes) == 0, "%s differ with a one-rank NCCL communicator", what);
	printf("  %s: bit-identical\n", what);
}

static int test_one(void)
{
	struct xvec_nccl_id id;
	struct xvec_nccl *c;
	struct run alone, dp;
	char err[256];
	size_t np, nbn;

	ct_require_device();
	if (xvec_nccl_load(err, sizeof(err)))
		SKIP("NCCL: %s", err);
	printf("%s\n", xvec_nccl_about());
	CHECKF(xvec_nccl_unique_id(&id, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_nccl_create(&c, &id, 0, 1, 0, err, sizeof(err)) == 0, "%s", err);
	check_sums(c, 0, 1);

	run_open(&alone, 0, B);
	run_open(&dp, 0, B);
	struct xvec_cuda_dp d = dp_over(c, 0, 1);
	CHECKF(xvec_cuda_set_dp(dp.g, &d, err, sizeof(err)) == 0, "%s", err);
	run_steps(&alone, 0, 1, B, NULL);
	run_steps(&dp, 0, 1, B, NULL);
	printf("%d steps with and without the one-rank data-parallel path:\n", STEPS);
	const float *pa = xvec_model_params(alone.m, &np), *pd = xvec_model_params(dp.m, &np);
	same_bytes("parameters", pa, pd, sizeof(float) * np);
	const float *ba = xvec_model_bn_stats(alone.m, &nbn), *bd = xvec_model_bn_stats(dp.m, &nbn);
	same_bytes("running statistics", ba, bd, sizeof(float) * nbn);
	const struct adam *aa = xvec_model_adam(alone.m), *ad = xvec_model_adam(dp.m);
	same_bytes("Adam first moments", aa->m, ad->m, sizeof(float) * np);
	same_bytes("Adam second moments", aa->v, ad->v, sizeof(float) * np);
	printf("  gradient sums took %.3f ms on the device\n", 1e3 * xvec_cuda_reduce_s(dp.g));
	run_close(&alone);
	run_close(&dp);
	xvec_nccl_destroy(c, 0);
	return 0;
}

/* ---- two ------------------------------------------------------------------ */

/* What a child found: devices (or -1) and NCCL, with the reason. */
struct probe {
	int devices, nccl;
	char why[256];
};

static struct probe probe_in_child(void)
{
	struct probe p;
	int fd[2];
	memset(&p, 0, sizeof(p));
	CHECK(pipe(fd) == 0);
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(fd[0]);
		p.devices = cuda_info_devices(NULL, p.why, sizeof(p.why));
		if (p.devices >= 1)
			p.nccl = xvec_nccl_load(p.why, sizeof(p.why)) == 0;
		_exit(write(fd[1], &p, sizeof(p)) == (ssize_t)sizeof(p) ? 0 : 1);
	}
	close(fd[1]);
	CHECK(read(fd[0], &p, sizeof(p)) == (ssize_t)sizeof(p));
	close(fd[0]);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return p;
}

/* A child's results: the first step's gradient, the parameters and the
 * running statistics, as float32 files in dir. */
static void save(const char *dir, const char *who, const char *what, const float *v, size_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.%s", dir, who, what);
	check_write_f32(path, v, n);
}

static float *load(const char *dir, const char *who, const char *what, size_t *n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.%s", dir, who, what);
	return check_read_f32(path, n);
}

static void save_run(struct run *r, const char *dir, const char *who, const float *grads0)
{
	size_t np, nbn;
	const float *p = xvec_model_params(r->m, &np);
	const float *bn = xvec_model_bn_stats(r->m, &nbn);
	save(dir, who, "grads0", grads0, np);
	save(dir, who, "params", p, np);
	save(dir, who, "bn", bn, nbn);
}

/* Rank `rank` of world, on device rank; the id through its pipe. */
static void rank_child(int rank, int world, int (*fds)[2], const char *dir)
{
	struct xvec_nccl_id id;
	struct xvec_nccl *c;
	struct run r;
	char err[256], who[16];
	alarm(100); /* a lost rank must not hang the others past the test's timeout */
	if (rank == 0) {
		CHECKF(xvec_nccl_unique_id(&id, err, sizeof(err)) == 0, "%s", err);
		for (int k = 1; k < world; k++)
			CHECK(write(fds[k][1], &id, sizeof(id)) == (ssize_t)sizeof(id));
	} else {
		CHECK(read(fds[rank][0], &id, sizeof(id)) == (ssize_t)sizeof(id));
	}
	CHECKF(xvec_nccl_create(&c, &id, rank, world, rank, err, sizeof(err)) == 0, "rank %d: %s",
	       rank, err);
	check_sums(c, rank, world);
	run_open(&r, rank, B);
	struct xvec_cuda_dp d = dp_over(c, rank, world);
	CHECKF(xvec_cuda_set_dp(r.g, &d, err, sizeof(err)) == 0, "%s", err);
	size_t np;
	xvec_model_params(r.m, &np);
	float *grads0 = malloc(sizeof(float) * np);
	CHECK(grads0);
	run_steps(&r, rank, world, B, grads0);
	snprintf(who, sizeof(who), "rank%d", rank);
	save_run(&r, dir, who, grads0);
	run_close(&r);
	xvec_nccl_destroy(c, 0);
	free(grads0);
}

/* One process, device 0, the whole global batch of world * B rows. */
static void reference_child(int world, const char *dir)
{
	struct run r;
	size_t np;
	alarm(100);
	run_open(&r, 0, world * B);
	xvec_model_params(r.m, &np);
	float *grads0 = malloc(sizeof(float) * np);
	CHECK(grads0);
	run_steps(&r, 0, 1, world * B, grads0);
	save_run(&r, dir, "ref", grads0);
	run_close(&r);
	free(grads0);
}

static void wait_children(const pid_t *pid, int n, const char *what)
{
	int failed = 0;
	for (int i = 0; i < n; i++) {
		int status;
		CHECK(waitpid(pid[i], &status, 0) == pid[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "%s %d failed (status %#x)\n", what, i, status);
			failed = 1;
		}
	}
	CHECK(!failed);
}

/* ||a - b|| / ||b - base|| (base NULL: 0) over the elements keep allows
 * (NULL: all). */
static double norm_diff(const float *a, const float *b, const float *base, const char *keep,
			size_t n)
{
	double d = 0.0, s = 0.0;
	for (size_t i = 0; i < n; i++) {
		if (keep && !keep[i])
			continue;
		double e = (double)a[i] - b[i], u = (double)b[i] - (base ? base[i] : 0.0f);
		d += e * e;
		s += u * u;
	}
	return sqrt(d) / (s > 0 ? sqrt(s) : 1e-30);
}

static void remove_results(const char *dir, int world)
{
	static const char *const what[] = { "grads0", "params", "bn" };
	char path[512];
	for (int r = -1; r < world; r++)
		for (int k = 0; k < 3; k++) {
			if (r < 0)
				snprintf(path, sizeof(path), "%s/ref.%s", dir, what[k]);
			else
				snprintf(path, sizeof(path), "%s/rank%d.%s", dir, r, what[k]);
			CHECKF(unlink(path) == 0, "%s: cannot remove", path);
		}
	CHECKF(rmdir(dir) == 0, "%s: cannot remove", dir);
}

static void compare(const char *dir, int world)
{
	size_t np, nbn, n;
	float *ref_g = load(dir, "ref", "grads0", &np), *ref_p = load(dir, "ref", "params", &np);
	float *ref_bn = load(dir, "ref", "bn", &nbn);
	struct xvec_options o;
	struct xvec_model *m0;
	char err[256];
	options(&o);
	CHECKF(xvec_model_create(&m0, &o, 1, XVEC_CONTEXT + 1, err, sizeof(err)) == 0, "%s", err);
	const float *p0 = xvec_model_params(m0, &n); /* the initial parameters, on the host */
	CHECK(n == np);
	double bound = 2.0 * STEPS * o.lr * (1.0 - o.beta1) / sqrt(1.0 - o.beta2);
	float *p[MAXW], *bn[MAXW], *gr[MAXW];
	for (int r = 0; r < world; r++) {
		char who[16];
		snprintf(who, sizeof(who), "rank%d", r);
		gr[r] = load(dir, who, "grads0", &n);
		CHECK(n == np);
		p[r] = load(dir, who, "params", &n);
		CHECK(n == np);
		bn[r] = load(dir, who, "bn", &n);
		CHECK(n == nbn);
	}
	for (int r = 1; r < world; r++) {
		CHECKF(memcmp(p[r], p[0], sizeof(float) * np) == 0,
		       "(i) rank %d's parameters differ "
		       "from rank 0's",
		       r);
		CHECKF(memcmp(bn[r], bn[0], sizeof(float) * nbn) == 0,
		       "(iii) rank %d's running "
		       "statistics differ from rank 0's",
		       r);
		CHECKF(memcmp(gr[r], gr[0], sizeof(float) * np) == 0,
		       "rank %d's averaged gradient "
		       "differs from rank 0's",
		       r);
	}
	printf("(i), (iii): parameters, running statistics and gradients bit-identical on %d "
	       "ranks\n",
	       world);
	char *keep = calloc(np, 1);
	CHECK(keep);
	for (int k = 0; k < xvec_model_num_tensors(m0); k++) {
		const struct xvec_tensor *t = xvec_model_tensor(m0, k);
		size_t at = (size_t)(t->data - p0);
		int ahead_of_bn = strstr(t->name, ".bias") && strcmp(t->name, "out.bias");
		memset(keep + at, !ahead_of_bn, t->size);
	}
	double eg = norm_diff(gr[0], ref_g, NULL, NULL, np);
	double ep = norm_diff(p[0], ref_p, p0, keep, np);
	free(keep);
	double emax = 0.0;
	for (size_t i = 0; i < np; i++)
		emax = fmax(emax, fabs((double)p[0][i] - ref_p[i]));
	double ebn = 0.0, bn_max = 0.0;
	for (size_t i = 0; i < nbn; i++) {
		ebn = fmax(ebn, fabs((double)bn[0][i] - ref_bn[i]));
		bn_max = fmax(bn_max, fabs((double)ref_bn[i]));
	}
	double bn_tol = 1e-3 * bn_max + TDNN_BN_MOMENTUM * STEPS * bound;
	printf("(ii) against one process on the global batch of %d: first gradient norm rel err "
	       "%.3g (tolerance 1e-3), parameter change rel err %.3g (0.05, biases ahead of batch "
	       "norm aside), largest parameter difference %.3g (Adam's bound %.3g)\n",
	       world * B, eg, ep, emax, bound);
	printf("(iii) running statistics differ by %.3g at most (tolerance %.3g)\n", ebn, bn_tol);
	CHECKF(eg <= 1e-3, "(ii) the averaged gradient is %g from the global batch's", eg);
	CHECKF(ep <= 0.05 && emax <= bound,
	       "(ii) the parameters are %g (largest %g) from the "
	       "reference's",
	       ep, emax);
	CHECKF(ebn <= bn_tol, "(iii) the synced statistics are %g from the global batch's", ebn);
	for (int r = 0; r < world; r++) {
		free(p[r]);
		free(bn[r]);
		free(gr[r]);
	}
	free(ref_g);
	free(ref_p);
	free(ref_bn);
	xvec_model_destroy(m0);
}

static int test_two(void)
{
	struct probe pr = probe_in_child();
	if (pr.devices < 1)
		SKIP("%s", pr.why);
	if (!pr.nccl)
		SKIP("NCCL: %s", pr.why);
	if (pr.devices < 2)
		SKIP("needs 2 GPUs, found %d", pr.devices);
	int world = pr.devices < MAXW ? pr.devices : MAXW;
	char dir[] = "/tmp/xvec_nccl_XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	int fds[MAXW][2];
	pid_t pid[MAXW];
	for (int r = 0; r < world; r++)
		CHECK(pipe(fds[r]) == 0);
	printf("%d ranks, one GPU each\n", world);
	fflush(stdout);
	for (int r = 0; r < world; r++) {
		pid[r] = fork();
		CHECK(pid[r] >= 0);
		if (pid[r] == 0) {
			rank_child(r, world, fds, dir);
			fflush(stdout);
			_exit(0);
		}
	}
	for (int r = 0; r < world; r++) {
		close(fds[r][0]);
		close(fds[r][1]);
	}
	wait_children(pid, world, "rank");
	pid[0] = fork();
	CHECK(pid[0] >= 0);
	if (pid[0] == 0) {
		reference_child(world, dir);
		fflush(stdout);
		_exit(0);
	}
	wait_children(pid, 1, "reference");
	compare(dir, world);
	remove_results(dir, world);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "one"))
		return test_one();
	if (argc == 2 && !strcmp(argv[1], "two"))
		return test_two();
	fprintf(stderr, "usage: test_nccl one|two\n");
	return 2;
}
