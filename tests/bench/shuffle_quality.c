/* shuffle_quality.c — how far the shard-block epoch order is from a uniform
 * shuffle, and what it costs, per block width (not a test).
 *
 * Models an ImageNet-1k-like dataset as packer lays it out: classes of
 * about equal size in index order (packer walks class folders in order), or
 * with --shuffled 1 in a random order (packer's --order shuffled, the
 * default of a sharded pack), cut into shards of --shard-samples. For the global order (sampler_init) and
 * the shard-block order of each width W (sampler_blocks_new) it prints, over
 * one epoch on one rank:
 *   classes/batch  mean distinct classes in a batch (uniform: about
 *                  C(1-(1-1/C)^B));
 *   P(next same)   probability that consecutive samples share a class
 *                  (uniform: about 1/C);
 *   shard spread   mean |position distance| of two samples of one shard,
 *                  over a uniform permutation's (n+1)/3 (1: spread over the
 *                  whole epoch; W*shard/n: confined to one block);
 *   batch TV       mean total-variation distance between a batch's label
 *                  frequencies and the dataset's;
 *   chi2/df        mean chi-square of a batch's labels against the
 *                  dataset's, over its degrees of freedom (uniform: 1);
 *   mates again    of the pairs of samples sharing a batch, the share that
 *                  share one again in the next epoch (uniform: about B/n):
 *                  how often a sample meets the same batch-mates;
 *   node cache     what a node holds to read the order: 2W shards (the
 *                  block read and the next one fetched), the whole dataset
 *                  for the global order;
 *   ns/permute     CPU time of one sampler_permute call.
 * Options: the table in main. */
#define BENCH_NAME "shuffle_quality"
#include "bench_common.h"
#include "detrand.h"
#include "sampler.h"
#include "status.h"

#include <inttypes.h>

struct dataset {
	uint64_t n, shard_samples;
	uint32_t classes, nshards;
	uint64_t *first, *count;
	uint32_t *class_of;   /* n */
	uint64_t *class_size; /* classes */
};

struct row {
	double ns, distinct, next_same, spread, tv, chi2, again;
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* One epoch of s measured; order and pos_of are n-sized scratch. */
static struct row measure(const struct dataset *d, const struct sampler *s, uint32_t batch,
			  uint64_t *order, uint32_t *pos_of, uint32_t *scratch)
{
	struct row r = { 0 };
	const uint64_t n = d->n;
	/* The best of three passes: steadier on a shared machine. */
	r.ns = 1e30;
	for (int rep = 0; rep < 3; rep++) {
		double t0 = bench_clock(CLOCK_THREAD_CPUTIME_ID);
		for (uint64_t pos = 0; pos < n; pos++)
			order[pos] = sampler_permute(s, pos);
		double ns = (bench_clock(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e9 / (double)n;
		r.ns = ns < r.ns ? ns : r.ns;
	}
	for (uint64_t pos = 0; pos < n; pos++)
		pos_of[order[pos]] = (uint32_t)pos;

	uint64_t same = 0;
	for (uint64_t pos = 1; pos < n; pos++)
		same += d->class_of[order[pos]] == d->class_of[order[pos - 1]];
	r.next_same = (double)same / (double)(n - 1);

	/* Per batch: the classes it touches, counted in hist (stamped so it is
	 * never cleared). */
	uint32_t *hist = calloc(d->classes, sizeof *hist),
		 *stamp = calloc(d->classes, sizeof *stamp);
	uint32_t *touched = malloc((size_t)batch * sizeof *touched);
	if (!hist || !stamp || !touched)
		bench_fail("out of memory");
	uint64_t nbatches = n / batch;
	double distinct = 0, tv = 0, chi2 = 0;
	for (uint64_t k = 0; k < nbatches; k++) {
		uint32_t nt = 0;
		for (uint32_t i = 0; i < batch; i++) {
			uint32_t c = d->class_of[order[k * batch + i]];
			if (stamp[c] != k + 1) {
				stamp[c] = (uint32_t)(k + 1);
				hist[c] = 0;
				touched[nt++] = c;
			}
			hist[c]++;
		}
		distinct += nt;
		/* Untouched classes add their whole probability to the TV sum
		 * and nothing to sum(h^2 / e). */
		double abs_sum = 1, h2e = 0;
		for (uint32_t i = 0; i < nt; i++) {
			uint32_t c = touched[i];
			double p = (double)d->class_size[c] / (double)n,
			       f = (double)hist[c] / batch;
			abs_sum += (f > p ? f - p : p - f) - p;
			h2e += (double)hist[c] * hist[c] / (batch * p);
		}
		tv += 0.5 * abs_sum;
		chi2 += (h2e - batch) / (d->classes - 1);
	}
	r.distinct = distinct / (double)nbatches;
	r.tv = tv / (double)nbatches;
	r.chi2 = chi2 / (double)nbatches;
	free(touched);
	free(stamp);
	free(hist);

	/* Sum over pairs of one shard of |p_a - p_b|: with the m positions
	 * sorted, position k (from 0) is the larger of k pairs and the smaller
	 * of m-1-k. */
	double dist = 0, pairs = 0;
	for (uint32_t i = 0; i < d->nshards; i++) {
		uint64_t m = d->count[i];
		for (uint64_t j = 0; j < m; j++)
			scratch[j] = pos_of[d->first[i] + j];
		qsort(scratch, m, sizeof *scratch, cmp_u32);
		for (uint64_t j = 0; j < m; j++)
			dist += (double)scratch[j] * (double)(2 * (int64_t)j - (int64_t)(m - 1));
		pairs += (double)m * (double)(m - 1) / 2;
	}
	r.spread = pairs > 0 ? dist / pairs / ((double)(n + 1) / 3) : 0;
	return r;
}

/* Of the pairs of samples that shared a batch in the epoch measured (pos_of),
 * the share that share one again in the next (s, another epoch): how
 * often a sample meets the same batch-mates. */
static double mates_again(const struct dataset *d, const struct sampler *s, uint32_t batch,
			  const uint32_t *pos_of, uint32_t *scratch)
{
	uint64_t nbatches = d->n / batch;
	double again = 0;
	for (uint64_t k = 0; k < nbatches; k++) {
		for (uint32_t i = 0; i < batch; i++)
			scratch[i] = pos_of[sampler_permute(s, k * batch + i)] / batch;
		qsort(scratch, batch, sizeof *scratch, cmp_u32);
		uint32_t run = 1;
		for (uint32_t i = 1; i <= batch; i++) {
			if (i < batch && scratch[i] == scratch[i - 1]) {
				run++;
				continue;
			}
			again += (double)run * (run - 1) / 2;
			run = 1;
		}
	}
	return again / ((double)nbatches * batch * (batch - 1) / 2);
}

static void print_row(const char *name, const struct row *r, double cache_gb)
{
	printf("%-8s %13.1f %12.5f %12.4f %9.4f %8.2f %12.5f %9.1f GB %10.1f\n", name, r->distinct,
	       r->next_same, r->spread, r->tv, r->chi2, r->again, cache_gb, r->ns);
}

int main(int argc, char **argv)
{
	uint64_t n = 1281167, shard_samples = 2300, seed = 1, epoch = 0;
	uint32_t classes = 1000, batch = 256, shuffled = 0;
	double sample_kb = 110;
	const struct bench_opt opts[] = {
		{ "--samples", 'U', &n },
		{ "--classes", 'u', &classes },
		{ "--shard-samples", 'U', &shard_samples },
		{ "--batch", 'u', &batch },
		{ "--sample-kb", 'd', &sample_kb },
		{ "--seed", 'U', &seed },
		{ "--epoch", 'U', &epoch },
		{ "--shuffled", 'u', &shuffled },
	};
	bench_parse(argc, argv, opts, NULL);
	if (n < 2 || n >= (1ull << 32) || classes < 2 || classes > n || shard_samples == 0 ||
	    batch == 0 || batch > n)
		bench_fail("need 2 <= classes <= samples < 2^32, shard samples >= 1, "
			   "1 <= batch <= samples");

	struct dataset d = { .n = n, .shard_samples = shard_samples, .classes = classes };
	d.nshards = (uint32_t)((n + shard_samples - 1) / shard_samples);
	d.first = malloc(d.nshards * sizeof *d.first);
	d.count = malloc(d.nshards * sizeof *d.count);
	d.class_of = malloc(n * sizeof *d.class_of);
	d.class_size = calloc(classes, sizeof *d.class_size);
	uint64_t *order = malloc(n * sizeof *order);
	uint32_t *pos_of = malloc(n * sizeof *pos_of);
	uint32_t *scratch = malloc(shard_samples * sizeof *scratch);
	if (!d.first || !d.count || !d.class_of || !d.class_size || !order || !pos_of || !scratch)
		bench_fail("out of memory");
	for (uint32_t i = 0; i < d.nshards; i++) {
		d.first[i] = i * shard_samples;
		d.count[i] = n - d.first[i] < shard_samples ? n - d.first[i] : shard_samples;
	}
	for (uint64_t i = 0; i < n; i++) {
		d.class_of[i] = (uint32_t)(i * classes / n);
		d.class_size[d.class_of[i]]++;
	}
	/* --shuffled 1: packed in a random order of the whole input (packer's
	 * --order shuffled, the default for sharded packs), so every shard is
	 * a random sample of the classes. */
	for (uint64_t i = n - 1; shuffled && i > 0; i--) {
		uint64_t j = detrand_mix(detrand_key(seed, 0x5041434bull, i)) % (i + 1);
		uint32_t t = d.class_of[i];
		d.class_of[i] = d.class_of[j];
		d.class_of[j] = t;
	}

	double shard_gb = (double)shard_samples * sample_kb / 1e6;
	double p_same = 0;
	for (uint32_t c = 0; c < classes; c++)
		p_same += (double)d.class_size[c] * (d.class_size[c] - 1) / ((double)n * (n - 1));
	double uniform_distinct = 0;
	for (uint32_t c = 0; c < classes; c++) {
		double q = 1;
		for (uint32_t i = 0; i < batch; i++)
			q *= 1 - (double)d.class_size[c] / (double)(n - i);
		uniform_distinct += 1 - q;
	}
	printf("%" PRIu64 " samples, %" PRIu32 " classes %s, %" PRIu32 " shards of %" PRIu64
	       " (%.0f MB at %.0f KB a sample), batch %" PRIu32 ", seed %" PRIu64 " epoch %" PRIu64
	       "\n",
	       n, classes, shuffled ? "packed in a shuffled order" : "in index order", d.nshards,
	       shard_samples, shard_gb * 1e3, sample_kb, batch, seed, epoch);
	printf("uniform shuffle expects: %.1f classes/batch, P(next same) %.5f, shard spread 1, "
	       "chi2/df 1, mates again %.5f\n\n",
	       uniform_distinct, p_same, (double)(batch - 1) / (double)(n - 1));
	printf("%-8s %13s %12s %12s %9s %8s %12s %12s %10s\n", "order", "classes/batch",
	       "P(next same)", "shard spread", "batch TV", "chi2/df", "mates again", "node cache",
	       "ns/permute");

	char err[256];
	struct sampler s;
	if (sampler_init(&s, n, seed, epoch, 0, 1, 1, err, sizeof err))
		bench_fail("%s", err);
	struct row r = measure(&d, &s, batch, order, pos_of, scratch);
	struct sampler next;
	if (sampler_init(&next, n, seed, epoch + 1, 0, 1, 1, err, sizeof err))
		bench_fail("%s", err);
	r.again = mates_again(&d, &next, batch, pos_of, scratch);
	print_row("global", &r, (double)n * sample_kb / 1e6);

	static const uint32_t widths[] = { 1, 2, 4, 8, 16, 32, 64 };
	for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
		struct sampler_blocks *b;
		int rc = sampler_blocks_new(&b, d.first, d.count, d.nshards, widths[i], seed, epoch,
					    1, err, sizeof err);
		if (rc)
			bench_fail("%s", rc == FEEDER_EINVAL ? err : "out of memory");
		if (sampler_init_blocks(&s, b, 0, 1, err, sizeof err))
			bench_fail("%s", err);
		r = measure(&d, &s, batch, order, pos_of, scratch);
		struct sampler_blocks *b1;
		if (sampler_blocks_new(&b1, d.first, d.count, d.nshards, widths[i], seed, epoch + 1,
				       1, err, sizeof err) ||
		    sampler_init_blocks(&next, b1, 0, 1, err, sizeof err))
			bench_fail("%s", err);
		r.again = mates_again(&d, &next, batch, pos_of, scratch);
		sampler_blocks_unref(b1);
		char name[16];
		snprintf(name, sizeof name, "W=%" PRIu32, widths[i]);
		uint64_t held = 2ull * widths[i] < d.nshards ? 2ull * widths[i] : d.nshards;
		print_row(name, &r, (double)held * shard_gb);
		sampler_blocks_unref(b);
	}
	free(scratch);
	free(pos_of);
	free(order);
	free(d.class_size);
	free(d.class_of);
	free(d.count);
	free(d.first);
	return 0;
}
