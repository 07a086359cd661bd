"""rangeprof's version, from its one place: meson.build's project(version:). An installed
package has this file generated from there (python/meson.build, python/_version.py.in:
'meson install', pip install ., the wheel, whose metadata meson-python reads from the same
place); in a source checkout this file reads meson.build itself."""
import re
from pathlib import Path


def _from_meson_build():
    try:
        text = (Path(__file__).resolve().parents[2] / "meson.build").read_text()
    except OSError:
        return "0+unknown"
    m = re.search(r"project\(\s*'rangeprof'.*?\bversion\s*:\s*'([^']+)'", text, re.S)
    return m.group(1) if m else "0+unknown"


__version__ = _from_meson_build()
