"""Where rangeprof's native parts are: librangeprof.so (the library preloaded into CUDA
programs), the C launcher, and the places the library looks for CUPTI.

Installed (pip install ., the wheel) they are in this package's _lib/; after 'meson install'
in the prefix's libdir and bindir (the generated _layout.py says which); in a source
checkout, the build directory <repo>/build. No environment variable changes this: the
options of rangeprof live in one table (common/options.c).

The `rangeprof` command of a pip install is launch(), which runs the C launcher."""
import os
import sys
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_LIBRARY = "librangeprof.so"
_LAUNCHER = "rangeprof"


def _installed_dirs():
    """(library directory, launcher directory) of an installed package, or None."""
    try:
        from rangeprof import _layout
    except ImportError:
        return None
    return (_PACKAGE / _layout.LIB_DIR).resolve(), (_PACKAGE / _layout.BIN_DIR).resolve()


def _source_build():
    """<repo>/build of a source checkout (python/rangeprof is two levels down), or None."""
    root = _PACKAGE.parents[1]
    if (root / "meson.build").is_file():
        return root / "build"
    return None


def _first_file(paths):
    for path in paths:
        if path.is_file():
            return str(path)
    return None


def library_path():
    """Absolute path of the librangeprof.so to load: the installed one, else (a source
    checkout) <repo>/build/inject/librangeprof.so; None when there is none."""
    candidates = []
    installed = _installed_dirs()
    if installed:
        candidates.append(installed[0] / _LIBRARY)
    build = _source_build()
    if build:
        candidates.append(build / "inject" / _LIBRARY)
    return _first_file(candidates)


def launcher_path():
    """Absolute path of the C launcher (the `rangeprof` of 'meson install'), the installed
    one, else <repo>/build/scripts/rangeprof; None when there is none."""
    candidates = []
    installed = _installed_dirs()
    if installed:
        candidates.append(installed[1] / _LAUNCHER)
    build = _source_build()
    if build:
        candidates.append(build / "scripts" / _LAUNCHER)
    return _first_file(candidates)


def cupti_candidates(toolkit_lib_dir="/usr/local/cuda/lib64"):
    """Where librangeprof.so looks for CUPTI (libcupti.so.13), in its order
    (collector/api.c, collector_api_places): a list of (found, place) pairs, found being
    the name the session record's "cupti" member gives ("loaded", "CUDA_HOME", "toolkit",
    "pip", "library_path") and place a directory, or a description for the places that
    are not one."""
    places = [("loaded", "a libcupti.so.13 already loaded in the process (PyTorch's)")]
    home = os.environ.get("CUDA_HOME")
    if home:
        places += [("CUDA_HOME", os.path.join(home, "lib64")),
                   ("CUDA_HOME", os.path.join(home, "extras", "CUPTI", "lib64"))]
    else:
        places.append(("CUDA_HOME", "$CUDA_HOME (unset)"))
    places += [("toolkit", toolkit_lib_dir),
               ("toolkit", os.path.join(os.path.dirname(toolkit_lib_dir), "extras", "CUPTI",
                                        "lib64"))]
    lib = library_path()
    if lib:
        lib_dir = Path(lib).parent
        if lib_dir.name == "_lib" and lib_dir.parent.name == "rangeprof":
            places.append(("pip", str(lib_dir.parents[1] / "nvidia" / "cu13" / "lib")))
    ld = os.environ.get("LD_LIBRARY_PATH")
    places.append(("library_path", "the library path (LD_LIBRARY_PATH" +
                   (f"={ld}" if ld else " unset") + ", then ld.so.cache)"))
    return places


def launch(argv=None):
    """The `rangeprof` command of a pip install: runs the C launcher with these arguments
    (it preloads the library next to it and execs the application, which keeps this
    process's pid)."""
    argv = sys.argv[1:] if argv is None else argv
    launcher = launcher_path()
    if launcher is None:
        print(f"rangeprof: error: the C launcher is not installed in {_PACKAGE} "
              "(reinstall: pip install . in rangeprof's source tree, or its wheel)",
              file=sys.stderr)
        return 2
    try:
        os.execv(launcher, [launcher] + list(argv))
    except OSError as e:
        print(f"rangeprof: error: cannot run {launcher}: {e.strerror}", file=sys.stderr)
        return 126
