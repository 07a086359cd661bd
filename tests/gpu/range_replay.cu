// tests/gpu/range_replay.cu - range replay (--replay-mode range, issue 20): one program with
// a mode per case. Each mode runs its work ITERATIONS times (argv[2], default 4), every time
// inside an NVTX push/pop range named after the mode, so that each range occurs several
// times; at the end it prints an FNV-1a hash and a sum of every buffer it wrote (and what the
// host decided or counted), which must be identical plain, under rangeprof and under ncu.
//   ./range_replay MODE [ITERATIONS]
// Replayable ranges (one workload each; tests/gpu/check_range.py 'runs' and 'range'):
//   chain        3 kernels, each reading the one before's output, two of them in place:
//                x = x*1.0001 + 1; y = y*0.5 + x; x = x - 0.25*y
//   memset_copy  a host-to-device copy of 256 coefficients (pageable, new values every
//                iteration), a kernel, a memset, a kernel, a device-to-device
//                cudaMemcpyAsync, a kernel: 3 kernels, 1 memset, 2 copies
//   streams      two streams: a kernel on s1, an event recorded on s1 and waited for on
//                s2, a kernel on s2 beside one on s1, an event back from s2 to s1, a last
//                kernel on s1, cudaStreamSynchronize(s1): 4 kernels, 4 event operations,
//                1 sync, 2 streams
//   graph        one cudaGraphLaunch of a captured graph of chain's 3 kernels (captured
//                before the loop)
//   fused        the Nsight Python tutorial's fusion lesson, out = a*b + c on 16M floats,
//   unfused      fused as one kernel, unfused as two (the product t = a*b goes to memory
//                and comes back: out = t + c); both round the product (__fmul_rn) so the
//                two print the same hashes. c and out swap after every range, so the
//                result depends on every iteration.
//   cold         chain with no warm-up: the first range holds the first launch of each
//                of its kernels (the module's lazy loading happens inside the range)
// Probes of what a range's counters include (issue 36; doc/range-replay.md, "Memsets and
// copies"), each one range of:
//   memset_only  a cudaMemsetAsync of y (its value changes every iteration)
//   copy_only    a device-to-device cudaMemcpyAsync x -> y
//   memset_read, copy_read, write_read
//                the memset, the copy, or a kernel writing y (y = 0.5x), then a kernel
//                that reads y whole and writes one float per block (sum_blocks)
//   memset_big, copy_big
//                a 1 GiB memset or device-to-device copy, then a one-block sum_blocks
//   memset_copy_kernel
//                a memset of t, a copy x -> y, then one kernel z = t + y (issue 36's
//                third range)
//   kernel_memset_read
//                a kernel writing y, a memset of y, a kernel reading y: where ncu puts a
//                memset that follows a kernel (before the flush and the kernels, or in
//                its place)
// Ranges that cannot be replayed (refused with a warning naming the call; the range falls
// back to kernel replay; tests/gpu/check_range.py 'refused'):
//   refuse_d2h    a kernel, a one-thread kernel that picks a value from the data, a
//                 cudaMemcpy of it device to host, the host launching one kernel or
//                 another by its parity (the branches taken are printed), one more kernel
//   refuse_alloc  a kernel, cudaMalloc of a scratch buffer, two kernels through it, cudaFree
//   refuse_hostfn a kernel, cudaLaunchHostFunc (counts on the host), a kernel
// Every mode except cold first runs its work once outside any range (a warm-up: every
// kernel launched once, modules loaded), so that every range occurrence is alike.
// Every kernel does its own elements only (no atomics): the results are deterministic, and a
// replay whose effects were not undone shows in the hashes. The buffers are 16M floats
// (64 MiB): each kernel takes some 30-50 us on an H200.
// Build (no GPU needed):
//   nvcc -O2 -arch=sm_90 -std=c++17 tests/gpu/range_replay.cu -o range_replay -lcuda
// Run by tests/gpu/run.sh, section 6.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CK(call)                                                                         \
	do {                                                                             \
		cudaError_t err_ = (call);                                               \
		if (err_ != cudaSuccess) {                                               \
			fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, \
			        #call, cudaGetErrorName(err_), cudaGetErrorString(err_)); \
			exit(1);                                                         \
		}                                                                        \
	} while (0)
// A kernel launch's own error, and an asynchronous one from earlier work.
#define CK_LAUNCH() CK(cudaGetLastError())

// Floats per buffer: 16M (64 MiB, more than the H200's 60 MiB L2), or RANGE_REPLAY_MIB
// MiB per buffer (1-1024) from the environment: the fusion lesson at a size whose
// intermediate stays in the L2 between a range's kernels (README, "Kernel or range?").
static size_t N = (size_t)1 << 24;
static const unsigned GRID = 132 * 8, BLOCK = 256;
static const int NCOEF = 256;

#define FOR_EACH(i, n) \
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

__global__ void fill(float *p, size_t n, float base, unsigned period, float step)
{
	FOR_EACH(i, n)
	p[i] = base + (float)(i % period) * step;
}

// x = x*1.0001 + 1 (in place)
__global__ void add_scale(float *x, size_t n)
{
	FOR_EACH(i, n)
	x[i] = x[i] * 1.0001f + 1.0f;
}

// y = y*0.5 + x
__global__ void mix(float *y, const float *x, size_t n)
{
	FOR_EACH(i, n)
	y[i] = y[i] * 0.5f + x[i];
}

// x = x - 0.25*y (in place, reads y)
__global__ void fold(float *x, const float *y, size_t n)
{
	FOR_EACH(i, n)
	x[i] = x[i] - 0.25f * y[i];
}

// x += coef[i % 256]
__global__ void add_coef(float *x, const float *coef, size_t n)
{
	FOR_EACH(i, n)
	x[i] += coef[i % NCOEF];
}

// z += y
__global__ void accumulate(float *z, const float *y, size_t n)
{
	FOR_EACH(i, n)
	z[i] += y[i];
}

// y = x * s (out of place)
__global__ void scaled_copy(float *y, const float *x, size_t n, float s)
{
	FOR_EACH(i, n)
	y[i] = x[i] * s;
}

// The fusion lesson: t = a*b; out = t + c (unfused), out = a*b + c (fused). The product is
// rounded on its own in both, so that the fused kernel is not contracted to an FMA and the
// two variants give the same bits.
__global__ void mul_kernel(float *t, const float *a, const float *b, size_t n)
{
	FOR_EACH(i, n)
	t[i] = __fmul_rn(a[i], b[i]);
}

__global__ void add_kernel(float *out, const float *t, const float *c, size_t n)
{
	FOR_EACH(i, n)
	out[i] = __fadd_rn(t[i], c[i]);
}

__global__ void fma_fused(float *out, const float *a, const float *b, const float *c, size_t n)
{
	FOR_EACH(i, n)
	out[i] = __fadd_rn(__fmul_rn(a[i], b[i]), c[i]);
}

// part[block] = the sum of the elements this block's threads visit (a fixed order, so the
// sums are deterministic): a kernel that reads x whole and writes GRID floats only.
__global__ void sum_blocks(float *part, const float *x, size_t n)
{
	__shared__ float acc[256];
	float s = 0;
	FOR_EACH(i, n)
	s += x[i];
	acc[threadIdx.x] = s;
	__syncthreads();
	for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
		if (threadIdx.x < w)
			acc[threadIdx.x] += acc[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		part[blockIdx.x] = acc[0];
}

// One thread: flag = the integer part of x[k] (a value the host then branches on).
__global__ void pick(int *flag, const float *x, size_t k)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		*flag = (int)x[k];
}

static float *alloc_filled(float base, unsigned period = 17, float step = 0.25f)
{
	float *p;
	CK(cudaMalloc(&p, N * sizeof(float)));
	fill<<<GRID, BLOCK>>>(p, N, base, period, step);
	CK_LAUNCH();
	return p;
}

// The sum says roughly what happened; the FNV-1a hash of the bytes says it exactly.
static void print_checksum_n(const char *name, const float *d, size_t n)
{
	CK(cudaDeviceSynchronize());
	float *h = (float *)malloc(n * sizeof(float));
	if (!h) {
		fprintf(stderr, "out of host memory\n");
		exit(1);
	}
	CK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
	double sum = 0;
	uint64_t hash = 1469598103934665603ull;
	const unsigned char *b = (const unsigned char *)h;
	for (size_t i = 0; i < n; i++)
		sum += h[i];
	for (size_t i = 0; i < n * sizeof(float); i++)
		hash = (hash ^ b[i]) * 1099511628211ull;
	printf("%s sum %.10g hash %016llx\n", name, sum, (unsigned long long)hash);
	free(h);
}

static void print_checksum(const char *name, const float *d)
{
	print_checksum_n(name, d, N);
}

// With RANGE_REPLAY_TIME=1 in the environment, each range is also timed by the program's
// own CUDA events, recorded on the legacy stream just outside it, after the L2 was flushed
// by a 256 MiB memset and a read of the same bytes (as --cache-control all does before
// each run: the read writes the memset's dirty lines back before the range, as
// rangeprof's flush leaves none dirty and ncu's few; without it the range paid for
// writing them) and a kernel held
// every SM busy for ~2 ms, so that the range's launches are all queued when its first
// kernel starts (the range's GPU time without the host's launch latency in it, which a
// replay issued back to back does not have either: the first call showed 6 us of it in a
// one-kernel range) and the clocks are up as in a profiler's back-to-back runs (a
// one-thread hold left the one-kernel range 7.6 % longer than rangeprof's runs, with
// the same active cycles). Printed on stderr as "range NAME time us: median X (N ranges)", for
// tests/gpu/check_range.py vs-ncu --app-time. With RANGE_REPLAY_TIME=warm the same without
// the flush: each occurrence finds the caches as the previous one left them, as the
// application runs (printed as "range NAME warm time us: ..."). Plain runs only: under a
// profiler the events would hold its replays.
__global__ void hold(long long cycles)
{
	long long start = clock64();
	while (clock64() - start < cycles) {
	}
}

// 0: not timed; 1: timed after a flush; 2: timed as the caches are (warm).
static int timing_wanted()
{
	const char *v = getenv("RANGE_REPLAY_TIME");
	return !v ? 0 : !strcmp(v, "1") ? 1 : !strcmp(v, "warm") ? 2 : 0;
}

__global__ void sweep_read(const unsigned *p, size_t n, unsigned *sink)
{
	unsigned s = 0;
	FOR_EACH(i, n)
	s ^= p[i];
	if (s == 0x9e3779b9u)
		*sink = s;
}

// Runs body(i) for the warm-up (i = -1, outside any range) and then ITERATIONS times inside
// the NVTX range named name.
template <typename Body> static void run(const char *name, int iterations, bool warm_up, Body body)
{
	if (warm_up) {
		body(-1);
		CK(cudaDeviceSynchronize());
	}
	const int timing = timing_wanted();
	const size_t flush_bytes = (size_t)256 << 20;
	void *flush = nullptr;
	cudaEvent_t begin, end;
	float times_us[50];
	if (timing) {
		CK(cudaMalloc(&flush, flush_bytes));
		CK(cudaEventCreate(&begin));
		CK(cudaEventCreate(&end));
	}
	for (int i = 0; i < iterations; i++) {
		if (timing == 1) {
			CK(cudaMemsetAsync(flush, i & 0xff, flush_bytes, 0));
			sweep_read<<<GRID, BLOCK>>>((const unsigned *)flush, flush_bytes / 4,
			                            (unsigned *)flush);
			CK_LAUNCH();
		}
		if (timing) {
			hold<<<132 * 4, 128>>>(4000000);
			CK_LAUNCH();
			CK(cudaEventRecord(begin, 0));
		}
		nvtxRangePushA(name);
		body(i);
		nvtxRangePop();
		if (timing) {
			CK(cudaEventRecord(end, 0));
			CK(cudaEventSynchronize(end));
			float ms;
			CK(cudaEventElapsedTime(&ms, begin, end));
			times_us[i] = ms * 1e3f;
		}
	}
	CK(cudaDeviceSynchronize());
	if (timing) {
		// Median by insertion sort: at most 50 values.
		for (int i = 1; i < iterations; i++)
			for (int j = i; j > 0 && times_us[j - 1] > times_us[j]; j--) {
				float t = times_us[j];
				times_us[j] = times_us[j - 1];
				times_us[j - 1] = t;
			}
		float median = iterations % 2 ? times_us[iterations / 2]
		                              : 0.5f * (times_us[iterations / 2 - 1] + times_us[iterations / 2]);
		fprintf(stderr, "range %s %stime us: median %.2f (%d ranges)\n", name,
		        timing == 2 ? "warm " : "", median, iterations);
		CK(cudaEventDestroy(begin));
		CK(cudaEventDestroy(end));
		CK(cudaFree(flush));
	}
}

static void chain_launches(cudaStream_t s, float *x, float *y)
{
	add_scale<<<GRID, BLOCK, 0, s>>>(x, N);
	CK_LAUNCH();
	mix<<<GRID, BLOCK, 0, s>>>(y, x, N);
	CK_LAUNCH();
	fold<<<GRID, BLOCK, 0, s>>>(x, y, N);
	CK_LAUNCH();
}

static void chain_case(const char *name, int iterations, bool warm_up)
{
	float *x = alloc_filled(0.0f), *y = alloc_filled(1.0f);
	CK(cudaDeviceSynchronize());
	run(name, iterations, warm_up, [&](int) { chain_launches(0, x, y); });
	print_checksum("x", x);
	print_checksum("y", y);
	CK(cudaFree(x));
	CK(cudaFree(y));
}

static void memset_copy_case(int iterations)
{
	float *x = alloc_filled(0.0f), *t = alloc_filled(5.0f), *y = alloc_filled(2.0f);
	float *coef;
	CK(cudaMalloc(&coef, NCOEF * sizeof(float)));
	CK(cudaDeviceSynchronize());
	// Pageable host memory whose values change between iterations: a replay must use the
	// bytes the range's copy took, not what the host holds later.
	static float host_coef[NCOEF];
	run("memset_copy", iterations, true, [&](int i) {
		for (int j = 0; j < NCOEF; j++)
			host_coef[j] = (float)(i + 2) * 0.125f + (float)j * 0.5f;
		CK(cudaMemcpyAsync(coef, host_coef, sizeof host_coef, cudaMemcpyHostToDevice, 0));
		add_coef<<<GRID, BLOCK>>>(x, coef, N);
		CK_LAUNCH();
		CK(cudaMemsetAsync(t, 0, N * sizeof(float), 0));
		mix<<<GRID, BLOCK>>>(t, x, N);
		CK_LAUNCH();
		CK(cudaMemcpyAsync(y, t, N * sizeof(float), cudaMemcpyDeviceToDevice, 0));
		fold<<<GRID, BLOCK>>>(x, y, N);
		CK_LAUNCH();
	});
	print_checksum("x", x);
	print_checksum("t", t);
	print_checksum("y", y);
	CK(cudaFree(x));
	CK(cudaFree(t));
	CK(cudaFree(y));
	CK(cudaFree(coef));
}

static void streams_case(int iterations)
{
	float *x = alloc_filled(0.0f), *y = alloc_filled(1.0f), *z = alloc_filled(3.0f);
	CK(cudaDeviceSynchronize());
	cudaStream_t s1, s2;
	cudaEvent_t e1, e2;
	CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
	run("streams", iterations, true, [&](int) {
		add_scale<<<GRID, BLOCK, 0, s1>>>(x, N);
		CK_LAUNCH();
		CK(cudaEventRecord(e1, s1));
		CK(cudaStreamWaitEvent(s2, e1, 0));
		mix<<<GRID, BLOCK, 0, s2>>>(y, x, N);  // after x's update, on s2
		CK_LAUNCH();
		add_scale<<<GRID, BLOCK, 0, s1>>>(z, N);  // beside it, on s1
		CK_LAUNCH();
		CK(cudaEventRecord(e2, s2));
		CK(cudaStreamWaitEvent(s1, e2, 0));
		accumulate<<<GRID, BLOCK, 0, s1>>>(z, y, N);  // after both
		CK_LAUNCH();
		CK(cudaStreamSynchronize(s1));
	});
	printf("event e1 %s e2 %s\n", cudaGetErrorName(cudaEventQuery(e1)),
	       cudaGetErrorName(cudaEventQuery(e2)));
	print_checksum("x", x);
	print_checksum("y", y);
	print_checksum("z", z);
	CK(cudaEventDestroy(e1));
	CK(cudaEventDestroy(e2));
	CK(cudaStreamDestroy(s1));
	CK(cudaStreamDestroy(s2));
	CK(cudaFree(x));
	CK(cudaFree(y));
	CK(cudaFree(z));
}

static void graph_case(int iterations)
{
	float *x = alloc_filled(0.0f), *y = alloc_filled(1.0f);
	CK(cudaDeviceSynchronize());
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaGraph_t g;
	cudaGraphExec_t exec;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	chain_launches(s, x, y);
	CK(cudaStreamEndCapture(s, &g));
	size_t nodes = 0;
	CK(cudaGraphGetNodes(g, nullptr, &nodes));
	printf("graph nodes %zu\n", nodes);
	CK(cudaGraphInstantiate(&exec, g, 0));
	CK(cudaGraphDestroy(g));
	run("graph", iterations, true, [&](int) { CK(cudaGraphLaunch(exec, s)); });
	CK(cudaStreamSynchronize(s));
	print_checksum("x", x);
	print_checksum("y", y);
	CK(cudaGraphExecDestroy(exec));
	CK(cudaStreamDestroy(s));
	CK(cudaFree(x));
	CK(cudaFree(y));
}

static void fusion_case(const char *name, bool fused, int iterations)
{
	// a and b in [0, 1) as the tutorial's torch.rand, c in [0, 1) too.
	float *a = alloc_filled(0.0f, 97, 1.0f / 97), *b = alloc_filled(0.0f, 89, 1.0f / 89);
	float *c = alloc_filled(0.0f, 83, 1.0f / 83), *out = alloc_filled(0.0f, 1, 0.0f);
	float *t = fused ? nullptr : alloc_filled(0.0f, 1, 0.0f);
	CK(cudaDeviceSynchronize());
	run(name, iterations, true, [&](int i) {
		if (fused) {
			fma_fused<<<GRID, BLOCK>>>(out, a, b, c, N);
			CK_LAUNCH();
		} else {
			mul_kernel<<<GRID, BLOCK>>>(t, a, b, N);
			CK_LAUNCH();
			add_kernel<<<GRID, BLOCK>>>(out, t, c, N);
			CK_LAUNCH();
		}
		// On the host only (no CUDA call): the next iteration adds to this one's
		// result. Not after the warm-up, so that the iterations start from the same c
		// as without it.
		if (i >= 0) {
			float *tmp = c;
			c = out;
			out = tmp;
		}
	});
	// Printed the same by both variants: c is the last result.
	print_checksum("result", c);
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFree(c));
	CK(cudaFree(out));
	if (t)
		CK(cudaFree(t));
}

// What a range's counters include (issue 36): each probe is one range of a memset or a
// device-to-device copy, alone or before a kernel that reads what it wrote, beside the same
// with a kernel in its place (write_read), and a big memset or copy before a one-block
// kernel (does the range's time hold the memset's or the copy's?). Run at a size that fits
// the L2 (RANGE_REPLAY_MIB=16), whether the reading kernel finds the bytes in the L2 says
// whether the tool flushed between the memset or copy and the kernel.
static void probe_case(const char *mode, int iterations)
{
	const bool big = !strcmp(mode, "memset_big") || !strcmp(mode, "copy_big");
	const size_t big_bytes = (size_t)1 << 30;
	float *x = alloc_filled(0.0f), *y = alloc_filled(1.0f), *part;
	const bool three = !strcmp(mode, "memset_copy_kernel");
	float *t = three ? alloc_filled(3.0f) : nullptr, *z = three ? alloc_filled(0.0f) : nullptr;
	char *b0 = nullptr, *b1 = nullptr;
	CK(cudaMalloc(&part, GRID * sizeof(float)));
	if (big) {
		CK(cudaMalloc(&b0, big_bytes));
		CK(cudaMalloc(&b1, big_bytes));
		CK(cudaMemset(b1, 7, big_bytes));
	}
	CK(cudaDeviceSynchronize());
	run(mode, iterations, true, [&](int i) {
		// A new value every iteration: a replay must set what the range set.
		const int value = 0x3c + (i + 1) % 3;
		if (!strcmp(mode, "memset_copy_kernel")) {
			CK(cudaMemsetAsync(t, value, N * sizeof(float), 0));
			CK(cudaMemcpyAsync(y, x, N * sizeof(float), cudaMemcpyDeviceToDevice, 0));
			add_kernel<<<GRID, BLOCK>>>(z, t, y, N);
			CK_LAUNCH();
			return;
		}
		if (!strcmp(mode, "kernel_memset_read")) {
			scaled_copy<<<GRID, BLOCK>>>(y, x, N, 0.5f);
			CK_LAUNCH();
			CK(cudaMemsetAsync(y, value, N * sizeof(float), 0));
			sum_blocks<<<GRID, BLOCK>>>(part, y, N);
			CK_LAUNCH();
			return;
		}
		if (!strcmp(mode, "memset_only") || !strcmp(mode, "memset_read"))
			CK(cudaMemsetAsync(y, value, N * sizeof(float), 0));
		else if (!strcmp(mode, "copy_only") || !strcmp(mode, "copy_read"))
			CK(cudaMemcpyAsync(y, x, N * sizeof(float), cudaMemcpyDeviceToDevice, 0));
		else if (!strcmp(mode, "write_read")) {
			scaled_copy<<<GRID, BLOCK>>>(y, x, N, 0.5f);
			CK_LAUNCH();
		} else if (!strcmp(mode, "memset_big"))
			CK(cudaMemsetAsync(b0, value, big_bytes, 0));
		else
			CK(cudaMemcpyAsync(b0, b1, big_bytes, cudaMemcpyDeviceToDevice, 0));
		if (!strcmp(mode, "memset_read") || !strcmp(mode, "copy_read") ||
		    !strcmp(mode, "write_read")) {
			sum_blocks<<<GRID, BLOCK>>>(part, y, N);
			CK_LAUNCH();
		} else if (big) {
			sum_blocks<<<1, BLOCK>>>(part, x, 4096);
			CK_LAUNCH();
		}
	});
	print_checksum("x", x);
	print_checksum("y", y);
	print_checksum_n("part", part, GRID);
	if (three) {
		print_checksum("t", t);
		print_checksum("z", z);
		CK(cudaFree(t));
		CK(cudaFree(z));
	}
	CK(cudaFree(x));
	CK(cudaFree(y));
	CK(cudaFree(part));
	if (big) {
		CK(cudaFree(b0));
		CK(cudaFree(b1));
	}
}

static void refuse_d2h_case(int iterations)
{
	float *x = alloc_filled(0.0f), *y = alloc_filled(1.0f);
	int *flag;
	CK(cudaMalloc(&flag, sizeof(int)));
	CK(cudaDeviceSynchronize());
	char branches[64] = "";
	run("refuse_d2h", iterations, true, [&](int i) {
		add_scale<<<GRID, BLOCK>>>(x, N);
		CK_LAUNCH();
		pick<<<1, 32>>>(flag, x, (size_t)(i + 1) * 4099 % N);
		CK_LAUNCH();
		int h = 0;
		CK(cudaMemcpy(&h, flag, sizeof h, cudaMemcpyDeviceToHost));
		// What the host launches next depends on the value it read.
		if (h & 1)
			add_scale<<<GRID, BLOCK>>>(y, N);
		else
			mix<<<GRID, BLOCK>>>(y, x, N);
		CK_LAUNCH();
		fold<<<GRID, BLOCK>>>(x, y, N);
		CK_LAUNCH();
		if (i >= 0 && (size_t)i + 1 < sizeof branches) {
			size_t len = strlen(branches);
			branches[len] = (h & 1) ? 'a' : 'b';
			branches[len + 1] = 0;
		}
	});
	printf("branches %s\n", branches);
	print_checksum("x", x);
	print_checksum("y", y);
	CK(cudaFree(x));
	CK(cudaFree(y));
	CK(cudaFree(flag));
}

static void refuse_alloc_case(int iterations)
{
	float *x = alloc_filled(0.0f), *y = alloc_filled(1.0f);
	CK(cudaDeviceSynchronize());
	run("refuse_alloc", iterations, true, [&](int) {
		add_scale<<<GRID, BLOCK>>>(x, N);
		CK_LAUNCH();
		float *scratch;
		CK(cudaMalloc(&scratch, N * sizeof(float)));
		scaled_copy<<<GRID, BLOCK>>>(scratch, x, N, 0.5f);
		CK_LAUNCH();
		accumulate<<<GRID, BLOCK>>>(y, scratch, N);
		CK_LAUNCH();
		CK(cudaFree(scratch));
	});
	print_checksum("x", x);
	print_checksum("y", y);
	CK(cudaFree(x));
	CK(cudaFree(y));
}

static int host_calls;
static unsigned long long host_order;

static void CUDART_CB count_host(void *arg)
{
	// The order the calls came in: each must run once, in its place.
	host_calls++;
	host_order = host_order * 10 + (unsigned long long)(intptr_t)arg;
}

static void refuse_hostfn_case(int iterations)
{
	float *x = alloc_filled(0.0f), *y = alloc_filled(1.0f);
	CK(cudaDeviceSynchronize());
	run("refuse_hostfn", iterations, true, [&](int i) {
		add_scale<<<GRID, BLOCK>>>(x, N);
		CK_LAUNCH();
		CK(cudaLaunchHostFunc(0, count_host, (void *)(intptr_t)((i + 2) % 10)));
		mix<<<GRID, BLOCK>>>(y, x, N);
		CK_LAUNCH();
	});
	printf("host function calls %d order %llu\n", host_calls, host_order);
	print_checksum("x", x);
	print_checksum("y", y);
	CK(cudaFree(x));
	CK(cudaFree(y));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "chain";
	int iterations = argc > 2 ? atoi(argv[2]) : 4;
	if (iterations < 1 || iterations > 50) {
		fprintf(stderr, "usage: range_replay MODE [ITERATIONS 1-50]\n");
		return 2;
	}
	if (const char *mib = getenv("RANGE_REPLAY_MIB")) {
		long v = atol(mib);
		if (v < 1 || v > 1024) {
			fprintf(stderr, "range_replay: RANGE_REPLAY_MIB=%s: expected 1-1024\n", mib);
			return 2;
		}
		N = (size_t)v << 18;
	}
	// RANGE_REPLAY_PAD_MB (0-4096) of device memory allocated before the buffers moves them
	// by that much: where the arrays lie decides what the L2 writes back (issue 36).
	if (const char *pad = getenv("RANGE_REPLAY_PAD_MB")) {
		long v = atol(pad);
		if (v < 0 || v > 4096) {
			fprintf(stderr, "range_replay: RANGE_REPLAY_PAD_MB=%s: expected 0-4096\n", pad);
			return 2;
		}
		void *p = nullptr;
		if (v)
			CK(cudaMalloc(&p, (size_t)v << 20));
	}
	printf("mode %s iterations %d\n", mode, iterations);
	if (!strcmp(mode, "chain"))
		chain_case("chain", iterations, true);
	else if (!strcmp(mode, "cold"))
		chain_case("cold", iterations, false);
	else if (!strcmp(mode, "memset_copy"))
		memset_copy_case(iterations);
	else if (!strcmp(mode, "streams"))
		streams_case(iterations);
	else if (!strcmp(mode, "graph"))
		graph_case(iterations);
	else if (!strcmp(mode, "fused"))
		fusion_case("fused", true, iterations);
	else if (!strcmp(mode, "unfused"))
		fusion_case("unfused", false, iterations);
	else if (!strcmp(mode, "refuse_d2h"))
		refuse_d2h_case(iterations);
	else if (!strcmp(mode, "memset_only") || !strcmp(mode, "memset_read") ||
	         !strcmp(mode, "copy_only") || !strcmp(mode, "copy_read") ||
	         !strcmp(mode, "write_read") || !strcmp(mode, "memset_big") ||
	         !strcmp(mode, "copy_big") || !strcmp(mode, "memset_copy_kernel") ||
	         !strcmp(mode, "kernel_memset_read"))
		probe_case(mode, iterations);
	else if (!strcmp(mode, "refuse_alloc"))
		refuse_alloc_case(iterations);
	else if (!strcmp(mode, "refuse_hostfn"))
		refuse_hostfn_case(iterations);
	else {
		fprintf(stderr, "range_replay: unknown mode '%s' (chain cold memset_copy streams graph "
		                "fused unfused refuse_d2h refuse_alloc refuse_hostfn memset_only memset_read "
		                "copy_only copy_read write_read memset_big copy_big memset_copy_kernel "
		                "kernel_memset_read)\n", mode);
		return 2;
	}
	CK(cudaDeviceSynchronize());
	return 0;
}
