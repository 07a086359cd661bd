/* inject/flush.c - loads and launches the L2 read sweep. Called by replay.c for each
 * context at its first measured launch, and before every replay.
 * Calls the driver through collector/api. */
#include "inject/flush.h"

#include <stdio.h>

#include "collector/api.h"

/* Each thread reads 16-byte words with ld.global.cg (cached in L2 only) in a grid-stride
 * loop and folds them into a value stored only if it equals an impossible constant, so
 * the loads stay. Reading leaves every line clean: evicting the application's dirty lines
 * happens here, not inside the measured kernel. */
static const char flush_ptx[] =
	".version 7.0\n"
	".target sm_70\n"
	".address_size 64\n"
	".visible .entry rangeprof_l2_flush(.param .u64 buf, .param .u64 words, .param .u64 sink)\n"
	"{\n"
	"  .reg .pred %p<3>;\n"
	"  .reg .b32 %r<12>;\n"
	"  .reg .b64 %rd<12>;\n"
	"  ld.param.u64 %rd1, [buf];\n"
	"  ld.param.u64 %rd2, [words];\n"
	"  ld.param.u64 %rd3, [sink];\n"
	"  mov.u32 %r1, %ctaid.x;\n"
	"  mov.u32 %r2, %ntid.x;\n"
	"  mov.u32 %r3, %tid.x;\n"
	"  mov.u32 %r4, %nctaid.x;\n"
	"  cvt.u64.u32 %rd4, %r1;\n"
	"  cvt.u64.u32 %rd5, %r2;\n"
	"  cvt.u64.u32 %rd6, %r3;\n"
	"  mad.lo.u64 %rd7, %rd4, %rd5, %rd6;\n"
	"  cvt.u64.u32 %rd8, %r4;\n"
	"  mul.lo.u64 %rd9, %rd8, %rd5;\n"
	"  mov.u32 %r5, 0;\n"
	"LOOP:\n"
	"  setp.ge.u64 %p1, %rd7, %rd2;\n"
	"  @%p1 bra DONE;\n"
	"  shl.b64 %rd10, %rd7, 4;\n"
	"  add.u64 %rd11, %rd1, %rd10;\n"
	"  ld.global.cg.v4.u32 {%r6, %r7, %r8, %r9}, [%rd11];\n"
	"  xor.b32 %r5, %r5, %r6;\n"
	"  xor.b32 %r5, %r5, %r7;\n"
	"  xor.b32 %r5, %r5, %r8;\n"
	"  xor.b32 %r5, %r5, %r9;\n"
	"  add.u64 %rd7, %rd7, %rd9;\n"
	"  bra LOOP;\n"
	"DONE:\n"
	"  setp.eq.u32 %p2, %r5, 0x7e57ab1e;\n"
	"  @%p2 st.global.u32 [%rd3], %r5;\n"
	"  ret;\n"
	"}\n";

int inject_flush_init(struct inject_flush *f, int device, char *err, size_t err_size)
{
	CUdevice dev;
	int l2 = 0, sms = 0;
	CUresult r;
	if ((r = rp_api.cuDeviceGet(&dev, device)) != CUDA_SUCCESS ||
	    (r = rp_api.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev)) !=
		    CUDA_SUCCESS ||
	    (r = rp_api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) !=
		    CUDA_SUCCESS) {
		snprintf(err, err_size, "L2 flush: device attributes: %s", collector_cu_error(r));
		return -1;
	}
	size_t bytes = 2 * (size_t)(l2 > 0 ? l2 : (64 << 20));
	if ((r = rp_api.cuModuleLoadData(&f->module, flush_ptx)) != CUDA_SUCCESS ||
	    (r = rp_api.cuModuleGetFunction(&f->kernel, f->module, "rangeprof_l2_flush")) !=
		    CUDA_SUCCESS) {
		snprintf(err, err_size, "L2 flush: loading the sweep kernel: %s",
			 collector_cu_error(r));
		return -1;
	}
	if ((r = rp_api.cuMemAlloc(&f->buffer, bytes)) != CUDA_SUCCESS ||
	    (r = rp_api.cuMemAlloc(&f->sink, 16)) != CUDA_SUCCESS) {
		snprintf(err, err_size, "L2 flush: cuMemAlloc(%zu bytes): %s", bytes,
			 collector_cu_error(r));
		return -1;
	}
	f->words = bytes / 16;
	f->blocks = (unsigned)(sms > 0 ? 4 * sms : 512);
	return 0;
}

CUresult inject_flush_launch(struct inject_flush *f, CUstream stream)
{
	void *args[] = { &f->buffer, &f->words, &f->sink };
	return rp_api.cuLaunchKernel(f->kernel, f->blocks, 1, 1, 256, 1, 1, 0, stream, args, NULL);
}

void inject_flush_finish(struct inject_flush *f)
{
	if (f->buffer)
		rp_api.cuMemFree(f->buffer);
	if (f->sink)
		rp_api.cuMemFree(f->sink);
	if (f->module)
		rp_api.cuModuleUnload(f->module);
	*f = (struct inject_flush){ 0 };
}
