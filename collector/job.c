/* collector/job.c - the job and rank of this process from its launcher's variables: the
 * table below is the one place they are named. Read once, before the session record is
 * written, with getenv as the lookup; tests give a table of their own.
 * Calls: jsonl.c, common/ (log.c's rp_quote; libc and cJSON besides).
 * Called by: inject/ (init.c).
 * Lock: none (constant tables). */
#include "collector/job.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/jsonl.h"
#include "common/log.h"

/* Per launcher, the variables of each member, the first set one counting; each list ends
 * in NULL (at most ALTS - 1 names). */
#define ALTS 4
struct launcher_vars {
	const char *name;
	const char *rank[ALTS], *local_rank[ALTS], *world_size[ALTS], *local_world_size[ALTS];
	const char *id[ALTS];
};

/* In precedence order: the innermost launcher first (collector_job_read). */
static const struct launcher_vars launchers[] = {
	{ "torchrun", { "RANK" }, { "LOCAL_RANK" }, { "WORLD_SIZE" }, { "LOCAL_WORLD_SIZE" },
	  { "TORCHELASTIC_RUN_ID" } },
	{ "openmpi", { "OMPI_COMM_WORLD_RANK" }, { "OMPI_COMM_WORLD_LOCAL_RANK" },
	  { "OMPI_COMM_WORLD_SIZE" }, { "OMPI_COMM_WORLD_LOCAL_SIZE" }, { "PMIX_NAMESPACE" } },
	/* Hydra (MPICH, Intel MPI) sets MPI_LOCALRANKID; Cray's PALS PMI_LOCAL_RANK. */
	{ "mpich", { "PMI_RANK" }, { "MPI_LOCALRANKID", "PMI_LOCAL_RANK" }, { "PMI_SIZE" },
	  { "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE" }, { "PALS_APID" } },
	/* SLURM_TASKS_PER_NODE ("2(x3),1") gives no one number for this node. */
	{ "slurm", { "SLURM_PROCID" }, { "SLURM_LOCALID" }, { "SLURM_NTASKS", "SLURM_NPROCS" },
	  { NULL }, { "SLURM_JOB_ID", "SLURM_JOBID" } },
};

/* The scheduler's job, for a launcher without an id of its own (torchrun inside sbatch). */
static const char *const scheduler_ids[] = { "SLURM_JOB_ID", "SLURM_JOBID", "LSB_JOBID",
					     "PBS_JOBID", NULL };

/* The largest rank or size taken: beyond any machine, and exact in a double. */
#define MAX_COUNT 1000000000L

/* "VAR='value': what" */
static void warn(struct collector_job *job, const char *var, const char *value, const char *what)
{
	if (job->warning_count >= COLLECTOR_JOB_MAX_WARNINGS)
		return;
	char q[RP_QUOTE_SIZE];
	snprintf(job->warnings[job->warning_count++], sizeof(job->warnings[0]), "%s='%s': %s",
		 var, rp_quote(value, q, sizeof(q)), what);
}

/* The first of vars that is set, and its name; NULL when none is. */
static const char *first_set(collector_job_lookup lookup, void *arg, const char *const *vars,
			     const char **name)
{
	for (size_t i = 0; vars[i]; i++) {
		const char *v = lookup(vars[i], arg);
		if (v) {
			*name = vars[i];
			return v;
		}
	}
	return NULL;
}

/* A member's value: -1 when no variable is set or the value is refused (with a warning). */
static long read_count(struct collector_job *job, collector_job_lookup lookup, void *arg,
		       const char *const *vars, long min, const char *member, const char **name)
{
	const char *v = first_set(lookup, arg, vars, name);
	if (!v)
		return -1;
	/* Decimal digits only: strtol would take " 3", "+3", "3 " and "0x3". */
	long n = 0;
	bool ok = *v != '\0';
	for (const char *p = v; ok && *p; p++) {
		ok = *p >= '0' && *p <= '9';
		n = ok ? n * 10 + (*p - '0') : n;
		ok = ok && n <= MAX_COUNT;
	}
	if (!ok || n < min) {
		char what[128];
		snprintf(what, sizeof(what), "expected an integer from %ld to %ld; %s null", min,
			 MAX_COUNT, member);
		warn(job, *name, v, what);
		return -1;
	}
	return n;
}

/* A rank not below its size: both came from the launcher, which one is wrong is not
 * known, so the rank (the member that would mislead) is dropped. */
static void check_below(struct collector_job *job, long *rank, long size, const char *rank_var,
			const char *size_var, const char *rank_member)
{
	if (*rank < 0 || size < 0 || *rank < size)
		return;
	char value[32], what[160];
	snprintf(value, sizeof(value), "%ld", *rank);
	snprintf(what, sizeof(what), "not below %s=%ld; %s null", size_var, size, rank_member);
	warn(job, rank_var, value, what);
	*rank = -1;
}

/* An id: any text up to the buffer; none when empty or "none" (torchrun's default
 * --rdzv-id). *refused names a variable refused (and said) already, to be passed over. */
static void read_id(struct collector_job *job, collector_job_lookup lookup, void *arg,
		    const char *const *vars, const char **refused)
{
	const char *name = NULL;
	const char *v = NULL;
	for (size_t i = 0; vars[i] && !v; i++) {
		if (*refused && !strcmp(vars[i], *refused))
			continue;
		v = lookup(vars[i], arg);
		name = vars[i];
	}
	if (!v || !*v || !strcmp(v, "none"))
		return;
	if (strlen(v) >= sizeof(job->id)) {
		char what[64];
		snprintf(what, sizeof(what), "longer than %zu bytes; id not taken from it",
			 sizeof(job->id) - 1);
		warn(job, name, v, what);
		*refused = name;
		return;
	}
	snprintf(job->id, sizeof(job->id), "%s", v);
	job->id_from = name;
}

void collector_job_read(collector_job_lookup lookup, void *arg, struct collector_job *job)
{
	memset(job, 0, sizeof(*job));
	job->rank = job->local_rank = job->world_size = job->local_world_size = -1;
	const struct launcher_vars *l = NULL;
	const char *refused = NULL;
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]) && !l; i++) {
		const char *name;
		if (first_set(lookup, arg, launchers[i].rank, &name))
			l = &launchers[i];
	}
	if (l) {
		job->launcher = l->name;
		const char *rank_var = NULL, *local_var = NULL, *size_var = NULL, *lsize_var = NULL;
		job->rank = read_count(job, lookup, arg, l->rank, 0, "rank", &rank_var);
		job->local_rank = read_count(job, lookup, arg, l->local_rank, 0, "local_rank",
					     &local_var);
		job->world_size = read_count(job, lookup, arg, l->world_size, 1, "world_size",
					     &size_var);
		job->local_world_size = read_count(job, lookup, arg, l->local_world_size, 1,
						   "local_world_size", &lsize_var);
		check_below(job, &job->rank, job->world_size, rank_var, size_var, "rank");
		check_below(job, &job->local_rank, job->local_world_size, local_var, lsize_var,
			    "local_rank");
		read_id(job, lookup, arg, l->id, &refused);
	}
	if (!job->id_from)
		read_id(job, lookup, arg, scheduler_ids, &refused);
	const char *step = lookup("SLURM_STEP_ID", arg);
	if (step && strlen(step) < sizeof(job->slurm_step))
		snprintf(job->slurm_step, sizeof(job->slurm_step), "%s", step);
}

static bool add_count(cJSON *o, const char *key, long v)
{
	return (v < 0 ? cJSON_AddNullToObject(o, key) : cJSON_AddNumberToObject(o, key, (double)v))
	       != NULL;
}

static bool add_text(cJSON *o, const char *key, const char *v)
{
	return !v || !*v ? cJSON_AddNullToObject(o, key) != NULL
			 : collector_json_add_string(o, key, v) == 0;
}

cJSON *collector_record_add_job(cJSON *session, const struct collector_job *job)
{
	cJSON *o = cJSON_AddObjectToObject(session, "job");
	if (!o)
		return session;
	add_text(o, "launcher", job->launcher);
	add_count(o, "rank", job->rank);
	add_count(o, "local_rank", job->local_rank);
	add_count(o, "world_size", job->world_size);
	add_count(o, "local_world_size", job->local_world_size);
	add_text(o, "id", job->id);
	add_text(o, "id_from", job->id_from);
	add_text(o, "slurm_step", job->slurm_step);
	return session;
}
