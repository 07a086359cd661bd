/* tests/unit/collector/fake_nvml.c - a stand-in libnvidia-ml for testing the clock lock
 * without touching a GPU: it appends every lock and reset to the file named by
 * FAKE_NVML_LOG, and refuses locking (NVML_ERROR_NO_PERMISSION) when FAKE_NVML_DENY is set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static int device_token;

static void log_line(const char *line)
{
	const char *path = getenv("FAKE_NVML_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;
	if (!f)
		return;
	fputs(line, f);
	fclose(f);
}

EXPORT int nvmlInit_v2(void) { return 0; }
EXPORT const char *nvmlErrorString(int r) { return r == 4 ? "Insufficient Permissions" : "Unknown Error"; }
EXPORT int nvmlDeviceGetHandleByUUID(const char *uuid, void **dev)
{
	if (strncmp(uuid, "GPU-", 4))
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	*dev = &device_token;
	return 0;
}
EXPORT int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *t)
{
	(void)dev, (void)sensor;
	*t = 41;
	return 0;
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
		return 4;
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
