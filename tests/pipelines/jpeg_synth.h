/* jpeg_synth.h — photo-like test JPEGs made in memory for the pipeline
 * tests and the pipeline micro-benchmark.
 *
 * Smooth colour gradients, a few soft-edged shapes and fine texture, so
 * that crops and downscales have real structure to get wrong, encoded with
 * TurboJPEG at a chosen quality and chroma subsampling. Deterministic. */
#ifndef FEEDER_JPEG_SYNTH_H
#define FEEDER_JPEG_SYNTH_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

/* Fill w x h x channels pixels (channels 3: RGB, 1: grey). */
static inline void jpeg_synth_pixels(uint8_t *px, int w, int h, int channels, unsigned seed)
{
	uint32_t state = seed * 2654435761u + 12345u;
	double cx = w * (0.3 + 0.1 * (seed % 3)), cy = h * 0.55, rad = (w < h ? w : h) * 0.25;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			double u = (double)x / w, v = (double)y / h;
			double d = hypot(x - cx, y - cy);
			double disk = 1.0 / (1.0 + exp((d - rad) / 3.0)); /* soft-edged disk */
			double stripe = 0.5 + 0.5 * sin(x * 0.21 + y * 0.07 + seed); /* texture */
			state = state * 1664525u + 1013904223u;
			double noise = ((state >> 24) & 0xff) / 255.0 - 0.5;
			double rgb[3] = {
				60 + 120 * u + 50 * disk + 20 * stripe + 6 * noise,
				40 + 100 * v + 70 * sin(3.1 * u + 1.3 * v) * (1 - disk) +
					25 * stripe + 6 * noise,
				90 + 80 * (1 - u) * v + 90 * disk * stripe + 6 * noise,
			};
			for (int c = 0; c < channels; c++) {
				double val =
					channels == 1 ? (rgb[0] + rgb[1] + rgb[2]) / 3 : rgb[c];
				px[((size_t)y * w + x) * channels + c] =
					(uint8_t)(val < 0     ? 0
						  : val > 255 ? 255
							      : val + 0.5);
			}
		}
}

/* Compress w x h x channels pixels (3: RGB; 1: grey, subsamp TJSAMP_GRAY;
 * 4: CMYK) with TurboJPEG flags (TJFLAG_PROGRESSIVE, ...); returns a
 * tjAlloc'ed buffer (free with tjFree) and its length, or NULL. */
static inline uint8_t *jpeg_synth_compress(const uint8_t *px, int w, int h, int channels,
					   int subsamp, int quality, int flags, unsigned long *len)
{
	static const int formats[5] = { 0, TJPF_GRAY, 0, TJPF_RGB, TJPF_CMYK };
	tjhandle tj = tjInitCompress();
	unsigned char *out = NULL;
	*len = 0;
	int rc = tj ? tjCompress2(tj, px, w, 0, h, formats[channels], &out, len, subsamp, quality,
				  flags)
		    : -1;
	if (tj)
		tjDestroy(tj);
	if (rc) {
		tjFree(out);
		return NULL;
	}
	return out;
}

/* Encode a synthetic image; returns a tjAlloc'ed buffer (free with tjFree)
 * and its length, or NULL. subsamp: TJSAMP_*; TJSAMP_GRAY makes a grey JPEG. */
static inline uint8_t *jpeg_synth(int w, int h, int subsamp, int quality, unsigned seed,
				  unsigned long *len)
{
	int channels = subsamp == TJSAMP_GRAY ? 1 : 3;
	uint8_t *px = malloc((size_t)w * h * channels);
	if (!px)
		return NULL;
	jpeg_synth_pixels(px, w, h, channels, seed);
	uint8_t *out = jpeg_synth_compress(px, w, h, channels, subsamp, quality, 0, len);
	free(px);
	return out;
}

#endif
