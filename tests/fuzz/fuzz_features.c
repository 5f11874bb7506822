/* fuzz_features.c — arbitrary bytes as one sample record of a features
 * dataset, decoded, checked and cut into a training chunk.
 *
 * feederd runs dsformat_sample_decode, dsformat_sample_check (against the
 * dataset header) and features_pipeline_run on every record a speech dataset
 * holds, writing into a place sized by the header's feat_dim. The first input
 * byte picks one of a few dataset headers, the rest is the record, whose
 * header may claim any frames x dim; the pipeline must stay inside the
 * payload and inside the chunk it writes (the output buffer is exactly the
 * size the header promises, so ASan sees a write past it). Each decoded record goes through
 * parameter sets covering train/eval, repeat/skip padding, every CMN mode,
 * CVN and both dtypes. When every input value is finite and moderate, every
 * f32 output value must be finite too. */
#include "protocol.h"
#include "fuzz.h"

#include "dsformat.h"
#include "features_pipeline.h"
#include "half.h"
#include "jpeg_pipeline.h"
#include "status.h"

#include <math.h>
#include <string.h>

struct pset {
	uint32_t chunk_len;
	int pad, cmn;
	uint32_t window;
	int cvn, dtype, train;
};

static const struct pset psets[] = {
	{ 4, FEEDER_FEAT_PAD_REPEAT, FEEDER_FEAT_CMN_SLIDING, 3, 0, FEEDER_DTYPE_F32, 1 },
	{ 7, FEEDER_FEAT_PAD_SKIP, FEEDER_FEAT_CMN_UTT, 0, 1, FEEDER_DTYPE_F32, 0 },
	{ 1, FEEDER_FEAT_PAD_REPEAT, FEEDER_FEAT_CMN_NONE, 0, 0, FEEDER_DTYPE_F16, 1 },
	{ 33, FEEDER_FEAT_PAD_REPEAT, FEEDER_FEAT_CMN_SLIDING, 300, 1, FEEDER_DTYPE_F16, 0 },
	{ 2, FEEDER_FEAT_PAD_SKIP, FEEDER_FEAT_CMN_SLIDING, 1, 1, FEEDER_DTYPE_F32, 0 },
};
#define N_PSETS (sizeof(psets) / sizeof(psets[0]))

/* 1 if every payload value is finite and small enough that normalizing
 * cannot overflow a float. */
static int moderate(const struct dsformat_sample *s, const uint8_t *payload)
{
	size_t n = (size_t)s->frames * s->dim;
	for (size_t i = 0; i < n; i++) {
		float v;
		if (s->dtype == DSFORMAT_DTYPE_F16) {
			uint16_t h;
			memcpy(&h, payload + 2 * i, 2);
			v = half_to_float(h);
		} else {
			memcpy(&v, payload + 4 * i, 4);
		}
		if (!isfinite(v) || fabsf(v) > 1e6f)
			return 0;
	}
	return 1;
}

/* The datasets a record may come from (feat_dim, dtype), 8 classes each. */
static const struct {
	uint32_t feat_dim, dtype;
} datasets[] = {
	{ 4, DSFORMAT_DTYPE_F32 }, { 2, DSFORMAT_DTYPE_F16 }, { 3, DSFORMAT_DTYPE_F32 },
	{ 8, DSFORMAT_DTYPE_F16 }, { 1, DSFORMAT_DTYPE_F32 },
};
#define N_DATASETS (sizeof(datasets) / sizeof(datasets[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const struct dsformat_header h = { .version = 1,
					   .kind = DSFORMAT_KIND_FEATURES,
					   .samples = 1,
					   .classes = 8,
					   .feat_dim = datasets[data[0] % N_DATASETS].feat_dim,
					   .dtype = datasets[data[0] % N_DATASETS].dtype };
	/* An exact-size copy of the record, so ASan sees any overread. */
	size_t n = size - 1;
	uint8_t *rec = malloc(n ? n : 1);
	if (!rec)
		return 0;
	memcpy(rec, data + 1, n);
	struct dsformat_sample s;
	const uint8_t *payload;
	char err[256] = "";
	if (dsformat_sample_decode(DSFORMAT_VERSION, rec, n, &s, &payload, err, sizeof(err)) != 0) {
		free(rec);
		return 0;
	}
	err[0] = '\0';
	int rc = dsformat_sample_check(&h, &s, err, sizeof(err));
	if (rc != 0) {
		FUZZ_CHECK(rc == FEEDER_ECORRUPT, "code %d", rc);
		FUZZ_CHECK_ERR(err, sizeof(err));
		free(rec);
		return 0;
	}
	FUZZ_CHECK(s.dim == h.feat_dim && s.dtype == h.dtype && s.label < h.classes,
		   "record %ux%u dtype %u label %u passed the check of a dim %u dtype %u dataset",
		   s.frames, s.dim, s.dtype, s.label, h.feat_dim, h.dtype);
	int finite_in = s.dtype != DSFORMAT_DTYPE_NONE && moderate(&s, payload);
	uint64_t key = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		key = (key ^ rec[i]) * 1099511628211ull;
	for (size_t k = 0; k < N_PSETS; k++) {
		const struct pset *ps = &psets[k];
		struct feeder_stream_opts p;
		proto_opts_features(&p, ps->chunk_len, ps->train);
		p.features.pad = ps->pad;
		p.features.cmn = ps->cmn;
		if (ps->window)
			p.features.cmn_window = ps->window;
		p.features.cvn = ps->cvn;
		p.dtype = ps->dtype;
		FUZZ_CHECK(proto_opts_check(&p, err, sizeof(err)) == 0, "param set %zu: %s", k,
			   err);
		/* Sized by the dataset header, as a batch slot is. */
		size_t bytes = features_pipeline_sample_bytes(&p, h.feat_dim);
		void *out = malloc(bytes);
		if (!out)
			break;
		err[0] = '\0';
		rc = features_pipeline_run(&p, &s, payload, key + k, out, err, sizeof(err));
		if (rc == 0) {
			FUZZ_CHECK(s.dtype != DSFORMAT_DTYPE_NONE && s.frames > 0 && s.dim > 0,
				   "accepted a %ux%u matrix of dtype %u", s.frames, s.dim, s.dtype);
			FUZZ_CHECK(ps->pad == FEEDER_FEAT_PAD_REPEAT || s.frames >= ps->chunk_len,
				   "short utterance not skipped");
			if (finite_in && p.dtype == FEEDER_DTYPE_F32) {
				const float *o = out;
				for (size_t i = 0; i < bytes / 4; i++)
					FUZZ_CHECK(isfinite(o[i]),
						   "param set %zu: element %zu = %g", k, i, o[i]);
			}
		} else if (rc == FEATURES_SKIPPED) {
			FUZZ_CHECK(ps->pad == FEEDER_FEAT_PAD_SKIP && s.frames < ps->chunk_len,
				   "skipped %u frames for chunk %u", s.frames, ps->chunk_len);
		} else {
			FUZZ_CHECK(rc == FEEDER_EFORMAT, "param set %zu: code %d", k, rc);
			FUZZ_CHECK_ERR(err, sizeof(err));
		}
		free(out);
	}
	free(rec);
	return 0;
}
