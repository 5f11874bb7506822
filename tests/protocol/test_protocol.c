/* test_protocol.c — proto/protocol.c: every message survives encode/decode
 * unchanged, and every kind of malformed message is rejected with the right
 * code (wrong magic, version, type, lengths, enums, strings, ranges). */
#include "check.h"
#include "protocol.h"
#include "bytes.h"
#include "status.h"

#include <math.h>
#include <string.h>

static uint8_t buf[PROTO_MAX_MESSAGE + 64];
static char err[256];

static struct proto_msg open_msg(void)
{
	struct proto_msg m = { .type = PROTO_OPEN_STREAM };
	proto_opts_jpeg(&m.u.open.opts, 224, 1);
	strcpy(m.u.open.opts.dataset, "imagenet-val_1.0");
	m.u.open.tag = 7;
	m.u.open.opts.batch = 32;
	m.u.open.opts.seed = 0x123456789abcdefull;
	m.u.open.opts.epoch = 3;
	m.u.open.opts.epochs = 2;
	m.u.open.opts.rank = 1;
	m.u.open.opts.world = 4;
	m.u.open.opts.start_batch = 5;
	m.u.open.opts.drop_last = 1;
	m.u.open.opts.dtype = FEEDER_DTYPE_F16;
	m.u.open.opts.layout = FEEDER_LAYOUT_NHWC;
	m.u.open.opts.on_error = FEEDER_ON_ERROR_FAIL;
	return m;
}

/* The features twin of open_msg. */
static struct proto_msg features_msg(void)
{
	struct proto_msg m = open_msg();
	memset(&m.u.open.opts.jpeg, 0, sizeof(m.u.open.opts.jpeg));
	m.u.open.opts.pipeline = FEEDER_PIPE_FEATURES;
	m.u.open.opts.dtype = FEEDER_DTYPE_F32;
	m.u.open.opts.layout = FEEDER_LAYOUT_NCHW;
	m.u.open.opts.features = (struct feeder_features_opts){ .chunk_len = 200,
								.pad = FEEDER_FEAT_PAD_SKIP,
								.cmn = FEEDER_FEAT_CMN_SLIDING,
								.cmn_window = 300,
								.cvn = 1,
								.train = 1 };
	return m;
}

/* With open_msg and features_msg, every type with every field set to a
 * distinct non-zero value that also passes validation. */
static const struct proto_msg samples[] = {
	{ .type = PROTO_HELLO, .u.hello = { .pid = 4242, .agent = "libfeeder 0.1.0" } },
	{ .type = PROTO_WELCOME,
	  .u.welcome = { .session = 9,
			 .max_streams = 8,
			 .max_slots = 16,
			 .quota = 1ull << 33,
			 .agent = "feederd 0.1.0" } },
	{ .type = PROTO_STREAM_OPENED,
	  .u.opened = { .tag = 7,
			.stream = 3,
			.slots = 4,
			.batch = 32,
			.slot_size = 1 << 20,
			.ring_size = PROTO_RING_HEADER + 4 * (1 << 20),
			.batches = 100,
			.batches_per_epoch = 50,
			.samples = 1601,
			.classes = 10,
			.dtype = FEEDER_DTYPE_F16,
			.layout = FEEDER_LAYOUT_NCHW,
			.ndim = 4,
			.shape = { 32, 3, 64, 64 },
			.labels_offset = 64,
			.indices_offset = 192,
			.tensor_offset = 4096,
			.tensor_bytes = 32 * 3 * 64 * 64 * 2 } },
	{ .type = PROTO_BATCH_READY,
	  .u.ready = { .stream = 3,
		       .slot = 2,
		       .epoch = 5,
		       .batch_index = 1ull << 40,
		       .samples = 31,
		       .replacements = 2 } },
	{ .type = PROTO_RELEASE, .u.release = { .stream = 3, .slot = 2 } },
	{ .type = PROTO_CLOSE_STREAM, .u.close.stream = 77 },
	{ .type = PROTO_STREAM_END, .u.end = { .stream = 3, .reason = 1, .batches_sent = 99 } },
	{ .type = PROTO_ERROR,
	  .u.error = { .code = FEEDER_ENODATASET,
		       .tag = 7,
		       .fatal = 1,
		       .message = "no dataset named 'x' in /srv/datasets" } },
	{ .type = PROTO_GOODBYE, .u.goodbye.reason = 0 },
	{ .type = PROTO_STATUS, .u.status.what = PROTO_STATUS_STREAMS },
	{ .type = PROTO_STATUS_REPLY,
	  .u.status_reply = { .uptime_ms = 123456,
			      .clients = 2,
			      .streams = 3,
			      .workers = 4,
			      .datasets = 5,
			      .memory_used = 6,
			      .memory_limit = 7,
			      .batches = 8,
			      .samples = 9,
			      .replacements = 10,
			      .decode_errors = 11,
			      .protocol_errors = 12,
			      .samples_per_s = 1234.5,
			      .cache_bytes = 3ull << 30,
			      .cache_limit = 1ull << 34,
			      .cache_peak_bytes = (3ull << 30) + 13,
			      .cache_hits = 14,
			      .cache_misses = 15,
			      .cache_fetches = 16,
			      .cache_fetched_bytes = (1ull << 40) + 17,
			      .cache_retries = 18,
			      .cache_failures = 19,
			      .cache_wait_s = 20.125 } },
	{ .type = PROTO_DATASET_INFO,
	  .u.dataset = { .name = "imagenet",
			 .kind = 1,
			 .classes = 1000,
			 .samples = 1281167,
			 .streams = 2 } },
	{ .type = PROTO_STREAM_INFO,
	  .u.stream = { .stream = 3,
			.session = 9,
			.pid = 100,
			.uid = 1000,
			.pipeline = 1,
			.batch = 32,
			.slots = 4,
			.ready = 2,
			.epoch = 1,
			.batches_sent = 10,
			.batches_total = 20,
			.samples = 320,
			.replacements = 1,
			.samples_per_s = 999.25,
			.client_wait_us = 55,
			.ring_full_us = 66,
			.dataset = "imagenet",
			.settings =
				"wave fbank 80, chunk 200 train, cmn utt, noise=musan p=0.6 "
				"snr 0..15/5..15/13..20 babble 3..7, rir=rirs p=0.6, speed "
				"p=0.5 labels=new, gain off, specaug p=0.6 t1x10 f1x8, dither 1, "
				"f32" } },
	{ .type = PROTO_LIST_END, .u.list_end.count = 3 },
};
#define N_SAMPLES (sizeof(samples) / sizeof(samples[0]))

/* The sample of a type other than OPEN_STREAM. */
static struct proto_msg sample(int type)
{
	for (size_t i = 0; i < N_SAMPLES; i++)
		if (samples[i].type == type)
			return samples[i];
	CHECKF(0, "no sample of type %d", type);
}

static int enc(const struct proto_msg *m)
{
	int n = proto_encode(m, buf, sizeof(buf));
	CHECKF(n > 0, "encode of %s failed", proto_type_name(m->type));
	return n;
}

static void expect(int got, int want, const char *what)
{
	CHECKF(got == want, "%s: got %d (%s), want %d; err '%s'", what, got, status_str(got), want,
	       err);
	CHECKF(want == 0 || strlen(err) > 10, "%s: no sentence in err", what);
}

/* The last message proto_decode returned. */
static struct proto_msg decoded;

/* Decoding the first n bytes of buf gives want (0 or the error code), and
 * an error a sentence in err naming says (unless NULL). */
static void expect_bytes(size_t n, int want, const char *says, const char *what)
{
	err[0] = 0;
	expect(proto_decode(buf, n, &decoded, err, sizeof(err)), want, what);
	CHECKF(!says || strstr(err, says), "%s: '%s' does not name %s", what, err, says);
}

/* m, encoded and then decoded, gives want. */
static void expect_msg(struct proto_msg m, int want, const char *what)
{
	expect_bytes((size_t)enc(&m), want, NULL, what);
}

/* An OPEN_STREAM whose options are out of range is well formed (it decodes)
 * but proto_opts_check refuses it with FEEDER_EINVAL and a sentence naming
 * the field; want 0: the options pass. */
static void expect_opts(struct proto_msg m, int want, const char *field, const char *what)
{
	expect_msg(m, 0, what);
	err[0] = 0;
	int rc = proto_opts_check(&m.u.open.opts, err, sizeof(err));
	expect(rc, want, what);
	CHECKF(!want || !field || strstr(err, field), "%s: '%s' does not name %s", what, err,
	       field);
}

static void test_round_trips(void)
{
	struct proto_msg msgs[N_SAMPLES + 2] = { open_msg(), features_msg() };
	memcpy(msgs + 2, samples, sizeof(samples));
	int seen[PROTO_TYPE_MAX + 1] = { 0 };
	for (size_t i = 0; i < N_SAMPLES + 2; i++) {
		int n = enc(&msgs[i]);
		CHECK((size_t)n == PROTO_HEADER_SIZE + proto_payload_len(msgs[i].type));
		CHECK(n <= PROTO_MAX_MESSAGE);
		CHECK(bytes_le32(buf) == PROTO_MAGIC);
		CHECK(bytes_le16(buf + 6) == msgs[i].type);
		struct proto_msg d;
		int rc = proto_decode(buf, (size_t)n, &d, err, sizeof(err));
		CHECKF(rc == 0, "%s: %s", proto_type_name(msgs[i].type), err);
		CHECKF(memcmp(&d, &msgs[i], sizeof(d)) == 0, "%s does not round-trip",
		       proto_type_name(msgs[i].type));
		/* Re-encoding the decoded message gives the same bytes. */
		uint8_t again[PROTO_MAX_MESSAGE];
		CHECK(proto_encode(&d, again, sizeof(again)) == n);
		CHECK(memcmp(again, buf, (size_t)n) == 0);
		seen[msgs[i].type] = 1;
	}
	for (int t = 1; t <= PROTO_TYPE_MAX; t++)
		CHECKF(seen[t], "type %d (%s) has no round-trip case", t, proto_type_name(t));
	/* Float bit patterns survive exactly. */
	struct proto_msg m = open_msg();
	m.u.open.opts.jpeg.mean[1] = 0.1f + 1e-7f;
	expect_msg(m, 0, "a float");
	CHECK(memcmp(&decoded.u.open.opts.jpeg.mean[1], &m.u.open.opts.jpeg.mean[1], 4) == 0);
}

static void test_header_errors(void)
{
	struct proto_msg m = open_msg();
	size_t n = (size_t)enc(&m);
	uint8_t save[PROTO_MAX_MESSAGE];
	memcpy(save, buf, n);
	/* A header field set to value: the bytes at offset 0 (magic), 4
	 * (version), 6 (type), 8 (payload length) and 12 (reserved). */
	const struct {
		unsigned at;
		uint32_t value;
		int want;
		const char *says, *what;
	} fields[] = {
		{ 0, 0x12345678, FEEDER_EPROTO, "magic", "wrong magic" },
		{ 4, PROTO_VERSION + 1, FEEDER_EVERSION, "version", "wrong version" },
		{ 6, 0, FEEDER_EPROTO, NULL, "type 0" },
		{ 6, PROTO_TYPE_MAX + 1, FEEDER_EPROTO, "unknown", "unknown type" },
		{ 6, 0xffff, FEEDER_EPROTO, NULL, "type 0xffff" },
		/* A length that disagrees with the type, or with what arrived. */
		{ 8, bytes_le32(save + 8) + 1, FEEDER_EPROTO, NULL, "length field +1" },
		{ 8, 0xffffffffu, FEEDER_EPROTO, NULL, "length field huge" },
		{ 12, 1, FEEDER_EPROTO, NULL, "reserved header" },
	};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		memcpy(buf, save, n);
		if (fields[i].at == 4 || fields[i].at == 6)
			bytes_put_le16(buf + fields[i].at, (uint16_t)fields[i].value);
		else
			bytes_put_le32(buf + fields[i].at, fields[i].value);
		expect_bytes(n, fields[i].want, fields[i].says, fields[i].what);
	}
	memcpy(buf, save, n);

	/* Truncated anywhere, or with bytes appended. */
	for (size_t cut = 0; cut < n; cut++) {
		err[0] = 0;
		int rc = proto_decode(buf, cut, &decoded, err, sizeof(err));
		CHECKF(rc == FEEDER_EPROTO, "truncated to %zu bytes: got %d", cut, rc);
	}
	memset(buf + n, 0, 8);
	expect_bytes(n + 1, FEEDER_EPROTO, NULL, "one byte extra");
	expect_bytes(PROTO_MAX_MESSAGE + 1, FEEDER_EPROTO, "larger", "oversized");
	expect_bytes(n, 0, NULL, "the original");

	/* Every type's payload length is below the limit. */
	for (int t = 1; t <= PROTO_TYPE_MAX; t++)
		CHECK(proto_payload_len(t) > 0 &&
		      proto_payload_len(t) + PROTO_HEADER_SIZE <= PROTO_MAX_MESSAGE);
	CHECK(proto_payload_len(0) == 0 && proto_payload_len(PROTO_TYPE_MAX + 1) == 0);
	/* Encode refuses a buffer that is too small and an unknown type. */
	CHECK(proto_encode(&m, buf, 20) == FEEDER_EINVAL);
	m.type = 99;
	CHECK(proto_encode(&m, buf, sizeof(buf)) == FEEDER_EINVAL);
}

static void test_strings(void)
{
	struct proto_msg m = open_msg();
	size_t n = (size_t)enc(&m);
	/* The dataset field follows the header and the tag. */
	uint8_t *name = buf + PROTO_HEADER_SIZE + 4;
	CHECK(memcmp(name, "imagenet-val_1.0", 17) == 0);
	uint8_t save[PROTO_MAX_MESSAGE];
	memcpy(save, buf, n);

	memset(name, 'a', FEEDER_DATASET_MAX); /* no NUL at all */
	expect_bytes(n, FEEDER_EPROTO, "dataset", "name without NUL");
	memcpy(buf, save, n);
	name[40] = 'x'; /* a hidden byte after the NUL */
	expect_bytes(n, FEEDER_EPROTO, NULL, "junk after NUL");

	const char *bad[] = {
		"", "../etc", "..", ".", ".hidden", "a/b", "a b", "x\xc3\xa9", "a\\b"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = open_msg();
		strcpy(m.u.open.opts.dataset, bad[i]);
		expect_msg(m, FEEDER_EBADNAME, bad[i]);
	}
	m = open_msg();
	memset(m.u.open.opts.dataset, 'a', FEEDER_DATASET_MAX - 1);
	m.u.open.opts.dataset[FEEDER_DATASET_MAX - 1] = 0;
	expect_msg(m, 0, "63-character name");
	CHECK(proto_name_check("a..b", err, sizeof(err)) == 0);
	char longname[FEEDER_DATASET_MAX + 1];
	memset(longname, 'b', FEEDER_DATASET_MAX);
	longname[FEEDER_DATASET_MAX] = 0;
	CHECK(proto_name_check(longname, err, sizeof(err)) == FEEDER_EBADNAME);

	/* STREAM_INFO's settings line: terminated, then zeros, printable. */
	struct proto_msg si = sample(PROTO_STREAM_INFO);
	n = (size_t)enc(&si);
	/* The settings field ends the payload. */
	uint8_t *set = buf + n - FEEDER_SETTINGS_MAX;
	CHECK(memcmp(set, "wave fbank 80,", 14) == 0);
	memcpy(save, buf, n);
	expect_bytes(n, 0, NULL, "stream info");
	CHECK(strcmp(decoded.u.stream.settings, si.u.stream.settings) == 0);
	memset(set, 'a', FEEDER_SETTINGS_MAX);
	expect_bytes(n, FEEDER_EPROTO, "settings", "settings without NUL");
	memcpy(buf, save, n);
	set[FEEDER_SETTINGS_MAX - 2] = 'x';
	expect_bytes(n, FEEDER_EPROTO, NULL, "settings junk after NUL");
	memcpy(buf, save, n);
	set[4] = '\n';
	expect_bytes(n, FEEDER_EPROTO, "settings", "settings newline");
	set[4] = (char)0xc3;
	expect_bytes(n, FEEDER_EPROTO, NULL, "settings non-ASCII");
	si.u.stream.settings[0] = 0; /* an empty line is allowed */
	expect_msg(si, 0, "empty settings");

	/* ERROR's message must be terminated too. */
	struct proto_msg e = { .type = PROTO_ERROR };
	e.u.error.code = FEEDER_EPROTO;
	strcpy(e.u.error.message, "x");
	n = (size_t)enc(&e);
	memset(buf + PROTO_HEADER_SIZE + 16, 'z', PROTO_TEXT_MAX);
	expect_bytes(n, FEEDER_EPROTO, NULL, "unterminated message");
}
static void test_open_fields(void)
{
	/* base with stmt (on its options, o) is refused, naming field. */
	struct proto_msg m, jpeg = open_msg(), wave = open_msg(), feat = features_msg();
#define BAD(base, field, stmt)                                                                     \
	do {                                                                                       \
		m = base;                                                                          \
		struct feeder_stream_opts *o = &m.u.open.opts;                                     \
		stmt;                                                                              \
		expect_opts(m, FEEDER_EINVAL, field, #stmt);                                       \
	} while (0)
	BAD(jpeg, "pipeline", o->pipeline = 0);
	BAD(jpeg, "pipeline", o->pipeline = 4);
	BAD(jpeg, "batch", o->batch = 0);
	BAD(jpeg, "batch", o->batch = FEEDER_MAX_BATCH + 1);
	BAD(jpeg, "epochs", o->epochs = 0);
	BAD(jpeg, "epoch", o->epoch = UINT64_MAX);
	BAD(jpeg, "world", o->world = 0);
	BAD(jpeg, "rank", o->rank = 4);
	BAD(jpeg, "world", o->world = FEEDER_MAX_WORLD + 1);
	BAD(jpeg, "drop_last", o->drop_last = 2);
	BAD(jpeg, "shuffle", o->shuffle = 2);
	BAD(jpeg, "names", o->names = 7);
	BAD(jpeg, "slots", o->slots = 0);
	BAD(jpeg, "slots", o->slots = FEEDER_MAX_SLOTS + 1);
	BAD(jpeg, "dtype", o->dtype = 0);
	BAD(jpeg, "dtype", o->dtype = 4);
	BAD(jpeg, "layout", o->layout = 0);
	BAD(jpeg, "layout", o->layout = 3);
	BAD(jpeg, "on_error", o->on_error = 2);
	BAD(jpeg, "placement", o->placement = 3);
	BAD(jpeg, "device_batches", o->device_batches = 2);
	BAD(jpeg, "jpeg.height", o->jpeg.height = 0);
	BAD(jpeg, "jpeg.width", o->jpeg.width = FEEDER_MAX_SIDE + 1);
	BAD(jpeg, "jpeg.train", o->jpeg.train = 2);
	BAD(jpeg, "jpeg.scale_min", o->jpeg.scale_min = 0);
	BAD(jpeg, "jpeg.scale_max", o->jpeg.scale_max = 1.5f);
	BAD(jpeg, "jpeg.scale_min", o->jpeg.scale_min = 0.9f; o->jpeg.scale_max = 0.5f);
	BAD(jpeg, "jpeg.ratio_min", o->jpeg.ratio_min = -1);
	BAD(jpeg, "jpeg.ratio_max", o->jpeg.ratio_max = NAN);
	BAD(jpeg, "jpeg.flip_p", o->jpeg.flip_p = 1.01f);
	BAD(jpeg, "jpeg.resize_ratio", o->jpeg.resize_ratio = 0.5f);
	BAD(jpeg, "jpeg.mean[2]", o->jpeg.mean[2] = INFINITY);
	BAD(jpeg, "jpeg.std[0]", o->jpeg.std[0] = 0);
	/* wave streams: ranges, and the relations proto_opts_check adds. */
	wave.u.open.opts.pipeline = FEEDER_PIPE_WAVE;
	wave.u.open.opts.layout = FEEDER_LAYOUT_NCHW;
	wave.u.open.opts.dtype = FEEDER_DTYPE_F32;
	BAD(wave, "wave.chunk_len", o->wave.chunk_len = FEEDER_MAX_WAVE_CHUNK + 1);
	BAD(wave, "wave.features", o->wave.features = 3);
	BAD(wave, "wave.bins", o->wave.bins = 2);
	BAD(wave, "wave.bins", o->wave.bins = FEEDER_MAX_WAVE_BINS + 1);
	BAD(wave, "wave.ceps", o->wave.features = FEEDER_WAVE_MFCC; o->wave.bins = 20;
	    o->wave.ceps = 21);
	BAD(wave, "wave.noise_p", o->wave.noise_p = 1.5f);
	BAD(wave, "wave.noise", o->wave.noise_p = 0.5f);
	BAD(wave, "wave.rir", o->wave.reverb_p = 0.5f);
	BAD(wave, "wave.snr_music_min", o->wave.snr_music_min = 20);
	BAD(wave, "wave.babble_min", o->wave.babble_min = 8);
	BAD(wave, "wave.gain_min_db", o->wave.gain_min_db = 7);
	BAD(wave, "wave.speed_labels", o->wave.speed_labels = 2);
	BAD(wave, "wave.dither", o->wave.dither = NAN);
	BAD(wave, "wave.cvn", o->wave.cvn = 1; o->wave.cmn = FEEDER_FEAT_CMN_NONE);
	BAD(wave, "u8", o->dtype = FEEDER_DTYPE_U8);
	/* The other pipeline's options are not read, so not checked. */
	m = open_msg();
	m.u.open.opts.features.chunk_len = 0;
	expect_opts(m, 0, NULL, "jpeg stream with features.chunk_len 0");
	/* The defaults pass, and are the documented ones. */
	struct feeder_stream_opts d;
	proto_opts_default(&d);
	CHECK(proto_opts_check(&d, err, sizeof(err)) == 0);
	CHECK(d.pipeline == FEEDER_PIPE_JPEG && d.batch == 32 && d.epochs == 1 && d.world == 1 &&
	      d.slots == 4 && d.shuffle == 1 && d.dtype == FEEDER_DTYPE_F32 && d.names == 0 &&
	      d.layout == FEEDER_LAYOUT_NCHW && d.jpeg.height == 224 && d.jpeg.width == 224 &&
	      d.jpeg.train == 1 && fabsf(d.jpeg.scale_min - 0.08f) < 1e-7f &&
	      fabsf(d.jpeg.std[2] - 0.225f) < 1e-7f && d.features.chunk_len == 200 &&
	      d.features.cmn == FEEDER_FEAT_CMN_SLIDING && d.features.cmn_window == 300 &&
	      d.features.pad == FEEDER_FEAT_PAD_REPEAT && d.dataset[0] == 0);
	/* features streams */
	BAD(feat, "u8", o->dtype = FEEDER_DTYPE_U8);
	BAD(feat, "layout", o->layout = FEEDER_LAYOUT_NHWC);
	BAD(feat, "features.chunk_len", o->features.chunk_len = 0);
	BAD(feat, "features.chunk_len", o->features.chunk_len = FEEDER_MAX_CHUNK + 1);
	BAD(feat, "features.pad", o->features.pad = 0);
	BAD(feat, "features.pad", o->features.pad = 3);
	BAD(feat, "features.cmn", o->features.cmn = 3);
	BAD(feat, "features.cmn_window", o->features.cmn_window = 0);
	BAD(feat, "features.cvn", o->features.cvn = 2);
	BAD(feat, "features.cvn", o->features.cmn = FEEDER_FEAT_CMN_NONE);
	m = feat;
	m.u.open.opts.jpeg.height = 0;
	expect_opts(m, 0, NULL, "features stream with jpeg.height 0");
	expect_opts(feat, 0, NULL, "features stream");
}

static void test_other_fields(void)
{
	const struct {
		struct proto_msg m;
		const char *what;
	} bad[] = {
		{ { .type = PROTO_STATUS, .u.status.what = 4 }, "status what 4" },
		{ { .type = PROTO_STATUS, .u.status.what = 0 }, "status what 0" },
		{ { .type = PROTO_RELEASE }, "release stream 0" },
		{ { .type = PROTO_BATCH_READY,
		    .u.ready = { .stream = 1, .samples = 2, .replacements = 3 } },
		  "replacements > samples" },
		{ { .type = PROTO_ERROR, .u.error.code = 5 }, "positive error code" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_msg(bad[i].m, FEEDER_EPROTO, bad[i].what);

	/* STREAM_OPENED's geometry must hold together. */
	const struct proto_msg opened = sample(PROTO_STREAM_OPENED);
	struct proto_msg m;
#define BAD_OPENED(base, stmt, what)                                                               \
	do {                                                                                       \
		m = base;                                                                          \
		stmt;                                                                              \
		expect_msg(m, FEEDER_EPROTO, what);                                                \
	} while (0)
	BAD_OPENED(opened, m.u.opened.ring_size += 4096, "ring size mismatch");
	BAD_OPENED(opened, m.u.opened.tensor_offset = 100, "unaligned tensor");
	BAD_OPENED(opened, m.u.opened.tensor_bytes = m.u.opened.slot_size, "tensor past slot");
	/* A device ring: the device table follows the slots, page aligned. */
	struct proto_msg dev = opened;
	dev.u.opened.memory = FEEDER_MEMORY_DEVICE;
	dev.u.opened.placement = FEEDER_PLACEMENT_GPU;
	dev.u.opened.device_table = dev.u.opened.ring_size;
	dev.u.opened.ring_size += proto_device_table_size(4, PROTO_TENSOR_ALIGN);
	CHECK(proto_device_table_size(4, 4096) == 4096 &&
	      proto_device_table_size(32, 4096) == 8192);
	expect_msg(dev, 0, "device ring");
	CHECK(decoded.u.opened.memory == FEEDER_MEMORY_DEVICE &&
	      decoded.u.opened.device_table == dev.u.opened.device_table);
	BAD_OPENED(dev, m.u.opened.device_table -= 4096, "table over slots");
	BAD_OPENED(dev, m.u.opened.ring_size -= 4096, "short table");
	BAD_OPENED(dev, m.u.opened.memory = FEEDER_MEMORY_HOST, "host ring, table");
	BAD_OPENED(dev, m.u.opened.memory = 2, "memory kind 2");

	CHECK(proto_type_from_client(PROTO_HELLO) && proto_type_from_client(PROTO_RELEASE));
	CHECK(!proto_type_from_client(PROTO_BATCH_READY) && !proto_type_from_client(0));
	CHECK(strcmp(proto_type_name(PROTO_STREAM_INFO), "STREAM_INFO") == 0);
	CHECK(strcmp(proto_type_name(1000), "?") == 0);
}

static void test_geometry(void)
{
	struct proto_msg m = open_msg();
	struct proto_geometry g;
	m.u.open.opts.batch = 3;
	m.u.open.opts.slots = 2;
	m.u.open.opts.jpeg.height = 5;
	m.u.open.opts.jpeg.width = 7;
	CHECK(proto_geometry(&m.u.open.opts, 0, 4096, &g, err, sizeof(err)) == 0);
	CHECK(g.shape[0] == 3 && g.shape[1] == 5 && g.shape[2] == 7 && g.shape[3] == 3); /* NHWC */
	CHECK(g.sample_bytes == 5 * 7 * 3 * 2);
	CHECK(g.tensor_bytes == 3 * g.sample_bytes);
	CHECK(g.labels_offset == PROTO_SLOT_HEADER && g.tensor_offset == 4096);
	CHECK(g.indices_offset == PROTO_SLOT_HEADER + 16 && g.names_offset == 0);
	CHECK(g.slot_size == 8192 && g.ring_size == PROTO_RING_HEADER + 2 * 8192);
	m.u.open.opts.layout = FEEDER_LAYOUT_NCHW;
	m.u.open.opts.batch = 2000; /* labels and indices push the tensor pages further */
	CHECK(proto_geometry(&m.u.open.opts, 0, 4096, &g, err, sizeof(err)) == 0);
	CHECK(g.shape[1] == 3 && g.shape[2] == 5 && g.shape[3] == 7);
	CHECK(g.indices_offset == 64 + 8000 && g.tensor_offset == 24576 && g.slot_size % 4096 == 0);
	CHECK(g.slot_size >= g.tensor_offset + g.tensor_bytes);
	/* Names: a field of FEEDER_SAMPLE_NAME_MAX bytes per sample after the
	 * indices, before the tensor. */
	m.u.open.opts.batch = 3;
	m.u.open.opts.names = 1;
	CHECK(proto_geometry(&m.u.open.opts, 0, 4096, &g, err, sizeof(err)) == 0);
	CHECK(g.names_offset == g.indices_offset + 24 &&
	      g.names_offset + 3 * FEEDER_SAMPLE_NAME_MAX <= g.tensor_offset);
	CHECK(sizeof(struct proto_slot_header) <= PROTO_SLOT_HEADER);
	CHECK(sizeof(struct proto_ring_header) <= PROTO_RING_HEADER);
}

/* proto_opts_describe: the line feederctl and the daemon's log show. */
static char line[FEEDER_SETTINGS_MAX];

/* o's line is want. */
static void expect_line(const struct feeder_stream_opts *o, const char *want)
{
	proto_opts_describe(o, line, sizeof line);
	CHECKF(strcmp(line, want) == 0, "got '%s', want '%s'", line, want);
}

static void test_describe(void)
{
	struct feeder_stream_opts o;
	proto_opts_jpeg(&o, 224, 1);
	expect_line(&o, "jpeg 224x224 train, scale 0.08..1 ratio 0.75..1.33, flip p=0.5, f32 NCHW");
	proto_opts_jpeg(&o, 160, 0);
	o.dtype = FEEDER_DTYPE_U8;
	o.layout = FEEDER_LAYOUT_NHWC;
	expect_line(&o, "jpeg 160x160 eval, resize 1.14 + center crop, u8 NHWC");
	proto_opts_features(&o, 300, 1);
	o.features.cvn = 1;
	expect_line(&o, "features chunk 300 train, pad repeat, cmn sliding 300+cvn, f32");

	proto_opts_default(&o);
	o.pipeline = FEEDER_PIPE_WAVE;
	expect_line(&o, "wave fbank 80, chunk 200 train, cmn utt, noise off, rir off, speed off, "
			"gain off, specaug off, dither off, f32");
	struct feeder_wave_opts *w = &o.wave;
	strcpy(w->noise, "musan");
	w->noise_p = 0.6f;
	strcpy(w->rir, "rirs");
	w->reverb_p = 0.6f;
	w->speed_p = 0.5f;
	w->speed_labels = FEEDER_SPEED_NEW;
	w->gain_p = 0.25f;
	w->specaug_p = 0.6f;
	w->dither = 1;
	o.dtype = FEEDER_DTYPE_F16;
	CHECK(proto_opts_check(&o, err, sizeof err) == 0);
	expect_line(&o, "wave fbank 80, chunk 200 train, cmn utt, noise=musan p=0.6 snr "
			"0..15/5..15/13..20 babble 3..7, rir=rirs p=0.6, speed p=0.5 labels=new, "
			"gain p=0.25 -6..6 dB, specaug p=0.6 t1x10 f1x8, dither 1, f16");
	/* Eval applies none of it, and says so. */
	w->train = 0;
	w->features = FEEDER_WAVE_MFCC;
	w->cmn = FEEDER_FEAT_CMN_NONE;
	expect_line(&o,
		    "wave mfcc 30 ceps 80 bins, chunk 200 eval, cmn none, no augmentation, f16");
	/* Long names: cut, ending in "...", and still a terminated string;
	 * a short buffer too. */
	w->train = 1;
	memset(w->noise, 'n', FEEDER_DATASET_MAX - 1);
	memset(w->rir, 'r', FEEDER_DATASET_MAX - 1);
	w->snr_noise_min = -12.5f;
	proto_opts_describe(&o, line, sizeof line);
	CHECKF(strlen(line) == sizeof line - 1 && strcmp(line + sizeof line - 4, "...") == 0,
	       "cut: '%s'", line);
	CHECK(strstr(line, " snr -12.5..15/"));
	char small[12];
	proto_opts_describe(&o, small, sizeof small);
	CHECKF(strcmp(small, "wave mfc...") == 0, "small: '%s'", small);
	/* Whatever the names hold, the line is printable ASCII. */
	strcpy(w->noise, "a\nb\xc3\xa9");
	proto_opts_describe(&o, line, sizeof line);
	CHECKF(strstr(line, "noise=a?b?? p=0.6"), "non-printable: '%s'", line);
	o.pipeline = 7;
	expect_line(&o, "pipeline 7");
}

int main(void)
{
	test_round_trips();
	test_header_errors();
	test_strings();
	test_open_fields();
	test_other_fields();
	test_geometry();
	test_describe();
	return 0;
}
