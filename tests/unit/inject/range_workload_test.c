/* tests/unit/inject/range_workload_test.c - range replay's life (inject/range/range_workload.c
 * with the real range_calls.c, range_ops.c, range_replay.c, measure.c, whole_workload.c's
 * whole batch and emit.c): what a range's begin saves, which calls of which thread it records, what its end measures and
 * puts back, the records, and the refusal with its fallback to kernel replay. The NVTX
 * hooks are called as launch.c calls them, with the key the bridge would give. On the
 * stand-ins of fake_world.c, plus the few driver calls a range's replay makes that the
 * kernel and graph workloads do not: no GPU. */
#include <criterion/criterion.h>
#include <cupti.h>
#include <pthread.h>
#include <string.h>

#include "collector/api.h"
#include "inject/inject.h"
#include "inject/range/range.h"
#include "inject/range/range_memory.h"
#include "memory/memory.h"
#include "nvtx_bridge/slots.h"
#include "tests/unit/inject/fake_world.h"

static unsigned memsets, waits;

static CUresult memset_d8(CUdeviceptr dst, unsigned char value, size_t n, CUstream s)
{
	(void)dst, (void)value, (void)n, (void)s;
	memsets++;
	return CUDA_SUCCESS;
}

static CUresult stream_wait(CUstream s, CUevent e, unsigned flags)
{
	(void)s, (void)e, (void)flags;
	waits++;
	return CUDA_SUCCESS;
}

/* A kernel without parameters: the driver's answer past the last one. */
static CUresult no_params(CUfunction f, size_t i, size_t *offset, size_t *size)
{
	(void)f, (void)i, (void)offset, (void)size;
	return CUDA_ERROR_INVALID_VALUE;
}

static CUptiResult context_id(CUcontext ctx, uint32_t *id)
{
	(void)ctx;
	*id = 1;
	return CUPTI_SUCCESS;
}

static CUptiResult callback_name(CUpti_CallbackDomain d, uint32_t cbid, const char **name)
{
	(void)d;
	*name = cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 ? "cuMemAlloc_v2" :
		cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc ? "cuLaunchHostFunc" : "cuSomething";
	return CUPTI_SUCCESS;
}

static pthread_t test_thread;   /* the one holding the replay lock between calls */

static void set_up(void)
{
	test_thread = pthread_self();
	fake_world_init();
	struct inject_config c = fake_config();
	inject_session_configure(&c);
	rp_api.cuMemsetD8Async = memset_d8;
	rp_api.cuStreamWaitEvent = stream_wait;
	rp_api.cuFuncGetParamInfo = no_params;
	rp_api.cuptiGetContextId = context_id;
	rp_api.cuptiGetCallbackName = callback_name;
	memsets = waits = 0;
	inject_range_set_mode(true);
}

TestSuite(range_workload, .init = set_up, .fini = fake_world_finish);

/* The bridge's key of the push/pop range at depth on this thread (default domain). */
static struct nvtx_bridge_range_key pushed(size_t depth)
{
	return (struct nvtx_bridge_range_key){ .depth = depth };
}

/* What launch.c does at a push the filters selected: the range is pushed in the bridge
 * (the records read its snapshot), then opened. */
static struct nvtx_bridge_range_key open_range(const char *name)
{
	int level = bridge_range_push_a(name);
	struct nvtx_bridge_range_key key = pushed((size_t)level);
	inject_range_opened(&key, true, 40);
	return key;
}

static void close_range(struct nvtx_bridge_range_key key)
{
	inject_range_closing(&key, false);
	bridge_range_pop();
}

static bool call(CUpti_CallbackId cbid, const void *params)
{
	CUpti_CallbackData cb = { .callbackSite = CUPTI_API_ENTER, .functionParams = params,
				  .context = fw.current, .contextUid = 1,
				  .symbolName = "_Z7kernel0Pf" };
	/* launch.c calls it before taking the replay lock: it takes the lock itself. */
	bool main_thread = pthread_equal(pthread_self(), test_thread);
	if (main_thread)
		inject_session_unlock();
	bool ours = inject_range_on_call(cbid, &cb);
	if (main_thread)
		inject_session_lock();
	return ours;
}

static void launch_kernel(CUstream stream)
{
	cuLaunchKernel_params p = { .f = (CUfunction)(uintptr_t)1, .gridDimX = 4, .gridDimY = 1,
				    .gridDimZ = 1, .blockDimX = 128, .blockDimY = 1,
				    .blockDimZ = 1, .hStream = stream };
	cr_assert(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p), "the range's own call");
}

static void memset_in_range(void)
{
	cuMemsetD8Async_params p = { .dstDevice = 0x1000, .uc = 7, .N = 64 };
	call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &p);
}

Test(range_workload, a_range_is_saved_as_its_calls_are_issued_replayed_whole_and_its_end_put_back)
{
	mem_track_add(0x7000, 256);    /* the stand-in kernel's reach */
	mem_track_add(0x1000, 4096);   /* the memset's allocation */
	struct nvtx_bridge_range_key key = open_range("mlp");
	cr_assert(inject_range_recording());
	cr_assert_eq(fw.checkpoint_saves, 0, "nothing saved whole at a first occurrence");
	cr_assert_eq(fw.hashes_outside, 1, "every allocation hashed, to learn what it writes");
	launch_kernel(NULL);
	cr_assert_eq(fw.reach_collects_direct, 1, "the kernel's reach, at its ENTER");
	cr_assert_eq(fw.saves_queued, 1, "saved on its stream before it runs");
	memset_in_range();
	cr_assert_eq(fw.saves_queued, 2, "the memset's allocation before the memset");
	launch_kernel(NULL);
	launch_kernel(NULL);
	cr_assert_eq(fw.saves_queued, 2, "memory an earlier call reached is not saved again: "
		     "it may have been written since");
	cr_assert_eq(fw.relaunches, 0, "nothing is replayed while the range runs");
	close_range(key);
	cr_assert_not(inject_range_recording());
	cr_assert_eq(fw.checkpoint_saves, 0, "nor at its end");
	cr_assert_eq(fw.saves_result, 1, "the end state of what it reaches");
	cr_assert_eq(fw.restores_other, 2, "then the begin state put together from the copies "
		     "taken as the calls were issued");
	cr_assert_eq(fw.saves_inputs, 1, "and saved as the runs' inputs");
	cr_assert_eq(fw.relaunches, 3 * 5, "every kernel of the range in each of the 5 runs");
	cr_assert_eq(memsets, 5, "and its memset");
	cr_assert_eq(fw.restores_inputs, 5, "the begin state for each run");
	cr_assert_eq(fw.restores_result, 1, "then the end state for the application");
	cr_assert_eq(fw.flushes, 5, "one flush before each run, none between its kernels");
	cr_assert_eq(fake_records("run"), 5);
	cJSON *run = fake_record("run", 0);
	cr_assert_str_eq(fake_string(run, "workload"), "range");
	cr_assert_str_eq(fake_string(run, "range/name"), "mlp");
	cr_assert_eq(fake_number(run, "range/kernels"), 3);
	cr_assert_eq(fake_number(run, "range/memsets"), 1);
	cr_assert_str_eq(fake_string(run, "kernel"), "3 kernels: kernel0(float*), kernel0(float*), "
			 "kernel0(float*)");
	cr_assert_eq(fake_number(run, "launch"), 40);
	cr_assert_str_eq(fake_string(run, "nvtx_path"), "mlp", "written while the range is open");
	cJSON *summary = fake_record("summary", 0);
	cr_assert_str_eq(fake_string(summary, "save/strategy"), "reach");
}

Test(range_workload, a_call_whose_reach_is_unknown_saves_the_whole_context_at_that_call)
{
	struct nvtx_bridge_range_key key = open_range("mlp");
	launch_kernel(NULL);
	cr_assert_eq(fw.saves_queued, 1);
	memset_in_range();   /* into memory rangeprof did not see allocated */
	cr_assert_eq(fw.checkpoint_saves, 1, "the context as the memset finds it");
	launch_kernel(NULL);
	cr_assert_eq(fw.saves_queued, 1, "nothing more saved call by call");
	close_range(key);
	cr_assert_eq(fw.checkpoint_saves, 3, "then the end state, and the begin state put "
		     "together");
	cr_assert_eq(fw.restores_other, 1, "from that checkpoint with the kernel's memory, "
		     "saved before the kernel, put back over it");
	cr_assert_eq(fw.checkpoint_restores, 1 + 5 + 1, "that checkpoint, each run's begin "
		     "state, the end state for the application");
	cr_assert_eq(fw.checkpoint_frees, 3);
	cr_assert_eq(fake_records("run"), 5);
	cJSON *summary = fake_record("summary", 0);
	cr_assert_str_eq(fake_string(summary, "save/strategy"), "checkpoint");
	cr_assert(strstr(fake_string(summary, "save/why"), "a memset writes memory rangeprof "
			 "did not see allocated"), "%s", fake_string(summary, "save/why"));
}

Test(range_workload, two_streams_are_forked_from_the_first_and_joined_back)
{
	struct nvtx_bridge_range_key key = open_range("streams");
	launch_kernel((CUstream)(uintptr_t)0x10);
	launch_kernel((CUstream)(uintptr_t)0x20);
	close_range(key);
	cr_assert_eq(fake_records("run"), 5);
	cr_assert_eq(waits, 2 * 5, "per run: the second stream waits for the fork, the first "
		     "for the join");
	cJSON *range = cJSON_GetObjectItem(fake_record("run", 0), "range");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(range, "streams")), 2);
}

static void *call_from_another_thread(void *arg)
{
	(void)arg;
	cuLaunchKernel_params p = { .f = (CUfunction)(uintptr_t)1, .gridDimX = 1, .gridDimY = 1,
				    .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1 };
	return (void *)(uintptr_t)call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p);
}

Test(range_workload, a_push_pop_range_takes_only_its_own_threads_calls)
{
	struct nvtx_bridge_range_key key = open_range("mine");
	launch_kernel(NULL);
	pthread_t t;
	void *theirs = NULL;
	pthread_create(&t, NULL, call_from_another_thread, NULL);
	pthread_join(t, &theirs);
	cr_assert_not(theirs, "another thread's launch is not the range's");
	close_range(key);
	cr_assert_eq(fake_number(fake_record("run", 0), "range/kernels"), 1);
}

Test(range_workload, a_nested_range_is_part_of_the_workload_not_its_end)
{
	struct nvtx_bridge_range_key outer = open_range("outer");
	launch_kernel(NULL);
	struct nvtx_bridge_range_key inner = open_range("inner");
	launch_kernel(NULL);
	close_range(inner);
	cr_assert(inject_range_recording(), "the inner range's end is not the workload's");
	cr_assert_eq(fake_records("run"), 0);
	close_range(outer);
	cr_assert_eq(fake_number(fake_record("run", 0), "range/kernels"), 2);
}

Test(range_workload, a_refused_call_is_named_and_the_range_falls_back_to_kernel_replay)
{
	struct nvtx_bridge_range_key key = open_range("hostfn");
	launch_kernel(NULL);
	cuLaunchHostFunc_params p = { 0 };
	cr_assert(call(CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc, &p));
	cr_assert_not(inject_range_recording());
	cr_assert(inject_range_kernel_fallback(), "its later kernels are measured one by one");
	cr_assert_eq(fake_messages("warning", "its driver call #2, cuLaunchHostFunc, runs a "
				   "host function"), 1);
	cr_assert_eq(fake_messages("warning", "after 1 of its kernel launches"), 1);
	cr_assert_eq(fake_messages("warning", "as do its later occurrences"), 1);
	cr_assert_eq(fw.saves_queued, 1, "the kernel's memory was saved before it");
	cr_assert_eq(fw.restores_other, 0, "and is not put back: the memory is the app's");
	close_range(key);
	cr_assert_not(inject_range_kernel_fallback());
	cr_assert_eq(fake_records("run"), 0);
	/* The same range again: kernel by kernel from its begin, nothing saved. */
	key = open_range("hostfn");
	cr_assert(inject_range_kernel_fallback());
	cr_assert_not(inject_range_recording());
	cr_assert_eq(fw.checkpoint_saves, 0);
	cr_assert_eq(fw.saves_queued, 1);
	close_range(key);
	cr_assert_not(inject_range_kernel_fallback());
}

/* One occurrence of range "alloc": a kernel, then an allocation when allocate. */
static void alloc_step(bool allocate)
{
	struct nvtx_bridge_range_key key = open_range("alloc");
	/* launch.c hands the calls to the range only while it records. */
	if (inject_range_recording())
		launch_kernel(NULL);
	cuMemAlloc_v2_params p = { 0 };
	if (allocate && inject_range_recording())
		call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &p);
	close_range(key);
}

Test(range_workload, an_allocation_refuses_only_the_first_occurrences)
{
	alloc_step(true);
	cr_assert_eq(fake_messages("warning", "its next occurrence is tried whole again"), 1);
	alloc_step(false);
	cr_assert_eq(fake_records("run"), 5, "a caching allocator grown at the first "
		     "iteration does not keep the range from being measured");
	alloc_step(true);
	alloc_step(true);
	cr_assert_eq(fake_messages("warning", "as do its later occurrences"), 1,
		     "the third refusal of a name is for good");
	alloc_step(false);
	cr_assert_eq(fake_records("run"), 5, "then kernel by kernel");
}

Test(range_workload, a_range_without_device_work_is_said_and_not_measured)
{
	struct nvtx_bridge_range_key key = open_range("host only");
	close_range(key);
	cr_assert_eq(fake_messages("warning", "made no call that runs on the GPU"), 1);
	cr_assert_eq(fake_records("run"), 0);
	cr_assert_eq(fw.saves_queued + fw.checkpoint_saves, 0, "nothing was saved");
	cr_assert_eq(fw.restores_other + fw.checkpoint_restores, 0, "nor put back");
}

Test(range_workload, an_unselected_range_records_nothing)
{
	int level = bridge_range_push_a("other");
	struct nvtx_bridge_range_key key = pushed((size_t)level);
	inject_range_opened(&key, false, 0);
	cr_assert_not(inject_range_recording());
	cr_assert_eq(fw.checkpoint_saves, 0);
	close_range(key);
}

/* ---- what a range saves (range_memory.c) ---------------------------------------------- */

/* One occurrence of range "step": a kernel (the stand-in reach: 256 bytes at 0x7000) and
 * a memset into the allocation at dst. */
static void step(CUdeviceptr dst)
{
	struct nvtx_bridge_range_key key = open_range("step");
	launch_kernel(NULL);
	cuMemsetD8Async_params p = { .dstDevice = dst, .uc = 1, .N = 16 };
	call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &p);
	close_range(key);
}

Test(range_workload, a_range_learns_its_reach_then_saves_only_that)
{
	mem_track_add(0x7000, 256);
	mem_track_add(0x1000, 4096);
	step(0x1000);
	cr_assert_eq(fw.hashes_outside, 1, "the first occurrence hashes every allocation at its "
		     "begin");
	cr_assert_eq(fw.hashes_again, 1, "and at its end");
	cr_assert_eq(fw.checkpoint_saves, 0, "nothing saved whole while it learns");
	cr_assert_eq(fw.saves_queued, 2, "each call's memory as it was issued");
	cr_assert_eq(fw.reach_collects - fw.reach_collects_direct, 1, "the kernel's whole reach "
		     "read once at the end, for the union and the check that it was saved in "
		     "time alike");
	cr_assert_str_eq(fake_string(fake_record("summary", 0), "save/strategy"), "reach");
	cr_assert_eq(fake_records("run"), 5, "the first occurrence measured");
	step(0x1000);
	cr_assert_eq(fw.checkpoint_saves, 0, "the second saves no checkpoint");
	cr_assert_eq(fw.saves_queued, 2, "nor as its calls are issued");
	cr_assert_eq(fw.hashes_outside, 1, "nor learns again");
	cr_assert_eq(fw.saves_inputs, 2, "the learned reach at its begin");
	cr_assert_eq(fw.saves_result, 2, "and at its end");
	cr_assert_eq(fw.restores_inputs, 10, "each run starts from it");
	cr_assert_eq(fw.restores_result, 2, "the application's end state put back");
	cJSON *summary = fake_record("summary", 1);
	cr_assert_str_eq(fake_string(summary, "save/strategy"), "reach");
	cr_assert_eq(fake_number(summary, "save/bytes"), 256 + 4096,
		     "the kernel's reach and the memset's whole allocation");
	cr_assert_eq(fake_records("run"), 10);
}

Test(range_workload, memory_reached_only_through_device_memory_is_saved_from_the_next_occurrence)
{
	mem_track_add(0x7000, 256);
	mem_track_add(0x1000, 4096);
	mem_track_add(0xa000, 4096);
	fw.reach_through_memory = 0xa000;   /* a pointer array's target: not seen at ENTER */
	step(0x1000);
	cr_assert_eq(fake_messages("warning", "reached memory through pointers stored in device "
				   "memory, which no call before it pointed to"), 1);
	cr_assert_eq(fake_records("run"), 0, "the first is not measured: that memory's begin "
		     "state was not saved");
	step(0x1000);
	cr_assert_eq(fake_records("run"), 5, "the second saves it at its begin");
	cr_assert_eq(fake_number(fake_record("summary", 0), "save/bytes"), 256 + 2 * 4096);
	cr_assert_eq(fw.checkpoint_saves, 0);
}

Test(range_workload, a_range_that_writes_outside_its_reach_keeps_saving_whole)
{
	mem_track_add(0x1000, 4096);
	fw.wrote_outside = true;   /* the stand-in hashes an allocation at 0x9000 */
	step(0x1000);
	cr_assert_eq(fake_messages("warning", "wrote outside the memory its calls' parameters "
				   "reach"), 1);
	cr_assert_eq(fake_records("run"), 0, "the first is not measured: what it wrote outside "
		     "was not saved as its calls were issued");
	step(0x1000);
	cr_assert_eq(fw.checkpoint_saves, 2, "the next one saved whole, begin and end");
	cr_assert_eq(fw.saves_inputs, 0);
	cr_assert_eq(fw.hashes_outside, 1, "learning stopped after the first");
	cr_assert_eq(fake_records("run"), 5, "and measured");
}

Test(range_workload, a_range_writing_untracked_memory_keeps_saving_whole)
{
	step(0x1000);   /* no allocation tracked there */
	cr_assert_eq(fake_messages("warning", "a memset writes memory rangeprof did not see "
				   "allocated"), 1);
	cr_assert_eq(fw.checkpoint_saves, 3, "saved whole at the memset (then the end state, "
		     "and the begin state put together)");
	step(0x1000);
	cr_assert_eq(fw.saves_inputs, 0);
	cr_assert_eq(fw.checkpoint_saves, 5, "the next one saved whole at its begin and end");
	cr_assert_eq(fake_records("run"), 10);
}

Test(range_workload, an_occurrence_reaching_beyond_the_learned_reach_is_not_measured)
{
	mem_track_add(0x1000, 4096);
	mem_track_add(0x3000, 4096);
	step(0x1000);
	step(0x3000);   /* the memset now writes an allocation the first did not */
	cr_assert_eq(fake_messages("warning", "reached memory its earlier occurrences did not "
				   "(4096 bytes more)"), 1);
	cr_assert_eq(fake_records("run"), 5, "only the first measured");
	cr_assert_eq(fw.restores_inputs, 5, "the second put nothing back: the memory is the "
		     "application's");
	/* Memory handed out in turns, as a caching allocator does: both are covered now. */
	step(0x3000);
	step(0x1000);
	cr_assert_eq(fake_records("run"), 15, "the next ones measured");
	cr_assert_eq(fw.checkpoint_saves, 0, "from the grown union, not saved whole");
	cr_assert_eq(fw.hashes_outside, 1, "nor learned again");
	cr_assert_eq(fake_number(fake_record("summary", 2), "save/bytes"), 256 + 2 * 4096,
		     "the kernel's reach and both allocations");
}

Test(range_workload, a_range_reaching_new_memory_every_time_is_saved_whole_in_the_end)
{
	for (CUdeviceptr a = 0x10000; a < 0x10000 + 16 * 0x1000; a += 0x1000)
		mem_track_add(a, 4096);
	for (CUdeviceptr a = 0x10000; a < 0x10000 + 10 * 0x1000; a += 0x1000)
		step(a);
	cr_assert_eq(fake_messages("warning", "bytes more"), 7, "the union grows 7 times");
	cr_assert_eq(fake_messages("warning", "each next one saves and restores the whole"), 1);
	cr_assert_eq(fake_records("run"), 10, "the first and the last measured");
	cr_assert_eq(fw.checkpoint_saves, 2, "the last saved whole, begin and end");
}

/* An occurrence of range "mixed": step's calls, then an allocation when asked. */
static void mixed_step(CUdeviceptr dst, bool allocate)
{
	struct nvtx_bridge_range_key key = open_range("mixed");
	if (inject_range_recording())
		launch_kernel(NULL);
	cuMemsetD8Async_params m = { .dstDevice = dst, .uc = 1, .N = 16 };
	if (inject_range_recording())
		call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m);
	cuMemAlloc_v2_params a = { 0 };
	if (allocate && inject_range_recording())
		call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a);
	close_range(key);
}

Test(range_workload, learning_anew_after_a_refusal_counts_misses_anew)
{
	for (CUdeviceptr a = 0x10000; a < 0x10000 + 12 * 0x1000; a += 0x1000)
		mem_track_add(a, 4096);
	mixed_step(0x10000, false);   /* learns */
	for (CUdeviceptr a = 0x11000; a <= 0x17000; a += 0x1000)
		mixed_step(a, false);     /* 7 misses, each growing the union */
	cr_assert_eq(fake_messages("warning", "bytes more"), 7);
	mixed_step(0x10000, true);    /* an allocation: refused, tried whole again */
	mixed_step(0x10000, false);   /* learns anew */
	mixed_step(0x18000, false);   /* a miss, the first since */
	cr_assert_eq(fake_messages("warning", "bytes more"), 8, "the union grows again");
	cr_assert_eq(fake_messages("warning", "each next one saves and restores the whole"), 0,
		     "not the eighth miss of the name: its count started anew with the learning");
}

Test(range_workload, memory_save_checkpoint_saves_every_occurrence_whole)
{
	struct inject_config c = fake_config();
	c.memory_save = RP_MEMORY_SAVE_CHECKPOINT;
	inject_session_configure(&c);
	mem_track_add(0x1000, 4096);
	step(0x1000);
	step(0x1000);
	cr_assert_eq(fw.checkpoint_saves, 4, "begin and end of both occurrences, whole");
	cr_assert_eq(fw.saves_inputs, 0, "no learned reach used");
	cr_assert_eq(fw.hashes_outside, 0, "nothing learned");
	cr_assert_str_eq(fake_string(fake_record("summary", 1), "save/why"),
			 "a range: --memory-save checkpoint");
	cr_assert_eq(fake_records("run"), 10);
}

Test(range_workload, a_range_with_a_graph_launch_is_saved_whole)
{
	struct nvtx_bridge_range_key key = open_range("graph");
	cuGraphLaunch_params p = { .hGraph = (CUgraphExec)(uintptr_t)0x6000 };
	cr_assert(call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &p));
	close_range(key);
	cr_assert_eq(fake_messages("warning", "a graph launch: what its nodes reach is not "
				   "collected"), 1);
	cr_assert_eq(fake_records("run"), 5);
	cr_assert_eq(fake_number(fake_record("run", 0), "range/graph_launches"), 1);
	cr_assert_eq(fw.relaunches, 5, "the graph launched again in each run");
}

Test(range_workload, switching_to_kernel_replay_abandons_the_range_being_recorded)
{
	struct nvtx_bridge_range_key key = open_range("mlp");
	launch_kernel(NULL);
	inject_range_set_mode(false);
	cr_assert_not(inject_range_recording(), "no call is recorded any more");
	cr_assert_eq(fake_messages("warning", "--replay-mode was set to kernel"), 1);
	cr_assert_eq(fw.saves_queued, 1, "the kernel's memory, saved before it, dropped");
	cr_assert_eq(fw.restores_other, 0, "not put back");
	close_range(key);
	cr_assert_eq(fake_records("run"), 0);
	inject_range_set_mode(true);
	key = open_range("mlp");
	cr_assert(inject_range_recording(), "a later range is recorded again");
	launch_kernel(NULL);
	close_range(key);
	cr_assert_eq(fake_records("run"), 5);
}

Test(range_workload, a_context_destroyed_while_its_range_runs_ends_the_recording)
{
	struct nvtx_bridge_range_key key = open_range("mlp");
	launch_kernel(NULL);
	inject_range_context_destroyed(fake_context(1));
	cr_assert(inject_range_recording(), "another context's end leaves it alone");
	inject_range_context_destroyed(fw.current);
	cr_assert_not(inject_range_recording());
	cr_assert_eq(fake_messages("warning", "its context was destroyed"), 1);
	close_range(key);
	cr_assert_eq(fake_records("run"), 0);
}

Test(range_workload, a_capture_under_way_at_the_end_leaves_the_range_unmeasured)
{
	struct nvtx_bridge_range_key key = open_range("mlp");
	launch_kernel(NULL);
	cr_assert_eq(fw.saves_queued, 1);
	fw.capture_under_way = true;   /* begun on another thread */
	launch_kernel(NULL);
	inject_range_closing(&key, true);
	bridge_range_pop();
	cr_assert_eq(fake_messages("warning", "a stream capture was under way"), 1);
	cr_assert_eq(fw.syncs, 1, "only the begin's wait for queued work: a wait now would "
		     "invalidate the capture");
	cr_assert_eq(fw.frees_queued, 0, "nor is the copy freed, which might wait");
	cr_assert_eq(fake_records("run"), 0);
	cr_assert_not(inject_range_recording());
	/* The capture over, the next range frees it, after waiting for the work queued. */
	fw.capture_under_way = false;
	key = open_range("other");
	cr_assert_eq(fw.frees_queued, 1);
	cr_assert_eq(fw.syncs, 3, "the begin's, and the wait before freeing");
	close_range(key);
}

Test(range_workload, copies_waiting_for_a_capture_are_forgotten_with_their_context)
{
	struct nvtx_bridge_range_key key = open_range("mlp");
	launch_kernel(NULL);
	fw.capture_under_way = true;
	inject_range_closing(&key, true);
	bridge_range_pop();
	inject_range_context_destroyed(fw.current);
	fw.capture_under_way = false;
	key = open_range("other");
	cr_assert_eq(fw.frees_queued, 0, "its memory went with the context: an address freed "
		     "now could be another allocation's");
	close_range(key);
}

Test(range_workload, a_capture_begun_while_a_first_occurrence_records_stops_its_saving)
{
	mem_track_add(0x7000, 256);
	struct nvtx_bridge_range_key key = open_range("mlp");
	fw.capture_under_way = true;
	launch_kernel(NULL);
	cr_assert_eq(fw.saves_queued, 0, "no allocation while another thread captures");
	fw.capture_under_way = false;
	launch_kernel(NULL);
	cr_assert_eq(fw.saves_queued, 0, "nor later: the occurrence cannot be measured");
	close_range(key);
	cr_assert_eq(fake_messages("warning", "a stream capture began while it ran"), 1);
	cr_assert_eq(fake_records("run"), 0);
}

static bool graph_with_host_node(CUgraphExec exec, CUcontext ctx, char *why, size_t size)
{
	(void)exec, (void)ctx;
	snprintf(why, size, "launches graph 4, which has a host node");
	return false;
}

Test(range_workload, a_graph_that_cannot_be_relaunched_refuses_the_range)
{
	inject_range_set_graph_check(graph_with_host_node);
	struct nvtx_bridge_range_key key = open_range("graph");
	launch_kernel(NULL);
	cuGraphLaunch_params p = { .hGraph = (CUgraphExec)(uintptr_t)0x6000 };
	cr_assert(call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &p));
	cr_assert_not(inject_range_recording());
	cr_assert_eq(fake_messages("warning", "launches graph 4, which has a host node"), 1);
	cr_assert(inject_range_kernel_fallback());
	close_range(key);
	cr_assert_eq(fake_records("run"), 0);
	inject_range_set_graph_check(NULL);
}

/* A program that numbers its ranges must not grow rangeprof's memory without bound. */
Test(range_workload, range_names_remembered_are_bounded)
{
	char name[32];
	for (int i = 0; i < 4096; i++) {
		snprintf(name, sizeof(name), "step %d", i);
		cr_assert_not_null(range_policy_of(name));
	}
	cr_assert_null(range_policy_of("step 4096"), "past 4096 names: none kept");
	cr_assert_not_null(range_policy_of("step 7"), "a name already known is still found");
}

/* A name is kept whole (the bridge's 4096 bytes at most): two long names that share a
 * prefix must not share what a range learned. */
Test(range_workload, a_long_range_name_is_kept_whole)
{
	char name[3001];
	memset(name, 'r', 3000);
	name[3000] = '\0';
	struct nvtx_bridge_range_key key = open_range(name);
	launch_kernel(NULL);
	close_range(key);
	cr_assert_eq(strlen(fake_string(fake_record("run", 0), "range/name")), 3000);
	cr_assert_str_eq(fake_string(fake_record("run", 0), "range/name"), name);
}
