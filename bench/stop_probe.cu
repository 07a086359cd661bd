// bench/stop_probe.cu - where does the ~6.5 ms of cuptiRangeProfilerStop per measured
// launch go, and is there a cheaper way to end a pass? Written in session 3, when Stop cost
// 6.4-6.8 ms whatever the run count, 1 or 20 (bench/NOTES.md, "Memory-independent replay").
// Also (G) what AutoRange gives a CUDA graph launch, and (G2) what a user range around one
// costs.
// Results (H200, session 3, `./stop_probe 8 50 "$second_metric" quick`): with
// gpu__time_duration.sum alone Start 0.001 ms, Stop 0.07 ms; any counter beyond the timer
// (rangeprof's clock metric included) makes it Start 0.84-6.7 ms and Stop 6.3-6.5 ms. G: a
// graph launch alone in an AutoRange pass is one range without a duration. G2 (session 4,
// `./stop_probe 8 60 "" quick`): a user range adds 10-40 us to what it holds.
// (doc/measurements.md, "Start and Stop of later passes", "Graph launches under the range
// profiler".)
// Cited by collector/profiler.c (the clock counter's cost), collector/profiler.h and
// inject/measure/whole_workload.c (G: AutoRange gives a graph launch no usable range), and
// bench/graph_range_probe.cu (G, G2); its figures stand behind README.md's "~7 ms" for the
// clock counter and "10-40 us" for a user range, and doc/records.md's sm_clock_source.
//
// One measured launch = N runs (N = 1 and 20) of a ~40 us in-place kernel (64 MB of float,
// x += 1), metric gpu__time_duration.sum, inside one profiling pass. Every phase is timed on
// the host with clock_gettime(CLOCK_MONOTONIC); each table row is the median (min, max) over
// ITERS iterations after WARMUP unrecorded ones. Variants:
//   A  today's way (collector/profiler.c): range profiler, AutoRange + UserReplay; per measured
//      launch CounterDataImageInitialize + SetConfig, Start, N launches, cuCtxSynchronize,
//      Stop, Decode, evaluate.
//   B  is Stop waiting for the GPU or a fixed latency? B1 = A without the cuCtxSynchronize
//      before Stop; B2 = Start then Stop with zero kernels; B3 = A without re-initialising the
//      counter data image and SetConfig between measured launches (is Stop's cost re-armed by
//      SetConfig?).
//   C  range profiler in CUPTI_UserRange mode: C1 one Push/Pop range around the N kernels,
//      C2 one Push/Pop range per kernel (per-kernel values like AutoRange, but user ranges).
//   D  the legacy (CUDA 13: deprecated) profiling API of cupti_profiler_target.h: BeginSession +
//      SetConfig once, then per measured launch BeginPass, EnableProfiling, kernels,
//      DisableProfiling, EndPass, FlushCounterData. The config image comes from the profiler
//      host API (as collector/profiler.c builds it); whether the legacy SetConfig accepts it is
//      one of the questions. D1 as listed, D2 with cuCtxSynchronize before EndPass.
//   E  host cost of a launch of an empty kernel (2000 launches, us per launch) in each profiler
//      state: no profiler at all, range profiler enabled + configured but not started, range
//      profiler disabled again, legacy session begun between passes, and at the end.
//   F  the cost of Disable / Enable of the range profiler around a measured launch (NOTES.md:
//      an enabled range profiler costs every unselected launch ~4 us; would disabling it after
//      each measured launch pay off?).
//   G  a CUDA graph of three x += 1 kernels under AutoRange: how many ranges one graph
//      launch, and two in one pass, come back as, with their durations. G2: a new profiler
//      object in UserRange mode (an object keeps the range mode of its first SetConfig),
//      one user range around the graph launch, around nothing, and around one plain
//      kernel, each beside CUDA events around the same work, 5 of each. G3: CUDA events
//      around the graph launch with no profiler pass.
// Every CUPTI call is checked; an error prints the call and CUPTI's string and ends only that
// variant. A watchdog (alarm) ends the probe with a message naming the step that hung.
//
// Build (no GPU needed): meson setup build-bench -Dbench=true && meson compile -C build-bench
// bench, giving build-bench/bench/stop_probe; or by hand, in one line:
//   nvcc -O2 -arch=sm_90 -std=c++17 bench/stop_probe.cu -o stop_probe -lcuda -lcupti
//     -L/usr/local/cuda/lib64 -I/usr/local/cuda/include -Xlinker -rpath=/usr/local/cuda/lib64
// (-lcuda: the driver entry points fetched through the runtime crashed at start on the H200.)
// Run, on the GPU machine:
//   ./stop_probe [iterations=15] [watchdog_seconds=100] [second_metric] [quick]
// second_metric ("" for none) is configured beside gpu__time_duration.sum; 'quick' stops
// after A and G (E's row without a profiler comes first either way); without it every
// variant runs, in the order E, A, G, B, C, E, F, D, E.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <cupti_version.h>
#include <dlfcn.h>
#include <nvperf_host.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "probe.h"

static const char *METRIC = "gpu__time_duration.sum";
// The metrics configured: METRIC, and an optional second one (third argument), to see
// whether a metric such as rangeprof's clock metric (gpc__cycles_elapsed.avg.per_second)
// changes what Start and Stop cost. Only METRIC is evaluated.
static const char *g_names[2] = {"gpu__time_duration.sum", NULL};
static size_t g_name_count = 1;
static const int WARMUP = 3;
static int ITERS = 15;
static const size_t LEGACY_RANGES = 512; // counter data image of the legacy session
static const size_t ELEMS = 16u << 20;   // 64 MB of float

// Driver API entry points used by the probe (linked directly).
static struct {
	decltype(&cuCtxSynchronize) ctxSynchronize;
	decltype(&cuCtxGetCurrent) ctxGetCurrent;
	decltype(&cuCtxGetDevice) ctxGetDevice;
	decltype(&cuDeviceGetName) deviceGetName;
	decltype(&cuGetErrorString) getErrorString;
} drv;

static CUcontext g_ctx;
static float *g_buf;
static int *g_tiny;
static CUpti_Profiler_Host_Object *g_host;
static std::vector<uint8_t> g_avail, g_config;
static CUpti_RangeProfiler_Object *g_rp; // NULL while the range profiler is disabled
static volatile const char *g_stage = "start";
// Counter data images live to the end of the probe: the range profiler keeps pointing at the
// last one given to SetConfig (a deque, so that references stay valid as it grows).
static std::deque<std::vector<uint8_t>> g_images;
static std::vector<uint8_t> &new_image()
{
	g_images.emplace_back();
	return g_images.back();
}

// ---------------------------------------------------------------- helpers

// Checks a CUPTI call: prints "ERROR <call>: <code> <string>" and returns false on failure.
static bool ok(CUptiResult r, const char *call)
{
	if (r == CUPTI_SUCCESS)
		return true;
	printf("    ERROR %s: %d %s\n", call, (int)r, cupti_str(r));
	return false;
}

static bool cuda_ok(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return true;
	printf("    ERROR %s: %s\n", what, cudaGetErrorString(e));
	return false;
}

static bool cu_ok(CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return true;
	const char *s = NULL;
	if (drv.getErrorString)
		drv.getErrorString(r, &s);
	printf("    ERROR %s: %d %s\n", what, (int)r, s ? s : "?");
	return false;
}

static bool load_driver()
{
	// Linked with -lcuda: the probe runs only where a driver is.
	drv.ctxSynchronize = cuCtxSynchronize;
	drv.ctxGetCurrent = cuCtxGetCurrent;
	drv.ctxGetDevice = cuCtxGetDevice;
	drv.deviceGetName = cuDeviceGetName;
	drv.getErrorString = cuGetErrorString;
	return true;
}

// The watchdog and crash handlers name the step the probe was in (stdout is a file there).
static void on_signal(int sig)
{
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "\n%s: probe %s in step '%s'; exiting\n",
			 sig == SIGALRM ? "WATCHDOG" : "CRASH",
			 sig == SIGALRM ? "still running" : strsignal(sig), (const char *)g_stage);
	if (write(1, msg, (size_t)n) < 0) {
	}
	_exit(sig == SIGALRM ? 3 : 4);
}

static bool launch_inplace()
{
	inplace_add_one<<<(unsigned)((ELEMS + 255) / 256), 256>>>(g_buf, ELEMS);
	return cuda_ok(cudaGetLastError(), "inplace_add_one<<<>>>");
}

static bool ctx_sync()
{
	return cu_ok(drv.ctxSynchronize(), "cuCtxSynchronize");
}

// gpu__time_duration.sum of range index in image (ns), or -1 with the error printed once.
static double evaluate(const std::vector<uint8_t> &image, size_t index, bool quiet)
{
	double value = -1;
	CUptiResult r = evaluate_metrics(g_host, image, index, &METRIC, 1, &value);
	if (r != CUPTI_SUCCESS) {
		if (!quiet)
			ok(r, "cuptiProfilerHostEvaluateToGpuValues");
		return -1;
	}
	return value;
}

// A metric value in ns as text in us, "failed" for evaluate's -1.
static const char *us_text(double ns, char *buf, size_t size)
{
	if (ns < 0)
		snprintf(buf, size, "failed");
	else
		snprintf(buf, size, "%.2f us", ns / 1e3);
	return buf;
}

// ---------------------------------------------------------------- E: host cost per launch

static void launch_cost(const char *state)
{
	g_stage = state;
	std::vector<double> us;
	for (int rep = 0; rep < 4; rep++) {
		for (int i = 0; i < 200; i++)
			tiny<<<1, 32>>>(g_tiny);
		if (!ctx_sync())
			return;
		double t0 = now_ms();
		for (int i = 0; i < 2000; i++)
			tiny<<<1, 32>>>(g_tiny);
		double t1 = now_ms();
		if (!cuda_ok(cudaGetLastError(), "tiny<<<>>>") || !ctx_sync())
			return;
		if (rep)
			us.push_back((t1 - t0) * 1e3 / 2000);
	}
	std::sort(us.begin(), us.end());
	printf("  E  %-58s us/launch median %.3f (min %.3f, max %.3f; 3 x 2000 launches)\n", state,
	       us[1], us[0], us[2]);
	fflush(stdout);
}

// ---------------------------------------------------------------- set-up

static bool host_setup()
{
	g_stage = "host set-up";
	if (!profiler_host_create(g_ctx, g_names, g_name_count, &g_host, g_avail, g_config))
		return false;
	size_t passes = 0;
	if (host_num_passes(g_config, &passes))
		printf("config image: %zu bytes, %zu pass(es) for %s\n", g_config.size(), passes,
		       METRIC);
	return true;
}

// The probe's one range profiler object, g_rp, on g_ctx.
static bool rp_enable(double *ms)
{
	return range_profiler_enable(g_ctx, &g_rp, ms);
}

static bool rp_disable(double *ms)
{
	return range_profiler_disable(&g_rp, ms);
}

// Sizes image for ranges ranges (when empty) and initialises it, for g_rp and g_names.
static bool rp_image_init(std::vector<uint8_t> &image, size_t ranges)
{
	return counter_data_image(g_rp, g_names, g_name_count, ranges, image);
}

// rp_image_init + SetConfig with g_config, as collector/profiler.c's prepare_counter_data does.
static bool rp_prepare(std::vector<uint8_t> &image, size_t ranges, CUpti_ProfilerRange mode,
		       size_t max_per_pass)
{
	return counter_data_prepare(g_rp, g_names, g_name_count, g_config, image, ranges, mode,
				    max_per_pass);
}

// ---------------------------------------------------------------- A, B, C: range profiler

enum RangeKind { AUTO, USER_ONE, USER_EACH };

struct RpOpts {
	const char *label;
	int kernels;            // kernels per measured launch (0 for B2)
	bool sync_before_stop;  // cuCtxSynchronize between the launches and Stop
	bool prepare_each;      // CounterDataImageInitialize + SetConfig per measured launch
	RangeKind kind;
};

static void run_rp(const RpOpts &o)
{
	static char title[128];
	snprintf(title, sizeof(title), "%s N=%d", o.label, o.kernels);
	g_stage = o.label;
	if (!g_rp) {
		printf("  %s: skipped, the range profiler is not enabled\n", title);
		return;
	}
	Table t;
	t.title = title;
	int total_iters = WARMUP + ITERS;
	size_t per_launch = o.kind == USER_ONE ? 1 : (size_t)std::max(o.kernels, 1);
	// B3 keeps one image for all its measured launches: size it for all of them.
	size_t ranges = o.prepare_each ? per_launch : per_launch * (size_t)total_iters;
	CUpti_ProfilerRange mode = o.kind == AUTO ? CUPTI_AutoRange : CUPTI_UserRange;
	std::vector<uint8_t> &image = new_image();
	if (!o.prepare_each && !rp_prepare(image, ranges, mode, per_launch)) {
		printf("  %s: abandoned\n", title);
		return;
	}
	size_t last_ranges = 0, dropped = 0;
	double first = -1, last = -1;
	int decode_errors = 0, multi_pass = 0;
	for (int it = 0; it < total_iters; it++) {
		Table scratch; // warm-ups are recorded here and dropped
		Table &tt = it < WARMUP ? scratch : t;
		double start = now_ms(), lap = start;
		if (o.prepare_each) {
			if (!rp_prepare(image, ranges, mode, per_launch))
				goto abandon;
			tt.lap("prepare (init image + SetConfig)", &lap);
		}
		{
			bool all = false;
			int pass = 0;
			while (!all && pass < 8) {
				CUpti_RangeProfiler_Start_Params st = {
					CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
				st.pRangeProfilerObject = g_rp;
				if (!CK(cuptiRangeProfilerStart(&st)))
					goto abandon;
				tt.lap("cuptiRangeProfilerStart", &lap);
				CUpti_RangeProfiler_PushRange_Params push = {
					CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
				push.pRangeProfilerObject = g_rp;
				push.pRangeName = "runs";
				CUpti_RangeProfiler_PopRange_Params pop = {
					CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
				pop.pRangeProfilerObject = g_rp;
				bool good = true;
				if (o.kind == USER_ONE) {
					good = CK(cuptiRangeProfilerPushRange(&push));
					tt.lap("cuptiRangeProfilerPushRange", &lap);
				}
				for (int k = 0; good && k < o.kernels; k++) {
					if (o.kind == USER_EACH) {
						// one name per kernel: CUPTI keys user ranges by name stack
						static char names[64][16];
						snprintf(names[k % 64], sizeof(names[0]), "run%d", k);
						push.pRangeName = names[k % 64];
						good = CK(cuptiRangeProfilerPushRange(&push));
					}
					good = good && launch_inplace();
					if (good && o.kind == USER_EACH)
						good = CK(cuptiRangeProfilerPopRange(&pop));
				}
				if (o.kernels)
					tt.lap(o.kind == USER_EACH ? "launches (with Push/Pop each)" :
								     "launches",
					       &lap);
				if (good && o.kind == USER_ONE) {
					good = CK(cuptiRangeProfilerPopRange(&pop));
					tt.lap("cuptiRangeProfilerPopRange", &lap);
				}
				if (good && o.sync_before_stop) {
					good = ctx_sync();
					tt.lap("cuCtxSynchronize before Stop", &lap);
				}
				CUpti_RangeProfiler_Stop_Params sp = {
					CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
				sp.pRangeProfilerObject = g_rp;
				bool stopped = CK(cuptiRangeProfilerStop(&sp));
				tt.lap("cuptiRangeProfilerStop", &lap);
				if (!good || !stopped)
					goto abandon;
				all = sp.isAllPassSubmitted;
				pass++;
			}
			if (pass > 1)
				multi_pass = pass;
		}
		{
			CUpti_RangeProfiler_DecodeData_Params dec = {
				CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
			dec.pRangeProfilerObject = g_rp;
			CUptiResult r = cuptiRangeProfilerDecodeData(&dec);
			tt.lap("cuptiRangeProfilerDecodeData", &lap);
			if (r != CUPTI_SUCCESS) {
				if (!decode_errors++)
					ok(r, "cuptiRangeProfilerDecodeData");
			} else {
				dropped += dec.numOfRangeDropped;
			}
			last_ranges = range_count(image, decode_errors > 0);
			if (last_ranges != (size_t)-1 && last_ranges > 0) {
				first = evaluate(image, last_ranges >= per_launch ?
								last_ranges - per_launch : 0,
						 decode_errors > 0);
				last = evaluate(image, last_ranges - 1, true);
			}
			tt.lap("GetCounterDataInfo + evaluate", &lap);
			tt.add("total", lap - start);
		}
		// Untimed: the GPU idle before the next measured launch (matters for B1).
		if (!ctx_sync())
			goto abandon;
	}
	t.print();
	printf("    ranges in image after the last launch: %zd, dropped (all launches): %zu, "
	       "decode errors: %d%s\n",
	       (ssize_t)last_ranges, dropped, decode_errors,
	       multi_pass ? " (needed more than one pass!)" : "");
	char b1[32], b2[32];
	if (o.kernels)
		printf("    %s of the last launch's first range %s, of its last range %s\n", METRIC,
		       us_text(first, b1, sizeof(b1)), us_text(last, b2, sizeof(b2)));
	fflush(stdout);
	return;
abandon:
	{
		// Leave the range profiler stopped for the next variant (error ignored).
		CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
		sp.pRangeProfilerObject = g_rp;
		cuptiRangeProfilerStop(&sp);
		cudaDeviceSynchronize();
		cudaGetLastError();
	}
	printf("  %s: abandoned after an error (results so far below)\n", title);
	t.print();
}

// ---------------------------------------------------------------- D: legacy profiling API

struct LegacyImage {
	const char *how;
	std::vector<uint8_t> pristine; // initialised, never used by a session
};
static std::vector<LegacyImage> g_legacy_images;

// Two candidate counter data images for the legacy session, built while the range profiler is
// enabled: (1) the legacy way, cuptiProfilerCounterDataImageInitialize from a counter data
// prefix; CUDA 13 has no CUPTI call that makes a prefix (it came from NVPW's
// CounterDataBuilder), so it is extracted from a range profiler image with
// NVPW_CounterData_ExtractCounterDataPrefix (libnvperf_host.so, dlopen'ed so the build needs
// no extra library); (2) a range profiler image used as it is.
static void build_legacy_images()
{
	g_stage = "legacy counter data images";
	LegacyImage rp_image = {"range profiler image (cuptiRangeProfilerCounterDataImageInitialize)", {}};
	if (!rp_image_init(rp_image.pristine, LEGACY_RANGES)) {
		printf("  D: no range profiler counter data image to start from\n");
		return;
	}
	void *lib = NULL;
	const char *paths[] = {"libnvperf_host.so", "/usr/local/cuda/lib64/libnvperf_host.so",
			       "/usr/local/cuda/extras/CUPTI/lib64/libnvperf_host.so"};
	for (const char *p : paths)
		if ((lib = dlopen(p, RTLD_NOW | RTLD_NOLOAD)) || (lib = dlopen(p, RTLD_NOW)))
			break;
	typedef NVPA_Status (*init_fn)(NVPW_InitializeHost_Params *);
	typedef NVPA_Status (*extract_fn)(NVPW_CounterData_ExtractCounterDataPrefix_Params *);
	init_fn init = lib ? (init_fn)dlsym(lib, "NVPW_InitializeHost") : NULL;
	extract_fn extract =
		lib ? (extract_fn)dlsym(lib, "NVPW_CounterData_ExtractCounterDataPrefix") : NULL;
	if (!init || !extract) {
		const char *why = dlerror();
		printf("  D: libnvperf_host.so / NVPW_CounterData_ExtractCounterDataPrefix not found (%s); "
		       "only the range profiler image is tried\n",
		       why ? why : "?");
	} else {
		NVPW_InitializeHost_Params ip = {NVPW_InitializeHost_Params_STRUCT_SIZE};
		NVPA_Status s = init(&ip);
		NVPW_CounterData_ExtractCounterDataPrefix_Params ex = {
			NVPW_CounterData_ExtractCounterDataPrefix_Params_STRUCT_SIZE};
		ex.pCounterDataSrc = rp_image.pristine.data();
		ex.counterDataSrcSize = rp_image.pristine.size();
		if (s == NVPA_STATUS_SUCCESS)
			s = extract(&ex);
		std::vector<uint8_t> prefix;
		if (s == NVPA_STATUS_SUCCESS) {
			prefix.resize(ex.counterDataPrefixSize);
			ex.pCounterDataPrefix = prefix.data();
			s = extract(&ex);
		}
		if (s != NVPA_STATUS_SUCCESS) {
			printf("  D: NVPW_InitializeHost/ExtractCounterDataPrefix failed: NVPA status %d\n",
			       (int)s);
		} else {
			CUpti_Profiler_CounterDataImageOptions opt = {
				CUpti_Profiler_CounterDataImageOptions_STRUCT_SIZE};
			opt.pCounterDataPrefix = prefix.data();
			opt.counterDataPrefixSize = prefix.size();
			opt.maxNumRanges = (uint32_t)LEGACY_RANGES;
			opt.maxNumRangeTreeNodes = (uint32_t)LEGACY_RANGES;
			opt.maxRangeNameLength = 64;
			CUpti_Profiler_CounterDataImage_CalculateSize_Params cs = {
				CUpti_Profiler_CounterDataImage_CalculateSize_Params_STRUCT_SIZE};
			cs.sizeofCounterDataImageOptions = CUpti_Profiler_CounterDataImageOptions_STRUCT_SIZE;
			cs.pOptions = &opt;
			if (CK(cuptiProfilerCounterDataImageCalculateSize(&cs))) {
				LegacyImage li = {"legacy image (prefix extracted by NVPW + "
						  "cuptiProfilerCounterDataImageInitialize)",
						  std::vector<uint8_t>(cs.counterDataImageSize, 0)};
				CUpti_Profiler_CounterDataImage_Initialize_Params ci = {
					CUpti_Profiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
				ci.sizeofCounterDataImageOptions =
					CUpti_Profiler_CounterDataImageOptions_STRUCT_SIZE;
				ci.pOptions = &opt;
				ci.counterDataImageSize = li.pristine.size();
				ci.pCounterDataImage = li.pristine.data();
				if (CK(cuptiProfilerCounterDataImageInitialize(&ci)))
					g_legacy_images.push_back(li);
			}
		}
	}
	g_legacy_images.push_back(rp_image);
}

struct LegacySession {
	std::vector<uint8_t> image, scratch;
	bool begun = false, configured = false;
	const char *how = "";
};

static bool legacy_set_config()
{
	CUpti_Profiler_SetConfig_Params sc = {CUpti_Profiler_SetConfig_Params_STRUCT_SIZE};
	sc.ctx = g_ctx;
	sc.pConfig = g_config.data();
	sc.configSize = g_config.size();
	sc.minNestingLevel = 1;
	sc.numNestingLevels = 1;
	sc.passIndex = 0;
	sc.targetNestingLevel = 1;
	return CK(cuptiProfilerSetConfig(&sc));
}

static void legacy_end(LegacySession &s)
{
	if (s.configured) {
		CUpti_Profiler_UnsetConfig_Params u = {CUpti_Profiler_UnsetConfig_Params_STRUCT_SIZE};
		u.ctx = g_ctx;
		CK(cuptiProfilerUnsetConfig(&u));
		s.configured = false;
	}
	if (s.begun) {
		CUpti_Profiler_EndSession_Params e = {CUpti_Profiler_EndSession_Params_STRUCT_SIZE};
		e.ctx = g_ctx;
		CK(cuptiProfilerEndSession(&e));
		s.begun = false;
	}
}

// BeginSession (AutoRange, UserReplay) + SetConfig with the host API's config image, trying
// each candidate counter data image until one is accepted.
static bool legacy_begin(LegacySession &s, int n, Table &setup)
{
	for (const LegacyImage &li : g_legacy_images) {
		s.image = li.pristine;
		s.how = li.how;
		double lap = now_ms();
		CUpti_Profiler_CounterDataImage_CalculateScratchBufferSize_Params ss = {
			CUpti_Profiler_CounterDataImage_CalculateScratchBufferSize_Params_STRUCT_SIZE};
		ss.counterDataImageSize = s.image.size();
		ss.pCounterDataImage = s.image.data();
		if (!CK(cuptiProfilerCounterDataImageCalculateScratchBufferSize(&ss))) {
			printf("    (with the %s)\n", li.how);
			continue;
		}
		s.scratch.assign(ss.counterDataScratchBufferSize, 0);
		CUpti_Profiler_CounterDataImage_InitializeScratchBuffer_Params is = {
			CUpti_Profiler_CounterDataImage_InitializeScratchBuffer_Params_STRUCT_SIZE};
		is.counterDataImageSize = s.image.size();
		is.pCounterDataImage = s.image.data();
		is.counterDataScratchBufferSize = s.scratch.size();
		is.pCounterDataScratchBuffer = s.scratch.data();
		if (!CK(cuptiProfilerCounterDataImageInitializeScratchBuffer(&is))) {
			printf("    (with the %s)\n", li.how);
			continue;
		}
		setup.lap("scratch buffer", &lap);
		CUpti_Profiler_BeginSession_Params b = {CUpti_Profiler_BeginSession_Params_STRUCT_SIZE};
		b.ctx = g_ctx;
		b.counterDataImageSize = s.image.size();
		b.pCounterDataImage = s.image.data();
		b.counterDataScratchBufferSize = s.scratch.size();
		b.pCounterDataScratchBuffer = s.scratch.data();
		b.range = CUPTI_AutoRange;
		b.replayMode = CUPTI_UserReplay;
		b.maxRangesPerPass = (size_t)n;
		b.maxLaunchesPerPass = (size_t)n;
		if (!CK(cuptiProfilerBeginSession(&b))) {
			printf("    (with the %s)\n", li.how);
			continue;
		}
		s.begun = true;
		setup.lap("cuptiProfilerBeginSession", &lap);
		if (!legacy_set_config()) {
			printf("    the legacy cuptiProfilerSetConfig refused the host API's config image "
			       "(session begun with the %s)\n",
			       li.how);
			legacy_end(s);
			continue;
		}
		s.configured = true;
		setup.lap("cuptiProfilerSetConfig", &lap);
		return true;
	}
	return false;
}

static bool g_legacy_failed; // no session could be set up: the other D variants are skipped

static void run_legacy(int n, bool sync_before_end, bool measure_launch_cost)
{
	static char title[128]; // static: g_stage points at it
	snprintf(title, sizeof(title), "D%d legacy API%s N=%d", sync_before_end ? 2 : 1,
		 sync_before_end ? " + sync before EndPass" : "", n);
	g_stage = title;
	if (g_legacy_images.empty() || g_legacy_failed) {
		printf("  %s: skipped (%s)\n", title,
		       g_legacy_failed ? "no legacy session could be set up, above" :
					 "no counter data image");
		return;
	}
	Table setup;
	setup.title = std::string(title) + " one-off set-up";
	LegacySession s;
	if (!legacy_begin(s, n, setup)) {
		printf("  %s: no legacy session with any candidate image\n", title);
		g_legacy_failed = true;
		return;
	}
	printf("  %s: session begun with the %s\n", title, s.how);
	Table t;
	t.title = title;
	bool reconfig = false; // set when BeginPass refuses a second measured launch on one config
	size_t dropped = 0;
	int total_iters = WARMUP + ITERS;
	for (int it = 0; it < total_iters; it++) {
		Table scratch;
		Table &tt = it < WARMUP ? scratch : t;
		double start = now_ms(), lap = start;
		bool retried = false;
	again:
		if (reconfig) {
			CUpti_Profiler_UnsetConfig_Params u = {
				CUpti_Profiler_UnsetConfig_Params_STRUCT_SIZE};
			u.ctx = g_ctx;
			if (!CK(cuptiProfilerUnsetConfig(&u)) || !legacy_set_config())
				goto abandon;
			tt.lap("UnsetConfig + SetConfig (fallback)", &lap);
		}
		{
			bool all = false;
			int pass = 0;
			while (!all && pass < 8) {
				CUpti_Profiler_BeginPass_Params bp = {
					CUpti_Profiler_BeginPass_Params_STRUCT_SIZE};
				bp.ctx = g_ctx;
				CUptiResult r = cuptiProfilerBeginPass(&bp);
				if (r != CUPTI_SUCCESS) {
					ok(r, "cuptiProfilerBeginPass");
					if (it > 0 && pass == 0 && !reconfig && !retried) {
						printf("    BeginPass refused measured launch %d on the same "
						       "SetConfig; from now on UnsetConfig + SetConfig before "
						       "each measured launch\n",
						       it + 1);
						reconfig = true;
						retried = true;
						lap = now_ms();
						start = lap;
						goto again;
					}
					goto abandon;
				}
				tt.lap("cuptiProfilerBeginPass", &lap);
				CUpti_Profiler_EnableProfiling_Params en = {
					CUpti_Profiler_EnableProfiling_Params_STRUCT_SIZE};
				en.ctx = g_ctx;
				if (!CK(cuptiProfilerEnableProfiling(&en)))
					goto abandon;
				tt.lap("cuptiProfilerEnableProfiling", &lap);
				bool good = true;
				for (int k = 0; good && k < n; k++)
					good = launch_inplace();
				tt.lap("launches", &lap);
				CUpti_Profiler_DisableProfiling_Params dis = {
					CUpti_Profiler_DisableProfiling_Params_STRUCT_SIZE};
				dis.ctx = g_ctx;
				good = CK(cuptiProfilerDisableProfiling(&dis)) && good;
				tt.lap("cuptiProfilerDisableProfiling", &lap);
				if (good && sync_before_end) {
					good = ctx_sync();
					tt.lap("cuCtxSynchronize before EndPass", &lap);
				}
				CUpti_Profiler_EndPass_Params ep = {
					CUpti_Profiler_EndPass_Params_STRUCT_SIZE};
				ep.ctx = g_ctx;
				bool ended = CK(cuptiProfilerEndPass(&ep));
				tt.lap("cuptiProfilerEndPass", &lap);
				if (!good || !ended)
					goto abandon;
				all = ep.allPassesSubmitted;
				pass++;
			}
			if (pass > 1)
				printf("    measured launch %d needed %d passes\n", it + 1, pass);
		}
		{
			CUpti_Profiler_FlushCounterData_Params fl = {
				CUpti_Profiler_FlushCounterData_Params_STRUCT_SIZE};
			fl.ctx = g_ctx;
			if (!CK(cuptiProfilerFlushCounterData(&fl)))
				goto abandon;
			dropped += fl.numRangesDropped;
			tt.lap("cuptiProfilerFlushCounterData", &lap);
			tt.add("total", lap - start);
		}
		if (!ctx_sync())
			goto abandon;
	}
	setup.print();
	t.print();
	{
		size_t ranges = range_count(s.image, false);
		printf("    ranges in the image after %d measured launches: %zd (dropped %zu)\n",
		       total_iters, (ssize_t)ranges, dropped);
		if (ranges != (size_t)-1 && ranges > 0) {
			char b1[32], b2[32];
			double v0 = evaluate(s.image, 0, false);
			double vl = evaluate(s.image, ranges - 1, true);
			printf("    %s via cuptiProfilerHostEvaluateToGpuValues: range 0 %s, range %zu %s\n",
			       METRIC, us_text(v0, b1, sizeof(b1)), ranges - 1, us_text(vl, b2, sizeof(b2)));
		}
	}
	if (measure_launch_cost)
		launch_cost("legacy session begun + SetConfig, between passes (D)");
	legacy_end(s);
	fflush(stdout);
	return;
abandon:
	printf("  %s: abandoned after an error (results so far below)\n", title);
	{
		CUpti_Profiler_DisableProfiling_Params dis = {
			CUpti_Profiler_DisableProfiling_Params_STRUCT_SIZE};
		dis.ctx = g_ctx;
		cuptiProfilerDisableProfiling(&dis);
		CUpti_Profiler_EndPass_Params ep = {CUpti_Profiler_EndPass_Params_STRUCT_SIZE};
		ep.ctx = g_ctx;
		cuptiProfilerEndPass(&ep);
		cudaDeviceSynchronize();
		cudaGetLastError();
	}
	setup.print();
	t.print();
	legacy_end(s);
}

// ---------------------------------------------------------------- F: Disable / Enable cycle

static void run_enable_cycle()
{
	g_stage = "F enable/disable cycle";
	Table t;
	t.title = "F Disable+Enable around a launch N=1";
	for (int it = 0; it < 4; it++) {
		Table scratch;
		Table &tt = it == 0 ? scratch : t; // the first cycle's Start is the context's slow first
		double ms, lap, start = now_ms();
		if (!rp_disable(&ms))
			goto fail;
		tt.add("cuptiRangeProfilerDisable", ms);
		if (!rp_enable(&ms))
			goto fail;
		tt.add("cuptiRangeProfilerEnable", ms);
		std::vector<uint8_t> &image = new_image(); // a new object: size an image again
		lap = now_ms();
		if (!rp_prepare(image, 1, CUPTI_AutoRange, 1))
			goto fail;
		tt.lap("GetCounterDataSize + init + SetConfig", &lap);
		{
			CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
			st.pRangeProfilerObject = g_rp;
			if (!CK(cuptiRangeProfilerStart(&st)))
				goto fail;
			tt.lap("cuptiRangeProfilerStart (after Enable)", &lap);
			bool good = launch_inplace() && ctx_sync();
			tt.lap("launch + sync", &lap);
			CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
			sp.pRangeProfilerObject = g_rp;
			if (!CK(cuptiRangeProfilerStop(&sp)) || !good)
				goto fail;
			tt.lap("cuptiRangeProfilerStop", &lap);
			CUpti_RangeProfiler_DecodeData_Params dec = {
				CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
			dec.pRangeProfilerObject = g_rp;
			CK(cuptiRangeProfilerDecodeData(&dec));
			tt.lap("cuptiRangeProfilerDecodeData", &lap);
			tt.add("total (Disable .. Decode)", lap - start);
		}
	}
	t.print();
	printf("    (3 cycles after one unrecorded; in each, Disable of the previous object, Enable "
	       "of a new one and its first Start)\n");
	return;
fail:
	printf("  F: abandoned after an error (results so far below)\n");
	t.print();
}

// ---------------------------------------------------------------- main

// One pass of G and G2: prepare(ranges, mode) and Start; pass_end: the stream drained, Stop
// and Decode.
static bool pass_begin(std::vector<uint8_t> &image, size_t ranges, CUpti_ProfilerRange mode)
{
	if (!rp_prepare(image, ranges, mode, ranges))
		return false;
	CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
	st.pRangeProfilerObject = g_rp;
	return CK(cuptiRangeProfilerStart(&st));
}

static void pass_end(cudaStream_t s)
{
	cudaStreamSynchronize(s);
	CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
	sp.pRangeProfilerObject = g_rp;
	CK(cuptiRangeProfilerStop(&sp));
	CUpti_RangeProfiler_DecodeData_Params dec = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
	dec.pRangeProfilerObject = g_rp;
	CK(cuptiRangeProfilerDecodeData(&dec));
}

// ---------------------------------------------------------------- G: a CUDA graph under AutoRange

// How many ranges does AutoRange give one launch of a captured graph of three kernels:
// one per kernel node, or one for the whole graph? (rangeprof's --graph-profiling graph
// needs the graph's own duration.) Also the graph relaunched twice in one pass.
static void run_graph()
{
	g_stage = "G graph";
	cudaStream_t s;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	if (!cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate") ||
	    !cuda_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "BeginCapture"))
		return;
	for (int i = 0; i < 3; i++)
		inplace_add_one<<<(unsigned)((ELEMS + 255) / 256), 256, 0, s>>>(g_buf, ELEMS);
	if (!cuda_ok(cudaStreamEndCapture(s, &graph), "EndCapture") ||
	    !cuda_ok(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate"))
		return;
	for (int launches = 1; launches <= 2; launches++) {
		std::vector<uint8_t> &image = new_image();
		if (!pass_begin(image, 16, CUPTI_AutoRange))
			return;
		for (int l = 0; l < launches; l++)
			cuda_ok(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
		pass_end(s);
		size_t n = range_count(image, false);
		printf("  G %d graph launch(es) of 3 kernels: %zu range(s):", launches, n);
		for (size_t i = 0; n != (size_t)-1 && i < n; i++)
			printf(" %.2f us", evaluate(image, i, false) / 1e3);
		printf("\n");
	}
	// G2: the whole graph launch as one user range (Push before cudaGraphLaunch, Pop after),
	// beside CUDA events around the same launch: is this what ncu --graph-profiling graph
	// measures (~285 us for a graph whose launches take ~160 us by events, bench/NOTES.md)?
	// Also an empty user range and one around a single plain kernel, for the range's own
	// share. Five of each; every value printed.
	cudaEvent_t e0, e1;
	if (!cuda_ok(cudaEventCreate(&e0), "cudaEventCreate") || !cuda_ok(cudaEventCreate(&e1), "cudaEventCreate"))
		return;
	// A profiler object keeps the range mode of its first SetConfig (a Push on the AutoRange
	// object above is CUPTI_ERROR_INVALID_PARAMETER): a new object for user ranges, with a
	// first pass of its own (~145 ms) left out of the figures.
	if (!rp_disable(NULL) || !rp_enable(NULL))
		return;
	const char *what[4] = {"(warm-up, not a figure)", "graph launch", "empty range",
			       "one plain kernel"};
	for (int w = 0; w < 4; w++) {
		printf("  G2 UserRange around %s:", what[w]);
		for (int it = 0; it < 5; it++) {
			std::vector<uint8_t> &image = new_image();
			if (!pass_begin(image, 1, CUPTI_UserRange))
				return;
			CUpti_RangeProfiler_PushRange_Params push = {CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
			push.pRangeProfilerObject = g_rp;
			push.pRangeName = "graph";
			CUpti_RangeProfiler_PopRange_Params pop = {CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
			pop.pRangeProfilerObject = g_rp;
			cudaEventRecord(e0, s);
			CK(cuptiRangeProfilerPushRange(&push));
			if (w == 1)
				cuda_ok(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
			else if (w == 3)
				inplace_add_one<<<(unsigned)((ELEMS + 255) / 256), 256, 0, s>>>(g_buf, ELEMS);
			CK(cuptiRangeProfilerPopRange(&pop));
			cudaEventRecord(e1, s);
			pass_end(s);
			float ms = 0;
			cudaEventElapsedTime(&ms, e0, e1);
			size_t n = range_count(image, true);
			printf(" [%zu range(s): %.2f us; events %.2f us]", n == (size_t)-1 ? 0 : n,
			       n && n != (size_t)-1 ? evaluate(image, 0, true) / 1e3 : -1.0, ms * 1e3);
		}
		printf("\n");
	}
	// The same graph by events alone, no profiler pass around it.
	printf("  G3 events alone around the graph launch:");
	for (int it = 0; it < 5; it++) {
		cudaEventRecord(e0, s);
		cudaGraphLaunch(exec, s);
		cudaEventRecord(e1, s);
		cudaStreamSynchronize(s);
		float ms = 0;
		cudaEventElapsedTime(&ms, e0, e1);
		printf(" %.2f us", ms * 1e3);
	}
	printf("\n");
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	cudaGraphExecDestroy(exec);
	cudaGraphDestroy(graph);
	cudaStreamDestroy(s);
}

// ---------------------------------------------------------------- main

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && atoi(argv[1]) > 0)
		ITERS = atoi(argv[1]);
	int watchdog = argc > 2 ? atoi(argv[2]) : 100;
	if (argc > 3 && *argv[3]) {
		g_names[1] = argv[3];
		g_name_count = 2;
		printf("second metric configured: %s\n", argv[3]);
	}
	signal(SIGALRM, on_signal);
	signal(SIGSEGV, on_signal);
	signal(SIGBUS, on_signal);
	signal(SIGABRT, on_signal);
	signal(SIGFPE, on_signal);
	alarm(watchdog > 0 ? (unsigned)watchdog : 100);

	printf("stop_probe: %d iterations after %d warm-ups per variant, metric %s, kernel x += 1 "
	       "on %zu MB\n",
	       ITERS, WARMUP, METRIC, ELEMS * sizeof(float) >> 20);
	int driver = 0, rt = 0;
	uint32_t cupti = 0;
	cudaDriverGetVersion(&driver);
	cudaRuntimeGetVersion(&rt);
	CUptiResult vr = cuptiGetVersion(&cupti);
	printf("CUDA driver %d, runtime %d, CUPTI API version %u (built against %d)%s\n", driver, rt,
	       cupti, CUPTI_API_VERSION, vr == CUPTI_SUCCESS ? "" : " [cuptiGetVersion failed]");

	g_stage = "CUDA init";
	cudaError_t e = cudaFree(0);
	if (e != cudaSuccess) {
		printf("no usable GPU: cudaFree(0): %s; nothing measured\n", cudaGetErrorString(e));
		return 1;
	}
	CUdevice dev;
	char name[256] = "?";
	int major = 0, minor = 0;
	if (!load_driver() || !cu_ok(drv.ctxGetCurrent(&g_ctx), "cuCtxGetCurrent") ||
	    !cu_ok(drv.ctxGetDevice(&dev), "cuCtxGetDevice"))
		return 1;
	drv.deviceGetName(name, sizeof(name), dev);
	cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
	cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
	printf("GPU 0: %s (sm_%d%d)\n", name, major, minor);
	if (!cuda_ok(cudaMalloc(&g_buf, ELEMS * sizeof(float)), "cudaMalloc 64 MB") ||
	    !cuda_ok(cudaMemset(g_buf, 0, ELEMS * sizeof(float)), "cudaMemset") ||
	    !cuda_ok(cudaMalloc(&g_tiny, 8), "cudaMalloc") || !cuda_ok(cudaMemset(g_tiny, 0, 8), "cudaMemset"))
		return 1;
	// Plain kernel time for reference (no profiler): CUDA events around 20 launches.
	{
		cudaEvent_t a, b;
		cudaEventCreate(&a);
		cudaEventCreate(&b);
		for (int i = 0; i < 5; i++)
			launch_inplace();
		cudaEventRecord(a);
		for (int i = 0; i < 20; i++)
			launch_inplace();
		cudaEventRecord(b);
		cudaEventSynchronize(b);
		float ms = 0;
		cudaEventElapsedTime(&ms, a, b);
		printf("plain kernel (no profiler, CUDA events): %.2f us per launch\n", ms * 1e3 / 20);
	}

	printf("\n== E (before any CUPTI call): host time per launch of an empty kernel\n");
	launch_cost("no profiler (CUPTI not initialised)");

	printf("\n== set-up\n");
	double t0 = now_ms();
	if (!host_setup()) {
		printf("profiler host set-up failed; nothing else can be measured\n");
		return 1;
	}
	printf("host set-up (cuptiProfilerInitialize .. GetConfigImage): %.1f ms\n", now_ms() - t0);
	double ms = 0;
	if (rp_enable(&ms))
		printf("cuptiRangeProfilerEnable: %.1f ms\n", ms);
	else
		printf("range profiler unavailable: A, B, C, F are skipped\n");
	if (g_rp)
		build_legacy_images();
	for (const LegacyImage &li : g_legacy_images)
		printf("D candidate counter data image: %s, %zu bytes for %zu ranges\n", li.how,
		       li.pristine.size(), LEGACY_RANGES);

	const int Ns[2] = {1, 20};
	printf("\n== A: today's way (AutoRange + UserReplay, prepare + Start + launches + sync + Stop "
	       "+ Decode per measured launch)\n");
	for (int n : Ns)
		run_rp({"A today", n, true, true, AUTO});
	printf("\n== G: a CUDA graph under AutoRange\n");
	if (g_rp)
		run_graph();
	if (argc > 4 && !strcmp(argv[4], "quick")) {
		printf("\nstop_probe done (quick: A and G only)\n");
		return 0;
	}

	printf("\n== B: is Stop waiting on the GPU?\n");
	for (int n : Ns)
		run_rp({"B1 no sync before Stop", n, false, true, AUTO});
	run_rp({"B2 Start+Stop, zero kernels", 0, true, true, AUTO});
	run_rp({"B2 Start+Stop, zero kernels, no sync", 0, false, true, AUTO});
	for (int n : Ns)
		run_rp({"B3 one SetConfig for all launches", n, true, false, AUTO});

	printf("\n== C: UserRange mode\n");
	for (int n : Ns)
		run_rp({"C1 UserRange, one range", n, true, true, USER_ONE});
	run_rp({"C2 UserRange, one range per kernel", 20, true, true, USER_EACH});

	printf("\n== E: host time per launch of an empty kernel, by profiler state\n");
	if (g_rp && rp_prepare(new_image(), 1, CUPTI_AutoRange, 1)) // configured as A leaves it
		launch_cost("range profiler enabled + SetConfig (AutoRange), not started");

	printf("\n== F: Disable + Enable of the range profiler around a measured launch\n");
	if (g_rp)
		run_enable_cycle();
	if (g_rp && rp_disable(&ms))
		printf("cuptiRangeProfilerDisable: %.2f ms\n", ms);
	launch_cost("range profiler disabled again (CUPTI initialised)");

	printf("\n== D: legacy profiling API (cupti_profiler_target.h), AutoRange + UserReplay\n");
	run_legacy(1, false, true);
	run_legacy(20, false, false);
	run_legacy(1, true, false);
	run_legacy(20, true, false);

	printf("\n== E (end): host time per launch of an empty kernel\n");
	launch_cost("after everything (no session, range profiler disabled)");

	g_stage = "exit";
	CUpti_Profiler_Host_Deinitialize_Params hd = {CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
	hd.pHostObject = g_host;
	CK(cuptiProfilerHostDeinitialize(&hd));
	printf("\nstop_probe done\n");
	return 0;
}
