/* gpu_ipc_client.c — a libfeeder client that takes device-resident batches
 * (placement=gpu, device_batches) from a feederd with a real GPU, for
 * test_gpu_ipc.sh:
 *
 *   gpu_ipc_client --socket S --dataset NAME check BATCHES
 *       stream BATCHES batches twice, from a device ring and from a host ring
 *       (placement=cpu) with the same request (eval, u8: deterministic), copy
 *       each device batch to the host after feeder_batch_wait on a CUDA
 *       stream, and compare: labels equal, pixels within the jpeg pipeline's
 *       tolerance (mean |diff| <= 2/255). Prints "ok: N batches".
 *   gpu_ipc_client --socket S --dataset NAME hold
 *       take every slot of a device stream, print HOLDING, sleep (to be
 *       killed with SIGKILL).
 *
 * Exit status: 0 pass, 1 fail, 77 skip (no device ring offered). */
#include "feeder.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int open_one(const char *sock, const char *dataset, int placement, int slots,
		    struct feeder **f, struct feeder_stream **s)
{
	if (feeder_connect(sock, 10000, f)) {
		fprintf(stderr, "connect: %s\n", feeder_last_error(NULL));
		return 1;
	}
	struct feeder_stream_opts o;
	feeder_stream_opts_init(&o);
	snprintf(o.dataset, sizeof o.dataset, "%s", dataset);
	o.batch = 8;
	o.slots = (uint32_t)slots;
	o.epochs = 100;
	o.dtype = FEEDER_DTYPE_U8;
	o.jpeg.height = o.jpeg.width = 64;
	o.jpeg.train = 0;
	o.placement = placement;
	o.device_batches = placement == FEEDER_PLACEMENT_GPU;
	if (feeder_stream_open(*f, &o, 10000, s)) {
		fprintf(stderr, "open (placement %d): %s\n", placement, feeder_last_error(*f));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 6 || strcmp(argv[1], "--socket") || strcmp(argv[3], "--dataset")) {
		fprintf(stderr, "usage: gpu_ipc_client --socket S --dataset NAME check N | hold\n");
		return 1;
	}
	const char *sock = argv[2], *dataset = argv[4], *cmd = argv[5];
	struct feeder *fd, *fh;
	struct feeder_stream *sd, *sh;
	if (open_one(sock, dataset, FEEDER_PLACEMENT_GPU, 3, &fd, &sd))
		return 1;
	struct feeder_stream_info info;
	feeder_stream_info(sd, &info);
	if (info.memory != FEEDER_MEMORY_DEVICE) {
		printf("SKIP: the daemon did not offer a device ring\n");
		return 77;
	}
	if (strcmp(cmd, "hold") == 0) {
		struct feeder_batch b[3];
		for (int i = 0; i < 3; i++)
			if (feeder_stream_next(sd, 30000, &b[i])) {
				fprintf(stderr, "next: %s\n", feeder_last_error(fd));
				return 1;
			}
		printf("HOLDING\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	long n = argc > 6 ? atol(argv[6]) : 20;
	if (open_one(sock, dataset, FEEDER_PLACEMENT_CPU, 3, &fh, &sh))
		return 1;
	cudaStream_t cs;
	if (cudaSetDevice(info.device) != cudaSuccess || cudaStreamCreate(&cs) != cudaSuccess) {
		fprintf(stderr, "CUDA stream on device %d failed\n", info.device);
		return 1;
	}
	uint8_t *host = malloc(info.slot_size);
	long diffs = 0, values = 0;
	int maxd = 0;
	for (long k = 0; k < n; k++) {
		struct feeder_batch bd, bh;
		if (feeder_stream_next(sd, 30000, &bd) || feeder_stream_next(sh, 30000, &bh)) {
			fprintf(stderr, "batch %ld: %s / %s\n", k, feeder_last_error(fd),
				feeder_last_error(fh));
			return 1;
		}
		if (bd.memory != FEEDER_MEMORY_DEVICE || bd.count != bh.count || bd.bytes != bh.bytes ||
		    bd.epoch != bh.epoch || bd.batch_index != bh.batch_index ||
		    memcmp(bd.labels, bh.labels, 4u * bd.count) != 0) {
			fprintf(stderr, "batch %ld: device and host batches disagree (labels, shape)\n", k);
			return 1;
		}
		if (feeder_batch_wait(sd, &bd, cs) ||
		    cudaMemcpyAsync(host, bd.data, bd.bytes, cudaMemcpyDeviceToHost, cs) != cudaSuccess ||
		    feeder_batch_release_on(sd, &bd, cs) || cudaStreamSynchronize(cs) != cudaSuccess) {
			fprintf(stderr, "batch %ld: reading the device batch failed: %s\n", k,
				feeder_last_error(fd));
			return 1;
		}
		const uint8_t *ref = bh.data;
		for (size_t i = 0; i < bd.bytes; i++) {
			int d = abs((int)host[i] - (int)ref[i]);
			diffs += d;
			maxd = d > maxd ? d : maxd;
		}
		values += (long)bd.bytes;
		feeder_batch_release(sh, &bh);
	}
	double mad = (double)diffs / (double)values;
	printf("%ld device batches vs host batches: mean |diff| %.4f/255, max %d/255\n", n, mad, maxd);
	if (mad > 2.0)
		return 1;
	printf("ok: %ld batches\n", n);
	feeder_stream_close(sd);
	feeder_stream_close(sh);
	feeder_disconnect(fd);
	feeder_disconnect(fh);
	free(host);
	cudaStreamDestroy(cs);
	return 0;
}
