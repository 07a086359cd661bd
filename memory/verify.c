/* memory/verify.c - shows that a launch wrote nothing outside its saved reach: a hash of
 * every tracked allocation, minus the reach, before and after the application's own
 * launch. Each 8-byte word i adds mix(w + i*C1) to its segment's sum, mix being a
 * bijection (odd multipliers, xor-shifts), so a change to any one word always changes the
 * sum; mix is not linear, so words that trade places or values (a swap, a reversal, +d
 * here and -d there) change it too, as they would not change a plain sum of (w + i*C1) * C2.
 * Tails of fewer than 8 bytes are hashed byte by byte, each byte j as mix(b + j*C1). One
 * kernel launch per segment, from PTX embedded here (no build-time nvcc).
 * Calls: track.c, hashes.c, collector/ (the driver).
 * Called by: inject/.
 * Lock: none (constant PTX; the hashes are their caller's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "memory/memory.h"

/* The kernel: thread t of T sums the words t, t + T, t + 2T, ... of its segment; the
 * words past the last whole multiple of 8 bytes go to thread 0, byte by byte. The sum
 * does not depend on which thread takes which word, so the main loop takes
 * MEM_HASH_UNROLL words per thread per iteration (memory.h), their loads issued together:
 * one 8-byte load at a time per thread (MEM_HASH_UNROLL 1, the kernel before session 19)
 * keeps too few bytes in flight to reach the DRAM's rate on a large segment
 * (bench/hash_speed.c times both). The head, then the unrolled loop (hash_ptx_unrolled),
 * then the loop of single words and the byte tail. */
#if MEM_HASH_UNROLL < 1 || MEM_HASH_UNROLL > 8
#error "MEM_HASH_UNROLL is from 1 to 8"
#endif
/* The hash's constants, written once for the kernel's PTX (as text) and host_hash (as
 * numbers), whose sums must agree: C1, the step per word or byte index, and the two odd
 * multipliers of mix (MurmurHash3's finaliser). */
#define HASH_C1 0x9E3779B97F4A7C15
#define HASH_M1 0xFF51AFD7ED558CCD
#define HASH_M2 0xC4CEB9FE1A85EC53
#define HASH_TEXT_(x) #x
#define HASH_TEXT(x) HASH_TEXT_(x)
/* sum (%rd11) += mix(val + idx * C1) in PTX, with mixed and tmp as scratch registers. */
#define HASH_PTX_MIX(idx, val, mixed, tmp)                                                 \
	"  mad.lo.u64 " mixed ", " idx ", " HASH_TEXT(HASH_C1) "U, " val ";\n"            \
	"  mul.lo.u64 " mixed ", " mixed ", " HASH_TEXT(HASH_M1) "U;\n"                   \
	"  shr.u64 " tmp ", " mixed ", 29;\n"                                             \
	"  xor.b64 " mixed ", " mixed ", " tmp ";\n"                                      \
	"  mul.lo.u64 " mixed ", " mixed ", " HASH_TEXT(HASH_M2) "U;\n"                   \
	"  shr.u64 " tmp ", " mixed ", 32;\n"                                             \
	"  xor.b64 " mixed ", " mixed ", " tmp ";\n"                                      \
	"  add.u64 %rd11, %rd11, " mixed ";\n"
static const char hash_ptx_head[] =
	".version 7.0\n"
	".target sm_70\n"
	".address_size 64\n"
	".visible .entry rangeprof_hash(.param .u64 buf, .param .u64 bytes, .param .u64 out)\n"
	"{\n"
	"  .reg .pred %p<4>;\n"
	"  .reg .b32 %r<8>;\n"
	"  .reg .b64 %rd<64>;\n"
	"  ld.param.u64 %rd1, [buf];\n"
	"  ld.param.u64 %rd2, [bytes];\n"
	"  ld.param.u64 %rd3, [out];\n"
	"  mov.u32 %r1, %ctaid.x;\n"
	"  mov.u32 %r2, %ntid.x;\n"
	"  mov.u32 %r3, %tid.x;\n"
	"  mov.u32 %r4, %nctaid.x;\n"
	"  cvt.u64.u32 %rd4, %r1;\n"
	"  cvt.u64.u32 %rd5, %r2;\n"
	"  cvt.u64.u32 %rd6, %r3;\n"
	"  cvt.u64.u32 %rd7, %r4;\n"
	"  mad.lo.u64 %rd8, %rd4, %rd5, %rd6;\n"
	"  mov.u64 %rd20, %rd8;\n"
	"  mul.lo.u64 %rd9, %rd7, %rd5;\n"
	"  shr.u64 %rd10, %rd2, 3;\n"
	"  mov.u64 %rd11, 0;\n";

/* sum (%rd11) += the sum of the lane `off` above (shfl.down; a lane with none above adds
 * its own, which only lanes past lane 0's tree ever do): after offsets 16, 8, 4, 2, 1,
 * lane 0 holds its warp's sum and alone adds it to the segment's. One atomic add per warp,
 * not per thread: 135,168 threads adding to one address took ~70 us per segment,
 * serialised at the L2, whatever the segment's size (session 22, call 2: 0.4-0.6 ms to
 * hash 6 segments of 64-1176 MB; doc/measurements.md, "Held memory, save and reach"). Every
 * thread reaches DONE and the block is whole warps (256 threads), so the full mask holds. */
#define HASH_PTX_WARP_ADD(off)                                                             \
	"  mov.b64 {%r6, %r7}, %rd11;\n"                                                  \
	"  shfl.sync.down.b32 %r6, %r6, " off ", 31, -1;\n"                               \
	"  shfl.sync.down.b32 %r7, %r7, " off ", 31, -1;\n"                               \
	"  mov.b64 %rd24, {%r6, %r7};\n"                                                  \
	"  add.u64 %rd11, %rd11, %rd24;\n"
static const char hash_ptx_rest[] =
	"WORDS:\n"
	"  setp.ge.u64 %p1, %rd8, %rd10;\n"
	"  @%p1 bra TAIL;\n"
	"  shl.b64 %rd12, %rd8, 3;\n"
	"  add.u64 %rd13, %rd1, %rd12;\n"
	"  ld.global.cg.u64 %rd14, [%rd13];\n"
	HASH_PTX_MIX("%rd8", "%rd14", "%rd15", "%rd22")
	"  add.u64 %rd8, %rd8, %rd9;\n"
	"  bra WORDS;\n"
	"TAIL:\n"
	"  setp.ne.u64 %p2, %rd20, 0;\n"
	"  @%p2 bra DONE;\n"
	"  shl.b64 %rd16, %rd10, 3;\n"
	"BYTES:\n"
	"  setp.ge.u64 %p3, %rd16, %rd2;\n"
	"  @%p3 bra DONE;\n"
	"  add.u64 %rd17, %rd1, %rd16;\n"
	"  ld.global.cg.u8 %r5, [%rd17];\n"
	"  cvt.u64.u32 %rd18, %r5;\n"
	HASH_PTX_MIX("%rd16", "%rd18", "%rd19", "%rd23")
	"  add.u64 %rd16, %rd16, 1;\n"
	"  bra BYTES;\n"
	"DONE:\n"
	HASH_PTX_WARP_ADD("16") HASH_PTX_WARP_ADD("8") HASH_PTX_WARP_ADD("4")
	HASH_PTX_WARP_ADD("2") HASH_PTX_WARP_ADD("1")
	"  mov.u32 %r6, %laneid;\n"
	"  setp.ne.u32 %p2, %r6, 0;\n"
	"  @%p2 bra END;\n"
	"  atom.global.add.u64 %rd21, [%rd3], %rd11;\n"
	"END:\n"
	"  ret;\n"
	"}\n";

/* The unrolled loop for u words: while i + (u-1)T < words, the words i, i + T, ...,
 * i + (u-1)T (addresses in %rd40.., values in %rd48..), then i += uT; what is left goes to
 * the single-word loop. Nothing for u = 1. Returns the PTX's length, or 0 when it did not
 * fit in size. */
static size_t hash_ptx_unrolled(char *out, size_t size, unsigned u)
{
	size_t n = 0;
#define PUT(...)                                                                   \
	do {                                                                       \
		int k_ = snprintf(out + n, size - n, __VA_ARGS__);                 \
		if (k_ < 0 || (size_t)k_ >= size - n)                              \
			return 0;                                                  \
		n += (size_t)k_;                                                   \
	} while (0)
	if (u < 2)
		return (size_t)snprintf(out, size, "%s", "");
	PUT("  mul.lo.u64 %%rd30, %%rd9, %u;\n", u);
	PUT("  shl.b64 %%rd31, %%rd9, 3;\n");
	PUT("  mul.lo.u64 %%rd32, %%rd9, %u;\n", u - 1);
	PUT("UNROLLED:\n");
	PUT("  add.u64 %%rd33, %%rd8, %%rd32;\n");
	PUT("  setp.ge.u64 %%p1, %%rd33, %%rd10;\n");
	PUT("  @%%p1 bra WORDS;\n");
	PUT("  shl.b64 %%rd34, %%rd8, 3;\n");
	PUT("  add.u64 %%rd40, %%rd1, %%rd34;\n");
	for (unsigned k = 1; k < u; k++)
		PUT("  add.u64 %%rd%u, %%rd%u, %%rd31;\n", 40 + k, 39 + k);
	for (unsigned k = 0; k < u; k++)
		PUT("  ld.global.cg.u64 %%rd%u, [%%rd%u];\n", 48 + k, 40 + k);
	PUT("  mov.u64 %%rd56, %%rd8;\n");
	/* Each word's value to %rd59, mixed at index %rd56, which then moves on by T. */
	for (unsigned k = 0; k < u; k++) {
		PUT("  mov.u64 %%rd59, %%rd%u;\n", 48 + k);
		PUT("%s", HASH_PTX_MIX("%rd56", "%rd59", "%rd57", "%rd58"));
		PUT("  add.u64 %%rd56, %%rd56, %%rd9;\n");
	}
	PUT("  add.u64 %%rd8, %%rd8, %%rd30;\n");
	PUT("  bra UNROLLED;\n");
#undef PUT
	return n;
}

/* Room for the whole kernel: the unrolled loop takes under 500 bytes a word. */
#define HASH_PTX_SIZE (sizeof(hash_ptx_head) + sizeof(hash_ptx_rest) + 4096)

/* The kernel's PTX for MEM_HASH_UNROLL into out: its length, or 0 when it did not fit. */
static size_t hash_ptx_build(char *out, size_t size)
{
	size_t head = strlen(hash_ptx_head), rest = strlen(hash_ptx_rest);
	if (size < head + rest + 1)
		return 0;
	memcpy(out, hash_ptx_head, head);
	size_t body = hash_ptx_unrolled(out + head, size - head - rest, MEM_HASH_UNROLL);
	if (MEM_HASH_UNROLL > 1 && !body)
		return 0;
	memcpy(out + head + body, hash_ptx_rest, rest + 1); /* with its NUL */
	return head + body + rest;
}

int mem_verifier_init(struct mem_verifier *v, int device, char *err, size_t err_size)
{
	CUdevice dev;
	int sms = 0;
	CUresult r;
	char ptx[HASH_PTX_SIZE];
	if (!hash_ptx_build(ptx, sizeof(ptx))) {
		snprintf(err, err_size, "memory hash kernel: its PTX does not fit in %zu bytes",
			 sizeof(ptx));
		return RP_ERR_FAILED;
	}
	if ((r = rp_api.cuDeviceGet(&dev, device)) != CUDA_SUCCESS ||
	    (r = rp_api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) !=
		    CUDA_SUCCESS ||
	    (r = rp_api.cuModuleLoadData(&v->module, ptx)) != CUDA_SUCCESS ||
	    (r = rp_api.cuModuleGetFunction(&v->kernel, v->module, "rangeprof_hash")) !=
		    CUDA_SUCCESS) {
		snprintf(err, err_size, "memory hash kernel: %s", collector_cu_error(r));
		return RP_ERR_FAILED;
	}
	v->blocks = (unsigned)(sms > 0 ? MEM_HASH_BLOCKS_PER_SM * sms : 512);
	v->device = device;
	if (rp_api.cuCtxGetCurrent(&v->context) != CUDA_SUCCESS)
		v->context = NULL;
	return 0;
}

void mem_verifier_drop_sums(struct mem_verifier *v)
{
	if (v->sums)
		rp_api.cuMemFree(v->sums);
	v->sums = 0;
	v->sums_capacity = 0;
}

void mem_verifier_finish(struct mem_verifier *v)
{
	if (v->sums)
		rp_api.cuMemFree(v->sums);
	if (v->module)
		rp_api.cuModuleUnload(v->module);
	*v = (struct mem_verifier){ 0 };
}

/* The kernel's mix, on the host. */
static uint64_t mix(uint64_t x)
{
	x *= (uint64_t)HASH_M1;
	x ^= x >> 29;
	x *= (uint64_t)HASH_M2;
	x ^= x >> 32;
	return x;
}

/* The same sum as the kernel, on the host, for pinned host memory: the device may not
 * have it mapped, and a fault in a hash kernel would be the application's sticky error. */
static uint64_t host_hash(const unsigned char *p, size_t bytes)
{
	uint64_t sum = 0, words = bytes / 8;
	for (uint64_t i = 0; i < words; i++) {
		uint64_t w;
		memcpy(&w, p + 8 * i, 8);
		sum += mix(w + i * (uint64_t)HASH_C1);
	}
	for (uint64_t j = words * 8; j < bytes; j++)
		sum += mix((uint64_t)p[j] + j * (uint64_t)HASH_C1);
	return sum;
}

enum segment_kind { SEGMENT_GONE, SEGMENT_DEVICE, SEGMENT_HOST, SEGMENT_ELSEWHERE };

/* Asks the driver about a tracked segment before touching it: it may belong to another
 * device or a destroyed context (freed without a call we see), and reading it from a
 * kernel would then fault. Clips the segment to the allocation the driver reports. */
static enum segment_kind classify(struct mem_range *seg, const struct mem_verifier *v)
{
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
					CU_POINTER_ATTRIBUTE_RANGE_SIZE,
					CU_POINTER_ATTRIBUTE_IS_MANAGED,
					CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
					CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
					CU_POINTER_ATTRIBUTE_CONTEXT };
	unsigned type = 0;
	CUdeviceptr start = 0;
	size_t size = 0;
	int managed = 0, ordinal = -1;
	unsigned long long access = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
	CUcontext owner = NULL;
	void *data[] = { &type, &start, &size, &managed, &ordinal, &access, &owner };
	int device = v->device;
	if (rp_api.cuPointerGetAttributes(7, attrs, data, seg->base) != CUDA_SUCCESS || !type ||
	    !size)
		return SEGMENT_GONE;
	if (seg->base + seg->size > start + size)
		seg->size = start + size - seg->base;
	if (type == CU_MEMORYTYPE_HOST && !managed)
		return SEGMENT_HOST;
	if (!managed && ordinal != device)
		return SEGMENT_ELSEWHERE; /* another GPU's memory: a kernel here cannot see it */
	if (access == CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE)
		return SEGMENT_ELSEWHERE; /* cuMemMap memory this device may not access */
	/* Another context's memory on this device: each context has its own address space,
	 * and a hash kernel reading it here would fault, a sticky error that ends the
	 * application's context. (cuMemMap memory belongs to no context: NULL.) */
	if (!managed && owner && v->context && owner != v->context)
		return SEGMENT_ELSEWHERE;
	return SEGMENT_DEVICE;
}

/* The sums of h's segments: 0, or RP_ERR_FAILED with the driver's error in err. */
static int hash_segments(struct mem_verifier *v, struct mem_hashes *h, CUstream stream,
			 char *err, size_t err_size)
{
	CUresult r = CUDA_SUCCESS;
	if (h->count > v->sums_capacity) {
		if (v->sums)
			rp_api.cuMemFree(v->sums);
		v->sums = 0;
		v->sums_capacity = 0;
		if ((r = rp_api.cuMemAlloc(&v->sums, h->count * sizeof(uint64_t))) != CUDA_SUCCESS)
			goto fail;
		v->sums_capacity = h->count;
	}
	if (!h->count)
		return 0;
	if ((r = rp_api.cuMemsetD8Async(v->sums, 0, h->count * sizeof(uint64_t), stream)) !=
	    CUDA_SUCCESS)
		goto fail;
	for (size_t i = 0; i < h->count; i++) {
		if (h->kinds[i] != SEGMENT_DEVICE)
			continue;
		CUdeviceptr out = v->sums + i * sizeof(uint64_t);
		unsigned long long bytes = h->segments[i].size;
		unsigned long long words = bytes / 8;
		unsigned blocks = (unsigned)(words / 256 + 1 < v->blocks ? words / 256 + 1 : v->blocks);
		void *args[] = { &h->segments[i].base, &bytes, &out };
		if ((r = rp_api.cuLaunchKernel(v->kernel, blocks, 1, 1, 256, 1, 1, 0, stream, args,
					       NULL)) != CUDA_SUCCESS)
			goto fail;
	}
	if ((r = rp_api.cuMemcpyDtoHAsync(h->sums, v->sums, h->count * sizeof(uint64_t),
					   stream)) != CUDA_SUCCESS ||
	    (r = rp_api.cuStreamSynchronize(stream)) != CUDA_SUCCESS)
		goto fail;
	for (size_t i = 0; i < h->count; i++) {
		if (h->kinds[i] == SEGMENT_HOST)
			h->sums[i] = host_hash((const unsigned char *)(uintptr_t)h->segments[i].base,
					       h->segments[i].size);
		else if (h->kinds[i] != SEGMENT_DEVICE)
			h->sums[i] = 0;
	}
	return 0;
fail:
	snprintf(err, err_size, "hashing device memory: %s", collector_cu_error(r));
	return RP_ERR_FAILED;
}

int mem_hash_outside(struct mem_verifier *v, const struct mem_reach *reach, CUstream stream,
		     struct mem_hashes *out, char *err, size_t err_size)
{
	memset(out, 0, sizeof(*out));
	struct mem_range *all = NULL;
	size_t n = 0;
	int rc = mem_track_snapshot(&all, &n);
	if (rc) {
		snprintf(err, err_size, "out of host memory");
		return rc;
	}
	n = mem_ranges_normalize(all, n);
	/* Each reach range can split one allocation in two. */
	out->segments = malloc((n + reach->count + 1) * sizeof(*out->segments));
	out->sums = malloc((n + reach->count + 1) * sizeof(*out->sums));
	if (!out->segments || !out->sums) {
		free(all);
		mem_hashes_finish(out);
		snprintf(err, err_size, "out of host memory");
		return RP_ERR_NO_MEMORY;
	}
	out->count = mem_ranges_subtract(all, n, reach->ranges, reach->count, out->segments);
	free(all);
	out->kinds = calloc(out->count + 1, sizeof(*out->kinds));
	if (!out->kinds) {
		mem_hashes_finish(out);
		snprintf(err, err_size, "out of host memory");
		return RP_ERR_NO_MEMORY;
	}
	for (size_t i = 0; i < out->count; i++) {
		out->kinds[i] = (unsigned char)classify(&out->segments[i], v);
		if (out->kinds[i] == SEGMENT_DEVICE || out->kinds[i] == SEGMENT_HOST)
			out->bytes += out->segments[i].size;
	}
	if ((rc = hash_segments(v, out, stream, err, err_size)) != 0)
		mem_hashes_finish(out);
	return rc;
}

int mem_hash_again(struct mem_verifier *v, const struct mem_hashes *before, CUstream stream,
		   struct mem_hashes *after, char *err, size_t err_size)
{
	memset(after, 0, sizeof(*after));
	after->segments = malloc((before->count + 1) * sizeof(*after->segments));
	after->sums = malloc((before->count + 1) * sizeof(*after->sums));
	after->kinds = malloc(before->count + 1);
	if (!after->segments || !after->sums || !after->kinds) {
		mem_hashes_finish(after);
		snprintf(err, err_size, "out of host memory");
		return RP_ERR_NO_MEMORY;
	}
	memcpy(after->segments, before->segments, before->count * sizeof(*after->segments));
	/* Another thread may have freed memory since: ask again before touching it. */
	for (size_t i = 0; i < before->count; i++)
		after->kinds[i] = before->kinds[i] == SEGMENT_DEVICE ||
				  before->kinds[i] == SEGMENT_HOST ?
			(unsigned char)classify(&after->segments[i], v) : before->kinds[i];
	after->count = before->count;
	after->bytes = before->bytes;
	int rc = hash_segments(v, after, stream, err, err_size);
	if (rc)
		mem_hashes_finish(after);
	return rc;
}

/* The hash is of each word's value and its index within its segment, not of its address,
 * so a range and its copy in the backup hash alike when their bytes are equal. */
int mem_reach_changed(struct mem_verifier *v, const struct mem_backup *b,
		      const struct mem_reach *reach, const bool *skip, CUstream stream,
		      bool *changed, bool *all, char *err, size_t err_size)
{
	size_t n = reach->count;
	*all = true;
	for (size_t i = 0; i < n; i++)
		changed[i] = true;
	if (b->on_host || !n)
		return 0;
	struct mem_hashes h = { 0 };
	h.segments = malloc(2 * n * sizeof(*h.segments));
	h.sums = malloc(2 * n * sizeof(*h.sums));
	h.kinds = malloc(2 * n);
	if (!h.segments || !h.sums || !h.kinds) {
		mem_hashes_finish(&h);
		snprintf(err, err_size, "out of host memory");
		return RP_ERR_NO_MEMORY;
	}
	h.count = 2 * n;
	size_t offset = 0;
	for (size_t i = 0; i < n; i++) {
		struct mem_range r = reach->ranges[i];
		h.segments[i] = r;
		enum segment_kind k = classify(&h.segments[i], v);
		/* Clipped, not device memory here, or not 8-byte aligned here or in the copy
		 * (the kernel's loads are of 8 bytes): restored whatever it holds. */
		bool comparable = (!skip || !skip[i]) && k == SEGMENT_DEVICE &&
				  h.segments[i].size == r.size && r.base % 8 == 0 &&
				  (b->device + offset) % 8 == 0;
		h.kinds[i] = comparable ? SEGMENT_DEVICE : SEGMENT_GONE;
		h.segments[n + i] = (struct mem_range){ b->device + offset, r.size };
		h.kinds[n + i] = h.kinds[i];
		offset += r.size;
	}
	int rc = hash_segments(v, &h, stream, err, err_size);
	if (!rc)
		for (size_t i = 0; i < n; i++) {
			changed[i] = h.kinds[i] != SEGMENT_DEVICE || h.sums[i] != h.sums[n + i];
			*all = *all && changed[i];
		}
	mem_hashes_finish(&h);
	return rc;
}
