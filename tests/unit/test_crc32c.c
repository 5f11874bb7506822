/* test_crc32c — CRC-32C against the standard check value and the hardware
 * path against the table path on every length and alignment. */
#include "check.h"
#include "crc32c.h"

#include <string.h>

int main(void)
{
	/* The CRC-32C check value (RFC 3720 / iSCSI): "123456789" -> e3069283. */
	CHECK(crc32c(0, "123456789", 9) == 0xe3069283u);
	CHECK(crc32c_sw(0, "123456789", 9) == 0xe3069283u);
	/* 32 zero bytes: the iSCSI test vector 8a9136aa. */
	unsigned char z[32] = { 0 };
	CHECK(crc32c(0, z, 32) == 0x8a9136aau);

	unsigned char buf[1024 + 8];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 131 + 7);
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 1024; len += 1 + len / 7)
			CHECKF(crc32c(0, buf + off, len) == crc32c_sw(0, buf + off, len),
			       "off %zu len %zu", off, len);
	/* Lengths through the hardware path's three streams (blocks of 3 x 256
	 * and 3 x 8192 bytes, then the rest), at every alignment. */
	static unsigned char big[3 * 8192 * 2 + 3 * 256 * 2 + 64];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 2654435761u >> 13);
	static const size_t lens[] = {
		767, 768, 769, 1536 + 5, 24575, 24576, 24577, 49152 + 768 + 7, sizeof(big) - 8
	};
	for (size_t off = 0; off < 8; off++)
		for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
			CHECKF(crc32c(0x1234u, big + off, lens[k]) ==
				       crc32c_sw(0x1234u, big + off, lens[k]),
			       "off %zu len %zu", off, lens[k]);
	/* crc32c_copy: the same CRC, and the bytes copied, no byte past them
	 * written, at every alignment of source and destination. */
	static unsigned char dst[sizeof(big) + 16];
	for (size_t off = 0; off < 8; off++)
		for (size_t doff = 0; doff < 8; doff += 3)
			for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
				size_t n = lens[k];
				memset(dst, 0xA5, sizeof dst);
				uint32_t got = crc32c_copy(0x1234u, dst + doff, big + off, n);
				CHECKF(got == crc32c_sw(0x1234u, big + off, n),
				       "copy off %zu len %zu", off, n);
				CHECKF(memcmp(dst + doff, big + off, n) == 0,
				       "copy off %zu len %zu", off, n);
				CHECKF(dst[doff + n] == 0xA5 &&
					       (doff == 0 || dst[doff - 1] == 0xA5),
				       "copy off %zu len %zu wrote outside", off, n);
			}
	for (size_t len = 0; len <= 1024; len += 1 + len / 7) {
		memset(dst, 0, sizeof dst);
		CHECKF(crc32c_copy(7, dst + 1, buf + 3, len) == crc32c_sw(7, buf + 3, len) &&
			       memcmp(dst + 1, buf + 3, len) == 0,
		       "copy len %zu", len);
	}
	/* Incremental equals one-shot. */
	uint32_t c = crc32c(0, buf, 100);
	c = crc32c(c, buf + 100, 900);
	CHECK(c == crc32c(0, buf, 1000));
	return 0;
}
