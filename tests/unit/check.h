/* check.h — the assertion macros of Feeder's C tests.
 *
 * A test is an executable that exits 0 (pass), 1 (fail) or 77 (skip), as
 * meson and automake expect. CHECK prints the failed condition with its
 * location and exits 1 at once; SKIP prints why and exits 77. */
#ifndef FEEDER_CHECK_H
#define FEEDER_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

#define CHECKF(cond, ...)                                                            \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                \
			fputc('\n', stderr);                                         \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

#define SKIP(...)                                                                    \
	do {                                                                         \
		fprintf(stderr, "SKIP: ");                                           \
		fprintf(stderr, __VA_ARGS__);                                        \
		fputc('\n', stderr);                                                 \
		exit(77);                                                            \
	} while (0)

#endif
