/* gen_rir.c — gen-rir: write synthetic room impulse responses for
 * reverberation augmentation (a stand-in for the RIRS_NOISES simulated rooms).
 *
 *   gen-rir [--seed N] [--rate HZ] [--count N] [--rt60 MIN:MAX] [--threads N] DEST
 *
 * writes DEST/rir_NNNN.wav (16-bit mono PCM, peak 0.9 of full scale) and
 * DEST/rirs.tsv: a header line, then one line per file with its target and
 * measured RT60, the room, the source and receiver positions, the direct
 * path and the absorption.
 *
 * Each response comes from the image-source method (Allen & Berkley 1979) in
 * a shoebox room of 3-10 x 3-10 x 2.5-4 m with uniform, frequency-independent
 * wall absorption; image sources are placed with fractional delays through a
 * Hann-windowed sinc table and attenuated by 1/(4 pi d) and the wall
 * reflection coefficient sqrt(1 - alpha) per reflection. The length is the
 * direct path plus RT60 plus 0.1 s, at most 1.5 s.
 *
 * Sabine's formula (RT60 = 0.161 V / (S alpha)) names the absorption the
 * target asks for, but the image method's decay in a shoebox is not
 * Sabine's: images along a long, rarely struck axis keep energy late, and at
 * high absorption the decay follows Eyring's -ln(1 - alpha) rather than
 * alpha. With Sabine's alpha the T20 came out 0.7-1.5 times the target
 * (median 1.07) for the default 0.2-0.9 s, and 0.3-1.4 times for 0.1-0.3 s;
 * the rt60_sabine_alpha column shows it per file. The absorption is
 * therefore calibrated: one pass over the image sources bins their energy by
 * arrival time and reflection count, which gives the Schroeder decay for any
 * alpha cheaply; alpha is bisected until the T20 of that decay (the -5 to
 * -25 dB fit, times 3) meets the target; then the T20 of rendered responses
 * steers alpha to within 2 % where it can (render_calibrated). A room is
 * drawn again when Sabine would need alpha >= 0.95, when no alpha meets the
 * target, when the rendered T20 stays more than 10 % off, or when the direct
 * path is not the largest sample. The whole response is shifted by under
 * half a sample so that the direct path falls on a sample.
 *
 * Every file is a pure function of (seed, index), whatever the thread
 * count. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "detrand.h"
#include "gen_util.h"
#include "status.h"
#include "wav_write.h"

#define MAX_COUNT 10000   /* names keep four digits */
#define SOUND_SPEED 343.0 /* m/s */
#define MAX_LEN_S 1.5
#define PEAK 0.9
#define BIN_S 0.001 /* calibration histogram: 1 ms bins */
#define TAPS 16     /* fractional-delay kernel length */
#define FRACS 256   /* kernel table: fractional positions per sample */
#define ROOM_TRIES 200
#define ROW_LEN 320
#define DOMAIN_RIR 0x67656e2d72697200ull

static const char usage[] =
	"usage: gen-rir [--seed N] [--rate HZ] [--count N] [--rt60 MIN:MAX] [--threads N] DEST";

struct job {
	const char *dest;
	uint64_t seed;
	int rate, count;
	double rt60_min, rt60_max;
	const float *kernel; /* FRACS + 1 rows of TAPS taps */
	char *rows;          /* count rows of ROW_LEN: rirs.tsv lines */
	double *worst;       /* per file: |measured / target - 1| */
};

/* One axis of the image lattice: the receiver-to-image offset along it and
 * the reflections that image has taken on the two walls across it. */
struct axis_img {
	double off;
	int refl;
};

struct room {
	double dim[3], src[3], rcv[3];
	double len_s; /* response length */
	int n;        /* samples */
	struct axis_img *ax[3];
	int nax[3];
	int max_refl;
};

/* The windowed-sinc table: row f holds the taps for a delay whose fraction
 * of a sample is f / FRACS, tap k landing on sample floor(delay) + k - 7.
 * The cut-off sits at 0.9 of Nyquist so that the 16 taps keep aliasing
 * low. */
static float *kernel_table(void)
{
	float *t = malloc((size_t)(FRACS + 1) * TAPS * sizeof(*t));
	const double fc = 0.9, half = TAPS / 2;

	if (!t)
		return NULL;
	for (int f = 0; f <= FRACS; f++)
		for (int k = 0; k < TAPS; k++) {
			double x = (k - (TAPS / 2 - 1)) - (double)f / FRACS;
			double s = x == 0.0 ? 1.0 : sin(M_PI * fc * x) / (M_PI * fc * x);
			double w = fabs(x) >= half ? 0.0 : 0.5 * (1.0 + cos(M_PI * x / half));
			t[f * TAPS + k] = (float)(fc * s * w);
		}
	return t;
}

/* Image offsets along one axis of length L, for a source at s and a
 * receiver at r, out to distance reach: images (1 - 2q) s + 2 n L, with
 * |n - q| + |n| reflections (Allen & Berkley's indexing). */
static int axis_images(double L, double s, double r, double reach, struct axis_img **out,
		       int *count)
{
	int nmax = (int)(reach / (2.0 * L)) + 2, c = 0;
	struct axis_img *a = malloc((size_t)(2 * nmax + 1) * 2 * sizeof(*a));

	if (!a)
		return -ENOMEM;
	for (int n = -nmax; n <= nmax; n++)
		for (int q = 0; q < 2; q++) {
			double off = (1 - 2 * q) * s + 2.0 * n * L - r;
			if (fabs(off) <= reach)
				a[c++] = (struct axis_img){ off, abs(n - q) + abs(n) };
		}
	*out = a;
	*count = c;
	return 0;
}

/* T20 of an energy sequence e[0..n) sampled every dt seconds: the Schroeder
 * backward integral in dB, a least-squares line through the points between
 * -5 and -25 dB, extrapolated to -60 dB. 0 when fewer than 3 points lie in
 * that range or the line does not fall. */
static double schroeder_t20(const double *e, size_t n, double dt, double *edc)
{
	double total = 0.0, sx = 0, sy = 0, sxx = 0, sxy = 0, slope;
	size_t m = 0;

	for (size_t i = n; i-- > 0;) {
		total += e[i];
		edc[i] = total;
	}
	if (total <= 0.0)
		return 0.0;
	for (size_t i = 0; i < n; i++) {
		double db = 10.0 * log10(edc[i] / total + 1e-300), t = i * dt;
		if (db > -5.0 || db < -25.0)
			continue;
		sx += t;
		sy += db;
		sxx += t * t;
		sxy += t * db;
		m++;
	}
	if (m < 3)
		return 0.0;
	slope = (m * sxy - sx * sy) / (m * sxx - sx * sx);
	return slope < 0.0 ? -60.0 / slope : 0.0;
}

static void room_free(struct room *rm)
{
	for (int d = 0; d < 3; d++) {
		free(rm->ax[d]);
		rm->ax[d] = NULL;
	}
}

/* Visit every image source within the response's reach (rm->len_s of
 * travel): with hist, add its 1/d^2 energy to hist[bin * stride + k] (k its
 * reflections, 1 ms bins), the decay for any alpha; else add its pulse,
 * pw[k] / (4 pi d) placed by the windowed-sinc kernel at d / c + shift, to h. One
 * walker for both, so that the calibration sees exactly the images that are
 * rendered. */
struct walk {
	float *hist;
	int nbins, stride;
	double *h, fs, shift;
	const double *pw;
	const float *kernel;
};

static void walk_images(const struct room *rm, const struct walk *w)
{
	const double reach = rm->len_s * SOUND_SPEED, reach2 = reach * reach;
	const struct axis_img *ax = rm->ax[0], *ay = rm->ax[1], *az = rm->ax[2];

	for (int ix = 0; ix < rm->nax[0]; ix++) {
		double dx2 = ax[ix].off * ax[ix].off;
		if (dx2 > reach2)
			continue;
		for (int iy = 0; iy < rm->nax[1]; iy++) {
			double dxy2 = dx2 + ay[iy].off * ay[iy].off;
			if (dxy2 > reach2)
				continue;
			for (int iz = 0; iz < rm->nax[2]; iz++) {
				double d2 = dxy2 + az[iz].off * az[iz].off, d;
				int k = ax[ix].refl + ay[iy].refl + az[iz].refl;

				if (d2 > reach2)
					continue;
				d = sqrt(d2);
				if (w->hist) {
					int b = (int)(d / SOUND_SPEED / BIN_S);
					size_t at = (size_t)b * w->stride + k;
					if (b < w->nbins && k < w->stride)
						w->hist[at] += (float)(1.0 / d2);
				} else {
					double tau = d / SOUND_SPEED * w->fs + w->shift;
					double amp = w->pw[k] / (4.0 * M_PI * d);
					long i0 = (long)floor(tau);
					int f = (int)lrint((tau - i0) * FRACS);
					const float *kr = w->kernel + (size_t)f * TAPS;
					long first = i0 - (TAPS / 2 - 1);

					for (int t = 0; t < TAPS; t++)
						if (first + t >= 0 && first + t < rm->n)
							w->h[first + t] += amp * kr[t];
				}
			}
		}
	}
}

static void build_hist(const struct room *rm, float *hist, int nbins, int stride)
{
	struct walk w = { .hist = hist, .nbins = nbins, .stride = stride };
	walk_images(rm, &w);
}

static double hist_t20(const float *hist, int nbins, int stride, double alpha, double *e,
		       double *edc, double *pw)
{
	double b2 = 1.0 - alpha;

	pw[0] = 1.0;
	for (int k = 1; k < stride; k++)
		pw[k] = pw[k - 1] * b2;
	for (int b = 0; b < nbins; b++) {
		const float *h = hist + (size_t)b * stride;
		double s = 0.0;
		for (int k = 0; k < stride; k++)
			s += h[k] * pw[k];
		e[b] = s;
	}
	return schroeder_t20(e, (size_t)nbins, BIN_S, edc);
}

/* The alpha in (0, 1) whose binned T20 is `target`, by bisection (T20 falls
 * as alpha grows); -1 when no alpha reaches it. */
static double solve_alpha(const float *hist, int nbins, int stride, double target, double *e,
			  double *edc, double *pw)
{
	double lo = 0.001, hi = 0.995;

	if (hist_t20(hist, nbins, stride, lo, e, edc, pw) < target ||
	    hist_t20(hist, nbins, stride, hi, e, edc, pw) > target)
		return -1.0;
	for (int it = 0; it < 40; it++) {
		double mid = 0.5 * (lo + hi);
		if (hist_t20(hist, nbins, stride, mid, e, edc, pw) > target)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

static double distance(const struct room *rm)
{
	return sqrt(pow(rm->src[0] - rm->rcv[0], 2) + pow(rm->src[1] - rm->rcv[1], 2) +
		    pow(rm->src[2] - rm->rcv[2], 2));
}

/* Render with the whole response delayed by less than half a sample so that
 * the direct path lands on a sample: a direct path between two samples would
 * spread over both at about two thirds of its height, and a strong early
 * reflection that happens to fall on a sample could then top it. */
static void render(const struct room *rm, double alpha, double fs, const float *kernel, double *h,
		   double *pw)
{
	double beta = sqrt(1.0 - alpha), tau0 = distance(rm) / SOUND_SPEED * fs;
	struct walk w = {
		.h = h, .fs = fs, .shift = round(tau0) - tau0, .pw = pw, .kernel = kernel
	};

	pw[0] = 1.0;
	for (int k = 1; k <= rm->max_refl; k++)
		pw[k] = pw[k - 1] * beta;
	memset(h, 0, (size_t)rm->n * sizeof(*h));
	walk_images(rm, &w);
}

static void draw_room(struct room *rm, struct detrand *r)
{

	rm->dim[0] = detrand_between(r, 3.0, 10.0);
	rm->dim[1] = detrand_between(r, 3.0, 10.0);
	rm->dim[2] = detrand_between(r, 2.5, 4.0);
	/* Source and receiver at least 0.5 m from the walls, at standing or
	 * sitting height, at least 1 m apart (redrawn until they are; a 3 x 3 m
	 * floor leaves plenty of such pairs). */
	do {
		for (int p = 0; p < 2; p++) {
			double *v = p ? rm->rcv : rm->src;
			v[0] = detrand_between(r, 0.5, rm->dim[0] - 0.5);
			v[1] = detrand_between(r, 0.5, rm->dim[1] - 0.5);
			v[2] = detrand_between(r, 1.0, 2.0);
		}
	} while (distance(rm) < 1.0);
}

/* Scratch of one response. The sample arrays hold the longest response;
 * hist and pw are sized per room. */
struct work {
	float *hist;
	int nbins, stride;
	double *e, *edc, *pw, *h, *tmp;
	int16_t *pcm;
};

static void work_free(struct work *w)
{
	free(w->hist);
	free(w->e);
	free(w->edc);
	free(w->pw);
	free(w->h);
	free(w->tmp);
	free(w->pcm);
}

/* Draw a room for `target` and find the alpha whose binned decay meets it.
 * Returns 0 with rm, w->hist and *alpha set, 1 when this room cannot meet
 * the target (draw again), or -ENOMEM. */
static int try_room(struct room *rm, struct work *w, struct detrand *r, double target, double fs,
		    double *alpha, double *alpha_sabine, double *t_sabine)
{
	double V, S, reach, inv = 0.0;
	int rc;

	room_free(rm);
	draw_room(rm, r);
	V = rm->dim[0] * rm->dim[1] * rm->dim[2];
	S = 2.0 * (rm->dim[0] * rm->dim[1] + rm->dim[0] * rm->dim[2] + rm->dim[1] * rm->dim[2]);
	*alpha_sabine = 0.161 * V / (S * target);
	if (*alpha_sabine >= 0.95)
		return 1; /* this room is too large for so short a decay */
	rm->len_s = fmin(MAX_LEN_S, distance(rm) / SOUND_SPEED + target + 0.1);
	rm->n = (int)ceil(rm->len_s * fs);
	reach = rm->len_s * SOUND_SPEED;
	for (int d = 0; d < 3; d++) {
		rc = axis_images(rm->dim[d], rm->src[d], rm->rcv[d], reach, &rm->ax[d],
				 &rm->nax[d]);
		if (rc < 0)
			return rc;
		inv += 1.0 / rm->dim[d];
	}
	/* An image at distance d has crossed each axis about d / L times. */
	rm->max_refl = (int)(reach * inv) + 8;
	w->stride = rm->max_refl + 1;
	w->nbins = (int)ceil(rm->len_s / BIN_S);
	free(w->hist);
	free(w->pw);
	w->hist = calloc((size_t)w->nbins * w->stride, sizeof(*w->hist));
	w->pw = malloc((size_t)w->stride * sizeof(*w->pw));
	if (!w->hist || !w->pw)
		return -ENOMEM;
	build_hist(rm, w->hist, w->nbins, w->stride);
	*t_sabine = hist_t20(w->hist, w->nbins, w->stride, *alpha_sabine, w->e, w->edc, w->pw);
	*alpha = solve_alpha(w->hist, w->nbins, w->stride, target, w->e, w->edc, w->pw);
	return *alpha > 0.0 ? 0 : 1;
}

/* Render the room into w->h with the alpha whose rendered T20 comes
 * nearest the target. Interference between images and the kernel's
 * smoothing make the rendered decay differ from the binned one (by up to a
 * quarter), so the rendered T20 steers: the binned bisection is re-aimed by
 * the ratio seen until one render falls on each side of the target, then
 * regula falsi on log T20 between the two closes in. */
static double render_calibrated(const struct room *rm, struct work *w, double alpha, double target,
				double fs, const float *kernel, double *off)
{
	double aim = target, best_err = INFINITY, best_alpha = alpha;
	double a_long = 0.0, t_long = 0.0, a_short = 0.0, t_short = 0.0;

	for (int pass = 0; pass < 8; pass++) {
		double t, rel;

		render(rm, alpha, fs, kernel, w->h, w->pw);
		for (int i = 0; i < rm->n; i++)
			w->tmp[i] = w->h[i] * w->h[i];
		t = schroeder_t20(w->tmp, (size_t)rm->n, 1.0 / fs, w->edc);
		if (t <= 0.0)
			break;
		rel = fabs(t / target - 1.0);
		if (rel < best_err) {
			best_err = rel;
			best_alpha = alpha;
		}
		if (rel <= 0.02)
			break;
		if (t > target) {
			a_long = alpha;
			t_long = t;
		} else {
			a_short = alpha;
			t_short = t;
		}
		if (t_long > 0.0 && t_short > 0.0) {
			alpha = a_long +
				(a_short - a_long) * log(t_long / target) / log(t_long / t_short);
		} else {
			aim *= target / t;
			alpha = solve_alpha(w->hist, w->nbins, w->stride, aim, w->e, w->edc, w->pw);
			if (alpha <= 0.0)
				break;
		}
	}
	if (best_alpha != alpha)
		render(rm, best_alpha, fs, kernel, w->h, w->pw);
	*off = best_err;
	return best_alpha;
}

static int render_one(void *ctx, int index, char *err, size_t errlen)
{
	struct job *j = ctx;
	const double fs = j->rate;
	const size_t most = (size_t)ceil(MAX_LEN_S * fs) + 1;
	struct detrand r;
	struct room rm = { 0 };
	struct work w = { 0 };
	double target, alpha = 0.0, alpha_sabine = 0.0, t_sabine = 0.0, measured, d0 = 0.0;
	int rc = 1, direct = 0;
	char path[4096];

	w.e = malloc(((size_t)(MAX_LEN_S / BIN_S) + 2) * sizeof(*w.e));
	w.edc = malloc(most * sizeof(*w.edc));
	w.h = malloc(most * sizeof(*w.h));
	w.tmp = malloc(most * sizeof(*w.tmp));
	w.pcm = malloc(most * sizeof(*w.pcm));
	if (!w.e || !w.edc || !w.h || !w.tmp || !w.pcm)
		goto nomem;
	detrand_init(&r, detrand_key(j->seed, DOMAIN_RIR, (uint64_t)index));
	target = detrand_between(&r, j->rt60_min, j->rt60_max);
	for (int tries = 0; tries < ROOM_TRIES && rc == 1; tries++) {
		double off;
		int top = 0;

		rc = try_room(&rm, &w, &r, target, fs, &alpha, &alpha_sabine, &t_sabine);
		if (rc < 0)
			goto nomem;
		if (rc == 1)
			continue;
		alpha = render_calibrated(&rm, &w, alpha, target, fs, j->kernel, &off);
		/* Short decays in some layouts jump past the target as alpha
		 * moves (the -5 dB point slides across an early reflection):
		 * more than 10 % off, another room is drawn. */
		if (off > 0.10) {
			rc = 1;
			continue;
		}
		/* Two reflections of equal path length (a floor and a wall image
		 * in a symmetric layout) can sum above the direct path. Readers
		 * align responses on their peak (Kaldi's wav-reverberate takes it
		 * as the direct path), so such a layout is drawn again. */
		d0 = distance(&rm);
		direct = (int)lrint(d0 / SOUND_SPEED * fs);
		for (int i = 1; i < rm.n; i++)
			if (fabs(w.h[i]) > fabs(w.h[top]))
				top = i;
		if (top != direct)
			rc = 1;
	}
	if (rc == 1) {
		rc = status_fail(err, errlen, FEEDER_EINVAL,
				 "rir_%04d: none of %d rooms drawn reaches RT60 %.3f s", index,
				 ROOM_TRIES, target);
		goto out;
	}
	{
		float *x = (float *)w.tmp; /* rm.n doubles hold rm.n floats */
		for (int i = 0; i < rm.n; i++)
			x[i] = (float)w.h[i];
		gen_to_pcm16(x, (size_t)rm.n, PEAK, w.pcm);
	}
	/* What a reader of the file will measure: the T20 of the 16-bit data. */
	for (int i = 0; i < rm.n; i++)
		w.tmp[i] = (double)w.pcm[i] * w.pcm[i];
	measured = schroeder_t20(w.tmp, (size_t)rm.n, 1.0 / fs, w.edc);
	snprintf(path, sizeof(path), "%s/rir_%04d.wav", j->dest, index);
	rc = wav_write_file(path, w.pcm, (size_t)rm.n, (uint32_t)j->rate, 1, err, errlen);
	if (rc < 0)
		goto out;
	j->worst[index] = measured > 0.0 ? fabs(measured / target - 1.0) : INFINITY;
	snprintf(j->rows + (size_t)index * ROW_LEN, ROW_LEN,
		 "rir_%04d\t%.3f\t%.3f\t%.2fx%.2fx%.2f\t%.2f,%.2f,%.2f\t%.2f,%.2f,%.2f\t%.3f\t"
		 "%.6f\t%.4f\t%.4f\t%.3f\t%.4f",
		 index, target, measured, rm.dim[0], rm.dim[1], rm.dim[2], rm.src[0], rm.src[1],
		 rm.src[2], rm.rcv[0], rm.rcv[1], rm.rcv[2], d0, direct / fs, alpha_sabine, alpha,
		 t_sabine, rm.n / fs);
	goto out;

nomem:
	rc = status_fail(err, errlen, -ENOMEM, "rir_%04d: no memory for the image sources", index);
out:
	room_free(&rm);
	work_free(&w);
	return rc;
}

static int write_table(const struct job *j, char *err, size_t errlen)
{
	char path[4096], tmp[4200];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/rirs.tsv", j->dest);
	rc = gen_text_open(path, tmp, &f, err, errlen);
	if (rc < 0)
		return rc;
	fprintf(f, "name\trt60_target\trt60_measured\troom_m\tsource_m\treceiver_m\tdistance_m\t"
		   "direct_s\talpha_sabine\talpha\trt60_sabine_alpha\tlength_s\n");
	for (int i = 0; i < j->count; i++)
		fprintf(f, "%s\n", j->rows + (size_t)i * ROW_LEN);
	return gen_text_commit(f, tmp, path, err, errlen);
}

#define PROG "gen-rir"

/* The command line into j; 0 to go on, else the exit status (1: --help
 * done, 2: bad usage, said). */
static int parse_args(int argc, char **argv, struct job *j, int *threads)
{
	int help = 0;
	char *ops[1];
	struct gen_range rt60 = { .lo = 0.1, .hi = 1.2, .min = j->rt60_min, .max = j->rt60_max };
	struct argtab tab[] = {
		ARGTAB_FUNC("seed", 0, &j->seed, gen_arg_seed, "N", "the set's seed (default 1)"),
		ARGTAB_INT("rate", 0, &j->rate, 8000, 48000, "HZ", "sample rate (default 16000)"),
		ARGTAB_INT("count", 0, &j->count, 1, MAX_COUNT, "N", "responses (default 10)"),
		ARGTAB_FUNC("rt60", 0, &rt60, gen_arg_range, "MIN:MAX",
			    "each room's target RT60 in seconds is drawn from this\n"
			    "range (default 0.2:0.9)"),
		ARGTAB_INT("threads", 0, threads, 1, 64, "N",
			   "render threads (default: CPUs, at most 8)"),
		ARGTAB_FLAG("help", 'h', &help, "this text"),
		ARGTAB_END,
	};
	int rc = gen_args_parse(PROG, usage, tab, &help, argc, argv, ops, 1, "DEST");
	if (rc)
		return rc;
	j->rt60_min = rt60.min;
	j->rt60_max = rt60.max;
	j->dest = ops[0];
	if (strlen(j->dest) > 3000)
		return gen_usage_error(PROG, usage, "DEST is too long");
	return 0;
}

int main(int argc, char **argv)
{
	struct job j = { .seed = 1, .rate = 16000, .count = 10, .rt60_min = 0.2, .rt60_max = 0.9 };
	int threads = gen_default_threads(), rc, worst = 0;
	struct timespec t0, t1;
	float *kernel = NULL;
	char err[512];
	rc = parse_args(argc, argv, &j, &threads);
	if (rc)
		return rc == 1 ? 0 : rc;

	kernel = kernel_table();
	j.rows = calloc((size_t)j.count, ROW_LEN);
	j.worst = calloc((size_t)j.count, sizeof(*j.worst));
	if (!kernel || !j.rows || !j.worst) {
		rc = status_fail(err, sizeof(err), -ENOMEM, "no memory for %d responses", j.count);
		goto out;
	}
	j.kernel = kernel;
	rc = gen_mkdirs(j.dest, err, sizeof(err));
	if (rc < 0)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = gen_run(j.count, threads, render_one, &j, err, sizeof(err));
	if (rc == 0)
		rc = write_table(&j, err, sizeof(err));
	if (rc < 0)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int i = 1; i < j.count; i++)
		if (j.worst[i] > j.worst[worst])
			worst = i;
	printf("gen-rir: wrote %d responses to %s in %.2f s; RT60 off its target by at most "
	       "%.1f %% (rir_%04d)\n",
	       j.count, j.dest, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9,
	       100.0 * j.worst[worst], worst);
out:
	free(kernel);
	free(j.rows);
	free(j.worst);
	if (rc < 0) {
		fprintf(stderr, "gen-rir: %s\n", err);
		return 1;
	}
	return 0;
}
