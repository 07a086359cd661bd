/* common/log.h - the one place rangeprof prints to stderr.
 * Every message is one line with one prefix ("rangeprof: error: ", "rangeprof: warning: ",
 * "rangeprof: " for a note, "==RANGEPROF== " for progress), written with a single write(2)
 * so that lines from the application's threads and ours never interleave inside a line.
 * libc only. */
#ifndef COMMON_LOG_H
#define COMMON_LOG_H

#include <stdbool.h>
#include <stdarg.h>

/* Progress lines (and the exit table) are dropped when quiet; errors, warnings and notes
 * are not. When silent (the control API's quiet, Nsight Python's verbosity SILENT) no
 * line at all is written; rp_log_quiet() is then true too. */
void rp_log_set_quiet(bool quiet);
bool rp_log_quiet(void);
void rp_log_set_silent(bool silent);

void rp_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rp_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A statement that is neither error nor warning but must be seen even when quiet (the
 * exit line "rangeprof: nothing measured: ..."). */
void rp_log_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rp_log_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Formats "rangeprof: error: ..." into buf without printing it; used where the message
 * must also go into a record or back to a caller. Returns buf. */
char *rp_format(char *buf, unsigned long size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A user's value made fit for a one-line message: control characters and bytes that are
 * not printable ASCII or UTF-8 shown as \n, \t, \xNN; cut after RP_QUOTE_MAX bytes of
 * the value with "...(N bytes)" so that the reason after it is not lost. Always
 * NUL-terminates buf (size > 0); returns buf. */
#define RP_QUOTE_MAX 200
#define RP_QUOTE_SIZE (4 * RP_QUOTE_MAX + 48)
const char *rp_quote(const char *value, char *buf, unsigned long size);

#endif
