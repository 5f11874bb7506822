/* test_dsstore_grow — a writer that starts with a 1 MiB map and writes 40 MiB
 * grows the map instead of failing with MDB_MAP_FULL, and the reader sees
 * every record with its CRC, label and name intact; the data file is shrunk
 * to its used size. */
#include "check.h"
#include "crc32c.h"
#include "dsstore.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
	char dir[] = "/tmp/feeder-test-dsstore-XXXXXX", err[256];
	CHECK(mkdtemp(dir));
	struct dsstore_writer *w;
	CHECKF(dsstore_writer_open(dir, 1 << 20, &w, err, sizeof(err)) == 0, "%s", err);
	enum { N = 400, LEN = 100000 };
	static uint8_t p[LEN];
	for (uint64_t i = 0; i < N; i++) {
		uint32_t len = LEN - (uint32_t)(i * 37 % 5000);
		for (uint32_t j = 0; j < len; j++)
			p[j] = (uint8_t)(i * 7 + j);
		struct dsformat_sample s = { .label = (uint32_t)(i % 3),
					     .payload_len = len,
					     .crc = crc32c(0, p, len) };
		CHECKF(dsstore_writer_put_sample(w, i, &s, p, err, sizeof(err)) == 0, "%s", err);
		char name[32];
		snprintf(name, sizeof(name), "s%llu.jpg", (unsigned long long)i);
		CHECKF(dsstore_writer_put_name(w, i, name, err, sizeof(err)) == 0, "%s", err);
		if (i % 100 == 99)
			CHECK(dsstore_writer_commit(w, err, sizeof(err)) == 0);
	}
	static const char *labels[] = { "cat", "dog", "eel" };
	for (uint32_t c = 0; c < 3; c++)
		CHECK(dsstore_writer_put_label(w, c, labels[c], err, sizeof(err)) == 0);
	CHECK(dsstore_writer_grows(w) >= 5);
	struct dsformat_header h = {
		.version = DSFORMAT_VERSION, .kind = DSFORMAT_KIND_JPEG, .samples = N, .classes = 3
	};
	CHECKF(dsstore_writer_finish(w, &h, err, sizeof(err)) == 0, "%s", err);

	char path[300];
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	struct stat st;
	CHECK(stat(path, &st) == 0);
	CHECKF(st.st_size < (off_t)N * LEN * 11 / 10, "data file %lld bytes",
	       (long long)st.st_size);

	struct dsstore *ds;
	CHECKF(dsstore_open(dir, &ds, err, sizeof(err)) == 0, "%s", err);
	CHECK(dsstore_header(ds)->samples == N && dsstore_header(ds)->classes == 3);
	struct dsstore_txn *t;
	CHECK(dsstore_txn_begin(ds, &t, err, sizeof(err)) == 0);
	for (uint64_t i = 0; i < N; i++) {
		struct dsformat_sample s;
		const uint8_t *pl;
		CHECKF(dsstore_get_sample(t, i, &s, &pl, err, sizeof(err)) == 0, "%s", err);
		CHECK(s.label == i % 3 && s.payload_len == LEN - i * 37 % 5000);
		CHECK(dsformat_sample_verify(&s, pl, err, sizeof(err)) == 0);
		CHECK(pl[5] == (uint8_t)(i * 7 + 5));
		const char *nm;
		size_t nl;
		CHECK(dsstore_get_name(t, i, &nm, &nl) == 0);
		char want[32];
		snprintf(want, sizeof(want), "s%llu.jpg", (unsigned long long)i);
		CHECK(nl == strlen(want) && memcmp(nm, want, nl) == 0);
	}
	const char *lab;
	size_t ll;
	CHECK(dsstore_get_label(t, 1, &lab, &ll) == 0 && ll == 3 && memcmp(lab, "dog", 3) == 0);
	struct dsformat_sample s;
	const uint8_t *pl;
	CHECK(dsstore_get_sample(t, N, &s, &pl, err, sizeof(err)) == -2 /* -ENOENT */);
	dsstore_txn_end(t);
	dsstore_close(ds);

	/* Not a dataset: a clear error. */
	CHECK(dsstore_open("/tmp", &ds, err, sizeof(err)) < 0);
	CHECK(strstr(err, "not a dataset"));
	unlink(path);
	rmdir(dir);
	return 0;
}
