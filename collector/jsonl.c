/* collector/jsonl.c - writing JSON Lines records whole, and keeping their strings valid.
 * Calls libc and cJSON. */
#include "collector/jsonl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int collector_jsonl_open(const char *path, char *err, size_t err_size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		snprintf(err, err_size, "cannot create output '%s': %s", path, strerror(e));
		return -e;
	}
	return fd;
}

int collector_jsonl_write(int fd, const cJSON *record)
{
	char *text = cJSON_PrintUnformatted(record);
	if (!text)
		return -ENOMEM;
	size_t len = strlen(text);
	char *line = realloc(text, len + 2);
	if (!line) {
		free(text);
		return -ENOMEM;
	}
	line[len++] = '\n';
	line[len] = '\0';
	ssize_t written;
	do {
		written = write(fd, line, len);
	} while (written < 0 && errno == EINTR);
	int rc = written == (ssize_t)len ? 0 : written < 0 ? -errno : -ENOSPC;
	free(line);
	return rc;
}

/* Length of the valid UTF-8 sequence at s, or 0 when it is not one. */
static size_t utf8_sequence(const unsigned char *s)
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

char *collector_utf8_sanitize(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *w = out;
	if (!out)
		return NULL;
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		size_t len = utf8_sequence(p);
		if (len) {
			memcpy(w, p, len);
			w += len;
			p += len;
		} else {
			memcpy(w, "\xEF\xBF\xBD", 3);
			w += 3;
			p++;
		}
	}
	*w = '\0';
	return out;
}

int collector_json_add_string(cJSON *object, const char *key, const char *value)
{
	if (!value)
		return cJSON_AddNullToObject(object, key) ? 0 : -ENOMEM;
	char *clean = collector_utf8_sanitize(value);
	if (!clean)
		return -ENOMEM;
	cJSON *item = cJSON_AddStringToObject(object, key, clean);
	free(clean);
	return item ? 0 : -ENOMEM;
}
