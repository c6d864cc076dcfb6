# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The versions of a configuration (known-good manifest, deployment record, fleet summary): module_utils _versions."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _versions as v

VENV = '/root/ml-env/bin/python3'
NEW_VENV = '/opt/sglang/venvs/0.5.10/bin/python'
FACTS = {
    'python': {'executable': VENV, 'version': '3.11.2', 'sglang_version': '0.5.9', 'torch_version': '2.9.1+cu130',
               'torch_cuda_version': '13.0'},
    'driver_version': '580.159.04', 'cuda_driver_version': '13.0',
}
COMMAND = [VENV, '-m', 'sglang.launch_server', '--model-path', 'm']


def test_versions_of_the_probed_interpreter_come_from_the_facts():
    """Before the service role says which SGLang it wants: all from the facts of the unit's interpreter."""
    assert v.deployed_versions(COMMAND, FACTS) == {
        'sglang': '0.5.9', 'torch': '2.9.1+cu130', 'torch_cuda': '13.0', 'driver': '580.159.04',
        'cuda_driver': '13.0', 'python': VENV}


def test_the_service_roles_sglang_version_wins():
    """A managed version: the service role's wanted version, not what the probe found; torch still from the facts
    because the interpreter is the probed one."""
    sglang = {'managed': True, 'version': '0.5.10', 'requirement': 'sglang==0.5.10', 'venv': '/root/ml-env',
              'python': VENV}
    got = v.deployed_versions(COMMAND, FACTS, sglang)
    assert got['sglang'] == '0.5.10' and got['torch'] == '2.9.1+cu130' and got['python'] == VENV


def test_another_interpreter_gets_no_guessed_torch():
    """The unit runs a new venv the facts did not probe: torch and its CUDA runtime are unknown (null), SGLang only
    from the service role; the driver is the host's."""
    sglang = {'managed': True, 'version': '0.5.10', 'requirement': 'sglang==0.5.10',
              'venv': '/opt/sglang/venvs/0.5.10', 'python': NEW_VENV}
    got = v.deployed_versions([NEW_VENV, '-m', 'sglang.launch_server'], FACTS, sglang)
    assert got == {'sglang': '0.5.10', 'torch': None, 'torch_cuda': None, 'driver': '580.159.04',
                   'cuda_driver': '13.0', 'python': NEW_VENV}
    assert v.deployed_versions([NEW_VENV, '-m', 'sglang.launch_server'], FACTS)['sglang'] is None


def test_empty_inputs():
    assert v.deployed_versions([], {}) == dict((key, None) for key in v.VERSION_KEYS)
    assert v.deployed_versions(None, None, None)['python'] is None
    # Without a command, the service role's interpreter names the python.
    assert v.deployed_versions([], FACTS, {'python': VENV, 'version': '0.5.9'})['torch'] == '2.9.1+cu130'


@pytest.mark.parametrize('command, facts, sglang', [
    ('python -m sglang', FACTS, None), (COMMAND, ['x'], None), (COMMAND, FACTS, 'sglang==0.5.10')])
def test_bad_input_is_a_type_error(command, facts, sglang):
    with pytest.raises(TypeError):
        v.deployed_versions(command, facts, sglang)


@pytest.mark.parametrize('old, new, text, column', [
    ('0.5.9', '0.5.10', '0.5.9 -> 0.5.10', '0.5.9 -> 0.5.10'),
    ('2.9.1+cu130', '2.9.1+cu130', '2.9.1+cu130 (unchanged)', '2.9.1+cu130'),
    (None, '0.5.9', '0.5.9 (not recorded before)', '0.5.9'),
    ('0.5.9', None, '0.5.9 -> unknown', '0.5.9 -> unknown'),
    (None, None, 'unknown', '-'),
])
def test_change_texts(old, new, text, column):
    assert v.change_text(old, new) == text
    assert v.column_text(old, new) == column


def test_column_text_of_a_rolled_back_host_names_the_version_it_runs():
    """Review of issue 15: a rolled-back host runs the previous version again."""
    assert v.column_text('0.5.10', '0.5.10.post1', rolled_back=True) == '0.5.10 (0.5.10.post1 rolled back)'
    assert v.column_text('0.5.10', '0.5.10', rolled_back=True) == '0.5.10'
    assert v.column_text(None, '0.5.10', rolled_back=True) == '0.5.10'


def test_versions_change_lists_every_version_in_order():
    """C25-style upgrade: SGLang and the interpreter change, torch does not."""
    before = v.deployed_versions(COMMAND, FACTS)
    after = dict(before, sglang='0.5.10', python=NEW_VENV)
    rows = v.versions_change(before, after)
    assert [row['key'] for row in rows] == list(v.VERSION_KEYS)
    assert [row['text'] for row in rows] == [
        'SGLang: 0.5.9 -> 0.5.10', 'torch: 2.9.1+cu130 (unchanged)', 'torch CUDA runtime: 13.0 (unchanged)',
        'NVIDIA driver: 580.159.04 (unchanged)', 'CUDA (driver): 13.0 (unchanged)',
        'Python interpreter: %s -> %s' % (VENV, NEW_VENV)]
    assert [row['changed'] for row in rows] == [True, False, False, False, False, True]
    assert rows[0]['old'] == '0.5.9' and rows[0]['new'] == '0.5.10' and rows[0]['label'] == 'SGLang'


def test_versions_change_without_a_recorded_previous():
    """A known-good manifest saved before versions were recorded (or none at all)."""
    rows = v.versions_change(None, {'sglang': '0.5.9'})
    assert rows[0]['text'] == 'SGLang: 0.5.9 (not recorded before)' and rows[0]['changed'] is False
    assert rows[1]['text'] == 'torch: unknown'
    with pytest.raises(TypeError):
        v.versions_change(['0.5.9'], {})


@pytest.mark.parametrize('running, recorded, expected', [
    ('/root/ml-env/bin/python3', {'sglang': '0.5.10', 'python': '/root/ml-env/bin/python3'}, '0.5.9'),
    ('/opt/v/0.5.10/bin/python', {'sglang': '0.5.10', 'python': '/opt/v/0.5.10/bin/python'}, '0.5.10'),
    ('/opt/v/0.5.10/bin/python', {'sglang': '0.5.10', 'python': '/opt/v/other/bin/python'}, None),
    ('/opt/v/0.5.10/bin/python', None, None),
    (None, {'sglang': '0.5.10', 'python': '/opt/v/0.5.10/bin/python'}, '0.5.9'),
])
def test_running_sglang_version(running, recorded, expected):
    """The probed interpreter's facts when the server runs it (or which one runs is unknown), else what the known-good
    manifest recorded for that interpreter, else unknown."""
    assert v.running_sglang_version(FACTS, running, recorded) == expected
