/* collector/thermal.h - the thermal guard of --thermal-control (Nsight Python's
 * thermal_mode): before a launch's runs, wait while the GPU is too close to its slowdown
 * temperature. No GPU and no clock of its own: the temperature, the clock and the sleep
 * come from a thermal_source, NVML and the real clock in production
 * (collector_nvml_thermal_guard in collector/device.h), a script in the tests. */
#ifndef COLLECTOR_THERMAL_H
#define COLLECTOR_THERMAL_H

#include "common/options.h"

struct thermal_source {
	double (*temperature)(void *arg);    /* degrees C now, NaN when unknown */
	double (*now)(void *arg);            /* monotonic seconds */
	void (*sleep)(void *arg, double seconds);
	void *arg;
};

/* Seconds between temperature reads while waiting, and how long the temperature must
 * have stopped falling (no 1 degree drop) before --thermal-control auto goes on. */
#define THERMAL_POLL_S 0.5
#define THERMAL_PLATEAU_S 10.0

struct thermal_params {
	enum rp_thermal_control mode;
	double slowdown_c;           /* the device's slowdown temperature, NaN when unknown */
	double wait_headroom_c;      /* wait while slowdown - temperature < this */
	double continue_headroom_c;  /* go on once slowdown - temperature >= this */
	double timeout_s;            /* longest wait */
	double poll_s, plateau_s;    /* THERMAL_POLL_S, THERMAL_PLATEAU_S */
};

enum thermal_outcome {
	THERMAL_OFF,                 /* "off": --thermal-control off, nothing read */
	THERMAL_UNKNOWN,             /* "unknown": no temperature or no slowdown temperature */
	THERMAL_COOL,                /* "cool": enough headroom, no wait */
	THERMAL_COOLED,              /* "cooled": waited until the continue headroom */
	THERMAL_STOPPED_COOLING,     /* "stopped_cooling": auto, waited until it stopped falling */
	THERMAL_TIMEOUT,             /* "timeout": waited --thermal-timeout, measured anyway */
};

struct thermal_wait {
	enum thermal_outcome outcome;
	double waited_s;             /* 0 unless it waited */
	double start_c, end_c;       /* temperature when the guard began and when it let go */
	double slowdown_c;
};

/* Checks the temperature and, when the headroom is below the wait threshold, reads it
 * every poll_s until it is back to the continue threshold (auto: or has stopped falling
 * for plateau_s with at least the wait headroom), or timeout_s has passed. Cannot fail:
 * an unknown temperature is outcome THERMAL_UNKNOWN, never a wait. Called by inject/
 * with the device's turn held, before a launch's runs. */
void thermal_guard(const struct thermal_params *p, const struct thermal_source *src,
		   struct thermal_wait *out);

/* The outcome as the summary's "thermal" member names it. */
const char *thermal_outcome_name(enum thermal_outcome o);

#endif
