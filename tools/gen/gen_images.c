/* gen_images.c — gen-images: writes a folder of photo-like JPEGs for tests
 * and benchmarks.
 *
 *   gen-images N DIR [--classes K] [--seed S] [--threads T] [--force]
 *
 * The output is in ImageFolder layout (DIR/class_000/img_000000.jpg, ...), the
 * input that `packer` turns into a dataset. Flat colours would make decoding
 * unrealistically cheap, so each image is painted like a photo: a lit
 * background gradient, overlapping soft-edged ellipses and convex polygons
 * (blurrier the further back they sit), fractal value-noise texture over
 * several octaves, a vignette and mild sensor noise. Geometry follows
 * ImageNet: shorter side 375-500 px, aspect 3:4 to 16:9 (a quarter of them
 * portrait), JPEG quality 85-95, 4:2:0 chroma. Files come out at 50-150 KB
 * for nine in ten images, mean about 90 KB (ImageNet's is about 110 KB), at
 * about 7 ms of one core per image, an eighth of it in the JPEG encoder.
 *
 * Image i goes to class i % K; every random choice for it comes from a
 * generator seeded by (seed, i) alone, so a given build writes the same bytes
 * whatever the thread count or scheduling (libm's sinf/cosf may differ across
 * systems). Classes differ weakly: each has a dominant hue and a preferred
 * shape, enough for a small model to learn something. */
#include "gen_util.h"
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <turbojpeg.h>
#include <unistd.h>

#define GEN_SHORT_MIN 375
#define GEN_SHORT_MAX 500
/* The longest side any image can have: 500 * 16 / 9, rounded down. */
#define GEN_LONG_MAX 888
#define GEN_PIXELS_MAX (GEN_LONG_MAX * GEN_SHORT_MAX)
#define GEN_QUALITY_MIN 85
#define GEN_QUALITY_MAX 95
#define GEN_MAX_SHAPES 16
#define GEN_MAX_VERTS 8
#define GEN_MIN_CELL 2.0f /* the finest noise octave's lattice spacing, px */

static const char gen_usage[] =
	"usage: gen-images N DIR [--classes K] [--seed S] [--threads T] [--force]";

/* splitmix64: tiny, fast and good enough for picture content; one state per
 * image keeps images independent of each other. */
struct gen_rng {
	uint64_t s;
};

static uint64_t gen_rng_next(struct gen_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static float gen_rng_unit(struct gen_rng *r)
{
	return (float)(gen_rng_next(r) >> 40) * 0x1p-24f;
}

static float gen_rng_range(struct gen_rng *r, float lo, float hi)
{
	return lo + (hi - lo) * gen_rng_unit(r);
}

static uint32_t gen_rng_below(struct gen_rng *r, uint32_t n)
{
	return (uint32_t)(((gen_rng_next(r) >> 32) * n) >> 32);
}

struct gen_opts {
	uint64_t count;
	uint32_t classes;
	uint64_t seed;
	unsigned threads;
	bool force;
	const char *dir;
	int class_width; /* digits in class_NNN */
	int index_width; /* digits in img_NNNNNN */
};

/* One worker's scratch space, sized once for the largest possible image. */
struct gen_canvas {
	int w, h;
	float *rgb;     /* w*h*3, linear 0..255 working colour */
	float *fine;    /* w*h detail texture (cells of 2-16 px), roughly -1..1 */
	float *coarse;  /* w*h low-frequency variation, roughly -1..1 */
	uint8_t *out;   /* w*h*3 final 8-bit RGB */
	float *lattice; /* one octave's random lattice */
	float *rowv;    /* one lattice row blended for the current y */
	int *xi;        /* lattice column of each x */
	float *xw;      /* smoothstep weight of each x */
	float *noise;   /* one row of final values before quantizing */
	int quality;
};

static int gen_canvas_init(struct gen_canvas *c, char *err, size_t errlen)
{
	size_t cells = (size_t)(GEN_LONG_MAX / GEN_MIN_CELL + 4) *
		       (size_t)(GEN_LONG_MAX / GEN_MIN_CELL + 4);

	memset(c, 0, sizeof(*c));
	c->rgb = malloc(sizeof(float) * 3 * GEN_PIXELS_MAX);
	c->fine = malloc(sizeof(float) * GEN_PIXELS_MAX);
	c->coarse = malloc(sizeof(float) * GEN_PIXELS_MAX);
	c->out = malloc(3 * GEN_PIXELS_MAX);
	c->lattice = malloc(sizeof(float) * cells);
	c->rowv = malloc(sizeof(float) * (GEN_LONG_MAX + 8));
	c->xi = malloc(sizeof(int) * GEN_LONG_MAX);
	c->xw = malloc(sizeof(float) * GEN_LONG_MAX);
	c->noise = malloc(sizeof(float) * 3 * GEN_LONG_MAX);
	if (!c->rgb || !c->fine || !c->coarse || !c->out || !c->lattice || !c->rowv || !c->xi ||
	    !c->xw || !c->noise)
		return status_fail(err, errlen, -ENOMEM, "out of memory for an image canvas");
	return 0;
}

static void gen_canvas_free(struct gen_canvas *c)
{
	free(c->rgb);
	free(c->fine);
	free(c->coarse);
	free(c->out);
	free(c->lattice);
	free(c->rowv);
	free(c->xi);
	free(c->xw);
	free(c->noise);
}

static float gen_smooth(float t)
{
	return t * t * (3.0f - 2.0f * t);
}

/* Adds amp * (value noise with lattice spacing `cell`) to dst. The lattice
 * is offset randomly so that octaves do not share grid lines, and each row
 * blends two lattice rows once so the per-pixel work is one lerp. */
static void gen_noise_octave(struct gen_canvas *c, float *dst, struct gen_rng *r, float cell,
			     float amp)
{
	float inv = 1.0f / cell;
	float ox = gen_rng_range(r, 0.0f, cell), oy = gen_rng_range(r, 0.0f, cell);
	int gw = (int)((float)c->w * inv) + 3, gh = (int)((float)c->h * inv) + 3;

	for (int i = 0; i < gw * gh; i++)
		c->lattice[i] = gen_rng_range(r, -1.0f, 1.0f);
	for (int x = 0; x < c->w; x++) {
		float fx = ((float)x + ox) * inv;
		int ix = (int)fx;
		c->xi[x] = ix;
		c->xw[x] = gen_smooth(fx - (float)ix);
	}
	for (int y = 0; y < c->h; y++) {
		float fy = ((float)y + oy) * inv;
		int iy = (int)fy;
		float wy = gen_smooth(fy - (float)iy);
		const float *l0 = c->lattice + (size_t)iy * gw, *l1 = l0 + gw;
		float *row = dst + (size_t)y * c->w;

		for (int g = 0; g < gw; g++)
			c->rowv[g] = l0[g] + (l1[g] - l0[g]) * wy;
		for (int x = 0; x < c->w; x++) {
			const float *v = c->rowv + c->xi[x];
			row[x] += amp * (v[0] + (v[1] - v[0]) * c->xw[x]);
		}
	}
}

/* Fractal noise: octaves from `cell0` down to GEN_MIN_CELL, each half the
 * spacing and `persist` times the amplitude of the one before; scaled so
 * the sum stays within about -1..1. */
static void gen_noise_fractal(struct gen_canvas *c, float *dst, struct gen_rng *r, float cell0,
			      float persist, int max_octaves)
{
	float amp = 1.0f, total = 0.0f, cell = cell0;
	int octaves = 0;

	for (; cell >= GEN_MIN_CELL && octaves < max_octaves; cell *= 0.5f, octaves++)
		total += amp, amp *= persist;
	memset(dst, 0, sizeof(float) * (size_t)c->w * (size_t)c->h);
	amp = 1.0f / total, cell = cell0;
	for (int i = 0; i < octaves; i++, cell *= 0.5f, amp *= persist)
		gen_noise_octave(c, dst, r, cell, amp);
}

static void gen_hsv(float h, float s, float v, float rgb[3])
{
	float hh = (h - floorf(h)) * 6.0f;
	int sector = (int)hh;
	float f = hh - (float)sector;
	float p = v * (1.0f - s), q = v * (1.0f - s * f), t = v * (1.0f - s * (1.0f - f));
	float r, g, b;

	switch (sector % 6) {
	case 0:
		r = v, g = t, b = p;
		break;
	case 1:
		r = q, g = v, b = p;
		break;
	case 2:
		r = p, g = v, b = t;
		break;
	case 3:
		r = p, g = q, b = v;
		break;
	case 4:
		r = t, g = p, b = v;
		break;
	default:
		r = v, g = p, b = q;
		break;
	}
	rgb[0] = r * 255.0f, rgb[1] = g * 255.0f, rgb[2] = b * 255.0f;
}

struct gen_shape {
	bool ellipse;
	float cx, cy, a, b; /* centre and radii (polygons: of the circumscribing ellipse) */
	float cosr, sinr;   /* rotation */
	int nverts;
	float nx[GEN_MAX_VERTS], ny[GEN_MAX_VERTS],
		nc[GEN_MAX_VERTS]; /* polygon edges: n.p <= c inside */
	float soft, inv_soft;      /* edge width, px */
	float inv_a2, inv_b2, q_in,
		q_out; /* ellipse: 1/a^2, 1/b^2 and the sure-inside/outside bounds of q */
	float opacity;
	float col[3];
	float gx, gy; /* shading gradient per px */
	float tex_fine, tex_coarse;
	bool flip_x, flip_y;                    /* how this shape reads the detail texture */
	float stripe_amp, stripe_kx, stripe_ky; /* warped stripes (wood, fabric); amp 0 for none */
};

static void gen_shape_make(struct gen_shape *s, struct gen_rng *r, int w, int h, float size,
			   float depth, float class_hue, bool prefer_ellipse)
{
	float rot = gen_rng_range(r, 0.0f, 6.2831853f);
	float hue = gen_rng_unit(r) < 0.5f ? class_hue + gen_rng_range(r, -0.04f, 0.04f)
					   : gen_rng_unit(r);
	float shade = gen_rng_range(r, 0.0f, 0.6f), shade_dir = gen_rng_range(r, 0.0f, 6.2831853f);

	s->ellipse = gen_rng_unit(r) < (prefer_ellipse ? 0.75f : 0.25f);
	s->cx = gen_rng_range(r, -0.1f, 1.1f) * (float)w;
	s->cy = gen_rng_range(r, -0.1f, 1.1f) * (float)h;
	s->a = size * gen_rng_range(r, 0.6f, 1.4f);
	s->b = size * gen_rng_range(r, 0.4f, 1.0f);
	s->cosr = cosf(rot), s->sinr = sinf(rot);
	/* Far shapes are out of focus; near ones keep crisp edges. */
	s->soft = depth * gen_rng_range(r, 6.0f, 30.0f) + gen_rng_range(r, 0.7f, 2.5f);
	s->inv_soft = 1.0f / s->soft;
	s->opacity = gen_rng_range(r, 0.75f, 1.0f);
	gen_hsv(hue, gen_rng_range(r, 0.15f, 0.85f), gen_rng_range(r, 0.2f, 0.95f), s->col);
	s->gx = shade * cosf(shade_dir) / s->a;
	s->gy = shade * sinf(shade_dir) / s->a;
	s->tex_coarse = gen_rng_range(r, 0.0f, 0.35f);
	/* A shape should not look like a window onto the background's texture:
	 * it reads the texture mirrored and/or negated, never as it is. */
	uint32_t view = 1 + gen_rng_below(r, 7);
	s->flip_x = view & 1, s->flip_y = view & 2;
	s->tex_fine = gen_rng_range(r, 0.2f, 1.2f) * (view & 4 ? -1.0f : 1.0f);
	s->stripe_amp = 0.0f;
	if (gen_rng_unit(r) < 0.3f) {
		float period = gen_rng_range(r, 3.0f, 24.0f),
		      dir = gen_rng_range(r, 0.0f, 6.2831853f);
		s->stripe_amp = gen_rng_range(r, 0.05f, 0.25f);
		s->stripe_kx = 6.2831853f / period * cosf(dir);
		s->stripe_ky = 6.2831853f / period * sinf(dir);
	}
	s->nverts = 0;
	s->inv_a2 = 1.0f / (s->a * s->a), s->inv_b2 = 1.0f / (s->b * s->b);
	float band = 0.5f * s->soft / (s->a < s->b ? s->a : s->b);
	s->q_out = (1.0f + band) * (1.0f + band);
	s->q_in = band < 1.0f ? (1.0f - band) * (1.0f - band) : -1.0f;
	if (!s->ellipse) {
		/* Points at sorted angles on an ellipse form a convex polygon, whose
		 * signed distance is the largest of its edges' distances. */
		float ang[GEN_MAX_VERTS], px[GEN_MAX_VERTS], py[GEN_MAX_VERTS];
		int n = 3 + (int)gen_rng_below(r, GEN_MAX_VERTS - 2);

		for (int i = 0; i < n; i++)
			ang[i] = gen_rng_range(r, 0.0f, 6.2831853f);
		for (int i = 1; i < n; i++)
			for (int j = i; j > 0 && ang[j - 1] > ang[j]; j--) {
				float t = ang[j];
				ang[j] = ang[j - 1], ang[j - 1] = t;
			}
		for (int i = 0; i < n; i++) {
			float u = s->a * cosf(ang[i]), v = s->b * sinf(ang[i]);
			px[i] = s->cx + u * s->cosr - v * s->sinr;
			py[i] = s->cy + u * s->sinr + v * s->cosr;
		}
		for (int i = 0; i < n; i++) {
			int j = (i + 1) % n;
			float ex = px[j] - px[i], ey = py[j] - py[i];
			float len = sqrtf(ex * ex + ey * ey);

			if (len < 1.0f)
				continue;
			/* Counter-clockwise order: the outward normal is (ey, -ex). */
			s->nx[s->nverts] = ey / len;
			s->ny[s->nverts] = -ex / len;
			s->nc[s->nverts] = s->nx[s->nverts] * px[i] + s->ny[s->nverts] * py[i];
			s->nverts++;
		}
		if (s->nverts < 3)
			s->ellipse = true;
	}
}

/* How much of the shape covers pixel (x, y): 0 outside, 1 inside, a ramp
 * across the soft edge. The distance to the edge only needs to be right to
 * first order near the edge, so an ellipse uses (q - 1) / |grad q| with
 * q = (u/a)^2 + (v/b)^2, and pixels clearly inside or outside skip even
 * that: a point at scale k of the ellipse is at least |k - 1| * min(a, b)
 * from its edge. */
static float gen_shape_cover(const struct gen_shape *s, float x, float y)
{
	float dx = x - s->cx, dy = y - s->cy, d;

	if (s->ellipse) {
		float u = dx * s->cosr + dy * s->sinr, v = -dx * s->sinr + dy * s->cosr;
		float ua = u * s->inv_a2, vb = v * s->inv_b2;
		float q = u * ua + v * vb;

		if (q >= s->q_out)
			return 0.0f;
		if (q <= s->q_in)
			return 1.0f;
		float g = 2.0f * sqrtf(ua * ua + vb * vb);
		d = g > 1e-12f ? (q - 1.0f) / g : -s->b;
	} else {
		d = -1e30f;
		for (int i = 0; i < s->nverts; i++) {
			float e = s->nx[i] * x + s->ny[i] * y - s->nc[i];
			d = e > d ? e : d;
		}
	}
	float t = 0.5f - d * s->inv_soft;
	return t <= 0.0f ? 0.0f : t >= 1.0f ? 1.0f : gen_smooth(t);
}

static void gen_shape_paint(struct gen_canvas *c, const struct gen_shape *s)
{
	float reach = (s->a > s->b ? s->a : s->b) + s->soft;
	int x0 = (int)floorf(s->cx - reach), x1 = (int)ceilf(s->cx + reach);
	int y0 = (int)floorf(s->cy - reach), y1 = (int)ceilf(s->cy + reach);

	x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0;
	x1 = x1 > c->w ? c->w : x1, y1 = y1 > c->h ? c->h : y1;
	for (int y = y0; y < y1; y++) {
		int ty = s->flip_y ? c->h - 1 - y : y;
		const float *fine = c->fine + (size_t)ty * c->w,
			    *coarse = c->coarse + (size_t)y * c->w;
		float *px = c->rgb + (size_t)y * c->w * 3;

		for (int x = x0; x < x1; x++) {
			int tx = s->flip_x ? c->w - 1 - x : x;
			float cover = gen_shape_cover(s, (float)x, (float)y);

			if (cover <= 0.0f)
				continue;
			float alpha = cover * s->opacity;
			float light = 1.0f + s->gx * ((float)x - s->cx) +
				      s->gy * ((float)y - s->cy) + s->tex_fine * fine[tx] +
				      s->tex_coarse * coarse[x];
			if (s->stripe_amp > 0.0f)
				light += s->stripe_amp *
					 sinf(s->stripe_kx * (float)x + s->stripe_ky * (float)y +
					      5.0f * coarse[x]);
			float *p = px + (size_t)x * 3;
			for (int k = 0; k < 3; k++)
				p[k] += alpha * (s->col[k] * light - p[k]);
		}
	}
}

/* Paints image `index` into c->out and picks its size and quality. */
/* Over 100 lines: one random stream draws every choice in a fixed order, and that order is the image. */
static void gen_render(struct gen_canvas *c, const struct gen_opts *o, uint64_t index,
		       uint32_t label)
{
	struct gen_rng r = { .s = o->seed * 0x2545f4914f6cdd1dull ^
				  (index + 1) * 0x9e3779b97f4a7c15ull };
	int shorter = GEN_SHORT_MIN + (int)gen_rng_below(&r, GEN_SHORT_MAX - GEN_SHORT_MIN + 1);
	/* Most photos are landscape, and 4:3 (or 3:4) is the commonest shape. */
	bool landscape = gen_rng_unit(&r) < 0.75f;
	float ratio = gen_rng_unit(&r) < 0.5f
			      ? 4.0f / 3.0f
			      : gen_rng_range(&r, 1.0f, landscape ? 16.0f / 9.0f : 4.0f / 3.0f);
	int longer = (int)floorf((float)shorter * ratio);
	float class_hue = (float)label / (float)o->classes + 0.03f;
	bool prefer_ellipse = label % 2 == 0;

	/* floorf keeps longer/shorter at or below the ratio's upper bound. */
	if (longer < shorter)
		longer = shorter;
	c->w = landscape ? longer : shorter;
	c->h = landscape ? shorter : longer;
	c->quality =
		GEN_QUALITY_MIN + (int)gen_rng_below(&r, GEN_QUALITY_MAX - GEN_QUALITY_MIN + 1);

	int w = c->w, h = c->h;
	float persist = gen_rng_range(&r, 0.8f, 1.0f);
	gen_noise_fractal(c, c->fine, &r, gen_rng_range(&r, 6.0f, 16.0f), persist, 16);
	gen_noise_fractal(c, c->coarse, &r, (float)shorter * gen_rng_range(&r, 0.5f, 0.9f), 0.5f,
			  3);

	/* Background: two colours split at a soft horizon, lit from one side. */
	float top[3], bottom[3];
	gen_hsv(class_hue + gen_rng_range(&r, -0.06f, 0.06f), gen_rng_range(&r, 0.1f, 0.6f),
		gen_rng_range(&r, 0.45f, 0.95f), top);
	gen_hsv(gen_rng_unit(&r) < 0.6f ? class_hue + 0.5f * gen_rng_unit(&r) : gen_rng_unit(&r),
		gen_rng_range(&r, 0.2f, 0.8f), gen_rng_range(&r, 0.15f, 0.7f), bottom);
	float horizon = gen_rng_range(&r, 0.25f, 0.75f) * (float)h;
	float spread = gen_rng_range(&r, 0.05f, 0.4f) * (float)h;
	float ldir = gen_rng_range(&r, 0.0f, 6.2831853f), lamp = gen_rng_range(&r, 0.1f, 0.5f);
	float lx = lamp * cosf(ldir) / (float)w, ly = lamp * sinf(ldir) / (float)h;
	/* The sky is smooth, the ground (grass, gravel) is rough. */
	float sky_fine = gen_rng_range(&r, 0.1f, 0.4f), ground_fine = gen_rng_range(&r, 0.5f, 1.6f);
	float bg_coarse = gen_rng_range(&r, 0.1f, 0.4f);
	for (int y = 0; y < h; y++) {
		float t = ((float)y - horizon) / spread;
		t = t < -1.0f ? 0.0f : t > 1.0f ? 1.0f : gen_smooth(0.5f * (t + 1.0f));
		float base[3], bg_fine = sky_fine + (ground_fine - sky_fine) * t;
		for (int k = 0; k < 3; k++)
			base[k] = top[k] + (bottom[k] - top[k]) * t;
		const float *fine = c->fine + (size_t)y * w, *coarse = c->coarse + (size_t)y * w;
		float *px = c->rgb + (size_t)y * w * 3;
		for (int x = 0; x < w; x++) {
			float light = 1.0f + lx * (float)(x - w / 2) + ly * (float)(y - h / 2) +
				      bg_fine * fine[x] + bg_coarse * coarse[x];
			for (int k = 0; k < 3; k++)
				px[x * 3 + k] = base[k] * light;
		}
	}

	/* Shapes from back to front: large and blurry first, small and sharp last. */
	int nshapes = 6 + (int)gen_rng_below(&r, GEN_MAX_SHAPES - 6 + 1);
	for (int i = 0; i < nshapes; i++) {
		struct gen_shape s;
		float depth = 1.0f - (float)i / (float)(nshapes - 1);
		float size =
			(float)shorter * (0.07f + 0.33f * depth * gen_rng_range(&r, 0.6f, 1.0f));

		gen_shape_make(&s, &r, w, h, size, depth * depth, class_hue, prefer_ellipse);
		gen_shape_paint(c, &s);
	}
	/* Clutter (pebbles, leaves): many small sharp shapes, which give the
	 * edges that make real photos cost more to code than smooth art. */
	int nclutter = (int)gen_rng_below(&r, 100);
	for (int i = 0; i < nclutter; i++) {
		struct gen_shape s;
		float size = (float)shorter * gen_rng_range(&r, 0.008f, 0.04f);

		gen_shape_make(&s, &r, w, h, size, 0.0f, class_hue, prefer_ellipse);
		gen_shape_paint(c, &s);
	}

	/* Vignette and sensor noise, then quantize. The noise needs plenty of
	 * random bits, so one 64-bit draw feeds a whole pixel. */
	float vig = gen_rng_range(&r, 0.1f, 0.45f);
	float sigma = gen_rng_range(&r, 2.0f, 6.0f);
	float chroma = gen_rng_range(&r, 0.2f, 0.6f);
	float cx = 0.5f * (float)w, cy = 0.5f * (float)h, inv_r2 = 1.0f / (cx * cx + cy * cy);
	float luma_scale = sigma / 104.0f, chroma_scale = sigma * chroma / 104.0f;
	for (int y = 0; y < h; y++) {
		const float *px = c->rgb + (size_t)y * w * 3;
		uint8_t *out = c->out + (size_t)y * w * 3;
		float dy2 = ((float)y - cy) * ((float)y - cy);
		float *noise = c->noise;

		for (int x = 0; x < w; x++) {
			uint64_t bits = gen_rng_next(&r);
			float dx = (float)x - cx;
			float gain = 1.0f - vig * (dx * dx + dy2) * inv_r2;
			/* Sums of two uniform bytes: triangular, zero-mean noise
			 * (std about 104), shared by the channels and per channel. */
			float luma = (float)((int)(bits & 0xff) + (int)((bits >> 8) & 0xff) - 255) *
				     luma_scale;
			for (int k = 0; k < 3; k++) {
				int sh = 16 + 16 * k;
				float n = (float)((int)((bits >> sh) & 0xff) +
						  (int)((bits >> (sh + 8)) & 0xff) - 255);
				noise[x * 3 + k] =
					px[x * 3 + k] * gain + luma + n * chroma_scale + 0.5f;
			}
		}
		/* Written as compares so that they compile to min/max, not calls. */
		for (int i = 0; i < w * 3; i++) {
			float v = noise[i] > 0.0f ? noise[i] : 0.0f;
			out[i] = (uint8_t)(int)(v < 255.0f ? v : 255.0f);
		}
	}
}

struct gen_shared {
	const struct gen_opts *opts;
	atomic_uint_fast64_t next;
	atomic_bool failed;
	pthread_mutex_t lock;
	char err[512]; /* the first failure, which stops every worker */
};

struct gen_worker {
	struct gen_shared *sh;
	pthread_t thread;
	uint64_t images, bytes, min_bytes, max_bytes;
};

static void gen_fail(struct gen_shared *sh, const char *msg)
{
	pthread_mutex_lock(&sh->lock);
	if (!atomic_load(&sh->failed)) {
		snprintf(sh->err, sizeof(sh->err), "%s", msg);
		atomic_store(&sh->failed, true);
	}
	pthread_mutex_unlock(&sh->lock);
}

static int gen_write_file(const char *path, const unsigned char *buf, size_t len, char *err,
			  size_t errlen)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return status_fail(err, errlen, -errno, "cannot create %s: %s", path,
				   strerror(errno));
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			close(fd);
			return status_fail(err, errlen, -e, "cannot write %s: %s", path,
					   strerror(e));
		}
		buf += n, len -= (size_t)n;
	}
	if (close(fd) != 0)
		return status_fail(err, errlen, -errno, "cannot write %s: %s", path,
				   strerror(errno));
	return 0;
}

static void *gen_worker_main(void *arg)
{
	struct gen_worker *wk = arg;
	struct gen_shared *sh = wk->sh;
	const struct gen_opts *o = sh->opts;
	struct gen_canvas c;
	char err[512], path[PATH_MAX];
	unsigned long cap = tjBufSize(GEN_LONG_MAX, GEN_LONG_MAX, TJSAMP_420);
	unsigned char *jpeg = tjAlloc((int)cap);
	tjhandle tj = tjInitCompress();
	int rc;

	if ((rc = gen_canvas_init(&c, err, sizeof(err))) < 0) {
		gen_fail(sh, err);
		goto out;
	}
	if (!tj || !jpeg) {
		gen_fail(sh, "cannot set up a JPEG compressor");
		goto out;
	}
	while (!atomic_load(&sh->failed)) {
		uint64_t i = atomic_fetch_add(&sh->next, 1);
		uint32_t label;
		unsigned long size = cap;

		if (i >= o->count)
			break;
		label = (uint32_t)(i % o->classes);
		gen_render(&c, o, i, label);
		if (tjCompress2(tj, c.out, c.w, 0, c.h, TJPF_RGB, &jpeg, &size, TJSAMP_420,
				c.quality, TJFLAG_NOREALLOC) != 0) {
			snprintf(err, sizeof(err), "cannot compress image %" PRIu64 ": %s", i,
				 tjGetErrorStr2(tj));
			gen_fail(sh, err);
			break;
		}
		if (snprintf(path, sizeof(path), "%s/class_%0*" PRIu32 "/img_%0*" PRIu64 ".jpg",
			     o->dir, o->class_width, label, o->index_width,
			     i) >= (int)sizeof(path)) {
			gen_fail(sh, "output path too long");
			break;
		}
		if ((rc = gen_write_file(path, jpeg, size, err, sizeof(err))) < 0) {
			gen_fail(sh, err);
			break;
		}
		wk->images++;
		wk->bytes += size;
		wk->min_bytes = size < wk->min_bytes ? size : wk->min_bytes;
		wk->max_bytes = size > wk->max_bytes ? size : wk->max_bytes;
	}
out:
	if (tj)
		tjDestroy(tj);
	tjFree(jpeg);
	gen_canvas_free(&c);
	return NULL;
}

static int gen_digits(uint64_t v)
{
	int d = 1;
	while (v >= 10)
		v /= 10, d++;
	return d;
}

/* 1 when dir exists and holds anything, 0 when it is empty or missing,
 * -errno when it cannot be read (or is not a directory). */
static int gen_dir_busy(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int busy = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			busy = 1;
			break;
		}
	closedir(d);
	return busy;
}

#define PROG "gen-images"

/* The command line into o; 0 to go on, else the exit status (1: --help
 * done, 2: bad usage, said). */
static int gen_parse_args(int argc, char **argv, struct gen_opts *o)
{
	int help = 0, force = 0;
	char *ops[2];
	struct argtab tab[] = {
		ARGTAB_INT("classes", 0, &o->classes, 1, 100000, "K", "class folders (default 10)"),
		ARGTAB_FUNC("seed", 0, &o->seed, gen_arg_seed, "S", "the images' seed (default 0)"),
		ARGTAB_INT("threads", 0, &o->threads, 1, 1024, "T",
			   "encoder threads (default: CPUs)"),
		ARGTAB_FLAG("force", 0, &force, "write into DIR even when it is not empty"),
		ARGTAB_FLAG("help", 'h', &help, "this text"),
		ARGTAB_END,
	};
	int rc = gen_args_parse(PROG, gen_usage, tab, &help, argc, argv, ops, 2, "N and DIR");
	if (rc)
		return rc;
	o->force = force;
	unsigned long long count;
	if (argtab_parse_uint(ops[0], 1, 100000000, &count) < 0)
		return gen_usage_error(PROG, gen_usage,
				       "N wants a number from 1 to 100000000, not '%s'", ops[0]);
	o->count = count;
	o->dir = ops[1];
	if (o->classes > o->count)
		return gen_usage_error(
			PROG, gen_usage,
			"--classes is larger than N, which would leave empty class folders");
	if (o->threads > o->count)
		o->threads = (unsigned)o->count;
	o->class_width = gen_digits(o->classes - 1) < 3 ? 3 : gen_digits(o->classes - 1);
	o->index_width = gen_digits(o->count - 1) < 6 ? 6 : gen_digits(o->count - 1);
	return 0;
}

/* DIR and its class folders, refusing a DIR in use without --force. 0, or
 * the exit status (said). */
static int gen_make_dirs(const struct gen_opts *o)
{
	int busy = gen_dir_busy(o->dir);
	if (busy < 0) {
		fprintf(stderr, "gen-images: cannot use %s as the output directory: %s\n", o->dir,
			strerror(-busy));
		return 2;
	}
	if (busy && !o->force) {
		fprintf(stderr,
			"gen-images: %s exists and is not empty (use --force to write into it)\n",
			o->dir);
		return 2;
	}
	char err[512], path[PATH_MAX];
	if (gen_mkdirs(o->dir, err, sizeof(err)) < 0) {
		fprintf(stderr, "gen-images: %s\n", err);
		return 1;
	}
	for (uint32_t k = 0; k < o->classes; k++) {
		snprintf(path, sizeof(path), "%s/class_%0*" PRIu32, o->dir, o->class_width, k);
		if (gen_mkdirs(path, err, sizeof(err)) < 0) {
			fprintf(stderr, "gen-images: %s\n", err);
			return 1;
		}
	}
	return 0;
}

/* What the workers wrote, all together. */
struct gen_totals {
	uint64_t images, bytes, min_bytes, max_bytes;
	double secs;
};

/* Run the workers over all the images. 0, or 1 (said). */
static int gen_run_workers(const struct gen_opts *o, struct gen_totals *t)
{
	struct gen_shared sh = { .opts = o };
	struct gen_worker *workers = calloc(o->threads, sizeof(*workers));
	struct timespec t0, t1;
	unsigned started = 0;
	char err[512];

	if (!workers) {
		fprintf(stderr, "gen-images: out of memory\n");
		return 1;
	}
	atomic_init(&sh.next, 0);
	atomic_init(&sh.failed, false);
	pthread_mutex_init(&sh.lock, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned k = 0; k < o->threads; k++) {
		workers[k].sh = &sh;
		workers[k].min_bytes = UINT64_MAX;
		int e = pthread_create(&workers[k].thread, NULL, gen_worker_main, &workers[k]);
		if (e != 0) {
			snprintf(err, sizeof(err), "cannot start a worker thread: %s", strerror(e));
			gen_fail(&sh, err);
			break;
		}
		started++;
	}
	*t = (struct gen_totals){ .min_bytes = UINT64_MAX };
	for (unsigned k = 0; k < started; k++) {
		pthread_join(workers[k].thread, NULL);
		t->images += workers[k].images;
		t->bytes += workers[k].bytes;
		t->min_bytes =
			workers[k].min_bytes < t->min_bytes ? workers[k].min_bytes : t->min_bytes;
		t->max_bytes =
			workers[k].max_bytes > t->max_bytes ? workers[k].max_bytes : t->max_bytes;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	free(workers);
	pthread_mutex_destroy(&sh.lock);
	if (atomic_load(&sh.failed)) {
		fprintf(stderr, "gen-images: %s\n", sh.err);
		return 1;
	}
	t->secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	return 0;
}

int main(int argc, char **argv)
{
	struct gen_opts o = { .classes = 10, .seed = 0, .force = false };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct gen_totals t;

	o.threads = ncpu > 0 ? (unsigned)ncpu : 1;
	int rc = gen_parse_args(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	if ((rc = gen_make_dirs(&o)) || (rc = gen_run_workers(&o, &t)))
		return rc;
	printf("gen-images: %" PRIu64 " images, %" PRIu32
	       " classes, %.1f MB (mean %.1f KB, min %.1f KB, max %.1f KB) "
	       "in %.2f s with %u threads -> %s\n",
	       t.images, o.classes, (double)t.bytes / 1e6, (double)t.bytes / 1e3 / (double)t.images,
	       (double)t.min_bytes / 1e3, (double)t.max_bytes / 1e3, t.secs, o.threads, o.dir);
	return 0;
}
