/* crc32c.h — CRC-32C (Castagnoli), the checksum over every sample payload.
 *
 * Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at run
 * time) and a slicing-by-8 table otherwise; both give identical results. */
#ifndef FEEDER_CRC32C_H
#define FEEDER_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of len bytes at p, continuing from crc (pass 0 to start). */
uint32_t crc32c(uint32_t crc, const void *p, size_t len);

/* The portable implementation, exposed so tests can compare the two. */
uint32_t crc32c_sw(uint32_t crc, const void *p, size_t len);

#endif
