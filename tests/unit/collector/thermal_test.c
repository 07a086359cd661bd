/* tests/unit/collector/thermal_test.c - the thermal guard against a scripted source: the
 * temperatures it reads, a clock that only moves when the guard sleeps, and a sleep that
 * does not sleep. Slowdown temperature 90 C; wait below 10 C of headroom, go on at 20. */
#include <criterion/criterion.h>
#include <math.h>

#include "collector/thermal.h"

struct script {
	const double *temps;         /* one per read; the last repeats */
	size_t count, next;
	double clock, slept;
	unsigned sleeps;
};

static double script_temperature(void *arg)
{
	struct script *s = arg;
	double t = s->temps[s->next < s->count ? s->next : s->count - 1];
	s->next++;
	return t;
}

static double script_now(void *arg) { return ((struct script *)arg)->clock; }

static void script_sleep(void *arg, double seconds)
{
	struct script *s = arg;
	s->clock += seconds;
	s->slept += seconds;
	s->sleeps++;
}

static struct thermal_wait guard(enum rp_thermal_control mode, struct script *s)
{
	struct thermal_params p = { mode, 90, 10, 20, 30, THERMAL_POLL_S, THERMAL_PLATEAU_S };
	struct thermal_source src = { script_temperature, script_now, script_sleep, s };
	s->clock = 1000; /* any origin: only differences count */
	struct thermal_wait w;
	thermal_guard(&p, &src, &w);
	return w;
}

Test(thermal, a_cool_gpu_is_read_once_and_never_waits)
{
	double temps[] = { 60 };
	struct script s = { temps, 1, 0, 0, 0, 0 };
	struct thermal_wait w = guard(RP_THERMAL_AUTO, &s);
	cr_assert_eq(w.outcome, THERMAL_COOL);
	cr_assert_str_eq(thermal_outcome_name(w.outcome), "cool");
	cr_assert_eq(s.next, 1);
	cr_assert_eq(s.sleeps, 0);
	cr_assert_float_eq(w.waited_s, 0, 0);
	cr_assert_float_eq(w.start_c, 60, 0);
	cr_assert_float_eq(w.slowdown_c, 90, 0);
}

Test(thermal, exactly_the_wait_headroom_does_not_wait)
{
	double temps[] = { 80 };
	struct script s = { temps, 1, 0, 0, 0, 0 };
	cr_assert_eq(guard(RP_THERMAL_MANUAL, &s).outcome, THERMAL_COOL);
}

Test(thermal, a_hot_gpu_waits_until_the_continue_headroom)
{
	/* 85 C: 5 C of headroom. It cools a degree per read; 70 C (20 C) lets it go on. */
	double temps[] = { 85, 84, 83, 82, 81, 80, 79, 78, 77, 76, 75, 74, 73, 72, 71, 70, 69 };
	struct script s = { temps, sizeof(temps) / sizeof(*temps), 0, 0, 0, 0 };
	struct thermal_wait w = guard(RP_THERMAL_MANUAL, &s);
	cr_assert_eq(w.outcome, THERMAL_COOLED);
	cr_assert_str_eq(thermal_outcome_name(w.outcome), "cooled");
	cr_assert_eq(s.sleeps, 15);
	cr_assert_float_eq(w.waited_s, 15 * THERMAL_POLL_S, 1e-9);
	cr_assert_float_eq(s.slept, w.waited_s, 1e-9);
	cr_assert_float_eq(w.start_c, 85, 0);
	cr_assert_float_eq(w.end_c, 70, 0);
}

Test(thermal, hysteresis_keeps_waiting_between_the_thresholds)
{
	/* Back above the wait headroom (78 C: 12 C) is not enough in manual mode. */
	double temps[] = { 85, 78, 78, 78, 70 };
	struct script s = { temps, 5, 0, 0, 0, 0 };
	struct thermal_wait w = guard(RP_THERMAL_MANUAL, &s);
	cr_assert_eq(w.outcome, THERMAL_COOLED);
	cr_assert_eq(s.sleeps, 4);
}

Test(thermal, manual_waits_for_the_timeout_when_the_gpu_stays_warm)
{
	double temps[] = { 85, 75 };  /* 15 C of headroom for good: never the 20 asked for */
	struct script s = { temps, 2, 0, 0, 0, 0 };
	struct thermal_wait w = guard(RP_THERMAL_MANUAL, &s);
	cr_assert_eq(w.outcome, THERMAL_TIMEOUT);
	cr_assert_str_eq(thermal_outcome_name(w.outcome), "timeout");
	cr_assert_float_eq(w.waited_s, 30, 1e-9);
	cr_assert_eq(s.sleeps, 60, "polled every half second");
	cr_assert_float_eq(w.end_c, 75, 0);
}

Test(thermal, auto_goes_on_once_the_gpu_has_stopped_cooling)
{
	double temps[] = { 85, 80, 77, 75 };  /* then 75 C (15 C of headroom) for good */
	struct script s = { temps, 4, 0, 0, 0, 0 };
	struct thermal_wait w = guard(RP_THERMAL_AUTO, &s);
	cr_assert_eq(w.outcome, THERMAL_STOPPED_COOLING);
	cr_assert_str_eq(thermal_outcome_name(w.outcome), "stopped_cooling");
	/* 75 C was first read after the third sleep (1.5 s); ten seconds without a degree's
	 * progress after that. */
	cr_assert_float_eq(w.waited_s, 1.5 + THERMAL_PLATEAU_S, 1e-9);
	cr_assert_float_eq(w.end_c, 75, 0);
}

Test(thermal, auto_never_goes_on_below_the_wait_headroom)
{
	double temps[] = { 85, 84 };  /* stuck at 6 C of headroom: too hot to measure */
	struct script s = { temps, 2, 0, 0, 0, 0 };
	struct thermal_wait w = guard(RP_THERMAL_AUTO, &s);
	cr_assert_eq(w.outcome, THERMAL_TIMEOUT);
	cr_assert_float_eq(w.waited_s, 30, 1e-9);
}

Test(thermal, a_zero_timeout_records_the_heat_without_waiting)
{
	double temps[] = { 88 };
	struct script s = { temps, 1, 0, 0, 0, 0 };
	struct thermal_params p = { RP_THERMAL_MANUAL, 90, 10, 20, 0, THERMAL_POLL_S,
				    THERMAL_PLATEAU_S };
	struct thermal_source src = { script_temperature, script_now, script_sleep, &s };
	struct thermal_wait w;
	thermal_guard(&p, &src, &w);
	cr_assert_eq(w.outcome, THERMAL_TIMEOUT);
	cr_assert_eq(s.sleeps, 0);
	cr_assert_float_eq(w.waited_s, 0, 0);
}

Test(thermal, off_reads_nothing_and_unknown_temperatures_never_wait)
{
	double temps[] = { 89 };
	struct script s = { temps, 1, 0, 0, 0, 0 };
	struct thermal_wait w = guard(RP_THERMAL_OFF, &s);
	cr_assert_eq(w.outcome, THERMAL_OFF);
	cr_assert_eq(s.next, 0);
	cr_assert_str_eq(thermal_outcome_name(w.outcome), "off");

	double unknown[] = { NAN };
	struct script u = { unknown, 1, 0, 0, 0, 0 };
	w = guard(RP_THERMAL_AUTO, &u);
	cr_assert_eq(w.outcome, THERMAL_UNKNOWN);
	cr_assert_eq(u.sleeps, 0);

	/* No slowdown temperature (NVML without the threshold): no basis for a wait. */
	struct script h = { temps, 1, 0, 0, 0, 0 };
	struct thermal_params p = { RP_THERMAL_AUTO, NAN, 10, 20, 30, THERMAL_POLL_S,
				    THERMAL_PLATEAU_S };
	struct thermal_source src = { script_temperature, script_now, script_sleep, &h };
	thermal_guard(&p, &src, &w);
	cr_assert_eq(w.outcome, THERMAL_UNKNOWN);
	cr_assert_str_eq(thermal_outcome_name(w.outcome), "unknown");
	cr_assert_eq(h.sleeps, 0);
}

Test(thermal, losing_the_temperature_while_waiting_ends_the_wait)
{
	double temps[] = { 85, 84, NAN };
	struct script s = { temps, 3, 0, 0, 0, 0 };
	struct thermal_wait w = guard(RP_THERMAL_MANUAL, &s);
	cr_assert_eq(w.outcome, THERMAL_UNKNOWN);
	cr_assert_float_eq(w.waited_s, 2 * THERMAL_POLL_S, 1e-9);
	cr_assert_float_eq(w.end_c, 84, 0);
}
