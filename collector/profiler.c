/* collector/profiler.c - the CUPTI profiler host and range profiler.
 * Why it is built this way: AutoRange + UserReplay makes each kernel its own range (user
 * ranges would include the launch gap, +6 to +40 us on a 48 us kernel: doc/measurements.md,
 * "Figures from GPU-FACTS.md"), and a pass's Start+Stop costs 0.07 ms with
 * gpu__time_duration.sum alone (Start 0.001, Stop 0.07) but 7.3 to 13.1 ms once any
 * counter is added beside the timer (Start 0.84-6.7, Stop 6.3-6.5, depending on the
 * counter): medians of bench/stop_probe.cu A on the H200, one second metric at a time
 * (doc/measurements.md, "Start and Stop of later passes"). So all runs of a launch share
 * one Start/Stop per pass (in the feasibility probe, 20 runs of one launch cost ~23 ms
 * against ~285 ms with one Start/Stop per run: "Figures from GPU-FACTS.md").
 * Its one piece of process state, whether CUPTI's profiler is initialised, is under its
 * own lock, profiler_init_lock; metric sets and profiler objects belong to their caller.
 * Calls: api.c (CUPTI), cost.c, common/.
 * Called by: inject/.
 * Lock: profiler_init_lock (whether CUPTI's profiler is initialised). */
#include "collector/profiler.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "common/error.h"
#include "common/launch_metrics.h"

#define A rp_api

struct collector_metric_set {
	CUpti_Profiler_Host_Object *host;
	uint8_t *availability;       /* must outlive host */
	char **names;                /* the user's metrics, in their order */
	char **units;
	size_t user_count;
	/* What CUPTI measures: the user's metrics but the launch__ ones, then the clock
	 * metric if added; the timer alone when the user named only launch__ metrics (the
	 * runs are replayed all the same, in one cheap pass). */
	const char **cupti_names;
	size_t count;
	size_t *cupti_index;         /* per user metric: its place in cupti_names, or
				      * SIZE_MAX for a launch__ metric */
	int *launch;                 /* per user metric: enum rp_launch_metric, or -1 */
	size_t clock_index;          /* in cupti_names */
	uint8_t *config;
	size_t config_size;
	unsigned passes;
};

struct collector_profiler {
	CUcontext ctx;
	CUpti_RangeProfiler_Object *object;
	uint8_t *counter_data;
	size_t counter_data_size;
	size_t counter_data_ranges;  /* ranges the image was sized for */
	const struct collector_metric_set *sized_for;
	enum collector_ranges ranges;
	/* COLLECTOR_RANGE_USER: "run 0000000000", "run 0000000001"..., one name per run of a
	 * pass: CUPTI merges user ranges of the same name into one, and zero-padded names keep
	 * the run order whether ranges come back in push or name order. */
	char (*range_names)[32];  /* "run " and 20 digits: gcc 13 refused 24 (format-truncation) */
	size_t range_names_count;
	/* collector_profiler_open_first_pass: a pass of one run is started, its run someone
	 * else's to issue, until collector_profiler_close_first_pass or _drop_open_pass. */
	bool first_pass_open;
};

/* cuptiProfilerInitialize once per process, and again after a failure (the next metric
 * set tries anew). A mutex rather than pthread_once, which can neither fail nor retry; it
 * is taken once per metric set, never around a measurement. */
static pthread_mutex_t profiler_init_lock = PTHREAD_MUTEX_INITIALIZER;
static bool profiler_initialized;       /* under profiler_init_lock */

int collector_cupti_failure(const char *call, CUptiResult r, char *err, size_t size)
{
	if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
		snprintf(err, size, "%s: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: reading GPU "
			 "performance counters is restricted to administrators; run as root or "
			 "load the driver with NVreg_RestrictProfilingToAdminUsers=0 (see "
			 "https://developer.nvidia.com/ERR_NVGPUCTRPERM)", call);
	else if (r == CUPTI_ERROR_NOT_SUPPORTED || r == CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED ||
		 r == CUPTI_ERROR_INVALID_DEVICE)
		snprintf(err, size, "%s: %s: this device is not supported by the CUPTI range "
			 "profiler (Turing or newer is needed)", call, collector_cupti_error(r));
	else if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
		snprintf(err, size, "%s: %s: another profiler (ncu, nsys, torch.profiler) holds "
			 "the GPU's counters", call, collector_cupti_error(r));
	else
		snprintf(err, size, "%s: %s", call, collector_cupti_error(r));
	switch (r) {
	case CUPTI_ERROR_HARDWARE_BUSY: return RP_ERR_HARDWARE_BUSY;
	case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: return RP_ERR_PRIVILEGES;
	case CUPTI_ERROR_NOT_SUPPORTED:
	case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
	case CUPTI_ERROR_INVALID_DEVICE: return RP_ERR_NOT_SUPPORTED;
	case CUPTI_ERROR_OUT_OF_MEMORY: return RP_ERR_NO_MEMORY;
	default: return RP_ERR_FAILED;
	}
}

#define CALL(fn, params)                                                  \
	do {                                                              \
		CUptiResult r_ = A.fn(params);                            \
		if (r_ != CUPTI_SUCCESS)                                  \
			return collector_cupti_failure(#fn, r_, err, err_size);        \
	} while (0)

static int profiler_init(char *err, size_t err_size)
{
	int rc = 0;
	pthread_mutex_lock(&profiler_init_lock);
	if (!profiler_initialized) {
		CUpti_Profiler_Initialize_Params p = {
			CUpti_Profiler_Initialize_Params_STRUCT_SIZE };
		CUptiResult r = A.cuptiProfilerInitialize(&p);
		if (r == CUPTI_SUCCESS)
			profiler_initialized = true;
		else
			rc = collector_cupti_failure("cuptiProfilerInitialize", r, err, err_size);
	}
	pthread_mutex_unlock(&profiler_init_lock);
	return rc;
}

/* Host object for the chip of device, with the context's counter availability when
 * with_availability (otherwise by chip name alone, which CUPTI accepts for the chips it
 * knew at its release: the header calls the image "required for future chip support").
 * The availability query is the largest part of a device's set-up, 135-141 ms on the
 * H200, and it held up the application's launch of the moment (129 ms) while it ran on
 * another thread (bench/first_launch_probe.cu P1, P3: doc/measurements.md, "Host
 * set-up"). The host object keeps pointing at the availability image (freeing the image
 * after initialising the host object crashed metric setup: doc/measurements.md, "Figures
 * from GPU-FACTS.md"): *image_out must outlive it. */
static int host_create(CUcontext ctx, int device, bool with_availability,
		       CUpti_Profiler_Host_Object **out, uint8_t **image_out, char *err,
		       size_t err_size)
{
	int init_rc = profiler_init(err, err_size);
	if (init_rc)
		return init_rc;
	CUpti_Device_GetChipName_Params chip = { CUpti_Device_GetChipName_Params_STRUCT_SIZE };
	chip.deviceIndex = (size_t)device;
	CALL(cuptiDeviceGetChipName, &chip);
	if (!with_availability) {
		CUpti_Profiler_Host_Initialize_Params init = {
			CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE };
		init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
		init.pChipName = chip.pChipName;
		CALL(cuptiProfilerHostInitialize, &init);
		*out = init.pHostObject;
		*image_out = NULL;
		return 0;
	}

	CUpti_Profiler_GetCounterAvailability_Params avail = {
		CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE };
	avail.ctx = ctx;
	CALL(cuptiProfilerGetCounterAvailability, &avail);
	uint8_t *image = malloc(avail.counterAvailabilityImageSize);
	if (!image) {
		snprintf(err, err_size, "out of host memory");
		return -1;
	}
	avail.pCounterAvailabilityImage = image;
	CUptiResult r = A.cuptiProfilerGetCounterAvailability(&avail);
	if (r != CUPTI_SUCCESS) {
		free(image);
		return collector_cupti_failure("cuptiProfilerGetCounterAvailability", r, err, err_size);
	}
	CUpti_Profiler_Host_Initialize_Params init = {
		CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE };
	init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
	init.pChipName = chip.pChipName;
	init.pCounterAvailabilityImage = image;
	r = A.cuptiProfilerHostInitialize(&init);
	if (r != CUPTI_SUCCESS) {
		free(image);
		return collector_cupti_failure("cuptiProfilerHostInitialize", r, err, err_size);
	}
	*out = init.pHostObject;
	*image_out = image;
	return 0;
}

static void host_destroy(CUpti_Profiler_Host_Object *host)
{
	if (!host)
		return;
	CUpti_Profiler_Host_Deinitialize_Params p = {
		CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE };
	p.pHostObject = host;
	A.cuptiProfilerHostDeinitialize(&p);
}

/* The unit of a metric: CUPTI describes the base metric ("gpu__time_duration"), so the
 * rollup suffix is cut when the full name is not known to it. */
static char *metric_unit(CUpti_Profiler_Host_Object *host, const char *name)
{
	char base[256];
	snprintf(base, sizeof(base), "%s", name);
	for (int attempt = 0; attempt < 3; attempt++) {
		CUpti_Profiler_Host_GetMetricProperties_Params p = {
			CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE };
		p.pHostObject = host;
		p.pMetricName = base;
		if (A.cuptiProfilerHostGetMetricProperties(&p) == CUPTI_SUCCESS) {
			const char *unit = p.pDimUnit && *p.pDimUnit ? p.pDimUnit :
					   p.pHwUnit ? p.pHwUnit : "";
			/* A ratio per second is a rate: the rollup's unit, not the base's. */
			if (strstr(name, ".per_second"))
				return strdup("1/second");
			return strdup(unit);
		}
		char *dot = strrchr(base, '.');
		if (!dot)
			break;
		*dot = '\0';
	}
	return strdup("");
}

void collector_metric_set_destroy(struct collector_metric_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->user_count; i++) {
		free(set->names[i]);
		free(set->units[i]);
	}
	free(set->names);
	free(set->units);
	free(set->cupti_names);
	free(set->cupti_index);
	free(set->launch);
	free(set->config);
	host_destroy(set->host);
	free(set->availability);
	free(set);
}

static int metric_set_build(CUcontext ctx, int device, const char *metric_list,
			    bool with_availability, struct collector_metric_set **out, char *err,
			    size_t err_size)
{
	struct collector_metric_set *s = calloc(1, sizeof(*s));
	size_t max = 2;
	for (const char *p = metric_list; *p; p++)
		max += *p == ',';
	if (!s || !(s->names = calloc(max, sizeof(char *))) ||
	    !(s->units = calloc(max, sizeof(char *))) ||
	    !(s->cupti_names = calloc(max, sizeof(char *))) ||
	    !(s->cupti_index = calloc(max, sizeof(size_t))) ||
	    !(s->launch = calloc(max, sizeof(int)))) {
		collector_metric_set_destroy(s);
		snprintf(err, err_size, "out of host memory");
		return -1;
	}
	int host_rc = host_create(ctx, device, with_availability, &s->host, &s->availability,
				  err, err_size);
	if (host_rc) {
		collector_metric_set_destroy(s);
		return host_rc;
	}
	s->clock_index = SIZE_MAX;
	for (const char *p = metric_list; *p;) {
		size_t len = strcspn(p, ",");
		char *name = strndup(p, len);
		p += len + (p[len] == ',');
		if (!name)
			break;
		bool dup = false;
		for (size_t i = 0; i < s->user_count; i++)
			dup |= !strcmp(s->names[i], name);
		if (dup) {
			free(name);
			continue;
		}
		size_t k = s->user_count++;
		s->names[k] = name;
		const struct rp_launch_metric_desc *launch =
			rp_launch_metric_find(name, strlen(name));
		s->launch[k] = launch ? (int)launch->id : -1;
		s->cupti_index[k] = launch ? SIZE_MAX : s->count;
		if (launch)
			continue;
		s->cupti_names[s->count++] = name;
		if (!strcmp(name, COLLECTOR_CLOCK_METRIC))
			s->clock_index = s->count - 1;
	}
	/* The clock counter costs a set of only gpu__time_duration ~7 ms per measured launch
	 * (Start 0.84 ms, Stop 6.5 ms instead of 0.07 ms: bench/stop_probe.cu A on the H200,
	 * doc/measurements.md, "Start and Stop of later passes"), as any counter beyond the
	 * timer does. Such sets take the SM clock from NVML at each run instead
	 * (collector_metric_set_measures_clock); a set that has counters anyway gets the
	 * measured clock for nothing. */
	bool counters = false;
	for (size_t i = 0; i < s->count; i++)
		counters |= !collector_metric_is_timer(s->cupti_names[i], strlen(s->cupti_names[i]));
	if (s->clock_index == SIZE_MAX && counters) {
		s->cupti_names[s->count] = COLLECTOR_CLOCK_METRIC;
		s->clock_index = s->count++;
	}
	/* Only launch__ metrics: the runs still replay the kernel (each run its record, with
	 * NVML's view), timed by the cheapest set, whose values nobody reads. */
	if (!s->count)
		s->cupti_names[s->count++] = "gpu__time_duration.sum";
	/* All metrics in one call. Metric setup crashed on the H200 (CUPTI 13.0) when each
	 * metric was added by its own ConfigAddMetrics and the availability image was freed
	 * early; commit 0b2f564 changed both, and the fact sheet puts the crash on the freed
	 * image (doc/measurements.md, "Figures from GPU-FACTS.md"): whether a second call on
	 * the same host object crashes by itself was not tried. Only when the set is refused
	 * is each metric tried alone, on a throwaway host object, to name the unknown one. */
	CUpti_Profiler_Host_ConfigAddMetrics_Params add = {
		CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE };
	add.pHostObject = s->host;
	add.ppMetricNames = s->cupti_names;
	add.numMetrics = s->count;
	CUptiResult added = A.cuptiProfilerHostConfigAddMetrics(&add);
	if (added != CUPTI_SUCCESS) {
		size_t bad = 0;
		for (size_t i = 0; i < s->count; i++) {
			CUpti_Profiler_Host_Object *probe = NULL;
			uint8_t *probe_image = NULL;
			char ignored[256];
			if (host_create(ctx, device, with_availability, &probe, &probe_image,
					ignored, sizeof(ignored)))
				break;
			add.pHostObject = probe;
			add.ppMetricNames = &s->cupti_names[i];
			add.numMetrics = 1;
			bool known = A.cuptiProfilerHostConfigAddMetrics(&add) == CUPTI_SUCCESS;
			host_destroy(probe);
			free(probe_image);
			if (!known) {
				bad = i;
				break;
			}
		}
		snprintf(err, err_size, "--metrics: unknown metric '%s' for this device (%s); "
			 "'rangeprof --list-metrics' lists the metrics it supports", s->cupti_names[bad],
			 collector_cupti_error(added));
		collector_metric_set_destroy(s);
		/* A busy hardware is no unknown metric: the caller waits and tries again. */
		return added == CUPTI_ERROR_HARDWARE_BUSY ? RP_ERR_HARDWARE_BUSY : RP_ERR_FAILED;
	}
	CUpti_Profiler_Host_GetConfigImageSize_Params size = {
		CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE };
	size.pHostObject = s->host;
	CUptiResult r = A.cuptiProfilerHostGetConfigImageSize(&size);
	if (r != CUPTI_SUCCESS || !(s->config = malloc(size.configImageSize))) {
		collector_metric_set_destroy(s);
		return collector_cupti_failure("cuptiProfilerHostGetConfigImageSize", r, err, err_size);
	}
	s->config_size = size.configImageSize;
	CUpti_Profiler_Host_GetConfigImage_Params image = {
		CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE };
	image.pHostObject = s->host;
	image.configImageSize = s->config_size;
	image.pConfigImage = s->config;
	CUpti_Profiler_Host_GetNumOfPasses_Params passes = {
		CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE };
	passes.configImageSize = s->config_size;
	passes.pConfigImage = s->config;
	if ((r = A.cuptiProfilerHostGetConfigImage(&image)) != CUPTI_SUCCESS ||
	    (r = A.cuptiProfilerHostGetNumOfPasses(&passes)) != CUPTI_SUCCESS) {
		collector_metric_set_destroy(s);
		return collector_cupti_failure("cuptiProfilerHostGetConfigImage", r, err, err_size);
	}
	s->passes = (unsigned)passes.numOfPasses;
	for (size_t i = 0; i < s->user_count; i++)
		s->units[i] = s->launch[i] >= 0 ?
			strdup(rp_launch_metric_table()[s->launch[i]].unit) :
			metric_unit(s->host, s->names[i]);
	*out = s;
	return 0;
}

bool collector_metric_is_timer(const char *name, size_t len)
{
	static const char timer[] = "gpu__time_duration";
	return len >= sizeof(timer) - 1 && !memcmp(name, timer, sizeof(timer) - 1);
}

/* Whether every metric of the list is the timer's or a launch__ metric: a set that needs no
 * counter. */
static bool metric_list_timer_only(const char *metric_list)
{
	bool timer_only = true;
	for (const char *p = metric_list; *p;) {
		size_t len = strcspn(p, ",");
		timer_only &= collector_metric_is_timer(p, len) || rp_launch_metric_find(p, len);
		p += len + (p[len] == ',');
	}
	return timer_only;
}

/* A set of the timer alone by chip name first: the timer is not one of the counters that
 * another client (DCGM's profiling metrics, a MIG slice) can hold, which the availability
 * query exists to tell. A set with counters, or one refused by name, is built with the
 * context's counter availability, so that what is reported (an unknown metric, a busy
 * profiler) comes from the complete query. */
int collector_metric_set_create(CUcontext ctx, int device, const char *metric_list,
				struct collector_metric_set **out, char *err, size_t err_size)
{
	if (metric_list_timer_only(metric_list) &&
	    !metric_set_build(ctx, device, metric_list, false, out, err, err_size))
		return 0;
	return metric_set_build(ctx, device, metric_list, true, out, err, err_size);
}

int collector_metric_set_create_by_name(int device, const char *metric_list,
					struct collector_metric_set **out, char *err,
					size_t err_size)
{
	if (!metric_list_timer_only(metric_list)) {
		snprintf(err, err_size, "metrics '%s' have counters: their set needs the "
			 "context's counter availability", metric_list);
		return RP_ERR_FAILED;
	}
	return metric_set_build(NULL, device, metric_list, false, out, err, err_size);
}

size_t collector_metric_set_user_count(const struct collector_metric_set *set)
{
	return set->user_count;
}

const char *const *collector_metric_set_names(const struct collector_metric_set *set)
{
	return (const char *const *)set->names;
}

const char *const *collector_metric_set_units(const struct collector_metric_set *set)
{
	return (const char *const *)set->units;
}

int collector_metric_set_launch(const struct collector_metric_set *set, size_t k)
{
	return k < set->user_count ? set->launch[k] : -1;
}

bool collector_metric_set_measures_clock(const struct collector_metric_set *set)
{
	return set->clock_index != SIZE_MAX;
}

unsigned collector_metric_set_passes(const struct collector_metric_set *set)
{
	return set->passes;
}

int collector_profiler_create(CUcontext ctx, enum collector_ranges ranges,
			      struct collector_profiler **out, char *err, size_t err_size)
{
	int init_rc = profiler_init(err, err_size);
	if (init_rc)
		return init_rc;
	struct collector_profiler *p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, err_size, "out of host memory");
		return -1;
	}
	CUpti_RangeProfiler_Enable_Params en = { CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE };
	en.ctx = ctx;
	CUptiResult r = A.cuptiRangeProfilerEnable(&en);
	if (r != CUPTI_SUCCESS) {
		free(p);
		return collector_cupti_failure("cuptiRangeProfilerEnable", r, err, err_size);
	}
	p->ctx = ctx;
	p->object = en.pRangeProfilerObject;
	p->ranges = ranges;
	*out = p;
	return 0;
}

enum collector_ranges collector_profiler_ranges(const struct collector_profiler *prof)
{
	return prof->ranges;
}

/* Names for count runs, made before a pass starts: CUPTI may keep the pointers until the
 * pass is decoded, so the table never moves during one. */
static int name_ranges(struct collector_profiler *prof, size_t count, char *err, size_t err_size)
{
	if (count <= prof->range_names_count)
		return 0;
	char (*names)[32] = realloc(prof->range_names, count * sizeof(*names));
	if (!names) {
		snprintf(err, err_size, "out of host memory for %zu range names", count);
		return -1;
	}
	for (size_t i = prof->range_names_count; i < count; i++)
		snprintf(names[i], sizeof(names[i]), "run %010zu", i);
	prof->range_names = names;
	prof->range_names_count = count;
	return 0;
}

int collector_profiler_push_range(struct collector_profiler *prof, unsigned run)
{
	if (run >= prof->range_names_count)
		return RP_ERR_USER_RANGE;
	CUpti_RangeProfiler_PushRange_Params p = { CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE };
	p.pRangeProfilerObject = prof->object;
	p.pRangeName = prof->range_names[run];
	return A.cuptiRangeProfilerPushRange(&p) == CUPTI_SUCCESS ? 0 : RP_ERR_USER_RANGE;
}

int collector_profiler_pop_range(struct collector_profiler *prof)
{
	CUpti_RangeProfiler_PopRange_Params p = { CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE };
	p.pRangeProfilerObject = prof->object;
	return A.cuptiRangeProfilerPopRange(&p) == CUPTI_SUCCESS ? 0 : RP_ERR_USER_RANGE;
}

void collector_profiler_destroy(struct collector_profiler *prof)
{
	if (!prof)
		return;
	CUpti_RangeProfiler_Disable_Params p = { CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE };
	p.pRangeProfilerObject = prof->object;
	A.cuptiRangeProfilerDisable(&p);
	free(prof->range_names);
	free(prof->counter_data);
	free(prof);
}

/* Sizes (or re-initialises) the counter data image for ranges ranges of set. */
static int prepare_counter_data(struct collector_profiler *prof,
				const struct collector_metric_set *set, size_t ranges, char *err,
				size_t err_size)
{
	if (prof->sized_for != set || prof->counter_data_ranges < ranges) {
		CUpti_RangeProfiler_GetCounterDataSize_Params size = {
			CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE };
		size.pRangeProfilerObject = prof->object;
		size.pMetricNames = set->cupti_names;
		size.numMetrics = set->count;
		size.maxNumOfRanges = ranges;
		size.maxNumRangeTreeNodes = (uint32_t)ranges;
		CALL(cuptiRangeProfilerGetCounterDataSize, &size);
		uint8_t *image = realloc(prof->counter_data, size.counterDataSize);
		if (!image) {
			snprintf(err, err_size, "out of host memory for %zu bytes of counter data",
				 size.counterDataSize);
			return -1;
		}
		prof->counter_data = image;
		prof->counter_data_size = size.counterDataSize;
		prof->counter_data_ranges = ranges;
		prof->sized_for = set;
	}
	if (prof->ranges == COLLECTOR_RANGE_USER &&
	    name_ranges(prof, prof->counter_data_ranges, err, err_size))
		return -1;
	CUpti_RangeProfiler_CounterDataImage_Initialize_Params init = {
		CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE };
	init.pRangeProfilerObject = prof->object;
	init.counterDataSize = prof->counter_data_size;
	init.pCounterData = prof->counter_data;
	CALL(cuptiRangeProfilerCounterDataImageInitialize, &init);

	CUpti_RangeProfiler_SetConfig_Params config = {
		CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE };
	config.pRangeProfilerObject = prof->object;
	config.configSize = set->config_size;
	config.pConfig = set->config;
	config.counterDataImageSize = prof->counter_data_size;
	config.pCounterDataImage = prof->counter_data;
	config.range = prof->ranges == COLLECTOR_RANGE_USER ? CUPTI_UserRange : CUPTI_AutoRange;
	config.replayMode = CUPTI_UserReplay;
	config.maxRangesPerPass = prof->counter_data_ranges;
	config.numNestingLevels = 1;
	config.minNestingLevel = 1;
	config.passIndex = 0;
	config.targetNestingLevel = 1;
	CALL(cuptiRangeProfilerSetConfig, &config);
	return 0;
}

int collector_profiler_warm_up(struct collector_profiler *prof,
			       const struct collector_metric_set *set, size_t ranges, char *err,
			       size_t err_size)
{
	int prep_rc = prepare_counter_data(prof, set, ranges, err, err_size);
	if (prep_rc)
		return prep_rc;
	CUpti_RangeProfiler_Start_Params start = { CUpti_RangeProfiler_Start_Params_STRUCT_SIZE };
	start.pRangeProfilerObject = prof->object;
	CALL(cuptiRangeProfilerStart, &start);
	CUpti_RangeProfiler_Stop_Params stop = { CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE };
	stop.pRangeProfilerObject = prof->object;
	CALL(cuptiRangeProfilerStop, &stop);
	/* Whatever the pass holds (nothing, or kernels the application launched meanwhile on
	 * another thread) is decoded and dropped; the next measurement initialises the image. */
	CUpti_RangeProfiler_DecodeData_Params decode = {
		CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE };
	decode.pRangeProfilerObject = prof->object;
	CALL(cuptiRangeProfilerDecodeData, &decode);
	return 0;
}

int collector_profiler_open_first_pass(struct collector_profiler *prof,
				      const struct collector_metric_set *set, size_t ranges,
				      struct collector_cost *cost, char *err, size_t err_size)
{
	double lap = collector_cost_now();
	prof->first_pass_open = false;
	int prep_rc = prepare_counter_data(prof, set, ranges, err, err_size);
	if (prep_rc)
		return prep_rc;
	collector_cost_lap(cost, COST_PREPARE, &lap);
	CUpti_RangeProfiler_Start_Params start = { CUpti_RangeProfiler_Start_Params_STRUCT_SIZE };
	start.pRangeProfilerObject = prof->object;
	CALL(cuptiRangeProfilerStart, &start);
	collector_cost_lap(cost, COST_START, &lap);
	prof->first_pass_open = true;
	return 0;
}

void collector_profiler_drop_open_pass(struct collector_profiler *prof)
{
	if (!prof->first_pass_open)
		return;
	prof->first_pass_open = false;
	CUpti_RangeProfiler_Stop_Params stop = { CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE };
	stop.pRangeProfilerObject = prof->object;
	if (A.cuptiRangeProfilerStop(&stop) != CUPTI_SUCCESS)
		return;
	/* Decoded and dropped, as the warm-up's pass: the next measurement initialises the
	 * image. */
	CUpti_RangeProfiler_DecodeData_Params decode = {
		CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE };
	decode.pRangeProfilerObject = prof->object;
	A.cuptiRangeProfilerDecodeData(&decode);
}

/* The decoded counter data holds ranges ranges: their last kernel of each run evaluated
 * into values (runs x user metrics, run-major) and clock_hz. */
static int evaluate_runs(struct collector_profiler *prof, const struct collector_metric_set *set,
			 unsigned runs, unsigned kernels_per_run, size_t dropped,
			 double *values, double *clock_hz, char *err, size_t err_size)
{
	size_t ranges = (size_t)runs * kernels_per_run;
	CUpti_RangeProfiler_GetCounterDataInfo_Params info = {
		CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE };
	info.pCounterDataImage = prof->counter_data;
	info.counterDataImageSize = prof->counter_data_size;
	CALL(cuptiRangeProfilerGetCounterDataInfo, &info);
	if (info.numTotalRanges != ranges) {
		snprintf(err, err_size, "the range profiler recorded %zu ranges for %zu %s (%zu "
			 "dropped); the replay launched other work", info.numTotalRanges, ranges,
			 prof->ranges == COLLECTOR_RANGE_USER ? "user ranges" : "kernel launches",
			 dropped);
		return -1;
	}
	double *row = malloc(set->count * sizeof(*row));
	if (!row) {
		snprintf(err, err_size, "out of host memory");
		return -1;
	}
	for (unsigned r = 0; r < runs; r++) {
		CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
			CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE };
		ev.pHostObject = set->host;
		ev.pCounterDataImage = prof->counter_data;
		ev.counterDataImageSize = prof->counter_data_size;
		/* The measured kernel is the last launch of each run (after the flush). */
		ev.rangeIndex = (size_t)r * kernels_per_run + kernels_per_run - 1;
		ev.ppMetricNames = set->cupti_names;
		ev.numMetrics = set->count;
		ev.pMetricValues = row;
		CUptiResult er = A.cuptiProfilerHostEvaluateToGpuValues(&ev);
		if (er != CUPTI_SUCCESS) {
			free(row);
			return collector_cupti_failure("cuptiProfilerHostEvaluateToGpuValues", er, err, err_size);
		}
		/* A launch__ metric is the workload's to fill (NaN until then). */
		for (size_t k = 0; k < set->user_count; k++)
			values[(size_t)r * set->user_count + k] =
				set->cupti_index[k] == SIZE_MAX ? NAN : row[set->cupti_index[k]];
		clock_hz[r] = set->clock_index == SIZE_MAX ? NAN : row[set->clock_index];
	}
	free(row);
	return 0;
}

/* Ends a pass: waits for its work, then stops it, each timed. A failed wait makes *rc
 * RP_ERR_SYNC (a run's failure already in *rc is kept, and the wait skipped); the pass is
 * stopped either way. Returns Stop's result; *all_submitted says whether the config's
 * last pass is in. */
static CUptiResult end_pass(struct collector_profiler *prof, struct collector_cost *cost,
			    double *lap, int *rc, bool *all_submitted)
{
	if (!*rc && A.cuCtxSynchronize() != CUDA_SUCCESS)
		*rc = RP_ERR_SYNC;
	collector_cost_lap(cost, COST_PASS_SYNC, lap);
	CUpti_RangeProfiler_Stop_Params stop = { CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE };
	stop.pRangeProfilerObject = prof->object;
	CUptiResult sr = A.cuptiRangeProfilerStop(&stop);
	collector_cost_lap(cost, COST_STOP, lap);
	*all_submitted = stop.isAllPassSubmitted;
	return sr;
}

/* The passes' counter data decoded, and its runs evaluated (evaluate_runs), each timed. */
static int decode_runs(struct collector_profiler *prof, const struct collector_metric_set *set,
		       unsigned runs, unsigned kernels_per_run, double *values,
		       double *clock_hz, struct collector_cost *cost, double *lap, char *err,
		       size_t err_size)
{
	CUpti_RangeProfiler_DecodeData_Params decode = {
		CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE };
	decode.pRangeProfilerObject = prof->object;
	CALL(cuptiRangeProfilerDecodeData, &decode);
	collector_cost_lap(cost, COST_DECODE, lap);
	int rc = evaluate_runs(prof, set, runs, kernels_per_run, decode.numOfRangeDropped, values,
			       clock_hz, err, err_size);
	collector_cost_lap(cost, COST_EVALUATE, lap);
	return rc;
}

int collector_profiler_close_first_pass(struct collector_profiler *prof,
				       const struct collector_metric_set *set,
				       unsigned kernels_per_run, double *values, double *clock_hz,
				       struct collector_cost *cost, char *err, size_t err_size)
{
	if (!prof->first_pass_open) {
		snprintf(err, err_size, "no pass is open");
		return -1;
	}
	prof->first_pass_open = false;
	double lap = collector_cost_now();
	int rc = 0;
	bool all_submitted;
	CUptiResult sr = end_pass(prof, cost, &lap, &rc, &all_submitted);
	if (rc) {
		snprintf(err, err_size, "the application's own launch, the first run, failed: %s "
			 "(%s)", rp_error_text(rc), rp_error_name(rc));
		return rc;
	}
	if (sr != CUPTI_SUCCESS)
		return collector_cupti_failure("cuptiRangeProfilerStop", sr, err, err_size);
	if (!all_submitted) {
		snprintf(err, err_size, "the metric set needs more than one pass");
		return -1;
	}
	return decode_runs(prof, set, 1, kernels_per_run, values, clock_hz, cost, &lap, err,
			   err_size);
}

int collector_profiler_measure(struct collector_profiler *prof,
			       const struct collector_metric_set *set, unsigned runs,
			       unsigned kernels_per_run, collector_run_fn run_fn, void *arg,
			       double *values, double *clock_hz, unsigned *passes_out,
			       struct collector_cost *cost, char *err, size_t err_size)
{
	size_t ranges = (size_t)runs * kernels_per_run;
	double lap = collector_cost_now();
	int prep_rc = prepare_counter_data(prof, set, ranges, err, err_size);
	if (prep_rc)
		return prep_rc;
	collector_cost_lap(cost, COST_PREPARE, &lap);
	unsigned pass = 0;
	bool all_submitted = false;
	/* UserReplay: every Start/Stop is one pass of the config; the host tells us when the
	 * last one was submitted. The bound only guards against a CUPTI that never says so. */
	while (!all_submitted && pass < 256) {
		CUpti_RangeProfiler_Start_Params start = {
			CUpti_RangeProfiler_Start_Params_STRUCT_SIZE };
		start.pRangeProfilerObject = prof->object;
		CALL(cuptiRangeProfilerStart, &start);
		collector_cost_lap(cost, COST_START, &lap);
		int rc = 0;
		for (unsigned r = 0; r < runs && !rc; r++)
			rc = run_fn(arg, r, pass);
		collector_cost_lap(cost, COST_RUNS, &lap);
		CUptiResult sr = end_pass(prof, cost, &lap, &rc, &all_submitted);
		if (rc) {
			/* The report says this once per kernel and code (rc), whatever the
			 * pass (inject/output.c keys on codes, not on these words). */
			snprintf(err, err_size, "replay failed in pass %u: %s (%s)", pass,
				 rp_error_text(rc), rp_error_name(rc));
			return rc;
		}
		if (sr != CUPTI_SUCCESS)
			return collector_cupti_failure("cuptiRangeProfilerStop", sr, err, err_size);
		pass++;
	}
	*passes_out = pass;
	return decode_runs(prof, set, runs, kernels_per_run, values, clock_hz, cost, &lap, err,
			   err_size);
}

static void print_metrics(CUpti_Profiler_Host_Object *host, CUpti_MetricType type)
{
	static const char *const rollups[][4] = {
		[CUPTI_METRIC_TYPE_COUNTER] = { ".sum", ".avg", ".min", ".max" },
		[CUPTI_METRIC_TYPE_RATIO] = { ".ratio", ".pct", NULL, NULL },
		[CUPTI_METRIC_TYPE_THROUGHPUT] = { ".avg.pct_of_peak_sustained_elapsed", NULL,
						   NULL, NULL },
	};
	CUpti_Profiler_Host_GetBaseMetrics_Params base = {
		CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE };
	base.pHostObject = host;
	base.metricType = type;
	if (A.cuptiProfilerHostGetBaseMetrics(&base) != CUPTI_SUCCESS)
		return;
	for (size_t i = 0; i < base.numMetrics; i++) {
		CUpti_Profiler_Host_GetMetricProperties_Params p = {
			CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE };
		p.pHostObject = host;
		p.pMetricName = base.ppMetricNames[i];
		const char *unit = "", *desc = "";
		if (A.cuptiProfilerHostGetMetricProperties(&p) == CUPTI_SUCCESS) {
			unit = p.pDimUnit && *p.pDimUnit ? p.pDimUnit : p.pHwUnit ? p.pHwUnit : "";
			desc = p.pDescription ? p.pDescription : "";
		}
		char rollup_text[160] = "";
		size_t n = 0;
		for (int k = 0; k < 4 && rollups[type][k]; k++)
			n += (size_t)snprintf(rollup_text + n, sizeof(rollup_text) - n, "%s%s",
					      k ? " " : "", rollups[type][k]);
		printf("%-60s %-12s %-40s %s\n", base.ppMetricNames[i], unit, rollup_text, desc);
	}
}

int collector_list_metrics(CUcontext ctx, int device, char *err, size_t err_size)
{
	CUpti_Profiler_Host_Object *host = NULL;
	uint8_t *image = NULL;
	if (host_create(ctx, device, true, &host, &image, err, err_size))
		return -1;
	printf("%-60s %-12s %-40s %s\n", "metric", "unit", "rollups", "description");
	print_metrics(host, CUPTI_METRIC_TYPE_COUNTER);
	print_metrics(host, CUPTI_METRIC_TYPE_RATIO);
	print_metrics(host, CUPTI_METRIC_TYPE_THROUGHPUT);
	/* ncu's launch__ metrics that rangeprof supplies from the launch and the driver. */
	const struct rp_launch_metric_desc *launch = rp_launch_metric_table();
	for (size_t i = 0; i < RP_LAUNCH_METRIC_COUNT; i++)
		printf("%-60s %-12s %-40s %s (from the launch and the driver, no counter)\n",
		       launch[i].name, *launch[i].unit ? launch[i].unit : "-", "-",
		       launch[i].description);
	host_destroy(host);
	free(image);
	return 0;
}
