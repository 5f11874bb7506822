/* crc32c.c — CRC-32C with a hardware path (see crc32c.h).
 *
 * The crc32 instruction takes 3 cycles to give its result and can start one
 * every cycle, so one stream of them does 8 bytes per 3 cycles. Large
 * buffers run three streams, over the three thirds of each block, and join
 * them: the CRC register after a block B that followed state c is
 * zeros_L(c) ^ crc_from_0(B), with zeros_L the (linear) effect of L zero
 * bytes, applied by table. One stream was 5 % of a speech chunk in feederd
 * and 8 % of a pack. */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82f63b78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		table[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++)
		for (int k = 1; k < 8; k++)
			table[k][n] = (table[k - 1][n] >> 8) ^ table[0][table[k - 1][n] & 0xff];
}

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	pthread_once(&table_once, table_init);
	crc = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		w ^= crc;
		crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
		      table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^
		      table[2][(w >> 40) & 0xff] ^ table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

#if defined(__x86_64__)
/* The three streams' block lengths, long then short (each a multiple of 8). */
#define HW_LONG 8192
#define HW_SHORT 256

/* zeros_L as four byte tables, for L = HW_LONG and HW_SHORT. */
static uint32_t shift_long[4][256], shift_short[4][256];

__attribute__((target("sse4.2"))) static uint32_t hw_zeros(uint32_t c, size_t len)
{
	uint64_t s = c;
	for (size_t i = 0; i < len; i += 8)
		s = __builtin_ia32_crc32di(s, 0);
	return (uint32_t)s;
}

/* zeros_L is linear: its value on each of the 32 bits, then XORs. */
static void hw_shift_init(uint32_t t[4][256], size_t len)
{
	uint32_t bit[32];
	for (int b = 0; b < 32; b++)
		bit[b] = hw_zeros(1u << b, len);
	for (int i = 0; i < 4; i++)
		for (uint32_t v = 0; v < 256; v++) {
			uint32_t r = 0;
			for (int b = 0; b < 8; b++)
				if (v >> b & 1)
					r ^= bit[8 * i + b];
			t[i][v] = r;
		}
}

static inline uint32_t hw_shift(uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][c >> 8 & 0xff] ^ t[2][c >> 16 & 0xff] ^ t[3][c >> 24];
}

/* Three streams over the thirds of each 3 * block bytes at *p, while they
 * last, storing each word at *dp as well where copy is set (a constant in
 * each caller, so each gets its own loop); c is the register (not
 * inverted). The stores ride along: the crc32 instructions, not memory,
 * set the pace. */
__attribute__((target("sse4.2"), always_inline)) static inline uint64_t hw_triple(
	uint64_t c, const unsigned char **pp, unsigned char **dp, size_t *lenp, size_t block,
	uint32_t t[4][256], const int copy)
{
	const unsigned char *p = *pp;
	unsigned char *d = *dp;
	size_t len = *lenp;
	while (len >= 3 * block) {
		uint64_t c1 = 0, c2 = 0;
		for (size_t i = 0; i < block; i += 8) {
			uint64_t w0, w1, w2;
			memcpy(&w0, p + i, 8);
			memcpy(&w1, p + block + i, 8);
			memcpy(&w2, p + 2 * block + i, 8);
			c = __builtin_ia32_crc32di(c, w0);
			c1 = __builtin_ia32_crc32di(c1, w1);
			c2 = __builtin_ia32_crc32di(c2, w2);
			if (copy) {
				memcpy(d + i, &w0, 8);
				memcpy(d + block + i, &w1, 8);
				memcpy(d + 2 * block + i, &w2, 8);
			}
		}
		c = hw_shift(t, hw_shift(t, (uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
		p += 3 * block;
		if (copy)
			d += 3 * block;
		len -= 3 * block;
	}
	*pp = p;
	*dp = d;
	*lenp = len;
	return c;
}

/* The CRC of len bytes at src, copied to dst where copy is set. */
__attribute__((target("sse4.2"), always_inline)) static inline uint32_t hw_run(
	uint32_t crc, unsigned char *d, const unsigned char *p, size_t len, const int copy)
{
	uint64_t c = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		if (copy)
			*d++ = *p;
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	c = hw_triple(c, &p, &d, &len, HW_LONG, shift_long, copy);
	c = hw_triple(c, &p, &d, &len, HW_SHORT, shift_short, copy);
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		if (copy) {
			memcpy(d, &w, 8);
			d += 8;
		}
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		len -= 8;
	}
	while (len--) {
		if (copy)
			*d++ = *p;
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	}
	return ~(uint32_t)c;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *buf,
							    size_t len)
{
	return hw_run(crc, NULL, buf, len, 0);
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw_copy(uint32_t crc, void *dst,
								 const void *src, size_t len)
{
	return hw_run(crc, dst, src, len, 1);
}
#endif

#if defined(__x86_64__)
/* Probed once per process: pthread_once orders the write before every
 * reader, where a lazily set static would be a data race between threads
 * (packer's workers and feederd's all CRC at once). */
static int have_hw;
static pthread_once_t hw_once = PTHREAD_ONCE_INIT;

static void hw_probe(void)
{
	have_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	if (have_hw) {
		hw_shift_init(shift_long, HW_LONG);
		hw_shift_init(shift_short, HW_SHORT);
	}
}
#endif

uint32_t crc32c(uint32_t crc, const void *p, size_t len)
{
#if defined(__x86_64__)
	pthread_once(&hw_once, hw_probe);
	if (have_hw)
		return crc32c_hw(crc, p, len);
#endif
	return crc32c_sw(crc, p, len);
}

uint32_t crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	pthread_once(&hw_once, hw_probe);
	if (have_hw)
		return crc32c_hw_copy(crc, dst, src, len);
#endif
	if (len)
		memcpy(dst, src, len);
	return crc32c_sw(crc, dst, len);
}
