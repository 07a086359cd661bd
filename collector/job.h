/* collector/job.h - which job and rank a process belongs to, from the variables that
 * torchrun, Open MPI, MPICH/PMI and Slurm set for the processes they start (the session
 * record's "job", doc/records.md). One table of those variables in job.c; the values are
 * handed in through a lookup, so that this file reads no environment itself (inject/init.c
 * gives it getenv) and its tests give it any. Calls libc only. */
#ifndef COLLECTOR_JOB_H
#define COLLECTOR_JOB_H

#include <stdbool.h>
#include <stddef.h>

struct cJSON;

#define COLLECTOR_JOB_MAX_WARNINGS 8

/* A rank member not known (no variable, or one refused): -1. */
struct collector_job {
	const char *launcher;        /* "torchrun", "openmpi", "mpich", "slurm"; NULL: none */
	long rank, local_rank, world_size, local_world_size;
	char id[256];                /* "" when none */
	const char *id_from;         /* the variable the id came from; NULL when none */
	char slurm_step[64];         /* SLURM_STEP_ID, "" when not under srun */
	/* One line per refused value: "RANK='x': expected an integer >= 0; rank null". */
	char warnings[COLLECTOR_JOB_MAX_WARNINGS][1024];
	size_t warning_count;
};

/* Returns a variable's value, or NULL when it is not set. */
typedef const char *(*collector_job_lookup)(const char *name, void *arg);

/* Fills job from the variables lookup gives. The launcher is the first of torchrun,
 * Open MPI, MPICH/PMI, Slurm whose rank variable is set: the innermost launcher started
 * this process (torchrun or mpirun inside a Slurm allocation sets its own rank, and
 * SLURM_PROCID is then the rank of the task that started the launcher). The job id is
 * the launcher's own (TORCHELASTIC_RUN_ID other than "none", PMIX_NAMESPACE, PALS_APID),
 * else SLURM_JOB_ID, else LSB_JOBID or PBS_JOBID (the scheduler's job, also when a
 * launcher has no id of its own). A value that is not a decimal integer in range, or a
 * rank not below the world size, leaves its member unknown and adds a warning; nothing
 * fails. Cannot fail. */
void collector_job_read(collector_job_lookup lookup, void *arg, struct collector_job *job);

/* Adds "job" to a session record: launcher, rank, local_rank, world_size,
 * local_world_size, id, id_from, slurm_step; unknown members null. Returns session. */
struct cJSON *collector_record_add_job(struct cJSON *session, const struct collector_job *job);

#endif
