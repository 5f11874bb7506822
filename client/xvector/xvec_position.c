/* xvec_position.c — the checkpoint's stream position (see xvec_position.h). */
#include "xvec_position.h"

#include "bytes.h"
#include "feeder_types.h"
#include "status.h"

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

int xvec_position_decode(const uint8_t *buf, size_t len, struct xvec_position *p, char *err,
			 size_t errlen)
{
	if ((len != XVEC_POSITION_SIZE && len != XVEC_POSITION_SIZE_V2 &&
	     len != XVEC_POSITION_SIZE_V1) ||
	    bytes_le32(buf) != POSITION_MAGIC)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "the checkpoint holds no xvec stream position (written by "
				   "another program?)");
	uint32_t v = bytes_le32(buf + 4);
	if (v < 1 || v > POSITION_VERSION ||
	    len != (v == 1 ? XVEC_POSITION_SIZE_V1 : v == 2 ? XVEC_POSITION_SIZE_V2
							: XVEC_POSITION_SIZE))
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "stream position version %u of %zu bytes, this xvec reads 1 to %u",
				   v, len, POSITION_VERSION);
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
	if (p->pipeline != FEEDER_PIPE_FEATURES && p->pipeline != FEEDER_PIPE_WAVE)
		return status_fail(err, errlen, FEEDER_EFORMAT,
				   "stream position of unknown pipeline %u", p->pipeline);
	if (p->world == 0)
		return status_fail(err, errlen, FEEDER_EFORMAT, "stream position of 0 ranks");
	return 0;
}

uint64_t xvec_position_sample(const struct xvec_position *p, uint64_t n)
{
	uint64_t w = p->world ? p->world : 1;
	uint64_t taken = p->next_batch * p->batch * w;
	return taken >= n - (p->start_sample < n ? p->start_sample : n) ? n : p->start_sample + taken;
}

void xvec_position_wrap(struct xvec_position *p, uint64_t batches_per_epoch)
{
	if (batches_per_epoch && p->next_batch >= batches_per_epoch) {
		p->epoch += p->next_batch / batches_per_epoch;
		p->next_batch %= batches_per_epoch;
		p->start_sample = 0; /* the next epoch starts at its beginning */
	}
}
