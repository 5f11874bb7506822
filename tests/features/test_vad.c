/* test_vad — energy VAD (Kaldi compute-vad, VoxCeleb settings) drops a
 * silent stretch between two tones: of the 48 frames that lie wholly in the
 * silence, all but the 2 next to the tone on each side (context 2) go, and
 * the frames that remain are exactly the rows computed without VAD. */
#include "fbank.h"
#include "signals.h"

#include <string.h>

static void run(int kind)
{
	/* 1.0 s tone, 0.5 s digital silence, 1.0 s tone. */
	const size_t n = 40000;
	float *x = sig_tone(n, 440.0, FBANK_RATE, 3000.0),
	      *steady = sig_tone(n, 440.0, FBANK_RATE, 3000.0);
	memset(x + 16000, 0, 8000 * sizeof(float));

	struct fbank_opts o;
	fbank_opts_default(&o, kind);
	struct fbank *plain, *vad;
	char err[256];
	CHECKF(fbank_create(&o, &plain, err, sizeof(err)) == 0, "%s", err);
	o.vad = 1;
	CHECKF(fbank_create(&o, &vad, err, sizeof(err)) == 0, "%s", err);

	float *a, *b;
	uint32_t fa, fb, da, db;
	CHECK(fbank_compute(plain, x, n, &a, &fa, &da, err, sizeof(err)) == 0);
	CHECK(fbank_compute(vad, x, n, &b, &fb, &db, err, sizeof(err)) == 0);
	CHECK(fa == 248 && da == db);
	/* Frames 100..147 hold only silence; 102..145 are more than two frames
	 * from a frame with tone in it. */
	CHECKF(fb == 248 - 44, "VAD kept %u of %u frames", fb, fa);
	for (uint32_t t = 0; t < fb; t++) {
		uint32_t src = t < 102 ? t : t + 44;
		CHECKF(memcmp(b + (size_t)t * db, a + (size_t)src * da, da * sizeof(float)) == 0,
		       "VAD row %u differs from row %u", t, src);
	}
	free(a);
	free(b);

	/* All silence: nothing is voiced, no matrix. */
	memset(x, 0, n * sizeof(float));
	CHECK(fbank_compute(vad, x, n, &b, &fb, &db, err, sizeof(err)) == 0);
	CHECK(fb == 0 && b == NULL);
	/* A steady tone: every frame is voiced. */
	CHECK(fbank_compute(vad, steady, n, &b, &fb, &db, err, sizeof(err)) == 0);
	CHECK(fb == 248);
	free(b);
	free(steady);

	fbank_destroy(plain);
	fbank_destroy(vad);
	free(x);
}

int main(void)
{
	run(FBANK_KIND_FBANK);
	run(FBANK_KIND_MFCC);
	return 0;
}
