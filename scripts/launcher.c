/* scripts/launcher.c - the rangeprof command: parses options from the shared table,
 * validates every value before the application starts, exports them as RANGEPROF_*
 * variables, preloads librangeprof.so and execs the application, which thereby keeps
 * the launcher's pid (so %p names its file) and returns its own exit status or signal.
 * Calls common/ and nvtx_bridge/ (to check NVTX expressions). */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/options.h"
#include "nvtx_bridge/nvtx_bridge.h"

/* Where 'meson install' puts librangeprof.so, relative to the launcher's directory
 * (scripts/meson.build derives it from bindir and libdir, e.g. ../lib/x86_64-linux-gnu). */
#ifndef RP_LIBDIR_FROM_BINDIR
#define RP_LIBDIR_FROM_BINDIR "../lib"
#endif

/* Path of a file next to this executable, or in alt_dir relative to it (../lib when
 * installed, ../inject in the build tree). */
static int sibling(const char *name, const char *alt_dir, char *out, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	const char *dir = dirname(self);
	snprintf(out, size, "%s/%s", dir, name);
	if (access(out, R_OK) == 0)
		return 0;
	for (const char *p = alt_dir; p && *p;) {
		size_t len = strcspn(p, ":");
		snprintf(out, size, "%s/%.*s/%s", dir, (int)len, p, name);
		if (access(out, R_OK) == 0)
			return 0;
		p += len + (p[len] == ':');
	}
	return -1;
}

static void export_options(const struct rp_options *opts, char *const *values)
{
	const struct rp_option_desc *table = rp_option_table();
	for (size_t i = 0; i < RP_OPT_COUNT; i++) {
		if (!opts->given[i])
			continue;
		char name[64];
		rp_option_env_name(&table[i], name, sizeof(name));
		if (!values[i] || setenv(name, values[i], 1)) {
			rp_log_error("cannot set %s: %s", name, strerror(errno));
			exit(2);
		}
	}
}

/* The text of each given option as the library will read it back: the value as written
 * (already checked here), lists joined for their variable. */
static void option_values(const struct rp_options *o, char *values[RP_OPT_COUNT])
{
	for (size_t i = 0; i < RP_OPT_COUNT; i++)
		values[i] = o->text[i] ? strdup(o->text[i]) : NULL;
	/* Every expression parsed already, so none ends in a lone backslash: join succeeds
	 * unless out of memory, which export_options reports. */
	free(values[RP_OPT_NVTX_INCLUDE]);
	free(values[RP_OPT_NVTX_EXCLUDE]);
	values[RP_OPT_NVTX_INCLUDE] = rp_option_join_list(o->nvtx_include, o->nvtx_include_count);
	values[RP_OPT_NVTX_EXCLUDE] = rp_option_join_list(o->nvtx_exclude, o->nvtx_exclude_count);
}

/* Length of the leading LD_PRELOAD entries that are sanitizer runtimes (libasan.so.8,
 * libclang_rt.asan-x86_64.so, ...): they must stay first in the load order, or a
 * sanitizer-built application (or a sanitizer build of rangeprof) refuses to start. */
static size_t sanitizer_prefix(const char *list)
{
	size_t n = 0;
	while (list[n]) {
		size_t len = strcspn(list + n, ": ");
		const char *entry = list + n, *base = entry;
		for (size_t i = 0; i < len; i++)
			if (entry[i] == '/')
				base = entry + i + 1;
		size_t base_len = len - (size_t)(base - entry);
		if (!memmem(base, base_len, "san", 3) ||
		    (strncmp(base, "lib", 3) && strncmp(base, "libclang_rt.", 12)))
			break;
		n += len;
		n += strspn(list + n, ": ");
	}
	return n;
}

/* Puts lib first in LD_PRELOAD, after sanitizer runtimes. */
static void prepend_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	if (!old)
		old = "";
	size_t keep = sanitizer_prefix(old);
	char *value = malloc(strlen(lib) + strlen(old) + 3);
	if (!value)
		exit(2);
	sprintf(value, "%.*s%s%s%s%s", (int)keep, old, keep && old[keep - 1] != ':' &&
		old[keep - 1] != ' ' ? ":" : "", lib, old[keep] ? ":" : "", old + keep);
	if (setenv("LD_PRELOAD", value, 1))
		exit(2);
	free(value);
}

static void warn_line(const char *line, void *arg)
{
	(void)arg;
	rp_log_warn("%s", line);
}

int main(int argc, char **argv)
{
	struct rp_options opts;
	char err[1024], quoted[RP_QUOTE_SIZE];
	rp_options_init(&opts);
	/* The environment first, the command line over it: both are checked here. */
	if (rp_options_load_env(&opts, err, sizeof(err))) {
		rp_log_error("%s", err);
		goto fail;
	}
	int app;
	enum rp_action action;
	if (rp_options_parse_argv(&opts, argc, argv, &app, &action, err, sizeof(err))) {
		rp_log_error("%s", err);
		goto fail;
	}
	if (action == RP_ACTION_RUN && rp_options_check(&opts, err, sizeof(err))) {
		rp_log_error("%s", err);
		goto fail;
	}
	if (action != RP_ACTION_RUN) {
		if (action == RP_ACTION_HELP)
			rp_options_print_help(stdout, "rangeprof");
		else
			printf("rangeprof %s\n", PROJECT_VERSION);
		rp_options_finish(&opts);
		return 0;
	}
	/* A mistyped variable (RANGEPROF_RUN) would be silently unread: said before the run. */
	rp_options_env_typos(warn_line, NULL);
	if (opts.env_ignored[RP_OPT_LIST_METRICS])
		rp_log_warn("RANGEPROF_LIST_METRICS is ignored: --list-metrics is an action of the "
			    "command line only");

	/* Each list is named as the user gave it: a bad RANGEPROF_NVTX_EXCLUDE is reported
	 * under that name, not the flag's. */
	char include_origin[64], exclude_origin[64];
	struct nvtx_filter *filter = nvtx_filter_create(
		opts.nvtx_include, opts.nvtx_include_count,
		rp_option_origin(&opts, RP_OPT_NVTX_INCLUDE, include_origin, sizeof(include_origin)),
		opts.nvtx_exclude, opts.nvtx_exclude_count,
		rp_option_origin(&opts, RP_OPT_NVTX_EXCLUDE, exclude_origin, sizeof(exclude_origin)),
		err, sizeof(err));
	if (!filter) {
		rp_log_error("%s", err);
		goto fail;
	}
	nvtx_filter_destroy(filter);

	if (opts.clock_control == RP_CLOCK_BASE && geteuid() != 0) {
		char origin[64];
		rp_log_error("%s 'base': locking clocks needs root privileges; run as root or use "
			     "--clock-control none",
			     rp_option_origin(&opts, RP_OPT_CLOCK_CONTROL, origin, sizeof(origin)));
		goto fail;
	}

	char path[PATH_MAX];
	if (opts.list_metrics) {
		if (sibling("rangeprof-list-metrics", "../libexec", path, sizeof(path))) {
			rp_log_error("--list-metrics: the helper 'rangeprof-list-metrics' is not "
				     "installed next to rangeprof");
			goto fail;
		}
		rp_options_finish(&opts);
		char *helper_argv[] = { path, NULL };
		execv(path, helper_argv);
		rp_log_error("cannot run '%s': %s", rp_quote(path, quoted, sizeof(quoted)),
			     strerror(errno));
		return 127;
	}
	if (app >= argc) {
		rp_log_error("no application given; usage: rangeprof [options] [--] application "
			     "[arguments...]");
		goto fail;
	}
	/* The application will have this pid after exec, so %p checks the right name. */
	char output_origin[64];
	if (rp_output_check(opts.output, getpid(),
			    rp_option_origin(&opts, RP_OPT_OUTPUT, output_origin,
					     sizeof(output_origin)), err, sizeof(err))) {
		rp_log_error("%s", err);
		goto fail;
	}
	if (sibling("librangeprof.so", RP_LIBDIR_FROM_BINDIR ":../lib:../inject", path, sizeof(path))) {
		rp_log_error("librangeprof.so is not installed next to rangeprof");
		goto fail;
	}

	/* Without a driver nothing can be measured; the application still runs, as asked. */
	void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
	if (!driver)
		rp_log_warn("no CUDA driver (libcuda.so.1) on this machine: the application runs "
			    "unmeasured");
	else
		dlclose(driver);

	char *values[RP_OPT_COUNT];
	option_values(&opts, values);
	export_options(&opts, values);
	for (size_t i = 0; i < RP_OPT_COUNT; i++)
		free(values[i]);
	rp_options_finish(&opts);
	prepend_preload(path);
	setenv("CUDA_INJECTION64_PATH", path, 0);
	setenv("NVTX_INJECTION64_PATH", path, 0);

	execvp(argv[app], &argv[app]);
	int e = errno;
	rp_log_error("cannot run '%s': %s", rp_quote(argv[app], quoted, sizeof(quoted)),
		     strerror(e));
	return e == ENOENT ? 127 : 126;
fail:
	/* Freed on every exit path, so that a sanitizer build reports no leak. */
	rp_options_finish(&opts);
	return 2;
}
