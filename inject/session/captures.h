/* inject/session/captures.h - stream captures under way in the process. While one runs, in
 * any mode and on any thread, nothing is measured: a measurement synchronises the context,
 * allocates and takes checkpoints, which would invalidate it. */
#ifndef INJECT_CAPTURES_H
#define INJECT_CAPTURES_H

#include <stdbool.h>
#include <stdint.h>

/* Keyed by stream and thread, since two threads capturing their per-thread default
 * streams pass the same handle. Thread-safe. */
void inject_captures_begin(const void *stream, uint64_t thread);
/* The capture of stream by thread ended (or its begin failed). */
void inject_captures_end(const void *stream, uint64_t thread);
bool inject_captures_under_way(void);

/* A driver callback of cuStreamBeginCapture* (at ENTER and EXIT) or cuStreamEndCapture*
 * (at EXIT): feeds the count. false when cbid is none of those. */
bool inject_captures_on_call(int cbid, const void *params, bool at_exit, bool succeeded);

#endif
