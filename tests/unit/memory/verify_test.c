/* tests/unit/memory/verify_test.c - the hashes that show a launch wrote nothing outside its
 * reach, with the driver replaced by stand-ins (no GPU): host segments are hashed on the
 * CPU, device segments are launches recorded here. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/api.h"
#include "common/error.h"
#include "memory/memory.h"
#include "tests/unit/ptxas_check.h"

struct fake_allocation {
	CUdeviceptr base;
	size_t size;
	unsigned type;
	CUcontext context;
};
static struct fake_allocation fakes[4];
static size_t fake_count;
static CUdeviceptr launched[16];
static size_t launch_count;

static CUresult fake_attributes(unsigned n, CUpointer_attribute *attrs, void **data, CUdeviceptr p)
{
	const struct fake_allocation *a = NULL;
	for (size_t i = 0; i < fake_count; i++)
		if (p >= fakes[i].base && p < fakes[i].base + fakes[i].size)
			a = &fakes[i];
	for (unsigned k = 0; k < n; k++) {
		switch (attrs[k]) {
		case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data[k] = a ? a->type : 0; break;
		case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data[k] = a ? a->base : 0; break;
		case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[k] = a ? a->size : 0; break;
		case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(int *)data[k] = 0; break;
		case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[k] = 0; break;
		case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
			*(unsigned long long *)data[k] = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
			break;
		case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data[k] = a ? a->context : NULL; break;
		default: break;
		}
	}
	return CUDA_SUCCESS;
}

static CUresult fake_alloc(CUdeviceptr *p, size_t bytes)
{
	(void)bytes;
	*p = 0x10000;
	return CUDA_SUCCESS;
}

static CUresult fake_free(CUdeviceptr p)
{
	(void)p;
	return CUDA_SUCCESS;
}

static CUresult fake_memset(CUdeviceptr p, unsigned char v, size_t n, CUstream s)
{
	(void)p, (void)v, (void)n, (void)s;
	return CUDA_SUCCESS;
}

static CUresult fake_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			    unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
			    void **extra)
{
	(void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)s;
	(void)extra;
	if (launch_count < 16)
		launched[launch_count++] = *(CUdeviceptr *)params[0];
	return CUDA_SUCCESS;
}

static CUresult fake_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	(void)src, (void)s;
	memset(dst, 0, n);
	return CUDA_SUCCESS;
}

static CUresult fake_sync(CUstream s)
{
	(void)s;
	return CUDA_SUCCESS;
}

static void stand_ins(void)
{
	rp_api.cuPointerGetAttributes = fake_attributes;
	rp_api.cuMemAlloc = fake_alloc;
	rp_api.cuMemFree = fake_free;
	rp_api.cuMemsetD8Async = fake_memset;
	rp_api.cuLaunchKernel = fake_launch;
	rp_api.cuMemcpyDtoHAsync = fake_dtoh;
	rp_api.cuStreamSynchronize = fake_sync;
}

static void track_host(uint64_t *buffer, size_t bytes)
{
	fakes[fake_count++] = (struct fake_allocation){ (CUdeviceptr)(uintptr_t)buffer, bytes,
							 CU_MEMORYTYPE_HOST, NULL };
	mem_track_add((CUdeviceptr)(uintptr_t)buffer, bytes);
}

/* Hashes buffer, lets change() alter it, hashes again: whether a change was seen. */
static bool change_seen(void (*change)(uint64_t *))
{
	static uint64_t buffer[64];
	for (size_t i = 0; i < 64; i++)
		buffer[i] = 0x1000 + 17 * i;
	fake_count = 0;
	track_host(buffer, sizeof(buffer));
	struct mem_verifier v = { .device = 0 };
	struct mem_reach reach = { 0 };
	struct mem_hashes before, after;
	char err[256];
	cr_assert_eq(mem_hash_outside(&v, &reach, NULL, &before, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(before.bytes, sizeof(buffer));
	change(buffer);
	cr_assert_eq(mem_hash_again(&v, &before, NULL, &after, err, sizeof(err)), 0, "%s", err);
	bool seen = mem_hashes_differ(&before, &after) >= 0;
	mem_hashes_finish(&before);
	mem_hashes_finish(&after);
	mem_track_remove((CUdeviceptr)(uintptr_t)buffer);
	return seen;
}

static void nothing(uint64_t *b) { (void)b; }
static void one_word(uint64_t *b) { b[5] ^= 1; }
static void swap(uint64_t *b) { uint64_t t = b[3]; b[3] = b[10]; b[10] = t; }
static void move_amount(uint64_t *b) { b[2] += 1000; b[40] -= 1000; }
static void reverse(uint64_t *b)
{
	for (size_t i = 0; i < 32; i++) {
		uint64_t t = b[i];
		b[i] = b[63 - i];
		b[63 - i] = t;
	}
}

Test(verify, sees_words_that_change_or_trade_places, .init = stand_ins)
{
	cr_assert_not(change_seen(nothing));
	cr_assert(change_seen(one_word));
	cr_assert(change_seen(swap), "two words swapped");
	cr_assert(change_seen(move_amount), "an amount moved from one word to another");
	cr_assert(change_seen(reverse), "the words reversed");
}

/* Memory of another context on the same device is another address space: a hash kernel
 * launched in this one must never read it (the fault would end the application's
 * context). Memory of no context (cuMemMap) and of this one is hashed. */
Test(verify, never_hashes_another_contexts_memory, .init = stand_ins)
{
	CUcontext ours = (CUcontext)(uintptr_t)0xc0, theirs = (CUcontext)(uintptr_t)0xd0;
	fakes[0] = (struct fake_allocation){ 0x7f0000000000, 4096, CU_MEMORYTYPE_DEVICE, ours };
	fakes[1] = (struct fake_allocation){ 0x7f1000000000, 4096, CU_MEMORYTYPE_DEVICE, theirs };
	fakes[2] = (struct fake_allocation){ 0x7f2000000000, 4096, CU_MEMORYTYPE_DEVICE, NULL };
	fake_count = 3;
	for (size_t i = 0; i < fake_count; i++)
		mem_track_add(fakes[i].base, fakes[i].size);
	struct mem_verifier v = { .device = 0, .context = ours };
	struct mem_reach reach = { 0 };
	struct mem_hashes before;
	char err[256];
	cr_assert_eq(mem_hash_outside(&v, &reach, NULL, &before, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(launch_count, 2);
	for (size_t i = 0; i < launch_count; i++)
		cr_assert_neq(launched[i], fakes[1].base, "another context's memory was read");
	cr_assert_eq(before.bytes, 2 * 4096);
	mem_hashes_finish(&before);
}

static CUresult no_device(CUdevice *d, int ordinal)
{
	(void)d, (void)ordinal;
	return CUDA_ERROR_NO_DEVICE;
}

static CUresult no_room(CUdeviceptr *p, size_t bytes)
{
	(void)p, (void)bytes;
	return CUDA_ERROR_OUT_OF_MEMORY;
}

/* The driver's failures come back as a code, with the call in the message. */
Test(verify, driver_failures_fail_with_a_code_and_say_what_failed, .init = stand_ins)
{
	char err[256];
	rp_api.cuDeviceGet = no_device;
	struct mem_verifier v = { 0 };
	cr_assert_eq(mem_verifier_init(&v, 0, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert(strstr(err, "memory hash kernel: "), "%s", err);
	static uint64_t buffer[8];
	fake_count = 0;
	track_host(buffer, sizeof(buffer));
	struct mem_reach reach = { 0 };
	struct mem_hashes before, after;
	cr_assert_eq(mem_hash_outside(&v, &reach, NULL, &before, err, sizeof(err)), 0, "%s", err);
	rp_api.cuMemAlloc = no_room;
	mem_verifier_drop_sums(&v);
	cr_assert_eq(mem_hash_again(&v, &before, NULL, &after, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert(strstr(err, "hashing device memory: "), "%s", err);
	cr_assert_eq(mem_hash_outside(&v, &reach, NULL, &after, err, sizeof(err)), RP_ERR_FAILED);
	cr_assert_null(after.sums, "nothing is left to free");
	mem_hashes_finish(&before);
	mem_track_remove((CUdeviceptr)(uintptr_t)buffer);
}

/* ---- the kernel's text ------------------------------------------------------------- */

static char loaded_ptx[32768];

static CUresult one_device(CUdevice *d, int ordinal)
{
	*d = ordinal;
	return CUDA_SUCCESS;
}

static CUresult sms_132(int *value, CUdevice_attribute attr, CUdevice d)
{
	(void)attr, (void)d;
	*value = 132;
	return CUDA_SUCCESS;
}

static CUresult keep_text(CUmodule *m, const void *image)
{
	snprintf(loaded_ptx, sizeof(loaded_ptx), "%s", (const char *)image);
	*m = (CUmodule)(uintptr_t)0x1;
	return CUDA_SUCCESS;
}

static CUresult any_function(CUfunction *f, CUmodule m, const char *name)
{
	(void)m;
	cr_assert_str_eq(name, "rangeprof_hash");
	*f = (CUfunction)(uintptr_t)0x2;
	return CUDA_SUCCESS;
}

static CUresult no_context(CUcontext *c)
{
	*c = NULL;
	return CUDA_SUCCESS;
}

static size_t count(const char *text, const char *word)
{
	size_t n = 0;
	for (const char *p = strstr(text, word); p; p = strstr(p + 1, word))
		n++;
	return n;
}

/* The main loop loads MEM_HASH_UNROLL words a thread before it mixes any (the single-word loop
 * after it has one load, the byte tail one), each warp adds to the sum once, and the text
 * assembles for an H100/H200
 * (ptxas of the toolkit; skipped where it has none): the unit tests cannot run it, and a
 * text the driver refuses would leave every launch unverified. */
Test(verify, the_kernel_loads_mem_hash_unroll_words_together_and_assembles, .init = stand_ins)
{
	rp_api.cuDeviceGet = one_device;
	rp_api.cuDeviceGetAttribute = sms_132;
	rp_api.cuModuleLoadData = keep_text;
	rp_api.cuModuleGetFunction = any_function;
	rp_api.cuCtxGetCurrent = no_context;
	struct mem_verifier v = { 0 };
	char err[256];
	cr_assert_eq(mem_verifier_init(&v, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(v.blocks, MEM_HASH_BLOCKS_PER_SM * 132);
	cr_assert_eq(count(loaded_ptx, "ld.global.cg.u64"), MEM_HASH_UNROLL + 1, "%s",
		     loaded_ptx);
	cr_assert_eq(count(loaded_ptx, "ld.global.cg.u8"), 1);
	/* One atomic add a warp, by lane 0 after the warp's sums are added together: one a
	 * thread cost ~70 us a segment (verify.c, HASH_PTX_WARP_ADD). */
	cr_assert_eq(count(loaded_ptx, "atom.global.add"), 1);
	cr_assert_eq(count(loaded_ptx, "shfl.sync.down.b32"), 2 * 5, "5 steps of two halves");
	const char *lane = strstr(loaded_ptx, "%laneid"), *atom = strstr(loaded_ptx, "atom.");
	cr_assert(lane && strstr(loaded_ptx, "shfl.sync") < lane && lane < atom,
		  "the lane tested after the shuffles and before the add");
	const char *loop = strstr(loaded_ptx, "UNROLLED:\n");
	cr_assert_not_null(loop);
	const char *first_mix = strstr(loop, "mad.lo.u64");
	for (const char *p = strstr(loop, "ld.global"); p && p < strstr(loop, "WORDS:");
	     p = strstr(p + 1, "ld.global"))
		cr_assert(p < first_mix, "a load after the first mix: the loads are not together");
	if (!ptxas_check_available())
		cr_skip_test("no %s", PTXAS_CHECK_TOOL);
	char cmd[512];
	int rc = ptxas_check(loaded_ptx, cmd, sizeof(cmd));
	cr_assert_eq(rc, 0, "%s: the hash kernel's PTX does not assemble", cmd);
}
