/* tests/unit/inject/fake_world.c - stand-ins for everything inject/'s measuring files call
 * below inject/ (fake_world.h): the driver/CUPTI/checkpoint table rp_api, collector/api.c's
 * error names, collector/profiler.h, collector/device.h, memory/memory.h and
 * inject/session/flush.h. The real inject/ files around them (output.c, names.c, kernel_launch.c,
 * watchdog.c, and inject_core: devlock, contexts, captures) and collector_core, nvtx_bridge
 * and common run as they are. No GPU, no CUDA library. */
#include "tests/unit/inject/fake_world.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/api.h"
#include "collector/device.h"
#include "collector/profiler.h"
#include "collector/thermal.h"
#include "common/error.h"
#include "common/launch_metrics.h"
#include "common/log.h"
#include "inject/session/contexts.h"
#include "inject/session/flush.h"
#include "inject/output.h"
#include "inject/session/session.h"
#include "memory/memory.h"

struct fake_world fw;

/* Each thread's stream capture mode (cuThreadExchangeStreamCaptureMode), global at first. */
static __thread CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;


/* collector/api.c's table: every member the tests do not replace stays NULL, so that an
 * unexpected driver call crashes the test instead of passing unnoticed. */
struct rp_api rp_api;

static void event(enum fake_event_kind kind, CUcontext profiler_ctx, const char *metrics)
{
	if (fw.event_count >= FAKE_MAX_EVENTS)
		return;
	struct fake_event *e = &fw.events[fw.event_count++];
	*e = (struct fake_event){ kind, fw.current, profiler_ctx, "" };
	if (metrics)
		snprintf(e->metrics, sizeof(e->metrics), "%s", metrics);
}

/* ------------------------------------------------------------------------------------ */
/* The driver, CUPTI and the checkpoint (rp_api)                                        */
/* ------------------------------------------------------------------------------------ */

static CUresult ctx_get_current(CUcontext *ctx)
{
	*ctx = fw.current;
	return CUDA_SUCCESS;
}

static CUresult ctx_set_current(CUcontext ctx)
{
	fw.current = ctx;
	return CUDA_SUCCESS;
}

static CUresult ctx_get_device(CUdevice *dev)
{
	*dev = 0;
	return fw.current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult ctx_synchronize(void)
{
	fw.syncs++;
	return CUDA_SUCCESS;
}

static CUresult stream_synchronize(CUstream stream)
{
	(void)stream;
	return CUDA_SUCCESS;
}

static CUptiResult stream_id(CUcontext ctx, CUstream stream, uint8_t per_thread, uint32_t *id)
{
	(void)ctx, (void)stream, (void)per_thread;
	*id = 7;
	return CUPTI_SUCCESS;
}

static CUptiResult checkpoint_save(RP_CUpti_Checkpoint *const c)
{
	fw.checkpoint_saves++;
	c->pPriv = &fw;
	return CUPTI_SUCCESS;
}

static CUptiResult checkpoint_restore(RP_CUpti_Checkpoint *const c)
{
	fw.checkpoint_restores++;
	return c->pPriv ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

static CUptiResult checkpoint_free(RP_CUpti_Checkpoint *const c)
{
	fw.checkpoint_frees++;
	c->pPriv = NULL;
	return CUPTI_SUCCESS;
}

static CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			      unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
			      void **extra)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)s;
	(void)params, (void)extra;
	fw.relaunches++;
	return CUDA_SUCCESS;
}

static CUresult event_create(CUevent *e, unsigned flags)
{
	static uintptr_t next = 0x100;
	(void)flags;
	*e = (CUevent)(next++);
	return CUDA_SUCCESS;
}

static CUresult event_record(CUevent e, CUstream s)
{
	(void)e, (void)s;
	return CUDA_SUCCESS;
}

static CUresult event_elapsed(float *ms, CUevent start, CUevent end)
{
	(void)start, (void)end;
	*ms = 0.25f;
	return CUDA_SUCCESS;
}

static CUresult event_destroy(CUevent e)
{
	(void)e;
	return CUDA_SUCCESS;
}

static CUresult device_attribute(int *v, CUdevice_attribute a, CUdevice dev)
{
	(void)dev;
	if ((unsigned)a >= CU_DEVICE_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*v = fw.device_attributes[a];
	return CUDA_SUCCESS;
}

static CUresult function_attribute(int *v, CUfunction_attribute a, CUfunction f)
{
	if (fw.kernel_handle && f == fw.kernel_handle)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((unsigned)a >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*v = fw.function_attributes[a];
	return CUDA_SUCCESS;
}

static CUresult ctx_get_limit(size_t *v, CUlimit limit)
{
	if (limit != CU_LIMIT_STACK_SIZE)
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	*v = fw.stack_size;
	return CUDA_SUCCESS;
}

static CUresult kernel_get_function(CUfunction *f, CUkernel k)
{
	if (!fw.kernel_handle || (CUfunction)k != fw.kernel_handle)
		return CUDA_ERROR_INVALID_HANDLE;
	*f = fw.kernel_function;
	return CUDA_SUCCESS;
}

static CUresult occupancy(int *blocks, CUfunction f, int block_size, size_t dynamic_smem,
			  unsigned flags)
{
	(void)flags;
	fw.occupancy_function = f;
	fw.occupancy_block_size = block_size;
	fw.occupancy_dynamic_smem = dynamic_smem;
	*blocks = fw.active_blocks;
	return CUDA_SUCCESS;
}

static CUresult graph_launch(CUgraphExec exec, CUstream s)
{
	(void)exec, (void)s;
	fw.relaunches++;
	return CUDA_SUCCESS;
}

const char *collector_cu_error(CUresult r)
{
	return r == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_UNKNOWN";
}

const char *collector_cupti_error(CUptiResult r)
{
	return r == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR_UNKNOWN";
}

/* ------------------------------------------------------------------------------------ */
/* collector/profiler.h                                                                 */
/* ------------------------------------------------------------------------------------ */

#define FAKE_MAX_METRICS 16

struct collector_metric_set {
	char *list;                       /* the names, cut at the commas */
	const char *names[FAKE_MAX_METRICS];
	const char *units[FAKE_MAX_METRICS];
	size_t count;
	unsigned passes;
};

struct collector_profiler {
	CUcontext ctx;
	enum collector_ranges ranges;
	bool first_pass_open;     /* as the real one: run 0 of pass 0 was the caller's */
};

static int set_build(const char *metric_list, struct collector_metric_set **out, char *err,
		     size_t err_size);

int collector_metric_set_create(CUcontext ctx, int device, const char *metric_list,
				struct collector_metric_set **out, char *err, size_t err_size)
{
	(void)ctx, (void)device;
	fw.set_creates++;
	event(FAKE_SET_CREATE, NULL, metric_list);
	return set_build(metric_list, out, err, err_size);
}

int collector_metric_set_create_by_name(int device, const char *metric_list,
					struct collector_metric_set **out, char *err,
					size_t err_size)
{
	(void)device;
	fw.set_creates_by_name++;
	event(FAKE_SET_CREATE_BY_NAME, NULL, metric_list);
	if (fw.by_name_refused) {
		snprintf(err, err_size, "stand-in: refused by name");
		return RP_ERR_FAILED;
	}
	return set_build(metric_list, out, err, err_size);
}

static int set_build(const char *metric_list, struct collector_metric_set **out, char *err,
		     size_t err_size)
{
	if (fw.busy_sets) {
		fw.busy_sets--;
		snprintf(err, err_size, "cuptiProfilerGetCounterAvailability: "
			 "CUPTI_ERROR_HARDWARE_BUSY; another profiler uses the device");
		return RP_ERR_HARDWARE_BUSY;
	}
	struct collector_metric_set *s = calloc(1, sizeof(*s));
	if (!s || !(s->list = strdup(metric_list))) {
		free(s);
		snprintf(err, err_size, "out of host memory");
		return RP_ERR_NO_MEMORY;
	}
	for (char *p = s->list, *save = NULL; s->count < FAKE_MAX_METRICS &&
	     (p = strtok_r(p, ",", &save)); p = NULL) {
		const struct rp_launch_metric_desc *d = rp_launch_metric_find(p, strlen(p));
		s->names[s->count] = p;
		s->units[s->count++] = d ? d->unit : "ns";
	}
	s->passes = fw.passes ? fw.passes : 1;
	*out = s;
	return 0;
}

void collector_metric_set_destroy(struct collector_metric_set *set)
{
	if (set)
		free(set->list);
	free(set);
}

size_t collector_metric_set_user_count(const struct collector_metric_set *set)
{
	return set->count;
}

const char *const *collector_metric_set_names(const struct collector_metric_set *set)
{
	return set->names;
}

const char *const *collector_metric_set_units(const struct collector_metric_set *set)
{
	return set->units;
}

unsigned collector_metric_set_passes(const struct collector_metric_set *set)
{
	return set->passes;
}

int collector_metric_set_launch(const struct collector_metric_set *set, size_t k)
{
	const struct rp_launch_metric_desc *d =
		k < set->count ? rp_launch_metric_find(set->names[k], strlen(set->names[k])) : NULL;
	return d ? (int)d->id : -1;
}

bool collector_metric_set_measures_clock(const struct collector_metric_set *set)
{
	(void)set;
	return false;
}

int collector_profiler_create(CUcontext ctx, enum collector_ranges ranges,
			      struct collector_profiler **out, char *err, size_t err_size)
{
	fw.profiler_creates++;
	event(FAKE_PROFILER_CREATE, ctx, NULL);
	if (!(*out = calloc(1, sizeof(**out)))) {
		snprintf(err, err_size, "out of host memory");
		return RP_ERR_NO_MEMORY;
	}
	**out = (struct collector_profiler){ ctx, ranges };
	return 0;
}

enum collector_ranges collector_profiler_ranges(const struct collector_profiler *prof)
{
	return prof->ranges;
}

void collector_profiler_destroy(struct collector_profiler *prof)
{
	if (!prof)
		return;
	fw.profiler_destroys++;
	event(FAKE_PROFILER_DESTROY, prof->ctx, NULL);
	free(prof);
}

int collector_profiler_push_range(struct collector_profiler *prof, unsigned run)
{
	(void)prof, (void)run;
	return 0;
}

int collector_profiler_pop_range(struct collector_profiler *prof)
{
	(void)prof;
	return 0;
}

int collector_profiler_warm_up(struct collector_profiler *prof,
			       const struct collector_metric_set *set, size_t ranges, char *err,
			       size_t err_size)
{
	(void)set, (void)ranges, (void)err, (void)err_size;
	event(FAKE_WARM_UP, prof->ctx, NULL);
	return 0;
}

size_t fake_events(enum fake_event_kind kind)
{
	size_t n = 0;
	for (size_t i = 0; i < fw.event_count; i++)
		n += fw.events[i].kind == kind;
	return n;
}

int collector_profiler_open_first_pass(struct collector_profiler *prof,
				      const struct collector_metric_set *set, size_t ranges,
				      struct collector_cost *cost, char *err, size_t err_size)
{
	(void)set, (void)cost;
	fw.first_pass_ranges = ranges;
	if (fw.always_busy || fw.busy_batches) { /* its Start finds the hardware busy */
		snprintf(err, err_size, "cuptiRangeProfilerStart: CUPTI_ERROR_HARDWARE_BUSY");
		return RP_ERR_HARDWARE_BUSY;
	}
	event(FAKE_OPEN_FIRST_PASS, prof->ctx, NULL);
	prof->first_pass_open = true;
	return 0;
}

/* The application's launch as one run, valued as a batch's runs are. */
int collector_profiler_close_first_pass(struct collector_profiler *prof,
				       const struct collector_metric_set *set,
				       unsigned kernels_per_run, double *values, double *clock_hz,
				       struct collector_cost *cost, char *err, size_t err_size)
{
	(void)kernels_per_run, (void)cost;
	if (!prof->first_pass_open) {
		snprintf(err, err_size, "no pass is open");
		return -1;
	}
	prof->first_pass_open = false;
	fw.syncs++;
	for (size_t k = 0; k < set->count; k++)
		values[k] = collector_metric_set_launch(set, k) >= 0 ? NAN :
			fw.value ? fw.value(fw.runs_measured, k) : 1000.0;
	*clock_hz = NAN;
	fw.runs_measured++;
	return 0;
}

void collector_profiler_drop_open_pass(struct collector_profiler *prof)
{
	if (prof->first_pass_open)
		event(FAKE_DROP_OPEN_PASS, prof->ctx, NULL);
	prof->first_pass_open = false;
}

/* One batch as the real one runs it: every run of every pass through run_fn (its failure
 * code returned), then the values the test scripted (fw.value, else 1000 for every run),
 * clocks NaN (the set does not measure the clock). Busy batches (RP_ERR_HARDWARE_BUSY)
 * and a failing one (RP_ERR_FAILED) as scripted. */
int collector_profiler_measure(struct collector_profiler *prof,
			       const struct collector_metric_set *set, unsigned runs,
			       unsigned kernels_per_run, collector_run_fn run_fn, void *arg,
			       double *values, double *clock_hz, unsigned *passes_out,
			       struct collector_cost *cost, char *err, size_t err_size)
{
	(void)cost;
	unsigned b = fw.batches++;
	if (b < FAKE_MAX_BATCHES) {
		fw.batch_runs[b] = runs;
		fw.batch_kernels[b] = kernels_per_run;
	}
	event(FAKE_MEASURE, prof->ctx, NULL);
	if (fw.always_busy || fw.busy_batches) {
		if (fw.busy_batches)
			fw.busy_batches--;
		snprintf(err, err_size, "cuptiRangeProfilerStart: CUPTI_ERROR_HARDWARE_BUSY; "
			 "another profiler uses the device");
		return RP_ERR_HARDWARE_BUSY;
	}
	for (unsigned p = 0; p < set->passes; p++) {
		for (unsigned r = 0; r < runs; r++) {
			int rc = run_fn(arg, r, p);
			if (rc) {
				snprintf(err, err_size, "run %u of pass %u: %s", r, p,
					 rp_error_text(rc));
				return rc;
			}
		}
	}
	if (fw.batch_sleep_ms)
		nanosleep(&(struct timespec){ 0, (long)fw.batch_sleep_ms * 1000000 }, NULL);
	if (fw.fail_batch == b + 1) {
		snprintf(err, err_size, "cuptiRangeProfilerDecodeData: CUPTI_ERROR_UNKNOWN");
		return RP_ERR_FAILED;
	}
	for (unsigned r = 0; r < runs; r++) {
		for (size_t k = 0; k < set->count; k++)
			values[(size_t)r * set->count + k] =
				collector_metric_set_launch(set, k) >= 0 ? NAN :
				fw.value ? fw.value(fw.runs_measured + r, k) : 1000.0;
		clock_hz[r] = NAN;
	}
	fw.runs_measured += runs;
	*passes_out = set->passes;
	return 0;
}

/* ------------------------------------------------------------------------------------ */
/* collector/device.h                                                                   */
/* ------------------------------------------------------------------------------------ */

int collector_device_info(int index, struct collector_device_info *info, char *err,
			  size_t err_size)
{
	(void)err, (void)err_size;
	*info = (struct collector_device_info){ .index = index, .cc_major = 9, .sm_count = 132,
						.l2_bytes = 50 << 20, .rated_sm_clock_hz = 1.98e9,
						.rated_memory_clock_hz = 2.6e9,
						.driver_version = 13000 };
	snprintf(info->name, sizeof(info->name), "Fake GPU");
	snprintf(info->uuid, sizeof(info->uuid), "%s", fw.uuid);
	return 0;
}

size_t collector_checkpoint_host_reserve_mb(void)
{
	return 0;
}

int collector_nvml_open(const char *library, char *err, size_t err_size)
{
	(void)library, (void)err, (void)err_size;
	return 0;
}

int collector_nvml_sample(const char *uuid, enum collector_nvml_when when,
			  struct collector_nvml_sample *out, char *err, size_t err_size)
{
	(void)uuid, (void)when, (void)err, (void)err_size;
	*out = (struct collector_nvml_sample){ 40, 2.6e9, 1.98e9, 300, 0 };
	return 0;
}

void collector_nvml_thermal_guard(const char *uuid, const struct thermal_params *params,
				  struct thermal_wait *out)
{
	(void)uuid, (void)params;
	*out = (struct thermal_wait){ .outcome = THERMAL_COOL, .start_c = 40, .end_c = 40,
				      .slowdown_c = 90 };
}

int collector_clock_lock_base(const char *uuid, unsigned *locked_mhz, char *err,
			      size_t err_size)
{
	(void)uuid, (void)err, (void)err_size;
	*locked_mhz = 1500;
	return 0;
}

void collector_clock_restore(void)
{
	fw.clock_restores++;
}

/* ------------------------------------------------------------------------------------ */
/* memory/memory.h                                                                      */
/* ------------------------------------------------------------------------------------ */

/* The current context's state, to tell its inputs from its result. */
static struct context_state *current_state(void)
{
	return inject_contexts_state(fw.current, inject_contexts_generation(fw.current));
}

int mem_reach_collect(struct mem_reach *reach, CUfunction f, void **kernel_params,
		      void **extra)
{
	(void)f, (void)kernel_params, (void)extra;
	fw.reach_collects++;
	if (fw.reach_unknown) {
		snprintf(reach->unknown, sizeof(reach->unknown), "%s", fw.reach_unknown);
		return RP_ERR_FAILED;
	}
	unsigned n = fw.reach_ranges ? fw.reach_ranges : 1;
	reach->ranges = malloc(n * sizeof(*reach->ranges));
	if (!reach->ranges) {
		snprintf(reach->unknown, sizeof(reach->unknown), "out of host memory");
		return RP_ERR_NO_MEMORY;
	}
	size_t size = fw.range_bytes ? fw.range_bytes : 256;
	for (unsigned i = 0; i < n; i++)
		reach->ranges[i] = (struct mem_range){ 0x7000 + 0x1000 * i, size };
	reach->count = reach->capacity = n;
	reach->bytes = size * n;
	reach->pointers = 1;
	if (fw.reach_through_memory && !fw.collecting_direct)
		return mem_reach_add(reach, &(struct mem_range){ fw.reach_through_memory, 4096 }, 1);
	return 0;
}

int mem_reach_collect_direct(struct mem_reach *reach, CUfunction f, void **kernel_params,
			     void **extra)
{
	fw.reach_collects_direct++;
	fw.collecting_direct = true;
	int rc = mem_reach_collect(reach, f, kernel_params, extra);
	fw.collecting_direct = false;
	return rc;
}

void mem_reach_finish(struct mem_reach *reach)
{
	free(reach->ranges);
	reach->ranges = NULL;
	reach->count = reach->capacity = 0;
}

int mem_save(struct mem_backup *b, const struct mem_reach *reach, CUstream stream, char *err,
	     size_t err_size)
{
	(void)stream, (void)err, (void)err_size;
	if (atomic_load(&fw.frees_under_way))
		atomic_fetch_add(&fw.saves_beside_a_free, 1);
	struct context_state *c = current_state();
	if (c && b == &c->inputs)
		fw.saves_inputs++;
	else if (c && b == &c->result)
		fw.saves_result++;
	/* Apart, as the driver's: a test can tell the two copies' frees. */
	b->device = c && b == &c->result ? 0x8400 : 0x8000;
	b->device_size = reach->bytes;
	b->on_host = false;
	return 0;
}

/* A range's memory saved as its calls are issued (inject/range/range_memory.c): into backups of
 * its own, neither the inputs nor the result. */
int mem_save_queued(struct mem_backup *b, const struct mem_reach *reach, CUstream stream,
		    char *err, size_t err_size)
{
	(void)stream, (void)err, (void)err_size;
	fw.saves_queued++;
	b->device = 0x8800;
	b->device_size = reach->bytes ? reach->bytes : 1;
	b->on_host = false;
	return 0;
}

int mem_restore(const struct mem_backup *b, const struct mem_reach *reach, CUstream stream,
		char *err, size_t err_size)
{
	return mem_restore_changed(b, reach, NULL, stream, err, err_size);
}

int mem_restore_changed(const struct mem_backup *b, const struct mem_reach *reach,
			const bool *changed, CUstream stream, char *err, size_t err_size)
{
	(void)stream, (void)err, (void)err_size;
	for (size_t i = 0; i < reach->count; i++)
		fw.ranges_restored += !changed || changed[i];
	struct context_state *c = current_state();
	if (c && b == &c->inputs)
		fw.restores_inputs++;
	else if (c && b == &c->result)
		fw.restores_result++;
	else
		fw.restores_other++;
	return 0;
}

void mem_backup_trim(struct mem_backup *b, size_t keep)
{
	if (b->device_size > keep || b->host_size > keep) {
		if (b->device == 0x8800)
			fw.frees_queued++;
		else
			fw.backups_freed++;
		fw.backups_freed_relaxed += capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED;
		if (fw.free_sleep_ms) {
			atomic_fetch_add(&fw.frees_under_way, 1);
			nanosleep(&(struct timespec){ fw.free_sleep_ms / 1000,
						      (long)(fw.free_sleep_ms % 1000) * 1000000L },
				  NULL);
			atomic_fetch_sub(&fw.frees_under_way, 1);
		}
		/* Through the driver, as memory/save.c frees them: CUPTI reports these calls to
		 * the callback as it reports the application's (launch_test.c). */
		if (b->device)
			rp_api.cuMemFree(b->device);
		if (b->host)
			rp_api.cuMemFreeHost(b->host);
		*b = (struct mem_backup){ 0 };
	}
}

/* inject/session/captures.h: whether a stream capture is under way (launch.c's; here the test's).
 * launch_test.c links the real captures.c instead: launch.c feeds it the capture calls. */
#ifndef FAKE_WORLD_REAL_CAPTURES
bool inject_captures_under_way(void)
{
	return fw.capture_under_way;
}
#endif

int mem_verifier_init(struct mem_verifier *v, int device, char *err, size_t err_size)
{
	(void)err, (void)err_size;
	*v = (struct mem_verifier){ .device = device, .context = fw.current };
	return 0;
}

void mem_verifier_drop_sums(struct mem_verifier *v)
{
	(void)v;
}

void mem_verifier_finish(struct mem_verifier *v)
{
	(void)v;
}

/* One segment of 4096 bytes outside the reach. */
static int one_segment(struct mem_hashes *out, char *err, size_t err_size)
{
	*out = (struct mem_hashes){ 0 };
	out->segments = malloc(sizeof(*out->segments));
	out->kinds = malloc(1);
	out->sums = malloc(sizeof(*out->sums));
	if (!out->segments || !out->kinds || !out->sums) {
		mem_hashes_finish(out);
		snprintf(err, err_size, "out of host memory");
		return RP_ERR_NO_MEMORY;
	}
	out->segments[0] = (struct mem_range){ 0x9000, 4096 };
	out->kinds[0] = 0;
	out->sums[0] = 0x5eed;
	out->count = 1;
	out->bytes = 4096;
	return 0;
}

int mem_hash_outside(struct mem_verifier *v, const struct mem_reach *reach, CUstream stream,
		     struct mem_hashes *out, char *err, size_t err_size)
{
	(void)v, (void)reach, (void)stream;
	fw.hashes_outside++;
	return one_segment(out, err, err_size);
}

int mem_hash_again(struct mem_verifier *v, const struct mem_hashes *before, CUstream stream,
		   struct mem_hashes *after, char *err, size_t err_size)
{
	(void)v, (void)before, (void)stream;
	fw.hashes_again++;
	int rc = one_segment(after, err, err_size);
	if (!rc && fw.wrote_outside)
		after->sums[0]++;
	return rc;
}

int mem_reach_changed(struct mem_verifier *v, const struct mem_backup *b,
		      const struct mem_reach *reach, const bool *skip, CUstream stream,
		      bool *changed, bool *all, char *err, size_t err_size)
{
	(void)v, (void)b, (void)stream, (void)err, (void)err_size;
	bool later = fw.reach_compares++ % 2 == 1 && fw.replay_changes_more;
	*all = true;
	for (size_t i = 0; i < reach->count; i++) {
		fw.ranges_compared += !skip || !skip[i];
		changed[i] = later || (skip && skip[i]) || !(fw.reach_unchanged_mask >> i & 1);
		*all = *all && changed[i];
	}
	return 0;
}

/* ------------------------------------------------------------------------------------ */
/* inject/session/flush.h                                                                       */
/* ------------------------------------------------------------------------------------ */

int inject_flush_init(struct inject_flush *flush, int device, bool empty, char *err,
		      size_t err_size)
{
	(void)device, (void)err, (void)err_size;
	*flush = (struct inject_flush){ .kernel = (CUfunction)(uintptr_t)0xf1, .blocks = 1,
					.empty = empty && !fw.flush_notice,
					.image_refused = fw.flush_image_refused };
	if (fw.flush_notice) {
		flush->limit = INJECT_FLUSH_NO_COOPERATIVE;
		snprintf(flush->notice, sizeof(flush->notice), "%s", fw.flush_notice);
	}
	return 0;
}

void inject_flush_finish(struct inject_flush *flush)
{
	(void)flush;
}

int inject_flush_launch(struct inject_flush *flush, CUstream stream)
{
	(void)flush, (void)stream;
	fw.flushes++;
	return 0;
}

/* ------------------------------------------------------------------------------------ */
/* The world                                                                            */
/* ------------------------------------------------------------------------------------ */

static void keep_record(const char *line, size_t len)
{
	if (fw.record_count < FAKE_MAX_RECORDS)
		fw.records[fw.record_count++] = cJSON_ParseWithLength(line, len);
}

CUcontext fake_context(unsigned n)
{
	return (CUcontext)(uintptr_t)(0x1000 * (n + 1));
}

struct inject_launch fake_launch(CUcontext ctx, unsigned f, uint64_t index)
{
	static char names[16][32];
	static void *params[1];
	snprintf(names[f % 16], sizeof(names[0]), "_Z7kernel%uPf", f);
	return (struct inject_launch){ .kind = INJECT_LAUNCH_KERNEL, .ctx = ctx,
				       .context_id = (uint32_t)((uintptr_t)ctx >> 12),
				       .function = (CUfunction)(uintptr_t)(f + 1),
				       .grid = { 4, 1, 1 }, .block = { 128, 1, 1 },
				       .kernel_params = params, .mangled = names[f % 16],
				       .index = index };
}

struct inject_config fake_config(void)
{
	return (struct inject_config){
		.runs = 5, .target_ci_pct = 1, .runs_min = 4, .runs_max = 40, .runs_batch = 2,
		.runs_time_budget = 60, .thermal_control = RP_THERMAL_OFF, .thermal_wait = 5,
		.thermal_continue = 10, .thermal_timeout = 1, .cache_control = RP_CACHE_ALL,
		.clock_control = RP_CLOCK_NONE, .memory_save = RP_MEMORY_SAVE_REACH,
		.metrics = "gpu__time_duration.sum", .device_lock_timeout_ms = 2000,
		.busy_timeout_ms = 2000 };
}

static CUresult exchange_capture_mode(CUstreamCaptureMode *mode)
{
	CUstreamCaptureMode was = capture_mode;
	capture_mode = *mode;
	*mode = was;
	return CUDA_SUCCESS;
}

static CUresult mem_free(CUdeviceptr p)
{
	(void)p;
	fw.frees++;
	return CUDA_SUCCESS;
}

static CUresult mem_free_host(void *p)
{
	(void)p;
	fw.frees++;
	return CUDA_SUCCESS;
}

static CUresult mem_get_info(size_t *free_bytes, size_t *total_bytes)
{
	fw.mem_info_calls++;
	fw.mem_info_context = fw.current;
	*free_bytes = fw.mem_free ? fw.mem_free : fw.mem_total;
	*total_bytes = fw.mem_total;
	return CUDA_SUCCESS;
}

void fake_world_init(void)
{
	memset(&fw, 0, sizeof(fw));
	snprintf(fw.uuid, sizeof(fw.uuid), "GPU-fake-inject-replay-%ld", (long)getpid());
	rp_api.cuCtxGetCurrent = ctx_get_current;
	rp_api.cuCtxSetCurrent = ctx_set_current;
	rp_api.cuCtxGetDevice = ctx_get_device;
	rp_api.cuCtxSynchronize = ctx_synchronize;
	rp_api.cuStreamSynchronize = stream_synchronize;
	rp_api.cuptiGetStreamIdEx = stream_id;
	rp_api.cuptiCheckpointSave = checkpoint_save;
	rp_api.cuptiCheckpointRestore = checkpoint_restore;
	rp_api.cuptiCheckpointFree = checkpoint_free;
	rp_api.cuLaunchKernel = launch_kernel;
	rp_api.cuEventCreate = event_create;
	rp_api.cuEventRecord = event_record;
	rp_api.cuEventElapsedTime = event_elapsed;
	rp_api.cuEventDestroy = event_destroy;
	rp_api.cuGraphLaunch = graph_launch;
	rp_api.cuDeviceGetAttribute = device_attribute;
	rp_api.cuFuncGetAttribute = function_attribute;
	rp_api.cuCtxGetLimit = ctx_get_limit;
	rp_api.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags = occupancy;
	rp_api.cuKernelGetFunction = kernel_get_function;
	rp_api.cuMemGetInfo = mem_get_info;
	rp_api.cuMemFree = mem_free;
	rp_api.cuMemFreeHost = mem_free_host;
	rp_api.cuThreadExchangeStreamCaptureMode = exchange_capture_mode;
	/* An H200 (cudaDeviceGetAttribute there, tests/gpu/check_launch_metrics.py), and a
	 * function of 12 registers without static shared memory. */
	fw.device_attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] = 9;
	fw.device_attributes[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] = 132;
	fw.device_attributes[CU_DEVICE_ATTRIBUTE_WARP_SIZE] = 32;
	fw.device_attributes[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR] = 2048;
	fw.device_attributes[CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR] = 32;
	fw.device_attributes[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR] = 65536;
	fw.device_attributes[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK] = 65536;
	fw.device_attributes[CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK] = 1024;
	fw.function_attributes[CU_FUNC_ATTRIBUTE_NUM_REGS] = 12;
	fw.stack_size = 1024;
	fw.active_blocks = 8;
	fw.mem_total = (size_t)140 << 30;
	fw.current = fake_context(0);
	rp_log_set_quiet(true);
	inject_output_configure("/dev/null");
	inject_output_set_tap(keep_record);
	struct inject_config c = fake_config();
	inject_session_configure(&c);
	/* The test's thread is launch.c's callback with the replay lock held, which the
	 * measuring files assert (INJECT_REPLAY_HELD). */
	inject_session_lock();
}

/* ---- the CUPTI calls launch.c's set-up makes (fake_world_callback_stand_ins) ---- */

static CUptiResult callback_enable(uint32_t enable, CUpti_SubscriberHandle s,
				   CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	(void)enable, (void)s, (void)domain, (void)cbid;
	return CUPTI_SUCCESS;
}

static CUptiResult callback_domain(uint32_t enable, CUpti_SubscriberHandle s,
				   CUpti_CallbackDomain domain)
{
	(void)enable, (void)s, (void)domain;
	return CUPTI_SUCCESS;
}

static CUptiResult callback_context_id(CUcontext ctx, uint32_t *id)
{
	(void)ctx;
	*id = 1;
	return CUPTI_SUCCESS;
}

void fake_world_callback_stand_ins(void)
{
	rp_api.cuptiEnableCallback = callback_enable;
	rp_api.cuptiEnableDomain = callback_domain;
	rp_api.cuptiGetContextId = callback_context_id;
}

void fake_world_finish(void)
{
	inject_session_unlock();
	for (size_t i = 0; i < fw.record_count; i++)
		cJSON_Delete(fw.records[i]);
	fw.record_count = 0;
	char path[256];
	snprintf(path, sizeof(path), "/dev/shm/rangeprof-device-%s.lock", fw.uuid);
	unlink(path);
	snprintf(path, sizeof(path), "/tmp/rangeprof-device-%s.lock", fw.uuid);
	unlink(path);
}

static const char *type_of(const cJSON *r)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "type");
	return cJSON_IsString(t) ? t->valuestring : "";
}

size_t fake_records(const char *type)
{
	size_t n = 0;
	for (size_t i = 0; i < fw.record_count; i++)
		n += !strcmp(type_of(fw.records[i]), type);
	return n;
}

cJSON *fake_record(const char *type, size_t i)
{
	for (size_t k = 0; k < fw.record_count; k++)
		if (!strcmp(type_of(fw.records[k]), type) && i-- == 0)
			return fw.records[k];
	return NULL;
}

size_t fake_messages(const char *type, const char *text)
{
	size_t n = 0;
	for (size_t i = 0; i < fw.record_count; i++) {
		const char *m = fake_string(fw.records[i], "message");
		n += !strcmp(type_of(fw.records[i]), type) && m && strstr(m, text);
	}
	return n;
}

static const cJSON *member(const cJSON *record, const char *path)
{
	char copy[128];
	snprintf(copy, sizeof(copy), "%s", path);
	const cJSON *o = record;
	for (char *p = copy, *save = NULL; o && (p = strtok_r(p, "/", &save)); p = NULL)
		o = cJSON_GetObjectItemCaseSensitive(o, p);
	return o;
}

const char *fake_string(const cJSON *record, const char *path)
{
	const cJSON *o = member(record, path);
	return cJSON_IsString(o) ? o->valuestring : NULL;
}

double fake_number(const cJSON *record, const char *path)
{
	const cJSON *o = member(record, path);
	return cJSON_IsNumber(o) ? o->valuedouble : NAN;
}

long fake_event_find(enum fake_event_kind kind, CUcontext ctx, size_t from)
{
	for (size_t i = from; i < fw.event_count; i++)
		if (fw.events[i].kind == kind && (!ctx || fw.events[i].profiler_ctx == ctx))
			return (long)i;
	return -1;
}

size_t fake_event_count(enum fake_event_kind kind, CUcontext ctx)
{
	size_t n = 0;
	for (size_t i = 0; i < fw.event_count; i++)
		n += fw.events[i].kind == kind && (!ctx || fw.events[i].profiler_ctx == ctx);
	return n;
}
