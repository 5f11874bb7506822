/* pack_utf8.h — whether a name packer stores is UTF-8.
 *
 * A dataset's label table and sample names are UTF-8 (proto/dsformat.h):
 * readers hand them on as text (`packer inspect --json`, the Python
 * client). Names come from folder names, list files and Kaldi files,
 * which are bytes; packer refuses one that is not UTF-8 where it can
 * still say where it came from (a file and line, a folder), rather than
 * store it. */
#ifndef FEEDER_PACK_UTF8_H
#define FEEDER_PACK_UTF8_H

#include <stddef.h>

/* Bytes of the UTF-8 character at s (1..4), or 0 when s does not start
 * one: a stray continuation byte, an overlong form, a surrogate, a code
 * point past U+10FFFF, a sequence cut short by the NUL. */
static inline int pack_utf8_char(const unsigned char *s)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
	if (!n || c > 0xF4)
		return 0;
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) ||
	    (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] > 0x8F))
		return 0;
	return n;
}

/* The offset of the first byte of NUL-terminated s that is not UTF-8, or
 * -1 when all of s is. */
static inline long pack_utf8_bad(const char *s)
{
	for (size_t i = 0; s[i];) {
		int n = pack_utf8_char((const unsigned char *)s + i);
		if (!n)
			return (long)i;
		i += (size_t)n;
	}
	return -1;
}

#endif
