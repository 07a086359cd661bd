/* collector/jsonl.h - JSON Lines output: whole lines, one write(2) each, O_APPEND.
 * Used by collector's record writers; any thread. Calls libc and cJSON. */
#ifndef COLLECTOR_JSONL_H
#define COLLECTOR_JSONL_H

#include <stddef.h>

struct cJSON;

/* Opens (creating, never truncating) path for appending. Returns the descriptor, or
 * -errno with "cannot create output 'PATH': REASON" in err. */
int collector_jsonl_open(const char *path, char *err, size_t err_size);

/* Prints record on one line and appends it with a single write, so that a crash never
 * leaves half a line and writers in several processes never interleave. Returns 0 or
 * -errno (nothing, or in the worst case of a full disk a short tail, was written). */
int collector_jsonl_write(int fd, const struct cJSON *record);
/* The two halves of collector_jsonl_write, for a writer that also keeps the text: the
 * record printed on one line with its newline (caller frees; NULL when out of memory),
 * and that line appended with a single write (0 or -errno). */
char *collector_jsonl_line(const struct cJSON *record, size_t *len);
int collector_jsonl_write_line(int fd, const char *line, size_t len);

/* Adds a string member, first making it valid UTF-8 (invalid bytes become U+FFFD), so
 * that any kernel or NVTX name gives valid JSON. Returns 0 or -ENOMEM. */
int collector_json_add_string(struct cJSON *object, const char *key, const char *value);

/* A copy of s with every invalid UTF-8 sequence replaced by U+FFFD; NULL when out of
 * memory. */
char *collector_utf8_sanitize(const char *s);

#endif
