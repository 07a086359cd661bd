"""tests/gpu/check_procs.py - checks for the processes section of tests/gpu/run.sh.
  whole FILE...            every line of every file is a whole JSON object
  runs MIN FILE...         each file has at least MIN run records, from its own pid only
  no-error PATTERN FILE... no error record whose message contains PATTERN
  record TYPE PATTERN FILE a TYPE record whose message contains PATTERN, and print it
  no-runs KERNEL FILE      no run record of a kernel containing KERNEL"""
import json
import sys

import gpu_records


def lines(path):
    return gpu_records.read(path)


def main():
    what, args = sys.argv[1], sys.argv[2:]
    if what == "whole":
        for path in args:
            recs = lines(path)
            assert recs and recs[0]["type"] == "session", path
            print(path, len(recs), "whole lines")
    elif what == "runs":
        least = int(args[0])
        for path in args[1:]:
            recs = lines(path)
            pid = recs[0]["pid"]
            assert all(r.get("pid", pid) == pid for r in recs), f"{path}: another process's lines"
            assert sum(r["type"] == "session" for r in recs) == 1, f"{path}: several sessions"
            runs = [r for r in recs if r["type"] == "run"]
            errors = [r["message"] for r in recs if r["type"] == "error"]
            assert len(runs) >= least, f"{path}: {len(runs)} runs < {least}; errors {errors}"
            print(path, len(runs), "runs")
    elif what == "no-error":
        pattern = args[0]
        for path in args[1:]:
            bad = [r for r in lines(path) if r["type"] == "error" and pattern in r["message"]]
            assert not bad, bad
    elif what == "record":
        kind, pattern, path = args
        found = [r for r in lines(path) if r["type"] == kind and pattern in r["message"]]
        assert found, f"no {kind} record with {pattern!r} in {path}"
        print(json.dumps(found[0]))
    elif what == "no-runs":
        kernel, path = args
        bad = [r for r in lines(path) if r["type"] == "run" and kernel in r["kernel"]]
        assert not bad, f"{len(bad)} run records of {kernel}"
    else:
        sys.exit(f"unknown check {what}")


if __name__ == "__main__":
    main()
