/* crc32c.h — CRC-32C (Castagnoli), the checksum over every sample payload.
 *
 * Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at run
 * time) and a slicing-by-8 table otherwise; both give identical results,
 * with a copy or without. */
#ifndef FEEDER_CRC32C_H
#define FEEDER_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of len bytes at p, continuing from crc (pass 0 to start). */
uint32_t crc32c(uint32_t crc, const void *p, size_t len);

/* Copy len bytes from src to dst (not overlapping) and return their
 * CRC-32C continuing from crc: one pass over the bytes where a copy and
 * then crc32c made two (feederd copies every record out of the dataset's
 * mapping, then checks it). */
uint32_t crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len);

/* The portable implementation, exposed so tests can compare the two. */
uint32_t crc32c_sw(uint32_t crc, const void *p, size_t len);

#endif
