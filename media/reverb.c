/* reverb.c — RIR convolution by one FFT per chunk, with per-worker plans and
 * a cache of RIR spectra (see reverb.h for the semantics and the sizes). */
#include "reverb.h"

#include "augment.h"
#include "fftw_lock.h"

#include "status.h"

#include <errno.h>
#include <fftw3.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Limits above this are refused at create: the scratch alone would pass 2 GB. */
#define REVERB_MAX_TOTAL ((size_t)1 << 28)

struct reverb_plan {
	size_t size;   /* 0: unused */
	uint64_t used; /* LRU clock */
	fftwf_plan fwd, inv;
};

struct reverb_slot {
	uint64_t key;
	size_t rir_len;
	size_t size;   /* FFT size the spectrum is for; 0: empty */
	size_t direct; /* d, the RIR's direct path */
	uint64_t used;
	fftwf_complex *spec; /* size / 2 + 1, allocated for max_size on first use */
};

struct reverb {
	size_t max_n, max_rir, max_size;
	uint64_t clock;
	float *buf;          /* max_size reals, fftwf_malloc'd */
	fftwf_complex *spec; /* max_size / 2 + 1 */
	struct reverb_plan plans[REVERB_PLANS];
	struct reverb_slot slots[REVERB_CACHE_SLOTS];
};

/* Odd-ish multipliers of 2^k / 128 whose sizes FFTW_ESTIMATE transforms fast
 * (measured on x86-64 with AVX2 between 32768 and 65536: e.g. 34560, 36864,
 * 46080, 55296 and 57600 take 110-200 us for a forward and inverse pair,
 * where 49152 = 3 * 2^14, 61440 = 15 * 2^12 and 65536 take 240-310 us). */
static const unsigned reverb_ladder[] = { 128, 135, 144, 150, 180, 216, 225 };

size_t reverb_fft_size(size_t n, size_t rir_len, size_t d)
{
	size_t tail = rir_len - 1 - d;
	size_t need = n + (d > tail ? d : tail);
	if (need <= 128) {
		size_t p = 1;
		while (p < need)
			p <<= 1;
		return p;
	}
	size_t best = 0;
	for (unsigned s = 0; s < 48; s++) {
		for (size_t i = 0; i < sizeof(reverb_ladder) / sizeof(reverb_ladder[0]); i++) {
			size_t c = (size_t)reverb_ladder[i] << s;
			if (c >= need && (best == 0 || c < best))
				best = c;
		}
		if (best)
			return best;
	}
	return best;
}

int reverb_create(size_t max_n, size_t max_rir, struct reverb **out, char *err, size_t errlen)
{
	*out = NULL;
	if (max_n == 0 || max_rir == 0 || max_n > REVERB_MAX_TOTAL || max_rir > REVERB_MAX_TOTAL ||
	    max_n + max_rir > REVERB_MAX_TOTAL)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"reverb limits of %zu chunk and %zu RIR samples are outside 1..2^28 in all",
			max_n, max_rir);
	struct reverb *r = calloc(1, sizeof(*r));
	if (!r)
		return status_fail(err, errlen, -ENOMEM, "no memory for a reverberator");
	r->max_n = max_n;
	r->max_rir = max_rir;
	/* The largest need is n + L - 1 (d at either end). */
	r->max_size = reverb_fft_size(max_n, max_rir, 0);
	r->buf = fftwf_malloc(r->max_size * sizeof(float));
	r->spec = fftwf_malloc((r->max_size / 2 + 1) * sizeof(fftwf_complex));
	if (!r->buf || !r->spec) {
		reverb_destroy(r);
		return status_fail(err, errlen, -ENOMEM,
				   "no memory for a reverberator's %zu-point FFT", r->max_size);
	}
	*out = r;
	return 0;
}

void reverb_destroy(struct reverb *r)
{
	if (!r)
		return;
	fftw_lock();
	for (int i = 0; i < REVERB_PLANS; i++) {
		if (r->plans[i].fwd)
			fftwf_destroy_plan(r->plans[i].fwd);
		if (r->plans[i].inv)
			fftwf_destroy_plan(r->plans[i].inv);
	}
	fftw_unlock();
	for (int i = 0; i < REVERB_CACHE_SLOTS; i++)
		fftwf_free(r->slots[i].spec);
	fftwf_free(r->buf);
	fftwf_free(r->spec);
	free(r);
}

/* The plans for size, made on first use. Every plan works on r->buf and
 * r->spec (FFTW_ESTIMATE does not touch them while planning), so that the
 * same size always runs the same code on the same alignment. */
static struct reverb_plan *reverb_plan_for(struct reverb *r, size_t size, char *err, size_t errlen)
{
	struct reverb_plan *victim = NULL;
	for (int i = 0; i < REVERB_PLANS; i++) {
		struct reverb_plan *p = &r->plans[i];
		if (p->size == size) {
			p->used = ++r->clock;
			return p;
		}
		/* An unused entry (used 0) goes first, else the least recent. */
		if (!victim || p->used < victim->used)
			victim = p;
	}
	fftw_lock();
	if (victim->fwd)
		fftwf_destroy_plan(victim->fwd);
	if (victim->inv)
		fftwf_destroy_plan(victim->inv);
	victim->fwd = fftwf_plan_dft_r2c_1d((int)size, r->buf, r->spec, FFTW_ESTIMATE);
	victim->inv = fftwf_plan_dft_c2r_1d((int)size, r->spec, r->buf, FFTW_ESTIMATE);
	int ok = victim->fwd && victim->inv;
	if (!ok) {
		if (victim->fwd)
			fftwf_destroy_plan(victim->fwd);
		if (victim->inv)
			fftwf_destroy_plan(victim->inv);
		victim->fwd = victim->inv = NULL;
	}
	fftw_unlock();
	if (!ok) {
		victim->size = 0;
		victim->used = 0;
		status_fail(err, errlen, -ENOMEM, "FFTW could not plan a %zu-point transform",
			    size);
		return NULL;
	}
	victim->size = size;
	victim->used = ++r->clock;
	return victim;
}

/* The direct path and the energy of h; FEEDER_EINVAL if silent or not finite. */
static int reverb_check_rir(const float *h, size_t len, size_t *direct, double *energy, char *err,
			    size_t errlen)
{
	double e = 0.0;
	float peak = -1.0f;
	size_t d = 0;
	for (size_t k = 0; k < len; k++) {
		float a = fabsf(h[k]);
		e += (double)h[k] * h[k];
		if (a > peak) {
			peak = a;
			d = k;
		}
	}
	if (!isfinite(e))
		return status_fail(err, errlen, FEEDER_EINVAL, "the %zu-sample RIR is not finite",
				   len);
	if (e == 0.0)
		return status_fail(err, errlen, FEEDER_EINVAL, "the %zu-sample RIR is silent", len);
	*direct = d;
	*energy = e;
	return 0;
}

/* The slot holding (key, len, size), or NULL after choosing *victim. */
static struct reverb_slot *reverb_lookup(struct reverb *r, uint64_t key, size_t len,
					 struct reverb_slot **victim)
{
	struct reverb_slot *v = NULL;
	for (int i = 0; i < REVERB_CACHE_SLOTS; i++) {
		struct reverb_slot *s = &r->slots[i];
		if (s->size != 0 && s->key == key && s->rir_len == len)
			return s;
		if (!v || s->used < v->used)
			v = s;
	}
	*victim = v;
	return NULL;
}

/* The spectrum of h / sqrt(E_h) / size, rotated left by d so that the
 * direct path sits at lag 0 (the rest of the causal part after it, the part
 * before it at the end, as negative lags). The 1 / size folds in FFTW's
 * unnormalised inverse. Leaves it in r->spec. */
static void reverb_rir_spectrum(struct reverb *r, struct reverb_plan *p, const float *h, size_t len,
				size_t d, double energy)
{
	const size_t size = p->size;
	const float g = (float)(1.0 / (sqrt(energy) * (double)size));
	memset(r->buf, 0, size * sizeof(float));
	for (size_t k = d; k < len; k++)
		r->buf[k - d] = h[k] * g;
	for (size_t k = 0; k < d; k++)
		r->buf[size - d + k] = h[k] * g;
	fftwf_execute(p->fwd);
}

int reverb_apply(struct reverb *r, uint64_t rir_key, const float *rir, size_t rir_len,
		 const float *x, size_t n, float *out, char *err, size_t errlen)
{
	if (n == 0)
		return 0;
	if (n > r->max_n)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "a chunk of %zu samples is longer than the reverberator's %zu",
				   n, r->max_n);
	if (rir_len == 0 || rir_len > r->max_rir)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "an RIR of %zu samples is outside the reverberator's 1..%zu",
				   rir_len, r->max_rir);
	struct reverb_slot *victim = NULL;
	struct reverb_slot *slot = reverb_lookup(r, rir_key, rir_len, &victim);
	size_t d = 0;
	double eh = 0.0;
	if (slot) {
		d = slot->direct;
	} else {
		int rc = reverb_check_rir(rir, rir_len, &d, &eh, err, errlen);
		if (rc < 0)
			return rc;
	}
	const size_t size = reverb_fft_size(n, rir_len, d);
	struct reverb_plan *p = reverb_plan_for(r, size, err, errlen);
	if (!p)
		return -ENOMEM;
	const size_t nb = size / 2 + 1;
	if (slot && slot->size != size) {
		/* Same RIR, another chunk length: its spectrum at this size
		 * replaces the one in the slot. */
		int rc = reverb_check_rir(rir, rir_len, &d, &eh, err, errlen);
		if (rc < 0)
			return rc;
		victim = slot;
		slot = NULL;
	}
	if (!slot) {
		if (!victim->spec) {
			victim->spec = fftwf_malloc((r->max_size / 2 + 1) * sizeof(fftwf_complex));
			if (!victim->spec)
				return status_fail(err, errlen, -ENOMEM,
						   "no memory for a cached RIR spectrum");
		}
		reverb_rir_spectrum(r, p, rir, rir_len, d, eh);
		memcpy(victim->spec, r->spec, nb * sizeof(fftwf_complex));
		victim->key = rir_key;
		victim->rir_len = rir_len;
		victim->size = size;
		victim->direct = d;
		slot = victim;
	}
	slot->used = ++r->clock;

	const double ex = augment_energy(x, n);
	memcpy(r->buf, x, n * sizeof(float));
	memset(r->buf + n, 0, (size - n) * sizeof(float));
	fftwf_execute(p->fwd);
	fftwf_complex *a = r->spec;
	const fftwf_complex *b = slot->spec;
	for (size_t k = 0; k < nb; k++) {
		float re = a[k][0] * b[k][0] - a[k][1] * b[k][1];
		float im = a[k][0] * b[k][1] + a[k][1] * b[k][0];
		a[k][0] = re;
		a[k][1] = im;
	}
	fftwf_execute(p->inv);
	const double ey = augment_energy(r->buf, n);
	const float g = ey > 0.0 ? (float)sqrt(ex / ey) : 0.0f;
	for (size_t t = 0; t < n; t++)
		out[t] = r->buf[t] * g;
	return 0;
}
