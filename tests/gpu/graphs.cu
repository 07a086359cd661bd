// tests/gpu/graphs.cu - CUDA graphs (issue 8), one program with a mode per case, each run
// plain and under rangeprof: the printed lines (checksums, node and edge counts, host
// counter) must be identical, and node-mode times are compared with ncu's.
//   capture    stream capture (global mode) of a chain of 3 in-place kernels, the graph
//              launched 5 times in "g", then the same 3 kernels launched plainly in "plain"
//   modes      the same capture in thread-local and in relaxed mode, each graph launched
//              twice in "g"
//   explicit   a graph built node by node: kernel, memset, memcpy (device to device), host,
//              event record and a child graph of two kernels; launched 3 times in "g"
//   update     one kernel node, launched, changed by cudaGraphExecKernelNodeSetParams,
//              launched, changed by cudaGraphExecUpdate, launched; all in "g"
//   many       a graph of 2 in-place kernels launched 50 times inside one "g"
//   late       captures in global mode from 150 ms after the first allocation, for ~1.5 s,
//              outside any range: under --setup early they overlap rangeprof's set-up
//              thread (allocations, module loads, the profiler's first pass), which must
//              not invalidate them
// Every kernel updates memory in place and does its own element only (no atomics), so the
// results are deterministic and any replay that is not undone shows in the checksums.
// The buffers are 16M floats: each kernel takes about 30-50 us on an H200, long enough for
// the comparison with ncu to mean something.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
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

static const size_t N = (size_t)1 << 24;
static const unsigned GRID = 132 * 8, BLOCK = 256;

#define FOR_EACH(i, n) \
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

__global__ void fill(float *p, size_t n, float base)
{
	FOR_EACH(i, n)
	p[i] = base + (float)(i % 17) * 0.25f;
}

// x += 1
__global__ void add_one(float *x, size_t n)
{
	FOR_EACH(i, n)
	x[i] += 1.0f;
}

// y = y * s + x
__global__ void scale_add(float *y, const float *x, size_t n, float s)
{
	FOR_EACH(i, n)
	y[i] = y[i] * s + x[i];
}

// z += y
__global__ void accumulate(float *z, const float *y, size_t n)
{
	FOR_EACH(i, n)
	z[i] += y[i];
}

static float *alloc_filled(float base)
{
	float *p;
	CK(cudaMalloc(&p, N * sizeof(float)));
	fill<<<GRID, BLOCK>>>(p, N, base);
	CK_LAUNCH();
	return p;
}

// The sum says roughly what happened; the FNV-1a hash of the bytes says it exactly.
static void print_checksum(const char *name, const float *d)
{
	CK(cudaDeviceSynchronize());
	float *h = (float *)malloc(N * sizeof(float));
	CK(cudaMemcpy(h, d, N * sizeof(float), cudaMemcpyDeviceToHost));
	double sum = 0;
	uint64_t hash = 1469598103934665603ull;
	const unsigned char *b = (const unsigned char *)h;
	for (size_t i = 0; i < N; i++)
		sum += h[i];
	for (size_t i = 0; i < N * sizeof(float); i++)
		hash = (hash ^ b[i]) * 1099511628211ull;
	printf("%s sum %.10g hash %016llx\n", name, sum, (unsigned long long)hash);
	free(h);
}

// What the capture recorded, so that a disturbed capture shows in the output.
static void print_shape(const char *name, cudaGraph_t g)
{
	size_t nodes = 0, edges = 0;
	CK(cudaGraphGetNodes(g, nullptr, &nodes));
#if CUDART_VERSION >= 13000
	CK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &edges));
#else
	CK(cudaGraphGetEdges(g, nullptr, nullptr, &edges));
#endif
	printf("%s nodes %zu edges %zu\n", name, nodes, edges);
}

// The chain x += 1; y = y*2 + x; z += y on stream s.
static void chain(cudaStream_t s, float *x, float *y, float *z)
{
	add_one<<<GRID, BLOCK, 0, s>>>(x, N);
	CK_LAUNCH();
	scale_add<<<GRID, BLOCK, 0, s>>>(y, x, N, 2.0f);
	CK_LAUNCH();
	accumulate<<<GRID, BLOCK, 0, s>>>(z, y, N);
	CK_LAUNCH();
}

static cudaGraphExec_t capture_chain(const char *name, cudaStream_t s, cudaStreamCaptureMode mode,
                                     float *x, float *y, float *z)
{
	cudaGraph_t g;
	cudaGraphExec_t exec;
	CK(cudaStreamBeginCapture(s, mode));
	chain(s, x, y, z);
	CK(cudaStreamEndCapture(s, &g));
	print_shape(name, g);
	CK(cudaGraphInstantiate(&exec, g, 0));
	CK(cudaGraphDestroy(g));
	return exec;
}

static void launch_in_g(cudaGraphExec_t exec, cudaStream_t s, int times)
{
	for (int i = 0; i < times; i++) {
		nvtxRangePushA("g");
		CK(cudaGraphLaunch(exec, s));
		nvtxRangePop();
	}
	CK(cudaStreamSynchronize(s));
}

static void capture_case(cudaStream_t s)
{
	float *x = alloc_filled(0.0f), *y = alloc_filled(1.0f), *z = alloc_filled(2.0f);
	CK(cudaDeviceSynchronize());
	cudaGraphExec_t exec = capture_chain("capture", s, cudaStreamCaptureModeGlobal, x, y, z);
	launch_in_g(exec, s, 5);
	// The same kernels outside any graph: their records and ncu's sit beside the nodes'.
	nvtxRangePushA("plain");
	chain(s, x, y, z);
	nvtxRangePop();
	print_checksum("x", x);
	print_checksum("y", y);
	print_checksum("z", z);
	CK(cudaGraphExecDestroy(exec));
	CK(cudaFree(x));
	CK(cudaFree(y));
	CK(cudaFree(z));
}

static void modes_case(cudaStream_t s)
{
	float *x = alloc_filled(0.0f), *y = alloc_filled(1.0f), *z = alloc_filled(2.0f);
	CK(cudaDeviceSynchronize());
	cudaGraphExec_t local = capture_chain("thread-local", s, cudaStreamCaptureModeThreadLocal, x, y, z);
	cudaGraphExec_t relaxed = capture_chain("relaxed", s, cudaStreamCaptureModeRelaxed, x, y, z);
	launch_in_g(local, s, 2);
	launch_in_g(relaxed, s, 2);
	print_checksum("x", x);
	print_checksum("y", y);
	print_checksum("z", z);
	CK(cudaGraphExecDestroy(local));
	CK(cudaGraphExecDestroy(relaxed));
	CK(cudaFree(x));
	CK(cudaFree(y));
	CK(cudaFree(z));
}

// Runs on a CUDA-owned host thread each time the graph's host node executes: a profiler
// that replayed the whole graph would run it again and the count would show it.
static void CUDART_CB count_host(void *user)
{
	++*(int *)user;
}

static cudaKernelNodeParams kernel_params(void *func, void **args)
{
	cudaKernelNodeParams p = {};
	p.func = func;
	p.gridDim = dim3(GRID);
	p.blockDim = dim3(BLOCK);
	p.sharedMemBytes = 0;
	p.kernelParams = args;
	p.extra = nullptr;
	return p;
}

static void explicit_case(cudaStream_t s)
{
	float *x = alloc_filled(0.0f), *w = alloc_filled(5.0f), *w2 = alloc_filled(0.0f);
	float *z = alloc_filled(3.0f);
	CK(cudaDeviceSynchronize());
	size_t n = N;
	float two = 2.0f;
	static int host_counter = 0;
	cudaEvent_t ev;
	CK(cudaEventCreate(&ev));

	cudaGraph_t g;
	CK(cudaGraphCreate(&g, 0));

	// A: x += 1
	cudaGraphNode_t a;
	void *a_args[] = {&x, &n};
	cudaKernelNodeParams ap = kernel_params((void *)add_one, a_args);
	CK(cudaGraphAddKernelNode(&a, g, nullptr, 0, &ap));

	// M: w = 1.0f everywhere (a 4-byte memset, so the float's bits)
	cudaGraphNode_t m;
	cudaMemsetParams mp = {};
	mp.dst = w;
	mp.elementSize = 4;
	mp.value = 0x3f800000u;
	mp.width = N;
	mp.height = 1;
	mp.pitch = 0;
	CK(cudaGraphAddMemsetNode(&m, g, nullptr, 0, &mp));

	// C: w2 = x, after A
	cudaGraphNode_t c;
	cudaMemcpy3DParms cp = {};
	cp.srcPtr = make_cudaPitchedPtr(x, N * sizeof(float), N, 1);
	cp.dstPtr = make_cudaPitchedPtr(w2, N * sizeof(float), N, 1);
	cp.extent = make_cudaExtent(N * sizeof(float), 1, 1);
	cp.kind = cudaMemcpyDeviceToDevice;
	CK(cudaGraphAddMemcpyNode(&c, g, &a, 1, &cp));

	// K: w = w*2 + w2, after M and C
	cudaGraphNode_t k;
	cudaGraphNode_t k_deps[] = {m, c};
	void *k_args[] = {&w, &w2, &n, &two};
	cudaKernelNodeParams kp = kernel_params((void *)scale_add, k_args);
	CK(cudaGraphAddKernelNode(&k, g, k_deps, 2, &kp));

	// H: the host counter, after K
	cudaGraphNode_t h;
	cudaHostNodeParams hp = {};
	hp.fn = count_host;
	hp.userData = &host_counter;
	CK(cudaGraphAddHostNode(&h, g, &k, 1, &hp));

	// E: an event recorded after K
	cudaGraphNode_t e;
	CK(cudaGraphAddEventRecordNode(&e, g, &k, 1, ev));

	// Child graph, after K: z += 1; z += w
	cudaGraph_t child;
	CK(cudaGraphCreate(&child, 0));
	cudaGraphNode_t c1, c2;
	void *c1_args[] = {&z, &n};
	cudaKernelNodeParams c1p = kernel_params((void *)add_one, c1_args);
	CK(cudaGraphAddKernelNode(&c1, child, nullptr, 0, &c1p));
	void *c2_args[] = {&z, &w, &n};
	cudaKernelNodeParams c2p = kernel_params((void *)accumulate, c2_args);
	CK(cudaGraphAddKernelNode(&c2, child, &c1, 1, &c2p));
	cudaGraphNode_t sub;
	CK(cudaGraphAddChildGraphNode(&sub, g, &k, 1, child));

	print_shape("explicit", g);
	print_shape("child", child);
	cudaGraphExec_t exec;
	CK(cudaGraphInstantiate(&exec, g, 0));
	launch_in_g(exec, s, 3);
	CK(cudaEventSynchronize(ev));
	printf("event %s\n", cudaGetErrorName(cudaEventQuery(ev)));
	printf("host counter %d\n", host_counter);
	print_checksum("x", x);
	print_checksum("w", w);
	print_checksum("w2", w2);
	print_checksum("z", z);
	CK(cudaGraphExecDestroy(exec));
	CK(cudaGraphDestroy(child));
	CK(cudaGraphDestroy(g));
	CK(cudaEventDestroy(ev));
	CK(cudaFree(x));
	CK(cudaFree(w));
	CK(cudaFree(w2));
	CK(cudaFree(z));
}

static void update_case(cudaStream_t s)
{
	float *x = alloc_filled(1.0f), *a = alloc_filled(0.0f), *b = alloc_filled(10.0f);
	CK(cudaDeviceSynchronize());
	size_t n = N;

	// Launch 1: a = a*2 + x
	float s1 = 2.0f;
	void *args1[] = {&a, &x, &n, &s1};
	cudaKernelNodeParams p1 = kernel_params((void *)scale_add, args1);
	cudaGraph_t g;
	cudaGraphNode_t node;
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphAddKernelNode(&node, g, nullptr, 0, &p1));
	cudaGraphExec_t exec;
	CK(cudaGraphInstantiate(&exec, g, 0));
	launch_in_g(exec, s, 1);

	// Launch 2: another buffer and scalar in the same executable graph: b = b*3 + x
	float s2 = 3.0f;
	void *args2[] = {&b, &x, &n, &s2};
	cudaKernelNodeParams p2 = kernel_params((void *)scale_add, args2);
	CK(cudaGraphExecKernelNodeSetParams(exec, node, &p2));
	launch_in_g(exec, s, 1);

	// Launch 3: a graph of the same topology applied whole: a = a*0.5 + x
	float s3 = 0.5f;
	void *args3[] = {&a, &x, &n, &s3};
	cudaKernelNodeParams p3 = kernel_params((void *)scale_add, args3);
	cudaGraph_t g2;
	cudaGraphNode_t node2;
	CK(cudaGraphCreate(&g2, 0));
	CK(cudaGraphAddKernelNode(&node2, g2, nullptr, 0, &p3));
	cudaGraphExecUpdateResultInfo info = {};
	CK(cudaGraphExecUpdate(exec, g2, &info));
	printf("exec update result %d\n", (int)info.result);
	launch_in_g(exec, s, 1);

	print_checksum("a", a);
	print_checksum("b", b);
	CK(cudaGraphExecDestroy(exec));
	CK(cudaGraphDestroy(g));
	CK(cudaGraphDestroy(g2));
	CK(cudaFree(x));
	CK(cudaFree(a));
	CK(cudaFree(b));
}

static void many_case(cudaStream_t s)
{
	float *x = alloc_filled(0.0f), *z = alloc_filled(1.0f);
	CK(cudaDeviceSynchronize());
	cudaGraph_t g;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	add_one<<<GRID, BLOCK, 0, s>>>(x, N);
	CK_LAUNCH();
	accumulate<<<GRID, BLOCK, 0, s>>>(z, x, N);
	CK_LAUNCH();
	CK(cudaStreamEndCapture(s, &g));
	print_shape("many", g);
	cudaGraphExec_t exec;
	CK(cudaGraphInstantiate(&exec, g, 0));
	// One range around all launches: the NVTX path at each cuGraphLaunch is still "g".
	nvtxRangePushA("g");
	for (int i = 0; i < 50; i++)
		CK(cudaGraphLaunch(exec, s));
	nvtxRangePop();
	CK(cudaStreamSynchronize(s));
	print_checksum("x", x);
	print_checksum("z", z);
	CK(cudaGraphExecDestroy(exec));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(x));
	CK(cudaFree(z));
}

static void late_case(cudaStream_t s)
{
	float *x = alloc_filled(1.0f);
	CK(cudaDeviceSynchronize());
	struct timespec pause = { 0, 150 * 1000 * 1000 };
	nanosleep(&pause, NULL);
	int captures = 0;
	for (; captures < 300; captures++) {
		cudaGraph_t g;
		cudaGraphExec_t exec;
		CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
		add_one<<<GRID, BLOCK, 0, s>>>(x, N);
		CK_LAUNCH();
		CK(cudaStreamEndCapture(s, &g));
		CK(cudaGraphInstantiate(&exec, g, 0));
		CK(cudaGraphLaunch(exec, s));
		CK(cudaStreamSynchronize(s));
		CK(cudaGraphExecDestroy(exec));
		CK(cudaGraphDestroy(g));
		struct timespec gap = { 0, 5 * 1000 * 1000 };
		nanosleep(&gap, NULL);
	}
	printf("captures in global mode, all valid: %d\n", captures);
	print_checksum("x", x);
	CK(cudaFree(x));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "capture";
	// A non-blocking stream: capture is not allowed on the legacy default stream.
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	if (!strcmp(mode, "capture")) {
		capture_case(s);
	} else if (!strcmp(mode, "modes")) {
		modes_case(s);
	} else if (!strcmp(mode, "explicit")) {
		explicit_case(s);
	} else if (!strcmp(mode, "update")) {
		update_case(s);
	} else if (!strcmp(mode, "many")) {
		many_case(s);
	} else if (!strcmp(mode, "late")) {
		late_case(s);
	} else {
		fprintf(stderr, "unknown mode %s (capture, modes, explicit, update, many, late)\n",
			mode);
		return 2;
	}
	CK(cudaStreamDestroy(s));
	return 0;
}
