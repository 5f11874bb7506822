/* test_gpu_features.c — the features pipeline on a CUDA device against the
 * CPU pipeline (features_pipeline_run): every cmn mode (none, utterance,
 * sliding over 300 and 7 frames), cvn, f16 and f32 in and out, train and
 * eval, utterances shorter than, equal to and longer than the chunk; f32
 * within 1e-4, f16 within one half ulp (gpu_cases.h). Skips (77) without a
 * device. */
#include "gpu_device_runner.h"

int main(void)
{
	dev_require();
	gc_features_all(&dev_runner);
	return 0;
}
