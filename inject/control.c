/* inject/control.c - the control API (rangeprof_control.h, doc/control-api.md): the entry
 * points a process that loaded the library calls to drive it at run time. Owns the
 * open annotations' names and NVTX ranges and the capture buffer, each under its own lock
 * below; options go to init.c, which owns them, and the gate (controlled, how many
 * annotations are open) is select.c's, reached through callback/launch.h. At the top of
 * inject/, beside entry.c. Any thread.
 * Calls: init.c (options), launch.c (the gate, rangeprof_prepare's set-up), early.c (the
 * wait before exit), output.c, nvtx_bridge/.
 * Called by: none (the application, through the control API).
 * Lock: annotations_lock (the open annotations), capture_lock (the capture buffer),
 * prepare_lock (rangeprof_prepare's threads and what they found). */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "common/error.h"
#include "common/join.h"
#include "inject/callback/launch.h"
#include "inject/early.h"
#include "inject/inject.h"
#include "inject/output.h"
#include "inject/rangeprof_control.h"
#include "nvtx_bridge/nvtx_bridge.h"

RP_EXPORT int rangeprof_control_version(void);
RP_EXPORT int rangeprof_attach(void);
RP_EXPORT char *rangeprof_info(void);
RP_EXPORT int rangeprof_set_option(const char *name, const char *value);
RP_EXPORT int rangeprof_annotation_begin(const char *name);
RP_EXPORT int rangeprof_annotation_end(const char *name);
RP_EXPORT int rangeprof_capture_begin(void);
RP_EXPORT char *rangeprof_capture_take(size_t *length);
RP_EXPORT void rangeprof_capture_end(void);
RP_EXPORT void rangeprof_free(void *p);
RP_EXPORT const char *rangeprof_last_error(void);
RP_EXPORT int rangeprof_prepare(int device);
RP_EXPORT void rangeprof_before_exit(void);

/* The annotations' NVTX domain: records name it, and the Python side finds a record's
 * Annotation by it. */
#define ANNOTATION_DOMAIN "rangeprof"

/* rangeprof_attach was called, whatever came of it (info's "attached"). */
static atomic_bool attached;
static atomic_bool late_attach;
/* Open annotations, any thread (select.c keeps the count, which launches read). */
struct annotation {
	struct annotation *next;
	nvtxRangeId_t id;
	char name[];
};
static struct annotation *open_annotations;
static pthread_mutex_t annotations_lock = PTHREAD_MUTEX_INITIALIZER;

/* What records the capture kept, as JSON Lines text. capturing is read without the lock
 * by every record written. */
static atomic_bool capturing;
static char *captured;
static size_t captured_len, captured_cap;
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;

static __thread char last_error[1024];

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return code;
}

static int ok(void)
{
	last_error[0] = '\0';
	return RANGEPROF_OK;
}

/* The output's tap (inject_output_set_tap): a record's line while a capture is on. */
static void keep_line(const char *line, size_t len)
{
	if (!atomic_load_explicit(&capturing, memory_order_relaxed))
		return;
	pthread_mutex_lock(&capture_lock);
	if (atomic_load(&capturing)) {
		if (captured_len + len + 1 > captured_cap) {
			size_t cap = captured_cap ? captured_cap : 1 << 16;
			while (cap < captured_len + len + 1)
				cap *= 2;
			char *grown = realloc(captured, cap);
			if (grown) {
				captured = grown;
				captured_cap = cap;
			}
		}
		/* Out of memory: the line stays in the output file only. */
		if (captured_len + len + 1 <= captured_cap) {
			memcpy(captured + captured_len, line, len);
			captured_len += len;
			captured[captured_len] = '\0';
		}
	}
	pthread_mutex_unlock(&capture_lock);
}

int rangeprof_control_version(void)
{
	return RANGEPROF_CONTROL_VERSION;
}

/* Whether the CUDA driver in this process was initialised already: then it will never
 * call InitializeInjection, and the attach must do what that call does. */
static bool driver_initialised(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (!cuda)
		return false;
	int (*get_count)(int *) = (int (*)(int *))dlsym(cuda, "cuDeviceGetCount");
	int count = 0;
	/* CUDA_ERROR_NOT_INITIALIZED (3) before cuInit, CUDA_SUCCESS after. */
	bool initialised = get_count && get_count(&count) == 0;
	dlclose(cuda);
	return initialised;
}

/* Another tool's injection library named by CUDA_INJECTION64_PATH (ncu and nsys set it
 * for the processes they start): the driver loads that one, never this one. */
static bool other_injection(char *path, size_t size)
{
	const char *named = getenv("CUDA_INJECTION64_PATH");
	Dl_info self;
	char ours[PATH_MAX], theirs[PATH_MAX];
	if (!named || !*named || !dladdr((void *)rangeprof_attach, &self) || !self.dli_fname ||
	    !realpath(self.dli_fname, ours))
		return false;
	if (realpath(named, theirs) && !strcmp(ours, theirs))
		return false;
	snprintf(path, size, "%s", named);
	return true;
}

/* Whether a CUDA driver can be loaded in this process, and why not: libcuda.so.1 is
 * loaded (the application would load it anyway) and asked its version, which needs no
 * cuInit. cuInit itself is left to the application: initialising CUDA at import would
 * make a later fork's child unable to use it. Asked once; the library stays loaded. */
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static char driver_problem[512];     /* what is said ... */
static bool driver_missing;          /* ... and what is decided on */

static void probe_driver(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
	if (!cuda) {
		const char *e = dlerror();
		snprintf(driver_problem, sizeof(driver_problem), "no CUDA driver in this process: "
			 "libcuda.so.1 cannot be loaded (%s)", e ? e : "not found");
		driver_missing = true;
		return;
	}
	int (*version)(int *) = (int (*)(int *))dlsym(cuda, "cuDriverGetVersion");
	int v = 0, rc = version ? version(&v) : -1;
	if (rc != 0) {
		snprintf(driver_problem, sizeof(driver_problem), "the CUDA driver libcuda.so.1 "
			 "does not work here (cuDriverGetVersion: %s %d)",
			 version ? "error" : "missing", rc);
		driver_missing = true;
	}
}

static bool driver_present(char *why, size_t size)
{
	pthread_once(&driver_once, probe_driver);
	if (!driver_missing)
		return true;
	snprintf(why, size, "%s", driver_problem);
	return false;
}

/* Whether this library was preloaded (the launcher, LD_PRELOAD): then its options select
 * launches until the first annotation opens. */
static bool preloaded(void)
{
	Dl_info self;
	char ours[PATH_MAX];
	return dladdr((void *)rangeprof_attach, &self) && self.dli_fname &&
	       realpath(self.dli_fname, ours) && inject_init_preloaded(ours);
}

/* From now on only annotations select launches. */
static void take_control(void)
{
	inject_launch_control();
}

int rangeprof_attach(void)
{
	atomic_store(&attached, true);
	if (!preloaded()) {
		/* Before anything else: children started from now on know that they only
		 * inherited the hooks (inject_init_inherited). */
		inject_init_mark_controller();
		take_control();
	}
	char why[PATH_MAX + 128];
	if (!inject_initialised()) {
		if (driver_initialised()) {
			atomic_store(&late_attach, true);
			inject_init_attached();
			inject_init_late();
		} else if (other_injection(why, sizeof(why))) {
			return fail(RANGEPROF_EUNAVAILABLE, "CUDA_INJECTION64_PATH names another "
				    "tool's library (%s): a profiler such as ncu or nsys runs this "
				    "process, and rangeprof measures nothing", why);
		} else if (!driver_present(why, sizeof(why))) {
			/* Nothing to hook and nothing to refuse: a process without a GPU that
			 * imports rangeprof to read records gets no warning; info says why
			 * nothing is measured. */
			inject_init_attached();
			return ok();
		} else {
			/* The driver calls InitializeInjection at cuInit once the hook names
			 * this library (the constructor set it only when preloaded). */
			Dl_info self;
			char ours[PATH_MAX];
			if (dladdr((void *)rangeprof_attach, &self) && self.dli_fname &&
			    realpath(self.dli_fname, ours))
				setenv("CUDA_INJECTION64_PATH", ours, 0);
			inject_init_attached();
			return ok();
		}
	}
	inject_init_attached();
	if (!inject_init_measuring_possible(why, sizeof(why)))
		return fail(RANGEPROF_EUNAVAILABLE, "%s", why);
	return ok();
}

/* ---- rangeprof_prepare ------------------------------------------------------------- */

/* One thread per device asked for, each short: it starts the driver if nobody has and
 * makes the device's primary context while a second thread does the set-up's host half
 * (prepare_host_run), then hands over to the early set-up's own thread (early.c), which
 * the exit wait covers. Both are joined before exit: by rangeprof_before_exit, and by the
 * handler registered at the first rangeprof_prepare for a program that does not call it. */
/* At most this long, for all the prepare threads together, at rangeprof_before_exit. */
#define PREPARE_EXIT_WAIT_S 5
static pthread_mutex_t prepare_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t prepare_once = PTHREAD_ONCE_INIT;
static pthread_t prepare_threads[RANGEPROF_MAX_DEVICES];
static unsigned prepare_thread_count;
static bool prepare_asked[RANGEPROF_MAX_DEVICES];
/* What each asked device's thread met, for info: "" while it runs. */
static char prepare_result[RANGEPROF_MAX_DEVICES][192];
/* rangeprof_before_exit was called (or this is a forked child): nothing starts any more. */
static atomic_bool prepare_closed;

typedef CUresult (*cu_init_fn)(unsigned int);
typedef CUresult (*cu_device_get_fn)(CUdevice *, int);
typedef CUresult (*cu_retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*cu_set_current_fn)(CUcontext);

static void prepare_said(int device, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void prepare_said(int device, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_lock(&prepare_lock);
	vsnprintf(prepare_result[device], sizeof(prepare_result[device]), fmt, ap);
	pthread_mutex_unlock(&prepare_lock);
	va_end(ap);
}

/* The host half of the device's set-up (launch.c, inject_launch_prepare_host): CUPTI's
 * profiler initialisation and the host object, which need no context, made while
 * prepare_run's thread makes the primary context (~0.1 and ~0.2 s on the H200, one after
 * the other before: doc/measurements.md, "Cost at the physical floor"). prepare_run joins
 * it before the early set-up starts, which then begins at the profiler. */
static bool prepare_stopping(void)
{
	return atomic_load(&prepare_closed);
}

static void *prepare_host_run(void *arg)
{
	inject_launch_prepare_host((int)(intptr_t)arg, prepare_stopping);
	return NULL;
}

/* The driver's own entry points, not rp_api's: rp_api is filled at init, which cuInit
 * below runs (the hook attach set names this library). The primary context is the one
 * the CUDA runtime (PyTorch, CuPy) uses; it stays retained for the process's life, so
 * that the set-up is not lost if the application has not retained it yet. */
static void *prepare_run(void *arg)
{
	int device = (int)(intptr_t)arg;
	if (atomic_load(&prepare_closed)) {
		prepare_said(device, "not started: the process is exiting");
		return NULL;
	}
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cuda) {
		prepare_said(device, "libcuda.so.1 cannot be loaded: %s", dlerror());
		return NULL;
	}
	cu_init_fn init = (cu_init_fn)dlsym(cuda, "cuInit");
	cu_device_get_fn get = (cu_device_get_fn)dlsym(cuda, "cuDeviceGet");
	cu_retain_fn retain = (cu_retain_fn)dlsym(cuda, "cuDevicePrimaryCtxRetain");
	cu_set_current_fn set_current = (cu_set_current_fn)dlsym(cuda, "cuCtxSetCurrent");
	if (!init || !get || !retain || !set_current) {
		prepare_said(device, "libcuda.so.1 lacks cuInit, cuDeviceGet, "
			     "cuDevicePrimaryCtxRetain or cuCtxSetCurrent");
		return NULL;
	}
	CUdevice dev;
	CUcontext ctx;
	CUresult r;
	const char *step = "cuInit";
	pthread_t host;
	bool host_started = false;
	if ((r = init(0)) == CUDA_SUCCESS && (step = "cuDeviceGet", r = get(&dev, device)) ==
	    CUDA_SUCCESS) {
		/* The host half beside the context's creation (prepare_host_run); it inherits
		 * this thread's mask, every signal blocked. */
		host_started = !atomic_load(&prepare_closed) &&
			       pthread_create(&host, NULL, prepare_host_run,
					      (void *)(intptr_t)device) == 0;
		if ((step = "cuDevicePrimaryCtxRetain", r = retain(&ctx, dev)) == CUDA_SUCCESS)
			step = "cuCtxSetCurrent", r = set_current(ctx);
	}
	if (host_started)
		pthread_join(host, NULL);
	if (r != CUDA_SUCCESS) {
		prepare_said(device, "%s failed (CUDA error %d)%s", step, (int)r,
			     r == CUDA_ERROR_INVALID_DEVICE ? ": no such device in this process" :
			     "");
		return NULL;
	}
	if (atomic_load(&prepare_closed)) {
		prepare_said(device, "the driver started; the set-up not: the process is exiting");
		return NULL;
	}
	switch (inject_launch_prepare(ctx)) {
	case INJECT_EARLY_STARTED:
		prepare_said(device, "set-up started");
		break;
	case INJECT_EARLY_ALREADY:
		prepare_said(device, "set up already, or under way");
		break;
	case INJECT_EARLY_OFF:
		prepare_said(device, "the driver started; no set-up ahead: --setup lazy, a clock "
			     "lock, rangeprof's init did not run in cuInit, or measuring ended "
			     "(rangeprof_info says which)");
		break;
	default:
		prepare_said(device, "the driver started; the set-up thread could not start: the "
			     "first measured launch sets the device up");
		break;
	}
	return NULL; /* the driver stays loaded: the handle is not closed */
}

/* -1: the device of the calling thread's current context, where the driver runs and
 * one is current; else 0, the runtime's default device. -1 for an ordinal past the
 * devices rangeprof_prepare takes. */
static int current_device(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (!cuda)
		return 0;
	CUresult (*get_current)(CUcontext *) =
		(CUresult(*)(CUcontext *))dlsym(cuda, "cuCtxGetCurrent");
	CUresult (*get_device)(CUdevice *) = (CUresult(*)(CUdevice *))dlsym(cuda, "cuCtxGetDevice");
	CUcontext ctx = NULL;
	CUdevice dev = 0;
	int device = 0;
	if (get_current && get_device && get_current(&ctx) == CUDA_SUCCESS && ctx &&
	    get_device(&dev) == CUDA_SUCCESS)
		device = dev >= 0 && dev < RANGEPROF_MAX_DEVICES ? (int)dev : -1;
	dlclose(cuda);
	return device;
}

/* A child forked without exec has none of the parent's prepare threads, and measures
 * nothing (init.c): the lock is made anew, nothing is waited for or started. */
static void prepare_fork_child(void)
{
	pthread_mutex_init(&prepare_lock, NULL);
	prepare_thread_count = 0;
	atomic_store(&prepare_closed, true);
}

/* Also for a program that never calls rangeprof_before_exit: its work at exit, the join of
 * the prepare threads (whose host half runs CUPTI's and libnvperf_host's set-up, which
 * crashed when it ran on into CUDA's teardown: early.c) and of the set-ups. Registered at
 * the first rangeprof_prepare, so it runs before the exit handlers of a CUDA runtime
 * started earlier; one started later runs its own first, as for early.c's handler. */
static void prepare_register_handlers(void)
{
	pthread_atfork(NULL, NULL, prepare_fork_child);
	atexit(rangeprof_before_exit);
}

int rangeprof_prepare(int device)
{
	if (device < -1 || device >= RANGEPROF_MAX_DEVICES)
		return fail(RANGEPROF_EINVAL, "rangeprof_prepare: device %d; accepted: -1 (the "
			    "calling thread's current device, else device 0) or a device ordinal "
			    "from 0 to %d", device, RANGEPROF_MAX_DEVICES - 1);
	if (!atomic_load(&attached))
		return fail(RANGEPROF_EUNAVAILABLE, "rangeprof_prepare: call rangeprof_attach "
			    "first");
	char why[PATH_MAX + 128];
	if (inject_initialised()) {
		if (!inject_init_measuring_possible(why, sizeof(why)))
			return fail(RANGEPROF_EUNAVAILABLE, "%s", why);
	} else if (other_injection(why, sizeof(why))) {
		return fail(RANGEPROF_EUNAVAILABLE, "CUDA_INJECTION64_PATH names another tool's "
			    "library (%s): rangeprof measures nothing", why);
	} else if (!driver_present(why, sizeof(why))) {
		return fail(RANGEPROF_EUNAVAILABLE, "%s", why);
	}
	if (!inject_init_sets_up_early())
		return ok(); /* --setup lazy or --clock-control base: the first measurement does */
	if (device == -1 && (device = current_device()) < 0)
		return ok(); /* a device past those taken: its first measured launch sets it up */
	pthread_once(&prepare_once, prepare_register_handlers);
	pthread_mutex_lock(&prepare_lock);
	if (atomic_load(&prepare_closed) || prepare_asked[device]) {
		pthread_mutex_unlock(&prepare_lock);
		return ok();
	}
	/* The thread inherits this thread's signal mask: with every signal blocked, the
	 * application's handlers keep running on its own threads only (as early.c's). */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&prepare_threads[prepare_thread_count], NULL, prepare_run,
				(void *)(intptr_t)device);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0) {
		prepare_asked[device] = true;
		prepare_result[device][0] = '\0'; /* under way */
		prepare_thread_count++;
	}
	pthread_mutex_unlock(&prepare_lock);
	if (rc)
		return fail(RANGEPROF_ENOMEM, "rangeprof_prepare: no thread for device %d: %s "
			    "(the first measured launch sets it up)", device, strerror(rc));
	return ok();
}

void rangeprof_before_exit(void)
{
	atomic_store(&prepare_closed, true);
	pthread_mutex_lock(&prepare_lock);
	unsigned n = prepare_thread_count;
	prepare_thread_count = 0;
	pthread_mutex_unlock(&prepare_lock);
	rp_join_within(prepare_threads, n, PREPARE_EXIT_WAIT_S);
	/* Then the set-ups those threads (or the application's first allocations) started. */
	inject_early_wait();
}

char *rangeprof_info(void)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	char why[PATH_MAX + 128] = "", path[PATH_MAX];
	bool initialised = inject_initialised();
	bool measuring = true;
	if (initialised)
		measuring = inject_init_measuring_possible(why, sizeof(why));
	else if (other_injection(path, sizeof(path))) {
		measuring = false;
		snprintf(why, sizeof(why), "CUDA_INJECTION64_PATH names another tool's library "
			 "(%s)", path);
	} else
		measuring = driver_present(why, sizeof(why));
	cJSON_AddNumberToObject(o, "control_version", RANGEPROF_CONTROL_VERSION);
	cJSON_AddStringToObject(o, "version", PROJECT_VERSION);
	cJSON_AddBoolToObject(o, "attached", attached);
	cJSON_AddBoolToObject(o, "controlled", inject_launch_controlled());
	cJSON_AddBoolToObject(o, "initialised", initialised);
	pthread_mutex_lock(&prepare_lock);
	cJSON *asked = NULL;
	for (int d = 0; d < RANGEPROF_MAX_DEVICES; d++) {
		if (!prepare_asked[d])
			continue;
		if (!asked && !(asked = cJSON_AddArrayToObject(o, "prepare")))
			break;
		cJSON *p = cJSON_CreateObject();
		if (p) {
			cJSON_AddNumberToObject(p, "device", d);
			cJSON_AddStringToObject(p, "result", prepare_result[d]);
			cJSON_AddItemToArray(asked, p);
		}
	}
	if (!asked)
		cJSON_AddNullToObject(o, "prepare");
	pthread_mutex_unlock(&prepare_lock);
	cJSON_AddBoolToObject(o, "measuring", measuring);
	if (measuring)
		cJSON_AddNullToObject(o, "reason");
	else
		cJSON_AddStringToObject(o, "reason", why);
	cJSON_AddBoolToObject(o, "late_attach", atomic_load(&late_attach));
	cJSON_AddNumberToObject(o, "nvtx_modules", nvtx_bridge_attached_modules());
	cJSON_AddNumberToObject(o, "annotations_open", inject_launch_open_annotations());
	inject_init_describe(o);
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

int rangeprof_set_option(const char *name, const char *value)
{
	if (!name || !value)
		return fail(RANGEPROF_EINVAL, "rangeprof_set_option: a NULL %s",
			    !name ? "option name" : "value");
	char err[2048];
	int rc = inject_init_set_option(name, value, err, sizeof(err));
	if (rc)
		return fail(rc == RP_ERR_NO_MEMORY ? RANGEPROF_ENOMEM : RANGEPROF_EINVAL, "%s",
			    err);
	return ok();
}

int rangeprof_annotation_begin(const char *name)
{
	if (!name || !*name)
		return fail(RANGEPROF_EINVAL, "an annotation needs a non-empty name");
	pthread_mutex_lock(&annotations_lock);
	for (struct annotation *a = open_annotations; a; a = a->next) {
		if (!strcmp(a->name, name)) {
			pthread_mutex_unlock(&annotations_lock);
			return fail(RANGEPROF_ENESTED, "annotation '%.200s' is already open: an "
				    "annotation cannot be nested in itself", name);
		}
	}
	size_t len = strlen(name);
	struct annotation *a = malloc(sizeof(*a) + len + 1);
	nvtxRangeId_t id = a ? nvtx_bridge_own_range_start(ANNOTATION_DOMAIN, name) : 0;
	if (!id) {
		pthread_mutex_unlock(&annotations_lock);
		free(a);
		return fail(RANGEPROF_ENOMEM, "out of memory opening annotation '%.200s'", name);
	}
	a->id = id;
	memcpy(a->name, name, len + 1);
	a->next = open_annotations;
	open_annotations = a;
	take_control();
	inject_launch_annotations_open(1);
	pthread_mutex_unlock(&annotations_lock);
	return ok();
}

int rangeprof_annotation_end(const char *name)
{
	if (!name)
		return fail(RANGEPROF_EINVAL, "rangeprof_annotation_end: a NULL name");
	pthread_mutex_lock(&annotations_lock);
	for (struct annotation **p = &open_annotations; *p; p = &(*p)->next) {
		struct annotation *a = *p;
		if (strcmp(a->name, name))
			continue;
		*p = a->next;
		inject_launch_annotations_open(-1);
		pthread_mutex_unlock(&annotations_lock);
		nvtx_bridge_own_range_end(a->id);
		free(a);
		return ok();
	}
	pthread_mutex_unlock(&annotations_lock);
	return fail(RANGEPROF_ENOTOPEN, "annotation '%.200s' is not open", name);
}

int rangeprof_capture_begin(void)
{
	inject_output_set_tap(keep_line);
	pthread_mutex_lock(&capture_lock);
	captured_len = 0;
	if (captured)
		captured[0] = '\0';
	atomic_store(&capturing, true);
	pthread_mutex_unlock(&capture_lock);
	/* Each capture hears every warning and error that concerns it, though the same
	 * report was said during an earlier one (a metric the GPU lacks, asked again). */
	inject_output_forget_reports();
	return ok();
}

char *rangeprof_capture_take(size_t *length)
{
	pthread_mutex_lock(&capture_lock);
	char *taken = captured_len ? captured : NULL;
	size_t len = captured_len;
	if (taken) {
		captured = NULL;
		captured_len = captured_cap = 0;
	}
	pthread_mutex_unlock(&capture_lock);
	if (length)
		*length = taken ? len : 0;
	ok();
	return taken;
}

void rangeprof_capture_end(void)
{
	pthread_mutex_lock(&capture_lock);
	atomic_store(&capturing, false);
	free(captured);
	captured = NULL;
	captured_len = captured_cap = 0;
	pthread_mutex_unlock(&capture_lock);
	ok();
}

void rangeprof_free(void *p)
{
	free(p);
}

const char *rangeprof_last_error(void)
{
	return last_error;
}
