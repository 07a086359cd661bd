/* collector/device.h - what the device record says of a device, from the driver; and
 * NVML (dlopen) for temperature and the base-clock lock, asked at the first selected
 * launch on a device and around each run, and on the lock's restore paths at exit and on
 * signals. Every function may be called from any thread at once: the NVML
 * state (the loaded library, the handle cache, the locked clocks) is under device.c's
 * own lock, not its callers'. */
#ifndef COLLECTOR_DEVICE_H
#define COLLECTOR_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "collector/records.h"

/* Fills info for device ordinal index. Returns 0 or -1 with err. */
int collector_device_info(int index, struct collector_device_info *info, char *err,
			  size_t err_size);

/* Host memory (MB) the CUPTI checkpoint must leave free, so that saving a large device
 * image fails with an error instead of exhausting the machine's memory. */
size_t collector_checkpoint_host_reserve_mb(void);

/* Loads NVML from library (a name for dlopen, "libnvidia-ml.so.1" in production; the
 * tests pass a stand-in) and initialises it. 0 or -1 with err. */
int collector_nvml_open(const char *library, char *err, size_t err_size);
/* GPU temperature in degrees Celsius, NaN when NVML is not open or cannot tell. The
 * device is found by its UUID (as cuDeviceGetUuid gives it), never by its index: CUDA's
 * ordinals follow CUDA_VISIBLE_DEVICES, NVML's do not. */
double collector_nvml_temperature(const char *uuid);

/* What NVML says of a device around a run; NaN (STATS_THROTTLE_UNKNOWN) when unknown. */
struct collector_nvml_sample {
	double temperature_c;
	double memory_clock_hz;      /* COLLECTOR_NVML_BEFORE only */
	double sm_clock_hz;          /* COLLECTOR_NVML_BEFORE only */
	double power_w;              /* COLLECTOR_NVML_AFTER only */
	uint64_t throttle;           /* active clocks-event reasons, STATS_THROTTLE_* bits */
};
enum collector_nvml_when {
	COLLECTOR_NVML_BEFORE,       /* just before a run is queued: temperature, reasons,
				      * memory and SM clocks */
	COLLECTOR_NVML_AFTER,        /* when a batch's results are decoded: temperature,
				      * reasons, power */
};
/* Reads the sample. Three or four NVML queries (each an ioctl into the driver, tens of
 * microseconds), with the device handle looked up once per device: cheap next to a
 * replay pass, and few enough to take before every run. Any thread: device.c's lock is
 * held to find the device in the handle cache (and to look it up the first time), not
 * across the queries. Returns 0, or -1 with err naming the failed query the first time
 * one fails on this device, in whichever thread meets it first, so that the caller warns
 * once; the fields NVML could not give are NaN either way. Without NVML (not loaded):
 * all unknown, 0 (the load failure was reported). */
int collector_nvml_sample(const char *uuid, enum collector_nvml_when when,
			  struct collector_nvml_sample *out, char *err, size_t err_size);
/* The temperature at which the driver starts slowing the GPU down
 * (NVML_TEMPERATURE_THRESHOLD_SLOWDOWN), NaN when unknown. */
double collector_nvml_slowdown_temperature(const char *uuid);
/* The thermal guard (collector/thermal.h) on this device, with NVML's temperature and
 * slowdown temperature, the monotonic clock and a real sleep. */
struct thermal_params;
struct thermal_wait;
void collector_nvml_thermal_guard(const char *uuid, const struct thermal_params *params,
				  struct thermal_wait *out);
/* Locks the SM clock of the device with this UUID to its base (default applications)
 * clock until collector_clock_restore() - called by this module at exit and on fatal
 * signals, and callable by anyone. Needs root; -1 with err naming what is missing. */
int collector_clock_lock_base(const char *uuid, unsigned *locked_mhz, char *err,
			      size_t err_size);
/* Resets every clock this process locked. Idempotent; async-signal-safe as far as NVML
 * is (it is a few ioctls). */
void collector_clock_restore(void);

#endif
