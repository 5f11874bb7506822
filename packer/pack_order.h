/* pack_order.h — the order in which a pack or a reshard writes its samples:
 * the walk's (the sources as pack_src lists them, or the dataset's own
 * order), or a seeded pseudo-random permutation of it.
 *
 * A sharded dataset is served from object storage in blocks of a few
 * shards, shuffled only inside a block: shards that each hold a random
 * sample of the dataset (rather than a run of one class, as a class-folder
 * walk gives) make any block a uniform shuffle's. So --order shuffled is
 * the default where the output is sharded. The permutation is a pure
 * function of the seed and the number of items (Fisher-Yates over
 * media/detrand.h's generator), applied to the list of inputs before any
 * file is read: the same inputs and seed give the same dataset byte for
 * byte. */
#ifndef FEEDER_PACK_ORDER_H
#define FEEDER_PACK_ORDER_H

#include "argtab.h"
#include "pack_src.h"

#include <stddef.h>
#include <stdint.h>

enum pack_order { PACK_ORDER_DEFAULT = 0, PACK_ORDER_WALK, PACK_ORDER_SHUFFLED };

/* --order's words. */
extern const struct argtab_choice pack_order_choices[];

/* The two options' values; zeroed, they are the defaults. */
struct pack_order_args {
	int order; /* enum pack_order */
	unsigned long long seed;
};

/* The table rows of --order and --order-seed, into A (a struct
 * pack_order_args *); HELP is --order's (what it defaults to). */
#define PACK_ORDER_ROWS(A, HELP)                                                                   \
	ARGTAB_ENUM("order", 0, &(A)->order, pack_order_choices, NULL, HELP),                      \
		ARGTAB_INT("order-seed", 0, &(A)->seed, 0, ARGTAB_U64_MAX, "N",                    \
			   "the seed of --order shuffled (default 0)")

/* Whether the samples are shuffled: --order as given, else shuffled when
 * the output is sharded. Warns (pack_msg) that --order-seed has no effect
 * when the order is the walk's; tab is the parsed table. */
int pack_order_shuffled(const struct pack_order_args *a, int sharded, const struct argtab *tab);

/* Apply the permutation of n items for seed: swap(ctx, i, j) is called for
 * i from n-1 down to 1 with some j <= i. */
void pack_order_permute(size_t n, uint64_t seed, void (*swap)(void *ctx, size_t i, size_t j),
			void *ctx);

/* Permute s's samples (paths, labels, list lines together) in place. */
void pack_order_src(struct pack_src *s, uint64_t seed);

#endif
