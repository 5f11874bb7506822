/* xvec_feed_bench.c — the GPU trainer fed by feederd: how long does the GPU wait for data?
 *
 * Connects to feederd, opens a features stream (batch 128, chunk 200 by
 * default), pins its ring and trains the paper-width x-vector TDNN on the
 * GPU through xvec_feed (copy of batch k+1 overlapped with step k), then
 * prints one JSON object: steps, samples_per_s, gpu_wait_fraction (over the
 * steps after --warmup, which leaves out the daemon's first fill). The loop
 * is the wiring `xvec train --device cuda` uses:
 *   xvec_feed_next -> xvec_cuda_train_step -> xvec_feed_prefetch,
 *   xvec_cuda_metrics every --log steps.
 * Usage: xvec_feed_bench --dataset NAME [--socket PATH] [--batch N]
 *   [--chunk N] [--steps N] [--warmup N] [--precision fp32|tf32|bf16]
 *   [--eps X] [--log N]
 *   [--width N] [--pool N] [--embed N]   (paper widths 512/1500/512 by default)
 *   [--placement cpu|gpu]  where feederd preprocesses; gpu also asks for
 *                          device-resident batches (CUDA IPC ring)
 *   [--dump FILE]          write each step's batch as the trainer received
 *                          it (copied back from the device: epoch, index,
 *                          labels, features) to FILE, for tests/xvec_cuda/
 *                          test_feed.sh to compare paths
 *   [--dump-host FILE]     no training: read --steps batches on the host
 *                          (feeder_stream_next) and write them the same way
 * Exits 77 with the reason when there is no CUDA device. */
#define BENCH_NAME "xvec_feed_bench"
#include "bench_common.h"
#include "cuda_info.h"
#include "feeder.h"
#include "xvec_cuda.h"
#include "xvec_feed.h"
#include "xvec_model.h"

#include <cuda_runtime.h>
#include <errno.h>

/* One batch in the dump: epoch, index, count (u64 each), labels, floats. */
static int dump_batch(FILE *out, uint64_t epoch, uint64_t index, uint64_t count,
		      const int32_t *labels, const float *x, size_t floats)
{
	uint64_t h[3] = { epoch, index, count };
	return fwrite(h, sizeof(h), 1, out) != 1 || fwrite(labels, 4, count, out) != count ||
	       fwrite(x, 4, floats, out) != floats;
}

int main(int argc, char **argv)
{
	const char *dataset = NULL, *sock = NULL, *precision = "fp32", *where = "cpu";
	const char *dump = NULL, *dump_host = NULL;
	int batch = 128, chunk = 200, steps = 200, warmup = 0, log_every = 50;
	char err[512], why[256];
	struct cuda_info_device dev;
	struct xvec_options o; /* paper widths, no noise */
	xvec_options_default(&o);
	const struct bench_opt opts[] = {
		{ "--dataset", 's', &dataset },     { "--socket", 's', &sock },
		{ "--batch", 'i', &batch },         { "--chunk", 'i', &chunk },
		{ "--steps", 'i', &steps },         { "--warmup", 'i', &warmup },
		{ "--precision", 's', &precision }, { "--eps", 'f', &o.noise_eps },
		{ "--log", 'i', &log_every },       { "--width", 'i', &o.width },
		{ "--pool", 'i', &o.pool_width },   { "--embed", 'i', &o.embed },
		{ "--dump", 's', &dump },           { "--dump-host", 's', &dump_host },
		{ "--placement", 's', &where }
	};

	bench_parse(argc, argv, opts, NULL);
	if (strcmp(where, "cpu") && strcmp(where, "gpu"))
		bench_exit(2, "unknown option --placement");
	int placement = !strcmp(where, "gpu") ? FEEDER_PLACEMENT_GPU : FEEDER_PLACEMENT_CPU;
	if (!dataset || batch < 1 || chunk <= XVEC_CONTEXT || steps < 2 || warmup < 0 ||
	    log_every < 1)
		bench_exit(
			2,
			"need --dataset, batch >= 1, chunk > %d, steps > 1, warmup >= 0 and log >= 1",
			XVEC_CONTEXT);
	if (cuda_info_devices(&dev, why, sizeof(why)) < 1)
		bench_exit(77, "%s", why);

	struct feeder *f;
	struct feeder_stream *s;
	struct feeder_stream_opts so;
	struct feeder_stream_info info;
	int rc = feeder_connect(sock, 10000, &f);
	if (rc)
		bench_fail("%s", feeder_last_error(NULL));
	feeder_stream_opts_init(&so);
	snprintf(so.dataset, sizeof so.dataset, "%s", dataset);
	so.pipeline = FEEDER_PIPE_FEATURES;
	so.batch = (uint32_t)batch;
	so.epochs = 1000;
	so.drop_last = 1;
	so.slots = 6;
	so.seed = 1;
	so.dtype = FEEDER_DTYPE_F32;
	so.features.chunk_len = (uint32_t)chunk;
	so.placement = (uint32_t)placement;
	so.device_batches = placement == FEEDER_PLACEMENT_GPU && !dump_host;
	rc = feeder_stream_open(f, &so, 30000, &s);
	if (rc)
		bench_fail("%s", feeder_last_error(f));
	feeder_stream_info(s, &info);
	if (dump_host) {
		/* The reference: the same stream read on the host. */
		FILE *out = fopen(dump_host, "wb");
		if (!out)
			bench_fail("%s: %s", dump_host, strerror(errno));
		for (int k = 0; k < steps; k++) {
			struct feeder_batch hb;
			rc = feeder_stream_next(s, 60000, &hb);
			if (rc || dump_batch(out, hb.epoch, hb.batch_index, hb.count, hb.labels,
					     hb.data, hb.bytes / 4))
				bench_fail("batch %d: %s", k,
					   rc ? feeder_strerror(rc) : "write failed");
			feeder_batch_release(s, &hb);
		}
		if (fclose(out) != 0)
			bench_fail("%s: %s", dump_host, strerror(errno));
		printf("{\"dumped\": %d, \"memory\": \"host\"}\n", steps);
		feeder_stream_close(s);
		feeder_disconnect(f);
		return 0;
	}

	struct xvec_cuda_config cfg;
	struct xvec_model *m;
	struct xvec_cuda *g;
	struct xvec_feed *fd;
	o.feat_dim = (int)info.shape[1];
	o.num_speakers = info.classes >= 2 ? (int)info.classes : 2;
	xvec_cuda_config_default(&cfg);
	cfg.log = stderr;
	cfg.autotune = 1;
	if (xvec_cuda_parse_precision(precision, &cfg.precision, err, sizeof(err)) ||
	    xvec_model_create(&m, &o, 1, XVEC_CONTEXT + 1, err, sizeof(err)) ||
	    xvec_cuda_create(&g, m, &cfg, batch, chunk, err, sizeof(err)) ||
	    xvec_feed_create(&fd, s, xvec_cuda_stream(g), batch, o.feat_dim, chunk, err,
			     sizeof(err)))
		bench_fail("%s", err);

	FILE *out = dump ? fopen(dump, "wb") : NULL;
	if (dump && !out)
		bench_fail("%s: %s", dump, strerror(errno));
	size_t cap = (size_t)batch * o.feat_dim * chunk;
	float *hx = dump ? malloc(sizeof(float) * cap) : NULL;
	int32_t *hl = dump ? malloc(sizeof(int32_t) * batch) : NULL;
	struct xvec_feed_batch b;
	struct xvec_cuda_metrics mt;
	struct xvec_feed_stats st, st0 = { 0 };
	double t0 = bench_clock(CLOCK_MONOTONIC);
	long long samples = 0;
	int done = 0;
	for (; done < warmup + steps; done++) {
		if (done == warmup && warmup > 0) {
			if (xvec_feed_stats(fd, &st0, err, sizeof(err)))
				bench_fail("%s", err);
			t0 = bench_clock(CLOCK_MONOTONIC);
			samples = 0;
		}
		rc = xvec_feed_next(fd, 60000, &b, err, sizeof(err));
		if (rc == FEEDER_EEND)
			break;
		if (!rc && out) {
			/* What the step will read, once the feed's copy is in. */
			size_t n = (size_t)b.batch * b.feat_dim * b.frames;
			cudaStream_t cs = xvec_cuda_stream(g);
			if (cudaMemcpyAsync(hx, b.x, 4 * n, cudaMemcpyDeviceToHost, cs) !=
				    cudaSuccess ||
			    cudaMemcpyAsync(hl, b.labels, 4 * (size_t)b.batch,
					    cudaMemcpyDeviceToHost, cs) != cudaSuccess ||
			    cudaStreamSynchronize(cs) != cudaSuccess ||
			    dump_batch(out, b.epoch, b.index, (uint64_t)b.batch, hl, hx, n))
				bench_fail("dumping batch %d failed", done);
		}
		if (!rc)
			rc = xvec_cuda_train_step(g, b.x, b.labels, b.batch, b.frames, err,
						  sizeof(err));
		if (!rc)
			rc = xvec_feed_prefetch(fd, 60000, err, sizeof(err));
		if (!rc && (done + 1) % log_every == 0) {
			rc = xvec_cuda_metrics(g, &mt, 1, err, sizeof(err));
			if (!rc)
				fprintf(stderr, "step %d: loss %.4f accuracy %.3f\n", done + 1,
					mt.loss, mt.accuracy);
		}
		if (rc)
			bench_fail("%s", err);
		samples += b.batch;
	}
	if (xvec_feed_stats(fd, &st, err, sizeof(err)) ||
	    xvec_cuda_metrics(g, &mt, 0, err, sizeof(err)))
		bench_fail("%s", err);
	double dt = bench_clock(CLOCK_MONOTONIC) - t0;
	st.wait_ms -= st0.wait_ms;
	st.span_ms -= st0.span_ms;
	st.wait_fraction = st.span_ms > 0 ? st.wait_ms / st.span_ms : 0;
	done = done > warmup ? done - warmup : 0;
	if (out && fclose(out) != 0)
		bench_fail("%s: %s", dump, strerror(errno));
	free(hx);
	free(hl);
	printf("{\"device\": \"%s\", \"precision\": \"%s\", \"steps\": %d, \"samples_per_s\": %.1f, "
	       "\"gpu_wait_ms\": %.3f, \"gpu_span_ms\": %.3f, \"gpu_wait_fraction\": %.5f, "
	       "\"loss\": %.6f, \"memory\": \"%s\"}\n",
	       dev.name, xvec_cuda_precision_name(cfg.precision), done, samples / dt, st.wait_ms,
	       st.span_ms, st.wait_fraction, mt.loss,
	       info.memory == FEEDER_MEMORY_DEVICE ? "device" : "host");
	xvec_feed_destroy(fd);
	xvec_cuda_destroy(g);
	xvec_model_destroy(m);
	feeder_stream_close(s);
	feeder_disconnect(f);
	return 0;
}
