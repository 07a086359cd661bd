/* inject/session/watchdog.h - a replay pass that does not finish is made loud. A kernel that
 * waits for a peer GPU, another process or the host, and that no name gave away
 * (collectives.c), would wait for ever when replayed alone; a running kernel cannot be
 * cancelled, so the watchdog cannot end the wait, but it says at once, on stderr and as
 * an error record, which kernel hangs and which option excludes it. One thread of ours,
 * started at the first arm. Armed and disarmed by the workloads and the measuring loop
 * with the replay lock held. */
#ifndef INJECT_WATCHDOG_H
#define INJECT_WATCHDOG_H

#include <stdint.h>

/* Starts (or restarts) the clock: after seconds, unless disarmed or armed again, the hang
 * is reported once for this kernel. kernel and mangled must live until disarmed. */
void inject_watchdog_arm(double seconds, const char *kernel, const char *mangled, int device,
			 uint32_t context, uint64_t launch);
void inject_watchdog_disarm(void);

#endif
