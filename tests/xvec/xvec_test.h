/* xvec_test.h — what the CPU x-vector tests share: the small network they
 * train, copies and differences of model arrays, a checkpoint refused. */
#ifndef FEEDER_XVEC_TEST_H
#define FEEDER_XVEC_TEST_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "xvec_checkpoint.h"
#include "xvec_model.h"

/* The defaults with feat_dim D, S speakers, and the small sizes the tests
 * train in milliseconds: width 16, pooled width 24, x-vectors of 12. */
static inline struct xvec_options xt_options(int D, int S)
{
	struct xvec_options o;
	xvec_options_default(&o);
	o.feat_dim = D, o.width = 16, o.pool_width = 24, o.embed = 12, o.num_speakers = S;
	return o;
}

/* A model of o for batches of up to B x T; the test fails if it is refused. */
static inline struct xvec_model *xt_model(const struct xvec_options *o, int B, int T)
{
	struct xvec_model *m;
	char err[256];
	CHECKF(xvec_model_create(&m, o, B, T, err, sizeof(err)) == 0, "%s", err);
	return m;
}

/* A malloc'd copy of *n floats; n is read after p is evaluated, so that p
 * may be a getter that sets it: xt_dup(xvec_model_grads(m, &n), &n). */
static inline float *xt_dup(const float *p, const size_t *n)
{
	float *c = malloc(sizeof(float) * (*n ? *n : 1));
	CHECK(c);
	memcpy(c, p, sizeof(float) * *n);
	return c;
}

/* max |a - b| over n floats; *top gets max |a|. */
static inline double xt_maxdiff(const float *a, const float *b, size_t n, double *top)
{
	double d = 0, t = 0;
	for (size_t i = 0; i < n; i++) {
		d = fmax(d, fabs((double)a[i] - b[i]));
		t = fmax(t, fabs(a[i]));
	}
	*top = t;
	return d;
}

/* xvec_checkpoint_peek (when peek is set) and xvec_checkpoint_load of path
 * into m must each fail with code and a sentence naming word and path; m's
 * parameters and step stay as they were. */
static inline void xt_refused(struct xvec_model *m, const char *path, int peek, int code,
			      const char *word)
{
	size_t n;
	float *p = xvec_model_params(m, &n), *copy = xt_dup(p, &n);
	char err[256], blob[64];
	uint64_t step = xvec_model_step(m);
	struct xvec_options o;
	for (int load = !peek; load < 2; load++) {
		err[0] = '\0';
		int rc = load ? xvec_checkpoint_load(m, path, blob, sizeof(blob), NULL, err,
						     sizeof(err))
			      : xvec_checkpoint_peek(path, &o, err, sizeof(err));
		const char *what = load ? "load" : "peek";
		printf("%s refused (%d): %s\n", what, rc, err);
		CHECKF(rc == code && strstr(err, word) && strstr(err, path),
		       "%s: %d '%s', want %d naming '%s' and the path", what, rc, err, code, word);
	}
	CHECK(memcmp(copy, p, sizeof(float) * n) == 0 && xvec_model_step(m) == step);
	free(copy);
}

#endif
