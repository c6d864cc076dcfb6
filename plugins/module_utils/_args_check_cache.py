# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The memo of the SGLang argument-parser check (``server_args_check``), kept on the host (issue 26, item 6).

The parser check is a pure function of what it reads: the installed ``sglang`` distribution (its files, named with
their hashes in the distribution's ``RECORD``), the other installed distributions (names and versions: a dependency
may add parser choices), the argument list, the environment (the names; the values of those that can change what
imports or what SGLang's parser offers, see ``affects_parsing``), the interpreter (path and version), the content of a
``--config`` file the arguments name, and the check program itself. With real SGLang one check imports torch (about
5 s here, 16 s on an H200 host); ``cache_key`` digests all of those inputs, and a definite verdict of the parser
(accepted, or rejected with its message) is stored under that digest, so that a converged run reads it back instead.

Not memoized: a check that could not run (no interpreter, SGLang does not import, timeout, no result) - the host
can change that by itself; a check with plugins loaded (plugins are other distributions' code, run at parse time);
an interpreter without a ``RECORD`` for ``sglang`` (nothing identifies the installed files); a ``--config=FILE``
token (written as two tokens it is read and digested). A file of the installed ``sglang`` edited in place after
installation is not seen (``RECORD`` still names the old hash): remove the cache directory after such an edit.

Storage: one JSON file per digest, ``<dir>/<sha256>.json``, mode 0600, in a directory of mode 0700 owned by the user
the module runs as (root: ``/var/cache/inferops-sglang/server-args-check``), at most ``KEEP`` files (the oldest by
modification time go). A directory or file that another user owns, or that group or others may read or write, is
not used. The files hold the module's result (messages already masked), never the argument list or the environment.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json
import os
import stat
import tempfile
import time

from ansible_collections.inferops.sglang.plugins.module_utils._args_check_program import CHECK_PROGRAM

CACHE_DIR = '/var/cache/inferops-sglang/server-args-check'
KEEP = 64
FORMAT = 1
PROBE_MARK = '@@INFEROPS_ARGS_CHECK_INPUTS@@'

# Runs in the service's interpreter, with the check's environment: what the check would import, without importing it.
PROBE_PROGRAM = r'''
import json, os, sys
out = {"python_version": sys.version.split()[0], "record": None, "distributions": []}
try:
    from importlib import metadata
    out["record"] = metadata.distribution("sglang").read_text("RECORD")
    names = set()
    for dist in metadata.distributions():
        try:
            names.add("%%s==%%s" %% (dist.metadata["Name"], dist.version))
        except Exception:
            pass
    out["distributions"] = sorted(names)
except Exception as exc:
    out["error"] = "%%s: %%s" %% (type(exc).__name__, exc)
sys.stdout.write("\n" + %(mark)r + json.dumps(out) + "\n")
''' % {'mark': PROBE_MARK}

_PARSING_PREFIXES = ('PYTHON', 'SGLANG', 'SGL_')
_PARSING_NAMES = frozenset(('CUDA_VISIBLE_DEVICES', 'LD_LIBRARY_PATH', 'LD_PRELOAD'))


def affects_parsing(name):
    """Whether the value of environment variable ``name`` (str) can change what the check imports or what SGLang's
    parser offers: ``PYTHON*`` (import path, flags), ``SGLANG*`` and ``SGL_*`` (SGLang 0.5.23 reads its settings from
    these, ``sglang/srt/environ.py``; ``SGLANG_KV_CANARY_ENABLE_TOKEN_ORACLE`` adds a ``--sampling-backend`` choice),
    ``CUDA_VISIBLE_DEVICES`` and the loader's ``LD_LIBRARY_PATH``/``LD_PRELOAD``. Other variables count by name only."""
    return name.startswith(_PARSING_PREFIXES) or name in _PARSING_NAMES


def parse_probe(stdout):
    """The probe's reply (dict: ``python_version``, ``record`` - str or None, ``distributions`` - list of
    ``name==version``, ``error`` when it failed) from its standard output (str), or None when it printed none."""
    reply = None
    for line in (stdout or '').splitlines():
        if line.startswith(PROBE_MARK):
            try:
                reply = json.loads(line[len(PROBE_MARK):])
            except ValueError:
                reply = None
    return reply if isinstance(reply, dict) else None


def config_path(args):
    """The ``--config`` file the arguments (list of str) name: (True, path or None) when the arguments can be keyed
    (path None: no ``--config``), (False, None) for ``--config=FILE`` or a ``--config`` without a value."""
    path = None
    for index, token in enumerate(args):
        if token.startswith('--config='):
            return False, None
        if token == '--config':
            if index + 1 >= len(args):
                return False, None
            path = args[index + 1]
    return True, path


def key_inputs(python, python_version, record, args, environment, distributions=(), program='', files=None, options=None):
    """The inputs of one check as one dict (what ``cache_key`` digests).

    :param python: str, absolute path of the interpreter. :param python_version: str, its ``sys.version`` first word.
    :param record: str, the text of the ``sglang`` distribution's ``RECORD`` (file names, hashes, sizes).
    :param args: list of str, the server arguments in order.
    :param environment: dict name -> value, the whole environment the check runs with; names count, values only where
        ``affects_parsing``.
    :param distributions: iterable of ``name==version`` of every installed distribution (order does not count).
    :param program: str, the check program's source. :param files: dict path -> sha256 hex of files the check reads
        (the ``--config`` file). :param options: dict of the module's other options that change the verdict.
    """
    env = dict((str(name), str(value) if affects_parsing(str(name)) else None) for name, value in (environment or {}).items())
    return dict(
        format=FORMAT,
        python=python,
        python_version=python_version,
        record=hashlib.sha256((record or '').encode('utf-8')).hexdigest(),
        args=[str(a) for a in args],
        environment=sorted(env.items(), key=lambda item: item[0]),
        distributions=sorted(set(distributions or ())),
        program=hashlib.sha256((program or '').encode('utf-8')).hexdigest(),
        files=sorted((files or {}).items()),
        options=sorted((options or {}).items()),
    )


def cache_key(inputs):
    """SHA-256 hex digest (str, 64 characters) of ``key_inputs``' dict, canonical JSON (sorted keys)."""
    blob = json.dumps(inputs, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(blob.encode('utf-8')).hexdigest()


def file_digest(path):
    """SHA-256 hex of the file at ``path`` (str), or None when it cannot be read."""
    try:
        with open(path, 'rb') as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except (IOError, OSError):
        return None


def _private(path, kind):
    """Whether ``path`` is a ``kind`` (stat.S_ISDIR or S_ISREG) owned by this user that nobody else may read or
    write (no symbolic link followed)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return kind(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077


def _entry_path(cache_dir, key):
    if len(key) != 64 or any(c not in '0123456789abcdef' for c in key):
        raise ValueError('not a cache key: %r' % (key,))
    return os.path.join(cache_dir, key + '.json')


def read_entry(cache_dir, key):
    """The stored result (dict) for ``key`` in ``cache_dir``, or None: no entry, unreadable, not private (see the
    module docstring), or not an entry for that key."""
    path = _entry_path(cache_dir, key)
    if not _private(cache_dir, stat.S_ISDIR) or not _private(path, stat.S_ISREG):
        return None
    try:
        with open(path) as handle:
            entry = json.load(handle)
    except (IOError, OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get('key') != key or not isinstance(entry.get('result'), dict):
        return None
    return entry['result']


def touch_entry(cache_dir, key):
    """Marks ``key``'s entry as just used (its modification time), so that ``prune`` keeps it; errors ignored."""
    try:
        os.utime(_entry_path(cache_dir, key), None)
    except OSError:
        pass


def _ensure_dir(cache_dir):
    """Creates ``cache_dir`` (and missing parents) with mode 0700; True when it is then usable (private)."""
    if not os.path.isdir(cache_dir):
        try:
            os.makedirs(cache_dir, 0o700)
        except OSError:
            return False
    return _private(cache_dir, stat.S_ISDIR)


def prune(cache_dir, keep=KEEP):
    """Removes all but the ``keep`` most recently modified ``*.json`` entries of ``cache_dir``; returns the number
    removed."""
    entries = []
    for name in os.listdir(cache_dir):
        if name.endswith('.json'):
            path = os.path.join(cache_dir, name)
            try:
                entries.append((os.lstat(path).st_mtime, path))
            except OSError:
                continue
    entries.sort(reverse=True)
    removed = 0
    for _mtime, path in entries[keep:]:
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            pass
    return removed


def write_entry(cache_dir, key, result, keep=KEEP):
    """Stores ``result`` (a JSON-able dict) under ``key``: written to a private temporary file and renamed into
    place, then the directory is pruned to ``keep`` entries. Returns True when stored, False when the directory cannot
    be made or is not private, or the write failed (the check's result stands either way)."""
    path = _entry_path(cache_dir, key)
    if not _ensure_dir(cache_dir):
        return False
    try:
        handle, temp = tempfile.mkstemp(dir=cache_dir, prefix='.tmp-', suffix='.part')
    except OSError:
        return False
    try:
        with os.fdopen(handle, 'w') as out:
            json.dump(dict(key=key, saved_at=time.time(), result=result), out, sort_keys=True)
        os.chmod(temp, 0o600)
        os.rename(temp, path)
    except (IOError, OSError, TypeError, ValueError):
        try:
            os.unlink(temp)
        except OSError:
            pass
        return False
    prune(cache_dir, keep)
    return True


# What the memo stores of a result: the verdict and what was returned with it, not the call's time.
STORED = ('checked', 'valid', 'sglang_version', 'python_version', 'parser', 'flag', 'message', 'abbreviations',
          'deprecated', 'parser_warnings', 'env_names_unread')


def check_environ(environment=None, hide_gpus=True):
    """The environment the check program runs with (dict name -> str): C locale, unbuffered, ``environment`` (dict;
    None values as empty), and no GPU (``CUDA_VISIBLE_DEVICES`` empty) with ``hide_gpus``."""
    environ = dict(LANG='C', LC_ALL='C', PYTHONUNBUFFERED='1')
    for key, value in (environment or {}).items():
        environ[str(key)] = '' if value is None else str(value)
    if hide_gpus:
        environ['CUDA_VISIBLE_DEVICES'] = ''
    return environ


def memo_key(run_command, python, args, environ, program, hide_gpus=True, env_names=()):
    """The memo's digest (``cache_key``) of one check, or None when it cannot be keyed (``--config=FILE``, an unreadable
    ``--config`` file, an interpreter without ``sglang``'s ``RECORD``, a probe that failed).

    :param run_command: ``AnsibleModule.run_command`` (argv, environ_update=, cwd=) -> (rc, stdout, stderr); runs the
        probe (one short interpreter run, no SGLang import). :param python: str, absolute path of the interpreter.
    :param args: list of str. :param environ: dict, ``check_environ``'s. :param program: str, the check program's
        source (``_args_check_program.CHECK_PROGRAM``). :param hide_gpus: bool. :param env_names: list of str.
    """
    keyable, config = config_path(args)
    if not keyable:
        return None
    files = {}
    if config is not None:
        path = config if os.path.isabs(config) else os.path.join('/', config)
        files[path] = file_digest(path)
        if files[path] is None:
            return None
    rc, stdout, dummy_err = run_command([python, '-c', PROBE_PROGRAM], environ_update=environ, cwd='/')
    probe = parse_probe(stdout)
    if rc != 0 or not probe or not probe.get('record'):
        return None
    environment = dict(os.environ)
    environment.update(environ)
    inputs = key_inputs(
        python, probe.get('python_version'), probe['record'], args, environment,
        distributions=probe.get('distributions') or (), program=program, files=files,
        options=dict(hide_gpus=hide_gpus, env_names=list(env_names), realpath=os.path.realpath(python)))
    return cache_key(inputs)


def verdict_settled(stored):
    """Whether a stored result (dict or None) settles the check with nothing left to say: the parser ran and accepted
    the command line, with no abbreviation and no deprecation to warn about (the module warns of those on each call,
    memo or not). ``service_preflight_info`` returns only such a result; the role then skips the module."""
    return bool(isinstance(stored, dict) and stored.get('checked') is True and stored.get('valid') is True
                and not stored.get('abbreviations') and not stored.get('deprecated'))


def request_digest(python, args, env_names):
    """SHA-256 hex of what the role asks the check (interpreter, argument list, SGLANG_* names), so that the pre-flight's
    memo lookup (``service_preflight_info``) and the plan that uses it (``_plans/service_host.args_memo``) can tell that
    they speak of the same check without the argument list (which may hold secrets) coming back from the host."""
    blob = json.dumps([str(python), [str(a) for a in args or []], [str(n) for n in env_names or []]],
                      separators=(',', ':'))
    return hashlib.sha256(blob.encode('utf-8')).hexdigest()


def lookup(run_command, python, args, env_names, cache_dir=None):
    """The memo lookup of the pre-flight's host read: ``{'request': request_digest, 'result': the stored result with
    ``cached`` true, or None, 'duration_seconds': the lookup's time}`` - None unless the memo holds a verdict (``verdict_settled``) for exactly the check
    ``server_args_check`` would run with the role's options (no ``environment``, GPUs hidden, no plugins, the default
    cache; ``cache_dir`` None: ``CACHE_DIR``). Reads only (the entry's use time is not touched). ``run_command`` should
    raise OSError rather than fail the module when the interpreter cannot be started (``handle_exceptions=False``): the
    lookup then finds nothing."""
    started = time.monotonic()
    out = {'request': request_digest(python, args, env_names), 'result': None, 'duration_seconds': 0.0}
    if not (os.path.isabs(python) and os.path.isfile(python) and os.access(python, os.X_OK)):
        return out
    try:
        key = memo_key(run_command, python, [str(a) for a in args], check_environ(None, True), CHECK_PROGRAM, True,
                       list(env_names))
    except (IOError, OSError):
        # An interpreter that exists but does not start (a shebang to a missing program): no memo here; the check
        # itself says what is wrong, visibly, in its own task.
        key = None
    stored = read_entry(cache_dir or CACHE_DIR, key) if key else None
    if verdict_settled(stored):
        out['result'] = dict(((name, stored[name]) for name in STORED if name in stored), cached=True)
    out['duration_seconds'] = round(time.monotonic() - started, 3)
    return out
