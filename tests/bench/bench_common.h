/* bench_common.h — what the C benchmarks of tests/bench share: their options
 * read from a table, the clocks, the one-line exit on an error.
 *
 * Header only (static inline), so that each benchmark stays one source file
 * for the meson.build of its area; it defines BENCH_NAME, the prefix of its
 * messages, before including this. C and CUDA C++ alike. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One option: its name ("--batch"), the type of the variable it sets, as
 * a letter: 'i' int, 'u' uint32_t, 'U' uint64_t or size_t, 'f' float, 'd'
 * double, 's' const char *, and '1' for an int set to 1 by the option alone
 * (a flag). */
struct bench_opt {
	const char *name;
	char kind;
	void *p;
};

/* "BENCH_NAME: message" on stderr, exit with status (bench_fail: 1). */
#define bench_fail(...) bench_exit(1, __VA_ARGS__)
static inline void bench_exit(int status, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));
static inline void bench_exit(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs(BENCH_NAME ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(status);
}

/* Seconds on clock c (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID, ...). */
static inline double bench_clock(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* argv[1..] against the table opts (an array): a flag sets its int to 1,
 * any other option takes the next argument; an argument without a leading
 * "-" goes to *positional where that is given. Exits 2 on an unknown option
 * or a missing value. */
#define bench_parse(argc, argv, opts, positional)                                                  \
	bench_parse_n(argc, argv, opts, sizeof(opts) / sizeof(opts[0]), positional)

static inline void bench_parse_n(int argc, char **argv, const struct bench_opt *opts, size_t n,
				 const char **positional)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const struct bench_opt *o = opts;
		if (positional && a[0] != '-') {
			*positional = a;
			continue;
		}
		while (o < opts + n && strcmp(o->name, a))
			o++;
		if (o == opts + n)
			bench_exit(2, "unknown option %s", a);
		if (o->kind == '1') {
			*(int *)o->p = 1;
			continue;
		}
		if (!v)
			bench_exit(2, "%s needs a value", a);
		i++;
		if (o->kind == 'i')
			*(int *)o->p = atoi(v);
		else if (o->kind == 'u')
			*(uint32_t *)o->p = (uint32_t)atoi(v);
		else if (o->kind == 'U')
			*(uint64_t *)o->p = strtoull(v, NULL, 10);
		else if (o->kind == 'f')
			*(float *)o->p = strtof(v, NULL);
		else if (o->kind == 'd')
			*(double *)o->p = atof(v);
		else
			*(const char **)o->p = v;
	}
}

#endif
