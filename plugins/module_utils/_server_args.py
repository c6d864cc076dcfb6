# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# PRIVATE module_utils: for use by the modules and plugins of inferops.sglang only.
# It is not part of the collection's public API; names and behaviour may change
# in any release without a deprecation period. Do not import it from elsewhere.

"""Pure helpers for SGLang server command lines and the systemd files that carry them.

Nothing here runs a process, reads a file or imports SGLang: the functions turn
data into text and back, so they can be unit tested and shared by modules,
filters and templates.

Secrets
-------
Which flags carry secrets is decided in ``_secrets`` (``is_secret_flag``), the one
rule of the collection. ``args_to_argv`` refuses to render them (unless
``allow_secrets=True``) because an argv ends up in the unit file (world readable
under /etc/systemd/system), in ``systemctl show``/``status`` output, in ``ps`` and
in /proc/PID/cmdline.

SGLang 0.5.23 reads no environment variable for its API keys: ``--api-key`` and
``--admin-api-key`` are plain argparse options (``sglang/srt/arg_groups/fields/
serving.py``) and ``sglang/srt/environ.py`` declares no ``SGLANG_API_KEY``. So a
value in an EnvironmentFile= only reaches the server through an ExecStart= word
such as ``--api-key ${SGLANG_API_KEY}``, which systemd expands at start: the unit
file then holds no secret, but the running process's argv (``ps``) still does.
A secret kept out of argv entirely needs SGLang's own ``--config FILE.yaml``
(merged into argv inside the process by ``prepare_server_args``), a root-only
file holding e.g. ``api-key: ...``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

from ansible_collections.inferops.sglang.plugins.module_utils._secrets import is_secret_flag
from ansible_collections.inferops.sglang.plugins.module_utils._nvidia_smi import tp_unusable_reason
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.cmdline import SETTING_FLAGS, config_values
# The writer of environment files lives in _writers (one writer per format).
from ansible_collections.inferops.sglang.plugins.module_utils._writers.envfile import environment_file_line

_ENV_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_NUMBER_RE = re.compile(r'^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$')


def normalize_flag(key):
    """Return the SGLang spelling of a server argument name, without dashes.

    ``model_path`` and ``model-path`` both give ``model-path``. Raises ValueError
    for names that are not strings, are empty, contain whitespace or start with '-'.
    """
    if not isinstance(key, str):
        raise ValueError('server argument names must be strings, got %r' % (key,))
    if key == '' or key.strip() == '':
        raise ValueError('server argument name is empty')
    if key.startswith('-'):
        raise ValueError(
            "server argument name %r starts with '-': write it without dashes, "
            "as in 'model-path' for --model-path" % (key,))
    if re.search(r'\s', key):
        raise ValueError('server argument name %r contains whitespace' % (key,))
    if '=' in key:
        raise ValueError("server argument name %r contains '='" % (key,))
    return key.replace('_', '-')


def _format_scalar(value):
    if isinstance(value, bool):
        # Only reached for list items: a bool list item is passed as text.
        return 'true' if value else 'false'
    if isinstance(value, float):
        # repr() gives the shortest text that round-trips: 0.88 -> '0.88', 1e-05 -> '1e-05'.
        text = repr(value)
        if text.endswith('.0'):
            text = text[:-2]
        return text
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    raise ValueError('unsupported value %r of type %s' % (value, type(value).__name__))


def args_to_argv(mapping, allow_secrets=False):
    """Turn a mapping of SGLang server arguments into argv tokens, in mapping order.

    Keys are flag names without dashes (``model-path``; ``model_path`` is accepted
    and normalised). Values:

    - ``True`` -> the bare flag (store_true options such as ``trust-remote-code``);
    - ``False`` or ``None`` -> omitted;
    - list or tuple -> the flag followed by each item (nargs '+' options);
      an empty list is omitted;
    - dict -> one compact JSON text (``json-model-override-args``);
    - int/float -> text (``0.88`` -> ``'0.88'``); str -> as is.

    Flags whose values are secrets (``_secrets.is_secret_flag``) raise ValueError unless
    ``allow_secrets``.
    Two keys that normalise to the same flag raise ValueError.
    """
    if mapping is None:
        return []
    if not hasattr(mapping, 'items'):
        raise ValueError('server arguments must be a mapping, got %s' % type(mapping).__name__)
    argv = []
    seen = set()
    for key, value in mapping.items():
        flag = normalize_flag(key)
        if flag in seen:
            raise ValueError('server argument %r is given twice (as %r and another spelling)' % (flag, key))
        seen.add(flag)
        if value is None or value is False:
            continue
        if not allow_secrets and is_secret_flag(flag, value):
            raise ValueError(
                '--%s carries a secret and is not rendered into a command line; '
                'pass it through a root-only file instead (see the notes on secrets '
                'in inferops.sglang server argument handling)' % flag)
        option = '--' + flag
        if value is True:
            argv.append(option)
        elif isinstance(value, dict):
            argv.extend([option, json.dumps(value, separators=(',', ':'), sort_keys=False)])
        elif isinstance(value, (list, tuple)):
            if not value:
                continue
            argv.append(option)
            for item in value:
                if isinstance(item, dict):
                    argv.append(json.dumps(item, separators=(',', ':')))
                elif item is None:
                    raise ValueError('--%s: list items must not be null' % flag)
                else:
                    argv.append(_format_scalar(item))
        else:
            argv.extend([option, _format_scalar(value)])
    return argv


def _is_option(token):
    """True for a token that names an option rather than a value."""
    if not token.startswith('-') or token in ('-', '--'):
        return False
    if _NUMBER_RE.match(token):
        return False
    return True


def argv_to_args(tokens):
    """Best-effort reverse of ``args_to_argv``, without knowing the parser.

    ``--flag value`` -> ``{'flag': 'value'}``; several values -> a list; a bare
    flag -> ``True``; ``--flag=value`` -> ``{'flag': 'value'}``; negative numbers
    (``-1``, ``-0.5``) are values. Values stay text. Order is kept. A repeated
    flag keeps the last occurrence (argparse's behaviour for store options).
    Tokens before the first flag are collected under the key ``''``.
    """
    result = {}
    current = None
    for token in tokens:
        token = str(token)
        if token.startswith('--') and _is_option(token) and token != '--':
            name, sep, value = token[2:].partition('=')
            if name in result:
                del result[name]  # re-insert to keep the last occurrence's position
            if sep:
                result[name] = value
                current = None
            else:
                result[name] = True
                current = name
            continue
        key = current if current is not None else ''
        if key not in result:
            result[key] = token
            continue
        existing = result[key]
        if existing is True:
            result[key] = token
        elif isinstance(existing, list):
            existing.append(token)
        else:
            result[key] = [existing, token]
    return result


def diff_args(old, new):
    """Compare two argument mappings (as from ``argv_to_args``).

    Returns ``{'added': {flag: value}, 'removed': {flag: value},
    'changed': {flag: {'old': value, 'new': value}}, 'unchanged_count': int}``.
    Keys are compared after ``_`` -> ``-`` normalisation; values as text, so
    ``128`` equals ``'128'`` and ``0.88`` equals ``'0.88'``.
    """
    def norm_key(key):
        return key.replace('_', '-') if isinstance(key, str) else key

    def norm_value(value):
        if isinstance(value, (list, tuple)):
            return [norm_value(item) for item in value]
        if isinstance(value, dict):
            return json.dumps(value, separators=(',', ':'), sort_keys=True)
        if value is True or value is False or value is None:
            return value
        return _format_scalar(value)

    old_n = dict((norm_key(k), v) for k, v in (old or {}).items())
    new_n = dict((norm_key(k), v) for k, v in (new or {}).items())
    added = {}
    removed = {}
    changed = {}
    unchanged = 0
    for key, value in new_n.items():
        if key not in old_n:
            added[key] = value
        elif norm_value(old_n[key]) != norm_value(value):
            changed[key] = {'old': old_n[key], 'new': value}
        else:
            unchanged += 1
    for key, value in old_n.items():
        if key not in new_n:
            removed[key] = value
    return {'added': added, 'removed': removed, 'changed': changed, 'unchanged_count': unchanged}


# Variables that name one directory or file: their value must be one absolute path. A value such as
# ':/usr/local/cuda-13.0' (from `export CUDA_HOME=$CUDA_HOME:/usr/local/cuda-13.0` with CUDA_HOME unset) is a path
# list, which nothing that reads these variables splits.
SINGLE_PATH_VARIABLES = frozenset(('CUDA_HOME', 'CUDA_PATH', 'CUDA_ROOT', 'CUDA_TOOLKIT_ROOT_DIR', 'TRITON_PTXAS_PATH',
                                   'HF_HOME', 'HOME'))


def _environment_problem(name, value):
    """Why one entry of an environment is refused (a phrase without the value), or None."""
    if not isinstance(name, str) or not _ENV_NAME_RE.match(name):
        return 'not a variable name (letters, digits and underscores, not starting with a digit)'
    if not isinstance(value, str):
        return 'not a string (quote numbers in YAML, e.g. "1")'
    if any(ch in value for ch in '\n\r\x00'):
        return 'holds a newline, carriage return or NUL byte'
    if name in SINGLE_PATH_VARIABLES and value and (not value.startswith('/') or ':' in value):
        return 'must be one absolute path (no ":" and no relative path)'
    try:
        # What else the environment file's writer refuses (a control character other than tab).
        environment_file_line(name, value)
    except ValueError as exc:
        return str(exc).replace('value of %s ' % name, '', 1)
    return None


def invalid_environment(env, reasons=False):
    """The entries of ``env`` (a mapping) that an environment file of the collection refuses, sorted by name.

    A name must be ``[A-Za-z_][A-Za-z0-9_]*``; a value must be text (quote numbers in YAML) without a newline, a
    carriage return, a NUL byte or another control character but tab (the environment file writer's rule); a
    variable that names one directory or file (:data:`SINGLE_PATH_VARIABLES`, such
    as ``CUDA_HOME``) must hold one absolute path, without ``:``. The same rules apply to values a user writes and
    to values adopted from a hand-started server's environment. Values are never returned (they may be secrets).

    :param env: mapping of name -> value.
    :param reasons: when true, each entry is ``'NAME: why'`` instead of the bare name.
    :returns: sorted list of str.
    :raises TypeError: when ``env`` is not a mapping.
    """
    if not hasattr(env, 'items'):
        raise TypeError('expected a mapping of environment variables, got %s' % type(env).__name__)
    bad = []
    for name, value in env.items():
        problem = _environment_problem(name, value)
        if problem:
            bad.append('%s: %s' % (name, problem) if reasons else str(name))
    return sorted(bad)


_AMBIGUOUS_RE = re.compile(r'^ambiguous option: (\S+?) could match ')
_UNRECOGNIZED_RE = re.compile(r'^unrecognized arguments: (.*)$', re.S)
_ARGUMENT_RE = re.compile(r'^argument (\S+?): ')
_REQUIRED_RE = re.compile(r'^the following arguments are required: (\S+?)(,|$)')
_FLAG_PREFIX_RE = re.compile(r'^(--?[A-Za-z0-9][A-Za-z0-9_-]*): ')


def flag_from_parser_message(message, resolved=None):
    """Name the flag an argparse error message is about, as the user wrote it.

    ``message`` is the text argparse passes to ``ArgumentParser.error()``:

    - ``ambiguous option: --cuda-graph-max-bs could match ...`` -> ``--cuda-graph-max-bs``
      (an ``=value`` part is dropped);
    - ``unrecognized arguments: --foo 1`` -> ``--foo`` (the first token that looks like a
      flag; ``None`` when only stray values are left);
    - ``argument --tp-size/--tensor-parallel-size: invalid int value: 'x'`` -> the token
      the user wrote for that option when ``resolved`` says which one (``--tp``), else
      the first option string (``--tp-size``);
    - ``the following arguments are required: --model-path/--model`` -> ``--model-path``;
    - ``--config: ...`` or ``--help: ...`` (the prefix this collection's check puts on
      config-file errors and on options that make the parser exit) -> that flag.

    ``resolved`` is a list of ``{'token', 'option', 'options'}`` mappings: each flag
    written and the option strings of the action it resolved to. Returns None when
    no flag can be told.
    """
    if not message:
        return None
    message = str(message)
    match = _AMBIGUOUS_RE.match(message)
    if match:
        return match.group(1).split('=', 1)[0]
    match = _UNRECOGNIZED_RE.match(message)
    if match:
        for token in match.group(1).split():
            if _is_option(token):
                return token.split('=', 1)[0]
        return None
    match = _ARGUMENT_RE.match(message)
    if match:
        names = match.group(1).split('/')
        for item in resolved or ():
            if item.get('option') in names or set(item.get('options') or ()) & set(names):
                if item.get('option'):
                    return item.get('token')
        first = names[0]
        return first if first.startswith('-') else None
    match = _REQUIRED_RE.match(message)
    if match:
        return match.group(1).split('/')[0]
    match = _FLAG_PREFIX_RE.match(message)
    if match:
        return match.group(1)
    return None


# NCCL settings of the reference scenario for GPUs linked only through PCIe (8 x RTX PRO 6000 Blackwell,
# PCIe Gen5, no NVLink): the profile its operators found to work, kept as the PCIe default.
PCIE_NCCL_PROFILE = (('NCCL_PROTO', 'LL'), ('NCCL_ALGO', 'Ring'))
# Every spelling of the tensor parallel size, without dashes.
_TP_FLAGS = frozenset(flag[2:] for flag, name in SETTING_FLAGS.items() if name == 'tp')


def nccl_profile(interconnect):
    """Default NCCL variables for an interconnect (GPUs linked only through PCIe need a tuned profile).

    :param interconnect: ``nvlink``, ``pcie``, ``mixed``, ``single`` or ``none`` (host_facts' fact).
    :returns: dict; the PCIe profile for ``pcie`` only, else empty (NVLink needs no tuning here).
    """
    return dict(PCIE_NCCL_PROFILE) if interconnect == 'pcie' else {}


def topology_defaults(args, interconnect, gpu_count, config=None, host_facts=None):
    """Server arguments completed from what the host facts saw; the user's settings always win.

    - PCIe-only interconnect: ``disable-custom-all-reduce: true`` unless the user set that flag
      (SGLang's custom all-reduce kernel needs peer-to-peer NVLink; on PCIe-only hosts it is the
      reference scenario's choice to disable it). NVLink: nothing added.
    - No tensor parallel size given (``tp-size`` or any alias SGLang accepts: ``tp``,
      ``tensor-parallel-size``), neither in ``args`` nor in the --config file, GPUs were seen and the GPU set
      can run tensor parallelism over all of them (``_nvidia_smi.tp_unusable_reason`` of ``host_facts``: no
      GPU in MIG mode, none lost, no nvidia-smi error): ``tp-size`` = number of GPUs.

    A flag set in the --config file counts as set: SGLang lets the command line override the file, so an
    added flag would silently change the user's setting.

    :param args: mapping of server arguments (keys with dashes or underscores).
    :param interconnect: as :func:`nccl_profile`.
    :param gpu_count: int, GPUs seen.
    :param config: the server's --config file: its text or a mapping of its settings
        (``cmdline.config_values``); None without one.
    :param host_facts: host_facts' ``inferops_sglang`` fact (``gpus``, ``lost_gpus``, ``gpu_error``); None:
        only ``gpu_count`` is known.
    :returns: a new dict, the user's keys first in their order.
    :raises TypeError: when ``config`` is neither text nor a mapping.
    """
    result = dict(args or {})
    keys = set(normalize_flag(key) for key in result)
    keys.update(flag[2:] for flag in config_values(config))
    if interconnect == 'pcie' and 'disable-custom-all-reduce' not in keys:
        result['disable-custom-all-reduce'] = True
    if not keys & _TP_FLAGS and int(gpu_count or 0) > 0 and tp_unusable_reason(host_facts) is None:
        result['tp-size'] = int(gpu_count)
    return result


PROXY_VARIABLES = ('http_proxy', 'https_proxy', 'all_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY')
# '::' too: SGLang started with --host :: warms itself up at http://[::]:PORT.
LOOPBACK_NAMES = ('localhost', '127.0.0.1', '0.0.0.0', '::1', '::')


def no_proxy_env(environment, names=()):
    """``NO_PROXY``/``no_proxy`` for a server whose environment sets a proxy, so that local requests stay local.

    SGLang sends a warm-up request to its own port at start-up (``_wait_and_warmup`` in
    ``sglang/srt/entrypoints/http_server.py``) with ``requests``, which honours ``http_proxy``; behind a proxy
    that request, and every local probe, would leave the host. With a proxy set, the server also gets both
    spellings of the no-proxy list: what the environment already lists, then loopback (``localhost``,
    ``127.0.0.1``, ``0.0.0.0``, ``::1``), then ``names`` (the host's own names and addresses), without repeats.

    :param environment: mapping of the server's environment (name -> value).
    :param names: iterable of further host names or addresses to add (falsy entries are skipped).
    :returns: ``{}`` when no proxy variable is set (non-empty), else ``{'NO_PROXY': list, 'no_proxy': list}``
        with the same comma-separated value.
    :raises TypeError: when ``environment`` is not a mapping.
    """
    if not hasattr(environment, 'items'):
        raise TypeError('expected a mapping of environment variables, got %s' % type(environment).__name__)
    if not any(str(environment.get(name) or '').strip() for name in PROXY_VARIABLES):
        return {}
    entries = []
    for value in (environment.get('NO_PROXY'), environment.get('no_proxy')):
        entries.extend(part.strip() for part in str(value or '').split(','))
    entries.extend(LOOPBACK_NAMES)
    entries.extend(str(name).strip() for name in (names or ()) if name)
    seen = []
    for entry in entries:
        if entry and entry not in seen:
            seen.append(entry)
    value = ','.join(seen)
    return {'NO_PROXY': value, 'no_proxy': value}
