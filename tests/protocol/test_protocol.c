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

/* Every type with every field set to a distinct non-zero value that also
 * passes validation. */
static int sample_msgs(struct proto_msg *out)
{
	int n = 0;
	struct proto_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_HELLO;
	m.u.hello.pid = 4242;
	strcpy(m.u.hello.agent, "libfeeder 0.1.0");
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_WELCOME;
	m.u.welcome = (struct proto_welcome){
		.session = 9, .max_streams = 8, .max_slots = 16, .quota = 1ull << 33
	};
	strcpy(m.u.welcome.agent, "feederd 0.1.0");
	out[n++] = m;

	out[n++] = open_msg();

	memset(&m, 0, sizeof(m));
	m.type = PROTO_OPEN_STREAM;
	m.u.open = open_msg().u.open;
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
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_STREAM_OPENED;
	m.u.opened = (struct proto_stream_opened){ .tag = 7,
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
						   .tensor_bytes = 32 * 3 * 64 * 64 * 2 };
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_BATCH_READY;
	m.u.ready = (struct proto_batch_ready){ .stream = 3,
						.slot = 2,
						.epoch = 5,
						.batch_index = 1ull << 40,
						.samples = 31,
						.replacements = 2 };
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_RELEASE;
	m.u.release = (struct proto_release){ .stream = 3, .slot = 2 };
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_CLOSE_STREAM;
	m.u.close.stream = 77;
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_STREAM_END;
	m.u.end = (struct proto_stream_end){ .stream = 3, .reason = 1, .batches_sent = 99 };
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_ERROR;
	m.u.error = (struct proto_error){
		.code = FEEDER_ENODATASET, .stream = 0, .tag = 7, .fatal = 1
	};
	strcpy(m.u.error.message, "no dataset named 'x' in /srv/datasets");
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_GOODBYE;
	m.u.goodbye.reason = 0;
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_STATUS;
	m.u.status.what = PROTO_STATUS_STREAMS;
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_STATUS_REPLY;
	m.u.status_reply = (struct feeder_status){ .uptime_ms = 123456,
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
						   .samples_per_s = 1234.5 };
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_DATASET_INFO;
	m.u.dataset = (struct feeder_dataset_status){
		.kind = 1, .classes = 1000, .samples = 1281167, .feat_dim = 0, .streams = 2
	};
	strcpy(m.u.dataset.name, "imagenet");
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_STREAM_INFO;
	m.u.stream = (struct feeder_stream_status){ .stream = 3,
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
						    .ring_full_us = 66 };
	strcpy(m.u.stream.dataset, "imagenet");
	strcpy(m.u.stream.settings,
	       "wave fbank 80, chunk 200 train, cmn utt, noise=musan p=0.6 "
	       "snr 0..15/5..15/13..20 babble 3..7, rir=rirs p=0.6, speed p=0.5 labels=new, "
	       "gain off, specaug p=0.6 t1x10 f1x8, dither 1, f32");
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_LIST_END;
	m.u.list_end.count = 3;
	out[n++] = m;
	return n;
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

static void expect_open(struct proto_msg m, int want, const char *what)
{
	err[0] = 0;
	int n = enc(&m);
	struct proto_msg d;
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), want, what);
}

/* An OPEN_STREAM whose options are out of range is well formed (it decodes)
 * but proto_opts_check refuses it with FEEDER_EINVAL and a sentence naming
 * the field; want 0: the options pass. */
static void expect_opts(struct proto_msg m, int want, const char *field, const char *what)
{
	expect_open(m, 0, what);
	err[0] = 0;
	int rc = proto_opts_check(&m.u.open.opts, err, sizeof(err));
	expect(rc, want, what);
	CHECKF(!want || !field || strstr(err, field), "%s: '%s' does not name %s", what, err,
	       field);
}

static void test_round_trips(void)
{
	struct proto_msg msgs[32];
	int count = sample_msgs(msgs);
	int seen[PROTO_TYPE_MAX + 1] = { 0 };
	for (int i = 0; i < count; i++) {
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
	int n = enc(&m);
	struct proto_msg d;
	CHECK(proto_decode(buf, (size_t)n, &d, err, sizeof(err)) == 0);
	CHECK(memcmp(&d.u.open.opts.jpeg.mean[1], &m.u.open.opts.jpeg.mean[1], 4) == 0);
}

static void test_header_errors(void)
{
	struct proto_msg m = open_msg(), d;
	int n = enc(&m);
	uint8_t save[PROTO_MAX_MESSAGE];
	memcpy(save, buf, (size_t)n);

	bytes_put_le32(buf, 0x12345678);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "wrong magic");
	CHECK(strstr(err, "magic"));
	memcpy(buf, save, (size_t)n);

	bytes_put_le16(buf + 4, PROTO_VERSION + 1);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EVERSION,
	       "wrong version");
	CHECK(strstr(err, "version"));
	memcpy(buf, save, (size_t)n);

	bytes_put_le16(buf + 6, 0);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "type 0");
	bytes_put_le16(buf + 6, PROTO_TYPE_MAX + 1);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "unknown type");
	CHECK(strstr(err, "unknown"));
	bytes_put_le16(buf + 6, 0xffff);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "type 0xffff");
	memcpy(buf, save, (size_t)n);

	/* A length field that disagrees with the type, or with what arrived. */
	bytes_put_le32(buf + 8, bytes_le32(buf + 8) + 1);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "length field +1");
	bytes_put_le32(buf + 8, 0xffffffffu);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "length field huge");
	memcpy(buf, save, (size_t)n);
	bytes_put_le32(buf + 12, 1);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "reserved header");
	memcpy(buf, save, (size_t)n);

	/* Truncated anywhere, or with bytes appended. */
	for (int cut = 0; cut < n; cut++) {
		err[0] = 0;
		int rc = proto_decode(buf, (size_t)cut, &d, err, sizeof(err));
		CHECKF(rc == FEEDER_EPROTO, "truncated to %d bytes: got %d", cut, rc);
	}
	memset(buf + n, 0, 8);
	expect(proto_decode(buf, (size_t)n + 1, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "one byte extra");
	expect(proto_decode(buf, PROTO_MAX_MESSAGE + 1, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "oversized");
	CHECK(strstr(err, "larger"));
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), 0, "the original");

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
	struct proto_msg m = open_msg(), d;
	int n = enc(&m);
	/* The dataset field follows the header and twelve u32 fields. */
	uint8_t *name = buf + PROTO_HEADER_SIZE + 4; /* after the tag */
	CHECK(memcmp(name, "imagenet-val_1.0", 17) == 0);
	uint8_t save[PROTO_MAX_MESSAGE];
	memcpy(save, buf, (size_t)n);

	memset(name, 'a', FEEDER_DATASET_MAX); /* no NUL at all */
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "name without NUL");
	CHECK(strstr(err, "dataset"));
	memcpy(buf, save, (size_t)n);
	name[40] = 'x'; /* a hidden byte after the NUL */
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "junk after NUL");
	memcpy(buf, save, (size_t)n);

	const char *bad[] = {
		"", "../etc", "..", ".", ".hidden", "a/b", "a b", "x\xc3\xa9", "a\\b"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = open_msg();
		strcpy(m.u.open.opts.dataset, bad[i]);
		expect_open(m, FEEDER_EBADNAME, bad[i]);
	}
	m = open_msg();
	memset(m.u.open.opts.dataset, 'a', FEEDER_DATASET_MAX - 1);
	m.u.open.opts.dataset[FEEDER_DATASET_MAX - 1] = 0;
	expect_open(m, 0, "63-character name");
	CHECK(proto_name_check("a..b", err, sizeof(err)) == 0);
	char longname[FEEDER_DATASET_MAX + 1];
	memset(longname, 'b', FEEDER_DATASET_MAX);
	longname[FEEDER_DATASET_MAX] = 0;
	CHECK(proto_name_check(longname, err, sizeof(err)) == FEEDER_EBADNAME);

	/* STREAM_INFO's settings line: terminated, then zeros, printable. */
	struct proto_msg all[32];
	int count = sample_msgs(all), si = -1;
	for (int i = 0; i < count; i++)
		if (all[i].type == PROTO_STREAM_INFO)
			si = i;
	CHECK(si >= 0);
	n = enc(&all[si]);
	/* The settings field ends the payload. */
	uint8_t *set = buf + n - FEEDER_SETTINGS_MAX;
	CHECK(memcmp(set, "wave fbank 80,", 14) == 0);
	memcpy(save, buf, (size_t)n);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), 0, "stream info");
	CHECK(strcmp(d.u.stream.settings, all[si].u.stream.settings) == 0);
	memset(set, 'a', FEEDER_SETTINGS_MAX);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "settings without NUL");
	CHECK(strstr(err, "settings"));
	memcpy(buf, save, (size_t)n);
	set[FEEDER_SETTINGS_MAX - 2] = 'x';
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "settings junk after NUL");
	memcpy(buf, save, (size_t)n);
	set[4] = '\n';
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "settings newline");
	CHECK(strstr(err, "settings"));
	set[4] = (char)0xc3;
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "settings non-ASCII");
	memcpy(buf, save, (size_t)n);
	all[si].u.stream.settings[0] = 0; /* an empty line is allowed */
	n = enc(&all[si]);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), 0, "empty settings");

	/* ERROR's message must be terminated too. */
	struct proto_msg e = { .type = PROTO_ERROR };
	e.u.error.code = FEEDER_EPROTO;
	strcpy(e.u.error.message, "x");
	n = enc(&e);
	memset(buf + PROTO_HEADER_SIZE + 16, 'z', PROTO_TEXT_MAX);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "unterminated message");
}

static void test_open_fields(void)
{
	struct proto_msg m;
#define BAD_OPEN(field, stmt)                                                                      \
	do {                                                                                       \
		m = open_msg();                                                                    \
		stmt;                                                                              \
		expect_opts(m, FEEDER_EINVAL, field, #stmt);                                       \
	} while (0)
	BAD_OPEN("pipeline", m.u.open.opts.pipeline = 0);
	BAD_OPEN("pipeline", m.u.open.opts.pipeline = 4);
	BAD_OPEN("batch", m.u.open.opts.batch = 0);
	BAD_OPEN("batch", m.u.open.opts.batch = FEEDER_MAX_BATCH + 1);
	BAD_OPEN("epochs", m.u.open.opts.epochs = 0);
	BAD_OPEN("epoch", m.u.open.opts.epoch = UINT64_MAX);
	BAD_OPEN("world", m.u.open.opts.world = 0);
	BAD_OPEN("rank", m.u.open.opts.rank = 4);
	BAD_OPEN("world", m.u.open.opts.world = FEEDER_MAX_WORLD + 1);
	BAD_OPEN("drop_last", m.u.open.opts.drop_last = 2);
	BAD_OPEN("shuffle", m.u.open.opts.shuffle = 2);
	BAD_OPEN("names", m.u.open.opts.names = 7);
	BAD_OPEN("slots", m.u.open.opts.slots = 0);
	BAD_OPEN("slots", m.u.open.opts.slots = FEEDER_MAX_SLOTS + 1);
	BAD_OPEN("dtype", m.u.open.opts.dtype = 0);
	BAD_OPEN("dtype", m.u.open.opts.dtype = 4);
	BAD_OPEN("layout", m.u.open.opts.layout = 0);
	BAD_OPEN("layout", m.u.open.opts.layout = 3);
	BAD_OPEN("on_error", m.u.open.opts.on_error = 2);
	BAD_OPEN("placement", m.u.open.opts.placement = 3);
	BAD_OPEN("device_batches", m.u.open.opts.device_batches = 2);
	BAD_OPEN("jpeg.height", m.u.open.opts.jpeg.height = 0);
	BAD_OPEN("jpeg.width", m.u.open.opts.jpeg.width = FEEDER_MAX_SIDE + 1);
	BAD_OPEN("jpeg.train", m.u.open.opts.jpeg.train = 2);
	BAD_OPEN("jpeg.scale_min", m.u.open.opts.jpeg.scale_min = 0);
	BAD_OPEN("jpeg.scale_max", m.u.open.opts.jpeg.scale_max = 1.5f);
	BAD_OPEN("jpeg.scale_min", m.u.open.opts.jpeg.scale_min = 0.9f;
		 m.u.open.opts.jpeg.scale_max = 0.5f);
	BAD_OPEN("jpeg.ratio_min", m.u.open.opts.jpeg.ratio_min = -1);
	BAD_OPEN("jpeg.ratio_max", m.u.open.opts.jpeg.ratio_max = NAN);
	BAD_OPEN("jpeg.flip_p", m.u.open.opts.jpeg.flip_p = 1.01f);
	BAD_OPEN("jpeg.resize_ratio", m.u.open.opts.jpeg.resize_ratio = 0.5f);
	BAD_OPEN("jpeg.mean[2]", m.u.open.opts.jpeg.mean[2] = INFINITY);
	BAD_OPEN("jpeg.std[0]", m.u.open.opts.jpeg.std[0] = 0);
	/* wave streams: ranges, and the relations proto_opts_check adds. */
#define BAD_WAVE(field, stmt)                                                                      \
	do {                                                                                       \
		m = open_msg();                                                                    \
		m.u.open.opts.pipeline = FEEDER_PIPE_WAVE;                                         \
		m.u.open.opts.layout = FEEDER_LAYOUT_NCHW;                                         \
		m.u.open.opts.dtype = FEEDER_DTYPE_F32;                                            \
		stmt;                                                                              \
		expect_opts(m, FEEDER_EINVAL, field, #stmt);                                       \
	} while (0)
	BAD_WAVE("wave.chunk_len", m.u.open.opts.wave.chunk_len = FEEDER_MAX_WAVE_CHUNK + 1);
	BAD_WAVE("wave.features", m.u.open.opts.wave.features = 3);
	BAD_WAVE("wave.bins", m.u.open.opts.wave.bins = 2);
	BAD_WAVE("wave.bins", m.u.open.opts.wave.bins = FEEDER_MAX_WAVE_BINS + 1);
	BAD_WAVE("wave.ceps", m.u.open.opts.wave.features = FEEDER_WAVE_MFCC;
		 m.u.open.opts.wave.bins = 20; m.u.open.opts.wave.ceps = 21);
	BAD_WAVE("wave.noise_p", m.u.open.opts.wave.noise_p = 1.5f);
	BAD_WAVE("wave.noise", m.u.open.opts.wave.noise_p = 0.5f);
	BAD_WAVE("wave.rir", m.u.open.opts.wave.reverb_p = 0.5f);
	BAD_WAVE("wave.snr_music_min", m.u.open.opts.wave.snr_music_min = 20);
	BAD_WAVE("wave.babble_min", m.u.open.opts.wave.babble_min = 8);
	BAD_WAVE("wave.gain_min_db", m.u.open.opts.wave.gain_min_db = 7);
	BAD_WAVE("wave.speed_labels", m.u.open.opts.wave.speed_labels = 2);
	BAD_WAVE("wave.dither", m.u.open.opts.wave.dither = NAN);
	BAD_WAVE("wave.cvn", m.u.open.opts.wave.cvn = 1;
		 m.u.open.opts.wave.cmn = FEEDER_FEAT_CMN_NONE);
	BAD_WAVE("u8", m.u.open.opts.dtype = FEEDER_DTYPE_U8);
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
	struct proto_msg f;
	struct proto_msg all[32];
	sample_msgs(all);
	f = all[3];
	CHECK(f.u.open.opts.pipeline == FEEDER_PIPE_FEATURES);
#define BAD_FEAT(field, stmt)                                                                      \
	do {                                                                                       \
		m = f;                                                                             \
		stmt;                                                                              \
		expect_opts(m, FEEDER_EINVAL, field, #stmt);                                       \
	} while (0)
	BAD_FEAT("u8", m.u.open.opts.dtype = FEEDER_DTYPE_U8);
	BAD_FEAT("layout", m.u.open.opts.layout = FEEDER_LAYOUT_NHWC);
	BAD_FEAT("features.chunk_len", m.u.open.opts.features.chunk_len = 0);
	BAD_FEAT("features.chunk_len", m.u.open.opts.features.chunk_len = FEEDER_MAX_CHUNK + 1);
	BAD_FEAT("features.pad", m.u.open.opts.features.pad = 0);
	BAD_FEAT("features.pad", m.u.open.opts.features.pad = 3);
	BAD_FEAT("features.cmn", m.u.open.opts.features.cmn = 3);
	BAD_FEAT("features.cmn_window", m.u.open.opts.features.cmn_window = 0);
	BAD_FEAT("features.cvn", m.u.open.opts.features.cvn = 2);
	BAD_FEAT("features.cvn", m.u.open.opts.features.cmn = FEEDER_FEAT_CMN_NONE);
	m = f;
	m.u.open.opts.jpeg.height = 0;
	expect_opts(m, 0, NULL, "features stream with jpeg.height 0");
	expect_opts(f, 0, NULL, "features stream");
}

static void test_other_fields(void)
{
	struct proto_msg m = { .type = PROTO_STATUS }, d;
	m.u.status.what = 4;
	int n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "status what 4");
	m.u.status.what = 0;
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "status what 0");

	m = (struct proto_msg){ .type = PROTO_RELEASE };
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "release stream 0");

	m = (struct proto_msg){ .type = PROTO_BATCH_READY };
	m.u.ready = (struct proto_batch_ready){ .stream = 1, .samples = 2, .replacements = 3 };
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "replacements > samples");

	m = (struct proto_msg){ .type = PROTO_ERROR };
	m.u.error.code = 5;
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "positive error code");

	struct proto_msg all[32];
	sample_msgs(all);
	m = all[4];
	CHECK(m.type == PROTO_STREAM_OPENED);
	m.u.opened.ring_size += 4096;
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "ring size mismatch");
	m = all[4];
	m.u.opened.tensor_offset = 100;
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "unaligned tensor");
	m = all[4];
	m.u.opened.tensor_bytes = m.u.opened.slot_size;
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "tensor past slot");
	/* A device ring: the device table follows the slots, page aligned. */
	m = all[4];
	m.u.opened.memory = FEEDER_MEMORY_DEVICE;
	m.u.opened.placement = FEEDER_PLACEMENT_GPU;
	m.u.opened.device_table = m.u.opened.ring_size;
	m.u.opened.ring_size += proto_device_table_size(4, PROTO_TENSOR_ALIGN);
	CHECK(proto_device_table_size(4, 4096) == 4096 &&
	      proto_device_table_size(32, 4096) == 8192);
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), 0, "device ring");
	CHECK(d.u.opened.memory == FEEDER_MEMORY_DEVICE &&
	      d.u.opened.device_table == m.u.opened.device_table);
	struct proto_msg dev = m;
	m.u.opened.device_table -= 4096; /* over the last slot */
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "table over slots");
	m = dev;
	m.u.opened.ring_size -= 4096; /* table cut short */
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "short table");
	m = dev;
	m.u.opened.memory = FEEDER_MEMORY_HOST; /* a host ring with a table */
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO,
	       "host ring, table");
	m = dev;
	m.u.opened.memory = 2;
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "memory kind 2");

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
static void test_describe(void)
{
	char line[FEEDER_SETTINGS_MAX];
	struct feeder_stream_opts o;
	proto_opts_jpeg(&o, 224, 1);
	proto_opts_describe(&o, line, sizeof line);
	CHECKF(strcmp(line, "jpeg 224x224 train, scale 0.08..1 ratio 0.75..1.33, flip p=0.5, "
			    "f32 NCHW") == 0,
	       "jpeg train: '%s'", line);
	proto_opts_jpeg(&o, 160, 0);
	o.dtype = FEEDER_DTYPE_U8;
	o.layout = FEEDER_LAYOUT_NHWC;
	proto_opts_describe(&o, line, sizeof line);
	CHECKF(strcmp(line, "jpeg 160x160 eval, resize 1.14 + center crop, u8 NHWC") == 0,
	       "jpeg eval: '%s'", line);
	proto_opts_features(&o, 300, 1);
	o.features.cvn = 1;
	proto_opts_describe(&o, line, sizeof line);
	CHECKF(strcmp(line, "features chunk 300 train, pad repeat, cmn sliding 300+cvn, f32") == 0,
	       "features: '%s'", line);

	proto_opts_default(&o);
	o.pipeline = FEEDER_PIPE_WAVE;
	proto_opts_describe(&o, line, sizeof line);
	CHECKF(strcmp(line,
		      "wave fbank 80, chunk 200 train, cmn utt, noise off, rir off, speed off, "
		      "gain off, specaug off, dither off, f32") == 0,
	       "wave default: '%s'", line);
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
	proto_opts_describe(&o, line, sizeof line);
	CHECKF(strcmp(line,
		      "wave fbank 80, chunk 200 train, cmn utt, noise=musan p=0.6 snr "
		      "0..15/5..15/13..20 babble 3..7, rir=rirs p=0.6, speed p=0.5 labels=new, "
		      "gain p=0.25 -6..6 dB, specaug p=0.6 t1x10 f1x8, dither 1, f16") == 0,
	       "wave augmented: '%s'", line);
	/* Eval applies none of it, and says so. */
	w->train = 0;
	w->features = FEEDER_WAVE_MFCC;
	w->cmn = FEEDER_FEAT_CMN_NONE;
	proto_opts_describe(&o, line, sizeof line);
	CHECKF(strcmp(line, "wave mfcc 30 ceps 80 bins, chunk 200 eval, cmn none, no augmentation, "
			    "f16") == 0,
	       "wave eval: '%s'", line);
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
	proto_opts_describe(&o, line, sizeof line);
	CHECK(strcmp(line, "pipeline 7") == 0);
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
