#!/usr/bin/env python3
"""tests/bigfile/gen_training.py LINES OUT [--iterations-in-text] [--sessions K] [--seed S] -
writes a rangeprof JSONL file shaped like the recording of a real training job, the
benchmark of the report tools and load() on big files (issue 38; doc/measurements.md,
"Post-processing big files"):

- 10 metrics per run, with their units (time, DRAM bytes, throughputs in %, rates, IPC,
  occupancy, hit rates, instruction counts);
- long demangled C++ kernel names (PyTorch's elementwise, reduce, GEMM and attention
  kernels with their template arguments, 150-450 characters) and their mangled names;
- 3 NVTX levels: train / step / layerL.{attn,mlp}.{fwd,bwd}, each phase launching a few
  kernels, 24 layers;
- 5 runs per launch, then the launch's summary record, as rangeprof writes them;
- with --iterations-in-text, the step level's text holds the iteration ('step 1234'), so
  that every iteration's ranges are distinct groups;
- --sessions K: K processes appended one after the other (session and device lines each).

Runs until LINES lines are written (whole launches: a few more). Standard library only; deterministic for a seed:

    python3 tests/bigfile/gen_training.py 2000000 /tmp/train2m.jsonl
    python3 tests/bigfile/gen_training.py 2000000 /tmp/train2m_iter.jsonl --iterations-in-text"""
import argparse
import json
import math
import random

METRICS = [
    ("gpu__time_duration.sum", "nanosecond", 20_000.0),
    ("dram__bytes_read.sum", "byte", 8e6),
    ("dram__bytes_write.sum", "byte", 4e6),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", 55.0),
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%", 60.0),
    ("lts__t_sector_hit_rate.pct", "%", 70.0),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "%", 45.0),
    ("smsp__inst_executed.sum", "inst", 3e6),
    ("sm__inst_executed.avg.per_cycle_active", "inst/cycle", 1.6),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", 40.0),
]
_NS = "at::native::"
KERNELS = [
    f"void {_NS}vectorized_elementwise_kernel<4, {_NS}CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, {_NS}CUDAFunctor_add<float>, std::array<char*, 3ul>)",
    f"void {_NS}vectorized_elementwise_kernel<4, {_NS}GeluCUDAKernelImpl(at::TensorIteratorBase&, {_NS}GeluType)::{{lambda()#2}}::operator()() const::{{lambda()#2}}::operator()() const::{{lambda(c10::BFloat16)#1}}, std::array<char*, 2ul> >(int, {_NS}GeluCUDAKernelImpl(at::TensorIteratorBase&, {_NS}GeluType)::{{lambda()#2}}::operator()() const::{{lambda()#2}}::operator()() const::{{lambda(c10::BFloat16)#1}}, std::array<char*, 2ul>)",
    f"void {_NS}reduce_kernel<512, 1, {_NS}ReduceOp<float, {_NS}func_wrapper_t<float, {_NS}sum_functor<float, float, float>::operator()(at::TensorIterator&)::{{lambda(float, float)#1}}>, unsigned int, float, 4, 4> >({_NS}ReduceOp<float, {_NS}func_wrapper_t<float, {_NS}sum_functor<float, float, float>::operator()(at::TensorIterator&)::{{lambda(float, float)#1}}>, unsigned int, float, 4, 4>)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
    "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, true, false, false, false, true, false>(pytorch_flash::Flash_bwd_params)",
    f"void {_NS}(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, {_NS}(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
    f"void {_NS}(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    f"void {_NS}(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)",
    f"void {_NS}unrolled_elementwise_kernel<{_NS}direct_copy_kernel_cuda(at::TensorIteratorBase&)::{{lambda()#3}}::operator()() const::{{lambda()#7}}::operator()() const::{{lambda(float)#1}}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, {_NS}memory::LoadWithCast<1>, {_NS}memory::StoreWithCast<1> >(int, {_NS}direct_copy_kernel_cuda(at::TensorIteratorBase&)::{{lambda()#3}}::operator()() const::{{lambda()#7}}::operator()() const::{{lambda(float)#1}}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, {_NS}memory::LoadWithCast<1>, {_NS}memory::StoreWithCast<1>)",
    f"void {_NS}(anonymous namespace)::multi_tensor_apply_kernel<{_NS}(anonymous namespace)::TensorListMetadata<4>, {_NS}(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, float*, float*>({_NS}(anonymous namespace)::TensorListMetadata<4>, {_NS}(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, float*, float*)",
]
# The kernels each phase launches (indexes into KERNELS).
PHASES = {
    "attn.fwd": [8, 3, 5, 0], "attn.bwd": [6, 4, 9, 0],
    "mlp.fwd": [8, 3, 1, 4], "mlp.bwd": [2, 4, 10, 9],
}
LAYERS = 24


def _mangled(name):
    return "_Z" + "".join(f"{len(w)}{w}" for w in name.split("(")[0].replace("::", " ")
                          .replace("<", " ").replace(">", " ").split()[:6])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("lines", type=int, help="lines to write")
    p.add_argument("out", help="output file (overwritten)")
    p.add_argument("--iterations-in-text", action="store_true",
                   help="the step range's text holds the iteration number ('step 17')")
    p.add_argument("--sessions", type=int, default=1, help="processes, appended (default 1)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    units = {m: u for m, u, _ in METRICS}
    written = 0
    per_session = math.ceil(args.lines / args.sessions)
    with open(args.out, "w", encoding="utf-8") as out:
        for s in range(args.sessions):
            pid = 4242 + s
            start = f"2026-12-0{1 + s % 9}T08:00:00.000Z"
            lines = [dumps(dict(
                type="session", tool="rangeprof", version="0.1.0", schema=1, pid=pid,
                host="train-node-3", argv=["python3", "train.py", "--config", "llama.yaml"],
                start_time=start, options=dict(
                    output="/scratch/run/rangeprof.jsonl", metrics=",".join(units),
                    nvtx_include=["train/"], nvtx_exclude=[], kernel_name=None,
                    launch_skip=0, launch_count=None, runs=5, cache_control="all",
                    clock_control="base", quiet=False))),
                dumps(dict(type="device", index=0, name="NVIDIA H200",
                           uuid="GPU-1168aa0d-39a9-a031-a1d3-5b2349d92934",
                           compute_capability="9.0", sm_count=132, l2_bytes=62914560,
                           rated_sm_clock_hz=1980000000, rated_memory_clock_hz=3201000000,
                           driver_version=13000))]
            launch, iteration, session_lines = 7, 0, 2
            out.write("\n".join(lines) + "\n")
            written += 2
            while session_lines < per_session and written < args.lines:
                step = f"step {iteration}" if args.iterations_in_text else "step"
                for layer in range(LAYERS):
                    for phase, kernels in PHASES.items():
                        texts = ["train", step, f"layer{layer}.{phase}"]
                        nvtx = [dict(domain="", text=t, kind="push_pop") for t in texts]
                        for k in kernels:
                            name = KERNELS[k]
                            launch += 1
                            scale = {m: base * (1 + 0.3 * ((k * 7 + layer) % 5)) *
                                     rng.lognormvariate(0, 0.01) for m, _, base in METRICS}
                            common = dict(
                                launch=launch, runs=5, kernel=name, mangled=_mangled(name),
                                device=0, context=1, stream=7,
                                grid=[rng.choice((132, 264, 528)), 1, 1],
                                block=[256, 1, 1], shared_mem_bytes=0, nvtx=nvtx,
                                nvtx_path="/".join(texts), cache_control="all",
                                clock_control="base", passes=3)
                            batch = []
                            values = []
                            for run in range(5):
                                metrics = {m: round(v * rng.lognormvariate(0, 0.005), 3)
                                           for m, v in scale.items()}
                                values.append(metrics)
                                batch.append(dumps(dict(
                                    type="run", **common, run=run, metrics=metrics,
                                    units=units, sm_clock_hz=1980000000.0 * rng.uniform(
                                        0.995, 1.0), sm_clock_source="counters",
                                    rated_sm_clock_hz=1980000000,
                                    locked_sm_clock_hz=1980000000, temperature_c=55,
                                    throttle_reasons=[], time=start)))
                            stats = {}
                            for m, u in units.items():
                                xs = [v[m] for v in values]
                                mean = sum(xs) / 5
                                sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / 4)
                                stats[m] = dict(unit=u, mean=mean, stddev=sd, min=min(xs),
                                                median=sorted(xs)[2], max=max(xs), n=5,
                                                ci95_low=mean - 1.24 * sd,
                                                ci95_high=mean + 1.24 * sd,
                                                rsd_pct=100 * sd / mean, drift_pct=None,
                                                stable=sd / mean < 0.02, reasons=[])
                            batch.append(dumps(dict(type="summary", **common, metrics=stats)))
                            out.write("\n".join(batch) + "\n")
                            written += 6
                            session_lines += 6
                            if session_lines >= per_session or written >= args.lines:
                                break
                        if session_lines >= per_session or written >= args.lines:
                            break
                    if session_lines >= per_session or written >= args.lines:
                        break
                iteration += 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
