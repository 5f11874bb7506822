/* test_dsformat — dataset record encodings: round trips and every rejection
 * path of the decoders (wrong magic, version, sizes, corrupt payload). */
#include "check.h"
#include "dsformat.h"
#include "status.h"

#include <string.h>

int main(void)
{
	char err[256];
	struct dsformat_header h = { .version = DSFORMAT_VERSION,
				     .kind = DSFORMAT_KIND_FEATURES,
				     .samples = 1234567890123ull,
				     .classes = 42,
				     .feat_dim = 30,
				     .dtype = DSFORMAT_DTYPE_F16 };
	strcpy(h.packer_version, "0.1.0");
	strcpy(h.options, "--features mfcc --ceps 30");
	uint8_t buf[DSFORMAT_HEADER_SIZE];
	dsformat_header_encode(&h, buf);
	struct dsformat_header g;
	CHECK(dsformat_header_decode(buf, sizeof(buf), &g, err, sizeof(err)) == 0);
	CHECK(g.samples == h.samples && g.classes == 42 && g.feat_dim == 30 &&
	      g.dtype == DSFORMAT_DTYPE_F16);
	CHECK(strcmp(g.options, h.options) == 0 && strcmp(g.packer_version, "0.1.0") == 0);
	/* Version 3: the source bytes and the tiled count. */
	struct dsformat_header v3 = { .version = 3,
				      .kind = DSFORMAT_KIND_JPEG,
				      .samples = 10,
				      .classes = 2,
				      .source_bytes = 123456789012ull,
				      .tiled = 9 };
	uint8_t b3[DSFORMAT_HEADER_SIZE];
	dsformat_header_encode(&v3, b3);
	CHECK(dsformat_header_decode(b3, sizeof(b3), &g, err, sizeof(err)) == 0 &&
	      g.source_bytes == 123456789012ull && g.tiled == 9);
	v3.tiled = 11;
	dsformat_header_encode(&v3, b3);
	CHECK(dsformat_header_decode(b3, sizeof(b3), &g, err, sizeof(err)) == FEEDER_EFORMAT &&
	      strstr(err, "tiled"));
	/* A jpeg record's flags and aux: tiled with an interval, or both 0. */
	struct dsformat_header jh = {
		.version = 3, .kind = DSFORMAT_KIND_JPEG, .samples = 1, .classes = 2
	};
	struct dsformat_sample js = { .label = 1, .payload_len = 10 };
	CHECK(dsformat_sample_check(&jh, &js, err, sizeof(err)) == 0);
	js.flags = DSFORMAT_FLAG_TILED, js.aux = 4;
	CHECK(dsformat_sample_check(&jh, &js, err, sizeof(err)) == 0);
	js.aux = 0;
	CHECK(dsformat_sample_check(&jh, &js, err, sizeof(err)) == FEEDER_ECORRUPT);
	js.flags = 0, js.aux = 4;
	CHECK(dsformat_sample_check(&jh, &js, err, sizeof(err)) == FEEDER_ECORRUPT);
	js.flags = 2, js.aux = 0;
	CHECK(dsformat_sample_check(&jh, &js, err, sizeof(err)) == FEEDER_ECORRUPT);
	js.flags = DSFORMAT_FLAG_TILED, js.aux = 4, jh.version = 2; /* no tiling before 3 */
	CHECK(dsformat_sample_check(&jh, &js, err, sizeof(err)) == FEEDER_ECORRUPT);

	CHECK(dsformat_header_decode(buf, sizeof(buf) - 1, &g, err, sizeof(err)) == FEEDER_EFORMAT);
	buf[0] ^= 1;
	CHECK(dsformat_header_decode(buf, sizeof(buf), &g, err, sizeof(err)) == FEEDER_EFORMAT);
	CHECK(strstr(err, "magic"));
	buf[0] ^= 1;
	buf[8] = 99;
	CHECK(dsformat_header_decode(buf, sizeof(buf), &g, err, sizeof(err)) == FEEDER_EVERSION);
	CHECK(strstr(err, "version 99"));
	buf[8] = DSFORMAT_VERSION;
	buf[12] = 7;
	CHECK(dsformat_header_decode(buf, sizeof(buf), &g, err, sizeof(err)) == FEEDER_EFORMAT);

	/* A features sample: 3 frames x 2 dims of f32. */
	float m[6] = { 1, 2, 3, 4, 5, 6 };
	struct dsformat_sample s = { .label = 7,
				     .payload_len = sizeof(m),
				     .frames = 3,
				     .dim = 2,
				     .dtype = DSFORMAT_DTYPE_F32 };
	uint8_t rec[DSFORMAT_SAMPLE_HDR + sizeof(m)];
	dsformat_sample_encode(&s, rec);
	memcpy(rec + DSFORMAT_SAMPLE_HDR, m, sizeof(m));
	/* CRC filled by the writer normally; compute via verify failure path. */
	struct dsformat_sample t;
	const uint8_t *pl;
	CHECK(dsformat_sample_decode(DSFORMAT_VERSION, rec, sizeof(rec), &t, &pl, err,
				     sizeof(err)) == 0);
	CHECK(t.label == 7 && t.frames == 3 && t.dim == 2 && pl == rec + DSFORMAT_SAMPLE_HDR);
	CHECK(dsformat_sample_verify(&t, pl, err, sizeof(err)) == FEEDER_ECORRUPT);
	CHECK(strstr(err, "CRC mismatch"));
	/* Truncated record, header shorter than itself, mismatched matrix. */
	CHECK(dsformat_sample_decode(DSFORMAT_VERSION, rec, sizeof(rec) - 1, &t, &pl, err,
				     sizeof(err)) == FEEDER_ECORRUPT);
	CHECK(dsformat_sample_decode(DSFORMAT_VERSION, rec, 10, &t, &pl, err, sizeof(err)) ==
	      FEEDER_EFORMAT);
	s.frames = 4;
	dsformat_sample_encode(&s, rec);
	CHECK(dsformat_sample_decode(DSFORMAT_VERSION, rec, sizeof(rec), &t, &pl, err,
				     sizeof(err)) == FEEDER_ECORRUPT);

	/* Version 2: a changed label (or any header byte) is caught by the
	 * header CRC and reported as header damage. */
	s.frames = 3;
	dsformat_sample_encode(&s, rec);
	CHECK(dsformat_sample_decode(DSFORMAT_VERSION, rec, sizeof(rec), &t, &pl, err,
				     sizeof(err)) == 0);
	for (size_t byte = 0; byte < DSFORMAT_SAMPLE_HDR; byte++) {
		rec[byte] ^= 0x10;
		CHECKF(dsformat_sample_decode(DSFORMAT_VERSION, rec, sizeof(rec), &t, &pl, err,
					      sizeof(err)) == FEEDER_ECORRUPT &&
			       strstr(err, "header"),
		       "header byte %zu changed: '%s'", byte, err);
		rec[byte] ^= 0x10;
	}
	/* Version 1 records (24-byte header, no header CRC) still decode. */
	uint8_t v1[DSFORMAT_SAMPLE_HDR_V1 + sizeof(m)] = { 0 };
	memcpy(v1, rec, 20);
	v1[20] = DSFORMAT_DTYPE_F32;
	memcpy(v1 + DSFORMAT_SAMPLE_HDR_V1, m, sizeof(m));
	CHECK(dsformat_sample_decode(1, v1, sizeof(v1), &t, &pl, err, sizeof(err)) == 0);
	CHECK(t.label == 7 && t.frames == 3 && pl == v1 + DSFORMAT_SAMPLE_HDR_V1);
	CHECK(dsformat_sample_decode(DSFORMAT_VERSION + 1, v1, sizeof(v1), &t, &pl, err,
				     sizeof(err)) == FEEDER_EVERSION);
	/* Headers of versions 1 and 2 (328 bytes) are read, of a newer version
	 * refused clearly; each version's header has its own size. */
	buf[12] = DSFORMAT_KIND_FEATURES;
	buf[8] = 1;
	CHECK(dsformat_header_decode(buf, DSFORMAT_HEADER_SIZE_V2, &g, err, sizeof(err)) == 0 &&
	      g.version == 1 && g.source_bytes == 0 && g.tiled == 0);
	buf[8] = 2;
	CHECK(dsformat_header_decode(buf, DSFORMAT_HEADER_SIZE_V2, &g, err, sizeof(err)) == 0 &&
	      g.version == 2);
	CHECK(dsformat_header_decode(buf, DSFORMAT_HEADER_SIZE, &g, err, sizeof(err)) ==
	      FEEDER_EFORMAT);
	buf[8] = 3;
	CHECK(dsformat_header_decode(buf, DSFORMAT_HEADER_SIZE_V2, &g, err, sizeof(err)) ==
	      FEEDER_EFORMAT);
	buf[8] = DSFORMAT_VERSION + 1;
	CHECK(dsformat_header_decode(buf, sizeof(buf), &g, err, sizeof(err)) == FEEDER_EVERSION &&
	      strstr(err, "newer packer"));
	buf[8] = DSFORMAT_VERSION;

	uint8_t k[8];
	dsformat_sample_key(0x0102030405060708ull, k);
	CHECK(k[0] == 1 && k[7] == 8);
	CHECK(dsformat_sample_key_decode(k) == 0x0102030405060708ull);
	return 0;
}
