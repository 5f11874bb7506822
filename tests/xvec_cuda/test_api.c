/* test_api.c — the GPU trainer's host-side contract, which holds with or without a device.
 *
 * --precision parsing, and xvec_cuda_create's refusals: bad sizes and an
 * unknown precision are FEEDER_EINVAL before any device is touched; with no
 * usable device it is FEEDER_ENODEV with cuda_info's reason in the sentence
 * (what `xvec train --device cuda` prints), and nothing is created. */
#include "check.h"
#include "cuda_info.h"
#include "status.h"
#include "xvec_cuda.h"
#include "xvec_model.h"

#include <string.h>

int main(void)
{
	struct xvec_options o;
	struct xvec_model *m;
	struct xvec_cuda *g = (struct xvec_cuda *)&o;
	struct xvec_cuda_config cfg;
	char err[256], why[256];
	int p = -1;

	CHECK(xvec_cuda_parse_precision("fp32", &p, err, sizeof(err)) == 0 &&
	      p == XVEC_PRECISION_FP32);
	CHECK(xvec_cuda_parse_precision("tf32", &p, err, sizeof(err)) == 0 &&
	      p == XVEC_PRECISION_TF32);
	CHECK(xvec_cuda_parse_precision("bf16", &p, err, sizeof(err)) == 0 &&
	      p == XVEC_PRECISION_BF16);
	CHECK(xvec_cuda_parse_precision("fp16", &p, err, sizeof(err)) == FEEDER_EINVAL);
	CHECK(strstr(err, "fp16") != NULL);
	CHECK(!strcmp(xvec_cuda_precision_name(XVEC_PRECISION_BF16), "bf16"));

	xvec_options_default(&o);
	o.num_speakers = 3, o.width = 8, o.pool_width = 8, o.embed = 4;
	CHECKF(xvec_model_create(&m, &o, 1, XVEC_CONTEXT + 1, err, sizeof(err)) == 0, "%s", err);
	xvec_cuda_config_default(&cfg);
	CHECK(xvec_cuda_create(&g, m, &cfg, 0, 100, err, sizeof(err)) == FEEDER_EINVAL &&
	      g == NULL);
	CHECK(xvec_cuda_create(&g, m, &cfg, 4, XVEC_CONTEXT, err, sizeof(err)) == FEEDER_EINVAL);
	cfg.precision = 7;
	CHECK(xvec_cuda_create(&g, m, &cfg, 4, 100, err, sizeof(err)) == FEEDER_EINVAL);
	cfg.precision = XVEC_PRECISION_FP32;

	if (cuda_info_devices(NULL, why, sizeof(why)) < 1) {
		int rc = xvec_cuda_create(&g, m, &cfg, 4, 100, err, sizeof(err));

		printf("no device: xvec_cuda_create -> %d: %s\n", rc, err);
		CHECK(rc == FEEDER_ENODEV && g == NULL && strstr(err, why) != NULL);
	} else {
		CHECKF(xvec_cuda_create(&g, m, &cfg, 4, 100, err, sizeof(err)) == 0, "%s", err);
		CHECK(xvec_cuda_step(g) == 0);
		xvec_cuda_destroy(g);
	}
	xvec_cuda_destroy(NULL);
	xvec_model_destroy(m);
	return 0;
}
