/* common/log.c - one-line messages on stderr, each written whole.
 * Called from any thread, including the application's threads inside CUDA and NVTX
 * callbacks; uses no locks and no allocation. libc only. */
#include "common/log.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
