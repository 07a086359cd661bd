"""rangeprof/_control.py - librangeprof.so's control API (doc/control-api.md, version 1)
through ctypes, and this process's one attachment to it. 'import rangeprof' calls
attach_at_import(): it uses the copy of the library already in the process (the launcher
or LD_PRELOAD put it there: /proc/self/maps says so), else loads the installed one
(rangeprof._native.library_path()) with RTLD_GLOBAL, pointing
RANGEPROF_OUTPUT at a file in a temporary directory first unless the user set it, and
calls rangeprof_attach(). The library reads its options from the environment once (at
cuInit, or at the first rangeprof_set_option, which attach() then makes), so the
RANGEPROF_OUTPUT chosen here is taken out of the environment again: child processes see
nothing of rangeprof's unless attach(children=True) asks for it. The temporary directory
is removed at exit when nothing was measured (_tidy_at_exit). Nothing here raises at import:
a missing library, one that
cannot be loaded or speaks another version, and a process where rangeprof cannot measure
(another CUPTI client) are remembered, and require() raises them, naming what is missing,
when something needs the library. Standard library only.

without_injection() is for the processes rangeprof starts (rangeprof-compare-ncu runs
ncu): the library's constructor points CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH at
itself in the process environment, which children would inherit."""
import atexit
import ctypes
import json
import os
import sys
import tempfile
import threading
import warnings

from rangeprof import records
from rangeprof.exceptions import NestedAnnotationError, RangeprofWarning, Unavailable

CONTROL_VERSION = 2
MAX_DEVICES = 64  # RANGEPROF_MAX_DEVICES: the device ordinals rangeprof_prepare takes
OK, EINVAL, ENESTED, ENOTOPEN, EUNAVAILABLE, ENOMEM = range(6)
CODE_NAMES = {OK: "RANGEPROF_OK", EINVAL: "RANGEPROF_EINVAL", ENESTED: "RANGEPROF_ENESTED",
              ENOTOPEN: "RANGEPROF_ENOTOPEN", EUNAVAILABLE: "RANGEPROF_EUNAVAILABLE",
              ENOMEM: "RANGEPROF_ENOMEM"}
LIBRARY_NAME = "librangeprof.so"
# The command-line tools import the package for its report code only: they never attach.
TOOLS = ("rangeprof", "rangeprof-report", "rangeprof-compare", "rangeprof-compare-ncu",
         "rangeprof-plot")
INJECTION_VARIABLES = ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")


def _ours(path):
    """Whether a path names a rangeprof library (librangeprof.so, librangeprof.so.1)."""
    base = os.path.basename(str(path).strip())
    return base == LIBRARY_NAME or base.startswith(LIBRARY_NAME + ".")


def loaded_library_path(maps="/proc/self/maps"):
    """The path of the librangeprof.so mapped into this process, or None."""
    try:
        with open(maps, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                if path.endswith(" (deleted)"):
                    path = path[:-len(" (deleted)")]
                if path.startswith("/") and _ours(path):
                    return path
    except OSError:
        pass
    return None


def without_injection(env=None):
    """A copy of env (default os.environ) for a child process that rangeprof must not
    measure: CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH are dropped where they name
    librangeprof.so, and librangeprof.so is taken out of LD_PRELOAD. Another tool's
    injection library (ncu's own) is left alone."""
    out = dict(os.environ if env is None else env)
    for name in INJECTION_VARIABLES:
        if name in out and _ours(out[name]):
            del out[name]
    if "LD_PRELOAD" in out:
        kept = [p for p in out["LD_PRELOAD"].replace(":", " ").split() if not _ours(p)]
        if kept:
            out["LD_PRELOAD"] = " ".join(kept)
        else:
            del out["LD_PRELOAD"]
    return out


class Library:
    """The control API of one loaded librangeprof.so. Methods return or raise as their
    documentation says; every message is the library's (rangeprof_last_error)."""

    def __init__(self, path, cdll=None):
        self.path = path
        self.cdll = cdll if cdll is not None else ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        version = getattr(self.cdll, "rangeprof_control_version", None)
        if version is None:
            raise Unavailable(f"{path} is not a rangeprof library with the control API: it "
                              "exports no rangeprof_control_version (a build older than "
                              f"control API version {CONTROL_VERSION}?)")
        version.restype, version.argtypes = ctypes.c_int, []
        self.version = int(version())
        if self.version < CONTROL_VERSION:
            raise Unavailable(f"{path} speaks control API version {self.version}; this "
                              f"rangeprof Python package needs version {CONTROL_VERSION}: "
                              "install the library and the package from the same release")
        c = self.cdll
        protos = {
            "rangeprof_attach": (ctypes.c_int, []),
            "rangeprof_info": (ctypes.c_void_p, []),
            "rangeprof_set_option": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p]),
            "rangeprof_annotation_begin": (ctypes.c_int, [ctypes.c_char_p]),
            "rangeprof_annotation_end": (ctypes.c_int, [ctypes.c_char_p]),
            "rangeprof_capture_begin": (ctypes.c_int, []),
            "rangeprof_capture_take": (ctypes.c_void_p, [ctypes.POINTER(ctypes.c_size_t)]),
            "rangeprof_capture_end": (None, []),
            "rangeprof_free": (None, [ctypes.c_void_p]),
            "rangeprof_last_error": (ctypes.c_char_p, []),
            "rangeprof_prepare": (ctypes.c_int, [ctypes.c_int]),
            "rangeprof_before_exit": (None, []),
        }
        for name, (restype, argtypes) in protos.items():
            fn = getattr(c, name, None)
            if fn is None:
                raise Unavailable(f"{path} says control API version {self.version} but lacks "
                                  f"{name}: not a rangeprof library this package can use")
            fn.restype, fn.argtypes = restype, argtypes

    @staticmethod
    def _text(value, what):
        if not isinstance(value, str):
            raise TypeError(f"{what} must be a str, not {type(value).__name__} ({value!r})")
        if "\0" in value:
            raise ValueError(f"{what} {value!r} holds a NUL character")
        return value.encode("utf-8", errors="surrogateescape")

    def last_error(self):
        msg = self.cdll.rangeprof_last_error()
        return msg.decode("utf-8", errors="replace") if msg else ""

    def _owned_text(self, pointer, length=None):
        if not pointer:
            return ""
        try:
            raw = ctypes.string_at(pointer) if length is None else ctypes.string_at(pointer, length)
        finally:
            self.cdll.rangeprof_free(pointer)
        return raw.decode("utf-8", errors="replace")

    def attach(self):
        """(code, message): OK, or EUNAVAILABLE with the reason."""
        rc = int(self.cdll.rangeprof_attach())
        return rc, (self.last_error() if rc else "")

    def info(self):
        text = self._owned_text(self.cdll.rangeprof_info())
        # The library's info object (doc/control-api.md), not a record: records.py's
        # rules do not apply to it.
        try:
            out = json.loads(text) if text else {}
        except ValueError:
            out = {}
        return out if isinstance(out, dict) else {}

    def set_option(self, name, value):
        """Sets one option; ValueError with the library's message where it refuses."""
        rc = int(self.cdll.rangeprof_set_option(self._text(name, "option name"),
                                                self._text(value, f"option {name}")))
        if rc == OK:
            return
        msg = self.last_error() or f"rangeprof_set_option('{name}', '{value}') failed"
        if rc == ENOMEM:
            raise MemoryError(msg)
        if rc == EUNAVAILABLE:
            raise Unavailable(msg)
        raise ValueError(msg)

    def annotation_begin(self, name):
        """OK, or EUNAVAILABLE (nothing is measured here); raises NestedAnnotationError
        when an annotation of this name is open, ValueError or MemoryError otherwise."""
        rc = int(self.cdll.rangeprof_annotation_begin(self._text(name, "annotation name")))
        if rc in (OK, EUNAVAILABLE):
            return rc
        msg = self.last_error() or f"annotation '{name}': {CODE_NAMES.get(rc, rc)}"
        if rc == ENESTED:
            raise NestedAnnotationError(msg)
        if rc == ENOMEM:
            raise MemoryError(msg)
        raise ValueError(msg)

    def annotation_end(self, name):
        """The code: OK, ENOTOPEN (not open) or another failure; never raises."""
        return int(self.cdll.rangeprof_annotation_end(self._text(name, "annotation name")))

    def capture_begin(self):
        rc = int(self.cdll.rangeprof_capture_begin())
        if rc == ENOMEM:
            raise MemoryError(self.last_error() or "rangeprof_capture_begin: out of memory")
        if rc != OK:
            raise RuntimeError(self.last_error() or f"rangeprof_capture_begin: {CODE_NAMES.get(rc, rc)}")

    def capture_take(self):
        """The JSON Lines text kept since the capture began or the last take ('' if none)."""
        length = ctypes.c_size_t(0)
        pointer = self.cdll.rangeprof_capture_take(ctypes.byref(length))
        return self._owned_text(pointer, length.value)

    def capture_end(self):
        self.cdll.rangeprof_capture_end()

    def prepare(self, device=-1):
        """(code, message) of rangeprof_prepare: OK (the set-up started, or needs
        nothing), EINVAL for a bad device, EUNAVAILABLE where nothing is measured."""
        rc = int(self.cdll.rangeprof_prepare(int(device)))
        return rc, (self.last_error() if rc else "")

    def before_exit(self):
        self.cdll.rangeprof_before_exit()


class Attachment:
    """This process's attachment: the library (None when none could be loaded, with the
    reason in problem) and, when rangeprof_attach said RANGEPROF_EUNAVAILABLE, why."""

    def __init__(self, library=None, path=None, how=None, problem=None):
        self.library, self.path, self.how, self.problem = library, path, how, problem
        self.unavailable = None
        self.output_set = None     # the RANGEPROF_OUTPUT this package chose, if it did
        self.children = False      # attach(children=True): child processes measured too

    def describe(self):
        if self.library is None:
            return self.problem
        return self.unavailable


_attachment = None
_lock = threading.RLock()
_warned = set()


def _warn_once(key, message):
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(message, RangeprofWarning, stacklevel=3)


def _find(library):
    """(path, how) of the library to use, or (None, why none)."""
    if library is not None:
        return os.fspath(library), "given"
    loaded = loaded_library_path()
    if loaded:
        return loaded, "loaded"
    try:
        from rangeprof import _native
    except ImportError:
        return None, (f"{LIBRARY_NAME} is not installed with this rangeprof package "
                      "(it has no rangeprof._native); install rangeprof with its library "
                      "(pip install . in its source tree, or its wheel; or meson install)")
    try:
        path = _native.library_path()
    except Exception as e:  # noqa: BLE001 - any failure there means no library
        return None, f"rangeprof._native.library_path() failed: {type(e).__name__}: {e}"
    if path and os.path.exists(path):
        return os.fspath(path), "installed"
    where = f" (rangeprof._native names '{path}', which does not exist)" if path else ""
    return None, (f"{LIBRARY_NAME} is not installed with this rangeprof package{where}; "
                  "install rangeprof with its library (pip install . in its source tree, or "
                  "meson install; in a source checkout, build it: meson compile -C build)")


def _default_output():
    """A per-process JSON Lines file in a fresh temporary directory, unless the user chose
    one: a notebook's working directory gets no rangeprof.<pid>.jsonl files. The directory
    is removed at exit if it is still empty (the library never wrote there)."""
    if os.environ.get("RANGEPROF_OUTPUT"):
        return None
    directory = tempfile.mkdtemp(prefix="rangeprof-")
    atexit.register(_tidy_at_exit, directory, os.getpid())
    return os.path.join(directory, "rangeprof.%p.jsonl")


# Records that say nothing was measured: written at CUDA's initialisation whatever follows.
BOOKKEEPING = frozenset({"session", "device", "setup"})


def _measured_nothing(path):
    """Whether a JSON Lines file holds only bookkeeping records. Each line is read by
    rangeprof.records.parse_line, the rule every reader applies: a line it refuses (or
    notes, as a newer schema), or a file that cannot be read, keeps the file, so that what
    rangeprof-report would call a bad line is there to be looked at, not deleted unseen."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    continue
                rec, why = records.parse_line(line)
                if rec is None or why is not None or rec.get("type") not in BOOKKEEPING:
                    return False
    except OSError:
        return False
    return True


def _tidy_at_exit(directory, pid):
    """The temporary directory this process chose goes at its exit, with its file where
    that holds no measurement (the session and device records the library writes at
    CUDA's initialisation), so that a process that measured nothing leaves nothing."""
    # Only the process that made it: a forked child exiting must not take the directory
    # from a parent that has not written yet.
    if os.getpid() != pid:
        return
    mine = os.path.join(directory, f"rangeprof.{pid}.jsonl")
    if os.path.exists(mine) and _measured_nothing(mine):
        try:
            os.unlink(mine)
        except OSError:
            pass
    try:
        os.rmdir(directory)
    except OSError:
        pass   # records are there (this process's or a child's), or it is gone


_driver = []


def cuda_driver_loadable():
    """Whether the NVIDIA driver's libcuda.so.1 can be loaded (as the CUDA runtime loads
    it): without it there is no GPU to measure."""
    if _driver:
        return _driver[0]
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    _driver.append(True)
    return True


def _read_options_now(lib):
    """Makes the library read its options from the environment now, so that what this
    package put there can be taken out again: any runtime option set to the value it has
    (the environment's, else the default) does that and changes nothing."""
    try:
        lib.set_option("cache-control", os.environ.get("RANGEPROF_CACHE_CONTROL") or "all")
    except (ValueError, MemoryError, Unavailable):
        pass   # a bad RANGEPROF_CACHE_CONTROL: the library says so itself, once


def attach(library=None, force=False):
    """This process's Attachment, made at the first call (or again with force, or with a
    library given). Loads and attaches as the module's docstring says; never raises for a
    missing or unusable library (the Attachment holds why). Where rangeprof_attach said
    RANGEPROF_EUNAVAILABLE, a later call tries again (another CUPTI client may be gone)."""
    global _attachment
    with _lock:
        a = _attachment
        if a is not None and not force and library is None:
            if a.library is not None and a.unavailable is not None:
                _call_attach(a)
            return a
        path, how = _find(library)
        if path is None:
            _attachment = Attachment(problem=how)
            return _attachment
        output = None if how == "loaded" else _default_output()
        if output is not None:
            os.environ["RANGEPROF_OUTPUT"] = output
        try:
            try:
                lib = Library(path)
            except Unavailable as e:
                _attachment = Attachment(path=path, how=how, problem=str(e))
                return _attachment
            except OSError as e:
                _attachment = Attachment(path=path, how=how,
                                         problem=f"cannot load {path}: {e}")
                return _attachment
            a = Attachment(lib, path, how)
            a.output_set = output
            if lib.version > CONTROL_VERSION:
                _warn_once(("version", path), f"rangeprof: {path} speaks control API "
                           f"version {lib.version}; this package knows version "
                           f"{CONTROL_VERSION} and uses only its functions")
            _call_attach(a)
            if output is not None:
                _read_options_now(lib)
        finally:
            # Read by the library by now: children do not inherit it.
            if output is not None and os.environ.get("RANGEPROF_OUTPUT") == output:
                del os.environ["RANGEPROF_OUTPUT"]
        _attachment = a
        return a


def measure_children(a):
    """attach(children=True): child processes started from now on load the library through
    CUDA's injection hook and measure as under the launcher (their options from the
    environment, records in a file of their own beside this process's). The library is
    asked through its runtime option 'children'; one without it gets the variables put in
    this process's environment, which children inherit."""
    if a.library is None:
        raise Unavailable(f"rangeprof cannot measure in this process: {a.problem}")
    try:
        a.library.set_option("children", "true")
    except ValueError:
        path = os.path.realpath(a.path)
        os.environ["CUDA_INJECTION64_PATH"] = path
        os.environ["NVTX_INJECTION64_PATH"] = path
        if a.output_set is not None:
            os.environ["RANGEPROF_OUTPUT"] = a.output_set
    a.children = True


_exit_wait = []


def _before_exit(library, pid):
    """At the interpreter's exit, before the C library's and the CUDA runtime's own
    handlers: a set-up rangeprof_prepare started and that still runs is waited for (at most
    a few seconds), since one running on into CUDA's teardown could crash there. Only in
    the process that asked: a forked child has no such thread."""
    if os.getpid() == pid:
        library.before_exit()


def interactive():
    """Whether this is an interactive session: a Jupyter or IPython kernel, or the Python
    REPL, where the cell that defines a function runs well before the one that calls it,
    and where a program does not set CUDA_VISIBLE_DEVICES or fork after its definitions
    as a script's main() may."""
    if hasattr(sys, "ps1") or sys.flags.interactive:
        return True
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    try:
        return get is not None and get() is not None
    except Exception:  # noqa: BLE001 - an IPython that cannot answer is no session here
        return False


def prepare(device=-1):
    """(code, message) of rangeprof_prepare (doc/control-api.md): the set-up of a device
    started ahead of its first measurement, on a thread of the library's. Uses this
    process's attachment as it is: (EUNAVAILABLE, why) where there is no library or it
    measures nothing. The first time, registers the exit handler that waits for the
    set-up before CUDA's own handlers run."""
    a = _attachment
    if a is None or a.library is None:
        return EUNAVAILABLE, (a.problem if a is not None else "rangeprof is not attached")
    if a.unavailable is not None:
        return EUNAVAILABLE, a.unavailable
    with _lock:
        if not _exit_wait:
            atexit.register(_before_exit, a.library, os.getpid())
            _exit_wait.append(a.library)
    return a.library.prepare(device)


def _call_attach(a):
    rc, msg = a.library.attach()
    if rc == OK:
        a.unavailable = None
        return
    a.unavailable = msg or f"rangeprof_attach: {CODE_NAMES.get(rc, rc)}"
    _warn_once(("unavailable", a.unavailable), "rangeprof measures nothing in this process: "
               f"{a.unavailable}. The program runs on unmeasured; rangeprof.annotate does "
               "nothing and rangeprof.analyze.kernel raises until this changes.")


def should_attach_at_import():
    """False for the command-line tools (rangeprof-report, ...: they read files and must
    not load the library)."""
    argv = getattr(sys, "argv", None) or [""]
    if os.path.basename(str(argv[0])) in TOOLS:
        return False
    orig = list(getattr(sys, "orig_argv", None) or [])
    if "-m" in orig[:-1]:
        module = orig[orig.index("-m") + 1]
        if module == "rangeprof" or module.startswith("rangeprof."):
            return False
    return True


def attach_at_import():
    """What 'import rangeprof' does; never raises."""
    try:
        if should_attach_at_import():
            attach()
    except Exception as e:  # noqa: BLE001 - the report tools must import whatever happens
        global _attachment
        with _lock:
            if _attachment is None:
                _attachment = Attachment(problem=f"attaching failed: {type(e).__name__}: {e}")


def current():
    """The Attachment made so far, or None (never loads anything)."""
    return _attachment


def require():
    """The Library, attaching now if import did not; Unavailable naming what is missing
    when there is none or it measures nothing in this process."""
    a = attach()
    if a.library is None:
        raise Unavailable(f"rangeprof cannot measure in this process: {a.problem}")
    if a.unavailable is not None:
        raise Unavailable(f"rangeprof measures nothing in this process: {a.unavailable}")
    return a.library


def info():
    """rangeprof_info() as a dict, with the library's path and how it was found
    ('loaded': already in the process; 'installed'; 'given'), or
    attached False and the problem when there is no library."""
    a = attach()
    if a.library is None:
        return {"attached": False, "measuring": False, "reason": a.problem, "library": a.path}
    out = a.library.info()
    out["library"], out["found"] = a.path, a.how
    # Asked here, or by the environment's option (RANGEPROF_CHILDREN, doc/control-api.md).
    out.setdefault("children", a.children or os.environ.get("RANGEPROF_CHILDREN", "").lower()
                   in ("1", "true", "yes"))
    if not out.get("output") and a.output_set is not None:
        # What this package chose and the library read (a library that keeps the path
        # to itself until it writes says null).
        out["output"] = a.output_set.replace("%p", str(os.getpid()))
    if a.unavailable is not None:
        out["measuring"] = False
        out.setdefault("reason", a.unavailable)
        out["reason"] = out["reason"] or a.unavailable
    elif out.get("measuring", True) and not cuda_driver_loadable():
        out["measuring"] = False
        out["reason"] = ("no NVIDIA driver: libcuda.so.1 cannot be loaded, so there is no "
                         "GPU to measure")
    return out


def _forget_for_tests():
    """Drops the attachment (the loaded library stays in the process), so that the next
    attach() finds and attaches again; tests only."""
    global _attachment
    with _lock:
        _attachment = None
        _warned.clear()
