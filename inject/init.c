/* inject/init.c - the session: options from the environment, the CUPTI subscription,
 * the session record, forks, and the table printed at exit.
 * inject_init_once() runs inside cuInit (InitializeInjection); it makes no driver call,
 * since the driver is not ready for them there. Hands the measuring files (config.c) a
 * configuration and launch.c the filters.
 * Calls: launch.c (subscribes the callback), session.c (the configuration), config.c,
 * early.c, output.c, collector/, memory/, common/ (the option table).
 * Called by: entry.c (inject_init_once), control.c (options at run time).
 * Lock: the replay lock (runtime options are set with it held, through
 * inject_launch_lock_replay); not asserted by: inject_init_once, inject_init_late,
 * inject_init_attached, inject_init_describe, inject_init_forget_cuda_hook,
 * inject_init_inherited, inject_init_mark_controller, inject_init_measuring_possible,
 * inject_init_preloaded, inject_initialised (set-up before any callback, flags read once). */
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/api.h"
#include "collector/device.h"
#include "collector/job.h"
#include "collector/jsonl.h"
#include "collector/records.h"
#include "collector/table.h"
#include "common/error.h"
#include "common/log.h"
#include "inject/early.h"
#include "inject/inject.h"
#include "inject/callback/launch.h"
#include "inject/output.h"
#include "memory/memory.h"

/* The options, read once in init() and never written after: everything else gets the
 * values it needs from them. */
static struct rp_options opts;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_once_t options_once = PTHREAD_ONCE_INIT;
/* The environment's options refused: the code load or check returned (0: accepted),
 * which init decides on, and the words it says. */
static int options_rc;
static char options_error[2048];
static atomic_bool initialised, init_settled, late;
/* Under the replay lock: init has configured the session from the options, and has
 * enabled the callbacks (then set_option's changes go on to them). */
static bool configured, callbacks_enabled;
/* The early set-up's warm-up pass under the control API is sized for at least 24 runs with a
 * flush each, so that a notebook's runs may grow up to 24 (Nsight Python's lessons use 20)
 * without a new range profiler object. The first call of a notebook waits for the pass;
 * its time at 48 and at 100 ranges is in doc/measurements.md, "Cost at the physical
 * floor". */
#define INIT_WARM_UP_RANGES 48
/* The control API attached this process (inject_init_attached): its fact alone, not the
 * gate of annotations, which select.c owns. */
static atomic_bool api_attached;
/* Why nothing is measured after init, for rangeprof_info; "" when init went through.
 * init_refused says whether it refused (set after the words, which it then publishes). */
static char init_failure[2048];
static atomic_bool init_refused;
static CUpti_SubscriberHandle subscriber;

static void at_exit(void)
{
	/* A child forked without exec runs the parent's atexit handlers: the table and the
	 * totals are the parent's to print. */
	if (inject_output_is_fork_child())
		return;
	inject_launch_report_totals();
	inject_session_report_totals();
	if (!collector_table_rows()) {
		/* Said even with -q: a run that measured nothing must not look like one that
		 * measured quietly. */
		struct collector_launch_counts counts;
		char why[2048];
		inject_launch_counts(&counts);
		if (collector_nothing_measured_why(&counts, why, sizeof(why)))
			rp_log_note("nothing measured: %s", why);
		return;
	}
	const char *metrics = opts.metrics;
	char first[256];
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(metrics, ","), metrics);
	collector_table_print(first);
}

/* ------------------------------------------------------------------------------------ */
/* Initialisation                                                                       */
/* ------------------------------------------------------------------------------------ */

static const char *job_variable(const char *name, void *arg)
{
	(void)arg;
	return getenv(name);
}

static void write_session_record(void)
{
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	/* argv of the process as the kernel has it: we are not given main's. */
	char *args[256] = { NULL };
	static char cmdline[65536];
	FILE *f = fopen("/proc/self/cmdline", "r");
	if (f) {
		size_t len = fread(cmdline, 1, sizeof(cmdline) - 1, f);
		fclose(f);
		size_t n = 0;
		for (size_t i = 0; i < len && n < 255; i += strlen(cmdline + i) + 1)
			args[n++] = cmdline + i;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	cJSON *session = collector_record_session(
		PROJECT_VERSION, getpid(), host, args, (double)now.tv_sec + now.tv_nsec / 1e9,
		&opts);
	/* What saving device memory may take of the host: bounded, and said. */
	collector_record_add_memory_save(session, opts.memory_save == RP_MEMORY_SAVE_CHECKPOINT ?
					 "checkpoint" : "reach", mem_backup_host_limit(),
					 collector_checkpoint_host_reserve_mb());
	/* Which CUPTI measured: users have several (toolkit, PyTorch's pip package). */
	const struct collector_cupti_info *cupti = collector_api_cupti();
	collector_record_add_cupti(session, cupti ? cupti->path : NULL,
				   cupti ? cupti->found : NULL, cupti ? cupti->version : -1);
	/* Which rank of which job: the launcher's variables (collector/job.c names them). */
	struct collector_job job;
	collector_job_read(job_variable, NULL, &job);
	collector_record_add_job(session, &job);
	inject_output_write_record(session);
	/* After the session line, which must come first in the file. */
	for (size_t i = 0; i < job.warning_count; i++)
		/* Read once: each of the job's warnings is its own (its place in the list). */
		inject_output_report(INJECT_REPORT_JOB, INJECT_CONCERNS(.detail = (long long)i),
				     false, "%s", job.warnings[i]);
}

/* A child forked without exec (multiprocessing's fork, a shell-out before exec) cannot
 * use its parent's CUDA context and must not write into the parent's file: it measures
 * nothing and writes nothing. A child that execs starts afresh from the environment. */
static void in_fork_child(void)
{
	inject_output_fork_child();
	inject_session_fork_child();
	inject_early_fork_child();
}

static void warn_line(const char *line, void *arg)
{
	(void)arg;
	rp_log_warn("%s", line);
}

/* The environment's options, read once: by init, or earlier by the control API's first
 * rangeprof_set_option (before cuInit), whose values then stand over the environment's. */
static void load_options(void)
{
	rp_options_init(&opts);
	options_rc = rp_options_load_env(&opts, options_error, sizeof(options_error));
	if (!options_rc)
		options_rc = rp_options_check(&opts, options_error, sizeof(options_error));
	/* A mistyped RANGEPROF_ variable is not read: said here too, for the raw
	 * LD_PRELOAD form that has no launcher to say it. */
	if (!options_rc)
		rp_options_env_typos(warn_line, NULL);
}

static struct inject_config replay_config(const struct rp_options *o)
{
	return (struct inject_config){
		.runs = (unsigned)o->runs, .target_ci_pct = o->target_ci_pct,
		.runs_min = (unsigned)o->runs_min, .runs_max = (unsigned)o->runs_max,
		.runs_batch = (unsigned)o->runs_batch, .runs_time_budget = o->runs_time_budget,
		.thermal_control = o->thermal_control, .thermal_wait = o->thermal_wait,
		.thermal_continue = o->thermal_continue, .thermal_timeout = o->thermal_timeout,
		.cache_control = o->cache_control,
		.clock_control = o->clock_control, .memory_save = o->memory_save,
		.range_scope = o->range_scope,
		.metrics = o->metrics,
		.device_lock_timeout_ms = o->device_lock_timeout * 1000,
		.busy_timeout_ms = o->busy_timeout * 1000,
		.warm_up_ranges = atomic_load(&api_attached) ? INIT_WARM_UP_RANGES : 0 };
}

/* init's failures: said on stderr and kept for rangeprof_info. */
static void refuse(const char *why)
{
	snprintf(init_failure, sizeof(init_failure), "%s", why);
	atomic_store(&init_refused, true);
	rp_log_error("%s; measuring nothing, the application runs on", why);
}

/* What init configures from the options, under the replay lock: the control API may set
 * an option meanwhile from another thread (rangeprof_prepare's cuInit runs init on a thread
 * of its own while the application goes on). 0, or -1 with the reason in err. */
static int configure_from_options(bool *saving_whole, char *err, size_t err_size)
{
	inject_launch_lock_replay();
	int rc = -1;
	/* Allocations made before a late attach were never seen: no launch's reach can be
	 * shown complete, so memory is saved whole (doc/control-api.md). */
	*saving_whole = atomic_load(&late) && opts.memory_save != RP_MEMORY_SAVE_CHECKPOINT;
	if (*saving_whole)
		opts.memory_save = RP_MEMORY_SAVE_CHECKPOINT;
	rp_log_set_quiet(opts.quiet);
	if (rp_output_check(opts.output, getpid(), "RANGEPROF_OUTPUT", err, err_size) ||
	    inject_launch_configure(&opts, err, err_size) ||
	    collector_api_load("/usr/local/cuda/lib64", err, err_size))
		goto done;
	inject_output_configure(opts.output);
	struct inject_config config = replay_config(&opts);
	inject_session_configure(&config);
	configured = true;
	rc = 0;
done:
	inject_launch_unlock_replay();
	return rc;
}

static void init_steps(void)
{
	char err[2048];
	pthread_once(&options_once, load_options);
	/* The driver has read CUDA's hook by now: children of a process under control (a
	 * notebook's subprocesses) must not inherit it and measure every kernel they launch,
	 * whatever happens below (a refusal returns early), unless --children asks. */
	if (atomic_load(&api_attached) && !opts.children)
		inject_init_forget_cuda_hook();
	if (options_rc) {
		refuse(options_error);
		return;
	}
	bool saving_whole;
	if (configure_from_options(&saving_whole, err, sizeof(err))) {
		refuse(err);
		return;
	}
	CUptiResult r = rp_api.cuptiSubscribe(&subscriber, inject_launch_callback, NULL);
	if (r != CUPTI_SUCCESS) {
		snprintf(err, sizeof(err), "cuptiSubscribe: %s; %s", collector_cupti_error(r),
			 r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ?
			 "another CUPTI client (ncu, nsys, torch.profiler, ...) is attached" :
			 "CUPTI cannot be used here");
		refuse(err);
		return;
	}
	inject_launch_lock_replay(); /* the range mode's switch is set_option's too */
	int range_rc = inject_launch_enable(subscriber, err, sizeof(err)) ||
		inject_launch_set_range_mode(opts.replay_mode == RP_REPLAY_RANGE, err, sizeof(err));
	bool range_unnamed = opts.replay_mode == RP_REPLAY_RANGE && !opts.nvtx_include_count;
	callbacks_enabled = !range_rc;
	inject_launch_unlock_replay();
	if (range_rc) {
		refuse(err);
		return;
	}
	if (range_unnamed)
		rp_log_warn("--replay-mode range without --nvtx-include: only the control API's "
			    "annotations (rangeprof.annotate) are measured, each as one range; "
			    "name the application's ranges with --nvtx-include");
	pthread_atfork(NULL, NULL, in_fork_child);
	inject_output_measuring_start();
	write_session_record();
	if (saving_whole)
		inject_output_report(INJECT_REPORT_LATE_ATTACH,
				     INJECT_CONCERNS(.option = "--memory-save"), false,
			      "rangeprof was attached after CUDA was initialised: the memory "
			      "allocated before is unknown, so each measured launch saves and "
			      "restores the whole context's memory (CUPTI checkpoint), which costs "
			      "more as the process holds more; import rangeprof before CUDA is "
			      "used to save only what each launch reaches");
	atexit(at_exit);
}

/* initialised at the start, settled at the end, whether it measures or refused: between
 * the two (CUPTI loading, on whichever thread called cuInit) the control API takes the
 * process as starting, not as refused. */
static void init(void)
{
	atomic_store(&initialised, true);
	init_steps();
	atomic_store(&init_settled, true);
}

void inject_init_once(void)
{
	pthread_once(&init_once, init);
}

void inject_init_late(void)
{
	atomic_store(&late, true);
	inject_init_once();
}

bool inject_initialised(void)
{
	return atomic_load(&initialised);
}

bool inject_init_measuring_possible(char *why, size_t why_size)
{
	if (inject_output_measuring())
		return true;
	if (atomic_load(&initialised) && !atomic_load(&init_settled))
		return true; /* starting, on another thread: not refused so far */
	snprintf(why, why_size, "%s", atomic_load(&init_refused) ? init_failure :
		 inject_output_is_fork_child() ? "a child forked without exec measures nothing" :
		 "rangeprof stopped measuring in this process (its messages said why)");
	return false;
}

void inject_init_describe(cJSON *o)
{
	pthread_once(&options_once, load_options);
	char path[PATH_MAX], err[256];
	if (opts.output && rp_output_path_expand(opts.output, getpid(), path, sizeof(path), err,
						 sizeof(err)) == 0)
		cJSON_AddStringToObject(o, "output", path);
	else
		cJSON_AddNullToObject(o, "output");
	cJSON_AddStringToObject(o, "memory_save", opts.memory_save == RP_MEMORY_SAVE_CHECKPOINT ?
				"checkpoint" : "reach");
	const struct collector_cupti_info *cupti = collector_api_cupti();
	cJSON *c = cupti ? cJSON_AddObjectToObject(o, "cupti") : cJSON_AddNullToObject(o, "cupti");
	if (cupti && c) {
		cJSON_AddStringToObject(c, "path", cupti->path);
		cJSON_AddStringToObject(c, "from", cupti->found ? cupti->found : "");
		cJSON_AddNumberToObject(c, "version", (double)cupti->version);
	}
}

/* ---- children of a process under the control API --------------------------------- */

/* The variable naming the process under the control API that pointed the hooks at this
 * library (doc/control-api.md): its children inherit the hooks, and measure nothing
 * unless --children. */
#define CONTROL_PID_VARIABLE "RANGEPROF_CONTROL_PID"

/* This library's absolute path. */
static bool self_path(char out[PATH_MAX])
{
	Dl_info self;
	return dladdr((void *)self_path, &self) && self.dli_fname && realpath(self.dli_fname, out);
}

/* RANGEPROF_OUTPUT put in the environment by export_children (not the user's own). */
static bool output_exported;

/* --children under the control API: the hooks, RANGEPROF_CHILDREN and the output template
 * in the environment that processes started from now on inherit (each then measures as
 * under the launcher, into a file of its own beside this process's when the template has
 * %p), or taken out again. CUDA's hook stays until init has run: the driver of this
 * process has yet to read it. Another tool's hook is left alone. */
static void export_children(bool on)
{
	char self[PATH_MAX], children[64], output[64];
	rp_option_env_name(&rp_option_table()[RP_OPT_CHILDREN], children, sizeof(children));
	rp_option_env_name(&rp_option_table()[RP_OPT_OUTPUT], output, sizeof(output));
	if (on) {
		if (!self_path(self))
			return;
		setenv("CUDA_INJECTION64_PATH", self, 0);
		setenv("NVTX_INJECTION64_PATH", self, 0);
		setenv(children, "1", 1);
		if (!getenv(output) && opts.output) {
			setenv(output, opts.output, 1);
			output_exported = true;
		}
		return;
	}
	if (atomic_load(&initialised))
		inject_init_forget_cuda_hook();
	unsetenv(children);
	if (output_exported) {
		unsetenv(output);
		output_exported = false;
	}
}

int inject_init_set_option(const char *name, const char *value, char *err, size_t err_size)
{
	pthread_once(&options_once, load_options);
	/* Under the replay lock: a measurement reads the configuration (and the metrics
	 * string it points to) from its start to its end. */
	inject_launch_lock_replay();
	enum rp_option id = RP_OPT_COUNT;
	int rc = rp_options_set_runtime(&opts, name, value, &id, err, err_size);
	if (rc == 0 && id == RP_OPT_CHILDREN)
		export_children(opts.children);
	if (rc == 0 && id == RP_OPT_QUIET) {
		/* Nsight Python's verbosity SILENT: from now on nothing at all on stderr,
		 * warnings and the exit lines included (doc/control-api.md); the records still
		 * say everything. */
		rp_log_set_quiet(opts.quiet);
		rp_log_set_silent(opts.quiet);
	}
	if (rc == 0 && configured) {
		struct inject_config config = replay_config(&opts);
		inject_session_configure(&config);
		if (id == RP_OPT_REPLAY_MODE && callbacks_enabled)
			rc = inject_launch_set_range_mode(opts.replay_mode == RP_REPLAY_RANGE, err,
							  err_size) ? RP_ERR_FAILED : 0;
	}
	inject_launch_unlock_replay();
	return rc;
}

/* Whether path (absolute) is among LD_PRELOAD's entries. */
bool inject_init_preloaded(const char *path)
{
	const char *list = getenv("LD_PRELOAD");
	char entry[PATH_MAX], resolved[PATH_MAX];
	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, ": ");
		if (len && len < sizeof(entry)) {
			memcpy(entry, p, len);
			entry[len] = '\0';
			if (realpath(entry, resolved) && !strcmp(resolved, path))
				return true;
		}
		p += len;
		p += strspn(p, ": ");
	}
	return false;
}

bool inject_init_sets_up_early(void)
{
	/* Once init configured early.c, its answer; the options may have changed since. */
	if (atomic_load(&init_settled))
		return inject_early_enabled();
	pthread_once(&options_once, load_options);
	/* Before init no set-up holds the replay lock: set_option's alone, a moment. */
	inject_launch_lock_replay();
	bool early = opts.setup == RP_SETUP_EARLY && opts.clock_control != RP_CLOCK_BASE;
	inject_launch_unlock_replay();
	return early;
}

void inject_init_attached(void)
{
	/* The environment's options now, not at cuInit: the caller may take the variables it
	 * set for us (RANGEPROF_OUTPUT) out again, so that children do not inherit them. */
	pthread_once(&options_once, load_options);
	atomic_store(&api_attached, true);
	if (opts.children)
		export_children(true);
	else if (atomic_load(&initialised))
		inject_init_forget_cuda_hook();
}

void inject_init_forget_cuda_hook(void)
{
	char ours[PATH_MAX], theirs[PATH_MAX];
	const char *hook = getenv("CUDA_INJECTION64_PATH");
	if (hook && self_path(ours) && realpath(hook, theirs) && !strcmp(ours, theirs))
		unsetenv("CUDA_INJECTION64_PATH");
}

void inject_init_mark_controller(void)
{
	char pid[32];
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	setenv(CONTROL_PID_VARIABLE, pid, 1);
}

bool inject_init_inherited(void)
{
	const char *marker = getenv(CONTROL_PID_VARIABLE);
	if (!marker || !*marker)
		return false;
	char *end;
	long pid = strtol(marker, &end, 10);
	if (pid == (long)getpid() && !*end)
		return false;
	char self[PATH_MAX];
	return !rp_option_env_flag(RP_OPT_CHILDREN) && !(self_path(self) && inject_init_preloaded(self));
}
