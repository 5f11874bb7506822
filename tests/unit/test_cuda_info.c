/* test_cuda_info — reports the CUDA device, or skips saying why there is none. */
#include "check.h"
#include "cuda_info.h"

int main(void)
{
	struct cuda_info_device d;
	char why[256];
	int n = cuda_info_devices(&d, why, sizeof(why));
	if (n < 0)
		SKIP("%s", why);
	CHECK(d.major >= 3 && d.total_mem > 0 && d.name[0]);
	printf("%d CUDA device(s); device 0: %s, sm_%d%d, %zu MiB\n", n, d.name, d.major, d.minor,
	       d.total_mem >> 20);
	return 0;
}
