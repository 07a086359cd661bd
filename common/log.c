/* common/log.c - one-line messages on stderr, each written whole.
 * Called from any thread, including the application's threads inside CUDA and NVTX
 * callbacks; uses no locks and no allocation.
 * Calls: utf8.c (libc besides).
 * Called by: options.c, inject/, nvtx_bridge/, collector/.
 * Lock: none (the quiet and silent flags are atomics). */
#include "common/log.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/utf8.h"

static atomic_bool quiet_flag, silent_flag;

void rp_log_set_quiet(bool quiet) { atomic_store(&quiet_flag, quiet); }
bool rp_log_quiet(void) { return atomic_load(&quiet_flag) || atomic_load(&silent_flag); }
void rp_log_set_silent(bool silent) { atomic_store(&silent_flag, silent); }

/* Copies src into buf (size > 40) with control characters and bytes that are not
 * UTF-8 written as \n, \t, \r, \xNN, until src ends, max bytes of it are read, or buf
 * is full less 40 bytes. NUL-terminates; returns the bytes of src read. */
static size_t escape(const char *src, size_t max, char *buf, size_t size, size_t *written)
{
	size_t n = 0, i = 0;
	const unsigned char *v = (const unsigned char *)src;
	for (; v[i] && i < max && n + 40 < size; i++) {
		unsigned char c = v[i];
		if (c == '\n' || c == '\t' || c == '\r') {
			buf[n++] = '\\';
			buf[n++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
		} else if (c < 0x20 || c == 0x7f) {
			n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
		} else if (c < 0x80) {
			buf[n++] = (char)c;
		} else {
			/* Valid UTF-8 is shown as it is, so names in any script stay readable;
			 * other bytes (a C1 control such as 0x9b would steer a terminal) are not. */
			size_t len = rp_utf8_sequence(v + i);
			if (!len) {
				n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
				continue;
			}
			for (size_t k = 0; k < len; k++)
				buf[n++] = (char)v[i + k];
			i += len - 1;
		}
	}
	buf[n] = '\0';
	*written = n;
	return i;
}

__attribute__((format(printf, 2, 0)))
static void emit(const char *prefix, const char *fmt, va_list ap)
{
	if (atomic_load_explicit(&silent_flag, memory_order_relaxed))
		return;
	/* Whatever the arguments hold (a kernel or NVTX name, a path), the message stays one
	 * line of text: escaped here, once for every caller. */
	char raw[2048], line[2048 + 64];
	vsnprintf(raw, sizeof(raw), fmt, ap);
	int n = snprintf(line, sizeof(line), "%s", prefix);
	size_t len;
	escape(raw, sizeof(raw), line + n, sizeof(line) - (size_t)n, &len);
	len += (size_t)n;
	line[len++] = '\n';
	/* One write so that concurrent messages stay whole lines; a short write to a
	 * closed stderr is not worth a retry loop. */
	ssize_t ignored = write(STDERR_FILENO, line, len);
	(void)ignored;
}

void rp_log_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("rangeprof: error: ", fmt, ap);
	va_end(ap);
}

void rp_log_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("rangeprof: warning: ", fmt, ap);
	va_end(ap);
}

void rp_log_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("rangeprof: ", fmt, ap);
	va_end(ap);
}

void rp_log_progress(const char *fmt, ...)
{
	if (rp_log_quiet())
		return;
	va_list ap;
	va_start(ap, fmt);
	emit("==RANGEPROF== ", fmt, ap);
	va_end(ap);
}

char *rp_format(char *buf, unsigned long size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return buf;
}

const char *rp_quote(const char *value, char *buf, unsigned long size)
{
	if (!size)
		return buf;
	if (!value)
		value = "";
	size_t written;
	size_t read = escape(value, RP_QUOTE_MAX, buf, size, &written);
	if (value[read])
		snprintf(buf + written, size - written, "...(%zu bytes)",
			 read + strlen(value + read));
	return buf;
}
