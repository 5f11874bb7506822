/* fuzz_manifest.c — arbitrary bytes as a sharded dataset's manifest
 * (proto/manifest.h).
 *
 * feederd reads manifests from object storage it does not control, so the
 * parser must refuse anything malformed with a sentence and accept only
 * what its header promises: shards in sample order, contiguous from 0,
 * adding up to the header's count, with valid unique names. An accepted
 * manifest must encode back to exactly the input (the text form has one
 * spelling), and manifest_find must put every shard's ends in that shard. */
#include "fuzz.h"

#include "manifest.h"
#include "status.h"

#include <errno.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly the input's length, so ASan sees any overread. */
	char *text = malloc(size ? size : 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	struct manifest m;
	char err[512] = "";
	int rc = manifest_decode(text, size, &m, err, sizeof(err));
	if (rc != 0) {
		FUZZ_CHECK(rc == FEEDER_EFORMAT || rc == FEEDER_EVERSION || rc == -ENOMEM,
			   "code %d", rc);
		FUZZ_CHECK_ERR(err, sizeof(err));
		FUZZ_CHECK(m.shards == NULL && m.nshards == 0, "a refused manifest kept shards");
		free(text);
		return 0;
	}
	FUZZ_CHECK(m.nshards >= 1 && m.nshards <= MANIFEST_MAX_SHARDS, "%zu shards", m.nshards);
	uint64_t first = 0;
	for (size_t i = 0; i < m.nshards; i++) {
		const struct manifest_shard *s = &m.shards[i];
		size_t n = strnlen(s->name, MANIFEST_MAX_NAME);
		FUZZ_CHECK(n >= 1 && n < MANIFEST_MAX_NAME && s->name[0] != '.' &&
				   !strchr(s->name, '/'),
			   "shard %zu has a bad name", i);
		FUZZ_CHECK(s->first == first, "shard %zu starts at %llu, not %llu", i,
			   (unsigned long long)s->first, (unsigned long long)first);
		FUZZ_CHECK(s->bytes >= 1, "shard %zu of 0 bytes", i);
		if (s->count) {
			FUZZ_CHECK(manifest_find(&m, s->first) == i, "find of shard %zu's first",
				   i);
			FUZZ_CHECK(manifest_find(&m, s->first + s->count - 1) == i,
				   "find of shard %zu's last", i);
		}
		first += s->count;
	}
	FUZZ_CHECK(first == m.header.samples, "shards hold %llu of %llu samples",
		   (unsigned long long)first, (unsigned long long)m.header.samples);
	FUZZ_CHECK(manifest_find(&m, first) == m.nshards, "find past the end");
	char *again = NULL;
	size_t len = 0;
	rc = manifest_encode(&m, &again, &len, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -ENOMEM, "an accepted manifest does not encode: %s", err);
	if (rc == 0)
		FUZZ_CHECK(len == size && memcmp(again, data, size) == 0,
			   "manifest does not round-trip");
	free(again);
	manifest_free(&m);
	free(text);
	return 0;
}
