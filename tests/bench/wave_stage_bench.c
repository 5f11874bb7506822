/* wave_stage_bench.c — single-thread cost of feederd's wave pipeline, stage
 * by stage (not a test; tests/bench/speech_aug.sh runs it).
 *
 * Opens a speech, a noise and an RIR dataset packed by `packer pack audio
 * --store wave` (proto/dsstore.h), and on one thread, without a daemon,
 * reads records as feederd's workers do (LMDB get, copy with its CRC: the
 * daemon's READ stage) and calls wave_pipeline_run on them, the noise and
 * RIR records coming through a struct wave_sources whose get() reads and
 * checks them as daemon/stream_task.c's aux_get does (without the SIGBUS
 * guard). Per stage, the pipeline's own clock (wave_pipeline_take_times):
 * chunk (the cut from the record), speed, reverb, noise (with gain and
 * dither), features (fbank + CMN + conversion), specaug.
 *
 * The stream options (set in main) are those of the PyTorch peer,
 * speech_aug_torch.py's AUG; --aug 0 leaves out every augmentation.
 *
 * Each of --repeats runs does --warmup chunks, then --chunks timed chunks
 * (sample i of the run: record (i * 7919) mod count, key detrand_key(seed,
 * repeat, i)); the run with the least thread CPU time is reported (CPU
 * time is steadier than wall time on a shared machine): ms per chunk per
 * stage and chunks/s/core. The pipeline times its stages on the wall clock,
 * which a busy machine inflates where it preempts the thread: each chunk's
 * stages are scaled by that chunk's CPU/wall ratio (1 on a quiet machine),
 * so that they sum to its CPU time. Options: the usage line in main. */
#define BENCH_NAME "wave_stage_bench"
#include "bench_common.h"
#include "crc32c.h"
#include "detrand.h"
#include "dsformat.h"
#include "dsstore.h"
#include "feeder_types.h"
#include "pcm.h"
#include "protocol.h"
#include "wave_pipeline.h"

#include <errno.h>

/* One opened dataset and the copy of its last record read. */
struct src {
	const char *name;
	struct dsstore *ds;
	struct dsformat_header hdr;
	uint8_t *buf;
	size_t cap;
	unsigned char *verified; /* per record: its CRC checked */
};

/* Read and check record index of s into s->buf (feederd's fetch and
 * aux_get, without the SIGBUS guard). */
static int src_read(struct src *s, uint64_t index, struct dsformat_sample *smp, char *err,
		    size_t errlen)
{
	struct dsstore_txn *txn = NULL;
	const uint8_t *payload;
	int rc = dsstore_txn_begin(s->ds, &txn, err, errlen);
	if (rc == 0)
		rc = dsstore_get_sample(txn, index, smp, &payload, err, errlen);
	if (rc == 0 && smp->payload_len > s->cap) {
		uint8_t *nb = realloc(s->buf, smp->payload_len);
		if (!nb)
			rc = -ENOMEM, snprintf(err, errlen, "out of memory");
		else
			s->buf = nb, s->cap = smp->payload_len;
	}
	uint32_t crc = 0;
	if (rc == 0)
		crc = crc32c_copy(0, s->buf, payload, smp->payload_len);
	if (txn)
		dsstore_txn_end(txn);
	if (rc == 0)
		rc = dsformat_sample_crc_check(smp, crc, err, errlen);
	if (rc == 0)
		rc = dsformat_sample_check(&s->hdr, smp, err, errlen);
	return rc;
}

/* struct wave_source as daemon/stream_task.c's source_length/source_read
 * (without the SIGBUS guard): the header checked on each read, the CRC on
 * the first, only the samples asked for converted. */
static int aux_record(struct src *s, uint64_t index, size_t offset, size_t n, float *out,
		      size_t *len, char *err, size_t errlen)
{
	struct dsstore_txn *txn = NULL;
	struct dsformat_sample smp;
	const uint8_t *payload;
	int rc = dsstore_txn_begin(s->ds, &txn, err, errlen);
	if (rc == 0)
		rc = dsstore_get_sample(txn, index, &smp, &payload, err, errlen);
	if (rc == 0)
		rc = dsformat_sample_check(&s->hdr, &smp, err, errlen);
	if (rc == 0 && !s->verified[index]) {
		rc = dsformat_sample_verify(&smp, payload, err, errlen);
		s->verified[index] = rc == 0;
	}
	if (rc == 0 && len)
		*len = smp.frames;
	if (rc == 0 && out && offset >= smp.frames)
		rc = -EINVAL;
	if (rc == 0 && out)
		pcm_s16_read(payload, smp.frames, offset, n, out);
	if (txn)
		dsstore_txn_end(txn);
	return rc;
}

static int aux_length(void *ctx, uint64_t index, size_t *n, char *err, size_t errlen)
{
	return aux_record(ctx, index, 0, 0, NULL, n, err, errlen);
}

static int aux_read(void *ctx, uint64_t index, size_t offset, size_t n, float *out, char *err,
		    size_t errlen)
{
	return aux_record(ctx, index, offset, n, out, NULL, err, errlen);
}

static void src_open(struct src *s, const char *dir, const char *name)
{
	char path[4096], err[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	s->name = name;
	if (dsstore_open(path, &s->ds, err, sizeof(err)))
		bench_fail("%s: %s", path, err);
	s->hdr = *dsstore_header(s->ds);
	if (s->hdr.kind != DSFORMAT_KIND_WAVE || s->hdr.samples == 0)
		bench_fail("%s is not a non-empty wave dataset", path);
}

/* The noise dataset's records per category (daemon/stream_task.c's
 * index_noise). */
static void index_noise(struct src *s, struct wave_sources *ws)
{
	char err[256];
	int64_t cat_of[WAVE_CATEGORIES] = { -1, -1, -1 };
	struct dsstore_txn *txn = NULL;
	if (dsstore_txn_begin(s->ds, &txn, err, sizeof(err)))
		bench_fail("%s: %s", s->name, err);
	for (uint32_t k = 0; k < s->hdr.classes; k++) {
		const char *name;
		size_t len;
		if (dsstore_get_label(txn, k, &name, &len) != 0)
			continue;
		int c = wave_category(name, len);
		if (c >= 0)
			cat_of[c] = k;
	}
	for (int c = 0; c < WAVE_CATEGORIES; c++)
		ws->cat[c] = calloc(s->hdr.samples, sizeof(uint64_t));
	for (uint64_t i = 0; i < s->hdr.samples; i++) {
		struct dsformat_sample smp;
		const uint8_t *payload;
		if (dsstore_get_sample(txn, i, &smp, &payload, err, sizeof(err)) != 0)
			continue;
		for (int c = 0; c < WAVE_CATEGORIES; c++)
			if (cat_of[c] == (int64_t)smp.label)
				ws->cat[c][ws->ncat[c]++] = i;
	}
	dsstore_txn_end(txn);
}

struct result {
	double read, cpu, wall; /* seconds over the timed chunks */
	struct wave_times t;
	unsigned chunks;
};

int main(int argc, char **argv)
{
	const char *dir = NULL, *speech = "speech", *noise = "noise", *rir = "rir";
	int aug = 1, json = 0;
	uint32_t chunks = 300, warmup = 30, repeats = 5;
	uint64_t seed = 1;
	const struct bench_opt opts[] = {
		{ "--datasets", 's', &dir },  { "--speech", 's', &speech },
		{ "--noise", 's', &noise },   { "--rir", 's', &rir },
		{ "--aug", 'i', &aug },       { "--chunks", 'u', &chunks },
		{ "--warmup", 'u', &warmup }, { "--repeats", 'u', &repeats },
		{ "--seed", 'U', &seed },     { "--json", '1', &json }
	};
	bench_parse(argc, argv, opts, NULL);
	if (!dir || chunks == 0 || repeats == 0) {
		fprintf(stderr,
			"usage: wave_stage_bench --datasets DIR [--speech NAME --noise NAME "
			"--rir NAME] [--aug 0|1] [--chunks N] [--warmup N] [--repeats R] "
			"[--seed S] [--json]\n");
		return 2;
	}
	aug = aug != 0;

	struct src sp = { 0 }, ns = { 0 }, rs = { 0 };
	src_open(&sp, dir, speech);
	src_open(&ns, dir, noise);
	src_open(&rs, dir, rir);
	struct wave_sources ws = { 0 };
	ns.verified = calloc(ns.hdr.samples + 1, 1);
	rs.verified = calloc(rs.hdr.samples + 1, 1);
	if (!ns.verified || !rs.verified)
		return 1;
	ws.noise = (struct wave_source){ .length = aux_length,
					 .read = aux_read,
					 .ctx = &ns,
					 .key = 1,
					 .count = ns.hdr.samples };
	ws.rir = (struct wave_source){ .length = aux_length,
				       .read = aux_read,
				       .ctx = &rs,
				       .key = 2,
				       .count = rs.hdr.samples };
	index_noise(&ns, &ws);

	struct feeder_stream_opts o;
	proto_opts_default(&o);
	snprintf(o.dataset, sizeof(o.dataset), "%s", speech);
	o.pipeline = FEEDER_PIPE_WAVE;
	o.dtype = FEEDER_DTYPE_F32;
	o.wave.chunk_len = 200;
	o.wave.train = 1;
	o.wave.features = FEEDER_WAVE_FBANK;
	o.wave.bins = 80;
	o.wave.cmn = FEEDER_FEAT_CMN_UTT;
	if (aug) {
		snprintf(o.wave.noise, sizeof(o.wave.noise), "%s", noise);
		snprintf(o.wave.rir, sizeof(o.wave.rir), "%s", rir);
		o.wave.noise_p = 0.6f;
		o.wave.reverb_p = 0.6f;
		o.wave.speed_p = 0.5f;
		o.wave.specaug_p = 0.6f;
		o.wave.time_masks = 1, o.wave.time_mask_max = 10;
		o.wave.freq_masks = 1, o.wave.freq_mask_max = 8;
		o.wave.dither = 1.0f;
	}
	char err[512];
	if (proto_opts_check(&o, err, sizeof(err)))
		bench_fail("options: %s", err);
	float *out = malloc((size_t)o.wave.bins * o.wave.chunk_len * sizeof(float));
	if (!out)
		return 1;

	struct result best = { 0 };
	unsigned skipped = 0;
	for (unsigned rep = 0; rep < repeats; rep++) {
		struct result r = { 0 };
		double *rt = &r.t.chunk;
		for (unsigned i = 0; i < warmup + chunks; i++) {
			uint64_t index = (uint64_t)i * 7919u % sp.hdr.samples;
			struct dsformat_sample smp;
			struct wave_times t;
			wave_pipeline_take_times(&t);
			double c0 = bench_clock(CLOCK_THREAD_CPUTIME_ID),
			       w0 = bench_clock(CLOCK_MONOTONIC);
			int rc = src_read(&sp, index, &smp, err, sizeof(err));
			double w1 = bench_clock(CLOCK_MONOTONIC);
			int32_t label;
			if (rc == 0)
				rc = wave_pipeline_run(&o, &ws, &smp, sp.buf,
						       detrand_key(seed, rep, i), sp.hdr.classes,
						       out, &label, err, sizeof(err));
			double c2 = bench_clock(CLOCK_THREAD_CPUTIME_ID),
			       w2 = bench_clock(CLOCK_MONOTONIC);
			if (rc < 0)
				bench_fail("record %llu: %s", (unsigned long long)index, err);
			if (rc == WAVE_SKIPPED)
				skipped++;
			wave_pipeline_take_times(&t);
			if (i < warmup)
				continue;
			/* The stages are timed on the wall clock; where this chunk
			 * was preempted its wall time exceeds its CPU time, and the
			 * stages are scaled down by its CPU/wall ratio (on a quiet
			 * machine the ratio is 1). */
			double f = w2 > w0 && c2 - c0 < w2 - w0 ? (c2 - c0) / (w2 - w0) : 1.0;
			const double *tt = &t.chunk;
			for (size_t k = 0; k < sizeof(t) / sizeof(double); k++)
				rt[k] += tt[k] * f;
			r.read += (w1 - w0) * f;
			r.cpu += c2 - c0;
			r.wall += w2 - w0;
		}
		r.chunks = chunks;
		if (rep == 0 || r.cpu < best.cpu)
			best = r;
	}
	wave_pipeline_worker_exit();

	double k = 1e3 / best.chunks;
	double stages[7] = { best.read * k,     best.t.chunk * k, best.t.speed * k,
			     best.t.reverb * k, best.t.noise * k, best.t.features * k,
			     best.t.specaug * k };
	static const char *const names[7] = { "read",  "chunk",    "speed",  "reverb",
					      "noise", "features", "specaug" };
	double cps = best.chunks / best.cpu;
	if (json) {
		printf("{\"aug\": %d, \"chunks\": %u, \"repeats\": %u", aug, best.chunks, repeats);
		for (int s = 0; s < 7; s++)
			printf(", \"%s_ms\": %.4f", names[s], stages[s]);
		printf(", \"wall_ms\": %.4f, \"cpu_ms\": %.4f, \"chunks_per_s_core\": %.1f, "
		       "\"skipped\": %u}\n",
		       best.wall * k, best.cpu * k, cps, skipped);
	} else {
		printf("wave pipeline, 1 thread, %s, %u chunks of 200 frames (best of %u runs)\n",
		       aug ? "augmented (speed 0.5, reverb 0.6, noise 0.6, specaug 0.6, dither 1)"
			   : "no augmentation",
		       best.chunks, repeats);
		for (int s = 0; s < 7; s++)
			printf("  %-9s %8.3f ms/chunk\n", names[s], stages[s]);
		printf("  %-9s %8.3f ms/chunk CPU (%.3f ms wall): %.1f chunks/s/core\n", "total",
		       best.cpu * k, best.wall * k, cps);
	}
	free(out);
	for (int c2 = 0; c2 < WAVE_CATEGORIES; c2++)
		free(ws.cat[c2]);
	dsstore_close(sp.ds), dsstore_close(ns.ds), dsstore_close(rs.ds);
	free(sp.buf), free(ns.buf), free(rs.buf);
	free(ns.verified);
	free(rs.verified);
	return 0;
}
