/* collector/device.h - what the device record says of a device, from the driver; and
 * NVML (dlopen) for temperature and the base-clock lock. Called by inject/ at the first
 * selected launch on a device, and by the lock's restore paths at exit and on signals. */
#ifndef COLLECTOR_DEVICE_H
#define COLLECTOR_DEVICE_H

#include <stddef.h>

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
/* GPU temperature in degrees Celsius, NaN when NVML is not open or cannot tell. */
double collector_nvml_temperature(const char *uuid);
/* Locks the SM clock of the device with this UUID to its base (default applications)
 * clock until collector_clock_restore() - called by this module at exit and on fatal
 * signals, and callable by anyone. Needs root; -1 with err naming what is missing. */
int collector_clock_lock_base(const char *uuid, unsigned *locked_mhz, char *err,
			      size_t err_size);
/* Resets every clock this process locked. Idempotent; async-signal-safe as far as NVML
 * is (it is a few ioctls). */
void collector_clock_restore(void);

#endif
