# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection. It is used by
# inferops.sglang.server_process and inferops.sglang.server_process_info only. Anything here can
# change or disappear in any release: there is no compatibility promise.
#
# Standard library only: it runs on the managed host, which may have any Python 3.8 or later and
# nothing else (no psutil). Linux only: everything comes from /proc.

"""Find SGLang inference server processes on a Linux host, and stop the stray ones.

Facts about SGLang that the matching relies on (checked against sgl-project/sglang, release 0.5.23):

* Servers start as ``python -m sglang.launch_server ...`` (``python/sglang/launch_server.py``) or as
  ``sglang serve ...``: the ``sglang`` console script is ``sglang.cli.main:main``
  (``python/pyproject.toml``), whose ``serve`` subcommand runs the server in-process
  (``python/sglang/cli/serve.py``); its argv is ``[/venv/bin/python3, /venv/bin/sglang, serve, ...]``.
* Server children are multiprocessing "spawn" processes that retitle themselves with setproctitle:
  ``sglang::scheduler{_DP<d>}{_TP<t>}{_EP<e>}`` (``srt/managers/scheduler.py``),
  ``sglang::detokenizer`` (``srt/managers/detokenizer_manager.py``),
  ``sglang::data_parallel_controller`` (``srt/managers/data_parallel_controller.py``),
  ``sglang::tokenizer_worker:<pid>`` and ``sglang::detokenizer_router``
  (``srt/managers/multi_tokenizer_mixin.py``), ``sgl_diffusion::scheduler_<rank>``
  (``multimodal_gen/runtime/managers/gpu_worker.py``). Before retitling, a spawn child's argv is
  ``python -c "from multiprocessing.spawn import spawn_main; ..." --multiprocessing-fork``.
* ``sglang::router`` is the Rust sglang-router (a load balancer, no GPU); the PD-disaggregation
  load balancers are ``python -m sglang.srt.disaggregation.launch_lb`` / ``mini_lb``. Never servers.
* SGLang's own cleanup (``scripts/killall_sglang.sh``, ``python/sglang/cli/killall.py``) kills
  anything whose command line matches ``sglang::|sglang\\.launch_server|sglang\\.bench|
  sglang\\.data_parallel|sglang\\.srt|sgl_diffusion::|sglang serve``. That is far too broad for a
  production host: ``sglang.bench_*`` are clients, most ``python -m sglang.srt.*`` modules are tools
  (pack builders, comparators, metadata servers), and a substring match also hits ``grep``,
  ``tail -f sglang.log``, editors and shell wrappers. Here the argv is parsed like the Python
  interpreter parses it, and a ``sglang.srt.*`` / ``sglang.data_parallel*`` module only counts as a
  server when it really runs an engine (it has ``sglang::`` titled descendants).
* Server flags (``srt/arg_groups/fields/serving.py`` and ``parallel.py``): ``--host`` (default
  ``127.0.0.1``), ``--port`` (default 30000), ``--tp-size``/``--tensor-parallel-size``,
  ``--dp-size``/``--data-parallel-size``, ``--pp-size``/``--pipeline-parallel-size``; argparse also
  accepts ``--flag=value`` and unique prefixes (``--tp``, ``--dp``, ``--pp``). ``--config FILE``
  (a YAML file) supplies defaults that the command line overrides (``srt/server_args.py``,
  ``srt/utils/server_args_config_parser.py``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import fnmatch
import os
import pwd
import re
import signal
import socket
import time

from ansible_collections.inferops.sglang.plugins.module_utils import _host

# --------------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------------

DEFAULT_UNIT = 'sglang.service'
DEFAULT_GPU_DEVICE_GLOB = '/dev/nvidia*'
DEFAULT_HOST = '127.0.0.1'
DEFAULT_PORT = 30000
MASK = '********'

# Kinds returned by classify_argv().
SERVER = 'server'          # an SGLang server main process
CANDIDATE = 'candidate'    # python -m sglang.srt.* / sglang.data_parallel*: a server only with engine children
TITLED = 'titled'          # a process retitled sglang::* / sgl_diffusion::* (not the router)
ROUTER = 'router'          # a load balancer: never a server
CLIENT = 'client'          # benchmarks and tests: clients, never servers
TOOL = 'tool'              # some other sglang command (sglang version, python -m sglang.check_env, ...)
MENTION = 'mention'        # only mentions sglang in its command line (grep, tail, vim, bash -c, pip)

SERVER_MODULE = 'sglang.launch_server'
SERVE_COMMAND = 'sglang serve'
TITLE_PREFIXES = ('sglang::', 'sgl_diffusion::')
ROUTER_TITLE = 'sglang::router'
LOAD_BALANCER_MODULES = ('sglang.srt.disaggregation.launch_lb', 'sglang.srt.disaggregation.mini_lb')
CLIENT_MODULE_PREFIXES = ('sglang.bench', 'sglang.test')
CANDIDATE_MODULE_PREFIXES = ('sglang.srt.', 'sglang.data_parallel')
SHELLS = frozenset(('sh', 'bash', 'dash', 'zsh', 'ksh', 'fish', 'busybox'))

_PYTHON_RE = re.compile(r'^(?:python|pypy)(?:\d+(?:\.\d+)*)?[a-z]?$')
# Python options that take a value (the value is attached or is the next argument).
_PY_VALUE_OPTS = 'cmWX'
_PY_LONG_VALUE_OPTS = ('--check-hash-based-pycs',)

# Server flags -> setting name. Last occurrence wins, as with argparse.
_SETTING_FLAGS = {
    '--host': 'host',
    '--port': 'port',
    '--tp-size': 'tp', '--tensor-parallel-size': 'tp', '--tp': 'tp',
    '--dp-size': 'dp', '--data-parallel-size': 'dp', '--dp': 'dp',
    '--pp-size': 'pp', '--pipeline-parallel-size': 'pp', '--pp': 'pp',
}
_INT_SETTINGS = ('port', 'tp', 'dp', 'pp')
SETTING_DEFAULTS = {'host': DEFAULT_HOST, 'port': DEFAULT_PORT, 'tp': 1, 'dp': 1, 'pp': 1}

# Environment variable names whose values never leave the host (the brief of the collection).
_SECRET_ENV_RE = re.compile(r'KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL', re.IGNORECASE)
# Command line flags whose value is a secret: one of these words as a whole word of the flag name,
# so that --api-key and --hf-token are hidden but --max-total-tokens and --tokenizer-path are not.
_SECRET_FLAG_WORDS = frozenset(('key', 'token', 'secret', 'password', 'passwd', 'credential', 'credentials'))

# cgroup leaves that many unrelated processes share: never evidence that two processes belong together.
_GENERIC_CGROUP_LEAF_RE = re.compile(r'^(?:init\.scope|session-[^/]*\.scope|user@\d+\.service|[^/]*\.slice)$')
_UNIT_SUFFIXES = ('.service', '.scope', '.slice', '.socket', '.mount', '.target', '.timer', '.swap', '.path')
# A device file naming one GPU (as opposed to /dev/nvidiactl, /dev/nvidia-uvm, capability files).
_PER_GPU_DEVICE_RE = re.compile(r'^(?:nvidia|renderD|card)\d+$')
_ROLE_RANK_SUFFIX_RE = re.compile(r'(?:_[A-Z]+(?:_[A-Z]+)*[0-9]+)+$')

PF_KTHREAD = 0x00200000
GONE_STATES = ('Z', 'X', 'x')

SIGTERM_NAME = 'SIGTERM'
SIGKILL_NAME = 'SIGKILL'
ALREADY_GONE = 'already gone'


# --------------------------------------------------------------------------------------------------
# Pure functions: parsing
# --------------------------------------------------------------------------------------------------

class ProcStat(object):
    """The fields of /proc/<pid>/stat that discovery needs."""

    __slots__ = ('pid', 'comm', 'state', 'ppid', 'pgid', 'sid', 'flags', 'starttime')

    def __init__(self, pid, comm, state, ppid, pgid, sid, flags, starttime):
        self.pid = pid
        self.comm = comm
        self.state = state
        self.ppid = ppid
        self.pgid = pgid
        self.sid = sid
        self.flags = flags
        self.starttime = starttime

    def __repr__(self):
        return 'ProcStat(pid=%d, ppid=%d, state=%s, comm=%r)' % (self.pid, self.ppid, self.state, self.comm)


def parse_stat(data):
    """Parse the content of /proc/<pid>/stat; None when it is malformed.

    comm may contain spaces and parentheses, so the fields after it start after the last ')'.
    Field numbers (proc(5)): 3 state, 4 ppid, 5 pgrp, 6 session, 9 flags, 22 starttime.
    (Works on bytes, splitting only the fields needed: it runs once per process of the host.)
    """
    if isinstance(data, str):
        data = data.encode('utf-8', 'surrogateescape')
    lpar = data.find(b'(')
    rpar = data.rfind(b')')
    if lpar < 0 or rpar < lpar:
        return None
    try:
        rest = data[rpar + 2:].split(None, 20)
        return ProcStat(int(data[:lpar]), data[lpar + 1:rpar].decode('utf-8', 'replace'), rest[0].decode('ascii'),
                        int(rest[1]), int(rest[2]), int(rest[3]), int(rest[6]), int(rest[19]))
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def _decode(raw):
    return raw.decode('utf-8', 'replace')


def parse_cmdline(raw):
    """Split /proc/<pid>/cmdline (NUL separated, NUL terminated) into argv.

    A process retitled with setproctitle has its title as the only element, sometimes padded with
    NULs or spaces; trailing empty elements are dropped.
    """
    if not raw:
        return []
    if isinstance(raw, bytes):
        raw = _decode(raw)
    argv = raw.split('\0')
    while argv and not argv[-1].strip():
        argv.pop()
    if len(argv) == 1:
        argv[0] = argv[0].rstrip()
    return argv


def parse_environ(raw):
    """Parse /proc/<pid>/environ into a dict (the first of duplicate names wins, as with getenv)."""
    env = {}
    if not raw:
        return env
    if isinstance(raw, bytes):
        raw = _decode(raw)
    for item in raw.split('\0'):
        if not item:
            continue
        name, sep, value = item.partition('=')
        if sep and name and name not in env:
            env[name] = value
    return env


def parse_status_uid(text):
    """Return the real uid from /proc/<pid>/status, or None."""
    if isinstance(text, bytes):
        text = _decode(text)
    for line in (text or '').splitlines():
        if line.startswith('Uid:'):
            fields = line.split()
            if len(fields) > 1 and fields[1].isdigit():
                return int(fields[1])
    return None


def parse_cgroup(text):
    """Parse /proc/<pid>/cgroup into a list of (hierarchy_id, controllers, path) tuples."""
    if isinstance(text, bytes):
        text = _decode(text)
    entries = []
    for line in (text or '').splitlines():
        parts = line.split(':', 2)
        if len(parts) == 3:
            entries.append((parts[0], parts[1], parts[2]))
    return entries


def _systemd_cgroup_paths(entries):
    """The paths systemd tracks units with: the unified (v2) path and the v1 name=systemd path."""
    return [path for hier, controllers, path in entries
            if (hier == '0' and controllers == '') or controllers == 'name=systemd']


def primary_cgroup(entries):
    """The cgroup path to report and compare: the most specific of name=systemd (v1) and unified (v2)."""
    unified = [path for hier, controllers, path in entries if hier == '0' and controllers == '']
    named = [path for hier, controllers, path in entries if controllers == 'name=systemd']
    for path in named + unified:
        if path and path != '/':
            return path
    if unified:
        return unified[0]
    if named:
        return named[0]
    return entries[0][2] if entries else None


def normalize_unit(unit):
    """'sglang' -> 'sglang.service'; names with a unit type suffix are kept."""
    unit = (unit or '').strip()
    if unit and not unit.endswith(_UNIT_SUFFIXES):
        unit += '.service'
    return unit


def cgroup_in_unit(entries, unit):
    """True when a process with these /proc/<pid>/cgroup entries runs under systemd unit ``unit``.

    systemd puts a unit's processes in a cgroup whose path ends in ``/<unit>`` (``0::/system.slice/
    sglang.service``; cgroup v1: ``1:name=systemd:/system.slice/sglang.service``), or below it when
    the unit delegates (``.../sglang.service/payload``). Inside a container that sees the host's
    cgroup namespace the path has a prefix (``0::/docker/<id>/system.slice/sglang.service``). So
    the unit must be one whole component of the unified or name=systemd path.
    """
    unit = normalize_unit(unit)
    if not unit:
        return False
    for path in _systemd_cgroup_paths(entries):
        if unit in path.split('/'):
            return True
    return False


def is_specific_cgroup(path):
    """True when sharing this cgroup says two processes belong together.

    The root cgroup, slices, init.scope, login session scopes and user@.service are shared by
    unrelated processes (everything a user starts over ssh lands in session-N.scope), so they are
    not. A service, a transient run-*.service/scope or a container cgroup is.
    """
    if not path or path == '/':
        return False
    leaf = path.rstrip('/').rsplit('/', 1)[-1]
    return not _GENERIC_CGROUP_LEAF_RE.match(leaf)


def parse_python_argv(argv):
    """Parse argv like the CPython interpreter does, when argv[0] is a Python interpreter.

    Returns None when argv[0] is not a Python interpreter, else a dict with ``interpreter`` and one
    of ``module`` (-m), ``code`` (-c), ``script`` (first positional argument; '-' is stdin), plus
    ``args`` (what the program sees in sys.argv[1:]). Options may be combined (``-um mod``) and
    option values attached (``-msglang.launch_server``), as CPython allows.
    """
    if not argv or not _PYTHON_RE.match(os.path.basename(argv[0])):
        return None
    result = {'interpreter': argv[0], 'module': None, 'code': None, 'script': None, 'args': []}
    i = 1
    n = len(argv)
    while i < n:
        arg = argv[i]
        if arg == '--':
            i += 1
            break
        if arg == '-':
            result['script'] = '-'
            result['args'] = argv[i + 1:]
            return result
        if arg.startswith('--'):
            if arg in _PY_LONG_VALUE_OPTS:
                i += 2
                continue
            # --check-hash-based-pycs=x, or --help / --version (nothing runs).
            i += 1
            continue
        if arg.startswith('-'):
            j = 1
            consumed_next = False
            while j < len(arg):
                opt = arg[j]
                if opt in _PY_VALUE_OPTS:
                    value = arg[j + 1:]
                    if not value:
                        if i + 1 >= n:
                            return result
                        value = argv[i + 1]
                        consumed_next = True
                    rest = argv[i + 2:] if consumed_next else argv[i + 1:]
                    if opt == 'm':
                        result['module'] = value
                        result['args'] = rest
                        return result
                    if opt == 'c':
                        result['code'] = value
                        result['args'] = rest
                        return result
                    break  # -W / -X: skip the value
                j += 1
            i += 2 if consumed_next else 1
            continue
        break
    if i < n:
        result['script'] = argv[i]
        result['args'] = argv[i + 1:]
    return result


class Classification(object):
    """What a command line is, as far as SGLang is concerned."""

    __slots__ = ('kind', 'module', 'args', 'reason')

    def __init__(self, kind, module=None, args=None, reason=None):
        self.kind = kind
        self.module = module
        self.args = list(args or [])
        self.reason = reason

    def __repr__(self):
        return 'Classification(%r, module=%r, reason=%r)' % (self.kind, self.module, self.reason)


def title_of(argv):
    """The display string of a process: its setproctitle title, or its argv joined by spaces."""
    return ' '.join(argv).strip()


def sglang_title(argv, comm=None):
    """The sglang:: / sgl_diffusion:: title of a retitled process, else None.

    setproctitle rewrites the argv area (what /proc/<pid>/cmdline shows) and the 15-character comm;
    a process that only set its comm is recognised by the comm.
    """
    if argv and argv[0].startswith(TITLE_PREFIXES):
        return title_of(argv)
    if comm and comm.startswith(TITLE_PREFIXES):
        return comm
    return None


def role_from_title(title):
    """'sglang::scheduler_DP1_TP1_EP1' -> 'scheduler'; 'sglang::tokenizer_worker:123' -> 'tokenizer_worker'."""
    name = title
    for prefix in TITLE_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    name = name.split(None, 1)[0] if name.strip() else ''
    name = name.split(':', 1)[0]
    name = _ROLE_RANK_SUFFIX_RE.sub('', name)
    name = re.sub(r'_\d+$', '', name)
    return name or 'sglang'


def classify_argv(argv, comm=None):
    """Classify a command line; returns a Classification (kind None: nothing to do with SGLang).

    Only the process itself is judged here; tree relations (descendants, orphans) come later.
    """
    if not argv and not comm:
        return Classification(None)
    title = sglang_title(argv, comm)
    if title is not None:
        if title.split(None, 1)[0] == ROUTER_TITLE:
            return Classification(ROUTER, reason='sglang-router load balancer (sglang::router), never a server')
        return Classification(TITLED, reason='SGLang worker process (%s)' % title.split(None, 1)[0])
    if not argv:
        return Classification(None)
    base = os.path.basename(argv[0])
    py = parse_python_argv(argv)
    if py is not None:
        module = py['module']
        args = py['args']
        if module is not None:
            if module == SERVER_MODULE:
                return Classification(SERVER, SERVER_MODULE, args)
            if module == 'sglang.cli.main' and args[:1] == ['serve']:
                return Classification(SERVER, SERVE_COMMAND, args[1:])
            if module in LOAD_BALANCER_MODULES or module == 'sglang_router' or module.startswith('sglang_router.'):
                return Classification(ROUTER, module, args,
                                      reason='SGLang load balancer (python -m %s), never a server' % module)
            if module.startswith(CLIENT_MODULE_PREFIXES):
                return Classification(CLIENT, module, args,
                                      reason='SGLang client (python -m %s), never a server' % module)
            if module.startswith(CANDIDATE_MODULE_PREFIXES):
                return Classification(CANDIDATE, module, args,
                                      reason='SGLang tool (python -m %s) that runs no engine' % module)
            if module == 'sglang' or module.startswith('sglang.'):
                return Classification(TOOL, module, args, reason='SGLang tool (python -m %s), not a server' % module)
        elif py['script'] is not None:
            script = py['script'].replace('\\', '/')
            if script.endswith('/sglang/launch_server.py') or script == 'sglang/launch_server.py':
                return Classification(SERVER, SERVER_MODULE, args)
            if os.path.basename(script) == 'sglang':
                if args[:1] == ['serve']:
                    return Classification(SERVER, SERVE_COMMAND, args[1:])
                return Classification(TOOL, 'sglang', args,
                                      reason='sglang command other than serve (%s)' % ' '.join(args[:1]))
        if py['code'] is not None:
            return Classification(MENTION, reason='python -c program; SGLang servers are not started that way')
        return Classification(MENTION, reason='Python process that does not run an SGLang server entry point')
    if base == 'sglang':
        if argv[1:2] == ['serve']:
            return Classification(SERVER, SERVE_COMMAND, argv[2:])
        return Classification(TOOL, 'sglang', argv[1:],
                              reason='sglang command other than serve (%s)' % ' '.join(argv[1:2]))
    if base in SHELLS:
        return Classification(MENTION, reason='shell wrapper; the server it starts is matched by its own argv')
    return Classification(MENTION, reason='%s only mentions sglang in its arguments' % base)


def parse_config_scalars(text):
    """Top-level ``key: scalar`` lines of an SGLang --config YAML file, as {'--key': 'value'}.

    A deliberately small reader (the managed host may lack PyYAML): nested mappings, lists and
    multi-line values are skipped; that is enough for host, port and the parallel sizes.
    """
    values = {}
    for line in (text or '').splitlines():
        if not line or line[0] in ' \t#-':
            continue
        m = re.match(r'^([A-Za-z0-9_.-]+)\s*:\s*(.*?)\s*$', line)
        if not m or not m.group(2):
            continue
        value = m.group(2)
        if value[0] in '"\'':
            quote = value[0]
            end = value.find(quote, 1)
            value = value[1:end] if end > 0 else value[1:]
        else:
            value = value.split(' #', 1)[0].strip()
        values['--' + m.group(1).replace('_', '-')] = value
    return values


def server_settings(args, config=None):
    """host, port, tp, dp, pp of a server from its arguments (argparse semantics; last flag wins).

    ``config`` is the {'--flag': value} of its --config file: defaults the command line overrides.
    Values that do not parse are None (argparse would have refused to start such a server).
    """
    settings = dict(SETTING_DEFAULTS)
    raw = {}
    for flag, value in (config or {}).items():
        if flag in _SETTING_FLAGS:
            raw[_SETTING_FLAGS[flag]] = value
    i = 0
    n = len(args)
    while i < n:
        arg = args[i]
        if arg.startswith('--'):
            flag, sep, value = arg.partition('=')
            if flag in _SETTING_FLAGS:
                if sep:
                    raw[_SETTING_FLAGS[flag]] = value
                elif i + 1 < n:
                    raw[_SETTING_FLAGS[flag]] = args[i + 1]
                    i += 1
        i += 1
    for name, value in raw.items():
        if name in _INT_SETTINGS:
            try:
                settings[name] = int(value)
            except (TypeError, ValueError):
                settings[name] = None
        else:
            settings[name] = value
    return settings


def config_path_of(args):
    """The --config FILE of a server's arguments (SGLang accepts only the two-argument form)."""
    for i, arg in enumerate(args):
        if arg == '--config' and i + 1 < len(args):
            return args[i + 1]
    return None


def is_secret_flag(flag):
    words = re.split(r'[-_]+', flag.lstrip('-').lower())
    return any(word in _SECRET_FLAG_WORDS for word in words)


def redact_argv(argv):
    """Hide the values of secret flags (--api-key X, --hf-token=X). Returns (argv, [flags hidden])."""
    out = []
    hidden = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        if arg.startswith('-') and len(arg) > 1:
            flag, sep, value = arg.partition('=')
            if is_secret_flag(flag):
                if flag not in hidden:
                    hidden.append(flag)
                if sep:
                    out.append(flag + '=' + MASK)
                else:
                    out.append(arg)
                    hide_next = True
                continue
        out.append(arg)
    return out, hidden


def redact_env(env):
    """Hide the values of variables named like secrets. Returns (env, sorted names hidden)."""
    out = {}
    hidden = []
    for name, value in env.items():
        if _SECRET_ENV_RE.search(name):
            out[name] = MASK
            hidden.append(name)
        else:
            out[name] = value
    return out, sorted(hidden)


def compile_device_glob(pattern):
    """A fast matcher for fd link targets against a shell glob (``*`` also crosses '/')."""
    regex = re.compile(fnmatch.translate(pattern))
    cut = len(pattern)
    for ch in '*?[':
        pos = pattern.find(ch)
        if 0 <= pos < cut:
            cut = pos
    prefix = pattern[:cut]

    def match(target):
        return target.startswith(prefix) and regex.match(target) is not None
    return match


def device_path_of(target):
    """An fd link target as a path ('/dev/nvidia0 (deleted)' -> '/dev/nvidia0'); None for sockets etc."""
    if not target or not target.startswith('/'):
        return None
    if target.endswith(' (deleted)'):
        target = target[:-len(' (deleted)')]
    return target


def split_fd_targets(targets, match_device, want_sockets=False):
    """fd link targets -> (device paths matching, socket inodes); sockets only when wanted."""
    devices = set()
    sockets = set()
    for target in targets:
        if target[:1] == '/':
            path = device_path_of(target)
            if match_device(path):
                devices.add(path)
        elif want_sockets and target.startswith('socket:['):
            sockets.add(target[8:-1])
    return devices, sockets


def is_per_gpu_device(path):
    """True for a device file naming one GPU (/dev/nvidia3), not /dev/nvidiactl or /dev/nvidia-uvm."""
    return bool(_PER_GPU_DEVICE_RE.match(os.path.basename(path)))


def _csv_fields(line):
    return [field.strip() for field in line.split(',')]


def _mib(value):
    """'4334', '4334 MiB', '[N/A]' -> 4334, 4334, None."""
    value = value.strip()
    if value.endswith('MiB'):
        value = value[:-3].strip()
    try:
        return int(float(value))
    except ValueError:
        return None


def parse_compute_apps(text):
    """Parse ``nvidia-smi --query-compute-apps=pid,used_gpu_memory --format=csv,noheader,nounits``.

    Returns [{'pid': int, 'used_memory_mib': int or None}]. Tolerates units, a header line and the
    'No running processes found' message.
    """
    apps = []
    for line in (text or '').splitlines():
        fields = _csv_fields(line)
        if len(fields) < 2 or not fields[0].isdigit():
            continue
        apps.append({'pid': int(fields[0]), 'used_memory_mib': _mib(fields[1])})
    return apps


def parse_gpu_memory(text):
    """Parse ``nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits``.

    Returns [{'index': int, 'memory_used_mib': int or None}].
    """
    gpus = []
    for line in (text or '').splitlines():
        fields = _csv_fields(line)
        if len(fields) < 2 or not fields[0].isdigit():
            continue
        gpus.append({'index': int(fields[0]), 'memory_used_mib': _mib(fields[1])})
    return gpus


def gpu_release_state(apps, gpus, stopped_pids, threshold_mib):
    """What still holds the GPUs after a stop: stopped pids nvidia-smi still lists, GPUs over threshold."""
    stopped = set(stopped_pids)
    return {
        'stopped_pids_listed': sorted(set(app['pid'] for app in apps if app['pid'] in stopped)),
        'gpus_over_threshold': [gpu for gpu in gpus
                                if gpu['memory_used_mib'] is not None and gpu['memory_used_mib'] >= threshold_mib],
    }


def parse_proc_net_tcp(text, port):
    """Socket inodes listening (state 0A) on ``port`` in /proc/net/tcp or /proc/net/tcp6 content.

    The LISTEN lines are parsed once, in ``_host.parse_proc_net_tcp``; the address width tells the family.
    :returns: set of inode numbers as str (as they appear in ``socket:[N]`` fd links).
    """
    entries = _host.parse_proc_net_tcp(text, ipv6=False) + _host.parse_proc_net_tcp(text, ipv6=True)
    return set(str(e['inode']) for e in entries if e['port'] == port and e['inode'])


def children_map(parent_of):
    """{pid: ppid} -> {ppid: [pids]} (sorted)."""
    children = {}
    for pid, ppid in parent_of.items():
        children.setdefault(ppid, []).append(pid)
    for kids in children.values():
        kids.sort()
    return children


def descendants(children, pid, stop=None):
    """All descendants of pid (not pid itself). Subtrees rooted at a pid in ``stop`` are not entered."""
    found = set()
    todo = list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        if child in found or (stop is not None and child in stop):
            continue
        found.add(child)
        todo.extend(children.get(child, ()))
    return found


def ancestors(parent_of, pid):
    """Ancestors of pid, nearest first (stops at pid 0/1 or an unknown or looping parent)."""
    chain = []
    seen = set([pid])
    current = parent_of.get(pid)
    while current is not None and current not in seen and current > 0:
        chain.append(current)
        seen.add(current)
        current = parent_of.get(current)
    return chain


def render_process_lines(members, limit=240):
    """One line per process, for --diff: '<pid> [<role>] <title>' sorted by pid."""
    lines = []
    for member in sorted(members, key=lambda m: m['pid']):
        title = member['title']
        if len(title) > limit:
            title = title[:limit - 3] + '...'
        lines.append('%d [%s] %s' % (member['pid'], member['role'], title))
    return '\n'.join(lines) + ('\n' if lines else '')


# --------------------------------------------------------------------------------------------------
# Reading /proc
# --------------------------------------------------------------------------------------------------

_READ_SIZE = 1 << 17


def _read_bytes(path):
    """The whole content of a (proc) file, or None when it cannot be read (gone, no permission).

    procfs answers a large read in one go; a second read is only needed for very long contents.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, _READ_SIZE)
        if len(data) < _READ_SIZE:
            return data
        chunks = [data]
        while True:
            chunk = os.read(fd, _READ_SIZE)
            if not chunk:
                break
            chunks.append(chunk)
        return b''.join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


class ProcFS(object):
    """Reads process information from a procfs mount (``root``; tests point it at a fake tree)."""

    def __init__(self, root='/proc'):
        self.root = root
        self._btime = None
        try:
            self.clk_tck = os.sysconf('SC_CLK_TCK')
        except (ValueError, OSError, AttributeError):
            self.clk_tck = 100

    def _path(self, pid, name):
        return '%s/%d/%s' % (self.root, pid, name)

    def pids(self):
        try:
            names = os.listdir(self.root)
        except OSError:
            return []
        return [int(name) for name in names if name.isdigit()]

    def stat(self, pid):
        raw = _read_bytes('%s/%d/stat' % (self.root, pid))
        return parse_stat(raw) if raw else None

    def cmdline_raw(self, pid):
        return _read_bytes('%s/%d/cmdline' % (self.root, pid))

    def environ(self, pid):
        raw = _read_bytes(self._path(pid, 'environ'))
        return None if raw is None else parse_environ(raw)

    def _readlink(self, pid, name):
        try:
            return os.readlink(self._path(pid, name))
        except OSError:
            return None

    def cwd(self, pid):
        return self._readlink(pid, 'cwd')

    def exe(self, pid):
        target = self._readlink(pid, 'exe')
        if target and target.endswith(' (deleted)'):
            target = target[:-len(' (deleted)')]
        return target

    def uid(self, pid):
        raw = _read_bytes(self._path(pid, 'status'))
        if raw is not None:
            uid = parse_status_uid(raw)
            if uid is not None:
                return uid
        try:
            return os.stat(self._path(pid, '')).st_uid
        except OSError:
            return None

    def cgroup(self, pid):
        raw = _read_bytes(self._path(pid, 'cgroup'))
        return None if raw is None else parse_cgroup(raw)

    def fd_targets(self, pid):
        """Link targets of the open file descriptors of pid ([] when unreadable or gone)."""
        fd_dir = '%s/%d/fd/' % (self.root, pid)
        try:
            names = os.listdir(fd_dir)
        except OSError:
            return []
        targets = []
        readlink = os.readlink
        for name in names:
            try:
                targets.append(readlink(fd_dir + name))
            except OSError:
                continue
        return targets

    def net_tcp(self):
        """The texts of net/tcp and net/tcp6 (this network namespace)."""
        texts = []
        for name in ('tcp', 'tcp6'):
            raw = _read_bytes('%s/net/%s' % (self.root, name))
            if raw:
                texts.append(_decode(raw))
        return texts

    def boot_time(self):
        if self._btime is None:
            raw = _read_bytes(self.root + '/stat') or b''
            for line in _decode(raw).splitlines():
                if line.startswith('btime '):
                    self._btime = int(line.split()[1])
                    break
            else:
                self._btime = 0
        return self._btime

    def start_time(self, starttime_ticks):
        """Epoch seconds of a process start (stat field 22 is in clock ticks since boot)."""
        return self.boot_time() + float(starttime_ticks) / self.clk_tck

    def read_text(self, path):
        raw = _read_bytes(path)
        return None if raw is None else _decode(raw)


class Snapshot(object):
    """One pass over /proc: stat and cmdline of every user-space, non-zombie process.

    Other fields are read lazily and cached, only for the processes that need them. A process that
    vanishes at any point is simply absent (or has empty details): every reader tolerates it.
    """

    def __init__(self, source):
        self.source = source
        self.stat = {}
        self.argv = {}
        self.sgl = set()       # pids whose command line mentions sgl (sglang, sgl_diffusion)
        self._cache = {}
        stat_of = source.stat
        cmdline_of = source.cmdline_raw
        for pid in source.pids():
            st = stat_of(pid)
            if st is None or st.flags & PF_KTHREAD or st.state in GONE_STATES:
                continue
            raw = cmdline_of(pid)
            if raw is None:
                continue
            self.stat[pid] = st
            self.argv[pid] = raw          # parsed on demand (argv_of)
            if b'sgl' in raw or st.comm.startswith(TITLE_PREFIXES):
                self.sgl.add(pid)
        self.parent_of = dict((pid, st.ppid) for pid, st in self.stat.items())
        self.children = children_map(self.parent_of)

    def argv_of(self, pid):
        argv = self.argv.get(pid)
        if isinstance(argv, bytes):
            argv = parse_cmdline(argv)
            self.argv[pid] = argv
        return argv or []

    def _cached(self, name, pid):
        key = (name, pid)
        if key not in self._cache:
            self._cache[key] = getattr(self.source, name)(pid)
        return self._cache[key]

    def environ(self, pid):
        return self._cached('environ', pid)

    def cgroup(self, pid):
        return self._cached('cgroup', pid) or []

    def fd_targets(self, pid):
        return self.source.fd_targets(pid)   # read once per process by discover(): no cache

    def cwd(self, pid):
        return self._cached('cwd', pid)

    def exe(self, pid):
        return self._cached('exe', pid)

    def uid(self, pid):
        return self._cached('uid', pid)


# --------------------------------------------------------------------------------------------------
# Discovery
# --------------------------------------------------------------------------------------------------

def _member_role(argv, stat, is_main):
    if is_main:
        return 'server'
    title = sglang_title(argv, stat.comm if stat else None)
    if title is not None:
        return role_from_title(title)
    py = parse_python_argv(argv)
    code = (py or {}).get('code') or ''
    if 'multiprocessing.resource_tracker' in code:
        return 'resource_tracker'
    if 'multiprocessing.forkserver' in code:
        return 'forkserver'
    if 'multiprocessing.spawn' in code or '--multiprocessing-fork' in argv:
        return 'spawn_child'
    return 'child'


def resolve_executable(argv0, path_env, cwd, exe, virtual_env=None, is_executable=None):
    """The absolute path of the interpreter as the process started it.

    argv[0] when absolute; a relative argv[0] with a slash, against the process's cwd; a bare name,
    through the process's own PATH; else the /proc/<pid>/exe target. /proc/<pid>/exe has symlinks
    resolved, which turns a venv's python into the system python (losing the venv), so for a
    retitled process the venv's python (from VIRTUAL_ENV) is preferred when it is the same binary.
    """
    if is_executable is None:
        def is_executable(path):
            return os.path.isfile(path) and os.access(path, os.X_OK)
    if argv0 and not argv0.startswith(TITLE_PREFIXES):
        if argv0.startswith('/'):
            return argv0
        if '/' in argv0:
            if cwd:
                return os.path.normpath(os.path.join(cwd, argv0))
        elif path_env:
            for directory in path_env.split(':'):
                if directory.startswith('/'):
                    candidate = os.path.join(directory, argv0)
                    if is_executable(candidate):
                        return candidate
    if virtual_env and exe:
        for name in ('python3', 'python'):
            candidate = os.path.join(virtual_env, 'bin', name)
            try:
                if is_executable(candidate) and os.path.realpath(candidate) == os.path.realpath(exe):
                    return candidate
            except OSError:
                continue
    return exe


class _Group(object):
    """A server being assembled: a matched main process, or a group of orphans."""

    def __init__(self, main, members, classification=None, orphaned=False, roots=None):
        self.main = main
        self.members = set(members)
        self.classification = classification
        self.orphaned = orphaned
        self.roots = set(roots or [main])      # who gets SIGTERM
        self.attached = {}                     # pid -> how an orphan/holder outside the tree was attached
        self.managed = False


class Discovery(object):
    """The result of discover(): JSON-ready lists plus what the stop needs (identity, protected)."""

    def __init__(self):
        self.servers = []
        self.gpu_holders_unrelated = []
        self.ignored = []
        self.listeners = []
        self.protected = set()
        self.identity = {}        # pid -> starttime of every member of a reported server

    @property
    def strays(self):
        return [server for server in self.servers if not server['managed']]

    @property
    def managed(self):
        return [server for server in self.servers if server['managed']]


def own_tree(parent_of, children, self_pid):
    """This process, its ancestors and its descendants: never touched."""
    tree = set([self_pid])
    tree.update(ancestors(parent_of, self_pid))
    tree.update(descendants(children, self_pid))
    return tree


OWN_TREE_REASON = 'runs this module (its own process tree is never touched)'
EXCLUDED_REASON = 'excluded (exclude_pids)'


class _Discoverer(object):
    """The steps of discover(), sharing one snapshot. Each step reads the result of the previous."""

    def __init__(self, source, unit, port, exclude_pids, include_gpu_holders, gpu_device_glob, self_pid):
        self.snap = Snapshot(source)
        self.stat = self.snap.stat
        self.children = self.snap.children
        self.unit = normalize_unit(unit)
        self.port = port
        self.include_gpu_holders = include_gpu_holders
        self.match_device = compile_device_glob(gpu_device_glob)
        self.self_pid = self_pid
        self.protected = own_tree(self.snap.parent_of, self.children, self_pid) | set((0, 1))
        self.excluded = set()
        for pid in exclude_pids or ():
            if pid in self.stat:
                self.excluded.add(pid)
                self.excluded.update(descendants(self.children, pid))
        self.blocked = self.protected | self.excluded
        self.ignored = {}
        self.classes = dict((pid, classify_argv(self.snap.argv_of(pid), self.stat[pid].comm))
                            for pid in self.snap.sgl)
        self.titled = set(pid for pid, c in self.classes.items() if c.kind == TITLED)
        self.never = set(pid for pid, c in self.classes.items() if c.kind in (ROUTER, CLIENT))
        self.devices_of = {}
        self.sockets_of = {}
        self.groups = []
        self.member_of = {}

    def ignore(self, pid, reason):
        self.ignored.setdefault(pid, reason)

    def subtree(self, pid):
        """pid and its descendants, not entering protected, excluded, router or client subtrees."""
        return set([pid]) | descendants(self.children, pid, stop=self.blocked | self.never)

    def spared(self, pid):
        """Inside a client's or a router's tree (and not inside a server's)."""
        return any(p in self.never for p in [pid] + ancestors(self.snap.parent_of, pid))

    # 1 ------------------------------------------------------------------------------------------
    def find_servers(self):
        mains = set()
        for pid, c in self.classes.items():
            if c.kind == SERVER or (c.kind == CANDIDATE and descendants(self.children, pid) & self.titled):
                mains.add(pid)
        for pid in sorted(mains):
            if any(a in mains for a in ancestors(self.snap.parent_of, pid)):
                continue  # part of an enclosing server (a server launched by a server)
            if pid in self.protected:
                self.ignore(pid, OWN_TREE_REASON)
            elif pid in self.excluded:
                self.ignore(pid, EXCLUDED_REASON)
            else:
                self.groups.append(_Group(pid, self.subtree(pid), self.classes[pid]))

    # 2 ------------------------------------------------------------------------------------------
    def find_orphans(self):
        """Retitled SGLang processes no server claims, re-parented to PID 1 or a subreaper.

        A spawn child keeps its launcher's process group and a subreaper has its own, so a titled
        process whose live parent shares its process group was started by that parent - a client's
        in-process engine, say - and is left alone. Orphans of one process group form one group.
        """
        claimed = set()
        for group in self.groups:
            claimed |= group.members
        subtrees = {}
        for pid in sorted(self.titled - claimed - self.blocked):
            st = self.stat[pid]
            parent = self.stat.get(st.ppid)
            if st.ppid > 1 and parent is not None and parent.pgid == st.pgid:
                continue
            if not any(pid in members for members in subtrees.values()):
                subtrees[pid] = self.subtree(pid) - claimed
        by_pgid = {}
        for root in sorted(subtrees):
            by_pgid.setdefault(self.stat[root].pgid, []).append(root)
        orphans = []
        for pgid in sorted(by_pgid):
            members = set()
            for root in by_pgid[pgid]:
                members |= subtrees[root]
            orphans.append(_Group(min(members), members, orphaned=True, roots=by_pgid[pgid]))
            claimed |= members
        for pid in sorted(self.titled - claimed):
            if pid in self.protected:
                self.ignore(pid, OWN_TREE_REASON)
            elif pid in self.excluded:
                self.ignore(pid, EXCLUDED_REASON)
            else:
                parent = self.stat[pid].ppid
                self.ignore(pid, 'SGLang worker of a live process that is not a server (pid %d: %s)'
                            % (parent, title_of(redact_argv(self.snap.argv_of(parent))[0])[:120]))
        return orphans

    # 3 ------------------------------------------------------------------------------------------
    def scan_fds(self, pid):
        devices, sockets = split_fd_targets(self.snap.fd_targets(pid), self.match_device, self.port is not None)
        self.devices_of[pid] = devices
        if sockets:
            self.sockets_of[pid] = sockets

    def read_resources(self, groups):
        """Open devices (of every process when holders or listeners are wanted) and managed flags."""
        if self.include_gpu_holders or self.port is not None:
            for pid in self.stat:
                if pid not in self.protected:
                    self.scan_fds(pid)
        for group in groups:
            for pid in group.members:
                if pid not in self.devices_of:
                    self.scan_fds(pid)
            group.managed = any(cgroup_in_unit(self.snap.cgroup(pid), self.unit) for pid in group.members)

    def group_gpus(self, group):
        return set(path for pid in group.members for path in self.devices_of.get(pid, ()) if is_per_gpu_device(path))

    def group_cgroups(self, group):
        paths = set(primary_cgroup(self.snap.cgroup(pid)) for pid in group.members)
        return set(path for path in paths if is_specific_cgroup(path))

    # 4 ------------------------------------------------------------------------------------------
    def attach_orphans(self, orphan_groups):
        """Attach each orphan group to a live server with the same managed status: same GPU device,
        then same process group, then same (specific) cgroup; the first relation that names exactly
        one server wins. The others become entries of their own."""
        standalone = []
        for orphans in orphan_groups:
            candidates = [g for g in self.groups if g.managed == orphans.managed]
            gpus = self.group_gpus(orphans)
            pgids = set(self.stat[pid].pgid for pid in orphans.roots)
            cgroups = self.group_cgroups(orphans)
            relations = (
                ('same GPU device', lambda g: bool(gpus & self.group_gpus(g))),
                ('same process group', lambda g: self.stat[g.main].pgid in pgids),
                ('same cgroup', lambda g: bool(cgroups & self.group_cgroups(g))),
            )
            target = None
            for how, related in relations:
                matches = [g for g in candidates if related(g)]
                if len(matches) == 1:
                    target = matches[0]
                    break
            if target is None:
                standalone.append(orphans)
                continue
            target.members |= orphans.members
            target.roots |= set(orphans.roots)
            for pid in orphans.members:
                target.attached[pid] = 'orphan (%s)' % how
        self.groups.extend(standalone)
        for group in self.groups:
            for pid in group.members:
                self.member_of[pid] = group

    # 5 ------------------------------------------------------------------------------------------
    def attach_gpu_holders(self):
        """Holders outside every server join a stray server sharing their (specific) cgroup or their
        process group (one led by a stray member, or whose leader is gone). The rest are returned as
        unrelated: never stopped. Holders under a client or a router, or in the unit, are never attached."""
        own_pgid = self.stat[self.self_pid].pgid if self.self_pid in self.stat else None
        cgroup_owner = {}
        pgid_owner = {}
        for group in self.groups:
            if group.managed:
                continue
            for path in self.group_cgroups(group):
                cgroup_owner.setdefault(path, group)
            for pid in group.members:
                pgid = self.stat[pid].pgid
                if pgid and pgid != own_pgid and (pgid not in self.stat or pgid in group.members):
                    pgid_owner.setdefault(pgid, group)
        unrelated = []
        for pid in sorted(self.devices_of):
            if not self.devices_of[pid] or pid in self.member_of or pid in self.protected:
                continue
            entries = self.snap.cgroup(pid)
            if cgroup_in_unit(entries, self.unit):
                continue
            path = primary_cgroup(entries)
            owner, how = None, None
            if pid not in self.excluded and not self.spared(pid):
                if is_specific_cgroup(path) and path in cgroup_owner:
                    owner, how = cgroup_owner[path], 'same cgroup'
                elif self.stat[pid].pgid in pgid_owner:
                    owner, how = pgid_owner[self.stat[pid].pgid], 'same process group'
            if owner is None:
                unrelated.append(pid)
                continue
            for holder in self.subtree(pid):
                if holder not in self.member_of:
                    owner.members.add(holder)
                    owner.attached[holder] = 'GPU holder (%s)' % how
                    self.member_of[holder] = owner
            owner.roots.add(pid)
        return [self.holder_entry(pid) for pid in unrelated if pid not in self.member_of]

    def holder_entry(self, pid):
        argv = redact_argv(self.snap.argv_of(pid))[0]
        uid = self.snap.uid(pid)
        return {'pid': pid, 'ppid': self.stat[pid].ppid, 'title': title_of(argv), 'argv': argv, 'uid': uid,
                'user': _user_name(uid), 'cgroup': primary_cgroup(self.snap.cgroup(pid)),
                'gpu_devices': sorted(self.devices_of[pid])}

    # 6 ------------------------------------------------------------------------------------------
    def entries(self, result, now):
        for group in self.groups:
            group.members = set(pid for pid in group.members if pid in self.stat and pid not in self.blocked)
            if not group.members:
                continue
            if group.main not in group.members:
                group.main = min(group.members)
            entry = _entry(self.snap, group, self.devices_of, now)
            if self.port is not None and not group.orphaned and entry['port'] != self.port:
                self.ignore(group.main, 'server on port %s, not on port %s' % (entry['port'], self.port))
                continue
            entry['_roots'] = sorted(pid for pid in group.roots if pid in group.members)
            result.servers.append(entry)
            for pid in group.members:
                result.identity[pid] = self.stat[pid].starttime
        result.servers.sort(key=lambda s: s['main_pid'])

    # 7 ------------------------------------------------------------------------------------------
    def listeners(self):
        """Who listens on the port (pre-flight: free, or held by something that is not SGLang?)."""
        inodes = set()
        for text in self.snap.source.net_tcp():
            inodes |= parse_proc_net_tcp(text, self.port)
        found = []
        for pid in sorted(self.sockets_of):
            if self.sockets_of[pid] & inodes:
                argv = redact_argv(self.snap.argv_of(pid))[0]
                group = self.member_of.get(pid)
                found.append({'pid': pid, 'title': title_of(argv), 'argv': argv,
                              'server_main_pid': group.main if group is not None else None,
                              'managed': group.managed if group is not None else False})
        return found

    def ignored_entries(self):
        """Everything else that mentions sglang, with the reason it is left alone."""
        for pid, c in self.classes.items():
            if pid in self.member_of or pid in self.ignored:
                continue
            if pid in self.protected:
                self.ignore(pid, OWN_TREE_REASON)
            elif c.kind in (ROUTER, CLIENT, TOOL, MENTION, CANDIDATE) and c.reason:
                self.ignore(pid, c.reason)
        return [{'pid': pid, 'title': title_of(redact_argv(self.snap.argv_of(pid))[0]), 'reason': self.ignored[pid]}
                for pid in sorted(self.ignored) if pid in self.stat]


def discover(source=None, unit=DEFAULT_UNIT, port=None, exclude_pids=(), include_gpu_holders=True,
             gpu_device_glob=DEFAULT_GPU_DEVICE_GLOB, self_pid=None, now=None):
    """Find the SGLang servers on this host (the rules are in the modules' documentation).

    ``source`` reads procfs (ProcFS by default); ``self_pid`` is the process whose own tree is
    protected (default: this process).
    """
    d = _Discoverer(source or ProcFS(), unit, port, exclude_pids, include_gpu_holders, gpu_device_glob,
                    os.getpid() if self_pid is None else self_pid)
    result = Discovery()
    result.protected = d.protected
    d.find_servers()
    orphan_groups = d.find_orphans()
    d.read_resources(d.groups + orphan_groups)
    d.attach_orphans(orphan_groups)
    if include_gpu_holders:
        result.gpu_holders_unrelated = d.attach_gpu_holders()
    d.entries(result, time.time() if now is None else now)
    if port is not None:
        result.listeners = d.listeners()
    result.ignored = d.ignored_entries()
    return result


def _user_name(uid):
    if uid is None:
        return None
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return str(uid)


def _entry(snap, group, devices_of, now):
    source = snap.source
    main = group.main
    st = snap.stat[main]
    argv_raw = snap.argv_of(main)
    argv, hidden_args = redact_argv(argv_raw)
    c = group.classification
    args = []
    module = None
    settings = dict((k, None) for k in SETTING_DEFAULTS)
    cwd = snap.cwd(main)
    if c is not None and not group.orphaned:
        module = c.module
        args = c.args
        config = None
        config_file = config_path_of(args)
        if config_file:
            path = config_file if config_file.startswith('/') or not cwd else os.path.join(cwd, config_file)
            text = source.read_text(path)
            config = parse_config_scalars(text) if text else None
        settings = server_settings(args, config)
        args = redact_argv(args)[0]
    env_raw = snap.environ(main) or {}
    env, hidden_env = redact_env(env_raw)
    uid = snap.uid(main)
    members = []
    for pid in sorted(group.members):
        pst = snap.stat[pid]
        margv = redact_argv(snap.argv_of(pid))[0]
        attached = group.attached.get(pid)
        if attached and attached.startswith('GPU holder') and pid in group.roots:
            role = 'gpu_holder'
        else:
            role = _member_role(snap.argv_of(pid), pst, pid == main and not group.orphaned)
        members.append({'pid': pid, 'ppid': pst.ppid, 'role': role, 'title': title_of(margv) or pst.comm,
                        'argv': margv, 'attached': attached})
    gpu_devices = set()
    for pid in group.members:
        gpu_devices.update(devices_of.get(pid, ()))
    start = source.start_time(st.starttime)
    parent = snap.stat.get(st.ppid)
    return {
        'main_pid': main,
        'pids': sorted(group.members),
        'members': members,
        'argv': argv,
        'executable': resolve_executable(argv_raw[0] if argv_raw else None, env_raw.get('PATH'), cwd,
                                         snap.exe(main), env_raw.get('VIRTUAL_ENV')),
        'module': module,
        'args': args,
        'env': env,
        'cwd': cwd,
        'user': _user_name(uid),
        'uid': uid,
        'host': settings['host'],
        'port': settings['port'],
        'tp': settings['tp'],
        'dp': settings['dp'],
        'pp': settings['pp'],
        'cgroup': primary_cgroup(snap.cgroup(main)),
        'managed': group.managed,
        'orphaned': group.orphaned,
        'gpu_devices': sorted(gpu_devices),
        'start_time': round(start, 2),
        'uptime_seconds': round(max(0.0, now - start), 2),
        'ppid': st.ppid,
        'parent': None if parent is None or st.ppid <= 1 else {
            'pid': st.ppid, 'title': title_of(redact_argv(snap.argv_of(st.ppid))[0]) or parent.comm},
        'redacted_args': hidden_args,
        'redacted_env': hidden_env,
    }


def public(server):
    """A server entry without the private keys (those starting with '_')."""
    return dict((k, v) for k, v in server.items() if not k.startswith('_'))


# --------------------------------------------------------------------------------------------------
# Stopping
# --------------------------------------------------------------------------------------------------

class Target(object):
    """A process to stop, identified by pid *and* start time (a reused pid is another process)."""

    __slots__ = ('pid', 'starttime', 'role', 'main_pid', 'term')

    def __init__(self, pid, starttime, role, main_pid, term):
        self.pid = pid
        self.starttime = starttime
        self.role = role
        self.main_pid = main_pid
        self.term = term


def plan_targets(servers, identity):
    """Targets for stopping ``servers`` (entries from discover()); SIGTERM goes to each entry's roots:
    its main process and the top of every orphaned subtree attached to it."""
    targets = []
    for server in servers:
        roots = set(server.get('_roots') or [server['main_pid']])
        for member in server['members']:
            pid = member['pid']
            if pid in identity:
                targets.append(Target(pid, identity[pid], member['role'], server['main_pid'], pid in roots))
    targets.sort(key=lambda t: t.pid)
    return targets


_HAS_PIDFD = hasattr(os, 'pidfd_open') and hasattr(signal, 'pidfd_send_signal')


def is_alive(source, pid, starttime):
    """True while pid is the same process (same start time) and has not exited (zombies are gone)."""
    st = source.stat(pid)
    return st is not None and st.starttime == starttime and st.state not in GONE_STATES


def send_signal(source, pid, starttime, sig):
    """Deliver sig to pid only if it is still the process that started at ``starttime``.

    With pidfd (Linux 5.3+, Python 3.9+) the process is pinned first, then its start time checked,
    then signalled through the pidfd: a pid reused in between cannot be hit. Returns True when the
    signal was delivered, False when the process is gone. PermissionError propagates.
    """
    pidfd = None
    if _HAS_PIDFD:
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.ENOSYS, errno.EINVAL, errno.EPERM):
                raise
            pidfd = None
    try:
        if not is_alive(source, pid, starttime):
            return False
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, sig)
        else:
            os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _errors_pids(errors):
    return set(pid for pid, _message in errors)


def _guard(pid, protected):
    return pid > 1 and pid != os.getpid() and pid not in protected


def stop_targets(targets, source, grace_period, kill_timeout, protected=(), clock=time.monotonic,
                 sleep=time.sleep, poll_interval=0.05):
    """SIGTERM the roots, wait up to grace_period for every target, SIGKILL the rest, wait up to
    kill_timeout. Returns a dict:

    ``stopped``: [{pid, main_pid, role, signal, seconds}] for the targets gone (signal is 'SIGTERM',
    'SIGKILL' or 'already gone'; seconds since the first SIGTERM); ``remaining``: targets still
    alive; ``signalled``: whether any signal was delivered; ``errors``: [(pid, message)].
    """
    protected = set(protected)
    # Own ancestors, recomputed now: never signal them, whatever the plan says.
    pid = os.getpid()
    while pid > 1:
        st = source.stat(pid)
        if st is None:
            break
        protected.add(pid)
        pid = st.ppid
    stopped = {}
    errors = []
    signalled = False
    start = clock()
    pending = []
    for target in targets:
        if not _guard(target.pid, protected):
            errors.append((target.pid, 'refused: protected process'))
        elif is_alive(source, target.pid, target.starttime):
            pending.append(target)
        else:
            stopped[target.pid] = (target, ALREADY_GONE, 0.0)

    def deliver(target, sig, phase):
        try:
            if send_signal(source, target.pid, target.starttime, sig):
                return True
            # Gone before this signal reached it: ended by the SIGTERM round if one was sent.
            stopped[target.pid] = (target, SIGTERM_NAME if signalled else ALREADY_GONE, round(clock() - start, 2))
        except PermissionError as exc:
            errors.append((target.pid, '%s: %s' % (phase, exc.strerror or exc)))
        except OSError as exc:
            errors.append((target.pid, '%s: %s' % (phase, exc)))
        return False

    def wait(targets_left, deadline, phase):
        while True:
            still = []
            for target in targets_left:
                if target.pid in stopped:
                    continue
                if is_alive(source, target.pid, target.starttime):
                    still.append(target)
                else:
                    stopped[target.pid] = (target, phase, round(clock() - start, 2))
            if not still or clock() >= deadline:
                return still
            sleep(min(poll_interval, max(0.0, deadline - clock())))

    for target in pending:
        if target.term and deliver(target, signal.SIGTERM, SIGTERM_NAME):
            signalled = True
    if not signalled:
        # Every root is gone since the scan: nobody will stop the rest, so each gets its own SIGTERM.
        refused = _errors_pids(errors)
        for target in pending:
            if target.pid not in stopped and target.pid not in refused and \
                    deliver(target, signal.SIGTERM, SIGTERM_NAME):
                signalled = True
    left = wait(pending, start + grace_period, SIGTERM_NAME)
    if left:
        for target in left:
            if target.pid in _errors_pids(errors):
                continue
            if deliver(target, signal.SIGKILL, SIGKILL_NAME):
                signalled = True
        left = wait(left, clock() + kill_timeout, SIGKILL_NAME)
    return {
        'stopped': [{'pid': t.pid, 'main_pid': t.main_pid, 'role': t.role, 'signal': how, 'seconds': seconds}
                    for t, how, seconds in sorted(stopped.values(), key=lambda item: item[0].pid)],
        'remaining': left,
        'signalled': signalled,
        'errors': errors,
    }


# --------------------------------------------------------------------------------------------------
# Waiting for resources to be released
# --------------------------------------------------------------------------------------------------

NVIDIA_SMI_APPS_ARGS = ['--query-compute-apps=pid,used_gpu_memory', '--format=csv,noheader,nounits']
NVIDIA_SMI_GPUS_ARGS = ['--query-gpu=index,memory.used', '--format=csv,noheader,nounits']


def wait_gpu_release_nvidia_smi(run_command, nvidia_smi, stopped_pids, threshold_mib, timeout,
                                clock=time.monotonic, sleep=time.sleep, interval=0.5):
    """Poll nvidia-smi until no stopped pid is a compute app and every GPU is under the threshold.

    ``run_command(argv) -> (rc, stdout, stderr)``. Returns (released, seconds, state) where state
    has the last readings: compute_apps, gpus, stopped_pids_listed, gpus_over_threshold, error.
    """
    start = clock()
    state = {'compute_apps': [], 'gpus': [], 'stopped_pids_listed': [], 'gpus_over_threshold': [], 'error': None}
    while True:
        rc1, out1, err1 = run_command([nvidia_smi] + NVIDIA_SMI_APPS_ARGS)
        rc2, out2, err2 = run_command([nvidia_smi] + NVIDIA_SMI_GPUS_ARGS)
        if rc1 == 0 and rc2 == 0:
            state['compute_apps'] = parse_compute_apps(out1)
            state['gpus'] = parse_gpu_memory(out2)
            state.update(gpu_release_state(state['compute_apps'], state['gpus'], stopped_pids, threshold_mib))
            state['error'] = None
            if not state['stopped_pids_listed'] and not state['gpus_over_threshold']:
                return True, round(clock() - start, 2), state
        else:
            state['error'] = 'nvidia-smi failed (rc %s): %s' % (rc1 or rc2, ((err1 or '') + (err2 or '')).strip()[:300])
        if clock() - start >= timeout:
            return False, round(clock() - start, 2), state
        sleep(interval)


def device_holders(source, gpu_device_glob, skip=()):
    """{pid: [device paths]} of every process holding a file matching the glob (except ``skip``)."""
    match = compile_device_glob(gpu_device_glob)
    holders = {}
    for pid in source.pids():
        if pid not in skip:
            found = split_fd_targets(source.fd_targets(pid), match)[0]
            if found:
                holders[pid] = sorted(found)
    return holders


def holder_baseline(source, gpu_device_glob, exclude=(), protected=()):
    """{pid: starttime} of the processes holding a matching device file now, except ``exclude``:
    taken before a stop, it names the holders that were deliberately left alone."""
    baseline = {}
    for pid in device_holders(source, gpu_device_glob, skip=protected):
        if pid in exclude:
            continue
        st = source.stat(pid)
        if st is not None:
            baseline[pid] = st.starttime
    return baseline


def wait_gpu_release_devices(source, gpu_device_glob, baseline, timeout, protected=(),
                             clock=time.monotonic, sleep=time.sleep, interval=0.2):
    """Without nvidia-smi: wait until no process holds a matching device file, except those that
    already held one before the stop and were left alone (``baseline``: {pid: starttime}).

    Returns (released, seconds, {'holders': [{pid, gpu_devices}]}).
    """
    start = clock()
    while True:
        holders = []
        for pid, devices in sorted(device_holders(source, gpu_device_glob, skip=protected).items()):
            st = source.stat(pid)
            if st is None or st.state in GONE_STATES:
                continue
            if baseline.get(pid) == st.starttime:
                continue
            holders.append({'pid': pid, 'gpu_devices': devices})
        if not holders:
            return True, round(clock() - start, 2), {'holders': []}
        if clock() - start >= timeout:
            return False, round(clock() - start, 2), {'holders': holders}
        sleep(interval)


def port_is_free(host, port):
    """True when ``port`` can be bound on ``host`` (SO_REUSEADDR, as uvicorn binds).

    An address that is not on this host any more (EADDRNOTAVAIL) cannot be held: free.
    """
    try:
        infos = socket.getaddrinfo(host or None, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    except socket.gaierror:
        return True
    for family, socktype, proto, _canon, address in infos:
        sock = socket.socket(family, socktype, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            if exc.errno not in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
                return False
        finally:
            sock.close()
    return True


def wait_ports_free(endpoints, timeout, clock=time.monotonic, sleep=time.sleep, interval=0.2, is_free=port_is_free):
    """Wait until every (host, port) can be bound. Returns (released, seconds, [busy endpoints])."""
    start = clock()
    while True:
        busy = [(host, port) for host, port in endpoints if not is_free(host, port)]
        if not busy:
            return True, round(clock() - start, 2), []
        if clock() - start >= timeout:
            return False, round(clock() - start, 2), busy
        sleep(interval)


def port_listeners(source, port):
    """[(pid, argv)] of the processes with a socket listening on ``port`` (this network namespace)."""
    inodes = set()
    for text in source.net_tcp():
        inodes |= parse_proc_net_tcp(text, port)
    found = []
    if not inodes:
        return found
    for pid in source.pids():
        if split_fd_targets(source.fd_targets(pid), lambda path: False, want_sockets=True)[1] & inodes:
            found.append((pid, redact_argv(parse_cmdline(source.cmdline_raw(pid) or b''))[0]))
    return found


# --------------------------------------------------------------------------------------------------
# What the two modules do (they only map Ansible parameters and results)
# --------------------------------------------------------------------------------------------------

class ModuleFailure(Exception):
    """A failure to report with fail_json: ``msg`` plus the partial result."""

    def __init__(self, msg, result=None):
        super(ModuleFailure, self).__init__(msg)
        self.msg = msg
        self.result = result or {}


def _discover_from_params(params, source=None, self_pid=None):
    return discover(
        source=source,
        unit=params.get('unit') or DEFAULT_UNIT,
        port=params.get('port'),
        exclude_pids=params.get('exclude_pids') or (),
        include_gpu_holders=params.get('include_gpu_holders', True),
        gpu_device_glob=params.get('gpu_device_glob') or DEFAULT_GPU_DEVICE_GLOB,
        self_pid=self_pid,
    )


def info(params, source=None, self_pid=None):
    """Result of inferops.sglang.server_process_info."""
    found = _discover_from_params(params, source, self_pid)
    return {
        'changed': False,
        'servers': [public(s) for s in found.servers],
        'strays': [public(s) for s in found.strays],
        'managed': [public(s) for s in found.managed],
        'gpu_holders_unrelated': found.gpu_holders_unrelated,
        'ignored': found.ignored,
        'listeners': found.listeners,
    }


def _describe(source, pid):
    argv = redact_argv(parse_cmdline(source.cmdline_raw(pid) or b''))[0]
    return '%d (%s)' % (pid, title_of(argv)[:160] or '?')


def absent(params, run_command=None, nvidia_smi=None, check_mode=False, want_diff=False, source=None,
           self_pid=None, clock=time.monotonic, sleep=time.sleep):
    """Result of inferops.sglang.server_process state=absent; raises ModuleFailure.

    ``nvidia_smi`` is the resolved path of nvidia-smi or None; ``run_command(argv) -> (rc, out, err)``.
    """
    source = source or ProcFS()
    found = _discover_from_params(params, source, self_pid)
    strays = found.strays
    targets = plan_targets(strays, found.identity)
    before = render_process_lines([m for s in strays for m in s['members']])
    result = {
        'changed': bool(targets),
        'msg': '',
        'strays': [public(s) for s in strays],
        'managed': [public(s) for s in found.managed],
        'gpu_holders_unrelated': found.gpu_holders_unrelated,
        'ignored': found.ignored,
        'target_pids': sorted(t.pid for t in targets),
        'stopped': [],
        'gpu_release': {'waited': False, 'method': None, 'seconds': 0.0, 'gpus': [], 'compute_apps': [],
                        'holders': []},
        'port_release': {'waited': False, 'seconds': 0.0, 'endpoints': []},
    }
    if want_diff:
        result['diff'] = {'before_header': 'stray SGLang processes', 'after_header': 'stray SGLang processes',
                          'before': before, 'after': ''}
    if not targets:
        result['msg'] = 'no stray SGLang server process found'
        return result
    summary = '%d stray SGLang server(s), %d process(es): %s' % (
        len(strays), len(targets), ', '.join(str(t.pid) for t in targets))
    if check_mode:
        result['msg'] = 'would stop ' + summary
        return result

    glob = params.get('gpu_device_glob') or DEFAULT_GPU_DEVICE_GLOB
    wait_gpu = params.get('wait_gpu_release', True)
    baseline = None
    if wait_gpu and not nvidia_smi:
        baseline = holder_baseline(source, glob, exclude=set(t.pid for t in targets), protected=found.protected)

    grace_period = float(params.get('grace_period', 60))
    kill_timeout = float(params.get('kill_timeout', 30))
    stopped_pids = set()
    result['changed'] = False
    # Round 0 stops what the scan found. SGLang's own shutdown can leave a worker it spawned meanwhile
    # orphaned: up to two more rounds stop such orphans. A stray server (not orphans) seen again after
    # a round was restarted by someone (a shell loop, a supervisor): that is a failure.
    for stop_round in range(3):
        if stop_round:
            again = _discover_from_params(params, source, self_pid)
            if not again.strays:
                break
            restarted = [s for s in again.strays if not s['orphaned']]
            if restarted or stop_round == 2:
                raise ModuleFailure(_running_again(restarted or again.strays), result)
            targets = plan_targets(again.strays, again.identity)
        outcome = stop_targets(targets, source, grace_period, kill_timeout, protected=found.protected,
                               clock=clock, sleep=sleep)
        result['stopped'].extend(outcome['stopped'])
        result['changed'] = result['changed'] or outcome['signalled']
        stopped_pids.update(t.pid for t in targets)
        if want_diff:
            remaining = set(t.pid for t in outcome['remaining'])
            result['diff']['after'] = render_process_lines(
                [m for srv in strays for m in srv['members'] if m['pid'] in remaining])
        if outcome['errors']:
            raise ModuleFailure('could not stop %s' % '; '.join(
                '%s: %s' % (_describe(source, pid), message) for pid, message in outcome['errors']), result)
        if outcome['remaining']:
            raise ModuleFailure(
                'still running %s s after SIGKILL (uninterruptible sleep in a driver call?): %s'
                % (params.get('kill_timeout', 30), ', '.join(_describe(source, t.pid) for t in outcome['remaining'])),
                result)
    result['target_pids'] = sorted(stopped_pids)
    target_pids = stopped_pids

    if wait_gpu:
        timeout = float(params.get('gpu_release_timeout', 120))
        threshold = int(params.get('gpu_memory_threshold_mib', 1024))
        if nvidia_smi:
            released, seconds, state = wait_gpu_release_nvidia_smi(run_command, nvidia_smi, target_pids, threshold,
                                                                   timeout, clock=clock, sleep=sleep)
            result['gpu_release'].update(waited=True, method='nvidia-smi', seconds=seconds,
                                         gpus=state['gpus'], compute_apps=state['compute_apps'])
        else:
            released, seconds, state = wait_gpu_release_devices(source, glob, baseline, timeout,
                                                                protected=found.protected, clock=clock, sleep=sleep)
            result['gpu_release'].update(waited=True, method='device-files', seconds=seconds,
                                         holders=state['holders'])
        if not released:
            raise ModuleFailure(_gpu_failure(source, state, seconds, threshold, glob), result)

    if params.get('wait_port_free', True):
        endpoints = sorted(set((s['host'], s['port']) for s in strays if s['port'] is not None),
                           key=lambda e: (str(e[0]), e[1]))
        if endpoints:
            released, seconds, busy = wait_ports_free(endpoints, float(params.get('gpu_release_timeout', 120)),
                                                      clock=clock, sleep=sleep)
            result['port_release'] = {'waited': True, 'seconds': seconds,
                                      'endpoints': [{'host': h, 'port': p} for h, p in endpoints]}
            if not released:
                raise ModuleFailure('port(s) still in use %s s after the stop: %s' % (
                    seconds, '; '.join(_describe_port(source, host, port) for host, port in busy)), result)

    # A parent that restarts what was stopped a little later would undo all of this.
    again = _discover_from_params(params, source, self_pid).strays
    if again:
        raise ModuleFailure(_running_again(again), result)
    result['msg'] = 'stopped ' + summary
    return result


def _running_again(strays):
    return ('stray SGLang server(s) running again after the stop (restarted by a parent?): %s'
            % '; '.join(_describe_server(s) for s in strays))


def _gpu_failure(source, state, seconds, threshold, glob):
    """The message of a GPU release timeout, naming what still holds the GPUs."""
    if 'holders' in state:
        return 'GPU device files (%s) still held %s s after the stop by: %s' % (glob, seconds, ', '.join(
            '%s holding %s' % (_describe(source, h['pid']), ', '.join(h['gpu_devices'])) for h in state['holders']))
    problems = []
    if state['error']:
        problems.append(state['error'])
    if state['stopped_pids_listed']:
        problems.append('nvidia-smi still lists stopped pids %s' % state['stopped_pids_listed'])
    for gpu in state['gpus_over_threshold']:
        problems.append('GPU %d uses %s MiB (threshold %s MiB)' % (gpu['index'], gpu['memory_used_mib'], threshold))
    holders = ['%s: %s MiB' % (_describe(source, app['pid']), app['used_memory_mib']) for app in state['compute_apps']]
    return 'GPU memory not released %s s after the stop: %s; compute processes: %s' % (
        seconds, '; '.join(problems), ', '.join(holders) or 'none listed')


def _describe_port(source, host, port):
    holders = ', '.join('%d (%s)' % (pid, title_of(argv)[:160]) for pid, argv in port_listeners(source, port))
    return '%s:%d held by %s' % (host, port, holders or 'a process this host cannot see')


def _describe_server(server):
    parent = server['parent']
    return 'main pid %d (%s), parent %s' % (
        server['main_pid'], title_of(server['argv'])[:160],
        '%d (%s)' % (parent['pid'], parent['title'][:120]) if parent else 'none')
