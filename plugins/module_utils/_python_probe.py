# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The interpreter probe: a small program run in the Python that will run the SGLang server, and the
reading of what it prints.

It imports neither sglang nor torch; it reports the interpreter's version, prefixes, site-packages,
which sitecustomize it really imported at startup, and the installed SGLang version from the package
metadata.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

# The interpreter probe: run as `<python> -c PYTHON_PROBE` in the interpreter that will run the
# server. It imports neither sglang nor torch; it reports which sitecustomize the interpreter really
# imported at startup. Written for any Python 3 (no f-strings beyond 3.6 syntax, no walrus).
PROBE_MARKER = '@@inferops_sglang_probe@@'
PYTHON_PROBE = r'''
import json, os, sys
r = {}
try:
    import sysconfig
    r["version"] = "%d.%d.%d" % tuple(sys.version_info[:3])
    r["prefix"] = sys.prefix
    r["base_prefix"] = getattr(sys, "base_prefix", getattr(sys, "real_prefix", sys.prefix))
    r["sys_executable"] = sys.executable
    sp = []
    try:
        import site
        sp.extend(site.getsitepackages())
    except Exception:
        pass
    for k in ("purelib", "platlib"):
        try:
            sp.append(sysconfig.get_paths()[k])
        except Exception:
            pass
    seen = []
    for p in sp:
        if p not in seen:
            seen.append(p)
    r["site_packages"] = seen
    m = sys.modules.get("sitecustomize")
    r["sitecustomize_imported"] = m is not None
    r["sitecustomize_path"] = getattr(m, "__file__", None) if m is not None else None
    r["stdlib"] = sysconfig.get_paths()["stdlib"]
    v = None
    try:
        from importlib import metadata as md
    except ImportError:
        md = None
    if md is not None:
        try:
            v = md.version("sglang")
        except Exception:
            v = None
    else:
        import glob
        for d in seen:
            for meta in sorted(glob.glob(os.path.join(d, "sglang-*.dist-info", "METADATA"))):
                with open(meta) as f:
                    for line in f:
                        if line.startswith("Version:"):
                            v = line.split(":", 1)[1].strip()
                            break
                if v:
                    break
            if v:
                break
    r["sglang_version"] = v
except Exception as e:
    r["error"] = "%s: %s" % (type(e).__name__, e)
sys.stdout.write("\n" + "@@inferops_sglang_probe@@" + json.dumps(r) + "\n")
'''


def parse_python_probe(stdout):
    """The dict PYTHON_PROBE printed (its last marked line), or None."""
    found = None
    for line in (stdout or '').splitlines():
        if line.startswith(PROBE_MARKER):
            try:
                found = json.loads(line[len(PROBE_MARKER):])
            except ValueError:
                found = None
    return found if isinstance(found, dict) else None


def sitecustomize_error(stderr):
    """The 'Error in sitecustomize' report site.py writes to stderr when sitecustomize raises,
    with the exception line that follows it; None when there is none."""
    lines = (stderr or '').splitlines()
    for i, line in enumerate(lines):
        if 'Error in sitecustomize' in line:
            rest = [x.strip() for x in lines[i + 1:] if x.strip()]
            return line.strip() + ((' ' + rest[-1]) if rest else '')
    return None
