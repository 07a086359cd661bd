// bench/cupti_enable_probe.cu - what CUPTI's driver-API callbacks cost a launch that nobody
// measures, by which ids are enabled and how (issue 20: range mode enables the whole
// driver domain once and for good, so that a recorded range sees every call it makes, and
// an unselected launch then costs +0.7-1.7 us against kernel mode's ~+0.1 us, bench/NOTES.md
// "Session 10"). One subscriber whose callback only counts, like rangeprof's early return,
// and these states in order, each measured as the median host time per launch of an empty
// kernel (3 x 2000 launches) and checked by whether a cuCtxGetCurrent call reaches the
// callback:
//   plain          no subscriber yet
//   launches       the launch ids alone (kernel mode's set, for a launch)
//   domain         cuptiEnableDomain(1) (range mode today)
//   narrowed       then every id but the launch ids disabled one by one (what a range's
//                  end would do); the time of that loop is printed
//   domain_again   then cuptiEnableDomain(1): does it enable the ids disabled one by one?
//                  (session 9 saw it not do so)
//   each_again     then every id enabled one by one; the loop's time printed
//   domain_off     cuptiEnableDomain(0), then the launch ids enabled one by one
//   domain_on      then cuptiEnableDomain(1) once more
// Build: nvcc -O2 -arch=sm_90 -std=c++17 bench/cupti_enable_probe.cu -o cupti_enable_probe -lcuda -lcupti
// Run:   ./cupti_enable_probe
#include <algorithm>
#include <cstdio>
#include <vector>
#include <time.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

static unsigned long long callbacks;

static void CUPTIAPI count(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *)
{
	callbacks++;
}

static double now_us()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

__global__ void empty() {}

static const CUpti_CallbackId launch_ids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

static bool is_launch(CUpti_CallbackId id)
{
	for (CUpti_CallbackId l : launch_ids)
		if (l == id)
			return true;
	return false;
}

// Median host time per empty-kernel launch, and whether cuCtxGetCurrent calls back.
static void measure(const char *state, const char *note = "")
{
	std::vector<double> per;
	cudaDeviceSynchronize();
	for (int batch = 0; batch < 3; batch++) {
		double t0 = now_us();
		for (int i = 0; i < 2000; i++)
			empty<<<1, 32>>>();
		double t1 = now_us();
		cudaDeviceSynchronize();
		per.push_back((t1 - t0) / 2000);
	}
	std::sort(per.begin(), per.end());
	unsigned long long before = callbacks;
	CUcontext ctx;
	for (int i = 0; i < 10; i++)
		cuCtxGetCurrent(&ctx);
	printf("%-13s %.3f us per launch (batches %.3f-%.3f); cuCtxGetCurrent calls back: %s%s\n",
	       state, per[1], per[0], per[2], callbacks > before ? "yes" : "no", note);
}

static double each(CUpti_SubscriberHandle sub, unsigned enable, bool launches_too)
{
	double t0 = now_us();
	for (CUpti_CallbackId id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++)
		if (launches_too || !is_launch(id))
			cuptiEnableCallback(enable, sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
	return now_us() - t0;
}

int main()
{
	cudaFree(0);
	empty<<<1, 32>>>();
	cudaDeviceSynchronize();
	measure("plain");
	CUpti_SubscriberHandle sub;
	if (cuptiSubscribe(&sub, count, nullptr) != CUPTI_SUCCESS) {
		fprintf(stderr, "cuptiSubscribe failed (another CUPTI client?)\n");
		return 1;
	}
	for (CUpti_CallbackId id : launch_ids)
		cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
	measure("launches");
	cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
	measure("domain");
	char note[96];
	snprintf(note, sizeof(note), " (disabling %d ids one by one took %.0f us)",
	         CUPTI_DRIVER_TRACE_CBID_SIZE - 1 - 8, each(sub, 0, false));
	measure("narrowed", note);
	cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
	measure("domain_again");
	snprintf(note, sizeof(note), " (enabling every id one by one took %.0f us)", each(sub, 1, true));
	measure("each_again", note);
	double t0 = now_us();
	cuptiEnableDomain(0, sub, CUPTI_CB_DOMAIN_DRIVER_API);
	for (CUpti_CallbackId id : launch_ids)
		cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
	snprintf(note, sizeof(note), " (domain off and the launch ids on took %.0f us)", now_us() - t0);
	measure("domain_off", note);
	t0 = now_us();
	cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
	snprintf(note, sizeof(note), " (cuptiEnableDomain(1) took %.0f us)", now_us() - t0);
	measure("domain_on", note);
	cuptiUnsubscribe(sub);
	measure("unsubscribed");
	return 0;
}
