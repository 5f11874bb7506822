/* gen_util.h — the plumbing that the audio generators (gen-speech, gen-noise,
 * gen-rir; gen-images its command line and mkdir) share: the command line, mkdir -p, a work queue that
 * renders file i of N on a few threads, float-to-PCM conversion at a chosen
 * peak, Gaussian draws from detrand and atomic text files. Every file a
 * generator writes is a pure function of (seed, index), so the queue's order
 * never shows in the output. */
#ifndef FEEDER_GEN_UTIL_H
#define FEEDER_GEN_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "argtab.h"
#include "detrand.h"

/* The command line of a generator, described by tab (proto/argtab.h):
 * exactly nops operands into ops, named by what ("SPEAKERS UTTS DIR") when
 * they are not. Returns 0 to go on; 1 after --help (help
 * is tab's --help flag), with the usage line and the option list printed;
 * 2 after a mistake, printed by gen_usage_error. */
int gen_args_parse(const char *prog, const char *usage, struct argtab *tab, const int *help,
		   int argc, char **argv, char **ops, int nops, const char *what);

/* "PROG: <message>; <usage>" on stderr, one line. Returns 2, the exit
 * status of bad usage. */
int gen_usage_error(const char *prog, const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ARGTAB_FUNC parsers: an unsigned 64-bit seed (decimal, 0x hex or 0
 * octal) into a uint64_t, and "MIN:MAX" into a struct gen_range whose lo
 * and hi bound it (lo <= MIN <= MAX <= hi). */
struct gen_range {
	double lo, hi;   /* set by the caller */
	double min, max; /* the option's value */
};
int gen_arg_seed(const char *arg, void *dst, char *err, size_t errlen);
int gen_arg_range(const char *arg, void *dst, char *err, size_t errlen);

/* Create path and the directories above it, like mkdir -p. Returns 0 or a
 * negative errno with a sentence in err. */
int gen_mkdirs(const char *path, char *err, size_t errlen);

/* Threads to use by default: the online CPUs, at most 8. */
int gen_default_threads(void);

/* Call fn(ctx, i, ...) for every i in [0, count) on up to `threads` threads
 * and stop handing out indices at the first failure, whose code and
 * sentence this returns (0 when every call returned 0). */
typedef int (*gen_job_fn)(void *ctx, int index, char *err, size_t errlen);
int gen_run(int count, int threads, gen_job_fn fn, void *ctx, char *err, size_t errlen);

/* A standard normal draw (Box-Muller; one draw per call, so that the number
 * of uniforms consumed does not depend on earlier calls). */
double gen_gauss(struct detrand *r);

/* Scale x (n samples) so that its largest magnitude is `peak` (full scale
 * 1.0) and round it to 16-bit PCM in out. Silence stays silence. */
void gen_to_pcm16(const float *x, size_t n, double peak, int16_t *out);

/* Atomic text files: gen_text_open opens "path.tmp" (tmp must hold 4200
 * bytes), gen_text_commit closes it and renames it over path, removing it
 * on any write error. Both return 0 or a negative errno, with a sentence. */
int gen_text_open(const char *path, char *tmp, FILE **f, char *err, size_t errlen);
int gen_text_commit(FILE *f, const char *tmp, const char *path, char *err, size_t errlen);

#endif
