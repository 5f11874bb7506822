/* make_seeds.c — write the protocol and dataset-record seeds of the fuzz
 * corpus (tests/fuzz/corpus/protocol/, tests/fuzz/corpus/dsformat/) and
 * the sharded dataset manifests (tests/fuzz/corpus/manifest/).
 *
 * The seeds are encoded by the project's own encoders and checked by its
 * decoders, so every seed is a valid message or record and the fuzzer starts
 * from inputs that reach the field checks instead of the magic test. Run by
 * `tests/fuzz/build.sh seeds` (the files are committed; rerun only when a
 * format changes). */
#include "crc32c.h"
#include "dsformat.h"
#include "manifest.h"
#include "protocol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *outdir;

static int write_file(const char *dir, const char *name, const void *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "make_seeds: cannot write %s\n", path);
		return -1;
	}
	return 0;
}

static int put_msg(const char *name, const struct proto_msg *m)
{
	uint8_t buf[PROTO_MAX_MESSAGE];
	int n = proto_encode(m, buf, sizeof(buf));
	struct proto_msg back;
	char err[256];
	if (n < 0 || proto_decode(buf, (size_t)n, &back, err, sizeof(err)) != 0) {
		fprintf(stderr, "make_seeds: %s is not valid: %s\n", name, n < 0 ? "encode" : err);
		return -1;
	}
	return write_file("protocol", name, buf, (size_t)n);
}

/* A message of the type, every other field 0. */
static struct proto_msg msg(uint32_t type)
{
	struct proto_msg m;
	memset(&m, 0, sizeof(m));
	m.type = type;
	return m;
}

static int protocol_seeds(void)
{
	struct proto_msg m;
	int rc = 0;

	m = msg(PROTO_HELLO);
	m.u.hello = (struct proto_hello){ .pid = 4242, .agent = "libfeeder 0.1.0" };
	rc |= put_msg("hello", &m);

	m = msg(PROTO_WELCOME);
	m.u.welcome = (struct proto_welcome){ .session = 7,
					      .max_streams = 8,
					      .max_slots = 64,
					      .quota = 1ull << 32,
					      .agent = "feederd 0.1.0" };
	rc |= put_msg("welcome", &m);

	m = msg(PROTO_OPEN_STREAM);
	proto_opts_jpeg(&m.u.open.opts, 224, 1);
	m.u.open.tag = 1;
	m.u.open.opts.batch = 32;
	m.u.open.opts.seed = 12345;
	snprintf(m.u.open.opts.dataset, sizeof(m.u.open.opts.dataset), "imagenet-mini");
	rc |= put_msg("open_stream_jpeg_train", &m);
	proto_opts_jpeg(&m.u.open.opts, 64, 0);
	m.u.open.tag = 2;
	m.u.open.opts.batch = 8;
	m.u.open.opts.dtype = FEEDER_DTYPE_U8;
	m.u.open.opts.layout = FEEDER_LAYOUT_NHWC;
	m.u.open.opts.rank = 1;
	m.u.open.opts.world = 2;
	m.u.open.opts.drop_last = 1;
	m.u.open.opts.start_batch = 3;
	snprintf(m.u.open.opts.dataset, sizeof(m.u.open.opts.dataset), "val_set.v2");
	rc |= put_msg("open_stream_jpeg_eval", &m);
	memset(&m.u.open, 0, sizeof(m.u.open));
	m.u.open.tag = 3;
	m.u.open.opts.pipeline = FEEDER_PIPE_FEATURES;
	m.u.open.opts.batch = 64;
	m.u.open.opts.epochs = 10;
	m.u.open.opts.world = 1;
	m.u.open.opts.slots = 4;
	m.u.open.opts.dtype = FEEDER_DTYPE_F32;
	m.u.open.opts.layout = FEEDER_LAYOUT_NCHW;
	m.u.open.opts.on_error = FEEDER_ON_ERROR_FAIL;
	m.u.open.opts.features.chunk_len = 200;
	m.u.open.opts.features.pad = FEEDER_FEAT_PAD_REPEAT;
	m.u.open.opts.features.cmn = FEEDER_FEAT_CMN_SLIDING;
	m.u.open.opts.features.cmn_window = 300;
	m.u.open.opts.features.train = 1;
	snprintf(m.u.open.opts.dataset, sizeof(m.u.open.opts.dataset), "voxceleb");
	rc |= put_msg("open_stream_features", &m);
	m.u.open.opts.placement = FEEDER_PLACEMENT_GPU;
	m.u.open.opts.device_batches = 1;
	m.u.open.opts.names = 1;
	m.u.open.opts.shuffle = 0;
	rc |= put_msg("open_stream_gpu", &m);

	m = msg(PROTO_STREAM_OPENED);
	struct proto_stream_opened *o = &m.u.opened;
	o->tag = 1;
	o->stream = 5;
	o->slots = 4;
	o->batch = 2;
	o->dtype = FEEDER_DTYPE_F32;
	o->layout = FEEDER_LAYOUT_NCHW;
	o->ndim = 4;
	o->shape[0] = 2;
	o->shape[1] = 3;
	o->shape[2] = 8;
	o->shape[3] = 8;
	o->labels_offset = PROTO_SLOT_HEADER;
	o->indices_offset = PROTO_SLOT_HEADER + 8;
	o->tensor_offset = PROTO_TENSOR_ALIGN;
	o->tensor_bytes = 2 * 3 * 8 * 8 * 4;
	o->slot_size = 2 * 4096;
	o->ring_size = PROTO_RING_HEADER + 4 * o->slot_size;
	o->batches = 10;
	o->batches_per_epoch = 10;
	o->samples = 20;
	o->classes = 3;
	rc |= put_msg("stream_opened", &m);
	o->placement = FEEDER_PLACEMENT_GPU;
	o->memory = FEEDER_MEMORY_DEVICE;
	o->device_table = o->ring_size;
	o->ring_size += proto_device_table_size(o->slots, PROTO_TENSOR_ALIGN);
	rc |= put_msg("stream_opened_device", &m);

	m = msg(PROTO_BATCH_READY);
	m.u.ready = (struct proto_batch_ready){ .stream = 5,
						.slot = 3,
						.epoch = 2,
						.batch_index = 9,
						.samples = 2,
						.replacements = 1 };
	rc |= put_msg("batch_ready", &m);

	m = msg(PROTO_RELEASE);
	m.u.release = (struct proto_release){
		.stream = 5, .slot = 3, .wait_us = 120000, .compute_us = 880000
	};
	rc |= put_msg("release", &m);

	m = msg(PROTO_CLOSE_STREAM);
	m.u.close.stream = 5;
	rc |= put_msg("close_stream", &m);

	m = msg(PROTO_STREAM_END);
	m.u.end = (struct proto_stream_end){ .stream = 5, .reason = 1, .batches_sent = 7 };
	rc |= put_msg("stream_end", &m);

	m = msg(PROTO_ERROR);
	m.u.error = (struct proto_error){ .code = -22,
					  .tag = 2,
					  .fatal = 1,
					  .message = "OPEN_STREAM: dataset 'nope' is not served" };
	rc |= put_msg("error", &m);

	m = msg(PROTO_GOODBYE);
	rc |= put_msg("goodbye", &m);

	m = msg(PROTO_STATUS);
	m.u.status.what = PROTO_STATUS_STREAMS;
	rc |= put_msg("status", &m);

	m = msg(PROTO_STATUS_REPLY);
	struct feeder_status *r = &m.u.status_reply;
	r->uptime_ms = 123456;
	r->clients = 2;
	r->streams = 3;
	r->workers = 4;
	r->datasets = 1;
	r->memory_used = 1 << 20;
	r->memory_limit = 1ull << 32;
	r->batches = 100;
	r->samples = 3200;
	r->replacements = 1;
	r->decode_errors = 1;
	r->samples_per_s = 1234.5;
	r->workers_busy = 0.75;
	r->stage_s[FEEDER_STAGE_READ] = 1.5;
	r->stage_s[FEEDER_STAGE_DECODE] = 20.25;
	r->cache_bytes = 3ull << 30;
	r->cache_limit = 4ull << 30;
	r->cache_peak_bytes = 4ull << 30;
	r->cache_hits = 34;
	r->cache_misses = 8;
	r->cache_fetches = 8;
	r->cache_fetched_bytes = 1ull << 30;
	r->cache_retries = 3;
	r->cache_wait_s = 0.42;
	rc |= put_msg("status_reply", &m);

	m = msg(PROTO_DATASET_INFO);
	snprintf(m.u.dataset.name, sizeof(m.u.dataset.name), "speech");
	m.u.dataset.kind = 2;
	m.u.dataset.classes = 10;
	m.u.dataset.samples = 500;
	m.u.dataset.feat_dim = 30;
	m.u.dataset.streams = 1;
	rc |= put_msg("dataset_info", &m);

	m = msg(PROTO_STREAM_INFO);
	struct feeder_stream_status *s = &m.u.stream;
	s->stream = 5;
	s->session = 7;
	s->pid = 4242;
	s->uid = 1000;
	snprintf(s->dataset, sizeof(s->dataset), "imagenet-mini");
	s->pipeline = 1;
	s->batch = 32;
	s->slots = 4;
	s->ready = 2;
	s->epoch = 1;
	s->batches_sent = 10;
	s->batches_total = 40;
	s->samples = 320;
	s->samples_per_s = 900.25;
	s->client_wait_us = 1000;
	s->ring_full_us = 50;
	s->filling = 2;
	s->trainer_reports = 1;
	s->trainer_wait_us = 5000;
	s->trainer_compute_us = 95000;
	s->wait_share_10s = 0.05f;
	s->wait_share_total = 0.05f;
	s->bytes_per_s = 1e8;
	s->stage_s[FEEDER_STAGE_TRANSFORM] = 3.5;
	snprintf(s->settings, sizeof(s->settings),
		 "jpeg 224x224 train, scale 0.08..1 ratio "
		 "0.75..1.33, flip p=0.5, f32 NCHW");
	rc |= put_msg("stream_info", &m);

	m = msg(PROTO_LIST_END);
	m.u.list_end.count = 1;
	rc |= put_msg("list_end", &m);
	return rc;
}

/* The dsformat harness reads a selector byte, then the record. */
static int put_record(const char *name, uint8_t selector, const uint8_t *rec, size_t n)
{
	uint8_t buf[n + 1];
	buf[0] = selector;
	memcpy(buf + 1, rec, n);
	return write_file("dsformat", name, buf, n + 1);
}

static int dsformat_seeds(void)
{
	int rc = 0;
	uint8_t hdr[DSFORMAT_HEADER_SIZE];
	struct dsformat_header h = { .version = DSFORMAT_VERSION,
				     .kind = DSFORMAT_KIND_JPEG,
				     .samples = 1000,
				     .classes = 10 };
	snprintf(h.packer_version, sizeof(h.packer_version), "0.1.0");
	snprintf(h.options, sizeof(h.options), "pack images --resize 256 --jobs 2");
	dsformat_header_encode(&h, hdr);
	rc |= put_record("header_jpeg", 0, hdr, sizeof(hdr));
	h.kind = DSFORMAT_KIND_FEATURES;
	h.feat_dim = 30;
	h.dtype = DSFORMAT_DTYPE_F16;
	snprintf(h.options, sizeof(h.options), "pack audio --features mfcc --num-ceps 30");
	dsformat_header_encode(&h, hdr);
	rc |= put_record("header_features", 0, hdr, sizeof(hdr));

	/* A features sample: 3 frames x 4 dims of float32. */
	uint8_t rec[DSFORMAT_SAMPLE_HDR + 48];
	float mat[12];
	for (int i = 0; i < 12; i++)
		mat[i] = (float)i * 0.25f - 1.0f;
	memcpy(rec + DSFORMAT_SAMPLE_HDR, mat, sizeof(mat));
	struct dsformat_sample s = { .label = 3,
				     .payload_len = sizeof(mat),
				     .crc = crc32c(0, mat, sizeof(mat)),
				     .frames = 3,
				     .dim = 4,
				     .dtype = DSFORMAT_DTYPE_F32 };
	dsformat_sample_encode(&s, rec);
	rc |= put_record("sample_features_f32", 1, rec, sizeof(rec));

	/* A jpeg sample: the payload is opaque to the record reader. */
	static const uint8_t jpeg_start[] = { 0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J',  'F',
					      'I',  'F',  0x00, 0x01, 0x01, 0x00, 0x00, 0x01,
					      0x00, 0x01, 0x00, 0x00, 0xff, 0xd9 };
	uint8_t jrec[DSFORMAT_SAMPLE_HDR + sizeof(jpeg_start)];
	memcpy(jrec + DSFORMAT_SAMPLE_HDR, jpeg_start, sizeof(jpeg_start));
	s = (struct dsformat_sample){ .label = 7,
				      .payload_len = sizeof(jpeg_start),
				      .crc = crc32c(0, jpeg_start, sizeof(jpeg_start)) };
	dsformat_sample_encode(&s, jrec);
	rc |= put_record("sample_jpeg", 1, jrec, sizeof(jrec));
	return rc;
}

/* Manifests as packer writes them: three shards, and one empty shard of
 * a dataset of no samples. */
static int manifest_seeds(void)
{
	struct manifest_shard sh[3] = {
		{ "shard-00000.mdb", 0, 400, 1u << 20, 0x8a9136aau },
		{ "shard-00001.mdb", 400, 380, 1048576 + 8192, 0x00000001u },
		{ "shard-00002.mdb", 780, 220, 655360, 0xffffffffu },
	};
	struct manifest m = { .header = { .version = DSFORMAT_VERSION,
					  .kind = DSFORMAT_KIND_JPEG,
					  .samples = 1000,
					  .classes = 10,
					  .source_bytes = 2000000,
					  .tiled = 990 },
			      .nshards = 3,
			      .shards = sh };
	snprintf(m.header.packer_version, sizeof(m.header.packer_version), "packer 0.1.0");
	snprintf(m.header.options, sizeof(m.header.options), "--shard-size 1M src dest");
	char err[256], *text;
	size_t len;
	int rc = 0;
	if (manifest_encode(&m, &text, &len, err, sizeof(err)) != 0) {
		fprintf(stderr, "make_seeds: manifest: %s\n", err);
		return -1;
	}
	rc |= write_file("manifest", "three_shards", text, len);
	free(text);
	struct manifest_shard one = { "data.mdb", 0, 0, 16384, 0x12345678u };
	m.header.samples = 0;
	m.header.tiled = 0;
	m.nshards = 1;
	m.shards = &one;
	if (manifest_encode(&m, &text, &len, err, sizeof(err)) != 0) {
		fprintf(stderr, "make_seeds: manifest: %s\n", err);
		return -1;
	}
	rc |= write_file("manifest", "empty_dataset", text, len);
	free(text);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds CORPUS_DIR\n");
		return 2;
	}
	outdir = argv[1];
	return protocol_seeds() || dsformat_seeds() || manifest_seeds() ? 1 : 0;
}
