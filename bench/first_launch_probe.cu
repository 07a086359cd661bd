// bench/first_launch_probe.cu - where the time of a process's first measured launch goes,
// call by call (NVML, cuptiProfilerInitialize, the counter availability query, the host object
// and config image, Enable, a range profiler object's first cuptiRangeProfilerStart), and which
// of it can be moved, shared or paid early. Written in session 3, when the first measured
// launch cost +380-480 ms over later ones against a goal of <= 150 ms.
// Results (H200, session 4, `./first_launch_probe 20`): the first Start 143-153 ms, again for
// every new range profiler object (P1, P2); a zero-kernel pass right after Enable takes it, and
// the next real measurement costs 0.6 ms (P4); cuptiProfilerInitialize 106-115 ms once per
// process; the availability query 135-141 ms (doc/measurements.md, "First Start of a range
// profiler object" and "Host set-up").
// Cited by collector/profiler.h (collector_profiler_warm_up: P4), collector/profiler.c
// (host_create: the availability query) and inject/early.c; its figures stand behind the
// first pass's cost that inject/inject.h, inject/early.c, collector/profiler.c, README.md
// and doc/control-api.md state.
//
// Every call is timed on the host with clock_gettime(CLOCK_MONOTONIC) and printed in ms, one row
// per call, as it happens (a crash or a watchdog still leaves the rows before it). Metric
// gpu__time_duration.sum, one launch of a ~40 us in-place kernel (64 MB of float, x += 1) per
// measured launch, AutoRange + UserReplay, as collector/profiler.c measures.
//
// Parts, each in its own fresh process (this program run again with --part), so that no part
// sees CUPTI state that another one left behind (per-process costs are paid again in each):
//   P1  the first measured launch, call by call, in rangeprof's order: NVML open, then
//       collector_metric_set_create's calls (cuptiProfilerInitialize, cuptiDeviceGetChipName,
//       cuptiProfilerGetCounterAvailability x2, cuptiProfilerHostInitialize, ConfigAddMetrics,
//       GetConfigImageSize + GetConfigImage, GetNumOfPasses, GetMetricProperties for the unit),
//       then cuptiRangeProfilerEnable, then measured launches #1, #2 and #3 (GetCounterDataSize,
//       CounterDataImageInitialize, SetConfig, Start, launch, cuCtxSynchronize, Stop, DecodeData,
//       GetCounterDataInfo + evaluate). Why: the breakdown of NOTES.md was of rangeprof's cost
//       buckets; this names the calls inside them.
//   P2  (same process as P1, after it) per process or per context? A second context
//       (cuCtxCreate) on the same device; the first context's range profiler disabled (one
//       context's profiler at a time per device, NOTES.md); Enable, SetConfig and the first
//       Start there (with P1's config image); then, that profiler disabled, the host object
//       created again for the new context (is anything cached per process? are the
//       availability and config images the same bytes, so that they could be reused?). Then
//       the second context destroyed and, back on the first context, a new range profiler
//       object (Enable again) and its first Start: is the first-Start cost per context, or
//       per profiler object?
//   P3  can the host-only set-up run on a helper pthread while the application's thread keeps
//       launching? The helper makes cuptiProfilerInitialize .. GetMetricProperties (counter
//       availability for the main thread's context included); meanwhile the main thread launches
//       an empty kernel in batches of 2000 (each launch timed) until the helper is done. Compared
//       with batches of the same launches alone, before and after. Then the main thread enables
//       the range profiler and measures: is its first Start still ~150-200 ms?
//   P4  can the first-Start cost be paid by a warm-up Start/Stop with ZERO kernels right after
//       Enable + SetConfig, so that the first real measurement is cheap? And what does an idle
//       range profiler cost ordinary launches: 2000 empty launches (us/launch, as stop_probe E)
//       with no profiler, after host set-up only, Enabled, Enabled + SetConfig (never started),
//       after the warm-up, and Disabled again; finally Enable again and measure (does a new
//       object on a warmed context pay the first Start again?).
//   P5  (issue 35 item 6) what an idle range profiler costs ordinary launches once a real
//       measurement was made: as rangeprof leaves it (decoded, its AutoRange config set), and
//       after an empty pass made as the library's warm-up makes it (image initialised,
//       SetConfig, Start/Stop with no kernel, Decode), which P4 found cheaper than a set,
//       never-started config; then a measurement after it (its value beside #1's), its
//       launch cost, and Disabled. (An object keeps the range mode of its first SetConfig,
//       collector/profiler.h: an idle UserRange state would need a new object, whose first
//       Start is the cost being avoided.)
//   P6  (issue 35 item 6) the same idle object against a disabled one, paired: rounds of a
//       new object, a measurement (its first Start), launches while it idles, Disable,
//       launches; the median of the rounds' differences. A disabled object between
//       measurements would cost each next one a new object's first Start, ~145 ms (P1).
//   P7  (issue 35 item 3) which call of the warm-up pass grows with the counter data's ranges
//       (2, 24, 48, 100; as many range tree nodes), each size on a new object, and the first
//       real measurement after it (half the ranges in kernels).
//   P8  (issue 35 item 3) does a warm-up pass on another thread hold up the application's
//       own CUDA calls (an empty launch, a 2 MB cudaMalloc + cudaFree, in turn), with and
//       without a CUPTI subscriber on the driver API?
//
// Every CUDA driver, runtime and CUPTI call is checked: an error prints the call and its error
// string and ends that part only (the next part runs in its own process). A watchdog ends a
// part that hangs, naming the step; a crash handler names the step a crash happened in. The
// driver is loaded with dlopen (no link-time libcuda dependency), so where there is no driver
// or GPU the probe prints one line and exits 1.
//
// Build (no GPU needed): meson setup build-bench -Dbench=true && meson compile -C build-bench
// bench, giving build-bench/bench/first_launch_probe; or by hand, in one line (no -lcuda: the
// driver is dlopen'ed):
//   nvcc -O2 -arch=sm_90 -std=c++17 bench/first_launch_probe.cu -o first_launch_probe -lcupti
//     -L/usr/local/cuda/lib64 -I/usr/local/cuda/include -Xlinker -rpath=/usr/local/cuda/lib64
// Run, on the GPU machine:
//   ./first_launch_probe [part_timeout_s=25] > out.txt 2>&1   (all parts, ~10-20 s)
//   ./first_launch_probe --part N [watchdog_s]         (one part: 12 (P1+P2), 3 to 8;
//                                                       7 and 8 are run only this way)
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_callbacks.h>
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <cupti_version.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <deque>
#include <string>
#include <vector>

#include "probe.h"

static const char *METRIC = "gpu__time_duration.sum";
static const char *g_names[1] = {"gpu__time_duration.sum"};
static const size_t ELEMS = 16u << 20; // 64 MB of float: ~40 us for x += 1 on the H200
static const int LAUNCHES = 2000;      // empty-kernel launches per batch (as stop_probe E)

// ---------------------------------------------------------------- driver API through dlopen

// The driver is loaded at run time, as collector/api.c loads it, so that the probe starts (and
// says why it cannot measure) where libcuda.so.1 is missing. Each entry point is looked up by
// the name cuda.h maps it to (cuCtxCreate -> cuCtxCreate_v4), so its type matches.
#define XSTR(x) STR(x)
#define STR(x) #x
#define DRV_FNS(X)                                                                                 \
	X(cuInit)                                                                                  \
	X(cuDriverGetVersion)                                                                      \
	X(cuDeviceGet)                                                                             \
	X(cuDeviceGetName)                                                                         \
	X(cuDeviceGetUuid)                                                                         \
	X(cuDeviceGetAttribute)                                                                    \
	X(cuCtxCreate)                                                                             \
	X(cuCtxDestroy)                                                                            \
	X(cuCtxSetCurrent)                                                                         \
	X(cuCtxGetCurrent)                                                                         \
	X(cuCtxGetDevice)                                                                          \
	X(cuCtxSynchronize)                                                                        \
	X(cuGetErrorName)                                                                          \
	X(cuGetErrorString)

#define X(f) typedef decltype(&f) f##_fn;
DRV_FNS(X)
#undef X
static struct {
#define X(f) f##_fn f;
	DRV_FNS(X)
#undef X
} drv;

// Returns NULL, or why the driver could not be loaded.
static const char *load_driver()
{
	static char why[512];
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		snprintf(why, sizeof(why), "cannot load libcuda.so.1 (%s)", dlerror());
		return why;
	}
#define X(f)                                                                                       \
	if (!(drv.f = (decltype(drv.f))dlsym(h, XSTR(f)))) {                                       \
		snprintf(why, sizeof(why), "libcuda.so.1 has no %s", XSTR(f));                     \
		return why;                                                                        \
	}
	DRV_FNS(X)
#undef X
	return NULL;
}

// ---------------------------------------------------------------- state and helpers

static const char *g_tag = "P?";                // the part, first column of every row
static volatile const char *g_stage = "start";  // where the main thread is (watchdog, crash)
static volatile const char *g_helper_stage = ""; // where P3's helper thread is
static CUdevice g_dev;
static int *g_tiny;   // 8 bytes for the empty kernel (current context's)
static float *g_buf;  // 64 MB for the measured kernel (current context's)
// Counter data images live to the end of the process: a range profiler object keeps pointing
// at the last one given to SetConfig (stop_probe.cu). A deque keeps references valid.
static std::deque<std::vector<uint8_t>> g_images;

// Checks a CUPTI call: prints "ERROR <call>: <code> <string>" and returns false on failure.
static bool ok(CUptiResult r, const char *call)
{
	if (r == CUPTI_SUCCESS)
		return true;
	printf("  %-4s ERROR %s: %d %s\n", g_tag, call, (int)r, cupti_str(r));
	return false;
}

static bool cuda_ok(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return true;
	printf("  %-4s ERROR %s: %s %s\n", g_tag, what, cudaGetErrorName(e), cudaGetErrorString(e));
	return false;
}

static const char *cu_str(CUresult r)
{
	static char buf[256];
	const char *name = NULL, *s = NULL;
	if (drv.cuGetErrorName)
		drv.cuGetErrorName(r, &name);
	if (drv.cuGetErrorString)
		drv.cuGetErrorString(r, &s);
	snprintf(buf, sizeof(buf), "%d %s %s", (int)r, name ? name : "?", s ? s : "");
	return buf;
}

static bool cu_ok(CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return true;
	printf("  %-4s ERROR %s: %s\n", g_tag, what, cu_str(r));
	return false;
}
#define CU(call) cu_ok((call), #call)

// The watchdog and crash handlers name the step the part was in (stdout is a file there).
static void on_signal(int sig)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "\n  %-4s %s: %s in step '%s'%s%s; part ends\n", g_tag,
			 sig == SIGALRM ? "WATCHDOG" : "CRASH",
			 sig == SIGALRM ? "still running" : strsignal(sig), (const char *)g_stage,
			 *g_helper_stage ? ", helper thread in step " : "",
			 (const char *)g_helper_stage);
	if (write(1, msg, (size_t)n) < 0) {
	}
	_exit(sig == SIGALRM ? 3 : 4);
}

// Rows of one part: "  P1   <step>  <ms>  <note>". A Steps that streams prints each row as it
// is added; P3's helper thread keeps its rows until the main thread prints them after the join
// (printing from the helper would disturb the launches being timed).
struct Steps {
	bool stream = true;
	std::vector<std::string> names, notes;
	std::vector<double> ms;
	void add(const std::string &name, double v, const std::string &note = "")
	{
		names.push_back(name);
		ms.push_back(v);
		notes.push_back(note);
		if (stream)
			print_row(names.size() - 1);
	}
	// add the time since *lap under name and move the lap on
	void lap(const std::string &name, double *lap, const std::string &note = "")
	{
		double t = now_ms();
		add(name, t - *lap, note);
		*lap = t;
	}
	void print_row(size_t i) const
	{
		printf("  %-4s %-72s %10.3f ms  %s\n", g_tag, names[i].c_str(), ms[i],
		       notes[i].c_str());
	}
	void print_all() const
	{
		for (size_t i = 0; i < names.size(); i++)
			print_row(i);
	}
};

static void header(const char *title)
{
	printf("\n  %-4s == %s\n", g_tag, title);
	printf("  %-4s %-72s %13s  %s\n", g_tag, "step", "wall", "note");
}

static std::string fmt(const char *f, double a, double b = 0, double c = 0)
{
	char buf[256];
	snprintf(buf, sizeof(buf), f, a, b, c);
	return buf;
}

static bool launch_inplace(float *buf)
{
	inplace_add_one<<<(unsigned)((ELEMS + 255) / 256), 256>>>(buf, ELEMS);
	return cuda_ok(cudaGetLastError(), "inplace_add_one<<<>>>");
}

static bool ctx_sync()
{
	return cu_ok(drv.cuCtxSynchronize(), "cuCtxSynchronize");
}

// Buffers in the current context and one launch of each kernel (lazy module loading: the
// first launch of a kernel in a context loads it; not to be counted in any measured step).
static bool context_buffers(Steps &s, const char *what)
{
	double lap = now_ms();
	if (!cuda_ok(cudaMalloc(&g_buf, ELEMS * sizeof(float)), "cudaMalloc 64 MB") ||
	    !cuda_ok(cudaMemset(g_buf, 0, ELEMS * sizeof(float)), "cudaMemset") ||
	    !cuda_ok(cudaMalloc(&g_tiny, 8), "cudaMalloc 8 B") ||
	    !cuda_ok(cudaMemset(g_tiny, 0, 8), "cudaMemset"))
		return false;
	tiny<<<1, 32>>>(g_tiny);
	if (!cuda_ok(cudaGetLastError(), "tiny<<<>>>") || !launch_inplace(g_buf) || !ctx_sync())
		return false;
	s.lap(what, &lap, "(reference: not rangeprof's cost)");
	return true;
}

// One batch of n empty-kernel launches, each timed: host us per launch, and the longest one.
static bool launch_batch(int n, double *us_per_launch, double *longest_us)
{
	double longest = 0, t0 = now_ms(), prev = t0;
	for (int i = 0; i < n; i++) {
		tiny<<<1, 32>>>(g_tiny);
		double t = now_ms();
		longest = std::max(longest, t - prev);
		prev = t;
	}
	*us_per_launch = (prev - t0) * 1e3 / n;
	*longest_us = longest * 1e3;
	return cuda_ok(cudaGetLastError(), "tiny<<<>>>");
}

// Host time per launch of the empty kernel in the present profiler state: one unrecorded
// batch, then 3 batches of 2000, the GPU drained before each (as stop_probe E). Returns the
// median (NaN when a launch failed). state must outlive the call (the watchdog reads it).
static double launch_cost(const char *state)
{
	g_stage = state;
	std::vector<double> us;
	double longest = 0;
	for (int rep = 0; rep < 4; rep++) {
		double u, l;
		if (!ctx_sync() || !launch_batch(LAUNCHES, &u, &l) || !ctx_sync())
			return NAN;
		if (rep) {
			us.push_back(u);
			longest = std::max(longest, l);
		}
	}
	std::sort(us.begin(), us.end());
	printf("  %-4s launches: %-54s us/launch median %.3f (min %.3f, max %.3f; 3 x %d), "
	       "longest single launch %.1f us\n",
	       g_tag, state, us[1], us[0], us[2], LAUNCHES, longest);
	return us[1];
}

// ---------------------------------------------------------------- host set-up

struct Host {
	CUpti_Profiler_Host_Object *obj = NULL;
	std::vector<uint8_t> avail; // the host object keeps pointing at it: lives as long
	std::vector<uint8_t> config;
	size_t passes = 0;
	std::string chip;
};

static void host_destroy(Host &h)
{
	if (!h.obj)
		return;
	CUpti_Profiler_Host_Deinitialize_Params p = {CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
	p.pHostObject = h.obj;
	CK(cuptiProfilerHostDeinitialize(&p));
	h.obj = NULL;
}

// collector_metric_set_create's calls, in its order (profiler_init, host_create, one
// ConfigAddMetrics, GetConfigImageSize, GetConfigImage, GetNumOfPasses, metric_unit), each a row
// of s prefixed with p. *total_ms: the whole, when all succeeded. stage: where to say it is.
static bool host_create(Host &h, CUcontext ctx, Steps &s, const std::string &p, double *total_ms,
			volatile const char **stage)
{
	double start = now_ms(), lap = start;
	*stage = "cuptiProfilerInitialize";
	if (!profiler_initialize())
		return false;
	s.lap(p + "cuptiProfilerInitialize", &lap);
	*stage = "cuptiDeviceGetChipName";
	const char *chip = NULL;
	if (!chip_name((size_t)g_dev, &chip))
		return false;
	h.chip = chip ? chip : "?";
	s.lap(p + "cuptiDeviceGetChipName", &lap, "chip " + h.chip);
	*stage = "cuptiProfilerGetCounterAvailability";
	size_t avail_size = 0;
	if (!counter_availability_size(ctx, &avail_size))
		return false;
	s.lap(p + "cuptiProfilerGetCounterAvailability (size)", &lap);
	h.avail.resize(avail_size);
	if (!counter_availability_image(ctx, h.avail))
		return false;
	s.lap(p + "cuptiProfilerGetCounterAvailability (image)", &lap,
	      fmt("%.0f bytes", (double)h.avail.size()));
	*stage = "cuptiProfilerHostInitialize";
	if (!host_initialize(chip, h.avail, &h.obj))
		return false;
	s.lap(p + "cuptiProfilerHostInitialize", &lap);
	*stage = "cuptiProfilerHostConfigAddMetrics";
	if (!host_add_metrics(h.obj, g_names, 1))
		return false;
	s.lap(p + "cuptiProfilerHostConfigAddMetrics", &lap, METRIC);
	*stage = "cuptiProfilerHostGetConfigImage";
	if (!host_config_image(h.obj, h.config))
		return false;
	s.lap(p + "cuptiProfilerHostGetConfigImageSize + GetConfigImage", &lap,
	      fmt("%.0f bytes", (double)h.config.size()));
	*stage = "cuptiProfilerHostGetNumOfPasses";
	if (!host_num_passes(h.config, &h.passes))
		return false;
	s.lap(p + "cuptiProfilerHostGetNumOfPasses", &lap, fmt("%.0f pass(es)", (double)h.passes));
	// metric_unit: the full name first, then without the rollup suffix (CUPTI describes the
	// base metric), as collector/profiler.c does; a miss is its normal path, not an error.
	*stage = "cuptiProfilerHostGetMetricProperties";
	char base[256];
	snprintf(base, sizeof(base), "%s", METRIC);
	const char *unit = NULL;
	int tries = 0;
	for (; tries < 3 && !unit; tries++) {
		CUpti_Profiler_Host_GetMetricProperties_Params mp = {
			CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
		mp.pHostObject = h.obj;
		mp.pMetricName = base;
		if (cuptiProfilerHostGetMetricProperties(&mp) == CUPTI_SUCCESS) {
			unit = mp.pDimUnit && *mp.pDimUnit ? mp.pDimUnit : mp.pHwUnit ? mp.pHwUnit : "";
			break;
		}
		char *dot = strrchr(base, '.');
		if (!dot)
			break;
		*dot = '\0';
	}
	s.lap(p + "cuptiProfilerHostGetMetricProperties (unit, as metric_unit)", &lap,
	      std::string("unit '") + (unit ? unit : "(none found)") + "' after " +
		      fmt("%.0f call(s)", (double)(tries + 1)));
	*total_ms = now_ms() - start;
	*stage = "";
	return true;
}

// ---------------------------------------------------------------- range profiler

struct Prof {
	CUpti_RangeProfiler_Object *obj = NULL;
	std::vector<uint8_t> *image = NULL; // sized at the first measurement of this object
	int measured = 0;
};

static bool rp_enable(Prof &pr, CUcontext ctx, Steps &s, const std::string &p)
{
	g_stage = "cuptiRangeProfilerEnable";
	double lap = now_ms();
	if (!range_profiler_enable(ctx, &pr.obj, NULL))
		return false;
	s.lap(p + "cuptiRangeProfilerEnable", &lap);
	g_images.emplace_back();
	pr.image = &g_images.back();
	pr.measured = 0;
	return true;
}

// Disable, with the object's context current (as CUPTI expects, collector/profiler.c).
static bool rp_disable(Prof &pr, Steps &s, const std::string &p)
{
	if (!pr.obj)
		return true;
	g_stage = "cuptiRangeProfilerDisable";
	double lap = now_ms();
	if (!range_profiler_disable(&pr.obj, NULL))
		return false;
	s.lap(p + "cuptiRangeProfilerDisable", &lap);
	return true;
}

// GetCounterDataSize (first use of the object) + CounterDataImageInitialize + SetConfig, as
// collector/profiler.c's prepare_counter_data: AutoRange, UserReplay, ranges ranges a pass, in
// the image and in its range tree (one unless said: P7 and P8 size it; fewer tree nodes than
// ranges is refused, INVALID_PARAMETER, session 25).
static bool rp_prepare(Prof &pr, const Host &h, Steps &s, const std::string &p, size_t ranges = 1)
{
	g_stage = "prepare (image + SetConfig)";
	double lap = now_ms();
	std::vector<uint8_t> &image = *pr.image;
	if (image.empty()) {
		CUpti_RangeProfiler_GetCounterDataSize_Params size = {
			CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
		size.pRangeProfilerObject = pr.obj;
		size.pMetricNames = g_names;
		size.numMetrics = 1;
		size.maxNumOfRanges = ranges;
		size.maxNumRangeTreeNodes = (uint32_t)ranges;
		if (!CK(cuptiRangeProfilerGetCounterDataSize(&size)))
			return false;
		image.assign(size.counterDataSize, 0);
		s.lap(p + "cuptiRangeProfilerGetCounterDataSize", &lap,
		      fmt("%.0f bytes", (double)image.size()));
	}
	if (!counter_data_initialize(pr.obj, image))
		return false;
	s.lap(p + "cuptiRangeProfilerCounterDataImageInitialize", &lap);
	if (!range_profiler_set_config(pr.obj, h.config, image, CUPTI_AutoRange, ranges))
		return false;
	s.lap(p + "cuptiRangeProfilerSetConfig", &lap);
	return true;
}

// One measured launch as collector_profiler_measure makes it: prepare (unless already
// prepared), per pass Start, kernels (0 or 1), cuCtxSynchronize, Stop; then DecodeData,
// GetCounterDataInfo and (with a kernel) the evaluated gpu__time_duration.sum. Rows prefixed
// with p; the last row is the total.
static bool rp_measure(Prof &pr, const Host &h, Steps &s, const std::string &p, int kernels,
		       bool prepare = true)
{
	double start = now_ms();
	if (prepare && !rp_prepare(pr, h, s, p))
		return false;
	double lap = now_ms();
	bool all = false;
	int pass = 0;
	while (!all && pass < 8) {
		std::string pp = p + (pass ? fmt("pass %.0f ", pass) : "");
		g_stage = "cuptiRangeProfilerStart";
		CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
		st.pRangeProfilerObject = pr.obj;
		if (!CK(cuptiRangeProfilerStart(&st)))
			return false;
		s.lap(pp + "cuptiRangeProfilerStart", &lap);
		g_stage = "measured launch";
		bool good = true;
		for (int k = 0; good && k < kernels; k++)
			good = launch_inplace(g_buf);
		if (kernels)
			s.lap(pp + fmt("%.0f launch(es) of the ~40 us kernel", kernels), &lap);
		good = good && ctx_sync();
		s.lap(pp + "cuCtxSynchronize", &lap);
		g_stage = "cuptiRangeProfilerStop";
		CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
		sp.pRangeProfilerObject = pr.obj;
		bool stopped = CK(cuptiRangeProfilerStop(&sp));
		s.lap(pp + "cuptiRangeProfilerStop", &lap);
		if (!good || !stopped)
			return false;
		all = sp.isAllPassSubmitted;
		pass++;
	}
	g_stage = "cuptiRangeProfilerDecodeData";
	CUpti_RangeProfiler_DecodeData_Params dec = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
	dec.pRangeProfilerObject = pr.obj;
	bool decoded = CK(cuptiRangeProfilerDecodeData(&dec));
	s.lap(p + "cuptiRangeProfilerDecodeData", &lap,
	      decoded ? fmt("%.0f pass(es), %.0f range(s) dropped", pass, (double)dec.numOfRangeDropped) :
			"failed");
	g_stage = "GetCounterDataInfo + evaluate";
	std::string note = "no ranges";
	size_t ranges = decoded ? range_count(*pr.image, false) : (size_t)-1;
	bool good = ranges != (size_t)-1;
	if (good && ranges > 0) {
		double value = -1;
		good = ok(evaluate_metrics(h.obj, *pr.image, ranges - 1, g_names, 1, &value),
			  "cuptiProfilerHostEvaluateToGpuValues");
		note = fmt("%.0f range(s), gpu__time_duration.sum %.2f us", (double)ranges,
			   value / 1e3);
	} else if (good) {
		note = "0 ranges";
	}
	if (good && kernels > 0 && ranges < (size_t)kernels) {
		note += fmt(" (%.0f kernel(s) launched: a range is missing)", kernels);
		good = false;
	}
	s.lap(p + "GetCounterDataInfo + EvaluateToGpuValues", &lap, note);
	s.add(p + "total of this measured launch", now_ms() - start, "");
	pr.measured++;
	return good || !kernels; // zero kernels: no ranges and an evaluate error are expected
}

// ---------------------------------------------------------------- P1 + P2

// The primary context (the application's), made current on this thread, as rangeprof sees it.
static bool cuda_start(Steps &s, CUcontext *ctx)
{
	g_stage = "CUDA init";
	double lap = now_ms();
	if (!cuda_ok(cudaFree(0), "cudaFree(0) (CUDA init)"))
		return false;
	s.lap("CUDA init + primary context (cudaFree(0))", &lap, "(reference: the application's)");
	if (!CU(drv.cuCtxGetCurrent(ctx)) || !CU(drv.cuCtxGetDevice(&g_dev)))
		return false;
	return context_buffers(s, "buffers + first launch of each kernel (module load)");
}

typedef int nvml_fn0(void);
static bool nvml_open(Steps &s)
{
	// As collector_nvml_open, then the first device lookup (collector's nvml_device).
	g_stage = "NVML open";
	double lap = now_ms();
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("  %-4s ERROR dlopen libnvidia-ml.so.1: %s (rangeprof runs on without NVML)\n",
		       g_tag, dlerror());
		return false;
	}
	s.lap("NVML: dlopen libnvidia-ml.so.1", &lap);
	nvml_fn0 *init = (nvml_fn0 *)dlsym(h, "nvmlInit_v2");
	const char *(*err)(int) = (const char *(*)(int))dlsym(h, "nvmlErrorString");
	int (*by_uuid)(const char *, void **) =
		(int (*)(const char *, void **))dlsym(h, "nvmlDeviceGetHandleByUUID");
	if (!init || !by_uuid) {
		printf("  %-4s ERROR libnvidia-ml.so.1 lacks nvmlInit_v2 or nvmlDeviceGetHandleByUUID\n",
		       g_tag);
		return false;
	}
	int r = init();
	if (r) {
		printf("  %-4s ERROR nvmlInit_v2: %d %s\n", g_tag, r, err ? err(r) : "");
		return false;
	}
	s.lap("NVML: nvmlInit_v2", &lap);
	CUuuid u;
	if (!CU(drv.cuDeviceGetUuid(&u, g_dev)))
		return false;
	const unsigned char *b = (const unsigned char *)u.bytes;
	char uuid[64];
	snprintf(uuid, sizeof(uuid),
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
	lap = now_ms();
	void *dev = NULL;
	r = by_uuid(uuid, &dev);
	s.lap("NVML: nvmlDeviceGetHandleByUUID (first device lookup)", &lap,
	      r ? std::string("failed: ") + (err ? err(r) : "?") : "");
	return true;
}

static int part12()
{
	// ---- P1: the first measured launch of a process, call by call
	g_tag = "P1";
	Steps s;
	header("P1: the first measured launch of a process, call by call, in rangeprof's order "
	       "(primary context)");
	CUcontext ctx1;
	if (!cuda_start(s, &ctx1))
		return 2;
	double t0 = now_ms();
	nvml_open(s); // an NVML failure is reported; rangeprof runs on without it too
	double nvml_ms = now_ms() - t0;
	Host h1;
	double host_ms = 0;
	if (!host_create(h1, ctx1, s, "", &host_ms, &g_stage)) {
		printf("  %-4s host set-up failed: P1 and P2 end here\n", g_tag);
		return 2;
	}
	s.add("SUM NVML + host set-up (rangeprof's 'setup', 218-240 ms in NOTES.md)",
	      nvml_ms + host_ms, fmt("NVML %.3f ms + CUPTI host %.3f ms", nvml_ms, host_ms));
	Prof p1;
	if (!rp_enable(p1, ctx1, s, ""))
		return 2;
	bool measured = rp_measure(p1, h1, s, "#1 ", 1);
	if (measured) {
		rp_measure(p1, h1, s, "#2 ", 1);
		rp_measure(p1, h1, s, "#3 ", 1);
	}

	// ---- P2: per process or per context?
	g_tag = "P2";
	header("P2: a second context on the same device: what is paid again? (same process as P1)");
	double lap = now_ms();
	CUcontext ctx2 = NULL;
	g_stage = "cuCtxCreate";
	if (!CU(drv.cuCtxCreate(&ctx2, NULL, 0, g_dev)))
		return 2;
	s.lap("cuCtxCreate (second context, now current)", &lap, "(reference)");
	float *buf1 = g_buf;
	int *tiny1 = g_tiny;
	if (!context_buffers(s, "ctx2: buffers + first launch of each kernel (module load)"))
		return 2;
	// One context's range profiler at a time per device (NOTES.md, issue 7): the first goes.
	if (!CU(drv.cuCtxSetCurrent(ctx1)))
		return 2;
	bool disabled = rp_disable(p1, s, "ctx1: ");
	if (!CU(drv.cuCtxSetCurrent(ctx2)) || !disabled)
		return 2;
	// The new context's range profiler, with P1's host object and config image: is the first
	// Start's cost paid again per context (before anything else touches the new context)?
	Prof p2;
	if (rp_enable(p2, ctx2, s, "ctx2: ") && rp_measure(p2, h1, s, "ctx2 #1 ", 1))
		rp_measure(p2, h1, s, "ctx2 #2 ", 1);
	rp_disable(p2, s, "ctx2: ");
	// The host object again (counter availability of the new context, no profiler enabled,
	// as in P1): is any of it cached per process? Are the images the same bytes, so that they
	// could be kept and reused?
	Host h2;
	double host2_ms = 0;
	if (host_create(h2, ctx2, s, "ctx2 (2nd host object): ", &host2_ms, &g_stage)) {
		s.add("ctx2: SUM host set-up again", host2_ms,
		      fmt("first time (P1) %.3f ms", host_ms));
		printf("  %-4s ctx2's counter availability image %s ctx1's (%zu vs %zu bytes); config "
		       "image %s (%zu vs %zu bytes)\n",
		       g_tag,
		       h2.avail == h1.avail ? "is byte for byte the same as" : "DIFFERS from",
		       h2.avail.size(), h1.avail.size(),
		       h2.config == h1.config ? "the same" : "DIFFERS", h2.config.size(),
		       h1.config.size());
	}
	lap = now_ms();
	g_stage = "cuCtxDestroy";
	if (CU(drv.cuCtxDestroy(ctx2)))
		s.lap("cuCtxDestroy (second context)", &lap, "(reference)");
	// Back on the first context, whose first Start was in P1: a new profiler object.
	if (!CU(drv.cuCtxSetCurrent(ctx1)))
		return 2;
	g_buf = buf1;
	g_tiny = tiny1;
	Prof p3;
	if (rp_enable(p3, ctx1, s, "ctx1 again: ") && rp_measure(p3, h1, s, "ctx1 new object #1 ", 1))
		rp_measure(p3, h1, s, "ctx1 new object #2 ", 1);
	rp_disable(p3, s, "ctx1 again: ");
	host_destroy(h2);
	host_destroy(h1);
	return 0;
}

// ---------------------------------------------------------------- P3

struct Helper {
	CUcontext ctx;
	Host host;
	Steps steps;
	double host_ms = 0, t_start = 0, t_end = 0;
	bool good = false;
	std::atomic<bool> done{false};
};

static void *helper_main(void *arg)
{
	Helper *h = (Helper *)arg;
	h->t_start = now_ms();
	double lap = h->t_start;
	g_helper_stage = "cuCtxSetCurrent";
	// The context current here too: GetCounterAvailability names it, and CUPTI may look.
	if (cu_ok(drv.cuCtxSetCurrent(h->ctx), "cuCtxSetCurrent (helper thread)")) {
		h->steps.lap("helper: cuCtxSetCurrent (the main thread's context)", &lap);
		h->good = host_create(h->host, h->ctx, h->steps, "helper: ", &h->host_ms,
				      &g_helper_stage);
	}
	h->t_end = now_ms();
	g_helper_stage = "";
	h->done.store(true);
	return NULL;
}

static int part3()
{
	g_tag = "P3";
	Steps s;
	header("P3: host set-up on a helper pthread while the main thread launches (fresh process)");
	CUcontext ctx;
	if (!cuda_start(s, &ctx))
		return 2;
	launch_cost("alone, before (no CUPTI call yet)");
	Helper h;
	h.ctx = ctx;
	h.steps.stream = false;
	std::vector<double> overlap_us;
	double longest = 0, sync_max = 0;
	g_stage = "pthread_create";
	if (!ctx_sync())
		return 2;
	double t0 = now_ms();
	pthread_t thread;
	int pe = pthread_create(&thread, NULL, helper_main, &h);
	if (pe) {
		printf("  %-4s ERROR pthread_create: %s\n", g_tag, strerror(pe));
		return 2;
	}
	// Batches of 2000 launches until the helper is done (at most 400 batches: a helper that
	// never finishes is the watchdog's to report).
	g_stage = "launches beside the helper";
	bool good = true;
	while (good && !h.done.load() && overlap_us.size() < 400) {
		double u, l;
		good = launch_batch(LAUNCHES, &u, &l);
		overlap_us.push_back(u);
		longest = std::max(longest, l);
		double t = now_ms();
		good = good && ctx_sync();
		sync_max = std::max(sync_max, now_ms() - t);
	}
	double t_loop = now_ms();
	g_stage = "pthread_join";
	pthread_join(thread, NULL);
	double t_join = now_ms();
	h.steps.print_all();
	s.add("helper: SUM host set-up on the helper thread", h.host_ms, "(P1: the same on the main thread)");
	s.add("helper: from pthread_create to its end", h.t_end - t0,
	      fmt("thread start latency %.3f ms", h.t_start - t0));
	s.add("main: pthread_join after the last batch", t_join - t_loop);
	if (!overlap_us.empty()) {
		std::vector<double> v = overlap_us;
		std::sort(v.begin(), v.end());
		printf("  %-4s launches: %-54s us/launch median %.3f (min %.3f, max %.3f; %zu x %d), "
		       "longest single launch %.1f us, longest sync after a batch %.3f ms\n",
		       g_tag, "beside the helper's set-up", median(v), v.front(), v.back(), v.size(),
		       LAUNCHES, longest, sync_max);
	} else {
		printf("  %-4s launches: beside the helper's set-up: none (the helper was done before "
		       "the first batch)\n",
		       g_tag);
	}
	if (!good || !h.good) {
		printf("  %-4s %s failed: P3 ends here\n", g_tag, !good ? "launching" : "the helper's set-up");
		return 2;
	}
	launch_cost("alone, after (CUPTI host set-up done, no profiler)");
	// The first Start on the main thread, after host set-up on another thread.
	Prof p;
	if (rp_enable(p, ctx, s, "main: ") && rp_measure(p, h.host, s, "main #1 ", 1))
		rp_measure(p, h.host, s, "main #2 ", 1);
	rp_disable(p, s, "main: ");
	host_destroy(h.host);
	return 0;
}

// ---------------------------------------------------------------- P4

// The opening of P4 and P5: the primary context, the launch cost without a profiler, and
// the CUPTI host set-up (its sum a row). False, said, when the set-up failed.
static bool idle_part_start(Steps &s, CUcontext *ctx, Host &h)
{
	if (!cuda_start(s, ctx))
		return false;
	launch_cost("no profiler (CUPTI not initialised)");
	double host_ms = 0;
	if (!host_create(h, *ctx, s, "", &host_ms, &g_stage)) {
		printf("  %-4s host set-up failed: %s ends here\n", g_tag, g_tag);
		return false;
	}
	s.add("SUM host set-up", host_ms);
	return true;
}

static int part4()
{
	g_tag = "P4";
	Steps s;
	header("P4: a zero-kernel warm-up Start/Stop; launch cost of an idle profiler (fresh process)");
	CUcontext ctx;
	Host h;
	if (!idle_part_start(s, &ctx, h))
		return 2;
	launch_cost("CUPTI host set-up done, no profiler enabled");
	Prof p;
	if (!rp_enable(p, ctx, s, ""))
		return 2;
	launch_cost("range profiler Enabled, no SetConfig");
	if (!rp_prepare(p, h, s, "warm-up "))
		return 2;
	launch_cost("Enabled + SetConfig, never started");
	// The warm-up: Start and Stop with no kernel between (already prepared above).
	bool warm = rp_measure(p, h, s, "warm-up (0 kernels) ", 0, false);
	if (!warm)
		printf("  %-4s the zero-kernel warm-up failed; the real measurements follow anyway\n",
		       g_tag);
	launch_cost("Enabled, after the warm-up Start/Stop (between passes)");
	if (rp_measure(p, h, s, "#1 after warm-up ", 1))
		rp_measure(p, h, s, "#2 after warm-up ", 1);
	rp_disable(p, s, "");
	launch_cost("range profiler Disabled again");
	// A new object on the warmed context: first Start cheap or paid again?
	Prof q;
	if (rp_enable(q, ctx, s, "re-") && rp_measure(q, h, s, "new object #1 ", 1))
		rp_measure(q, h, s, "new object #2 ", 1);
	rp_disable(q, s, "re-");
	host_destroy(h);
	return 0;
}

// ---------------------------------------------------------------- P5

static int part5()
{
	g_tag = "P5";
	Steps s;
	header("P5: idle states of the range profiler after a measurement (fresh process)");
	CUcontext ctx;
	Host h;
	if (!idle_part_start(s, &ctx, h))
		return 2;
	Prof p;
	if (!rp_enable(p, ctx, s, "") || !rp_measure(p, h, s, "#1 ", 1))
		return 2;
	launch_cost("after a measurement (AutoRange config set, decoded)");
	if (!rp_measure(p, h, s, "empty pass ", 0))
		printf("  %-4s the empty pass failed; the rows below follow anyway\n", g_tag);
	launch_cost("after an empty pass (initialise, SetConfig, Start/Stop, Decode)");
	if (rp_measure(p, h, s, "#2 after the empty pass ", 1))
		launch_cost("after #2");
	rp_disable(p, s, "");
	launch_cost("range profiler Disabled");
	host_destroy(h);
	return 0;
}

// ---------------------------------------------------------------- P6

// Rounds of a new object, one measurement, launches while it idles, Disable, launches:
// the idle object against none in the same process, each round's pair moments apart, so
// that neither the clocks' drift nor another process's placement (up to 1.6 us between
// processes of one way, unselected_launches.sh) enters the difference. Odd rounds take
// the Disabled launches first (a new object measured and disabled, then another measured
// and left idle), so that the order within a round does not side with one state.
#define P6_ROUNDS 4

static int part6()
{
	g_tag = "P6";
	Steps s;
	header("P6: an idle object against a disabled one, alternating (fresh process)");
	CUcontext ctx;
	Host h;
	if (!idle_part_start(s, &ctx, h))
		return 2;
	static std::string states[2 * P6_ROUNDS]; // alive while the watchdog may read them
	std::vector<double> diff;
	for (int round = 0; round < P6_ROUNDS; round++) {
		std::string r = "r" + std::to_string(round + 1) + " ";
		states[2 * round] = r + "idle after a measurement (AutoRange, decoded)";
		states[2 * round + 1] = r + "Disabled";
		double idle = NAN, off = NAN;
		for (int step = 0; step < 2; step++) {
			bool idle_now = (step == 0) == (round % 2 == 0);
			Prof p;
			if (!rp_enable(p, ctx, s, r) || !rp_measure(p, h, s, r + "#1 ", 1))
				return 2;
			if (idle_now) {
				idle = launch_cost(states[2 * round].c_str());
				if (!rp_disable(p, s, r))
					return 2;
				if (round % 2 == 0) { // even rounds: the same object, Disabled
					off = launch_cost(states[2 * round + 1].c_str());
					break;
				}
			} else {
				if (!rp_disable(p, s, r))
					return 2;
				off = launch_cost(states[2 * round + 1].c_str());
			}
		}
		if (std::isfinite(idle) && std::isfinite(off))
			diff.push_back(idle - off);
	}
	std::sort(diff.begin(), diff.end());
	std::string each;
	for (double d : diff)
		each += (each.empty() ? "" : ", ") + std::to_string(d).substr(0, 6);
	if (!diff.empty())
		printf("  %-4s idle object - disabled, paired by round: median %.3f us (sorted: %s)\n",
		       g_tag, (diff[(diff.size() - 1) / 2] + diff[diff.size() / 2]) / 2,
		       each.c_str());
	host_destroy(h);
	return 0;
}

// ---------------------------------------------------------------- P7

// (issue 35 item 3) The early set-up's warm-up pass costs ~145 ms sized for one range and
// 240-319 ms sized for 48-100 (doc/measurements.md, "First Start of a range profiler object",
// "Control API"): which call grows with the ranges (the image's host initialisation, SetConfig,
// or the first Start), and what does the first real
// measurement after the warm-up cost (half the ranges in kernels, as 24 runs with a flush each
// use 48). Each size on a new object (Enable .. Disable), smallest first, then again in reverse
// order: a size's cost in both orders is its own, not the process's first.
static int part7()
{
	g_tag = "P7";
	Steps s;
	header("P7: the first Start against the counter data's ranges (fresh process)");
	CUcontext ctx;
	Host h;
	if (!idle_part_start(s, &ctx, h))
		return 2;
	const size_t sizes[] = {2, 24, 48, 100, 48, 24, 2};
	for (size_t ranges : sizes) {
		std::string p = fmt("r%.0f ", (double)ranges);
		Prof pr;
		double t0 = now_ms();
		if (!rp_enable(pr, ctx, s, p) || !rp_prepare(pr, h, s, p + "warm-up ", ranges))
			return 2;
		bool warm = rp_measure(pr, h, s, p + "warm-up (0 kernels) ", 0, false);
		s.add(p + "SUM Enable + warm-up", now_ms() - t0);
		size_t kernels = ranges / 2 ? ranges / 2 : 1;
		if (warm && counter_data_initialize(pr.obj, *pr.image) &&
		    range_profiler_set_config(pr.obj, h.config, *pr.image, CUPTI_AutoRange, ranges))
			rp_measure(pr, h, s, p + fmt("first measurement (%.0f kernels) ", (double)kernels),
				   (int)kernels, false);
		if (!rp_disable(pr, s, p))
			return 2;
	}
	host_destroy(h);
	return 0;
}

// ---------------------------------------------------------------- P8

// The early set-up's warm-up (Enable, an image for ranges ranges, SetConfig, a Start/Stop with
// no kernel) on a helper thread, as rangeprof's set-up thread makes it.
struct WarmHelper {
	CUcontext ctx;
	const Host *host;
	size_t ranges;
	Prof pr;
	Steps steps;
	double t_pass0 = 0, t_pass1 = 0; // around the warm-up's Start .. Decode
	bool good = false;
	std::atomic<bool> done{false};
};

static void *warm_helper_main(void *arg)
{
	WarmHelper *w = (WarmHelper *)arg;
	if (cu_ok(drv.cuCtxSetCurrent(w->ctx), "cuCtxSetCurrent (helper thread)") &&
	    rp_enable(w->pr, w->ctx, w->steps, "helper: ") &&
	    rp_prepare(w->pr, *w->host, w->steps, "helper: ", w->ranges)) {
		w->t_pass0 = now_ms();
		w->good = rp_measure(w->pr, *w->host, w->steps, "helper: warm-up (0 kernels) ", 0, false);
		w->t_pass1 = now_ms();
	}
	w->done.store(true);
	return NULL;
}

static void CUPTIAPI p8_empty_callback(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *)
{
}

// (issue 35 item 3) The first call of a notebook costs about the set-up's whole warm-up
// (setup records' start 207-276 ms) beyond plain, although the warm-up runs on rangeprof's
// thread while the application starts PyTorch and cuBLAS (bench/NOTES.md, session 25): does
// the warm-up's first Start hold up the application's own CUDA calls on another thread, and
// does a CUPTI subscriber (rangeprof's callbacks) make the difference? The main thread makes
// calls of the kinds a framework's start makes (an empty launch, a 2 MB cudaMalloc and
// cudaFree) one after another while the helper warms up a new object, first with no
// subscriber, then with an empty callback on the whole driver API domain, then without again.
static int part8()
{
	g_tag = "P8";
	Steps s;
	header("P8: the application's CUDA calls during another thread's warm-up pass (fresh process)");
	CUcontext ctx;
	Host h;
	if (!idle_part_start(s, &ctx, h))
		return 2;
	CUpti_SubscriberHandle sub = NULL;
	const char *ways[3] = {"no subscriber", "a subscriber on the driver API", "no subscriber again"};
	for (int way = 0; way < 3; way++) {
		if (way == 1) {
			if (!CK(cuptiSubscribe(&sub, (CUpti_CallbackFunc)p8_empty_callback, NULL)) ||
			    !CK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API)))
				return 2;
		} else if (way == 2 && sub) {
			if (!CK(cuptiUnsubscribe(sub)))
				return 2;
			sub = NULL;
		}
		g_stage = ways[way];
		if (!ctx_sync())
			return 2;
		WarmHelper w;
		w.ctx = ctx;
		w.host = &h;
		w.ranges = 48;
		w.steps.stream = false;
		std::vector<double> at, took; // each call's start and duration, ms
		at.reserve(1 << 20);
		took.reserve(1 << 20);
		pthread_t thread;
		double t0 = now_ms();
		int pe = pthread_create(&thread, NULL, warm_helper_main, &w);
		if (pe) {
			printf("  %-4s ERROR pthread_create: %s\n", g_tag, strerror(pe));
			return 2;
		}
		bool good = true;
		int i = 0;
		while (good && !w.done.load() && took.size() < (1u << 20)) {
			double t = now_ms();
			if (i++ % 2) {
				tiny<<<1, 32>>>(g_tiny);
				good = cuda_ok(cudaGetLastError(), "tiny<<<>>>");
			} else {
				void *m = NULL;
				good = cuda_ok(cudaMalloc(&m, 2 << 20), "cudaMalloc") &&
				       cuda_ok(cudaFree(m), "cudaFree");
			}
			at.push_back(t - t0);
			took.push_back(now_ms() - t);
		}
		pthread_join(thread, NULL);
		w.steps.print_all();
		if (!good || !w.good) {
			printf("  %-4s %s: %s failed; P8 ends here\n", g_tag, ways[way],
			       !good ? "the main thread's calls" : "the helper's warm-up");
			return 2;
		}
		double p0 = w.t_pass0 - t0, p1 = w.t_pass1 - t0;
		std::vector<double> outside, inside;
		double longest = 0, longest_at = 0;
		for (size_t k = 0; k < took.size(); k++) {
			(at[k] >= p0 && at[k] < p1 ? inside : outside).push_back(took[k]);
			if (at[k] >= p0 && at[k] < p1 && took[k] > longest) {
				longest = took[k];
				longest_at = at[k] - p0;
			}
		}
		double med = 0;
		if (!outside.empty()) {
			std::sort(outside.begin(), outside.end());
			med = median(outside);
		}
		double beyond = 0;
		for (double d : inside)
			beyond += d > med ? d - med : 0;
		printf("  %-4s %-34s warm-up pass %.1f ms (from %.1f ms after the helper began): "
		       "main thread's calls in it %zu (outside %zu, median %.4f ms); longest %.1f ms, "
		       "%.1f ms into the pass; time beyond the median in the pass %.1f ms\n",
		       g_tag, ways[way], p1 - p0, p0, inside.size(), outside.size(), med, longest,
		       longest_at, beyond);
		if (!rp_disable(w.pr, s, "main: "))
			return 2;
	}
	host_destroy(h);
	return 0;
}

// ---------------------------------------------------------------- main

static int run_part(const char *which, int watchdog)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_signal);
	signal(SIGSEGV, on_signal);
	signal(SIGBUS, on_signal);
	signal(SIGABRT, on_signal);
	signal(SIGFPE, on_signal);
	signal(SIGILL, on_signal);
	alarm(watchdog > 0 ? (unsigned)watchdog : 25);
	const char *why = load_driver();
	if (why) {
		printf("  part %s: no usable GPU: %s\n", which, why);
		return 1;
	}
	int rc;
	if (!strcmp(which, "12"))
		rc = part12();
	else if (!strcmp(which, "3"))
		rc = part3();
	else if (!strcmp(which, "4"))
		rc = part4();
	else if (!strcmp(which, "5"))
		rc = part5();
	else if (!strcmp(which, "6"))
		rc = part6();
	else if (!strcmp(which, "7"))
		rc = part7();
	else if (!strcmp(which, "8"))
		rc = part8();
	else {
		printf("unknown part '%s' (12, 3, 4, 5, 6, 7 or 8)\n", which);
		return 1;
	}
	fflush(stdout);
	// _exit: no CUPTI or driver teardown at exit to crash or hang after the rows are out.
	_exit(rc);
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "--part"))
		return run_part(argv[2], argc > 3 ? atoi(argv[3]) : 25);
	setvbuf(stdout, NULL, _IOLBF, 0);
	int part_timeout = argc > 1 && atoi(argv[1]) > 0 ? atoi(argv[1]) : 25;

	int rt = 0;
	uint32_t cupti = 0;
	cudaRuntimeGetVersion(&rt);
	bool have_cupti = cuptiGetVersion(&cupti) == CUPTI_SUCCESS;
	char versions[256];
	snprintf(versions, sizeof(versions), "CUDA runtime %d, CUPTI API %u%s (built against %d, CUDA %d)",
		 rt, cupti, have_cupti ? "" : " [cuptiGetVersion failed]", CUPTI_API_VERSION,
		 CUDA_VERSION);
	// The check that there is a GPU at all, without creating a context (the parts make theirs).
	const char *why = load_driver();
	CUresult r = CUDA_SUCCESS;
	char name[256] = "?";
	int driver = 0, major = 0, minor = 0;
	if (!why && (r = drv.cuInit(0)) == CUDA_SUCCESS) {
		CUdevice dev;
		drv.cuDriverGetVersion(&driver);
		if ((r = drv.cuDeviceGet(&dev, 0)) == CUDA_SUCCESS) {
			drv.cuDeviceGetName(name, sizeof(name), dev);
			drv.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
			drv.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
		}
	}
	if (why || r != CUDA_SUCCESS) {
		printf("first_launch_probe: no usable GPU (%s%s); %s; nothing measured\n",
		       why ? why : "cuInit/cuDeviceGet: ", why ? "" : cu_str(r), versions);
		return 1;
	}
	void *nv = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	char nvdrv[96] = "?";
	if (nv) {
		int (*init)(void) = (int (*)(void))dlsym(nv, "nvmlInit_v2");
		int (*ver)(char *, unsigned) = (int (*)(char *, unsigned))dlsym(nv, "nvmlSystemGetDriverVersion");
		if (init && ver && !init())
			ver(nvdrv, sizeof(nvdrv));
	}
	printf("first_launch_probe: CUDA driver API %d (NVIDIA driver %s), %s\n", driver, nvdrv,
	       versions);
	printf("first_launch_probe: GPU 0: %s (sm_%d%d); CUDA_VISIBLE_DEVICES=%s; metric %s; "
	       "measured kernel x += 1 on %zu MB; every figure is host wall time (CLOCK_MONOTONIC)\n",
	       name, major, minor, getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)",
	       METRIC, ELEMS * sizeof(float) >> 20);

	// Each part in a fresh process: this program again, with --part.
	const char *parts[5] = {"12", "3", "4", "5", "6"};
	double deadline = now_ms() + 57e3; // the whole run must end inside ~60 s
	for (const char *part : parts) {
		double left = (deadline - now_ms()) / 1e3;
		if (left < 3) {
			printf("\npart %s: skipped, too little time left (%.1f s)\n", part, left);
			continue;
		}
		int limit = std::min(part_timeout, (int)left - 1);
		char limit_text[16];
		snprintf(limit_text, sizeof(limit_text), "%d", limit);
		fflush(stdout);
		double t0 = now_ms();
		pid_t pid = fork();
		if (pid < 0) {
			printf("\npart %s: fork failed: %s\n", part, strerror(errno));
			continue;
		}
		if (pid == 0) {
			char *args[] = {(char *)"/proc/self/exe", (char *)"--part", (char *)part,
					limit_text, NULL};
			execv("/proc/self/exe", args);
			execv(argv[0], args);
			printf("part %s: exec failed: %s\n", part, strerror(errno));
			_exit(5);
		}
		// The part's own alarm ends it at limit; one second more, then it is killed.
		int status = 0;
		bool killed = false;
		while (waitpid(pid, &status, WNOHANG) == 0) {
			if (now_ms() - t0 > (limit + 1) * 1e3 && !killed) {
				kill(pid, SIGKILL);
				killed = true;
			}
			usleep(10000);
		}
		const char *meaning = "ok";
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		if (killed)
			meaning = "killed: did not end at its watchdog";
		else if (!WIFEXITED(status))
			meaning = strsignal(WTERMSIG(status));
		else if (code == 1)
			meaning = "no usable GPU";
		else if (code == 2)
			meaning = "a call failed (ERROR above)";
		else if (code == 3)
			meaning = "watchdog";
		else if (code == 4)
			meaning = "crashed";
		else if (code == 5)
			meaning = "exec failed";
		printf("part %s: ended after %.1f s, exit status %d (%s)\n", part, (now_ms() - t0) / 1e3,
		       code, meaning);
	}
	printf("\nfirst_launch_probe done\n");
	return 0;
}
