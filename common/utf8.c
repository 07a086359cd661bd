/* common/utf8.c - recognising valid UTF-8 sequences. Any thread.
 * Calls: none (libc only).
 * Called by: log.c, collector/.
 * Lock: none (no state). */
#include "common/utf8.h"

size_t rp_utf8_sequence(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t len;
	unsigned long cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	/* A NUL ends the string before a continuation byte is read past it. */
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	/* Overlong forms, surrogates and code points past U+10FFFF are not UTF-8. */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}
