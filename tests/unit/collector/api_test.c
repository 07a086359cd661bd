/* tests/unit/collector/api_test.c - the library-loading messages: they name the library,
 * where it was looked for, and the loader's own reason (never "(null)"). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <string.h>

#include "collector/api.h"

Test(api, a_missing_driver_is_reported_with_the_loaders_reason)
{
	void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (driver) {
		dlclose(driver);
		cr_skip_test("a CUDA driver is installed here");
	}
	char err[1024] = "";
	cr_assert_neq(collector_api_load("/nonexistent/lib64", err, sizeof(err)), 0);
	cr_assert_null(strstr(err, "(null)"), "%s", err);
	cr_assert_null(strstr(err, "/nonexistent"), "the driver is not looked for there: %s", err);
	cr_assert(strstr(err, "cannot load libcuda.so.1 (the NVIDIA driver; looked on the library "
			      "path): libcuda.so.1: cannot open shared object file"), "%s", err);
}
