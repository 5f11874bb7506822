/* fuzz.h — what every Feeder fuzz harness shares.
 *
 * A harness is one LLVMFuzzerTestOneInput() that feeds arbitrary bytes to one
 * decoder and checks the properties its header promises (a sentence in err
 * on failure, an exact round trip on success, outputs inside their bounds).
 * tests/fuzz/build.sh links it with libFuzzer and ASan/UBSan under clang;
 * meson links the same file with replay_main.c under gcc so that the seed
 * corpus and every saved crash replay in the ordinary test suite. */
#ifndef FEEDER_FUZZ_H
#define FEEDER_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken property is a finding, so the harness must crash where libFuzzer
 * (and the replayer) notice it: abort() is the signal both understand. The
 * code under test never aborts; only the harness does. */
#define FUZZ_CHECK(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__,        \
				#cond);                                                            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* An error sentence must be a non-empty, terminated string. */
#define FUZZ_CHECK_ERR(err, errlen)                                                                \
	FUZZ_CHECK((err)[0] != '\0' && memchr((err), '\0', (errlen)) != NULL,                      \
		   "error return without a message")

#endif
