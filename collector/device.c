/* collector/device.c - device attributes for the device record, and NVML for temperature
 * and clock locking. NVML is loaded with dlopen: its header exists only on GPU machines,
 * so the few declarations we need are written here. Calls the driver via collector/api,
 * libc and libdl. */
#include "collector/device.h"

#include <dlfcn.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"

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
	 * reach: without a reserve CUPTI spilled a 138 GB device image into host memory until
	 * the kernel killed the application (tests/gpu/oom.cu on the H200). */
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
enum { NVML_TEMPERATURE_GPU = 0, NVML_CLOCK_SM = 1 };

static struct {
	int (*init)(void);
	const char *(*error_string)(int);
	int (*handle_by_uuid)(const char *, nvml_device_t *);
	int (*temperature)(nvml_device_t, int, unsigned *);
	int (*default_app_clock)(nvml_device_t, int, unsigned *);
	int (*set_locked)(nvml_device_t, unsigned, unsigned);
	int (*reset_locked)(nvml_device_t);
} nvml;
static bool nvml_ready;

#define MAX_LOCKED 64
static nvml_device_t locked[MAX_LOCKED];
static atomic_int locked_count;
static atomic_flag restoring = ATOMIC_FLAG_INIT;
static struct sigaction previous[32];

int collector_nvml_open(const char *library, char *err, size_t err_size)
{
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

double collector_nvml_temperature(const char *uuid)
{
	nvml_device_t dev;
	unsigned t;
	if (!nvml_ready || !nvml.temperature || nvml.handle_by_uuid(uuid, &dev) != NVML_OK ||
	    nvml.temperature(dev, NVML_TEMPERATURE_GPU, &t) != NVML_OK)
		return NAN;
	return t;
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

static void install_restore_paths(void)
{
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

int collector_clock_lock_base(const char *uuid, unsigned *locked_mhz, char *err,
			      size_t err_size)
{
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
	locked[atomic_fetch_add(&locked_count, 1)] = dev;
	*locked_mhz = mhz;
	return 0;
}
