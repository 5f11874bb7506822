/* bytes.h — fixed-endian loads and stores for on-disk and on-wire encodings.
 *
 * Every Feeder format is defined byte by byte (little-endian fields, except
 * LMDB keys, which are big-endian so that they sort in index order, and the
 * JPEG headers media/jpeg_tiles.c reads and patches); these
 * helpers keep struct layout and host byte order out of the formats. */
#ifndef FEEDER_BYTES_H
#define FEEDER_BYTES_H

#include <stdint.h>
#include <string.h>

static inline void bytes_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}
static inline void bytes_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}
static inline void bytes_put_le64(uint8_t *p, uint64_t v)
{
	bytes_put_le32(p, (uint32_t)v);
	bytes_put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint16_t bytes_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint32_t bytes_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t bytes_le64(const uint8_t *p)
{
	return (uint64_t)bytes_le32(p) | (uint64_t)bytes_le32(p + 4) << 32;
}
static inline void bytes_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = (uint8_t)v;
}
static inline uint16_t bytes_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}
static inline void bytes_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}
static inline void bytes_put_be64(uint8_t *p, uint64_t v)
{
	bytes_put_be32(p, (uint32_t)(v >> 32));
	bytes_put_be32(p + 4, (uint32_t)v);
}
static inline uint32_t bytes_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static inline uint64_t bytes_be64(const uint8_t *p)
{
	return (uint64_t)bytes_be32(p) << 32 | bytes_be32(p + 4);
}

#endif
