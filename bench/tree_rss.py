#!/usr/bin/env python3
"""bench/tree_rss.py COMMAND... - runs COMMAND and prints, on stderr when it ends, its wall
time and the peak of the summed resident memory of its whole process tree, sampled every
200 ms from /proc (the sampling takes a few per cent of a core: time the command
without it). /usr/bin/time -v gives the largest single process's peak only, and
rangeprof-report reads big files in several processes. Exits with COMMAND's status.
Standard library only; Linux. Gave the memory column of doc/measurements.md, "Post-processing
big files":
    /usr/bin/time -v python3 bench/tree_rss.py rangeprof-report /tmp/big2m.jsonl >/dev/null"""
import os
import subprocess
import sys
import time


def _children():
    """{pid: [child pids]} of every process."""
    out = {}
    if os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        return None  # the kernel lists each task's children: read them per process
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        out.setdefault(ppid, []).append(int(name))
    return out


def _rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children_of(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def tree_rss_kb(root):
    children, todo, total = _children(), [root], 0
    while todo:
        pid = todo.pop()
        total += _rss_kb(pid)
        todo += children.get(pid, []) if children is not None else _children_of(pid)
    return total


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    start = time.monotonic()
    proc = subprocess.Popen(sys.argv[1:])
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss_kb(proc.pid))
        time.sleep(0.2)
    print(f"tree_rss: {time.monotonic() - start:.1f} s wall, peak tree RSS "
          f"{peak / 1024:.0f} MiB, exit status {proc.returncode}", file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
