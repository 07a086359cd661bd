/* tests/integration/import_child.c - what 'import rangeprof' leaves to child processes
 * (issue 32 item 7), without a GPU. As "parent LIB" it does what the Python package does
 * (dlopen the library, rangeprof_attach) with a stand-in driver loaded first, starts
 * itself as a child, then calls InitializeInjection as the driver's cuInit would and
 * checks that CUDA's hook is gone from the environment even though init refused (no
 * CUPTI here). As "child nvtx absent|present" it makes an NVTX call and says whether
 * librangeprof.so is still mapped (NVTX unloads an injection that says no); as "child
 * cuda" it does what the driver does with an inherited CUDA_INJECTION64_PATH. The shell
 * script (run_import_child.sh) checks what the children printed and wrote. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nvtx3/nvToolsExt.h>

static int failures;

static void expect(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "import_child %ld: FAIL: %s\n", (long)getpid(), what);
		failures++;
	}
}

static int mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128];
	int found = 0;
	while (f && fgets(line, sizeof(line), f))
		found |= strstr(line, "librangeprof.so") != NULL;
	if (f)
		fclose(f);
	return found;
}

static int run_child(const char *self, const char *role, const char *arg)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, "child", role, arg, (char *)NULL);
		_exit(127);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int child(const char *role, const char *arg)
{
	if (!strcmp(role, "nvtx")) {
		nvtxRangePushA("child");
		nvtxRangePop();
		expect(mapped() == !strcmp(arg, "present"), !strcmp(arg, "present") ?
		       "librangeprof.so should stay mapped after NVTX's first call" :
		       "librangeprof.so should have been unloaded by NVTX (it said no)");
	} else {
		const char *hook = getenv("CUDA_INJECTION64_PATH");
		expect(hook != NULL, "the child should have inherited CUDA's hook here");
		void *lib = hook ? dlopen(hook, RTLD_NOW | RTLD_LOCAL) : NULL;
		int (*init)(void) = lib ? (int (*)(void))dlsym(lib, "InitializeInjection") : NULL;
		expect(init && init() == 1, "InitializeInjection should answer 1");
		if (!strcmp(arg, "inert"))
			expect(getenv("CUDA_INJECTION64_PATH") == NULL,
			       "an inert child passes no CUDA hook on to its own children");
	}
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "child"))
		return child(argv[2], argv[3]);
	if (argc != 4 || strcmp(argv[1], "parent")) {
		fprintf(stderr, "usage: import_child parent LIB FAKE_LIBCUDA\n");
		return 2;
	}
	char self[PATH_MAX], lib_path[PATH_MAX];
	if (!realpath("/proc/self/exe", self) || !realpath(argv[2], lib_path))
		return 2;
	void *cuda = dlopen("libcuda.so.1", RTLD_LAZY);
	if (!cuda && !dlopen(argv[3], RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	void *lib = dlopen(lib_path, RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	int (*attach)(void) = (int (*)(void))dlsym(lib, "rangeprof_attach");
	int (*init)(void) = (int (*)(void))dlsym(lib, "InitializeInjection");
	int (*set)(const char *, const char *) =
		(int (*)(const char *, const char *))dlsym(lib, "rangeprof_set_option");
	expect(attach && attach() == 0, "rangeprof_attach should succeed before cuInit");
	const char *hook = getenv("CUDA_INJECTION64_PATH");
	expect(hook && !strcmp(hook, lib_path), "attach points CUDA's hook here for cuInit");
	expect(getenv("RANGEPROF_CONTROL_PID") != NULL, "attach marks this process");

	/* Children started before and after this process's cuInit measure nothing. */
	expect(run_child(self, "nvtx", "absent") == 0, "child nvtx absent");
	expect(run_child(self, "cuda", "inert") == 0, "child cuda inert (before cuInit)");
	if (cuda == NULL) {
		/* cuInit of this process: the driver calls InitializeInjection. Init refuses
		 * here (no CUPTI, or no device), and the hook must still be gone. */
		init();
		expect(getenv("CUDA_INJECTION64_PATH") == NULL,
		       "CUDA's hook is out of the environment once the driver read it");
	}
	expect(run_child(self, "nvtx", "absent") == 0, "child nvtx absent (after cuInit)");

	/* Asked for: children measure (NVTX keeps the library, CUDA's hook is there). */
	expect(set && set("children", "true") == 0, "children can be asked for at run time");
	expect(run_child(self, "nvtx", "present") == 0, "child nvtx present");
	expect(run_child(self, "cuda", "measures") == 0, "child cuda measures");
	expect(set("children", "false") == 0, "and switched off again");
	expect(getenv("RANGEPROF_CHILDREN") == NULL, "children off takes RANGEPROF_CHILDREN out");
	printf("import_child: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
