/* test_position.c — a checkpoint's stream position is checked field by field.
 *
 * A position blob that xvec_position_decode accepts round-trips exactly;
 * one with a field out of range (magic, version, pipeline, features, bins,
 * cepstra, world, batch, chunk, epoch, a next sample beyond 64 bits) is
 * refused with a sentence naming that field; and xvec_position_check holds
 * the start and next sample to the dataset's size, so that world 2 and
 * next batch 2^62 (whose sample count wraps to 0) cannot resume. */
#include "check.h"
#include "bytes.h"
#include "feeder_types.h"
#include "status.h"
#include "xvec_position.h"

#include <string.h>

static struct xvec_position good(void)
{
	return (struct xvec_position){ .epoch = 1,
				       .next_batch = 2,
				       .batch = 4,
				       .chunk = 40,
				       .seed = 7,
				       .world = 2,
				       .start_sample = 3,
				       .pipeline = FEEDER_PIPE_WAVE,
				       .features = FEEDER_WAVE_MFCC,
				       .bins = 40,
				       .ceps = 20 };
}

/* Decoding buf must fail naming word. */
static void refused(const uint8_t *buf, size_t len, const char *word)
{
	struct xvec_position p;
	char err[256] = "";
	int rc = xvec_position_decode(buf, len, &p, err, sizeof(err));
	printf("%-12s -> %d: %s\n", word, rc, err);
	CHECKF(rc == FEEDER_EFORMAT, "decode returned %d for a bad %s", rc, word);
	CHECKF(strstr(err, "position: ") && strstr(err, word), "'%s' does not name %s", err, word);
}

/* p encoded, then one u32 or u64 at off set to v. */
static void patched(struct xvec_position p, size_t off, int wide, uint64_t v, const char *word)
{
	uint8_t buf[XVEC_POSITION_SIZE];
	xvec_position_encode(&p, buf);
	if (wide)
		bytes_put_le64(buf + off, v);
	else
		bytes_put_le32(buf + off, (uint32_t)v);
	refused(buf, sizeof(buf), word);
}

static void field_ranges(void)
{
	struct xvec_position p = good(), f = good();
	patched(p, 0, 0, 0x12345678, "magic");
	patched(p, 4, 0, 9, "version");
	patched(p, 56, 0, 7, "pipeline");
	patched(p, 60, 0, 3, "features");
	patched(p, 64, 0, 2, "bins");
	patched(p, 64, 0, 257, "bins");
	patched(p, 68, 0, 41, "ceps");
	patched(p, 68, 0, 0, "ceps");
	p.features = FEEDER_WAVE_FBANK;
	patched(p, 68, 0, 1, "ceps");
	f.pipeline = FEEDER_PIPE_FEATURES, f.features = 0, f.bins = 0, f.ceps = 0;
	patched(f, 64, 0, 80, "bins");
	patched(f, 40, 0, 0, "world");
	patched(f, 40, 0, FEEDER_MAX_WORLD + 1, "world");
	patched(f, 24, 0, 0, "batch");
	patched(f, 24, 0, FEEDER_MAX_BATCH + 1, "batch");
	patched(f, 28, 0, 14, "chunk");
	patched(f, 28, 0, FEEDER_MAX_CHUNK + 1, "chunk");
	patched(good(), 28, 0, FEEDER_MAX_WAVE_CHUNK + 1, "chunk");
	patched(f, 8, 1, 1ull << 63, "epoch");
	patched(f, 8, 1, FEEDER_MAX_EPOCHS + 1, "epoch");
	/* 2^62 batches of 4 on 2 ranks: 2^65 samples, which wrap to 0 */
	patched(f, 16, 1, 1ull << 62, "next batch 4611686018427387904");
	patched(f, 48, 1, UINT64_MAX, "next batch");
	uint8_t buf[XVEC_POSITION_SIZE];
	xvec_position_encode(&f, buf);
	refused(buf, XVEC_POSITION_SIZE - 1, "magic");
}

static void round_trip(void)
{
	struct xvec_position p = good(), q;
	uint8_t buf[XVEC_POSITION_SIZE];
	char err[256];
	xvec_position_encode(&p, buf);
	CHECKF(xvec_position_decode(buf, sizeof(buf), &q, err, sizeof(err)) == 0, "%s", err);
	CHECK(q.epoch == p.epoch && q.next_batch == p.next_batch && q.batch == p.batch &&
	      q.chunk == p.chunk && q.seed == p.seed && q.world == p.world &&
	      q.start_sample == p.start_sample && q.pipeline == p.pipeline &&
	      q.features == p.features && q.bins == p.bins && q.ceps == p.ceps);
	/* the largest epoch a run reaches, and a version-1 blob (one rank) */
	p.epoch = FEEDER_MAX_EPOCHS;
	xvec_position_encode(&p, buf);
	CHECKF(xvec_position_decode(buf, sizeof(buf), &q, err, sizeof(err)) == 0, "%s", err);
	bytes_put_le32(buf + 4, 1);
	CHECKF(xvec_position_decode(buf, XVEC_POSITION_SIZE_V1, &q, err, sizeof(err)) == 0, "%s",
	       err);
	CHECK(q.world == 1 && q.start_sample == 0 && q.pipeline == FEEDER_PIPE_FEATURES);
}

static void against_dataset(void)
{
	struct xvec_position p = good();
	char err[256] = "";
	/* 3 + 2 * 4 * 2 = 19 samples taken */
	CHECK(xvec_position_sample(&p) == 19);
	CHECKF(xvec_position_check(&p, 19, err, sizeof(err)) == 0, "%s", err);
	CHECKF(xvec_position_check(&p, 24, err, sizeof(err)) == 0, "%s", err);
	CHECK(xvec_position_check(&p, 18, err, sizeof(err)) == FEEDER_EINVAL);
	printf("%s\n", err);
	CHECKF(strstr(err, "next sample 19") && strstr(err, "18 samples"), "%s", err);
	p.next_batch = 0, p.start_sample = 25;
	CHECK(xvec_position_check(&p, 24, err, sizeof(err)) == FEEDER_EINVAL);
	printf("%s\n", err);
	CHECKF(strstr(err, "start sample 25") && strstr(err, "24 samples"), "%s", err);
}

int main(void)
{
	field_ranges();
	round_trip();
	against_dataset();
	return 0;
}
