/* gen_util.h — the plumbing that the audio generators (gen-speech, gen-noise,
 * gen-rir) share: command-line value parsing, mkdir -p, a work queue that
 * renders file i of N on a few threads, float-to-PCM conversion at a chosen
 * peak, Gaussian draws from detrand and atomic text files. Every file a
 * generator writes is a pure function of (seed, index), so the queue's order
 * never shows in the output. */
#ifndef FEEDER_GEN_UTIL_H
#define FEEDER_GEN_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "detrand.h"

/* Parse an integer in [lo, hi], an unsigned 64-bit seed, or a "MIN:MAX"
 * pair of reals with lo <= MIN <= MAX <= hi. Return 0, or -1 when s is not
 * one (the caller prints its usage line). */
int gen_parse_int(const char *s, int lo, int hi, int *out);
int gen_parse_seed(const char *s, uint64_t *out);
int gen_parse_range(const char *s, double lo, double hi, double *min, double *max);

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
