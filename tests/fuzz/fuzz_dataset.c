/* fuzz_dataset.c — arbitrary bytes as a whole data.mdb, read through the
 * real store code (dsstore: lmdb_check, LMDB, the value bounds checks,
 * dsformat's record decoding and CRC).
 *
 * The seeds are small datasets packer wrote; libFuzzer mutates their pages,
 * meta pages, overflow references and record headers. The input is written
 * to data.mdb in a private directory, opened as feederd opens a dataset, and
 * every sample, label and name is read as a stream and packer verify would.
 * Properties: an open or a read either succeeds or fails with a FEEDER_E*
 * or errno code and a sentence; an accepted record's payload lies inside
 * the input; nothing crashes, hangs or reads outside the file (ASan). */
#include "fuzz.h"

#include "dsformat.h"
#include "dsstore.h"
#include "status.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* Reads per input stay bounded whatever counts a mutated header claims. */
#define MAX_READS 512

static char dir[64];

static void remove_dir(void)
{
	char path[96];
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	unlink(path);
	rmdir(dir);
}

static void write_input(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz_dataset.XXXXXX");
		FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
		atexit(remove_dir);
	}
	char path[96];
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	FILE *f = fopen(path, "wbe");
	FUZZ_CHECK(f && fwrite(data, 1, size, f) == size && fclose(f) == 0, "write %s: %s", path,
		   strerror(errno));
}

static int code_ok(int rc)
{
	return rc == FEEDER_ECORRUPT || rc == FEEDER_EFORMAT || rc == FEEDER_EVERSION ||
	       (rc < 0 && rc > -4096);
}

static void read_all(struct dsstore *ds, size_t size)
{
	const struct dsformat_header *h = dsstore_header(ds);
	const void *map;
	size_t map_len;
	dsstore_map(ds, &map, &map_len);
	struct dsstore_txn *t;
	char err[256] = "";
	int rc = dsstore_txn_begin(ds, &t, err, sizeof(err));
	if (rc) {
		FUZZ_CHECK_ERR(err, sizeof(err));
		return;
	}
	uint64_t n = h->samples < MAX_READS ? h->samples : MAX_READS;
	for (uint64_t i = 0; i < n; i++) {
		struct dsformat_sample s;
		const uint8_t *payload = NULL;
		err[0] = '\0';
		rc = dsstore_get_sample(t, i, &s, &payload, err, sizeof(err));
		if (rc) {
			FUZZ_CHECK(code_ok(rc), "sample %llu: code %d", (unsigned long long)i, rc);
			FUZZ_CHECK_ERR(err, sizeof(err));
			continue;
		}
		const uint8_t *lo = map, *hi = (const uint8_t *)map + size;
		FUZZ_CHECK(payload >= lo && payload + s.payload_len <= hi,
			   "sample %llu: payload of %u bytes outside the file",
			   (unsigned long long)i, s.payload_len);
		err[0] = '\0';
		rc = dsformat_sample_verify(&s, payload, err, sizeof(err));
		if (rc)
			FUZZ_CHECK(rc == FEEDER_ECORRUPT && err[0], "verify: code %d", rc);
		const char *name;
		size_t len;
		rc = dsstore_get_name(t, i, &name, &len);
		FUZZ_CHECK(rc == 0 || code_ok(rc), "name %llu: code %d", (unsigned long long)i, rc);
		if (rc == 0)
			FUZZ_CHECK((const uint8_t *)name >= lo && (const uint8_t *)name + len <= hi,
				   "name %llu outside the file", (unsigned long long)i);
	}
	uint32_t classes = h->classes < MAX_READS ? h->classes : MAX_READS;
	for (uint32_t c = 0; c < classes; c++) {
		const char *name;
		size_t len;
		rc = dsstore_get_label(t, c, &name, &len);
		FUZZ_CHECK(rc == 0 || code_ok(rc), "label %u: code %d", c, rc);
	}
	dsstore_txn_end(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	write_input(data, size);
	struct dsstore *ds = NULL;
	char err[512] = "";
	int rc = dsstore_open(dir, &ds, err, sizeof(err));
	if (rc) {
		FUZZ_CHECK(code_ok(rc), "open: code %d (%s)", rc, err);
		FUZZ_CHECK_ERR(err, sizeof(err));
		return 0;
	}
	read_all(ds, size);
	dsstore_close(ds);
	return 0;
}
