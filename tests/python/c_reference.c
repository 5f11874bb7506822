/* c_reference.c — the C side of the Python client's tests.
 *
 *   c_reference layout
 *       print, as one JSON object, sizeof every struct, the offset of every
 *       field and the value of every constant that the package's cffi
 *       declarations have (c_layout.h, generated from the same declarations
 *       by client/python/gen_cdef.py), as a C compiler makes them of
 *       feeder.h, so that test_layout.py can hold cffi's layouts to it.
 *   c_reference dump SOCKET OUT [field=value ...]
 *       open a stream with libfeeder and write every batch to OUT: per batch
 *       a header of u64 epoch, u64 batch_index, u32 count, u32 replacements,
 *       u32 shape[4], u64 bytes (48 bytes), then count int32 labels, then the
 *       tensor's bytes, all in this machine's byte order. test_loader.py
 *       compares feeder.Loader with this. A field is any field of struct feeder_stream_opts by its C
 *       path (batch, jpeg.height, features.chunk_len, dataset) and the value
 *       a number (enums by their value) or, for a name, the text; the rest
 *       keep feeder_stream_opts_init's defaults.
 *
 * Exit status: 0, 1 on any failure (with the reason on stderr), 2 for usage. */
#include "feeder.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How a field of the options is set from text. */
enum kind { K_U32, K_U64, K_F32, K_STR, K_OTHER };

#define KIND(x)                                                                                    \
	_Generic((x), uint32_t: K_U32, uint64_t: K_U64, float: K_F32, char *: K_STR, \
			 default: K_OTHER)

struct c_field {
	const char *type, *path;
	size_t offset, size;
	enum kind kind;
};

/* Every field of every struct in the generated list; set_opt takes those
 * of struct feeder_stream_opts. */
static const struct c_field fields[] = {
#define LAYOUT_SIZE(T)
#define LAYOUT_CONST(c)
#define LAYOUT_FIELD(T, f)                                                                         \
	{ #T, #f, offsetof(struct T, f), sizeof(((struct T *)0)->f), KIND(((struct T *)0)->f) },
#include "c_layout.h"
#undef LAYOUT_SIZE
#undef LAYOUT_CONST
#undef LAYOUT_FIELD
};

static int layout(void)
{
	const char *sep = "";
	printf("{");
#define LAYOUT_SIZE(T) printf("%s\"%s\": %zu", sep, #T, sizeof(struct T)), sep = ", ";
#define LAYOUT_FIELD(T, f)
#define LAYOUT_CONST(c) printf("%s\"const %s\": %lld", sep, #c, (long long)(c)), sep = ", ";
#include "c_layout.h"
#undef LAYOUT_SIZE
#undef LAYOUT_CONST
#undef LAYOUT_FIELD
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		printf("%s\"%s.%s\": %zu", sep, fields[i].type, fields[i].path, fields[i].offset);
	printf("}\n");
	return 0;
}

static int parse_u64(const char *key, const char *v, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-') {
		fprintf(stderr, "c_reference: %s=%s is not a non-negative integer\n", key, v);
		return -1;
	}
	*out = x;
	return 0;
}

static int set_field(struct feeder_stream_opts *o, const struct c_field *f, const char *v)
{
	char *p = (char *)o + f->offset;
	uint64_t x = 0;
	switch (f->kind) {
	case K_STR:
		if (strlen(v) >= f->size) {
			fprintf(stderr, "c_reference: %s=%s is longer than %zu bytes\n", f->path, v,
				f->size - 1);
			return -1;
		}
		strncpy(p, v, f->size); /* zero-padded to the field's end */
		return 0;
	case K_F32: {
		char *end;
		float y = strtof(v, &end);
		if (end == v || *end) {
			fprintf(stderr, "c_reference: %s=%s is not a number\n", f->path, v);
			return -1;
		}
		memcpy(p, &y, sizeof y);
		return 0;
	}
	case K_U32:
		if (parse_u64(f->path, v, &x))
			return -1;
		if (x > UINT32_MAX) {
			fprintf(stderr, "c_reference: %s=%s is out of range\n", f->path, v);
			return -1;
		}
		uint32_t y = (uint32_t)x;
		memcpy(p, &y, sizeof y);
		return 0;
	case K_U64:
		if (parse_u64(f->path, v, &x))
			return -1;
		memcpy(p, &x, sizeof x);
		return 0;
	default:
		fprintf(stderr, "c_reference: %s is not a field set from text\n", f->path);
		return -1;
	}
}

/* Apply one field=value to o; returns 0 or -1 with the reason on stderr. */
static int set_opt(struct feeder_stream_opts *o, char *kv)
{
	char *eq = strchr(kv, '=');
	if (!eq) {
		fprintf(stderr, "c_reference: '%s' is not field=value\n", kv);
		return -1;
	}
	*eq = '\0';
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		if (strcmp(fields[i].type, "feeder_stream_opts") == 0 &&
		    strcmp(fields[i].path, kv) == 0)
			return set_field(o, &fields[i], eq + 1);
	fprintf(stderr, "c_reference: struct feeder_stream_opts has no field '%s'\n", kv);
	return -1;
}

static int dump(const char *sock, const char *out, int nkv, char **kv)
{
	struct feeder_stream_opts o;
	feeder_stream_opts_init(&o);
	for (int i = 0; i < nkv; i++)
		if (set_opt(&o, kv[i]))
			return 2;
	FILE *fp = fopen(out, "wb");
	if (!fp) {
		fprintf(stderr, "c_reference: %s: %s\n", out, strerror(errno));
		return 1;
	}
	struct feeder *f = NULL;
	struct feeder_stream *s = NULL;
	int status = 1, rc = 0;
	if (feeder_connect(sock, 10000, &f))
		fprintf(stderr, "c_reference: connect: %s\n", feeder_last_error(NULL));
	else if (feeder_stream_open(f, &o, 10000, &s))
		fprintf(stderr, "c_reference: open: %s\n", feeder_last_error(f));
	else
		status = 0;
	struct feeder_batch b;
	while (status == 0 && (rc = feeder_stream_next(s, 20000, &b)) == 0) {
		struct {
			uint64_t epoch, index;
			uint32_t count, replacements, shape[4];
			uint64_t bytes;
		} h = { b.epoch, b.batch_index, b.count, b.replacements, { 0 }, b.bytes };
		_Static_assert(sizeof h == 48, "the header is 48 bytes, unpadded");
		memcpy(h.shape, b.shape, sizeof h.shape);
		if (fwrite(&h, 1, sizeof h, fp) != sizeof h ||
		    fwrite(b.labels, sizeof(int32_t), b.count, fp) != b.count ||
		    fwrite(b.data, 1, b.bytes, fp) != b.bytes) {
			fprintf(stderr, "c_reference: writing %s: %s\n", out, strerror(errno));
			status = 1;
		}
		feeder_batch_release(s, &b);
	}
	if (status == 0 && rc != FEEDER_EEND) {
		fprintf(stderr, "c_reference: next: %s\n", feeder_last_error(f));
		status = 1;
	}
	feeder_stream_close(s);
	feeder_disconnect(f);
	if (fclose(fp) != 0 && status == 0) {
		fprintf(stderr, "c_reference: closing %s: %s\n", out, strerror(errno));
		status = 1;
	}
	return status;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "layout") == 0)
		return layout();
	if (argc >= 4 && strcmp(argv[1], "dump") == 0)
		return dump(argv[2], argv[3], argc - 4, argv + 4);
	fprintf(stderr, "usage: c_reference layout | dump SOCKET OUT [field=value ...]\n");
	return 2;
}
