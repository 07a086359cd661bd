"""bench/floor.py - issue 35's benchmark: what rangeprof costs a notebook user beyond the
physical floor, beside Nsight Python 0.9.6 and the plain program, on the GPU machine.

The program is the Nsight Python tutorial's first lesson (fp32 matmul, inputs made in the
function, the product alone annotated), at 3 configs (n = 1024, 2048, 4096) or 10 (n = 1024
... 10240), 20 runs each. Each way runs in its own process, the ways interleaved rep by rep
so that a drift of the machine touches them alike:

  plain      imports torch and pandas, then calls the function once per config ("a pass"),
             twice; times each import and each pass in the process
  rangeprof  the same imports, then 'import rangeprof' (timed alone: its cost beyond the
             program's own imports), then the annotated function called and its DataFrame
             made, twice, as a notebook user re-running a cell ("first call", "later call")
  nsight     the same program under Nsight Python 0.9.6 ('import nsight'), which reruns it
             under ncu 2025.3.1; one call (its process ends inside it), whole process only

The floor of one call is what no replaying tool avoids, computed from this run's figures:
for each config, (runs - 1) extra executions of the kernel (its median
gpu__time_duration.sum from rangeprof's records: the plain program runs it once), runs - 1
restores of the bytes the kernel writes (the product, n*n*4 bytes, at the device-to-device
copy rate measured in the plain process), and one cache flush per run (reading the L2's
size from DRAM, measured there too: the least traffic that evicts it).

Cost is the wall time beyond the plain program and the floor:
  import      'import rangeprof' after torch and pandas                  target <= 0.1 s
  first call  call 1 - plain pass 1 - floor                              target <= 0.25 s
  later call  call 2 - plain pass 2 - floor                   target <= 20 ms + 2 ms/config
  whole       process wall - plain process wall - floor per call made; Nsight Python's over
              rangeprof's                                                target >= 20
The values: rangeprof's mean time per config against Nsight Python's, within --tolerance %.

Each worker runs inside an IPython shell (InteractiveShell.instance(), made before anything
is timed), as the tutorial's notebook cells run in a kernel; FLOOR_SCRIPT=1 runs it as a
plain script instead. FLOOR_PAUSE_S=S sleeps S seconds between the decoration and the first
call (a diagnostic of the set-up's lead time, not the benchmark's figure). Never changes the card's settings: Nsight Python with clock control
none, rangeprof's default none.

usage, on the GPU machine, through bench/floor.sh (the venv of tests/gpu/notebook_venv.sh):
    bench/floor.sh OUT.json [--reps 3] [--lessons 3,10] [--runs 20] [--ways plain,rangeprof,nsight]
The same file is the measured program: --worker WAY --configs N --runs R --result PATH.
Results (H200): doc/measurements.md, "Cost at the physical floor"."""

import json
import os
import sys
import time

_T0 = time.perf_counter()


def _worker_way(argv):
    return argv[argv.index("--worker") + 1] if "--worker" in argv[:-1] else None


WAY = _worker_way(sys.argv)
LESSONS = {3: [1024, 2048, 4096], 10: [1024 * k for k in range(1, 11)]}
TIME = "gpu__time_duration.sum"
phases = {}
# Python's cyclic garbage collector, timed: a full collection in a process holding torch and
# pandas costs tens of ms, and a call that makes many objects can set one off (session 18:
# the same later call measured 70-80 ms beyond the floor in one process, 174-214 in another).
_gc = {"s": 0.0, "full": 0, "at": None}


def _gc_timer(phase, info):
    if phase == "start":
        _gc["at"] = time.perf_counter()
    elif _gc["at"] is not None:
        _gc["s"] += time.perf_counter() - _gc["at"]
        _gc["full"] += info.get("generation") == 2
        _gc["at"] = None


def _timed(name, fn):
    """fn() timed into phases[name], with the collector's seconds and full collections
    during it into phases[name + '_gc_s'] and [name + '_gc_full']."""
    s0, f0 = _gc["s"], _gc["full"]
    _phase[0] = name
    t = time.perf_counter()
    value = fn()
    phases[name] = time.perf_counter() - t
    phases[name + "_gc_s"] = _gc["s"] - s0
    phases[name + "_gc_full"] = _gc["full"] - f0
    return value


if WAY is not None:
    import gc

    # A notebook's kernel: the worker runs inside an IPython shell, as the tutorial's cells
    # do, so that what a library does differently in a notebook (rangeprof starts the
    # device's set-up when analyze.kernel decorates) is what is measured; each way alike,
    # before anything is timed. FLOOR_SCRIPT=1 runs the worker as a plain script.
    if not os.environ.get("FLOOR_SCRIPT"):
        t = time.perf_counter()
        from IPython.core.interactiveshell import InteractiveShell

        InteractiveShell.instance()
        phases["ipython_shell_s"] = time.perf_counter() - t
    gc.callbacks.append(_gc_timer)
    t = time.perf_counter()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 stays fp32, as in the tutorial
    phases["import_torch_s"] = time.perf_counter() - t
    t = time.perf_counter()
    import pandas  # noqa: F401 - the program's own import, as a notebook's

    phases["import_pandas_s"] = time.perf_counter() - t
    t = time.perf_counter()
    if WAY == "nsight":
        import nsight as profiler
    elif WAY == "rangeprof":
        import rangeprof as profiler
    else:
        profiler = None
    phases["import_profiler_s"] = time.perf_counter() - t


# Each config's host time as the program sees it, [phase, start after _T0, n, seconds],
# both ways (phase: pass1_s/pass2_s plain, call1_s/call2_s otherwise): where a call's cost
# beyond plain falls (its first config waiting for the set-up, or each new kernel's first
# launch), read beside plain's same pass and the summaries' cost_ms of the same config.
config_times = []
_phase = [None]


def matmul(n):
    """The tutorial's lesson: inputs made in the function, the product alone measured."""
    t = time.perf_counter()
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    if profiler is None:
        _ = a @ b
    else:
        with profiler.annotate("matmul"):
            _ = a @ b
    config_times.append([_phase[0], round(t - _T0, 6), n, round(time.perf_counter() - t, 6)])


def _event_ms(fn, reps=7):
    """Median GPU milliseconds of fn() between two CUDA events."""
    import torch

    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return sorted(times)[len(times) // 2]


def floor_rates():
    """The device-to-device copy rate (bytes/s) and the time of one L2's worth of DRAM
    reads (s), measured here: the restore and flush parts of the floor (bench/per_run.py's
    too)."""
    import torch

    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 0) or 50 << 20)
    size = 512 << 20
    src = torch.empty(size, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = _event_ms(lambda: dst.copy_(src))
    # The L2's size read from DRAM: a different buffer each time, twice the L2 apart.
    bufs = [torch.ones(l2 // 4, dtype=torch.float32, device="cuda") for _ in range(4)]
    k = [0]

    def read():
        bufs[k[0] % 4].sum()
        k[0] += 1

    read_ms = _event_ms(read, reps=9)
    del src, dst, bufs
    return {"l2_bytes": l2, "copy_bytes_per_s": size / (copy_ms / 1e3),
            "flush_s": read_ms / 1e3}


def worker(args):
    sizes = LESSONS[args.configs]
    result = dict(way=WAY, sizes=sizes, runs=args.runs, phases=phases)
    if profiler is None:
        def one_pass():
            for n in sizes:
                matmul(n)
            torch.cuda.synchronize()

        for p in ("pass1_s", "pass2_s"):
            _timed(p, one_pass)
        result["rates"] = floor_rates()
    else:
        measured = profiler.analyze.kernel(configs=[(n,) for n in sizes], runs=args.runs)(matmul)
        # FLOOR_PAUSE_S: a user's pause between the cell that decorates and the one that
        # calls, during which a set-up started at decoration can finish (a diagnostic: the
        # first call's cost then shows what the set-up's lead time is worth).
        pause = pause_s()
        if pause > 0:
            time.sleep(pause)
            phases["pause_s"] = pause
        for p in ("call1_s", "call2_s"):
            prof = None
            if os.environ.get("FLOOR_CPROFILE") and WAY == "rangeprof":
                import cProfile
                prof = cProfile.Profile()
                prof.enable()
            # Under Nsight Python 0.9.6 the process that ncu runs ends inside this call.
            df = _timed(p, lambda: measured().to_dataframe())
            if prof is not None:  # where a call's time goes, in the worker's log
                import pstats
                prof.disable()
                print(f"--- {p}: {phases[p]:.3f} s")
                pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
            tm = df[df["Metric"] == TIME]
            result.setdefault("values", {str(int(n)): float(v)
                                         for n, v in zip(tm["n"], tm["AvgValue"])})
    phases["in_process_s"] = time.perf_counter() - _T0
    result["config_times"] = config_times
    with open(args.result, "w") as f:
        json.dump(result, f)


# ---------------------------------------------------------------------------------------
# The driver.


def run_way(way, configs, runs, workdir, tag, env, timeout):
    """(wall seconds, the worker's result or None, exit status, log path)."""
    from notebook_vs_nsight import timed_run  # bench/ is on sys.path (driver)

    result = os.path.join(workdir, f"{way}-{configs}-{tag}.json")
    log = os.path.join(workdir, f"{way}-{configs}-{tag}.log")
    for p in (result, log):
        if os.path.exists(p):
            os.remove(p)
    command = [sys.executable, os.path.abspath(__file__), "--worker", way, "--configs",
               str(configs), "--runs", str(runs), "--result", result]
    env = dict(env)
    if way == "rangeprof":
        env["RANGEPROF_OUTPUT"] = os.path.join(workdir, f"{way}-{configs}-{tag}.jsonl")
    wall, status = timed_run(command, env, workdir, log, timeout)
    value = None
    if os.path.exists(result):
        with open(result) as f:
            value = json.load(f)
    if value is not None and way == "rangeprof":
        value["records"] = read_records(env["RANGEPROF_OUTPUT"])
    return wall, value, status, log


def read_records(path):
    """The summaries (in order) and the set-up record of rangeprof's file, through the
    package's own reader (rangeprof.records.read: bad lines said on stderr, skipped)."""
    from rangeprof.records import read

    out = {"summaries": [], "setup": None}
    if not os.path.exists(path):
        return out
    records = read(path)
    for r, _session in records.summaries:
        m = r.get("metrics", {}).get(TIME, {})
        out["summaries"].append({"kernel": r.get("kernel"), "runs": r.get("runs"),
                                 "median_ns": m.get("median"), "cost_ms": r.get("cost_ms"),
                                 "save_bytes": (r.get("save") or {}).get("bytes")})
    if records.setups:
        out["setup"] = records.setups[0][0].get("cost_ms")
    return out


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2 if xs else float("nan")


def floor_of_call(sizes, runs, summaries, rates):
    """The floor of one call (s) from its summaries, one per config in order."""
    total = 0.0
    for n, s in zip(sizes, summaries):
        kernel_s = (s["median_ns"] or 0) / 1e9
        restore_s = n * n * 4 / rates["copy_bytes_per_s"]
        total += (runs - 1) * (kernel_s + restore_s) + runs * rates["flush_s"]
    return total


def lesson_figures(configs, runs, reps_out):
    """Medians over reps of every phase and cost; reps_out: {way: [(wall, value)]}."""
    sizes = LESSONS[configs]
    fig = {"sizes": sizes, "per_rep": []}
    plain = reps_out.get("plain", [])
    rp = reps_out.get("rangeprof", [])
    ns = reps_out.get("nsight", [])
    n = min(len(plain), max(len(rp), len(ns)) or len(plain))
    for i in range(n):
        pw, pv = plain[i]
        row = {"plain_wall_s": pw, "plain_pass1_s": pv["phases"]["pass1_s"],
               # Interpreter start and exit: the wall outside the script's own time.
               "plain_outside_s": pw - pv["phases"]["in_process_s"],
               "plain_pass2_s": pv["phases"]["pass2_s"], "rates": pv["rates"],
               "plain_pass2_gc_s": pv["phases"].get("pass2_s_gc_s"),
               "plain_config_times": pv.get("config_times")}
        if i < len(rp) and rp[i][1]:
            rw, rv = rp[i]
            sums = rv["records"]["summaries"]
            k = len(sizes)
            f1 = floor_of_call(sizes, runs, sums[:k], pv["rates"]) if len(sums) >= k else None
            f2 = floor_of_call(sizes, runs, sums[k:2 * k], pv["rates"]) \
                if len(sums) >= 2 * k else None
            ph = rv["phases"]
            row.update({
                "rangeprof_wall_s": rw, "floor1_s": f1, "floor2_s": f2,
                "import_s": ph["import_profiler_s"],
                "call1_s": ph["call1_s"], "call2_s": ph["call2_s"],
                "call1_gc_s": ph.get("call1_s_gc_s"), "call2_gc_s": ph.get("call2_s_gc_s"),
                "call2_gc_full": ph.get("call2_s_gc_full"),
                "first_cost_s": ph["call1_s"] - row["plain_pass1_s"] - (f1 or 0),
                "later_cost_s": ph["call2_s"] - row["plain_pass2_s"] - (f2 or 0),
                "rangeprof_cost_s": rw - pw - (f1 or 0) - (f2 or 0),
                "rangeprof_outside_s": rw - ph["in_process_s"],
                "cost_ms_call1": phase_sums(sums[:k]), "cost_ms_call2": phase_sums(sums[k:]),
                "setup_ms": rv["records"]["setup"], "values": rv.get("values"),
                "summaries_call2": config_phases(sizes, sums[k:2 * k]),
                "rangeprof_config_times": rv.get("config_times")})
            # Only where every config left one summary: else the pairs would shift.
            for call, pass_, part in (("call1", "pass1_s", sums[:k]),
                                      ("call2", "pass2_s", sums[k:2 * k])):
                row[f"outside_ms_{call}"] = outside_summaries_ms(
                    rv.get("config_times"), f"{call}_s", part, pv.get("config_times"),
                    pass_) if len(sums) == 2 * k else None
        if i < len(ns) and ns[i][1] is not None:
            nw, nv = ns[i]
            f = row.get("floor1_s") or 0
            # Nsight Python makes one call: the plain process without its second pass.
            row.update({"nsight_wall_s": nw, "nsight_values": nv.get("values"),
                        "nsight_cost_s": nw - (pw - row["plain_pass2_s"]) - f})
        fig["per_rep"].append(row)
    keys = ("plain_wall_s", "plain_pass1_s", "plain_pass2_s", "rangeprof_wall_s", "floor1_s",
            "floor2_s", "import_s", "call1_s", "call2_s", "first_cost_s", "later_cost_s",
            "rangeprof_cost_s", "nsight_wall_s", "nsight_cost_s", "plain_outside_s",
            "rangeprof_outside_s")
    fig["median"] = {key: median([r.get(key) for r in fig["per_rep"]]) for key in keys}
    return fig


def pause_s():
    """FLOOR_PAUSE_S as seconds (0 when unset or empty); ValueError naming the value unless
    it is a number from 0 to 600."""
    text = os.environ.get("FLOOR_PAUSE_S") or "0"
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 600:  # NaN fails too
        raise ValueError(f"FLOOR_PAUSE_S={text[:40]!r}: expected seconds from 0 to 600")
    return value


def outside_summaries_ms(config_times, phase, summaries, plain_times=None, plain_phase=None):
    """Per config of one call, in order: its host milliseconds less its summary's
    cost_ms.total and less the plain program's host milliseconds for the same config in
    its same pass (pass1_s for call1_s, pass2_s for call2_s; left out when plain's are not
    given): the time its launch cost beyond the program's own work outside rangeprof's
    timers (Python, the launch's callbacks before and after the measurement, the
    records' writing, the checks after the runs; in call 1's first config, also the
    context's creation and the wait for the set-up). None where they do not pair up."""
    mine = [row for row in (config_times or []) if row[0] == phase]
    plain = None
    if plain_phase is not None:
        plain = [row for row in (plain_times or []) if row[0] == plain_phase]
        if len(plain) != len(mine):
            return None
    if len(mine) != len(summaries):
        return None
    return [round(row[3] * 1e3 - ((s.get("cost_ms") or {}).get("total") or 0)
                  - (plain[i][3] * 1e3 if plain else 0), 3)
            for i, (row, s) in enumerate(zip(mine, summaries))]


def config_phases(sizes, summaries):
    """Each config's own cost_ms and bytes saved, paired with its size in order: where a
    call's cost grows with the size (verify, save) is read per config, not only summed.
    Only as many as pair up."""
    return [{"n": n, "save_bytes": s.get("save_bytes"), "cost_ms": s.get("cost_ms")}
            for n, s in zip(sizes, summaries)]


def phase_sums(summaries):
    out = {}
    for s in summaries:
        for k, v in (s.get("cost_ms") or {}).items():
            out[k] = round(out.get(k, 0) + v, 3)
    return out


def short_summaries(configs, runs, reps_out):
    """Each rangeprof summary that recorded other than the runs asked, as '(rep, call,
    config): N': its floor would count runs that never ran (session 17's in-process defect
    recorded 1 run of 20 at every later launch, and only the notebook saw it)."""
    out = []
    for rep, (_wall, value) in enumerate(reps_out.get("rangeprof", [])):
        sums = value["records"]["summaries"]
        if len(sums) != 2 * configs:
            out.append(f"rep {rep}: {len(sums)} summaries for 2 calls x {configs} configs")
        for i, s in enumerate(sums):
            if s.get("runs") != runs:
                out.append(f"rep {rep}, call {i // configs + 1}, config {i % configs + 1} "
                           f"({s.get('kernel')}): {s.get('runs')} runs")
    return out


def judge(configs, fig, tolerance, problems):
    m = fig["median"]
    targets = {"import_s": 0.1, "first_cost_s": 0.25, "later_cost_s": 0.02 + 0.002 * configs}
    fig["targets"] = {}
    for key, limit in targets.items():
        ok = m[key] == m[key] and m[key] <= limit
        fig["targets"][key] = {"value": m[key], "limit": limit, "met": ok}
        if not ok:
            problems.append(f"{configs} configs: {key} {m[key]:.3f} s, target <= {limit:.3f} s")
    ratio = (m["nsight_cost_s"] / m["rangeprof_cost_s"]
             if m["rangeprof_cost_s"] == m["rangeprof_cost_s"] and m["rangeprof_cost_s"] > 0
             else float("inf"))
    fig["ratio"] = ratio
    if m["nsight_cost_s"] == m["nsight_cost_s"]:
        fig["targets"]["ratio"] = {"value": ratio, "limit": 20, "met": ratio >= 20}
        if not ratio >= 20:
            problems.append(f"{configs} configs: Nsight Python's cost / rangeprof's = "
                            f"{ratio:.1f}, target >= 20")
    rows = [r for r in fig["per_rep"] if r.get("values") and r.get("nsight_values")]
    fig["values_pct"] = {}
    if rows:
        a, b = rows[0]["values"], rows[0]["nsight_values"]
        for n in fig["sizes"]:
            if str(n) in a and str(n) in b:
                d = 100 * (a[str(n)] - b[str(n)]) / b[str(n)]
                fig["values_pct"][str(n)] = d
                if abs(d) > tolerance:
                    problems.append(f"{configs} configs, n={n}: rangeprof {a[str(n)]:.0f} ns "
                                    f"against Nsight Python {b[str(n)]:.0f} ns: {d:+.2f} %")


def print_lesson(configs, runs, fig):
    m = fig["median"]
    print(f"\n== {configs} configs ({', '.join(map(str, fig['sizes']))}), {runs} runs, "
          f"median of {len(fig['per_rep'])} ==")
    rows = [("plain: pass 1 / pass 2 / process", "plain_pass1_s", "plain_pass2_s",
             "plain_wall_s"),
            ("floor per call (call 1 / call 2)", "floor1_s", "floor2_s", None),
            ("rangeprof: call 1 / call 2 / process", "call1_s", "call2_s", "rangeprof_wall_s"),
            ("cost: import / first / later", "import_s", "first_cost_s", "later_cost_s"),
            ("cost: whole process rangeprof / nsight", "rangeprof_cost_s", "nsight_cost_s",
             None),
            ("start + exit outside the script: plain / rangeprof", "plain_outside_s",
             "rangeprof_outside_s", None)]
    for label, *keys in rows:
        vals = " / ".join(f"{m[k]:.3f}" for k in keys if k)
        print(f"  {label:50} {vals} s")
    for i, r in enumerate(fig["per_rep"]):  # the collector's share, per rep: it varies
        if r.get("call2_gc_s") is not None:
            print(f"  rep {i}: garbage collector in call 1 / call 2 {r['call1_gc_s']:.3f} / "
                  f"{r['call2_gc_s']:.3f} s ({r['call2_gc_full']} full), in plain's pass 2 "
                  f"{r.get('plain_pass2_gc_s') or 0:.3f} s")
        for call in ("call1", "call2"):  # where each config's time beyond its summary went
            out = r.get(f"outside_ms_{call}")
            if out:
                print(f"  rep {i}: {call}, ms beyond plain outside the summaries by config: "
                      + " ".join(f"{v:.1f}" for v in out))
    for key, t in fig.get("targets", {}).items():
        print(f"  target {key:14} {t['value']:.3f} (limit {t['limit']:.3f}): "
              f"{'met' if t['met'] else 'MISSED'}")
    if fig.get("values_pct"):
        print("  rangeprof vs Nsight Python: " + ", ".join(
            f"{n} {d:+.2f} %" for n, d in fig["values_pct"].items()))


def driver(args):
    import tempfile

    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from notebook_vs_nsight import base_env, describe_machine, find_ncu, find_ncu_report

    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="floor-"))
    os.makedirs(workdir, exist_ok=True)
    ncu = find_ncu(None)
    report = find_ncu_report(ncu)
    plain_env = base_env()
    ns_env = dict(plain_env)
    if ncu:
        ns_env["PATH"] = os.path.dirname(ncu) + os.pathsep + ns_env.get("PATH", "")
    if report:
        ns_env["PYTHONPATH"] = report + (os.pathsep + ns_env["PYTHONPATH"]
                                         if ns_env.get("PYTHONPATH") else "")
    envs = {"plain": plain_env, "rangeprof": plain_env, "nsight": ns_env}
    ways = args.ways.split(",")
    out = {"machine": describe_machine(ncu), "workdir": workdir, "reps": args.reps,
           "runs": args.runs, "lessons": {}}
    problems = []
    run_way("plain", 3, 1, workdir, "warmup", plain_env, args.timeout)  # disk caches
    for configs in [int(x) for x in args.lessons.split(",")]:
        reps_out = {w: [] for w in ways}
        for rep in range(args.reps):
            for way in ways:
                wall, value, status, log = run_way(way, configs, args.runs, workdir,
                                                   f"rep{rep}", envs[way], args.timeout)
                print(f"  {configs} configs, {way:9} rep {rep}: {wall:7.2f} s, exit {status}",
                      flush=True)
                if status != 0 or value is None:
                    problems.append(f"{way}, {configs} configs, rep {rep}: exit {status}, "
                                    f"see {log}")
                    with open(log) as f:
                        print("".join(f.readlines()[-15:]))
                    continue
                reps_out[way].append((wall, value))
        fig = lesson_figures(configs, args.runs, reps_out)
        for short in short_summaries(configs, args.runs, reps_out):
            problems.append(f"{configs} configs, not {args.runs} runs: {short}")
        judge(configs, fig, args.tolerance, problems)
        out["lessons"][str(configs)] = fig
        print_lesson(configs, args.runs, fig)
    out["problems"] = problems
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"\nresults: {args.out}")
    for p in problems:
        print(f"problem: {p}")
    return 1 if problems else 0


def main(argv=None):
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", nargs="?")
    p.add_argument("--worker")
    p.add_argument("--configs", type=int, default=3)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--result")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--lessons", default="3,10")
    p.add_argument("--ways", default="plain,rangeprof,nsight")
    p.add_argument("--tolerance", type=float, default=1.0)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--workdir")
    args = p.parse_args(argv)
    if args.worker:
        return worker(args) or 0
    if not args.out:
        p.error("OUT.json is needed")
    try:
        pause_s()  # refused here, in one line, rather than in every worker's log
    except ValueError as e:
        p.error(str(e))
    return driver(args)


if __name__ == "__main__":
    sys.exit(main())
