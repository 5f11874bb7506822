/* test_manifest.c — proto/manifest: a manifest survives encode and decode
 * unchanged, manifest_find finds every index, and each malformed text is
 * refused with its code and a sentence naming the line at fault. */
#include "check.h"
#include "manifest.h"

#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct dsformat_header header(uint64_t samples)
{
	struct dsformat_header h = { .version = DSFORMAT_VERSION,
				     .kind = DSFORMAT_KIND_JPEG,
				     .samples = samples,
				     .classes = 3,
				     .source_bytes = 123456,
				     .tiled = samples / 2 };
	snprintf(h.packer_version, sizeof(h.packer_version), "packer test");
	snprintf(h.options, sizeof(h.options), "--shard-size 1M src dest");
	return h;
}

/* A valid manifest of three shards over 10 samples. */
static void sample_manifest(struct manifest *m, struct manifest_shard *sh)
{
	static const uint64_t count[3] = { 4, 5, 1 };
	m->header = header(10);
	m->nshards = 3;
	m->shards = sh;
	uint64_t first = 0;
	for (int i = 0; i < 3; i++) {
		snprintf(sh[i].name, sizeof(sh[i].name), "shard-%05d.mdb", i);
		sh[i].first = first;
		sh[i].count = count[i];
		sh[i].bytes = 4096u * (unsigned)(i + 1);
		sh[i].crc = 0xdeadbeefu ^ (uint32_t)i;
		first += count[i];
	}
}

/* noinline: gcc 12 inlined it and took the returned copy for the local */
__attribute__((noinline)) static char *valid_text(size_t *len)
{
	static struct manifest_shard sh[3];
	struct manifest m;
	char err[256], *text = NULL;
	sample_manifest(&m, sh);
	CHECKF(manifest_encode(&m, &text, len, err, sizeof(err)) == 0, "%s", err);
	return text;
}

/* text with the first occurrence of from replaced by to. */
static char *edit(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	CHECKF(at != NULL, "'%s' not in the text", from);
	size_t n = strlen(text) - strlen(from) + strlen(to);
	char *out = malloc(n + 1);
	CHECK(out != NULL);
	size_t pre = (size_t)(at - text);
	memcpy(out, text, pre);
	strcpy(out + pre, to);
	strcat(out, at + strlen(from));
	return out;
}

/* decode must refuse text with code, its sentence containing want. */
static void refused(const char *what, const char *text, int code, const char *want)
{
	struct manifest m;
	char err[512] = "";
	int rc = manifest_decode(text, strlen(text), &m, err, sizeof(err));
	CHECKF(rc == code, "%s: code %d, want %d (%s)", what, rc, code, err);
	CHECKF(strstr(err, want) != NULL, "%s: '%s' lacks '%s'", what, err, want);
	CHECK(m.shards == NULL && m.nshards == 0);
}

static void test_round_trip(void)
{
	struct manifest_shard sh[3];
	struct manifest m, back;
	char err[256], *text;
	size_t len;
	sample_manifest(&m, sh);
	CHECKF(manifest_encode(&m, &text, &len, err, sizeof(err)) == 0, "%s", err);
	CHECK(strlen(text) == len);
	CHECK(!strncmp(text, "feeder-manifest 1\nheader 4645454445524453", 41));
	CHECK(strstr(text, "\nshards 3\nshard shard-00000.mdb 0 4 4096 deadbeef\n"
			   "shard shard-00001.mdb 4 5 8192 deadbeee\n"
			   "shard shard-00002.mdb 9 1 12288 deadbeed\nend\n"));
	CHECKF(manifest_decode(text, len, &back, err, sizeof(err)) == 0, "%s", err);
	CHECK(back.nshards == 3);
	for (int i = 0; i < 3; i++)
		CHECK(!strcmp(back.shards[i].name, sh[i].name) &&
		      back.shards[i].first == sh[i].first && back.shards[i].count == sh[i].count &&
		      back.shards[i].bytes == sh[i].bytes && back.shards[i].crc == sh[i].crc);
	struct dsformat_header h = header(10);
	CHECK(back.header.samples == 10 && back.header.classes == 3 && back.header.tiled == 5 &&
	      back.header.source_bytes == 123456 && back.header.kind == h.kind &&
	      !strcmp(back.header.options, h.options) &&
	      !strcmp(back.header.packer_version, h.packer_version));
	/* every index to its shard, the end past them */
	static const size_t want[10] = { 0, 0, 0, 0, 1, 1, 1, 1, 1, 2 };
	for (uint64_t i = 0; i < 10; i++)
		CHECK(manifest_find(&back, i) == want[i]);
	CHECK(manifest_find(&back, 10) == 3 && manifest_find(&back, UINT64_MAX) == 3);
	char *again;
	size_t len2;
	CHECK(manifest_encode(&back, &again, &len2, err, sizeof(err)) == 0);
	CHECK(len2 == len && !memcmp(again, text, len));
	free(again);
	manifest_free(&back);
	free(text);

	/* a dataset of no samples: one shard of none */
	struct manifest_shard one = { .name = "data.mdb", .bytes = 8192, .crc = 1 };
	struct manifest e = { .header = header(0), .nshards = 1, .shards = &one };
	CHECKF(manifest_encode(&e, &text, &len, err, sizeof(err)) == 0, "%s", err);
	CHECKF(manifest_decode(text, len, &back, err, sizeof(err)) == 0, "%s", err);
	CHECK(back.nshards == 1 && back.shards[0].count == 0 && manifest_find(&back, 0) == 1);
	manifest_free(&back);
	free(text);
	manifest_free(NULL);
}

/* encode validates as decode does */
static void test_encode_refuses(void)
{
	struct manifest_shard sh[3];
	struct manifest m;
	char err[256], *text = (char *)1;
	size_t len = 1;
	sample_manifest(&m, sh);
	sh[1].first = 5;
	CHECK(manifest_encode(&m, &text, &len, err, sizeof(err)) == FEEDER_EFORMAT);
	CHECKF(strstr(err, "shard 1: shard shard-00001.mdb starts at sample 5"), "%s", err);
	CHECK(text == NULL && len == 0);
	sample_manifest(&m, sh);
	snprintf(sh[2].name, sizeof(sh[2].name), "a b");
	CHECK(manifest_encode(&m, &text, &len, err, sizeof(err)) == FEEDER_EFORMAT);
	CHECKF(strstr(err, "shard 2: shard name"), "%s", err);
	sample_manifest(&m, sh);
	memset(sh[0].name, 'x', sizeof(sh[0].name)); /* not terminated */
	CHECK(manifest_encode(&m, &text, &len, err, sizeof(err)) == FEEDER_EFORMAT);
	sample_manifest(&m, sh);
	m.nshards = 0;
	CHECK(manifest_encode(&m, &text, &len, err, sizeof(err)) == FEEDER_EFORMAT);
	sample_manifest(&m, sh);
	m.header.version = 99;
	CHECK(manifest_encode(&m, &text, &len, err, sizeof(err)) == FEEDER_EVERSION);
}

static void test_refusals(void)
{
	size_t len;
	char *ok = valid_text(&len);
	const char *hex_start = strstr(ok, "header ") + 7;
	char hex[2 * DSFORMAT_HEADER_SIZE + 1];
	memcpy(hex, hex_start, sizeof(hex) - 1);
	hex[sizeof(hex) - 1] = 0;
	const char *line4 = "shard shard-00000.mdb 0 4 4096 deadbeef\n";
	struct {
		const char *what, *from, *to;
		int code;
		const char *want;
	} cases[] = {
		{ "bad magic", "feeder-manifest 1", "feeder-manifesto 1", FEEDER_EFORMAT,
		  "line 1: not a Feeder manifest" },
		{ "version 2", "feeder-manifest 1", "feeder-manifest 2", FEEDER_EVERSION,
		  "line 1: manifest version 2, this build reads 1" },
		{ "version not a number", "feeder-manifest 1", "feeder-manifest x", FEEDER_EFORMAT,
		  "line 1: the version is not a number" },
		{ "missing header word", "header ", "heater ", FEEDER_EFORMAT,
		  "line 2: expected \"header HEX\"" },
		{ "header short", hex, "00", FEEDER_EFORMAT, "line 2: the header must be 688" },
		{ "header uppercase", "header 46", "header 4F", FEEDER_EFORMAT,
		  "line 2: the header must be" },
		{ "header not hex", "header 46", "header g6", FEEDER_EFORMAT,
		  "line 2: the header must be" },
		{ "header bad magic", "header 46", "header 47", FEEDER_EFORMAT,
		  "line 2: dataset header has the wrong magic" },
		{ "header newer", "header 464545444552445303", "header 464545444552445309",
		  FEEDER_EVERSION, "line 2: dataset format version 9" },
		{ "shards word", "shards 3", "shard 3", FEEDER_EFORMAT,
		  "line 3: expected \"shards N\"" },
		{ "shards zero", "shards 3", "shards 0", FEEDER_EFORMAT, "line 3: 0 shards" },
		{ "shards leading zero", "shards 3", "shards 03", FEEDER_EFORMAT,
		  "line 3: expected \"shards N\"" },
		{ "more shards than lines", "shards 3", "shards 999999", FEEDER_EFORMAT,
		  "line 3: 999999 shards" },
		{ "fewer shard lines", "shards 3", "shards 4", FEEDER_EFORMAT,
		  "line 7: expected \"shard NAME" },
		{ "fewer shards declared", "shards 3", "shards 2", FEEDER_EFORMAT,
		  "line 6: expected \"end\"" },
		{ "gap", "shard-00001.mdb 4", "shard-00001.mdb 5", FEEDER_EFORMAT,
		  "line 5: shard shard-00001.mdb starts at sample 5, the ranges before it end at 4" },
		{ "overlap", "shard-00002.mdb 9", "shard-00002.mdb 8", FEEDER_EFORMAT,
		  "line 6: shard shard-00002.mdb starts at sample 8" },
		{ "sum short", "shard-00002.mdb 9 1", "shard-00002.mdb 9 0", FEEDER_EFORMAT,
		  "line 6: shard shard-00002.mdb holds no samples" },
		{ "sum long", "shard-00002.mdb 9 1", "shard-00002.mdb 9 2", FEEDER_EFORMAT,
		  "line 6: shard shard-00002.mdb runs past the header's 10 samples" },
		{ "zero bytes", "4 4096", "4 0", FEEDER_EFORMAT,
		  "line 4: shard shard-00000.mdb has a size of 0 bytes" },
		{ "name with slash", "shard-00001.mdb", "../x", FEEDER_EFORMAT,
		  "line 5: shard name is not" },
		{ "name dot", "shard-00001.mdb", ".hidden", FEEDER_EFORMAT,
		  "line 5: shard name is not" },
		{ "name too long", "shard-00001.mdb",
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  FEEDER_EFORMAT, "line 5: shard name is not" },
		{ "duplicate name", "shard-00002.mdb", "shard-00000.mdb", FEEDER_EFORMAT,
		  "line 6: shard name shard-00000.mdb is also line 4's" },
		{ "crc short", "deadbeef", "deadbee", FEEDER_EFORMAT,
		  "line 4: the CRC must be 8 lowercase hex digits" },
		{ "crc upper", "deadbeef", "DEADBEEF", FEEDER_EFORMAT, "line 4: the CRC must be" },
		{ "number sign", "4 4096", "+4 4096", FEEDER_EFORMAT,
		  "line 4: first, count and bytes must be decimal" },
		{ "number overflow", "4 4096", "4 18446744073709551616", FEEDER_EFORMAT,
		  "line 4: first, count and bytes must be decimal" },
		{ "count huge", "shard-00002.mdb 9 1", "shard-00002.mdb 9 18446744073709551615",
		  FEEDER_EFORMAT, "line 6: shard shard-00002.mdb runs past" },
		{ "leading zero", "4 4096", "04 4096", FEEDER_EFORMAT,
		  "line 4: first, count and bytes" },
		{ "two spaces", "4 4096", "4  4096", FEEDER_EFORMAT,
		  "line 4: expected \"shard NAME" },
		{ "extra field", "deadbeef\n", "deadbeef x\n", FEEDER_EFORMAT,
		  "line 4: expected \"shard NAME" },
		{ "trailing space", "deadbeef\n", "deadbeef \n", FEEDER_EFORMAT, "line 4" },
		{ "CR line end", "deadbeef\n", "deadbeef\r\n", FEEDER_EFORMAT,
		  "line 4: the CRC must be" },
		{ "blank line", line4, "\n", FEEDER_EFORMAT, "line 4: expected \"shard NAME" },
		{ "missing end", "end\n", "", FEEDER_EFORMAT, "line 7: expected \"end\"" },
		{ "end unterminated", "end\n", "end", FEEDER_EFORMAT, "line 7: expected \"end\"" },
		{ "end misspelt", "end\n", "ends\n", FEEDER_EFORMAT, "line 7: expected \"end\"" },
		{ "trailing garbage", "end\n", "end\nx", FEEDER_EFORMAT,
		  "line 8: text after \"end\"" },
		{ "trailing newline", "end\n", "end\n\n", FEEDER_EFORMAT,
		  "line 8: text after \"end\"" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *bad = edit(ok, cases[i].from, cases[i].to);
		refused(cases[i].what, bad, cases[i].code, cases[i].want);
		free(bad);
	}
	/* samples in the header != the shards' sum: 10 -> 11 */
	struct manifest_shard sh[3];
	struct manifest m;
	sample_manifest(&m, sh);
	m.header.samples = 11;
	char raw_hex[2 * DSFORMAT_HEADER_SIZE + 1];
	uint8_t raw[DSFORMAT_HEADER_SIZE];
	dsformat_header_encode(&m.header, raw);
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(raw_hex + 2 * i, 3, "%02x", raw[i]);
	char *bad = edit(ok, hex, raw_hex);
	refused("sum != samples", bad, FEEDER_EFORMAT,
		"manifest shards hold 10 samples, its header says 11");
	free(bad);
	refused("empty", "", FEEDER_EFORMAT, "line 1");
	/* a NUL inside a line */
	char nul[64] = "feeder-manifest 1\nheader x";
	struct manifest mm;
	char err[256];
	nul[20] = 0;
	CHECK(manifest_decode(nul, 26, &mm, err, sizeof(err)) == FEEDER_EFORMAT);
	CHECK(manifest_decode(ok, MANIFEST_MAX_TEXT + 1u, &mm, err, sizeof(err)) == FEEDER_EFORMAT);
	CHECKF(strstr(err, "more than the"), "%s", err);
	free(ok);
}

int main(void)
{
	test_round_trip();
	test_encode_refuses();
	test_refusals();
	puts("manifest: ok");
	return 0;
}
