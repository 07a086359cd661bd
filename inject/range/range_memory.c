/* inject/range/range_memory.c - what a range workload saves (range_workload.c;
 * doc/range-replay.md, "What it costs", item "What a range saves"). A range's calls are
 * known only at its end, so its first occurrence saves each call's memory as the call is
 * issued (a whole-context checkpoint only where a call's reach cannot be known) and
 * learns, while it runs, what the range writes: the union of what its calls reach (each
 * kernel's reach as memory/reach.c collects it for kernel replay, the allocations its
 * memsets and copies write), shown to be enough by hashing every tracked allocation at its
 * begin and end, as the kernel-mode verification does per kernel. Later occurrences of a
 * range of that name save only that union, into the context's saved copies (inputs at the
 * begin, result at the end), so their cost does not grow with the memory the application
 * holds; one whose calls reach beyond it is not measured, and what it reached joins the
 * union (a caching allocator hands a loop's tensors out in turns: PyTorch's MLP block
 * reached new memory at its second occurrence only). Owns the policy of each range name.
 * Reads range_ops.c's structures (range.h) without calling it.
 * Calls: session.c (the context's saved copies), checkpoint.c (the whole context),
 * captures.c, config.c, output.c, collector/, memory/.
 * Called by: range_workload.c.
 * Lock: the replay lock; not asserted by: range_policy_refused (reads the policy it is
 * handed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "inject/measure/checkpoint.h"
#include "inject/session/captures.h"
#include "inject/config.h"
#include "inject/range/range.h"
#include "inject/range/range_memory.h"
#include "inject/session/session.h"

enum range_save_state {
	RANGE_LEARN,     /* saved as its calls are issued, and learning the reach */
	RANGE_REACH,     /* saved from the learned reach */
	RANGE_WHOLE,     /* saved whole for good: its reach cannot be known or is not enough */
	RANGE_REFUSED,   /* measured kernel by kernel (range_workload.c) */
};

struct range_policy {
	char *name;
	enum range_save_state state;
	struct mem_reach reach;      /* RANGE_REACH: the union, whole allocations, verified */
	unsigned transient_refusals; /* occurrences refused for a call that may not recur */
	unsigned misses;             /* occurrences that reached beyond the union */
};

/* Occurrences that may reach beyond the learned union, each unmeasured: the first
 * RANGE_MISSES_MAX - 1 grow it, the next one saves the name whole from then on (memory
 * handed out in turns is covered after a few, memory new at every occurrence never is). */
#define RANGE_MISSES_MAX 8

/* How many occurrences of a name a call that may not recur (an allocation, a capture's
 * begin) refuses before the name falls back to kernel replay for good: a caching
 * allocator grows, a workspace is allocated, torch.compile captures during the first
 * iterations only. */
#define TRANSIENT_REFUSALS 3

static struct range_policy *policies;
static size_t policy_count, policy_capacity;
/* Range names remembered at most: a program that numbers its ranges ("step 1", "step 2",
 * ...) must not grow rangeprof's memory without bound. Past it a new name gets no policy:
 * saved whole, learning nothing, refused again each time. */
#define RANGE_POLICIES_MAX 4096

/* A first occurrence's memory, saved as its calls are issued (RANGE_LEARN): at each call's
 * ENTER, what it reaches directly (its parameters' allocations, its module's globals, a
 * memset's or copy's destination) and no earlier call did is copied on the call's own
 * stream, just before the call. Nothing the range writes is saved after it was written:
 * each allocation is saved before the first call that reaches it, and the end checks
 * that every call's whole reach (one level through small allocations, read then) was
 * saved before that call. It replaces the whole-context checkpoint that learning took
 * at the begin, whose cost grew with the memory the application holds (~470 ms at
 * 40 GiB, bench/NOTES.md "Session 9"). A call whose reach cannot be known (a graph
 * launch, a pointer into memory the driver cannot describe) saves the whole context at
 * that call instead (after waiting for the context), and the begin state is that
 * checkpoint with what was saved before it put back over it. One recording at a time:
 * under the replay lock. */
struct saved_part {
	size_t at;                  /* the index of the op it was saved before */
	struct mem_reach reach;     /* whole allocations, sorted */
	struct mem_backup backup;
};
static struct {
	bool on;                    /* this recording saves as its calls are issued */
	CUcontext ctx;              /* the range's */
	bool whole;                 /* a call's reach was unknown: the context saved there */
	bool checkpointed;          /* mid holds the context as that call found it */
	RP_CUpti_Checkpoint mid;
	struct mem_reach saved;     /* the union of the parts */
	struct saved_part *parts;
	size_t count, capacity;
	char why[320];              /* why whole, or why saving failed */
	bool failed;                /* a save failed: the occurrence cannot be measured */
	bool capture;               /* because a capture began meanwhile */
	/* Why failed, as a code for the report: AS_ISSUED_* paired with the failure's code. */
	long long failure;
	bool late;                  /* a call reached memory not saved before it (calls_reach) */
} as_issued;
enum { AS_ISSUED_SAVE = 1, AS_ISSUED_NO_MEMORY, AS_ISSUED_WHOLE, AS_ISSUED_CAPTURE };

/* Saved copies whose freeing waits until no stream capture is under way: synchronising,
 * or freeing device memory, while another thread captures would invalidate the
 * application's capture (a range abandoned for a capture under way at its end). Freed at
 * the next reset that can. */
struct deferred_backup {
	CUcontext ctx;
	struct mem_backup backup;
};
static struct deferred_backup *deferred;
static size_t deferred_count;

static void synchronize_context(CUcontext ctx)
{
	CUcontext was = NULL;
	rp_api.cuCtxGetCurrent(&was);
	if (was != ctx)
		rp_api.cuCtxSetCurrent(ctx);
	rp_api.cuCtxSynchronize();
	if (was != ctx)
		rp_api.cuCtxSetCurrent(was);
}

static void as_issued_reset(void)
{
	bool capturing = inject_captures_under_way();
	if (!capturing) {
		/* A copy queued on the application's stream may still run (a range refused
		 * or abandoned before its end synchronised): it ends before its memory is
		 * freed. The calling thread's context may be another (a call refused for
		 * that). */
		if (as_issued.count && as_issued.ctx)
			synchronize_context(as_issued.ctx);
		for (size_t i = 0; i < deferred_count; i++) {
			synchronize_context(deferred[i].ctx);
			mem_backup_trim(&deferred[i].backup, 0);
		}
		free(deferred);
		deferred = NULL;
		deferred_count = 0;
	}
	for (size_t i = 0; i < as_issued.count; i++) {
		mem_reach_finish(&as_issued.parts[i].reach);
		if (!capturing) {
			mem_backup_trim(&as_issued.parts[i].backup, 0);
			continue;
		}
		struct deferred_backup *grown = realloc(deferred, (deferred_count + 1) *
							sizeof(*grown));
		if (grown) {   /* else the copy is lost to rangeprof until the process ends */
			deferred = grown;
			deferred[deferred_count++] = (struct deferred_backup){
				.ctx = as_issued.ctx, .backup = as_issued.parts[i].backup };
		}
	}
	free(as_issued.parts);
	mem_reach_finish(&as_issued.saved);
	if (as_issued.checkpointed)
		rp_api.cuptiCheckpointFree(&as_issued.mid);
	memset(&as_issued, 0, sizeof(as_issued));
}

void range_memory_context_destroyed(CUcontext ctx)
{
	INJECT_REPLAY_HELD();
	/* Its memory goes with it: freeing an address later could free another context's
	 * allocation that was given the same address meanwhile. */
	size_t kept = 0;
	for (size_t i = 0; i < deferred_count; i++)
		if (deferred[i].ctx != ctx)
			deferred[kept++] = deferred[i];
	deferred_count = kept;
}

struct range_policy *range_policy_of(const char *name)
{
	INJECT_REPLAY_HELD();
	for (size_t i = 0; i < policy_count; i++)
		if (!strcmp(policies[i].name, name))
			return &policies[i];
	if (policy_count == RANGE_POLICIES_MAX)
		return NULL;
	if (policy_count == policy_capacity) {
		size_t cap = policy_capacity ? 2 * policy_capacity : 8;
		struct range_policy *grown = realloc(policies, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		policies = grown;
		policy_capacity = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return NULL;
	policies[policy_count] = (struct range_policy){ .name = copy, .state = RANGE_LEARN };
	return &policies[policy_count++];
}

bool range_policy_refused(const struct range_policy *p)
{
	return p && p->state == RANGE_REFUSED;
}

bool range_policy_refuse(struct range_policy *p, bool transient)
{
	INJECT_REPLAY_HELD();
	if (!p)
		return false;
	mem_reach_finish(&p->reach);
	if (transient && ++p->transient_refusals < TRANSIENT_REFUSALS) {
		p->state = RANGE_LEARN;
		p->misses = 0;   /* learning anew: its union starts anew too */
		return false;
	}
	p->state = RANGE_REFUSED;
	return true;
}

static bool copy_reach(struct mem_reach *to, const struct mem_reach *from)
{
	*to = (struct mem_reach){ 0 };
	if (!from->count)
		return true;
	to->ranges = malloc(from->count * sizeof(*to->ranges));
	if (!to->ranges)
		return false;
	memcpy(to->ranges, from->ranges, from->count * sizeof(*to->ranges));
	to->count = to->capacity = from->count;
	to->bytes = from->bytes;
	return true;
}

bool range_memory_begin(struct range_policy *p, struct measurement *m,
			struct mem_hashes *before)
{
	INJECT_REPLAY_HELD();
	*before = (struct mem_hashes){ 0 };
	char err[256];
	as_issued_reset();
	if (p && p->state == RANGE_REACH) {
		m->save.strategy = "reach";
		snprintf(m->save.why, sizeof(m->save.why), "a range: the memory its calls reached "
			 "at its earlier occurrences (%zu bytes); the first of them was shown to "
			 "write nothing else", p->reach.bytes);
		bool copied = copy_reach(&m->save.reach, &p->reach);
		int rc = copied ? mem_save(&m->c->inputs, &m->save.reach, NULL, err, sizeof(err)) :
			RP_ERR_NO_MEMORY;
		if (rc == 0)
			return true;
		mem_reach_finish(&m->save.reach);
		inject_output_report(INJECT_REPORT_RANGE_SAVE_REACH,
				     INJECT_CONCERNS(.kernel = m->kernel, .detail = rc), false,
			      "range '%s': saving the memory it reached before failed (%s); "
			      "this occurrence saves the whole context", m->kernel,
			      copied ? err : "out of host memory");
	}
	/* --memory-save checkpoint: saved whole at every occurrence, as every kernel is. */
	bool whole_asked = inject_config()->memory_save == RP_MEMORY_SAVE_CHECKPOINT;
	if (whole_asked && p)
		p->state = RANGE_WHOLE;
	/* Learning: every tracked allocation hashed now, to see at the end which ones the
	 * range changed, and its calls' memory saved as they are issued. Where the hashes
	 * cannot be taken, saved whole and learning nothing. */
	if (p && p->state == RANGE_LEARN && m->c->verifier_ready) {
		if (mem_hash_outside(&m->c->verifier, &(struct mem_reach){ 0 }, NULL, before, err,
				     sizeof(err)) == 0) {
			as_issued.on = true;
			as_issued.ctx = m->launch.ctx;
			m->save.strategy = "reach";
			snprintf(m->save.why, sizeof(m->save.why), "a range's first occurrence: "
				 "the memory of each of its calls saved as the call was issued, "
				 "while it learned what the range reaches");
			return true;
		}
		mem_hashes_finish(before);
	}
	snprintf(m->save.why, sizeof(m->save.why), "a range: %s",
		 whole_asked ? "--memory-save checkpoint" :
		 p && p->state == RANGE_WHOLE ? "its calls' reach cannot be shown to be all it "
		 "writes, so all the context's memory is saved" : "what it writes cannot be "
		 "checked (no hashes of the device memory), so all the context's memory is "
		 "saved");
	/* The kernel launches' saved copies are freed first, as around a graph's checkpoint
	 * (graph_measure.c): a copy grown or freed while the checkpoint holds it would be
	 * restored into memory that is gone. */
	inject_session_drop_backups(m->launch.ctx);
	/* The sums buffer the hashes used is freed again before the checkpoint holds it. */
	if (m->c->verifier_ready)
		mem_verifier_drop_sums(&m->c->verifier);
	return inject_checkpoint_save(m);
}

/* What one recorded call reaches, as whole allocations and globals, into r (empty for a
 * call that writes no memory); false with why when it cannot be known. direct: not
 * reading device memory (at the call's ENTER), else one level through small allocations
 * (the context synchronised). known: the tracked allocations, sorted. */
static bool op_reach(const struct range_op *op, const struct mem_range *known,
		     size_t known_count, bool direct, struct mem_reach *r, char *why,
		     size_t why_size)
{
	*r = (struct mem_reach){ 0 };
	if (op->kind == RANGE_OP_KERNEL) {
		void **extra = op->kernel.params ? NULL : (void **)op->kernel.extra;
		int rc = direct ?
			mem_reach_collect_direct(r, op->kernel.launch.function, op->kernel.params,
						 extra) :
			mem_reach_collect(r, op->kernel.launch.function, op->kernel.params, extra);
		if (rc) {
			snprintf(why, why_size, "the reach of %s: %s", op->kernel.name ?
				 op->kernel.name : "a kernel", r->unknown);
			mem_reach_finish(r);
			return false;
		}
	} else if (op->kind == RANGE_OP_MEMSET || op->kind == RANGE_OP_COPY) {
		/* The whole allocation written: the hashes at the begin and end are taken
		 * per allocation, so only whole ones can account for a change. */
		CUdeviceptr dst = op->kind == RANGE_OP_MEMSET ? op->memset.dst : op->copy.dst;
		long k = mem_ranges_find(known, known_count, dst);
		if (k < 0) {
			snprintf(why, why_size, "a %s writes memory rangeprof did not see "
				 "allocated", op->kind == RANGE_OP_MEMSET ? "memset" : "copy");
			return false;
		}
		if (mem_reach_add(r, &known[k], 1)) {
			snprintf(why, why_size, "out of host memory");
			return false;
		}
	} else if (op->kind == RANGE_OP_GRAPH_LAUNCH) {
		snprintf(why, why_size, "a graph launch: what its nodes reach is not collected");
		return false;
	}
	return true;
}

/* What the recorded calls reach, as whole allocations and globals, into u; false with
 * why when it cannot be known. Needs the context synchronised (reach.c reads small
 * allocations). With late (a first occurrence saved as its calls were issued), also
 * whether each call's reach was among what was saved before that call: late gets why
 * not, and as_issued.late says so (the code the end decides on). */
static bool calls_reach(const struct range_ops *ops, struct mem_reach *u, char *why,
			size_t why_size, char *late, size_t late_size)
{
	*u = (struct mem_reach){ 0 };
	struct mem_range *known = NULL;
	size_t known_count = 0;
	if (mem_track_snapshot(&known, &known_count)) {
		snprintf(why, why_size, "out of host memory");
		return false;
	}
	struct mem_reach saved_before = { 0 };   /* the parts saved before call i */
	size_t next_part = 0;
	bool ok = true;
	for (size_t i = 0; ok && i < ops->count; i++) {
		const struct range_op *op = &ops->ops[i];
		struct mem_reach r;
		ok = op_reach(op, known, known_count, false, &r, why, why_size);
		if (ok && mem_reach_add(u, r.ranges, r.count)) {
			snprintf(why, why_size, "out of host memory");
			ok = false;
		}
		for (; ok && late && next_part < as_issued.count &&
		       as_issued.parts[next_part].at <= i; next_part++) {
			const struct mem_reach *part = &as_issued.parts[next_part].reach;
			if (mem_reach_add(&saved_before, part->ranges, part->count)) {
				snprintf(why, why_size, "out of host memory");
				ok = false;
			}
		}
		if (ok && late && !as_issued.late && r.count &&
		    !mem_ranges_cover(saved_before.ranges, saved_before.count, r.ranges, r.count)) {
			as_issued.late = true;
			snprintf(late, late_size, "its call %zu (%s) reached memory through pointers "
				 "stored in device memory, which no call before it pointed to and "
				 "which was not saved before it", i + 1, op->kind != RANGE_OP_KERNEL ?
				 "a memset or copy" : op->kernel.name ? op->kernel.name : "a kernel");
		}
		mem_reach_finish(&r);
	}
	mem_reach_finish(&saved_before);
	free(known);
	if (!ok)
		mem_reach_finish(u);
	return ok;
}

/* ---- saving a first occurrence's memory as its calls are issued --------------------- */

/* Queues, on stream before op at, the copy of what r holds that no earlier call reached:
 * true, or false with why not in as_issued.why and as_issued.failure. */
static bool save_before(size_t at, const struct mem_reach *r, CUstream stream)
{
	struct mem_reach fresh = { 0 };
	for (size_t i = 0; i < r->count; i++) {
		if (mem_ranges_cover(as_issued.saved.ranges, as_issued.saved.count, &r->ranges[i], 1))
			continue;
		if (mem_reach_add(&fresh, &r->ranges[i], 1))
			goto out_of_memory;
	}
	if (!fresh.count)
		return true;
	if (as_issued.count == as_issued.capacity) {
		size_t cap = as_issued.capacity ? 2 * as_issued.capacity : 16;
		struct saved_part *grown = realloc(as_issued.parts, cap * sizeof(*grown));
		if (!grown)
			goto out_of_memory;
		as_issued.parts = grown;
		as_issued.capacity = cap;
	}
	struct saved_part *part = &as_issued.parts[as_issued.count];
	*part = (struct saved_part){ .at = at, .reach = fresh };
	char err[256] = "";
	int rc = mem_save_queued(&part->backup, &part->reach, stream, err, sizeof(err));
	if (rc) {
		mem_backup_trim(&part->backup, 0);
		mem_reach_finish(&fresh);
		snprintf(as_issued.why, sizeof(as_issued.why), "saving the memory of its call %zu "
			 "failed (%s)", at + 1, err);
		as_issued.failure = INJECT_DETAIL_PAIR(AS_ISSUED_SAVE, rc);
		return false;
	}
	as_issued.count++;
	if (mem_reach_add(&as_issued.saved, fresh.ranges, fresh.count))
		goto out_of_memory_kept;
	return true;
out_of_memory:
	mem_reach_finish(&fresh);
out_of_memory_kept:
	snprintf(as_issued.why, sizeof(as_issued.why), "rangeprof ran out of host memory");
	as_issued.failure = INJECT_DETAIL_PAIR(AS_ISSUED_NO_MEMORY, RP_ERR_NO_MEMORY);
	return false;
}

/* A call whose reach cannot be known: the whole context saved as that call finds it, once
 * the work before it ended. */
static void whole_at(struct measurement *m, size_t at, const char *why)
{
	as_issued.whole = true;
	snprintf(as_issued.why, sizeof(as_issued.why), "%s", why);
	CUresult cr = rp_api.cuCtxSynchronize();
	/* As at a whole begin: the checkpoint must not hold memory freed or grown later. */
	if (m->c->verifier_ready)
		mem_verifier_drop_sums(&m->c->verifier);
	inject_session_drop_backups(m->launch.ctx);
	CUptiResult r = cr == CUDA_SUCCESS ?
		inject_checkpoint_cupti_save(m->launch.ctx, &as_issued.mid) : CUPTI_SUCCESS;
	if (cr == CUDA_SUCCESS && r == CUPTI_SUCCESS) {
		as_issued.checkpointed = true;
		return;
	}
	as_issued.failed = true;
	/* The driver's error, else CUPTI's, apart from each other by the step. */
	as_issued.failure = INJECT_DETAIL_PAIR(AS_ISSUED_WHOLE, cr != CUDA_SUCCESS ? (int)cr :
					       -(int)r);
	snprintf(as_issued.why, sizeof(as_issued.why), "saving the whole context at its call %zu "
		 "(%s) failed", at + 1, why);
}

void range_memory_on_calls(struct measurement *m, const struct range_ops *ops, size_t from)
{
	INJECT_REPLAY_HELD();
	if (!as_issued.on || as_issued.whole || as_issued.failed)
		return;
	/* Allocating, or waiting for the context, while another thread captures would
	 * invalidate the application's capture (a range whose end finds it still under way
	 * is abandoned anyway). */
	if (inject_captures_under_way()) {
		as_issued.failed = as_issued.capture = true;
		as_issued.failure = INJECT_DETAIL_PAIR(AS_ISSUED_CAPTURE, 0);
		snprintf(as_issued.why, sizeof(as_issued.why), "a stream capture began while it "
			 "ran, and saving its memory then would have invalidated the capture");
		return;
	}
	struct mem_range *known = NULL;
	size_t known_count = 0;
	for (size_t i = from; i < ops->count; i++) {
		enum range_op_kind kind = ops->ops[i].kind;
		if ((kind == RANGE_OP_MEMSET || kind == RANGE_OP_COPY) && !known &&
		    mem_track_snapshot(&known, &known_count)) {
			as_issued.failed = true;
			as_issued.failure = INJECT_DETAIL_PAIR(AS_ISSUED_NO_MEMORY,
							       RP_ERR_NO_MEMORY);
			snprintf(as_issued.why, sizeof(as_issued.why), "rangeprof ran out of host "
				 "memory");
			return;
		}
	}
	for (size_t i = from; i < ops->count; i++) {
		const struct range_op *op = &ops->ops[i];
		struct mem_reach r;
		char why[320] = "";
		if (!op_reach(op, known, known_count, true, &r, why, sizeof(why))) {
			whole_at(m, i, why);
			break;
		}
		bool failed = r.count && !save_before(i, &r, op->stream);
		mem_reach_finish(&r);
		if (failed) {
			as_issued.failed = true;
			break;
		}
	}
	free(known);
}

/* The saved parts put back, the newest first, so that memory two parts hold gets the
 * older copy: the one taken before any call wrote it. */
static bool put_parts_back(char *err, size_t err_size)
{
	for (size_t k = as_issued.count; k-- > 0;)
		if (mem_restore(&as_issued.parts[k].backup, &as_issued.parts[k].reach, NULL, err,
				err_size))
			return false;
	CUresult cr = rp_api.cuCtxSynchronize();
	if (cr != CUDA_SUCCESS)
		snprintf(err, err_size, "%s", collector_cu_error(cr));
	return cr == CUDA_SUCCESS;
}

/* A learning occurrence's end: what its calls reached, and whether that was all it wrote.
 * The policy becomes REACH, WHOLE, or stays LEARN where nothing could be shown. late, for
 * an occurrence saved as its calls were issued (else NULL): calls_reach's. */
static void learn(struct range_policy *p, struct measurement *m, const struct range_ops *ops,
		  struct mem_hashes *before, char *late, size_t late_size)
{
	char why[320] = "";
	struct mem_reach u;
	if (!calls_reach(ops, &u, why, sizeof(why), late, late_size)) {
		p->state = RANGE_WHOLE;
		/* Once per name: its policy is whole from now on. */
		inject_output_report(INJECT_REPORT_RANGE_WHOLE_UNKNOWN,
				     INJECT_CONCERNS(.kernel = m->kernel), false,
			      "range '%s': %s; each of its occurrences saves and restores the "
			      "whole context's memory, which costs more as the application holds "
			      "more", m->kernel, why);
		return;
	}
	struct mem_hashes after = { 0 };
	char err[256];
	if (!before->count ||
	    mem_hash_again(&m->c->verifier, before, NULL, &after, err, sizeof(err))) {
		mem_reach_finish(&u);   /* nothing shown: learns again next time */
		return;
	}
	long outside = mem_hashes_differ_outside(before, &after, u.ranges, u.count);
	if (outside >= 0) {
		p->state = RANGE_WHOLE;
		inject_output_report(INJECT_REPORT_RANGE_WHOLE_OUTSIDE,
				     INJECT_CONCERNS(.kernel = m->kernel), false,
			      "range '%s' wrote outside the memory its calls' parameters reach "
			      "(%zu bytes at 0x%llx changed); each of its occurrences saves and "
			      "restores the whole context's memory", m->kernel,
			      before->segments[outside].size,
			      (unsigned long long)before->segments[outside].base);
		mem_reach_finish(&u);
	} else {
		mem_reach_finish(&p->reach);
		p->reach = u;
		p->state = RANGE_REACH;
		m->save.verified = true;
		m->save.verified_bytes = before->bytes;
	}
	mem_hashes_finish(&after);
}

/* A later occurrence whose calls reached beyond the union it saved: not measured (the
 * memory outside was not saved at its begin), and the policy grows by what it reached,
 * so that the next occurrences save that too. Where the reach cannot be known, or after
 * RANGE_MISSES_MAX such occurrences, the name is saved whole from now on. */
static void range_reach_missed(struct range_policy *p, struct measurement *m,
			       const struct mem_reach *reached, const char *why)
{
	size_t before = p ? p->reach.bytes : 0;
	bool too_many = p && ++p->misses >= RANGE_MISSES_MAX;
	bool grown = p && reached && !too_many &&
		     mem_reach_add(&p->reach, reached->ranges, reached->count) == 0;
	/* reached is known (calls_reach said why where it is not). */
	if (!grown && reached)
		why = !p ? "no policy is kept for its name" : too_many ?
		      "at too many occurrences" : "out of host memory";
	/* Each miss is said: the detail tells them apart (inject_output_report says each once). */
	static unsigned long long misses_said;
	long long detail = (long long)++misses_said;
	if (grown) {
		inject_output_report(INJECT_REPORT_RANGE_REACH,
				     INJECT_CONCERNS(.kernel = m->kernel, .detail = detail), false,
			       "range '%s' reached memory its earlier occurrences did not "
			      "(%zu bytes more); this occurrence is not measured, and the next ones "
			      "save that memory too", m->kernel, p->reach.bytes - before);
		return;
	}
	if (p) {
		mem_reach_finish(&p->reach);
		p->state = RANGE_WHOLE;
	}
	inject_output_report(INJECT_REPORT_RANGE_REACH,
			     INJECT_CONCERNS(.kernel = m->kernel, .detail = detail), false,
		      "range '%s' reached memory its earlier occurrences did not: %s; this "
		      "occurrence is not measured, and each next one saves and restores the whole "
		      "context's memory", m->kernel, why);
}

/* The end of an occurrence saved as its calls were issued, the context synchronised:
 * learns, then makes the begin state the runs restore (the reach's inputs, or a
 * checkpoint where a call's reach was unknown) and saves the end state. */
static bool end_as_issued(struct range_policy *p, struct measurement *m,
			  const struct range_ops *ops, struct mem_hashes *before,
			  RP_CUpti_Checkpoint *end_state)
{
	char err[320] = "", late[320] = "";
	/* Whole: the checkpoint holds what was not saved call by call, so lateness does not
	 * matter. */
	if (p && p->state == RANGE_LEARN)
		learn(p, m, ops, before, as_issued.whole ? NULL : late, sizeof(late));
	mem_hashes_finish(before);
	if (m->c->verifier_ready)
		mem_verifier_drop_sums(&m->c->verifier);
	if (as_issued.failed) {
		/* A capture is the application's doing, not a failure of rangeprof's. */
		inject_output_report(INJECT_REPORT_RANGE_SAVE_AS_ISSUED,
				     INJECT_CONCERNS(.kernel = m->kernel,
						     .detail = as_issued.failure),
			      !as_issued.capture,
			      "range '%s': %s; this occurrence is not measured", m->kernel,
			      as_issued.why);
		return false;
	}
	if (as_issued.whole) {
		/* The end state whole; then the begin state: the context as the unknown call
		 * found it, with what the calls before it reached put back over it. */
		if (inject_checkpoint_cupti_save(m->launch.ctx, end_state) != CUPTI_SUCCESS) {
			inject_output_report(INJECT_REPORT_RANGE_END_STATE,
					     INJECT_CONCERNS(.kernel = m->kernel), true,
				      "range '%s': saving the memory its end left "
				      "(cuptiCheckpointSave) failed; not measured", m->kernel);
			return false;
		}
		bool rebuilt = rp_api.cuptiCheckpointRestore(&as_issued.mid) == CUPTI_SUCCESS &&
			       put_parts_back(err, sizeof(err));
		rp_api.cuptiCheckpointFree(&as_issued.mid);
		as_issued.checkpointed = false;
		if (rebuilt && inject_checkpoint_save(m)) {
			snprintf(m->save.why, sizeof(m->save.why), "a range: %.160s, so all "
				 "the context's memory was saved at that call, and what the calls before "
				 "it reached as each was issued", as_issued.why);
			return true;
		}
		if (!rebuilt)
			inject_output_report(INJECT_REPORT_RANGE_REBUILD,
				     INJECT_CONCERNS(.kernel = m->kernel, .detail = 1), true,
				      "range '%s': putting together the memory it began with "
				      "failed (%s); not measured", m->kernel, err);
		range_memory_put_back(m, end_state);
		return false;
	}
	if (!p || p->state != RANGE_REACH) {
		/* learn() said why where it could tell (the range wrote outside its calls'
		 * reach); otherwise the hashes could not be taken again. */
		if (p && p->state == RANGE_LEARN)
			inject_output_report(INJECT_REPORT_RANGE_LEARN,
					     INJECT_CONCERNS(.kernel = m->kernel), false,
				      "range '%s': what it wrote could not be checked against what "
				      "its calls reach; this occurrence is not measured, and the next "
				      "one learns again", m->kernel);
		return false;
	}
	if (as_issued.late) {
		inject_output_report(INJECT_REPORT_RANGE_REACH_LATE,
				     INJECT_CONCERNS(.kernel = m->kernel), false,
			      "range '%s': %s; this occurrence is not measured, and the next "
			      "ones save all it reached at their begin", m->kernel, late);
		return false;
	}
	/* The end state first, then the begin state put back from the parts and saved as
	 * the runs' inputs: the application's memory is its own again after the runs. */
	bool copied = copy_reach(&m->save.reach, &p->reach);
	int rc = copied ? mem_save(&m->c->result, &m->save.reach, NULL, err, sizeof(err)) :
		RP_ERR_NO_MEMORY;
	if (rc) {
		inject_output_report(INJECT_REPORT_RANGE_END_STATE,
				     INJECT_CONCERNS(.kernel = m->kernel, .detail = rc), true,
			      "range '%s': saving the memory its end left failed (%s); not "
			      "measured", m->kernel, copied ? err : "out of host memory");
		return false;
	}
	if (put_parts_back(err, sizeof(err)) &&
	    mem_save(&m->c->inputs, &m->save.reach, NULL, err, sizeof(err)) == 0)
		return true;
	inject_output_report(INJECT_REPORT_RANGE_REBUILD,
			     INJECT_CONCERNS(.kernel = m->kernel, .detail = 2), true,
		      "range '%s': putting together the memory it began with failed (%s); not "
		      "measured", m->kernel, err);
	range_memory_put_back(m, end_state);
	return false;
}

bool range_memory_end(struct range_policy *p, struct measurement *m,
		      const struct range_ops *ops, struct mem_hashes *before,
		      RP_CUpti_Checkpoint *end_state)
{
	INJECT_REPLAY_HELD();
	if (as_issued.on)
		return end_as_issued(p, m, ops, before, end_state);
	char err[256] = "";
	if (!m->save.checkpoint_saved) {
		/* Saved from the learned reach: enough only when this occurrence's calls reached
		 * nothing beyond it. */
		char why[320] = "";
		struct mem_reach u;
		bool known = calls_reach(ops, &u, why, sizeof(why), NULL, 0);
		if (!known || !mem_ranges_cover(m->save.reach.ranges, m->save.reach.count, u.ranges,
						u.count)) {
			range_reach_missed(p, m, known ? &u : NULL, why);
			mem_reach_finish(&u);
			return false;
		}
		mem_reach_finish(&u);
		int rc = mem_save(&m->c->result, &m->save.reach, NULL, err, sizeof(err));
		if (rc == 0)
			return true;
		inject_output_report(INJECT_REPORT_RANGE_END_STATE,
				     INJECT_CONCERNS(.kernel = m->kernel, .detail = rc), true,
			      "range '%s': saving the memory its end left failed (%s); not "
			      "measured", m->kernel, err);
		return false;
	}
	if (p && p->state == RANGE_LEARN)
		learn(p, m, ops, before, NULL, 0);
	mem_hashes_finish(before);
	if (m->c->verifier_ready)
		mem_verifier_drop_sums(&m->c->verifier);
	if (inject_checkpoint_cupti_save(m->launch.ctx, end_state) == CUPTI_SUCCESS)
		return true;
	inject_output_report(INJECT_REPORT_RANGE_END_STATE, INJECT_CONCERNS(.kernel = m->kernel),
			     true,
		      "range '%s': saving the memory its end left (cuptiCheckpointSave) failed; "
		      "not measured", m->kernel);
	return false;
}

void range_memory_put_back(struct measurement *m, RP_CUpti_Checkpoint *end_state)
{
	INJECT_REPLAY_HELD();
	bool failed;
	if (m->save.checkpoint_saved) {
		failed = inject_checkpoint_cupti_put_back(end_state) != CUPTI_SUCCESS;
	} else {
		char err[256];
		failed = mem_restore(&m->c->result, &m->save.reach, NULL, err, sizeof(err)) != 0 ||
			 rp_api.cuCtxSynchronize() != CUDA_SUCCESS;
	}
	if (failed)
		inject_output_report(INJECT_REPORT_RANGE_PUT_BACK,
				     INJECT_CONCERNS(.kernel = m->kernel), true,
			      "range '%s': putting back the memory its end left failed; the "
			      "application's device memory may hold the last replay's results",
			      m->kernel);
}

void range_memory_drop(struct measurement *m, struct mem_hashes *before)
{
	INJECT_REPLAY_HELD();
	mem_hashes_finish(before);
	if (m->save.checkpoint_saved) {
		rp_api.cuptiCheckpointFree(&m->save.checkpoint);
		m->save.checkpoint_saved = false;
	}
	/* After the checkpoints that may hold the parts' memory are gone. */
	as_issued_reset();
}
