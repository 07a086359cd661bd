// bench/graph_range_probe.cu - what does the CUPTI range profiler report for a CUDA graph
// launch, and what would measuring a whole graph launch with counters cost?
//
// Results on the H200 (session 5, `./graph_range_probe 5`; doc/measurements.md, "Graph
// launches under the range profiler"): A's Stop fails (CUPTI_ERROR_UNKNOWN); B's graph range
// holds the three kernels' counters exactly; D: one object per context; C did not run (it
// met A's failure first). inject/measure/whole_workload.c's graph mode is built on B.
// Cited by inject/measure/whole_workload.c (A, B) and collector/profiler.h (enum
// collector_ranges: A, D).
//
// Why: rangeprof's --graph-profiling graph measured a whole graph launch, then only by its
// time, from CUDA events around cudaGraphLaunch (bench/NOTES.md, "CUDA graphs": the range
// profiler gave a graph launch a single range without a duration, stop_probe G). Metrics
// other than time need to know whether AutoRange gives the graph launch a range with counters
// (dram bytes, instructions, cycles) or a UserRange profiler object is needed, and what
// switching between the two objects costs, since an object keeps the range mode of its first
// SetConfig (stop_probe G2) and, as far as bench/NOTES.md knows, only one object can be
// enabled on a context at a time (D checks that).
//
// Workload: 64 MB of float; a graph captured from a stream with 3 kernel nodes,
// inplace_add_one (probe.h), scale_add (x = x*0.5f + 1), inplace_add_one again (~40 us each
// on an H200); the same 3 kernels launched plainly on the same stream for comparison. Before
// each measured launch (the 3 plain kernels as one, the graph as one) the L2 is flushed by a
// cudaMemsetAsync of a 256 MB scratch buffer, so that their DRAM reads are comparable (the
// memset's dirty lines are evicted during what follows in both cases alike).
//   R  no profiler: CUDA events around the 3 plain launches and around the graph launch.
//   A  AutoRange + UserReplay (as collector/profiler.c and stop_probe A), one pass holding the
//      3 plain launches, then one cudaGraphLaunch. Every range's name and every metric's
//      value; the sum over the plain ranges (the first 3) and over the ranges after them (the
//      graph's, if the memsets make none: the names say, and a last pass holding only the
//      flush checks it), and after / plain per metric. Does the graph launch come back as one
//      range, three, or none, and with counters equal to the plain kernels' sum?
//   B  UserRange mode on a new profiler object (the AutoRange one disabled first, as stop_probe
//      G2): one pass, PushRange "plain3" around the 3 plain launches, PopRange; flush;
//      PushRange "graph" around cudaGraphLaunch, PopRange. Every metric of both ranges, and
//      CUDA events around each range's content (inside Push/Pop).
//   C  the cost of switching objects, as a design that switches modes per graph launch pays it:
//      Disable of the AutoRange object, Enable of a UserRange object, its first
//      SetConfig + Start + Stop (+ Decode) around one graph launch, then the reverse switch
//      back to AutoRange; beside it a second pass on the same AutoRange object (no switch).
//      Median (min, max) over ITERS.
//   D  can two range profiler objects exist on one context at once: Enable a second while the
//      AutoRange object is enabled; CUPTI's result string, and whether the first still works.
// Each variant runs one unrecorded warm-up iteration, then ITERS recorded ones. Every CUPTI
// and CUDA call is checked; an error prints the call and the error string and ends only that
// variant. A watchdog (alarm) ends the probe with a message naming the stage that hung.
//
// Build (no GPU needed): meson setup build-bench -Dbench=true && meson compile -C build-bench
// bench, giving build-bench/bench/graph_range_probe; or by hand, in one line:
//   nvcc -O2 -arch=sm_90 -std=c++17 bench/graph_range_probe.cu -o graph_range_probe -lcuda
//     -lcupti -L/usr/local/cuda/lib64 -I/usr/local/cuda/include -Xlinker
//     -rpath=/usr/local/cuda/lib64
// Run, on the GPU machine: ./graph_range_probe [iterations=5] [metrics=gpu__time_duration.sum,
//   dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed.sum,gpc__cycles_elapsed.max,
//   sm__cycles_active.max] [watchdog_seconds=120]
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <cupti_version.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "probe.h"

static const char *DEFAULT_METRICS = "gpu__time_duration.sum,dram__bytes_read.sum,"
				     "dram__bytes_write.sum,sm__inst_executed.sum,"
				     "gpc__cycles_elapsed.max,sm__cycles_active.max";
static int ITERS = 5;
static const size_t ELEMS = 16u << 20;        // 64 MB of float
static const size_t FLUSH_BYTES = 256u << 20; // L2 flush: a memset of 256 MB
static const size_t AUTO_RANGES = 16;         // image capacity in A (4 or 6 expected)
static const int MAX_PASSES = 8;

static std::vector<std::string> g_metric_text; // the metric names (argv[2])
static std::vector<const char *> g_names;      // pointers into g_metric_text
static CUcontext g_ctx;
static float *g_buf;
static void *g_flush;
static cudaStream_t g_s;
static cudaGraph_t g_graph;
static cudaGraphExec_t g_exec;
static cudaEvent_t g_ev[4];
static CUpti_Profiler_Host_Object *g_host;
static std::vector<uint8_t> g_avail, g_config;
static size_t g_passes; // passes the config image needs (GetNumOfPasses)
// The two profiler objects: NULL while disabled. Only one is enabled at a time (D asks
// whether two can be).
static CUpti_RangeProfiler_Object *g_auto, *g_user;
static volatile const char *g_stage = "start";
static const char *g_variant = "start"; // the variant g_step's stage names belong to
// g_stage = "<variant>: <step>" (the watchdog prints it)
static void g_step(const char *step)
{
	static char buf[2][160];
	static int which;
	which ^= 1;
	snprintf(buf[which], sizeof(buf[which]), "%s: %s", g_variant, step);
	g_stage = buf[which];
}
// Counter data images live to the end of the probe: a range profiler object keeps pointing at
// the last one given to SetConfig (a deque, so that references stay valid as it grows).
static std::deque<std::vector<uint8_t>> g_images;
static std::vector<uint8_t> &new_image()
{
	g_images.emplace_back();
	return g_images.back();
}

__global__ void scale_add(float *x, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = x[i] * 0.5f + 1.0f;
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
#define CU(call) cuda_ok((call), #call)

static bool cu_ok(CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return true;
	const char *s = NULL;
	cuGetErrorString(r, &s);
	printf("    ERROR %s: %d %s\n", what, (int)r, s ? s : "?");
	return false;
}

// The watchdog and crash handlers name the stage the probe was in (stdout is a file there).
static void on_signal(int sig)
{
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "\n%s: probe %s in stage '%s'; exiting\n",
			 sig == SIGALRM ? "WATCHDOG" : "CRASH",
			 sig == SIGALRM ? "still running" : strsignal(sig), (const char *)g_stage);
	if (write(1, msg, (size_t)n) < 0) {
	}
	_exit(sig == SIGALRM ? 3 : 4);
}

// ---------------------------------------------------------------- the workload

static bool launch_check(const char *what)
{
	return cuda_ok(cudaGetLastError(), what);
}

// The 3 kernels launched plainly on g_s: the graph's nodes, in the graph's order.
static bool launch_plain3()
{
	unsigned blocks = (unsigned)((ELEMS + 255) / 256);
	inplace_add_one<<<blocks, 256, 0, g_s>>>(g_buf, ELEMS);
	if (!launch_check("inplace_add_one<<<>>>"))
		return false;
	scale_add<<<blocks, 256, 0, g_s>>>(g_buf, ELEMS);
	if (!launch_check("scale_add<<<>>>"))
		return false;
	inplace_add_one<<<blocks, 256, 0, g_s>>>(g_buf, ELEMS);
	return launch_check("inplace_add_one<<<>>>");
}

static bool flush_l2()
{
	static int value;
	value = (value + 1) & 0xff;
	return CU(cudaMemsetAsync(g_flush, value, FLUSH_BYTES, g_s));
}

static bool graph_launch()
{
	return CU(cudaGraphLaunch(g_exec, g_s));
}

static bool record(int i)
{
	return CU(cudaEventRecord(g_ev[i], g_s));
}

// us between events a and b, NAN on error (printed).
static double event_us(int a, int b)
{
	float ms = 0;
	if (!CU(cudaEventElapsedTime(&ms, g_ev[a], g_ev[b])))
		return NAN;
	return ms * 1e3;
}

static bool stream_sync()
{
	return CU(cudaStreamSynchronize(g_s));
}

static bool setup_workload()
{
	g_stage = "workload set-up";
	if (!CU(cudaMalloc(&g_buf, ELEMS * sizeof(float))) ||
	    !CU(cudaMemset(g_buf, 0, ELEMS * sizeof(float))) || !CU(cudaMalloc(&g_flush, FLUSH_BYTES)) ||
	    !CU(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking)))
		return false;
	for (int i = 0; i < 4; i++)
		if (!CU(cudaEventCreate(&g_ev[i])))
			return false;
	if (!CU(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeGlobal)))
		return false;
	bool launched = launch_plain3();
	bool ended = CU(cudaStreamEndCapture(g_s, &g_graph));
	if (!launched || !ended || !CU(cudaGraphInstantiate(&g_exec, g_graph, 0)))
		return false;
	size_t nodes = 0;
	if (!CU(cudaGraphGetNodes(g_graph, NULL, &nodes)))
		return false;
	std::vector<cudaGraphNode_t> list(nodes);
	if (nodes && !CU(cudaGraphGetNodes(g_graph, list.data(), &nodes)))
		return false;
	int kernels = 0;
	for (cudaGraphNode_t n : list) {
		cudaGraphNodeType type;
		if (!CU(cudaGraphNodeGetType(n, &type)))
			return false;
		kernels += type == cudaGraphNodeTypeKernel;
	}
	printf("graph: %zu nodes, %d kernel nodes (inplace_add_one, scale_add, inplace_add_one)\n",
	       nodes, kernels);
	return true;
}

// R: no profiler. flush, events around the 3 plain launches, flush, events around the graph.
static void run_reference()
{
	g_variant = "R no profiler";
	g_stage = g_variant;
	std::vector<double> plain, graph;
	for (int it = 0; it <= ITERS; it++) {
		if (!flush_l2() || !record(0) || !launch_plain3() || !record(1) || !flush_l2() ||
		    !record(2) || !graph_launch() || !record(3) || !stream_sync()) {
			printf("  R: abandoned after an error\n");
			return;
		}
		if (it) {
			plain.push_back(event_us(0, 1));
			graph.push_back(event_us(2, 3));
		}
	}
	printf("  R events, no profiler: 3 plain launches");
	for (double v : plain)
		printf(" %.2f", v);
	printf(" us (median %.2f); graph launch", median(plain));
	for (double v : graph)
		printf(" %.2f", v);
	printf(" us (median %.2f)\n", median(graph));
}

// ---------------------------------------------------------------- the profiler

static bool host_setup()
{
	g_stage = "host set-up";
	if (!profiler_host_create(g_ctx, g_names.data(), g_names.size(), &g_host, g_avail, g_config) ||
	    !host_num_passes(g_config, &g_passes))
		return false;
	printf("config image: %zu bytes, %zu pass(es) for the %zu metrics (UserReplay replays each "
	       "pass's content)\n",
	       g_config.size(), g_passes, g_names.size());
	return true;
}

// Enable / Disable of the object in *obj on g_ctx, the step named for the watchdog.
static bool rp_enable(CUpti_RangeProfiler_Object **obj, double *ms)
{
	g_step("cuptiRangeProfilerEnable");
	return range_profiler_enable(g_ctx, obj, ms);
}

static bool rp_disable(CUpti_RangeProfiler_Object **obj, double *ms)
{
	if (*obj)
		g_step("cuptiRangeProfilerDisable");
	return range_profiler_disable(obj, ms);
}

// Sizes image for ranges ranges (when empty), initialises it and SetConfig, as
// collector/profiler.c's prepare_counter_data does.
static bool rp_prepare(CUpti_RangeProfiler_Object *obj, std::vector<uint8_t> &image,
		       size_t ranges, CUpti_ProfilerRange mode)
{
	return counter_data_prepare(obj, g_names.data(), g_names.size(), g_config, image, ranges,
				    mode, ranges);
}

// Host time of each phase of one measurement, summed over its passes.
struct PassTimes {
	double prepare = 0, start = 0, content = 0, stop = 0, decode = 0;
	int passes = 0;
	size_t dropped = 0;
};

// One measurement on obj: image prepared (rp_prepare), then per pass Start, content, the
// stream drained, Stop, until CUPTI says every pass is submitted (UserReplay: the content is
// replayed once per pass), then Decode. After an error the object is left stopped.
static bool run_pass(CUpti_RangeProfiler_Object *obj, std::vector<uint8_t> &image, size_t ranges,
		     CUpti_ProfilerRange mode, const std::function<bool()> &content, PassTimes *t)
{
	PassTimes local;
	if (!t)
		t = &local;
	*t = PassTimes();
	g_step("prepare (init image, SetConfig)");
	double lap = now_ms();
	if (!rp_prepare(obj, image, ranges, mode))
		return false;
	t->prepare = now_ms() - lap;
	bool all = false;
	while (!all && t->passes < MAX_PASSES) {
		g_step("cuptiRangeProfilerStart");
		lap = now_ms();
		CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
		st.pRangeProfilerObject = obj;
		if (!CK(cuptiRangeProfilerStart(&st)))
			return false;
		double t1 = now_ms();
		g_step("the pass's launches and cudaStreamSynchronize");
		bool good = content() && stream_sync();
		double t2 = now_ms();
		g_step("cuptiRangeProfilerStop");
		CUpti_RangeProfiler_Stop_Params sp = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
		sp.pRangeProfilerObject = obj;
		bool stopped = CK(cuptiRangeProfilerStop(&sp));
		double t3 = now_ms();
		t->start += t1 - lap;
		t->content += t2 - t1;
		t->stop += t3 - t2;
		if (!good || !stopped) {
			cudaStreamSynchronize(g_s);
			cudaGetLastError();
			return false;
		}
		all = sp.isAllPassSubmitted;
		t->passes++;
	}
	if (!all) {
		printf("    ERROR not every pass submitted after %d passes\n", MAX_PASSES);
		return false;
	}
	g_step("cuptiRangeProfilerDecodeData");
	lap = now_ms();
	CUpti_RangeProfiler_DecodeData_Params dec = {CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
	dec.pRangeProfilerObject = obj;
	if (!CK(cuptiRangeProfilerDecodeData(&dec)))
		return false;
	t->decode = now_ms() - lap;
	t->dropped = dec.numOfRangeDropped;
	return true;
}

static bool push(CUpti_RangeProfiler_Object *obj, const char *name)
{
	CUpti_RangeProfiler_PushRange_Params p = {CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
	p.pRangeProfilerObject = obj;
	p.pRangeName = name;
	return CK(cuptiRangeProfilerPushRange(&p));
}

static bool pop(CUpti_RangeProfiler_Object *obj)
{
	CUpti_RangeProfiler_PopRange_Params p = {CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
	p.pRangeProfilerObject = obj;
	return CK(cuptiRangeProfilerPopRange(&p));
}

static std::string range_name(const std::vector<uint8_t> &image, size_t index)
{
	CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri = {
		CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
	ri.pCounterDataImage = image.data();
	ri.counterDataImageSize = image.size();
	ri.rangeIndex = index;
	ri.rangeDelimiter = "/";
	CUptiResult r = cuptiRangeProfilerCounterDataGetRangeInfo(&ri);
	if (r != CUPTI_SUCCESS)
		return "(name: ERR" + std::to_string((int)r) + ")";
	return ri.rangeName ? ri.rangeName : "(null)";
}

// Evaluation errors seen so far: each code's string is printed once, when first seen.
static std::set<int> g_eval_errors;

// Metric m of range index in image; NAN on an error (its code in *err).
static double evaluate(const std::vector<uint8_t> &image, size_t index, size_t m, CUptiResult *err)
{
	double value = NAN;
	*err = evaluate_metrics(g_host, image, index, &g_names[m], 1, &value);
	return *err == CUPTI_SUCCESS ? value : NAN;
}

// All metrics of one range: values (NAN where evaluation failed) and each one's result.
struct Row {
	std::vector<double> v;
	std::vector<CUptiResult> err;
};

static Row evaluate_row(const std::vector<uint8_t> &image, size_t index)
{
	Row row;
	for (size_t m = 0; m < g_names.size(); m++) {
		CUptiResult e = CUPTI_SUCCESS;
		row.v.push_back(evaluate(image, index, m, &e));
		row.err.push_back(e);
	}
	return row;
}

static void cell(double v, CUptiResult err, bool ratio)
{
	char buf[32];
	if (err != CUPTI_SUCCESS)
		snprintf(buf, sizeof(buf), "ERR%d", (int)err);
	else if (!isfinite(v))
		snprintf(buf, sizeof(buf), "%s", isnan(v) ? "nan" : "inf");
	else if (ratio)
		snprintf(buf, sizeof(buf), "%.4f", v);
	else if (fabs(v) >= 1e13)
		snprintf(buf, sizeof(buf), "%.5e", v);
	else
		snprintf(buf, sizeof(buf), "%.1f", v);
	printf(" %15s", buf);
}

// One table line: label, then a cell per metric, then extra text; evaluation errors first
// seen here are explained below it.
static void print_row(const char *label, const Row &row, bool ratio, const char *extra)
{
	printf("    %-34.34s", label);
	for (size_t m = 0; m < row.v.size(); m++)
		cell(row.v[m], m < row.err.size() ? row.err[m] : CUPTI_SUCCESS, ratio);
	printf("%s\n", extra ? extra : "");
	for (CUptiResult e : row.err)
		if (e != CUPTI_SUCCESS && g_eval_errors.insert((int)e).second)
			printf("      (ERR%d: cuptiProfilerHostEvaluateToGpuValues: %s)\n", (int)e,
			       cupti_str(e));
}

static void print_header(const char *first)
{
	printf("    %-34s", first);
	for (size_t m = 0; m < g_names.size(); m++) {
		char buf[24];
		snprintf(buf, sizeof(buf), "m%zu", m);
		printf(" %15s", buf);
	}
	printf("\n");
}

// Sum over rows [from, to): a metric fails if any row's does.
static Row sum_rows(const std::vector<Row> &rows, size_t from, size_t to)
{
	Row s;
	s.v.assign(g_names.size(), 0.0);
	s.err.assign(g_names.size(), CUPTI_SUCCESS);
	for (size_t i = from; i < to && i < rows.size(); i++)
		for (size_t m = 0; m < g_names.size(); m++) {
			s.v[m] += rows[i].v[m];
			if (rows[i].err[m] != CUPTI_SUCCESS)
				s.err[m] = rows[i].err[m];
		}
	return s;
}

static Row ratio_row(const Row &a, const Row &b)
{
	Row r;
	for (size_t m = 0; m < g_names.size(); m++) {
		r.v.push_back(a.v[m] / b.v[m]);
		r.err.push_back(a.err[m] != CUPTI_SUCCESS ? a.err[m] : b.err[m]);
	}
	return r;
}

// ---------------------------------------------------------------- A: AutoRange

static void run_auto()
{
	g_variant = "A AutoRange";
	g_stage = g_variant;
	if (!g_auto) {
		printf("  A: skipped, no AutoRange profiler object\n");
		return;
	}
	std::function<bool()> content = [] {
		return flush_l2() && record(0) && launch_plain3() && record(1) && flush_l2() &&
		       record(2) && graph_launch() && record(3);
	};
	print_header("range (index name)");
	for (int it = 0; it <= ITERS; it++) {
		std::vector<uint8_t> &image = new_image();
		PassTimes t;
		if (!run_pass(g_auto, image, AUTO_RANGES, CUPTI_AutoRange, content, &t)) {
			printf("  A: abandoned after an error in iteration %d\n", it);
			return;
		}
		if (it == 0)
			continue; // the warm-up: the object's first pass
		size_t n = range_count(image, false);
		if (n == (size_t)-1) {
			printf("  A: abandoned after an error in iteration %d\n", it);
			return;
		}
		printf("  A it%d: %zu range(s), %zu dropped, %d pass(es); events: 3 plain %.2f us, "
		       "graph %.2f us\n",
		       it, n, t.dropped, t.passes, event_us(0, 1), event_us(2, 3));
		std::vector<Row> rows;
		for (size_t i = 0; i < n; i++) {
			rows.push_back(evaluate_row(image, i));
			char label[64];
			snprintf(label, sizeof(label), "%zu %s", i, range_name(image, i).c_str());
			print_row(label, rows.back(), false, NULL);
		}
		if (n < 3)
			continue;
		Row plain = sum_rows(rows, 0, 3);
		print_row("sum plain (ranges 0-2)", plain, false, NULL);
		if (n > 3) {
			char label[64];
			snprintf(label, sizeof(label), "sum after them (ranges 3-%zu)", n - 1);
			Row graph = sum_rows(rows, 3, n);
			print_row(label, graph, false, NULL);
			print_row("after / plain", ratio_row(graph, plain), true, NULL);
		} else {
			printf("    (no range after the 3 plain ones: the graph launch has none)\n");
		}
	}
	// The grouping above assumes the flush makes no range of its own: a pass holding only
	// the flush checks that (last, so that an error here spoils nothing above).
	std::function<bool()> flush_only = [] { return flush_l2(); };
	std::vector<uint8_t> &image = new_image();
	if (run_pass(g_auto, image, AUTO_RANGES, CUPTI_AutoRange, flush_only, NULL)) {
		size_t n = range_count(image, false);
		printf("  A check: a pass holding only the flush memset has %zd range(s)", (ssize_t)n);
		for (size_t i = 0; n != (size_t)-1 && i < n; i++)
			printf(" [%s]", range_name(image, i).c_str());
		printf("\n");
	} else {
		printf("  A check: a pass holding only the flush memset failed (above)\n");
	}
}

// ---------------------------------------------------------------- B: UserRange

static void run_user()
{
	g_variant = "B UserRange";
	g_stage = g_variant;
	double ms_dis = 0, ms_en = 0;
	if (!rp_disable(&g_auto, &ms_dis) || !rp_enable(&g_user, &ms_en)) {
		printf("  B: no UserRange profiler object\n");
		return;
	}
	printf("  B: AutoRange object disabled (%.2f ms), UserRange object enabled (%.2f ms)\n",
	       ms_dis, ms_en);
	std::function<bool()> content = [] {
		if (!flush_l2() || !push(g_user, "plain3"))
			return false;
		bool good = record(0) && launch_plain3() && record(1);
		if (!pop(g_user) || !good)
			return false;
		if (!flush_l2() || !push(g_user, "graph"))
			return false;
		good = record(2) && graph_launch() && record(3);
		return pop(g_user) && good;
	};
	print_header("range (index name)");
	for (int it = 0; it <= ITERS; it++) {
		std::vector<uint8_t> &image = new_image();
		PassTimes t;
		if (!run_pass(g_user, image, 2, CUPTI_UserRange, content, &t)) {
			printf("  B: abandoned after an error in iteration %d\n", it);
			return;
		}
		if (it == 0)
			continue;
		size_t n = range_count(image, false);
		if (n == (size_t)-1) {
			printf("  B: abandoned after an error in iteration %d\n", it);
			return;
		}
		printf("  B it%d: %zu range(s), %zu dropped, %d pass(es)\n", it, n, t.dropped,
		       t.passes);
		std::vector<Row> rows;
		for (size_t i = 0; i < n; i++) {
			rows.push_back(evaluate_row(image, i));
			std::string name = range_name(image, i);
			char label[64], extra[64];
			snprintf(label, sizeof(label), "%zu %s", i, name.c_str());
			// events around the content of the range of that name
			double us = name == "plain3" ? event_us(0, 1) :
				    name == "graph"  ? event_us(2, 3) :
						       NAN;
			snprintf(extra, sizeof(extra), "   events %.2f us", us);
			print_row(label, rows.back(), false, extra);
		}
		if (n == 2)
			print_row("range 1 / range 0", ratio_row(rows[1], rows[0]), true, NULL);
	}
}

// ---------------------------------------------------------------- C: switching objects

// Disable of the enabled object from, Enable of a new one into to, and its first measurement
// (one graph launch, in a user range when user) with each phase timed into tab.
static bool switch_and_measure(CUpti_RangeProfiler_Object **from, CUpti_RangeProfiler_Object **to,
			       bool user, Table &tab)
{
	const char *x = user ? "auto->user" : "user->auto";
	char name[96];
	double ms = 0, begin = now_ms();
	if (!rp_disable(from, &ms))
		return false;
	snprintf(name, sizeof(name), "%s: Disable %s object", x, user ? "AutoRange" : "UserRange");
	tab.add(name, ms);
	if (!rp_enable(to, &ms))
		return false;
	snprintf(name, sizeof(name), "%s: Enable %s object", x, user ? "UserRange" : "AutoRange");
	tab.add(name, ms);
	CUpti_RangeProfiler_Object *obj = *to;
	std::function<bool()> content = [obj, user] {
		if (!flush_l2() || (user && !push(obj, "graph")))
			return false;
		bool good = graph_launch();
		return (!user || pop(obj)) && good;
	};
	PassTimes t;
	if (!run_pass(obj, new_image(), user ? 1 : AUTO_RANGES,
		      user ? CUPTI_UserRange : CUPTI_AutoRange, content, &t))
		return false;
	double total = now_ms() - begin;
	snprintf(name, sizeof(name), "%s: size+init image, SetConfig", x);
	tab.add(name, t.prepare);
	snprintf(name, sizeof(name), "%s: Start (first on the object)", x);
	tab.add(name, t.start);
	snprintf(name, sizeof(name), "%s: flush+graph launch+sync", x);
	tab.add(name, t.content);
	snprintf(name, sizeof(name), "%s: Stop", x);
	tab.add(name, t.stop);
	snprintf(name, sizeof(name), "%s: Decode", x);
	tab.add(name, t.decode);
	snprintf(name, sizeof(name), "%s: total, Disable .. Decode", x);
	tab.add(name, total);
	return true;
}

static void run_switch()
{
	g_variant = "C switching";
	g_stage = g_variant;
	Table tab;
	tab.title = "C phase";
	tab.width = 46; // the phases' names are longer than stop_probe's
	for (int it = 0; it <= ITERS; it++) {
		Table scratch; // the warm-up's samples are dropped
		Table &tt = it == 0 ? scratch : tab;
		// The warm-up starts from whatever B left (the UserRange object enabled).
		if (it == 0 && g_user && !g_auto && !switch_and_measure(&g_user, &g_auto, false, tt))
			goto fail;
		if (!switch_and_measure(&g_auto, &g_user, true, tt) ||
		    !switch_and_measure(&g_user, &g_auto, false, tt))
			goto fail;
		{
			// The AutoRange object's second pass: the same measurement with no switch.
			std::function<bool()> content = [] { return flush_l2() && graph_launch(); };
			PassTimes t;
			double begin = now_ms();
			if (!run_pass(g_auto, new_image(), AUTO_RANGES, CUPTI_AutoRange, content, &t))
				goto fail;
			tt.add("no switch, auto again: init image, SetConfig", t.prepare);
			tt.add("no switch, auto again: Start", t.start);
			tt.add("no switch, auto again: flush+graph+sync", t.content);
			tt.add("no switch, auto again: Stop", t.stop);
			tt.add("no switch, auto again: Decode", t.decode);
			tt.add("no switch, auto again: total", now_ms() - begin);
		}
	}
	tab.print();
	printf("    (%d iterations after one unrecorded; Start, Stop summed over %zu pass(es))\n",
	       ITERS, g_passes);
	return;
fail:
	printf("  C: abandoned after an error (results so far below)\n");
	tab.print();
}

// ---------------------------------------------------------------- D: two objects

static void run_two_objects()
{
	g_variant = "D two objects";
	g_stage = g_variant;
	if (!g_auto && g_user) {
		// C ended early: get back to the AutoRange object.
		if (!rp_disable(&g_user, NULL) || !rp_enable(&g_auto, NULL)) {
			printf("  D: skipped, no AutoRange profiler object\n");
			return;
		}
	}
	if (!g_auto) {
		printf("  D: skipped, no AutoRange profiler object\n");
		return;
	}
	CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
	en.ctx = g_ctx;
	CUptiResult r = cuptiRangeProfilerEnable(&en);
	printf("  D second cuptiRangeProfilerEnable while the AutoRange object is enabled: %d %s\n",
	       (int)r, cupti_str(r));
	if (r == CUPTI_SUCCESS) {
		CUpti_RangeProfiler_Object *second = en.pRangeProfilerObject;
		printf("  D second object %p, first %p (%s)\n", (void *)second, (void *)g_auto,
		       second == g_auto ? "the same" : "different");
		if (second && second != g_auto) {
			std::function<bool()> content = [second] {
				if (!flush_l2() || !push(second, "graph"))
					return false;
				bool good = graph_launch();
				return pop(second) && good;
			};
			std::vector<uint8_t> &image = new_image();
			bool good = run_pass(second, image, 1, CUPTI_UserRange, content, NULL);
			printf("  D UserRange pass on the second object: %s",
			       good ? "completed" : "failed (above)");
			if (good) {
				size_t n = range_count(image, false);
				printf(", %zd range(s)", (ssize_t)n);
				if (n != (size_t)-1 && n > 0) {
					CUptiResult e;
					printf(", m0 %.1f", evaluate(image, 0, 0, &e));
				}
			}
			printf("\n");
			CUpti_RangeProfiler_Disable_Params d = {
				CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
			d.pRangeProfilerObject = second;
			r = cuptiRangeProfilerDisable(&d);
			printf("  D Disable of the second object: %d %s\n", (int)r, cupti_str(r));
		}
	}
	// Does the first object still measure?
	std::function<bool()> content = [] { return flush_l2() && graph_launch(); };
	std::vector<uint8_t> &image = new_image();
	bool good = run_pass(g_auto, image, AUTO_RANGES, CUPTI_AutoRange, content, NULL);
	printf("  D the AutoRange object afterwards, one graph launch: %s",
	       good ? "completed" : "failed (above)");
	if (good) {
		size_t n = range_count(image, false);
		printf(", %zd range(s)", (ssize_t)n);
		for (size_t i = 0; n != (size_t)-1 && i < n; i++) {
			CUptiResult e;
			double v = evaluate(image, i, 0, &e);
			printf(" [%s m0 %.1f%s]", range_name(image, i).c_str(), v,
			       e == CUPTI_SUCCESS ? "" : " ERR");
		}
	}
	printf("\n");
}

// ---------------------------------------------------------------- main

static void parse_metrics(const char *list)
{
	std::string s(list);
	size_t at = 0;
	while (at <= s.size()) {
		size_t comma = s.find(',', at);
		if (comma == std::string::npos)
			comma = s.size();
		if (comma > at)
			g_metric_text.push_back(s.substr(at, comma - at));
		at = comma + 1;
	}
	for (const std::string &m : g_metric_text)
		g_names.push_back(m.c_str());
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && atoi(argv[1]) > 0)
		ITERS = atoi(argv[1]);
	parse_metrics(argc > 2 && *argv[2] ? argv[2] : DEFAULT_METRICS);
	if (g_names.empty())
		parse_metrics(DEFAULT_METRICS);
	int watchdog = argc > 3 ? atoi(argv[3]) : 120;
	signal(SIGALRM, on_signal);
	signal(SIGSEGV, on_signal);
	signal(SIGBUS, on_signal);
	signal(SIGABRT, on_signal);
	signal(SIGFPE, on_signal);
	alarm(watchdog > 0 ? (unsigned)watchdog : 120);

	printf("graph_range_probe: %d iterations after 1 warm-up per variant; graph of 3 kernels on "
	       "%zu MB; L2 flush = memset of %zu MB before each measured launch\n",
	       ITERS, ELEMS * sizeof(float) >> 20, FLUSH_BYTES >> 20);
	for (size_t m = 0; m < g_names.size(); m++)
		printf("  m%zu = %s\n", m, g_names[m]);
	int driver = 0, rt = 0;
	uint32_t cupti = 0;
	CU(cudaDriverGetVersion(&driver));
	CU(cudaRuntimeGetVersion(&rt));
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
	if (!cu_ok(cuCtxGetCurrent(&g_ctx), "cuCtxGetCurrent") ||
	    !cu_ok(cuCtxGetDevice(&dev), "cuCtxGetDevice") ||
	    !cu_ok(cuDeviceGetName(name, sizeof(name), dev), "cuDeviceGetName"))
		return 1;
	int major = 0, minor = 0;
	CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
	CU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
	printf("GPU 0: %s (sm_%d%d)\n", name, major, minor);
	if (!setup_workload()) {
		printf("workload set-up failed; nothing measured\n");
		return 1;
	}

	printf("\n== R: no profiler\n");
	run_reference();

	printf("\n== set-up\n");
	double t0 = now_ms(), ms = 0;
	if (!host_setup()) {
		printf("profiler host set-up failed; nothing else can be measured\n");
		return 1;
	}
	printf("host set-up (cuptiProfilerInitialize .. GetNumOfPasses): %.1f ms\n", now_ms() - t0);
	g_variant = "set-up";
	g_stage = g_variant;
	if (rp_enable(&g_auto, &ms))
		printf("cuptiRangeProfilerEnable (the AutoRange object): %.1f ms\n", ms);

	printf("\n== A: AutoRange + UserReplay; one pass: flush, 3 plain launches, flush, "
	       "cudaGraphLaunch\n");
	run_auto();

	printf("\n== B: UserRange (a new object); one pass: flush, range plain3, flush, range graph\n");
	run_user();

	printf("\n== C: switching profiler objects per graph launch\n");
	run_switch();

	printf("\n== D: two range profiler objects on one context\n");
	run_two_objects();

	g_variant = "exit";
	g_stage = g_variant;
	rp_disable(&g_auto, NULL);
	rp_disable(&g_user, NULL);
	CUpti_Profiler_Host_Deinitialize_Params hd = {CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
	hd.pHostObject = g_host;
	CK(cuptiProfilerHostDeinitialize(&hd));
	CU(cudaGraphExecDestroy(g_exec));
	CU(cudaGraphDestroy(g_graph));
	CU(cudaFree(g_flush));
	CU(cudaFree(g_buf));
	printf("\ngraph_range_probe done\n");
	return 0;
}
