"""tests/gpu/check_auto.py RECORDS NVIDIA_SMI_CSV - checks issue 11 on records from
tests/gpu/auto_runs.py under --runs auto, against nvidia-smi sampled every 100 ms during
the same run (`nvidia-smi --query-gpu=temperature.gpu,clocks.sm,clocks.mem
--format=csv,noheader,nounits -lms 100`; nvidia-smi -q before and after missed the
heating in between):
  - the medium kernel stops at the CI target, early; the tiny one takes more runs;
  - the heavy fp16 matmul measured while the GPU heats hits the maximum or is unstable;
  - every run has the NVML fields, consistent with nvidia-smi: temperatures within what
    it saw +-2 C, the memory clock one it saw, the SM clock (from NVML when the metric
    set is time only) within what it saw."""
import re
import sys

import gpu_records

records = gpu_records.read(sys.argv[1])
smi = [[float(v) for v in line.split(",")] for line in open(sys.argv[2]) if line.strip()
       and not line.startswith("#")]
summaries = [r for r in records if r["type"] == "summary"]
runs = [r for r in records if r["type"] == "run"]


def by_path(path):
    return [s for s in summaries if s["nvtx_path"] == path]


medium, tiny, heat = by_path("medium"), by_path("tiny"), by_path("heat")
assert medium and tiny and heat, [s["nvtx_path"] for s in summaries]
T = "gpu__time_duration.sum"
for s in summaries:
    ra, st = s["runs_auto"], s["metrics"][T]
    print(f'{s["nvtx_path"]:8} {s["kernel"][:50]:50} runs {s["runs"]:4} stopped {ra["stopped"]:18} '
          f'ci {ra["ci_pct"]:.3f}% mean {st["mean"]:.0f} ns stable {st["stable"]} {st["reasons"]} '
          f'throttle {s.get("throttle_reasons")} thermal {s.get("thermal")}')
m_runs = max(s["runs"] for s in medium)
t_runs = max(s["runs"] for s in tiny)
assert all(s["runs_auto"]["stopped"] == "target_ci_reached" for s in medium), "medium did not reach the target"
assert all(s["runs"] < 200 for s in medium)  # --runs-max 200
assert t_runs > m_runs, f"tiny took {t_runs} runs, medium {m_runs}"
h = heat[0]
# Heated (or power-capped) while measured: not stable, with the reason that says so.
assert h["metrics"][T]["stable"] is False and any(
    w in r for r in h["metrics"][T]["reasons"] for w in ("drifted", "throttled", "sm clock", "rsd")), h

temps = [row[0] for row in smi]
# The 4 s of fp16 matmul must have heated the GPU, or the heat case tested nothing.
assert max(temps) - temps[0] >= 5, f"nvidia-smi saw {temps[0]}..{max(temps)} C: no heating"
sm = [row[1] * 1e6 for row in smi]
mem = {row[2] * 1e6 for row in smi}
for r in runs:
    for k in ("temperature_before_c", "temperature_after_c", "memory_clock_hz", "power_w",
              "throttle_reasons", "sm_clock_hz"):
        assert r.get(k) is not None, (k, r)
rt = sorted(r["temperature_before_c"] for r in runs)
rs = sorted(r["sm_clock_hz"] for r in runs)
print(f"run temperatures {rt[0]}..{rt[-1]} C, nvidia-smi {min(temps)}..{max(temps)} C; "
      f"run SM clocks {rs[0] / 1e6:.0f}..{rs[-1] / 1e6:.0f} MHz ({runs[0]['sm_clock_source']}), "
      f"nvidia-smi {min(sm) / 1e6:.0f}..{max(sm) / 1e6:.0f}; memory clocks "
      f"{sorted({r['memory_clock_hz'] for r in runs})} vs {sorted(mem)}")
assert min(temps) - 2 <= rt[0] and rt[-1] <= max(temps) + 2, "temperatures outside nvidia-smi's"
assert {r["memory_clock_hz"] for r in runs} <= mem, "memory clock differs from nvidia-smi"
# Time only: the SM clock is NVML's, and must lie within what nvidia-smi saw.
assert runs[0]["sm_clock_source"] == "nvml", runs[0]["sm_clock_source"]
assert min(sm) <= rs[0] and rs[-1] <= max(sm), "SM clock outside nvidia-smi's"
print("ok")
