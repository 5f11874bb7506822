/* speed.h — speed perturbation of a speech chunk with libsoxr.
 *
 * Kaldi's and wespeaker's speed perturbation (`sox speed 1.1`): the chunk is
 * played f times faster, so that n samples become round(n / f) and every
 * frequency is multiplied by f (a 440 Hz tone comes out at 484 Hz for
 * f = 1.1). That is a resampling from rate f to rate 1: the samples are read
 * as if taken at f times the real rate and converted back to the real rate,
 * so only the ratio matters and no sample rate is needed here. The factor is
 * the caller's draw (typically 0.9, 1.0 or 1.1 from detrand.h). The float
 * factor is rounded to 4 decimals (0.9f, which is 0.89999998, means 9/10:
 * libsoxr runs a small rational ratio with a short polyphase filter, twice
 * as fast as 0.89999998); a factor that rounds to 1 is a copy.
 *
 * libsoxr at SOXR_HQ (20-bit, linear phase, delay compensated): it runs as
 * fast as SOXR_MQ at these lengths (about 0.5 ms for 35200 samples on one
 * x86-64 core) and is deterministic, so the same request gives the same
 * bytes. The input is taken as a whole signal (zero before and after), so
 * the first and last few milliseconds see the filter's edge; crop after
 * perturbing if that matters.
 *
 * A struct speed belongs to one worker: it keeps one soxr resampler per
 * factor met (SPEED_SLOTS of them, least recently used replaced) and clears
 * it between calls, which gives the same bytes as a fresh one and saves its
 * set-up. libsoxr is asked for one thread. */
#ifndef FEEDER_SPEED_H
#define FEEDER_SPEED_H

#include <stddef.h>

#define SPEED_SLOTS 4
/* Factors outside this range are refused: past them a chunk would change
 * length more than any recipe asks for. */
#define SPEED_MIN_FACTOR 0.5f
#define SPEED_MAX_FACTOR 2.0f

struct speed;

/* Returns 0 and sets *out, or -ENOMEM with a sentence. */
int speed_create(struct speed **out, char *err, size_t errlen);

/* Samples out of n samples perturbed by factor: round(n / f) with f the
 * factor rounded to 4 decimals, in double (0 for a factor outside the
 * range). */
size_t speed_out_len(size_t n, float factor);

/* Perturb the n samples at x by factor into out (out_cap samples). On
 * success *out_n = speed_out_len(n, factor). out must not overlap x, except
 * that out == x is allowed when the factor rounds to 1. Returns 0,
 * FEEDER_EINVAL for a factor outside SPEED_MIN_FACTOR..SPEED_MAX_FACTOR (or
 * not finite), FEEDER_EQUOTA when out_cap is too small, or FEEDER_EFORMAT
 * when libsoxr fails (its reason in the sentence); with a sentence in err. */
int speed_perturb(struct speed *s, float factor, const float *x, size_t n, float *out,
		  size_t out_cap, size_t *out_n, char *err, size_t errlen);

void speed_destroy(struct speed *s);

#endif
