/* common/utf8.h - recognising valid UTF-8, for messages (common/log.c) and JSON strings
 * (collector/jsonl.c): both must show any NVTX or kernel name safely. libc only. */
#ifndef COMMON_UTF8_H
#define COMMON_UTF8_H

#include <stddef.h>

/* Length (1-4) of the valid UTF-8 sequence at s, or 0 when none starts there (an invalid
 * byte, an overlong form, a surrogate, a code point past U+10FFFF, a truncated sequence).
 * s must be NUL-terminated; NUL itself is a sequence of length 1. */
size_t rp_utf8_sequence(const unsigned char *s);

#endif
