/* inject/measure/measure.c - the measuring loop, the same for every workload
 * (measurement.h): get ready (the application's queued work, the turn, the device's set,
 * the context's profiler), wait out a busy profiling hardware, the thermal guard, then
 * batches of runs through the workload's batch function (--runs N: one; --runs auto: until
 * collector/adaptive.c says stop), NVML before and after, and the records (emit.c); at the
 * end, the saved copies kept or given back (session.c) and the turn given back.
 * Workloads are reached through their interface.
 * Calls: session.c, device.c, config.c, emit.c, devlock.c, flush.c, watchdog.c, output.c,
 * launch_shape.c, collector/, memory/.
 * Called by: save.c, kernel_workload.c, whole_workload.c, range_workload.c.
 * Lock: the replay lock; not asserted by: inject_measure_concerns (a record's fields),
 * inject_measure_sample_before (NVML, on the measurement it is handed),
 * inject_measure_time_metric (a name). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/adaptive.h"
#include "collector/device.h"
#include "collector/profiler.h"
#include "collector/stats.h"
#include "collector/thermal.h"
#include "common/error.h"
#include "common/log.h"
#include "inject/session/device.h"
#include "inject/session/devlock.h"
#include "inject/measure/measurement.h"
#include "inject/session/session.h"
#include "inject/session/flush.h"
#include "inject/session/watchdog.h"


struct measurement *inject_measurement_new(const struct inject_workload *workload)
{
	INJECT_REPLAY_HELD();
	struct measurement *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->workload = workload;
	m->device = -1;
	m->started = m->lap = collector_cost_now();
	return m;
}

void inject_measure_sample_before(struct replay_run *rr, unsigned run)
{
	struct collector_nvml_sample s;
	char err[256];
	if (collector_nvml_sample(rr->uuid, COLLECTOR_NVML_BEFORE, &s, err, sizeof(err)))
		inject_output_report(INJECT_REPORT_NVML_SAMPLE,
				     INJECT_CONCERNS(INJECT_ON_DEVICE(rr->m->device)), false,
			       "%s; the run records' NVML fields of device %d are null where "
			      "NVML cannot tell", err, rr->m->device);
	rr->temperature[run] = s.temperature_c;
	rr->sm_clock[run] = s.sm_clock_hz;
	rr->nvml[run] = (struct collector_run_nvml){ s.temperature_c, NAN, s.memory_clock_hz,
						     NAN, s.throttle };
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	rr->wall[run] = (double)t.tv_sec + t.tv_nsec / 1e9;
}

size_t inject_measure_time_metric(const struct collector_metric_set *set)
{
	const char *const *names = collector_metric_set_names(set);
	size_t count = collector_metric_set_user_count(set);
	for (size_t k = 0; k < count; k++)
		if (!strcmp(names[k], "gpu__time_duration.sum"))
			return k;
	return SIZE_MAX;
}

/* Keeps the kernel's mean time, when measured, to bound its later replay passes. */
static void remember_kernel_time(struct measurement *m, const double *values, unsigned runs,
				 size_t metric_count)
{
	size_t k = inject_measure_time_metric(m->d->set);
	if (!m->fn || k == SIZE_MAX)
		return; /* a whole graph launch, or its time not measured */
	double sum = 0;
	for (unsigned r = 0; r < runs; r++)
		sum += values[(size_t)r * metric_count + k];
	if (runs && isfinite(sum) && sum > 0)
		m->fn->kernel_seconds = sum / runs * 1e-9;
}

/* The thermal guard before a launch's runs (--thermal-control); a timeout is a warning,
 * and the launch is measured anyway. Called with the device's turn held: another process
 * measuring on this GPU would heat it too. */
static void thermal_guard_before_runs(const struct measurement *m, struct thermal_wait *w)
{
	struct thermal_params p = { inject_config()->thermal_control, NAN, inject_config()->thermal_wait,
				    inject_config()->thermal_continue, (double)inject_config()->thermal_timeout,
				    THERMAL_POLL_S, THERMAL_PLATEAU_S };
	collector_nvml_thermal_guard(m->d->info.uuid, &p, w);
	if (w->outcome == THERMAL_TIMEOUT)
		inject_output_report(INJECT_REPORT_THERMAL_TIMEOUT,
				     INJECT_CONCERNS(.kernel = m->kernel,
								 .mangled = m->launch.mangled,
								 INJECT_ON_DEVICE(m->device),
								 .option = "--thermal-timeout"), false,
			      "device %d stayed within %g C of its slowdown temperature (%.0f C) "
			      "for %ld s; launch %llu of %s is measured anyway at %.0f C "
			      "(--thermal-timeout)", m->device, inject_config()->thermal_continue,
			      w->slowdown_c, inject_config()->thermal_timeout,
			      (unsigned long long)m->launch.index, m->kernel, w->end_c);
	else if (w->outcome == THERMAL_UNKNOWN)
		inject_output_report(INJECT_REPORT_THERMAL_UNKNOWN,
				     INJECT_CONCERNS(INJECT_ON_DEVICE(m->device),
								 .option = "--thermal-control"),
			      false, "device %d: NVML gives no %s; launches on it are measured "
			      "without thermal waits", m->device, isnan(w->slowdown_c) ?
			      "slowdown temperature" : "temperature");
}


/* The metric --runs auto judges: the kernel's time when measured, else the first. */
static size_t gating_metric(const struct measurement *m)
{
	size_t k = inject_measure_time_metric(m->d->set);
	return k == SIZE_MAX ? 0 : k;
}

/* CUPTI_ERROR_HARDWARE_BUSY with this process's turn held. Another rangeprof process's
 * idle profiler is asked to let go (hardware_free); otherwise a profiler outside
 * rangeprof holds the hardware, and the launch waits for it, polling every 10 ms, until
 * --busy-timeout from since (cost clock, ms). true: try again; false: given up, said in
 * one warning naming who held the hardware and for how long. */
static bool wait_out_busy(struct measurement *m, struct device_state *d, double since)
{
	if (d->turns && inject_devlock_hardware_elsewhere(d->turns)) {
		double waited_ms;
		if (inject_devlock_wait_hardware(d->turns, inject_config()->device_lock_timeout_ms,
						 &waited_ms) == 0)
			return true;
	} else if (collector_cost_now() - since < inject_config()->busy_timeout_ms) {
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		return true;
	}
	bool peer = d->turns && inject_devlock_hardware_elsewhere(d->turns);
	/* One warning per launch (doc/concurrency.md): the launch index tells them apart. */
	struct inject_concerns about = { .kernel = m->kernel, .mangled = m->launch.mangled,
					 INJECT_ON_DEVICE(m->device), .context = m->launch.context_id,
					 .option = peer ? "--device-lock-timeout" : "--busy-timeout",
					 .detail = (long long)m->launch.index };
	inject_output_report(INJECT_REPORT_DEVICE_BUSY, &about, false,
		      "device %d (%s): the profiling hardware was held by %s for %.1f s "
		      "(CUPTI_ERROR_HARDWARE_BUSY); launch %llu of %s is not measured, the "
		      "application runs on (%s)", m->device, d->info.uuid,
		      peer ? "another rangeprof process that did not give it back" :
		      "a profiler outside rangeprof (ncu, Nsight Systems, DCGM profiling or "
		      "another CUPTI client)", (collector_cost_now() - since) / 1e3,
		      (unsigned long long)m->launch.index, m->kernel, about.option);
	return false;
}

bool inject_measure_open_first_run(struct measurement *m)
{
	INJECT_REPLAY_HELD();
	if (inject_config()->runs == RP_RUNS_AUTO || inject_config()->runs < 2 || !m->fn ||
	    !m->c->profiler || m->need != INJECT_PROFILER_PER_KERNEL ||
	    collector_metric_set_passes(m->d->set) != 1)
		return false;
	m->first_run.values = calloc(collector_metric_set_user_count(m->d->set) + 1,
				     sizeof(double));
	if (!m->first_run.values)
		return false;
	if (inject_config()->thermal_control != RP_THERMAL_OFF) {
		thermal_guard_before_runs(m, &m->thermal);
		m->thermal_done = true;
		m->lap = collector_cost_now(); /* the wait is in the total only */
	}
	char err[2048];
	if (collector_profiler_open_first_pass(m->c->profiler, m->d->set,
					       inject_config_ranges_needed(m->need), &m->cost, err,
					       sizeof(err)))
		return false; /* the usual way meets the same failure and says it */
	if (inject_config()->cache_control == RP_CACHE_ALL &&
	    inject_flush_launch(&m->c->flush, m->launch.stream)) {
		collector_profiler_drop_open_pass(m->c->profiler);
		return false;
	}
	struct replay_run rr = { .m = m, .uuid = m->d->info.uuid,
				 .temperature = &m->first_run.temperature,
				 .wall = &m->first_run.wall, .nvml = &m->first_run.nvml,
				 .sm_clock = &m->first_run.sm_clock };
	inject_measure_sample_before(&rr, 0);
	double known = m->fn->kernel_seconds;
	m->watchdog_seconds = known * 1000 > 10 ? known * 1000 : 10;
	inject_watchdog_arm(m->watchdog_seconds, m->kernel, m->fn->mangled, m->device,
			    m->launch.context_id, m->launch.index);
	m->first_run_is_app = true;
	collector_cost_lap(&m->cost, COST_RUNS, &m->lap);
	return true;
}

int inject_measure_close_first_run(struct measurement *m, char *err, size_t err_size)
{
	INJECT_REPLAY_HELD();
	int rc = collector_profiler_close_first_pass(m->c->profiler, m->d->set,
						     inject_config_kernels_per_run(),
						     m->first_run.values, &m->first_run.clock,
						     &m->cost, err, err_size);
	inject_watchdog_disarm();
	if (!rc)
		inject_launch_shape_metrics(m, 1, m->first_run.values);
	m->lap = collector_cost_now();
	return rc;
}

bool inject_measure(struct measurement *m)
{
	INJECT_REPLAY_HELD();
	bool complete = false, failed = false;
	bool autorun = inject_config()->runs == RP_RUNS_AUTO;
	struct adaptive_params ap = inject_config_adaptive_params();
	unsigned capacity = autorun ? inject_config()->runs_max : inject_config()->runs;
	unsigned batch = inject_config_first_batch_runs();
	bool flush = inject_config()->cache_control == RP_CACHE_ALL;
	size_t metric_count = collector_metric_set_user_count(m->d->set);
	double *values = calloc((size_t)capacity * metric_count + 1, sizeof(double));
	double *clocks = calloc(capacity, sizeof(double));
	double *temps = calloc(capacity, sizeof(double));
	double *walls = calloc(capacity, sizeof(double));
	double *gate = calloc(capacity, sizeof(double));
	double *sm_clock = calloc(capacity, sizeof(double));
	struct collector_run_nvml *nvml = calloc(capacity, sizeof(*nvml));
	uint64_t *throttle = calloc(capacity, sizeof(*throttle));
	if (!values || !clocks || !temps || !walls || !gate || !sm_clock || !nvml || !throttle)
		goto out;
	bool clock_measured = collector_metric_set_measures_clock(m->d->set);
	struct thermal_wait tw = m->thermal_done ? m->thermal :
		(struct thermal_wait){ .outcome = THERMAL_OFF };
	if (inject_config()->thermal_control != RP_THERMAL_OFF && !m->thermal_done) {
		thermal_guard_before_runs(m, &tw);
		/* The wait is in the total only, like waiting for the turn. */
		m->lap = collector_cost_now();
	}
	unsigned done = 0, passes = 0;
	if (m->first_run_is_app) { /* run 0 was the application's launch, measured at EXIT */
		temps[0] = m->first_run.temperature;
		walls[0] = m->first_run.wall;
		nvml[0] = m->first_run.nvml;
		sm_clock[0] = m->first_run.sm_clock;
		clocks[0] = m->first_run.clock;
		memcpy(values, m->first_run.values, metric_count * sizeof(double));
		done = 1;
		batch--;
	}
	size_t gate_index = gating_metric(m);
	struct collector_adaptive adaptive = { NULL, inject_config()->target_ci_pct, NAN,
					       gate_index, 0, 0 };
	double first_batch_at = collector_cost_now(), busy_since = NAN;
	for (;;) {
		struct replay_run rr = { m, &m->launch, m->c, &m->save, flush, temps + done,
					 walls + done, m->d->info.uuid, nvml + done, sm_clock + done };
		/* A pass of a kernel that waits for a peer would never end (watchdog.h):
		 * 10 s, or far longer than the kernel took before. */
		double known = m->fn ? m->fn->kernel_seconds * batch : 0;
		m->watchdog_seconds = known * 1000 > 10 ? known * 1000 : 10;
		rr.exec = m->graph_exec;
		char err[2048];
		int rc = m->workload->batch(m, &rr, batch, values + (size_t)done * metric_count,
					    clocks + done, &passes, err, sizeof(err));
		inject_watchdog_disarm();
		m->lap = collector_cost_now();
		/* Said once per device and reason: the flush leaves clean lines where it cannot
		 * discard (nothing to say under --cache-control none, which does not flush). */
		if (flush && m->c->flush.limit != INJECT_FLUSH_EMPTIES)
			inject_output_report(INJECT_REPORT_FLUSH,
					     INJECT_CONCERNS(INJECT_ON_DEVICE(m->device),
							     .detail = INJECT_DETAIL_PAIR(
								     m->c->flush.limit,
								     m->c->flush.refused)),
				     false,
				      "%s", m->c->flush.notice);
		/* The hardware taken by someone else between our turn and the Start (a profiler
		 * outside rangeprof): the batch is tried again from a new profiler, the memory
		 * being restored at every run anyway. */
		if (rc == RP_ERR_HARDWARE_BUSY && !done) {
			if (isnan(busy_since))
				busy_since = m->lap;
			inject_session_profiler_release(m->c);
			if (wait_out_busy(m, m->d, busy_since) &&
			    inject_session_context_ready(m->launch.ctx, m->device, m->launch.context_id,
						 m->need, m->d->set, inject_config_ranges_needed(m->need),
						 &m->cost, &m->lap))
				continue;
			goto out;
		}
		if (rc) {
			inject_output_report(INJECT_REPORT_MEASURE,
					     INJECT_CONCERNS(.kernel = m->kernel,
								 .mangled = m->launch.mangled,
								 INJECT_ON_DEVICE(m->device),
								 .context = m->launch.context_id,
								 .detail = rc), true,
				      "%s: %s; %s", m->kernel, err, done ? "the runs measured before "
				      "are recorded" : "not measured");
			if (rc == RP_ERR_PRIVILEGES)
				inject_output_measuring_stop();
			if (!done)
				goto out;
			adaptive.stopped = "error";
			failed = true;
			break;
		}
		/* NVML when the batch's results are in: the after-temperature, power, and the
		 * reasons, which count for every run of the batch. */
		struct collector_nvml_sample after;
		char nvml_err[256];
		if (collector_nvml_sample(m->d->info.uuid, COLLECTOR_NVML_AFTER, &after, nvml_err,
					  sizeof(nvml_err)))
			inject_output_report(INJECT_REPORT_NVML_SAMPLE,
					     INJECT_CONCERNS(INJECT_ON_DEVICE(m->device)), false,
				      "%s; the run records' NVML fields of device %d are null "
				      "where NVML cannot tell", nvml_err, m->device);
		/* Run 0, the application's launch, shares the first batch's NVML view. */
		unsigned from = m->first_run_is_app && !adaptive.batches ? 0 : done;
		for (unsigned r = from; r < done + batch; r++) {
			nvml[r].temperature_after_c = after.temperature_c;
			nvml[r].power_w = after.power_w;
			if (nvml[r].throttle == STATS_THROTTLE_UNKNOWN)
				nvml[r].throttle = after.throttle;
			else if (after.throttle != STATS_THROTTLE_UNKNOWN)
				nvml[r].throttle |= after.throttle;
			throttle[r] = nvml[r].throttle;
			gate[r] = values[(size_t)r * metric_count + gate_index];
			if (!clock_measured)
				clocks[r] = sm_clock[r];
		}
		done += batch;
		adaptive.batches++;
		if (!autorun)
			break;
		struct adaptive_decision d;
		adaptive_decide(&ap, gate, done, (m->lap - first_batch_at) / 1e3, &d);
		adaptive.ci_pct = d.ci_pct;
		if (d.verdict != ADAPTIVE_CONTINUE) {
			adaptive.stopped = adaptive_verdict_name(d.verdict);
			break;
		}
		batch = (unsigned)d.next_batch;
	}
	adaptive.elapsed_s = (m->lap - first_batch_at) / 1e3; /* cost clock: milliseconds */
	remember_kernel_time(m, values, done, metric_count);
	m->cost.ms[COST_TOTAL] = m->lap - m->started;
	struct collector_thermal thermal = {
		inject_config()->thermal_control == RP_THERMAL_MANUAL ? "manual" : "auto",
		thermal_outcome_name(tw.outcome), tw.waited_s, tw.start_c, tw.end_c, tw.slowdown_c };
	struct run_conditions cond = { nvml, throttle, autorun ? &adaptive : NULL,
				       inject_config()->thermal_control != RP_THERMAL_OFF ? &thermal : NULL };
	inject_emit_records(m, done, passes, values, clocks, temps, walls, &cond);
	complete = !failed;
out:
	free(values);
	free(clocks);
	free(temps);
	free(walls);
	free(gate);
	free(sm_clock);
	free(nvml);
	free(throttle);
	return complete;
}

void inject_measurement_finish(struct measurement *m)
{
	INJECT_REPLAY_HELD();
	mem_reach_finish(&m->save.reach);
	free(m->save.changed);
	free(m->first_run.values);
	mem_hashes_finish(&m->before);
	if (m->c)
		inject_session_keep_backups(m->c);
	if (m->turn)
		inject_session_give_turn(m->device);
	free(m);
}

const struct inject_concerns *inject_measure_concerns(const struct measurement *m,
						     struct inject_concerns *c, long long detail)
{
	*c = (struct inject_concerns){ .kernel = m->kernel, .mangled = m->launch.mangled,
				       INJECT_ON_DEVICE(m->device), .context = m->launch.context_id,
				       .detail = detail };
	return c;
}

bool inject_measure_get_ready(struct measurement *m)
{
	INJECT_REPLAY_HELD();
	const struct inject_launch *l = &m->launch;
	struct inject_concerns about;
	CUdevice dev;
	if (rp_api.cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0 || dev >= INJECT_MAX_DEVICES)
		return false;
	m->device = (int)dev;
	/* Work the application queued before this launch must finish first: the saved copy
	 * has to see its results, and a sticky error is the application's to see. Before the
	 * turn: another process need not wait for this one's queued work. */
	CUresult cr = rp_api.cuCtxSynchronize();
	if (cr != CUDA_SUCCESS) {
		inject_output_report(INJECT_REPORT_SYNC,
				     inject_measure_concerns(m, &about, cr), true,
			      "cuCtxSynchronize before launch %llu of %s: %s; not measured",
			      (unsigned long long)l->index, m->kernel, collector_cu_error(cr));
		return false;
	}
	collector_cost_lap(&m->cost, COST_SYNC, &m->lap);
	struct device_state *known = inject_device_known(m->device);
	if (!known || !(m->turn = inject_session_take_turn(known, m->device, m->kernel, l->mangled,
							   l->index)))
		return false;
	m->lap = collector_cost_now(); /* waiting for the turn is in the total only */
	double busy_since = m->lap;
	while (!(m->d = inject_device_ready(l->ctx, m->device, inject_session_release_profilers)) &&
	       known->busy)
		if (!wait_out_busy(m, known, busy_since))
			return false;
	collector_cost_lap(&m->cost, COST_SETUP, &m->lap);
	if (!m->d)
		return false;
	m->need = m->workload->need(m->d->set);
	m->c = inject_session_context_ready(l->ctx, m->device, l->context_id, m->need, m->d->set,
				    inject_config_ranges_needed(m->need), &m->cost, &m->lap);
	if (m->c)
		inject_session_use_backups(m->c); /* kept again at inject_measurement_finish */
	return m->c != NULL;
}
