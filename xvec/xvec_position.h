/* xvec_position.h — where in the stream a checkpoint was taken: the blob
 * xvec_checkpoint_save stores beside the model, so that --resume reopens the
 * stream at the next batch of the same epoch order.
 *
 * Encoded little-endian at fixed offsets (magic "XVSP", version 2, epoch,
 * next batch, batch size, chunk, seed, then world size and the epoch's
 * start sample), then what the model's input was made by: the pipeline,
 * and for the wave pipeline the features (fbank or MFCC), mel bins and
 * cepstra: 72 bytes (version 3). Version 2 (56 bytes, before the wave
 * pipeline) and version 1 (40 bytes, before data parallelism, read as one
 * rank from the epoch's start) are read as the features pipeline. A blob of
 * another size, magic or version is refused with a sentence.
 *
 * Data parallel: next_batch counts batches of each rank's share, the same
 * on every rank; the epoch's global position is then
 * start_sample + next_batch * batch * world (xvec_position_sample), where
 * a run with another world size resumes (elastic).
 *
 * A blob is checked when decoded, every field on its own (the pipeline and
 * features as xvec accepts them, world, batch and chunk as a stream may have
 * them, epoch up to FEEDER_MAX_EPOCHS, a next sample that 64 bits hold), and
 * against the dataset by xvec_position_check before a resume uses it; the
 * other functions trust a position so checked. */
#ifndef FEEDER_XVEC_POSITION_H
#define FEEDER_XVEC_POSITION_H

#include <stddef.h>
#include <stdint.h>

#define XVEC_POSITION_SIZE 72
#define XVEC_POSITION_SIZE_V2 56
#define XVEC_POSITION_SIZE_V1 40

struct xvec_position {
	uint64_t epoch;        /* the epoch the next batch belongs to */
	uint64_t next_batch;   /* index of the next batch within that epoch */
	uint32_t batch;        /* samples per batch the run used */
	uint32_t chunk;        /* frames per sample the run used */
	uint64_t seed;         /* the stream's seed */
	uint32_t world;        /* ranks of the run (1 before data parallelism) */
	uint64_t start_sample; /* where this epoch's shares began (0, or an elastic resume) */
	/* The model's input (version 3; older blobs: features, the rest 0). */
	uint32_t pipeline;   /* enum feeder_pipeline: FEEDER_PIPE_FEATURES or _WAVE */
	uint32_t features;   /* wave: enum feeder_wave_features; features: 0 */
	uint32_t bins, ceps; /* wave: mel bins, and MFCC cepstra (fbank: 0) */
};

/* Mel bins of the wave pipeline's features, as xvec train accepts them. */
#define XVEC_POSITION_MIN_BINS 3
#define XVEC_POSITION_MAX_BINS 256

/* The samples of the epoch that all ranks together have taken: the
 * epoch's next sample. */
uint64_t xvec_position_sample(const struct xvec_position *p);

/* p (decoded) against the dataset it resumes on, of n samples: its start
 * and next sample within the epoch. 0, or FEEDER_EINVAL with a sentence
 * naming the field in err. */
int xvec_position_check(const struct xvec_position *p, uint64_t n, char *err, size_t errlen);

void xvec_position_encode(const struct xvec_position *p, uint8_t out[XVEC_POSITION_SIZE]);

/* Decode and check every field; 0, or FEEDER_EFORMAT with a sentence
 * naming the field in err. */
int xvec_position_decode(const uint8_t *buf, size_t len, struct xvec_position *p, char *err,
			 size_t errlen);

/* Normalise a position past the end of an epoch to the start of the next. */
void xvec_position_wrap(struct xvec_position *p, uint64_t batches_per_epoch);

#endif
