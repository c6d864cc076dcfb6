# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The interpreter probe: a small program run in the Python that will run the SGLang server, and the
reading of what it prints.

It imports neither sglang nor torch; it reports the interpreter's version, prefixes, site-packages,
which sitecustomize it really imported at startup, the installed SGLang and torch versions from the package
metadata, and the text of torch's ``torch/version.py`` (which :func:`torch_cuda_version` reads).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import json
import re

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
    r["sys_path"] = list(sys.path)
    try:
        r["purelib"] = sysconfig.get_paths()["purelib"]
        r["platlib"] = sysconfig.get_paths()["platlib"]
    except Exception:
        pass
    m = sys.modules.get("sitecustomize")
    r["sitecustomize_imported"] = m is not None
    r["sitecustomize_path"] = getattr(m, "__file__", None) if m is not None else None
    if m is None:
        # site.py drops a sitecustomize that raised: find the file it tried (the first on sys.path, as the import
        # does; the '' entry of -c comes after site ran) and compile it - never run it - for a syntax error's line
        for d in sys.path:
            c = os.path.join(d, "sitecustomize.py") if d else None
            if c and os.path.isfile(c):
                r["sitecustomize_failed_path"] = c
                try:
                    with open(c, "rb") as f:
                        compile(f.read(), c, "exec")
                except SyntaxError as e:
                    r["sitecustomize_failed_line"] = e.lineno
                    r["sitecustomize_failed_error"] = "%s: %s" % (type(e).__name__, e.msg)
                except Exception:
                    pass
                break
    r["stdlib"] = sysconfig.get_paths()["stdlib"]
    try:
        from importlib import metadata as md
    except ImportError:
        md = None

    def dist(name):
        # (version, directory holding the distribution's packages) from the metadata, never importing it
        if md is not None:
            try:
                d = md.distribution(name)
                return d.version, str(d.locate_file(""))
            except Exception:
                return None, None
        import glob
        for sd in seen:
            for meta in sorted(glob.glob(os.path.join(sd, name + "-*.dist-info", "METADATA"))):
                with open(meta) as f:
                    for line in f:
                        if line.startswith("Version:"):
                            return line.split(":", 1)[1].strip(), sd
        return None, None
    r["sglang_version"] = dist("sglang")[0]
    v, where = dist("torch")
    r["torch_version"] = v
    r["torch_version_py"] = None
    if v and where:
        try:
            with open(os.path.join(where, "torch", "version.py")) as f:
                r["torch_version_py"] = f.read(65536)
        except Exception:
            pass
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


# torch/version.py, as torch's build writes it (tools/generate_torch_version.py): `cuda = '11.7'` (1.x) or
# `cuda: Optional[str] = '13.0'` (2.x); None for a CPU or ROCm build. A module-level assignment at a line start.
_TORCH_CUDA_LINE = re.compile(r'^cuda[ \t]*(?::[^=\n]*)?=[ \t]*(?P<value>[^\n]*)$', re.MULTILINE)


def torch_cuda_version(version_py):
    """The CUDA runtime torch was built with (``torch.version.cuda``), read from the text of ``torch/version.py``.

    The file is never executed: the value of its module-level ``cuda`` assignment is read as a Python literal,
    in either form torch's build writes, ``cuda = '11.7'`` (1.x) or ``cuda: Optional[str] = '13.0'`` (2.x).

    :param version_py: the file's text (str), or None when there is no such file.
    :returns: the version as torch reports it (str, such as ``'13.0'``), or None for a CPU or ROCm build
        (``cuda`` is None there), a missing file, or a value that is not a string literal.
    """
    match = _TORCH_CUDA_LINE.search(version_py or '')
    if not match:
        return None
    value = match.group('value').split('#', 1)[0].strip()
    try:
        value = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) and value else None


def sitecustomize_candidate(probe):
    """Where a new ``sitecustomize.py`` is imported from by the interpreter the probe ran in.

    ``site.py`` runs ``import sitecustomize`` after it has put the site-packages directories on ``sys.path``,
    so the file is found on the first ``sys.path`` entry that holds one. An interpreter that imports none (a
    pyenv, uv or python.org build, or a venv on one) is given a new file in its own ``purelib`` (a venv's
    ``site-packages``: only that venv's servers import it), or ``platlib``, or a ``site.getsitepackages()`` entry,
    whichever is on ``sys.path`` first; else the standard library directory.

    :param probe: the dict :data:`PYTHON_PROBE` printed (``purelib``, ``platlib``, ``site_packages``, ``sys_path``,
        ``stdlib``).
    :returns: an absolute path ending in ``/sitecustomize.py``, or None when the probe holds no directory.
    """
    probe = probe or {}
    on_path = [entry for entry in (probe.get('sys_path') or []) if entry]
    for directory in [probe.get('purelib'), probe.get('platlib')] + list(probe.get('site_packages') or []):
        if directory and directory in on_path:
            return directory.rstrip('/') + '/sitecustomize.py'
    if probe.get('stdlib'):
        return probe['stdlib'].rstrip('/') + '/sitecustomize.py'
    return None


# The spawn probe: run as `<python> -c SPAWN_PROBE '<json list of names>'` in a clean environment. It starts one
# child with multiprocessing "spawn", as SGLang starts its schedulers (a fresh interpreter, which runs site.py and
# sitecustomize again), and the child prints the values of the named variables it sees.
SPAWN_MARKER = '@@inferops_sglang_spawn@@'
SPAWN_PROBE = r'''
import json, multiprocessing, sys
if __name__ == "__main__":
    names = json.loads(sys.argv[1])
    code = ("import json, os, sys; sys.stdout.write('\\n@@inferops_sglang_spawn@@' + "
            "json.dumps(dict((n, os.environ.get(n)) for n in %r)) + '\\n'); sys.stdout.flush()" % (names,))
    child = multiprocessing.get_context("spawn").Process(target=exec, args=(code,))
    child.start()
    child.join()
    sys.exit(child.exitcode)
'''


def spawn_probe_argv(python, names, pythonpath=None):
    """The command that shows which of ``names`` a spawned child of ``python`` sees, and with what value.

    The child is started from a clean environment (``env -i``; ``PATH=/usr/bin:/bin``, and ``PYTHONPATH`` when
    the server has one), so what it sees comes from what the interpreter imports at start-up (sitecustomize.py),
    not from the caller's environment.

    :param python: absolute path of the server's interpreter.
    :param names: iterable of variable names.
    :param pythonpath: the server's ``PYTHONPATH`` (str) or None/empty.
    :returns: argv list for ``ansible.builtin.command``'s ``argv``.
    :raises ValueError: when ``python`` is not an absolute path.
    :raises TypeError: when ``names`` is a string.
    """
    if not python or not str(python).startswith('/'):
        raise ValueError('the interpreter must be an absolute path, got %r' % (python,))
    if isinstance(names, (str, bytes)):
        raise TypeError('names must be a list of variable names, not a string')
    argv = ['/usr/bin/env', '-i', 'PATH=/usr/bin:/bin']
    if pythonpath:
        argv.append('PYTHONPATH=%s' % pythonpath)
    return argv + [str(python), '-c', SPAWN_PROBE, json.dumps(sorted(str(n) for n in names))]


def spawn_env_missing(stdout, expected):
    """The names of ``expected`` whose values did not reach the spawned child of :data:`SPAWN_PROBE`.

    :param stdout: what the spawn probe printed.
    :param expected: mapping name -> value the child must see (values compared as strings).
    :returns: sorted list of names (every name when the child printed nothing, for example because it failed).
    """
    seen = None
    for line in (stdout or '').splitlines():
        if line.startswith(SPAWN_MARKER):
            try:
                seen = json.loads(line[len(SPAWN_MARKER):])
            except ValueError:
                seen = None
    if not isinstance(seen, dict):
        return sorted(expected)
    return sorted(name for name, value in expected.items() if seen.get(name) != str(value))


def sitecustomize_error(stderr, probe=None):
    """Why the interpreter's sitecustomize failed at start-up, naming its file (and line, for a syntax error).

    :param stderr: str, the probe's standard error: site.py writes 'Error in sitecustomize; set PYTHONVERBOSE for
        traceback:' and the exception's line there when sitecustomize raises.
    :param probe: the dict :data:`PYTHON_PROBE` printed, or None: its ``sitecustomize_failed_path`` (the file the
        import tried), ``sitecustomize_failed_line`` and ``sitecustomize_failed_error`` (a syntax error found by
        compiling the file, never running it).
    :returns: None when nothing failed; else str, e.g. '/usr/lib/python3.11/sitecustomize.py line 18: SyntaxError:
        invalid syntax (Error in sitecustomize; set PYTHONVERBOSE for traceback: SyntaxError: invalid syntax
        (sitecustomize.py, line 18))'.
    """
    probe = probe or {}
    lines = (stderr or '').splitlines()
    reported = None
    for i, line in enumerate(lines):
        if 'Error in sitecustomize' in line:
            rest = [x.strip() for x in lines[i + 1:] if x.strip()]
            reported = line.strip() + ((' ' + rest[-1]) if rest else '')
            break
    path = probe.get('sitecustomize_failed_path')
    if reported is None and probe.get('sitecustomize_failed_error') is None:
        return None
    said = probe.get('sitecustomize_failed_error')
    if not path:
        return reported or said
    where = path
    if probe.get('sitecustomize_failed_line'):
        where += ' line %s' % probe['sitecustomize_failed_line']
    if said and reported:
        return '%s: %s (%s)' % (where, said, reported)
    return '%s: %s' % (where, said or reported)
