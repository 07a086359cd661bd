/* tests/unit/collector/nvml_threads_test.c - collector/device.c's NVML state is safe under
 * its own lock, whoever calls it (issue 19: it relied on inject/'s replay lock). Threads
 * released together open NVML, meet new devices and sample them, against the stand-in
 * NVML (fake_nvml.c) with its handle lookups slowed down so that two threads finding the
 * same new device overlap: each device is looked up once, every sample gets its own
 * device's values, and a failing query is reported once per device, by one thread. Each
 * test runs in its own process (Criterion), so each starts with a fresh NVML state. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector/device.h"

#define DEVICES 8                    /* the stand-in's most */
#define THREADS_PER_DEVICE 3
#define THREADS (DEVICES * THREADS_PER_DEVICE)
#define SAMPLES 40

static void *fake;
static int (*add_device)(const char *);
static void (*script_temperatures)(int, const unsigned *, size_t);
static void (*set)(int, const char *, unsigned long long);
static void (*fail)(const char *, int);
static unsigned (*calls)(const char *);
static void (*slow_lookups)(unsigned);

static pthread_barrier_t start;
static char uuids[DEVICES][64];

static void setup(void)
{
	const char *path = getenv("FAKE_NVML");
	cr_assert_not_null(path, "FAKE_NVML is set by meson");
	fake = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(fake, "%s", dlerror());
	add_device = (int (*)(const char *))dlsym(fake, "fake_nvml_add_device");
	script_temperatures = (void (*)(int, const unsigned *, size_t))dlsym(
		fake, "fake_nvml_script_temperatures");
	set = (void (*)(int, const char *, unsigned long long))dlsym(fake, "fake_nvml_set");
	fail = (void (*)(const char *, int))dlsym(fake, "fake_nvml_fail");
	calls = (unsigned (*)(const char *))dlsym(fake, "fake_nvml_calls");
	slow_lookups = (void (*)(unsigned))dlsym(fake, "fake_nvml_slow_lookups");
	cr_assert(add_device && script_temperatures && set && fail && calls && slow_lookups);
	/* Devices 0..7 at 40..47 C and 1400..1470 MHz: a sample that got another device's
	 * handle, or none, shows it. */
	for (int d = 0; d < DEVICES; d++) {
		snprintf(uuids[d], sizeof(uuids[d]), "GPU-%08d-0000-0000-0000-000000000000", d);
		cr_assert_eq(add_device(uuids[d]), d);
		script_temperatures(d, (unsigned[]){ 40u + (unsigned)d }, 1);
		set(d, "sm_mhz", 1400u + 10u * (unsigned)d);
	}
	/* 2 ms per lookup: threads that meet a new device together are all inside it. */
	slow_lookups(2000);
	cr_assert_eq(pthread_barrier_init(&start, NULL, THREADS), 0);
}

static void teardown(void)
{
	pthread_barrier_destroy(&start);
}

TestSuite(nvml_threads, .init = setup, .fini = teardown);

struct sampler {
	int device;
	enum collector_nvml_when when;
	bool open_first;             /* call collector_nvml_open too, as each thread might */
	int wrong;                   /* samples with another device's values, or none */
	int warnings;                /* -1 returns: failures this thread was told to say */
	int open_failures;
	char err[256];
};

static void *sample_device(void *arg)
{
	struct sampler *s = arg;
	pthread_barrier_wait(&start);
	if (s->open_first && collector_nvml_open(getenv("FAKE_NVML"), s->err, sizeof(s->err)))
		s->open_failures++;
	for (int i = 0; i < SAMPLES; i++) {
		struct collector_nvml_sample out;
		char err[256] = "";
		if (collector_nvml_sample(uuids[s->device], s->when, &out, err, sizeof(err)))
			s->warnings++;
		if (out.temperature_c != 40 + s->device ||
		    (s->when == COLLECTOR_NVML_BEFORE && out.sm_clock_hz != (1400 + 10 * s->device) * 1e6))
			s->wrong++;
	}
	return NULL;
}

/* Runs THREADS samplers, THREADS_PER_DEVICE on each device, released together. */
static void run_samplers(struct sampler *samplers)
{
	pthread_t threads[THREADS];
	for (int t = 0; t < THREADS; t++)
		cr_assert_eq(pthread_create(&threads[t], NULL, sample_device, &samplers[t]), 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(threads[t], NULL);
}

Test(nvml_threads, threads_meeting_new_devices_look_each_up_once_and_get_its_values)
{
	char err[256];
	cr_assert_eq(collector_nvml_open(getenv("FAKE_NVML"), err, sizeof(err)), 0, "%s", err);
	struct sampler samplers[THREADS];
	for (int t = 0; t < THREADS; t++)
		samplers[t] = (struct sampler){ .device = t % DEVICES, .when = COLLECTOR_NVML_BEFORE };
	run_samplers(samplers);
	for (int t = 0; t < THREADS; t++) {
		cr_assert_eq(samplers[t].wrong, 0, "thread %d (device %d): %d of %d samples wrong",
			     t, samplers[t].device, samplers[t].wrong, SAMPLES);
		cr_assert_eq(samplers[t].warnings, 0, "thread %d", t);
	}
	cr_assert_eq(calls("nvmlDeviceGetHandleByUUID"), DEVICES,
		     "each device looked up once, not once per thread that met it first");
	cr_assert_eq(calls("nvmlDeviceGetTemperature"), THREADS * SAMPLES);
}

Test(nvml_threads, threads_opening_nvml_together_initialise_it_once)
{
	struct sampler samplers[THREADS];
	for (int t = 0; t < THREADS; t++)
		samplers[t] = (struct sampler){ .device = t % DEVICES, .when = COLLECTOR_NVML_AFTER,
						.open_first = true };
	run_samplers(samplers);
	for (int t = 0; t < THREADS; t++) {
		cr_assert_eq(samplers[t].open_failures, 0, "thread %d: %s", t, samplers[t].err);
		cr_assert_eq(samplers[t].wrong, 0, "thread %d: %d samples wrong", t,
			     samplers[t].wrong);
	}
	cr_assert_eq(calls("nvmlInit_v2"), 1);
	cr_assert_eq(calls("nvmlDeviceGetHandleByUUID"), DEVICES);
}

Test(nvml_threads, a_failing_query_is_said_once_per_device_by_one_thread)
{
	fail("nvmlDeviceGetPowerUsage", 3 /* NVML_ERROR_NOT_SUPPORTED */);
	char err[256];
	cr_assert_eq(collector_nvml_open(getenv("FAKE_NVML"), err, sizeof(err)), 0, "%s", err);
	struct sampler samplers[THREADS];
	for (int t = 0; t < THREADS; t++)
		samplers[t] = (struct sampler){ .device = t % DEVICES, .when = COLLECTOR_NVML_AFTER };
	run_samplers(samplers);
	int per_device[DEVICES] = { 0 };
	for (int t = 0; t < THREADS; t++) {
		per_device[samplers[t].device] += samplers[t].warnings;
		cr_assert_eq(samplers[t].wrong, 0, "the temperature is read all the same");
	}
	for (int d = 0; d < DEVICES; d++)
		cr_assert_eq(per_device[d], 1, "device %d: %d warnings from %d threads", d,
			     per_device[d], THREADS_PER_DEVICE);
}
