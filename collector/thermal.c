/* collector/thermal.c - the thermal guard (collector/thermal.h). Headroom is measured to
 * the slowdown temperature, as Nsight Python's T.limit: the driver starts slowing the
 * clocks there, and a kernel measured past it is measured at a clock it would not have
 * in the application. The two thresholds make a hysteresis: waiting until the continue
 * headroom gives the runs that follow room to heat up again.
 * Calls: none (libc only).
 * Called by: device.c, inject/.
 * Lock: none (the guard's state is its caller's). */
#include "collector/thermal.h"

#include <math.h>

const char *thermal_outcome_name(enum thermal_outcome o)
{
	switch (o) {
	case THERMAL_OFF: return "off";
	case THERMAL_UNKNOWN: return "unknown";
	case THERMAL_COOL: return "cool";
	case THERMAL_COOLED: return "cooled";
	case THERMAL_STOPPED_COOLING: return "stopped_cooling";
	case THERMAL_TIMEOUT: return "timeout";
	}
	return "unknown";
}

void thermal_guard(const struct thermal_params *p, const struct thermal_source *src,
		   struct thermal_wait *out)
{
	*out = (struct thermal_wait){ THERMAL_OFF, 0, NAN, NAN, p->slowdown_c };
	if (p->mode == RP_THERMAL_OFF)
		return;
	double t = src->temperature(src->arg);
	out->start_c = out->end_c = t;
	if (isnan(t) || isnan(p->slowdown_c)) {
		out->outcome = THERMAL_UNKNOWN;
		return;
	}
	if (p->slowdown_c - t >= p->wait_headroom_c) {
		out->outcome = THERMAL_COOL;
		return;
	}
	double start = src->now(src->arg), now = start;
	/* The coolest reading so far and when it was first reached: auto goes on when it
	 * has not improved by a degree for plateau_s, since a GPU whose idle temperature is
	 * within the continue headroom (a hot room, a neighbour's load) would otherwise
	 * make every launch wait for the timeout. */
	double coolest = t, coolest_at = start;
	for (;;) {
		double left = p->timeout_s - (now - start);
		if (left <= 0) {
			out->outcome = THERMAL_TIMEOUT;
			break;
		}
		src->sleep(src->arg, p->poll_s < left ? p->poll_s : left);
		now = src->now(src->arg);
		t = src->temperature(src->arg);
		if (isnan(t)) {
			out->outcome = THERMAL_UNKNOWN;
			break;
		}
		out->end_c = t;
		double headroom = p->slowdown_c - t;
		if (headroom >= p->continue_headroom_c) {
			out->outcome = THERMAL_COOLED;
			break;
		}
		if (t <= coolest - 1) {
			coolest = t;
			coolest_at = now;
		}
		if (p->mode == RP_THERMAL_AUTO && headroom >= p->wait_headroom_c &&
		    now - coolest_at >= p->plateau_s) {
			out->outcome = THERMAL_STOPPED_COOLING;
			break;
		}
	}
	out->waited_s = now - start;
}
