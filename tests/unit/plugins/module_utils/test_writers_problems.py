# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pre-flight problems from the writers: named by label, never holding the value."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._writers.problems import WRITERS, service_unwritable, unwritable_values

INJECTED = 'w\nExecStartPre=+/bin/sh -c "id > /pwned-root"'
LABEL = 'service_working_directory (adopted from pid 123)'


def test_an_injected_working_directory_is_named_not_echoed():
    problems = unwritable_values({LABEL: INJECTED}, ['unit_path', 'unit_paths_entry', 'supervisor_value', 'shell_word'])
    assert len(problems) == 1
    assert problems[0].startswith(LABEL + ': holds a line break, which a systemd path')
    assert 'supervisord' in problems[0]
    assert 'pwned' not in problems[0] and 'ExecStartPre' not in problems[0]


@pytest.mark.parametrize('value', ['/data/models %h', '/data/my models', '/data/日本', '/data/$x'])
def test_odd_but_writable_directories_pass(value):
    assert unwritable_values({LABEL: value}, ['unit_path', 'unit_paths_entry', 'supervisor_value', 'shell_word']) == []


def test_mappings_lists_and_unset_values():
    assert unwritable_values({'env': {'A': 'x\ny'}}, 'env_file') == [
        'env: value of A holds a line break, which an environment file line cannot hold']
    assert unwritable_values({'argv': ['-/bin/sh', 'x']}, 'unit_command')[0].startswith('argv: is a program name')
    assert unwritable_values({'argv': ['/bin/x', 'a\x00']}, 'shell_words')[0].startswith('argv: holds a NUL byte')
    assert unwritable_values({'unset': None}, 'unit_path') == []


def test_labels_are_sorted_and_kinds_checked():
    problems = unwritable_values({'b': 'x y', 'a': ''}, 'unit_word')
    assert [p.split(':')[0] for p in problems] == ['a', 'b']
    with pytest.raises(ValueError, match='unknown writer kind'):
        unwritable_values({'a': 'x'}, 'nope')
    with pytest.raises(ValueError, match='mapping'):
        unwritable_values(['x'], 'unit_word')


def test_every_kind_accepts_a_plain_value():
    plain = {'unit_paths': ['/a'], 'unit_words': ['a'], 'unit_command': ['/bin/x'], 'unit_environment': {'A': 'b'},
             'env_file': {'A': 'b'}, 'shell_words': ['a'], 'config_yaml': {'a': 'b'}, 'supervisor_name': 'sglang', 'unit_word': 'a'}
    for kind in WRITERS:
        assert unwritable_values({'x': plain.get(kind, '/a')}, kind) == [], kind


INJECTED_DIR = '/home/bob/w\nExecStartPre=+/bin/sh -c "id > /pwned-root"'
SERVICE_VALUES = {'working_directory': '/srv/sglang work/modèles %h', 'env_file': '/etc/sglang/sglang.env',
                  'cuda_env_file': '/etc/sglang/cuda.env', 'user': 'sglang', 'name': 'sglang', 'group': 'sglang',
                  'user_groups': ['video', 'render'], 'command': ['/venv/bin/python3', '-m', 'sglang.launch_server'],
                  'path': '/venv/bin:/usr/bin:/bin', 'environment': {'HF_HOME': '/var/cache/sglang'},
                  'log_dir': '/var/log/sglang'}


@pytest.mark.parametrize('manager', ['systemd', 'supervisord'])
def test_the_service_files_hold_odd_but_writable_values(manager):
    assert service_unwritable(manager, SERVICE_VALUES) == []


def test_an_adopted_working_directory_with_a_directive_is_named_by_its_field_and_pid():
    values = dict(SERVICE_VALUES, working_directory=INJECTED_DIR)
    adopted = {'main_pid': 4242, 'cwd': INJECTED_DIR, 'user': 'bob'}
    for manager in ('systemd', 'supervisord'):
        problems = service_unwritable(manager, values, adopted)
        assert len(problems) == 1 and problems[0].startswith(
            '_service_adopted.cwd (adopted from the hand-started server, pid 4242): '), problems
        assert 'pwned' not in problems[0]
    # Not adopted: the variable is named.
    assert service_unwritable('systemd', values)[0].startswith('service_working_directory: ')


def test_each_value_is_checked_where_it_is_written_and_labelled():
    values = dict(SERVICE_VALUES, user='a b', group='g\n', user_groups=['ok', 'x y'], command=['/p', 'a\x00b'],
                  path='/bin\x00', environment={'A': 'x\x01'}, log_dir='/var/log/a ;b', name='s\n')
    problems = service_unwritable('systemd', values, {'main_pid': 7}, {'PATH': '/bin'})
    systemd = [problem.split(':', 1)[0] for problem in problems]
    assert systemd == ['service_name', 'service_user', "service_group (or the user's primary group)",
                       'service_user_groups', '_service_adopted.argv (adopted from the hand-started server, pid 7)',
                       '_service_adopted.env.PATH (adopted from the hand-started server, pid 7)',
                       'the environment file (service_environment, the adopted environment and the cache variables)']
    supervisord = [problem.split(':', 1)[0] for problem in service_unwritable('supervisord', values)]
    assert supervisord == ['service_name', 'service_user', 'service_server_args (the command line)',
                           'PATH (the directory of service_python and the system directories)',
                           'the environment file (service_environment, the adopted environment and the cache variables)',
                           'service_log_dir']


def test_unset_service_values_are_skipped():
    assert service_unwritable('systemd', {}) == []
