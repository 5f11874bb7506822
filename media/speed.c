/* speed.c — speed perturbation by resampling from rate f to rate 1 with
 * libsoxr, one resampler kept per factor (see speed.h). */
#include "speed.h"

#include "status.h"

#include <errno.h>
#include <math.h>
#include <soxr.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct speed_slot {
	double ratio;  /* the factor rounded (speed_ratio); 0: unused */
	uint64_t used; /* LRU clock */
	soxr_t soxr;
};

struct speed {
	uint64_t clock;
	struct speed_slot slots[SPEED_SLOTS];
};

static int speed_factor_ok(float f)
{
	return f >= SPEED_MIN_FACTOR && f <= SPEED_MAX_FACTOR;
}

int speed_create(struct speed **out, char *err, size_t errlen)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return status_fail(err, errlen, -ENOMEM, "no memory for a speed perturber");
	return 0;
}

void speed_destroy(struct speed *s)
{
	if (!s)
		return;
	for (int i = 0; i < SPEED_SLOTS; i++)
		if (s->slots[i].soxr)
			soxr_delete(s->slots[i].soxr);
	free(s);
}

/* The factor as a ratio: the float rounded to 4 decimals, so that 0.9f
 * (0.89999998) means 9/10. libsoxr resamples a small rational ratio with a
 * short polyphase filter; 0.89999998 would take it twice as long. */
static double speed_ratio(float factor)
{
	return (double)llroundf(factor * 10000.0f) / 10000.0;
}

size_t speed_out_len(size_t n, float factor)
{
	if (!speed_factor_ok(factor))
		return 0;
	return (size_t)llround((double)n / speed_ratio(factor));
}

/* The resampler for factor, cleared for a new signal; made on first use. */
static soxr_t speed_soxr(struct speed *s, double ratio, char *err, size_t errlen)
{
	struct speed_slot *victim = NULL;
	for (int i = 0; i < SPEED_SLOTS; i++) {
		struct speed_slot *sl = &s->slots[i];
		if (sl->soxr && sl->ratio == ratio) {
			sl->used = ++s->clock;
			soxr_error_t e = soxr_clear(sl->soxr);
			if (e) {
				status_fail(err, errlen, FEEDER_EFORMAT,
					    "libsoxr could not reset: %s", e);
				return NULL;
			}
			return sl->soxr;
		}
		if (!victim || sl->used < victim->used)
			victim = sl;
	}
	if (victim->soxr)
		soxr_delete(victim->soxr);
	victim->soxr = NULL;
	victim->ratio = 0.0;
	victim->used = 0;
	soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
	soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
	soxr_runtime_spec_t rt = soxr_runtime_spec(1);
	soxr_error_t e = NULL;
	soxr_t r = soxr_create(ratio, 1.0, 1, &e, &io, &q, &rt);
	if (!r || e) {
		if (r)
			soxr_delete(r);
		status_fail(err, errlen, FEEDER_EFORMAT,
			    "libsoxr could not make a %g resampler: %s", ratio,
			    e ? e : "no reason given");
		return NULL;
	}
	victim->soxr = r;
	victim->ratio = ratio;
	victim->used = ++s->clock;
	return r;
}

int speed_perturb(struct speed *s, float factor, const float *x, size_t n, float *out,
		  size_t out_cap, size_t *out_n, char *err, size_t errlen)
{
	*out_n = 0;
	if (!speed_factor_ok(factor))
		return status_fail(err, errlen, FEEDER_EINVAL, "speed factor %g is outside %g..%g",
				   (double)factor, (double)SPEED_MIN_FACTOR,
				   (double)SPEED_MAX_FACTOR);
	const size_t want = speed_out_len(n, factor);
	if (want > out_cap)
		return status_fail(
			err, errlen, FEEDER_EQUOTA,
			"%zu samples at speed %g make %zu, more than the %zu of the output", n,
			(double)factor, want, out_cap);
	const double ratio = speed_ratio(factor);
	if (ratio == 1.0) {
		memmove(out, x, n * sizeof(float));
		*out_n = n;
		return 0;
	}
	if (want == 0)
		return 0;
	soxr_t r = speed_soxr(s, ratio, err, errlen);
	if (!r)
		return FEEDER_EFORMAT;
	size_t in = 0, done = 0;
	while (in < n && done < want) {
		size_t used = 0, made = 0;
		soxr_error_t e =
			soxr_process(r, x + in, n - in, &used, out + done, want - done, &made);
		if (e)
			return status_fail(err, errlen, FEEDER_EFORMAT, "libsoxr failed: %s", e);
		in += used;
		done += made;
		if (used == 0 && made == 0)
			break;
	}
	/* End of input: the filter's tail holds the last samples. */
	while (done < want) {
		size_t made = 0;
		soxr_error_t e = soxr_process(r, NULL, 0, NULL, out + done, want - done, &made);
		if (e)
			return status_fail(err, errlen, FEEDER_EFORMAT, "libsoxr failed: %s", e);
		if (made == 0)
			break;
		done += made;
	}
	/* soxr gives round(n / f) in practice; should it stop short of the
	 * rounded length, the rest is silence, so the length never varies. */
	for (size_t i = done; i < want; i++)
		out[i] = 0.0f;
	*out_n = want;
	return 0;
}
