/* fuzz_dsformat.c — arbitrary bytes as a dataset header record and as a
 * sample record (the values dsstore hands out from "meta" and "samples").
 *
 * A dataset file may be truncated, corrupt or hostile, and feederd opens
 * datasets it did not write. The first input byte picks the reader (even:
 * header, odd: sample) so that one corpus covers both; the rest is the
 * record. An accepted header must re-encode to a header with the same fields;
 * an accepted sample must have its payload inside the record, lengths that
 * agree, and a CRC check that answers without reading past the payload. */
#include "fuzz.h"

#include "crc32c.h"
#include "dsformat.h"
#include "status.h"

#include <string.h>

static void header(const uint8_t *data, size_t size)
{
	struct dsformat_header h;
	char err[256] = "";
	int rc = dsformat_header_decode(data, size, &h, err, sizeof(err));
	if (rc != 0) {
		FUZZ_CHECK(rc == FEEDER_EFORMAT || rc == FEEDER_EVERSION, "code %d", rc);
		FUZZ_CHECK_ERR(err, sizeof(err));
		return;
	}
	size_t want = h.version >= 3 ? DSFORMAT_HEADER_SIZE : DSFORMAT_HEADER_SIZE_V2;
	FUZZ_CHECK(size == want, "accepted %zu bytes for version %u", size, h.version);
	FUZZ_CHECK(h.tiled <= h.samples, "%llu tiled of %llu", (unsigned long long)h.tiled,
		   (unsigned long long)h.samples);
	FUZZ_CHECK(h.kind == DSFORMAT_KIND_JPEG || h.kind == DSFORMAT_KIND_FEATURES ||
			   h.kind == DSFORMAT_KIND_WAVE,
		   "kind %u", h.kind);
	FUZZ_CHECK(memchr(h.packer_version, '\0', sizeof(h.packer_version)) &&
			   memchr(h.options, '\0', sizeof(h.options)),
		   "unterminated string");
	uint8_t again[DSFORMAT_HEADER_SIZE];
	dsformat_header_encode(&h, again);
	struct dsformat_header h2;
	/* the layout of versions 1 and 2 is the first 328 bytes of 3's */
	rc = dsformat_header_decode(again, want, &h2, err, sizeof(err));
	FUZZ_CHECK(rc == 0, "re-encoded header rejected: %s", err);
	FUZZ_CHECK(h2.version == h.version && h2.kind == h.kind && h2.samples == h.samples &&
			   h2.classes == h.classes && h2.feat_dim == h.feat_dim &&
			   h2.dtype == h.dtype && h2.rate == h.rate &&
			   strcmp(h2.packer_version, h.packer_version) == 0 &&
			   strcmp(h2.options, h.options) == 0 &&
			   h2.source_bytes == h.source_bytes && h2.tiled == h.tiled,
		   "header does not round-trip");
}

static void sample(const uint8_t *data, size_t size)
{
	struct dsformat_sample s;
	const uint8_t *payload = NULL;
	char err[256] = "";
	int rc = dsformat_sample_decode(DSFORMAT_VERSION, data, size, &s, &payload, err,
					sizeof(err));
	if (rc != 0) {
		FUZZ_CHECK(rc == FEEDER_EFORMAT || rc == FEEDER_ECORRUPT, "code %d", rc);
		FUZZ_CHECK_ERR(err, sizeof(err));
		return;
	}
	FUZZ_CHECK(payload == data + DSFORMAT_SAMPLE_HDR, "payload at offset %td", payload - data);
	FUZZ_CHECK((size_t)s.payload_len == size - DSFORMAT_SAMPLE_HDR, "payload_len %u of %zu",
		   s.payload_len, size);
	if (s.dtype != DSFORMAT_DTYPE_NONE)
		FUZZ_CHECK((uint64_t)s.frames * s.dim * dsformat_dtype_size(s.dtype) ==
				   s.payload_len,
			   "matrix %ux%u does not fill %u bytes", s.frames, s.dim, s.payload_len);
	err[0] = '\0';
	rc = dsformat_sample_verify(&s, payload, err, sizeof(err));
	uint32_t crc = crc32c(0, payload, s.payload_len);
	FUZZ_CHECK((rc == 0) == (crc == s.crc), "verify %d for crc %08x vs %08x", rc, crc, s.crc);
	if (rc != 0)
		FUZZ_CHECK_ERR(err, sizeof(err));
	uint8_t hdr[DSFORMAT_SAMPLE_HDR];
	dsformat_sample_encode(&s, hdr);
	/* Bytes 21..23 are reserved and not checked by the reader (room for
	 * later fields), so only the fields before them must round-trip. */
	FUZZ_CHECK(memcmp(hdr, data, 21) == 0, "sample header does not round-trip");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	/* Copies of exactly the record's length, so ASan sees any overread. */
	size_t n = size - 1;
	uint8_t *rec = malloc(n ? n : 1);
	if (!rec)
		return 0;
	memcpy(rec, data + 1, n);
	if (data[0] & 1)
		sample(rec, n);
	else
		header(rec, n);
	free(rec);
	return 0;
}
