# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Pre-flight: which values a writer would refuse, as problems naming the variable or adopted field (never the
value), so that a role fails before anything on the host changes instead of half-way through writing files."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import Unwritable, one_line
from ansible_collections.inferops.sglang.plugins.module_utils._writers.data import config_yaml, py_str, yaml_scalar
from ansible_collections.inferops.sglang.plugins.module_utils._writers.envfile import environment_file_line
from ansible_collections.inferops.sglang.plugins.module_utils._writers.shell import shell_word
from ansible_collections.inferops.sglang.plugins.module_utils._writers.supervisor import (
    supervisor_name,
    supervisor_value,
    supervisor_word,
)
from ansible_collections.inferops.sglang.plugins.module_utils._writers.systemd import (
    exec_lines,
    unit_environment,
    unit_path,
    unit_paths,
    unit_text,
    unit_word,
    unit_words,
)


def _each_item(writer):
    def check(mapping):
        if not hasattr(mapping, 'items'):
            raise Unwritable('is not a mapping of variables')
        for name, value in mapping.items():
            writer(name, value)
    return check


def _each(writer):
    def check(values):
        if isinstance(values, (str, bytes)) or not hasattr(values, '__iter__'):
            raise Unwritable('is not a list')
        for value in values:
            writer(value)
    return check


# kind -> a check that raises Unwritable. The kinds name the writers (and what a value is written as).
WRITERS = {
    'unit_path': unit_path,
    'unit_paths': unit_paths,
    'unit_paths_entry': lambda value: unit_paths([value]),
    'unit_text': unit_text,
    'unit_word': unit_word,
    'unit_words': unit_words,
    'unit_command': exec_lines,
    'unit_environment': _each_item(unit_environment),
    'unit_environment_value': lambda value: unit_environment('NAME', value),
    'env_file': _each_item(environment_file_line),
    'supervisor_value': supervisor_value,
    'supervisor_word': supervisor_word,
    'supervisor_name': supervisor_name,
    'shell_word': shell_word,
    'shell_words': _each(shell_word),
    'yaml_scalar': yaml_scalar,
    'config_yaml': config_yaml,
    'py_str': py_str,
    'one_line': one_line,
}


def unwritable_values(values, kinds):
    """The values of ``values`` that a writer refuses, as ``'LABEL: why'`` problems (sorted by label).

    :param values: mapping of label -> value; the label names the variable or the adopted field, e.g.
        ``'service_working_directory (adopted cwd of pid 123)'``.
    :param kinds: a key of :data:`WRITERS` or a list of them: every value must be written by each (a working
        directory goes into a unit's ``WorkingDirectory=`` and ``ReadWritePaths=``, a supervisord ``directory=``
        and a shell ``cd``). A label's value that is None is skipped (a value not set).
    :returns: list of str; never holds a value (values may be secrets or an attacker's text).
    :raises ValueError: an unknown kind, ``values`` not a mapping.
    """
    if isinstance(kinds, str):
        kinds = [kinds]
    unknown = [kind for kind in kinds if kind not in WRITERS]
    if unknown:
        raise ValueError('unknown writer kind(s) %s; known: %s' % (', '.join(map(str, unknown)), ', '.join(sorted(WRITERS))))
    if not hasattr(values, 'items'):
        raise ValueError('expected a mapping of label -> value, got %s' % type(values).__name__)
    problems = []
    for label in sorted(values, key=str):
        value = values[label]
        if value is None:
            continue
        reasons = []
        for kind in kinds:
            try:
                WRITERS[kind](value)
            except Unwritable as exc:
                if str(exc) not in reasons:
                    reasons.append(str(exc))
        if reasons:
            problems.append('%s: %s' % (label, '; '.join(reasons)))
    return problems


def service_unwritable(manager, values, adopted=None, adopted_env=None):
    """The pre-flight problems of the service role's files (the unit, or the supervisord program, its wrapper script and
    supervisord's own file; the environment file): every value that reaches them, checked by the writers of each place
    it is written (:func:`unwritable_values`), labelled by its variable or, when adopted, its adopted field.

    :param manager: ``'systemd'`` or ``'supervisord'``.
    :param values: dict with ``working_directory``, ``env_file``, ``cuda_env_file``, ``user``, ``name``, ``group``,
        ``user_groups`` (list), ``command`` (argv list), ``path`` (the PATH written), ``environment`` (dict: the
        environment file's variables) and ``log_dir``; a missing key or None is a value not set (skipped).
    :param adopted: the adopted hand-started server (``main_pid``, ``cwd``, ``user``) or empty/None when nothing is
        adopted; :param adopted_env: the environment taken from it (dict; ``PATH`` there is labelled as adopted).
    :returns: list of str, the systemd or supervisord problems in a fixed order (per group, sorted by label); never a
        value.
    """
    systemd = manager == 'systemd'
    adopted = adopted or {}
    adopted_env = adopted_env or {}
    origin = ' (adopted from the hand-started server, pid %s)' % adopted.get('main_pid', '?')

    def label(variable, field, from_adopted):
        return ('_service_adopted.' + field + origin) if from_adopted else variable

    groups = [
        ({label('service_working_directory', 'cwd', adopted and adopted.get('cwd')): values.get('working_directory'),
          'service_env_file': values.get('env_file'), 'service_cuda_env_file': values.get('cuda_env_file')},
         ['unit_path', 'unit_paths_entry'] if systemd else ['supervisor_value', 'shell_word']),
        ({label('service_user', 'user', adopted and adopted.get('user')): values.get('user'),
          'service_name': values.get('name')},
         ['unit_word'] if systemd else ['supervisor_value', 'supervisor_name']),
    ]
    if systemd:
        groups += [({"service_group (or the user's primary group)": values.get('group')}, 'unit_word'),
                   ({'service_user_groups': values.get('user_groups')}, 'unit_words')]
    groups += [
        ({label('service_server_args (the command line)', 'argv', adopted): values.get('command')},
         'unit_command' if systemd else 'shell_words'),
        ({label('PATH (the directory of service_python and the system directories)', 'env.PATH',
                adopted and 'PATH' in adopted_env): values.get('path')},
         'unit_environment_value' if systemd else 'shell_word'),
        ({'the environment file (service_environment, the adopted environment and the cache variables)':
          values.get('environment')}, 'env_file'),
    ]
    if not systemd:
        groups.append(({'service_log_dir': values.get('log_dir')}, 'supervisor_value'))
    problems = []
    for group, kinds in groups:
        problems.extend(unwritable_values(group, kinds))
    return problems
