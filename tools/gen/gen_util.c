/* gen_util.c — shared plumbing of the generators (see gen_util.h). */
#include "gen_util.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "status.h"

#define MAX_THREADS 64

int gen_usage_error(const char *prog, const char *usage, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s; %s\n", prog, why, usage);
	return 2;
}

int gen_args_parse(const char *prog, const char *usage, struct argtab *tab, const int *help,
		   int argc, char **argv, char **ops, int nops, const char *what)
{
	char err[512];
	int n;
	if (argtab_parse(tab, argc, argv, ops, nops, &n, err, sizeof err))
		return gen_usage_error(prog, usage, "%s", err);
	if (*help) {
		printf("%s\n\n", usage);
		argtab_help(stdout, tab);
		return 1;
	}
	if (n != nops)
		return gen_usage_error(prog, usage, "expected %s", what);
	return 0;
}

int gen_arg_seed(const char *arg, void *dst, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(arg, &end, 0);
	/* strtoull accepts "-1" as 2^64-1; a seed is never negative. */
	if (errno || end == arg || *end || arg[0] == '-' || arg[0] == ' ')
		return status_fail(err, errlen, -EINVAL, "is not an unsigned 64-bit integer");
	*(uint64_t *)dst = v;
	return 0;
}

int gen_arg_range(const char *arg, void *dst, char *err, size_t errlen)
{
	struct gen_range *r = dst;
	char *end, *end2;
	errno = 0;
	double a = strtod(arg, &end);
	int ok = !errno && end != arg && *end == ':';
	double b = ok ? strtod(end + 1, &end2) : 0;
	ok = ok && !errno && end2 != end + 1 && !*end2 && a >= r->lo && a <= b && b <= r->hi;
	if (!ok)
		return status_fail(err, errlen, -EINVAL,
				   "is not MIN:MAX with %g <= MIN <= MAX <= %g", r->lo, r->hi);
	r->min = a;
	r->max = b;
	return 0;
}

static int make_dir(const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (mkdir(path, 0777) == 0)
		return 0;
	if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	if (errno == EEXIST)
		errno = ENOTDIR;
	return status_fail(err, errlen, -errno, "cannot create directory %s: %s", path,
			   strerror(errno));
}

int gen_mkdirs(const char *path, char *err, size_t errlen)
{
	char buf[4096];
	size_t n = strlen(path);
	int rc;

	if (n >= sizeof(buf))
		return status_fail(err, errlen, -ENAMETOOLONG, "%s: path too long", path);
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i < n; i++) {
		if (buf[i] != '/' || buf[i - 1] == '/')
			continue;
		buf[i] = '\0';
		rc = make_dir(buf, err, errlen);
		if (rc < 0)
			return rc;
		buf[i] = '/';
	}
	return make_dir(buf, err, errlen);
}

int gen_default_threads(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return cpus < 1 ? 1 : cpus > 8 ? 8 : (int)cpus;
}

struct queue {
	int count;
	gen_job_fn fn;
	void *ctx;
	pthread_mutex_t lock;
	int next;
	int failed;
	char err[512];
};

static void *queue_worker(void *arg)
{
	struct queue *q = arg;
	char err[512];

	for (;;) {
		int index, rc;

		pthread_mutex_lock(&q->lock);
		index = q->failed ? -1 : q->next < q->count ? q->next++ : -1;
		pthread_mutex_unlock(&q->lock);
		if (index < 0)
			return NULL;
		err[0] = '\0';
		rc = q->fn(q->ctx, index, err, sizeof(err));
		if (rc < 0) {
			pthread_mutex_lock(&q->lock);
			if (!q->failed) {
				q->failed = rc;
				snprintf(q->err, sizeof(q->err), "%s", err);
			}
			pthread_mutex_unlock(&q->lock);
			return NULL;
		}
	}
}

int gen_run(int count, int threads, gen_job_fn fn, void *ctx, char *err, size_t errlen)
{
	struct queue q = { .count = count, .fn = fn, .ctx = ctx };
	pthread_t tid[MAX_THREADS];
	int started = 0;

	if (threads > count)
		threads = count;
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	pthread_mutex_init(&q.lock, NULL);
	for (int i = 0; i < threads; i++) {
		if (pthread_create(&tid[i], NULL, queue_worker, &q) != 0)
			break;
		started++;
	}
	/* With no thread to spare, the caller's thread does all the work. */
	if (started == 0)
		queue_worker(&q);
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	pthread_mutex_destroy(&q.lock);
	if (q.failed)
		return status_fail(err, errlen, q.failed, "%s", q.err);
	return 0;
}

double gen_gauss(struct detrand *r)
{
	double u = detrand_uniform(r), v = detrand_uniform(r);
	return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}

void gen_to_pcm16(const float *x, size_t n, double peak, int16_t *out)
{
	double top = 0.0, gain;

	for (size_t i = 0; i < n; i++)
		if (fabs(x[i]) > top)
			top = fabs(x[i]);
	gain = top > 0.0 ? peak * 32767.0 / top : 0.0;
	for (size_t i = 0; i < n; i++) {
		double y = x[i] * gain;
		y = y > 32767.0 ? 32767.0 : y < -32768.0 ? -32768.0 : y;
		out[i] = (int16_t)lrint(y);
	}
}

int gen_text_open(const char *path, char *tmp, FILE **f, char *err, size_t errlen)
{
	if ((size_t)snprintf(tmp, 4200, "%s.tmp", path) >= 4200)
		return status_fail(err, errlen, -ENAMETOOLONG, "%s: path too long", path);
	*f = fopen(tmp, "w");
	if (!*f)
		return status_fail(err, errlen, -errno, "cannot create %s: %s", tmp,
				   strerror(errno));
	return 0;
}

int gen_text_commit(FILE *f, const char *tmp, const char *path, char *err, size_t errlen)
{
	int bad = ferror(f);

	errno = 0;
	if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
		int e = errno ? errno : EIO;
		unlink(tmp);
		return status_fail(err, errlen, -e, "cannot write %s: %s", path, strerror(e));
	}
	return 0;
}
