// bench/probe.h - what the bench probes (stop_probe.cu, first_launch_probe.cu) share: a
// millisecond clock, CUPTI's error strings and their two kernels (the measured x += 1 and
// an empty one whose launches are timed). Header only, so that each probe still
// builds with the one nvcc line in its own header comment.
#pragma once
#include <cupti_result.h>
#include <stddef.h>
#include <time.h>

static double now_ms()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static const char *cupti_str(CUptiResult r)
{
	const char *s = NULL;
	if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
		return "(unknown CUPTI error)";
	return s;
}

__global__ void inplace_add_one(float *x, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] += 1.0f;
}

__global__ void tiny(int *x)
{
	if (threadIdx.x == 0 && x[0] == 12345)
		x[1] = 1;
}
