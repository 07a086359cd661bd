/* inject/session/captures.c - stream captures under way in the process (captures.h): the
 * driver callbacks that begin and end them, and the count that keeps measurements away
 * from them. The CUPTI parameter structs only; the count is unit-tested.
 * Calls: none (libc only).
 * Called by: launch.c (the callbacks), session.c, range_memory.c (is one under way).
 * Lock: lock (the captures; under_way is an atomic read without it). */
#include "inject/session/captures.h"

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>

struct capture {
	const void *stream;
	uint64_t thread;
};
#define CAPTURES 256
static struct capture captures[CAPTURES];
static size_t capture_count;
/* Captures that found the table full: counted, never matched; each end that matches no
 * entry takes one off, so the count can only be too high (measuring waits), never low. */
static size_t overflow;
static atomic_size_t under_way;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void inject_captures_begin(const void *stream, uint64_t thread)
{
	pthread_mutex_lock(&lock);
	if (capture_count < CAPTURES)
		captures[capture_count++] = (struct capture){ stream, thread };
	else
		overflow++;
	atomic_fetch_add(&under_way, 1);
	pthread_mutex_unlock(&lock);
}

void inject_captures_end(const void *stream, uint64_t thread)
{
	pthread_mutex_lock(&lock);
	/* The thread's own capture of the stream; else (a relaxed capture may end on
	 * another thread) any capture of the same explicit stream. A NULL stream names a
	 * different per-thread stream on each thread, so it must match the thread. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < capture_count; i++) {
			if (captures[i].stream != stream ||
			    (captures[i].thread != thread && (pass == 0 || !stream)))
				continue;
			captures[i] = captures[--capture_count];
			atomic_fetch_sub(&under_way, 1);
			pthread_mutex_unlock(&lock);
			return;
		}
	}
	if (overflow) {
		overflow--;
		atomic_fetch_sub(&under_way, 1);
	}
	pthread_mutex_unlock(&lock);
}

bool inject_captures_under_way(void)
{
	return atomic_load(&under_way) > 0;
}

bool inject_captures_on_call(int cbid, const void *params, bool at_exit, bool succeeded)
{
	CUstream stream;
	bool begin = true;
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
		stream = ((const cuStreamBeginCapture_params *)params)->hStream;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz:
		stream = ((const cuStreamBeginCapture_v2_params *)params)->hStream;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz:
		stream = ((const cuStreamBeginCaptureToGraph_params *)params)->hStream;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz:
		stream = ((const cuStreamEndCapture_params *)params)->hStream;
		begin = false;
		break;
	default:
		return false;
	}
	/* Every mode counts, relaxed included: a measurement synchronises the whole context,
	 * which no capturing stream of it may see (the CUDA programming guide). On the GPU,
	 * tests/gpu/graphs.cu's captures in global, thread-local and relaxed mode under
	 * rangeprof, and in global mode beside the early set-up's first pass, stay valid
	 * (tests/gpu/run.sh: graphs-modes, graphs-late-captures). A capture counts from
	 * before its begin (another thread's measurement may be under way) to after its end
	 * has returned; a failed begin ends it at once. */
	uint64_t thread = (uint64_t)pthread_self();
	if (begin && !at_exit)
		inject_captures_begin(stream, thread);
	else if ((begin && !succeeded) || (!begin && at_exit))
		inject_captures_end(stream, thread);
	return true;
}
