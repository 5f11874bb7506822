/* fuzz_protocol.c — arbitrary bytes as one feederd wire message.
 *
 * proto_decode() is what the daemon runs on every packet a client sends, so
 * it must reject anything malformed with a sentence and never read outside
 * the buffer. A message it accepts must be canonical: encoding the decoded
 * struct gives back exactly the bytes received (no hidden or ignored bytes),
 * and an accepted OPEN_STREAM must have a computable ring geometry. */
#include "fuzz.h"

#include "protocol.h"
#include "status.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_msg m;
	char err[256] = "";
	int rc = proto_decode(data, size, &m, err, sizeof(err));
	if (rc != 0) {
		FUZZ_CHECK(rc == FEEDER_EPROTO || rc == FEEDER_EVERSION || rc == FEEDER_EBADNAME,
			   "unexpected code %d", rc);
		FUZZ_CHECK_ERR(err, sizeof(err));
		return 0;
	}
	FUZZ_CHECK(m.type >= 1 && m.type <= PROTO_TYPE_MAX, "type %u", m.type);
	FUZZ_CHECK(proto_type_name(m.type)[0] != '?', "type %u has no name", m.type);

	uint8_t again[PROTO_MAX_MESSAGE];
	int n = proto_encode(&m, again, sizeof(again));
	FUZZ_CHECK(n > 0 && (size_t)n == size, "re-encoded %d bytes of %zu", n, size);
	FUZZ_CHECK(memcmp(again, data, size) == 0, "%s does not round-trip",
		   proto_type_name(m.type));

	if (m.type == PROTO_OPEN_STREAM) {
		/* As feederd does: the options are checked (a refusal, not a
		 * protocol error) before the ring is sized from them. */
		const struct feeder_stream_opts *o = &m.u.open.opts;
		rc = proto_opts_check(o, err, sizeof(err));
		if (rc) {
			FUZZ_CHECK(rc == FEEDER_EINVAL, "options refused with %d", rc);
			FUZZ_CHECK_ERR(err, sizeof(err));
			return 0;
		}
		struct proto_geometry g;
		/* The largest feature dimension a dataset may declare. */
		rc = proto_geometry(o, 4096, 4096, &g, err, sizeof(err));
		if (rc == 0) {
			FUZZ_CHECK(g.tensor_offset % PROTO_TENSOR_ALIGN == 0, "tensor offset %llu",
				   (unsigned long long)g.tensor_offset);
			FUZZ_CHECK(g.tensor_offset + g.tensor_bytes <= g.slot_size,
				   "slot too small");
			FUZZ_CHECK(g.labels_offset + 4ull * o->batch <= g.indices_offset,
				   "labels overlap the indices");
			uint64_t end = g.indices_offset + 8ull * o->batch;
			if (o->names) {
				FUZZ_CHECK(g.names_offset >= end, "indices overlap the names");
				end = g.names_offset + (uint64_t)FEEDER_SAMPLE_NAME_MAX * o->batch;
			}
			FUZZ_CHECK(end <= g.tensor_offset, "per-sample tables overlap the tensor");
		} else {
			FUZZ_CHECK_ERR(err, sizeof(err));
		}
	}
	return 0;
}
