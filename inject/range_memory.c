/* inject/range_memory.c - what a range workload saves (range_workload.c; doc/range-replay.md,
 * "What a range saves"). A range's calls are known only at its end, so its first
 * occurrence saves the context's memory whole (CUPTI checkpoint) and learns, while it
 * runs, what the range writes: the union of what its calls reach (each kernel's reach as
 * memory/reach.c collects it for kernel replay, the allocations its memsets and copies
 * write), shown to be enough by hashing every tracked allocation at its begin and end, as
 * the kernel-mode verification does per kernel. Later occurrences of a range of that
 * name save only that union, into the context's saved copies (inputs at the begin, result
 * at the end), so their cost does not grow with the memory the application holds; one
 * whose calls reach beyond it is not measured, and what it reached joins the union (a
 * caching allocator hands a loop's tensors out in turns: PyTorch's MLP block reached new
 * memory at its second occurrence only). Owns the policy
 * of each range name. Under the replay lock. Calls session.c, save.c, output.c,
 * range_ops.c's structures and memory/. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "inject/config.h"
#include "inject/range.h"
#include "inject/range_memory.h"
#include "inject/session.h"

enum range_save_state {
	RANGE_LEARN,     /* saved whole, and learning the reach */
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

struct range_policy *range_policy_of(const char *name)
{
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
	*before = (struct mem_hashes){ 0 };
	char err[256];
	if (p && p->state == RANGE_REACH) {
		m->save.strategy = "reach";
		snprintf(m->save.why, sizeof(m->save.why), "a range: the memory its calls reached "
			 "at its earlier occurrences (%zu bytes); the first of them was shown to "
			 "write nothing else", p->reach.bytes);
		if (copy_reach(&m->save.reach, &p->reach) &&
		    mem_save(&m->c->inputs, &m->save.reach, NULL, err, sizeof(err)) == 0)
			return true;
		mem_reach_finish(&m->save.reach);
		inject_report("range-save", INJECT_CONCERNS(.kernel = m->kernel, .detail = err),
			      false, "range '%s': saving the memory it reached before failed (%s); "
			      "this occurrence saves the whole context", m->kernel,
			      err[0] ? err : "out of host memory");
	}
	/* --memory-save checkpoint: saved whole at every occurrence, as every kernel is. */
	bool whole_asked = inject_config()->memory_save == RP_MEMORY_SAVE_CHECKPOINT;
	if (whole_asked && p)
		p->state = RANGE_WHOLE;
	snprintf(m->save.why, sizeof(m->save.why), "a range: %s",
		 whole_asked ? "--memory-save checkpoint" :
		 p && p->state == RANGE_WHOLE ? "its calls' reach cannot be shown to be all it "
		 "writes, so all the context's memory is saved" : "its calls are not known at its "
		 "first occurrence, so all the context's memory is saved while it learns what "
		 "they reach");
	/* The kernel launches' saved copies are freed first, as around a graph's checkpoint
	 * (graph_measure.c): a copy grown or freed while the checkpoint holds it would be
	 * restored into memory that is gone. */
	inject_replay_drop_backups(m->launch.ctx);
	/* Learning hashes every tracked allocation now, to see at the end which ones the
	 * range changed. A failure only leaves it learning. */
	if (p && p->state == RANGE_LEARN && m->c->verifier_ready &&
	    mem_hash_outside(&m->c->verifier, &(struct mem_reach){ 0 }, NULL, before, err,
			     sizeof(err)))
		mem_hashes_finish(before);
	/* The sums buffer the hashes used is freed again before the checkpoint holds it. */
	if (m->c->verifier_ready)
		mem_verifier_drop_sums(&m->c->verifier);
	return inject_save_checkpoint(m);
}

/* What the recorded calls reach, as whole allocations and globals, into u; false with
 * why when it cannot be known. Needs the context synchronised (reach.c reads small
 * allocations). */
static bool calls_reach(const struct range_ops *ops, struct mem_reach *u, char *why,
			size_t why_size)
{
	*u = (struct mem_reach){ 0 };
	struct mem_range *known = NULL;
	size_t known_count = 0;
	if (mem_track_snapshot(&known, &known_count)) {
		snprintf(why, why_size, "out of host memory");
		return false;
	}
	bool ok = true;
	for (size_t i = 0; ok && i < ops->count; i++) {
		const struct range_op *op = &ops->ops[i];
		if (op->kind == RANGE_OP_KERNEL) {
			struct mem_reach r = { 0 };
			if (mem_reach_collect(&r, op->kernel.launch.function, op->kernel.params,
					      op->kernel.params ? NULL : (void **)op->kernel.extra)) {
				snprintf(why, why_size, "the reach of %s: %s", op->kernel.name ?
					 op->kernel.name : "a kernel", r.unknown);
				ok = false;
			} else if (mem_reach_add(u, r.ranges, r.count)) {
				snprintf(why, why_size, "out of host memory");
				ok = false;
			}
			mem_reach_finish(&r);
		} else if (op->kind == RANGE_OP_MEMSET || op->kind == RANGE_OP_COPY) {
			/* The whole allocation written: the hashes at the begin and end are taken
			 * per allocation, so only whole ones can account for a change. */
			CUdeviceptr dst = op->kind == RANGE_OP_MEMSET ? op->memset.dst : op->copy.dst;
			long k = mem_ranges_find(known, known_count, dst);
			if (k < 0) {
				snprintf(why, why_size, "a %s writes memory rangeprof did not see "
					 "allocated", op->kind == RANGE_OP_MEMSET ? "memset" : "copy");
				ok = false;
			} else if (mem_reach_add(u, &known[k], 1)) {
				snprintf(why, why_size, "out of host memory");
				ok = false;
			}
		} else if (op->kind == RANGE_OP_GRAPH_LAUNCH) {
			snprintf(why, why_size, "a graph launch: what its nodes reach is not "
				 "collected");
			ok = false;
		}
	}
	free(known);
	if (!ok)
		mem_reach_finish(u);
	return ok;
}

/* A learning occurrence's end: what its calls reached, and whether that was all it wrote.
 * The policy becomes REACH, WHOLE, or stays LEARN where nothing could be shown. */
static void learn(struct range_policy *p, struct measurement *m, const struct range_ops *ops,
		  struct mem_hashes *before)
{
	char why[320] = "";
	struct mem_reach u;
	if (!calls_reach(ops, &u, why, sizeof(why))) {
		p->state = RANGE_WHOLE;
		inject_report("range-whole", INJECT_CONCERNS(.kernel = m->kernel, .detail = why),
			      false, "range '%s': %s; each of its occurrences saves and restores the "
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
		inject_report("range-whole", INJECT_CONCERNS(.kernel = m->kernel,
							     .detail = "wrote outside"), false,
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
	if (!grown && !why[0])
		why = !p ? "no policy is kept for its name" : too_many ?
		      "at too many occurrences" : "out of host memory";
	/* Each miss is said: the detail tells them apart (inject_report says each once). */
	static unsigned long misses_said;
	char detail[32];
	snprintf(detail, sizeof(detail), "%lu", ++misses_said);
	if (grown) {
		inject_report("range-reach", INJECT_CONCERNS(.kernel = m->kernel, .detail = detail),
			      false, "range '%s' reached memory its earlier occurrences did not "
			      "(%zu bytes more); this occurrence is not measured, and the next ones "
			      "save that memory too", m->kernel, p->reach.bytes - before);
		return;
	}
	if (p) {
		mem_reach_finish(&p->reach);
		p->state = RANGE_WHOLE;
	}
	inject_report("range-reach", INJECT_CONCERNS(.kernel = m->kernel, .detail = detail),
		      false, "range '%s' reached memory its earlier occurrences did not: %s; this "
		      "occurrence is not measured, and each next one saves and restores the whole "
		      "context's memory", m->kernel, why);
}

bool range_memory_end(struct range_policy *p, struct measurement *m,
		      const struct range_ops *ops, struct mem_hashes *before,
		      RP_CUpti_Checkpoint *end_state)
{
	char err[256] = "";
	if (!m->save.checkpoint_saved) {
		/* Saved from the learned reach: enough only when this occurrence's calls reached
		 * nothing beyond it. */
		char why[320] = "";
		struct mem_reach u;
		bool known = calls_reach(ops, &u, why, sizeof(why));
		if (!known || !mem_ranges_cover(m->save.reach.ranges, m->save.reach.count, u.ranges,
						u.count)) {
			range_reach_missed(p, m, known ? &u : NULL, why);
			mem_reach_finish(&u);
			return false;
		}
		mem_reach_finish(&u);
		if (mem_save(&m->c->result, &m->save.reach, NULL, err, sizeof(err)) == 0)
			return true;
		inject_report("range-end-state", INJECT_CONCERNS(.kernel = m->kernel, .detail = err),
			      true, "range '%s': saving the memory its end left failed (%s); not "
			      "measured", m->kernel, err);
		return false;
	}
	if (p && p->state == RANGE_LEARN)
		learn(p, m, ops, before);
	mem_hashes_finish(before);
	if (m->c->verifier_ready)
		mem_verifier_drop_sums(&m->c->verifier);
	if (inject_checkpoint_save(m->launch.ctx, end_state) == CUPTI_SUCCESS)
		return true;
	inject_report("range-end-state", INJECT_CONCERNS(.kernel = m->kernel), true,
		      "range '%s': saving the memory its end left (cuptiCheckpointSave) failed; "
		      "not measured", m->kernel);
	return false;
}

void range_memory_put_back(struct measurement *m, RP_CUpti_Checkpoint *end_state)
{
	bool failed;
	if (m->save.checkpoint_saved) {
		failed = inject_checkpoint_put_back(end_state) != CUPTI_SUCCESS;
	} else {
		char err[256];
		failed = mem_restore(&m->c->result, &m->save.reach, NULL, err, sizeof(err)) != 0 ||
			 rp_api.cuCtxSynchronize() != CUDA_SUCCESS;
	}
	if (failed)
		inject_report("range-put-back", INJECT_CONCERNS(.kernel = m->kernel), true,
			      "range '%s': putting back the memory its end left failed; the "
			      "application's device memory may hold the last replay's results",
			      m->kernel);
}

void range_memory_drop(struct measurement *m, struct mem_hashes *before)
{
	mem_hashes_finish(before);
	if (m->save.checkpoint_saved) {
		rp_api.cuptiCheckpointFree(&m->save.checkpoint);
		m->save.checkpoint_saved = false;
	}
}
