/* inject/session/device.h - per device: its description (the device record), its turn lock, its
 * metric sets and its clock lock (device.c). Touched under the replay lock only. */
#ifndef INJECT_DEVICE_H
#define INJECT_DEVICE_H

#include <cuda.h>
#include <stdbool.h>

#include "collector/device.h"
#include "inject/rangeprof_control.h"

#define INJECT_MAX_DEVICES RANGEPROF_MAX_DEVICES /* the control API's bound, one fact */

struct collector_metric_set;
struct metric_set_entry;

struct device_state {
	bool known, ready, failed;
	struct collector_device_info info;
	struct inject_devlock *turns;     /* NULL: taking turns is not possible here */
	/* The set for the --metrics in force (the control API may change it between
	 * measurements), and every set built so far. */
	struct collector_metric_set *set;
	struct metric_set_entry *sets;
	double locked_sm_clock_hz;        /* --clock-control base: what was locked; 0: none */
	bool clock_lock_failed;           /* base was refused (no privileges) */
	bool watching;                    /* the doorbell's watcher is started (devlock.h) */
	bool busy;                        /* the last metric set found the hardware busy */
};

/* The device's description and its turn lock: no profiler call, so that it can come
 * before the turn. NULL when the device cannot be described. */
struct device_state *inject_device_known(int device);
/* The profiler part of a device: NVML, the metric set and the clock lock. Called with the
 * turn held. NULL when the launch cannot be measured on it now; d->busy then says whether
 * the profiling hardware was busy (worth waiting for). A set not built yet needs no range
 * profiler enabled in this process on the device: release_profilers(device) is called
 * first. */
struct device_state *inject_device_ready(CUcontext ctx, int device,
					 void (*release_profilers)(int device));
/* The host half of the device's set-up, before any context of it exists: the device's
 * record and turn lock (inject_device_known), NVML and, for a set built by chip name (the
 * timer alone), the current metrics' set, so that the set-up after the context's creation
 * starts at the profiler. Does nothing under a clock lock, and keeps no set on a device
 * that has one already; a set it cannot build is not kept and nothing is said (the set-up
 * with the context builds it and says what it meets), though CUPTI and NVML stay
 * initialised. */
void inject_device_prepare_host(int device);
/* The device's state, or NULL when device is out of range. */
struct device_state *inject_device(int device);
/* The clock lock was turned off by the control API: nothing is locked any more. */
void inject_devices_clocks_restored(void);
/* In a child forked without exec: lets go of the device locks. */
void inject_devices_fork_child(void);

#endif
