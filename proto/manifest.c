/* manifest.c — a sharded dataset's manifest, parsed and written (see
 * manifest.h). The parser is strict: the text is a contract between
 * packer, feederd and object storage, so anything it does not define is
 * refused, naming the line, rather than guessed at. */
#include "manifest.h"

#include "status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "feeder-manifest"
/* The shortest shard line: "shard a 0 1 1 00000000\n". */
#define MIN_SHARD_LINE 23

/* A line of the text: [p, p + len), its '\n' not included. */
struct cursor {
	const char *text;
	size_t len, pos, line;
};

/* The next line into *p, *n; 0, or -1 at the end of the text or where the
 * last line has no '\n'. */
static int next_line(struct cursor *c, const char **p, size_t *n)
{
	if (c->pos >= c->len)
		return -1;
	const char *start = c->text + c->pos;
	const char *nl = memchr(start, '\n', c->len - c->pos);
	if (!nl)
		return -1;
	*p = start;
	*n = (size_t)(nl - start);
	c->pos += *n + 1;
	c->line++;
	return 0;
}

/* Split a line into at most max fields at single spaces. The number of
 * fields, or -1 if a field is empty (two spaces, a leading or trailing
 * one) or there are more than max. */
static int split(const char *p, size_t n, const char **f, size_t *flen, int max)
{
	int k = 0;
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && p[i] != ' ')
			continue;
		if (i == start || k == max)
			return -1;
		f[k] = p + start;
		flen[k] = i - start;
		k++;
		start = i + 1;
	}
	return k;
}

static int field_is(const char *f, size_t n, const char *word)
{
	return n == strlen(word) && memcmp(f, word, n) == 0;
}

/* A decimal u64: digits only, no sign, no leading zero but "0" itself. */
static int parse_u64(const char *f, size_t n, uint64_t *out)
{
	if (n == 0 || n > 20 || (n > 1 && f[0] == '0'))
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (f[i] < '0' || f[i] > '9')
			return -1;
		unsigned d = (unsigned)(f[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Lowercase hex of n bytes into out (2n digits). -1 if not. */
static int parse_hex(const char *f, size_t digits, uint8_t *out)
{
	for (size_t i = 0; i < digits; i += 2) {
		int hi = hex_digit(f[i]), lo = hex_digit(f[i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static int name_ok(const char *name, size_t n)
{
	if (n == 0 || n >= MANIFEST_MAX_NAME || name[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

/* Shard i of m against the rules that need no other shard: its name, its
 * range starting at first, its counts. A sentence in why, or 0. */
static int check_shard(const struct manifest *m, size_t i, uint64_t first, char *why, size_t wlen)
{
	const struct manifest_shard *s = &m->shards[i];
	size_t n = strnlen(s->name, MANIFEST_MAX_NAME);
	if (!name_ok(s->name, n))
		return status_fail(why, wlen, FEEDER_EFORMAT,
				   "shard name is not 1 to %d characters of [A-Za-z0-9._-] "
				   "not starting with '.'",
				   MANIFEST_MAX_NAME - 1);
	if (s->first != first)
		return status_fail(why, wlen, FEEDER_EFORMAT,
				   "shard %s starts at sample %llu, the ranges before it end at "
				   "%llu",
				   s->name, (unsigned long long)s->first,
				   (unsigned long long)first);
	if (s->count == 0 && !(m->nshards == 1 && m->header.samples == 0))
		return status_fail(why, wlen, FEEDER_EFORMAT, "shard %s holds no samples", s->name);
	if (s->count > UINT64_MAX - s->first || s->first + s->count > m->header.samples)
		return status_fail(why, wlen, FEEDER_EFORMAT,
				   "shard %s runs past the header's %llu samples", s->name,
				   (unsigned long long)m->header.samples);
	if (s->bytes == 0)
		return status_fail(why, wlen, FEEDER_EFORMAT, "shard %s has a size of 0 bytes",
				   s->name);
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	const struct manifest_shard *x = *(const struct manifest_shard *const *)a;
	const struct manifest_shard *y = *(const struct manifest_shard *const *)b;
	return strcmp(x->name, y->name);
}

/* The rules across shards: unique names, the ranges adding up to the
 * header's samples. where(i) names shard i's place in messages ("line N"
 * or "shard N"): base + i with the word. */
static int check_all(const struct manifest *m, const char *word, size_t base, char *err,
		     size_t errlen)
{
	char why[300];
	uint64_t first = 0;
	int rc;
	if (m->nshards == 0 || m->nshards > MANIFEST_MAX_SHARDS)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "manifest has %zu shards, not 1 to %u", m->nshards,
				   MANIFEST_MAX_SHARDS);
	for (size_t i = 0; i < m->nshards; i++) {
		if ((rc = check_shard(m, i, first, why, sizeof(why))))
			return status_fail(err, errlen, rc, "manifest %s %zu: %s", word, base + i,
					   why);
		first += m->shards[i].count;
	}
	if (first != m->header.samples)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "manifest shards hold %llu samples, its header says %llu",
				   (unsigned long long)first,
				   (unsigned long long)m->header.samples);
	const struct manifest_shard **by = malloc(m->nshards * sizeof(*by));
	if (!by)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < m->nshards; i++)
		by[i] = &m->shards[i];
	qsort(by, m->nshards, sizeof(*by), cmp_name);
	rc = 0;
	for (size_t i = 1; i < m->nshards && !rc; i++)
		if (!strcmp(by[i - 1]->name, by[i]->name)) {
			size_t a = (size_t)(by[i - 1] - m->shards), b = (size_t)(by[i] - m->shards);
			rc = status_fail(err, errlen, FEEDER_EFORMAT,
					 "manifest %s %zu: shard name %s is also %s %zu's", word,
					 base + (a > b ? a : b), by[i]->name, word,
					 base + (a < b ? a : b));
		}
	free(by);
	return rc;
}

/* A shard line's fields into s. A sentence in why, or 0. */
static int parse_shard(const char *p, size_t n, struct manifest_shard *s, char *why, size_t wlen)
{
	const char *f[6];
	size_t fl[6];
	if (split(p, n, f, fl, 6) != 6 || !field_is(f[0], fl[0], "shard"))
		return status_fail(why, wlen, FEEDER_EFORMAT,
				   "expected \"shard NAME FIRST COUNT BYTES CRC\"");
	if (!name_ok(f[1], fl[1]))
		return status_fail(why, wlen, FEEDER_EFORMAT,
				   "shard name is not 1 to %d characters of [A-Za-z0-9._-] not "
				   "starting with '.'",
				   MANIFEST_MAX_NAME - 1);
	memcpy(s->name, f[1], fl[1]);
	s->name[fl[1]] = 0;
	if (parse_u64(f[2], fl[2], &s->first) || parse_u64(f[3], fl[3], &s->count) ||
	    parse_u64(f[4], fl[4], &s->bytes))
		return status_fail(why, wlen, FEEDER_EFORMAT,
				   "first, count and bytes must be decimal numbers below 2^64 "
				   "without leading zeros");
	uint8_t crc[4];
	if (fl[5] != 8 || parse_hex(f[5], 8, crc))
		return status_fail(why, wlen, FEEDER_EFORMAT,
				   "the CRC must be 8 lowercase hex digits");
	s->crc = (uint32_t)crc[0] << 24 | (uint32_t)crc[1] << 16 | (uint32_t)crc[2] << 8 | crc[3];
	return 0;
}

/* The header lines: magic and version, the header, the shard count (into
 * *nshards, checked against what the rest of the text can hold). */
static int parse_head(struct cursor *c, struct manifest *m, size_t *nshards, char *err,
		      size_t errlen)
{
	const char *p, *f[3];
	size_t n, fl[3];
	char why[256];
	if (next_line(c, &p, &n) || split(p, n, f, fl, 2) != 2 || !field_is(f[0], fl[0], MAGIC))
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "manifest line 1: not a Feeder manifest (expected \"%s %d\")",
				   MAGIC, MANIFEST_VERSION);
	uint64_t v;
	if (parse_u64(f[1], fl[1], &v))
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "manifest line 1: the version is not a number");
	if (v != MANIFEST_VERSION)
		return status_fail(err, errlen, FEEDER_EVERSION,
				   "manifest line 1: manifest version %llu, this build reads %d",
				   (unsigned long long)v, MANIFEST_VERSION);
	if (next_line(c, &p, &n) || split(p, n, f, fl, 2) != 2 || !field_is(f[0], fl[0], "header"))
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "manifest line 2: expected \"header HEX\"");
	uint8_t raw[DSFORMAT_HEADER_SIZE];
	if (fl[1] != 2 * DSFORMAT_HEADER_SIZE || parse_hex(f[1], fl[1], raw))
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "manifest line 2: the header must be %d lowercase hex digits",
				   2 * DSFORMAT_HEADER_SIZE);
	int rc = dsformat_header_decode(raw, sizeof(raw), &m->header, why, sizeof(why));
	if (rc)
		return status_fail(err, errlen, rc, "manifest line 2: %s", why);
	/* One spelling of each header: bytes its fields do not account for
	 * (after a string's end) would not survive a rewrite of the manifest. */
	uint8_t again[DSFORMAT_HEADER_SIZE];
	dsformat_header_encode(&m->header, again);
	if (memcmp(raw, again, sizeof(raw)))
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "manifest line 2: the header has bytes its fields do not "
				   "account for");
	uint64_t ns;
	if (next_line(c, &p, &n) || split(p, n, f, fl, 2) != 2 ||
	    !field_is(f[0], fl[0], "shards") || parse_u64(f[1], fl[1], &ns))
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "manifest line 3: expected \"shards N\"");
	if (ns == 0 || ns > MANIFEST_MAX_SHARDS || ns > (c->len - c->pos) / MIN_SHARD_LINE)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "manifest line 3: %llu shards, not 1 to %u or more lines than "
				   "the manifest has",
				   (unsigned long long)ns, MANIFEST_MAX_SHARDS);
	*nshards = (size_t)ns;
	return 0;
}

int manifest_decode(const char *text, size_t len, struct manifest *m, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	if (len > MANIFEST_MAX_TEXT)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "manifest of %zu bytes, more than the %u allowed", len,
				   MANIFEST_MAX_TEXT);
	struct cursor c = { .text = text, .len = len };
	size_t ns = 0;
	int rc = parse_head(&c, m, &ns, err, errlen);
	if (rc)
		return rc;
	m->shards = calloc(ns, sizeof(*m->shards));
	if (!m->shards)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	m->nshards = ns;
	char why[300];
	const char *p;
	size_t n;
	for (size_t i = 0; i < ns; i++) {
		if (next_line(&c, &p, &n)) {
			rc = status_fail(err, errlen, FEEDER_EFORMAT,
					 "manifest line %zu: the text ends before shard %zu of %zu",
					 c.line + 1, i + 1, ns);
			goto fail;
		}
		if ((rc = parse_shard(p, n, &m->shards[i], why, sizeof(why)))) {
			rc = status_fail(err, errlen, rc, "manifest line %zu: %s", c.line, why);
			goto fail;
		}
	}
	size_t at = c.line + 1;
	if (next_line(&c, &p, &n) || !field_is(p, n, "end")) {
		rc = status_fail(err, errlen, FEEDER_EFORMAT, "manifest line %zu: expected \"end\"",
				 at);
		goto fail;
	}
	if (c.pos != len) {
		rc = status_fail(err, errlen, FEEDER_EFORMAT,
				 "manifest line %zu: text after \"end\"", c.line + 1);
		goto fail;
	}
	if ((rc = check_all(m, "line", 4, err, errlen)))
		goto fail;
	return 0;
fail:
	manifest_free(m);
	return rc;
}

int manifest_encode(const struct manifest *m, char **text, size_t *len, char *err, size_t errlen)
{
	*text = NULL;
	*len = 0;
	int rc = check_all(m, "shard", 0, err, errlen);
	if (rc)
		return rc;
	/* the longest line: "shard" NAME and three 20-digit numbers, a CRC */
	size_t cap = 64 + 2 * DSFORMAT_HEADER_SIZE + m->nshards * (MANIFEST_MAX_NAME + 96);
	char *out = malloc(cap);
	if (!out)
		return status_fail(err, errlen, -ENOMEM, "out of memory");
	uint8_t raw[DSFORMAT_HEADER_SIZE];
	dsformat_header_encode(&m->header, raw);
	size_t n = (size_t)snprintf(out, cap, "%s %d\nheader ", MAGIC, MANIFEST_VERSION);
	for (size_t i = 0; i < sizeof(raw); i++)
		n += (size_t)snprintf(out + n, cap - n, "%02x", raw[i]);
	n += (size_t)snprintf(out + n, cap - n, "\nshards %zu\n", m->nshards);
	for (size_t i = 0; i < m->nshards; i++) {
		const struct manifest_shard *s = &m->shards[i];
		n += (size_t)snprintf(out + n, cap - n, "shard %s %llu %llu %llu %08x\n", s->name,
				      (unsigned long long)s->first, (unsigned long long)s->count,
				      (unsigned long long)s->bytes, s->crc);
	}
	n += (size_t)snprintf(out + n, cap - n, "end\n");
	/* What decode reads back must be m: the header's strings and fields
	 * included (dsformat_header_encode truncates, decode validates). */
	struct manifest back;
	if ((rc = manifest_decode(out, n, &back, err, errlen))) {
		free(out);
		return rc;
	}
	manifest_free(&back);
	*text = out;
	*len = n;
	return 0;
}

size_t manifest_find(const struct manifest *m, uint64_t index)
{
	size_t lo = 0, hi = m->nshards;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct manifest_shard *s = &m->shards[mid];
		if (index < s->first)
			hi = mid;
		else if (index - s->first >= s->count)
			lo = mid + 1;
		else
			return mid;
	}
	return m->nshards;
}

void manifest_free(struct manifest *m)
{
	if (!m)
		return;
	free(m->shards);
	m->shards = NULL;
	m->nshards = 0;
}
