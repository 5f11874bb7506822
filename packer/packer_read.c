/* packer_read.c — packer inspect, verify and cat (see packer_read.h).
 *
 * All three walk the dataset through dsstore's read API; nothing here knows
 * LMDB. inspect and verify visit every sample header (a B-tree lookup each,
 * touching only the pages of that record), verify also every payload byte. */
#include "packer_read.h"

#include "dsstore.h"
#include "jpeg_decode.h"
#include "layout.h"
#include "pack_args.h"
#include "pack_msg.h"
#include "pack_progress.h"
#include "packer.h"
#include "status.h"
#include "wav_write.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every loop below runs to the header's sample and class counts. dsstore_open
 * checks those against LMDB's own entry counts, but both are numbers stored
 * in the file, and a crafted one can claim 2^61 of each: the loops would
 * spin for ever and inspect's tables would overflow. The data files' size
 * bounds them for real: in LMDB's leaf pages a sample takes at least its
 * 8-byte node header and 8-byte key, a label its node header and 4-byte
 * key. */
#define MIN_SAMPLE_BYTES 16
#define MIN_LABEL_BYTES 12

static int counts_fit(const char *cmd, const char *what, const struct dsformat_header *h,
		      uint64_t size)
{
	if (h->samples > size / MIN_SAMPLE_BYTES || h->classes > size / MIN_LABEL_BYTES) {
		fprintf(stderr,
			"packer: %s: %s: header claims %llu samples and %u classes, more than "
			"its %llu-byte data file can hold\n",
			cmd, what, (unsigned long long)h->samples, h->classes,
			(unsigned long long)size);
		return PACK_EXIT_FAIL;
	}
	return 0;
}

/* A dataset of either layout (layout.h), read one shard at a time. */
struct dataset {
	const char *cmd, *dir;
	struct layout l;
	size_t cur; /* the shard open in ds and t, or l.m.nshards */
	struct dsstore *ds;
	struct dsstore_txn *t;
};

/* Load the dataset's layout: PACK_EXIT_FAIL (said) or 0. */
static int dataset_load(const char *cmd, const char *dir, struct dataset *d)
{
	char err[1024];
	memset(d, 0, sizeof(*d));
	d->cmd = cmd;
	d->dir = dir;
	if (layout_load(dir, 0, &d->l, err, sizeof(err)) != 0) {
		fprintf(stderr, "packer: %s: %s\n", cmd, err);
		return PACK_EXIT_FAIL;
	}
	d->cur = d->l.m.nshards;
	uint64_t size = 0;
	for (size_t i = 0; i < d->l.m.nshards; i++)
		size += d->l.m.shards[i].bytes;
	return counts_fit(cmd, dir, &d->l.m.header, size);
}

static void dataset_close_shard(struct dataset *d)
{
	dsstore_txn_end(d->t);
	dsstore_close(d->ds);
	d->t = NULL;
	d->ds = NULL;
	d->cur = d->l.m.nshards;
}

/* Open shard i (closing the one open): a sentence in err (naming the
 * shard) and a code, or 0. A shard must agree with the manifest: its
 * sample count, and the dataset's kind, version and shape. */
static int dataset_shard_err(struct dataset *d, size_t i, char *err, size_t errlen)
{
	if (d->cur == i)
		return 0;
	dataset_close_shard(d);
	const struct manifest_shard *sh = &d->l.m.shards[i];
	const char *name = d->l.sharded ? sh->name : d->dir;
	char why[600];
	int rc = layout_open_shard(&d->l, i, &d->ds, why, sizeof(why));
	if (rc)
		return status_fail(err, errlen, rc, "%s", why);
	const struct dsformat_header *h = dsstore_header(d->ds), *w = &d->l.m.header;
	if (d->l.sharded &&
	    (h->samples != sh->count || h->version != w->version || h->kind != w->kind ||
	     h->classes != w->classes || h->feat_dim != w->feat_dim || h->dtype != w->dtype ||
	     h->rate != w->rate)) {
		rc = status_fail(err, errlen, FEEDER_ECORRUPT,
				 "%s/%s: its header (%llu samples, kind %s, %u classes) disagrees "
				 "with the manifest's (%llu samples, kind %s, %u classes)",
				 d->dir, name, (unsigned long long)h->samples,
				 dsformat_kind_name(h->kind), h->classes,
				 (unsigned long long)sh->count, dsformat_kind_name(w->kind),
				 w->classes);
		dsstore_close(d->ds);
		d->ds = NULL;
		return rc;
	}
	if ((rc = dsstore_txn_begin(d->ds, &d->t, why, sizeof(why)))) {
		rc = status_fail(err, errlen, rc, "%s: %s", name, why);
		dsstore_close(d->ds);
		d->ds = NULL;
		return rc;
	}
	d->cur = i;
	return 0;
}

/* The same, saying the error: 0 or PACK_EXIT_FAIL. */
static int dataset_shard(struct dataset *d, size_t i)
{
	char err[1024];
	if (dataset_shard_err(d, i, err, sizeof(err)) == 0)
		return 0;
	fprintf(stderr, "packer: %s: %s\n", d->cmd, err);
	return PACK_EXIT_FAIL;
}

static void dataset_free(struct dataset *d)
{
	dataset_close_shard(d);
	layout_free(&d->l);
}

/* ---- inspect ---- */

struct stat_u64 {
	uint64_t n, sum, min, max;
	uint64_t *all; /* for the median */
};

static void stat_add(struct stat_u64 *s, uint64_t v)
{
	if (s->n == 0 || v < s->min)
		s->min = v;
	if (v > s->max)
		s->max = v;
	s->sum += v;
	if (s->all)
		s->all[s->n] = v;
	s->n++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t stat_median(struct stat_u64 *s)
{
	if (!s->n || !s->all)
		return 0;
	qsort(s->all, s->n, sizeof(uint64_t), cmp_u64);
	return s->n % 2 ? s->all[s->n / 2] : (s->all[s->n / 2 - 1] + s->all[s->n / 2]) / 2;
}

static double stat_mean(const struct stat_u64 *s)
{
	return s->n ? (double)s->sum / (double)s->n : 0;
}

static void json_string(FILE *f, const char *p, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_stats(FILE *f, const char *key, struct stat_u64 *s, double scale, int last)
{
	uint64_t med = stat_median(s);
	if (scale == 1.0)
		fprintf(f,
			"\"%s\":{\"total\":%llu,\"min\":%llu,\"max\":%llu,\"mean\":%.3f,\"median\":%llu}%s",
			key, (unsigned long long)s->sum, (unsigned long long)s->min,
			(unsigned long long)s->max, stat_mean(s), (unsigned long long)med,
			last ? "" : ",");
	else
		fprintf(f,
			"\"%s\":{\"total\":%.3f,\"min\":%.3f,\"max\":%.3f,\"mean\":%.3f,\"median\":%.3f}%s",
			key, (double)s->sum * scale, (double)s->min * scale, (double)s->max * scale,
			stat_mean(s) * scale, (double)med * scale, last ? "" : ",");
}

/* The command line of inspect and verify: DEST and one flag (--name, set
 * in *on). 0, -1 after --help, or PACK_EXIT_USAGE (said). */
static int dest_and_flag(const char *cmd, const char *name, const char *help_text, int argc,
			 char **argv, int *on, char **dir)
{
	int help = 0, n;
	struct argtab tab[] = {
		ARGTAB_FLAG(name, 0, on, help_text),
		ARGTAB_FLAG("help", 'h', &help, "this text"),
		ARGTAB_END,
	};
	int rc = pack_args_parse(cmd, tab, argc, argv, dir, 1, &n);
	if (rc)
		return rc;
	if (help) {
		printf("usage: packer %s DEST [--%s]\n", cmd, name);
		return -1;
	}
	if (n < 1)
		return pack_usage_error(cmd, "missing DEST");
	return 0;
}

/* What inspect counts over the records. */
struct inspect_stats {
	uint64_t *hist; /* samples per class */
	struct stat_u64 bytes, frames, restart;
	uint64_t unreadable, bad_label, tiled;
	/* features and wave records are frames (of 10 ms, or samples at the
	 * dataset's rate) that inspect counts; jpeg records may be tiled. */
	int features;
	double frame_s;
	double overhead; /* what tiling cost (version 3 keeps the sources' size) */
};

static void inspect_free(struct inspect_stats *st)
{
	free(st->hist);
	free(st->bytes.all);
	free(st->restart.all);
	free(st->frames.all);
}

/* Read every record of every shard of d into st. 0, -ENOMEM, or
 * PACK_EXIT_FAIL (a shard that does not open, said). */
static int inspect_count(struct dataset *d, const struct dsformat_header *h,
			 struct inspect_stats *st)
{
	size_t n = h->samples ? h->samples : 1;
	st->features = h->kind == DSFORMAT_KIND_FEATURES || h->kind == DSFORMAT_KIND_WAVE;
	st->frame_s = h->kind == DSFORMAT_KIND_WAVE ? 1.0 / h->rate : 0.01;
	/* calloc: counts times sizes checked for overflow. */
	st->hist = calloc(h->classes ? h->classes : 1, sizeof(uint64_t));
	st->bytes.all = calloc(n, sizeof(uint64_t));
	if (st->features)
		st->frames.all = calloc(n, sizeof(uint64_t));
	else
		st->restart.all = calloc(n, sizeof(uint64_t));
	if (!st->hist || !st->bytes.all || (st->features ? !st->frames.all : !st->restart.all))
		return -ENOMEM;
	for (uint64_t i = 0; i < h->samples; i++) {
		struct dsformat_sample s;
		const uint8_t *p;
		char err[256];
		size_t k = manifest_find(&d->l.m, i);
		if (k == d->l.m.nshards || dataset_shard(d, k))
			return PACK_EXIT_FAIL;
		if (dsstore_get_sample(d->t, i - d->l.m.shards[k].first, &s, &p, err,
				       sizeof(err)) != 0) {
			st->unreadable++;
			continue;
		}
		if (s.label < h->classes)
			st->hist[s.label]++;
		else
			st->bad_label++;
		stat_add(&st->bytes, s.payload_len);
		if (st->features)
			stat_add(&st->frames, s.frames);
		if (s.flags & DSFORMAT_FLAG_TILED) {
			st->tiled++;
			stat_add(&st->restart, s.aux);
		}
	}
	st->overhead = h->source_bytes ? (double)st->bytes.sum / (double)h->source_bytes - 1 : 0;
	return 0;
}

static void inspect_json(const char *dir, const struct layout *l, const struct dsformat_header *h,
			 struct dsstore_txn *t, struct inspect_stats *st)
{
	printf("{\"path\":");
	json_string(stdout, dir, strlen(dir));
	printf(",\"kind\":\"%s\",\"version\":%u,\"samples\":%llu,\"classes\":%u,\"bytes\":%llu,",
	       dsformat_kind_name(h->kind), h->version, (unsigned long long)h->samples, h->classes,
	       (unsigned long long)st->bytes.sum);
	printf("\"packer_version\":");
	json_string(stdout, h->packer_version, strlen(h->packer_version));
	printf(",\"options\":");
	json_string(stdout, h->options, strlen(h->options));
	printf(",\"unreadable\":%llu,\"bad_labels\":%llu,", (unsigned long long)st->unreadable,
	       (unsigned long long)st->bad_label);
	json_stats(stdout, "payload_bytes", &st->bytes, 1.0, 0);
	if (!st->features) {
		printf("\"tiled\":%llu,\"tiled_share\":%.4f,", (unsigned long long)st->tiled,
		       h->samples ? (double)st->tiled / (double)h->samples : 0.0);
		if (st->tiled)
			json_stats(stdout, "restart_mcus", &st->restart, 1.0, 0);
		if (h->source_bytes)
			printf("\"source_bytes\":%llu,\"size_overhead\":%.5f,",
			       (unsigned long long)h->source_bytes, st->overhead);
	}
	if (st->features) {
		printf("\"feat_dim\":%u,\"dtype\":\"%s\",", h->feat_dim,
		       dsformat_dtype_name(h->dtype));
		if (h->kind == DSFORMAT_KIND_WAVE)
			printf("\"rate\":%u,", h->rate);
		json_stats(stdout, "frames", &st->frames, 1.0, 0);
		json_stats(stdout, "duration_s", &st->frames, st->frame_s, 0);
	}
	printf("\"labels\":[");
	for (uint32_t k = 0; k < h->classes; k++) {
		const char *name;
		size_t len;
		if (dsstore_get_label(t, k, &name, &len) != 0) {
			name = "";
			len = 0;
		}
		if (k)
			putchar(',');
		json_string(stdout, name, len);
	}
	printf("],\"histogram\":[");
	for (uint32_t k = 0; k < h->classes; k++)
		printf("%s%llu", k ? "," : "", (unsigned long long)st->hist[k]);
	printf("]");
	if (l->sharded) {
		printf(",\"shards\":[");
		for (size_t i = 0; i < l->m.nshards; i++) {
			const struct manifest_shard *sh = &l->m.shards[i];
			printf("%s{\"name\":", i ? "," : "");
			json_string(stdout, sh->name, strlen(sh->name));
			printf(",\"first\":%llu,\"samples\":%llu,\"bytes\":%llu,\"crc32c\":\"%08x\"}",
			       (unsigned long long)sh->first, (unsigned long long)sh->count,
			       (unsigned long long)sh->bytes, sh->crc);
		}
		printf("]");
	}
	printf("}\n");
}

/* The text report's line on tiling (jpeg datasets). */
static void inspect_text_tiling(const struct dsformat_header *h, struct inspect_stats *st)
{
	printf("tiling:    %llu of %llu records tiled by restart intervals (%.1f %%)",
	       (unsigned long long)st->tiled, (unsigned long long)h->samples,
	       h->samples ? 100.0 * (double)st->tiled / (double)h->samples : 0.0);
	if (st->tiled)
		printf(", intervals of %llu..%llu MCUs (median %llu)",
		       (unsigned long long)st->restart.min, (unsigned long long)st->restart.max,
		       (unsigned long long)stat_median(&st->restart));
	if (h->source_bytes)
		printf("; %llu bytes from %llu of source files (%+.2f %%)",
		       (unsigned long long)st->bytes.sum, (unsigned long long)h->source_bytes,
		       100.0 * st->overhead);
	else if (h->version < 3)
		printf(" (format version %u records no tiling)", h->version);
	putchar('\n');
}

/* The text report's lines on frames and duration (features and wave). */
static void inspect_text_frames(const struct dsformat_header *h, struct inspect_stats *st)
{
	struct stat_u64 *f = &st->frames;
	double fs = st->frame_s;
	printf("frames:    %llu total; per sample min %llu, max %llu, mean %.1f, median %llu\n",
	       (unsigned long long)f->sum, (unsigned long long)f->min, (unsigned long long)f->max,
	       stat_mean(f), (unsigned long long)stat_median(f));
	printf("duration:  %.2f s total; per sample min %.2f s, max %.2f s, mean %.2f s (%s)\n",
	       (double)f->sum * fs, (double)f->min * fs, (double)f->max * fs, stat_mean(f) * fs,
	       h->kind == DSFORMAT_KIND_WAVE ? "samples" : "10 ms frames");
}

static void inspect_text(const char *dir, const struct layout *l, const struct dsformat_header *h,
			 struct dsstore_txn *t, struct inspect_stats *st)
{
	printf("dataset:   %s\n", dir);
	printf("format:    version %u, kind %s\n", h->version, dsformat_kind_name(h->kind));
	printf("packer:    %s  options: %s\n", h->packer_version,
	       h->options[0] ? h->options : "(none)");
	printf("samples:   %llu\n", (unsigned long long)h->samples);
	printf("classes:   %u\n", h->classes);
	if (h->kind == DSFORMAT_KIND_WAVE)
		printf("wave:      16-bit PCM at %u Hz\n", h->rate);
	else if (st->features)
		printf("features:  feat_dim %u, dtype %s\n", h->feat_dim,
		       dsformat_dtype_name(h->dtype));
	printf("payload:   %llu bytes total; per sample min %llu, max %llu, mean %.1f, median %llu\n",
	       (unsigned long long)st->bytes.sum, (unsigned long long)st->bytes.min,
	       (unsigned long long)st->bytes.max, stat_mean(&st->bytes),
	       (unsigned long long)stat_median(&st->bytes));
	if (st->features)
		inspect_text_frames(h, st);
	else
		inspect_text_tiling(h, st);
	if (st->unreadable || st->bad_label)
		printf("problems:  %llu unreadable records, %llu labels out of range (run packer verify)\n",
		       (unsigned long long)st->unreadable, (unsigned long long)st->bad_label);
	printf("histogram: class id, samples, name\n");
	for (uint32_t k = 0; k < h->classes; k++) {
		const char *name;
		size_t len;
		if (dsstore_get_label(t, k, &name, &len) != 0) {
			name = "?";
			len = 1;
		}
		printf("  %6u %8llu  %.*s\n", k, (unsigned long long)st->hist[k], (int)len, name);
	}
	if (!l->sharded)
		return;
	printf("shards:    %zu (%s): name, samples, first, bytes\n", l->m.nshards, MANIFEST_NAME);
	for (size_t i = 0; i < l->m.nshards; i++) {
		const struct manifest_shard *sh = &l->m.shards[i];
		printf("  %s %8llu %10llu %12llu\n", sh->name, (unsigned long long)sh->count,
		       (unsigned long long)sh->first, (unsigned long long)sh->bytes);
	}
}

int packer_inspect_main(int argc, char **argv)
{
	int json = 0;
	char *dir;
	int rc = dest_and_flag("inspect", "json", "one JSON object", argc, argv, &json, &dir);
	if (rc)
		return rc < 0 ? 0 : rc;

	struct dataset d;
	rc = dataset_load("inspect", dir, &d);
	if (rc) {
		dataset_free(&d);
		return rc;
	}
	const struct dsformat_header *h = &d.l.m.header;
	struct inspect_stats st = { 0 };
	rc = inspect_count(&d, h, &st);
	if (rc == -ENOMEM)
		fprintf(stderr, "packer: inspect: out of memory\n");
	/* the labels: every shard has them, the first is read */
	if (!rc && !(rc = dataset_shard(&d, 0))) {
		if (json)
			inspect_json(dir, &d.l, h, d.t, &st);
		else
			inspect_text(dir, &d.l, h, d.t, &st);
		rc = st.unreadable ? PACK_EXIT_FAIL : 0;
	}
	inspect_free(&st);
	dataset_free(&d);
	return rc ? PACK_EXIT_FAIL : 0;
}

/* ---- verify ---- */

/* What feederd does not check and a trainer would still choke on: a
 * feature value that is not finite. The record's shape is
 * dsformat_sample_check's. */
static int check_finite(const struct dsformat_sample *s, const uint8_t *p, char *why, size_t wlen)
{
	size_t esz = dsformat_dtype_size(s->dtype), n = (size_t)s->frames * s->dim;
	for (size_t i = 0; i < n; i++) {
		int finite;
		if (esz == 2) {
			uint16_t v;
			memcpy(&v, p + 2 * i, 2);
			finite = (v & 0x7c00u) != 0x7c00u;
		} else {
			float v;
			memcpy(&v, p + 4 * i, 4);
			finite = isfinite(v);
		}
		if (!finite)
			return status_fail(why, wlen, FEEDER_ECORRUPT,
					   "value at frame %zu, column %zu is not finite",
					   i / s->dim, i % s->dim);
	}
	return 0;
}

/* A sharded dataset's files against the manifest: sizes (layout_load
 * checked them) and CRC-32C, each damaged one named on stdout. Their
 * number. */
static uint64_t verify_shard_files(const struct dataset *d)
{
	uint64_t bad = 0;
	for (size_t i = 0; d->l.sharded && i < d->l.m.nshards; i++) {
		const struct manifest_shard *sh = &d->l.m.shards[i];
		char path[4096 + MANIFEST_MAX_NAME + 2], err[600];
		uint32_t crc;
		uint64_t n;
		if (layout_shard_path(&d->l, i, path, sizeof(path), err, sizeof(err)) ||
		    layout_file_crc(path, &crc, &n, err, sizeof(err))) {
			printf("shard %s: %s\n", sh->name, err);
			bad++;
		} else if (n != sh->bytes || crc != sh->crc) {
			printf("shard %s: %llu bytes of CRC-32C %08x, the manifest says %llu of "
			       "%08x (the file is damaged)\n",
			       sh->name, (unsigned long long)n, crc, (unsigned long long)sh->bytes,
			       sh->crc);
			bad++;
		}
	}
	return bad;
}

int packer_verify_main(int argc, char **argv)
{
	int decode = 0;
	char *dir;
	int rc = dest_and_flag("verify", "decode", "decode every JPEG too", argc, argv, &decode,
			       &dir);
	if (rc)
		return rc < 0 ? 0 : rc;

	struct dataset d;
	rc = dataset_load("verify", dir, &d);
	if (rc) {
		dataset_free(&d);
		return rc;
	}
	const struct dsformat_header *h = &d.l.m.header;
	/* --decode: every JPEG through the rules feederd decodes by
	 * (media/jpeg_decode.h), in the memory of one row. */
	struct jpeg_decoder *dec = NULL;
	char derr[256];
	if (decode && h->kind == DSFORMAT_KIND_JPEG &&
	    jpeg_decoder_create(&dec, derr, sizeof(derr)) != 0) {
		fprintf(stderr, "packer: verify: %s\n", derr);
		dataset_free(&d);
		return PACK_EXIT_FAIL;
	}
	uint64_t nbad = 0, bytes = 0, bad_shards = verify_shard_files(&d);
	struct pack_progress prog;
	pack_progress_init(&prog, h->samples, 0);
	prog.what = "samples";
	size_t failed = d.l.m.nshards; /* a shard that did not open */
	for (uint64_t i = 0; i < h->samples; i++) {
		struct dsformat_sample s;
		const uint8_t *p;
		char why[1100];
		size_t k = manifest_find(&d.l.m, i);
		int r = k == failed ? FEEDER_ECORRUPT : dataset_shard_err(&d, k, why, sizeof(why));
		if (k == failed)
			snprintf(why, sizeof(why), "in %s, which does not open",
				 d.l.m.shards[k].name);
		else if (r && !d.l.sharded) {
			fprintf(stderr, "packer: verify: %s\n", why);
			jpeg_decoder_destroy(dec);
			dataset_free(&d);
			return PACK_EXIT_FAIL;
		} else if (r) {
			printf("shard %s\n", why);
			failed = k;
			bad_shards++;
		}
		if (!r)
			r = dsstore_get_sample(d.t, i - d.l.m.shards[k].first, &s, &p, why,
					       sizeof(why));
		if (!r)
			r = dsformat_sample_verify(&s, p, why, sizeof(why));
		/* every check feederd makes before it decodes a record */
		if (!r)
			r = dsformat_sample_check(h, &s, why, sizeof(why));
		if (!r && h->kind == DSFORMAT_KIND_FEATURES)
			r = check_finite(&s, p, why, sizeof(why));
		if (!r && dec)
			r = jpeg_decode_rgbx(dec, p, s.payload_len, 8, NULL, NULL, NULL, why,
					     sizeof(why));
		if (r) {
			printf("sample %llu: %s\n", (unsigned long long)i, why);
			nbad++;
		} else {
			bytes += s.payload_len;
		}
		pack_progress_add(&prog, 1, r ? 0 : s.payload_len);
	}
	pack_progress_done(&prog);
	printf("%s: %llu samples, %llu bytes checked%s, %llu bad\n", dir,
	       (unsigned long long)h->samples, (unsigned long long)bytes, dec ? " and decoded" : "",
	       (unsigned long long)nbad);
	if (d.l.sharded)
		printf("%s: %zu shard files, %llu damaged\n", dir, d.l.m.nshards,
		       (unsigned long long)bad_shards);
	/* as feederd will: media/jpeg_huff.h's policy */
	if (dec && jpeg_decoder_fallbacks(dec))
		printf("%s: %llu decoded by libjpeg's Huffman decoder where feederd's own refused them "
		       "(feeder_jpeg_fallbacks_total)\n",
		       dir, (unsigned long long)jpeg_decoder_fallbacks(dec));
	jpeg_decoder_destroy(dec);
	dataset_free(&d);
	return nbad || bad_shards ? PACK_EXIT_FAIL : 0;
}

/* ---- cat ---- */

int packer_cat_main(int argc, char **argv)
{
	int help = 0, n;
	char *ops[2];
	struct argtab tab[] = {
		ARGTAB_FLAG("help", 'h', &help, "this text"),
		ARGTAB_END,
	};
	int rc = pack_args_parse("cat", tab, argc, argv, ops, 2, &n);
	if (rc)
		return rc;
	if (help) {
		puts("usage: packer cat DEST INDEX\n\nWrite record INDEX's payload to stdout: the JPEG, the feature matrix,\nor a waveform as a WAV file.");
		return 0;
	}
	if (n < 2)
		return pack_usage_error("cat", "missing DEST or INDEX");
	const char *dir = ops[0];
	unsigned long long index;
	if (argtab_parse_uint(ops[1], 0, UINT64_MAX, &index) != 0)
		return pack_usage_error("cat", "INDEX '%s' is not a non-negative integer", ops[1]);
	struct dataset d;
	rc = dataset_load("cat", dir, &d);
	if (rc) {
		dataset_free(&d);
		return rc;
	}
	const struct dsformat_header *h = &d.l.m.header;
	if (index >= h->samples) {
		fprintf(stderr, "packer: cat: index %llu out of range (%s has %llu samples)\n",
			index, dir, (unsigned long long)h->samples);
		rc = PACK_EXIT_USAGE;
		goto out;
	}
	struct dsformat_sample s;
	const uint8_t *p;
	char err[300];
	size_t k = manifest_find(&d.l.m, index);
	if ((rc = dataset_shard(&d, k)))
		goto out;
	if (dsstore_get_sample(d.t, index - d.l.m.shards[k].first, &s, &p, err, sizeof(err)) != 0) {
		fprintf(stderr, "packer: cat: %s: %s\n", dir, err);
		rc = PACK_EXIT_FAIL;
		goto out;
	}
	/* A waveform comes out as a WAV file of its samples (the payload is
	 * already little-endian 16-bit PCM); other kinds as their payload. */
	uint8_t hdr[WAV_WRITE_HEADER_BYTES];
	size_t hlen = 0;
	if (h->kind == DSFORMAT_KIND_WAVE) {
		if (wav_write_header(hdr, h->rate, 1, s.payload_len, err, sizeof(err)) != 0) {
			fprintf(stderr, "packer: cat: %s: %s\n", dir, err);
			rc = PACK_EXIT_FAIL;
			goto out;
		}
		hlen = sizeof(hdr);
	}
	for (size_t off = 0; off < hlen + s.payload_len;) {
		const uint8_t *src = off < hlen ? hdr + off : p + (off - hlen);
		size_t left = off < hlen ? hlen - off : hlen + s.payload_len - off;
		ssize_t w = write(STDOUT_FILENO, src, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fprintf(stderr, "packer: cat: writing to stdout: %s\n", strerror(errno));
			rc = PACK_EXIT_FAIL;
			goto out;
		}
		off += (size_t)w;
	}
out:
	dataset_free(&d);
	return rc;
}
