/* common/options.h - every rangeprof option, defined once.
 * The table in options.c is the single source for the launcher's argument parsing and
 * --help, and for the library's reading of RANGEPROF_* environment variables. libc only. */
#ifndef COMMON_OPTIONS_H
#define COMMON_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

enum rp_option {
	RP_OPT_OUTPUT,
	RP_OPT_METRICS,
	RP_OPT_NVTX_INCLUDE,
	RP_OPT_NVTX_EXCLUDE,
	RP_OPT_KERNEL_NAME,
	RP_OPT_LAUNCH_SKIP,
	RP_OPT_LAUNCH_COUNT,
	RP_OPT_RUNS,
	RP_OPT_TARGET_CI,
	RP_OPT_RUNS_MIN,
	RP_OPT_RUNS_MAX,
	RP_OPT_RUNS_BATCH,
	RP_OPT_RUNS_TIME_BUDGET,
	RP_OPT_CACHE_CONTROL,
	RP_OPT_CLOCK_CONTROL,
	RP_OPT_THERMAL_CONTROL,
	RP_OPT_THERMAL_WAIT,
	RP_OPT_THERMAL_CONTINUE,
	RP_OPT_THERMAL_TIMEOUT,
	RP_OPT_MEMORY_SAVE,
	RP_OPT_GRAPH_PROFILING,
	RP_OPT_REPLAY_MODE,
	RP_OPT_RANGE_SCOPE,
	RP_OPT_DEVICE_LOCK_TIMEOUT,
	RP_OPT_BUSY_TIMEOUT,
	RP_OPT_SETUP,
	RP_OPT_CHILDREN,
	RP_OPT_LIST_METRICS,
	RP_OPT_QUIET,
	RP_OPT_COUNT
};

enum rp_option_kind {
	RP_KIND_STRING,
	RP_KIND_LIST,   /* repeatable; in the environment, ';'-separated ('\;' keeps one) */
	RP_KIND_INT,
	RP_KIND_REAL,   /* a decimal number within [real_min, real_max] */
	RP_KIND_CHOICE,
	RP_KIND_FLAG,
};

struct rp_option_desc {
	enum rp_option id;
	const char *name;          /* long option; upper-cased it names RANGEPROF_<NAME> */
	char short_name;           /* 0 when none */
	enum rp_option_kind kind;
	const char *metavar;
	const char *default_value; /* NULL: unset by default */
	const char *choices;       /* RP_KIND_CHOICE: "all|none" */
	long min, max;             /* RP_KIND_INT */
	const char *help;
	/* An action rather than a setting (--list-metrics): a variable left in the
	 * environment must not turn every later run into it, so it has none. */
	bool command_line_only;
	double real_min, real_max;  /* RP_KIND_REAL */
	bool real_min_open;        /* RP_KIND_REAL: real_min itself is refused (> rather than >=) */
	/* RP_KIND_INT (a long), RP_KIND_REAL (a double), RP_KIND_CHOICE (an enum whose values
	 * follow choices' order) and RP_KIND_FLAG (a bool): where struct rp_options keeps the
	 * value, offsetof; strings and lists are set by name. */
	size_t field;
};

enum rp_cache_control { RP_CACHE_ALL, RP_CACHE_NONE };
/* Each choice enum follows its option's choices, in order (options.c stores the index). */
enum rp_clock_control { RP_CLOCK_NONE, RP_CLOCK_BASE };
enum rp_memory_save { RP_MEMORY_SAVE_REACH, RP_MEMORY_SAVE_CHECKPOINT };
enum rp_graph_profiling { RP_GRAPH_NODE, RP_GRAPH_GRAPH, RP_GRAPH_NONE };
enum rp_replay_mode { RP_REPLAY_KERNEL, RP_REPLAY_RANGE };
enum rp_range_scope { RP_RANGE_SCOPE_WHOLE, RP_RANGE_SCOPE_KERNELS };
enum rp_setup { RP_SETUP_EARLY, RP_SETUP_LAZY };
enum rp_thermal_control { RP_THERMAL_AUTO, RP_THERMAL_MANUAL, RP_THERMAL_OFF };

/* opts->runs of --runs auto: run batches until the CI target, a limit or the budget. */
#define RP_RUNS_AUTO 0

struct rp_options {
	char *output;              /* template: %p pid, %h host, %q{ENV}, %% percent */
	char *metrics;             /* comma-separated, as given */
	char **nvtx_include;
	size_t nvtx_include_count;
	char **nvtx_exclude;
	size_t nvtx_exclude_count;
	char *kernel_name;         /* NULL: every kernel */
	long launch_skip;
	long launch_count;         /* -1: unlimited */
	long runs;                 /* RP_RUNS_AUTO: adaptive */
	double target_ci_pct;      /* --runs auto: CI half-width to reach, % of the mean */
	long runs_min, runs_max;   /* --runs auto: bounds of the run count */
	long runs_batch;           /* --runs auto: runs per batch (each pass of the set replays them) */
	double runs_time_budget;   /* --runs auto: seconds of measuring per launch */
	enum rp_cache_control cache_control;
	enum rp_clock_control clock_control;
	enum rp_thermal_control thermal_control;
	double thermal_wait;       /* degrees C of headroom below which a launch waits */
	double thermal_continue;   /* degrees C of headroom at which it goes on */
	long thermal_timeout;      /* seconds a launch waits at most */
	enum rp_memory_save memory_save;
	enum rp_graph_profiling graph_profiling;
	enum rp_replay_mode replay_mode;   /* --replay-mode: a kernel or a whole NVTX range per workload */
	enum rp_range_scope range_scope;   /* --range-scope: what a range's counters and time hold */
	long device_lock_timeout;  /* seconds to wait for another process's turn on a device */
	long busy_timeout;         /* seconds to wait for hardware held outside rangeprof */
	enum rp_setup setup;       /* when a device's profiler is set up: first launch or first measured */
	bool children;             /* under the control API: child processes measure too */
	bool list_metrics;
	bool quiet;
	bool given[RP_OPT_COUNT];  /* set by the user rather than by the default */
	/* Each option's last accepted value as written (lists: their arrays above): what the
	 * launcher exports for the library to parse again, so that no option can be left out
	 * of the environment. */
	char *text[RP_OPT_COUNT];
	bool from_env[RP_OPT_COUNT]; /* ... through RANGEPROF_<NAME>, not the command line */
	bool env_ignored[RP_OPT_COUNT]; /* set in the environment but command-line only */
};

/* Largest number of values of one list option: each is matched at launches. */
#define RP_OPTION_MAX_LIST 256

/* The table, indexed by enum rp_option. */
const struct rp_option_desc *rp_option_table(void);
const struct rp_option_desc *rp_option_find_long(const char *name, size_t name_len);
const struct rp_option_desc *rp_option_find_short(char c);

/* Writes "RANGEPROF_<NAME>" (dashes become underscores) into buf. */
void rp_option_env_name(const struct rp_option_desc *desc, char *buf, size_t size);

/* Defaults for every option. Cannot fail. */
void rp_options_init(struct rp_options *opts);
/* Releases what the options own; the struct may be initialised again. */
void rp_options_finish(struct rp_options *opts);

/* Parses and validates one value. origin is how the user spelled the option ("--runs",
 * "RANGEPROF_RUNS") and appears in the message. A list option gets one more element.
 * Returns 0, or a code of common/error.h: RP_ERR_FAILED with "ORIGIN 'VALUE': what is
 * accepted" in err, RP_ERR_NO_MEMORY with "ORIGIN: out of memory". */
int rp_option_set(struct rp_options *opts, enum rp_option id, const char *value,
		  const char *origin, char *err, size_t err_size);

/* Checks what single values cannot show: --runs-min <= --runs-max, --thermal-wait <=
 * --thermal-continue, and that each launch__ metric of --metrics is one rangeprof
 * supplies (common/launch_metrics.h), asked for where a workload is one kernel launch
 * (not with --replay-mode range or --graph-profiling graph). Called once all options are in (environment, then command line).
 * Where only one of a pair was given, the default of the other moves to meet it
 * (--runs-max 5 lowers runs_min to 5, --thermal-wait 30 raises thermal_continue to 30):
 * only two values the user gave can contradict. Then returns RP_ERR_FAILED with one line
 * naming both options as the user gave them and their values as written; else 0. */
int rp_options_check(struct rp_options *opts, char *err, size_t err_size);

/* Whether the flag option id is on in the environment (RANGEPROF_<NAME> one of the values
 * a flag takes for true): for the decisions made before the options are read (entry.c:
 * whether a child of a process under the control API measures). Never fails: a bad value
 * is false here and refused when the options are read. */
bool rp_option_env_flag(enum rp_option id);

/* Whether option id may change while the process runs (the control API's
 * rangeprof_set_option): the options a measurement reads when it starts, and quiet.
 * The others shape the session (output, filters, set-up) and are fixed at start-up. */
bool rp_option_runtime(enum rp_option id);

/* Sets one option at run time, as rangeprof_set_option does, on opts (read from the
 * environment before): the long name without dashes, the value as the command line takes
 * it. The value is parsed on scratch options first and checked against the others
 * (rp_options_check); a refused value leaves opts as they were. *id_out gets the
 * option's id when it was set. Returns 0, or RP_ERR_NO_MEMORY, or RP_ERR_FAILED with one
 * line in err: an unknown name, one fixed at start-up (naming its RANGEPROF_ variable),
 * each with the list of run-time options, or the value's own refusal. libc only: the
 * library (inject/init.c) and the Python tests' stand-in library (fake_control.c) both
 * call it, so that they accept exactly the same. */
int rp_options_set_runtime(struct rp_options *opts, const char *name, const char *value,
			   enum rp_option *id_out, char *err, size_t err_size);

/* Reads every option's RANGEPROF_* variable (the launcher exports the command line as
 * these): the only place the C code takes its options from the environment. Stops at the
 * first bad value: returns -EINVAL with the message in err. A list variable that holds
 * no expression (';;;', '') is a bad value, as --nvtx-include '' is.
 * The environment is also read elsewhere, each time for something that is not an option:
 * here, rp_options_env_typos walks environ for misspelt RANGEPROF_ names (their values
 * are never read) and rp_output_path_expand reads the variable that -o's %q{VAR} names;
 * inject/init.c reads the launcher's rank and job variables that collector/job.c's table
 * names (RANK, SLURM_PROCID, ...: the session record's "job"), and LD_PRELOAD (inject_init_preloaded: whether librangeprof.so was
 * preloaded, which decides whether CUDA's hook is set and whether options select
 * launches under the control API) and CUDA_INJECTION64_PATH (inject_init_forget_cuda_hook:
 * unset where it names this library, so that children of a process under control do
 * not inherit it); inject/control.c reads CUDA_INJECTION64_PATH (another tool's
 * injection library, set by ncu and nsys, which the driver loads instead of this one);
 * inject/init.c also reads RANGEPROF_CONTROL_PID, which is no option (inject_init_inherited:
 * the process under the control API that pointed the hooks here, whose children measure
 * nothing unless --children);
 * collector/api.c reads CUDA_HOME (one of the places CUPTI is looked for) and
 * LD_LIBRARY_PATH (only to name it when CUPTI is not found); scripts/launcher.c reads
 * LD_PRELOAD to put librangeprof.so first in it. The Python package reads its own
 * (python/rangeprof/_control.py, _native.py, analyze.py). */
int rp_options_load_env(struct rp_options *opts, char *err, size_t err_size);

/* Calls report with one line for each RANGEPROF_ variable of the environment that is no
 * option's but is within two edits of one, or one '_'-word longer or shorter (a typo
 * such as RANGEPROF_RUN, RANGEPROF_KERNEL): "RANGEPROF_RUN is not a rangeprof option and
 * is not read; did you mean RANGEPROF_RUNS?". Other RANGEPROF_ names are not ours to
 * judge (the test scripts' RANGEPROF_TEST_PYTHON, RANGEPROF_SOURCE_ROOT, ...) and are
 * left alone. rp_options_load_env does not call it: a refusal comes first. */
void rp_options_env_typos(void (*report)(const char *line, void *arg), void *arg);

/* Splits an environment value of a list option on ';'. A backslash and the character
 * after it stay together in the element, escape and all ("\;" does not split, and
 * neither does the ';' of "\\;": that is a backslash, then a separator). Empty elements
 * are skipped. Calls add(element) for each; returns the first non-zero result of add,
 * or 0. */
int rp_option_split_list(const char *value, int (*add)(const char *element, void *arg),
			 void *arg);
/* Joins list elements into one environment value that rp_option_split_list splits back
 * into the same elements (a lone ';' comes back as "\;", which expressions read as the
 * same character). Caller frees. NULL with errno ENOMEM, or EINVAL when an element ends
 * in a lone backslash, which no value can carry (no valid expression does). */
char *rp_option_join_list(char *const *elements, size_t count);

enum rp_action { RP_ACTION_RUN, RP_ACTION_HELP, RP_ACTION_VERSION };

/* Parses the launcher's argv up to the application: options set over what the
 * environment gave (a list given on the command line replaces the environment's), then
 * an optional "--". *app is the index of the application's first word (argc when none);
 * -h/--help and --version stop parsing and set *action. Returns 0, or -EINVAL with one
 * line in err naming the option and the value. */
int rp_options_parse_argv(struct rp_options *opts, int argc, char *const *argv, int *app,
			  enum rp_action *action, char *err, size_t err_size);

/* How the user gave option id, for messages: "RANGEPROF_NVTX_INCLUDE" when it came from
 * the environment, else "--nvtx-include" (with " (default)" when not given). */
const char *rp_option_origin(const struct rp_options *opts, enum rp_option id, char *buf,
			     size_t size);

/* Expands %p, %h, %q{ENV} (empty when unset) and %% of the output template. Returns 0,
 * or -EINVAL naming the unknown escape, or -ENAMETOOLONG. */
int rp_output_path_expand(const char *templ, pid_t pid, char *out, size_t out_size,
			  char *err, size_t err_size);

/* Checks that the expanded output path can be appended to as the library will open it:
 * an existing regular file or character device (/dev/null) that this process can open
 * for writing, or a new file name (not a directory, '.', or a trailing '/'; at most
 * NAME_MAX bytes) in a directory where this process can create files. FIFOs and sockets
 * are refused: their open would block or fail inside the application. Symbolic links
 * are followed; one to a missing file is refused. Creates nothing. origin names the
 * option in the message. 0 or -EINVAL. */
int rp_output_check(const char *templ, pid_t pid, const char *origin, char *err,
		    size_t err_size);

/* The --help text, generated from the table. */
void rp_options_print_help(FILE *out, const char *program);

#endif
