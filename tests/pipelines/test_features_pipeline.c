/* test_features_pipeline.c — the features pipeline: the chunk lies inside
 * the utterance and is a pure function of the key (centred in eval), pad
 * repeat wraps and pad skip skips, per-utterance and sliding (Kaldi
 * apply-cmvn-sliding --center=true) mean and variance normalization against
 * a direct computation, the (feat_dim, chunk_len) layout, f16 output, f16
 * input, and malformed samples (tests/protocol/test_protocol.c refuses the
 * malformed params). */
#include "protocol.h"
#include "check.h"
#include "dsformat.h"
#include "features_pipeline.h"
#include "half.h"
#include "status.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char err[256];

/* A frames x dim utterance with distinct, smooth-and-varying values. */
static float value(uint32_t t, uint32_t d)
{
	return (float)(10.0 * sin(t * 0.05 + d) + 0.01 * t + d + 0.3 * cos(t * 1.7 * (d + 1)));
}

static uint8_t *make(uint32_t frames, uint32_t dim, int f16, struct dsformat_sample *s)
{
	size_t elem = f16 ? 2 : 4;
	uint8_t *buf = malloc((size_t)frames * dim * elem);
	CHECK(buf);
	for (uint32_t t = 0; t < frames; t++)
		for (uint32_t d = 0; d < dim; d++) {
			size_t i = (size_t)t * dim + d;
			float v = value(t, d);
			uint32_t u = half_from_float(v); /* little-endian either way */
			if (!f16)
				memcpy(&u, &v, 4);
			for (size_t b = 0; b < elem; b++)
				buf[i * elem + b] = (uint8_t)(u >> (8 * b));
		}
	*s = (struct dsformat_sample){ .label = 3,
				       .payload_len = (uint32_t)(frames * dim * elem),
				       .frames = frames,
				       .dim = dim,
				       .dtype = f16 ? DSFORMAT_DTYPE_F16 : DSFORMAT_DTYPE_F32 };
	return buf;
}

static double input(uint32_t t, uint32_t d, int f16)
{
	return f16 ? half_to_float(half_from_float(value(t, d))) : value(t, d);
}

/* The expected output at (d, column t) computed directly, no running sums. */
static double expect(const struct feeder_stream_opts *p, uint32_t frames, uint32_t src, uint32_t d,
		     int f16)
{
	double x = input(src, d, f16);
	if (p->features.cmn == FEEDER_FEAT_CMN_NONE)
		return x;
	int64_t lo = 0, hi = frames;
	if (p->features.cmn == FEEDER_FEAT_CMN_SLIDING) {
		lo = (int64_t)src - p->features.cmn_window / 2;
		hi = lo + p->features.cmn_window;
		if (lo < 0) {
			hi -= lo;
			lo = 0;
		}
		if (hi > frames) {
			lo -= hi - frames;
			hi = frames;
			if (lo < 0)
				lo = 0;
		}
	}
	double sum = 0, sumsq = 0;
	for (int64_t t = lo; t < hi; t++) {
		double v = input((uint32_t)t, d, f16);
		sum += v;
		sumsq += v * v;
	}
	double mean = sum / (double)(hi - lo);
	x -= mean;
	if (p->features.cvn) {
		/* features_pipeline.h: the variance is floored (a constant
		 * column would divide by zero) */
		double var = sumsq / (double)(hi - lo) - mean * mean;
		x /= sqrt(var < FEATURES_VAR_FLOOR ? FEATURES_VAR_FLOOR : var);
	}
	return x;
}

static void check_against_direct(struct feeder_stream_opts p, uint32_t frames, uint32_t dim,
				 int f16_in, uint64_t key)
{
	struct dsformat_sample s;
	uint8_t *payload = make(frames, dim, f16_in, &s);
	size_t n = (size_t)dim * p.features.chunk_len;
	float *out = malloc(n * 4);
	uint16_t *out16 = malloc(n * 2);
	CHECK(out && out16);
	p.dtype = FEEDER_DTYPE_F32;
	CHECKF(features_pipeline_run(&p, &s, payload, key, out, err, sizeof err) == 0, "%s", err);
	uint32_t off = features_pipeline_offset(&p.features, frames, key);
	for (uint32_t d = 0; d < dim; d++)
		for (uint32_t t = 0; t < p.features.chunk_len; t++) {
			uint32_t src = frames > p.features.chunk_len ? off + t : t % frames;
			double want = expect(&p, frames, src, d, f16_in);
			double got = out[(size_t)d * p.features.chunk_len + t];
			CHECKF(fabs(got - want) <= 1e-4 * (1 + fabs(want)),
			       "cmn %d cvn %d window %u frames %u: (d %u, t %u) = %f, want %f",
			       p.features.cmn, p.features.cvn, p.features.cmn_window, frames, d, t,
			       got, want);
		}
	p.dtype = FEEDER_DTYPE_F16;
	CHECK(features_pipeline_run(&p, &s, payload, key, out16, err, sizeof err) == 0);
	for (size_t i = 0; i < n; i++)
		CHECKF(out16[i] == half_from_float(out[i]), "f16 %04x vs f32 %f", out16[i], out[i]);
	CHECK(features_pipeline_sample_bytes(&p, dim) == n * 2);
	free(out);
	free(out16);
	free(payload);
}

int main(void)
{
	struct feeder_stream_opts p;

	/* Chunk bounds, determinism, spread of offsets, eval centring. */
	proto_opts_features(&p, 50, 1);
	CHECK(proto_opts_check(&p, err, sizeof err) == 0);
	CHECK(p.features.cmn == FEEDER_FEAT_CMN_SLIDING && p.features.cmn_window == 300 &&
	      p.features.pad == FEEDER_FEAT_PAD_REPEAT);
	uint8_t hit[151] = { 0 };
	for (uint64_t key = 0; key < 3000; key++) {
		uint32_t off = features_pipeline_offset(&p.features, 200, key);
		CHECK(off <= 150);
		CHECK(off == features_pipeline_offset(&p.features, 200, key));
		hit[off] = 1;
	}
	int distinct = 0;
	for (int i = 0; i <= 150; i++)
		distinct += hit[i];
	CHECKF(distinct == 151, "only %d of 151 offsets drawn", distinct);
	CHECK(features_pipeline_offset(&p.features, 50, 7) == 0 &&
	      features_pipeline_offset(&p.features, 10, 7) == 0);
	p.features.train = 0;
	CHECK(features_pipeline_offset(&p.features, 200, 1) == 75 &&
	      features_pipeline_offset(&p.features, 201, 9) == 75);

	/* No normalization: the output is the chunk, transposed. */
	proto_opts_features(&p, 40, 1);
	p.features.cmn = FEEDER_FEAT_CMN_NONE;
	for (uint64_t key = 0; key < 5; key++)
		check_against_direct(p, 300, 13, 0, key);
	/* Determinism of the bytes, and different keys differ. */
	{
		struct dsformat_sample s;
		uint8_t *payload = make(300, 8, 0, &s);
		float a[8 * 40], b[8 * 40];
		CHECK(features_pipeline_run(&p, &s, payload, 11, a, err, sizeof err) == 0);
		CHECK(features_pipeline_run(&p, &s, payload, 11, b, err, sizeof err) == 0);
		CHECK(memcmp(a, b, sizeof a) == 0);
		CHECK(features_pipeline_run(&p, &s, payload, 12, b, err, sizeof err) == 0);
		CHECK(memcmp(a, b, sizeof a) != 0);
		free(payload);
	}
	/* Pad repeat wraps a short utterance; pad skip skips it untouched. */
	check_against_direct(p, 7, 5, 0, 3);
	{
		struct dsformat_sample s;
		uint8_t *payload = make(7, 5, 0, &s);
		float out[5 * 40];
		memset(out, 0x5a, sizeof out);
		p.features.pad = FEEDER_FEAT_PAD_SKIP;
		CHECK(features_pipeline_run(&p, &s, payload, 3, out, err, sizeof err) ==
		      FEATURES_SKIPPED);
		for (size_t i = 0; i < sizeof out; i++)
			CHECK(((uint8_t *)out)[i] == 0x5a);
		/* Exactly chunk_len frames is not short. */
		free(payload);
		payload = make(40, 5, 0, &s);
		CHECK(features_pipeline_run(&p, &s, payload, 3, out, err, sizeof err) == 0);
		free(payload);
		p.features.pad = FEEDER_FEAT_PAD_REPEAT;
	}

	/* Per-utterance and sliding cmn (and cvn), in train and eval, with
	 * windows shorter and longer than the utterance and f16 input. */
	static const struct {
		int cmn, cvn;
		uint32_t window, frames, chunk;
		int f16_in;
	} cases[] = {
		{ FEEDER_FEAT_CMN_UTT, 0, 300, 500, 100, 0 },
		{ FEEDER_FEAT_CMN_UTT, 1, 300, 500, 100, 0 },
		{ FEEDER_FEAT_CMN_SLIDING, 0, 300, 1000, 200, 0 },
		{ FEEDER_FEAT_CMN_SLIDING, 1, 300, 1000, 200, 0 },
		{ FEEDER_FEAT_CMN_SLIDING, 0, 300, 150, 100, 0 },
		{ FEEDER_FEAT_CMN_SLIDING, 0, 301, 700, 300, 1 },
		{ FEEDER_FEAT_CMN_SLIDING, 1, 7, 90, 60, 1 },
		{ FEEDER_FEAT_CMN_SLIDING, 0, 1, 50, 20, 0 },
		{ FEEDER_FEAT_CMN_SLIDING, 0, 300, 30, 80, 0 },
		{ FEEDER_FEAT_CMN_UTT, 1, 300, 30, 80, 1 },
		{ FEEDER_FEAT_CMN_NONE, 0, 300, 90, 37, 0 },
		{ FEEDER_FEAT_CMN_NONE, 0, 300, 20, 37, 1 },
	};
	/* Widths below, at and past the tiles of the transposed write (64
	 * columns) and of the running sums (256). */
	static const uint32_t dims[] = { 11, 80, 300 };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (int train = 0; train <= 1; train++) {
			proto_opts_features(&p, cases[i].chunk, train);
			p.features.cmn = cases[i].cmn;
			p.features.cvn = cases[i].cvn;
			p.features.cmn_window = cases[i].window;
			for (uint64_t key = 0; key < 3; key++)
				check_against_direct(p, cases[i].frames, dims[key], cases[i].f16_in,
						     key * 77);
		}
	/* Sliding cmn over a window at least as long as the utterance is the
	 * per-utterance cmn. */
	{
		struct dsformat_sample s;
		uint8_t *payload = make(120, 6, 0, &s);
		float a[6 * 50], b[6 * 50];
		proto_opts_features(&p, 50, 1);
		p.features.cmn_window = 300;
		CHECK(features_pipeline_run(&p, &s, payload, 5, a, err, sizeof err) == 0);
		p.features.cmn = FEEDER_FEAT_CMN_UTT;
		CHECK(features_pipeline_run(&p, &s, payload, 5, b, err, sizeof err) == 0);
		for (size_t i = 0; i < 6 * 50; i++)
			CHECK(fabsf(a[i] - b[i]) < 1e-5f);
		free(payload);
	}

	/* Malformed samples: payload too short, no dim, no frames, no dtype. */
	struct dsformat_sample s;
	uint8_t *payload = make(20, 4, 0, &s);
	struct dsformat_sample bad[4] = { s, s, s, s };
	float out[4 * 10];
	proto_opts_features(&p, 10, 1);
	bad[0].payload_len -= 4;
	bad[1].dim = 0;
	bad[2].frames = 0;
	bad[3].dtype = DSFORMAT_DTYPE_NONE;
	for (int k = 0; k < 4; k++)
		CHECKF(features_pipeline_run(&p, &bad[k], payload, 0, out, err, sizeof err) ==
			       FEEDER_EFORMAT,
		       "malformed sample %d", k);
	free(payload);
	return 0;
}
