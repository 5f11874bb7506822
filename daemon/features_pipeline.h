/* features_pipeline.h — one utterance's feature matrix in, one chunk out.
 *
 * For speaker and speech models (the x-vector trainer): take a chunk of
 * chunk_len consecutive frames from a frames x dim matrix (float16 or
 * float32, as packed), at a random offset in train mode (from detrand keyed
 * by aug_key) or centred in eval mode; apply cepstral mean (and optionally
 * variance) normalization, per utterance or over a sliding window like
 * Kaldi's apply-cmvn-sliding --center=true; and write it transposed as
 * (feat_dim, chunk_len) in f16 or f32, the layout a TDNN (1-D convolution
 * over time) consumes. Utterances shorter than chunk_len are either padded
 * by repeating them from the start (FEEDER_FEAT_PAD_REPEAT) or skipped
 * (FEEDER_FEAT_PAD_SKIP: the caller replaces the sample like a corrupt one).
 *
 * The statistics are those of the whole utterance (or of a window around
 * each frame of it), not of the chunk alone, as when Kaldi normalizes the
 * features before its x-vector egs are cut. The sliding window of frame t is
 * [t - window/2, t - window/2 + window) shifted to lie inside the utterance
 * (and cut to its length), as apply-cmvn-sliding --center=true computes it.
 * Variances are floored at 1e-20 before division.
 *
 * Stateless and thread-safe: scratch lives on the stack (two doubles per
 * feature dimension). */
#ifndef FEEDER_FEATURES_PIPELINE_H
#define FEEDER_FEATURES_PIPELINE_H

#include "dsformat.h"
#include "feeder_types.h"

#include <stddef.h>
#include <stdint.h>

/* Returned by features_pipeline_run (a positive value, not an error) when an
 * utterance is shorter than chunk_len and pad is FEEDER_FEAT_PAD_SKIP. */
#define FEATURES_SKIPPED 1

/* Bytes one sample occupies: feat_dim * chunk_len * (2 or 4). */
size_t features_pipeline_sample_bytes(const struct feeder_stream_opts *o, uint32_t feat_dim);

/* The first frame of the chunk taken from an utterance of `frames` frames
 * (0 when frames <= chunk_len). Pure function of its arguments. */
uint32_t features_pipeline_offset(const struct feeder_features_opts *p, uint32_t frames,
				  uint64_t aug_key);

/* The features pipeline's sample: features_pipeline_normalize with the
 * stream's features options and dtype. o must have passed proto_opts_check
 * (feederd's admission checks every stream's options once; nothing here
 * checks them again). Returns as features_pipeline_normalize. */
int features_pipeline_run(const struct feeder_stream_opts *o, const struct dsformat_sample *s,
			  const uint8_t *payload, uint64_t aug_key, void *out, char *err,
			  size_t errlen);

/* Cut, normalize and write: sample s (header as decoded by
 * dsformat_sample_decode, payload its frames x dim matrix) as (dim,
 * chunk_len) of dtype (FEEDER_DTYPE_F16 or _F32) at out, as p says. The
 * features pipeline's code for a sample, and the wave pipeline's for the
 * matrix of a chunk's features (which it describes with a struct
 * feeder_features_opts of its own options). p's fields must be in the
 * ranges proto_opts_check allows. Returns 0, FEATURES_SKIPPED (too short
 * with pad=skip; out untouched) or FEEDER_EFORMAT (a matrix that does not
 * fit its header, zero frames or dim). */
int features_pipeline_normalize(const struct feeder_features_opts *p, uint32_t dtype,
				const struct dsformat_sample *s, const uint8_t *payload,
				uint64_t aug_key, void *out, char *err, size_t errlen);

/* For the GPU pipeline (daemon/gpu_staging.c), which runs the same
 * computation on the device.
 *
 * Variances are floored at this before the division (cvn). */
#define FEATURES_VAR_FLOOR 1e-20

/* The checks features_pipeline_normalize makes on the sample before
 * reading its matrix: 0, FEATURES_SKIPPED or FEEDER_EFORMAT, as it returns
 * them. */
int features_pipeline_check_sample(const struct feeder_features_opts *p,
				   const struct dsformat_sample *s, const uint8_t *payload,
				   char *err, size_t errlen);

/* The utterance frame that chunk frame t (0..chunk_len-1) is, for a chunk
 * at offset (features_pipeline_offset) of an utterance of `frames` frames
 * (repeating from the start when it is shorter than chunk_len). */
uint32_t features_pipeline_source(const struct feeder_features_opts *p, uint32_t frames,
				  uint32_t offset, uint32_t t);

/* The frames [lo, hi) whose statistics normalize utterance frame src: the
 * sliding window, the whole utterance, or none (lo = hi = 0, cmn none). */
void features_pipeline_window(const struct feeder_features_opts *p, uint32_t frames, uint32_t src,
			      uint32_t *lo, uint32_t *hi);

#endif
