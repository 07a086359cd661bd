/* common/error.h - the one table of failure codes. A function that can fail returns 0 or
 * one of these (negative), and writes a message for the user into the caller's buffer
 * (char *err, size_t err_size) when it has one: the code is what callers decide on, the
 * message what they say. No decision reads a message (issue 19).
 * RP_ERR_FAILED is -1, so that the many "return -1" of a failure with no particular
 * consequence keep their meaning. Lookups that find nothing return NULL or false; that
 * is an answer, not a failure, and stays so. */
#ifndef COMMON_ERROR_H
#define COMMON_ERROR_H

/* X(name, value, what the caller does about it) */
#define RP_ERRORS(X)                                                                     \
	X(RP_ERR_FAILED, -1, "failed; the launch or device is not measured")             \
	X(RP_ERR_HARDWARE_BUSY, -2, "the GPU's profiling hardware is held by another "   \
	  "profiler or process; worth waiting for")                                      \
	X(RP_ERR_PRIVILEGES, -3, "GPU performance counters are restricted to "           \
	  "administrators; nothing can be measured in this process")                     \
	X(RP_ERR_NOT_SUPPORTED, -4, "the device or metric is not supported")             \
	X(RP_ERR_NO_MEMORY, -5, "out of host memory")                                    \
	X(RP_ERR_RESTORE, -6, "putting the saved memory back failed")                    \
	X(RP_ERR_FLUSH, -7, "flushing the L2 failed")                                    \
	X(RP_ERR_RELAUNCH, -8, "launching the workload again failed")                    \
	X(RP_ERR_USER_RANGE, -9, "opening or closing a user range failed")               \
	X(RP_ERR_SYNC, -10, "waiting for the GPU failed")                                \
	X(RP_ERR_TIMEOUT, -11, "another process kept the device's turn or profiling "    \
	  "hardware past the wait allowed; wait longer, or the launch is not measured")

enum rp_error {
	RP_OK = 0,
#define RP_ERROR_ENUM(name, value, text) name = value,
	RP_ERRORS(RP_ERROR_ENUM)
#undef RP_ERROR_ENUM
};

/* "RP_ERR_HARDWARE_BUSY"; "RP_OK" for 0; "RP_ERR_FAILED" for any code not in the table. */
const char *rp_error_name(int code);
/* What the code means, as above. */
const char *rp_error_text(int code);

#endif
