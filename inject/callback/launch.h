/* inject/callback/launch.h - the CUPTI callback, and the replay lock's use by the files
 * above the measuring ones (init.c's runtime options, the control API's gate). Who uses it
 * and what it reaches: launch.c's opening comment. */
#ifndef INJECT_LAUNCH_H
#define INJECT_LAUNCH_H

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>

#include "collector/table.h"
#include "common/options.h"
#include "inject/early.h"

/* Configures the callbacks' parts and compiles the NVTX and kernel-name filters
 * (select.c). 0 or -1 with err. */
int inject_launch_configure(const struct rp_options *opts, char *err, size_t err_size);
/* Enables on sub the callbacks launch.c handles: kernel and graph launches (ENTER, and
 * EXIT for verification), allocation calls (EXIT), module loads and unloads, and context
 * creation and destruction. 0 or -1 with err. */
int inject_launch_enable(CUpti_SubscriberHandle sub, char *err, size_t err_size);
void CUPTIAPI inject_launch_callback(void *userdata, CUpti_CallbackDomain domain,
				     CUpti_CallbackId cbid, const void *data);
/* The control API (control.c): from now on a launch is selected only while an
 * annotation is open (once; later calls do nothing); annotations opened (+1) or closed
 * (-1); whether control was taken, and how many annotations are open. select.c owns
 * these facts and no other file keeps a copy. */
void inject_launch_control(void);
void inject_launch_annotations_open(int delta);
bool inject_launch_controlled(void);
int inject_launch_open_annotations(void);
/* The control API's rangeprof_prepare (control.c), on its thread with ctx current there:
 * the device's early set-up starts now, as at an application's first allocation
 * (inject_early_start, whose answer it returns); INJECT_EARLY_OFF when nothing is
 * measured (init did not run in cuInit, or measuring ended). */
enum inject_early_start inject_launch_prepare(CUcontext ctx);
/* rangeprof_prepare's host half, on a thread of its own while another makes the device's
 * primary context: inject_session_prepare_host under the replay lock, when the early
 * set-up is on, something is measured and stopping() (rangeprof_before_exit was called)
 * is false, before the lock and again once it is held; otherwise nothing. */
void inject_launch_prepare_host(int device, bool (*stopping)(void));

/* --replay-mode range on or off (init.c: at start-up, once the callbacks are enabled, and
 * when the control API sets the option): the NVTX hooks that begin and end range
 * workloads, and the callbacks of every driver call, which a range records, are set up
 * at the first switch on and stay (they cost little once range mode is off). 0 or -1 with
 * err. */
int inject_launch_set_range_mode(bool on, char *err, size_t err_size);

/* The replay lock, for changing what measurements read (init.c's runtime options). */
void inject_launch_lock_replay(void);
void inject_launch_unlock_replay(void);

/* At exit: what was counted but not replayed (graphs, captured launches, kernels that
 * wait for peers). This and the next are select.c's counts. */
void inject_launch_report_totals(void);
/* At exit: what the launches went through, for collector_nothing_measured_why. */
void inject_launch_counts(struct collector_launch_counts *c);

#endif
