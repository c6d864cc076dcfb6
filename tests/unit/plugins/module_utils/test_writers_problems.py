# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pre-flight problems from the writers: named by label, never holding the value."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._writers.problems import WRITERS, unwritable_values

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
