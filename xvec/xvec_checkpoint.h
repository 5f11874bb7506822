/* xvec_checkpoint.h — save and restore the complete training state of an x-vector model.
 *
 * A checkpoint holds everything a resumed run needs to continue bit for bit:
 * the parameters, the AdamW moments and step, the batch-norm running
 * statistics, the Philox seed, and a small caller-supplied blob (the trainer
 * keeps its stream position there: epoch, batch). It is written to a
 * temporary file in the same directory, fsync'ed, renamed over the target and
 * the directory fsync'ed, so a crash leaves either the old or the new file.
 *
 * File layout, all integers and floats little-endian:
 *   0  magic "FDRXVEC\0"           8 bytes
 *   8  version (1)                 u32
 *   12 feat_dim, width, pool_width, embed, num_speakers   u32 each
 *   32 seed                        u64
 *   40 step                        u64
 *   48 parameter count n           u64
 *   56 running-statistics count nb u64
 *   64 blob length                 u64
 *   72 reserved, zero              u64
 *   80 parameters (n f32), Adam m (n f32), Adam v (n f32), running
 *      statistics (nb f32), blob
 *   end CRC-32C of all preceding bytes  u32 */
#ifndef FEEDER_XVEC_CHECKPOINT_H
#define FEEDER_XVEC_CHECKPOINT_H

#include <stddef.h>

#include "xvec_model.h"

#define XVEC_CHECKPOINT_VERSION 1
/* Largest caller blob accepted, to bound what a corrupt length can ask for. */
#define XVEC_CHECKPOINT_MAX_BLOB (1u << 20)

/* Write m's state and blob (bloblen bytes, may be 0) atomically to path.
 * Returns 0 or a negative errno / FEEDER_EINVAL with a sentence in err. */
int xvec_checkpoint_save(struct xvec_model *m, const char *path, const void *blob, size_t bloblen,
			 char *err, size_t errlen);

/* Read path into m, which must have been created with the same sizes
 * (feat_dim, widths, speakers); the seed and step are taken from the file,
 * while hyper-parameters (learning rate, betas, weight decay, dropout, noise
 * eps) stay those of m's options, so a resumed run may change them.
 * The blob is copied to blob (blobcap bytes available; may be NULL when
 * blobcap is 0) and its length stored in *bloblen (may be NULL). Everything is
 * validated before m is touched, so that on error m is unchanged: magic,
 * version, each model size in range and the sizes agreeing with the counts
 * and the file's length, the step below XVEC_MAX_STEP, the CRC, and every
 * value (xvec_model_check_state: finite, second moments and running
 * variances not negative). The blob is the caller's to check. Errors:
 * -errno from the file system, FEEDER_EFORMAT (not a checkpoint, or not a
 * regular file: a FIFO is refused, never waited on), FEEDER_EVERSION,
 * FEEDER_ECORRUPT (truncated, CRC mismatch, a field or value out of range,
 * named), FEEDER_EINVAL (shape differs from the model, blob larger than
 * blobcap). */
int xvec_checkpoint_load(struct xvec_model *m, const char *path, void *blob, size_t blobcap,
			 size_t *bloblen, char *err, size_t errlen);

/* Read only the header of the checkpoint at path and fill o with the model's
 * shape (feat_dim, widths, speakers) and seed, the other fields defaulted, so
 * a model of the right size can be created before xvec_checkpoint_load.
 * The header's fields and the file's length are checked as by
 * xvec_checkpoint_load, so that no size out of range is allocated; the CRC
 * and the values are checked by xvec_checkpoint_load. Errors as for
 * xvec_checkpoint_load. */
int xvec_checkpoint_peek(const char *path, struct xvec_options *o, char *err, size_t errlen);

#endif
