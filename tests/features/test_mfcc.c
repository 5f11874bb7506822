/* test_mfcc — MFCC (VoxCeleb settings: 30 bins, 30 cepstra, lifter 22,
 * c0 = raw log energy): the output is finite; c0 equals the frame's log
 * energy and rises by ln 4 when the amplitude doubles while c1..c29 stay
 * put (a gain only shifts every log mel energy by a constant, which the
 * DCT puts in row 0 alone); and c1..c29 are the liftered DCT of the fbank
 * features computed with the same 30 bins. */
#include "check.h"
#include "fbank.h"

#include <math.h>
#include <stdlib.h>

#define N 8000

static float *features(int kind, const float *x, uint32_t *frames, uint32_t *dim)
{
	struct fbank_opts o;
	fbank_opts_default(&o, kind);
	o.bins = 30;
	struct fbank *fb;
	char err[256];
	CHECKF(fbank_create(&o, &fb, err, sizeof(err)) == 0, "%s", err);
	float *f;
	CHECKF(fbank_compute(fb, x, N, &f, frames, dim, err, sizeof(err)) == 0, "%s", err);
	fbank_destroy(fb);
	return f;
}

int main(void)
{
	static float x[N], x2[N];
	for (int i = 0; i < N; i++) {
		/* A tone plus a second, quieter one so that the spectrum is not
		 * dominated by one bin. */
		x[i] = (float)(2000.0 * sin(2.0 * M_PI * 700.0 * i / FBANK_RATE) +
			       500.0 * sin(2.0 * M_PI * 3100.0 * i / FBANK_RATE));
		x2[i] = 2.0f * x[i];
	}
	uint32_t frames, dim, frames2, dim2, ff, fd;
	float *m = features(FBANK_KIND_MFCC, x, &frames, &dim);
	float *m2 = features(FBANK_KIND_MFCC, x2, &frames2, &dim2);
	float *fbank = features(FBANK_KIND_FBANK, x, &ff, &fd);
	CHECK(frames == 48 && dim == 30 && frames2 == frames && dim2 == dim);
	CHECK(ff == frames && fd == 30);

	for (uint32_t t = 0; t < frames; t++) {
		const float *r = m + (size_t)t * dim, *r2 = m2 + (size_t)t * dim;
		const float *fr = fbank + (size_t)t * fd;
		const float *s = x + (size_t)t * FBANK_FRAME_SHIFT;
		double mean = 0.0, energy = 0.0;
		for (int i = 0; i < FBANK_FRAME_LEN; i++)
			mean += s[i];
		mean /= FBANK_FRAME_LEN;
		for (int i = 0; i < FBANK_FRAME_LEN; i++)
			energy += (s[i] - mean) * (s[i] - mean);
		CHECKF(fabs(r[0] - log(energy)) < 1e-4, "frame %u: c0 %g, log energy %g", t, r[0],
		       log(energy));
		CHECKF(fabs((r2[0] - r[0]) - log(4.0)) < 1e-4, "frame %u: c0 rose by %g", t,
		       r2[0] - r[0]);
		for (uint32_t c = 0; c < dim; c++)
			CHECK(isfinite(r[c]));
		for (int c = 1; c < 30; c++) {
			CHECKF(fabs(r2[c] - r[c]) < 2e-3 * (1.0 + fabs(r[c])),
			       "frame %u c%d: %g at double gain vs %g", t, c, r2[c], r[c]);
			double v = 0.0;
			for (int n = 0; n < 30; n++)
				v += sqrt(2.0 / 30) * cos(M_PI / 30 * (n + 0.5) * c) * fr[n];
			v *= 1.0 + 11.0 * sin(M_PI * c / 22.0);
			CHECKF(fabs(r[c] - v) < 1e-3 * (1.0 + fabs(v)),
			       "frame %u c%d: %g vs DCT %g", t, c, r[c], v);
		}
	}
	free(m);
	free(m2);
	free(fbank);
	return 0;
}
