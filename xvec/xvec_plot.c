/* xvec_plot.c — SVG pictures of xvec's results (see xvec_plot.h). No
 * library: a few SVG elements written by hand, readable in any browser and
 * by rsvg-convert. */
#include "xvec_plot.h"

#include "probit.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- DET --------------------------------------------------------------- */

#define DET_W 600
#define DET_H 600
#define DET_L 80 /* margins: left, right, top, bottom */
#define DET_R 30
#define DET_T 60
#define DET_B 70
#define DET_PMIN 0.001
#define DET_PMAX 0.5

static double det_pos(double p, double lo, double hi)
{
	double zmin = probit(DET_PMIN), zmax = probit(DET_PMAX);
	if (p < DET_PMIN)
		p = DET_PMIN;
	if (p > DET_PMAX)
		p = DET_PMAX;
	return lo + (hi - lo) * (probit(p) - zmin) / (zmax - zmin);
}

static double det_x(double pfa)
{
	return det_pos(pfa, DET_L, DET_W - DET_R);
}

static double det_y(double pmiss)
{
	return det_pos(pmiss, DET_H - DET_B, DET_T);
}

static void svg_text_escaped(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", out);
		else if (*s == '>')
			fputs("&gt;", out);
		else if (*s == '&')
			fputs("&amp;", out);
		else
			fputc(*s, out);
	}
}

int xvec_plot_det(FILE *out, const double *pmiss, const double *pfa, size_t n, double eer,
		  const char *title, char *err, size_t errlen)
{
	static const double ticks[] = { 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4 };
	static const char *const labels[] = {
		"0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "40"
	};
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
		"font-size=\"13\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		DET_W, DET_H, DET_W, DET_H);
	fprintf(out,
		"<text x=\"%d\" y=\"32\" text-anchor=\"middle\" font-size=\"16\" "
		"font-weight=\"bold\">",
		DET_W / 2);
	svg_text_escaped(out, title);
	fputs("</text>\n<g stroke=\"#dddddd\" stroke-width=\"1\">\n", out);
	for (size_t i = 0; i < sizeof ticks / sizeof ticks[0]; i++) {
		fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n",
			det_x(ticks[i]), DET_T, det_x(ticks[i]), DET_H - DET_B);
		fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", DET_L,
			det_y(ticks[i]), DET_W - DET_R, det_y(ticks[i]));
	}
	fputs("</g>\n", out);
	fprintf(out,
		"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
		"stroke=\"black\"/>\n",
		DET_L, DET_T, DET_W - DET_L - DET_R, DET_H - DET_T - DET_B);
	for (size_t i = 0; i < sizeof ticks / sizeof ticks[0]; i++) {
		fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
			det_x(ticks[i]), DET_H - DET_B + 18, labels[i]);
		fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", DET_L - 8,
			det_y(ticks[i]) + 4, labels[i]);
	}
	fprintf(out,
		"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">False alarm probability "
		"(%%)</text>\n",
		(DET_L + DET_W - DET_R) / 2, DET_H - 25);
	fprintf(out,
		"<text x=\"22\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 22 %d)\">"
		"Miss probability (%%)</text>\n",
		(DET_T + DET_H - DET_B) / 2, (DET_T + DET_H - DET_B) / 2);
	/* the equal-error line */
	fprintf(out,
		"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999999\" "
		"stroke-dasharray=\"5,4\"/>\n",
		det_x(DET_PMIN), det_y(DET_PMIN), det_x(DET_PMAX), det_y(DET_PMAX));
	fputs("<polyline fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"2\" points=\"", out);
	double lx = -1, ly = -1;
	for (size_t i = 0; i < n; i++) {
		double x = det_x(pfa[i]), y = det_y(pmiss[i]);
		if (fabs(x - lx) < 0.3 && fabs(y - ly) < 0.3)
			continue; /* same pixel */
		fprintf(out, "%.1f,%.1f ", x, y);
		lx = x, ly = y;
	}
	fputs("\"/>\n", out);
	fprintf(out,
		"<circle id=\"eer\" data-eer=\"%.6f\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" "
		"fill=\"#d62728\"/>\n",
		eer, det_x(eer), det_y(eer));
	fprintf(out,
		"<text x=\"%.1f\" y=\"%.1f\" fill=\"#d62728\" font-weight=\"bold\">EER %.2f %%"
		"</text>\n",
		det_x(eer) + 10, det_y(eer) - 10, 100 * eer);
	fputs("</svg>\n", out);
	if (ferror(out))
		return status_fail(err, errlen, -EIO, "writing the DET plot failed");
	return 0;
}

/* ---- training log ------------------------------------------------------- */

struct series {
	double *v;
	size_t n, cap;
};

static int push(struct series *s, double v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		double *n = realloc(s->v, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->v = n;
		s->cap = cap;
	}
	s->v[s->n++] = v;
	return 0;
}

/* The number after "key": in a JSON line; NAN if absent. */
static double field(const char *line, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *p = strstr(line, pat);
	if (!p)
		return NAN;
	char *end;
	double v = strtod(p + strlen(pat), &end);
	return end == p + strlen(pat) ? NAN : v;
}

/* A "nice" tick step for a range. */
static double nice_step(double range)
{
	double e = pow(10, floor(log10(range / 5))), f = range / 5 / e;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * e;
}

#define LOG_W 720
#define LOG_PANEL 200
#define LOG_L 80
#define LOG_R 30
#define LOG_T 50

/* The smallest and largest finite value of s, from the points where x is
 * finite too; 0 when there is none. */
static int finite_range(const struct series *x, const struct series *s, double *lo, double *hi)
{
	int any = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (!isfinite(x->v[i]) || !isfinite(s->v[i]))
			continue;
		if (!any || s->v[i] < *lo)
			*lo = s->v[i];
		if (!any || s->v[i] > *hi)
			*hi = s->v[i];
		any = 1;
	}
	return any;
}

/* At most this many ticks an axis, whatever the range's floating-point
 * spacing makes of the step. */
#define LOG_MAX_TICKS 40

static void panel(FILE *out, int top, const char *name, const char *color, const struct series *x,
		  const struct series *y, double ymin, double ymax, double scale, const char *unit)
{
	int h = LOG_PANEL - 50, x0 = LOG_L, x1 = LOG_W - LOG_R;
	double xmin = 0, xmax = 0;
	finite_range(x, x, &xmin, &xmax);
	if (xmax <= xmin)
		xmax = xmin + 1;
	if (ymax <= ymin)
		ymax = ymin + 1;
	fprintf(out, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n", x0, top - 8, name);
	fprintf(out,
		"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
		"stroke=\"black\"/>\n",
		x0, top, x1 - x0, h);
	double st = nice_step(ymax - ymin), t0 = ceil(ymin / st) * st;
	for (int k = 0; k < LOG_MAX_TICKS && t0 + k * st <= ymax + 1e-9; k++) {
		double t = t0 + k * st, py = top + h - (t - ymin) / (ymax - ymin) * h;
		fprintf(out,
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n",
			x0, py, x1, py);
		fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g%s</text>\n", x0 - 6,
			py + 4, t * scale, unit);
	}
	double sx = nice_step(xmax - xmin), s0 = ceil(xmin / sx) * sx;
	for (int k = 0; k < LOG_MAX_TICKS && s0 + k * sx <= xmax + 1e-9; k++) {
		double t = s0 + k * sx, px = x0 + (t - xmin) / (xmax - xmin) * (x1 - x0);
		fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", px,
			top + h + 16, t);
	}
	fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
	for (size_t i = 0; i < x->n; i++) {
		double px = x0 + (x->v[i] - xmin) / (xmax - xmin) * (x1 - x0);
		double py = top + h - (y->v[i] - ymin) / (ymax - ymin) * h;
		/* finite values whose range overflows place nowhere either */
		if (isfinite(px) && isfinite(py))
			fprintf(out, "%.1f,%.1f ", px, py);
	}
	fputs("\"/>\n", out);
}

/* Values of the series that are not finite (NaN for a field a line lacks
 * too), counted over the lines whose step is finite, plus those lines. */
static size_t count_skipped(const struct series *step, const struct series *const *ys, int k)
{
	size_t n = 0;
	for (size_t i = 0; i < step->n; i++) {
		if (!isfinite(step->v[i])) {
			n++;
			continue;
		}
		for (int j = 0; j < k; j++)
			n += !isfinite(ys[j]->v[i]);
	}
	return n;
}

/* The three panels of the log; -1 when a series has no finite point. */
static int draw_log(FILE *out, const struct series *step, const struct series *loss,
		    const struct series *acc, const struct series *wait)
{
	double lmin = 0, lmax = 0, amin = 0, amax = 0, wmin = 0, wmax = 0, smin = 0, smax = 0;
	if (!finite_range(step, loss, &lmin, &lmax) || !finite_range(step, acc, &amin, &amax) ||
	    !finite_range(step, wait, &wmin, &wmax) || !finite_range(step, step, &smin, &smax))
		return -1;
	if (lmax < 0)
		lmax = 0;
	/* waits: at least a 0-5 % scale, at most 100 % */
	wmax = wmax * 1.1 > 1 ? 1 : wmax * 1.1 < 0.05 ? 0.05 : wmax * 1.1;
	int H = LOG_T + 3 * LOG_PANEL + 30;
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
		"font-size=\"13\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		LOG_W, H, LOG_W, H);
	fprintf(out,
		"<text x=\"%d\" y=\"28\" text-anchor=\"middle\" font-size=\"16\" "
		"font-weight=\"bold\">xvec training (%zu intervals, steps %g to %g)</text>\n",
		LOG_W / 2, step->n, smin, smax);
	panel(out, LOG_T + 20, "Training loss", "#1f5fbf", step, loss, 0, lmax * 1.05, 1, "");
	panel(out, LOG_T + 20 + LOG_PANEL, "Training accuracy", "#2ca02c", step, acc, 0, 1, 100,
	      " %");
	panel(out, LOG_T + 20 + 2 * LOG_PANEL, "Time waiting for data", "#d62728", step, wait, 0,
	      wmax, 100, " %");
	fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n</svg>\n",
		(LOG_L + LOG_W - LOG_R) / 2, H - 8);
	return 0;
}

int xvec_plot_log(FILE *out, const char *path, size_t *skipped, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return status_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	struct series step = { 0 }, loss = { 0 }, acc = { 0 }, wait = { 0 };
	char line[4096];
	int rc = 0;
	unsigned lineno = 0;
	while (rc == 0 && fgets(line, sizeof line, f)) {
		lineno++;
		double s = field(line, "step");
		if (isnan(s)) {
			rc = status_fail(err, errlen, FEEDER_EFORMAT,
					 "%s:%u: not an xvec log line (no "
					 "\"step\")",
					 path, lineno);
			break;
		}
		if (push(&step, s) || push(&loss, field(line, "loss")) ||
		    push(&acc, field(line, "accuracy")) || push(&wait, field(line, "data_wait")))
			rc = status_fail(err, errlen, -ENOMEM, "out of memory");
	}
	fclose(f);
	if (rc == 0 && step.n == 0)
		rc = status_fail(err, errlen, FEEDER_EFORMAT, "%s: no log lines", path);
	const struct series *ys[] = { &loss, &acc, &wait };
	*skipped = rc ? 0 : count_skipped(&step, ys, 3);
	if (rc == 0 && draw_log(out, &step, &loss, &acc, &wait))
		rc = status_fail(
			err, errlen, FEEDER_EFORMAT,
			"%s: nothing to draw: the step, loss, accuracy or data wait is never a "
			"finite number",
			path);
	if (rc == 0 && ferror(out))
		rc = status_fail(err, errlen, -EIO, "writing the plot failed");
	free(step.v), free(loss.v), free(acc.v), free(wait.v);
	return rc;
}

/* ---- the file ----------------------------------------------------------- */

int xvec_plot_save(const char *path, int (*draw)(FILE *out, void *ctx, char *err, size_t errlen),
		   void *ctx, char *err, size_t errlen)
{
	char *tmp;
	if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0)
		return status_fail(err, errlen, -ENOMEM, "%s: out of memory", path);
	int fd = mkostemp(tmp, O_CLOEXEC), rc;
	FILE *out = fd < 0 ? NULL : fdopen(fd, "w");
	if (!out) {
		rc = status_fail(err, errlen, -errno,
				 "%s: cannot create a temporary file beside it: %s", path,
				 strerror(errno));
		if (fd >= 0)
			close(fd), unlink(tmp);
		free(tmp);
		return rc;
	}
	/* The previous picture stays until this one is whole; the new one gets
	 * the mode fopen would have given it. */
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) != 0) {
		rc = status_fail(err, errlen, -errno, "%s: %s", tmp, strerror(errno));
		fclose(out), unlink(tmp), free(tmp);
		return rc;
	}
	rc = draw(out, ctx, err, errlen);
	if (fclose(out) != 0 && rc == 0)
		rc = status_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (rc == 0 && rename(tmp, path) != 0)
		rc = status_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}
