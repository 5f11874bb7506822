/* h2d_bench.cu — host-to-device bandwidth from a registered shared ring vs cudaHostAlloc memory.
 *
 * libfeeder maps a stream's ring (a memfd shared with feederd) and pins it
 * with cudaHostRegister; the issue asks that copies from it reach at least
 * 90 % of the bandwidth of copies from cudaHostAlloc memory. This tool builds
 * both the same way (memfd + mmap MAP_SHARED + cudaHostRegister(portable |
 * mapped), and cudaHostAlloc), plus plain malloc for contrast, copies
 * batch-sized chunks (default 128 x 30 x 200 float32) round-robin over the
 * buffer to the device with cudaMemcpyAsync, and prints one line per source
 * and a final `ratio=` line (registered / hostalloc) for xvec_gpu.sh. The
 * sources take turns for --rounds rounds and each keeps its best round, so
 * that a neighbour's burst on the link does not decide the ratio.
 * Usage: h2d_bench [--bytes N] [--chunk N] [--iters N] [--rounds N]. Exits 77
 * with the reason when there is no CUDA device. */
#define BENCH_NAME "h2d_bench"
#include "bench_common.h"
#include <cuda_runtime.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

extern "C" {
#include "cuda_info.h"
}

static void h2d_check(const char *what, cudaError_t e)
{
	if (e != cudaSuccess)
		bench_fail("%s: %s", what, cudaGetErrorString(e));
}

/* GB/s of `iters` chunk copies from src (bytes long) to dst. */
static void h2d_time(const char *src, size_t bytes, size_t chunk, int iters, void *dst,
		     cudaStream_t st, double *gbs)
{
	cudaEvent_t e0, e1;
	size_t nchunks = bytes / chunk;
	float ms;

	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	for (int i = -3; i < iters; i++) {
		if (i == 0)
			cudaEventRecord(e0, st);
		h2d_check("cudaMemcpyAsync",
			  cudaMemcpyAsync(dst, src + (size_t)((i + 3) % nchunks) * chunk, chunk,
					  cudaMemcpyHostToDevice, st));
	}
	cudaEventRecord(e1, st);
	h2d_check("copy", cudaEventSynchronize(e1));
	cudaEventElapsedTime(&ms, e0, e1);
	*gbs = (double)chunk * iters / (ms * 1e-3) / 1e9;
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
}

/* The best GB/s of each source over `rounds` rounds in which they take turns. */
static void h2d_best(const char *const *src, size_t bytes, size_t chunk, int iters, int rounds,
		     void *dst, cudaStream_t st, double *best)
{
	double g;

	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < 3; k++) {
			h2d_time(src[k], bytes, chunk, iters, dst, st, &g);
			if (g > best[k])
				best[k] = g;
		}
}

int main(int argc, char **argv)
{
	size_t bytes = 64u << 20, chunk = (size_t)128 * 30 * 200 * 4;
	int iters = 200, rounds = 5;
	struct cuda_info_device dev;
	char why[256];

	const struct bench_opt opts[] = { { "--bytes", 'U', &bytes },
					  { "--chunk", 'U', &chunk },
					  { "--iters", 'i', &iters },
					  { "--rounds", 'i', &rounds } };

	bench_parse(argc, argv, opts, NULL);
	if (chunk < 1 || bytes < chunk || iters < 1 || rounds < 1)
		bench_exit(2, "need 1 <= chunk <= bytes, iters >= 1 and rounds >= 1");
	if (cuda_info_devices(&dev, why, sizeof(why)) < 1)
		bench_exit(77, "%s", why);

	void *dst, *hostalloc, *heap = malloc(bytes);
	cudaStream_t st;
	int fd = memfd_create("h2d_bench_ring", MFD_CLOEXEC);
	if (!heap || fd < 0 || ftruncate(fd, (off_t)bytes) != 0)
		bench_fail("cannot make a %zu-byte memfd: %s", bytes, strerror(errno));
	void *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED)
		bench_fail("mmap: %s", strerror(errno));
	memset(ring, 1, bytes);
	memset(heap, 1, bytes);
	h2d_check("cudaStreamCreate", cudaStreamCreate(&st));
	h2d_check("cudaMalloc", cudaMalloc(&dst, chunk));
	h2d_check("cudaHostAlloc", cudaHostAlloc(&hostalloc, bytes, cudaHostAllocDefault));
	memset(hostalloc, 1, bytes);
	h2d_check("cudaHostRegister",
		  cudaHostRegister(ring, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped));

	const char *src[3] = { (const char *)hostalloc, (const char *)ring, (const char *)heap };
	double g[3] = { 0, 0, 0 }, &g_alloc = g[0], &g_ring = g[1], &g_heap = g[2];
	h2d_best(src, bytes, chunk, iters, rounds, dst, st, g);
	printf("device: %s\n", dev.name);
	printf("chunk %zu bytes x %d copies, buffer %zu bytes, best of %d rounds\n", chunk, iters,
	       bytes, rounds);
	printf("cudaHostAlloc          %8.2f GB/s\n", g_alloc);
	printf("registered memfd ring  %8.2f GB/s  (%.1f %% of cudaHostAlloc)\n", g_ring,
	       100.0 * g_ring / g_alloc);
	printf("pageable malloc        %8.2f GB/s  (%.1f %% of cudaHostAlloc)\n", g_heap,
	       100.0 * g_heap / g_alloc);
	printf("ratio=%.4f hostalloc_gbs=%.3f ring_gbs=%.3f\n", g_ring / g_alloc, g_alloc, g_ring);

	cudaHostUnregister(ring);
	munmap(ring, bytes);
	close(fd);
	cudaFreeHost(hostalloc);
	cudaFree(dst);
	cudaStreamDestroy(st);
	free(heap);
	return 0;
}
