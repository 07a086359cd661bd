/* inject/range/range_why.h - why a range cannot be replayed: one table of codes, each with its
 * name, the words a refusal says after the call's name, and what the user can do. The
 * code is what the range files decide on (a refusal is transient for RANGE_WHY_ALLOCATES);
 * the text only what they say. Header only: the range files (range_calls.c, range_args.c,
 * range_ops.c, range_workload.c) and their tests. */
#ifndef INJECT_RANGE_WHY_H
#define INJECT_RANGE_WHY_H

/* X(code, text, what to do) */
#define RANGE_WHYS(X)                                                                     \
	X(RANGE_WHY_ALLOCATES, "allocates or frees memory",                               \
	  "allocate before the range (a caching allocator does after its first steps)")  \
	X(RANGE_WHY_OTHER_PROCESS, "synchronises with another process or the host "      \
	  "through memory", "leave the inter-process or stream memory operation out of "  \
	  "the range, or use --replay-mode kernel")                                      \
	X(RANGE_WHY_HOST_FUNCTION, "runs a host function",                                \
	  "leave the host function out of the range, or use --replay-mode kernel")       \
	X(RANGE_WHY_TO_HOST, "reads device results on the host",                         \
	  "copy results to the host after the range ends")                               \
	X(RANGE_WHY_CONTEXT, "works in another context than the range began in",         \
	  "keep a range's work in one context")                                          \
	X(RANGE_WHY_DESTROYS, "destroys a stream or event the range used",                \
	  "destroy streams and events after the range ends")                             \
	X(RANGE_WHY_OUTSIDE, "is outside the calls range replay supports",                \
	  "leave the call out of the range, or use --replay-mode kernel")                \
	X(RANGE_WHY_MEMORY, "rangeprof ran out of host memory recording it",              \
	  "free host memory, or measure a shorter range")                                \
	X(RANGE_WHY_PARAMETERS, "passes kernel parameters rangeprof could not copy",      \
	  "use --replay-mode kernel for this range")                                     \
	X(RANGE_WHY_UNDESCRIBED, "copies memory the driver could not describe",           \
	  "use --replay-mode kernel for this range")                                     \
	X(RANGE_WHY_COLLECTIVE, "launches a kernel that waits for other GPUs or "         \
	  "processes (a collective), which would wait for ever replayed alone",           \
	  "leave the collective out of the range (--nvtx-include, --nvtx-exclude)")       \
	X(RANGE_WHY_GRAPH, "launches a graph that cannot be relaunched with the range",   \
	  "the refusal's own words (graph_measure.c's rules) say which graph and why")

enum range_why {
	RANGE_WHY_NONE = 0,   /* the call was recorded (or ignored): no refusal */
#define RANGE_WHY_ENUM(code, text, todo) code,
	RANGE_WHYS(RANGE_WHY_ENUM)
#undef RANGE_WHY_ENUM
	RANGE_WHY_COUNT
};

/* The words a refusal says after the call's name; "" for RANGE_WHY_NONE or an unknown
 * code. */
static inline const char *range_why_text(enum range_why why)
{
	static const char *const texts[RANGE_WHY_COUNT] = {
		[RANGE_WHY_NONE] = "",
#define RANGE_WHY_TEXT(code, text, todo) [code] = text,
		RANGE_WHYS(RANGE_WHY_TEXT)
#undef RANGE_WHY_TEXT
	};
	return (unsigned)why < RANGE_WHY_COUNT ? texts[why] : "";
}

/* "RANGE_WHY_ALLOCATES"; "RANGE_WHY_NONE" for 0 or an unknown code. */
static inline const char *range_why_name(enum range_why why)
{
	static const char *const names[RANGE_WHY_COUNT] = {
		[RANGE_WHY_NONE] = "RANGE_WHY_NONE",
#define RANGE_WHY_NAME(code, text, todo) [code] = #code,
		RANGE_WHYS(RANGE_WHY_NAME)
#undef RANGE_WHY_NAME
	};
	return (unsigned)why < RANGE_WHY_COUNT ? names[why] : "RANGE_WHY_NONE";
}

/* What the user can do about it; "" for RANGE_WHY_NONE or an unknown code. */
static inline const char *range_why_todo(enum range_why why)
{
	static const char *const todos[RANGE_WHY_COUNT] = {
		[RANGE_WHY_NONE] = "",
#define RANGE_WHY_TODO(code, text, todo) [code] = todo,
		RANGE_WHYS(RANGE_WHY_TODO)
#undef RANGE_WHY_TODO
	};
	return (unsigned)why < RANGE_WHY_COUNT ? todos[why] : "";
}

#endif
