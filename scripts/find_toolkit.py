"""scripts/find_toolkit.py [GIVEN [SOURCE_ROOT]] - where the build takes the CUDA headers
from (cuda.h, cupti*.h, nvtx3/): the root named by -Dtoolkit when given, else the first of
$CUDA_HOME, /usr/local/cuda, and NVIDIA's pip packages (nvidia-cuda-runtime,
nvidia-cuda-crt, nvidia-cuda-cupti, nvidia-nvtx: <site-packages>/nvidia/cu13) in the
site-packages of the Python running the build, of its environment (pip's isolated build
hides that one from sys.path) or of the active virtual environment. Run
by meson.build at configure time; only headers are needed to build, the libraries are
loaded at run time (collector/api.c).

Prints three lines: the root, what it is, and its include directories joined by ':'
(relative to SOURCE_ROOT when inside it, as meson wants them); on failure one line on
stderr naming every place looked in and how to get the headers, and exits 1."""
import glob
import os
import sys
import sysconfig

# What the build includes; every one must be found under the root's include directories.
NEEDED = ("cuda.h", "crt/host_defines.h", "cupti.h", "cupti_range_profiler.h",
          "nvtx3/nvToolsExt.h")
PIP_HINT = ("pip install nvidia-cuda-runtime nvidia-cuda-crt nvidia-cuda-cupti nvidia-nvtx, "
            "then pip install . with that environment's pip, or pass "
            "-Csetup-args=-Dtoolkit=<site-packages>/nvidia/cu13")


def include_dirs(root):
    """The include directories of a toolkit root that hold every needed header, or None.
    CUPTI's headers sit in extras/CUPTI/include in some toolkits."""
    dirs = [d for d in (os.path.join(root, "include"),
                        os.path.join(root, "extras", "CUPTI", "include")) if os.path.isdir(d)]
    if all(any(os.path.isfile(os.path.join(d, h)) for d in dirs) for h in NEEDED):
        return dirs
    return None


def pip_roots():
    """nvidia/cu13 in this Python's site-packages, then in its environment's (pip runs an
    isolated build with the installing environment's interpreter, venv/bin/pip's too, but
    takes that environment's site-packages off sys.path), then in $VIRTUAL_ENV's."""
    seen = []
    for entry in sys.path:
        seen.append(os.path.join(entry or ".", "nvidia", "cu13"))
    own = sysconfig.get_paths(vars={"base": sys.prefix, "platbase": sys.prefix})
    seen += [os.path.join(own[key], "nvidia", "cu13") for key in ("purelib", "platlib")]
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:
        seen += sorted(glob.glob(os.path.join(venv, "lib", "python3*", "site-packages",
                                              "nvidia", "cu13")))
    out = []
    for root in seen:
        root = os.path.abspath(root)
        if root not in out:
            out.append(root)
    return out


def _for_meson(path, source_root):
    """meson takes a directory inside the source tree (a .venv there) only relative."""
    path = os.path.abspath(path)
    if source_root:
        rel = os.path.relpath(path, os.path.abspath(source_root))
        if rel != ".." and not rel.startswith(".." + os.sep):
            return rel
    return path


def main(argv):
    given = argv[1] if len(argv) > 1 else ""
    source_root = argv[2] if len(argv) > 2 else ""
    if given:
        candidates = [(given, "-Dtoolkit")]
    else:
        home = os.environ.get("CUDA_HOME")
        candidates = ([(home, "CUDA_HOME")] if home else []) + [("/usr/local/cuda", "toolkit")]
        candidates += [(root, "pip packages") for root in pip_roots()]
    for root, what in candidates:
        dirs = include_dirs(root)
        if dirs:
            print(os.path.abspath(root))
            print(what)
            print(":".join(_for_meson(d, source_root) for d in dirs))
            return 0
    looked = ", ".join(f"{root} ({what})" for root, what in candidates
                       if what != "pip packages" or os.path.isdir(root))
    if not given:
        looked += ", nvidia/cu13 in the site-packages of this Python and its environment" + (
            " and $VIRTUAL_ENV's" if os.environ.get("VIRTUAL_ENV") else "")
    print(f"no CUDA headers ({', '.join(NEEDED)}): looked in {looked}. Install the CUDA 13 "
          f"toolkit with CUPTI, set CUDA_HOME or -Dtoolkit, or {PIP_HINT}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
