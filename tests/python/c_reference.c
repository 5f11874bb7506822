/* c_reference.c — the C side of the Python client's tests.
 *
 *   c_reference layout
 *       print, as one JSON object, sizeof and the offset of every field of
 *       the structs in feeder.h, so that test_layout.py can hold the cffi
 *       declarations of client/python/feeder/_lib.py to what a C compiler
 *       makes of the header.
 *   c_reference dump SOCKET OUT [key=value ...]
 *       open a stream with libfeeder and write every batch to OUT: per batch
 *       a header of u64 epoch, u64 batch_index, u32 count, u32 replacements,
 *       u32 shape[4], u64 bytes (little-endian, 48 bytes), then count int32
 *       labels, then the tensor's bytes. test_loader.py compares feeder.Loader
 *       with this. Keys: dataset, pipeline (jpeg|features), batch, seed,
 *       epoch, start, rank, world, drop_last, slots, dtype (u8|f16|f32),
 *       layout (nchw|nhwc), size, train, chunk.
 *
 * Exit status: 0, 1 on any failure (with the reason on stderr), 2 for usage. */
#include "feeder.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD(T, f) printf("%s\"%s.%s\": %zu", sep, #T, #f, offsetof(struct T, f)), sep = ", "
#define SIZE(T) printf("%s\"%s\": %zu", sep, #T, sizeof(struct T)), sep = ", "

static int layout(void)
{
	const char *sep = "";
	printf("{");
	SIZE(feeder_stream_opts);
	FIELD(feeder_stream_opts, dataset);
	FIELD(feeder_stream_opts, pipeline);
	FIELD(feeder_stream_opts, batch);
	FIELD(feeder_stream_opts, seed);
	FIELD(feeder_stream_opts, epoch);
	FIELD(feeder_stream_opts, epochs);
	FIELD(feeder_stream_opts, shuffle);
	FIELD(feeder_stream_opts, start_batch);
	FIELD(feeder_stream_opts, rank);
	FIELD(feeder_stream_opts, world);
	FIELD(feeder_stream_opts, drop_last);
	FIELD(feeder_stream_opts, slots);
	FIELD(feeder_stream_opts, dtype);
	FIELD(feeder_stream_opts, layout);
	FIELD(feeder_stream_opts, on_error);
	FIELD(feeder_stream_opts, names);
	FIELD(feeder_stream_opts, placement);
	FIELD(feeder_stream_opts, device_batches);
	FIELD(feeder_stream_opts, jpeg);
	FIELD(feeder_stream_opts, jpeg.height);
	FIELD(feeder_stream_opts, jpeg.width);
	FIELD(feeder_stream_opts, jpeg.train);
	FIELD(feeder_stream_opts, jpeg.scale_min);
	FIELD(feeder_stream_opts, jpeg.scale_max);
	FIELD(feeder_stream_opts, jpeg.ratio_min);
	FIELD(feeder_stream_opts, jpeg.ratio_max);
	FIELD(feeder_stream_opts, jpeg.flip_p);
	FIELD(feeder_stream_opts, jpeg.resize_ratio);
	FIELD(feeder_stream_opts, jpeg.mean);
	FIELD(feeder_stream_opts, jpeg.std);
	FIELD(feeder_stream_opts, features);
	FIELD(feeder_stream_opts, features.chunk_len);
	FIELD(feeder_stream_opts, features.pad);
	FIELD(feeder_stream_opts, features.cmn);
	FIELD(feeder_stream_opts, features.cmn_window);
	FIELD(feeder_stream_opts, features.cvn);
	FIELD(feeder_stream_opts, features.train);
	FIELD(feeder_stream_opts, wave);
	FIELD(feeder_stream_opts, wave.chunk_len);
	FIELD(feeder_stream_opts, wave.train);
	FIELD(feeder_stream_opts, wave.pad);
	FIELD(feeder_stream_opts, wave.features);
	FIELD(feeder_stream_opts, wave.bins);
	FIELD(feeder_stream_opts, wave.ceps);
	FIELD(feeder_stream_opts, wave.dither);
	FIELD(feeder_stream_opts, wave.cmn);
	FIELD(feeder_stream_opts, wave.cmn_window);
	FIELD(feeder_stream_opts, wave.cvn);
	FIELD(feeder_stream_opts, wave.noise);
	FIELD(feeder_stream_opts, wave.noise_p);
	FIELD(feeder_stream_opts, wave.snr_noise_min);
	FIELD(feeder_stream_opts, wave.snr_noise_max);
	FIELD(feeder_stream_opts, wave.snr_music_min);
	FIELD(feeder_stream_opts, wave.snr_music_max);
	FIELD(feeder_stream_opts, wave.snr_babble_min);
	FIELD(feeder_stream_opts, wave.snr_babble_max);
	FIELD(feeder_stream_opts, wave.babble_min);
	FIELD(feeder_stream_opts, wave.babble_max);
	FIELD(feeder_stream_opts, wave.rir);
	FIELD(feeder_stream_opts, wave.reverb_p);
	FIELD(feeder_stream_opts, wave.speed_p);
	FIELD(feeder_stream_opts, wave.speed_labels);
	FIELD(feeder_stream_opts, wave.gain_p);
	FIELD(feeder_stream_opts, wave.gain_min_db);
	FIELD(feeder_stream_opts, wave.gain_max_db);
	FIELD(feeder_stream_opts, wave.specaug_p);
	FIELD(feeder_stream_opts, wave.time_masks);
	FIELD(feeder_stream_opts, wave.time_mask_max);
	FIELD(feeder_stream_opts, wave.freq_masks);
	FIELD(feeder_stream_opts, wave.freq_mask_max);
	SIZE(feeder_stream_info);
	FIELD(feeder_stream_info, id);
	FIELD(feeder_stream_info, slots);
	FIELD(feeder_stream_info, batch);
	FIELD(feeder_stream_info, dtype);
	FIELD(feeder_stream_info, layout);
	FIELD(feeder_stream_info, ndim);
	FIELD(feeder_stream_info, shape);
	FIELD(feeder_stream_info, batches);
	FIELD(feeder_stream_info, batches_per_epoch);
	FIELD(feeder_stream_info, samples);
	FIELD(feeder_stream_info, classes);
	FIELD(feeder_stream_info, ring);
	FIELD(feeder_stream_info, ring_size);
	FIELD(feeder_stream_info, slot_size);
	FIELD(feeder_stream_info, placement);
	FIELD(feeder_stream_info, memory);
	FIELD(feeder_stream_info, device);
	SIZE(feeder_batch);
	FIELD(feeder_batch, data);
	FIELD(feeder_batch, bytes);
	FIELD(feeder_batch, ndim);
	FIELD(feeder_batch, shape);
	FIELD(feeder_batch, dtype);
	FIELD(feeder_batch, layout);
	FIELD(feeder_batch, labels);
	FIELD(feeder_batch, indices);
	FIELD(feeder_batch, names);
	FIELD(feeder_batch, count);
	FIELD(feeder_batch, epoch);
	FIELD(feeder_batch, batch_index);
	FIELD(feeder_batch, replacements);
	FIELD(feeder_batch, slot);
	FIELD(feeder_batch, stream);
	FIELD(feeder_batch, memory);
	FIELD(feeder_batch, device);
	SIZE(feeder_status);
	FIELD(feeder_status, uptime_ms);
	FIELD(feeder_status, clients);
	FIELD(feeder_status, datasets);
	FIELD(feeder_status, memory_used);
	FIELD(feeder_status, protocol_errors);
	FIELD(feeder_status, samples_per_s);
	/* The enums, which _lib.py repeats too. */
	static const struct { const char *name; int value; } en[] = {
		{"FEEDER_ECORRUPT", FEEDER_ECORRUPT}, {"FEEDER_EVERSION", FEEDER_EVERSION},
		{"FEEDER_EFORMAT", FEEDER_EFORMAT}, {"FEEDER_EPROTO", FEEDER_EPROTO},
		{"FEEDER_EDECODE", FEEDER_EDECODE}, {"FEEDER_EQUOTA", FEEDER_EQUOTA},
		{"FEEDER_ENODATASET", FEEDER_ENODATASET}, {"FEEDER_EBADNAME", FEEDER_EBADNAME},
		{"FEEDER_EINVAL", FEEDER_EINVAL}, {"FEEDER_ECLOSED", FEEDER_ECLOSED},
		{"FEEDER_ETIMEDOUT", FEEDER_ETIMEDOUT}, {"FEEDER_EEND", FEEDER_EEND},
		{"FEEDER_ENODEV", FEEDER_ENODEV}, {"FEEDER_EDENIED", FEEDER_EDENIED},
		{"FEEDER_ESTREAM", FEEDER_ESTREAM},
		{"FEEDER_PIPE_JPEG", FEEDER_PIPE_JPEG}, {"FEEDER_PIPE_FEATURES", FEEDER_PIPE_FEATURES},
		{"FEEDER_PIPE_WAVE", FEEDER_PIPE_WAVE},
		{"FEEDER_WAVE_FBANK", FEEDER_WAVE_FBANK}, {"FEEDER_WAVE_MFCC", FEEDER_WAVE_MFCC},
		{"FEEDER_SPEED_SAME", FEEDER_SPEED_SAME}, {"FEEDER_SPEED_NEW", FEEDER_SPEED_NEW},
		{"FEEDER_DTYPE_U8", FEEDER_DTYPE_U8}, {"FEEDER_DTYPE_F16", FEEDER_DTYPE_F16},
		{"FEEDER_DTYPE_F32", FEEDER_DTYPE_F32}, {"FEEDER_LAYOUT_NCHW", FEEDER_LAYOUT_NCHW},
		{"FEEDER_LAYOUT_NHWC", FEEDER_LAYOUT_NHWC},
		{"FEEDER_ON_ERROR_REPLACE", FEEDER_ON_ERROR_REPLACE},
		{"FEEDER_ON_ERROR_FAIL", FEEDER_ON_ERROR_FAIL},
		{"FEEDER_FEAT_PAD_REPEAT", FEEDER_FEAT_PAD_REPEAT},
		{"FEEDER_FEAT_PAD_SKIP", FEEDER_FEAT_PAD_SKIP},
		{"FEEDER_FEAT_CMN_NONE", FEEDER_FEAT_CMN_NONE},
		{"FEEDER_FEAT_CMN_UTT", FEEDER_FEAT_CMN_UTT},
		{"FEEDER_FEAT_CMN_SLIDING", FEEDER_FEAT_CMN_SLIDING},
		{"FEEDER_PLACEMENT_CPU", FEEDER_PLACEMENT_CPU},
		{"FEEDER_PLACEMENT_GPU", FEEDER_PLACEMENT_GPU},
		{"FEEDER_PLACEMENT_AUTO", FEEDER_PLACEMENT_AUTO},
		{"FEEDER_MEMORY_HOST", FEEDER_MEMORY_HOST},
		{"FEEDER_MEMORY_DEVICE", FEEDER_MEMORY_DEVICE},
		{"FEEDER_DATASET_MAX", FEEDER_DATASET_MAX},
		{"FEEDER_SAMPLE_NAME_MAX", FEEDER_SAMPLE_NAME_MAX},
	};
	for (size_t i = 0; i < sizeof en / sizeof en[0]; i++)
		printf(", \"enum %s\": %d", en[i].name, en[i].value);
	printf("}\n");
	return 0;
}

static int parse_u64(const char *key, const char *v, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-') {
		fprintf(stderr, "c_reference: %s=%s is not a non-negative integer\n", key, v);
		return -1;
	}
	*out = x;
	return 0;
}

/* Apply one key=value to o; returns 0 or -1 with the reason on stderr. */
static int set_opt(struct feeder_stream_opts *o, char *kv)
{
	char *eq = strchr(kv, '=');
	if (!eq) {
		fprintf(stderr, "c_reference: '%s' is not key=value\n", kv);
		return -1;
	}
	*eq = '\0';
	const char *k = kv, *v = eq + 1;
	uint64_t x = 0;
	if (strcmp(k, "dataset") == 0) {
		snprintf(o->dataset, sizeof o->dataset, "%s", v);
		return 0;
	}
	if (strcmp(k, "pipeline") == 0) {
		o->pipeline = strcmp(v, "features") == 0 ? FEEDER_PIPE_FEATURES : FEEDER_PIPE_JPEG;
		return 0;
	}
	if (strcmp(k, "dtype") == 0) {
		o->dtype = strcmp(v, "u8") == 0 ? FEEDER_DTYPE_U8
			   : strcmp(v, "f16") == 0 ? FEEDER_DTYPE_F16 : FEEDER_DTYPE_F32;
		return 0;
	}
	if (strcmp(k, "layout") == 0) {
		o->layout = strcmp(v, "nhwc") == 0 ? FEEDER_LAYOUT_NHWC : FEEDER_LAYOUT_NCHW;
		return 0;
	}
	if (parse_u64(k, v, &x))
		return -1;
	if (strcmp(k, "batch") == 0)
		o->batch = (uint32_t)x;
	else if (strcmp(k, "seed") == 0)
		o->seed = x;
	else if (strcmp(k, "epoch") == 0)
		o->epoch = x;
	else if (strcmp(k, "start") == 0)
		o->start_batch = x;
	else if (strcmp(k, "rank") == 0)
		o->rank = (uint32_t)x;
	else if (strcmp(k, "world") == 0)
		o->world = (uint32_t)x;
	else if (strcmp(k, "drop_last") == 0)
		o->drop_last = (int)x;
	else if (strcmp(k, "slots") == 0)
		o->slots = (uint32_t)x;
	else if (strcmp(k, "size") == 0)
		o->jpeg.height = o->jpeg.width = (uint32_t)x;
	else if (strcmp(k, "train") == 0)
		o->jpeg.train = o->features.train = (int)x;
	else if (strcmp(k, "chunk") == 0)
		o->features.chunk_len = (uint32_t)x;
	else {
		fprintf(stderr, "c_reference: unknown key '%s'\n", k);
		return -1;
	}
	return 0;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int dump(const char *sock, const char *out, int nkv, char **kv)
{
	struct feeder_stream_opts o;
	feeder_stream_opts_init(&o);
	for (int i = 0; i < nkv; i++)
		if (set_opt(&o, kv[i]))
			return 2;
	FILE *fp = fopen(out, "wb");
	if (!fp) {
		fprintf(stderr, "c_reference: %s: %s\n", out, strerror(errno));
		return 1;
	}
	struct feeder *f;
	int rc = feeder_connect(sock, 10000, &f);
	if (rc) {
		fprintf(stderr, "c_reference: connect: %s\n", feeder_last_error(NULL));
		fclose(fp);
		return 1;
	}
	struct feeder_stream *s;
	rc = feeder_stream_open(f, &o, 10000, &s);
	if (rc) {
		fprintf(stderr, "c_reference: open: %s\n", feeder_last_error(f));
		feeder_disconnect(f);
		fclose(fp);
		return 1;
	}
	int status = 0;
	struct feeder_batch b;
	while ((rc = feeder_stream_next(s, 20000, &b)) == 0) {
		uint8_t h[48];
		put_le(h, b.epoch, 8);
		put_le(h + 8, b.batch_index, 8);
		put_le(h + 16, b.count, 4);
		put_le(h + 20, b.replacements, 4);
		for (int i = 0; i < 4; i++)
			put_le(h + 24 + 4 * i, b.shape[i], 4);
		put_le(h + 40, b.bytes, 8);
		if (fwrite(h, 1, sizeof h, fp) != sizeof h ||
		    fwrite(b.labels, sizeof(int32_t), b.count, fp) != b.count ||
		    fwrite(b.data, 1, b.bytes, fp) != b.bytes) {
			fprintf(stderr, "c_reference: writing %s: %s\n", out, strerror(errno));
			status = 1;
			break;
		}
		feeder_batch_release(s, &b);
	}
	if (status == 0 && rc != FEEDER_EEND) {
		fprintf(stderr, "c_reference: next: %s\n", feeder_last_error(f));
		status = 1;
	}
	feeder_stream_close(s);
	feeder_disconnect(f);
	if (fclose(fp) != 0 && status == 0) {
		fprintf(stderr, "c_reference: closing %s: %s\n", out, strerror(errno));
		status = 1;
	}
	return status;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "layout") == 0)
		return layout();
	if (argc >= 4 && strcmp(argv[1], "dump") == 0)
		return dump(argv[2], argv[3], argc - 4, argv + 4);
	fprintf(stderr, "usage: c_reference layout | dump SOCKET OUT [key=value ...]\n");
	return 2;
}
