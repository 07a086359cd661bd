// bench/l2_write_probe.cu - issue 22: which step of rangeprof's run sequence adds ~20 % to
// the DRAM writes of tests/gpu/l2_rmw.cu's kernel (rangeprof 1.42-1.66 MB against ncu's
// 1.20-1.30 MB)? The same arrays, kernel and launch as tests/gpu/l2_rmw.cu; before each of
// REPS launches of `rmw`, the preparation of VARIANT, each a step (or steps) of what
// inject/kernel/kernel_workload.c's run_once does before its relaunch. Not yet run on a GPU.
//
// Two builds of this one file (bench/l2_write_probe.sh makes both):
//   nvcc -O2 -arch=sm_90 -std=c++17 bench/l2_write_probe.cu -o l2_write_probe -lcuda
//   nvcc -O2 -arch=sm_90 -std=c++17 -DWITH_CUPTI bench/l2_write_probe.cu
//        -o l2_write_probe_cupti -lcuda -lcupti -ldl   (one line; -L where libcupti is)
// The first never loads CUPTI, so that ncu profiles it alone:
//   ncu --clock-control none --cache-control none -k rmw --csv --page raw
//       --metrics dram__bytes_write.sum,dram__bytes_read.sum,gpu__time_duration.sum
//       ./l2_write_probe VARIANT 6
// measures only the kernel after each preparation (the preparation's own kernels are named
// otherwise: rangeprof_l2_flush, rmw_warm). ncu waits for all earlier work before a profiled
// kernel, so under ncu the preparation has always finished, and the GPU idled, when `rmw`
// starts. rangeprof's runs are queued back to back inside one range profiler pass (AutoRange:
// each kernel its own range, the flush's dropped), which ncu cannot reproduce. The second
// build adds that mode:
//   ./l2_write_probe_cupti --cupti [--gap none|sync|spinN] [--no-nvml] [--pass-runs P] VARIANT REPS
// which measures `rmw` itself with the CUPTI range profiler exactly as collector/profiler.c
// does (AutoRange, UserReplay, one Start/Stop per P runs, the same metrics plus the clock
// metric rangeprof adds), and prints one line per measured run:
//   cupti_run GROUP RUN WRITE_BYTES READ_BYTES TIME_NS CLOCK_HZ
// A group is one application launch as rangeprof measures a verified kernel (inject/kernel/save.c,
// policy reach): for variants that restore, the reach saved and synchronised before the
// Start, and after the Stop the inputs put back, synchronised, and the application's own
// launch (rmw_warm here, run outside any pass). Within a run: the variant's preparation,
// then (unless --no-nvml) the NVML sample that rangeprof takes between the flush and the
// relaunch in pass 0 (inject/measure/measure.c inject_measure_sample_before: temperature, clock reasons,
// memory and SM clocks), then the gap (none: rangeprof's; sync: cuCtxSynchronize and 1 ms
// idle, as ncu's host-side gap; spinN: a one-warp kernel spinning N us on %globaltimer,
// a candidate fix: its range is skipped as the flush's is), then `rmw`.
//
// Variants (the preparation before each measured launch, in this order):
//   ncu_like                      nothing (the reference is ncu --cache-control all on it)
//   rp_flush                      rangeprof's flush: inject/session/flush.c's PTX (256 KB of code
//                                 segments, then the ld.global.cg sweep of 2 x the L2),
//                                 same buffer (cuMemAlloc, never written), same grid
//   rp_flush_nocode               the sweep part of it alone (same PTX without the segments)
//   restore_out_then_rp_flush     the 16 MB output restored from its device backup, then
//                                 rp_flush (the issue's D2D variant, with rangeprof's flush)
//   restore_all_then_rp_flush     every buffer the kernel's parameters reach (in and out:
//                                 its index is computed, there is no index array) restored
//                                 as memory/save.c's mem_restore does: one backup allocation
//                                 holding the ranges back to back in address order, one
//                                 cuMemcpyAsync device-to-device each, on the launch's
//                                 stream; then rp_flush
//   restore_pinned_then_rp_flush  the same from pinned host memory (mem_save's fall-back)
//   save_restore_then_rp_flush    mem_save first (buffers -> backup, stream synchronised),
//                                 then the restore and rp_flush: the first run of a pass
//   prior_run                     rmw_warm (the kernel, unmeasured), then restore all, then
//                                 rp_flush: what every later run of a pass sees
//   prior_run_no_restore          rmw_warm, then rp_flush
// After the last launch: "l2_write_probe VARIANT ... checksum X" (the sum of out).
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#ifdef WITH_CUPTI
#include "probe.h"
#endif

#define CU(call)                                                                        \
	do {                                                                            \
		CUresult r_ = (call);                                                   \
		if (r_ != CUDA_SUCCESS) {                                               \
			const char *s_ = NULL;                                          \
			cuGetErrorString(r_, &s_);                                      \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,   \
				s_ ? s_ : "?");                                         \
			exit(1);                                                        \
		}                                                                       \
	} while (0)
#define RT(call)                                                                        \
	do {                                                                            \
		cudaError_t e_ = (call);                                                \
		if (e_ != cudaSuccess) {                                                \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,   \
				cudaGetErrorString(e_));                                \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

// ------------------------------------------------------------- the kernel (l2_rmw.cu)

__global__ void rmw(const float *in, float *out, unsigned n)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		out[i] = in[(unsigned)(((unsigned long long)i * 7) % n)] + out[i];
}

// The same kernel under another name, so that ncu -k rmw (and the range bookkeeping of the
// CUPTI mode) leaves it out.
__global__ void rmw_warm(const float *in, float *out, unsigned n)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		out[i] = in[(unsigned)(((unsigned long long)i * 7) % n)] + out[i];
}

// --gap spinN: one warp waits N us without touching memory.
__global__ void rp_spin(unsigned long long ns)
{
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	while (t - t0 < ns);
}

static const unsigned N = 4u << 20; // 16 MB of float each, as l2_rmw.cu
static const unsigned GRID = 1056, BLOCK = 256;

// ------------------------------------------------- rangeprof's flush (inject/session/flush.c)
// Copied, text for text: the PTX head, the sweep, the generated segments, the buffer size
// (2 x CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), the grid (one block of 32 warps per SM).

#define FLUSH_WARPS 32
#define FLUSH_SEGMENT_INSTRUCTIONS 512

static const char flush_ptx_head[] =
	".version 7.0\n"
	".target sm_70\n"
	".address_size 64\n"
	".visible .entry rangeprof_l2_flush(.param .u64 buf, .param .u64 words, .param .u64 sink)\n"
	".maxntid 1024, 1, 1\n"
	"{\n"
	"  .reg .pred %p<4>;\n"
	"  .reg .b32 %r<16>;\n"
	"  .reg .b64 %rd<12>;\n"
	"  ld.param.u64 %rd1, [buf];\n"
	"  ld.param.u64 %rd2, [words];\n"
	"  ld.param.u64 %rd3, [sink];\n"
	"  mov.u32 %r3, %tid.x;\n"
	"  cvt.u32.u64 %r10, %rd2;\n"
	"  or.b32 %r11, %r10, 1;\n"
	"  xor.b32 %r10, %r10, %r3;\n"
	"  shr.u32 %r12, %r3, 5;\n";

static const char flush_ptx_sweep[] =
	"SWEEP:\n"
	"  mov.u32 %r1, %ctaid.x;\n"
	"  mov.u32 %r2, %ntid.x;\n"
	"  mov.u32 %r3, %tid.x;\n"
	"  mov.u32 %r4, %nctaid.x;\n"
	"  cvt.u64.u32 %rd4, %r1;\n"
	"  cvt.u64.u32 %rd5, %r2;\n"
	"  cvt.u64.u32 %rd6, %r3;\n"
	"  mad.lo.u64 %rd7, %rd4, %rd5, %rd6;\n"
	"  cvt.u64.u32 %rd8, %r4;\n"
	"  mul.lo.u64 %rd9, %rd8, %rd5;\n"
	"  mov.u32 %r5, %r10;\n"
	"LOOP:\n"
	"  setp.ge.u64 %p1, %rd7, %rd2;\n"
	"  @%p1 bra DONE;\n"
	"  shl.b64 %rd10, %rd7, 4;\n"
	"  add.u64 %rd11, %rd1, %rd10;\n"
	"  ld.global.cg.v4.u32 {%r6, %r7, %r8, %r9}, [%rd11];\n"
	"  xor.b32 %r5, %r5, %r6;\n"
	"  xor.b32 %r5, %r5, %r7;\n"
	"  xor.b32 %r5, %r5, %r8;\n"
	"  xor.b32 %r5, %r5, %r9;\n"
	"  add.u64 %rd7, %rd7, %rd9;\n"
	"  bra LOOP;\n"
	"DONE:\n"
	"  setp.eq.u32 %p2, %r5, 0x7e57ab1e;\n"
	"  @%p2 st.global.u32 [%rd3], %r5;\n"
	"  ret;\n"
	"}\n";

// inject/session/flush.c's flush_ptx(); with_code false leaves out the dispatch and the segments
// (rp_flush_nocode: the head falls through to the sweep).
static std::string flush_ptx(bool with_code)
{
	std::string ptx = flush_ptx_head;
	char line[128];
	if (with_code) {
		for (int w = 0; w < FLUSH_WARPS; w++) {
			snprintf(line, sizeof(line), "  setp.eq.u32 %%p3, %%r12, %d;\n"
				 "  @%%p3 bra SEG%d;\n", w, w);
			ptx += line;
		}
		ptx += "  bra SWEEP;\n";
		unsigned constant = 0x9e3779b9u;
		for (int w = 0; w < FLUSH_WARPS; w++) {
			snprintf(line, sizeof(line), "SEG%d:\n", w);
			ptx += line;
			for (int i = 0; i < FLUSH_SEGMENT_INSTRUCTIONS; i++) {
				constant = constant * 1664525u + 1013904223u;
				snprintf(line, sizeof(line), "  mad.lo.u32 %%r10, %%r10, %%r11, %u;\n",
					 constant);
				ptx += line;
			}
			ptx += "  bra SWEEP;\n";
		}
	}
	ptx += flush_ptx_sweep;
	return ptx;
}

// ------------------------------------------------------------------------ the state

enum {
	F_WARM = 1,         // rmw_warm first
	F_SAVE = 2,         // mem_save (buffers -> backup), stream synchronised
	F_RESTORE_ALL = 4,  // mem_restore of in and out
	F_RESTORE_OUT = 8,  // out alone
	F_PINNED = 16,      // the restore from pinned host memory
	F_FLUSH = 32,       // rangeprof's flush
	F_NOCODE = 64,      // ... without its code segments
};

struct Variant {
	const char *name;
	unsigned flags;
};

static const Variant variants[] = {
	{"ncu_like", 0},
	{"rp_flush", F_FLUSH},
	{"rp_flush_nocode", F_FLUSH | F_NOCODE},
	{"restore_out_then_rp_flush", F_RESTORE_OUT | F_FLUSH},
	{"restore_all_then_rp_flush", F_RESTORE_ALL | F_FLUSH},
	{"restore_pinned_then_rp_flush", F_RESTORE_ALL | F_PINNED | F_FLUSH},
	{"save_restore_then_rp_flush", F_SAVE | F_RESTORE_ALL | F_FLUSH},
	{"prior_run", F_WARM | F_RESTORE_ALL | F_FLUSH},
	{"prior_run_no_restore", F_WARM | F_FLUSH},
};

struct Probe {
	float *in = NULL, *out = NULL;
	// The reach, as mem_reach_collect leaves it: the two allocations sorted by address.
	CUdeviceptr base[2] = {0, 0};
	size_t size[2] = {0, 0};
	CUdeviceptr backup = 0;      // mem_save's device backup: the ranges back to back
	void *host_backup = NULL;    // its pinned host fall-back, same layout
	CUmodule module = NULL;
	CUfunction flush = NULL;
	CUdeviceptr flush_buffer = 0, sink = 0;
	unsigned long long words = 0;
	unsigned blocks = 0;
	unsigned long long spin_ns = 0;
	// Kernels launched since the counter was last cleared (the CUPTI mode's ranges), and
	// the launch index of each rmw among them.
	size_t launches = 0;
	std::vector<size_t> rmw_index, flush_index;
};

static void setup(Probe &p, bool with_code)
{
	RT(cudaFree(0)); // the primary context, current for the driver calls too
	if (cudaMalloc(&p.in, N * 4) || cudaMalloc(&p.out, N * 4)) {
		fprintf(stderr, "cudaMalloc failed\n");
		exit(1);
	}
	std::vector<float> h(N);
	for (unsigned i = 0; i < N; i++)
		h[i] = (float)(i % 13);
	RT(cudaMemcpy(p.in, h.data(), N * 4, cudaMemcpyHostToDevice));
	RT(cudaMemset(p.out, 0, N * 4));

	CUdeviceptr a = (CUdeviceptr)p.in, b = (CUdeviceptr)p.out;
	p.base[0] = std::min(a, b);
	p.base[1] = std::max(a, b);
	p.size[0] = p.size[1] = (size_t)N * 4;
	CU(cuMemAlloc(&p.backup, p.size[0] + p.size[1]));
	CU(cuMemHostAlloc(&p.host_backup, p.size[0] + p.size[1], 0));

	// inject_flush_init
	CUdevice dev;
	int l2 = 0, sms = 0;
	CU(cuCtxGetDevice(&dev));
	CU(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
	CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	size_t bytes = 2 * (size_t)(l2 > 0 ? l2 : (64 << 20));
	std::string ptx = flush_ptx(with_code);
	CU(cuModuleLoadData(&p.module, ptx.c_str()));
	CU(cuModuleGetFunction(&p.flush, p.module, "rangeprof_l2_flush"));
	CU(cuMemAlloc(&p.flush_buffer, bytes));
	CU(cuMemAlloc(&p.sink, 16));
	p.words = bytes / 16;
	p.blocks = (unsigned)(sms > 0 ? sms : 132);
	fprintf(stderr, "l2_write_probe: L2 %d bytes, %d SMs, flush sweeps %zu bytes with %u x %d "
		"threads%s\n", l2, sms, bytes, p.blocks, 32 * FLUSH_WARPS,
		with_code ? " after 256 KB of code" : " (no code segments)");
}

// mem_save: the reach into the backup, then cuStreamSynchronize.
static void save(Probe &p)
{
	size_t off = 0;
	for (int i = 0; i < 2; i++) {
		CU(cuMemcpyAsync(p.backup + off, p.base[i], p.size[i], 0));
		off += p.size[i];
	}
	CU(cuStreamSynchronize(0));
}

// mem_restore: one copy per range, in address order, from the device backup or the pinned
// host one (a host pointer as CUdeviceptr, as memory/save.c's slot() passes it). only_out:
// the output's range alone.
static void restore(Probe &p, bool pinned, bool only_out)
{
	size_t off = 0;
	for (int i = 0; i < 2; i++) {
		CUdeviceptr src = pinned ? (CUdeviceptr)((char *)p.host_backup + off) : p.backup + off;
		if (!only_out || p.base[i] == (CUdeviceptr)p.out)
			CU(cuMemcpyAsync(p.base[i], src, p.size[i], 0));
		off += p.size[i];
	}
}

// inject_flush_launch
static void launch_flush(Probe &p)
{
	void *args[] = {&p.flush_buffer, &p.words, &p.sink};
	p.flush_index.push_back(p.launches++);
	CU(cuLaunchKernel(p.flush, p.blocks, 1, 1, 32 * FLUSH_WARPS, 1, 1, 0, 0, args, NULL));
}

static void launch_warm(Probe &p)
{
	p.launches++;
	rmw_warm<<<GRID, BLOCK>>>(p.in, p.out, N);
	RT(cudaGetLastError());
}

static void launch_rmw(Probe &p)
{
	p.rmw_index.push_back(p.launches++);
	rmw<<<GRID, BLOCK>>>(p.in, p.out, N);
	RT(cudaGetLastError());
}

// The variant's preparation of one measured launch, queued without waiting (but for
// F_SAVE's synchronisation, which mem_save has too).
static void prepare(Probe &p, unsigned flags)
{
	if (flags & F_WARM)
		launch_warm(p);
	if (flags & F_SAVE)
		save(p);
	if (flags & (F_RESTORE_ALL | F_RESTORE_OUT))
		restore(p, flags & F_PINNED, !(flags & F_RESTORE_ALL));
	if (flags & F_FLUSH)
		launch_flush(p);
}

static double checksum(Probe &p)
{
	RT(cudaDeviceSynchronize());
	std::vector<float> h(N);
	RT(cudaMemcpy(h.data(), p.out, N * 4, cudaMemcpyDeviceToHost));
	double sum = 0;
	for (unsigned i = 0; i < N; i++)
		sum += h[i];
	return sum;
}

// ------------------------------------------------------------- the CUPTI mode

#ifdef WITH_CUPTI
static bool ok(CUptiResult r, const char *call)
{
	if (r == CUPTI_SUCCESS)
		return true;
	fprintf(stderr, "ERROR %s: %d %s\n", call, (int)r, cupti_str(r));
	return false;
}

static void launch_spin(Probe &p)
{
	p.launches++;
	rp_spin<<<1, 32>>>(p.spin_ns);
	RT(cudaGetLastError());
}

// NVML as collector/device.c loads it (dlopen, the symbols it uses), for the sample that
// inject_measure_sample_before takes between the flush and the relaunch of every run of pass 0.
typedef struct nvml_device *nvml_device_t;
static struct {
	nvml_device_t dev = NULL;
	int (*temperature)(nvml_device_t, int, unsigned *) = NULL;
	int (*clock_info)(nvml_device_t, int, unsigned *) = NULL;
	int (*clock_reasons)(nvml_device_t, unsigned long long *) = NULL;
} nvml;

static bool nvml_open()
{
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return false;
	int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
	int (*by_index)(unsigned, nvml_device_t *) =
		(int (*)(unsigned, nvml_device_t *))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	nvml.temperature = (int (*)(nvml_device_t, int, unsigned *))dlsym(h, "nvmlDeviceGetTemperature");
	nvml.clock_info = (int (*)(nvml_device_t, int, unsigned *))dlsym(h, "nvmlDeviceGetClockInfo");
	nvml.clock_reasons = (int (*)(nvml_device_t, unsigned long long *))dlsym(
		h, "nvmlDeviceGetCurrentClocksEventReasons");
	if (!nvml.clock_reasons)
		nvml.clock_reasons = (int (*)(nvml_device_t, unsigned long long *))dlsym(
			h, "nvmlDeviceGetCurrentClocksThrottleReasons");
	// One GPU on the test machine: NVML's index 0 is CUDA's device 0.
	return init && by_index && nvml.temperature && nvml.clock_info && nvml.clock_reasons &&
	       init() == 0 && by_index(0, &nvml.dev) == 0;
}

// collector_nvml_sample(COLLECTOR_NVML_BEFORE): temperature, clock reasons, memory and SM
// clocks. Returns its host time in us.
static double nvml_sample()
{
	double t = now_ms();
	unsigned v;
	unsigned long long reasons;
	nvml.temperature(nvml.dev, 0 /* NVML_TEMPERATURE_GPU */, &v);
	nvml.clock_reasons(nvml.dev, &reasons);
	nvml.clock_info(nvml.dev, 2 /* NVML_CLOCK_MEM */, &v);
	nvml.clock_info(nvml.dev, 1 /* NVML_CLOCK_SM */, &v);
	return (now_ms() - t) * 1e3;
}

struct CuptiOptions {
	const char *gap = "none";
	bool nvml = true;
	unsigned pass_runs = 20;
};

static int run_cupti(Probe &p, const Variant &v, unsigned reps, const CuptiOptions &o)
{
	enum { GAP_NONE, GAP_SYNC, GAP_SPIN } gap = GAP_NONE;
	if (!strcmp(o.gap, "sync"))
		gap = GAP_SYNC;
	else if (!strncmp(o.gap, "spin", 4) && atoi(o.gap + 4) > 0) {
		gap = GAP_SPIN;
		p.spin_ns = 1000ull * (unsigned)atoi(o.gap + 4);
	} else if (strcmp(o.gap, "none")) {
		fprintf(stderr, "--gap none|sync|spinN, not %s\n", o.gap);
		return 2;
	}
	if (o.nvml && !nvml_open()) {
		fprintf(stderr, "NVML could not be loaded; run with --no-nvml\n");
		return 1;
	}
	CUcontext ctx;
	CU(cuCtxGetCurrent(&ctx));
	// collector/profiler.c: the user's metrics, then the clock metric it adds to any set
	// with counters.
	const char *names[] = {"dram__bytes_write.sum", "dram__bytes_read.sum",
			       "gpu__time_duration.sum", "gpc__cycles_elapsed.avg.per_second"};
	const size_t count = sizeof(names) / sizeof(names[0]);
	CUpti_Profiler_Host_Object *host = NULL;
	std::vector<uint8_t> avail, config, image;
	size_t passes_needed = 0;
	CUpti_RangeProfiler_Object *obj = NULL;
	if (!profiler_host_create(ctx, names, count, &host, avail, config) ||
	    !host_num_passes(config, &passes_needed) || !range_profiler_enable(ctx, &obj, NULL))
		return 1;
	unsigned per_run = 1 + !!(v.flags & F_WARM) + !!(v.flags & F_FLUSH) + (gap == GAP_SPIN);
	size_t ranges = (size_t)o.pass_runs * per_run;
	// collector_profiler_warm_up, as at a context's set-up: an empty pass, decoded.
	if (!counter_data_prepare(obj, names, count, config, image, ranges, CUPTI_AutoRange, ranges))
		return 1;
	{
		CUpti_RangeProfiler_Start_Params start = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
		start.pRangeProfilerObject = obj;
		CUpti_RangeProfiler_Stop_Params stop = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
		stop.pRangeProfilerObject = obj;
		CUpti_RangeProfiler_DecodeData_Params decode = {
			CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
		decode.pRangeProfilerObject = obj;
		if (!CK(cuptiRangeProfilerStart(&start)) || !CK(cuptiRangeProfilerStop(&stop)) ||
		    !CK(cuptiRangeProfilerDecodeData(&decode)))
			return 1;
	}
	printf("cupti_setup variant=%s gap=%s nvml=%d pass_runs=%u kernels_per_run=%u "
	       "config_passes=%zu\n", v.name, o.gap, (int)o.nvml, o.pass_runs, per_run,
	       passes_needed);
	std::vector<double> nvml_us, flush_ns;
	bool restores = v.flags & F_RESTORE_ALL;
	bool names_shown = false;
	for (unsigned group = 0, done = 0; done < reps; group++) {
		unsigned runs = std::min(o.pass_runs, reps - done);
		// inject_measure_get_ready's cuCtxSynchronize, then mem_save of the reach (synchronised).
		CU(cuCtxSynchronize());
		if (restores)
			save(p);
		if (!counter_data_prepare(obj, names, count, config, image, ranges, CUPTI_AutoRange,
					  ranges))
			return 1;
		bool all_submitted = false;
		unsigned pass = 0;
		size_t launches_pass0 = 0;
		std::vector<size_t> rmw0, flush0;
		while (!all_submitted && pass < 16) {
			CUpti_RangeProfiler_Start_Params start = {
				CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
			start.pRangeProfilerObject = obj;
			if (!CK(cuptiRangeProfilerStart(&start)))
				return 1;
			p.launches = 0;
			p.rmw_index.clear();
			p.flush_index.clear();
			for (unsigned r = 0; r < runs; r++) {
				// run_once: restore, flush, the NVML sample (pass 0), the relaunch.
				prepare(p, v.flags);
				if (o.nvml && pass == 0)
					nvml_us.push_back(nvml_sample());
				if (gap == GAP_SYNC) {
					CU(cuCtxSynchronize());
					usleep(1000);
				} else if (gap == GAP_SPIN) {
					launch_spin(p);
				}
				launch_rmw(p);
			}
			CU(cuCtxSynchronize());
			CUpti_RangeProfiler_Stop_Params stop = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
			stop.pRangeProfilerObject = obj;
			if (!CK(cuptiRangeProfilerStop(&stop)))
				return 1;
			all_submitted = stop.isAllPassSubmitted;
			if (pass == 0) {
				launches_pass0 = p.launches;
				rmw0 = p.rmw_index;
				flush0 = p.flush_index;
			}
			pass++;
		}
		CUpti_RangeProfiler_DecodeData_Params decode = {
			CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
		decode.pRangeProfilerObject = obj;
		if (!CK(cuptiRangeProfilerDecodeData(&decode)))
			return 1;
		size_t total = range_count(image, false);
		if (total != launches_pass0) {
			fprintf(stderr, "the range profiler recorded %zu ranges for %zu kernel "
				"launches (%zu dropped): the index of rmw's ranges is unknown\n",
				total, launches_pass0, decode.numOfRangeDropped);
			return 1;
		}
		// The names of the first run's ranges, once, for the log; and a check that no
		// range taken for rmw is named after another kernel of this probe.
		for (size_t i = 0; i < total; i++) {
			CUpti_RangeProfiler_CounterData_GetRangeInfo_Params info = {
				CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
			info.pCounterDataImage = image.data();
			info.counterDataImageSize = image.size();
			info.rangeIndex = i;
			info.rangeDelimiter = "/";
			if (cuptiRangeProfilerCounterDataGetRangeInfo(&info) != CUPTI_SUCCESS ||
			    !info.rangeName)
				continue;
			if (!names_shown && i < per_run)
				fprintf(stderr, "range %zu: %s\n", i, info.rangeName);
			bool is_rmw = std::find(rmw0.begin(), rmw0.end(), i) != rmw0.end();
			if (is_rmw && (strstr(info.rangeName, "flush") || strstr(info.rangeName, "warm") ||
				       strstr(info.rangeName, "spin"))) {
				fprintf(stderr, "range %zu, taken for rmw, is named %s\n", i,
					info.rangeName);
				return 1;
			}
		}
		names_shown = true;
		double values[count];
		for (size_t i : flush0)
			if (evaluate_metrics(host, image, i, names, count, values) == CUPTI_SUCCESS)
				flush_ns.push_back(values[2]);
		for (unsigned r = 0; r < rmw0.size(); r++) {
			CUptiResult er = evaluate_metrics(host, image, rmw0[r], names, count, values);
			if (!ok(er, "cuptiProfilerHostEvaluateToGpuValues"))
				return 1;
			printf("cupti_run %u %u %.0f %.0f %.1f %.0f\n", group, r, values[0], values[1],
			       values[2], values[3]);
		}
		done += runs;
		// put_back (inputs, synchronised), then the application's own launch.
		if (restores) {
			restore(p, v.flags & F_PINNED, false);
			CU(cuCtxSynchronize());
			launch_warm(p);
		}
	}
	printf("cupti_summary variant=%s gap=%s passes=%zu flush_ns_median=%.0f "
	       "nvml_sample_us_median=%.1f\n", v.name, o.gap, passes_needed, median(flush_ns),
	       median(nvml_us));
	range_profiler_disable(&obj, NULL);
	return 0;
}
#endif

// ----------------------------------------------------------------------------- main

static int usage()
{
	fprintf(stderr, "usage: l2_write_probe VARIANT REPS\n"
#ifdef WITH_CUPTI
		"       l2_write_probe --cupti [--gap none|sync|spinN] [--no-nvml] "
		"[--pass-runs P] VARIANT REPS\n"
#endif
		"VARIANT:");
	for (const Variant &v : variants)
		fprintf(stderr, " %s", v.name);
	fprintf(stderr, "\n");
	return 2;
}

int main(int argc, char **argv)
{
	bool cupti = false;
#ifdef WITH_CUPTI
	CuptiOptions o;
#endif
	int a = 1;
	for (; a < argc && !strncmp(argv[a], "--", 2); a++) {
#ifdef WITH_CUPTI
		if (!strcmp(argv[a], "--cupti"))
			cupti = true;
		else if (!strcmp(argv[a], "--no-nvml"))
			o.nvml = false;
		else if (!strcmp(argv[a], "--gap") && a + 1 < argc)
			o.gap = argv[++a];
		else if (!strcmp(argv[a], "--pass-runs") && a + 1 < argc && atoi(argv[a + 1]) > 0)
			o.pass_runs = (unsigned)atoi(argv[++a]);
		else
#endif
			return usage();
	}
	if (argc - a != 2 || atoi(argv[a + 1]) <= 0)
		return usage();
	const Variant *v = NULL;
	for (const Variant &c : variants)
		if (!strcmp(c.name, argv[a]))
			v = &c;
	if (!v)
		return usage();
	unsigned reps = (unsigned)atoi(argv[a + 1]);

	Probe p;
	setup(p, !(v->flags & F_NOCODE));
	save(p); // the backups hold the initial state: in = i % 13, out = 0
	CU(cuCtxSynchronize());
	if (cupti) {
#ifdef WITH_CUPTI
		int rc = run_cupti(p, *v, reps, o);
		if (rc)
			return rc;
#endif
	} else {
		for (unsigned r = 0; r < reps; r++) {
			prepare(p, v->flags);
			launch_rmw(p);
		}
	}
	printf("l2_write_probe %s%s reps %u checksum %.0f\n", v->name, cupti ? " (cupti)" : "",
	       reps, checksum(p));
	return 0;
}
