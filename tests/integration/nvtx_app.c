/* tests/integration/nvtx_app.c - real NVTX3 calls from several threads and domains. With
 * NVTX_INJECTION64_PATH naming the probe it checks, on each thread, that the bridge saw
 * exactly its ranges; with any other injection (librangeprof.so) it only runs, so that
 * the same output and exit status can be compared. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <nvtx3/nvToolsExt.h>

typedef const char *(*seen_fn)(void);
static seen_fn seen;
static nvtxDomainHandle_t domain;
static nvtxRangeId_t epoch;
static int failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void expect(const char *want)
{
	if (!seen)
		return;
	const char *got = seen();
	if (strcmp(got, want)) {
		pthread_mutex_lock(&lock);
		fprintf(stderr, "expected '%s', bridge saw '%s'\n", want, got);
		failures++;
		pthread_mutex_unlock(&lock);
	}
}

static void *worker(void *arg)
{
	long id = (long)arg;
	char name[32], want[256];
	snprintf(name, sizeof(name), "worker%ld", id);
	for (int i = 0; i < 1000; i++) {
		nvtxRangePushA(name);
		nvtxEventAttributes_t a = { 0 };
		a.version = NVTX_VERSION;
		a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
		a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
		a.message.registered = nvtxDomainRegisterStringA(domain, "step");
		a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
		a.payload.iValue = i;
		nvtxDomainRangePushEx(domain, &a);
		nvtxRangePushW(L"inner\u00e9");
		snprintf(want, sizeof(want), "%s/lib@step#/inner\xc3\xa9|epoch", name);
		expect(want);
		nvtxRangePop();
		nvtxDomainRangePop(domain);
		nvtxRangePop();
	}
	return NULL;
}

int main(void)
{
	const char *path = getenv("NVTX_INJECTION64_PATH");
	void *probe = path && strstr(path, "nvtx_probe") ? dlopen(path, RTLD_NOW) : NULL;
	if (probe)
		seen = (seen_fn)dlsym(probe, "nvtx_probe_seen");
	domain = nvtxDomainCreateA("lib");
	epoch = nvtxRangeStartA("epoch");
	nvtxRangePushA("main");
	expect("main|epoch");
	pthread_t t[4];
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	expect("main|epoch");
	nvtxRangeEnd(epoch);
	nvtxRangePop();
	expect("");
	printf("nvtx_app: %s, %d failures\n", seen ? "checked" : "ran", failures);
	return failures ? 1 : 0;
}
