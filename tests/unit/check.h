/* check.h — the assertion macros of Feeder's C tests.
 *
 * A test is an executable that exits 0 (pass), 1 (fail) or 77 (skip), as
 * meson and automake expect. CHECK prints the failed condition with its
 * location and exits 1 at once; SKIP prints why and exits 77. */
#ifndef FEEDER_CHECK_H
#define FEEDER_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CHECKF(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);   \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define SKIP(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "SKIP: ");                                                         \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		exit(77);                                                                          \
	} while (0)

/* A whole file's bytes, malloc'd (*n of them). */
static inline void *check_read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	CHECKF(f != NULL, "%s: cannot open", path);
	CHECK(fseek(f, 0, SEEK_END) == 0);
	long bytes = ftell(f);
	CHECK(bytes >= 0);
	rewind(f);
	*n = (size_t)bytes;
	void *v = malloc(*n ? *n : 1);
	CHECK(v != NULL);
	CHECKF(fread(v, 1, *n, f) == *n, "%s: short read", path);
	fclose(f);
	return v;
}

static inline void check_write_file(const char *path, const void *v, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECKF(f != NULL, "%s: cannot create", path);
	CHECKF(fwrite(v, 1, n, f) == n && fclose(f) == 0, "%s: write failed", path);
}

/* Raw little-endian float32 files, for the modes in which a C test hands
 * a library function's output to a Python reference (tests/python). */
static inline float *check_read_f32(const char *path, size_t *n)
{
	size_t bytes;
	float *v = check_read_file(path, &bytes);
	CHECKF(bytes % 4 == 0, "%s: not float32 samples", path);
	*n = bytes / 4;
	return v;
}

static inline void check_write_f32(const char *path, const float *v, size_t n)
{
	check_write_file(path, v, 4 * n);
}

#endif
