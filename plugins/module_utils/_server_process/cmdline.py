# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
# Used by the server_process modules, host_facts and the rules filters (gpus_needed, server_settings).
"""What a command line says about SGLang: which processes are servers, and the settings of a server.

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

import os
import re

DEFAULT_HOST = '127.0.0.1'
DEFAULT_PORT = 30000

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

# Server flags -> setting name; argparse semantics, the last occurrence wins. Checked against
# sgl-project/sglang ``python/sglang/srt/server_args.py`` (whose ServerArgs fields, declared in
# ``srt/arg_groups/fields/serving.py`` and ``parallel.py``, become the flags): ``--tp-size`` has the alias
# ``--tensor-parallel-size``, ``--dp-size`` ``--data-parallel-size``, ``--pp-size``
# ``--pipeline-parallel-size``; ``--tp``, ``--dp`` and ``--pp`` are the unique prefixes argparse expands.
SETTING_FLAGS = {
    '--host': 'host',
    '--port': 'port',
    '--tp-size': 'tp', '--tensor-parallel-size': 'tp', '--tp': 'tp',
    '--dp-size': 'dp', '--data-parallel-size': 'dp', '--dp': 'dp',
    '--pp-size': 'pp', '--pipeline-parallel-size': 'pp', '--pp': 'pp',
    '--nnodes': 'nnodes',
}
# Flags without a value (store_true) that the GPU count depends on.
_BOOL_SETTING_FLAGS = {'--enable-dp-attention': 'dp_attention'}
_INT_SETTINGS = ('port', 'tp', 'dp', 'pp', 'nnodes')
SETTING_DEFAULTS = {'host': DEFAULT_HOST, 'port': DEFAULT_PORT, 'tp': 1, 'dp': 1, 'pp': 1}
_FALSE_WORDS = ('', 'false', 'no', 'off', '0', 'none', 'null', '~')

_ROLE_RANK_SUFFIX_RE = re.compile(r'(?:_[A-Z]+(?:_[A-Z]+)*[0-9]+)+$')


def is_python_interpreter(path):
    """Whether the file name of ``path`` is a Python interpreter's: python, python3, python3.12, python3.12d,
    python3.13t, pypy3 (the same rule for argv[0] and for the real file /proc/<pid>/exe names)."""
    return bool(path) and _PYTHON_RE.match(os.path.basename(path)) is not None


def parse_python_argv(argv):
    """Parse argv like the CPython interpreter does, when argv[0] is a Python interpreter.

    Returns None when argv[0] is not a Python interpreter, else a dict with ``interpreter`` and one
    of ``module`` (-m), ``code`` (-c), ``script`` (first positional argument; '-' is stdin), plus
    ``args`` (what the program sees in sys.argv[1:]) and ``flags`` (the interpreter's one-letter options without a
    value, in order: ``'uE'`` for ``-u -E``). Options may be combined (``-um mod``) and
    option values attached (``-msglang.launch_server``), as CPython allows.
    """
    if not argv or not is_python_interpreter(argv[0]):
        return None
    result = {'interpreter': argv[0], 'module': None, 'code': None, 'script': None, 'args': [], 'flags': ''}
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
                result['flags'] += opt
                j += 1
            i += 2 if consumed_next else 1
            continue
        break
    if i < n:
        result['script'] = argv[i]
        result['args'] = argv[i + 1:]
    return result


def ignores_pythonpath(argv):
    """Whether a command line's Python interpreter ignores PYTHONPATH (and every PYTHON* variable): ``-E`` or ``-I``
    (3.4) among its options (:func:`parse_python_argv`). False for anything that is not a Python interpreter."""
    parsed = parse_python_argv([str(word) for word in argv or []])
    return parsed is not None and bool(set(parsed['flags']) & set('EI'))


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


def _flag_of(key):
    """A mapping key (``tp_size``, ``--tp-size``, ``tp-size``) as a flag: ``--tp-size``."""
    return '--' + str(key).lstrip('-').split('=', 1)[0].replace('_', '-')


def config_values(config):
    """The settings of an SGLang --config file as {'--flag': value}.

    :param config: None, the file's text (read with :func:`parse_config_scalars`), or a mapping of its keys
        (with or without leading dashes, ``_`` or ``-``) to values (what a YAML parser gives).
    :returns: dict, possibly empty.
    :raises TypeError: for anything else.
    """
    if config is None:
        return {}
    if isinstance(config, str):
        return parse_config_scalars(config)
    if hasattr(config, 'items'):
        return dict((_flag_of(key), value) for key, value in config.items())
    raise TypeError('expected the text of a --config file or a mapping of its settings, got %s' % type(config).__name__)


def _true(value):
    """A store_true flag's value in a mapping or a config file: False, None and 'false'-like text are off."""
    if value is None or value is False:
        return False
    return str(value).strip().lower() not in _FALSE_WORDS


def _raw_settings(args, config=None):
    """{setting name: raw value} from the --config values, then the arguments (a mapping or an argv list)."""
    raw = {}
    for flag, value in config_values(config).items():
        if flag in SETTING_FLAGS:
            raw[SETTING_FLAGS[flag]] = value
        elif flag in _BOOL_SETTING_FLAGS:
            raw[_BOOL_SETTING_FLAGS[flag]] = _true(value)
    if hasattr(args, 'items'):
        for key, value in args.items():
            flag = _flag_of(key)
            if flag in SETTING_FLAGS and value is not None:
                raw[SETTING_FLAGS[flag]] = value
            elif flag in _BOOL_SETTING_FLAGS:
                raw[_BOOL_SETTING_FLAGS[flag]] = _true(value)
        return raw
    if not isinstance(args, (list, tuple)):
        raise TypeError('expected a mapping of arguments or an argv list, got %s' % type(args).__name__)
    args = [str(arg) for arg in args]
    i = 0
    n = len(args)
    while i < n:
        arg = args[i]
        if arg.startswith('--'):
            flag, sep, value = arg.partition('=')
            if flag in SETTING_FLAGS:
                if sep:
                    raw[SETTING_FLAGS[flag]] = value
                elif i + 1 < n:
                    raw[SETTING_FLAGS[flag]] = args[i + 1]
                    i += 1
            elif flag in _BOOL_SETTING_FLAGS and not sep:
                raw[_BOOL_SETTING_FLAGS[flag]] = True
        i += 1
    return raw


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def server_settings(args, config=None):
    """host, port, tp, dp, pp of a server from its arguments (argparse semantics; last flag wins).

    :param args: the server's argv after the module (list of str), or a mapping of server arguments
        (keys with or without leading dashes, ``_`` or ``-``), with every alias in ``SETTING_FLAGS``.
    :param config: its --config file (see :func:`config_values`: the file's text or a mapping of its settings):
        defaults the arguments override, with the same aliases.
    :returns: dict with ``host`` (str), ``port``, ``tp``, ``dp``, ``pp`` (int; SGLang's defaults
        127.0.0.1, 30000, 1, 1, 1). Values that do not parse are None (argparse would have refused to
        start such a server).
    """
    settings = dict(SETTING_DEFAULTS)
    for name, value in _raw_settings(args, config).items():
        if name not in settings:
            continue
        if name in _INT_SETTINGS:
            settings[name] = _int_or_none(value)
        else:
            settings[name] = value if isinstance(value, str) else str(value)
    return settings


def log_level(args, config=None):
    """The server's ``--log-level`` (SGLang's default ``info``), from its arguments over its --config file.

    :param args: a mapping of server arguments (keys with or without leading dashes, ``_`` or ``-``) or an argv list.
    :param config: as :func:`server_settings`.
    :returns: str, lower case, as given (SGLang's choices are checked by its parser, not here).
    """
    level = config_values(config).get('--log-level')
    if hasattr(args, 'items'):
        for key, value in args.items():
            if _flag_of(key) == '--log-level' and value is not None:
                level = value
    else:
        for i, arg in enumerate(args):
            flag, sep, value = str(arg).partition('=')
            if flag == '--log-level':
                level = value if sep else (args[i + 1] if i + 1 < len(args) else level)
    return str(level or 'info').lower()


def gpus_needed(args, config=None):
    """GPUs per node a server with these arguments needs: tp x pp x dp / nnodes (integer division),
    without the dp factor when ``--enable-dp-attention`` is set (the data-parallel attention ranks then
    share the tensor-parallel GPUs).

    :param args: as :func:`server_settings` (argv list or mapping; every alias of tp, dp and pp).
    :param config: as :func:`server_settings`.
    :returns: int.
    :raises ValueError: when a size or ``--nnodes`` is not a positive integer.
    :raises TypeError: when ``args`` is neither a mapping nor a list.
    """
    raw = _raw_settings(args, config)
    sizes = {}
    for name, flag in (('tp', 'tp-size'), ('pp', 'pp-size'), ('dp', 'dp-size'), ('nnodes', 'nnodes')):
        value = raw.get(name, 1)
        size = _int_or_none(value)
        if size is None or size < 1:
            raise ValueError('%s must be a positive integer, got %r' % (flag, value))
        sizes[name] = size
    dp = 1 if raw.get('dp_attention') else sizes['dp']
    return sizes['tp'] * sizes['pp'] * dp // sizes['nnodes']


def config_path_of(args):
    """The --config FILE of a server's arguments (SGLang accepts only the two-argument form)."""
    for i, arg in enumerate(args):
        if arg == '--config' and i + 1 < len(args):
            return args[i + 1]
    return None


def member_role(argv, stat, is_main):
    """The role of a server member: 'server' for the main process, the role of its sglang:: title,
    'resource_tracker', 'forkserver', 'spawn_child' (a multiprocessing child not retitled yet) or 'child'.

    ``stat`` is its ``_procfs.ProcStat`` (for the comm), or None.
    """
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
