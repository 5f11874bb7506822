/* packer_read.c — packer inspect, verify and cat (see packer_read.h).
 *
 * All three walk the dataset through dsstore's read API; nothing here knows
 * LMDB. inspect and verify visit every sample header (a B-tree lookup each,
 * touching only the pages of that record), verify also every payload byte. */
#include "packer_read.h"

#include "dsstore.h"
#include "jpeg_decode.h"
#include "pack_args.h"
#include "pack_msg.h"
#include "pack_progress.h"
#include "packer.h"
#include "status.h"
#include "wav_write.h"

#include <errno.h>
#include <getopt.h>
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
 * spin for ever and inspect's tables would overflow. The data file's size
 * bounds them for real: in LMDB's leaf pages a sample takes at least its
 * 8-byte node header and 8-byte key, a label its node header and 4-byte
 * key. */
#define MIN_SAMPLE_BYTES 16
#define MIN_LABEL_BYTES 12

static int counts_fit(const char *cmd, const char *dir, const struct dsformat_header *h)
{
	char path[PATH_MAX];
	struct stat st;
	if (snprintf(path, sizeof(path), "%s/data.mdb", dir) >= (int)sizeof(path) ||
	    stat(path, &st) != 0)
		return 0; /* dsstore_open read it: nothing to add here */
	uint64_t size = (uint64_t)st.st_size;
	if (h->samples > size / MIN_SAMPLE_BYTES || h->classes > size / MIN_LABEL_BYTES) {
		fprintf(stderr, "packer: %s: %s: header claims %llu samples and %u classes, more than "
			"its %llu-byte data file can hold\n", cmd, dir,
			(unsigned long long)h->samples, h->classes, (unsigned long long)size);
		return PACK_EXIT_FAIL;
	}
	return 0;
}

static int open_dataset(const char *cmd, const char *dir, struct dsstore **ds, struct dsstore_txn **t)
{
	char err[512];
	if (dsstore_open(dir, ds, err, sizeof(err)) != 0) {
		fprintf(stderr, "packer: %s: %s\n", cmd, err);
		return PACK_EXIT_FAIL;
	}
	int rc = counts_fit(cmd, dir, dsstore_header(*ds));
	if (rc) {
		dsstore_close(*ds);
		return rc;
	}
	if (dsstore_txn_begin(*ds, t, err, sizeof(err)) != 0) {
		fprintf(stderr, "packer: %s: %s: %s\n", cmd, dir, err);
		dsstore_close(*ds);
		return PACK_EXIT_FAIL;
	}
	return 0;
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

static double stat_mean(const struct stat_u64 *s) { return s->n ? (double)s->sum / (double)s->n : 0; }

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
		fprintf(f, "\"%s\":{\"total\":%llu,\"min\":%llu,\"max\":%llu,\"mean\":%.3f,\"median\":%llu}%s",
			key, (unsigned long long)s->sum, (unsigned long long)s->min,
			(unsigned long long)s->max, stat_mean(s), (unsigned long long)med, last ? "" : ",");
	else
		fprintf(f, "\"%s\":{\"total\":%.3f,\"min\":%.3f,\"max\":%.3f,\"mean\":%.3f,\"median\":%.3f}%s",
			key, (double)s->sum * scale, (double)s->min * scale, (double)s->max * scale,
			stat_mean(s) * scale, (double)med * scale, last ? "" : ",");
}

int packer_inspect_main(int argc, char **argv)
{
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	int json = 0, c;
	optind = 0;
	while ((c = pack_getopt("inspect", argc, argv, "h", opts)) != -1) {
		if (c == 'j')
			json = 1;
		else if (c == 'h') {
			puts("usage: packer inspect DEST [--json]");
			return 0;
		} else
			return PACK_EXIT_USAGE;
	}
	if (optind >= argc)
		return pack_usage_error("inspect", "missing DEST");
	if (argc - optind > 1)
		return pack_usage_error("inspect", "unexpected argument '%s'", argv[optind + 1]);
	const char *dir = argv[optind];

	struct dsstore *ds;
	struct dsstore_txn *t;
	int rc = open_dataset("inspect", dir, &ds, &t);
	if (rc)
		return rc;
	const struct dsformat_header *h = dsstore_header(ds);
	/* features and wave records are frames (of 10 ms, or samples at the
	 * dataset's rate) that inspect counts; jpeg records may be tiled. */
	int features = h->kind == DSFORMAT_KIND_FEATURES || h->kind == DSFORMAT_KIND_WAVE;
	double frame_s = h->kind == DSFORMAT_KIND_WAVE ? 1.0 / h->rate : 0.01;
	/* calloc: counts times sizes checked for overflow. */
	uint64_t *hist = calloc(h->classes ? h->classes : 1, sizeof(uint64_t));
	struct stat_u64 bytes = { .all = calloc(h->samples ? h->samples : 1, sizeof(uint64_t)) };
	struct stat_u64 frames = { .all = features ? calloc(h->samples ? h->samples : 1, sizeof(uint64_t)) : NULL };
	uint64_t unreadable = 0, bad_label = 0, tiled = 0;
	struct stat_u64 restart = { .all = features ? NULL : calloc(h->samples ? h->samples : 1, sizeof(uint64_t)) };
	if (!hist || !bytes.all || (features && !frames.all) || (!features && !restart.all)) {
		fprintf(stderr, "packer: inspect: out of memory\n");
		rc = PACK_EXIT_FAIL;
		goto out;
	}
	for (uint64_t i = 0; i < h->samples; i++) {
		struct dsformat_sample s;
		const uint8_t *p;
		char err[256];
		if (dsstore_get_sample(t, i, &s, &p, err, sizeof(err)) != 0) {
			unreadable++;
			continue;
		}
		if (s.label < h->classes)
			hist[s.label]++;
		else
			bad_label++;
		stat_add(&bytes, s.payload_len);
		if (features)
			stat_add(&frames, s.frames);
		if (s.flags & DSFORMAT_FLAG_TILED) {
			tiled++;
			stat_add(&restart, s.aux);
		}
	}
	/* What tiling cost (version 3 keeps the sources' size). */
	double overhead = h->source_bytes ? (double)bytes.sum / (double)h->source_bytes - 1 : 0;

	if (json) {
		printf("{\"path\":");
		json_string(stdout, dir, strlen(dir));
		printf(",\"kind\":\"%s\",\"version\":%u,\"samples\":%llu,\"classes\":%u,\"bytes\":%llu,",
		       dsformat_kind_name(h->kind), h->version, (unsigned long long)h->samples,
		       h->classes, (unsigned long long)bytes.sum);
		printf("\"packer_version\":");
		json_string(stdout, h->packer_version, strlen(h->packer_version));
		printf(",\"options\":");
		json_string(stdout, h->options, strlen(h->options));
		printf(",\"unreadable\":%llu,\"bad_labels\":%llu,", (unsigned long long)unreadable,
		       (unsigned long long)bad_label);
		json_stats(stdout, "payload_bytes", &bytes, 1.0, 0);
		if (!features) {
			printf("\"tiled\":%llu,\"tiled_share\":%.4f,", (unsigned long long)tiled,
			       h->samples ? (double)tiled / (double)h->samples : 0.0);
			if (tiled)
				json_stats(stdout, "restart_mcus", &restart, 1.0, 0);
			if (h->source_bytes)
				printf("\"source_bytes\":%llu,\"size_overhead\":%.5f,",
				       (unsigned long long)h->source_bytes, overhead);
		}
		if (features) {
			printf("\"feat_dim\":%u,\"dtype\":\"%s\",", h->feat_dim, dsformat_dtype_name(h->dtype));
			if (h->kind == DSFORMAT_KIND_WAVE)
				printf("\"rate\":%u,", h->rate);
			json_stats(stdout, "frames", &frames, 1.0, 0);
			json_stats(stdout, "duration_s", &frames, frame_s, 0);
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
			printf("%s%llu", k ? "," : "", (unsigned long long)hist[k]);
		printf("]}\n");
	} else {
		printf("dataset:   %s\n", dir);
		printf("format:    version %u, kind %s\n", h->version, dsformat_kind_name(h->kind));
		printf("packer:    %s  options: %s\n", h->packer_version, h->options[0] ? h->options : "(none)");
		printf("samples:   %llu\n", (unsigned long long)h->samples);
		printf("classes:   %u\n", h->classes);
		if (h->kind == DSFORMAT_KIND_WAVE)
			printf("wave:      16-bit PCM at %u Hz\n", h->rate);
		else if (features)
			printf("features:  feat_dim %u, dtype %s\n", h->feat_dim, dsformat_dtype_name(h->dtype));
		uint64_t med = stat_median(&bytes);
		printf("payload:   %llu bytes total; per sample min %llu, max %llu, mean %.1f, median %llu\n",
		       (unsigned long long)bytes.sum, (unsigned long long)bytes.min,
		       (unsigned long long)bytes.max, stat_mean(&bytes), (unsigned long long)med);
		if (!features) {
			printf("tiling:    %llu of %llu records tiled by restart intervals (%.1f %%)",
			       (unsigned long long)tiled, (unsigned long long)h->samples,
			       h->samples ? 100.0 * (double)tiled / (double)h->samples : 0.0);
			if (tiled)
				printf(", intervals of %llu..%llu MCUs (median %llu)",
				       (unsigned long long)restart.min, (unsigned long long)restart.max,
				       (unsigned long long)stat_median(&restart));
			if (h->source_bytes)
				printf("; %llu bytes from %llu of source files (%+.2f %%)",
				       (unsigned long long)bytes.sum, (unsigned long long)h->source_bytes,
				       100.0 * overhead);
			else if (h->version < 3)
				printf(" (format version %u records no tiling)", h->version);
			putchar('\n');
		}
		if (features) {
			uint64_t fmed = stat_median(&frames);
			printf("frames:    %llu total; per sample min %llu, max %llu, mean %.1f, median %llu\n",
			       (unsigned long long)frames.sum, (unsigned long long)frames.min,
			       (unsigned long long)frames.max, stat_mean(&frames), (unsigned long long)fmed);
			printf("duration:  %.2f s total; per sample min %.2f s, max %.2f s, mean %.2f s (%s)\n",
			       (double)frames.sum * frame_s, (double)frames.min * frame_s,
			       (double)frames.max * frame_s, stat_mean(&frames) * frame_s,
			       h->kind == DSFORMAT_KIND_WAVE ? "samples" : "10 ms frames");
		}
		if (unreadable || bad_label)
			printf("problems:  %llu unreadable records, %llu labels out of range (run packer verify)\n",
			       (unsigned long long)unreadable, (unsigned long long)bad_label);
		printf("histogram: class id, samples, name\n");
		for (uint32_t k = 0; k < h->classes; k++) {
			const char *name;
			size_t len;
			if (dsstore_get_label(t, k, &name, &len) != 0) {
				name = "?";
				len = 1;
			}
			printf("  %6u %8llu  %.*s\n", k, (unsigned long long)hist[k], (int)len, name);
		}
	}
	rc = unreadable ? PACK_EXIT_FAIL : 0;
out:
	free(hist);
	free(bytes.all);
	free(restart.all);
	free(frames.all);
	dsstore_txn_end(t);
	dsstore_close(ds);
	return rc;
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
					   "value at frame %zu, column %zu is not finite", i / s->dim, i % s->dim);
	}
	return 0;
}

int packer_verify_main(int argc, char **argv)
{
	static const struct option opts[] = { { "decode", no_argument, NULL, 'd' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	int decode = 0, c;
	optind = 0;
	while ((c = pack_getopt("verify", argc, argv, "h", opts)) != -1) {
		if (c == 'd')
			decode = 1;
		else if (c == 'h') {
			puts("usage: packer verify DEST [--decode]");
			return 0;
		} else
			return PACK_EXIT_USAGE;
	}
	if (optind >= argc)
		return pack_usage_error("verify", "missing DEST");
	if (argc - optind > 1)
		return pack_usage_error("verify", "unexpected argument '%s'", argv[optind + 1]);
	const char *dir = argv[optind];

	struct dsstore *ds;
	struct dsstore_txn *t;
	int rc = open_dataset("verify", dir, &ds, &t);
	if (rc)
		return rc;
	const struct dsformat_header *h = dsstore_header(ds);
	/* --decode: every JPEG through the rules feederd decodes by
	 * (media/jpeg_decode.h), in the memory of one row. */
	struct jpeg_decoder *dec = NULL;
	char derr[256];
	if (decode && h->kind == DSFORMAT_KIND_JPEG &&
	    jpeg_decoder_create(&dec, derr, sizeof(derr)) != 0) {
		fprintf(stderr, "packer: verify: %s\n", derr);
		dsstore_txn_end(t);
		dsstore_close(ds);
		return PACK_EXIT_FAIL;
	}
	uint64_t nbad = 0, bytes = 0;
	struct pack_progress prog;
	pack_progress_init(&prog, h->samples, 0);
	prog.what = "samples";
	for (uint64_t i = 0; i < h->samples; i++) {
		struct dsformat_sample s;
		const uint8_t *p;
		char why[300];
		int r = dsstore_get_sample(t, i, &s, &p, why, sizeof(why));
		if (!r)
			r = dsformat_sample_verify(&s, p, why, sizeof(why));
		/* every check feederd makes before it decodes a record */
		if (!r)
			r = dsformat_sample_check(h, &s, why, sizeof(why));
		if (!r && h->kind == DSFORMAT_KIND_FEATURES)
			r = check_finite(&s, p, why, sizeof(why));
		if (!r && dec)
			r = jpeg_decode_rgbx(dec, p, s.payload_len, 8, NULL, NULL, NULL, why, sizeof(why));
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
	       (unsigned long long)h->samples, (unsigned long long)bytes,
	       dec ? " and decoded" : "", (unsigned long long)nbad);
	/* as feederd will: media/jpeg_huff.h's policy */
	if (dec && jpeg_decoder_fallbacks(dec))
		printf("%s: %llu decoded by libjpeg's Huffman decoder where feederd's own refused them "
		       "(feeder_jpeg_fallbacks_total)\n", dir,
		       (unsigned long long)jpeg_decoder_fallbacks(dec));
	jpeg_decoder_destroy(dec);
	dsstore_txn_end(t);
	dsstore_close(ds);
	return nbad ? PACK_EXIT_FAIL : 0;
}

/* ---- cat ---- */

int packer_cat_main(int argc, char **argv)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	int c;
	optind = 0;
	while ((c = pack_getopt("cat", argc, argv, "h", opts)) != -1) {
		if (c == 'h') {
			puts("usage: packer cat DEST INDEX\n\nWrite record INDEX's payload to stdout: the JPEG, the feature matrix,\nor a waveform as a WAV file.");
			return 0;
		}
		return PACK_EXIT_USAGE;
	}
	if (argc - optind < 2)
		return pack_usage_error("cat", "missing DEST or INDEX");
	if (argc - optind > 2)
		return pack_usage_error("cat", "unexpected argument '%s'", argv[optind + 2]);
	const char *dir = argv[optind];
	unsigned long long index;
	if (pack_parse_uint(argv[optind + 1], 0, UINT64_MAX, &index) != 0)
		return pack_usage_error("cat", "INDEX '%s' is not a non-negative integer", argv[optind + 1]);
	struct dsstore *ds;
	struct dsstore_txn *t;
	int rc = open_dataset("cat", dir, &ds, &t);
	if (rc)
		return rc;
	const struct dsformat_header *h = dsstore_header(ds);
	if (index >= h->samples) {
		fprintf(stderr, "packer: cat: index %llu out of range (%s has %llu samples)\n", index, dir,
			(unsigned long long)h->samples);
		rc = PACK_EXIT_USAGE;
		goto out;
	}
	struct dsformat_sample s;
	const uint8_t *p;
	char err[300];
	if (dsstore_get_sample(t, index, &s, &p, err, sizeof(err)) != 0) {
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
	dsstore_txn_end(t);
	dsstore_close(ds);
	return rc;
}
