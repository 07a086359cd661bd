/* memory/memory.h - the device memory one kernel launch can change, so that replays save
 * and restore that and not everything the application holds (README "Memory saved").
 *   track.c    which allocations exist, fed by the allocation calls the driver reports;
 *   globals.c  the names of module-scope __device__ variables, read from each loaded cubin;
 *   reach.c    which allocations a launch can reach: its parameters, one level through
 *              the small allocations they point into, and its module's globals;
 *   save.c     saving those ranges (device memory, else bounded pinned host memory) and
 *              restoring them on a stream;
 *   verify.c   a device-side hash of everything tracked outside the saved ranges, to show
 *              that a kernel wrote nowhere else.
 * Used with the launch's context current, one measured launch at a time (the callbacks
 * feeding track.c and globals.c come from any thread); each file's opening comment says
 * whom it calls. A function that can fail returns 0 or a code of common/error.h,
 * with the message in the caller's buffer (reach.c: in the reach's unknown). Finding
 * nothing (mem_ranges_find, mem_hashes_differ: -1) is an answer, not a failure. */
#ifndef MEMORY_MEMORY_H
#define MEMORY_MEMORY_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct mem_range {
	CUdeviceptr base;
	size_t size;
};

/* Sorts ranges by base and merges overlapping ones (not merely touching ones: each range
 * stays inside one allocation); returns the new count. */
size_t mem_ranges_normalize(struct mem_range *ranges, size_t count);
/* Index of the range of sorted, disjoint ranges that contains p, or -1. */
long mem_ranges_find(const struct mem_range *ranges, size_t count, CUdeviceptr p);
/* Writes the parts of all (n sorted, disjoint ranges) outside cut (sorted, disjoint) into
 * out, which has room for n + cut_count ranges; returns their count. */
size_t mem_ranges_subtract(const struct mem_range *all, size_t n, const struct mem_range *cut,
			   size_t cut_count, struct mem_range *out);
/* Whether every range of inner (count) lies inside one range of outer (sorted, disjoint). */
bool mem_ranges_cover(const struct mem_range *outer, size_t outer_count,
		      const struct mem_range *inner, size_t count);

/* ---- track.c ---------------------------------------------------------------------- */

/* An allocation of size bytes at base (device, managed or mapped host memory). */
void mem_track_add(CUdeviceptr base, size_t size);
/* The allocation that starts at base is gone (cuMemFree, cuMemFreeAsync, ...). */
void mem_track_remove(CUdeviceptr base);
/* Every allocation overlapping [base, base + size) is gone (cuMemUnmap). */
void mem_track_remove_range(CUdeviceptr base, size_t size);
/* A sorted copy of the tracked allocations: *out (caller frees; NULL when there are none)
 * and their *count. 0, or RP_ERR_NO_MEMORY with *out NULL and *count 0, which a caller
 * must not take for "nothing tracked": the reach and the hashes would then miss every
 * allocation. */
int mem_track_snapshot(struct mem_range **out, size_t *count);
/* Bytes currently tracked. */
size_t mem_track_bytes(void);

/* ---- globals.c -------------------------------------------------------------------- */

/* Reads the names of the module-scope variables (.nv.global sections) of a cubin the
 * driver has just loaded. 0; RP_ERR_FAILED when the image is not an ELF cubin it can read,
 * RP_ERR_NO_MEMORY when a name could not be kept: either way the globals of every module
 * are unknown from then on. */
int mem_globals_learn(const void *cubin, size_t size);
/* Appends the globals of a module, or of a library (CUDA 12's context-independent loading,
 * which the runtime uses), to *ranges (growing it). 0; RP_ERR_FAILED when they cannot be
 * known (some loaded cubin could not be read), RP_ERR_NO_MEMORY. */
int mem_globals_of_module(CUmodule module, struct mem_range **ranges, size_t *count,
			  size_t *capacity);
int mem_globals_of_library(CUlibrary library, struct mem_range **ranges, size_t *count,
			   size_t *capacity);

/* A module was unloaded: its handle may come back for another module, so the cached
 * globals of every module are looked up again. */
void mem_globals_forget_modules(void);
/* Whether a global of this name was seen in some cubin (for tests). A lookup: false is
 * an answer. */
bool mem_globals_known(const char *name);

/* ---- layout.c --------------------------------------------------------------------- */

/* A kernel's parameters as the driver lays them out: count, each one's offset and size,
 * and total, the end of the furthest (the size of the packed buffer). */
struct mem_param_layout {
	size_t count, total;
	const size_t *offsets, *sizes;
};
/* The layout of f (a CUfunction, or a CUkernel handle launched as one), asked of the
 * driver at its first use and kept: *layout stays valid until the process ends. 0, or
 * RP_ERR_FAILED (*error: the driver's result, CUDA_SUCCESS for more parameters than CUDA
 * allows) or RP_ERR_NO_MEMORY. */
int mem_param_layout_of(CUfunction f, const struct mem_param_layout **layout, CUresult *error);
/* A module was unloaded: its functions' handles may come back for others, so every
 * layout is asked again. */
void mem_param_layouts_forget(void);

/* ---- reach.c ---------------------------------------------------------------------- */

/* What a launch can reach. When unknown[0] is set the set is incomplete, for the reason
 * given there, and must not be used to restore memory. */
struct mem_reach {
	struct mem_range *ranges;    /* sorted, disjoint */
	size_t count, capacity;
	size_t bytes;
	size_t pointers;             /* parameter and memory words that were pointers */
	size_t scanned_bytes;        /* allocation bytes read to find further pointers */
	char unknown[200];
};

/* Collects the reach of a launch of f with the driver call's kernelParams or extra.
 * Needs the context synchronised (it reads small allocations). Returns 0 with the whole
 * set, or a code (RP_ERR_NO_MEMORY, else RP_ERR_FAILED: a driver failure, or a set that
 * cannot be bounded) with unknown saying why; the set must then not be used. */
int mem_reach_collect(struct mem_reach *reach, CUfunction f, void **kernel_params,
		      void **extra);
/* The same without reading device memory: the allocations the parameter words point
 * into and the module's globals, not what small allocations hold. For a launch's ENTER,
 * when its stream's earlier work may still run (inject/range/range_memory.c saves a range's
 * memory as its calls are issued). */
int mem_reach_collect_direct(struct mem_reach *reach, CUfunction f, void **kernel_params,
			     void **extra);
void mem_reach_finish(struct mem_reach *reach);
/* Adds the ranges of add to reach's set (growing its array), then sorts and merges it and
 * counts its bytes: the union of what several launches reach (inject/range/range_memory.c). Pure
 * host code, in track.c. 0, or RP_ERR_NO_MEMORY with the set unchanged. */
int mem_reach_add(struct mem_reach *reach, const struct mem_range *add, size_t count);

/* ---- save.c ----------------------------------------------------------------------- */

/* Where saved copies live: device memory when it fits, else pinned host memory up to a
 * bound. Kept between launches and grown on demand. */
struct mem_backup {
	CUdeviceptr device;
	size_t device_size;
	void *host;
	size_t host_size;
	bool on_host;                /* the last save went to host memory */
};

/* The most pinned host memory one saved copy may take (an eighth of physical memory; at
 * most two copies exist at a time). */
size_t mem_backup_host_limit(void);
/* Copies the ranges of reach into b (queued on stream, then synchronised). 0, or with the
 * message in err RP_ERR_NO_MEMORY when neither device memory nor bounded pinned host
 * memory has room, RP_ERR_FAILED when a copy fails. */
int mem_save(struct mem_backup *b, const struct mem_reach *reach, CUstream stream,
	     char *err, size_t err_size);
/* mem_save's copies queued on stream, not waited for: the copy is taken when the stream
 * reaches it (a range's memory, saved in its calls' order). */
int mem_save_queued(struct mem_backup *b, const struct mem_reach *reach, CUstream stream,
		    char *err, size_t err_size);
/* Queues the copies back into place on stream. 0, or RP_ERR_RESTORE with the driver's
 * error name (CUDA_ERROR_...) in err, which the caller names to the user. */
int mem_restore(const struct mem_backup *b, const struct mem_reach *reach, CUstream stream,
		char *err, size_t err_size);
/* The same for the ranges i of reach with changed[i] only (changed NULL: all). */
int mem_restore_changed(const struct mem_backup *b, const struct mem_reach *reach,
			const bool *changed, CUstream stream, char *err, size_t err_size);
/* Frees the backup's memory when it holds more than keep bytes. */
void mem_backup_trim(struct mem_backup *b, size_t keep);

/* ---- verify.c --------------------------------------------------------------------- */

struct mem_verifier {
	CUmodule module;
	CUfunction kernel;
	CUdeviceptr sums;            /* one 64-bit sum per segment */
	size_t sums_capacity;
	unsigned blocks;
	int device;
	CUcontext context;           /* where it was loaded: other contexts' memory is skipped */
};

/* Words a thread of the hash kernel loads together in its main loop (verify.c). A build may
 * set another, from 1 (one load at a time: the kernel before session 19) to 8, to compare
 * (bench/hash_speed.c). */
#ifndef MEM_HASH_UNROLL
#define MEM_HASH_UNROLL 4
#endif
/* Blocks of 256 threads per SM the hash kernel is launched with (at most): 4 fill half of
 * an H100/H200 SM's 2048 threads. A build may set another, to compare. */
#ifndef MEM_HASH_BLOCKS_PER_SM
#define MEM_HASH_BLOCKS_PER_SM 4
#endif

/* The hashes of every tracked allocation outside the saved ranges. */
struct mem_hashes {
	struct mem_range *segments;
	unsigned char *kinds;        /* how each segment is hashed (verify.c) */
	uint64_t *sums;
	size_t count;
	size_t bytes;                /* bytes hashed */
};

/* Loads the hash kernel into the current context. 0, or RP_ERR_FAILED with err. */
int mem_verifier_init(struct mem_verifier *v, int device, char *err, size_t err_size);
/* Frees the sums buffer (allocated again at the next hash): a checkpoint taken without it
 * cannot be restored into it after it was grown (inject/graph/graph_measure.c). */
void mem_verifier_drop_sums(struct mem_verifier *v);
/* Frees the sums and unloads the hash kernel, in the current context (still valid: called
 * when the context is being destroyed). */
void mem_verifier_finish(struct mem_verifier *v);
/* Hashes all tracked memory outside reach's ranges, on stream, and waits. 0, or with err
 * RP_ERR_NO_MEMORY (host memory), RP_ERR_FAILED (the driver). */
int mem_hash_outside(struct mem_verifier *v, const struct mem_reach *reach, CUstream stream,
		     struct mem_hashes *out, char *err, size_t err_size);
/* Hashes the same segments as before again into after. 0, or a code as above with err. */
int mem_hash_again(struct mem_verifier *v, const struct mem_hashes *before, CUstream stream,
		   struct mem_hashes *after, char *err, size_t err_size);
/* Index of the first segment whose hash differs, or -1 when none does. */
long mem_hashes_differ(const struct mem_hashes *before, const struct mem_hashes *after);
/* The same, among the segments not inside kept (sorted, disjoint): what changed that
 * kept does not account for. */
long mem_hashes_differ_outside(const struct mem_hashes *before, const struct mem_hashes *after,
			       const struct mem_range *kept, size_t kept_count);
void mem_hashes_finish(struct mem_hashes *h);
/* Which ranges of reach differ from their saved copy in b (device memory only), on
 * stream, waited for: changed[i] for range i, true also where it cannot tell (a range in
 * host or another device's memory, a copy in host memory) and where skip[i] (skip NULL:
 * none skipped; a skipped range is not read). *all: every range changed. 0, or a code as
 * mem_hash_outside's with err. */
int mem_reach_changed(struct mem_verifier *v, const struct mem_backup *b,
		      const struct mem_reach *reach, const bool *skip, CUstream stream,
		      bool *changed, bool *all, char *err, size_t err_size);

#endif
