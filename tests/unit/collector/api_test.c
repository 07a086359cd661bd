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

/* ---- Where CUPTI is looked for (collector_api_places, collector_api_open) ---------- */

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh directory under /tmp, removed by the test's process ending (Criterion runs each
 * test in its own process; the directories are small and named by pid). */
static void temp_dir(char *out, size_t size, const char *sub)
{
	snprintf(out, size, "/tmp/rp_api_test.%d/%s", (int)getpid(), sub);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", out);
	cr_assert_eq(system(cmd), 0);
}

/* dir/libcupti.so.13 -> the stand-in CUPTI. */
static void link_fake_cupti(const char *dir)
{
	const char *fake = getenv("FAKE_CUPTI");
	cr_assert(fake, "FAKE_CUPTI names the stand-in CUPTI (tests/meson.build)");
	char path[1100];
	snprintf(path, sizeof(path), "%s/libcupti.so.13", dir);
	cr_assert_eq(symlink(fake, path), 0, "%s", path);
}

static void remove_temp(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf /tmp/rp_api_test.%d", (int)getpid());
	cr_assert_eq(system(cmd), 0);
}

static const char *place_found(const struct collector_place *p)
{
	return p->found;
}

Test(api, cupti_places_in_their_documented_order)
{
	unsetenv("CUDA_HOME");
	struct collector_place places[COLLECTOR_PLACES_MAX];
	size_t n = collector_api_places(
		"/opt/cuda/lib64", "/venv/lib/python3.12/site-packages/rangeprof/_lib/librangeprof.so",
		places);
	cr_assert_eq(n, 6);
	static const char *const found[] = { "loaded", "CUDA_HOME", "toolkit", "toolkit", "pip",
					     "library_path" };
	static const char *const dirs[] = { "", "", "/opt/cuda/lib64", "/opt/cuda/extras/CUPTI/lib64",
					    "/venv/lib/python3.12/site-packages/nvidia/cu13/lib", "" };
	for (size_t i = 0; i < n; i++) {
		cr_assert_str_eq(place_found(&places[i]), found[i], "place %zu", i);
		cr_assert_str_eq(places[i].dir, dirs[i], "place %zu", i);
	}

	setenv("CUDA_HOME", "/home/cuda", 1);
	n = collector_api_places("/opt/cuda/lib64", "/usr/lib/x86_64-linux-gnu/librangeprof.so",
				 places);
	/* CUDA_HOME's two directories come after a loaded CUPTI; a library outside a wheel
	 * has no pip packages beside it. */
	cr_assert_eq(n, 6);
	cr_assert_str_eq(places[1].dir, "/home/cuda/lib64");
	cr_assert_str_eq(places[2].dir, "/home/cuda/extras/CUPTI/lib64");
	cr_assert_str_eq(places[3].dir, "/opt/cuda/lib64");
	cr_assert_str_eq(place_found(&places[5]), "library_path");
}

Test(api, cupti_is_taken_from_the_pip_packages_beside_a_wheels_library)
{
	char site[1024], pip[1100], self[1100];
	temp_dir(site, sizeof(site), "site-packages");
	snprintf(pip, sizeof(pip), "%s/nvidia/cu13/lib", site);
	temp_dir(pip, sizeof(pip), "site-packages/nvidia/cu13/lib");
	link_fake_cupti(pip);
	snprintf(self, sizeof(self), "%s/rangeprof/_lib/librangeprof.so", site);
	unsetenv("CUDA_HOME");
	struct collector_place places[COLLECTOR_PLACES_MAX];
	size_t n = collector_api_places("/nonexistent/lib64", self, places);
	/* The loader's own search last: this machine's CUPTI must not come first. */
	static const char *const names[] = { "libcupti.so.13", NULL };
	struct collector_cupti_info found = { .version = -1 };
	char err[2048] = "";
	void *h = collector_api_open(places, n, names, &found, err, sizeof(err));
	cr_assert_not_null(h, "%s", err);
	cr_assert_str_eq(found.found, "pip");
	char expect[1200];
	snprintf(expect, sizeof(expect), "%s/libcupti.so.13", pip);
	cr_assert_str_eq(found.path, expect);
	int (*version)(unsigned *) = (int (*)(unsigned *))dlsym(h, "cuptiGetVersion");
	unsigned v = 0;
	cr_assert(version && version(&v) == 0 && v == 4242, "the stand-in was loaded");
	remove_temp();
}

Test(api, a_cupti_already_loaded_comes_before_cuda_home)
{
	char first[1024], home[1024], lib64[1100], path[1200];
	temp_dir(first, sizeof(first), "first");
	link_fake_cupti(first);
	temp_dir(home, sizeof(home), "home");
	snprintf(lib64, sizeof(lib64), "%s/lib64", home);
	temp_dir(lib64, sizeof(lib64), "home/lib64");
	link_fake_cupti(lib64);
	snprintf(path, sizeof(path), "%s/libcupti.so.13", first);
	void *earlier = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(earlier, "%s", dlerror());

	setenv("CUDA_HOME", home, 1);
	struct collector_place places[COLLECTOR_PLACES_MAX];
	size_t n = collector_api_places(NULL, NULL, places);
	static const char *const names[] = { "libcupti.so.13", NULL };
	struct collector_cupti_info found;
	char err[2048] = "";
	cr_assert_eq(collector_api_open(places, n, names, &found, err, sizeof(err)), earlier, "%s",
		     err);
	cr_assert_str_eq(found.found, "loaded");
	cr_assert_str_eq(found.path, path);

	/* Not loaded yet: CUDA_HOME's is taken. (Taking the loaded one counted a reference.) */
	dlclose(earlier);
	dlclose(earlier);
	cr_assert_null(dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD));
	cr_assert_not_null(collector_api_open(places, n, names, &found, err, sizeof(err)), "%s", err);
	cr_assert_str_eq(found.found, "CUDA_HOME");
	snprintf(path, sizeof(path), "%s/libcupti.so.13", lib64);
	cr_assert_str_eq(found.path, path);
	remove_temp();
}

Test(api, a_cupti_found_nowhere_is_one_line_naming_every_place)
{
	unsetenv("CUDA_HOME");
	unsetenv("LD_LIBRARY_PATH");
	struct collector_place places[COLLECTOR_PLACES_MAX];
	size_t n = collector_api_places(
		"/nonexistent/lib64", "/nonexistent/site-packages/rangeprof/_lib/librangeprof.so",
		places);
	/* A name no machine has, so that the loader's own search finds nothing either. */
	static const char *const names[] = { "librp_absent_cupti.so.13", NULL };
	char err[2048] = "";
	cr_assert_null(collector_api_open(places, n, names, NULL, err, sizeof(err)));
	cr_assert_str_eq(err, "cannot load librp_absent_cupti.so.13; looked for it already loaded "
			 "in the process, in $CUDA_HOME (unset), in /nonexistent/lib64, in "
			 "/nonexistent/extras/CUPTI/lib64, in /nonexistent/site-packages/nvidia/cu13/lib, "
			 "on the library path (LD_LIBRARY_PATH unset, then ld.so.cache): "
			 "librp_absent_cupti.so.13: cannot open shared object file: No such file or "
			 "directory");
}

Test(api, a_cupti_that_is_there_but_does_not_load_gives_its_own_reason)
{
	char dir[1024], path[1100];
	temp_dir(dir, sizeof(dir), "broken");
	snprintf(path, sizeof(path), "%s/librp_absent_cupti.so.13", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("not a library\n", f);
	fclose(f);
	setenv("CUDA_HOME", "/nonexistent", 1);
	struct collector_place places[COLLECTOR_PLACES_MAX];
	char lib64[1100];
	snprintf(lib64, sizeof(lib64), "%s/lib64", dir);
	cr_assert_eq(symlink(dir, lib64), 0);
	size_t n = collector_api_places(lib64, NULL, places);
	static const char *const names[] = { "librp_absent_cupti.so.13", NULL };
	char err[2048] = "";
	cr_assert_null(collector_api_open(places, n, names, NULL, err, sizeof(err)));
	cr_assert(strstr(err, "in /nonexistent/lib64, in /nonexistent/extras/CUPTI/lib64, in "),
		  "%s", err);
	char reason[1200];
	snprintf(reason, sizeof(reason), "): %s/lib64/librp_absent_cupti.so.13: ", dir);
	cr_assert(strstr(err, reason), "the broken file's own reason: %s", err);
	cr_assert_null(strchr(err, '\n'), "%s", err);
	remove_temp();
}
