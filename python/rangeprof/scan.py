"""rangeprof/scan.py - runs a job over the records of files of any size: big files are cut
into pieces at line starts and the pieces read by several processes at once (one per
core, at most 8), each job holding only what it aggregates; the parent merges the
pieces' results in input order, so that the outcome is the one of reading the files in
one go. Progress goes to stderr once reading takes more than a few seconds.
Standard library only.

A piece that starts inside a file needs the session and device records in force there:
the last session line before it and the device lines after that one, found by searching
the bytes for ':"session"' and ':"device"' (with or without one space after the colon,
as JSON writers put them) and parsing the lines found. A session or device record
whose type is spelled with escapes ("se\\u0073sion") is missed by that search: such a
file is read correctly only when it is small enough to be read whole (under
PIECE_BYTES per core), which every file rangeprof writes is not concerned by."""
import gc
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from rangeprof import output, records

PIECE_BYTES = 32 << 20   # files over this per core are read in pieces
PROGRESS_AFTER_S = 3.0   # progress lines once reading has taken this long
PROGRESS_EVERY_S = 5.0
_CHUNK = 1 << 24


class Piece:
    """Bytes start to end (None: the file's end) of path; a piece that starts inside the
    file has its context and first line number looked up by the process reading it."""

    def __init__(self, path, start=0, end=None):
        self.path, self.start, self.end = path, start, end


def _line_start_after(f, pos):
    """The first line start at or after pos."""
    if pos <= 0:
        return 0
    f.seek(pos - 1)
    f.readline()
    return f.tell()


def _line_around(f, pos):
    """(start, bytes) of the line holding byte pos."""
    start = pos
    while start > 0:
        lo = max(0, start - 65536)
        f.seek(lo)
        block = f.read(start - lo)
        i = block.rfind(b"\n")
        if i >= 0:
            start = lo + i + 1
            break
        start = lo
    f.seek(start)
    return start, f.readline()


_SESSION = (b':"session"', b': "session"')
_DEVICE = (b':"device"', b': "device"')


def _find_all(f, patterns, lo, hi):
    """Positions of the patterns in bytes lo..hi of f, ascending."""
    out, pos = [], lo
    longest = max(len(p) for p in patterns)
    while pos < hi:
        f.seek(pos)
        block = f.read(min(_CHUNK, hi - pos) + longest - 1)
        for p in patterns:
            i = block.find(p)
            while i >= 0 and pos + i < hi:
                out.append(pos + i)
                i = block.find(p, i + 1)
        pos += _CHUNK
    return sorted(set(out))


def _typed_line(f, at, kind):
    """(line start, record or None, problem) when the line holding byte at is a record of
    that kind (usable or not), else None."""
    start, raw = _line_around(f, at)
    rec, problem = records.parse_line(raw.decode("utf-8", "replace"))
    if isinstance(rec, dict) and rec.get("type") == kind:
        return start, rec, problem
    return None


def context_at(path, offset):
    """(records.Sessions in force at byte offset of path, as Reader.records would have
    them there reading from the start; the line number of offset). The session and
    device lines before offset are found by a search of the bytes and replayed in order
    (every process's: lines of several may interleave)."""
    sessions = records.Sessions()
    with open(path, "rb") as f:
        lines = 0
        pos = 0
        while pos < offset:
            f.seek(pos)
            lines += f.read(min(_CHUNK, offset - pos)).count(b"\n")
            pos += _CHUNK
        found = [(at, "session") for at in _find_all(f, _SESSION, 0, offset)] + \
            [(at, "device") for at in _find_all(f, _DEVICE, 0, offset)]
        seen = set()
        for at, kind in sorted(found):
            typed = _typed_line(f, at, kind)
            if not typed or typed[0] in seen:
                continue
            start, rec, problem = typed
            seen.add(start)
            if kind == "session":
                sessions.session_line(rec, problem is None)
            elif problem is None:
                sessions.device_line(rec)
    return sessions, lines + 1


def pieces(files, workers=None, at_sessions=False):
    """The files as pieces, for workers processes (default: the cores, at most 8). With
    at_sessions, a file is cut only where a session record starts (for jobs whose state
    spans the lines of a session, such as --combine), so that a file of one session is
    one piece."""
    workers = workers or min(os.cpu_count() or 1, 8)
    out = []
    for path in files:
        try:
            size = os.path.getsize(path)
        except OSError:
            size = 0
        n = min(workers, size // PIECE_BYTES) if workers > 1 else 1
        if n <= 1 or records.is_gzip(path):  # (a gzip stream is read from its start)
            out.append(Piece(path))
            continue
        cuts = []
        try:
            f = open(path, "rb")
        except OSError:  # one piece: its reader says why it cannot be read
            out.append(Piece(path))
            continue
        with f:
            for i in range(1, n):
                target = size * i // n
                if at_sessions:
                    at = next((p for p in _find_all(f, _SESSION, target, size)
                               if _typed_line(f, p, "session")), None)
                    cut = _line_around(f, at)[0] if at is not None else size
                else:
                    cut = _line_start_after(f, target)
                if cuts and cut <= cuts[-1] or cut >= size:
                    continue
                cuts.append(cut)
        bounds = [0] + cuts + [None]
        out += [Piece(path, bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    return out


class Progress(output.Progress):
    """'rangeprof-report: 41 % of 1.8 GB read in 12 s' on stderr every few seconds once
    reading has taken more than PROGRESS_AFTER_S, and the total at the end if any was
    said (output.Progress's rule)."""
    AFTER_S = PROGRESS_AFTER_S
    EVERY_S = PROGRESS_EVERY_S

    def line(self, pct, seconds):
        return f"{self.label}: {pct:.0f} % of {_size(self.total)} read in {seconds:.0f} s"

    def end(self, seconds):
        return f"{self.label}: {_size(self.total)} read in {seconds:.0f} s"


def _size(n):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


_shared_done = None


def _init_worker(done):
    global _shared_done
    _shared_done = done


def _read_piece(job, piece, index):
    """Runs job over one piece in a worker: (job, bad lines, bad count, notes)."""
    gc.disable()  # see run()
    def progress(done):
        _shared_done[index] = done
    reader = records.Reader(progress=progress if _shared_done is not None else None,
                            unread=getattr(job, "unread", ()))
    context, first = (None, 1) if not piece.start else context_at(piece.path, piece.start)
    job.consume(reader, reader.records(piece.path, piece.start, piece.end, first, context))
    return job, reader.bad_lines, reader.bad_count, reader.notes


def run(job_factory, files, label, workers=None, at_sessions=False, bad_out="stderr"):
    """job_factory() -> a job with consume(reader, stream) and merge(other), and optionally
    unread (record types it has no use for, see records.Reader); runs one job per
    piece of the files (in worker processes where there are several pieces), merges them
    in input order and returns (job, reader) where reader holds the bad lines, which are
    printed on bad_out ("stderr": sys.stderr at the time of the call; None: not
    printed)."""
    # The records make no reference cycles: the cyclic collector would only walk the
    # growing aggregates again and again (a fifth of the time on big files).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(job_factory, files, label, workers, at_sessions, bad_out)
    finally:
        if enabled:
            gc.enable()


def _run(job_factory, files, label, workers, at_sessions, bad_out):
    todo = pieces(files, workers, at_sessions)
    total = sum(os.path.getsize(p.path) for p in todo if p.start == 0 and os.path.exists(p.path))
    progress = Progress(label, total)
    reader = records.Reader()
    reader.files = list(files)
    if len(todo) == len(files):  # nothing cut: read here, in order
        job = job_factory()
        reader.unread = records.Reader(unread=getattr(job, "unread", ())).unread
        done_before = [0]

        def tick(done):
            progress.update(done_before[0] + done)
        reader.progress = tick
        for piece in todo:
            job.consume(reader, reader.records(piece.path))
            try:
                done_before[0] += os.path.getsize(piece.path)
            except OSError:
                pass
    else:
        job = _run_pieces(job_factory, todo, progress, reader)
    progress.finish()
    if bad_out is not None:
        reader.report_bad(None if bad_out == "stderr" else bad_out)
    return job, reader


def _run_pieces(job_factory, todo, progress, reader):
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    done = ctx.Array("q", len(todo), lock=False)
    workers = min(len(todo), min(os.cpu_count() or 1, 8))
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker,
                             initargs=(done,)) as pool:
        futures = [pool.submit(_read_piece, job_factory(), p, i) for i, p in enumerate(todo)]
        while not all(f.done() for f in futures):
            time.sleep(0.2)
            progress.update(sum(done))
        job = None
        for f in futures:
            part, bad, count, notes = f.result()
            reader.notes += notes
            if job is None:
                job = part
            else:
                job.merge(part)
            reader.bad_lines += bad[:max(0, records.MAX_KEPT_BAD_LINES - len(reader.bad_lines))]
            reader.bad_count += count
    return job
