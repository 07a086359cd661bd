"""rangeprof/presets.py - the metric sets that the analyses need, named so that users know
what to pass to 'rangeprof --metrics'. Names checked on an H200 (Hopper, CUPTI 13.0);
examples/tutorial/record.sh keeps only those a device accepts. Standard library only."""
TIME = "gpu__time_duration.sum"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
FFMA = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"
HFMA = "sm__sass_thread_inst_executed_op_hfma_pred_on.sum"
TENSOR = "sm__inst_executed_pipe_tensor.sum"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEM_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
SM_CLOCK = "sm__cycles_elapsed.avg.per_second"

PRESETS = {
    "roofline": ([TIME, DRAM_READ, DRAM_WRITE, FFMA, HFMA, TENSOR, SM_PCT, MEM_PCT],
                 "arithmetic intensity, achieved FLOP/s and bandwidth, % of peak and the "
                 "compute/memory/latency verdict (rangeprof-report --bound)"),
    "memory": ([TIME, DRAM_READ, DRAM_WRITE, MEM_PCT, DRAM_PCT],
               "bytes moved per kernel and per NVTX range, achieved bandwidth "
               "(rangeprof-report --bytes), e.g. fused against unfused"),
    "compute": ([TIME, FFMA, HFMA, TENSOR, SM_PCT, SM_CLOCK],
                "FLOP counts, SM throughput and the clock the kernels ran at"),
}


def describe(name):
    """Text telling what a preset is for and the --metrics argument that records it."""
    metrics, purpose = PRESETS[name]
    return f"{name}: {purpose}\n  rangeprof --metrics {','.join(metrics)} ..."
