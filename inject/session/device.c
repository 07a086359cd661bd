/* inject/session/device.c - per device (device.h): the device record, the turn lock opened
 * from the device's UUID (devlock.c), the metric sets built for each --metrics value, NVML
 * and the clock lock. One table. A leaf of inject/'s measuring files.
 * Calls: config.c, devlock.c, output.c, collector/, common/.
 * Called by: session.c, measure.c.
 * Lock: the replay lock; not asserted by: inject_device (a pointer into the table, for
 * session.c's functions, which assert it), inject_devices_clocks_restored (from
 * inject_session_configure: before any callback, or with the lock held),
 * inject_devices_fork_child (in a fork's child, where one thread runs). */
#include "inject/session/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/profiler.h"
#include "collector/records.h"
#include "common/error.h"
#include "common/log.h"
#include "inject/config.h"
#include "inject/session/devlock.h"
#include "inject/output.h"

/* A metric set built for one --metrics value, or why it could not be (a metric the GPU
 * lacks): kept, so that a value the control API sets again costs nothing. */
struct metric_set_entry {
	struct metric_set_entry *next;
	struct collector_metric_set *set;   /* NULL: refused, for error */
	char *error;
	int code;                           /* the refusal's rp_error code, for the report */
	char metrics[];
};

static struct device_state devices[INJECT_MAX_DEVICES];

struct device_state *inject_device(int device)
{
	return device >= 0 && device < INJECT_MAX_DEVICES ? &devices[device] : NULL;
}

void inject_devices_clocks_restored(void)
{
	for (size_t i = 0; i < INJECT_MAX_DEVICES; i++) {
		devices[i].locked_sm_clock_hz = 0;
		devices[i].clock_lock_failed = false;
	}
}

struct device_state *inject_device_known(int device)
{
	INJECT_REPLAY_HELD();
	struct device_state *d = &devices[device];
	if (d->known || d->failed)
		return d->known ? d : NULL;
	char err[2048];
	int rc = collector_device_info(device, &d->info, err, sizeof(err));
	if (rc) {
		d->failed = true;
		inject_output_report(INJECT_REPORT_DEVICE,
				     INJECT_CONCERNS(INJECT_ON_DEVICE(device), .detail = rc), true,
			      "%s; measuring nothing on device %d", err, device);
		return NULL;
	}
	d->known = true;
	inject_output_write_record(collector_record_device(&d->info));
	/* Opened without counting this process as one that measures: the early set-up comes
	 * here too, and a process that never measures must not keep the others' early set-ups
	 * from enabling a profiler (session.c, "alone"). take_turn marks it. */
	if ((rc = inject_devlock_open_absent(d->info.uuid, NULL, &d->turns, err, sizeof(err))))
		inject_output_report(INJECT_REPORT_DEVICE_LOCK_OPEN,
				     INJECT_CONCERNS(INJECT_ON_DEVICE(device), .detail = rc), false,
			      "%s; device %d (%s) is measured without taking turns with other "
			      "processes", err, device, d->info.uuid);
	return d;
}

/* Keeps set, or (set NULL) the refusal err with its code, for the current metrics. */
static struct collector_metric_set *metric_set_keep(struct device_state *d,
						    struct collector_metric_set *set,
						    const char *err, int rc)
{
	size_t len = strlen(inject_config()->metrics);
	struct metric_set_entry *e = calloc(1, sizeof(*e) + len + 1);
	if (!e) {
		collector_metric_set_destroy(set);
		return NULL;
	}
	memcpy(e->metrics, inject_config()->metrics, len + 1);
	e->set = set;
	e->error = set ? NULL : strdup(err);
	e->code = set ? 0 : rc;
	e->next = d->sets;
	d->sets = e;
	return set;
}

/* The device's set for inject_config()->metrics: built at its first use, kept with every other set
 * (the control API changes the metrics between measurements). NULL when the GPU refuses
 * it, said as an error naming the metrics; a busy profiling hardware is tried again. */
static struct collector_metric_set *metric_set(struct device_state *d, CUcontext ctx,
					       int device, void (*release_profilers)(int device))
{
	for (struct metric_set_entry *e = d->sets; e; e = e->next) {
		if (strcmp(e->metrics, inject_config()->metrics))
			continue;
		if (!e->set)
			inject_output_report(INJECT_REPORT_METRIC_SET,
					     INJECT_CONCERNS(INJECT_ON_DEVICE(device),
								    .metric = inject_config()->metrics,
								    .detail = e->code), true,
				      "%s; not measured on device %d (%s), the application runs on",
				      e->error, device, d->info.name);
		return e->set;
	}
	char err[2048];
	struct collector_metric_set *set = NULL;
	d->busy = false;
	/* CUPTI answers the counter availability query only while no range profiler is
	 * enabled in the context (CUPTI_ERROR_INVALID_PARAMETER otherwise: H200,
	 * tests/gpu/check_control.py early; doc/measurements.md, "Control API"); a new set
	 * gets a new profiler anyway. */
	release_profilers(device);
	int rc = collector_metric_set_create(ctx, device, inject_config()->metrics, &set, err,
					     sizeof(err));
	if (rc) {
		/* Another profiler (another process without rangeprof's turns, ncu) holds the
		 * hardware now; it may let go: the caller waits (wait_out_busy) and says so if
		 * it gives up. */
		if ((d->busy = rc == RP_ERR_HARDWARE_BUSY))
			return NULL;
		inject_output_report(INJECT_REPORT_METRIC_SET,
				     INJECT_CONCERNS(INJECT_ON_DEVICE(device),
					    .metric = inject_config()->metrics, .detail = rc),
			      true, "%s; not measured on device %d (%s), the application runs on",
			      err, device, d->info.name);
		set = NULL;
	}
	return metric_set_keep(d, set, err, rc);
}

/* The host half ahead of a context (device.h): rangeprof_prepare's thread runs it while
 * another of its threads makes the primary context, ~0.2 s on the H200, of which this
 * takes CUPTI's profiler initialisation and the host object, ~0.1 s (the `setup` record's
 * part, doc/measurements.md, "Cost at the physical floor"). No profiler is enabled on a
 * device without a set, so there is none to release. */
void inject_device_prepare_host(int device)
{
	INJECT_REPLAY_HELD();
	/* A clock lock is asked for (the control API may set it after start-up): the set-up
	 * with the context makes it first, so nothing of the device is done here. */
	if (inject_config()->clock_control == RP_CLOCK_BASE)
		return;
	struct device_state *d = inject_device_known(device);
	if (!d || d->sets)
		return;
	char err[2048];
	/* Its failure is said, once, by inject_device_ready's own call. */
	collector_nvml_open("libnvidia-ml.so.1", err, sizeof(err));
	struct collector_metric_set *set = NULL;
	if (!collector_metric_set_create_by_name(device, inject_config()->metrics, &set, err,
						 sizeof(err)))
		metric_set_keep(d, set, NULL, 0);
}

struct device_state *inject_device_ready(CUcontext ctx, int device,
					 void (*release_profilers)(int device))
{
	INJECT_REPLAY_HELD();
	struct device_state *d = inject_device_known(device);
	if (!d || d->failed)
		return NULL;
	char err[2048];
	if (!d->ready) {
		char nvml_err[512];
		int rc = collector_nvml_open("libnvidia-ml.so.1", nvml_err, sizeof(nvml_err));
		if (rc)
			inject_output_report(INJECT_REPORT_NVML,
				     INJECT_CONCERNS(INJECT_ON_DEVICE(device), .detail = rc), false,
				      "%s; temperatures, clocks-event reasons, memory clock and "
				      "power will be null, and there are no thermal waits", nvml_err);
		d->ready = true;
	}
	if (!(d->set = metric_set(d, ctx, device, release_profilers)))
		return NULL;
	if (inject_config()->clock_control == RP_CLOCK_BASE && !d->locked_sm_clock_hz) {
		unsigned mhz;
		/* Tried once while base is asked for: the lock needs privileges that do not
		 * come later. Launches are not measured until clock control is none again. */
		if (d->clock_lock_failed ||
		    collector_clock_lock_base(d->info.uuid, &mhz, err, sizeof(err))) {
			if (!d->clock_lock_failed)
				inject_output_report(INJECT_REPORT_CLOCK,
						     INJECT_CONCERNS(INJECT_ON_DEVICE(device),
								       .option = "--clock-control"), true,
					      "%s; measuring nothing on device %d", err, device);
			d->clock_lock_failed = true;
			return NULL;
		}
		rp_log_progress("device %d: SM clock locked to base %u MHz until exit", device, mhz);
		d->locked_sm_clock_hz = mhz * 1e6;
	}
	return d;
}

void inject_devices_fork_child(void)
{
	for (int i = 0; i < INJECT_MAX_DEVICES; i++) {
		inject_devlock_forget(devices[i].turns);
		devices[i].turns = NULL;
		devices[i].watching = false; /* the watcher thread stayed in the parent */
	}
}
