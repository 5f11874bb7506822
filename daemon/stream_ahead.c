/* stream_ahead.c — a stream's epoch order and, over a remote dataset, the
 * shards it will read next.
 *
 * A local dataset is ordered by the global permutation (sampler.h). A
 * remote one by its shard-block layout: the epoch's shards permuted and
 * taken shuffle_block at a time, each block's samples permuted as a whole,
 * so that a stream reads few shards at once and knows which come next.
 * Since every position of the order can be evaluated ahead, the stream
 * tells the shard cache the shards of the blocks its slots are filling now
 * and of the blocks after them in its rank's stretch of the epoch (and of
 * the next epoch: STREAM_AHEAD_BLOCKS), soonest first; the cache fetches
 * them in that order while the workers decode, and keeps them until they
 * are no longer wanted. */
#include "stream_impl.h"

#include "shard_cache.h"
#include "status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Blocks wanted beyond the last one a slot reads: one to fetch while the
 * current one is decoded, one more to absorb a slow fetch. */
#define STREAM_AHEAD_BLOCKS 2

/* The layout of epoch for s (made on first use, the last STREAM_LAYOUTS
 * kept: the oldest slot's epoch, the newest's, and the one after). */
static struct sampler_blocks *layout(struct stream *s, uint64_t epoch, char *err, size_t errlen)
{
	for (int i = 0; i < STREAM_LAYOUTS; i++)
		if (s->layout[i] && s->layout_epoch[i] == epoch)
			return s->layout[i];
	struct dataset *d = s->ds;
	struct sampler_blocks *b;
	if (sampler_blocks_new(&b, d->shard_first, d->shard_count, (uint32_t)d->man.nshards,
			       d->block, s->opts.seed, epoch, (int)s->opts.shuffle, err, errlen))
		return NULL;
	sampler_blocks_unref(s->layout[STREAM_LAYOUTS - 1]);
	memmove(s->layout + 1, s->layout, (STREAM_LAYOUTS - 1) * sizeof(s->layout[0]));
	memmove(s->layout_epoch + 1, s->layout_epoch,
		(STREAM_LAYOUTS - 1) * sizeof(s->layout_epoch[0]));
	s->layout[0] = b;
	s->layout_epoch[0] = epoch;
	return b;
}

int stream_order(struct stream *s, struct slot *sl, uint64_t epoch, char *err, size_t errlen)
{
	int rc;
	if (s->ds->shards) {
		struct sampler_blocks *b = layout(s, epoch, err, errlen);
		if (!b)
			return -ENOMEM;
		sampler_blocks_ref(b);
		sampler_blocks_unref(sl->blocks);
		sl->blocks = b;
		rc = sampler_init_blocks(&sl->order, b, s->opts.rank, s->opts.world, err, errlen);
	} else {
		rc = sampler_init(&sl->order, s->ds->hdr.samples, s->opts.seed, epoch, s->opts.rank,
				  s->opts.world, (int)s->opts.shuffle, err, errlen);
	}
	if (rc == 0 && epoch == s->opts.epoch)
		rc = sampler_start(&sl->order, s->opts.start_sample, err, errlen);
	return rc;
}

void stream_want(struct stream *s)
{
	/* From the oldest sample no worker has claimed to the last sample of
	 * the newest batch assigned, then on. */
	const struct slot *lo = NULL, *hi = NULL;
	for (uint32_t i = 0; i < s->nslots; i++) {
		const struct slot *sl = &s->slots[i];
		if (sl->state != SLOT_FILLING)
			continue;
		if (sl->claimed < sl->count && (!lo || sl->seq < lo->seq))
			lo = sl;
		if (!hi || sl->seq > hi->seq)
			hi = sl;
	}
	if (!hi && s->next_assign < s->total)
		return; /* every slot waits on the client: the wants stand */
	/* Worked out in a buffer of its own, swapped with the last wants
	 * when they differ: no allocation per refill. */
	if (!s->want_next && !(s->want_next = malloc(SHARD_WANT_MAX * sizeof(*s->want_next))))
		return;
	uint32_t *want = s->want_next;
	size_t n = 0;
	/* Batches left to assign after the newest one decide whether the
	 * next epoch will be read at all. */
	int more = s->next_assign < s->total;
	unsigned beyond = 0;
	/* Where the wants begin: the oldest unclaimed sample, or with every
	 * sample of the slots claimed, the one after the newest slot's. */
	const struct slot *from = lo ? lo : hi;
	uint64_t from_k = lo   ? lo->batch * s->opts.batch + lo->claimed
			  : hi ? hi->batch * s->opts.batch + hi->count
			       : 0;
	uint32_t hi_last = hi ? sampler_block_of(hi->blocks,
						 sampler_pos(&hi->order, hi->batch * s->opts.batch +
										 hi->count - 1))
			      : 0;
	for (uint64_t epoch = hi ? from->epoch : 0; hi && epoch <= hi->epoch + 1; epoch++) {
		char err[128];
		struct sampler o;
		if (epoch == from->epoch)
			o = from->order;
		else if (epoch == hi->epoch)
			o = hi->order;
		else if (epoch > hi->epoch && !more)
			break;
		else {
			struct sampler_blocks *b = layout(s, epoch, err, sizeof(err));
			if (!b || sampler_init_blocks(&o, b, s->opts.rank, s->opts.world, err,
						      sizeof(err)))
				break;
		}
		uint64_t len = sampler_len(&o);
		uint64_t k0 = epoch == from->epoch ? from_k : 0;
		if (k0 >= len)
			continue;
		uint32_t first = sampler_block_of(o.blocks, sampler_pos(&o, k0));
		uint32_t last = sampler_block_of(o.blocks, sampler_pos(&o, len - 1));
		for (uint32_t blk = first; blk <= last; blk++) {
			int past = epoch > hi->epoch || (epoch == hi->epoch && blk > hi_last);
			if ((past && ++beyond > STREAM_AHEAD_BLOCKS) ||
			    n + s->ds->block > SHARD_WANT_MAX)
				goto done;
			n += sampler_block_shards(o.blocks, blk, want + n);
		}
	}
done:
	if (n == s->nwant && (n == 0 || memcmp(want, s->want, n * sizeof(*want)) == 0))
		return;
	s->want_next = s->want;
	s->want = want;
	s->nwant = n;
	shard_set_want(s->ds->shards, s->id + 1, want, n);
}

void stream_order_free(struct stream *s)
{
	if (s->ds && s->ds->shards && s->nwant)
		shard_set_want(s->ds->shards, s->id + 1, NULL, 0);
	free(s->want);
	free(s->want_next);
	s->want = s->want_next = NULL;
	s->nwant = 0;
	for (int i = 0; i < STREAM_LAYOUTS; i++)
		sampler_blocks_unref(s->layout[i]);
	for (uint32_t i = 0; s->slots && i < s->nslots; i++)
		sampler_blocks_unref(s->slots[i].blocks);
}
