/* xvec_model.c — parameters, workspace and the forward/backward/step of the x-vector TDNN.
 *
 * The layer arithmetic lives in tdnn.c; this file owns the buffers and the
 * order of operations (see xvec_model.h for the network). Parameters live in
 * one array so that the optimizer and the checkpoint treat them as one
 * vector; struct xvec_tensor names views into it. What backward needs is
 * kept per layer (ReLU outputs r, layer outputs y, BN mean and invstd); the
 * dropout masks and the noise are regenerated from their counters instead. */
#include "xvec_model.h"
#include "philox.h"
#include "status.h"
#include "tdnn.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Subsequence tag of the weight initialization (above every step and dropout tag). */
#define XVEC_INIT_SUBSEQ (1ull << 63)

enum {
	XW1,
	XW2,
	XW3,
	XW4,
	XW5,
	XW6,
	XW7,
	XWOUT,
	XB1,
	XB2,
	XB3,
	XB4,
	XB5,
	XB6,
	XB7,
	XBOUT,
	XG1,
	XG2,
	XG3,
	XG4,
	XG5,
	XG6,
	XG7,
	XBE1,
	XBE2,
	XBE3,
	XBE4,
	XBE5,
	XBE6,
	XBE7,
	XVEC_NUM_TENSORS
};

static const char *const xvec_names[XVEC_NUM_TENSORS] = {
	"frame1.weight", "frame2.weight", "frame3.weight", "frame4.weight", "frame5.weight",
	"seg6.weight",   "seg7.weight",   "out.weight",    "frame1.bias",   "frame2.bias",
	"frame3.bias",   "frame4.bias",   "frame5.bias",   "seg6.bias",     "seg7.bias",
	"out.bias",      "bn1.gamma",     "bn2.gamma",     "bn3.gamma",     "bn4.gamma",
	"bn5.gamma",     "bn6.gamma",     "bn7.gamma",     "bn1.beta",      "bn2.beta",
	"bn3.beta",      "bn4.beta",      "bn5.beta",      "bn6.beta",      "bn7.beta",
};

static const int xvec_ctx1[] = { -2, -1, 0, 1, 2 };
static const int xvec_ctx2[] = { -2, 0, 2 };
static const int xvec_ctx3[] = { -3, 0, 3 };
static const int xvec_ctx0[] = { 0 };
static const int *const xvec_ctx[XVEC_FRAME_LAYERS] = { xvec_ctx1, xvec_ctx2, xvec_ctx3, xvec_ctx0,
							xvec_ctx0 };
static const int xvec_nctx[XVEC_FRAME_LAYERS] = { 5, 3, 3, 1, 1 };

struct xvec_model {
	struct xvec_options o;
	struct xvec_tensor t[XVEC_NUM_TENSORS];
	float *params, *grads;
	size_t nparams, ndecay;
	float *bn;       /* running means and variances */
	float *bn_saved; /* bn before the current step, to undo a bad batch */
	size_t nbn, bn_off[XVEC_BN_LAYERS];
	int bn_ch[XVEC_BN_LAYERS];
	struct adam adam;

	/* workspace for up to cap_batch x cap_frames */
	int cap_batch, cap_frames;
	float *r[XVEC_BN_LAYERS], *y[XVEC_BN_LAYERS];
	float *mean[XVEC_BN_LAYERS], *invstd[XVEC_BN_LAYERS];
	float *g1, *g2;            /* frame-level gradient / scratch */
	float *pool, *a6, *logits; /* pooled stats, x-vectors, probabilities */
	float *s1, *s2;            /* segment-level gradient scratch */

	/* what the last forward pass was, for backward */
	int fwd_batch, fwd_frames, fwd_training;
	const float *fwd_x;

	/* data-parallel training (xvec_model_set_dp); NULL: one process */
	struct tdnn_dp *dp;
	int (*sum_f)(void *ctx, float *v, size_t n);
	double *reduce_s;
};

void xvec_options_default(struct xvec_options *o)
{
	memset(o, 0, sizeof(*o));
	o->feat_dim = 30;
	o->width = 512;
	o->pool_width = 1500;
	o->embed = 512;
	o->num_speakers = 0;
	o->dropout = 0.0f;
	o->noise_eps = 0.0f;
	o->lr = 1e-3f;
	o->beta1 = 0.9f;
	o->beta2 = 0.999f;
	o->adam_eps = 1e-8f;
	o->weight_decay = 0.0f;
	o->seed = 1;
}

/* Output channels of BN layer l (frame1..5, seg6, seg7). */
static int xvec_bn_channels(const struct xvec_options *o, int l)
{
	return l < 4 ? o->width : l == 4 ? o->pool_width : o->embed;
}

static int xvec_frame_in(const struct xvec_options *o, int l)
{
	return l == 0 ? o->feat_dim : o->width;
}

/* Frames after frame layer l, for an input of T frames. */
static int xvec_frames_after(int T, int l)
{
	for (int i = 0; i <= l; i++)
		T -= tdnn_context_left(xvec_ctx[i], xvec_nctx[i]) +
		     tdnn_context_right(xvec_ctx[i], xvec_nctx[i]);
	return T;
}

static void xvec_free_workspace(struct xvec_model *m)
{
	for (int l = 0; l < XVEC_BN_LAYERS; l++) {
		free(m->r[l]);
		free(m->y[l]);
		free(m->mean[l]);
		free(m->invstd[l]);
		m->r[l] = m->y[l] = m->mean[l] = m->invstd[l] = NULL;
	}
	free(m->g1);
	free(m->g2);
	free(m->pool);
	free(m->a6);
	free(m->logits);
	free(m->s1);
	free(m->s2);
	m->g1 = m->g2 = m->pool = m->a6 = m->logits = m->s1 = m->s2 = NULL;
	m->cap_batch = m->cap_frames = 0;
	m->fwd_batch = 0;
}

static float *xvec_alloc(size_t n, int *failed)
{
	float *p = calloc(n ? n : 1, sizeof(float));

	if (!p)
		*failed = 1;
	return p;
}

static int xvec_alloc_workspace(struct xvec_model *m, int B, int T, char *err, size_t errlen)
{
	const struct xvec_options *o = &m->o;
	size_t gmax = (size_t)B * o->feat_dim * T;
	size_t smax = (size_t)2 * o->pool_width;
	int failed = 0;

	xvec_free_workspace(m);
	for (int l = 0; l < XVEC_BN_LAYERS; l++) {
		int C = xvec_bn_channels(o, l);
		size_t n = l < XVEC_FRAME_LAYERS ? (size_t)B * C * xvec_frames_after(T, l)
						 : (size_t)B * C;

		if (l < XVEC_FRAME_LAYERS && n > gmax)
			gmax = n;
		m->r[l] = xvec_alloc(n, &failed);
		m->y[l] = xvec_alloc(n, &failed);
		m->mean[l] = xvec_alloc(C, &failed);
		m->invstd[l] = xvec_alloc(C, &failed);
	}
	if ((size_t)o->embed > smax)
		smax = o->embed;
	if ((size_t)o->num_speakers > smax)
		smax = o->num_speakers;
	m->g1 = xvec_alloc(gmax, &failed);
	m->g2 = xvec_alloc(gmax, &failed);
	m->pool = xvec_alloc((size_t)B * 2 * o->pool_width, &failed);
	m->a6 = xvec_alloc((size_t)B * o->embed, &failed);
	m->logits = xvec_alloc((size_t)B * o->num_speakers, &failed);
	m->s1 = xvec_alloc((size_t)B * smax, &failed);
	m->s2 = xvec_alloc((size_t)B * smax, &failed);
	if (failed) {
		xvec_free_workspace(m);
		return status_fail(
			err, errlen, -ENOMEM,
			"x-vector model: cannot allocate the workspace for %d x %d frames", B, T);
	}
	m->cap_batch = B;
	m->cap_frames = T;
	return 0;
}

static int xvec_check_options(const struct xvec_options *o, char *err, size_t errlen)
{
	if (o->feat_dim < 1 || o->width < 1 || o->pool_width < 1 || o->embed < 1 ||
	    o->num_speakers < 2)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector model: sizes must be positive and speakers at least 2 "
				   "(feat_dim %d, width %d, pool_width %d, embed %d, speakers %d)",
				   o->feat_dim, o->width, o->pool_width, o->embed, o->num_speakers);
	if (o->feat_dim > XVEC_MAX_SIZE || o->width > XVEC_MAX_SIZE ||
	    o->pool_width > XVEC_MAX_SIZE || o->embed > XVEC_MAX_SIZE ||
	    o->num_speakers > XVEC_MAX_SPEAKERS)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector model: a layer size is too large");
	if (!(o->dropout >= 0.0f && o->dropout < 1.0f))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector model: dropout %g is not in [0, 1)", o->dropout);
	if (!(o->noise_eps >= 0.0f && o->noise_eps < 1e6f))
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector model: noise eps %g is not a non-negative number",
				   o->noise_eps);
	return 0;
}

/* He (fan-in, ReLU gain) or Xavier normal weights from Philox. */
static void xvec_init_params(struct xvec_model *m)
{
	for (int i = 0; i < XVEC_NUM_TENSORS; i++) {
		struct xvec_tensor *t = &m->t[i];

		if (i <= XWOUT) {
			float sd = i == XWOUT ? sqrtf(2.0f / (float)(t->rows + t->cols))
					      : sqrtf(2.0f / (float)t->cols);

			philox_normals(m->o.seed, XVEC_INIT_SUBSEQ + (uint64_t)i, 0, t->size,
				       t->data);
			for (size_t k = 0; k < t->size; k++)
				t->data[k] *= sd;
		} else {
			float v = i >= XG1 && i <= XG7 ? 1.0f : 0.0f;

			for (size_t k = 0; k < t->size; k++)
				t->data[k] = v;
		}
	}
	for (int l = 0; l < XVEC_BN_LAYERS; l++) {
		float *rm = m->bn + m->bn_off[l];

		for (int c = 0; c < m->bn_ch[l]; c++) {
			rm[c] = 0.0f;
			rm[m->bn_ch[l] + c] = 1.0f;
		}
	}
}

/* Rows and columns of every tensor of a model of options o. */
static void xvec_shapes(const struct xvec_options *o, int rows[XVEC_NUM_TENSORS],
			int cols[XVEC_NUM_TENSORS])
{
	for (int l = 0; l < XVEC_FRAME_LAYERS; l++) {
		rows[XW1 + l] = xvec_bn_channels(o, l);
		cols[XW1 + l] = xvec_frame_in(o, l) * xvec_nctx[l];
	}
	rows[XW6] = o->embed, cols[XW6] = 2 * o->pool_width;
	rows[XW7] = o->embed, cols[XW7] = o->embed;
	rows[XWOUT] = o->num_speakers, cols[XWOUT] = o->embed;
	for (int i = XB1; i < XVEC_NUM_TENSORS; i++) {
		rows[i] = i == XBOUT ? o->num_speakers
				     : xvec_bn_channels(o, i <= XBOUT ? i - XB1
							   : i <= XG7 ? i - XG1
								      : i - XBE1);
		cols[i] = 1;
	}
}

void xvec_model_sizes(const struct xvec_options *o, size_t *nparams, size_t *nbn)
{
	int rows[XVEC_NUM_TENSORS], cols[XVEC_NUM_TENSORS];

	xvec_shapes(o, rows, cols);
	*nparams = 0;
	for (int i = 0; i < XVEC_NUM_TENSORS; i++)
		*nparams += (size_t)rows[i] * cols[i];
	*nbn = 0;
	for (int l = 0; l < XVEC_BN_LAYERS; l++)
		*nbn += 2 * (size_t)xvec_bn_channels(o, l);
}

int xvec_model_create(struct xvec_model **out, const struct xvec_options *o, int max_batch,
		      int max_frames, char *err, size_t errlen)
{
	struct xvec_model *m;
	int rows[XVEC_NUM_TENSORS], cols[XVEC_NUM_TENSORS];
	int rc;

	*out = NULL;
	rc = xvec_check_options(o, err, errlen);
	if (rc)
		return rc;
	if (max_batch < 1 || max_frames <= XVEC_CONTEXT)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"x-vector model: need a batch of at least 1 and more than %d frames "
			"(got %d x %d)",
			XVEC_CONTEXT, max_batch, max_frames);
	m = calloc(1, sizeof(*m));
	if (!m)
		return status_fail(err, errlen, -ENOMEM, "x-vector model: out of memory");
	m->o = *o;

	xvec_shapes(o, rows, cols);
	for (int i = 0; i < XVEC_NUM_TENSORS; i++) {
		m->t[i].name = xvec_names[i];
		m->t[i].rows = rows[i];
		m->t[i].cols = cols[i];
		m->t[i].size = (size_t)rows[i] * cols[i];
		m->nparams += m->t[i].size;
		if (i <= XWOUT)
			m->ndecay += m->t[i].size;
	}
	for (int l = 0; l < XVEC_BN_LAYERS; l++) {
		m->bn_ch[l] = xvec_bn_channels(o, l);
		m->bn_off[l] = m->nbn;
		m->nbn += 2 * (size_t)m->bn_ch[l];
	}
	m->params = calloc(m->nparams, sizeof(float));
	m->grads = calloc(m->nparams, sizeof(float));
	m->bn = calloc(m->nbn, sizeof(float));
	m->bn_saved = calloc(m->nbn, sizeof(float));
	if (!m->params || !m->grads || !m->bn || !m->bn_saved) {
		size_t n = m->nparams;

		xvec_model_destroy(m);
		return status_fail(err, errlen, -ENOMEM,
				   "x-vector model: cannot allocate %zu parameters", n);
	}
	size_t off = 0;
	for (int i = 0; i < XVEC_NUM_TENSORS; i++) {
		m->t[i].data = m->params + off;
		m->t[i].grad = m->grads + off;
		off += m->t[i].size;
	}
	rc = adam_init(&m->adam, m->nparams, o->lr, o->beta1, o->beta2, o->adam_eps,
		       o->weight_decay, err, errlen);
	if (!rc)
		rc = xvec_alloc_workspace(m, max_batch, max_frames, err, errlen);
	if (rc) {
		xvec_model_destroy(m);
		return rc;
	}
	xvec_init_params(m);
	*out = m;
	return 0;
}

void xvec_model_destroy(struct xvec_model *m)
{
	if (!m)
		return;
	xvec_free_workspace(m);
	adam_free(&m->adam);
	free(m->params);
	free(m->grads);
	free(m->bn);
	free(m->bn_saved);
	if (m->dp)
		free(m->dp->buf);
	free(m->dp);
	free(m);
}

int xvec_model_set_dp(struct xvec_model *m, int rank, int world,
		      int (*sum_d)(void *ctx, double *v, size_t n),
		      int (*sum_f)(void *ctx, float *v, size_t n), void *ctx, int sync_bn,
		      double *reduce_s)
{
	if (m->dp)
		free(m->dp->buf);
	free(m->dp);
	m->dp = NULL;
	m->sum_f = NULL;
	if (world <= 1)
		return 0;
	int most = 1;
	for (int l = 0; l < XVEC_BN_LAYERS; l++)
		most = m->bn_ch[l] > most ? m->bn_ch[l] : most;
	struct tdnn_dp *dp = calloc(1, sizeof *dp);
	double *buf = calloc(2 * (size_t)most + 1, sizeof(double));
	if (!dp || !buf) {
		free(dp);
		free(buf);
		return -ENOMEM;
	}
	*dp = (struct tdnn_dp){ .rank = rank,
				.world = world,
				.sum = sum_d,
				.ctx = ctx,
				.sync_bn = sync_bn,
				.buf = buf };
	m->dp = dp;
	m->sum_f = sum_f;
	m->reduce_s = reduce_s;
	return 0;
}

int xvec_model_reserve(struct xvec_model *m, int batch, int frames, char *err, size_t errlen)
{
	if (batch < 1 || frames <= XVEC_CONTEXT)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"x-vector model: need a batch of at least 1 and more than %d frames "
			"(got %d x %d)",
			XVEC_CONTEXT, batch, frames);
	if (batch <= m->cap_batch && frames <= m->cap_frames)
		return 0;
	return xvec_alloc_workspace(m, batch > m->cap_batch ? batch : m->cap_batch,
				    frames > m->cap_frames ? frames : m->cap_frames, err, errlen);
}

static int xvec_check_batch(const struct xvec_model *m, const int32_t *labels, int B, int T,
			    char *err, size_t errlen)
{
	if (B < 1 || T <= XVEC_CONTEXT || B > m->cap_batch || T > m->cap_frames)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"x-vector model: a batch of %d x %d frames does not fit (at most "
			"%d x %d, and more than %d frames); reserve it first",
			B, T, m->cap_batch, m->cap_frames, XVEC_CONTEXT);
	for (int i = 0; labels && i < B; i++)
		if (labels[i] < 0 || labels[i] >= m->o.num_speakers)
			return status_fail(err, errlen, FEEDER_EINVAL,
					   "x-vector model: label %d of row %d is not in [0, %d)",
					   labels[i], i, m->o.num_speakers);
	return 0;
}

/* The forward pass; stop_at_embed leaves after the segment-6 affine. */
static void xvec_run_forward(struct xvec_model *m, const float *x, int B, int T, int training,
			     int stop_at_embed)
{
	const struct xvec_options *o = &m->o;
	uint64_t step = m->adam.t;
	const float *in = x;
	int Tin = T;

	for (int l = 0; l < XVEC_FRAME_LAYERS; l++) {
		int D = xvec_frame_in(o, l), H = xvec_bn_channels(o, l);
		int Tout = xvec_frames_after(T, l);
		float *rs = m->bn + m->bn_off[l];
		size_t n = (size_t)B * H * Tout;

		/* the affine output goes to r, which the ReLU then overwrites in place */
		tdnn_affine_forward(in, B, D, Tin, xvec_ctx[l], xvec_nctx[l], m->t[XW1 + l].data,
				    m->t[XB1 + l].data, H, m->r[l]);
		if (training) {
			tdnn_relu_bn_train_dp(m->r[l], B, H, Tout, m->t[XG1 + l].data,
					      m->t[XBE1 + l].data, rs, rs + H, m->r[l], m->mean[l],
					      m->invstd[l], m->y[l], m->dp);
			tdnn_dropout_dp(m->y[l], n, (size_t)H * Tout, o->dropout, o->seed,
					tdnn_dropout_subseq(step, l), m->dp);
		} else {
			tdnn_relu_bn_eval(m->r[l], B, H, Tout, m->t[XG1 + l].data,
					  m->t[XBE1 + l].data, rs, rs + H, m->y[l]);
		}
		in = m->y[l];
		Tin = Tout;
	}

	int P = o->pool_width, E = o->embed;
	size_t n5 = (size_t)B * P * Tin;
	const float *pin = in;

	if (training && o->noise_eps > 0.0f) {
		tdnn_noise_add_dp(in, m->g1, n5, (size_t)P * Tin, o->noise_eps, o->seed, step,
				  m->dp);
		pin = m->g1;
	}
	tdnn_stats_pool_forward(pin, B, P, Tin, m->pool);

	tdnn_dense_forward(m->pool, B, 2 * P, m->t[XW6].data, m->t[XB6].data, E, m->a6);
	if (stop_at_embed)
		return;
	for (int l = 5; l < XVEC_BN_LAYERS; l++) {
		float *rs = m->bn + m->bn_off[l];
		const float *a = l == 5 ? m->a6 : m->r[l];

		if (l == 6)
			tdnn_dense_forward(m->y[5], B, E, m->t[XW7].data, m->t[XB7].data, E,
					   m->r[6]);
		if (training)
			tdnn_relu_bn_train_dp(a, B, E, 1, m->t[XG1 + l].data, m->t[XBE1 + l].data,
					      rs, rs + E, m->r[l], m->mean[l], m->invstd[l],
					      m->y[l], m->dp);
		else
			tdnn_relu_bn_eval(a, B, E, 1, m->t[XG1 + l].data, m->t[XBE1 + l].data, rs,
					  rs + E, m->y[l]);
	}
	tdnn_dense_forward(m->y[6], B, E, m->t[XWOUT].data, m->t[XBOUT].data, o->num_speakers,
			   m->logits);
}

int xvec_model_forward(struct xvec_model *m, const float *x, const int32_t *labels, int batch,
		       int frames, int training, struct xvec_result *res, char *err, size_t errlen)
{
	int rc = xvec_check_batch(m, labels, batch, frames, err, errlen);
	struct xvec_result r = { 0 };

	if (rc)
		return rc;
	m->fwd_batch = 0;
	xvec_run_forward(m, x, batch, frames, training, 0);
	r.loss = tdnn_softmax_xent(m->logits, labels, batch, m->o.num_speakers, m->logits, NULL,
				   &r.correct);
	r.accuracy = (float)r.correct / (float)batch;
	if (training) {
		m->fwd_batch = batch;
		m->fwd_frames = frames;
		m->fwd_training = 1;
		m->fwd_x = x;
	}
	if (res)
		*res = r;
	return 0;
}

int xvec_model_backward(struct xvec_model *m, const float *x, const int32_t *labels, int batch,
			int frames, float *dx, char *err, size_t errlen)
{
	const struct xvec_options *o = &m->o;
	int B = batch, P = o->pool_width, E = o->embed, S = o->num_speakers;
	uint64_t step = m->adam.t;
	int rc;

	if (!labels)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector model: backward needs labels");
	rc = xvec_check_batch(m, labels, batch, frames, err, errlen);
	if (rc)
		return rc;
	if (m->fwd_batch != batch || m->fwd_frames != frames || !m->fwd_training || m->fwd_x != x)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector model: backward must follow a training forward pass "
				   "of the same batch");
	memset(m->grads, 0, sizeof(float) * m->nparams);

	/* logits: softmax-CE gradient from the probabilities the forward kept */
	float *dz = m->s1;
	for (int i = 0; i < B; i++)
		for (int s = 0; s < S; s++)
			dz[(size_t)i * S + s] =
				(m->logits[(size_t)i * S + s] - (s == labels[i] ? 1.0f : 0.0f)) /
				(float)B;
	tdnn_dense_backward(m->y[6], dz, B, E, m->t[XWOUT].data, S, m->s2, m->t[XWOUT].grad,
			    m->t[XBOUT].grad);
	tdnn_relu_bn_backward_dp(m->r[6], B, E, 1, m->t[XG7].data, m->mean[6], m->invstd[6], m->s2,
				 m->s2, m->t[XG7].grad, m->t[XBE7].grad, m->dp);
	tdnn_dense_backward(m->y[5], m->s2, B, E, m->t[XW7].data, E, m->s1, m->t[XW7].grad,
			    m->t[XB7].grad);
	tdnn_relu_bn_backward_dp(m->r[5], B, E, 1, m->t[XG6].data, m->mean[5], m->invstd[5], m->s1,
				 m->s1, m->t[XG6].grad, m->t[XBE6].grad, m->dp);
	tdnn_dense_backward(m->pool, m->s1, B, 2 * P, m->t[XW6].data, E, m->s2, m->t[XW6].grad,
			    m->t[XB6].grad);

	/* pooling: its input was y5 plus the noise, regenerated here into g1 */
	int T5 = xvec_frames_after(frames, 4);
	size_t n5 = (size_t)B * P * T5;
	const float *pin = m->y[4];
	if (o->noise_eps > 0.0f) {
		tdnn_noise_add_dp(m->y[4], m->g1, n5, (size_t)P * T5, o->noise_eps, o->seed, step,
				  m->dp);
		pin = m->g1;
	}
	tdnn_stats_pool_backward(pin, B, P, T5, m->pool, m->s2, m->g2);

	float *dy = m->g2, *other = m->g1;
	for (int l = XVEC_FRAME_LAYERS - 1; l >= 0; l--) {
		int D = xvec_frame_in(o, l), H = xvec_bn_channels(o, l);
		int Tout = xvec_frames_after(frames, l);
		int Tin = l == 0 ? frames : xvec_frames_after(frames, l - 1);
		const float *in = l == 0 ? x : m->y[l - 1];
		float *dxl = l == 0 ? dx : other;

		tdnn_dropout_backward_dp(dy, (size_t)B * H * Tout, (size_t)H * Tout, o->dropout,
					 o->seed, tdnn_dropout_subseq(step, l), m->dp);
		tdnn_relu_bn_backward_dp(m->r[l], B, H, Tout, m->t[XG1 + l].data, m->mean[l],
					 m->invstd[l], dy, dy, m->t[XG1 + l].grad,
					 m->t[XBE1 + l].grad, m->dp);
		tdnn_affine_backward(in, dy, B, D, Tin, xvec_ctx[l], xvec_nctx[l],
				     m->t[XW1 + l].data, H, dxl, m->t[XW1 + l].grad,
				     m->t[XB1 + l].grad);
		other = dy;
		dy = dxl;
	}
	return 0;
}

/* A sum over the ranks that failed inside a layer (sync batch-norm). */
static int dp_check(struct xvec_model *m, char *err, size_t errlen)
{
	if (!m->dp->failed)
		return 0;
	int rc = m->dp->failed;
	m->dp->failed = 0;
	return status_fail(err, errlen, rc,
			   "x-vector model: summing batch-norm statistics over "
			   "the ranks failed (%d)",
			   rc);
}

int xvec_model_train_step(struct xvec_model *m, const float *x, const int32_t *labels, int batch,
			  int frames, struct xvec_result *res, char *err, size_t errlen)
{
	struct xvec_result r = { 0 };
	int rc;

	if (!labels)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector model: training needs labels");
	memcpy(m->bn_saved, m->bn, sizeof(float) * m->nbn);
	rc = xvec_model_forward(m, x, labels, batch, frames, 1, &r, err, errlen);
	if (res)
		*res = r;
	if (rc)
		return rc;
	if (m->dp && (rc = dp_check(m, err, errlen)))
		return rc;
	/* Every rank takes or skips the step together: a non-finite loss on one
	 * makes the sum non-finite on all. */
	double loss = r.loss;
	if (m->dp && (rc = m->dp->sum(m->dp->ctx, &loss, 1)))
		return status_fail(err, errlen, rc,
				   "x-vector model: summing the loss over the ranks "
				   "failed (%d)",
				   rc);
	/* a non-finite loss would spread NaN through every weight via Adam's moments */
	if (!isfinite(loss)) {
		memcpy(m->bn, m->bn_saved, sizeof(float) * m->nbn);
		m->fwd_batch = 0;
		return status_fail(err, errlen, -EDOM,
				   "x-vector model: the loss is not finite (%g) at step %llu; the "
				   "update was skipped",
				   r.loss, (unsigned long long)m->adam.t);
	}
	rc = xvec_model_backward(m, x, labels, batch, frames, NULL, err, errlen);
	if (rc)
		return rc;
	if (m->dp) {
		if ((rc = dp_check(m, err, errlen)))
			return rc;
		/* The replicas' mean gradient: each rank's is the mean over its
		 * equal share of the global batch. */
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = m->sum_f(m->dp->ctx, m->grads, m->nparams);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (m->reduce_s)
			*m->reduce_s +=
				(double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
		if (rc)
			return status_fail(err, errlen, rc,
					   "x-vector model: averaging the gradients "
					   "over %d ranks failed (%d)",
					   m->dp->world, rc);
		float inv = 1.0f / (float)m->dp->world;
		for (size_t i = 0; i < m->nparams; i++)
			m->grads[i] *= inv;
	}
	adam_step(&m->adam, m->params, m->grads, m->ndecay);
	m->fwd_batch = 0;
	return 0;
}

int xvec_model_eval(struct xvec_model *m, const float *x, const int32_t *labels, int batch,
		    int frames, struct xvec_result *res, char *err, size_t errlen)
{
	return xvec_model_forward(m, x, labels, batch, frames, 0, res, err, errlen);
}

int xvec_model_embed(struct xvec_model *m, const float *x, int batch, int frames, float *out,
		     char *err, size_t errlen)
{
	int rc = xvec_check_batch(m, NULL, batch, frames, err, errlen);

	if (rc)
		return rc;
	m->fwd_batch = 0;
	xvec_run_forward(m, x, batch, frames, 0, 1);
	memcpy(out, m->a6, sizeof(float) * (size_t)batch * m->o.embed);
	return 0;
}

const float *xvec_model_probs(const struct xvec_model *m)
{
	return m->logits;
}

int xvec_model_num_tensors(const struct xvec_model *m)
{
	(void)m;
	return XVEC_NUM_TENSORS;
}

const struct xvec_tensor *xvec_model_tensor(const struct xvec_model *m, int i)
{
	return i >= 0 && i < XVEC_NUM_TENSORS ? &m->t[i] : NULL;
}

const struct xvec_tensor *xvec_model_find(const struct xvec_model *m, const char *name)
{
	for (int i = 0; i < XVEC_NUM_TENSORS; i++)
		if (strcmp(m->t[i].name, name) == 0)
			return &m->t[i];
	return NULL;
}

float *xvec_model_params(struct xvec_model *m, size_t *n)
{
	*n = m->nparams;
	return m->params;
}

float *xvec_model_grads(struct xvec_model *m, size_t *n)
{
	*n = m->nparams;
	return m->grads;
}

size_t xvec_model_num_decay(const struct xvec_model *m)
{
	return m->ndecay;
}

/* The tensor that holds element i of the flat parameter array, and i's
 * place in it. */
static const struct xvec_tensor *xvec_tensor_at(const struct xvec_model *m, size_t i, size_t *k)
{
	int t = 0;

	while (t < XVEC_NUM_TENSORS - 1 && i >= m->t[t].size)
		i -= m->t[t++].size;
	*k = i;
	return &m->t[t];
}

/* The first running statistic that is not finite, or a variance below 0:
 * its layer, whether a variance, and channel; 0 when all are sound. */
static int xvec_bad_stat(const struct xvec_model *m, const float *bn, int *layer, int *var, int *ch)
{
	for (int l = 0; l < XVEC_BN_LAYERS; l++)
		for (int c = 0; c < 2 * m->bn_ch[l]; c++) {
			float v = bn[m->bn_off[l] + (size_t)c];

			if (!isfinite(v) || (c >= m->bn_ch[l] && v < 0.0f)) {
				*layer = l, *var = c >= m->bn_ch[l], *ch = c % m->bn_ch[l];
				return 1;
			}
		}
	return 0;
}

int xvec_model_check_state(const struct xvec_model *m, const float *params, const float *am,
			   const float *av, const float *bn, char *err, size_t errlen)
{
	size_t i, k;
	int l, var, ch, which;

	for (i = 0; i < m->nparams && isfinite(params[i]); i++)
		;
	if (i < m->nparams) {
		const struct xvec_tensor *t = xvec_tensor_at(m, i, &k);
		return status_fail(err, errlen, FEEDER_ECORRUPT, "parameter %s[%zu] is %g", t->name,
				   k, params[i]);
	}
	i = adam_bad_moment(am, av, m->nparams, &which);
	if (i < m->nparams) {
		const struct xvec_tensor *t = xvec_tensor_at(m, i, &k);
		return status_fail(err, errlen, FEEDER_ECORRUPT,
				   "Adam %s moment of %s[%zu] is %g (must be finite%s)",
				   which ? "second" : "first", t->name, k, which ? av[i] : am[i],
				   which ? " and not negative" : "");
	}
	if (xvec_bad_stat(m, bn, &l, &var, &ch))
		return status_fail(err, errlen, FEEDER_ECORRUPT,
				   "bn%d running %s[%d] is %g (must be finite%s)", l + 1,
				   var ? "variance" : "mean", ch,
				   bn[m->bn_off[l] + (size_t)(var * m->bn_ch[l] + ch)],
				   var ? " and not negative" : "");
	return 0;
}

float *xvec_model_bn_stats(struct xvec_model *m, size_t *n)
{
	*n = m->nbn;
	return m->bn;
}

size_t xvec_model_bn_offset(const struct xvec_model *m, int layer, int *channels)
{
	if (layer < 0 || layer >= XVEC_BN_LAYERS) {
		*channels = 0;
		return 0;
	}
	*channels = m->bn_ch[layer];
	return m->bn_off[layer];
}

struct adam *xvec_model_adam(struct xvec_model *m)
{
	return &m->adam;
}

uint64_t xvec_model_step(const struct xvec_model *m)
{
	return m->adam.t;
}

const struct xvec_options *xvec_model_options(const struct xvec_model *m)
{
	return &m->o;
}

void xvec_model_set_seed(struct xvec_model *m, uint64_t seed)
{
	m->o.seed = seed;
}

void xvec_model_set_lr(struct xvec_model *m, float lr)
{
	m->o.lr = lr;
	m->adam.lr = lr;
}
