/* xvec_position.c — the checkpoint's stream position (see xvec_position.h). */
#include "xvec_position.h"

#include "bytes.h"
#include "feeder_types.h"
#include "status.h"
#include "xvec_model.h"

#include <string.h>

#define POSITION_MAGIC 0x50535658u /* "XVSP" */
#define POSITION_VERSION 3u

void xvec_position_encode(const struct xvec_position *p, uint8_t out[XVEC_POSITION_SIZE])
{
	memset(out, 0, XVEC_POSITION_SIZE);
	bytes_put_le32(out, POSITION_MAGIC);
	bytes_put_le32(out + 4, POSITION_VERSION);
	bytes_put_le64(out + 8, p->epoch);
	bytes_put_le64(out + 16, p->next_batch);
	bytes_put_le32(out + 24, p->batch);
	bytes_put_le32(out + 28, p->chunk);
	bytes_put_le64(out + 32, p->seed);
	bytes_put_le32(out + 40, p->world ? p->world : 1);
	bytes_put_le64(out + 48, p->start_sample);
	bytes_put_le32(out + 56, p->pipeline ? p->pipeline : FEEDER_PIPE_FEATURES);
	bytes_put_le32(out + 60, p->features);
	bytes_put_le32(out + 64, p->bins);
	bytes_put_le32(out + 68, p->ceps);
}

/* What the model's input was made by: a pipeline xvec trains on, and for
 * the wave pipeline features, bins and cepstra as xvec train accepts them. */
static int position_check_input(const struct xvec_position *p, char *err, size_t errlen)
{
	if (p->pipeline != FEEDER_PIPE_FEATURES && p->pipeline != FEEDER_PIPE_WAVE)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "position: pipeline %u is neither features nor wave",
				   p->pipeline);
	if (p->pipeline == FEEDER_PIPE_FEATURES) {
		if (p->features || p->bins || p->ceps)
			return status_fail(err, errlen, FEEDER_EFORMAT,
					   "position: features %u, bins %u, ceps %u given for the "
					   "features pipeline (must be 0)",
					   p->features, p->bins, p->ceps);
		return 0;
	}
	if (p->features != FEEDER_WAVE_FBANK && p->features != FEEDER_WAVE_MFCC)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "position: features %u is neither fbank (%d) nor mfcc (%d)",
				   p->features, FEEDER_WAVE_FBANK, FEEDER_WAVE_MFCC);
	if (p->bins < XVEC_POSITION_MIN_BINS || p->bins > XVEC_POSITION_MAX_BINS)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "position: bins %u is out of range %d..%d", p->bins,
				   XVEC_POSITION_MIN_BINS, XVEC_POSITION_MAX_BINS);
	uint32_t lo = p->features == FEEDER_WAVE_MFCC, hi = lo ? p->bins : 0;
	if (p->ceps < lo || p->ceps > hi)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "position: ceps %u is out of range %u..%u", p->ceps, lo, hi);
	return 0;
}

/* A field in [lo, hi], named. */
static int position_range(const char *name, uint64_t v, uint64_t lo, uint64_t hi, char *err,
			  size_t errlen)
{
	if (v >= lo && v <= hi)
		return 0;
	return status_fail(err, errlen, FEEDER_EFORMAT,
			   "position: %s %llu is out of range %llu..%llu", name,
			   (unsigned long long)v, (unsigned long long)lo, (unsigned long long)hi);
}

/* Where in the stream: sizes a stream may have, an epoch a run may reach,
 * and a next sample that a 64-bit count holds. */
static int position_check_stream(const struct xvec_position *p, char *err, size_t errlen)
{
	uint64_t chunk_max =
		p->pipeline == FEEDER_PIPE_WAVE ? FEEDER_MAX_WAVE_CHUNK : FEEDER_MAX_CHUNK;
	int rc = position_range("world", p->world, 1, FEEDER_MAX_WORLD, err, errlen);
	if (!rc)
		rc = position_range("batch", p->batch, 1, FEEDER_MAX_BATCH, err, errlen);
	if (!rc)
		rc = position_range("chunk", p->chunk, XVEC_CONTEXT + 1, chunk_max, err, errlen);
	if (!rc)
		rc = position_range("epoch", p->epoch, 0, FEEDER_MAX_EPOCHS, err, errlen);
	if (rc)
		return rc;
	uint64_t taken, next;
	if (__builtin_mul_overflow(p->next_batch, (uint64_t)p->batch * p->world, &taken) ||
	    __builtin_add_overflow(p->start_sample, taken, &next))
		return status_fail(
			err, errlen, FEEDER_EFORMAT,
			"position: next batch %llu of %u samples, %u rank%s, from sample "
			"%llu is beyond any dataset",
			(unsigned long long)p->next_batch, p->batch, p->world,
			p->world == 1 ? "" : "s", (unsigned long long)p->start_sample);
	return 0;
}

int xvec_position_decode(const uint8_t *buf, size_t len, struct xvec_position *p, char *err,
			 size_t errlen)
{
	if ((len != XVEC_POSITION_SIZE && len != XVEC_POSITION_SIZE_V2 &&
	     len != XVEC_POSITION_SIZE_V1) ||
	    bytes_le32(buf) != POSITION_MAGIC)
		return status_fail(
			err, errlen, FEEDER_EFORMAT,
			"position: %zu bytes without xvec's magic: the checkpoint holds no "
			"xvec stream position (written by another program?)",
			len);
	uint32_t v = bytes_le32(buf + 4);
	if (v < 1 || v > POSITION_VERSION ||
	    len != (v == 1   ? XVEC_POSITION_SIZE_V1
		    : v == 2 ? XVEC_POSITION_SIZE_V2
			     : XVEC_POSITION_SIZE))
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "position: version %u of %zu bytes, this xvec reads 1 to %u", v,
				   len, POSITION_VERSION);
	p->epoch = bytes_le64(buf + 8);
	p->next_batch = bytes_le64(buf + 16);
	p->batch = bytes_le32(buf + 24);
	p->chunk = bytes_le32(buf + 28);
	p->seed = bytes_le64(buf + 32);
	p->world = v == 1 ? 1 : bytes_le32(buf + 40);
	p->start_sample = v == 1 ? 0 : bytes_le64(buf + 48);
	p->pipeline = v < 3 ? FEEDER_PIPE_FEATURES : bytes_le32(buf + 56);
	p->features = v < 3 ? 0 : bytes_le32(buf + 60);
	p->bins = v < 3 ? 0 : bytes_le32(buf + 64);
	p->ceps = v < 3 ? 0 : bytes_le32(buf + 68);
	int rc = position_check_input(p, err, errlen);
	return rc ? rc : position_check_stream(p, err, errlen);
}

int xvec_position_check(const struct xvec_position *p, uint64_t n, char *err, size_t errlen)
{
	if (p->start_sample > n)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"position: start sample %llu is beyond epoch %llu's %llu samples",
			(unsigned long long)p->start_sample, (unsigned long long)p->epoch,
			(unsigned long long)n);
	if (xvec_position_sample(p) > n)
		return status_fail(
			err, errlen, FEEDER_EINVAL,
			"position: next sample %llu (batch %llu of %u samples, %u rank%s) is "
			"beyond epoch %llu's %llu samples",
			(unsigned long long)xvec_position_sample(p),
			(unsigned long long)p->next_batch, p->batch, p->world,
			p->world == 1 ? "" : "s", (unsigned long long)p->epoch,
			(unsigned long long)n);
	return 0;
}

uint64_t xvec_position_sample(const struct xvec_position *p)
{
	return p->start_sample + p->next_batch * p->batch * p->world;
}

void xvec_position_wrap(struct xvec_position *p, uint64_t batches_per_epoch)
{
	if (batches_per_epoch && p->next_batch >= batches_per_epoch) {
		p->epoch += p->next_batch / batches_per_epoch;
		p->next_batch %= batches_per_epoch;
		p->start_sample = 0; /* the next epoch starts at its beginning */
	}
}
