/* xvec_cuda_state.cu — the GPU x-vector TDNN's device memory: the
 * workspace sized for the largest batch, and the parameters, gradients,
 * Adam moments and batch-norm statistics laid out exactly as the host
 * model's arrays, so that copying between the two is one transfer each. */
#include "xvec_cuda_impl.h"

/* ---- workspace -------------------------------------------------------- */

void xc_free_workspace(struct xvec_cuda *g)
{
	for (int l = 0; l < XVEC_BN_LAYERS; l++) {
		cudaFree(g->r[l]);
		cudaFree(g->y[l]);
		cudaFree(g->mean[l]);
		cudaFree(g->invstd[l]);
		g->r[l] = g->y[l] = g->mean[l] = g->invstd[l] = NULL;
	}
	for (int l = 0; l < XVEC_FRAME_LAYERS; l++) {
		cudaFree(g->S[l]);
		g->S[l] = NULL;
	}
	float **bufs[] = { &g->x0,     &g->gA,    &g->gB, &g->dS, &g->pool,
			   &g->logits, &g->probs, &g->dz, &g->s1, &g->s2 };
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) {
		cudaFree(*bufs[i]);
		*bufs[i] = NULL;
	}
	cudaFree(g->row_loss);
	cudaFree(g->row_ok);
	cudaFree(g->bfa);
	cudaFree(g->bfb);
	g->row_loss = NULL;
	g->row_ok = NULL;
	g->bfa = g->bfb = NULL;
	g->cap_batch = g->cap_frames = 0;
	g->fwd_batch = 0;
}

int xc_alloc(void *pp, size_t bytes, int *failed)
{
	if (*failed || cudaMalloc((void **)pp, bytes ? bytes : 1) != cudaSuccess)
		*failed = 1;
	return *failed;
}

int xc_alloc_workspace(struct xvec_cuda *g, int B, int T, char *err, size_t errlen)
{
	const struct xvec_options *o = &g->o;
	size_t gmax = (size_t)o->feat_dim * B * T, dsmax = 1;
	size_t smax = (size_t)2 * o->pool_width;
	int failed = 0;

	xc_free_workspace(g);
	xc_alloc(&g->x0, sizeof(float) * gmax, &failed);
	for (int l = 0; l < XVEC_BN_LAYERS; l++) {
		int C = xc_channels(o, l);
		size_t n = l < XVEC_FRAME_LAYERS ? (size_t)C * B * xc_frames_after(T, l)
						 : (size_t)B * C;

		if (l < XVEC_FRAME_LAYERS && n > gmax)
			gmax = n;
		xc_alloc(&g->r[l], sizeof(float) * n, &failed);
		xc_alloc(&g->y[l], sizeof(float) * n, &failed);
		xc_alloc(&g->mean[l], sizeof(float) * C, &failed);
		xc_alloc(&g->invstd[l], sizeof(float) * C, &failed);
		if (l < XVEC_FRAME_LAYERS && xc_nctx[l] > 1) {
			size_t ns =
				(size_t)xc_nctx[l] * xc_frame_in(o, l) * B * xc_frames_after(T, l);

			xc_alloc(&g->S[l], sizeof(float) * ns, &failed);
			if (ns > dsmax)
				dsmax = ns;
		}
	}
	if ((size_t)o->embed > smax)
		smax = o->embed;
	if ((size_t)o->num_speakers > smax)
		smax = o->num_speakers;
	xc_alloc(&g->gA, sizeof(float) * gmax, &failed);
	xc_alloc(&g->gB, sizeof(float) * gmax, &failed);
	xc_alloc(&g->dS, sizeof(float) * dsmax, &failed);
	xc_alloc(&g->pool, sizeof(float) * B * 2 * o->pool_width, &failed);
	xc_alloc(&g->logits, sizeof(float) * B * o->num_speakers, &failed);
	xc_alloc(&g->probs, sizeof(float) * B * o->num_speakers, &failed);
	xc_alloc(&g->dz, sizeof(float) * B * o->num_speakers, &failed);
	xc_alloc(&g->s1, sizeof(float) * B * smax, &failed);
	xc_alloc(&g->s2, sizeof(float) * B * smax, &failed);
	xc_alloc(&g->row_loss, sizeof(double) * B, &failed);
	xc_alloc(&g->row_ok, sizeof(int) * B, &failed);
	if (g->precision == XVEC_PRECISION_BF16) {
		xc_alloc(&g->bfa, sizeof(uint16_t) * gmax, &failed);
		xc_alloc(&g->bfb, sizeof(uint16_t) * gmax, &failed);
	}
	if (failed) {
		xc_free_workspace(g);
		return status_fail(
			err, errlen, -ENOMEM,
			"x-vector cuda: cannot allocate device memory for batches of %d x %d "
			"frames",
			B, T);
	}
	g->cap_batch = B;
	g->cap_frames = T;
	return 0;
}

/* ---- state ------------------------------------------------------------ */

void xc_refresh_bf16(struct xvec_cuda *g)
{
	if (g->params_bf16)
		tdnn_cuda_to_bf16(g->params, g->nparams, g->params_bf16, g->stream);
}

static int xc_offset(struct xvec_model *m, const float *base, const char *name, size_t *off,
		     char *err, size_t errlen)
{
	const struct xvec_tensor *t = xvec_model_find(m, name);

	if (!t)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "x-vector cuda: the model has no tensor '%s'", name);
	*off = (size_t)(t->data - base);
	return 0;
}

int xc_layout(struct xvec_cuda *g, struct xvec_model *m, char *err, size_t errlen)
{
	size_t n;
	const float *base = xvec_model_params(m, &n);
	static const char *const seg[XC_SEG_LAYERS] = { "seg6", "seg7", "out" };
	char name[32];

	g->nparams = n;
	g->ndecay = xvec_model_num_decay(m);
	xvec_model_bn_stats(m, &g->nbn);
	for (int w = 0; w < XC_WEIGHTS; w++) {
		if (w < XVEC_FRAME_LAYERS)
			snprintf(name, sizeof(name), "frame%d.weight", w + 1);
		else
			snprintf(name, sizeof(name), "%s.weight", seg[w - XVEC_FRAME_LAYERS]);
		XC_TRY(xc_offset(m, base, name, &g->off_w[w], err, errlen));
		memcpy(strrchr(name, '.'), ".bias", 6);
		XC_TRY(xc_offset(m, base, name, &g->off_b[w], err, errlen));
	}
	for (int l = 0; l < XVEC_BN_LAYERS; l++) {
		int ch;

		snprintf(name, sizeof(name), "bn%d.gamma", l + 1);
		XC_TRY(xc_offset(m, base, name, &g->off_gamma[l], err, errlen));
		snprintf(name, sizeof(name), "bn%d.beta", l + 1);
		XC_TRY(xc_offset(m, base, name, &g->off_beta[l], err, errlen));
		g->bn_off[l] = xvec_model_bn_offset(m, l, &ch);
		if (ch != xc_channels(&g->o, l))
			return status_fail(
				err, errlen, FEEDER_EINVAL,
				"x-vector cuda: batch norm %d has %d channels, expected %d", l + 1,
				ch, xc_channels(&g->o, l));
	}
	return 0;
}

int xc_check_mirror(struct xvec_cuda *g, struct xvec_model *m, char *err, size_t errlen)
{
	const struct xvec_options *o = xvec_model_options(m);
	size_t n, nb;

	xvec_model_params(m, &n);
	xvec_model_bn_stats(m, &nb);
	if (o->feat_dim != g->o.feat_dim || o->width != g->o.width ||
	    o->pool_width != g->o.pool_width || o->embed != g->o.embed ||
	    o->num_speakers != g->o.num_speakers || n != g->nparams || nb != g->nbn)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"x-vector cuda: the host model's sizes differ from the device model's");
	return 0;
}

int xvec_cuda_from_model(struct xvec_cuda *g, struct xvec_model *m, char *err, size_t errlen)
{
	size_t n, nb;
	const float *p = xvec_model_params(m, &n);
	const float *bn = xvec_model_bn_stats(m, &nb);
	struct adam *a = xvec_model_adam(m);

	XC_TRY(xc_check_mirror(g, m, err, errlen));
	XC_CUDA(cudaStreamSynchronize(g->stream), "wait for the device");
	XC_CUDA(cudaMemcpy(g->params, p, sizeof(float) * n, cudaMemcpyHostToDevice),
		"copy parameters");
	XC_CUDA(cudaMemcpy(g->adam_m, a->m, sizeof(float) * n, cudaMemcpyHostToDevice),
		"copy Adam moments");
	XC_CUDA(cudaMemcpy(g->adam_v, a->v, sizeof(float) * n, cudaMemcpyHostToDevice),
		"copy Adam moments");
	XC_CUDA(cudaMemcpy(g->bn, bn, sizeof(float) * nb, cudaMemcpyHostToDevice),
		"copy batch-norm statistics");
	/* copies from pageable memory may still be in flight on return, and the
	 * model's non-blocking stream does not wait for them */
	XC_CUDA(cudaDeviceSynchronize(), "finish copying the state");
	xc_refresh_bf16(g);
	g->o = *xvec_model_options(m);
	g->step = xvec_model_step(m);
	g->lr = a->lr;
	g->fwd_batch = 0;
	return 0;
}

int xvec_cuda_to_model(struct xvec_cuda *g, struct xvec_model *m, char *err, size_t errlen)
{
	size_t n, nb;
	float *p = xvec_model_params(m, &n);
	float *bn = xvec_model_bn_stats(m, &nb);
	struct adam *a = xvec_model_adam(m);

	XC_TRY(xc_check_mirror(g, m, err, errlen));
	XC_CUDA(cudaStreamSynchronize(g->stream), "wait for the device");
	XC_CUDA(cudaMemcpy(p, g->params, sizeof(float) * n, cudaMemcpyDeviceToHost),
		"copy parameters");
	XC_CUDA(cudaMemcpy(a->m, g->adam_m, sizeof(float) * n, cudaMemcpyDeviceToHost),
		"copy Adam moments");
	XC_CUDA(cudaMemcpy(a->v, g->adam_v, sizeof(float) * n, cudaMemcpyDeviceToHost),
		"copy Adam moments");
	XC_CUDA(cudaMemcpy(bn, g->bn, sizeof(float) * nb, cudaMemcpyDeviceToHost),
		"copy batch-norm statistics");
	a->t = g->step;
	xvec_model_set_seed(m, g->o.seed);
	return 0;
}
