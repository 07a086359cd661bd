"""The one install (pip install ., the wheel): versions agree, the native parts are where
rangeprof._native says, and the installed library needs nothing beyond the C library.

Run three ways: on the source checkout by the unit suite (the build tree's library and
launcher; the installed layout's tests skip, saying where they run); by the unit suite
again, from outside python/, on the copy that scripts/quickstart.sh installed into .venv
(python/run_tests.sh sets RANGEPROF_TEST_INSTALLED=1: not finding the installed layout
there fails); and by .ci/wheel on the wheel installed into a fresh environment."""
import filecmp
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import rangeprof
from rangeprof import _native

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(rangeprof.__file__).resolve().parent

# What librangeprof.so may need at run time: the C library's parts and the loader. The
# driver, CUPTI and NVML are dlopened when CUDA initialises it, never linked.
ALLOWED = {"linux-vdso.so.1", "libc.so.6", "libdl.so.2", "libm.so.6", "libpthread.so.0"}


def _wheel_layout():
    """The library of an installed wheel (rangeprof/_lib/); or skip on a source checkout,
    fail where the installed copy is asked for (RANGEPROF_TEST_INSTALLED)."""
    lib = _native.library_path()
    if lib is None or Path(lib).parent != PACKAGE / "_lib":
        where = f"rangeprof is not installed from a wheel here ({PACKAGE}; library {lib})"
        if os.environ.get("RANGEPROF_TEST_INSTALLED"):
            pytest.fail(f"{where}: run scripts/quickstart.sh (pip install . into .venv)")
        pytest.skip(f"{where}: the unit suite runs this again on .venv's installed copy, "
                    ".ci/wheel on the wheel")
    return Path(lib)


def _meson_version():
    text = (ROOT / "meson.build").read_text()
    return re.search(r"project\(\s*'rangeprof'.*?\bversion\s*:\s*'([^']+)'", text, re.S).group(1)


def test_versions_come_from_meson_build():
    if not (ROOT / "meson.build").is_file():
        pytest.skip("no source checkout here to read meson.build from")
    version = _meson_version()
    assert rangeprof.__version__ == version
    try:
        # The wheel's metadata: meson-python takes it from meson.build too.
        assert importlib.metadata.version("rangeprof") == version
    except importlib.metadata.PackageNotFoundError:
        pass  # a source checkout: no distribution installed
    launcher = _native.launcher_path()
    if launcher is None:
        pytest.skip("no launcher built or installed here")
    out = subprocess.run([launcher, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"rangeprof {version}"
    # The session record's "version" is the library's PROJECT_VERSION string.
    lib = _native.library_path()
    assert lib and b"\0" + version.encode() + b"\0" in Path(lib).read_bytes()


def test_installed_library_needs_only_the_c_library():
    lib = _wheel_layout()
    if not shutil.which("ldd"):
        pytest.skip("no ldd here")
    out = subprocess.run(["ldd", str(lib)], capture_output=True, text=True, check=True).stdout
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    extra = [n for n in names
             if n not in ALLOWED and not re.fullmatch(r"(/lib\w*/)?ld-linux[-\w.]*\.so\.\d", n)]
    assert not extra, f"librangeprof.so needs {extra}:\n{out}"


def test_the_wheel_holds_every_module_of_the_package():
    _wheel_layout()
    source = ROOT / "python" / "rangeprof"
    if not source.is_dir():
        pytest.skip("no source checkout here to compare with")
    missing = [p.name for p in source.glob("*.py") if not (PACKAGE / p.name).is_file()]
    assert not missing, f"not installed: {missing}"
    # _version.py and _layout.py are generated; every other module is installed as it is.
    stale = [p.name for p in source.glob("*.py") if p.name not in ("_version.py", "_layout.py")
             and not filecmp.cmp(p, PACKAGE / p.name, shallow=False)]
    assert not stale, (f"{PACKAGE} is older than {source} ({stale} differ): reinstall it "
                       "(scripts/quickstart.sh, or pip install . with that environment's pip)")
    # The installed version is the generated one, not the source checkout's reader.
    assert "_from_meson_build" not in (PACKAGE / "_version.py").read_text()
    for name in ("librangeprof.so", "rangeprof", "rangeprof-list-metrics"):
        assert (PACKAGE / "_lib" / name).is_file(), name


def test_the_wheel_installs_the_man_page():
    """python/README.md, the wheel's description, says `man rangeprof`: the page is in the
    environment's share/man/man1, where man-db looks for a bin directory on PATH."""
    _wheel_layout()
    page = Path(sys.prefix) / "share" / "man" / "man1" / "rangeprof.1"
    assert page.is_file(), f"no man page at {page}"
    source = ROOT / "doc" / "rangeprof.1"
    if source.is_file():
        assert page.read_bytes() == source.read_bytes()


def test_the_rangeprof_command_runs_the_packaged_launcher():
    _wheel_layout()
    command = shutil.which("rangeprof", path=sysconfig.get_path("scripts"))
    if command is None:
        pytest.skip("no rangeprof command beside this Python")
    out = subprocess.run([command, "-q", "-o", "/dev/null", "--", "sh", "-c",
                          'echo "$LD_PRELOAD"'], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(":")[0].strip() == _native.library_path()


def test_cupti_places_in_the_librarys_order(monkeypatch):
    monkeypatch.setenv("CUDA_HOME", "/opt/cuda")
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    places = _native.cupti_candidates("/usr/local/cuda/lib64")
    found = [f for f, _ in places]
    assert found[:5] == ["loaded", "CUDA_HOME", "CUDA_HOME", "toolkit", "toolkit"]
    assert found[-1] == "library_path"
    assert places[1][1] == "/opt/cuda/lib64"
    assert places[2][1] == "/opt/cuda/extras/CUPTI/lib64"
    assert places[4][1] == "/usr/local/cuda/extras/CUPTI/lib64"
    lib = _native.library_path()
    if lib and Path(lib).parent == PACKAGE / "_lib":
        # A wheel: NVIDIA's pip packages in the same site-packages.
        assert places[5] == ("pip", str(PACKAGE.parent / "nvidia" / "cu13" / "lib"))
    else:
        assert "pip" not in found
    monkeypatch.delenv("CUDA_HOME")
    assert _native.cupti_candidates()[1] == ("CUDA_HOME", "$CUDA_HOME (unset)")


def test_without_a_launcher_the_command_says_so(monkeypatch, capsys):
    monkeypatch.setattr(_native, "launcher_path", lambda: None)
    assert _native.launch(["--version"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rangeprof: error: the C launcher is not installed in ")
    assert err.count("\n") == 1
