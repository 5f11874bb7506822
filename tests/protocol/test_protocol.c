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
	proto_open_stream_defaults(&m.u.open, 224, 1);
	strcpy(m.u.open.dataset, "imagenet-val_1.0");
	m.u.open.tag = 7;
	m.u.open.batch = 32;
	m.u.open.seed = 0x123456789abcdefull;
	m.u.open.epoch = 3;
	m.u.open.epochs = 2;
	m.u.open.rank = 1;
	m.u.open.world = 4;
	m.u.open.start_batch = 5;
	m.u.open.drop_last = 1;
	m.u.open.dtype = PROTO_DTYPE_F16;
	m.u.open.layout = PROTO_LAYOUT_NHWC;
	m.u.open.on_error = PROTO_ON_ERROR_FAIL;
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
	m.u.welcome = (struct proto_welcome){ .session = 9, .max_streams = 8, .max_slots = 16,
					      .quota = 1ull << 33 };
	strcpy(m.u.welcome.agent, "feederd 0.1.0");
	out[n++] = m;

	out[n++] = open_msg();

	memset(&m, 0, sizeof(m));
	m.type = PROTO_OPEN_STREAM;
	m.u.open = open_msg().u.open;
	memset(&m.u.open.jpeg, 0, sizeof(m.u.open.jpeg));
	m.u.open.pipeline = PROTO_PIPE_FEATURES;
	m.u.open.dtype = PROTO_DTYPE_F32;
	m.u.open.layout = PROTO_LAYOUT_NCHW;
	m.u.open.features = (struct proto_features_opts){ .chunk_len = 200, .pad = PROTO_FEAT_PAD_SKIP,
		.cmn = PROTO_FEAT_CMN_SLIDING, .cmn_window = 300, .cvn = 1, .train = 1 };
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_STREAM_OPENED;
	m.u.opened = (struct proto_stream_opened){ .tag = 7, .stream = 3, .slots = 4, .batch = 32,
		.slot_size = 1 << 20, .ring_size = PROTO_RING_HEADER + 4 * (1 << 20), .batches = 100,
		.batches_per_epoch = 50, .samples = 1601, .classes = 10, .dtype = PROTO_DTYPE_F16,
		.layout = PROTO_LAYOUT_NCHW, .ndim = 4, .shape = { 32, 3, 64, 64 },
		.labels_offset = 64, .tensor_offset = 4096, .tensor_bytes = 32 * 3 * 64 * 64 * 2 };
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_BATCH_READY;
	m.u.ready = (struct proto_batch_ready){ .stream = 3, .slot = 2, .epoch = 5,
		.batch_index = 1ull << 40, .samples = 31, .replacements = 2 };
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
	m.u.error = (struct proto_error){ .code = FEEDER_ENODATASET, .stream = 0, .tag = 7, .fatal = 1 };
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
	m.u.status_reply = (struct proto_status_reply){ .uptime_ms = 123456, .clients = 2,
		.streams = 3, .workers = 4, .datasets = 5, .memory_used = 6, .memory_limit = 7,
		.batches = 8, .samples = 9, .replacements = 10, .decode_errors = 11,
		.protocol_errors = 12, .images_per_s = 1234.5 };
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_DATASET_INFO;
	m.u.dataset = (struct proto_dataset_info){ .kind = 1, .classes = 1000, .samples = 1281167,
		.feat_dim = 0, .streams = 2 };
	strcpy(m.u.dataset.name, "imagenet");
	out[n++] = m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_STREAM_INFO;
	m.u.stream = (struct proto_stream_info){ .stream = 3, .session = 9, .pid = 100, .uid = 1000,
		.pipeline = 1, .batch = 32, .slots = 4, .ready = 2, .epoch = 1, .batches_sent = 10,
		.batches_total = 20, .samples = 320, .replacements = 1, .images_per_s = 999.25,
		.client_wait_us = 55, .ring_full_us = 66 };
	strcpy(m.u.stream.dataset, "imagenet");
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
	CHECKF(got == want, "%s: got %d (%s), want %d; err '%s'", what, got, status_str(got), want, err);
	CHECKF(want == 0 || strlen(err) > 10, "%s: no sentence in err", what);
}

static void expect_open(struct proto_msg m, int want, const char *what)
{
	err[0] = 0;
	int n = enc(&m);
	struct proto_msg d;
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), want, what);
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
	m.u.open.jpeg.mean[1] = 0.1f + 1e-7f;
	int n = enc(&m);
	struct proto_msg d;
	CHECK(proto_decode(buf, (size_t)n, &d, err, sizeof(err)) == 0);
	CHECK(memcmp(&d.u.open.jpeg.mean[1], &m.u.open.jpeg.mean[1], 4) == 0);
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
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EVERSION, "wrong version");
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
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "length field +1");
	bytes_put_le32(buf + 8, 0xffffffffu);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "length field huge");
	memcpy(buf, save, (size_t)n);
	bytes_put_le32(buf + 12, 1);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "reserved header");
	memcpy(buf, save, (size_t)n);

	/* Truncated anywhere, or with bytes appended. */
	for (int cut = 0; cut < n; cut++) {
		err[0] = 0;
		int rc = proto_decode(buf, (size_t)cut, &d, err, sizeof(err));
		CHECKF(rc == FEEDER_EPROTO, "truncated to %d bytes: got %d", cut, rc);
	}
	memset(buf + n, 0, 8);
	expect(proto_decode(buf, (size_t)n + 1, &d, err, sizeof(err)), FEEDER_EPROTO, "one byte extra");
	expect(proto_decode(buf, PROTO_MAX_MESSAGE + 1, &d, err, sizeof(err)), FEEDER_EPROTO, "oversized");
	CHECK(strstr(err, "larger"));
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), 0, "the original");

	/* Every type's payload length is below the limit. */
	for (int t = 1; t <= PROTO_TYPE_MAX; t++)
		CHECK(proto_payload_len(t) > 0 && proto_payload_len(t) + PROTO_HEADER_SIZE <= PROTO_MAX_MESSAGE);
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
	uint8_t *name = buf + PROTO_HEADER_SIZE + 48;
	CHECK(memcmp(name, "imagenet-val_1.0", 17) == 0);
	uint8_t save[PROTO_MAX_MESSAGE];
	memcpy(save, buf, (size_t)n);

	memset(name, 'a', PROTO_NAME_MAX); /* no NUL at all */
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "name without NUL");
	CHECK(strstr(err, "dataset"));
	memcpy(buf, save, (size_t)n);
	name[40] = 'x'; /* a hidden byte after the NUL */
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "junk after NUL");
	memcpy(buf, save, (size_t)n);

	const char *bad[] = { "", "../etc", "..", ".", ".hidden", "a/b", "a b", "x\xc3\xa9", "a\\b" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = open_msg();
		strcpy(m.u.open.dataset, bad[i]);
		expect_open(m, FEEDER_EBADNAME, bad[i]);
	}
	m = open_msg();
	memset(m.u.open.dataset, 'a', PROTO_NAME_MAX - 1);
	m.u.open.dataset[PROTO_NAME_MAX - 1] = 0;
	expect_open(m, 0, "63-character name");
	CHECK(proto_name_check("a..b", err, sizeof(err)) == 0);
	char longname[PROTO_NAME_MAX + 1];
	memset(longname, 'b', PROTO_NAME_MAX);
	longname[PROTO_NAME_MAX] = 0;
	CHECK(proto_name_check(longname, err, sizeof(err)) == FEEDER_EBADNAME);

	/* ERROR's message must be terminated too. */
	struct proto_msg e = { .type = PROTO_ERROR };
	e.u.error.code = FEEDER_EPROTO;
	strcpy(e.u.error.message, "x");
	n = enc(&e);
	memset(buf + PROTO_HEADER_SIZE + 16, 'z', PROTO_TEXT_MAX);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "unterminated message");
}

static void test_open_fields(void)
{
	struct proto_msg m;
#define BAD_OPEN(stmt) do { m = open_msg(); stmt; expect_open(m, FEEDER_EPROTO, #stmt); } while (0)
	BAD_OPEN(m.u.open.pipeline = 0);
	BAD_OPEN(m.u.open.pipeline = 3);
	BAD_OPEN(m.u.open.batch = 0);
	BAD_OPEN(m.u.open.batch = PROTO_MAX_BATCH + 1);
	BAD_OPEN(m.u.open.epochs = 0);
	BAD_OPEN(m.u.open.epoch = UINT64_MAX);
	BAD_OPEN(m.u.open.world = 0);
	BAD_OPEN(m.u.open.rank = 4);
	BAD_OPEN(m.u.open.world = PROTO_MAX_WORLD + 1);
	BAD_OPEN(m.u.open.drop_last = 2);
	BAD_OPEN(m.u.open.slots = 0);
	BAD_OPEN(m.u.open.slots = PROTO_MAX_SLOTS + 1);
	BAD_OPEN(m.u.open.dtype = 0);
	BAD_OPEN(m.u.open.dtype = 4);
	BAD_OPEN(m.u.open.layout = 0);
	BAD_OPEN(m.u.open.layout = 3);
	BAD_OPEN(m.u.open.on_error = 2);
	BAD_OPEN(m.u.open.flags = 8);                 /* an unknown bit */
	BAD_OPEN(m.u.open.flags = 3);                 /* placement 3 does not exist */
	BAD_OPEN(m.u.open.jpeg.out_h = 0);
	BAD_OPEN(m.u.open.jpeg.out_w = PROTO_MAX_SIDE + 1);
	BAD_OPEN(m.u.open.jpeg.train = 2);
	BAD_OPEN(m.u.open.jpeg.scale_min = 0);
	BAD_OPEN(m.u.open.jpeg.scale_max = 1.5f);
	BAD_OPEN(m.u.open.jpeg.scale_min = 0.9f; m.u.open.jpeg.scale_max = 0.5f);
	BAD_OPEN(m.u.open.jpeg.ratio_min = -1);
	BAD_OPEN(m.u.open.jpeg.ratio_max = NAN);
	BAD_OPEN(m.u.open.jpeg.flip_p = 1.01f);
	BAD_OPEN(m.u.open.jpeg.resize_ratio = 0.5f);
	BAD_OPEN(m.u.open.jpeg.mean[2] = INFINITY);
	BAD_OPEN(m.u.open.jpeg.std[0] = 0);
	BAD_OPEN(m.u.open.features.chunk_len = 10);
	/* features streams */
	struct proto_msg f;
	struct proto_msg all[32];
	sample_msgs(all);
	f = all[3];
	CHECK(f.u.open.pipeline == PROTO_PIPE_FEATURES);
#define BAD_FEAT(stmt) do { m = f; stmt; expect_open(m, FEEDER_EPROTO, #stmt); } while (0)
	BAD_FEAT(m.u.open.dtype = PROTO_DTYPE_U8);
	BAD_FEAT(m.u.open.layout = PROTO_LAYOUT_NHWC);
	BAD_FEAT(m.u.open.features.chunk_len = 0);
	BAD_FEAT(m.u.open.features.chunk_len = PROTO_MAX_CHUNK + 1);
	BAD_FEAT(m.u.open.features.pad = 0);
	BAD_FEAT(m.u.open.features.pad = 3);
	BAD_FEAT(m.u.open.features.cmn = 3);
	BAD_FEAT(m.u.open.features.cmn_window = 0);
	BAD_FEAT(m.u.open.features.cvn = 2);
	BAD_FEAT(m.u.open.jpeg.out_h = 1);
	expect_open(f, 0, "features stream");
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
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "release stream 0");

	m = (struct proto_msg){ .type = PROTO_BATCH_READY };
	m.u.ready = (struct proto_batch_ready){ .stream = 1, .samples = 2, .replacements = 3 };
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "replacements > samples");

	m = (struct proto_msg){ .type = PROTO_ERROR };
	m.u.error.code = 5;
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "positive error code");

	struct proto_msg all[32];
	sample_msgs(all);
	m = all[4];
	CHECK(m.type == PROTO_STREAM_OPENED);
	m.u.opened.ring_size += 4096;
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "ring size mismatch");
	m = all[4];
	m.u.opened.tensor_offset = 100;
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "unaligned tensor");
	m = all[4];
	m.u.opened.tensor_bytes = m.u.opened.slot_size;
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "tensor past slot");
	/* A device ring: the device table follows the slots, page aligned. */
	m = all[4];
	m.u.opened.memory = PROTO_MEM_DEVICE;
	m.u.opened.placement = PROTO_PLACE_GPU;
	m.u.opened.device_table = m.u.opened.ring_size;
	m.u.opened.ring_size += proto_device_table_size(4, PROTO_TENSOR_ALIGN);
	CHECK(proto_device_table_size(4, 4096) == 4096 && proto_device_table_size(32, 4096) == 8192);
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), 0, "device ring");
	CHECK(d.u.opened.memory == PROTO_MEM_DEVICE && d.u.opened.device_table == m.u.opened.device_table);
	struct proto_msg dev = m;
	m.u.opened.device_table -= 4096; /* over the last slot */
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "table over slots");
	m = dev;
	m.u.opened.ring_size -= 4096;    /* table cut short */
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "short table");
	m = dev;
	m.u.opened.memory = PROTO_MEM_HOST; /* a host ring with a table */
	n = enc(&m);
	expect(proto_decode(buf, (size_t)n, &d, err, sizeof(err)), FEEDER_EPROTO, "host ring, table");
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
	m.u.open.batch = 3;
	m.u.open.slots = 2;
	m.u.open.jpeg.out_h = 5;
	m.u.open.jpeg.out_w = 7;
	CHECK(proto_geometry(&m.u.open, 0, 4096, &g, err, sizeof(err)) == 0);
	CHECK(g.shape[0] == 3 && g.shape[1] == 5 && g.shape[2] == 7 && g.shape[3] == 3); /* NHWC */
	CHECK(g.sample_bytes == 5 * 7 * 3 * 2);
	CHECK(g.tensor_bytes == 3 * g.sample_bytes);
	CHECK(g.labels_offset == PROTO_SLOT_HEADER && g.tensor_offset == 4096);
	CHECK(g.slot_size == 8192 && g.ring_size == PROTO_RING_HEADER + 2 * 8192);
	m.u.open.layout = PROTO_LAYOUT_NCHW;
	m.u.open.batch = 2000; /* labels push the tensor to the next page */
	CHECK(proto_geometry(&m.u.open, 0, 4096, &g, err, sizeof(err)) == 0);
	CHECK(g.shape[1] == 3 && g.shape[2] == 5 && g.shape[3] == 7);
	CHECK(g.tensor_offset == 8192 && g.slot_size % 4096 == 0);
	CHECK(g.slot_size >= g.tensor_offset + g.tensor_bytes);
	CHECK(sizeof(struct proto_slot_header) <= PROTO_SLOT_HEADER);
	CHECK(sizeof(struct proto_ring_header) <= PROTO_RING_HEADER);
}

int main(void)
{
	test_round_trips();
	test_header_errors();
	test_strings();
	test_open_fields();
	test_other_fields();
	test_geometry();
	return 0;
}
