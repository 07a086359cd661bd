/* tests/unit/collector/fake_nvml.c - a stand-in libnvidia-ml for testing without touching
 * a GPU.
 * - Clock lock: appends every lock and reset to the file named by FAKE_NVML_LOG, and
 *   refuses locking (NVML_ERROR_NO_PERMISSION) when FAKE_NVML_DENY is set.
 * - Devices: by default one, found by any "GPU-" UUID, at 41 C. A test that dlopens this
 *   library too (dlopen gives it the same copy collector/device.c loaded) can script it
 *   through the fake_nvml_* functions: a UUID list in NVML's own order, temperatures read
 *   one after another, slowdown temperature, clocks-event reasons, memory clock, power,
 *   errors per function, how often each function was called, and a handle lookup slowed
 *   down (nvml_threads_test.c widens the window in which two threads meet a new device).
 * - Threads: NVML is thread-safe, and so is this stand-in's state once scripted (the call
 *   counts and the temperature scripts are under fake_lock), so that tests may call it
 *   from several threads at once.
 * Built twice: with FAKE_NVML_OLD it lacks nvmlDeviceGetCurrentClocksEventReasons, as
 * drivers before 535 do, and has only the throttle-reasons name. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

enum { NVML_SUCCESS = 0, NVML_ERROR_INVALID_ARGUMENT = 2, NVML_ERROR_NOT_SUPPORTED = 3,
       NVML_ERROR_NO_PERMISSION = 4, NVML_ERROR_NOT_FOUND = 6 };

#define MAX_DEVICES 8
#define MAX_TEMPS 64
struct device {
	char uuid[96];
	unsigned temps[MAX_TEMPS];
	size_t temp_count, temp_next;
	unsigned slowdown, mem_mhz, sm_mhz, power_mw;
	unsigned long long reasons;
};
static struct device devices[MAX_DEVICES];
static int device_count;     /* 0: the default device, any "GPU-" UUID */

#define MAX_FAILS 16
static struct { const char *function; int code; } fails[MAX_FAILS];
static int fail_count;
#define MAX_COUNTED 32
static struct { const char *function; unsigned calls; } counted[MAX_COUNTED];
static int counted_count;
static unsigned lookup_delay_us;
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;

static void default_device(struct device *d, const char *uuid)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
	d->temps[0] = 41;
	d->temp_count = 1;
	d->slowdown = 87;
	d->mem_mhz = 2619;
	d->sm_mhz = 1980;
	d->power_mw = 123456;
}

/* Counts the call, and returns the error scripted for it (0: none). */
static int enter(const char *function)
{
	pthread_mutex_lock(&fake_lock);
	int i = 0, code = NVML_SUCCESS;
	for (; i < counted_count && strcmp(counted[i].function, function); i++)
		;
	if (i == counted_count && counted_count < MAX_COUNTED)
		counted[counted_count++].function = function;
	if (i < MAX_COUNTED)
		counted[i].calls++;
	for (int f = 0; f < fail_count; f++) {
		if (!strcmp(fails[f].function, function)) {
			code = fails[f].code;
			break;
		}
	}
	pthread_mutex_unlock(&fake_lock);
	return code;
}

static struct device *device_of(void *dev)
{
	struct device *d = dev;
	return d >= devices && d < devices + MAX_DEVICES ? d : NULL;
}

/* ---- scripting, for the tests ---------------------------------------------------- */

EXPORT void fake_nvml_reset(void)
{
	device_count = 0;
	default_device(&devices[0], "");
	fail_count = 0;
	counted_count = 0;
}

/* Adds a device with this UUID at the next NVML index; returns the index. */
EXPORT int fake_nvml_add_device(const char *uuid)
{
	if (device_count == MAX_DEVICES)
		return -1;
	default_device(&devices[device_count], uuid);
	return device_count++;
}

/* Each temperature read gives the next of temps; the last one repeats. */
EXPORT void fake_nvml_script_temperatures(int index, const unsigned *temps, size_t count)
{
	struct device *d = &devices[index];
	d->temp_count = count < MAX_TEMPS ? count : MAX_TEMPS;
	memcpy(d->temps, temps, d->temp_count * sizeof(*temps));
	d->temp_next = 0;
}

/* what: "slowdown" (C), "reasons" (bits), "mem_mhz", "sm_mhz", "power_mw". Any other
 * key, or an index outside the devices, aborts naming it: a misspelt key would otherwise
 * leave the default in place and the test would check something else than it says. */
EXPORT void fake_nvml_set(int index, const char *what, unsigned long long value)
{
	if (index < 0 || index >= MAX_DEVICES) {
		fprintf(stderr, "fake_nvml_set: device index %d outside 0..%d\n", index,
			MAX_DEVICES - 1);
		abort();
	}
	struct device *d = &devices[index];
	if (!strcmp(what, "slowdown"))
		d->slowdown = (unsigned)value;
	else if (!strcmp(what, "reasons"))
		d->reasons = value;
	else if (!strcmp(what, "mem_mhz"))
		d->mem_mhz = (unsigned)value;
	else if (!strcmp(what, "sm_mhz"))
		d->sm_mhz = (unsigned)value;
	else if (!strcmp(what, "power_mw"))
		d->power_mw = (unsigned)value;
	else {
		fprintf(stderr, "fake_nvml_set: unknown key '%s' (known: slowdown, reasons, "
			"mem_mhz, sm_mhz, power_mw)\n", what);
		abort();
	}
}

/* Every later call of function returns code. */
EXPORT void fake_nvml_fail(const char *function, int code)
{
	if (fail_count < MAX_FAILS) {
		fails[fail_count].function = function;
		fails[fail_count++].code = code;
	}
}

EXPORT unsigned fake_nvml_calls(const char *function)
{
	unsigned calls = 0;
	pthread_mutex_lock(&fake_lock);
	for (int i = 0; i < counted_count; i++)
		if (!strcmp(counted[i].function, function))
			calls = counted[i].calls;
	pthread_mutex_unlock(&fake_lock);
	return calls;
}

/* Every later nvmlDeviceGetHandleByUUID takes microseconds (under a second) more before
 * it answers, as NVML's walk over every GPU takes time. */
EXPORT void fake_nvml_slow_lookups(unsigned microseconds)
{
	lookup_delay_us = microseconds;
}

/* ---- NVML ------------------------------------------------------------------------- */

static void log_line(const char *line)
{
	const char *path = getenv("FAKE_NVML_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;
	if (!f)
		return;
	fputs(line, f);
	fclose(f);
}

__attribute__((constructor)) static void loaded(void)
{
	fake_nvml_reset();
}

EXPORT int nvmlInit_v2(void)
{
	return enter("nvmlInit_v2");
}

EXPORT const char *nvmlErrorString(int r)
{
	switch (r) {
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	default: return "Unknown Error";
	}
}

EXPORT int nvmlDeviceGetHandleByUUID(const char *uuid, void **dev)
{
	int r = enter("nvmlDeviceGetHandleByUUID");
	if (r)
		return r;
	if (lookup_delay_us) {
		struct timespec t = { 0, (long)lookup_delay_us * 1000 };
		nanosleep(&t, NULL);
	}
	if (!device_count) {
		if (strncmp(uuid, "GPU-", 4))
			return NVML_ERROR_INVALID_ARGUMENT;
		*dev = &devices[0];
		return NVML_SUCCESS;
	}
	for (int i = 0; i < device_count; i++) {
		if (!strcmp(devices[i].uuid, uuid)) {
			*dev = &devices[i];
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

EXPORT int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *t)
{
	struct device *d = device_of(dev);
	int r = enter("nvmlDeviceGetTemperature");
	if (r)
		return r;
	if (!d || sensor != 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&fake_lock);
	size_t i = d->temp_next < d->temp_count ? d->temp_next++ : d->temp_count - 1;
	*t = d->temps[i];
	pthread_mutex_unlock(&fake_lock);
	return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetTemperatureThreshold(void *dev, int which, unsigned *t)
{
	struct device *d = device_of(dev);
	int r = enter("nvmlDeviceGetTemperatureThreshold");
	if (r)
		return r;
	if (!d || which != 1) /* NVML_TEMPERATURE_THRESHOLD_SLOWDOWN */
		return NVML_ERROR_INVALID_ARGUMENT;
	*t = d->slowdown;
	return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz)
{
	struct device *d = device_of(dev);
	int r = enter("nvmlDeviceGetClockInfo");
	if (r)
		return r;
	if (!d || (type != 1 && type != 2)) /* NVML_CLOCK_SM, NVML_CLOCK_MEM: those asked for */
		return NVML_ERROR_INVALID_ARGUMENT;
	*mhz = type == 1 ? d->sm_mhz : d->mem_mhz;
	return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw)
{
	struct device *d = device_of(dev);
	int r = enter("nvmlDeviceGetPowerUsage");
	if (r)
		return r;
	if (!d)
		return NVML_ERROR_INVALID_ARGUMENT;
	*mw = d->power_mw;
	return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD
EXPORT int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *reasons)
{
	struct device *d = device_of(dev);
	int r = enter("nvmlDeviceGetCurrentClocksEventReasons");
	if (r)
		return r;
	if (!d)
		return NVML_ERROR_INVALID_ARGUMENT;
	*reasons = d->reasons;
	return NVML_SUCCESS;
}
#endif

EXPORT int nvmlDeviceGetCurrentClocksThrottleReasons(void *dev, unsigned long long *reasons)
{
	struct device *d = device_of(dev);
	int r = enter("nvmlDeviceGetCurrentClocksThrottleReasons");
	if (r)
		return r;
	if (!d)
		return NVML_ERROR_INVALID_ARGUMENT;
	*reasons = d->reasons;
	return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetDefaultApplicationsClock(void *dev, int type, unsigned *mhz)
{
	(void)dev;
	*mhz = type == 1 ? 1590 : 0; /* SM clock */
	return 0;
}

EXPORT int nvmlDeviceSetGpuLockedClocks(void *dev, unsigned lo, unsigned hi)
{
	(void)dev;
	if (getenv("FAKE_NVML_DENY"))
		return NVML_ERROR_NO_PERMISSION;
	char line[64];
	snprintf(line, sizeof(line), "lock %u %u\n", lo, hi);
	log_line(line);
	return 0;
}

EXPORT int nvmlDeviceResetGpuLockedClocks(void *dev)
{
	(void)dev;
	log_line("reset\n");
	return 0;
}
