/* gpu_ipc_client.c — a libfeeder client that takes device-resident batches
 * (placement=gpu, device_batches) from a feederd with a real GPU, for
 * test_gpu_ipc.sh. Every device batch is compared with the same request
 * served through a host ring (placement=cpu; eval, u8: deterministic):
 * labels equal, pixels within the jpeg pipeline's tolerance (mean |diff|
 * <= 2/255), after feeder_batch_wait and a copy to the host on a CUDA stream.
 *
 *   gpu_ipc_client --socket S --dataset NAME check BATCHES
 *       BATCHES batches. Prints "ok: N batches".
 *   gpu_ipc_client --socket S --dataset NAME hold
 *       take every slot of a device stream, print HOLDING, sleep (to be
 *       killed with SIGKILL).
 *   gpu_ipc_client --socket S --dataset NAME close ROUNDS
 *       ROUNDS times: open a device stream, take its first batch, queue a
 *       copy of it to the host and close the stream at once, without waiting
 *       for the copy: feeder_stream_close must let the copy finish before it
 *       closes the IPC handles, so the bytes are right and the CUDA context
 *       stays usable (a cudaMalloc afterwards). Prints "ok: N closes".
 *   gpu_ipc_client --socket S --dataset NAME fail
 *       take one batch, print HOLDING and wait for the stream to fail (the
 *       script removes the dataset): FEEDER_ESTREAM; the held batch must
 *       still read right (the daemon keeps a failed stream's ring until
 *       CLOSE_STREAM). Prints "ok: failed stream, held batch intact".
 *   gpu_ipc_client --socket S --dataset NAME reconnect BATCHES
 *       as check, with reconnection on (20 s); after half the batches it
 *       prints HALF and sleeps a second (the script kills feederd and
 *       starts it again); the device and host streams resume at their next
 *       batch and keep agreeing. Prints "ok: N batches across a restart".
 *
 * Exit status: 0 pass, 1 fail, 77 skip (no device ring offered). */
#include "feeder.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *sock, *dataset;

static int open_one(int placement, int reconnect, struct feeder **f, struct feeder_stream **s)
{
	if (feeder_connect(sock, 10000, f)) {
		fprintf(stderr, "connect: %s\n", feeder_last_error(NULL));
		return 1;
	}
	if (reconnect)
		feeder_set_reconnect(*f, reconnect);
	struct feeder_stream_opts o;
	feeder_stream_opts_init(&o);
	if (feeder_stream_opts_set_dataset(&o, dataset)) {
		fprintf(stderr, "bad dataset name '%s'\n", dataset);
		return 1;
	}
	o.batch = 8;
	o.slots = 3;
	o.epochs = 100;
	o.dtype = FEEDER_DTYPE_U8;
	o.jpeg.height = o.jpeg.width = 64;
	o.jpeg.train = 0;
	o.placement = (uint32_t)placement;
	o.device_batches = placement == FEEDER_PLACEMENT_GPU;
	if (feeder_stream_open(*f, &o, 10000, s)) {
		fprintf(stderr, "open (placement %d): %s\n", placement, feeder_last_error(*f));
		return 1;
	}
	return 0;
}

/* Device batch bd (of sd, copied to host through cs) against host batch bh:
 * 0 when they agree; adds to the difference totals. Releases bd. */
static long diffs, values;
static int maxd;

static int compare(struct feeder_stream *sd, struct feeder *fd, struct feeder_batch *bd,
		   const struct feeder_batch *bh, uint8_t *host, cudaStream_t cs, long k)
{
	if (bd->memory != FEEDER_MEMORY_DEVICE || bd->count != bh->count ||
	    bd->bytes != bh->bytes || bd->epoch != bh->epoch ||
	    bd->batch_index != bh->batch_index ||
	    memcmp(bd->labels, bh->labels, 4u * bd->count) != 0) {
		fprintf(stderr,
			"batch %ld: device and host batches disagree (labels, shape, position)\n",
			k);
		return 1;
	}
	if (feeder_batch_wait(sd, bd, cs) ||
	    cudaMemcpyAsync(host, bd->data, bd->bytes, cudaMemcpyDeviceToHost, cs) != cudaSuccess ||
	    feeder_batch_release_on(sd, bd, cs) || cudaStreamSynchronize(cs) != cudaSuccess) {
		fprintf(stderr, "batch %ld: reading the device batch failed: %s\n", k,
			feeder_last_error(fd));
		return 1;
	}
	return 0;
}

static int pixels(const uint8_t *host, const struct feeder_batch *bh, long k)
{
	const uint8_t *ref = bh->data;
	long d0 = 0;
	for (size_t i = 0; i < bh->bytes; i++) {
		int d = abs((int)host[i] - (int)ref[i]);
		d0 += d;
		maxd = d > maxd ? d : maxd;
	}
	diffs += d0;
	values += (long)bh->bytes;
	if ((double)d0 / (double)bh->bytes > 2.0) {
		fprintf(stderr, "batch %ld: pixels off by %.3f/255 on average\n", k,
			(double)d0 / (double)bh->bytes);
		return 1;
	}
	return 0;
}

/* check and reconnect: n pairs of batches. */
static int pairs(long n, int reconnect)
{
	struct feeder *fd, *fh;
	struct feeder_stream *sd, *sh;
	if (open_one(FEEDER_PLACEMENT_GPU, reconnect, &fd, &sd) ||
	    open_one(FEEDER_PLACEMENT_CPU, reconnect, &fh, &sh))
		return 1;
	struct feeder_stream_info info;
	feeder_stream_info(sd, &info);
	cudaStream_t cs;
	if (cudaSetDevice(info.device) != cudaSuccess || cudaStreamCreate(&cs) != cudaSuccess) {
		fprintf(stderr, "CUDA stream on device %d failed\n", info.device);
		return 1;
	}
	uint8_t *host = malloc(info.slot_size);
	for (long k = 0; k < n; k++) {
		if (reconnect && k == n / 2) {
			printf("HALF\n");
			fflush(stdout);
			sleep(1);
		}
		struct feeder_batch bd, bh;
		if (feeder_stream_next(sd, 30000, &bd) || feeder_stream_next(sh, 30000, &bh)) {
			fprintf(stderr, "batch %ld: %s / %s\n", k, feeder_last_error(fd),
				feeder_last_error(fh));
			return 1;
		}
		if (compare(sd, fd, &bd, &bh, host, cs, k) || pixels(host, &bh, k))
			return 1;
		feeder_batch_release(sh, &bh);
	}
	printf("%ld device batches vs host batches: mean |diff| %.4f/255, max %d/255\n", n,
	       (double)diffs / (double)values, maxd);
	if (reconnect)
		printf("reconnects: device stream's connection %u, host stream's %u\n",
		       feeder_get_reconnects(fd), feeder_get_reconnects(fh));
	if (reconnect && (feeder_get_reconnects(fd) == 0 || feeder_get_reconnects(fh) == 0)) {
		fprintf(stderr, "the daemon was not restarted during the run\n");
		return 1;
	}
	printf("ok: %ld batches%s\n", n, reconnect ? " across a restart" : "");
	feeder_stream_close(sd);
	feeder_stream_close(sh);
	feeder_disconnect(fd);
	feeder_disconnect(fh);
	free(host);
	cudaStreamDestroy(cs);
	return 0;
}

static int closes(long rounds)
{
	struct feeder *fh;
	struct feeder_stream *sh;
	struct feeder_batch bh;
	if (open_one(FEEDER_PLACEMENT_CPU, 0, &fh, &sh))
		return 1;
	if (feeder_stream_next(sh, 30000, &bh)) {
		fprintf(stderr, "host batch: %s\n", feeder_last_error(fh));
		return 1;
	}
	uint8_t *host = NULL;
	for (long k = 0; k < rounds; k++) {
		struct feeder *fd;
		struct feeder_stream *sd;
		struct feeder_batch bd;
		if (open_one(FEEDER_PLACEMENT_GPU, 0, &fd, &sd))
			return 1;
		struct feeder_stream_info info;
		feeder_stream_info(sd, &info);
		cudaStream_t cs;
		if (!host && cudaMallocHost((void **)&host, info.slot_size) != cudaSuccess) {
			fprintf(stderr, "cudaMallocHost failed\n");
			return 1;
		}
		if (cudaSetDevice(info.device) != cudaSuccess ||
		    cudaStreamCreate(&cs) != cudaSuccess || feeder_stream_next(sd, 30000, &bd) ||
		    bd.bytes != bh.bytes || feeder_batch_wait(sd, &bd, cs) ||
		    cudaMemcpyAsync(host, bd.data, bd.bytes, cudaMemcpyDeviceToHost, cs) !=
			    cudaSuccess) {
			fprintf(stderr, "round %ld: %s\n", k, feeder_last_error(fd));
			return 1;
		}
		/* the labels live in the stream's host mapping, gone at close */
		int32_t labels[64];
		if (bd.count > 64) {
			fprintf(stderr, "round %ld: %u samples a batch\n", k, bd.count);
			return 1;
		}
		memcpy(labels, bd.labels, 4u * bd.count);
		/* close with the copy possibly still running */
		if (feeder_stream_close(sd)) {
			fprintf(stderr, "round %ld: close: %s\n", k, feeder_last_error(fd));
			return 1;
		}
		cudaError_t e = cudaStreamSynchronize(cs);
		void *probe = NULL;
		if (e != cudaSuccess || cudaMalloc(&probe, 1 << 20) != cudaSuccess) {
			fprintf(stderr,
				"round %ld: the CUDA context is broken after the close: %s\n", k,
				cudaGetErrorString(e != cudaSuccess ? e : cudaGetLastError()));
			return 1;
		}
		cudaFree(probe);
		if (memcmp(labels, bh.labels, 4u * bh.count) != 0) {
			fprintf(stderr, "round %ld: labels differ from the host batch\n", k);
			return 1;
		}
		if (pixels(host, &bh, k))
			return 1;
		cudaStreamDestroy(cs);
		feeder_disconnect(fd);
	}
	printf("%ld closes with a copy in flight: mean |diff| %.4f/255, max %d/255\n", rounds,
	       (double)diffs / (double)values, maxd);
	printf("ok: %ld closes\n", rounds);
	cudaFreeHost(host);
	feeder_batch_release(sh, &bh);
	feeder_disconnect(fh);
	return 0;
}

static int failed(void)
{
	struct feeder *fd, *fh;
	struct feeder_stream *sd, *sh;
	struct feeder_batch bd, bh, more;
	if (open_one(FEEDER_PLACEMENT_CPU, 0, &fh, &sh) || feeder_stream_next(sh, 30000, &bh) ||
	    open_one(FEEDER_PLACEMENT_GPU, 0, &fd, &sd) || feeder_stream_next(sd, 30000, &bd)) {
		fprintf(stderr, "first batches: %s\n", feeder_last_error(NULL));
		return 1;
	}
	printf("HOLDING\n");
	fflush(stdout);
	int rc;
	for (int i = 0; i < 300; i++) {
		rc = feeder_stream_next(sd, 100, &more);
		if (rc == 0)
			feeder_batch_release(sd, &more);
		else if (rc != FEEDER_ETIMEDOUT)
			break;
	}
	if (rc != FEEDER_ESTREAM) {
		fprintf(stderr, "the stream did not fail (%d: %s)\n", rc, feeder_last_error(fd));
		return 1;
	}
	printf("stream failed as expected: %s\n", feeder_last_error(fd));
	struct feeder_stream_info info;
	feeder_stream_info(sd, &info);
	cudaStream_t cs;
	uint8_t *host = malloc(info.slot_size);
	if (cudaSetDevice(info.device) != cudaSuccess || cudaStreamCreate(&cs) != cudaSuccess ||
	    compare(sd, fd, &bd, &bh, host, cs, 0) || pixels(host, &bh, 0))
		return 1;
	feeder_stream_close(sd);
	feeder_disconnect(fd);
	feeder_batch_release(sh, &bh);
	feeder_disconnect(fh);
	free(host);
	cudaStreamDestroy(cs);
	printf("ok: failed stream, held batch intact\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 6 || strcmp(argv[1], "--socket") || strcmp(argv[3], "--dataset")) {
		fprintf(stderr, "usage: gpu_ipc_client --socket S --dataset NAME "
				"check N | hold | close N | fail | reconnect N\n");
		return 1;
	}
	sock = argv[2];
	dataset = argv[4];
	const char *cmd = argv[5];
	long n = argc > 6 ? atol(argv[6]) : 20;
	/* Is a device ring offered at all? */
	struct feeder *fd;
	struct feeder_stream *sd;
	if (open_one(FEEDER_PLACEMENT_GPU, 0, &fd, &sd))
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
	feeder_stream_close(sd);
	feeder_disconnect(fd);
	if (strcmp(cmd, "check") == 0)
		return pairs(n, 0);
	if (strcmp(cmd, "reconnect") == 0)
		return pairs(n, 20000);
	if (strcmp(cmd, "close") == 0)
		return closes(n);
	if (strcmp(cmd, "fail") == 0)
		return failed();
	fprintf(stderr, "gpu_ipc_client: unknown command '%s'\n", cmd);
	return 1;
}
