// bench/probe.h - what the bench probes (stop_probe.cu, first_launch_probe.cu,
// graph_range_probe.cu) share, so that each thing is written, and fixed, once: a millisecond
// clock, CUPTI's error strings, a median and the per-phase table (median, min, max) that
// stop_probe and graph_range_probe print, their two kernels (the measured x += 1 and an empty
// one whose launches are timed), and the CUPTI range profiler calls they all make, with what
// differs between them as parameters (metric list, device, context, profiler object, range
// mode, number of ranges): the profiler host object and its config image, Enable / Disable of
// a range profiler object, a counter data image sized, initialised and given to SetConfig,
// the number of ranges in an image and a range's metric values.
// Each CUPTI helper makes one step as first_launch_probe times it (one call, or
// GetConfigImageSize + GetConfigImage), so that it still times every step as its own row;
// profiler_host_create and counter_data_prepare chain them for the probes that do not.
// Start, Stop, DecodeData and Push/Pop stay in the probes: each times them and handles their
// results its own way. Header only, so that each probe still builds with the one nvcc line
// in its own header comment.
//
// A probe that includes this defines ok() (declared below): a failed CUPTI call is printed in
// the probe's own row format, so the error lines the helpers print look like its others.
#pragma once
#include <cuda.h>
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <algorithm>
#include <string>
#include <vector>

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

// The median of samples s; NAN with none.
static inline double median(std::vector<double> s)
{
	if (s.empty())
		return NAN;
	std::sort(s.begin(), s.end());
	return s.size() % 2 ? s[s.size() / 2] : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2;
}

// Per-phase samples of one variant, printed as median (min, max) in ms, a row per phase in
// the order first added.
struct Table {
	std::string title;
	int width = 40; // of the title and phase column; a probe with longer names widens it
	std::vector<std::string> names;
	std::vector<std::vector<double>> v;
	void add(const char *name, double ms)
	{
		for (size_t i = 0; i < names.size(); i++)
			if (names[i] == name) {
				v[i].push_back(ms);
				return;
			}
		names.push_back(name);
		v.push_back({ms});
	}
	// add the time since *lap under name and move the lap on
	void lap(const char *name, double *lap)
	{
		double t = now_ms();
		add(name, t - *lap);
		*lap = t;
	}
	void print() const
	{
		printf("  %-*s %5s %10s %10s %10s\n", width, title.c_str(), "n", "median_ms", "min_ms",
		       "max_ms");
		for (size_t i = 0; i < names.size(); i++) {
			std::vector<double> s = v[i];
			std::sort(s.begin(), s.end());
			printf("  %-*s %5zu %10.3f %10.3f %10.3f\n", width, names[i].c_str(), s.size(),
			       median(s), s.front(), s.back());
		}
		fflush(stdout);
	}
};

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

// ---------------------------------------------------------------- CUPTI calls

// Defined by each probe: prints "ERROR <call>: <code> <string>" in its row format and returns
// false when r is not CUPTI_SUCCESS. CK names the call as written, parameters included.
static bool ok(CUptiResult r, const char *call);
#define CK(call) ok((call), #call)

static inline bool profiler_initialize()
{
	CUpti_Profiler_Initialize_Params init = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
	return CK(cuptiProfilerInitialize(&init));
}

// *name: CUPTI's chip name for device index device.
static inline bool chip_name(size_t device, const char **name)
{
	CUpti_Device_GetChipName_Params chip = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
	chip.deviceIndex = device;
	if (!CK(cuptiDeviceGetChipName(&chip)))
		return false;
	*name = chip.pChipName;
	return true;
}

// The counter availability image of ctx takes two calls, its size and then its bytes (into
// image, sized by the caller); first_launch_probe times them apart.
static inline bool counter_availability_size(CUcontext ctx, size_t *size)
{
	CUpti_Profiler_GetCounterAvailability_Params avail = {
		CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
	avail.ctx = ctx;
	if (!CK(cuptiProfilerGetCounterAvailability(&avail)))
		return false;
	*size = avail.counterAvailabilityImageSize;
	return true;
}

static inline bool counter_availability_image(CUcontext ctx, std::vector<uint8_t> &image)
{
	CUpti_Profiler_GetCounterAvailability_Params avail = {
		CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
	avail.ctx = ctx;
	avail.counterAvailabilityImageSize = image.size();
	avail.pCounterAvailabilityImage = image.data();
	return CK(cuptiProfilerGetCounterAvailability(&avail));
}

// A range profiler host object for chip. It keeps pointing at avail: avail must live as long.
static inline bool host_initialize(const char *chip, const std::vector<uint8_t> &avail,
				   CUpti_Profiler_Host_Object **host)
{
	CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
	hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
	hi.pChipName = chip;
	hi.pCounterAvailabilityImage = avail.data();
	if (!CK(cuptiProfilerHostInitialize(&hi)))
		return false;
	*host = hi.pHostObject;
	return true;
}

static inline bool host_add_metrics(CUpti_Profiler_Host_Object *host, const char **names,
				    size_t count)
{
	CUpti_Profiler_Host_ConfigAddMetrics_Params add = {
		CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
	add.pHostObject = host;
	add.ppMetricNames = names;
	add.numMetrics = count;
	return CK(cuptiProfilerHostConfigAddMetrics(&add));
}

// The config image of the metrics added to host: its size, then its bytes into config.
static inline bool host_config_image(CUpti_Profiler_Host_Object *host, std::vector<uint8_t> &config)
{
	CUpti_Profiler_Host_GetConfigImageSize_Params size = {
		CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
	size.pHostObject = host;
	if (!CK(cuptiProfilerHostGetConfigImageSize(&size)))
		return false;
	config.resize(size.configImageSize);
	CUpti_Profiler_Host_GetConfigImage_Params image = {
		CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
	image.pHostObject = host;
	image.configImageSize = config.size();
	image.pConfigImage = config.data();
	return CK(cuptiProfilerHostGetConfigImage(&image));
}

// (GetNumOfPasses takes the config image through a non-const pointer: hence config's type.)
static inline bool host_num_passes(std::vector<uint8_t> &config, size_t *passes_out)
{
	CUpti_Profiler_Host_GetNumOfPasses_Params passes = {
		CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
	passes.configImageSize = config.size();
	passes.pConfigImage = config.data();
	if (!CK(cuptiProfilerHostGetNumOfPasses(&passes)))
		return false;
	*passes_out = passes.numOfPasses;
	return true;
}

// cuptiProfilerInitialize .. GetConfigImage for device 0 and the counter availability of ctx,
// printing "chip: <name>"; the host object in *host, its config image for names in config.
// *host keeps pointing at avail: avail must live as long.
static inline bool profiler_host_create(CUcontext ctx, const char **names, size_t count,
					CUpti_Profiler_Host_Object **host,
					std::vector<uint8_t> &avail, std::vector<uint8_t> &config)
{
	const char *chip = NULL;
	if (!profiler_initialize() || !chip_name(0, &chip))
		return false;
	printf("chip: %s\n", chip);
	size_t avail_size = 0;
	if (!counter_availability_size(ctx, &avail_size))
		return false;
	avail.resize(avail_size);
	return counter_availability_image(ctx, avail) && host_initialize(chip, avail, host) &&
	       host_add_metrics(*host, names, count) && host_config_image(*host, config);
}

// A range profiler object on ctx in *obj; *ms (unless NULL) the Enable call's host time.
static inline bool range_profiler_enable(CUcontext ctx, CUpti_RangeProfiler_Object **obj,
					 double *ms)
{
	double t = ms ? now_ms() : 0; // no clock read unasked: first_launch_probe laps around it
	CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
	en.ctx = ctx;
	if (!CK(cuptiRangeProfilerEnable(&en)))
		return false;
	if (ms)
		*ms = now_ms() - t;
	*obj = en.pRangeProfilerObject;
	return true;
}

// Disables *obj, if any, and sets it NULL even when Disable fails (the probes then treat the
// object as gone); *ms (unless NULL) the Disable call's host time, 0 with no object.
static inline bool range_profiler_disable(CUpti_RangeProfiler_Object **obj, double *ms)
{
	if (!*obj) {
		if (ms)
			*ms = 0;
		return true;
	}
	double t = ms ? now_ms() : 0;
	CUpti_RangeProfiler_Disable_Params d = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
	d.pRangeProfilerObject = *obj;
	bool good = CK(cuptiRangeProfilerDisable(&d));
	if (ms)
		*ms = now_ms() - t;
	*obj = NULL;
	return good;
}

// image sized by obj for ranges ranges (and range tree nodes) of the metrics names, zeroed.
static inline bool counter_data_size(CUpti_RangeProfiler_Object *obj, const char **names,
				     size_t count, size_t ranges, std::vector<uint8_t> &image)
{
	CUpti_RangeProfiler_GetCounterDataSize_Params size = {
		CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
	size.pRangeProfilerObject = obj;
	size.pMetricNames = names;
	size.numMetrics = count;
	size.maxNumOfRanges = ranges;
	size.maxNumRangeTreeNodes = (uint32_t)ranges;
	if (!CK(cuptiRangeProfilerGetCounterDataSize(&size)))
		return false;
	image.assign(size.counterDataSize, 0);
	return true;
}

static inline bool counter_data_initialize(CUpti_RangeProfiler_Object *obj,
					   std::vector<uint8_t> &image)
{
	CUpti_RangeProfiler_CounterDataImage_Initialize_Params init = {
		CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
	init.pRangeProfilerObject = obj;
	init.counterDataSize = image.size();
	init.pCounterData = image.data();
	return CK(cuptiRangeProfilerCounterDataImageInitialize(&init));
}

// SetConfig of obj with config_image and image, as collector/profiler.c's
// prepare_counter_data: range mode mode, UserReplay, at most max_per_pass ranges a pass, one
// nesting level. The object keeps pointing at image: image must live until the object is
// given another one.
static inline bool range_profiler_set_config(CUpti_RangeProfiler_Object *obj,
					     const std::vector<uint8_t> &config_image,
					     std::vector<uint8_t> &image, CUpti_ProfilerRange mode,
					     size_t max_per_pass)
{
	CUpti_RangeProfiler_SetConfig_Params config = {
		CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
	config.pRangeProfilerObject = obj;
	config.configSize = config_image.size();
	config.pConfig = config_image.data();
	config.counterDataImageSize = image.size();
	config.pCounterDataImage = image.data();
	config.range = mode;
	config.replayMode = CUPTI_UserReplay;
	config.maxRangesPerPass = max_per_pass;
	config.numNestingLevels = 1;
	config.minNestingLevel = 1;
	config.passIndex = 0;
	config.targetNestingLevel = 1;
	return CK(cuptiRangeProfilerSetConfig(&config));
}

// image sized for ranges ranges when still empty (an image is sized once and reused), then
// initialised.
static inline bool counter_data_image(CUpti_RangeProfiler_Object *obj, const char **names,
				      size_t count, size_t ranges, std::vector<uint8_t> &image)
{
	if (image.empty() && !counter_data_size(obj, names, count, ranges, image))
		return false;
	return counter_data_initialize(obj, image);
}

// counter_data_image + SetConfig: what a measurement needs before its first Start.
static inline bool counter_data_prepare(CUpti_RangeProfiler_Object *obj, const char **names,
					size_t count, const std::vector<uint8_t> &config_image,
					std::vector<uint8_t> &image, size_t ranges,
					CUpti_ProfilerRange mode, size_t max_per_pass)
{
	return counter_data_image(obj, names, count, ranges, image) &&
	       range_profiler_set_config(obj, config_image, image, mode, max_per_pass);
}

// The number of ranges in a decoded image; (size_t)-1 on an error, printed unless quiet (a
// probe that expects the error, or has printed it once, asks quietly).
static inline size_t range_count(const std::vector<uint8_t> &image, bool quiet)
{
	CUpti_RangeProfiler_GetCounterDataInfo_Params info = {
		CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
	info.pCounterDataImage = image.data();
	info.counterDataImageSize = image.size();
	CUptiResult r = cuptiRangeProfilerGetCounterDataInfo(&info);
	if (r != CUPTI_SUCCESS) {
		if (!quiet)
			ok(r, "cuptiRangeProfilerGetCounterDataInfo");
		return (size_t)-1;
	}
	return info.numTotalRanges;
}

// values[i]: metric names[i] of range index in image, evaluated by host. CUPTI's result is
// returned, not printed: the probes report a failed evaluation each in its own way (once,
// per table cell, as a row's note).
static inline CUptiResult evaluate_metrics(CUpti_Profiler_Host_Object *host,
					   const std::vector<uint8_t> &image, size_t index,
					   const char **names, size_t count, double *values)
{
	CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
		CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
	ev.pHostObject = host;
	ev.pCounterDataImage = image.data();
	ev.counterDataImageSize = image.size();
	ev.rangeIndex = index;
	ev.ppMetricNames = names;
	ev.numMetrics = count;
	ev.pMetricValues = values;
	return cuptiProfilerHostEvaluateToGpuValues(&ev);
}
