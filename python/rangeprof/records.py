"""rangeprof/records.py - reads rangeprof's JSON Lines (SPEC.md section 4) from many files
and sessions into plain Python objects, reporting each bad line with its file and line
number instead of failing. Standard library only: the report tools use it directly.

A run or summary record belongs to the session record that precedes it in its file (each
process writes a session line first); sessions are told apart by host, pid and start time."""
import glob
import json
import math
import os
import sys
from dataclasses import dataclass, field

from rangeprof.config import config_from_nvtx

SUPPORTED_SCHEMA = 1
KNOWN_TYPES = ("session", "device", "setup", "run", "summary", "warning", "error")


@dataclass
class BadLine:
    path: str
    line: int
    reason: str

    def __str__(self):
        return f"{self.path}:{self.line}: {self.reason}; line skipped"


@dataclass
class Run:
    """One measured run: the fields of a 'run' record, resolved against its session and
    device, with the configuration parsed from its NVTX range texts."""
    record: dict
    session: dict
    device: dict
    path: str
    line: int
    config: dict = field(default_factory=dict)

    @property
    def session_id(self):
        s = self.session
        return f"{s.get('host', '?')}:{s.get('pid', '?')}:{s.get('start_time', '?')}"

    @property
    def launch_id(self):
        # The kernel nodes of one graph launch share its launch index: the node tells
        # them apart (a graph may hold the same kernel twice).
        graph = self.record.get("graph")
        node = f".node{graph.get('node')}" if isinstance(graph, dict) else ""
        return f"{self.session_id}#{self.record.get('launch')}{node}"

    @property
    def annotation(self):
        return self.record.get("nvtx_path", "")

    @property
    def kernel(self):
        return self.record.get("kernel", "")


@dataclass
class Records:
    runs: list = field(default_factory=list)
    summaries: list = field(default_factory=list)   # (record, session_id)
    sessions: list = field(default_factory=list)
    devices: list = field(default_factory=list)     # (record, session_id)
    setups: list = field(default_factory=list)      # (record, session_id): --setup early
    messages: list = field(default_factory=list)    # warning and error records
    bad_lines: list = field(default_factory=list)
    files: list = field(default_factory=list)


def expand(paths_or_globs):
    """File names from names, glob patterns and directories (their *.jsonl), in order, once
    each; a pattern that matches nothing raises FileNotFoundError naming it."""
    if isinstance(paths_or_globs, (str, os.PathLike)):
        paths_or_globs = [paths_or_globs]
    files = []
    for item in paths_or_globs:
        item = os.fspath(item)
        if os.path.isdir(item):
            matches = sorted(glob.glob(os.path.join(item, "*.jsonl")))
        elif glob.has_magic(item):
            matches = sorted(glob.glob(item))
        else:
            matches = [item] if os.path.exists(item) else []
        if not matches:
            raise FileNotFoundError(f"no JSONL file matches '{item}'")
        files += [m for m in matches if m not in files]
    return files


def _problem(rec):
    """Why a parsed line cannot be used, or None."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    kind = rec.get("type")
    if kind not in KNOWN_TYPES:
        return f"unknown record type {kind!r}"
    if kind == "session":
        schema = rec.get("schema")
        if not isinstance(schema, (int, float)) or schema > SUPPORTED_SCHEMA:
            return f"schema {schema!r} is newer than this reader's {SUPPORTED_SCHEMA}"
    if kind == "run":
        if not isinstance(rec.get("metrics"), dict) or not isinstance(rec.get("kernel"), str):
            return "run record without 'metrics' or 'kernel'"
    if kind == "summary" and not isinstance(rec.get("metrics"), dict):
        return "summary record without 'metrics'"
    return None


def read(paths_or_globs, report=sys.stderr):
    """Every record of the given files. Bad lines (truncated, not JSON, unknown record
    type, a newer schema, missing fields) are collected in .bad_lines and, unless report
    is None, printed there as 'FILE:LINE: reason; line skipped'. Records of a session
    whose schema is newer than this reader's are skipped with it."""
    out = Records()
    for path in expand(paths_or_globs):
        out.files.append(path)
        session, skipping_session = {}, False
        devices = {}
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, text in enumerate(f, 1):
                if not text.strip():
                    continue
                try:
                    rec = json.loads(text)
                except ValueError as e:
                    what = "truncated line" if not text.endswith("\n") else "not JSON"
                    bad = BadLine(path, number, f"{what} ({e.msg} at column {e.colno})")
                    out.bad_lines.append(bad)
                    continue
                problem = _problem(rec)
                if problem:
                    out.bad_lines.append(BadLine(path, number, problem))
                    if isinstance(rec, dict) and rec.get("type") == "session":
                        skipping_session = True
                    continue
                kind = rec["type"]
                if kind == "session":
                    session, skipping_session, devices = rec, False, {}
                    out.sessions.append(rec)
                    continue
                if skipping_session:
                    continue
                sid = f"{session.get('host', '?')}:{session.get('pid', '?')}:{session.get('start_time', '?')}"
                if kind == "device":
                    devices[rec.get("index")] = rec
                    out.devices.append((rec, sid))
                elif kind == "run":
                    run = Run(rec, session, devices.get(rec.get("device"), {}), path, number)
                    run.config = config_from_nvtx(rec.get("nvtx") or [], rec.get("nvtx_path", ""))
                    out.runs.append(run)
                elif kind == "summary":
                    out.summaries.append((rec, sid))
                elif kind == "setup":
                    out.setups.append((rec, sid))
                else:
                    out.messages.append(rec)
    if report is not None:
        for bad in out.bad_lines:
            print(f"rangeprof: warning: {bad}", file=report)
    return out


def number(value):
    """A metric value as float (None and JSON null become NaN)."""
    return math.nan if value is None else float(value)
