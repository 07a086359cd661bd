/* inject/output_reports.h - the one table of the reports inject/ says once (output.h's
 * inject_output_report): each code with its name, what the report says, and what the user
 * does about it. The code is what output.c says once by, with what the report concerns and
 * a numeric detail; a message's words decide nothing. tests/unit/inject/reports_test.c
 * checks that every row is filled and every name unique. Header only. */
#ifndef INJECT_OUTPUT_REPORTS_H
#define INJECT_OUTPUT_REPORTS_H

/* X(code, what it says, what the user does about it) */
#define INJECT_OUTPUT_REPORTS(X)                                                          \
	/* set-up (init.c) */                                                             \
	X(INJECT_REPORT_JOB, "a launcher's variables that say the rank or job disagree",  \
	  "check the launcher's environment (torchrun, Open MPI, MPICH/PMI, Slurm)")      \
	X(INJECT_REPORT_LATE_ATTACH, "rangeprof was attached after CUDA was "             \
	  "initialised: every measured launch saves the whole context",                   \
	  "import rangeprof, or preload it, before CUDA is used")                          \
	/* which launches are measured (callback/) */                                     \
	X(INJECT_REPORT_COLLECTIVE, "a kernel that waits for other GPUs or processes "    \
	  "runs unmeasured", "leave it out with --nvtx-exclude or -k")                     \
	X(INJECT_REPORT_NOT_REPLAYED_TOTALS, "how many launches were not replayed, and "  \
	  "why", "see the warnings above for each kind")                                   \
	X(INJECT_REPORT_RANGE_CAPTURE, "a range began during a stream capture and is not " \
	  "measured", "begin the range outside the capture")                               \
	X(INJECT_REPORT_GRAPH_CAPTURE, "a graph launched during a stream capture is not "  \
	  "measured", "launch the graph outside the capture")                              \
	X(INJECT_REPORT_STREAM_CAPTURE, "a kernel launched under stream capture becomes a " \
	  "graph node, measured when its graph is launched",                               \
	  "choose how graphs are measured with --graph-profiling")                         \
	X(INJECT_REPORT_CAPTURE_UNDER_WAY, "a launch during another thread's stream "      \
	  "capture is not measured", "launch it outside the capture")                      \
	/* graphs (graph/) */                                                             \
	X(INJECT_REPORT_GRAPH_NODE, "a kernel node's parameters cannot be read; the graph " \
	  "launch is not measured", "use --graph-profiling graph or none for this graph")  \
	X(INJECT_REPORT_GRAPH_COLLECTIVE, "a graph with a kernel that waits for peers "    \
	  "runs unmeasured", "leave it out with --nvtx-exclude")                           \
	X(INJECT_REPORT_GRAPH_HOST_NODE, "a graph's host nodes run only in the "           \
	  "application's launch", "use --graph-profiling graph where a kernel node needs " \
	  "the host function's result")                                                    \
	X(INJECT_REPORT_GRAPH_CHECKPOINT, "saving the memory a graph starts from failed",  \
	  "free device or host memory, or use --graph-profiling none")                     \
	X(INJECT_REPORT_GRAPH_NODE_RUN, "running a graph's node outside the graph failed", \
	  "use --graph-profiling graph for this graph")                                    \
	X(INJECT_REPORT_GRAPH_RESTORE, "putting back the memory a graph starts from "      \
	  "failed; the application's results may differ",                                 \
	  "check the results, or use --graph-profiling none")                              \
	X(INJECT_REPORT_GRAPH_UNKNOWN, "a graph whose instantiation rangeprof did not see " \
	  "is not measured", "preload rangeprof before the graph is instantiated")         \
	X(INJECT_REPORT_GRAPH_STALE, "a graph whose update rangeprof could not follow is " \
	  "not measured", "instantiate the graph again rather than update it")             \
	X(INJECT_REPORT_GRAPH_NODES, "a graph whose nodes cannot be run one by one is not " \
	  "measured", "use --graph-profiling graph for this graph")                        \
	X(INJECT_REPORT_GRAPH_EFFECTS, "--graph-profiling graph does not relaunch a graph " \
	  "with side effects", "use --graph-profiling node for this graph")                \
	/* a kernel launch measured alone (kernel/, measure/) */                          \
	X(INJECT_REPORT_RESTORE, "putting back the saved memory failed; the "              \
	  "application's memory may differ", "check the application's results; "          \
	  "--memory-save checkpoint saves differently")                                    \
	X(INJECT_REPORT_REPLAY_WROTE_MORE, "a replay changed memory that the "             \
	  "application's own launch had left as it was; that launch's runs may have "     \
	  "started from different memory", "nothing: the kernel is run once more for the " \
	  "application, and its later launches restore all the memory they reach")        \
	X(INJECT_REPORT_FALL_BACK, "a kernel is measured with the full checkpoint, whose " \
	  "cost grows with the device memory", "the warning says why; free device memory " \
	  "the kernel does not need to lower the cost")                                    \
	X(INJECT_REPORT_SYNC, "waiting for the GPU before or after a measured launch "     \
	  "failed; not measured", "the application's own work failed: fix it first")       \
	X(INJECT_REPORT_VERIFY, "the hashes that check what a launch wrote could not be "  \
	  "taken; not measured", "free device or host memory")                             \
	X(INJECT_REPORT_OUTSIDE, "a kernel wrote outside what its parameters reach; its "  \
	  "later launches use the full checkpoint", "nothing: later launches are measured" \
	  " safely, at the checkpoint's cost")                                             \
	X(INJECT_REPORT_SAVE_RESULT, "saving a launch's result failed; not measured",      \
	  "free device or host memory")                                                    \
	X(INJECT_REPORT_CHECKPOINT, "saving the application's memory (CUPTI checkpoint) "  \
	  "failed; not measured", "free device or host memory")                            \
	X(INJECT_REPORT_NVML_SAMPLE, "NVML could not be read for a run; its NVML fields "   \
	  "are null", "check the NVML library and driver versions")                        \
	X(INJECT_REPORT_THERMAL_TIMEOUT, "the GPU did not cool down within "               \
	  "--thermal-timeout", "raise --thermal-timeout, or cool the GPU")                 \
	X(INJECT_REPORT_THERMAL_UNKNOWN, "NVML gives no slowdown temperature; no thermal " \
	  "waits", "use --thermal-control off, or a device NVML reports on")               \
	X(INJECT_REPORT_DEVICE_BUSY, "the profiling hardware was held by another "          \
	  "profiler or process past the wait allowed; the launch is not measured",         \
	  "stop the other profiler, or raise --busy-timeout or --device-lock-timeout")     \
	X(INJECT_REPORT_FLUSH, "the cache flush leaves clean lines in the L2",             \
	  "nothing to do on this GPU; the notice says what it changes")                    \
	X(INJECT_REPORT_MEASURE, "measuring a launch failed", "the message says which "    \
	  "step; an rp_error code of common/error.h says what to do")                     \
	/* the session: devices, contexts, turns (session/) */                            \
	X(INJECT_REPORT_DEVICE, "a device's attributes cannot be read; nothing is "        \
	  "measured on it", "check the driver and CUDA_VISIBLE_DEVICES")                   \
	X(INJECT_REPORT_DEVICE_LOCK_OPEN, "the device lock cannot be opened; the device "  \
	  "is measured without taking turns", "make the lock's folder writable, or "       \
	  "measure one process at a time")                                                 \
	X(INJECT_REPORT_DEVICE_LOCK_MARK, "this process cannot mark itself in the device " \
	  "lock", "make the lock's folder writable")                                       \
	X(INJECT_REPORT_DEVICE_LOCK_TAKE, "taking the device lock failed; the launch is "  \
	  "not measured", "make the lock's folder writable")                               \
	X(INJECT_REPORT_DEVICE_LOCK_LISTEN, "other processes that need the profiling "     \
	  "hardware cannot be heard", "nothing: they wait until this process's next "      \
	  "measured launch ends")                                                          \
	X(INJECT_REPORT_DEVICE_LOCK_TIMEOUT, "another process kept the device's turn past " \
	  "--device-lock-timeout; the launch is not measured",                             \
	  "raise --device-lock-timeout")                                                   \
	X(INJECT_REPORT_DEVICE_LOCK_TOTALS, "how many launches another process's turn "    \
	  "kept from being measured", "raise --device-lock-timeout")                       \
	X(INJECT_REPORT_METRIC_SET, "the GPU refused the metrics asked for; not measured", \
	  "check the names with --list-metrics")                                           \
	X(INJECT_REPORT_NVML, "NVML cannot be opened; temperatures, clocks and power are " \
	  "null", "install the driver's NVML library (libnvidia-ml.so.1)")                 \
	X(INJECT_REPORT_CLOCK, "the SM clock cannot be locked to base; nothing is "        \
	  "measured on the device", "run with the privileges to lock clocks, or use "      \
	  "--clock-control none")                                                          \
	X(INJECT_REPORT_CONTEXT, "a context's flush or verifier cannot be set up; nothing " \
	  "is measured in it", "free device memory")                                       \
	X(INJECT_REPORT_FLUSH_IMAGE, "the driver refused the cache flush's compiled image " \
	  "and compiled its text: a context's set-up is slower where the driver's cache "   \
	  "does not hold it yet", "nothing for the results; where the error says the "     \
	  "image cannot be read (CUDA_ERROR_INVALID_IMAGE, _NO_BINARY_FOR_GPU), a driver " \
	  "as new as the CUDA toolkit that built rangeprof takes it")                      \
	X(INJECT_REPORT_PROFILER, "the range profiler cannot be enabled in a context",     \
	  "see the message; an rp_error code of common/error.h says what to do")           \
	X(INJECT_REPORT_REPLAY_HANG, "a replay pass has not finished; the kernel may wait " \
	  "for another GPU, process or the host", "exclude the kernel with "               \
	  "--nvtx-exclude or -k")                                                          \
	/* range replay (range/) */                                                       \
	X(INJECT_REPORT_RANGE_NO_CONTEXT, "a range began with no CUDA context current; "   \
	  "not measured", "begin the range after the thread's context is made current")    \
	X(INJECT_REPORT_RANGE_REFUSED, "a range cannot be replayed whole; its kernels "    \
	  "fall back to kernel replay", "the refusal's reason (range_why.h) says what to "  \
	  "do")                                                                            \
	X(INJECT_REPORT_RANGE_MEASURE, "a range's replay cannot be prepared; not measured", \
	  "free host memory")                                                              \
	X(INJECT_REPORT_RANGE_ABANDONED, "a range's recording ended unmeasured",           \
	  "keep the range's work in one context, outside captures, in range mode")         \
	X(INJECT_REPORT_RANGE_EMPTY, "a range made no call that runs on the GPU",          \
	  "name a range that launches work with --nvtx-include")                           \
	X(INJECT_REPORT_RANGE_NO_KERNEL, "a range launched no kernel, and --range-scope "  \
	  "kernels measures only kernels (ncu gives no result either)",                    \
	  "use --range-scope whole to measure its memsets and copies")                     \
	X(INJECT_REPORT_RANGE_SAVE_REACH, "saving the memory a range reached before "      \
	  "failed; this occurrence saves the whole context", "free device or host memory") \
	X(INJECT_REPORT_RANGE_SAVE_AS_ISSUED, "saving a range's memory as its calls were "  \
	  "issued failed; not measured", "free device or host memory, and keep stream "    \
	  "captures out of the range")                                                     \
	X(INJECT_REPORT_RANGE_REBUILD, "putting together the memory a range began with "   \
	  "failed; not measured", "free device or host memory")                            \
	X(INJECT_REPORT_RANGE_END_STATE, "saving the memory a range's end left failed; "   \
	  "not measured", "free device or host memory")                                    \
	X(INJECT_REPORT_RANGE_PUT_BACK, "putting back the memory a range's end left "      \
	  "failed; the application's memory may hold a replay's results",                 \
	  "check the application's results")                                              \
	X(INJECT_REPORT_RANGE_WHOLE_UNKNOWN, "what a range's calls reach cannot be known; " \
	  "each occurrence saves the whole context", "free device memory the range does "   \
	  "not need to lower the cost")                                                    \
	X(INJECT_REPORT_RANGE_WHOLE_OUTSIDE, "a range wrote outside what its calls reach; " \
	  "each occurrence saves the whole context", "free device memory the range does "   \
	  "not need to lower the cost")                                                    \
	X(INJECT_REPORT_RANGE_REACH, "a range reached memory its earlier occurrences did " \
	  "not; this occurrence is not measured", "nothing: the next occurrences save it") \
	X(INJECT_REPORT_RANGE_REACH_LATE, "a range's call reached memory not saved before " \
	  "it; this occurrence is not measured", "nothing: the next occurrences save it "   \
	  "at their begin")                                                                \
	X(INJECT_REPORT_RANGE_LEARN, "what a range wrote could not be checked; this "      \
	  "occurrence is not measured", "nothing: the next occurrence learns again")

enum inject_report {
	INJECT_REPORT_NONE = 0,   /* no report: an unknown code reads as this */
#define INJECT_REPORT_ENUM(code, words, todo) code,
	INJECT_OUTPUT_REPORTS(INJECT_REPORT_ENUM)
#undef INJECT_REPORT_ENUM
	INJECT_REPORT_COUNT
};

#endif
