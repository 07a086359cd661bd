/* inject/output.h - the output file, reports said once, and whether this process measures.
 * The lowest layer of inject/ (output.c's opening comment has its map). Any thread. */
#ifndef INJECT_OUTPUT_H
#define INJECT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inject/output_reports.h"

struct cJSON;

/* Remembers the output template (the expanded file is opened at the first record).
 * Called once by init.c before anything is written; template stays owned by the caller
 * and must live until exit. */
void inject_output_configure(const char *output_template);
/* Writes a record (a single write(2), whole line) and deletes it. Opens the output on
 * first use; a failure there stops measuring and is said once. Does nothing in a child
 * forked without exec: the descriptor is the parent's file. */
void inject_output_write_record(struct cJSON *record);

/* What a warning or error is about, as the record's "concerns" says it. Members left
 * NULL (0 for context, device_set false) are left out. */
struct inject_concerns {
	const char *kernel;          /* demangled */
	/* Not written: tells kernels with one demangling apart; with kernel NULL, the
	 * identity of what the record does not name (a range's name). */
	const char *mangled;
	int device;                  /* ordinal, when device_set */
	bool device_set;
	uint32_t context;            /* CUPTI context id, 0: none */
	const char *metric;
	const char *option;          /* the option that decides, e.g. "--nvtx-exclude" */
	const char *call;            /* the API call concerned, e.g. "cuGraphLaunch" */
	/* Not written: tells failures of one report apart by their code (an rp_error code, a
	 * CUresult, a CUptiResult, a flush limit, INJECT_DETAIL_PAIR of a step and a code) or
	 * by a number the record does not give (a launch's index, where each launch is
	 * said). A number, so that no call site can pass a message (tests/meson.build
	 * compiles one to show it): two wordings of one failure are one failure. */
	long long detail;
};
#define INJECT_CONCERNS(...) (&(struct inject_concerns){ __VA_ARGS__ })
/* A device member for INJECT_CONCERNS: INJECT_CONCERNS(INJECT_ON_DEVICE(0), ...). */
#define INJECT_ON_DEVICE(d) .device = (d), .device_set = true
/* Two codes in one detail: a kind (which call, which step) and its failure's code. */
#define INJECT_DETAIL_PAIR(kind, code) \
	((long long)(((unsigned long long)(unsigned)(kind) << 32) | (unsigned)(code)))

/* Says a message on stderr and as a warning or error record, once per report code and
 * what it concerns (every member of c, the unwritten ones included): the same failure of
 * the same kernel is said once, another kernel or another failure is said again. The
 * message's text decides nothing. */
void inject_output_report(enum inject_report report, const struct inject_concerns *c,
			  bool error, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The report table's columns (output_reports.h): "INJECT_REPORT_SYNC"; what it says;
 * what the user does about it. An unknown code gives "INJECT_REPORT_NONE" and "". */
const char *inject_output_report_name(enum inject_report report);
const char *inject_output_report_words(enum inject_report report);
const char *inject_output_report_todo(enum inject_report report);

/* Has every record's line (JSON text and newline) also handed to tap, under the output
 * lock, as it is written (control.c keeps them for a capture). */
void inject_output_set_tap(void (*tap)(const char *line, size_t len));

/* Forgets which reports were said: each is said again at its next occasion (a capture of
 * the control API starts afresh). */
void inject_output_forget_reports(void);

/* Whether this process measures: false before init, after a fatal problem, and in a
 * child forked without exec. Atomic: read on every launch, on any thread. */
bool inject_output_measuring(void);
void inject_output_measuring_start(void);
void inject_output_measuring_stop(void);
/* In a child forked without exec (pthread_atfork): measures nothing, writes nothing,
 * prints no table at exit. Async-signal-safe enough for a fork handler: atomics only. */
void inject_output_fork_child(void);
/* Whether this is such a child. */
bool inject_output_is_fork_child(void);

#endif
