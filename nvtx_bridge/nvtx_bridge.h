/* nvtx_bridge/nvtx_bridge.h - rangeprof as the NVTX injection library.
 * The bridge keeps, for every application thread, its push/pop stacks per domain, and for
 * the process the open start/end ranges; inject/ reads them through
 * nvtx_bridge_snapshot() at each kernel launch and selects launches with nvtx_filter_*.
 * No CUDA here: libc and common/ only, so all of it is tested without a GPU. */
#ifndef NVTX_BRIDGE_NVTX_BRIDGE_H
#define NVTX_BRIDGE_NVTX_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* NVTX3's callback-table types; a tool includes the client header without the inline
 * implementation. */
#ifndef NVTX_NO_IMPL
#define NVTX_NO_IMPL
#endif
#include <nvtx3/nvToolsExt.h>

/* ------------------------------------------------------------------------------------ */
/* Attaching                                                                            */
/* ------------------------------------------------------------------------------------ */

/* Fills NVTX's CORE and CORE2 callback tables with the bridge. Called once per NVTX
 * client module (every binary that inlines NVTX3 initialises separately). Returns 1 on
 * success, 0 when the export table is missing or too small; nothing is written then. */
int nvtx_bridge_attach(NvtxGetExportTableFunc_t get_export_table);
/* How many NVTX client modules attached so far: 0 means no range of the application can
 * be seen (each module reads NVTX_INJECTION64_PATH at its own first NVTX call only). */
unsigned nvtx_bridge_attached_modules(void);

/* A start/end range opened by rangeprof itself (the control API's annotations) in the
 * domain named domain_name, as if the application had called nvtxDomainRangeStartEx
 * with an ASCII message: snapshots of every thread hold it until it ends. 0 when out of
 * memory. */
nvtxRangeId_t nvtx_bridge_own_range_start(const char *domain_name, const char *text);
void nvtx_bridge_own_range_end(nvtxRangeId_t id);

/* ------------------------------------------------------------------------------------ */
/* State                                                                                */
/* ------------------------------------------------------------------------------------ */

enum nvtx_bridge_payload {
	NVTX_BRIDGE_PAYLOAD_NONE,
	NVTX_BRIDGE_PAYLOAD_UINT,
	NVTX_BRIDGE_PAYLOAD_INT,
	NVTX_BRIDGE_PAYLOAD_DOUBLE,
};

struct nvtx_bridge_domain;

struct nvtx_bridge_range {
	const struct nvtx_bridge_domain *domain;
	const char *text;                  /* UTF-8, NUL-terminated */
	bool start_end;                    /* a start/end range rather than push/pop */
	enum nvtx_bridge_payload payload_type;
	union {
		uint64_t u;
		int64_t i;
		double d;
	} payload;
	uint32_t category;                 /* 0: none */
};

/* What was open on the calling thread at one moment: its push/pop ranges of every domain,
 * outermost (earliest pushed) first, then the process's open start/end ranges in the
 * order they started. */
struct nvtx_bridge_snapshot {
	const struct nvtx_bridge_range *ranges;
	/* stamps[i]: the id of the snapshot of this thread that last wrote push/pop range i;
	 * non-decreasing in i, so that a matcher that remembers its state per range since
	 * snapshot X finds, by binary search, the first range that changed after X. */
	const uint64_t *stamps;
	size_t push_count;                 /* ranges[0 .. push_count) are push/pop */
	size_t count;                      /* ranges[push_count .. count) are start/end */
	uint64_t id;                       /* process-wide; the same id, the same ranges */
};

/* What the bridge keeps, whatever the application does, so that its memory stays
 * bounded: a range's text is cut to NVTX_BRIDGE_MAX_TEXT bytes (at a character
 * boundary), and pushes past NVTX_BRIDGE_MAX_DEPTH on one domain's stack are counted but
 * not kept (their pops uncount them). */
#define NVTX_BRIDGE_MAX_TEXT 4096
#define NVTX_BRIDGE_MAX_DEPTH 100000

/* Takes the snapshot of the calling thread into thread-local storage and returns it.
 * Valid until the same thread makes its next NVTX call or snapshot; never fails (on
 * allocation failure the snapshot lacks the ranges it could not hold). Lock-free unless
 * start/end ranges are open. When the thread's ranges have not changed since its last
 * snapshot it is returned as it was, with the same id, at no cost; after a push or a pop
 * only the changed tail is rebuilt. After the thread's NVTX state is torn down (a pthread
 * key destructor calling NVTX at thread exit) it is empty. */
const struct nvtx_bridge_snapshot *nvtx_bridge_snapshot(void);

/* Name of a domain: "" for the default domain. Stable for the life of the process. */
const char *nvtx_bridge_domain_name(const struct nvtx_bridge_domain *domain);
/* Name given to a category with nvtx(Domain)NameCategory, or NULL. */
const char *nvtx_bridge_category_name(const struct nvtx_bridge_domain *domain,
				      uint32_t category);

/* Writes the push/pop texts joined by '/' ("outer/inner") into buf. */
void nvtx_bridge_path(const struct nvtx_bridge_snapshot *snap, char *buf, size_t size);

/* Which range a hook is about: a push/pop range by its domain and depth (0: the bottom)
 * on the calling thread's stack, a start/end range by its id. */
struct nvtx_bridge_range_key {
	bool start_end;
	const struct nvtx_bridge_domain *domain;   /* push/pop */
	size_t depth;                              /* push/pop */
	nvtxRangeId_t id;                          /* start/end */
};

/* Range replay (inject/range/range_workload.c) must see a range begin and end, not only the
 * launches inside it. opened runs on the calling thread once a push or start took effect
 * (the range is in the thread's snapshot); closing runs before a pop or end takes effect
 * (still in it). A push past NVTX_BRIDGE_MAX_DEPTH, a start that ran out of memory and an
 * extra pop call no hook. With no hooks set, an NVTX call pays one relaxed atomic load. */
struct nvtx_bridge_range_hooks {
	void (*opened)(const struct nvtx_bridge_range_key *key);
	void (*closing)(const struct nvtx_bridge_range_key *key);
};
/* Sets the hooks (NULL: none); hooks must stay valid for the life of the process. */
void nvtx_bridge_set_range_hooks(const struct nvtx_bridge_range_hooks *hooks);

/* ------------------------------------------------------------------------------------ */
/* Expressions and filters (ncu's --nvtx-include / --nvtx-exclude)                      */
/* ------------------------------------------------------------------------------------ */

struct nvtx_expr;

/* What an expression may ask for; beyond, parsing fails with a message saying so. Each
 * regex: name has common/regex.h's limits too. */
#define NVTX_EXPR_MAX_LENGTH 4096     /* bytes */
#define NVTX_EXPR_MAX_ELEMENTS 256    /* names, '*' and '+' of one expression */

/* Parses one expression. On error returns NULL and writes a message naming the character
 * where the expression goes wrong into err (without the option name). */
struct nvtx_expr *nvtx_expr_parse(const char *text, char *err, size_t err_size);
void nvtx_expr_destroy(struct nvtx_expr *expr);
bool nvtx_expr_matches(const struct nvtx_expr *expr, const struct nvtx_bridge_snapshot *snap);

struct nvtx_filter;

/* Compiles the include and exclude lists. NULL with a message in err, naming the option
 * as the user spelled it (include_origin: "--nvtx-include" or "RANGEPROF_NVTX_INCLUDE")
 * and the expression, when one does not parse. No expressions at all gives a filter that
 * selects everything. */
struct nvtx_filter *nvtx_filter_create(char *const *includes, size_t include_count,
				       const char *include_origin, char *const *excludes,
				       size_t exclude_count, const char *exclude_origin,
				       char *err, size_t err_size);
void nvtx_filter_destroy(struct nvtx_filter *filter);
/* True when the filter needs no NVTX state: no expressions. */
bool nvtx_filter_is_empty(const struct nvtx_filter *filter);
/* Selected: no include or one include matches, and no exclude matches. The verdict is
 * kept per thread by snapshot id: asked again about an unchanged snapshot, it answers at
 * once. */
bool nvtx_filter_selects(const struct nvtx_filter *filter,
			 const struct nvtx_bridge_snapshot *snap);
/* Until a launch is selected, nvtx_filter_selects also watches (when it computes a
 * verdict, not when it reuses one) whether an include without '/' - a start/end range
 * expression such as 'regex:^matmul' - names a push/pop range open at the launch, the
 * mistake of a user who meant 'regex:^matmul/'. Returns that include's text, and in
 * *range_text the range's (cut to 255 bytes), or NULL when none was seen. */
const char *nvtx_filter_push_pop_hint(const struct nvtx_filter *filter,
				      const char **range_text);

#endif
