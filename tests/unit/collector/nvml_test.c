/* tests/unit/collector/nvml_test.c - what each run reads from NVML (collector/device.c),
 * against the stand-in NVML: devices found by UUID whatever their NVML index, the handle
 * looked up once, clocks-event reasons under either name, memory clock and power in SI
 * units, unknown fields and exactly one warning per device when NVML fails, and the
 * thermal guard reading the slowdown temperature. Each test runs in its own process
 * (Criterion), so each starts with a fresh NVML state. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "collector/device.h"
#include "collector/stats.h"
#include "collector/thermal.h"

static char err[512];
static void *fake;
static int (*add_device)(const char *);
static void (*script_temperatures)(int, const unsigned *, size_t);
static void (*set)(int, const char *, unsigned long long);
static void (*fail)(const char *, int);
static unsigned (*calls)(const char *);

/* Loads the stand-in named by variable (the same copy collector_nvml_open will use) and
 * its scripting functions. */
static void load(const char *variable)
{
	const char *path = getenv(variable);
	cr_assert_not_null(path, "%s is set by meson", variable);
	fake = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(fake, "%s", dlerror());
	add_device = (int (*)(const char *))dlsym(fake, "fake_nvml_add_device");
	script_temperatures = (void (*)(int, const unsigned *, size_t))dlsym(
		fake, "fake_nvml_script_temperatures");
	set = (void (*)(int, const char *, unsigned long long))dlsym(fake, "fake_nvml_set");
	fail = (void (*)(const char *, int))dlsym(fake, "fake_nvml_fail");
	calls = (unsigned (*)(const char *))dlsym(fake, "fake_nvml_calls");
	cr_assert(add_device && script_temperatures && set && fail && calls);
}

static void open_nvml(const char *variable)
{
	cr_assert_eq(collector_nvml_open(getenv(variable), err, sizeof(err)), 0, "%s", err);
}

static void setup(void)
{
	load("FAKE_NVML");
}

TestSuite(nvml, .init = setup);

Test(nvml, devices_are_found_by_uuid_not_by_index)
{
	/* NVML counts the GPUs in its own order; CUDA_VISIBLE_DEVICES=1,0 makes CUDA's
	 * device 0 NVML's device 1. The UUID names the same GPU in both. */
	int a = add_device("GPU-aaaaaaaa-0000-0000-0000-000000000000");
	int b = add_device("GPU-bbbbbbbb-0000-0000-0000-000000000000");
	script_temperatures(a, (unsigned[]){ 35 }, 1);
	script_temperatures(b, (unsigned[]){ 72 }, 1);
	set(a, "power_mw", 70000);
	set(b, "power_mw", 650000);
	open_nvml("FAKE_NVML");
	cr_assert_float_eq(collector_nvml_temperature("GPU-bbbbbbbb-0000-0000-0000-000000000000"),
			   72, 0);
	cr_assert_float_eq(collector_nvml_temperature("GPU-aaaaaaaa-0000-0000-0000-000000000000"),
			   35, 0);
	struct collector_nvml_sample s;
	cr_assert_eq(collector_nvml_sample("GPU-bbbbbbbb-0000-0000-0000-000000000000",
					   COLLECTOR_NVML_AFTER, &s, err, sizeof(err)), 0);
	cr_assert_float_eq(s.power_w, 650, 1e-9);
	cr_assert_float_eq(s.temperature_c, 72, 0);
	/* Looked up once per device, however often sampled. */
	for (int i = 0; i < 10; i++)
		collector_nvml_sample("GPU-aaaaaaaa-0000-0000-0000-000000000000",
				      COLLECTOR_NVML_BEFORE, &s, err, sizeof(err));
	cr_assert_eq(calls("nvmlDeviceGetHandleByUUID"), 2);
}

Test(nvml, a_sample_before_a_run_has_temperature_reasons_and_both_clocks)
{
	int d = add_device("GPU-11111111-2222-3333-4444-555555555555");
	script_temperatures(d, (unsigned[]){ 55, 58 }, 2);
	set(d, "reasons", STATS_THROTTLE_GPU_IDLE | STATS_THROTTLE_SW_POWER_CAP);
	set(d, "mem_mhz", 2619);
	set(d, "sm_mhz", 1755);
	open_nvml("FAKE_NVML");
	struct collector_nvml_sample s;
	cr_assert_eq(collector_nvml_sample("GPU-11111111-2222-3333-4444-555555555555",
					   COLLECTOR_NVML_BEFORE, &s, err, sizeof(err)), 0);
	cr_assert_float_eq(s.temperature_c, 55, 0);
	cr_assert_eq(s.throttle, STATS_THROTTLE_GPU_IDLE | STATS_THROTTLE_SW_POWER_CAP);
	cr_assert_float_eq(s.memory_clock_hz, 2619e6, 0);
	cr_assert_float_eq(s.sm_clock_hz, 1755e6, 0);
	cr_assert(isnan(s.power_w), "power is read after the runs only");
	cr_assert_eq(collector_nvml_sample("GPU-11111111-2222-3333-4444-555555555555",
					   COLLECTOR_NVML_AFTER, &s, err, sizeof(err)), 0);
	cr_assert_float_eq(s.temperature_c, 58, 0);
	cr_assert(isnan(s.memory_clock_hz));
	cr_assert(isnan(s.sm_clock_hz), "the SM clock is read before the runs only");
	cr_assert_float_eq(s.power_w, 123.456, 1e-9);
	/* A handful of queries per sample: four before, three after, none repeated. */
	cr_assert_eq(calls("nvmlDeviceGetTemperature"), 2);
	cr_assert_eq(calls("nvmlDeviceGetCurrentClocksEventReasons"), 2);
	cr_assert_eq(calls("nvmlDeviceGetClockInfo"), 2);
	cr_assert_eq(calls("nvmlDeviceGetPowerUsage"), 1);
	cr_assert_eq(calls("nvmlDeviceGetCurrentClocksThrottleReasons"), 0);
}

Test(nvml, drivers_before_535_give_the_reasons_under_the_throttle_name)
{
	load("FAKE_NVML_OLD");
	int d = add_device("GPU-0ld");
	set(d, "reasons", STATS_THROTTLE_HW_SLOWDOWN);
	open_nvml("FAKE_NVML_OLD");
	cr_assert_null(dlsym(fake, "nvmlDeviceGetCurrentClocksEventReasons"));
	struct collector_nvml_sample s;
	cr_assert_eq(collector_nvml_sample("GPU-0ld", COLLECTOR_NVML_BEFORE, &s, err,
					   sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.throttle, STATS_THROTTLE_HW_SLOWDOWN);
	cr_assert_eq(calls("nvmlDeviceGetCurrentClocksThrottleReasons"), 1);
}

Test(nvml, an_nvml_error_gives_unknown_fields_and_one_warning_per_device)
{
	int d = add_device("GPU-e");
	add_device("GPU-f");
	set(d, "reasons", STATS_THROTTLE_SW_THERMAL);
	fail("nvmlDeviceGetPowerUsage", 3 /* NVML_ERROR_NOT_SUPPORTED */);
	fail("nvmlDeviceGetTemperature", 999);
	open_nvml("FAKE_NVML");
	struct collector_nvml_sample s;
	cr_assert_eq(collector_nvml_sample("GPU-e", COLLECTOR_NVML_AFTER, &s, err, sizeof(err)), -1);
	cr_assert_str_eq(err, "nvmlDeviceGetTemperature(GPU-e): Unknown Error");
	cr_assert(isnan(s.temperature_c));
	cr_assert(isnan(s.power_w));
	cr_assert_eq(s.throttle, STATS_THROTTLE_SW_THERMAL, "what NVML could tell is kept");
	for (int i = 0; i < 5; i++) {
		err[0] = '\0';
		cr_assert_eq(collector_nvml_sample("GPU-e", COLLECTOR_NVML_AFTER, &s, err,
						   sizeof(err)), 0, "said once: %s", err);
		cr_assert(isnan(s.temperature_c));
	}
	/* Another device is another warning. */
	cr_assert_eq(collector_nvml_sample("GPU-f", COLLECTOR_NVML_BEFORE, &s, err, sizeof(err)), -1);
	cr_assert(isnan(collector_nvml_temperature("GPU-e")));
}

Test(nvml, a_device_nvml_does_not_know_is_said_once)
{
	add_device("GPU-known");
	open_nvml("FAKE_NVML");
	struct collector_nvml_sample s;
	/* A MIG instance's UUID, or any GPU this NVML does not list. */
	cr_assert_eq(collector_nvml_sample("GPU-unknown", COLLECTOR_NVML_BEFORE, &s, err,
					   sizeof(err)), -1);
	cr_assert_str_eq(err, "nvmlDeviceGetHandleByUUID(GPU-unknown): Not Found");
	cr_assert(isnan(s.temperature_c) && isnan(s.memory_clock_hz));
	cr_assert_eq(s.throttle, STATS_THROTTLE_UNKNOWN);
	cr_assert_eq(collector_nvml_sample("GPU-unknown", COLLECTOR_NVML_BEFORE, &s, err,
					   sizeof(err)), 0);
	cr_assert_eq(calls("nvmlDeviceGetHandleByUUID"), 1);
}

Test(nvml, without_nvml_everything_is_unknown_and_nothing_fails)
{
	/* collector_nvml_open was never called (no libnvidia-ml.so.1): its failure was
	 * reported where it happened; samples are all unknown, without a second warning. */
	struct collector_nvml_sample s;
	cr_assert_eq(collector_nvml_sample("GPU-x", COLLECTOR_NVML_BEFORE, &s, err, sizeof(err)), 0);
	cr_assert(isnan(s.temperature_c) && isnan(s.memory_clock_hz) && isnan(s.power_w));
	cr_assert_eq(s.throttle, STATS_THROTTLE_UNKNOWN);
	cr_assert(isnan(collector_nvml_slowdown_temperature("GPU-x")));
	struct thermal_params p = { RP_THERMAL_AUTO, NAN, 10, 20, 30, THERMAL_POLL_S,
				    THERMAL_PLATEAU_S };
	struct thermal_wait w;
	collector_nvml_thermal_guard("GPU-x", &p, &w);
	cr_assert_eq(w.outcome, THERMAL_UNKNOWN);
}

Test(nvml, the_guard_measures_headroom_to_the_slowdown_temperature)
{
	int d = add_device("GPU-g");
	set(d, "slowdown", 90);
	script_temperatures(d, (unsigned[]){ 79 }, 1);
	open_nvml("FAKE_NVML");
	cr_assert_float_eq(collector_nvml_slowdown_temperature("GPU-g"), 90, 0);
	struct thermal_params p = { RP_THERMAL_MANUAL, NAN, 10, 20, 30, THERMAL_POLL_S,
				    THERMAL_PLATEAU_S };
	struct thermal_wait w;
	collector_nvml_thermal_guard("GPU-g", &p, &w);
	cr_assert_eq(w.outcome, THERMAL_COOL, "11 C of headroom");
	cr_assert_float_eq(w.slowdown_c, 90, 0);
	cr_assert_float_eq(w.start_c, 79, 0);
	/* One degree hotter, with no time to wait: a timeout, recorded, without sleeping. */
	script_temperatures(d, (unsigned[]){ 81 }, 1);
	p.timeout_s = 0;
	collector_nvml_thermal_guard("GPU-g", &p, &w);
	cr_assert_eq(w.outcome, THERMAL_TIMEOUT);
	cr_assert_float_eq(w.waited_s, 0, 0);
	p.mode = RP_THERMAL_OFF;
	unsigned before = calls("nvmlDeviceGetTemperature");
	collector_nvml_thermal_guard("GPU-g", &p, &w);
	cr_assert_eq(w.outcome, THERMAL_OFF);
	cr_assert_eq(calls("nvmlDeviceGetTemperature"), before, "off reads nothing");
}

/* The stand-in refuses a key it does not know: a misspelt one would leave the default in
 * place and the test would pass on the default (fake_nvml.c aborts, naming the key). */
Test(nvml, the_stand_in_refuses_a_misspelt_key, .signal = SIGABRT)
{
	int d = add_device("GPU-typo");
	set(d, "power_w", 70);
}
