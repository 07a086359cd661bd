"""The build backend of pyproject.toml: meson-python, with one correction to the wheel's
tags. meson-python takes every file in site-packages (platlib) for a Python extension
module and so tags the wheel for one interpreter (cp311-cp311-linux_x86_64). rangeprof's
native files are a preloaded library and two programs that never link against Python, so
the wheel is py3-none-linux_x86_64: one wheel for every Python 3 on x86_64 Linux (the
H200's 3.12 included). meson-python has no setting for this (its issue #639); this is the
one property it asks. The meson-python version is pinned in pyproject.toml, and the
check below fails the build if that property is gone, rather than tag wrongly."""
import mesonpy
from mesonpy import *  # noqa: F401,F403  (the PEP 517 hooks)

if not isinstance(getattr(mesonpy._WheelBuilder, "_has_extension_modules", None), property):
    raise RuntimeError("rangeprof_backend: meson-python's _WheelBuilder no longer has "
                       "_has_extension_modules; check the wheel's tags and update "
                       "python/backend/rangeprof_backend.py")
mesonpy._WheelBuilder._has_extension_modules = property(lambda self: False)
