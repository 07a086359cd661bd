/* tests/unit/inject/fake_libcuda.c - a stand-in CUDA driver under the driver's SONAME
 * (libcuda.so.1), for the control API's tests on a machine without one: loaded first by
 * its path, it is what dlopen("libcuda.so.1") then finds. It answers only what the
 * library asks before cuInit: the driver's version, and that it is not initialised. */
#define EXPORT __attribute__((visibility("default")))

EXPORT int cuDriverGetVersion(int *version);
EXPORT int cuDeviceGetCount(int *count);

int cuDriverGetVersion(int *version)
{
	*version = 13000;
	return 0;
}

/* CUDA_ERROR_NOT_INITIALIZED: cuInit has not been called (control.c's late-attach test). */
int cuDeviceGetCount(int *count)
{
	*count = 0;
	return 3;
}
