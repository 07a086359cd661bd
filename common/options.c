/* common/options.c - the option table, its parsing, validation and help text.
 * Used by the launcher (scripts/launcher.c) before the application starts and by the
 * injected library (inject/) when CUDA initialises it.
 * Calls: launch_metrics.c (the metrics' names), regex.c, log.c (libc besides).
 * Called by: inject/.
 * Lock: none (constant tables; options are their caller's). */
#include "common/options.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/error.h"
#include "common/launch_metrics.h"
#include "common/log.h"
#include "common/regex.h"

/* ------------------------------------------------------------------------------------ */
/* The table                                                                            */
/* ------------------------------------------------------------------------------------ */

/* A number macro as text, for help strings that state a limit the code enforces. */
#define RP_STR_(x) #x
#define RP_STR(x) RP_STR_(x)

static const struct rp_option_desc table[RP_OPT_COUNT] = {
	{ RP_OPT_OUTPUT, "output", 'o', RP_KIND_STRING, "PATH", "rangeprof.%p.jsonl", NULL, 0, 0,
	  "JSON Lines file, appended to; %p pid, %h host name, %q{ENV} a variable, %% a %" },
	{ RP_OPT_METRICS, "metrics", 0, RP_KIND_STRING, "LIST", "gpu__time_duration.sum", NULL,
	  0, 0, "comma-separated metric names to collect for each run" },
	{ RP_OPT_NVTX_INCLUDE, "nvtx-include", 0, RP_KIND_LIST, "EXPR", NULL, NULL, 0, 0,
	  "select launches inside matching NVTX ranges (ncu syntax; repeatable, at most "
	  RP_STR(RP_OPTION_MAX_LIST) " expressions)" },
	{ RP_OPT_NVTX_EXCLUDE, "nvtx-exclude", 0, RP_KIND_LIST, "EXPR", NULL, NULL, 0, 0,
	  "skip launches inside matching NVTX ranges (ncu syntax; repeatable, at most "
	  RP_STR(RP_OPTION_MAX_LIST) " expressions)" },
	{ RP_OPT_KERNEL_NAME, "kernel-name", 'k', RP_KIND_STRING, "NAME", NULL, NULL, 0, 0,
	  "measure only kernels of this exact (demangled or mangled) name, or regex:RE" },
	{ RP_OPT_LAUNCH_SKIP, "launch-skip", 's', RP_KIND_INT, "N", "0", NULL, 0, LONG_MAX,
	  "skip the first N launches that pass the filters", .field = offsetof(struct rp_options, launch_skip) },
	{ RP_OPT_LAUNCH_COUNT, "launch-count", 'c', RP_KIND_INT, "N", "unlimited", NULL, 1,
	  LONG_MAX, "measure at most N launches (or 'unlimited'), then run on unmeasured", .field = offsetof(struct rp_options, launch_count) },
	{ RP_OPT_RUNS, "runs", 0, RP_KIND_INT, "N|auto", "5", NULL, 1, 100000,
	  "measured replays of each selected launch; auto: in batches until --target-ci, "
	  "--runs-max or --runs-time-budget", .field = offsetof(struct rp_options, runs) },
	{ RP_OPT_TARGET_CI, "target-ci", 0, RP_KIND_REAL, "PCT", "1", NULL, 0, 0,
	  "--runs auto: stop once the 95 % CI half-width (Student t) is within PCT % of the "
	  "mean", .real_min = 0, .real_max = 100, .real_min_open = true, .field = offsetof(struct rp_options, target_ci_pct) },
	{ RP_OPT_RUNS_MIN, "runs-min", 0, RP_KIND_INT, "N", "10", NULL, 2, 100000,
	  "--runs auto: measure at least N runs of each launch", .field = offsetof(struct rp_options, runs_min) },
	{ RP_OPT_RUNS_MAX, "runs-max", 0, RP_KIND_INT, "N", "200", NULL, 2, 100000,
	  "--runs auto: measure at most N runs of each launch", .field = offsetof(struct rp_options, runs_max) },
	{ RP_OPT_RUNS_BATCH, "runs-batch", 0, RP_KIND_INT, "N", "10", NULL, 1, 1000,
	  "--runs auto: runs per batch, replayed together in each profiler pass of the metric "
	  "set (one pass for time-only sets); the stopping rule is checked after each batch", .field = offsetof(struct rp_options, runs_batch) },
	{ RP_OPT_RUNS_TIME_BUDGET, "runs-time-budget", 0, RP_KIND_REAL, "SECONDS", "10", NULL,
	  0, 0, "--runs auto: no further batch once a launch has been measured this long "
	  "(--runs-min are always measured)", .real_min = 0, .real_max = 86400,
	  .real_min_open = true, .field = offsetof(struct rp_options, runs_time_budget) },
	{ RP_OPT_CACHE_CONTROL, "cache-control", 0, RP_KIND_CHOICE, "all|none", "all",
	  "all|none", 0, 0, "all: flush the L2 cleanly before every replay, leaving it without "
	  "valid lines as ncu does; none: do not", .field = offsetof(struct rp_options, cache_control) },
	{ RP_OPT_CLOCK_CONTROL, "clock-control", 0, RP_KIND_CHOICE, "none|base", "none",
	  "none|base", 0, 0,
	  "base: lock SM clocks to base for the session (needs root); none: leave them", .field = offsetof(struct rp_options, clock_control) },
	{ RP_OPT_THERMAL_CONTROL, "thermal-control", 0, RP_KIND_CHOICE, "auto|manual|off", "auto",
	  "auto|manual|off", 0, 0,
	  "before a launch's runs, wait while the GPU is within --thermal-wait degrees of its "
	  "slowdown temperature; manual: until --thermal-continue; auto: also once it stops "
	  "cooling; off: never", .field = offsetof(struct rp_options, thermal_control) },
	{ RP_OPT_THERMAL_WAIT, "thermal-wait", 0, RP_KIND_REAL, "DEGREES", "10", NULL, 0, 0,
	  "headroom to the slowdown temperature (degrees C) below which a launch waits",
	  .real_min = 0, .real_max = 100, .field = offsetof(struct rp_options, thermal_wait) },
	{ RP_OPT_THERMAL_CONTINUE, "thermal-continue", 0, RP_KIND_REAL, "DEGREES", "20", NULL, 0,
	  0, "headroom (degrees C) at which a waiting launch goes on", .real_min = 0,
	  .real_max = 100, .field = offsetof(struct rp_options, thermal_continue) },
	{ RP_OPT_THERMAL_TIMEOUT, "thermal-timeout", 0, RP_KIND_INT, "SECONDS", "30", NULL, 0,
	  3600, "longest thermal wait of a launch; it is then measured anyway, with a warning", .field = offsetof(struct rp_options, thermal_timeout) },
	{ RP_OPT_MEMORY_SAVE, "memory-save", 0, RP_KIND_CHOICE, "reach|checkpoint", "reach",
	  "reach|checkpoint", 0, 0,
	  "reach: save only the memory a launch can reach, verified per kernel; checkpoint: "
	  "save all device memory at every measured launch", .field = offsetof(struct rp_options, memory_save) },
	{ RP_OPT_GRAPH_PROFILING, "graph-profiling", 0, RP_KIND_CHOICE, "node|graph|none", "node",
	  "node|graph|none", 0, 0,
	  "kernels inside CUDA graphs, as ncu: node: each kernel node of a selected graph "
	  "launch is measured like a launch of its own; graph: the whole graph launch is one "
	  "workload (time by CUDA events, other metrics over the whole launch); none: graph "
	  "launches are not measured", .field = offsetof(struct rp_options, graph_profiling) },
	{ RP_OPT_REPLAY_MODE, "replay-mode", 0, RP_KIND_CHOICE, "kernel|range", "kernel",
	  "kernel|range", 0, 0,
	  "as ncu: kernel: each selected kernel launch is replayed and measured on its own; "
	  "range: each selected NVTX range (the one an --nvtx-include names) is one workload, "
	  "its kernels, memsets and copies replayed whole from the memory it began with, one "
	  "cache flush before each run and none between its kernels (doc/range-replay.md)",
	  .field = offsetof(struct rp_options, replay_mode) },
	{ RP_OPT_RANGE_SCOPE, "range-scope", 0, RP_KIND_CHOICE, "whole|kernels", "whole",
	  "whole|kernels", 0, 0,
	  "what a range's runs measure under --replay-mode range: whole: all its work in "
	  "the order it ran, kernels, memsets and copies (what the region costs); kernels: "
	  "its kernels only, as ncu's range replay counts a range's later occurrences: its "
	  "memsets and copies run first, then the cache flush, then its kernels are measured "
	  "(doc/range-replay.md, \"Memsets and copies\")",
	  .field = offsetof(struct rp_options, range_scope) },
	{ RP_OPT_DEVICE_LOCK_TIMEOUT, "device-lock-timeout", 0, RP_KIND_INT, "SECONDS", "60", NULL,
	  0, 86400, "longest wait for another process measuring on the same GPU; the launch "
	  "is then not measured", .field = offsetof(struct rp_options, device_lock_timeout) },
	{ RP_OPT_BUSY_TIMEOUT, "busy-timeout", 0, RP_KIND_INT, "SECONDS", "2", NULL, 0, 3600,
	  "longest wait of a measured launch for the GPU's profiling hardware while a "
	  "profiler outside rangeprof holds it (ncu, Nsight Systems, DCGM profiling: "
	  "CUPTI_ERROR_HARDWARE_BUSY); the launch is then not measured and a warning says "
	  "so. Other rangeprof processes give it back when asked (--device-lock-timeout)",
	  .field = offsetof(struct rp_options, busy_timeout) },
	{ RP_OPT_SETUP, "setup", 0, RP_KIND_CHOICE, "early|lazy", "early", "early|lazy", 0, 0,
	  "early: a GPU's profiler is set up on a thread of rangeprof's from the first kernel "
	  "launch or allocation there, so the first measured launch does not wait ~0.3 s for it; lazy: at "
	  "the first measured launch, nothing done for programs that measure nothing", .field = offsetof(struct rp_options, setup) },
	{ RP_OPT_CHILDREN, "children", 0, RP_KIND_FLAG, NULL, NULL, NULL, 0, 0,
	  "under the control API (import rangeprof): the processes this one starts measure "
	  "too, each as under the launcher (without it they measure nothing); the launcher's "
	  "children always measure", .field = offsetof(struct rp_options, children) },
	{ RP_OPT_LIST_METRICS, "list-metrics", 0, RP_KIND_FLAG, NULL, NULL, NULL, 0, 0,
	  "print the metrics the device supports, with units and descriptions, and exit",
	  .command_line_only = true, .field = offsetof(struct rp_options, list_metrics) },
	{ RP_OPT_QUIET, "quiet", 'q', RP_KIND_FLAG, NULL, NULL, NULL, 0, 0,
	  "no progress lines on stderr", .field = offsetof(struct rp_options, quiet) },
};

const struct rp_option_desc *rp_option_table(void)
{
	return table;
}

const struct rp_option_desc *rp_option_find_long(const char *name, size_t name_len)
{
	for (size_t i = 0; i < RP_OPT_COUNT; i++)
		if (strlen(table[i].name) == name_len && !memcmp(table[i].name, name, name_len))
			return &table[i];
	return NULL;
}

const struct rp_option_desc *rp_option_find_short(char c)
{
	for (size_t i = 0; i < RP_OPT_COUNT; i++)
		if (c && table[i].short_name == c)
			return &table[i];
	return NULL;
}

void rp_option_env_name(const struct rp_option_desc *desc, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "RANGEPROF_");
	for (const char *p = desc->name; *p && n + 1 < size; p++)
		buf[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
	buf[n < size ? n : size - 1] = '\0';
}

/* ------------------------------------------------------------------------------------ */
/* Values                                                                               */
/* ------------------------------------------------------------------------------------ */

void rp_options_init(struct rp_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->launch_count = -1;
	for (size_t i = 0; i < RP_OPT_COUNT; i++) {
		/* The table checks itself: a row out of order would set the wrong option. */
		assert(table[i].id == (enum rp_option)i && "option rows must follow the enum");
		/* Offset 0 is the output template, a string: a number, choice or flag row
		 * without its field would write over it. */
		assert((table[i].kind == RP_KIND_STRING || table[i].kind == RP_KIND_LIST ||
			table[i].field != 0) && "number, choice and flag rows name their field");
		if (!table[i].default_value)
			continue;
		char err[256];
		int rc = rp_option_set(opts, table[i].id, table[i].default_value, "default", err,
				       sizeof(err));
		assert(rc == 0 && "every default must parse");
		(void)rc;
	}
	memset(opts->given, 0, sizeof(opts->given));
}

static void free_list(char **list, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(list[i]);
	free(list);
}

void rp_options_finish(struct rp_options *opts)
{
	free(opts->output);
	free(opts->metrics);
	free(opts->kernel_name);
	free_list(opts->nvtx_include, opts->nvtx_include_count);
	free_list(opts->nvtx_exclude, opts->nvtx_exclude_count);
	for (size_t i = 0; i < RP_OPT_COUNT; i++)
		free(opts->text[i]);
	memset(opts, 0, sizeof(*opts));
}

static int parse_long(const char *value, long *out)
{
	if (!*value || isspace((unsigned char)*value))
		return -EINVAL;
	errno = 0;
	char *end;
	long v = strtol(value, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A decimal number as strtod reads it, without leading space, trailing text, hex floats,
 * infinities or NaN: what the help's "PCT", "DEGREES" and "SECONDS" promise. */
static int parse_real(const char *value, double *out)
{
	if (!*value || isspace((unsigned char)*value))
		return -EINVAL;
	for (const char *p = value; *p; p++)
		if (!isdigit((unsigned char)*p) && *p != '.' && *p != '-' && *p != '+' &&
		    *p != 'e' && *p != 'E')
			return -EINVAL;
	errno = 0;
	char *end;
	double v = strtod(value, &end);
	if (errno || *end || !isfinite(v))
		return -EINVAL;
	*out = v;
	return 0;
}

/* Messages below show the value as q: quoted by rp_quote (escaped, cut). */

static int check_metric_list(const char *value, const char *q, const char *origin, char *err,
			     size_t size)
{
	const char *start = value;
	for (const char *p = value;; p++) {
		if (*p == ',' || !*p) {
			if (p == start) {
				snprintf(err, size,
					 "%s '%s': empty metric name at character %zu; expected "
					 "comma-separated metric names such as gpu__time_duration.sum",
					 origin, q, (size_t)(p - value) + 1);
				return -EINVAL;
			}
			if (!*p)
				return 0;
			start = p + 1;
		} else if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.') {
			char c[RP_QUOTE_SIZE];
			rp_quote((char[]){ *p, 0 }, c, sizeof(c));
			snprintf(err, size,
				 "%s '%s': character %zu '%s' cannot be part of a metric name; "
				 "expected letters, digits, '_' and '.'",
				 origin, q, (size_t)(p - value) + 1, c);
			return -EINVAL;
		}
	}
}

static int check_output_template(const char *value, const char *q, const char *origin,
				 char *err, size_t size)
{
	char path[PATH_MAX], why[256];
	if (!*value) {
		snprintf(err, size, "%s '': expected a file path", origin);
		return -EINVAL;
	}
	if (rp_output_path_expand(value, getpid(), path, sizeof(path), why, sizeof(why))) {
		snprintf(err, size, "%s '%s': %s", origin, q, why);
		return -EINVAL;
	}
	return 0;
}

/* Whether a new file can be created in dir by this process, as the open will do it:
 * an unnamed O_TMPFILE file is created and dropped, so that root's privileges, ACLs and
 * read-only mounts all count, and nothing is left behind. Where the file system has no
 * O_TMPFILE, the effective ids' permission and the mount flags decide. 0 or -errno. */
static int can_create_in(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -errno;
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS))
		return -errno;
	struct statvfs vfs;
	if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_RDONLY))
		return -EROFS;
	return 0;
}

int rp_output_check(const char *value, pid_t pid, const char *origin, char *err, size_t size)
{
	char path[PATH_MAX], why[256], q[RP_QUOTE_SIZE], qp[RP_QUOTE_SIZE];
	rp_quote(value, q, sizeof(q));
	if (rp_output_path_expand(value, pid, path, sizeof(path), why, sizeof(why))) {
		snprintf(err, size, "%s '%s': %s", origin, q, why);
		return -EINVAL;
	}
	rp_quote(path, qp, sizeof(qp));
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		snprintf(err, size, "%s '%s': '%s' names a directory; expected a file path such "
			 "as 'dir/rangeprof.%%p.jsonl'", origin, q, qp);
		return -EINVAL;
	}
	if (strlen(base) > NAME_MAX) {
		snprintf(err, size, "%s '%s': file name of %zu bytes; at most %d are accepted",
			 origin, q, strlen(base), NAME_MAX);
		return -EINVAL;
	}
	char dir[PATH_MAX];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	char qd[RP_QUOTE_SIZE];
	rp_quote(dir, qd, sizeof(qd));
	struct stat st;
	if (stat(dir, &st) != 0) {
		int e = errno;
		if (e == ENOENT)
			snprintf(err, size, "%s '%s': directory '%s' does not exist", origin, q, qd);
		else if (e == ELOOP)
			snprintf(err, size, "%s '%s': directory '%s' is a loop of symbolic links "
				 "(or one too deep to follow)", origin, q, qd);
		else
			snprintf(err, size, "%s '%s': directory '%s': %s", origin, q, qd,
				 strerror(e));
		return -EINVAL;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, size, "%s '%s': '%s' is not a directory", origin, q, qd);
		return -EINVAL;
	}
	/* Symbolic links are followed, as a shell's '>>' does; the target must pass the same
	 * checks. A link to nothing is refused: appending would create a file wherever it
	 * points. */
	struct stat lst;
	if (lstat(path, &lst) == 0) {
		if (stat(path, &st) != 0) {
			/* A link that leads back to itself is no missing file: say which it is. */
			int e = errno;
			if (e == ELOOP)
				snprintf(err, size, "%s '%s': '%s' is a loop of symbolic links (or one "
					 "too deep to follow); expected a file path", origin, q, qp);
			else if (e == ENOENT)
				snprintf(err, size, "%s '%s': '%s' is a symbolic link to a missing "
					 "file; expected a file path", origin, q, qp);
			else
				snprintf(err, size, "%s '%s': '%s': %s", origin, q, qp, strerror(e));
			return -EINVAL;
		}
		if (S_ISDIR(st.st_mode)) {
			snprintf(err, size, "%s '%s': '%s' is a directory; expected a file path "
				 "such as 'dir/rangeprof.%%p.jsonl'", origin, q, qp);
			return -EINVAL;
		}
		/* A FIFO's open blocks until a reader comes, inside the application. */
		if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
			snprintf(err, size, "%s '%s': '%s' is %s; expected a regular file or a "
				 "character device such as /dev/null", origin, q, qp,
				 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ?
				 "a socket" : "not a regular file");
			return -EINVAL;
		}
		/* Existing: appended to, so only the file's own permission matters (a file
		 * such as /dev/null in a directory we cannot write is fine). Opened the way the
		 * library will open it, without creating or truncating anything. */
		int fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0) {
			snprintf(err, size, "%s '%s': file '%s' is not writable: %s", origin, q, qp,
				 strerror(errno));
			return -EINVAL;
		}
		close(fd);
		return 0;
	}
	int rc = can_create_in(dir);
	if (rc) {
		snprintf(err, size, "%s '%s': directory '%s' is not writable: %s", origin, q, qd,
			 strerror(-rc));
		return -EINVAL;
	}
	return 0;
}

static int check_kernel_name(const char *value, const char *q, const char *origin,
			     char *err, size_t size)
{
	if (!*value) {
		snprintf(err, size, "%s '': expected a kernel name or regex:RE", origin);
		return -EINVAL;
	}
	if (strncmp(value, "regex:", 6) != 0)
		return 0;
	char why[256];
	struct rp_regex *re = rp_regex_compile(value + 6, why, sizeof(why));
	if (!re) {
		snprintf(err, size, "%s '%s': invalid regular expression: %s", origin, q, why);
		return -EINVAL;
	}
	rp_regex_destroy(re);
	return 0;
}

static int append(char ***list, size_t *count, const char *value)
{
	char **grown = realloc(*list, (*count + 1) * sizeof(**list));
	if (!grown)
		return -ENOMEM;
	*list = grown;
	if (!(grown[*count] = strdup(value)))
		return -ENOMEM;
	(*count)++;
	return 0;
}

static int replace(char **slot, const char *value)
{
	char *copy = strdup(value);
	if (!copy)
		return -ENOMEM;
	free(*slot);
	*slot = copy;
	return 0;
}

/* Every choice option's enum has the size of an int, as store() writes it. */
_Static_assert(sizeof(enum rp_cache_control) == sizeof(int) &&
	       sizeof(enum rp_clock_control) == sizeof(int) &&
	       sizeof(enum rp_thermal_control) == sizeof(int) &&
	       sizeof(enum rp_memory_save) == sizeof(int) &&
	       sizeof(enum rp_graph_profiling) == sizeof(int) &&
	       sizeof(enum rp_replay_mode) == sizeof(int) &&
	       sizeof(enum rp_range_scope) == sizeof(int) &&
	       sizeof(enum rp_setup) == sizeof(int), "choice enums are stored as int");

/* Stores a checked number, choice or flag where the table says. */
static int store(struct rp_options *opts, const struct rp_option_desc *d, long number,
		 double real)
{
	char *slot = (char *)opts + d->field;
	switch (d->kind) {
	case RP_KIND_INT: memcpy(slot, &number, sizeof(number)); return 0;
	case RP_KIND_REAL: memcpy(slot, &real, sizeof(real)); return 0;
	case RP_KIND_CHOICE: {
		int index = (int)number;
		memcpy(slot, &index, sizeof(index));
		return 0;
	}
	case RP_KIND_FLAG: {
		bool on = number != 0;
		memcpy(slot, &on, sizeof(on));
		return 0;
	}
	default: return -EINVAL;
	}
}

/* Checks value against the option's kind and gives its value: *number for an integer,
 * the index of a choice, 0 or 1 for a flag; *real for a decimal. 0 or -EINVAL with the
 * message. */
static int check_kind(const struct rp_option_desc *d, const char *value, const char *q,
		      const char *origin, long *number, double *real, char *err,
		      size_t err_size)
{
	if (d->kind == RP_KIND_INT) {
		/* Two options have a word besides numbers: --launch-count its default
		 * 'unlimited', --runs 'auto'. */
		const char *word = d->id == RP_OPT_LAUNCH_COUNT ? "unlimited" :
				   d->id == RP_OPT_RUNS ? "auto" : NULL;
		if (word && !strcmp(value, word)) {
			*number = d->id == RP_OPT_RUNS ? RP_RUNS_AUTO : -1;
			return 0;
		}
		if (parse_long(value, number) || *number < d->min || *number > d->max) {
			char alternative[32] = "";
			if (word)
				snprintf(alternative, sizeof(alternative), " or '%s'", word);
			if (d->max == LONG_MAX)
				snprintf(err, err_size, "%s '%s': expected an integer >= %ld%s",
					 origin, q, d->min, alternative);
			else
				snprintf(err, err_size,
					 "%s '%s': expected an integer from %ld to %ld%s", origin, q,
					 d->min, d->max, alternative);
			return -EINVAL;
		}
	} else if (d->kind == RP_KIND_REAL) {
		double v;
		if (parse_real(value, &v) || (d->real_min_open ? !(v > d->real_min) :
					      !(v >= d->real_min)) || !(v <= d->real_max)) {
			snprintf(err, err_size, "%s '%s': expected a number %s %g and <= %g", origin,
				 q, d->real_min_open ? ">" : ">=", d->real_min, d->real_max);
			return -EINVAL;
		}
		*real = v;
	} else if (d->kind == RP_KIND_CHOICE) {
		size_t len = strlen(value);
		const char *c = d->choices;
		bool found = false;
		for (*number = 0; *c && !found; ++*number) {
			size_t clen = strcspn(c, "|");
			found = clen == len && !memcmp(c, value, len);
			c += clen + (c[clen] == '|');
		}
		--*number;
		if (!found) {
			char accepted[128] = "";
			size_t n = 0;
			for (c = d->choices; *c;) {
				size_t clen = strcspn(c, "|");
				n += (size_t)snprintf(accepted + n, sizeof(accepted) - n, "%s'%.*s'",
						      n ? ", " : "", (int)clen, c);
				c += clen + (c[clen] == '|');
			}
			snprintf(err, err_size, "%s '%s': should be one of %s", origin, q,
				 accepted);
			return -EINVAL;
		}
	} else if (d->kind == RP_KIND_FLAG) {
		*number = !strcmp(value, "1") || !strcasecmp(value, "true") ||
			  !strcasecmp(value, "yes");
		if (!*number && strcmp(value, "0") && strcasecmp(value, "false") &&
		    strcasecmp(value, "no")) {
			snprintf(err, err_size, "%s '%s': should be one of '1', '0', 'true', "
				 "'false', 'yes', 'no'", origin, q);
			return -EINVAL;
		}
	} else if (d->kind == RP_KIND_LIST && !*value) {
		snprintf(err, err_size, "%s '': expected an NVTX expression", origin);
		return -EINVAL;
	}
	return 0;
}

/* rp_option_set's work, failing with -EINVAL or -ENOMEM as this file's other checks do
 * (rp_options_load_env and rp_options_parse_argv keep that). */
static int set_value(struct rp_options *opts, enum rp_option id, const char *value,
		     const char *origin, char *err, size_t err_size)
{
	const struct rp_option_desc *d = &table[id];
	long number = 0;
	double real = 0;
	int rc;
	char q[RP_QUOTE_SIZE];
	rp_quote(value, q, sizeof(q));
	if ((rc = check_kind(d, value, q, origin, &number, &real, err, err_size)))
		return rc;

	switch (id) {
	case RP_OPT_OUTPUT:
		if ((rc = check_output_template(value, q, origin, err, err_size)))
			return rc;
		rc = replace(&opts->output, value);
		break;
	case RP_OPT_METRICS:
		if ((rc = check_metric_list(value, q, origin, err, err_size)))
			return rc;
		rc = replace(&opts->metrics, value);
		break;
	case RP_OPT_NVTX_INCLUDE:
	case RP_OPT_NVTX_EXCLUDE: {
		char ***list = id == RP_OPT_NVTX_INCLUDE ? &opts->nvtx_include : &opts->nvtx_exclude;
		size_t *count = id == RP_OPT_NVTX_INCLUDE ? &opts->nvtx_include_count :
			&opts->nvtx_exclude_count;
		if (*count == RP_OPTION_MAX_LIST) {
			snprintf(err, err_size, "%s '%s': more than %d expressions; at most %d are "
				 "accepted", origin, q, RP_OPTION_MAX_LIST, RP_OPTION_MAX_LIST);
			return -EINVAL;
		}
		rc = append(list, count, value);
		break;
	}
	case RP_OPT_KERNEL_NAME:
		if ((rc = check_kernel_name(value, q, origin, err, err_size)))
			return rc;
		rc = replace(&opts->kernel_name, value);
		break;
	default:
		rc = store(opts, d, number, real);
	}
	if (rc == 0)
		rc = replace(&opts->text[id], value);
	if (rc == -ENOMEM)
		snprintf(err, err_size, "%s: out of memory", origin);
	if (rc == 0)
		opts->given[id] = true;
	return rc;
}

int rp_option_set(struct rp_options *opts, enum rp_option id, const char *value,
		  const char *origin, char *err, size_t err_size)
{
	int rc = set_value(opts, id, value, origin, err, err_size);
	return !rc ? 0 : rc == -ENOMEM ? RP_ERR_NO_MEMORY : RP_ERR_FAILED;
}

/* "ORIGIN 'TEXT' is more than ORIGIN 'TEXT'" for two options both given, with their
 * values as the user wrote them. */
static void contradiction(const struct rp_options *opts, enum rp_option low,
			  enum rp_option high, const char *why, char *err, size_t err_size)
{
	char a[64], b[64], qa[RP_QUOTE_SIZE], qb[RP_QUOTE_SIZE];
	snprintf(err, err_size, "%s '%s' is more than %s '%s'; %s",
		 rp_option_origin(opts, low, a, sizeof(a)),
		 rp_quote(opts->text[low] ? opts->text[low] : "", qa, sizeof(qa)),
		 rp_option_origin(opts, high, b, sizeof(b)),
		 rp_quote(opts->text[high] ? opts->text[high] : "", qb, sizeof(qb)), why);
}

/* The launch__ metrics of --metrics: each one rangeprof supplies (launch_metrics.h), and
 * only where a workload is one kernel launch. 0, or RP_ERR_FAILED with the message. */
static int check_launch_metrics(const struct rp_options *opts, char *err, size_t err_size)
{
	char m[64], o[64], q[RP_QUOTE_SIZE];
	for (const char *p = opts->metrics ? opts->metrics : ""; *p;) {
		size_t len = strcspn(p, ",");
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)len, p);
		p += len + (p[len] == ',');
		if (!rp_metric_is_launch(name, strlen(name)))
			continue;
		rp_option_origin(opts, RP_OPT_METRICS, m, sizeof(m));
		rp_quote(name, q, sizeof(q));
		if (!rp_launch_metric_find(name, strlen(name))) {
			snprintf(err, err_size, "%s: '%s' is not one of the launch__ metrics rangeprof "
				 "supplies: %s", m, q, rp_launch_metric_names());
			return RP_ERR_FAILED;
		}
		enum rp_option mode = opts->replay_mode == RP_REPLAY_RANGE ? RP_OPT_REPLAY_MODE :
			opts->graph_profiling == RP_GRAPH_GRAPH ? RP_OPT_GRAPH_PROFILING : RP_OPT_COUNT;
		if (mode != RP_OPT_COUNT) {
			snprintf(err, err_size, "%s: '%s' describes one kernel launch, and %s '%s' "
				 "measures %s as one workload; use %s", m, q,
				 rp_option_origin(opts, mode, o, sizeof(o)), opts->text[mode],
				 mode == RP_OPT_REPLAY_MODE ? "each NVTX range" : "each graph launch",
				 mode == RP_OPT_REPLAY_MODE ? "--replay-mode kernel" :
				 "--graph-profiling node (each kernel node its own launch)");
			return RP_ERR_FAILED;
		}
	}
	return 0;
}

int rp_options_check(struct rp_options *opts, char *err, size_t err_size)
{
	if (check_launch_metrics(opts, err, err_size))
		return RP_ERR_FAILED;
	/* A bound the user gave moves the default one it would contradict: --runs-max 5
	 * alone means at most 5 runs, so at least 5 too, not a refusal of the default
	 * --runs-min 10 (which the user never wrote, and which --runs 3 does not use). */
	if (opts->runs_min > opts->runs_max) {
		if (opts->given[RP_OPT_RUNS_MIN] && opts->given[RP_OPT_RUNS_MAX]) {
			contradiction(opts, RP_OPT_RUNS_MIN, RP_OPT_RUNS_MAX, "expected at most "
				      "as many runs as the maximum", err, err_size);
			return RP_ERR_FAILED;
		}
		if (opts->given[RP_OPT_RUNS_MIN])
			opts->runs_max = opts->runs_min;
		else
			opts->runs_min = opts->runs_max;
	}
	if (opts->thermal_wait > opts->thermal_continue) {
		if (opts->given[RP_OPT_THERMAL_WAIT] && opts->given[RP_OPT_THERMAL_CONTINUE]) {
			contradiction(opts, RP_OPT_THERMAL_WAIT, RP_OPT_THERMAL_CONTINUE,
				      "a launch must go on at no less headroom than it starts "
				      "waiting at", err, err_size);
			return RP_ERR_FAILED;
		}
		if (opts->given[RP_OPT_THERMAL_WAIT])
			opts->thermal_continue = opts->thermal_wait;
		else
			opts->thermal_wait = opts->thermal_continue;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------ */
/* At run time                                                                          */
/* ------------------------------------------------------------------------------------ */

/* The options a measurement reads when it starts (inject/config.c's configuration), and
 * quiet, which the log reads at each line. */
static const enum rp_option runtime_options[] = {
	RP_OPT_METRICS, RP_OPT_RUNS, RP_OPT_TARGET_CI, RP_OPT_RUNS_MIN, RP_OPT_RUNS_MAX,
	RP_OPT_RUNS_BATCH, RP_OPT_RUNS_TIME_BUDGET, RP_OPT_CACHE_CONTROL, RP_OPT_CLOCK_CONTROL,
	RP_OPT_THERMAL_CONTROL, RP_OPT_THERMAL_WAIT, RP_OPT_THERMAL_CONTINUE,
	RP_OPT_THERMAL_TIMEOUT, RP_OPT_REPLAY_MODE, RP_OPT_RANGE_SCOPE, RP_OPT_QUIET,
	RP_OPT_CHILDREN,
};
#define RUNTIME_COUNT (sizeof(runtime_options) / sizeof(runtime_options[0]))

bool rp_option_env_flag(enum rp_option id)
{
	char name[128];
	rp_option_env_name(&table[id], name, sizeof(name));
	const char *v = getenv(name);
	return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"));
}

bool rp_option_runtime(enum rp_option id)
{
	for (size_t i = 0; i < RUNTIME_COUNT; i++)
		if (runtime_options[i] == id)
			return true;
	return false;
}

int rp_options_set_runtime(struct rp_options *opts, const char *name, const char *value,
			   enum rp_option *id_out, char *err, size_t err_size)
{
	const struct rp_option_desc *desc = rp_option_find_long(name, strlen(name));
	if (!desc || !rp_option_runtime(desc->id)) {
		char names[1024] = "";
		size_t n = 0;
		for (size_t i = 0; i < RUNTIME_COUNT; i++)
			n += (size_t)snprintf(names + n, n < sizeof(names) ? sizeof(names) - n : 0,
					      "%s%s", i ? ", " : "", table[runtime_options[i]].name);
		char env[128] = "", q[RP_QUOTE_SIZE];
		if (desc)
			rp_option_env_name(desc, env, sizeof(env));
		snprintf(err, err_size, "option '%s' %s%s%s; the options that can change while "
			 "the process runs are: %s", rp_quote(name, q, sizeof(q)),
			 desc ? "is fixed when rangeprof starts: set " : "is unknown", env,
			 desc ? " before the process starts" : "", names);
		return RP_ERR_FAILED;
	}
	char origin[160];
	snprintf(origin, sizeof(origin), "rangeprof_set_option(\"%s\")", desc->name);
	/* The value alone first, on scratch options: a refused value leaves opts untouched. */
	struct rp_options scratch;
	rp_options_init(&scratch);
	int rc = rp_option_set(&scratch, desc->id, value, origin, err, err_size);
	rp_options_finish(&scratch);
	if (rc)
		return rc;
	char *previous = opts->text[desc->id] ? strdup(opts->text[desc->id]) : NULL;
	if (opts->text[desc->id] && !previous) {
		snprintf(err, err_size, "%s: out of memory", origin);
		return RP_ERR_NO_MEMORY;
	}
	bool was_given = opts->given[desc->id];
	rc = rp_option_set(opts, desc->id, value, origin, err, err_size);
	if (rc == 0 && (rc = rp_options_check(opts, err, err_size)) != 0) {
		/* Contradicts another option (--runs-min above --runs-max): put it back. */
		char ignored[256];
		if (previous)
			rp_option_set(opts, desc->id, previous, origin, ignored, sizeof(ignored));
		opts->given[desc->id] = was_given;
	}
	free(previous);
	if (rc == 0 && id_out)
		*id_out = desc->id;
	return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Environment                                                                          */
/* ------------------------------------------------------------------------------------ */

int rp_option_split_list(const char *value, int (*add)(const char *element, void *arg),
			 void *arg)
{
	size_t len = strlen(value);
	char *element = malloc(len + 1);
	if (!element)
		return -ENOMEM;
	size_t n = 0;
	int rc = 0;
	for (const char *p = value;; p++) {
		if (*p == '\\' && p[1]) {
			/* A backslash and the character after it stay together in the element,
			 * escape and all: the expression parser gives them their meaning ("\;" is
			 * a ';', "\\" a backslash). Taking pairs is what keeps "A\\;B" two
			 * elements, "A\\" and "B". */
			element[n++] = *p++;
			element[n++] = *p;
			continue;
		}
		if (*p == ';' || !*p) {
			element[n] = '\0';
			if (n && (rc = add(element, arg)))
				break;
			n = 0;
			if (!*p)
				break;
			continue;
		}
		element[n++] = *p;
	}
	free(element);
	return rc;
}

char *rp_option_join_list(char *const *elements, size_t count)
{
	size_t size = 1;
	for (size_t i = 0; i < count; i++)
		size += 2 * strlen(elements[i]) + 1;
	char *out = malloc(size), *w = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < count; i++) {
		if (i)
			*w++ = ';';
		/* The split's view of the element: pairs "\x" pass as they are, a lone ';'
		 * gets its backslash. A last lone backslash would pair with the separator. */
		for (const char *p = elements[i]; *p; p++) {
			if (*p == '\\') {
				if (!p[1]) {
					free(out);
					errno = EINVAL;
					return NULL;
				}
				*w++ = *p++;
			} else if (*p == ';') {
				*w++ = '\\';
			}
			*w++ = *p;
		}
	}
	*w = '\0';
	return out;
}

struct env_list_ctx {
	struct rp_options *opts;
	enum rp_option id;
	const char *origin;
	char *err;
	size_t err_size;
};

static size_t list_count(const struct rp_options *opts, enum rp_option id)
{
	return id == RP_OPT_NVTX_INCLUDE ? opts->nvtx_include_count :
	       id == RP_OPT_NVTX_EXCLUDE ? opts->nvtx_exclude_count : 0;
}

static int add_env_element(const char *element, void *arg)
{
	struct env_list_ctx *ctx = arg;
	return set_value(ctx->opts, ctx->id, element, ctx->origin, ctx->err, ctx->err_size);
}

int rp_options_load_env(struct rp_options *opts, char *err, size_t err_size)
{
	for (size_t i = 0; i < RP_OPT_COUNT; i++) {
		char name[64];
		rp_option_env_name(&table[i], name, sizeof(name));
		const char *value = getenv(name);
		if (!value)
			continue;
		if (table[i].command_line_only) {
			opts->env_ignored[i] = true;
			continue;
		}
		int rc;
		if (table[i].kind == RP_KIND_LIST) {
			struct env_list_ctx ctx = { opts, table[i].id, name, err, err_size };
			size_t before = list_count(opts, table[i].id);
			rc = rp_option_split_list(value, add_env_element, &ctx);
			/* ';;;' or '' holds no expression: refused as --nvtx-include '' is,
			 * rather than read as no filter at all (every launch selected). */
			if (!rc && list_count(opts, table[i].id) == before) {
				char q[RP_QUOTE_SIZE];
				snprintf(err, err_size, "%s '%s': expected an NVTX expression; the value "
					 "holds none (';' separates expressions)", name,
					 rp_quote(value, q, sizeof(q)));
				rc = -EINVAL;
			}
		} else {
			rc = set_value(opts, table[i].id, value, name, err, err_size);
		}
		if (rc)
			return rc;
		opts->from_env[i] = opts->given[i];
	}
	return 0;
}

/* Edits (insertions, deletions, substitutions, swaps of two neighbours) that turn a into
 * b, letters compared without case. Names over 64 bytes are no typos of an option's:
 * SIZE_MAX. */
static size_t edits(const char *a, size_t la, const char *b, size_t lb)
{
	enum { MAX = 64 };
	if (la > MAX || lb > MAX)
		return SIZE_MAX;
	size_t d[MAX + 1][MAX + 1];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = toupper((unsigned char)a[i - 1]) != toupper((unsigned char)b[j - 1]);
			size_t best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < best)
				best = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && toupper((unsigned char)a[i - 1]) == toupper((unsigned char)b[j - 2]) &&
			    toupper((unsigned char)a[i - 2]) == toupper((unsigned char)b[j - 1]) &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

/* Whether the shorter of a and b is the longer's beginning up to a '_' (KERNEL and
 * KERNEL_NAME): a word left out, or one too many. */
static bool word_prefix(const char *a, size_t la, const char *b, size_t lb)
{
	if (la > lb)
		return word_prefix(b, lb, a, la);
	return la && la < lb && b[la] == '_' && !strncasecmp(a, b, la);
}

extern char **environ;

void rp_options_env_typos(void (*report)(const char *line, void *arg), void *arg)
{
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "RANGEPROF_", 10))
			continue;
		const char *name = *e + 10;
		size_t len = strcspn(name, "=");
		size_t best = SIZE_MAX, nearest = 0;
		bool known = false;
		for (size_t i = 0; i < RP_OPT_COUNT && !known; i++) {
			char env[64];
			rp_option_env_name(&table[i], env, sizeof(env));
			const char *option = env + 10;
			size_t olen = strlen(option);
			known = olen == len && !memcmp(option, name, len);
			/* A candidate within two edits, or a word longer or shorter; the nearest
			 * by edits (RUNS_MAX_COUNT is RUNS_MAX's, not RUNS'). */
			size_t d = edits(name, len, option, olen);
			if ((d <= 2 || word_prefix(name, len, option, olen)) && d < best) {
				best = d;
				nearest = i;
			}
		}
		/* Beyond that a name is someone else's (the test scripts'
		 * RANGEPROF_TEST_PYTHON, RANGEPROF_SOURCE_ROOT, ...), not a typo of ours. */
		if (known || best == SIZE_MAX)
			continue;
		char q[RP_QUOTE_SIZE], env[64], line[RP_QUOTE_SIZE + 160];
		char *shown = strndup(*e, (size_t)(name - *e) + len);
		rp_option_env_name(&table[nearest], env, sizeof(env));
		snprintf(line, sizeof(line), "%s is not a rangeprof option and is not read; did "
			 "you mean %s?", rp_quote(shown ? shown : "RANGEPROF_?", q, sizeof(q)), env);
		free(shown);
		report(line, arg);
	}
}

/* ------------------------------------------------------------------------------------ */
/* Command line                                                                         */
/* ------------------------------------------------------------------------------------ */

static void free_list_option(struct rp_options *opts, enum rp_option id)
{
	if (id == RP_OPT_NVTX_INCLUDE) {
		free_list(opts->nvtx_include, opts->nvtx_include_count);
		opts->nvtx_include = NULL;
		opts->nvtx_include_count = 0;
	} else if (id == RP_OPT_NVTX_EXCLUDE) {
		free_list(opts->nvtx_exclude, opts->nvtx_exclude_count);
		opts->nvtx_exclude = NULL;
		opts->nvtx_exclude_count = 0;
	}
}

int rp_options_parse_argv(struct rp_options *opts, int argc, char *const *argv, int *app,
			  enum rp_action *action, char *err, size_t err_size)
{
	*action = RP_ACTION_RUN;
	int i = 1;
	for (; i < argc; i++) {
		const char *arg = argv[i];
		char q[RP_QUOTE_SIZE];
		if (!strcmp(arg, "--")) {
			i++;
			break;
		}
		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			*action = RP_ACTION_HELP;
			break;
		}
		if (!strcmp(arg, "--version")) {
			*action = RP_ACTION_VERSION;
			break;
		}
		if (arg[0] != '-' || !arg[1])
			break;
		const struct rp_option_desc *d;
		const char *value = NULL;
		char spelled[128];
		if (arg[1] == '-') {
			const char *name = arg + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			if (!(d = rp_option_find_long(name, len))) {
				snprintf(err, err_size, "unknown option '%s'; see 'rangeprof --help'",
					 rp_quote(arg, q, sizeof(q)));
				return -EINVAL;
			}
			snprintf(spelled, sizeof(spelled), "--%s", d->name);
			if (eq)
				value = eq + 1;
		} else {
			if (!(d = rp_option_find_short(arg[1]))) {
				snprintf(err, err_size, "unknown option '%s'; see 'rangeprof --help'",
					 rp_quote(arg, q, sizeof(q)));
				return -EINVAL;
			}
			snprintf(spelled, sizeof(spelled), "-%c", d->short_name);
			if (arg[2])
				value = arg + 2;
		}
		if (d->kind == RP_KIND_FLAG) {
			if (value) {
				snprintf(err, err_size, "%s takes no value; see 'rangeprof --help'",
					 spelled);
				return -EINVAL;
			}
			value = "1";
		} else if (!value) {
			/* "-c -- ./app" must not take the separator as the count. */
			if (i + 1 >= argc || !strcmp(argv[i + 1], "--")) {
				snprintf(err, err_size, "%s needs a value (%s); see 'rangeprof --help'",
					 spelled, d->metavar ? d->metavar : "VALUE");
				return -EINVAL;
			}
			value = argv[++i];
		}
		/* The command line replaces what the environment said, lists included. */
		if (opts->from_env[d->id]) {
			free_list_option(opts, d->id);
			opts->from_env[d->id] = false;
		}
		int rc = set_value(opts, d->id, value, spelled, err, err_size);
		if (rc)
			return rc;
	}
	*app = i;
	return 0;
}

const char *rp_option_origin(const struct rp_options *opts, enum rp_option id, char *buf,
			     size_t size)
{
	const struct rp_option_desc *d = &table[id];
	if (opts->from_env[id])
		rp_option_env_name(d, buf, size);
	else if (opts->given[id])
		snprintf(buf, size, "--%s", d->name);
	else
		snprintf(buf, size, "--%s (default)", d->name);
	return buf;
}

/* ------------------------------------------------------------------------------------ */
/* Output path                                                                          */
/* ------------------------------------------------------------------------------------ */

int rp_output_path_expand(const char *templ, pid_t pid, char *out, size_t out_size,
			  char *err, size_t err_size)
{
	size_t n = 0;
	for (const char *p = templ; *p; p++) {
		char piece[256];
		const char *add = piece;
		if (*p != '%') {
			piece[0] = *p;
			piece[1] = '\0';
		} else if (p[1] == 'p') {
			snprintf(piece, sizeof(piece), "%ld", (long)pid);
			p++;
		} else if (p[1] == 'h') {
			if (gethostname(piece, sizeof(piece) - 1))
				snprintf(piece, sizeof(piece), "unknown-host");
			piece[sizeof(piece) - 1] = '\0';
			p++;
		} else if (p[1] == '%') {
			add = "%";
			p++;
		} else if (p[1] == 'q' && p[2] == '{') {
			/* As ncu: %q{RANK} gives each rank of a job its own file. An unset
			 * variable is empty, since the launcher checks the path in its own
			 * environment, before torchrun and the like set RANK for the ranks. */
			const char *name = p + 3;
			size_t len = 0;
			while (name[len] == '_' || isalnum((unsigned char)name[len]))
				len++;
			if (!len || name[len] != '}' || isdigit((unsigned char)name[0])) {
				snprintf(err, err_size, "'%%q{' at character %zu: expected a variable "
					 "name and '}', as in %%q{RANK}", (size_t)(p - templ) + 1);
				return -EINVAL;
			}
			char var[256];
			if (len >= sizeof(var)) {
				/* Cut short, it would name another variable. */
				snprintf(err, err_size, "'%%q{' at character %zu: a variable name of "
					 "%zu characters; at most %zu are accepted",
					 (size_t)(p - templ) + 1, len, sizeof(var) - 1);
				return -EINVAL;
			}
			snprintf(var, sizeof(var), "%.*s", (int)len, name);
			add = getenv(var);
			if (!add)
				add = "";
			p += 3 + len;
		} else {
			/* The character after '%' may be any byte: shown escaped. */
			char c[RP_QUOTE_SIZE];
			rp_quote((char[]){ p[1], 0 }, c, sizeof(c));
			snprintf(err, err_size,
				 "unknown escape '%%%s' at character %zu; accepted are %%p (pid), "
				 "%%h (host name), %%q{ENV} (a variable) and %%%%", c,
				 (size_t)(p - templ) + 1);
			return -EINVAL;
		}
		size_t len = strlen(add);
		if (n + len + 1 > out_size) {
			snprintf(err, err_size, "the expanded path is too long");
			return -ENAMETOOLONG;
		}
		memcpy(out + n, add, len);
		n += len;
	}
	out[n] = '\0';
	return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Help                                                                                 */
/* ------------------------------------------------------------------------------------ */

void rp_options_print_help(FILE *out, const char *program)
{
	fprintf(out,
		"usage: %s [options] [--] application [arguments...]\n"
		"Measures the kernels an unmodified CUDA application launches inside the selected\n"
		"NVTX ranges, replaying each selected launch under the CUPTI range profiler.\n"
		"Every option can also be given as an environment variable RANGEPROF_<NAME>.\n\n"
		"options:\n",
		program);
	for (size_t i = 0; i < RP_OPT_COUNT; i++) {
		const struct rp_option_desc *d = &table[i];
		char left[64], env[64];
		int n = 0;
		if (d->short_name)
			n = snprintf(left, sizeof(left), "-%c, ", d->short_name);
		else
			n = snprintf(left, sizeof(left), "    ");
		snprintf(left + n, sizeof(left) - (size_t)n, "--%s%s%s", d->name,
			 d->metavar ? " " : "", d->metavar ? d->metavar : "");
		rp_option_env_name(d, env, sizeof(env));
		fprintf(out, "  %-28s %s\n", left, d->help);
		if (d->command_line_only)
			fprintf(out, "  %-28s (command line only)\n", "");
		else if (d->default_value)
			fprintf(out, "  %-28s (default: %s; env %s)\n", "", d->default_value, env);
		else
			fprintf(out, "  %-28s (env %s)\n", "", env);
	}
	fprintf(out, "  %-28s %s\n", "-h, --help", "print this help and exit");
	fprintf(out, "  %-28s %s\n", "    --version", "print rangeprof's version and exit");
}
