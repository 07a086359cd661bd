"""rangeprof/bound.py - bound analysis per kernel from aggregated counters: FLOPs (from
FMA instruction counts, or an expression such as 2*n**3 over config columns, which
kernels on tensor cores need), DRAM bytes, arithmetic intensity, achieved FLOP/s and
bandwidth, % of the device's peaks and a compute-, memory- or latency-bound verdict.
Standard library only."""
import math

from rangeprof import presets as P

# Peaks of data-centre GPUs by name (dense, no sparsity): FP32 FLOP/s, FP16 tensor FLOP/s,
# DRAM bytes/s, from NVIDIA's data sheets.
KNOWN_PEAKS = {
    "H200": (67e12, 989e12, 4.8e12),
    "H100 SXM": (67e12, 989e12, 3.35e12),
    "H100 PCIe": (51e12, 756e12, 2.0e12),
    "H100": (67e12, 989e12, 3.35e12),
    "A100": (19.5e12, 312e12, 2.0e12),
    "L40S": (91.6e12, 362e12, 0.864e12),
}
# FP32 results per clock per SM (add, multiply, fused multiply-add) by compute capability,
# from the CUDA C++ Programming Guide's table of arithmetic instruction throughput. A GPU
# not in KNOWN_PEAKS gets SMs x these x 2 x its rated clock as its FP32 peak, from its
# device record, only where its compute capability is listed: no lane count is assumed
# (128 for a V100, whose SMs have 64, doubled its peak and halved its % of peak).
FP32_PER_CLOCK_PER_SM = {"5.0": 128, "5.2": 128, "5.3": 128, "6.0": 64, "6.1": 128,
                         "6.2": 128, "7.0": 64, "7.2": 64, "7.5": 64, "8.0": 64, "8.6": 128,
                         "8.7": 128, "8.9": 128, "9.0": 128}
# Below this fraction of every peak the kernel is bound by latency (too little work in
# flight to keep either the SMs or DRAM busy), as ncu's guidance reads 60 % of SOL.
BUSY_FRACTION = 0.6


def device_peaks(device, peak_flops=None, peak_tensor=None, peak_bandwidth=None):
    """(fp32 FLOP/s, tensor FLOP/s, bytes/s) for a device record; user values win. A peak
    that is not known for the device is NaN (see FP32_PER_CLOCK_PER_SM)."""
    device = device or {}
    name = device.get("name") or ""
    table = next((v for k, v in KNOWN_PEAKS.items() if k in name), None)
    fp32 = table[0] if table else math.nan
    lanes = FP32_PER_CLOCK_PER_SM.get(str(device.get("compute_capability")))
    if not table and lanes and device.get("sm_count") and device.get("rated_sm_clock_hz"):
        fp32 = device["sm_count"] * lanes * 2 * device["rated_sm_clock_hz"]
    tensor = table[1] if table else math.nan
    bw = table[2] if table else math.nan
    return (peak_flops or fp32, peak_tensor or tensor, peak_bandwidth or bw)


def _unknown_peak(gpu, device, what, option):
    cc = (device or {}).get("compute_capability")
    return (f"no {what} peak known for {gpu or 'an unnamed GPU'}"
            + (f" (compute capability {cc})" if cc else "") + f": give {option}")


def _mean(group, metric):
    m = group.get(metric)
    return m["AvgValue"] if m else math.nan


def on_tensor_cores(group):
    """True when a kernel's work is on the tensor pipe: more tensor-pipe instructions than
    FMA warp instructions (the FMA counters count threads, 32 per warp instruction). A
    cuBLAS fp32 kernel issues a few hundred stray tensor instructions next to 10^7 FMA warp
    instructions; an fp16 GEMM issues tensor instructions only."""
    tensor = _mean(group, P.TENSOR)
    if math.isnan(tensor) or tensor <= 0:
        return False
    fma = math.fsum(c for c in (_mean(group, P.FFMA), _mean(group, P.HFMA)) if not math.isnan(c))
    return tensor > fma / 32


def analyse(groups_by_kernel, devices, flops_metric=None, **peaks):
    """groups_by_kernel: {(Annotation, Kernel, GPU): {metric: aggregated group}}, the time in
    nanoseconds. flops_metric names a derived metric holding FLOPs per run (e.g. from
    --derive 'flops=2*n**3'); otherwise FLOPs = 2 x (FFMA + HFMA) thread instructions, and
    NaN for kernels on tensor cores, whose FLOPs no FMA counter sees. The peak is the
    tensor peak for those, the FP32 peak otherwise. The verdict comes from the DRAM roofline
    where FLOPs and bytes are known (below the ridge memory, above it compute, under 60 %
    of the roof latency), else from the SM and memory throughput counters, else from
    bandwidth alone. Returns one dict per kernel with the analysis, 'Verdict' and 'Basis'."""
    out = []
    for (annotation, kernel, gpu), g in groups_by_kernel.items():
        t_ns = _mean(g, P.TIME)
        tensor_cores = on_tensor_cores(g)
        if flops_metric:
            flops = _mean(g, flops_metric)
        elif tensor_cores:
            flops = math.nan
        else:
            counts = [_mean(g, m) for m in (P.FFMA, P.HFMA)]
            flops = 2 * math.fsum(c for c in counts if not math.isnan(c)) \
                if any(not math.isnan(c) for c in counts) else math.nan
        nbytes = _mean(g, P.DRAM_READ) + _mean(g, P.DRAM_WRITE)
        fp32, tensor_peak, bw_peak = device_peaks(devices.get(gpu), **peaks)
        flop_peak = tensor_peak if tensor_cores and not peaks.get("peak_flops") else fp32
        seconds = t_ns * 1e-9
        achieved_flops = flops / seconds if seconds > 0 else math.nan
        achieved_bw = nbytes / seconds if seconds > 0 else math.nan
        intensity = flops / nbytes if nbytes > 0 else math.nan
        pct_flops = 100 * achieved_flops / flop_peak if flop_peak else math.nan
        pct_bw = 100 * achieved_bw / bw_peak if bw_peak else math.nan
        sm_pct, mem_pct = _mean(g, P.SM_PCT), _mean(g, P.MEM_PCT)
        if not (math.isnan(intensity) or math.isnan(pct_flops) or math.isnan(pct_bw)):
            basis = "roofline"
            ridge = flop_peak / bw_peak
            frac = pct_bw / 100 if intensity < ridge else pct_flops / 100
            verdict = ("latency" if frac < BUSY_FRACTION else
                       "memory" if intensity < ridge else "compute")
        elif not (math.isnan(sm_pct) or math.isnan(mem_pct)):
            basis = "throughput counters"
            busy = max(sm_pct, mem_pct) / 100
            verdict = ("latency" if busy < BUSY_FRACTION else
                       "compute" if sm_pct >= mem_pct else "memory")
        elif not math.isnan(flops) and math.isnan(flop_peak):
            # FLOPs are known and the peak is not: bandwidth alone would call a
            # compute-bound kernel latency-bound.
            basis, verdict = _unknown_peak(gpu, devices.get(gpu), "FLOP/s", "--peak-flops"), \
                "unknown"
        elif not math.isnan(pct_bw):
            basis = "bandwidth only"
            verdict = "memory" if pct_bw / 100 >= BUSY_FRACTION else "latency"
        elif not math.isnan(nbytes) and math.isnan(bw_peak):
            basis, verdict = _unknown_peak(gpu, devices.get(gpu), "DRAM bandwidth",
                                           "--peak-bandwidth"), "unknown"
        else:
            basis, verdict = "missing counters", "unknown"
        if tensor_cores and math.isnan(flops):
            basis += "; tensor cores: FLOPs need --flops"
        out.append(dict(Annotation=annotation, Kernel=kernel, GPU=gpu, TimeNs=t_ns, FLOPs=flops,
                        Bytes=nbytes, ArithmeticIntensity=intensity, FLOPsPerSecond=achieved_flops,
                        BytesPerSecond=achieved_bw, PeakFLOPsPerSecond=flop_peak,
                        PeakBytesPerSecond=bw_peak, PctPeakFLOPs=pct_flops, PctPeakBandwidth=pct_bw,
                        SMThroughputPct=sm_pct, MemoryThroughputPct=mem_pct,
                        TensorCores=tensor_cores,
                        Verdict=f"{verdict}-bound" if verdict != "unknown" else verdict,
                        Basis=basis))
    return out
