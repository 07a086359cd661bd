/* common/log.c - one-line messages on stderr, each written whole.
 * Called from any thread, including the application's threads inside CUDA and NVTX
 * callbacks; uses no locks and no allocation. libc only. */
#include "common/log.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/utf8.h"

static atomic_bool quiet_flag;

void rp_log_set_quiet(bool quiet) { atomic_store(&quiet_flag, quiet); }
bool rp_log_quiet(void) { return atomic_load(&quiet_flag); }

static void emit(const char *prefix, const char *fmt, va_list ap)
{
	char line[2048];
	int n = snprintf(line, sizeof(line), "%s", prefix);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
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
	size_t n = 0, i = 0;
	const unsigned char *v = (const unsigned char *)value;
	/* Room for the longest escape and the "...(N bytes)" tail. */
	for (; v[i] && i < RP_QUOTE_MAX && n + 40 < size; i++) {
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
	if (v[i])
		snprintf(buf + n, size - n, "...(%zu bytes)", i + strlen((const char *)v + i));
	else
		buf[n < size ? n : size - 1] = '\0';
	return buf;
}
