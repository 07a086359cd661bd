#!/usr/bin/env python3
"""bench/gen_cluster.py OUTDIR - the JSON Lines files of a multi-node job: one file per rank
(HOST.rRANK.jsonl), --hosts hosts of --ranks-per-host ranks each, every file written as a
rank under torchrun writes it (session with its "job" member, device, then per launch its
run records and a summary), the lines made from the H200 recording
python/tests/fixtures/recorded/setup_early.jsonl (its session, device, run and summary
records: every member rangeprof writes today, ~700 bytes a run line). Each rank measures
the same kernels (--kernels, each in its own NVTX range "train/layer=K") in --launches
launches of --runs runs; run times vary by a log-normal factor per launch (--launch-sd)
and per run (--run-sd) around each kernel's base time; every GPU's clock sits near the
rated 1980 MHz, except --slow-rank's: its SM clock is --slow-clock-mhz, it runs 12 C
hotter, a third of its runs have sw_thermal_slowdown, and its times are longer by the
clock ratio. --slow-rank -1: no straggler.

    python3 bench/gen_cluster.py /tmp/cluster --hosts 16 --launches 100 --runs 20
        # 128 files of 20 000 runs each: 2.56 M runs

Used by bench/NOTES.md's "Ranks at cluster scale" (doc/measurements.md, same title) and
python/tests/test_ranks.py. Standard library only; deterministic for a given seed; with
--jobs N, N processes write the files."""
import argparse
import json
import math
import os
import random
import sys
from pathlib import Path

FIXTURE = (Path(__file__).resolve().parent.parent / "python" / "tests" / "fixtures" /
           "recorded" / "setup_early.jsonl")
KERNELS = ["ampere_sgemm_128x64_nn", "vectorized_elementwise_kernel<add>",
           "reduce_kernel<512, 1>", "softmax_warp_forward<float, 10>",
           "layer_norm_kernel<float>", "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
           "flash_fwd_kernel<128, 64>", "cublasLt_gemm_splitk", "elementwise_mul_kernel",
           "index_select_kernel"]


def templates():
    recs = {}
    for line in open(FIXTURE, encoding="utf-8"):
        rec = json.loads(line)
        recs.setdefault(rec["type"], rec)
    return recs["session"], recs["device"], recs["run"], recs["summary"]


def write_rank(args, out, host, host_index, local_rank, rank, world):
    session, device, run, summary = templates()
    rng = random.Random(args.seed * 1000003 + rank)
    session = dict(session, pid=10000 + rank, host=host,
                   start_time=f"2026-12-03T10:00:{rank % 60:02d}.000Z",
                   argv=["python3", "train.py"])
    session["job"] = dict(launcher="torchrun", rank=rank, local_rank=local_rank,
                          world_size=world, local_world_size=args.ranks_per_host,
                          id=args.job_id, id_from="TORCHELASTIC_RUN_ID", slurm_step=None)
    device = dict(device, uuid=f"GPU-{host_index:08x}-0000-0000-0000-{local_rank:012x}")
    slow = rank == args.slow_rank
    clock = args.slow_clock_mhz * 1e6 if slow else 1980e6
    temp0 = 52 if slow else 40
    bases = [3000 * (1 + 7 * k) for k in range(args.kernels)]
    # The members of a run line that change, then the rest as recorded.
    head = {k: run[k] for k in ("mangled", "device", "context", "stream", "grid", "block",
                                "shared_mem_bytes")}
    tail_keys = ("workload", "graph", "cache_control", "clock_control", "passes")
    tail = {k: run.get(k) for k in tail_keys}
    n = 0
    with open(out, "w", encoding="utf-8") as f:
        f.write(json.dumps(session, separators=(",", ":")) + "\n")
        f.write(json.dumps(device, separators=(",", ":")) + "\n")
        launch = 0
        for step in range(args.launches):
            k = step % args.kernels
            kernel = KERNELS[k % len(KERNELS)] + ("" if k < len(KERNELS) else f"_{k}")
            text = f"layer={k}"
            nvtx = json.dumps([{"domain": "", "text": "train", "kind": "push_pop"},
                               {"domain": "", "text": text, "kind": "push_pop"}],
                              separators=(",", ":"))
            launch += 3
            factor = math.exp(rng.gauss(0, args.launch_sd)) * 1980e6 / clock
            pre = ('{"type":"run","launch":%d,"runs":%d,"kernel":%s,"mangled":%s,'
                   '"device":0,"context":1,"stream":7,"grid":%s,"block":%s,'
                   '"shared_mem_bytes":%d,"nvtx":%s,"nvtx_path":"train/%s",'
                   % (launch, args.runs, json.dumps(kernel), json.dumps(head["mangled"]),
                      json.dumps(head["grid"]), json.dumps(head["block"]),
                      head["shared_mem_bytes"], nvtx, text))
            mid = ('"workload":"kernel","graph":null,"cache_control":"%s","clock_control":'
                   '"%s","passes":%d,' % (tail["cache_control"], tail["clock_control"],
                                          tail["passes"]))
            for r in range(args.runs):
                t = round(bases[k] * factor * math.exp(rng.gauss(0, args.run_sd)))
                temp = temp0 + rng.randint(0, 2)
                throttled = slow and rng.random() < 1 / 3
                sm = clock * (1 - 0.002 * rng.random())
                f.write('%s%s"run":%d,"metrics":{"gpu__time_duration.sum":%d},"units":'
                        '{"gpu__time_duration.sum":"nanosecond"},"sm_clock_hz":%.1f,'
                        '"sm_clock_source":"nvml","rated_sm_clock_hz":1980000000,'
                        '"temperature_c":%d,"temperature_before_c":%d,"temperature_after_c"'
                        ':%d,"memory_clock_hz":3201000000,"power_w":%.3f,'
                        '"throttle_reasons":%s,"time":"2026-12-03T10:%02d:%02d.%03dZ"}\n'
                        % (pre, mid, r, t, sm, temp, temp, temp, 300 + 100 * rng.random(),
                           '["sw_thermal_slowdown"]' if throttled else "[]",
                           (step // 60) % 60, step % 60, r % 1000))
                n += 1
            s = dict(summary, launch=launch, runs=args.runs, kernel=kernel, nvtx_path=f"train/{text}")
            f.write(json.dumps(s, separators=(",", ":")) + "\n")
    return n


def _one(a):
    return write_rank(*a)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--ranks-per-host", type=int, default=8)
    p.add_argument("--kernels", type=int, default=5)
    p.add_argument("--launches", type=int, default=10, help="launches per rank")
    p.add_argument("--runs", type=int, default=20, help="runs per launch")
    p.add_argument("--launch-sd", type=float, default=0.003)
    p.add_argument("--run-sd", type=float, default=0.01)
    p.add_argument("--slow-rank", type=int, default=3)
    p.add_argument("--slow-clock-mhz", type=float, default=1755)
    p.add_argument("--job-id", default="job-4242")
    p.add_argument("--files", type=int, default=None,
                   help="files in all (default hosts x ranks-per-host); more than that "
                   "repeats the job as further jobs (job id suffixed)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=1, help="processes writing")
    args = p.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    world = args.hosts * args.ranks_per_host
    total = args.files or world
    work = []
    for i in range(total):
        rank = i % world
        rep = i // world
        a = argparse.Namespace(**vars(args))
        if rep:
            a.job_id = f"{args.job_id}.{rep}"
            a.seed = args.seed + rep
        h = rank // args.ranks_per_host
        host = f"node{h:03d}"
        name = f"{host}.r{rank}" + (f".j{rep}" if rep else "") + ".jsonl"
        work.append((a, os.path.join(args.outdir, name), host, h,
                     rank % args.ranks_per_host, rank, world))
    if args.jobs > 1:
        from multiprocessing import Pool
        with Pool(args.jobs) as pool:
            n = sum(pool.imap_unordered(_one, work))
    else:
        n = sum(map(_one, work))
    print(f"{args.outdir}: {total} files, {n} run records", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
