/* jpeg_tiles.c — restart-interval tiling of JPEGs (see jpeg_tiles.h).
 *
 * The reading side (parse, cut) walks the JPEG's bytes itself: it runs on
 * every sample feederd serves, needs only the headers and the positions of
 * the restart markers, and must never trust a length or an offset it has
 * not checked against the buffer. The writing side uses libjpeg's
 * transcoding API (read the coefficients, write them again), as jpegtran
 * does, under the shared decoding rules (jpeg_rules.h). */
#include "jpeg_tiles.h"

#include "bytes.h"
#include "jpeg_rules.h"
#include "status.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

/* ---- choosing the interval ---------------------------------------------- */

unsigned jpeg_tiles_choose(unsigned mcus_per_row, double target)
{
	if (!mcus_per_row || !(target > 0))
		return 0;
	unsigned best = 1;
	double bd = INFINITY;
	for (unsigned d = 1; d <= mcus_per_row; d++) {
		if (mcus_per_row % d)
			continue;
		double dist = fabs(log((double)d / target));
		if (dist <= bd + 1e-12) { /* ascending: a tie goes to the larger */
			bd = dist;
			best = d;
		}
	}
	return best;
}

unsigned jpeg_tiles_interval(const struct jpeg_tiles_policy *p, size_t bytes, unsigned mcus_x,
			     unsigned mcus_y)
{
	if (p->mcus)
		return jpeg_tiles_choose(mcus_x, p->mcus);
	if (!p->bytes || !mcus_x || !mcus_y)
		return 0;
	double per_mcu = (double)bytes / ((double)mcus_x * mcus_y);
	double want = per_mcu > 0 ? p->bytes / per_mcu : mcus_x;
	return jpeg_tiles_choose(mcus_x, want < 1 ? 1 : want);
}

/* ---- reading ------------------------------------------------------------ */

/* Segments that carry nothing libjpeg needs to decode: EXIF, XMP, ICC and
 * the rest of APP1..APP13 and APP15, and comments. (APP0 JFIF and APP14
 * Adobe can decide how colours are coded.) */
static int droppable(uint8_t m)
{
	return (m >= 0xE1 && m <= 0xED) || m == 0xEF || m == 0xFE;
}

/* The next header marker at or after *pos: its code in *m and the offset
 * after it in *pos; fill bytes (0xFF) before a marker are skipped. */
static int header_marker(const uint8_t *p, size_t len, size_t *pos, uint8_t *m, char *err,
			 size_t errlen)
{
	size_t i = *pos;
	if (i >= len || p[i] != 0xFF)
		return status_fail(err, errlen, FEEDER_EDECODE,
				   "jpeg: no marker at byte %zu of the headers", i);
	while (i < len && p[i] == 0xFF)
		i++;
	if (i >= len)
		return status_fail(err, errlen, FEEDER_EDECODE,
				   "jpeg: the headers run past the end");
	*m = p[i];
	*pos = i + 1;
	return 0;
}

int jpeg_tiles_parse(const uint8_t *p, size_t len, struct jpeg_tiles *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	if (len < 4 || p[0] != 0xFF || p[1] != 0xD8)
		return status_fail(err, errlen, FEEDER_EDECODE, "jpeg: no start-of-image marker");
	size_t i = 2;
	int sof = 0, sequential = 0, nf = 0, ns = 0;
	unsigned hmax = 1, vmax = 1, hmin = 4, vmin = 4;
	for (;;) {
		uint8_t m = 0;
		int rc = header_marker(p, len, &i, &m, err, errlen);
		if (rc)
			return rc;
		if (m == 0x01)
			continue; /* TEM: no segment */
		if (m == 0xD8 || m == 0xD9 || (m >= 0xD0 && m <= 0xD7))
			return status_fail(err, errlen, FEEDER_EDECODE,
					   "jpeg: marker %02X before the first scan", m);
		if (i + 2 > len)
			return status_fail(err, errlen, FEEDER_EDECODE,
					   "jpeg: the headers run past the end");
		uint32_t L = bytes_be16(p + i);
		if (L < 2 || L > len - i)
			return status_fail(err, errlen, FEEDER_EDECODE,
					   "jpeg: segment %02X at byte %zu runs past the end", m,
					   i);
		const uint8_t *s = p + i + 2;
		uint32_t sl = L - 2;
		if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
			if (sof)
				return status_fail(err, errlen, FEEDER_EDECODE,
						   "jpeg: two frame headers");
			if (sl < 6 || (nf = s[5]) < 1 || nf > 4 || sl < 6u + 3u * (uint32_t)nf)
				return status_fail(err, errlen, FEEDER_EDECODE,
						   "jpeg: malformed frame header");
			t->height = bytes_be16(s + 1);
			t->width = bytes_be16(s + 3);
			for (int k = 0; k < nf; k++) {
				unsigned h = s[7 + 3 * k] >> 4, v = s[7 + 3 * k] & 15;
				if (h < 1 || h > 4 || v < 1 || v > 4)
					return status_fail(err, errlen, FEEDER_EDECODE,
							   "jpeg: sampling factors %ux%u", h, v);
				hmax = h > hmax ? h : hmax;
				vmax = v > vmax ? v : vmax;
				hmin = h < hmin ? h : hmin;
				vmin = v < vmin ? v : vmin;
			}
			sof = 1;
			sequential = (m == 0xC0 || m == 0xC1) && s[0] == 8;
			t->sof = i;
		} else if (m == 0xDD) {
			if (sl < 2)
				return status_fail(err, errlen, FEEDER_EDECODE,
						   "jpeg: malformed restart interval");
			t->restart = bytes_be16(s);
		} else if (m == 0xDA) {
			if (!sof)
				return status_fail(err, errlen, FEEDER_EDECODE,
						   "jpeg: a scan before the frame header");
			if (sl < 1)
				return status_fail(err, errlen, FEEDER_EDECODE,
						   "jpeg: malformed scan header");
			ns = s[0];
			t->entropy = i + L;
			break;
		}
		i += L;
	}
	if (t->width == 0 || t->height == 0)
		return status_fail(err, errlen, FEEDER_EDECODE, "jpeg: a %ux%u frame", t->width,
				   t->height);
	/* One component: its scan is not interleaved and an MCU is one block. */
	t->mcu_w = nf == 1 ? 8 : 8 * hmax;
	t->mcu_h = nf == 1 ? 8 : 8 * vmax;
	t->mcus_x = (t->width + t->mcu_w - 1) / t->mcu_w;
	t->mcus_y = (t->height + t->mcu_h - 1) / t->mcu_h;
	t->sub_h = hmin < hmax;
	t->sub_v = vmin < vmax;
	t->grid = sequential && ns == nf && t->restart > 0 && t->mcus_x % t->restart == 0;
	t->cols = t->grid ? t->mcus_x / t->restart : 0;
	return 0;
}

static int reserve(struct jpeg_tiles_buf *b, size_t need)
{
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < need)
		cap *= 2;
	uint8_t *q = realloc(b->data, cap);
	if (!q)
		return -ENOMEM;
	b->data = q;
	b->cap = cap;
	return 0;
}

/* The next marker in entropy-coded data from pos: stuffed bytes (FF 00)
 * are data, fill bytes before a marker are skipped. 0 with the marker's
 * first byte at *at, its code in *m and the offset after it in *next; -1
 * when the data ends first. */
static int entropy_marker(const uint8_t *p, size_t len, size_t pos, size_t *at, uint8_t *m,
			  size_t *next)
{
	while (pos < len) {
		const uint8_t *q = memchr(p + pos, 0xFF, len - pos);
		if (!q)
			return -1;
		size_t i = (size_t)(q - p), j = i + 1;
		while (j < len && p[j] == 0xFF)
			j++;
		if (j >= len)
			return -1;
		if (p[j] == 0x00) {
			pos = j + 1;
			continue;
		}
		*at = i;
		*m = p[j];
		*next = j + 1;
		return 0;
	}
	return -1;
}

int jpeg_tiles_cut(const struct jpeg_tiles *t, const uint8_t *p, size_t len, uint32_t c0,
		   uint32_t c1, uint32_t r0, uint32_t r1, struct jpeg_tiles_buf *out, char *err,
		   size_t errlen)
{
	out->len = 0;
	if (!t->grid || c0 >= c1 || c1 > t->cols || r0 >= r1 || r1 > t->mcus_y || t->entropy > len)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "jpeg: intervals %u..%u x rows %u..%u are not on the grid", c0,
				   c1, r0, r1);
	uint64_t nint = (uint64_t)(c1 - c0) * (r1 - r0);
	/* Never more than the source plus a marker per interval and an EOI. */
	if (reserve(out, t->entropy + (len - t->entropy) + 2 * nint + 2))
		return status_fail(err, errlen, -ENOMEM, "jpeg: out of memory for a sub-image");
	uint8_t *o = out->data;
	size_t n = 0;

	/* The headers, without what decoding does not need, with the frame's
	 * new size. */
	o[n++] = 0xFF;
	o[n++] = 0xD8;
	size_t i = 2;
	for (;;) {
		uint8_t m = 0;
		int rc = header_marker(p, t->entropy, &i, &m, err, errlen);
		if (rc)
			return rc;
		if (m == 0x01)
			continue;
		uint32_t L = bytes_be16(p + i); /* checked by jpeg_tiles_parse */
		if (!droppable(m)) {
			o[n++] = 0xFF;
			o[n++] = m;
			memcpy(o + n, p + i, L);
			if (i == t->sof) {
				uint32_t span = t->restart * t->mcu_w;
				uint32_t w =
					c1 == t->cols ? t->width - c0 * span : (c1 - c0) * span;
				uint32_t h = r1 == t->mcus_y ? t->height - r0 * t->mcu_h
							     : (r1 - r0) * t->mcu_h;
				bytes_put_be16(o + n + 3, (uint16_t)h);
				bytes_put_be16(o + n + 5, (uint16_t)w);
			}
			n += L;
		}
		i += L;
		if (m == 0xDA)
			break;
	}

	/* The intervals, row by row; only the stream up to row r1 is read. */
	uint64_t total = (uint64_t)t->cols * t->mcus_y, want_end = (uint64_t)r1 * t->cols;
	uint64_t emitted = 0;
	size_t pos = t->entropy;
	for (uint64_t k = 0; k < want_end; k++) {
		size_t at, next;
		uint8_t m;
		if (entropy_marker(p, len, pos, &at, &m, &next))
			return status_fail(
				err, errlen, FEEDER_EDECODE,
				"jpeg: the data ends inside restart interval %llu of %llu",
				(unsigned long long)k + 1, (unsigned long long)total);
		int rst = m >= 0xD0 && m <= 0xD7;
		if (k + 1 < total && (!rst || (unsigned)(m - 0xD0) != k % 8))
			return status_fail(
				err, errlen, FEEDER_EDECODE,
				"jpeg: marker %02X after restart interval %llu of %llu, not RST%u",
				m, (unsigned long long)k + 1, (unsigned long long)total,
				(unsigned)(k % 8));
		if (k + 1 == total && rst)
			return status_fail(
				err, errlen, FEEDER_EDECODE,
				"jpeg: more restart intervals than the %llu of a %ux%u grid",
				(unsigned long long)total, t->cols, t->mcus_y);
		uint64_t r = k / t->cols, c = k % t->cols;
		if (r >= r0 && c >= c0 && c < c1) {
			if (emitted) {
				o[n++] = 0xFF;
				o[n++] = (uint8_t)(0xD0 + (emitted - 1) % 8);
			}
			memcpy(o + n, p + pos, at - pos);
			n += at - pos;
			emitted++;
		}
		pos = next;
	}
	o[n++] = 0xFF;
	o[n++] = 0xD9;
	out->len = n;
	return 0;
}

/* ---- writing ------------------------------------------------------------ */

struct comp_err {
	struct jpeg_error_mgr pub;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
};

struct jpeg_tiler {
	struct jpeg_decompress_struct in;
	struct jpeg_rules_err in_err;
	struct jpeg_compress_struct out;
	struct comp_err out_err;
	/* Our destination: a malloc'd buffer the tiler owns until a result
	 * takes it, so that an error halfway frees it. */
	struct jpeg_destination_mgr dest;
	uint8_t *buf;
	size_t cap;
};

static void dest_init(j_compress_ptr ci)
{
	struct jpeg_tiler *t = (struct jpeg_tiler *)ci->client_data;
	if (!t->buf) {
		t->cap = 65536;
		if (!(t->buf = malloc(t->cap)))
			ERREXIT1(ci, JERR_OUT_OF_MEMORY, 10);
	}
	ci->dest->next_output_byte = t->buf;
	ci->dest->free_in_buffer = t->cap;
}

static boolean dest_grow(j_compress_ptr ci)
{
	struct jpeg_tiler *t = (struct jpeg_tiler *)ci->client_data;
	uint8_t *q = realloc(t->buf, t->cap * 2);
	if (!q)
		ERREXIT1(ci, JERR_OUT_OF_MEMORY, 11);
	ci->dest->next_output_byte = q + t->cap;
	ci->dest->free_in_buffer = t->cap;
	t->buf = q;
	t->cap *= 2;
	return TRUE;
}

static void dest_term(j_compress_ptr ci)
{
	(void)ci;
}

/* Hand the written JPEG to r; the tiler makes a new buffer next time. */
static void take_result(struct jpeg_tiler *t, struct jpeg_tiles_result *r)
{
	r->len = t->cap - t->dest.free_in_buffer;
	r->data = t->buf;
	r->restart = t->out.restart_interval;
	t->buf = NULL;
	t->cap = 0;
}

/* After an error: nothing half-written is kept. */
static void drop_result(struct jpeg_tiler *t)
{
	free(t->buf);
	t->buf = NULL;
	t->cap = 0;
}

static void comp_exit(j_common_ptr ci)
{
	struct comp_err *e = (struct comp_err *)ci->err;
	(*ci->err->format_message)(ci, e->msg);
	longjmp(e->jump, 1);
}

static void comp_quiet(j_common_ptr ci)
{
	(void)ci;
}

int jpeg_tiler_create(struct jpeg_tiler **out, char *err, size_t errlen)
{
	*out = NULL;
	struct jpeg_tiler *t = calloc(1, sizeof(*t));
	if (!t)
		return status_fail(err, errlen, -ENOMEM, "JPEG tiler: out of memory");
	if (setjmp(t->in_err.jump)) {
		int rc = status_fail(err, errlen, -ENOMEM, "JPEG tiler: %s", t->in_err.msg);
		free(t);
		return rc;
	}
	jpeg_rules_create(&t->in, &t->in_err);
	t->out.err = jpeg_std_error(&t->out_err.pub);
	t->out_err.pub.error_exit = comp_exit;
	t->out_err.pub.output_message = comp_quiet;
	if (setjmp(t->out_err.jump)) {
		int rc = status_fail(err, errlen, -ENOMEM, "JPEG tiler: %s", t->out_err.msg);
		jpeg_destroy_decompress(&t->in);
		free(t);
		return rc;
	}
	jpeg_create_compress(&t->out);
	t->out.client_data = t;
	t->dest.init_destination = dest_init;
	t->dest.empty_output_buffer = dest_grow;
	t->dest.term_destination = dest_term;
	t->out.dest = &t->dest;
	*out = t;
	return 0;
}

void jpeg_tiler_destroy(struct jpeg_tiler *t)
{
	if (!t)
		return;
	jpeg_destroy_decompress(&t->in);
	jpeg_destroy_compress(&t->out);
	free(t->buf);
	free(t);
}

static int is_app(const jpeg_saved_marker_ptr mk, int code, const char *tag, size_t n)
{
	return mk->marker == code && mk->data_length >= n && memcmp(mk->data, tag, n) == 0;
}

int jpeg_tiles_transcode(struct jpeg_tiler *t, const uint8_t *src, size_t len,
			 const struct jpeg_tiles_policy *p, struct jpeg_tiles_result *r, char *err,
			 size_t errlen)
{
	memset(r, 0, sizeof(*r));
	struct jpeg_decompress_struct *in = &t->in;
	struct jpeg_compress_struct *out = &t->out;
	if (setjmp(t->in_err.jump)) {
		jpeg_abort_compress(out);
		jpeg_abort_decompress(in);
		drop_result(t);
		return status_fail(err, errlen, 1, "%s", t->in_err.msg);
	}
	if (setjmp(t->out_err.jump)) {
		jpeg_abort_compress(out);
		jpeg_abort_decompress(in);
		drop_result(t);
		return status_fail(err, errlen, 1, "%s", t->out_err.msg);
	}
	jpeg_mem_src(in, src, (unsigned long)len);
	jpeg_save_markers(in, JPEG_COM, 0xFFFF);
	for (int m = 0; m < 16; m++)
		jpeg_save_markers(in, JPEG_APP0 + m, 0xFFFF);
	jpeg_read_header(in, TRUE);
	/* The size limit before the coefficients are allocated. */
	int rc = jpeg_rules_check_header(in, NULL, err, errlen);
	if (rc) {
		jpeg_abort_decompress(in);
		return 1;
	}
	unsigned mcu_w = in->num_components == 1 ? 8 : 8 * (unsigned)in->max_h_samp_factor;
	unsigned mcu_h = in->num_components == 1 ? 8 : 8 * (unsigned)in->max_v_samp_factor;
	unsigned mcus_x = (in->image_width + mcu_w - 1) / mcu_w;
	unsigned mcus_y = (in->image_height + mcu_h - 1) / mcu_h;
	jvirt_barray_ptr *coef = jpeg_read_coefficients(in);
	jpeg_copy_critical_parameters(in, out);
	out->optimize_coding = TRUE;
	out->restart_in_rows = 0;
	out->restart_interval = jpeg_tiles_interval(p, len, mcus_x, mcus_y);
	jpeg_write_coefficients(out, coef);
	for (jpeg_saved_marker_ptr mk = in->marker_list; mk; mk = mk->next) {
		if (out->write_JFIF_header && is_app(mk, JPEG_APP0, "JFIF", 5))
			continue; /* written by the library from the copied parameters */
		if (out->write_Adobe_marker && is_app(mk, JPEG_APP0 + 14, "Adobe", 5))
			continue;
		jpeg_write_marker(out, mk->marker, mk->data, mk->data_length);
	}
	jpeg_finish_compress(out);
	jpeg_finish_decompress(in);
	take_result(t, r);
	return 0;
}

int jpeg_tiles_encode(struct jpeg_tiler *t, const uint8_t *pixels, size_t stride, uint32_t w,
		      uint32_t h, unsigned comps, int quality, const struct jpeg_tiles_policy *p,
		      struct jpeg_tiles_result *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	if ((comps != 1 && comps != 3) || w == 0 || h == 0 || w > 65500 || h > 65500 ||
	    quality < 1 || quality > 100)
		return status_fail(err, errlen, FEEDER_EINVAL,
				   "jpeg: cannot encode %ux%u with %u components at quality %d", w,
				   h, comps, quality);
	struct jpeg_compress_struct *out = &t->out;
	if (setjmp(t->out_err.jump)) {
		jpeg_abort_compress(out);
		drop_result(t);
		return status_fail(err, errlen, -ENOMEM, "jpeg encode: %s", t->out_err.msg);
	}
	out->image_width = w;
	out->image_height = h;
	out->input_components = (int)comps;
	out->in_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_set_defaults(out); /* colour: YCbCr 4:2:0 */
	jpeg_set_quality(out, quality, TRUE);
	out->optimize_coding = TRUE;
	unsigned mcu_w = comps == 1 ? 8 : 16;
	out->restart_in_rows = 0;
	out->restart_interval = p->mcus ? jpeg_tiles_choose((w + mcu_w - 1) / mcu_w, p->mcus) : 0;
	jpeg_start_compress(out, TRUE);
	while (out->next_scanline < h) {
		JSAMPROW row = (JSAMPROW)(pixels + (size_t)out->next_scanline * stride);
		jpeg_write_scanlines(out, &row, 1);
	}
	jpeg_finish_compress(out);
	take_result(t, r);
	if (p->mcus || !p->bytes)
		return 0;
	/* A byte target: now that the size per MCU is known. */
	struct jpeg_tiles_result plain = *r;
	int rc = jpeg_tiles_transcode(t, plain.data, plain.len, p, r, err, errlen);
	free(plain.data);
	if (rc == 1) { /* our own output: can only be memory */
		char why[200];
		snprintf(why, sizeof why, "%s", err);
		rc = status_fail(err, errlen, -ENOMEM, "jpeg encode: %s", why);
	}
	return rc;
}
