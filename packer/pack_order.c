/* pack_order.c — the order of a pack's or reshard's samples (see
 * pack_order.h). */
#include "pack_order.h"

#include "pack_msg.h"

#include "detrand.h"

const struct argtab_choice pack_order_choices[] = { { "shuffled", PACK_ORDER_SHUFFLED },
						    { "walk", PACK_ORDER_WALK },
						    { NULL, 0 } };

int pack_order_shuffled(const struct pack_order_args *a, int sharded, const struct argtab *tab)
{
	int shuffled = a->order == PACK_ORDER_DEFAULT ? sharded : a->order == PACK_ORDER_SHUFFLED;
	if (!shuffled && argtab_given(tab, "order-seed"))
		pack_warn("--order-seed has no effect when the order is the walk's");
	return shuffled;
}

void pack_order_permute(size_t n, uint64_t seed, void (*swap)(void *ctx, size_t i, size_t j),
			void *ctx)
{
	struct detrand r;
	detrand_init(&r, seed);
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)detrand_range(&r, 0, (int64_t)(i - 1));
		if (j != i - 1)
			swap(ctx, i - 1, j);
	}
}

static void swap_src(void *ctx, size_t i, size_t j)
{
	struct pack_src *s = ctx;
	char *p = s->paths[i];
	s->paths[i] = s->paths[j];
	s->paths[j] = p;
	uint32_t l = s->labels[i];
	s->labels[i] = s->labels[j];
	s->labels[j] = l;
	unsigned long ln = s->lines[i];
	s->lines[i] = s->lines[j];
	s->lines[j] = ln;
}

void pack_order_src(struct pack_src *s, uint64_t seed)
{
	pack_order_permute(s->n, seed, swap_src, s);
}
