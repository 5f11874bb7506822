/* dsformat.c — encode and validate dataset records (see dsformat.h). */
#include "dsformat.h"

#include "bytes.h"
#include "crc32c.h"
#include "status.h"

#include <stdio.h>
#include <string.h>

const char *dsformat_kind_name(uint32_t kind)
{
	switch (kind) {
	case DSFORMAT_KIND_JPEG:
		return "jpeg";
	case DSFORMAT_KIND_FEATURES:
		return "features";
	case DSFORMAT_KIND_WAVE:
		return "wave";
	}
	return "?";
}

const char *dsformat_dtype_name(uint32_t dtype)
{
	switch (dtype) {
	case DSFORMAT_DTYPE_NONE:
		return "none";
	case DSFORMAT_DTYPE_F16:
		return "f16";
	case DSFORMAT_DTYPE_F32:
		return "f32";
	case DSFORMAT_DTYPE_S16:
		return "s16";
	}
	return "?";
}

size_t dsformat_dtype_size(uint32_t dtype)
{
	return dtype == DSFORMAT_DTYPE_F16 || dtype == DSFORMAT_DTYPE_S16 ? 2
	       : dtype == DSFORMAT_DTYPE_F32                              ? 4
									  : 0;
}

/* Header layout: magic[8] version kind samples(8) classes feat_dim dtype
 * rate (wave; reserved and 0 before) packer_version[32] options[256];
 * version 3 adds source_bytes(8) tiled(8). */
void dsformat_header_encode(const struct dsformat_header *h, uint8_t *out)
{
	memset(out, 0, DSFORMAT_HEADER_SIZE);
	memcpy(out, DSFORMAT_MAGIC, 8);
	bytes_put_le32(out + 8, h->version);
	bytes_put_le32(out + 12, h->kind);
	bytes_put_le64(out + 16, h->samples);
	bytes_put_le32(out + 24, h->classes);
	bytes_put_le32(out + 28, h->feat_dim);
	bytes_put_le32(out + 32, h->dtype);
	bytes_put_le32(out + 36, h->rate);
	memcpy(out + 40, h->packer_version, strnlen(h->packer_version, 31));
	memcpy(out + 72, h->options, strnlen(h->options, 255));
	bytes_put_le64(out + 328, h->source_bytes);
	bytes_put_le64(out + 336, h->tiled);
}

int dsformat_header_decode(const void *buf, size_t len, struct dsformat_header *h, char *err,
			   size_t errlen)
{
	const uint8_t *p = buf;
	if (len < 12 || memcmp(p, DSFORMAT_MAGIC, 8) != 0)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "dataset header has the wrong magic");
	memset(h, 0, sizeof(*h));
	h->version = bytes_le32(p + 8);
	if (h->version < DSFORMAT_VERSION_MIN || h->version > DSFORMAT_VERSION)
		return status_fail(
			err, errlen, FEEDER_EVERSION,
			"dataset format version %u, this build reads versions %d to %d%s",
			h->version, DSFORMAT_VERSION_MIN, DSFORMAT_VERSION,
			h->version > DSFORMAT_VERSION ? " (packed by a newer packer)" : "");
	size_t want = h->version >= 3 ? DSFORMAT_HEADER_SIZE : DSFORMAT_HEADER_SIZE_V2;
	if (len != want)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "dataset header is %zu bytes, expected %zu for version %u", len,
				   want, h->version);
	h->kind = bytes_le32(p + 12);
	h->samples = bytes_le64(p + 16);
	h->classes = bytes_le32(p + 24);
	h->feat_dim = bytes_le32(p + 28);
	h->dtype = bytes_le32(p + 32);
	h->rate = bytes_le32(p + 36);
	memcpy(h->packer_version, p + 40, 31);
	memcpy(h->options, p + 72, 255);
	if (h->version >= 3) {
		h->source_bytes = bytes_le64(p + 328);
		h->tiled = bytes_le64(p + 336);
		if (h->tiled > h->samples)
			return status_fail(err, errlen, FEEDER_EFORMAT,
					   "dataset header counts %llu tiled records of %llu",
					   (unsigned long long)h->tiled,
					   (unsigned long long)h->samples);
	}
	if (h->kind != DSFORMAT_KIND_JPEG && h->kind != DSFORMAT_KIND_FEATURES &&
	    !(h->kind == DSFORMAT_KIND_WAVE && h->version >= 3))
		return status_fail(err, errlen, FEEDER_EFORMAT, "dataset kind %u is unknown",
				   h->kind);
	if (h->kind == DSFORMAT_KIND_WAVE &&
	    (h->feat_dim != 1 || h->dtype != DSFORMAT_DTYPE_S16 || h->rate < DSFORMAT_RATE_MIN ||
	     h->rate > DSFORMAT_RATE_MAX))
		return status_fail(
			err, errlen, FEEDER_EFORMAT,
			"wave dataset has %u channels of dtype %s at %u Hz (expected 1 of s16 "
			"at %d..%d Hz)",
			h->feat_dim, dsformat_dtype_name(h->dtype), h->rate, DSFORMAT_RATE_MIN,
			DSFORMAT_RATE_MAX);
	if (h->kind != DSFORMAT_KIND_WAVE && h->rate != 0)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "%s dataset declares a sample rate (%u)",
				   dsformat_kind_name(h->kind), h->rate);
	if (h->kind == DSFORMAT_KIND_FEATURES &&
	    (h->feat_dim == 0 || h->feat_dim > DSFORMAT_MAX_DIM ||
	     (h->dtype != DSFORMAT_DTYPE_F16 && h->dtype != DSFORMAT_DTYPE_F32)))
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "features dataset has bad dimension %u or dtype %u", h->feat_dim,
				   h->dtype);
	return 0;
}

size_t dsformat_sample_hdr_size(uint32_t version)
{
	return version == 1                   ? DSFORMAT_SAMPLE_HDR_V1
	       : version == 2 || version == 3 ? DSFORMAT_SAMPLE_HDR
					      : 0;
}

void dsformat_sample_encode(const struct dsformat_sample *s, uint8_t *out)
{
	bytes_put_le32(out, s->label);
	bytes_put_le32(out + 4, s->payload_len);
	bytes_put_le32(out + 8, s->crc);
	bytes_put_le32(out + 12, s->frames);
	bytes_put_le32(out + 16, s->dim);
	out[20] = (uint8_t)s->dtype;
	out[21] = 0;
	bytes_put_le16(out + 22, (uint16_t)s->flags);
	bytes_put_le32(out + 24, s->aux);
	bytes_put_le32(out + 28, crc32c(0, out, 28));
}

int dsformat_sample_decode(uint32_t version, const void *buf, size_t len, struct dsformat_sample *s,
			   const uint8_t **payload, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	size_t hdr = dsformat_sample_hdr_size(version);
	if (hdr == 0)
		return status_fail(err, errlen, FEEDER_EVERSION,
				   "dataset format version %u is unknown", version);
	if (len < hdr)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "sample record is %zu bytes, shorter than its header", len);
	memset(s, 0, sizeof(*s));
	if (version >= 2) {
		uint32_t stored = bytes_le32(p + 28), c = crc32c(0, p, 28);
		if (stored != c)
			return status_fail(
				err, errlen, FEEDER_ECORRUPT,
				"record header damaged (label, lengths or shape changed: "
				"header CRC stored %08x, computed %08x)",
				stored, c);
		s->flags = bytes_le16(p + 22);
		s->aux = bytes_le32(p + 24);
	}
	s->label = bytes_le32(p);
	s->payload_len = bytes_le32(p + 4);
	s->crc = bytes_le32(p + 8);
	s->frames = bytes_le32(p + 12);
	s->dim = bytes_le32(p + 16);
	s->dtype = p[20];
	if ((size_t)s->payload_len != len - hdr)
		return status_fail(err, errlen, FEEDER_ECORRUPT,
				   "sample payload length %u does not match record size %zu",
				   s->payload_len, len - hdr);
	if (s->dtype != DSFORMAT_DTYPE_NONE) {
		size_t es = dsformat_dtype_size(s->dtype);
		if (es == 0 || s->dim == 0 || s->dim > DSFORMAT_MAX_DIM ||
		    (uint64_t)s->frames * s->dim * es != s->payload_len)
			return status_fail(
				err, errlen, FEEDER_ECORRUPT,
				"feature matrix %u x %u of dtype %u does not fill %u bytes",
				s->frames, s->dim, s->dtype, s->payload_len);
	}
	*payload = p + hdr;
	return 0;
}

int dsformat_sample_verify(const struct dsformat_sample *s, const uint8_t *payload, char *err,
			   size_t errlen)
{
	return dsformat_sample_crc_check(s, crc32c(0, payload, s->payload_len), err, errlen);
}

int dsformat_sample_crc_check(const struct dsformat_sample *s, uint32_t computed, char *err,
			      size_t errlen)
{
	if (computed != s->crc)
		return status_fail(err, errlen, FEEDER_ECORRUPT,
				   "payload damaged (CRC mismatch: stored %08x, computed %08x)",
				   s->crc, computed);
	return 0;
}

int dsformat_sample_check(const struct dsformat_header *h, const struct dsformat_sample *s,
			  char *err, size_t errlen)
{
	/* classes 0: no label table, labels are opaque to the reader. */
	if (h->classes > 0 && s->label >= h->classes)
		return status_fail(err, errlen, FEEDER_ECORRUPT,
				   "sample label %u is not below the dataset's %u classes",
				   s->label, h->classes);
	if (h->kind == DSFORMAT_KIND_FEATURES || h->kind == DSFORMAT_KIND_WAVE) {
		if (s->dtype != h->dtype || s->dim != h->feat_dim)
			return status_fail(err, errlen, FEEDER_ECORRUPT,
					   "%s sample has dimension %u of dtype %s, the dataset "
					   "%u of dtype %s",
					   dsformat_kind_name(h->kind), s->dim,
					   dsformat_dtype_name(s->dtype), h->feat_dim,
					   dsformat_dtype_name(h->dtype));
		if (s->flags || s->aux)
			return status_fail(err, errlen, FEEDER_ECORRUPT,
					   "%s sample has flags %x and aux %u (both must be 0)",
					   dsformat_kind_name(h->kind), s->flags, s->aux);
	} else if (s->dtype != DSFORMAT_DTYPE_NONE || s->frames || s->dim) {
		return status_fail(err, errlen, FEEDER_ECORRUPT,
				   "jpeg sample carries a feature matrix header (%ux%u, dtype %u)",
				   s->frames, s->dim, s->dtype);
	} else if ((s->flags & ~DSFORMAT_FLAG_TILED) || (h->version < 3 && s->flags) ||
		   ((s->flags & DSFORMAT_FLAG_TILED) ? s->aux == 0 || s->aux > 0xFFFF
						     : s->aux != 0)) {
		return status_fail(err, errlen, FEEDER_ECORRUPT,
				   "jpeg sample has flags %x and aux %u (tiled: aux is the restart "
				   "interval, 1..65535; untiled: both 0)",
				   s->flags, s->aux);
	}
	return 0;
}

void dsformat_sample_key(uint64_t index, uint8_t out[8])
{
	bytes_put_be64(out, index);
}
uint64_t dsformat_sample_key_decode(const uint8_t in[8])
{
	return bytes_be64(in);
}
void dsformat_label_key(uint32_t id, uint8_t out[4])
{
	bytes_put_be32(out, id);
}
