/* tests/gpu/segv_trace.c - a debugging aid for the GPU machine, which has no gdb: preloaded,
 * it prints a backtrace with module offsets on SIGSEGV/SIGABRT, for addr2line here. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static void on_crash(int sig)
{
	void *frames[64];
	int n = backtrace(frames, 64);
	fprintf(stderr, "segv_trace: signal %d\n", sig);
	for (int i = 0; i < n; i++) {
		Dl_info info;
		if (dladdr(frames[i], &info) && info.dli_fname)
			fprintf(stderr, "  #%d %s+0x%lx (%s)\n", i, info.dli_fname,
				(unsigned long)((char *)frames[i] - (char *)info.dli_fbase),
				info.dli_sname ? info.dli_sname : "?");
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

__attribute__((constructor)) static void install(void)
{
	signal(SIGSEGV, on_crash);
	signal(SIGABRT, on_crash);
}
