/* tests/unit/inject/launch_test.c - the CUPTI callback (inject/callback/launch.c) as CUPTI calls it,
 * on the stand-in driver world of fake_world.c with the real select.c, captures.c,
 * allocations.c, graphs.c, graph_measure.c and the measuring files: a launch's ENTER and
 * EXIT, the replay lock held from one to the other while the launch is verified, the
 * guard that lets rangeprof's own driver calls through (its relaunches, and the frees of
 * the copies kept for the next measurement that an allocation makes), the NVTX range
 * hooks of range replay, the control API's gate, captures, graph launches, contexts
 * destroyed, and an application call that fails. No GPU. */
#include <criterion/criterion.h>
#include <cupti.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/api.h"
#include "common/options.h"
#include "inject/early.h"
#include "inject/graph/graphs.h"
#include "inject/inject.h"
#include "inject/callback/launch.h"
#include "inject/output.h"
#include "inject/range/range.h"
#include "inject/callback/select.h"
#include "memory/memory.h"
#include "nvtx_bridge/nvtx_bridge.h"
#include "nvtx_bridge/slots.h"
#include "tests/unit/inject/fake_world.h"

static struct rp_options opts;
static CUpti_SubscriberHandle subscriber = (CUpti_SubscriberHandle)0x5b;

/* ---- the few CUPTI and driver calls launch.c makes that fake_world.c does not (its
 * callback stand-ins aside: the enables are counted here) ---- */

static unsigned enabled_callbacks, enabled_domains;
static CUptiResult enable_result = CUPTI_SUCCESS;

static CUptiResult enable_callback(uint32_t enable, CUpti_SubscriberHandle s,
				   CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	(void)enable, (void)s, (void)domain, (void)cbid;
	enabled_callbacks++;
	return enable_result;
}

static CUptiResult enable_domain(uint32_t enable, CUpti_SubscriberHandle s,
				 CUpti_CallbackDomain domain)
{
	(void)enable, (void)s, (void)domain;
	enabled_domains++;
	return CUPTI_SUCCESS;
}

/* The stream the tests capture on. */
#define CAPTURED_STREAM ((CUstream)0x77)

static CUresult is_capturing(CUstream s, CUstreamCaptureStatus *status)
{
	*status = s == CAPTURED_STREAM ? CU_STREAM_CAPTURE_STATUS_ACTIVE :
					 CU_STREAM_CAPTURE_STATUS_NONE;
	return CUDA_SUCCESS;
}

static CUptiResult callback_name(CUpti_CallbackDomain d, uint32_t cbid, const char **name)
{
	(void)d, (void)cbid;
	*name = "cuSomething";
	return CUPTI_SUCCESS;
}

static CUresult no_params(CUfunction f, size_t i, size_t *offset, size_t *size)
{
	(void)f, (void)i, (void)offset, (void)size;
	return CUDA_ERROR_INVALID_VALUE;
}

/* rangeprof's own relaunches come back through the callback, as CUPTI calls it for every
 * driver call of the process: the guard must let them through unmeasured (a measurement
 * of them would take the replay lock this thread holds: an abort here). */
static CUresult (*fake_launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
				      unsigned, unsigned, unsigned, CUstream, void **, void **);
static unsigned own_launches_seen;

static CUresult launch_through_the_callback(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
					    unsigned bx, unsigned by, unsigned bz, unsigned smem,
					    CUstream s, void **params, void **extra)
{
	cuLaunchKernel_params p = { .f = f, .gridDimX = gx, .gridDimY = gy, .gridDimZ = gz,
				    .blockDimX = bx, .blockDimY = by, .blockDimZ = bz,
				    .sharedMemBytes = smem, .hStream = s, .kernelParams = params,
				    .extra = extra };
	CUresult rc = CUDA_SUCCESS;
	CUpti_CallbackData cb = { .callbackSite = CUPTI_API_ENTER, .functionParams = &p,
				  .functionReturnValue = &rc, .context = fw.current,
				  .contextUid = 1, .symbolName = "_Z7kernel0Pf" };
	own_launches_seen++;
	inject_launch_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API,
			       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
	rc = fake_launch_kernel(f, gx, gy, gz, bx, by, bz, smem, s, params, extra);
	cb.callbackSite = CUPTI_API_EXIT;
	inject_launch_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API,
			       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
	return rc;
}

/* So are the frees of the saved copies kept for the next measurement, which an
 * application's allocation makes on its own thread (session.c). Between the driver's free
 * and CUPTI's EXIT for it the address is free: another application thread's allocation
 * can be given it, and tracked at its EXIT, first (reuse_next_freed). */
static CUresult (*fake_free)(CUdeviceptr);
static unsigned own_frees_seen;
static bool reuse_next_freed;
static CUdeviceptr given_again;   /* the address another thread was given */

static void *allocate_at(void *arg);

static CUresult free_through_the_callback(CUdeviceptr p)
{
	cuMemFree_v2_params params = { .dptr = p };
	CUresult rc = CUDA_SUCCESS;
	CUpti_CallbackData cb = { .callbackSite = CUPTI_API_ENTER, .functionParams = &params,
				  .functionReturnValue = &rc, .context = fw.current,
				  .contextUid = 1 };
	own_frees_seen++;
	inject_launch_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API,
			       CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &cb);
	rc = fake_free(p);
	if (reuse_next_freed) {
		reuse_next_freed = false;
		given_again = p;
		pthread_t t;
		cr_assert_eq(pthread_create(&t, NULL, allocate_at, &p), 0);
		pthread_join(t, NULL);
	}
	cb.callbackSite = CUPTI_API_EXIT;
	inject_launch_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API,
			       CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &cb);
	return rc;
}

/* ---- set-up ---------------------------------------------------------------------- */

static void set(enum rp_option id, const char *value)
{
	char err[512];
	cr_assert_eq(rp_option_set(&opts, id, value, "test", err, sizeof(err)), 0, "%s", err);
}

static void configure(void)
{
	char err[512] = "";
	cr_assert_eq(inject_launch_configure(&opts, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(inject_launch_enable(subscriber, err, sizeof(err)), 0, "%s", err);
	inject_output_measuring_start();
}

static void set_up(void)
{
	fake_world_init();
	/* The test's thread is the application's: launch.c takes the replay lock itself. */
	inject_session_unlock();
	rp_options_init(&opts);
	/* The early set-up's thread would measure beside the test's (early_set_up_* below). */
	set(RP_OPT_SETUP, "lazy");
	fake_world_callback_stand_ins();
	rp_api.cuptiEnableCallback = enable_callback;
	rp_api.cuptiEnableDomain = enable_domain;
	rp_api.cuStreamIsCapturing = is_capturing;
	rp_api.cuptiGetCallbackName = callback_name;
	rp_api.cuFuncGetParamInfo = no_params;
	fake_launch_kernel = rp_api.cuLaunchKernel;
	rp_api.cuLaunchKernel = launch_through_the_callback;
	fake_free = rp_api.cuMemFree;
	rp_api.cuMemFree = free_through_the_callback;
}

static void tear_down(void)
{
	rp_options_finish(&opts);
	inject_session_lock();
	fake_world_finish();
}

TestSuite(launch, .init = set_up, .fini = tear_down);

/* ---- what the application's threads do -------------------------------------------- */

static cuLaunchKernel_params kernel_params(unsigned f)
{
	return (cuLaunchKernel_params){ .f = (CUfunction)(uintptr_t)(f + 1), .gridDimX = 4,
					.gridDimY = 1, .gridDimZ = 1, .blockDimX = 128,
					.blockDimY = 1, .blockDimZ = 1 };
}

static CUpti_CallbackData callback_data(CUpti_ApiCallbackSite site, const void *params,
					 CUresult *rc, const char *symbol)
{
	return (CUpti_CallbackData){ .callbackSite = site, .functionParams = params,
				     .functionReturnValue = rc, .context = fw.current,
				     .contextUid = 1, .symbolName = symbol };
}

static void driver(CUpti_CallbackId cbid, CUpti_ApiCallbackSite site, const void *params,
		   CUresult rc, const char *symbol)
{
	CUpti_CallbackData cb = callback_data(site, params, &rc, symbol);
	inject_launch_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &cb);
}

/* The application's cuMemAlloc_v2 of bytes at p, ENTER and EXIT. */
static void allocate(CUdeviceptr p, size_t bytes)
{
	cuMemAlloc_v2_params a = { .dptr = &p, .bytesize = bytes };
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_ENTER, &a, CUDA_SUCCESS, NULL);
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_EXIT, &a, CUDA_SUCCESS, NULL);
}

/* Another application thread's allocation of 4096 bytes at *arg returning: its ENTER came
 * before the kept copies' frees began (a small allocation leaves them kept), so only its
 * EXIT falls between the driver's free and the free's EXIT. An ENTER now would wait for
 * the frees under the kept copies' lock (session.c), as an allocation that may need the
 * memory should. */
static void *allocate_at(void *arg)
{
	cuMemAlloc_v2_params a = { .dptr = (CUdeviceptr *)arg, .bytesize = 4096 };
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_EXIT, &a, CUDA_SUCCESS, NULL);
	return NULL;
}

/* Whether memory/track.c lists an allocation of size bytes at base. */
static bool tracked(CUdeviceptr base, size_t size)
{
	struct mem_range *all = NULL;
	size_t n = 0;
	cr_assert_eq(mem_track_snapshot(&all, &n), 0);
	bool found = false;
	for (size_t i = 0; i < n; i++)
		found |= all[i].base == base && all[i].size == size;
	free(all);
	return found;
}

static void launch_enter(unsigned f, const cuLaunchKernel_params *p)
{
	static char names[8][32];
	snprintf(names[f], sizeof(names[f]), "_Z7kernel%uPf", f);
	driver(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, p, CUDA_SUCCESS, names[f]);
}

static void launch_exit(unsigned f, const cuLaunchKernel_params *p, CUresult rc)
{
	static char names[8][32];
	snprintf(names[f], sizeof(names[f]), "_Z7kernel%uPf", f);
	driver(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, p, rc, names[f]);
}

/* One launch of kernel f, ENTER and EXIT, the application's call returning rc. */
static void launch(unsigned f, CUresult rc)
{
	cuLaunchKernel_params p = kernel_params(f);
	launch_enter(f, &p);
	launch_exit(f, &p, rc);
}

static void resource(CUpti_CallbackId cbid, CUcontext ctx)
{
	CUpti_ResourceData rd = { .context = ctx };
	inject_launch_callback(NULL, CUPTI_CB_DOMAIN_RESOURCE, cbid, &rd);
}

/* Whether another thread can take the replay lock now (within 50 ms). */
static void *try_lock(void *arg)
{
	(void)arg;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 50 * 1000 * 1000;
	if (until.tv_nsec >= 1000000000L)
		until.tv_sec++, until.tv_nsec -= 1000000000L;
	bool taken = inject_session_lock_until(&until);
	if (taken)
		inject_session_unlock();
	return (void *)(uintptr_t)taken;
}

static bool replay_lock_free(void)
{
	pthread_t t;
	void *taken = NULL;
	cr_assert_eq(pthread_create(&t, NULL, try_lock, NULL), 0);
	pthread_join(t, &taken);
	return taken != NULL;
}

/* ---- a kernel launch's ENTER and EXIT --------------------------------------------- */

Test(launch, a_first_launch_holds_the_replay_lock_from_its_enter_to_its_exit)
{
	configure();
	cuLaunchKernel_params p = kernel_params(0);
	launch_enter(0, &p);
	cr_assert_not(replay_lock_free(), "verified from ENTER to EXIT: the lock stays held");
	cr_assert_eq(fake_records("run"), 0, "measured after the application's launch ran");
	launch_exit(0, &p, CUDA_SUCCESS);
	cr_assert(replay_lock_free(), "let go at EXIT");
	cr_assert_eq(fake_records("run"), 5, "--runs 5 after the verification");
	cr_assert_str_eq(fake_string(fake_record("summary", 0), "save/strategy"), "reach");
}

Test(launch, an_allocations_enter_that_would_leave_the_device_short_frees_the_kept_copies)
{
	configure();
	fw.range_bytes = (size_t)300 << 20;
	launch(0, CUDA_SUCCESS); /* verified: its inputs and the application's result kept */
	cr_assert_eq(fake_records("summary"), 1);
	cr_assert_eq(fw.backups_freed, 0, "kept at the launch's end");
	cuMemFree_v2_params freed = { 0 };
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, CUPTI_API_ENTER, &freed, CUDA_SUCCESS, NULL);
	cr_assert_eq(fw.backups_freed, 0, "a free takes no memory");
	/* The size is read from the call's parameters: a small one leaves the device roomy. */
	cuMemAlloc_v2_params alloc = { .bytesize = 4096 };
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_ENTER, &alloc, CUDA_SUCCESS, NULL);
	cr_assert_eq(fw.backups_freed, 0, "4096 bytes leave the device a quarter free");
	alloc.bytesize = fw.mem_total;
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_ENTER, &alloc, CUDA_SUCCESS, NULL);
	cr_assert_eq(fw.backups_freed, 2, "both freed before the application's allocation");
	cr_assert(replay_lock_free(), "and the replay lock let go");
}

/* An application that sizes its memory from the free bytes (a KV cache) sees none of them
 * held by rangeprof's kept copies. */
Test(launch, asking_how_much_memory_is_free_frees_the_kept_copies_first)
{
	configure();
	fw.range_bytes = (size_t)300 << 20;
	launch(0, CUDA_SUCCESS);
	cr_assert_eq(fw.backups_freed, 0, "kept at the launch's end");
	size_t free_bytes = 0, total_bytes = 0;
	cuMemGetInfo_v2_params info = { .free = &free_bytes, .total = &total_bytes };
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2, CUPTI_API_ENTER, &info, CUDA_SUCCESS,
	       NULL);
	cr_assert_eq(fw.backups_freed, 2, "given back before the driver answers");
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2, CUPTI_API_EXIT, &info, CUDA_SUCCESS, NULL);
	cr_assert(replay_lock_free());
}

/* A question is not a use of the device: under --setup early, cuMemGetInfo's EXIT starts
 * no set-up, where an allocation's does. */
Test(launch, asking_how_much_memory_is_free_starts_no_early_set_up)
{
	set(RP_OPT_SETUP, "early");
	configure();
	size_t free_bytes = 0, total_bytes = 0;
	cuMemGetInfo_v2_params info = { .free = &free_bytes, .total = &total_bytes };
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2, CUPTI_API_ENTER, &info, CUDA_SUCCESS,
	       NULL);
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2, CUPTI_API_EXIT, &info, CUDA_SUCCESS, NULL);
	for (int i = 0; i < 200 && !fake_records("setup"); i++)
		nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
	cr_assert_eq(fake_records("setup"), 0, "no set-up after 200 ms");
	CUdeviceptr ptr = 0x10000;
	cuMemAlloc_v2_params alloc = { .dptr = &ptr, .bytesize = 4096 };
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_EXIT, &alloc, CUDA_SUCCESS, NULL);
	for (int i = 0; i < 2000 && !fake_records("setup"); i++)
		nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
	cr_assert_eq(fake_records("setup"), 1, "an allocation's EXIT starts it");
	inject_early_wait();
}

/* Memory another process took after the headroom was asked: the application's allocation
 * runs out where the kept copies' headroom said there was room. They go at its EXIT, so
 * that the application's retry (PyTorch's, after emptying its cache) finds the memory. */
Test(launch, an_allocation_that_runs_out_of_memory_frees_the_kept_copies_for_its_retry)
{
	configure();
	fw.range_bytes = (size_t)300 << 20;
	launch(0, CUDA_SUCCESS);
	CUdeviceptr ptr = 0;
	cuMemAlloc_v2_params alloc = { .dptr = &ptr, .bytesize = 4096 };
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_ENTER, &alloc, CUDA_SUCCESS, NULL);
	cr_assert_eq(fw.backups_freed, 0, "4096 bytes fit the headroom");
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_EXIT, &alloc,
	       CUDA_ERROR_OUT_OF_MEMORY, NULL);
	cr_assert_eq(fw.backups_freed, 2, "freed for the retry");
	cr_assert(replay_lock_free());
}

Test(launch, pinned_host_memory_running_out_leaves_the_kept_device_copies)
{
	configure();
	fw.range_bytes = (size_t)300 << 20;
	launch(0, CUDA_SUCCESS);
	void *host = NULL;
	cuMemAllocHost_v2_params alloc = { .pp = &host, .bytesize = 4096 };
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, CUPTI_API_ENTER, &alloc, CUDA_SUCCESS,
	       NULL);
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, CUPTI_API_EXIT, &alloc,
	       CUDA_ERROR_OUT_OF_MEMORY, NULL);
	cr_assert_eq(fw.backups_freed, 0, "freeing device memory gives no host memory");
}

/* The kept copies' frees come back through the callback on the allocating thread, inside
 * the allocation's ENTER: taken for the application's, their EXIT would drop from the
 * tracked allocations the one another thread was given at the freed address meanwhile,
 * and verification would no longer see memory a kernel can write. The timeout stands for
 * a wait that never ends, had the frees' callbacks come back into the kept copies' lock
 * that their own thread holds. */
Test(launch, the_kept_copies_freed_for_an_allocation_are_not_taken_for_the_applications_frees,
     .timeout = 10)
{
	configure();
	allocate(0x100000, 4096);
	cr_assert(tracked(0x100000, 4096), "an application's allocation is tracked at its EXIT");
	fw.range_bytes = (size_t)300 << 20;
	launch(0, CUDA_SUCCESS); /* verified: its inputs and the application's result kept */
	cr_assert_eq(fw.backups_freed, 0, "kept at the launch's end");
	cr_assert_eq(fw.frees, 0, "nothing freed yet");
	own_frees_seen = 0;
	reuse_next_freed = true;
	/* All of the device: the kept copies must go first. */
	cuMemAlloc_v2_params alloc = { .bytesize = fw.mem_total };
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_ENTER, &alloc, CUDA_SUCCESS, NULL);
	cr_assert_eq(fw.backups_freed, 2, "both copies freed before the application's allocation");
	cr_assert_eq(fw.frees, 2, "each once, through the driver");
	cr_assert_eq(own_frees_seen, 2, "and each free came back through the callback");
	cr_assert_neq(given_again, 0, "a copy's address was given to another thread");
	cr_assert(tracked(given_again, 4096), "the other thread's allocation at the freed %#llx "
		  "is still tracked: rangeprof's free of its copy there was not the application's",
		  (unsigned long long)given_again);
	cr_assert(tracked(0x100000, 4096), "and the earlier one");
	cr_assert(replay_lock_free(), "the replay lock is free");
	/* The guard ends with the frees: the allocation's own EXIT is the application's. */
	CUdeviceptr given = 0x200000;
	alloc = (cuMemAlloc_v2_params){ .dptr = &given, .bytesize = 8192 };
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_EXIT, &alloc, CUDA_SUCCESS, NULL);
	cr_assert(tracked(0x200000, 8192), "the application's allocation tracked at its EXIT");
}

Test(launch, a_later_launch_is_its_own_first_run_and_lets_go_at_its_exit)
{
	configure();
	launch(0, CUDA_SUCCESS);
	size_t runs = fake_records("run");
	cuLaunchKernel_params p = kernel_params(0);
	launch_enter(0, &p);
	cr_assert_not(replay_lock_free(), "pending: the application's launch is run 0");
	cr_assert_eq(fake_records("run"), runs, "nothing replayed before it");
	launch_exit(0, &p, CUDA_SUCCESS);
	cr_assert(replay_lock_free());
	cr_assert_eq(fake_records("run"), runs + 5, "runs 1 to 4 replayed after it");
	cr_assert_eq(fake_number(fake_record("run", runs), "launch"), 1, "the second launch");
}

Test(launch, a_failing_application_launch_is_not_measured_and_lets_go_of_the_lock)
{
	configure();
	cuLaunchKernel_params p = kernel_params(0);
	launch_enter(0, &p);
	unsigned syncs = fw.syncs, restores = fw.restores_inputs + fw.restores_result;
	launch_exit(0, &p, CUDA_ERROR_INVALID_VALUE);
	cr_assert(replay_lock_free());
	cr_assert_eq(fake_records("run"), 0, "the application sees its error; nothing ran");
	cr_assert_eq(fw.syncs, syncs, "not waited for after the failed launch");
	cr_assert_eq(fw.restores_inputs + fw.restores_result, restores, "nothing put back");
	/* The next launch of the kernel is verified afresh, then measured. */
	launch(0, CUDA_SUCCESS);
	cr_assert_eq(fake_records("run"), 5);
	cr_assert_eq(fake_number(fake_record("run", 0), "launch"), 1);
}

Test(launch, rangeprofs_own_relaunches_come_back_through_the_callback_unmeasured)
{
	configure();
	launch(0, CUDA_SUCCESS);
	cr_assert_gt(own_launches_seen, 0, "the runs relaunched the kernel through the driver");
	cr_assert_eq(own_launches_seen, fw.relaunches);
	cr_assert_eq(fake_records("summary"), 1, "the relaunches were not measured in turn");
	struct collector_launch_counts c;
	inject_launch_counts(&c);
	cr_assert_eq(c.launches, 1, "nor counted as the application's launches");
}

Test(launch, the_exit_of_an_unselected_launch_touches_nothing)
{
	set(RP_OPT_KERNEL_NAME, "other");
	configure();
	cuLaunchKernel_params p = kernel_params(0);
	launch_enter(0, &p);
	cr_assert(replay_lock_free());
	launch_exit(0, &p, CUDA_SUCCESS);
	cr_assert_eq(fake_records("run"), 0);
	cr_assert_eq(fw.syncs, 0);
	struct collector_launch_counts c;
	inject_launch_counts(&c);
	cr_assert_eq(c.launches, 1, "counted all the same");
	cr_assert_eq(c.name_selected, 0);
}

Test(launch, launch_skip_and_count_pick_the_launches_measured)
{
	set(RP_OPT_LAUNCH_SKIP, "1");
	set(RP_OPT_LAUNCH_COUNT, "1");
	configure();
	for (int i = 0; i < 4; i++)
		launch(0, CUDA_SUCCESS);
	cr_assert_eq(fake_records("summary"), 1);
	cr_assert_eq(fake_number(fake_record("run", 0), "launch"), 1, "the second launch");
}

Test(launch, nothing_is_measured_before_measuring_starts_or_after_it_stops)
{
	char err[512] = "";
	cr_assert_eq(inject_launch_configure(&opts, err, sizeof(err)), 0, "%s", err);
	launch(0, CUDA_SUCCESS);
	inject_output_measuring_start();
	inject_output_measuring_stop();
	launch(0, CUDA_SUCCESS);
	cr_assert_eq(fake_records("run"), 0);
}

/* ---- --setup early (early.c's thread, through launch.c's hook) -------------------- */

Test(launch, early_set_up_runs_on_its_own_thread_under_the_replay_lock_and_leaves_the_context)
{
	set(RP_OPT_SETUP, "early");
	configure();
	cuMemAlloc_v2_params alloc = { 0 };
	CUdeviceptr ptr = 0x10000;
	alloc.dptr = &ptr;
	alloc.bytesize = 4096;
	/* An allocation is the device's first use: its set-up starts there. */
	driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_EXIT, &alloc, CUDA_SUCCESS, NULL);
	/* Waited for as it happens, not through inject_early_wait, which would stop a
	 * set-up that has not yet taken the lock (exit has begun, for early.c). */
	for (int i = 0; i < 2000 && !fake_records("setup"); i++)
		nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
	cr_assert_eq(fake_records("setup"), 1, "the context set up before any launch");
	inject_early_wait();
	cr_assert(replay_lock_free(), "the set-up's thread let go of the lock");
	/* The set-up left the context current on its own thread only (the stand-in driver
	 * has one current context for the process). */
	fw.current = fake_context(0);
	launch(0, CUDA_SUCCESS);
	cr_assert_eq(fake_records("summary"), 1);
	cr_assert_eq(fake_records("setup"), 1, "not set up again by the launch");
}

/* ---- the control API's gate (control.c, through launch.h) ------------------------- */

Test(launch, under_control_only_launches_inside_an_annotation_are_measured)
{
	configure();
	inject_launch_control();
	cr_assert(inject_launch_controlled());
	launch(0, CUDA_SUCCESS);
	cr_assert_eq(fake_records("run"), 0, "the gate is closed: no annotation open");
	inject_launch_annotations_open(1);
	cr_assert_eq(inject_launch_open_annotations(), 1);
	launch(0, CUDA_SUCCESS);
	cr_assert_eq(fake_records("summary"), 1);
	inject_launch_annotations_open(-1);
	launch(0, CUDA_SUCCESS);
	cr_assert_eq(fake_records("summary"), 1, "closed again");
}

/* ---- stream captures (captures.c, fed by the callback) ----------------------------- */

Test(launch, a_launch_while_a_capture_is_under_way_is_counted_and_not_measured)
{
	configure();
	cuStreamBeginCapture_v2_params begin = { .hStream = CAPTURED_STREAM };
	driver(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, CUPTI_API_ENTER, &begin,
	       CUDA_SUCCESS, NULL);
	driver(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, CUPTI_API_EXIT, &begin,
	       CUDA_SUCCESS, NULL);
	/* On another stream: measuring would invalidate the capture all the same. */
	launch(0, CUDA_SUCCESS);
	cr_assert_eq(fake_records("run"), 0);
	cr_assert_eq(fake_messages("warning", "while a stream capture was under way"), 1);
	/* On the capturing stream: only a graph node, measured when its graph is launched. */
	cuLaunchKernel_params p = kernel_params(0);
	p.hStream = CAPTURED_STREAM;
	launch_enter(0, &p);
	launch_exit(0, &p, CUDA_SUCCESS);
	cr_assert_eq(fake_records("run"), 0);
	cr_assert_eq(fake_messages("warning", "only becomes a graph node"), 1);
	CUgraph graph;
	cuStreamEndCapture_params end = { .hStream = CAPTURED_STREAM, .phGraph = &graph };
	driver(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, CUPTI_API_ENTER, &end, CUDA_SUCCESS,
	       NULL);
	driver(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, CUPTI_API_EXIT, &end, CUDA_SUCCESS,
	       NULL);
	launch(0, CUDA_SUCCESS);
	cr_assert_eq(fake_records("summary"), 1, "measured once the capture ended");
	struct collector_launch_counts c;
	inject_launch_counts(&c);
	cr_assert_eq(c.not_replayed, 2, "the two launches during the capture");
}

/* ---- graph launches ---------------------------------------------------------------- */

Test(launch, a_graph_launch_with_graph_profiling_none_is_counted_not_replayed)
{
	set(RP_OPT_GRAPH_PROFILING, "none");
	configure();
	cuGraphLaunch_params p = { .hGraph = (CUgraphExec)0x99, .hStream = NULL };
	driver(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_API_ENTER, &p, CUDA_SUCCESS, NULL);
	driver(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_API_EXIT, &p, CUDA_SUCCESS, NULL);
	cr_assert(replay_lock_free());
	struct collector_launch_counts c;
	inject_launch_counts(&c);
	cr_assert_eq(c.launches, 1);
	cr_assert_eq(c.not_replayed, 1);
	cuGraphExecDestroy_params d = { .hGraphExec = (CUgraphExec)0x99 };
	driver(CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy, CUPTI_API_ENTER, &d, CUDA_SUCCESS, NULL);
	driver(CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy, CUPTI_API_EXIT, &d, CUDA_SUCCESS, NULL);
}

Test(launch, a_graph_rangeprof_never_saw_instantiated_is_not_measured)
{
	set(RP_OPT_GRAPH_PROFILING, "node");
	configure();
	cuGraphLaunch_params p = { .hGraph = (CUgraphExec)0x99, .hStream = NULL };
	driver(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_API_ENTER, &p, CUDA_SUCCESS, NULL);
	cr_assert(replay_lock_free(), "given back after the graph launch");
	cr_assert_eq(fake_records("run"), 0);
}

/* ---- contexts ---------------------------------------------------------------------- */

Test(launch, a_context_destroyed_drops_its_state_under_the_replay_lock)
{
	configure();
	resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, fw.current);
	launch(0, CUDA_SUCCESS);
	size_t destroys = fw.profiler_destroys;
	resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, fw.current);
	cr_assert_gt(fw.profiler_destroys, destroys, "its range profiler went with it");
	cr_assert(replay_lock_free());
	/* A context with the same handle later starts afresh: verified again. */
	resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, fw.current);
	cuLaunchKernel_params p = kernel_params(0);
	launch_enter(0, &p);
	cr_assert_not(replay_lock_free(), "a first launch again: verified");
	launch_exit(0, &p, CUDA_SUCCESS);
}

/* ---- range replay's NVTX hooks ----------------------------------------------------- */

Test(launch, a_selected_push_pop_range_is_recorded_and_measured_at_its_pop)
{
	set(RP_OPT_NVTX_INCLUDE, "step/");
	set(RP_OPT_REPLAY_MODE, "range");
	configure();
	char err[256] = "";
	cr_assert_eq(inject_launch_set_range_mode(true, err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(enabled_domains, 0, "every driver call of a range is seen");
	bridge_range_push_a("step");
	cr_assert(inject_range_recording());
	cr_assert(replay_lock_free(), "recording does not hold the lock between calls");
	launch(0, CUDA_SUCCESS);
	cr_assert_eq(fake_records("run"), 0, "a launch of the range is the range's");
	bridge_range_pop();
	cr_assert_not(inject_range_recording());
	cr_assert_eq(fake_records("summary"), 1, "the range, measured at its pop");
	cr_assert_eq(fake_number(fake_record("run", 0), "range/kernels"), 1);
	struct collector_launch_counts c;
	inject_launch_counts(&c);
	cr_assert_eq(c.launches, 1, "the range's launch still counts as the process's");
}

Test(launch, a_range_the_filter_does_not_select_is_not_recorded)
{
	set(RP_OPT_NVTX_INCLUDE, "step/");
	set(RP_OPT_REPLAY_MODE, "range");
	configure();
	char err[256] = "";
	cr_assert_eq(inject_launch_set_range_mode(true, err, sizeof(err)), 0, "%s", err);
	bridge_range_push_a("other");
	cr_assert_not(inject_range_recording());
	launch(0, CUDA_SUCCESS);
	bridge_range_pop();
	cr_assert_eq(fake_records("run"), 0, "in range mode a kernel alone is not measured");
}

Test(launch, a_range_that_begins_during_a_capture_is_not_recorded)
{
	set(RP_OPT_NVTX_INCLUDE, "step/");
	set(RP_OPT_REPLAY_MODE, "range");
	configure();
	char err[256] = "";
	cr_assert_eq(inject_launch_set_range_mode(true, err, sizeof(err)), 0, "%s", err);
	cuStreamBeginCapture_v2_params begin = { .hStream = CAPTURED_STREAM };
	driver(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, CUPTI_API_ENTER, &begin,
	       CUDA_SUCCESS, NULL);
	bridge_range_push_a("step");
	cr_assert_not(inject_range_recording(), "its begin would invalidate the capture");
	cr_assert_eq(fake_messages("warning", "a range began while a stream capture"), 1);
	bridge_range_pop();
}

Test(launch, range_mode_needs_the_callbacks_set_up)
{
	char err[256] = "";
	/* Never enabled: no subscriber (inject_launch_enable not called in this process). */
	cr_assert_eq(inject_launch_set_range_mode(true, err, sizeof(err)), -1);
	cr_assert(strstr(err, "callbacks are not set up"), "%s", err);
}

/* ---- enabling the callbacks --------------------------------------------------------- */

Test(launch, a_callback_cupti_refuses_to_enable_is_said)
{
	char err[256] = "";
	cr_assert_eq(inject_launch_configure(&opts, err, sizeof(err)), 0, "%s", err);
	enable_result = CUPTI_ERROR_INVALID_PARAMETER;
	cr_assert_eq(inject_launch_enable(subscriber, err, sizeof(err)), -1);
	cr_assert(strstr(err, "cuptiEnableCallback"), "%s", err);
}

/* ---- the lock rule on this path ----------------------------------------------------- */

#if RP_LOCK_CHECKS
Test(launch, a_launch_on_a_thread_that_holds_the_replay_lock_already_aborts,
     .signal = SIGABRT)
{
	/* What the guard prevents: were a call of ours measured inside a measurement, the
	 * thread would wait for itself. Checked, it aborts naming the lock. */
	configure();
	inject_session_lock();
	launch(0, CUDA_SUCCESS);
}
#endif
