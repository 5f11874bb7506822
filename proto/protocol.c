/* protocol.c — encode, decode and validate feederd's messages (see protocol.h).
 *
 * Each message type has one field walker that both encodes and decodes, so
 * the two directions cannot drift apart and the payload length of a type is
 * simply where its walker ends. Validation of field values is separate and
 * runs only on decode. */
#include "protocol.h"

#include "bytes.h"
#include "status.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

struct cur {
	uint8_t *p;      /* payload start (encode: writable; decode: read) */
	size_t len;      /* payload bytes available */
	size_t off;
	bool enc;
	bool sizing;     /* only measure */
	const char *bad; /* decode: first string field that is not clean */
};

static void w_u32(struct cur *c, uint32_t *v)
{
	if (!c->sizing) {
		if (c->enc)
			bytes_put_le32(c->p + c->off, *v);
		else
			*v = bytes_le32(c->p + c->off);
	}
	c->off += 4;
}

static void w_i32(struct cur *c, int32_t *v)
{
	uint32_t u = (uint32_t)*v;
	w_u32(c, &u);
	*v = (int32_t)u;
}

static void w_u64(struct cur *c, uint64_t *v)
{
	if (!c->sizing) {
		if (c->enc)
			bytes_put_le64(c->p + c->off, *v);
		else
			*v = bytes_le64(c->p + c->off);
	}
	c->off += 8;
}

static void w_f32(struct cur *c, float *v)
{
	uint32_t u;
	memcpy(&u, v, 4);
	w_u32(c, &u);
	memcpy(v, &u, 4);
}

static void w_f64(struct cur *c, double *v)
{
	uint64_t u;
	memcpy(&u, v, 8);
	w_u64(c, &u);
	memcpy(v, &u, 8);
}

/* A fixed field of n bytes holding a NUL-terminated string followed by
 * zeros. Encode truncates to n-1 bytes; decode records the first field that
 * breaks the rule (so that no uninitialised or hidden bytes pass). */
static void w_str(struct cur *c, char *s, size_t n, const char *field)
{
	if (!c->sizing) {
		uint8_t *q = c->p + c->off;
		if (c->enc) {
			size_t l = strnlen(s, n - 1);
			memset(q, 0, n);
			memcpy(q, s, l);
		} else {
			const uint8_t *nul = memchr(q, 0, n);
			bool clean = nul != NULL;
			for (const uint8_t *r = nul; clean && r < q + n; r++)
				clean = *r == 0;
			if (!clean && !c->bad)
				c->bad = field;
			memcpy(s, q, n);
			s[n - 1] = 0;
		}
	}
	c->off += n;
}

static void walk_jpeg(struct cur *c, struct proto_jpeg_opts *j)
{
	w_u32(c, &j->out_h);
	w_u32(c, &j->out_w);
	w_u32(c, &j->train);
	w_f32(c, &j->scale_min);
	w_f32(c, &j->scale_max);
	w_f32(c, &j->ratio_min);
	w_f32(c, &j->ratio_max);
	w_f32(c, &j->flip_p);
	w_f32(c, &j->resize_ratio);
	for (int i = 0; i < 3; i++)
		w_f32(c, &j->mean[i]);
	for (int i = 0; i < 3; i++)
		w_f32(c, &j->std[i]);
}

static void walk_features(struct cur *c, struct proto_features_opts *f)
{
	w_u32(c, &f->chunk_len);
	w_u32(c, &f->pad);
	w_u32(c, &f->cmn);
	w_u32(c, &f->cmn_window);
	w_u32(c, &f->cvn);
	w_u32(c, &f->train);
}

/* Returns false for an unknown type. */
static bool walk(struct cur *c, uint32_t type, struct proto_msg *m)
{
	switch (type) {
	case PROTO_HELLO:
		w_u32(c, &m->u.hello.pid);
		w_str(c, m->u.hello.agent, PROTO_AGENT_MAX, "agent");
		return true;
	case PROTO_WELCOME: {
		struct proto_welcome *w = &m->u.welcome;
		w_u32(c, &w->session);
		w_u32(c, &w->max_streams);
		w_u32(c, &w->max_slots);
		w_u32(c, &w->reserved);
		w_u64(c, &w->quota);
		w_str(c, w->agent, PROTO_AGENT_MAX, "agent");
		return true;
	}
	case PROTO_OPEN_STREAM: {
		struct proto_open_stream *o = &m->u.open;
		w_u32(c, &o->tag);
		w_u32(c, &o->pipeline);
		w_u32(c, &o->batch);
		w_u32(c, &o->epochs);
		w_u32(c, &o->rank);
		w_u32(c, &o->world);
		w_u32(c, &o->drop_last);
		w_u32(c, &o->slots);
		w_u32(c, &o->dtype);
		w_u32(c, &o->layout);
		w_u32(c, &o->on_error);
		w_u32(c, &o->flags);
		w_str(c, o->dataset, PROTO_NAME_MAX, "dataset");
		w_u64(c, &o->seed);
		w_u64(c, &o->epoch);
		w_u64(c, &o->start_batch);
		walk_jpeg(c, &o->jpeg);
		walk_features(c, &o->features);
		return true;
	}
	case PROTO_STREAM_OPENED: {
		struct proto_stream_opened *o = &m->u.opened;
		w_u32(c, &o->tag);
		w_u32(c, &o->stream);
		w_u32(c, &o->slots);
		w_u32(c, &o->batch);
		w_u64(c, &o->slot_size);
		w_u64(c, &o->ring_size);
		w_u64(c, &o->batches);
		w_u64(c, &o->batches_per_epoch);
		w_u64(c, &o->samples);
		w_u32(c, &o->classes);
		w_u32(c, &o->dtype);
		w_u32(c, &o->layout);
		w_u32(c, &o->ndim);
		for (int i = 0; i < 4; i++)
			w_u32(c, &o->shape[i]);
		w_u64(c, &o->labels_offset);
		w_u64(c, &o->tensor_offset);
		w_u64(c, &o->tensor_bytes);
		w_u32(c, &o->placement);
		w_u32(c, &o->memory);
		w_u64(c, &o->device_table);
		return true;
	}
	case PROTO_BATCH_READY: {
		struct proto_batch_ready *r = &m->u.ready;
		w_u32(c, &r->stream);
		w_u32(c, &r->slot);
		w_u64(c, &r->epoch);
		w_u64(c, &r->batch_index);
		w_u32(c, &r->samples);
		w_u32(c, &r->replacements);
		return true;
	}
	case PROTO_RELEASE:
		w_u32(c, &m->u.release.stream);
		w_u32(c, &m->u.release.slot);
		return true;
	case PROTO_CLOSE_STREAM:
		w_u32(c, &m->u.close.stream);
		return true;
	case PROTO_STREAM_END:
		w_u32(c, &m->u.end.stream);
		w_u32(c, &m->u.end.reason);
		w_u64(c, &m->u.end.batches_sent);
		return true;
	case PROTO_ERROR:
		w_i32(c, &m->u.error.code);
		w_u32(c, &m->u.error.stream);
		w_u32(c, &m->u.error.tag);
		w_u32(c, &m->u.error.fatal);
		w_str(c, m->u.error.message, PROTO_TEXT_MAX, "message");
		return true;
	case PROTO_GOODBYE:
		w_u32(c, &m->u.goodbye.reason);
		return true;
	case PROTO_STATUS:
		w_u32(c, &m->u.status.what);
		return true;
	case PROTO_STATUS_REPLY: {
		struct proto_status_reply *s = &m->u.status_reply;
		w_u64(c, &s->uptime_ms);
		w_u32(c, &s->clients);
		w_u32(c, &s->streams);
		w_u32(c, &s->workers);
		w_u32(c, &s->datasets);
		w_u64(c, &s->memory_used);
		w_u64(c, &s->memory_limit);
		w_u64(c, &s->batches);
		w_u64(c, &s->samples);
		w_u64(c, &s->replacements);
		w_u64(c, &s->decode_errors);
		w_u64(c, &s->protocol_errors);
		w_f64(c, &s->images_per_s);
		return true;
	}
	case PROTO_DATASET_INFO: {
		struct proto_dataset_info *d = &m->u.dataset;
		w_str(c, d->name, PROTO_NAME_MAX, "name");
		w_u32(c, &d->kind);
		w_u32(c, &d->classes);
		w_u64(c, &d->samples);
		w_u32(c, &d->feat_dim);
		w_u32(c, &d->streams);
		return true;
	}
	case PROTO_STREAM_INFO: {
		struct proto_stream_info *s = &m->u.stream;
		w_u32(c, &s->stream);
		w_u32(c, &s->session);
		w_u32(c, &s->pid);
		w_u32(c, &s->uid);
		w_str(c, s->dataset, PROTO_NAME_MAX, "dataset");
		w_u32(c, &s->pipeline);
		w_u32(c, &s->batch);
		w_u32(c, &s->slots);
		w_u32(c, &s->ready);
		w_u64(c, &s->epoch);
		w_u64(c, &s->batches_sent);
		w_u64(c, &s->batches_total);
		w_u64(c, &s->samples);
		w_u64(c, &s->replacements);
		w_f64(c, &s->images_per_s);
		w_u64(c, &s->client_wait_us);
		w_u64(c, &s->ring_full_us);
		w_u32(c, &s->placement);
		w_u32(c, &s->active);
		w_u32(c, &s->memory);
		w_u32(c, &s->deciding);
		w_f32(c, &s->auto_cpu_ms);
		w_f32(c, &s->auto_gpu_ms);
		return true;
	}
	case PROTO_LIST_END:
		w_u32(c, &m->u.list_end.count);
		return true;
	}
	return false;
}

const char *proto_type_name(uint32_t type)
{
	static const char *const names[] = {
		[PROTO_HELLO] = "HELLO", [PROTO_WELCOME] = "WELCOME",
		[PROTO_OPEN_STREAM] = "OPEN_STREAM", [PROTO_STREAM_OPENED] = "STREAM_OPENED",
		[PROTO_BATCH_READY] = "BATCH_READY", [PROTO_RELEASE] = "RELEASE",
		[PROTO_CLOSE_STREAM] = "CLOSE_STREAM", [PROTO_STREAM_END] = "STREAM_END",
		[PROTO_ERROR] = "ERROR", [PROTO_GOODBYE] = "GOODBYE", [PROTO_STATUS] = "STATUS",
		[PROTO_STATUS_REPLY] = "STATUS_REPLY", [PROTO_DATASET_INFO] = "DATASET_INFO",
		[PROTO_STREAM_INFO] = "STREAM_INFO", [PROTO_LIST_END] = "LIST_END",
	};
	if (type == 0 || type > PROTO_TYPE_MAX)
		return "?";
	return names[type];
}

int proto_type_from_client(uint32_t type)
{
	return type == PROTO_HELLO || type == PROTO_OPEN_STREAM || type == PROTO_RELEASE ||
	       type == PROTO_CLOSE_STREAM || type == PROTO_STATUS;
}

size_t proto_payload_len(uint32_t type)
{
	struct cur c = { .sizing = true };
	struct proto_msg m;
	if (!walk(&c, type, &m))
		return 0;
	return c.off;
}

int proto_encode(const struct proto_msg *m, void *buf, size_t cap)
{
	size_t plen = proto_payload_len(m->type);
	if (plen == 0)
		return FEEDER_EINVAL;
	if (cap < PROTO_HEADER_SIZE + plen)
		return FEEDER_EINVAL;
	uint8_t *p = buf;
	bytes_put_le32(p, PROTO_MAGIC);
	bytes_put_le16(p + 4, PROTO_VERSION);
	bytes_put_le16(p + 6, m->type);
	bytes_put_le32(p + 8, (uint32_t)plen);
	bytes_put_le32(p + 12, 0);
	/* The walker takes non-const pointers because it also decodes; on
	 * encode it only reads, so a private copy keeps the caller's const. */
	struct proto_msg copy = *m;
	struct cur c = { .p = p + PROTO_HEADER_SIZE, .len = plen, .enc = true };
	walk(&c, m->type, &copy);
	return (int)(PROTO_HEADER_SIZE + plen);
}

int proto_name_check(const char *name, char *err, size_t errlen)
{
	size_t n = strnlen(name, PROTO_NAME_MAX);
	if (n == 0)
		return status_fail(err, errlen, FEEDER_EBADNAME, "dataset name is empty");
	if (n >= PROTO_NAME_MAX)
		return status_fail(err, errlen, FEEDER_EBADNAME,
				   "dataset name is longer than %d characters", PROTO_NAME_MAX - 1);
	if (name[0] == '.')
		return status_fail(err, errlen, FEEDER_EBADNAME,
				   "dataset name '%s' starts with '.'", name);
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '.' || ch == '_' || ch == '-'))
			return status_fail(err, errlen, FEEDER_EBADNAME,
					   "dataset name '%.*s' has a character other than A-Z a-z 0-9 . _ -",
					   (int)n, name);
	}
	return 0;
}

static bool finite_pos(float x) { return isfinite(x) && x > 0; }

static int check_jpeg(const struct proto_jpeg_opts *j, char *err, size_t errlen)
{
#define BAD(...) status_fail(err, errlen, FEEDER_EPROTO, "OPEN_STREAM: " __VA_ARGS__)
	if (j->out_h == 0 || j->out_h > PROTO_MAX_SIDE || j->out_w == 0 || j->out_w > PROTO_MAX_SIDE)
		return BAD("jpeg output size %ux%u is not within 1..%d", j->out_h, j->out_w,
			   PROTO_MAX_SIDE);
	if (j->train > 1)
		return BAD("jpeg train flag %u is not 0 or 1", j->train);
	if (!finite_pos(j->scale_min) || !isfinite(j->scale_max) || j->scale_min > j->scale_max ||
	    j->scale_max > 1)
		return BAD("jpeg scale range %g..%g is not within (0, 1]", (double)j->scale_min,
			   (double)j->scale_max);
	if (!finite_pos(j->ratio_min) || !isfinite(j->ratio_max) || j->ratio_min > j->ratio_max ||
	    j->ratio_max > 100)
		return BAD("jpeg ratio range %g..%g is not a positive range", (double)j->ratio_min,
			   (double)j->ratio_max);
	if (!isfinite(j->flip_p) || j->flip_p < 0 || j->flip_p > 1)
		return BAD("jpeg flip probability %g is not within [0, 1]", (double)j->flip_p);
	if (!isfinite(j->resize_ratio) || j->resize_ratio < 1 || j->resize_ratio > 8)
		return BAD("jpeg resize ratio %g is not within [1, 8]", (double)j->resize_ratio);
	for (int i = 0; i < 3; i++) {
		if (!isfinite(j->mean[i]) || fabsf(j->mean[i]) > 1000)
			return BAD("jpeg mean[%d] %g is not a finite number", i, (double)j->mean[i]);
		if (!finite_pos(j->std[i]) || j->std[i] > 1000)
			return BAD("jpeg std[%d] %g is not a positive number", i, (double)j->std[i]);
	}
	return 0;
}

static int check_features(const struct proto_features_opts *f, char *err, size_t errlen)
{
	if (f->chunk_len == 0 || f->chunk_len > PROTO_MAX_CHUNK)
		return BAD("features chunk_len %u is not within 1..%d", f->chunk_len, PROTO_MAX_CHUNK);
	if (f->pad != PROTO_FEAT_PAD_REPEAT && f->pad != PROTO_FEAT_PAD_SKIP)
		return BAD("features pad %u is unknown", f->pad);
	if (f->cmn > PROTO_FEAT_CMN_SLIDING)
		return BAD("features cmn %u is unknown", f->cmn);
	if (f->cmn == PROTO_FEAT_CMN_SLIDING && (f->cmn_window == 0 || f->cmn_window > PROTO_MAX_CHUNK))
		return BAD("features cmn_window %u is not within 1..%d", f->cmn_window, PROTO_MAX_CHUNK);
	if (f->cvn > 1 || f->train > 1)
		return BAD("features cvn %u / train %u is not 0 or 1", f->cvn, f->train);
	return 0;
}

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static int check_open(const struct proto_open_stream *o, char *err, size_t errlen)
{
	int rc = proto_name_check(o->dataset, err, errlen);
	if (rc)
		return rc;
	if (o->pipeline != PROTO_PIPE_JPEG && o->pipeline != PROTO_PIPE_FEATURES)
		return BAD("pipeline %u is unknown", o->pipeline);
	if (o->flags & ~PROTO_FLAGS_KNOWN)
		return BAD("flags 0x%x has unknown bits", o->flags);
	if ((o->flags & PROTO_FLAG_PLACEMENT) > PROTO_PLACE_AUTO)
		return BAD("placement %u is unknown", o->flags & PROTO_FLAG_PLACEMENT);
	if (o->batch == 0 || o->batch > PROTO_MAX_BATCH)
		return BAD("batch size %u is not within 1..%d", o->batch, PROTO_MAX_BATCH);
	if (o->epochs == 0 || o->epochs > PROTO_MAX_EPOCHS)
		return BAD("epochs %u is not within 1..%d", o->epochs, PROTO_MAX_EPOCHS);
	if (o->epoch > UINT64_MAX - o->epochs)
		return BAD("epoch %llu overflows", (unsigned long long)o->epoch);
	if (o->world == 0 || o->world > PROTO_MAX_WORLD || o->rank >= o->world)
		return BAD("rank %u of world size %u is not valid", o->rank, o->world);
	if (o->drop_last > 1)
		return BAD("drop_last %u is not 0 or 1", o->drop_last);
	if (o->slots == 0 || o->slots > PROTO_MAX_SLOTS)
		return BAD("slots %u is not within 1..%d", o->slots, PROTO_MAX_SLOTS);
	if (o->dtype < PROTO_DTYPE_U8 || o->dtype > PROTO_DTYPE_F32)
		return BAD("dtype %u is unknown", o->dtype);
	if (o->layout != PROTO_LAYOUT_NCHW && o->layout != PROTO_LAYOUT_NHWC)
		return BAD("layout %u is unknown", o->layout);
	if (o->on_error > PROTO_ON_ERROR_FAIL)
		return BAD("on_error %u is unknown", o->on_error);
	if (o->pipeline == PROTO_PIPE_JPEG) {
		if (!all_zero(&o->features, sizeof(o->features)))
			return BAD("features options are set for a jpeg stream");
		return check_jpeg(&o->jpeg, err, errlen);
	}
	if (!all_zero(&o->jpeg, sizeof(o->jpeg)))
		return BAD("jpeg options are set for a features stream");
	if (o->dtype == PROTO_DTYPE_U8)
		return BAD("dtype u8 is not available for features streams");
	if (o->layout != PROTO_LAYOUT_NCHW)
		return BAD("features streams have layout NCHW (batch, dim, time) only");
	return check_features(&o->features, err, errlen);
#undef BAD
}

static int check_msg(const struct proto_msg *m, char *err, size_t errlen)
{
	switch (m->type) {
	case PROTO_OPEN_STREAM:
		return check_open(&m->u.open, err, errlen);
	case PROTO_WELCOME:
		if (m->u.welcome.reserved)
			return status_fail(err, errlen, FEEDER_EPROTO, "WELCOME: reserved field is not 0");
		return 0;
	case PROTO_STREAM_OPENED: {
		const struct proto_stream_opened *o = &m->u.opened;
		if (o->stream == 0 || o->slots == 0 || o->slots > PROTO_MAX_SLOTS || o->batch == 0 ||
		    o->batch > PROTO_MAX_BATCH || o->ndim == 0 || o->ndim > 4)
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "STREAM_OPENED: stream, slots, batch or ndim out of range");
		if (o->dtype < PROTO_DTYPE_U8 || o->dtype > PROTO_DTYPE_F32 ||
		    (o->layout != PROTO_LAYOUT_NCHW && o->layout != PROTO_LAYOUT_NHWC))
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "STREAM_OPENED: dtype %u or layout %u is unknown", o->dtype, o->layout);
		if (o->placement > PROTO_PLACE_AUTO || o->memory > PROTO_MEM_DEVICE ||
		    (o->memory == PROTO_MEM_HOST) != (o->device_table == 0))
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "STREAM_OPENED: placement %u, memory %u or device table "
					   "offset out of range", o->placement, o->memory);
		/* The client maps ring_size bytes and indexes slots with these
		 * numbers: they must describe a ring that fits. */
		uint64_t slots_end = PROTO_RING_HEADER + o->slots * o->slot_size;
		if (o->slot_size == 0 || o->slot_size > (UINT64_MAX - PROTO_RING_HEADER) / o->slots ||
		    (o->memory == PROTO_MEM_HOST && o->ring_size != slots_end) ||
		    (o->memory == PROTO_MEM_DEVICE &&
		     (o->device_table < slots_end || o->device_table % PROTO_TENSOR_ALIGN ||
		      o->device_table > UINT64_MAX / 2 ||
		      o->ring_size != o->device_table + proto_device_table_size(o->slots,
										   PROTO_TENSOR_ALIGN))) ||
		    o->labels_offset < PROTO_SLOT_HEADER ||
		    o->labels_offset + 4ull * o->batch > o->tensor_offset ||
		    o->tensor_offset % PROTO_TENSOR_ALIGN || o->tensor_bytes > o->slot_size ||
		    o->tensor_offset > o->slot_size - o->tensor_bytes)
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "STREAM_OPENED: ring geometry is inconsistent");
		return 0;
	}
	case PROTO_BATCH_READY:
		if (m->u.ready.samples == 0 || m->u.ready.samples > PROTO_MAX_BATCH ||
		    m->u.ready.replacements > m->u.ready.samples || m->u.ready.stream == 0)
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "BATCH_READY: stream %u, samples %u or replacements %u out of range",
					   m->u.ready.stream, m->u.ready.samples, m->u.ready.replacements);
		return 0;
	case PROTO_RELEASE:
		if (m->u.release.stream == 0)
			return status_fail(err, errlen, FEEDER_EPROTO, "RELEASE: stream id is 0");
		return 0;
	case PROTO_CLOSE_STREAM:
		if (m->u.close.stream == 0)
			return status_fail(err, errlen, FEEDER_EPROTO, "CLOSE_STREAM: stream id is 0");
		return 0;
	case PROTO_STREAM_END:
		if (m->u.end.reason > 1)
			return status_fail(err, errlen, FEEDER_EPROTO, "STREAM_END: reason %u is unknown",
					   m->u.end.reason);
		return 0;
	case PROTO_ERROR:
		if (m->u.error.code >= 0 || m->u.error.fatal > 1)
			return status_fail(err, errlen, FEEDER_EPROTO,
					   "ERROR: code %d is not negative or fatal %u not 0/1",
					   m->u.error.code, m->u.error.fatal);
		return 0;
	case PROTO_STATUS:
		if (m->u.status.what < PROTO_STATUS_SUMMARY || m->u.status.what > PROTO_STATUS_STREAMS)
			return status_fail(err, errlen, FEEDER_EPROTO, "STATUS: request %u is unknown",
					   m->u.status.what);
		return 0;
	case PROTO_DATASET_INFO:
		return proto_name_check(m->u.dataset.name, err, errlen);
	case PROTO_STREAM_INFO:
		if (m->u.stream.dataset[0])
			return proto_name_check(m->u.stream.dataset, err, errlen);
		return 0;
	}
	return 0;
}

int proto_decode(const void *buf, size_t len, struct proto_msg *m, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	if (len < PROTO_HEADER_SIZE)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "message of %zu bytes is shorter than the %d-byte header", len,
				   PROTO_HEADER_SIZE);
	if (len > PROTO_MAX_MESSAGE)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "message of %zu bytes is larger than the limit of %d", len,
				   PROTO_MAX_MESSAGE);
	uint32_t magic = bytes_le32(p);
	if (magic != PROTO_MAGIC)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "message has the wrong magic 0x%08x (not a Feeder client?)", magic);
	uint16_t version = bytes_le16(p + 4);
	if (version != PROTO_VERSION)
		return status_fail(err, errlen, FEEDER_EVERSION,
				   "message is protocol version %u, this build speaks version %d",
				   version, PROTO_VERSION);
	uint16_t type = bytes_le16(p + 6);
	size_t plen = proto_payload_len(type);
	if (plen == 0)
		return status_fail(err, errlen, FEEDER_EPROTO, "message type %u is unknown", type);
	uint32_t hlen = bytes_le32(p + 8);
	if (bytes_le32(p + 12) != 0)
		return status_fail(err, errlen, FEEDER_EPROTO, "%s: reserved header field is not 0",
				   proto_type_name(type));
	if (hlen != plen)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "%s: header says %u payload bytes, the type has %zu",
				   proto_type_name(type), hlen, plen);
	if (len - PROTO_HEADER_SIZE != plen)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "%s: %zu payload bytes arrived, the type has %zu (truncated or padded)",
				   proto_type_name(type), len - PROTO_HEADER_SIZE, plen);
	memset(m, 0, sizeof(*m));
	m->type = type;
	struct cur c = { .p = (uint8_t *)p + PROTO_HEADER_SIZE, .len = plen };
	walk(&c, type, m);
	if (c.bad)
		return status_fail(err, errlen, FEEDER_EPROTO,
				   "%s: field '%s' is not a NUL-terminated string padded with zeros",
				   proto_type_name(type), c.bad);
	return check_msg(m, err, errlen);
}

void proto_open_stream_defaults(struct proto_open_stream *o, uint32_t size, int train)
{
	memset(o, 0, sizeof(*o));
	o->pipeline = PROTO_PIPE_JPEG;
	o->epochs = 1;
	o->world = 1;
	o->slots = 4;
	o->dtype = PROTO_DTYPE_F32;
	o->layout = PROTO_LAYOUT_NCHW;
	o->on_error = PROTO_ON_ERROR_REPLACE;
	struct proto_jpeg_opts *j = &o->jpeg;
	j->out_h = j->out_w = size;
	j->train = train ? 1 : 0;
	j->scale_min = 0.08f;
	j->scale_max = 1.0f;
	j->ratio_min = 3.0f / 4.0f;
	j->ratio_max = 4.0f / 3.0f;
	j->flip_p = 0.5f;
	j->resize_ratio = 256.0f / 224.0f;
	const float mean[3] = { 0.485f, 0.456f, 0.406f }, std[3] = { 0.229f, 0.224f, 0.225f };
	memcpy(j->mean, mean, sizeof(mean));
	memcpy(j->std, std, sizeof(std));
}

uint64_t proto_device_table_size(uint32_t slots, uint64_t page)
{
	uint64_t n = PROTO_DEVICE_TABLE_HEAD + (uint64_t)slots * PROTO_DEVICE_SLOT_ENTRY;
	return (n + page - 1) / page * page;
}

size_t proto_dtype_size(uint32_t dtype)
{
	switch (dtype) {
	case PROTO_DTYPE_U8: return 1;
	case PROTO_DTYPE_F16: return 2;
	case PROTO_DTYPE_F32: return 4;
	}
	return 0;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

int proto_geometry(const struct proto_open_stream *o, uint32_t feat_dim, uint64_t page,
		   struct proto_geometry *g, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	uint64_t es = proto_dtype_size(o->dtype);
	if (es == 0 || page == 0 || (page & (page - 1)) || o->batch == 0 || o->slots == 0)
		return status_fail(err, errlen, FEEDER_EINVAL, "stream geometry: bad dtype, batch or page");
	g->ndim = 4;
	if (o->pipeline == PROTO_PIPE_FEATURES) {
		if (feat_dim == 0)
			return status_fail(err, errlen, FEEDER_EINVAL, "stream geometry: feature dimension 0");
		g->shape[0] = o->batch;
		g->shape[1] = feat_dim;
		g->shape[2] = o->features.chunk_len;
		g->shape[3] = 1;
		g->sample_bytes = (uint64_t)feat_dim * o->features.chunk_len * es;
	} else {
		uint32_t h = o->jpeg.out_h, w = o->jpeg.out_w;
		g->shape[0] = o->batch;
		if (o->layout == PROTO_LAYOUT_NHWC) {
			g->shape[1] = h; g->shape[2] = w; g->shape[3] = 3;
		} else {
			g->shape[1] = 3; g->shape[2] = h; g->shape[3] = w;
		}
		g->sample_bytes = 3ull * h * w * es;
	}
	/* Each factor is bounded (batch 2^16, side 2^13, chunk 2^16, dim 2^12,
	 * slots 2^8), so the products below stay far from 2^64. */
	g->tensor_bytes = g->sample_bytes * o->batch;
	g->labels_offset = PROTO_SLOT_HEADER;
	g->tensor_offset = align_up(g->labels_offset + 4ull * o->batch,
				    page > PROTO_TENSOR_ALIGN ? page : PROTO_TENSOR_ALIGN);
	g->slot_size = align_up(g->tensor_offset + g->tensor_bytes, page);
	g->ring_size = PROTO_RING_HEADER + g->slot_size * o->slots;
	if (g->ring_size > (1ull << 50))
		return status_fail(err, errlen, FEEDER_EQUOTA,
				   "stream ring of %llu bytes is beyond any memory", (unsigned long long)g->ring_size);
	return 0;
}
