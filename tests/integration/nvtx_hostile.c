/* tests/integration/nvtx_hostile.c - NVTX used as an attacker would: names of any bytes
 * up to 1 MB, nesting 10 000 deep, 100 000 distinct ranges and registered strings, 5M
 * registrations of one string, 100 000 domains created and destroyed, threads exiting
 * in every order with key destructors that call NVTX after the bridge's state is gone.
 * Prints one line per phase: seconds and peak RSS so far. Run plain, preloaded with
 * librangeprof.so, and with the probe (NVTX_INJECTION64_PATH=libnvtx_probe.so), where it
 * also times the check every kernel launch makes (snapshot + filter) in each state:
 * that cost must not grow with depth, distinct names or domains. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <nvtx3/nvToolsExt.h>

typedef double (*check_fn)(int);
static check_fn launch_check; /* the probe's: ns per launch check, over n checks */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double phase_start;

static void phase(const char *name)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%-34s %7.3f s  peak RSS %6.1f MB", name, now() - phase_start,
	       (double)ru.ru_maxrss / 1024.0);
	if (launch_check)
		printf("  launch check %6.1f ns", launch_check(200000));
	printf("\n");
	fflush(stdout);
	phase_start = now();
}

static pthread_key_t late_key;

static void late_nvtx(void *arg)
{
	(void)arg;
	nvtxRangePop();
	nvtxRangePushA("after teardown");
	nvtxRangePop();
	nvtxDomainRangePop(nvtxDomainCreateA("late"));
}

static void *worker(void *arg)
{
	long id = (long)arg;
	char name[32];
	snprintf(name, sizeof(name), "worker %ld", id);
	for (long i = 0; i <= id % 4; i++)
		nvtxRangePushA(name);
	pthread_setspecific(late_key, (void *)1);
	struct timespec t = { 0, (id * 7919 % 1000) * 1000 };
	nanosleep(&t, NULL);
	return NULL;
}

int main(void)
{
	const char *path = getenv("NVTX_INJECTION64_PATH");
	void *probe = path && strstr(path, "nvtx_probe") ? dlopen(path, RTLD_NOW) : NULL;
	if (probe)
		launch_check = (check_fn)dlsym(probe, "nvtx_probe_launch_check");
	phase_start = now();
	nvtxRangePushA("base");
	phase("start");

	size_t n = 1 << 20;
	char *big = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(1 + (i * 7919) % 255);
	big[n] = '\0';
	const char *odd[] = { "quote\" back\\slash", "ctl \x01\x1b[2J\n", "bad \xff\xc0\xaf\xed\xa0\x80",
			      big };
	for (int i = 0; i < 1000; i++) {
		nvtxRangePushA(odd[i % 4]);
		nvtxRangePop();
	}
	nvtxDomainHandle_t d = nvtxDomainCreateA(big);
	nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, big);
	nvtxEventAttributes_t a = { 0 };
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = s;
	nvtxDomainRangePushEx(d, &a);
	nvtxRangePushA(big);
	phase("names of any bytes, 1 MB");
	nvtxRangePop();
	nvtxDomainRangePop(d);

	for (int i = 0; i < 10000; i++)
		nvtxRangePushA(odd[i % 3]);
	phase("nesting 10 000 deep");
	for (int i = 0; i < 10000; i++)
		nvtxRangePop();

	char name[64];
	for (int i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "range %d", i);
		nvtxRangePushA(name);
		nvtxRangePop();
	}
	phase("100 000 distinct ranges");
	for (int i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "string %d", i);
		nvtxDomainRegisterStringA(d, name);
	}
	phase("100 000 distinct registered strings");
	for (int i = 0; i < 5000000; i++)
		nvtxDomainRegisterStringA(d, "step");
	phase("5M registrations of one string");
	for (int i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "domain %d", i);
		nvtxDomainDestroy(nvtxDomainCreateA(name));
	}
	phase("100 000 domains created, destroyed");
	for (int i = 0; i < 100000; i++)
		nvtxDomainDestroy(nvtxDomainCreateA("same"));
	phase("100 000 x one domain");
	nvtxRangeId_t ids[1000];
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "epoch %d", i);
		ids[i] = nvtxRangeStartA(name);
	}
	phase("1000 start/end ranges open");
	for (int i = 999; i >= 0; i -= 2)
		nvtxRangeEnd(ids[i]);
	for (int i = 0; i < 1000; i += 2)
		nvtxRangeEnd(ids[i]);

	pthread_key_create(&late_key, late_nvtx);
	for (int round = 0; round < 3; round++) {
		pthread_t t[64];
		for (long i = 0; i < 64; i++)
			pthread_create(&t[i], NULL, worker, (void *)i);
		for (int i = 0; i < 64; i++) /* joined forwards, backwards, odd-even */
			pthread_join(t[round == 0 ? i : round == 1 ? 63 - i : (i * 2) % 64 + (i >= 32)],
				     NULL);
	}
	phase("192 threads exiting in any order");
	nvtxRangePop();
	free(big);
	printf("nvtx_hostile: done\n");
	return 0;
}
