"""The SGLang test double as a Python distribution named ``sglang``.

One home for what ``install.py`` (copies the package into a venv, as 0.5.9)
and ``build_wheels.py`` (writes ``sglang-<version>-py3-none-any.whl`` files
that pip installs) share: the package's files for a version, the dist-info
files, RECORD rows with their hashes. Standard library only (Python 3.8+).
"""

import base64
import hashlib
import importlib.machinery
import importlib.util
import os
import re
from typing import Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_SRC = os.path.join(HERE, "sglang")
VERSION_SRC = os.path.join(PACKAGE_SRC, "version.py")
_VERSION_LINE = re.compile(r'^__version__ = "[^"\n]*"$', re.MULTILINE)


def version_module():
    """``sglang/version.py`` of this source tree, loaded by path (never an installed sglang)."""
    loader = importlib.machinery.SourceFileLoader("inferops_sglang_double_version", VERSION_SRC)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def source_version() -> str:
    """The version the source tree plays (``__version__`` of ``sglang/version.py``)."""
    return version_module().__version__


def package_files(version: str = "") -> List[Tuple[str, bytes]]:
    """The package's files as ``[("sglang/<path>", bytes), ...]``, sorted by path.

    Without ``version``: as in the source tree. With it: ``sglang/version.py``
    says ``__version__ = "<version>"`` (ValueError for a version the double
    cannot play, see ``sglang.version.release``), and the modules that version
    no longer has (``sglang.version.DROPPED_MODULES``) are left out, those it
    has elsewhere (``sglang.version.MOVED_MODULES``) are under their new path. Byte-code and __pycache__ are
    left out.
    """
    if version:
        version_module().release(version)
    files = []
    for dirpath, dirnames, filenames in os.walk(PACKAGE_SRC):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            src = os.path.join(dirpath, name)
            with open(src, "rb") as f:
                data = f.read()
            if version and src == VERSION_SRC:
                text, count = _VERSION_LINE.subn('__version__ = "%s"' % version, data.decode("utf-8"))
                if count != 1:
                    raise ValueError("%s must hold exactly one line __version__ = \"...\"" % VERSION_SRC)
                data = text.encode("utf-8")
            files.append(("sglang/" + os.path.relpath(src, PACKAGE_SRC).replace(os.sep, "/"), data))
    if version:
        # A build leaves out the modules its version no longer has (sglang.version.DROPPED_MODULES).
        versions = version_module()
        gone = set(path for path, since in versions.DROPPED_MODULES.items()
                   if versions.release(version) >= versions.release(since))
        files = [(path, data) for path, data in files if path not in gone]
        # ... and has the modules that moved (sglang.version.MOVED_MODULES) under their new path.
        moved = dict((path, new) for path, (new, since) in versions.MOVED_MODULES.items()
                     if versions.release(version) >= versions.release(since))
        files = [(moved.get(path, path), data) for path, data in files]
    return sorted(files)


def dist_info_name(version: str) -> str:
    return "sglang-%s.dist-info" % version


# The ninja stand-in: SGLang's schedulers run ``ninja --version`` (real SGLang depends on the ``ninja`` package,
# whose wheel puts the binary into the venv's bin/). install.py writes it into <venv>/bin; build_wheels.py wraps
# it in a ninja wheel that the sglang wheels require.
NINJA_STUB = """#!/bin/sh
# ninja stand-in installed by the inferops SGLang test double.
case "$1" in
  --version) echo "1.11.1"; exit 0 ;;
  -h|--help) echo "usage: ninja [options] [targets...]"; exit 1 ;;
  *) echo "ninja: no work to do."; exit 0 ;;
esac
"""


def dist_info_files(version: str, requires: Tuple[str, ...] = ()) -> Dict[str, str]:
    """METADATA (with a ``Requires-Dist`` line per entry of ``requires``), WHEEL, entry_points.txt (console script
    ``sglang``) and top_level.txt."""
    return {
        "METADATA": (
            "Metadata-Version: 2.1\n"
            "Name: sglang\n"
            "Version: %s\n"
            "Summary: SGLang test double (inferops.sglang): impersonates the SGLang %s server.\n"
            "License: Apache-2.0\n"
            "Requires-Python: >=3.8\n" % (version, version)
            + "".join("Requires-Dist: %s\n" % name for name in requires)
        ),
        "entry_points.txt": "[console_scripts]\nsglang = sglang.cli:main\n",
        "top_level.txt": "sglang\n",
        "WHEEL": "Wheel-Version: 1.0\nGenerator: inferops-sglang-double\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }


def record_hash(data: bytes) -> str:
    """``sha256=<urlsafe base64, no padding>`` as RECORD files hold it."""
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def record_text(files: List[Tuple[str, bytes]], record_path: str) -> str:
    """RECORD: one ``path,sha256=...,size`` row per file, then ``<record_path>,,``."""
    rows = ["%s,%s,%d" % (path, record_hash(data), len(data)) for path, data in files]
    rows.append("%s,," % record_path)
    return "\n".join(rows) + "\n"
