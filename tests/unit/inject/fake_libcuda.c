/* tests/unit/inject/fake_libcuda.c - a stand-in CUDA driver under the driver's SONAME
 * (libcuda.so.1), for the control API's tests on a machine without one: loaded first by
 * its path, it is what dlopen("libcuda.so.1") then finds. It answers what the library
 * asks before cuInit (the driver's version, and that it is not initialised), and what
 * rangeprof_prepare's thread calls (cuInit, a device, its primary context made current),
 * each written to a log the test reads with fake_cuda_log(). One device, ordinal 0;
 * FAKE_CUDA_DEVICES=N gives N; FAKE_CUDA_INIT_MS=M makes cuInit take M ms, and
 * FAKE_CUDA_RETAIN_MS=M cuDevicePrimaryCtxRetain (logged as it begins). The log is
 * written and read under a lock: the prepare threads call in while the test reads it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int cuDriverGetVersion(int *version);
EXPORT int cuDeviceGetCount(int *count);
EXPORT int cuInit(unsigned int flags);
EXPORT int cuDeviceGet(int *device, int ordinal);
EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int device);
EXPORT int cuCtxSetCurrent(void *ctx);
EXPORT int cuCtxGetCurrent(void **ctx);
EXPORT int cuCtxGetDevice(int *device);
EXPORT const char *fake_cuda_log(void);

static char log_text[1024];
static int contexts[64];
static __thread void *current;

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void note(const char *call, int value)
{
	pthread_mutex_lock(&log_lock);
	size_t n = strlen(log_text);
	snprintf(log_text + n, sizeof(log_text) - n, "%s(%d) ", call, value);
	pthread_mutex_unlock(&log_lock);
}

/* A copy of the log as it is now, the calling thread's own. */
const char *fake_cuda_log(void)
{
	static __thread char copy[sizeof(log_text)];
	pthread_mutex_lock(&log_lock);
	memcpy(copy, log_text, sizeof(copy));
	pthread_mutex_unlock(&log_lock);
	return copy;
}

int cuDriverGetVersion(int *version)
{
	*version = 13000;
	return 0;
}

/* CUDA_ERROR_NOT_INITIALIZED: cuInit has not been called (control.c's late-attach test). */
int cuDeviceGetCount(int *count)
{
	*count = 0;
	return 3;
}

int cuInit(unsigned int flags)
{
	const char *ms = getenv("FAKE_CUDA_INIT_MS");
	if (ms) {
		long m = atol(ms);
		struct timespec t = { m / 1000, (m % 1000) * 1000000 };
		nanosleep(&t, NULL);
	}
	note("cuInit", (int)flags);
	return 0;
}

int cuDeviceGet(int *device, int ordinal)
{
	note("cuDeviceGet", ordinal);
	const char *env = getenv("FAKE_CUDA_DEVICES");
	int count = env ? atoi(env) : 1;
	if (ordinal < 0 || ordinal >= count || ordinal >= 64)
		return 101; /* CUDA_ERROR_INVALID_DEVICE */
	*device = ordinal;
	return 0;
}

int cuDevicePrimaryCtxRetain(void **ctx, int device)
{
	note("cuDevicePrimaryCtxRetain", device);
	const char *ms = getenv("FAKE_CUDA_RETAIN_MS");
	if (ms) {
		long m = atol(ms);
		struct timespec t = { m / 1000, (m % 1000) * 1000000 };
		nanosleep(&t, NULL);
	}
	*ctx = &contexts[device];
	return 0;
}

int cuCtxSetCurrent(void *ctx)
{
	note("cuCtxSetCurrent", (int)((int *)ctx - contexts));
	current = ctx;
	return 0;
}

int cuCtxGetCurrent(void **ctx)
{
	*ctx = current;
	return 0;
}

int cuCtxGetDevice(int *device)
{
	if (!current)
		return 201; /* CUDA_ERROR_INVALID_CONTEXT */
	*device = (int)((int *)current - contexts);
	return 0;
}
