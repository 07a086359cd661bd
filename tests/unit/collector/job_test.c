/* tests/unit/collector/job_test.c - collector/job.c: each launcher's rank variables, the
 * precedence between launchers, the job id, and refused values (null plus a warning). */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "collector/job.h"

/* A fake environment: NULL-terminated name, value pairs. */
static const char *lookup(const char *name, void *arg)
{
	const char *const *env = arg;
	for (size_t i = 0; env[i]; i += 2)
		if (!strcmp(env[i], name))
			return env[i + 1];
	return NULL;
}

static struct collector_job read_env(const char *const *env)
{
	struct collector_job job;
	collector_job_read(lookup, (void *)env, &job);
	return job;
}

Test(job, torchrun_variables_give_rank_local_rank_sizes_and_run_id)
{
	const char *env[] = { "RANK", "5", "LOCAL_RANK", "1", "WORLD_SIZE", "16",
			      "LOCAL_WORLD_SIZE", "8", "TORCHELASTIC_RUN_ID", "c0ffee", NULL };
	struct collector_job j = read_env(env);
	cr_assert_str_eq(j.launcher, "torchrun");
	cr_assert_eq(j.rank, 5);
	cr_assert_eq(j.local_rank, 1);
	cr_assert_eq(j.world_size, 16);
	cr_assert_eq(j.local_world_size, 8);
	cr_assert_str_eq(j.id, "c0ffee");
	cr_assert_str_eq(j.id_from, "TORCHELASTIC_RUN_ID");
	cr_assert_eq(j.warning_count, 0);
}

Test(job, slurm_variables_give_procid_localid_ntasks_and_job_id)
{
	const char *env[] = { "SLURM_PROCID", "13", "SLURM_LOCALID", "5", "SLURM_NTASKS", "16",
			      "SLURM_JOB_ID", "4242", "SLURM_STEP_ID", "0", NULL };
	struct collector_job j = read_env(env);
	cr_assert_str_eq(j.launcher, "slurm");
	cr_assert_eq(j.rank, 13);
	cr_assert_eq(j.local_rank, 5);
	cr_assert_eq(j.world_size, 16);
	cr_assert_eq(j.local_world_size, -1, "Slurm gives no one per-node count");
	cr_assert_str_eq(j.id, "4242");
	cr_assert_str_eq(j.id_from, "SLURM_JOB_ID");
	cr_assert_str_eq(j.slurm_step, "0");
}

Test(job, slurm_old_names_count_too)
{
	const char *env[] = { "SLURM_PROCID", "1", "SLURM_NPROCS", "2", "SLURM_JOBID", "77", NULL };
	struct collector_job j = read_env(env);
	cr_assert_eq(j.world_size, 2);
	cr_assert_str_eq(j.id, "77");
	cr_assert_str_eq(j.id_from, "SLURM_JOBID");
}

Test(job, open_mpi_variables_give_comm_world_rank_and_sizes)
{
	const char *env[] = { "OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_LOCAL_RANK", "3",
			      "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_SIZE", "4",
			      "PMIX_NAMESPACE", "prterun-n1-123@1", NULL };
	struct collector_job j = read_env(env);
	cr_assert_str_eq(j.launcher, "openmpi");
	cr_assert_eq(j.rank, 3);
	cr_assert_eq(j.local_rank, 3);
	cr_assert_eq(j.world_size, 4);
	cr_assert_eq(j.local_world_size, 4);
	cr_assert_str_eq(j.id, "prterun-n1-123@1");
}

Test(job, mpich_hydra_variables_give_pmi_rank_and_local_rank_id)
{
	const char *env[] = { "PMI_RANK", "2", "PMI_SIZE", "8", "MPI_LOCALRANKID", "0",
			      "MPI_LOCALNRANKS", "2", NULL };
	struct collector_job j = read_env(env);
	cr_assert_str_eq(j.launcher, "mpich");
	cr_assert_eq(j.rank, 2);
	cr_assert_eq(j.local_rank, 0);
	cr_assert_eq(j.world_size, 8);
	cr_assert_eq(j.local_world_size, 2);
	cr_assert_eq(j.id[0], '\0');
	cr_assert_null(j.id_from);
}

Test(job, cray_pals_local_rank_and_apid)
{
	const char *env[] = { "PMI_RANK", "9", "PMI_SIZE", "16", "PMI_LOCAL_RANK", "1",
			      "PMI_LOCAL_SIZE", "4", "PALS_APID", "a1b2", NULL };
	struct collector_job j = read_env(env);
	cr_assert_eq(j.local_rank, 1);
	cr_assert_eq(j.local_world_size, 4);
	cr_assert_str_eq(j.id, "a1b2");
}

Test(job, torchrun_inside_slurm_takes_torchrun_rank_and_slurm_job_id)
{
	/* srun starts one torchrun per node (SLURM_PROCID is the node's task); torchrun's
	 * RANK is the process's rank. torchrun's default run id "none" is no id. */
	const char *env[] = { "SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_JOB_ID", "99",
			      "RANK", "11", "WORLD_SIZE", "16", "TORCHELASTIC_RUN_ID", "none",
			      NULL };
	struct collector_job j = read_env(env);
	cr_assert_str_eq(j.launcher, "torchrun");
	cr_assert_eq(j.rank, 11);
	cr_assert_eq(j.world_size, 16);
	cr_assert_str_eq(j.id, "99");
	cr_assert_str_eq(j.id_from, "SLURM_JOB_ID");
}

Test(job, open_mpi_under_slurm_takes_the_mpi_rank)
{
	const char *env[] = { "SLURM_PROCID", "0", "SLURM_JOB_ID", "5",
			      "OMPI_COMM_WORLD_RANK", "6", "OMPI_COMM_WORLD_SIZE", "8", NULL };
	struct collector_job j = read_env(env);
	cr_assert_str_eq(j.launcher, "openmpi");
	cr_assert_eq(j.rank, 6);
	cr_assert_str_eq(j.id, "5", "the scheduler's job when the launcher has no id");
}

Test(job, no_launcher_gives_nulls_and_no_warning)
{
	const char *env[] = { "HOME", "/root", NULL };
	struct collector_job j = read_env(env);
	cr_assert_null(j.launcher);
	cr_assert_eq(j.rank, -1);
	cr_assert_eq(j.world_size, -1);
	cr_assert_eq(j.warning_count, 0);
	const char *lsf[] = { "LSB_JOBID", "31", NULL };
	j = read_env(lsf);
	cr_assert_str_eq(j.id, "31", "a scheduler's job without a launcher's rank");
}

Test(job, malformed_values_are_null_with_a_warning_naming_the_value)
{
	const char *env[] = { "RANK", "x1", "LOCAL_RANK", "-1", "WORLD_SIZE", "0",
			      "LOCAL_WORLD_SIZE", " 8", NULL };
	struct collector_job j = read_env(env);
	cr_assert_str_eq(j.launcher, "torchrun");
	cr_assert_eq(j.rank, -1);
	cr_assert_eq(j.local_rank, -1);
	cr_assert_eq(j.world_size, -1);
	cr_assert_eq(j.local_world_size, -1);
	cr_assert_eq(j.warning_count, 4);
	cr_assert_str_eq(j.warnings[0], "RANK='x1': expected an integer from 0 to 1000000000; "
			 "rank null");
	cr_assert_str_eq(j.warnings[2], "WORLD_SIZE='0': expected an integer from 1 to "
			 "1000000000; world_size null");
	const char *huge[] = { "RANK", "99999999999999999999999", "", "", NULL };
	j = read_env(huge);
	cr_assert_eq(j.rank, -1, "no overflow into a wrong rank");
	cr_assert_eq(j.warning_count, 1);
	const char *empty[] = { "RANK", "", NULL };
	j = read_env(empty);
	cr_assert_eq(j.rank, -1);
	cr_assert_eq(j.warning_count, 1);
}

Test(job, rank_not_below_world_size_is_dropped_with_a_warning)
{
	const char *env[] = { "RANK", "8", "WORLD_SIZE", "8", "LOCAL_RANK", "2",
			      "LOCAL_WORLD_SIZE", "2", NULL };
	struct collector_job j = read_env(env);
	cr_assert_eq(j.rank, -1);
	cr_assert_eq(j.world_size, 8);
	cr_assert_eq(j.local_rank, -1);
	cr_assert_eq(j.warning_count, 2);
	cr_assert_str_eq(j.warnings[0], "RANK='8': not below WORLD_SIZE=8; rank null");
}

Test(job, an_overlong_id_is_not_taken)
{
	char id[400];
	memset(id, 'a', sizeof(id) - 1);
	id[sizeof(id) - 1] = '\0';
	const char *env[] = { "SLURM_PROCID", "0", "SLURM_JOB_ID", id, NULL };
	struct collector_job j = read_env(env);
	cr_assert_eq(j.id[0], '\0');
	cr_assert_eq(j.warning_count, 1);
}

Test(job, session_member_job_has_every_member_unknown_ones_null)
{
	const char *env[] = { "SLURM_PROCID", "3", "SLURM_NTASKS", "4", "SLURM_JOB_ID", "7",
			      NULL };
	struct collector_job j = read_env(env);
	cJSON *s = collector_record_add_job(cJSON_CreateObject(), &j);
	char *text = cJSON_PrintUnformatted(s);
	cr_assert_str_eq(text, "{\"job\":{\"launcher\":\"slurm\",\"rank\":3,\"local_rank\":null,"
			 "\"world_size\":4,\"local_world_size\":null,\"id\":\"7\","
			 "\"id_from\":\"SLURM_JOB_ID\",\"slurm_step\":null}}");
	free(text);
	cJSON_Delete(s);
	const char *none[] = { NULL };
	j = read_env(none);
	s = collector_record_add_job(cJSON_CreateObject(), &j);
	text = cJSON_PrintUnformatted(s);
	cr_assert_str_eq(text, "{\"job\":{\"launcher\":null,\"rank\":null,\"local_rank\":null,"
			 "\"world_size\":null,\"local_world_size\":null,\"id\":null,"
			 "\"id_from\":null,\"slurm_step\":null}}");
	free(text);
	cJSON_Delete(s);
}
