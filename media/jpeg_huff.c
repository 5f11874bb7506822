/* jpeg_huff.c — baseline Huffman decoding in place of libjpeg-turbo's (see
 * jpeg_huff.h).
 *
 * libjpeg's contract for decode_mcu (jdcoefct.c, jdapistd.c): it is called
 * once per MCU in scan order with blocks_in_MCU zeroed blocks, or with NULL
 * when the rows are being skipped; it writes each block's coefficients in
 * natural order, not dequantized; it handles the restart markers itself
 * (libjpeg's own checks each with read_restart_marker; next_interval here
 * checks the same); after the last MCU libjpeg reads the next marker from
 * the source. The
 * source is a memory buffer, so the whole entropy-coded segment up to its
 * marker is in view: the reader finds the segment's end once and loads
 * eight bytes at a time where none of them is 0xFF. */
#include "jpeg_huff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpegint.h>

/* Codes up to FAST_BITS long are found with one lookup (10: 0.5 slow
 * lookups a block on dense photos against 1.3 with 9, measured). */
#define FAST_BITS 10

struct huff_table {
	uint8_t bits[17]; /* the JHUFF_TBL these were derived from */
	uint8_t huffval[256];
	int valid;
	/* symbol << 8 | length for codes of <= FAST_BITS bits, by their
	 * first FAST_BITS bits; 0: a longer code (or none). The length in the
	 * low bits is the shift count as it is (x86 masks it to 6 bits), which
	 * takes an instruction off the chain from one symbol to the next. */
	uint16_t fast[1 << FAST_BITS];
	/* A code and its value bits within FAST_BITS in one entry
	 * (joint_entry; for DC tables the value is the difference, the run 0);
	 * 0 when not so short. (Two AC codes and values an entry, where they
	 * fit, decoded fewer entries but ran 10 % slower.) */
	int32_t joint[1 << FAST_BITS];
	/* longer codes: a code of length l, left-aligned in 16 bits, is below
	 * maxcode[l]; its symbol is huffval[(code >> (16 - l)) + delta[l]] */
	uint32_t maxcode[18];
	int32_t delta[17];
};

struct bit_reader {
	uint64_t buf;           /* the next bits, first at the top */
	int bits;               /* how many of buf's bits are loaded */
	int pad;                /* zero bytes loaded past the segment's end */
	const uint8_t *p, *end; /* next byte to load; the segment's end */
	const uint8_t *lim;     /* end of the source's data */
};

struct jpeg_huff {
	struct huff_table dc[NUM_HUFF_TBLS], ac[NUM_HUFF_TBLS];
	struct bit_reader br;
	const struct huff_table *dc_of[D_MAX_BLOCKS_IN_MCU], *ac_of[D_MAX_BLOCKS_IN_MCU];
	int comp_of[D_MAX_BLOCKS_IN_MCU];
	int dc_needed[D_MAX_BLOCKS_IN_MCU], ac_needed[D_MAX_BLOCKS_IN_MCU];
	int32_t last_dc[MAX_COMPS_IN_SCAN];
	JCOEF scratch[DCTSIZE2]; /* AC values not wanted */
	unsigned restarts_to_go;
	uint64_t mcus_left; /* in the scan, not yet decoded */
	/* Paired intervals (fill_pair): two intervals' blocks, decoded
	 * together, served to libjpeg one MCU a call. */
	int pair;
	JBLOCK *ahead;
	size_t ahead_cap;       /* blocks */
	unsigned ready, served; /* MCUs in ahead, and handed out */
	int alone;              /* refused on a verdict libjpeg may not share */
};

/* Zigzag to natural order; the 16 extra entries (63) absorb a run that
 * overshoots on corrupt data, as libjpeg's jpeg_natural_order does. */
static const uint8_t natural[80] = {
	0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33,
	40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36,
	29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54,
	47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
};

struct jpeg_huff *jpeg_huff_create(void)
{
	return calloc(1, sizeof(struct jpeg_huff));
}

void jpeg_huff_destroy(struct jpeg_huff *h)
{
	if (h)
		free(h->ahead);
	free(h);
}

/* A value of s bits (1..15) as JPEG codes it: the low half negative. */
static inline int32_t extend(uint32_t v, int s)
{
	return v < (1u << (s - 1)) ? (int32_t)v - (int32_t)(1u << s) + 1 : (int32_t)v;
}

/* A joint entry: bits 0-5 the bits of the code and its value (a shift
 * count as it is), 8-11 the run, 16-31 the value; or AC_EOB and the bits
 * of the end-of-block code. */
#define AC_EOB 0x80u

static int32_t joint_entry(int len, int run, int32_t v)
{
	return (int32_t)((uint32_t)v << 16 | (uint32_t)run << 8 | (uint32_t)len);
}

/* Derive t from the table libjpeg read (and checked, in
 * jpeg_make_d_derived_tbl, when the decompression started). Skipped when t
 * already holds the same table: a camera's or an encoder's standard tables
 * repeat from image to image. */
static void build_table(struct huff_table *t, const JHUFF_TBL *src, int ac)
{
	if (t->valid && !memcmp(t->bits, src->bits, sizeof t->bits) &&
	    !memcmp(t->huffval, src->huffval, sizeof t->huffval))
		return;
	memcpy(t->bits, src->bits, sizeof t->bits);
	memcpy(t->huffval, src->huffval, sizeof t->huffval);
	memset(t->fast, 0, sizeof t->fast);
	memset(t->joint, 0, sizeof t->joint);
	uint32_t code = 0;
	int k = 0;
	for (int l = 1; l <= 16; l++) {
		t->delta[l] = k - (int32_t)code;
		for (int i = 0; i < src->bits[l] && k < 256; i++, k++, code++) {
			if (l > FAST_BITS)
				continue;
			uint32_t first = code << (FAST_BITS - l), n = 1u << (FAST_BITS - l);
			for (uint32_t j = 0; j < n; j++) {
				uint8_t sym = src->huffval[k];
				t->fast[first + j] = (uint16_t)(sym << 8 | l);
				/* DC symbols are sizes alone (a difference of 0 bits is
				 * 0); AC ones a run and a size, 0 for the end of block
				 * or a run of 16, which the slow path takes */
				int run = ac ? sym >> 4 : 0, size = ac ? sym & 15 : sym;
				if (ac && sym == 0) { /* end of block */
					t->joint[first + j] = (int32_t)(AC_EOB | (uint32_t)l);
					continue;
				}
				if ((ac && size == 0) || size > 11 || l + size > FAST_BITS)
					continue;
				uint32_t v = ((first + j) >> (FAST_BITS - l - size)) &
					     ((1u << size) - 1);
				t->joint[first + j] =
					joint_entry(l + size, run, size ? extend(v, size) : 0);
			}
		}
		t->maxcode[l] = code << (16 - l);
		code <<= 1;
	}
	t->maxcode[17] = 0xFFFFFFFFu;
	t->valid = 1;
}

/* The end of the entropy-coded segment from p: the 0xFF that starts a
 * marker. As libjpeg reads it, fill bytes (0xFF 0xFF...) followed by 0x00
 * are one stuffed 0xFF; followed by anything else, a marker. NULL when the
 * data end first. */
static const uint8_t *segment_end(const uint8_t *p, const uint8_t *lim)
{
	for (;;) {
		const uint8_t *q = memchr(p, 0xFF, (size_t)(lim - p));
		if (!q)
			return NULL;
		const uint8_t *r = q + 1;
		while (r < lim && *r == 0xFF)
			r++;
		if (r == lim)
			return NULL;
		if (*r != 0)
			return q;
		p = r + 1;
	}
}

static void corrupt(j_decompress_ptr ci, int code);

/* A segment that the data end in (no marker after it: a truncated file)
 * is refused at once. libjpeg refuses it only when its reader reaches the
 * end, which a crop may or may not need; here the verdict does not depend
 * on the crop. */
static void reader_start(j_decompress_ptr ci, struct bit_reader *b, const uint8_t *p,
			 const uint8_t *lim)
{
	b->buf = 0;
	b->bits = 0;
	b->pad = 0;
	b->p = p;
	b->lim = lim;
	b->end = segment_end(p, lim);
	if (!b->end)
		corrupt(ci, JWRN_JPEG_EOF);
}

/* Load until at least 57 bits are in the buffer; past the segment's end,
 * zero bytes (counted in pad: using them is an error, checked after each
 * MCU or interval). */
static inline void refill(struct bit_reader *b)
{
	while (b->bits <= 56) {
		if (b->end - b->p >= 8) {
			uint64_t v;
			memcpy(&v, b->p, 8);
			uint64_t x = ~v; /* a 0xFF byte of v is a zero byte of x */
			if (!((x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull)) {
				v = __builtin_bswap64(v);
				int n = (64 - b->bits) >> 3, s = 64 - b->bits - 8 * n;
				b->buf |= (v >> b->bits) & (~0ull << s);
				b->bits += 8 * n;
				b->p += n;
				return;
			}
		}
		uint32_t c = 0;
		if (b->p < b->end) {
			c = *b->p++;
			if (c == 0xFF) { /* fill bytes and the stuffed zero: segment_end saw them */
				while (*b->p == 0xFF)
					b->p++;
				b->p++;
			}
		} else {
			b->pad++;
		}
		b->buf |= (uint64_t)c << (56 - b->bits);
		b->bits += 8;
	}
}

static inline uint32_t get_bits(struct bit_reader *b, int s)
{
	uint32_t v = (uint32_t)(b->buf >> (64 - s));
	b->buf <<= s;
	b->bits -= s;
	return v;
}

/* The corrupt-data warnings libjpeg would give, which end the decode under
 * jpeg_rules.h; an error manager whose warnings return gets an error. An
 * invalid code is always an error here, and so is a symbol that 8-bit
 * data cannot have (more than 11 bits of DC difference or 10 of AC value):
 * libjpeg's fast path (no restart markers) decodes an invalid code as
 * symbol 0 and goes on, and some of those symbols (which a damaged table
 * can hold) to other values than the standard's. */
static void corrupt(j_decompress_ptr ci, int code)
{
	/* libjpeg checks these on some of its paths only (jpeg_huff.h) */
	if (code == JWRN_HUFF_BAD_CODE || code == JWRN_EXTRANEOUS_DATA)
		((struct jpeg_huff *)ci->client_data)->alone = 1;
	/* msg_parm as the caller set it */
	ci->err->msg_code = code;
	(*ci->err->emit_message)((j_common_ptr)ci, -1);
	ci->err->msg_code = code;
	(*ci->err->error_exit)((j_common_ptr)ci);
}

/* One symbol; at least 16 bits must be loaded. -1 for an invalid code. */
static inline int decode_symbol(struct bit_reader *b, const struct huff_table *t)
{
	uint32_t e = t->fast[b->buf >> (64 - FAST_BITS)];
	if (e) {
		b->buf <<= e & 63;
		b->bits -= (int)(e & 63);
		return (int)(e >> 8);
	}
	uint32_t x = (uint32_t)(b->buf >> 48);
	int l = FAST_BITS + 1;
	while (x >= t->maxcode[l])
		l++;
	if (l > 16)
		return -1;
	int idx = (int)(x >> (16 - l)) + t->delta[l];
	if (idx < 0 || idx > 255)
		return -1;
	b->buf <<= l;
	b->bits -= l;
	return t->huffval[idx];
}

/* A block's DC difference, added to *last (when wanted) and written to
 * block[0] (when there is a block). */
static inline __attribute__((always_inline)) void decode_dc(j_decompress_ptr ci,
							    struct bit_reader *b,
							    const struct huff_table *dc, int needed,
							    int32_t *last, JCOEF *block)
{
	if (b->bits < 32)
		refill(b);
	int32_t diff = 0, e = dc->joint[b->buf >> (64 - FAST_BITS)];
	if (e) {
		b->buf <<= e & 63;
		b->bits -= e & 63;
		diff = e >> 16;
	} else {
		int s = decode_symbol(b, dc);
		if (s < 0 || s > 11) /* 8-bit DC differences have at most 11 bits */
			corrupt(ci, JWRN_HUFF_BAD_CODE);
		if (s)
			diff = extend(get_bits(b, s), s);
	}
	if (needed) {
		/* wraps like libjpeg's int on corrupt data, without the UB */
		*last = (int32_t)((uint32_t)*last + (uint32_t)diff);
		if (block)
			block[0] = (JCOEF)*last;
	}
}

/* One AC symbol of a block into out (natural order), *k the next
 * coefficient: returns nonzero when the block has ended (end of block, or
 * its 63rd coefficient). A run past the 63rd leaves *k above 64: the
 * standard has no such block (libjpeg writes it to the 63rd, natural[]
 * above, on one path and elsewhere on another), see ac_done. */
static inline __attribute__((always_inline)) int ac_step(j_decompress_ptr ci, struct bit_reader *b,
							 const struct huff_table *ac, int *k,
							 JCOEF *out)
{
	if (b->bits < 32)
		refill(b);
	int32_t e = ac->joint[b->buf >> (64 - FAST_BITS)];
	if (__builtin_expect(e != 0, 1)) {
		int kk = *k + ((e >> 8) & 15);
		b->buf <<= e & 63;
		b->bits -= e & 63;
		if (e & AC_EOB)
			return 1;
		out[natural[kk]] = (JCOEF)(e >> 16);
		*k = kk + 1;
		return kk + 1 >= DCTSIZE2;
	}
	int rs = decode_symbol(b, ac);
	if (rs < 0)
		corrupt(ci, JWRN_HUFF_BAD_CODE);
	int r = rs >> 4, s = rs & 15;
	if (s > 10) /* 8-bit AC values have at most 10 bits */
		corrupt(ci, JWRN_HUFF_BAD_CODE);
	if (s) {
		int kk = *k + r;
		out[natural[kk]] = (JCOEF)extend(get_bits(b, s), s);
		*k = kk + 1;
		return kk + 1 >= DCTSIZE2;
	}
	if (r != 15)
		return 1;
	*k += 16;
	return *k >= DCTSIZE2;
}

static inline void ac_done(j_decompress_ptr ci, int k)
{
	if (k > DCTSIZE2)
		corrupt(ci, JWRN_HUFF_BAD_CODE);
}

/* Block blkn of an MCU on its own: its DC into block (with last_dc[] the
 * predictions, dc_needed as libjpeg's), its AC values into out. */
static inline __attribute__((always_inline)) void decode_block(j_decompress_ptr ci,
							       const struct jpeg_huff *h,
							       struct bit_reader *b, int blkn,
							       int32_t *last_dc, int dc_needed,
							       JCOEF *block, JCOEF *out)
{
	decode_dc(ci, b, h->dc_of[blkn], dc_needed, &last_dc[h->comp_of[blkn]], block);
	int k = 1;
	while (!ac_step(ci, b, h->ac_of[blkn], &k, out))
		;
	ac_done(ci, k);
}

/* Block blkn of two intervals at once, a symbol of one and then of the
 * other: each interval is a stream of its own (its DC predictions start
 * at 0), and a symbol's decode waits on the one before it (its length
 * says where the next begins), so two streams keep the core busy where
 * one leaves it waiting on that chain. */
static inline __attribute__((always_inline)) void decode_two(j_decompress_ptr ci,
							     struct jpeg_huff *h, int blkn,
							     struct bit_reader *ra, int32_t *dca,
							     JCOEF *oa, struct bit_reader *rb,
							     int32_t *dcb, JCOEF *ob)
{
	const struct huff_table *dc = h->dc_of[blkn], *ac = h->ac_of[blkn];
	int c = h->comp_of[blkn];
	decode_dc(ci, ra, dc, 1, &dca[c], oa);
	decode_dc(ci, rb, dc, 1, &dcb[c], ob);
	int ka = 1, kb = 1, da = 0, db = 0;
	while (!(da | db)) {
		da = ac_step(ci, ra, ac, &ka, oa);
		db = ac_step(ci, rb, ac, &kb, ob);
	}
	while (!da)
		da = ac_step(ci, ra, ac, &ka, oa);
	while (!db)
		db = ac_step(ci, rb, ac, &kb, ob);
	ac_done(ci, ka);
	ac_done(ci, kb);
}

/* At the end of an interval or of the scan: the segment must be used up
 * but for the padding bits of its last byte. libjpeg warns about bytes left
 * over when it has not read them ahead, and drops them silently when it
 * has (so, depending on how far it read); left over, they are a sign of
 * damage that happened to decode (a flipped bit that shortened a code), so
 * here they always end the decode, with libjpeg's message. Then the
 * source is left at the segment's marker, for libjpeg. */
static void segment_done(j_decompress_ptr ci, const struct bit_reader *b)
{
	int real = b->bits - 8 * b->pad;
	size_t left = (size_t)(b->end - b->p) + (real >= 8 ? (size_t)real / 8 : 0);
	if (left) {
		const uint8_t *q = b->end;
		while (q < b->lim && *q == 0xFF)
			q++;
		ci->err->msg_parm.i[0] = (int)(left > 1000000 ? 1000000 : left);
		ci->err->msg_parm.i[1] = q < b->lim ? *q : 0;
		corrupt(ci, JWRN_EXTRANEOUS_DATA);
	}
	ci->src->next_input_byte = b->end;
	ci->src->bytes_in_buffer = (size_t)(b->lim - b->end);
}

static const uint8_t *next_interval(j_decompress_ptr ci, const uint8_t *end, const uint8_t *lim);

/* At a restart marker: what libjpeg's process_restart does (the marker
 * checked as its read_restart_marker does, next_interval below). */
static void restart(j_decompress_ptr ci, struct jpeg_huff *h)
{
	struct bit_reader *b = &h->br;
	segment_done(ci, b);
	reader_start(ci, b, next_interval(ci, b->end, b->lim), b->lim);
	for (int c = 0; c < ci->comps_in_scan; c++)
		h->last_dc[c] = 0;
	h->restarts_to_go = ci->restart_interval;
}

/* The marker at end (a segment's end) must be the restart marker libjpeg
 * expects next, as its read_restart_marker checks (a wrong one is its
 * resync warning); returns where the next interval's data begin. */
static const uint8_t *next_interval(j_decompress_ptr ci, const uint8_t *end, const uint8_t *lim)
{
	const uint8_t *q = end + 1;
	while (q < lim && *q == 0xFF)
		q++;
	int want = JPEG_RST0 + ci->marker->next_restart_num;
	if (q >= lim || *q != want) {
		ci->err->msg_parm.i[0] = q < lim ? *q : 0;
		ci->err->msg_parm.i[1] = ci->marker->next_restart_num;
		corrupt(ci, JWRN_MUST_RESYNC);
	}
	ci->marker->next_restart_num = (ci->marker->next_restart_num + 1) & 7;
	return q + 1;
}

/* Decode the next two intervals (one, at the scan's end) into h->ahead,
 * two streams at once (decode_two); h->br is at the first one's data. */
static void fill_pair(j_decompress_ptr ci, struct jpeg_huff *h)
{
	unsigned bpm = (unsigned)ci->blocks_in_MCU, ri = ci->restart_interval;
	unsigned na = h->mcus_left < ri ? (unsigned)h->mcus_left : ri;
	h->mcus_left -= na;
	unsigned nb = h->mcus_left < ri ? (unsigned)h->mcus_left : ri;
	h->mcus_left -= nb;
	struct bit_reader ra = h->br, rb = { 0 };
	if (nb)
		reader_start(ci, &rb, next_interval(ci, ra.end, ra.lim), ra.lim);
	JBLOCK *a = h->ahead, *b = h->ahead + (size_t)na * bpm;
	memset(h->ahead, 0, (size_t)(na + nb) * bpm * sizeof(JBLOCK));
	int32_t dca[MAX_COMPS_IN_SCAN] = { 0 }, dcb[MAX_COMPS_IN_SCAN] = { 0 };
	unsigned both = na < nb ? na : nb;
	for (unsigned m = 0; m < both; m++)
		for (unsigned blkn = 0; blkn < bpm; blkn++)
			decode_two(ci, h, (int)blkn, &ra, dca, a[m * bpm + blkn], &rb, dcb,
				   b[m * bpm + blkn]);
	for (unsigned m = both; m < na; m++)
		for (unsigned blkn = 0; blkn < bpm; blkn++)
			decode_block(ci, h, &ra, (int)blkn, dca, 1, a[m * bpm + blkn],
				     a[m * bpm + blkn]);
	if ((ra.pad && ra.bits < 8 * ra.pad) || (rb.pad && rb.bits < 8 * rb.pad))
		corrupt(ci, JWRN_HIT_MARKER); /* used bits past a segment */
	segment_done(ci, &ra);
	if (nb)
		segment_done(ci, &rb);
	struct bit_reader *last = nb ? &rb : &ra;
	if (h->mcus_left) /* the scan goes on after the marker */
		reader_start(ci, &h->br, next_interval(ci, last->end, last->lim), last->lim);
	h->ready = na + nb;
	h->served = 0;
}

static boolean decode_mcu(j_decompress_ptr ci, JBLOCKROW *data)
{
	struct jpeg_huff *h = (struct jpeg_huff *)ci->client_data;
	if (h->pair) {
		if (h->served == h->ready)
			fill_pair(ci, h);
		const JBLOCK *src = h->ahead + (size_t)h->served++ * (size_t)ci->blocks_in_MCU;
		if (data)
			for (int blkn = 0; blkn < ci->blocks_in_MCU; blkn++)
				memcpy(data[blkn], src[blkn], sizeof(JBLOCK));
		return TRUE;
	}
	if (ci->restart_interval) {
		if (h->restarts_to_go == 0)
			restart(ci, h);
		h->restarts_to_go--;
	}
	/* in registers for the MCU (a longjmp from corrupt() drops it) */
	struct bit_reader br = h->br;
	for (int blkn = 0; blkn < ci->blocks_in_MCU; blkn++) {
		JCOEF *block = data ? data[blkn][0] : NULL;
		/* AC values nobody reads (rows skipped, a 1/8 IDCT) go to
		 * scratch, so that the loop has no branch on it */
		decode_block(ci, h, &br, blkn, h->last_dc, h->dc_needed[blkn], block,
			     block && h->ac_needed[blkn] ? block : h->scratch);
	}
	if (br.pad && br.bits < 8 * br.pad)
		corrupt(ci, JWRN_HIT_MARKER); /* used bits past the segment */
	h->br = br;
	if (--h->mcus_left == 0)
		segment_done(ci, &br); /* libjpeg reads the next marker */
	return TRUE;
}

int jpeg_huff_install(struct jpeg_decompress_struct *ci, struct jpeg_huff *h)
{
	if (ci->progressive_mode || ci->arith_code || ci->data_precision != 8 ||
	    ci->buffered_image || !ci->inputctl || ci->inputctl->has_multiple_scans ||
	    !ci->entropy || !ci->src || !ci->src->next_input_byte || ci->comps_in_scan < 1 ||
	    ci->comps_in_scan > MAX_COMPS_IN_SCAN || ci->blocks_in_MCU < 1 ||
	    ci->blocks_in_MCU > D_MAX_BLOCKS_IN_MCU)
		return 0;
	for (int c = 0; c < ci->comps_in_scan; c++) {
		const jpeg_component_info *comp = ci->cur_comp_info[c];
		if (comp->dc_tbl_no < 0 || comp->dc_tbl_no >= NUM_HUFF_TBLS ||
		    comp->ac_tbl_no < 0 || comp->ac_tbl_no >= NUM_HUFF_TBLS ||
		    !ci->dc_huff_tbl_ptrs[comp->dc_tbl_no] ||
		    !ci->ac_huff_tbl_ptrs[comp->ac_tbl_no])
			return 0;
	}
	for (int c = 0; c < ci->comps_in_scan; c++) {
		const jpeg_component_info *comp = ci->cur_comp_info[c];
		build_table(&h->dc[comp->dc_tbl_no], ci->dc_huff_tbl_ptrs[comp->dc_tbl_no], 0);
		build_table(&h->ac[comp->ac_tbl_no], ci->ac_huff_tbl_ptrs[comp->ac_tbl_no], 1);
		h->last_dc[c] = 0;
	}
	for (int blkn = 0; blkn < ci->blocks_in_MCU; blkn++) {
		int c = ci->MCU_membership[blkn];
		const jpeg_component_info *comp = ci->cur_comp_info[c];
		h->comp_of[blkn] = c;
		h->dc_of[blkn] = &h->dc[comp->dc_tbl_no];
		h->ac_of[blkn] = &h->ac[comp->ac_tbl_no];
		h->dc_needed[blkn] = comp->component_needed;
		/* a 1/8-scaled IDCT reads the DC only */
		h->ac_needed[blkn] = comp->component_needed && comp->DCT_scaled_size > 1;
	}
	h->restarts_to_go = ci->restart_interval;
	h->mcus_left = (uint64_t)ci->MCUs_per_row * ci->MCU_rows_in_scan;
	/* Paired intervals where there are intervals to pair and the two fit
	 * in a few tens of KB (packer's tiles: a few MCUs each). Each block is
	 * decoded whole there (the AC of a 1/8 IDCT, of skipped rows too):
	 * the IDCT reads what it needs. */
	h->pair = 0;
	h->ready = h->served = 0;
	size_t need = (size_t)2 * ci->restart_interval * (size_t)ci->blocks_in_MCU;
	if (ci->restart_interval && ci->restart_interval <= 32 &&
	    h->mcus_left > ci->restart_interval) {
		if (need > h->ahead_cap) {
			JBLOCK *p = realloc(h->ahead, need * sizeof(JBLOCK));
			if (p) {
				h->ahead = p;
				h->ahead_cap = need;
			}
		}
		h->pair = need <= h->ahead_cap;
	}
	ci->client_data = h; /* before the first corrupt() */
	reader_start(ci, &h->br, ci->src->next_input_byte,
		     ci->src->next_input_byte + ci->src->bytes_in_buffer);
	ci->entropy->decode_mcu = decode_mcu;
	return 1;
}

int jpeg_huff_or_libjpeg(struct jpeg_huff *h, jpeg_huff_try_fn decode, void *ctx, int *fell_back)
{
	if (fell_back)
		*fell_back = 0;
	if (h)
		h->alone = 0;
	int rc = decode(ctx, h);
	if (rc == 0 || !h || !h->alone)
		return rc;
	rc = decode(ctx, NULL);
	if (fell_back)
		*fell_back = rc == 0;
	return rc;
}
