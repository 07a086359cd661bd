/* tests/unit/ptxas_check.h - whether a kernel's PTX text assembles, by the toolkit's ptxas
 * for an H100/H200 (sm_90). The flush's and the hash's kernels are PTX texts built at run
 * time (inject/session/flush_text.c, memory/verify.c); their unit tests otherwise only look for
 * words in them, and a text the driver cannot compile would leave every context unmeasured.
 * Header-only, for the tests that include it. */
#ifndef RANGEPROF_TESTS_PTXAS_CHECK_H
#define RANGEPROF_TESTS_PTXAS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PTXAS_CHECK_TOOL "/usr/local/cuda/bin/ptxas"

/* Whether this machine's toolkit has ptxas (the tests skip otherwise). */
static inline int ptxas_check_available(void)
{
	return access(PTXAS_CHECK_TOOL, X_OK) == 0;
}

/* ptxas's exit status for ptx (0: it assembles), -1 when the temporary file cannot be
 * written; cmd gets the command, for the test's message. */
static inline int ptxas_check(const char *ptx, char *cmd, size_t cmd_size)
{
	char path[] = "/tmp/rangeprof_ptx_XXXXXX.ptx";
	int fd = mkstemps(path, 4);
	snprintf(cmd, cmd_size, "%s -arch=sm_90 -warn-spills -Werror %s -o /dev/null", PTXAS_CHECK_TOOL, path);
	if (fd < 0)
		return -1;
	size_t len = strlen(ptx);
	int wrote = write(fd, ptx, len) == (ssize_t)len;
	close(fd);
	int rc = wrote ? system(cmd) : -1;
	unlink(path);
	return rc;
}

#endif
