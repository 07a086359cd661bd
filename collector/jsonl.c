/* collector/jsonl.c - writing JSON Lines records whole, and keeping their strings valid.
 * Calls: common/ (log.c's rp_quote, utf8.c; libc and cJSON besides).
 * Called by: job.c, records.c, inject/.
 * Lock: none (no state). */
#include "collector/jsonl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/utf8.h"

int collector_jsonl_open(const char *path, char *err, size_t err_size)
{
	/* O_NONBLOCK: a FIFO without a reader must fail (ENXIO) rather than hang the
	 * application; writes then block as usual. The mode is 0644 less the umask. */
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		      0644);
	if (fd < 0) {
		int e = errno;
		char quoted[RP_QUOTE_SIZE];
		snprintf(err, err_size, "cannot create output '%s': %s",
			 rp_quote(path, quoted, sizeof(quoted)), strerror(e));
		return -e;
	}
	int flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

char *collector_jsonl_line(const cJSON *record, size_t *len)
{
	char *text = cJSON_PrintUnformatted(record);
	if (!text)
		return NULL;
	size_t n = strlen(text);
	char *line = realloc(text, n + 2);
	if (!line) {
		free(text);
		return NULL;
	}
	line[n++] = '\n';
	line[n] = '\0';
	*len = n;
	return line;
}

int collector_jsonl_write_line(int fd, const char *line, size_t len)
{
	ssize_t written;
	do {
		written = write(fd, line, len);
	} while (written < 0 && errno == EINTR);
	return written == (ssize_t)len ? 0 : written < 0 ? -errno : -ENOSPC;
}

int collector_jsonl_write(int fd, const cJSON *record)
{
	size_t len;
	char *line = collector_jsonl_line(record, &len);
	if (!line)
		return -ENOMEM;
	int rc = collector_jsonl_write_line(fd, line, len);
	free(line);
	return rc;
}

char *collector_utf8_sanitize(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *w = out;
	if (!out)
		return NULL;
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		size_t len = rp_utf8_sequence(p);
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
