/* xvec_plot.h — xvec's results as pictures: self-contained SVG files.
 *
 * xvec_plot_det draws a DET curve (miss against false-alarm probability,
 * both on normal-deviate axes from 0.1 % to 50 %, as NIST plots them) with
 * the EER point marked; xvec_plot_log draws the training log written by
 * `xvec train --log` (one JSON object per logging interval) as three panels
 * against the step: loss, training accuracy, and the share of time spent
 * waiting for data. Both return 0 or a negative code with a sentence. */
#ifndef FEEDER_XVEC_PLOT_H
#define FEEDER_XVEC_PLOT_H

#include <stddef.h>
#include <stdio.h>

/* The DET curve of n points (pmiss[i], pfa[i]); eer is marked (its value in
 * the marker's data-eer attribute, for tests). */
int xvec_plot_det(FILE *out, const double *pmiss, const double *pfa, size_t n, double eer,
		  const char *title, char *err, size_t errlen);

/* The log at path (JSON lines with step, loss, accuracy, data_wait). A
 * value that is not a finite number (a diverged loss, a field a line lacks)
 * is left out of its curve, and a line whose step is not finite out of
 * all: *skipped counts them. FEEDER_EFORMAT when a curve would have no
 * point at all. */
int xvec_plot_log(FILE *out, const char *path, size_t *skipped, char *err, size_t errlen);

/* Write what draw writes (0 or a negative code with a sentence) to path
 * through a temporary file beside it, renamed over path only when draw and
 * every write succeeded: a failed plot leaves the previous file as it was. */
int xvec_plot_save(const char *path, int (*draw)(FILE *out, void *ctx, char *err, size_t errlen),
		   void *ctx, char *err, size_t errlen);

#endif
