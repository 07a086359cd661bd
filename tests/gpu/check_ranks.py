"""tests/gpu/check_ranks.py - issue 37's checks of a torchrun job measured by rangeprof,
one JSON Lines file per rank (-o 'r.%q{RANK}.jsonl'):

  check_ranks.py records --world N [--own-gpus] r.0.jsonl r.1.jsonl ...
      each file's session says launcher torchrun, its rank (the file's index), local rank,
      world size N; it has run records; --own-gpus: each rank measured on its own GPU
      (device index = local rank, UUIDs distinct), else all on one GPU (one UUID).
      Standard library only.
  check_ranks.py analyse --world N [--own-gpus] --dataset DIR [--plot PNG] FILES...
      converts the files into one Parquet dataset (rangeprof-report --to-parquet), reads it
      back (rangeprof.load: every rank there), runs rangeprof-report --by-rank on it (every
      kernel compared over the N ranks; the report names each rank's host and GPU) and
      prints the report; --plot draws rangeprof-plot by-rank. Needs the rangeprof Python
      package (PYTHONPATH=python) with pandas and pyarrow.
Prints 'ok' and exits 0, or names the first failed condition and exits 1."""
import argparse
import io
import sys

import gpu_records


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def records(args):
    uuids = []
    for i, path in enumerate(args.files):
        recs = gpu_records.read(path)
        sessions = [r for r in recs if r["type"] == "session"]
        if len(sessions) != 1:
            fail(f"{path}: {len(sessions)} session records, expected 1")
        job = sessions[0].get("job")
        if not isinstance(job, dict):
            fail(f"{path}: session has no job member: {sessions[0]}")
        expect = dict(launcher="torchrun", rank=i, world_size=args.world,
                      local_rank=i, local_world_size=args.world)
        for key, value in expect.items():
            if job.get(key) != value:
                fail(f"{path}: job.{key} = {job.get(key)!r}, expected {value!r} ({job})")
        runs = [r for r in recs if r["type"] == "run"]
        if not runs:
            fail(f"{path}: no run records")
        devices = {r["index"]: r["uuid"] for r in recs if r["type"] == "device"}
        used = {r["device"] for r in runs}
        want = {i} if args.own_gpus else {0}
        if used != want:
            fail(f"{path}: runs on devices {sorted(used)}, expected {sorted(want)}")
        uuids.append(devices[min(used)])
        print(f"{path}: rank {job['rank']} of {job['world_size']}, local rank "
              f"{job['local_rank']}, job id {job.get('id')!r}, {len(runs)} runs on device "
              f"{sorted(used)} {devices[min(used)]}")
    if args.own_gpus and len(set(uuids)) != len(uuids):
        fail(f"ranks share GPUs: {uuids}")
    if not args.own_gpus and len(set(uuids)) != 1:
        fail(f"ranks on several GPUs: {uuids}")


def analyse(args):
    import rangeprof
    from rangeprof import report
    out = io.StringIO()
    if report.main(["--to-parquet", args.dataset] + args.files, out) != 0:
        fail("rangeprof-report --to-parquet failed")
    print(out.getvalue().strip())
    df = rangeprof.load(args.dataset)
    ranks = sorted(df["Rank"].dropna().astype(int).unique())
    if ranks != list(range(args.world)):
        fail(f"the dataset has ranks {ranks}, expected 0..{args.world - 1}")
    out = io.StringIO()
    if report.main(["--by-rank", "--csv", args.dataset], out) != 0:
        fail("rangeprof-report --by-rank failed")
    import pandas as pd
    per_rank = pd.read_csv(io.StringIO(out.getvalue()))
    counts = per_rank.groupby(["Annotation", "Kernel"])["Rank"].nunique()
    if not len(counts) or (counts != args.world).any():
        fail(f"kernels not compared over {args.world} ranks: {counts.to_dict()}")
    gpus = per_rank.groupby("Rank")["Device"].agg(lambda s: sorted(set(s)))
    for r, devices in gpus.items():
        want = [r] if args.own_gpus else [0]
        if devices != want:
            fail(f"rank {r}: the report names devices {devices}, expected {want}")
    text = io.StringIO()
    report.main(["--by-rank", args.dataset], text)
    print(text.getvalue())
    print(per_rank[["Kernel", "Rank", "Host", "GPU", "Device", "Runs", "Mean", "DiffPct",
                    "PHolm", "SMClockMHz", "TemperatureC"]].to_string())
    if args.plot:
        from rangeprof import plots
        if plots.main(["by-rank", args.dataset, "-o", args.plot]) != 0:
            fail("rangeprof-plot by-rank failed")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["records", "analyse"])
    p.add_argument("files", nargs="+")
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--own-gpus", action="store_true")
    p.add_argument("--dataset")
    p.add_argument("--plot")
    args = p.parse_args()
    if args.what == "records":
        records(args)
    else:
        if not args.dataset:
            p.error("analyse needs --dataset DIR")
        analyse(args)
    print("ok")


if __name__ == "__main__":
    main()
