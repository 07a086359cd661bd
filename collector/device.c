/* collector/device.c - device attributes for the device record, and NVML for what each
 * run records (temperatures, clocks-event reasons, memory clock, power), the thermal
 * guard's temperatures and clock locking. NVML is loaded with dlopen: its header exists
 * only on GPU machines, so the few declarations we need are written here.
 * Owns the NVML state - the loaded function table and nvml_ready, the handle cache
 * (nvml_known) and the list of locked clocks - under its own lock, nvml_lock, so that any
 * thread may call it whatever its caller holds. The lock is held to load NVML, to find or
 * add a device (one handle lookup per device) and to lock a clock, never across the
 * per-run queries: NVML is thread-safe, and a thermal guard's wait must not hold up
 * another device's samples. The restore paths (exit, fatal signals) take no lock, which
 * a signal handler must not: they read the locked list through locked_count, published
 * after each entry is written.
 * Calls: api.c (the driver), thermal.c (libc and libdl besides).
 * Called by: inject/.
 * Lock: nvml_lock (the NVML state), restoring (an atomic_flag: one restore at a time, on
 * the paths that may run in a signal handler). */
#include "collector/device.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/api.h"
#include "collector/stats.h"
#include "collector/thermal.h"
#include "common/lock.h"

int collector_device_info(int index, struct collector_device_info *info, char *err,
			  size_t err_size)
{
	memset(info, 0, sizeof(*info));
	info->index = index;
	CUdevice dev;
	CUresult r = rp_api.cuDeviceGet(&dev, index);
	if (r != CUDA_SUCCESS) {
		snprintf(err, err_size, "cuDeviceGet(%d): %s", index, collector_cu_error(r));
		return -1;
	}
	rp_api.cuDeviceGetName(info->name, sizeof(info->name), dev);
	CUuuid uuid;
	if (rp_api.cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) {
		const unsigned char *b = (const unsigned char *)uuid.bytes;
		snprintf(info->uuid, sizeof(info->uuid),
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
			 b[12], b[13], b[14], b[15]);
	}
	int v = 0;
	rp_api.cuDeviceGetAttribute(&info->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	rp_api.cuDeviceGetAttribute(&info->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	rp_api.cuDeviceGetAttribute(&info->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
	if (rp_api.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev) == CUDA_SUCCESS)
		info->l2_bytes = v;
	info->rated_sm_clock_hz = NAN;
	info->rated_memory_clock_hz = NAN;
	if (rp_api.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev) == CUDA_SUCCESS)
		info->rated_sm_clock_hz = v * 1e3; /* the attribute is in kHz */
	if (rp_api.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev) ==
	    CUDA_SUCCESS)
		info->rated_memory_clock_hz = v * 1e3;
	rp_api.cuDriverGetVersion(&info->driver_version);
	return 0;
}

size_t collector_checkpoint_host_reserve_mb(void)
{
	/* A quarter of the machine's memory, at least 2 GiB, stays out of the checkpoint's
	 * reach: without a reserve CUPTI spilled the checkpoint of 138 GiB held on the H200
	 * into host memory until the kernel's OOM killer ended the application; with it the
	 * application ran to its end (tests/gpu/oom.cu: doc/measurements.md, "Held memory,
	 * save and reach"). */
	size_t total_kb = 0;
	FILE *f = fopen("/proc/meminfo", "r");
	if (f) {
		char line[128];
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "MemTotal: %zu kB", &total_kb) == 1)
				break;
		fclose(f);
	}
	size_t quarter_mb = total_kb / 1024 / 4;
	return quarter_mb > 2048 ? quarter_mb : 2048;
}

/* ------------------------------------------------------------------------------------ */
/* NVML                                                                                 */
/* ------------------------------------------------------------------------------------ */

typedef struct nvml_device *nvml_device_t;
enum { NVML_OK = 0, NVML_NO_PERMISSION = 4 };
enum { NVML_TEMPERATURE_GPU = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1 };

static struct {
	int (*init)(void);
	const char *(*error_string)(int);
	int (*handle_by_uuid)(const char *, nvml_device_t *);
	int (*temperature)(nvml_device_t, int, unsigned *);
	int (*temperature_threshold)(nvml_device_t, int, unsigned *);
	int (*clock_info)(nvml_device_t, int, unsigned *);
	int (*power_usage)(nvml_device_t, unsigned *);
	int (*clock_reasons)(nvml_device_t, unsigned long long *);
	const char *clock_reasons_name;
	int (*default_app_clock)(nvml_device_t, int, unsigned *);
	int (*set_locked)(nvml_device_t, unsigned, unsigned);
	int (*reset_locked)(nvml_device_t);
} nvml;                               /* written under nvml_lock before nvml_ready */
static bool nvml_ready;                 /* under nvml_lock */
static struct rp_lock nvml_lock = RP_LOCK_INITIALIZER("nvml_lock");

/* Devices by UUID, looked up once: nvmlDeviceGetHandleByUUID walks every GPU. An entry's
 * uuid and handle are written under nvml_lock when it is added and never change, so a
 * caller that found it under the lock reads them without. */
#define MAX_NVML_DEVICES 64
static struct nvml_known {
	char uuid[96];
	nvml_device_t handle;        /* NULL: not found */
	atomic_bool warned;          /* a failed query was reported for this device */
} nvml_known[MAX_NVML_DEVICES];
static int nvml_known_count;            /* under nvml_lock */

/* Appended under nvml_lock; read without it by collector_clock_restore. */
#define MAX_LOCKED 64
static nvml_device_t locked[MAX_LOCKED];
static atomic_int locked_count;
static atomic_flag restoring = ATOMIC_FLAG_INIT;
static struct sigaction previous[32];

/* collector_nvml_open with nvml_lock held. */
static int nvml_open_locked(const char *library, char *err, size_t err_size)
{
	rp_lock_held(&nvml_lock);
	if (nvml_ready)
		return 0;
	void *h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, err_size, "cannot load NVML '%s': %s", library, dlerror());
		return -1;
	}
	nvml.init = (int (*)(void))dlsym(h, "nvmlInit_v2");
	nvml.error_string = (const char *(*)(int))dlsym(h, "nvmlErrorString");
	nvml.handle_by_uuid = (int (*)(const char *, nvml_device_t *))dlsym(h, "nvmlDeviceGetHandleByUUID");
	nvml.temperature = (int (*)(nvml_device_t, int, unsigned *))dlsym(h, "nvmlDeviceGetTemperature");
	nvml.temperature_threshold = (int (*)(nvml_device_t, int, unsigned *))dlsym(
		h, "nvmlDeviceGetTemperatureThreshold");
	nvml.clock_info = (int (*)(nvml_device_t, int, unsigned *))dlsym(h, "nvmlDeviceGetClockInfo");
	nvml.power_usage = (int (*)(nvml_device_t, unsigned *))dlsym(h, "nvmlDeviceGetPowerUsage");
	/* Drivers from 535 on call them clocks-event reasons; older ones only have the
	 * throttle-reasons name for the same bits. */
	nvml.clock_reasons_name = "nvmlDeviceGetCurrentClocksEventReasons";
	nvml.clock_reasons = (int (*)(nvml_device_t, unsigned long long *))dlsym(
		h, nvml.clock_reasons_name);
	if (!nvml.clock_reasons) {
		nvml.clock_reasons_name = "nvmlDeviceGetCurrentClocksThrottleReasons";
		nvml.clock_reasons = (int (*)(nvml_device_t, unsigned long long *))dlsym(
			h, nvml.clock_reasons_name);
	}
	nvml.default_app_clock = (int (*)(nvml_device_t, int, unsigned *))dlsym(
		h, "nvmlDeviceGetDefaultApplicationsClock");
	nvml.set_locked = (int (*)(nvml_device_t, unsigned, unsigned))dlsym(
		h, "nvmlDeviceSetGpuLockedClocks");
	nvml.reset_locked = (int (*)(nvml_device_t))dlsym(h, "nvmlDeviceResetGpuLockedClocks");
	if (!nvml.init || !nvml.handle_by_uuid) {
		snprintf(err, err_size, "'%s' is not NVML: nvmlInit_v2 missing", library);
		return -1;
	}
	int r = nvml.init();
	if (r != NVML_OK) {
		snprintf(err, err_size, "nvmlInit: %s", nvml.error_string ? nvml.error_string(r) : "failed");
		return -1;
	}
	nvml_ready = true;
	return 0;
}

int collector_nvml_open(const char *library, char *err, size_t err_size)
{
	/* Held across dlopen and nvmlInit: once per process, and two threads opening at once
	 * must not both fill the table. */
	rp_lock(&nvml_lock);
	int rc = nvml_open_locked(library, err, err_size);
	rp_unlock(&nvml_lock);
	return rc;
}

static const char *nvml_error(int r)
{
	return nvml.error_string ? nvml.error_string(r) : "NVML error";
}

/* The device of uuid, looked up at its first use; NULL when NVML is not loaded, and an
 * entry without a handle when NVML does not know the device (a MIG instance, a UUID NVML
 * spells differently). *lookup_result is NVML's answer when this call looked the device
 * up, NVML_OK otherwise. Any thread: the search and the first lookup run under nvml_lock,
 * so that two threads sampling a new device at once look it up once and neither sees the
 * entry before its handle is set. Once found, the entry's uuid and handle do not change,
 * and the NVML table was written before nvml_ready: the caller uses them unlocked. */
static struct nvml_known *nvml_device(const char *uuid, int *lookup_result)
{
	*lookup_result = NVML_OK;
	if (!uuid)
		return NULL;
	struct nvml_known *k = NULL;
	rp_lock(&nvml_lock);
	if (!nvml_ready)
		goto out;
	for (int i = 0; i < nvml_known_count; i++) {
		if (!strcmp(nvml_known[i].uuid, uuid)) {
			k = &nvml_known[i];
			goto out;
		}
	}
	if (nvml_known_count == MAX_NVML_DEVICES)
		goto out;
	k = &nvml_known[nvml_known_count];
	snprintf(k->uuid, sizeof(k->uuid), "%s", uuid);
	nvml_device_t h = NULL;
	*lookup_result = nvml.handle_by_uuid(uuid, &h);
	k->handle = *lookup_result == NVML_OK ? h : NULL;
	/* Counted only now: a search never meets a half-made entry. */
	nvml_known_count++;
out:
	rp_unlock(&nvml_lock);
	return k;
}

double collector_nvml_temperature(const char *uuid)
{
	int lookup;
	struct nvml_known *k = nvml_device(uuid, &lookup);
	unsigned t;
	if (!k || !k->handle || !nvml.temperature ||
	    nvml.temperature(k->handle, NVML_TEMPERATURE_GPU, &t) != NVML_OK)
		return NAN;
	return t;
}

double collector_nvml_slowdown_temperature(const char *uuid)
{
	int lookup;
	struct nvml_known *k = nvml_device(uuid, &lookup);
	unsigned t;
	if (!k || !k->handle || !nvml.temperature_threshold ||
	    nvml.temperature_threshold(k->handle, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &t) !=
	    NVML_OK)
		return NAN;
	return t;
}

/* Notes the first failure of a device for the caller's one warning: of the threads that
 * meet failures on the device, the one that sets warned first says it. */
static void sample_failed(struct nvml_known *k, int *rc, const char *call, int r, char *err,
			  size_t err_size)
{
	if (*rc || atomic_exchange(&k->warned, true))
		return;
	*rc = -1;
	if (r == NVML_OK)
		snprintf(err, err_size, "%s is not in this NVML", call);
	else
		snprintf(err, err_size, "%s(%s): %s", call, k->uuid, nvml_error(r));
}

int collector_nvml_sample(const char *uuid, enum collector_nvml_when when,
			  struct collector_nvml_sample *out, char *err, size_t err_size)
{
	*out = (struct collector_nvml_sample){ NAN, NAN, NAN, NAN, STATS_THROTTLE_UNKNOWN };
	int lookup, rc = 0, r;
	struct nvml_known *k = nvml_device(uuid, &lookup);
	if (!k)
		return 0;
	if (!k->handle) {
		sample_failed(k, &rc, "nvmlDeviceGetHandleByUUID", lookup, err, err_size);
		return rc;
	}
	unsigned v = 0;
	if (!nvml.temperature)
		sample_failed(k, &rc, "nvmlDeviceGetTemperature", NVML_OK, err, err_size);
	else if ((r = nvml.temperature(k->handle, NVML_TEMPERATURE_GPU, &v)) == NVML_OK)
		out->temperature_c = v;
	else
		sample_failed(k, &rc, "nvmlDeviceGetTemperature", r, err, err_size);
	unsigned long long reasons = 0;
	if (!nvml.clock_reasons)
		sample_failed(k, &rc, "nvmlDeviceGetCurrentClocksEventReasons", NVML_OK, err,
			      err_size);
	else if ((r = nvml.clock_reasons(k->handle, &reasons)) == NVML_OK)
		out->throttle = reasons;
	else
		sample_failed(k, &rc, nvml.clock_reasons_name, r, err, err_size);
	if (when == COLLECTOR_NVML_BEFORE) {
		if (!nvml.clock_info)
			sample_failed(k, &rc, "nvmlDeviceGetClockInfo", NVML_OK, err, err_size);
		else if ((r = nvml.clock_info(k->handle, NVML_CLOCK_MEM, &v)) == NVML_OK)
			out->memory_clock_hz = v * 1e6; /* MHz */
		else
			sample_failed(k, &rc, "nvmlDeviceGetClockInfo", r, err, err_size);
		/* The run's SM clock when the metric set has no counter for it (profiler.h). */
		if (nvml.clock_info && (r = nvml.clock_info(k->handle, NVML_CLOCK_SM, &v)) == NVML_OK)
			out->sm_clock_hz = v * 1e6;
	} else {
		if (!nvml.power_usage)
			sample_failed(k, &rc, "nvmlDeviceGetPowerUsage", NVML_OK, err, err_size);
		else if ((r = nvml.power_usage(k->handle, &v)) == NVML_OK)
			out->power_w = v / 1e3; /* milliwatts */
		else
			sample_failed(k, &rc, "nvmlDeviceGetPowerUsage", r, err, err_size);
	}
	return rc;
}

static double guard_temperature(void *arg)
{
	return collector_nvml_temperature(arg);
}

static double guard_now(void *arg)
{
	(void)arg;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void guard_sleep(void *arg, double seconds)
{
	(void)arg;
	struct timespec t = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
	/* A signal to the application must not cut the wait short into a measurement. */
	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

void collector_nvml_thermal_guard(const char *uuid, const struct thermal_params *params,
				  struct thermal_wait *out)
{
	struct thermal_params p = *params;
	if (p.mode != RP_THERMAL_OFF)
		p.slowdown_c = collector_nvml_slowdown_temperature(uuid);
	struct thermal_source src = { guard_temperature, guard_now, guard_sleep, (void *)uuid };
	thermal_guard(&p, &src, out);
}

void collector_clock_restore(void)
{
	/* Once at a time: a signal arriving during the atexit restore must not reset twice
	 * concurrently; the second caller finds the list empty. */
	if (atomic_flag_test_and_set(&restoring))
		return;
	int n = atomic_exchange(&locked_count, 0);
	for (int i = 0; i < n; i++)
		if (nvml.reset_locked)
			nvml.reset_locked(locked[i]);
	atomic_flag_clear(&restoring);
}

/* Restores the clocks, then hands the signal on as if we had not been here: the
 * application's own action is put back for good (its handler, ignoring, or the default)
 * and gets this signal, so a later one goes straight to it, as without rangeprof. */
static void on_fatal_signal(int sig, siginfo_t *info, void *context)
{
	collector_clock_restore();
	if (sig <= 0 || sig >= 32) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	const struct sigaction *prev = &previous[sig];
	sigaction(sig, prev, NULL);
	if (prev->sa_flags & SA_SIGINFO) {
		if (prev->sa_sigaction)
			prev->sa_sigaction(sig, info, context);
		return;
	}
	if (prev->sa_handler == SIG_IGN)
		return;
	if (prev->sa_handler != SIG_DFL) {
		prev->sa_handler(sig);
		return;
	}
	/* The default action ends the process with this signal (SA_NODEFER: not blocked). */
	raise(sig);
}

/* With nvml_lock held (installed is under it). */
static void install_restore_paths(void)
{
	rp_lock_held(&nvml_lock);
	static bool installed;
	if (installed)
		return;
	installed = true;
	atexit(collector_clock_restore);
	static const int signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV,
				       SIGBUS, SIGFPE, SIGILL };
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_fatal_signal;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		sigaction(signals[i], &sa, &previous[signals[i]]);
	}
}

/* collector_clock_lock_base with nvml_lock held. */
static int clock_lock_base_locked(const char *uuid, unsigned *locked_mhz, char *err,
				  size_t err_size)
{
	rp_lock_held(&nvml_lock);
	nvml_device_t dev;
	unsigned mhz = 0;
	int r;
	if (!nvml_ready || !nvml.set_locked || !nvml.reset_locked || !nvml.default_app_clock) {
		snprintf(err, err_size, "--clock-control 'base': NVML with clock locking is not "
			 "available");
		return -1;
	}
	if ((r = nvml.handle_by_uuid(uuid, &dev)) != NVML_OK ||
	    (r = nvml.default_app_clock(dev, NVML_CLOCK_SM, &mhz)) != NVML_OK) {
		snprintf(err, err_size, "--clock-control 'base': cannot read the base clock of %s: %s",
			 uuid, nvml.error_string ? nvml.error_string(r) : "NVML error");
		return -1;
	}
	if (atomic_load(&locked_count) >= MAX_LOCKED) {
		snprintf(err, err_size, "--clock-control 'base': too many devices");
		return -1;
	}
	/* The restore paths exist before the clock changes, never after. */
	install_restore_paths();
	if ((r = nvml.set_locked(dev, mhz, mhz)) != NVML_OK) {
		snprintf(err, err_size, "--clock-control 'base': nvmlDeviceSetGpuLockedClocks(%u MHz): "
			 "%s%s", mhz, nvml.error_string ? nvml.error_string(r) : "NVML error",
			 r == NVML_NO_PERMISSION ? "; locking clocks needs root; use "
			 "--clock-control none" : "");
		return -1;
	}
	/* The entry first, then the count that makes a restore read it: a signal arriving in
	 * between finds the list without it, never a slot not yet written. A restore that
	 * emptied the list meanwhile makes this the first entry again. */
	int n = atomic_load(&locked_count);
	do
		locked[n] = dev;
	while (!atomic_compare_exchange_weak(&locked_count, &n, n + 1));
	*locked_mhz = mhz;
	return 0;
}

int collector_clock_lock_base(const char *uuid, unsigned *locked_mhz, char *err,
			      size_t err_size)
{
	/* Held across NVML's lock call: once per device, and two threads locking at once
	 * must not both install the restore paths or write the same slot. */
	rp_lock(&nvml_lock);
	int rc = clock_lock_base_locked(uuid, locked_mhz, err, err_size);
	rp_unlock(&nvml_lock);
	return rc;
}
