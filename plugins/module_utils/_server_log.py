# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The SGLang server's own logging, as the service role sets it up: every line masked before it is written.

SGLang logs its resolved configuration at start-up, at INFO, credentials included: 0.5.9
``logger.info(f"{server_args=}")`` (``server_args=ServerArgs(..., api_key='...')``), 0.5.23
``logger.info(f"server_args={_server_args_for_logging(server_args)}")`` in ``python/sglang/srt/entrypoints/engine.py``
(a dict repr; it redacts only the watermark keys). systemd 253 can drop such a line (``LogFilterPatterns=``); the
systemd of Debian 12 (252) cannot, and supervisord's log file has no filter at all. What every SGLang release of the
collection's range offers is ``SGLANG_LOGGING_CONFIG_PATH``: SGLang's ``configure_logger``
(``python/sglang/srt/utils/common.py``, in 0.5.9 and 0.5.23) then loads that JSON file with
``logging.config.dictConfig`` instead of its own ``logging.basicConfig`` - in every process of the server (main,
schedulers, detokenizer), since each calls ``configure_logger``.

:func:`logging_config` is that file: SGLang's own format and level, with the formatter :class:`ServerFormatter`
on the one handler, which passes each formatted line through ``_secrets.redact_log_line`` (the rule every log excerpt
of the collection is masked by). The server imports this module by name, so the service role installs a copy of it and of
``_secrets.py`` (``inferops_sglang_log.py``, ``inferops_sglang_secrets.py``) in a directory it adds to PYTHONPATH
(:func:`server_environment`).

What SGLang's own ``configure_logger`` does after ``basicConfig``, and a custom file skips, is kept here: the
``[time TP0]`` rank prefix (:func:`rank_prefix`, from the process title SGLang sets just before it), milliseconds with
``SGLANG_LOG_MS``, httpx and httpcore at WARNING. Left out: ``huggingface_hub``'s duplicate warnings in worker
processes (they are repeated once per rank) and flashinfer's logger at ERROR.

Like ``_secrets.py``, this file imports nothing outside the standard library but ``_secrets``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import io
import logging
import os
import re
import sys

try:
    from ansible_collections.inferops.sglang.plugins.module_utils._secrets import redact_log_line
except ImportError:  # on the server: the copy installed beside this one
    from inferops_sglang_secrets import redact_log_line  # pylint: disable=import-error

# The names under which the service role installs this file and _secrets.py on the server.
MODULE_NAME = 'inferops_sglang_log'
SECRETS_MODULE_NAME = 'inferops_sglang_secrets'

# The rank prefix SGLang gives a scheduler (0.5.23 python/sglang/srt/managers/scheduler.py run_scheduler_process:
# " DP0 PP1 ATTN_CP0 MOE_DP0 TP3 EP3", each part only where that parallelism is on) and its title, the same prefix
# with '_' for ' ': sglang::scheduler_DP0_TP3.
_RANK_PART_RE = re.compile(r'_((?:ATTN_CP|MOE_DP|DP|PP|TP|EP)\d+)(?=_|$)')
_SCHEDULER_TITLE_RE = re.compile(r'^sglang::scheduler((?:_(?:ATTN_CP|MOE_DP|DP|PP|TP|EP)\d+)*)$')


def rank_prefix(title):
    """The prefix SGLang puts in a scheduler's log lines, from the process title it gave it.

    :param title: str, the process title (``sglang::scheduler_DP0_TP3``; the first NUL-separated field of
        ``/proc/self/cmdline``).
    :returns: str: ``' DP0 TP3'``; ``''`` for any other process (the main process, the detokenizer).
    """
    match = _SCHEDULER_TITLE_RE.match(title or '')
    if not match:
        return ''
    return ''.join(' ' + part for part in _RANK_PART_RE.findall(match.group(1)))


def _own_title():
    try:
        with open('/proc/self/cmdline', 'rb') as handle:
            raw = handle.read()
    except (IOError, OSError):
        return ''
    return raw.split(b'\0', 1)[0].decode('utf-8', 'replace').strip()


def _truthy(value):
    return str(value or '').strip().lower() in ('1', 'true', 'yes', 'on', 'y')


class ServerFormatter(logging.Formatter):
    """SGLang's format, ``[2026-12-05 06:00:00 TP0] message``, with the rank prefix of the process it runs in, and
    every secret of the formatted text (message and traceback) masked by ``_secrets.redact_log_line``."""

    def __init__(self):
        prefix = rank_prefix(_own_title()).replace('%', '%%')
        msecs = '.%(msecs)03d' if _truthy(os.environ.get('SGLANG_LOG_MS')) else ''
        super(ServerFormatter, self).__init__('[%(asctime)s' + msecs + prefix + '] %(message)s', '%Y-%m-%d %H:%M:%S')

    def format(self, record):
        return redact_log_line(super(ServerFormatter, self).format(record))


def level_name(log_level):
    """SGLang's ``--log-level`` as the level name logging knows: SGLang does ``getattr(logging, level.upper())``, so any
    name of the logging module's levels (``debug``, ``info``, ``warn``, ``warning``, ``error``, ``fatal``,
    ``critical``, ``notset``; any case) works, and None or '' mean its default, ``info``.

    :returns: str, upper case.
    :raises ValueError: a name SGLang itself would fail on at start.
    """
    name = str(log_level or 'info').upper()
    if not name.isalpha() or not isinstance(logging.getLevelName(name), int):
        raise ValueError('--log-level %r is no level of Python\'s logging (SGLang would not start with it): use debug, '
                         'info, warning, error or critical' % (log_level,))
    return name


class MaskingStreamHandler(logging.StreamHandler):
    """``logging.StreamHandler`` whose report of a logging error is masked too: ``Handler.handleError`` prints the
    record's raw message and arguments to stderr (a malformed logging call carrying a key would show it)."""

    def handleError(self, record):
        real = sys.stderr
        buffer = io.StringIO()
        sys.stderr = buffer
        try:
            super(MaskingStreamHandler, self).handleError(record)
        finally:
            sys.stderr = real
        if buffer.getvalue():
            real.write(redact_log_line(buffer.getvalue()))


def logging_config(log_level='info'):
    """The dictConfig SGLang loads from ``SGLANG_LOGGING_CONFIG_PATH``.

    :param log_level: str, SGLang's ``--log-level`` (see :func:`level_name`).
    :returns: dict, JSON-serializable (``logging.config.dictConfig`` schema version 1): one stderr handler
        (:class:`MaskingStreamHandler`) with :class:`ServerFormatter`, the root logger at ``log_level``, loggers created
        before it (at import) left enabled.
    :raises ValueError: a level SGLang would not start with.
    """
    level = level_name(log_level)
    return {
        'version': 1,
        'disable_existing_loggers': False,
        'formatters': {'sglang': {'()': MODULE_NAME + '.ServerFormatter'}},
        'handlers': {'stderr': {'class': MODULE_NAME + '.MaskingStreamHandler', 'stream': 'ext://sys.stderr',
                                'formatter': 'sglang'}},
        'root': {'level': level, 'handlers': ['stderr']},
        'loggers': {'httpx': {'level': 'WARNING'}, 'httpcore': {'level': 'WARNING'}},
    }


def server_environment(environment, config_path, module_dir, ignores_pythonpath=False):
    """The server's environment with this logging set up: ``SGLANG_LOGGING_CONFIG_PATH`` and ``module_dir`` last on
    ``PYTHONPATH`` (after the user's and the adopted server's entries, so it shadows nothing).

    :param environment: dict name -> str, the server's environment as it would be without this.
    :param config_path: str, absolute path of the JSON file of :func:`logging_config`.
    :param module_dir: str, absolute path of the directory holding ``inferops_sglang_log.py`` and
        ``inferops_sglang_secrets.py``.
    :param ignores_pythonpath: bool, whether the server's interpreter ignores PYTHONPATH (``-E``, ``-I``:
        ``cmdline.ignores_pythonpath``); then ``environment`` is returned as it is (SGLang's own logging), since the
        formatter could not be imported.
    :returns: a new dict, these two names last (in this order, wherever the input had them: a converged run, whose
        facts read the running server's PYTHONPATH, writes the same file as the first). A ``SGLANG_LOGGING_CONFIG_PATH``
        in ``environment`` other than ``config_path`` (the user's own logging) is kept, and then PYTHONPATH is left as it
        was: the user's configuration decides what is masked.
    """
    result = dict(environment)
    if result.get('SGLANG_LOGGING_CONFIG_PATH') not in (None, '', config_path) or ignores_pythonpath:
        return result
    result.pop('SGLANG_LOGGING_CONFIG_PATH', None)
    entries = [entry for entry in str(result.pop('PYTHONPATH', None) or '').split(':') if entry]
    if module_dir not in entries:
        entries.append(module_dir)
    result['SGLANG_LOGGING_CONFIG_PATH'] = config_path
    result['PYTHONPATH'] = ':'.join(entries)
    return result
