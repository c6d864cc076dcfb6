# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Module-level tests of inferops.sglang.server_process: documentation against argument_spec, and the
module's main() on a fake /proc in check mode (nothing real is signalled here; real process trees are
stopped by tests/integration/test_server_process.py inside a private PID namespace)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import importlib.util
import json
import os

import pytest
import yaml

from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import patch_module_args
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import module as sp_module
from ansible_collections.inferops.sglang.plugins.modules import server_process, server_process_info
from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils import server_process_fakes as helpers


FRAGMENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', 'plugins', 'doc_fragments',
                        '_server_process.py')


def fragment_options():
    """The options of the doc fragment inferops.sglang._server_process (both modules extend it)."""
    spec = importlib.util.spec_from_file_location('_server_process_fragment', FRAGMENT)
    fragment = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fragment)
    return yaml.safe_load(fragment.ModuleDocFragment.DOCUMENTATION)['options']


def documented_options(module):
    """The options as ansible-doc shows them: the module's own, over those of its doc fragment."""
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert 'inferops.sglang._server_process' in doc['extends_documentation_fragment']
    options = fragment_options()
    options.update(doc.get('options') or {})
    return options


@pytest.mark.parametrize('module', [server_process, server_process_info], ids=['server_process', 'info'])
def test_documentation_matches_argument_spec(module):
    options = documented_options(module)
    spec = module.argument_spec()
    assert sorted(options) == sorted(spec)
    for name, doc in options.items():
        arg = spec[name]
        assert doc.get('type', 'str') == arg.get('type', 'str'), name
        assert doc.get('default') == arg.get('default'), name
        assert doc.get('choices') == arg.get('choices'), name
        assert doc.get('elements') == arg.get('elements'), name
        assert bool(doc.get('required', False)) == bool(arg.get('required', False)), name
        assert doc.get('description'), name


def test_shared_options_are_documented_alike():
    info_spec = server_process_info.argument_spec()
    stop_spec = server_process.argument_spec()
    for name, arg in info_spec.items():
        assert stop_spec[name] == arg, name


@pytest.mark.parametrize('module', [server_process, server_process_info], ids=['server_process', 'info'])
def test_return_and_examples_are_yaml(module):
    assert yaml.safe_load(module.RETURN)
    assert isinstance(yaml.safe_load(module.EXAMPLES), list)
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert doc['module'] == module.__name__.rsplit('.', 1)[-1]


@pytest.fixture
def fake_proc(tmp_path, monkeypatch):
    """A fake /proc read by the real ProcFS; the module's own pid is part of it (protected)."""
    proc = helpers.FakeProc(tmp_path / 'proc')
    proc.add(1, ['/sbin/init'], ppid=0)
    proc.add(os.getpid(), ['python3', 'AnsiballZ_server_process.py'], ppid=1)
    real = sp_module.ProcFS
    monkeypatch.setattr(sp_module, 'ProcFS', lambda root=None: real(str(proc.root)))
    return proc


def run_main(module, args, capsys, check_mode=False, diff=False):
    args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            module.main()
    out = json.loads(capsys.readouterr().out)
    return exc.value.code, out


def test_check_mode_reports_what_would_be_stopped(fake_proc, capsys):
    pids = helpers.add_reference_server(fake_proc, main=100)
    fake_proc.add(200, ['grep', 'sglang.launch_server'], ppid=1)
    fake_proc.add(201, ['sglang::router'], ppid=1)
    code, out = run_main(server_process, {}, capsys, check_mode=True, diff=True)
    assert code == 0
    assert out['changed'] is True
    assert out['target_pids'] == pids
    assert out['stopped'] == []
    assert out['msg'].startswith('would stop 1 stray SGLang server(s), 5 process(es)')
    assert [s['main_pid'] for s in out['strays']] == [100]
    assert not any(key.startswith('_') for key in out['strays'][0])
    assert out['diff']['after'] == ''
    lines = out['diff']['before'].splitlines()
    assert lines[0].startswith('100 [server] /root/ml-env/bin/python3 -m sglang.launch_server')
    assert lines[2] == '102 [scheduler] sglang::scheduler_TP0'
    assert len(lines) == 5
    assert out['gpu_release']['waited'] is False and out['port_release']['waited'] is False
    assert sorted(i['pid'] for i in out['ignored']) == [200, 201]


def test_nothing_to_stop_is_not_changed(fake_proc, capsys):
    helpers.add_reference_server(fake_proc, main=100, cgroup='0::/system.slice/sglang.service\n')
    code, out = run_main(server_process, {'unit': 'sglang'}, capsys, check_mode=True)
    assert code == 0 and out['changed'] is False
    assert out['target_pids'] == [] and out['msg'] == 'no stray SGLang server process found'
    assert [s['main_pid'] for s in out['managed']] == [100]
    assert 'diff' not in out


def test_no_signal_when_nothing_to_stop_for_real(fake_proc, capsys):
    # Not check mode, but nothing to stop: nothing runs, nothing waits.
    code, out = run_main(server_process, {'nvidia_smi': '/nonexistent/nvidia-smi'}, capsys)
    assert code == 0 and out['changed'] is False and out['stopped'] == []
    assert 'nvidia_smi=/nonexistent/nvidia-smi not found' in json.dumps(out['warnings'])


def test_info_module(fake_proc, capsys):
    helpers.add_reference_server(fake_proc, main=100)
    helpers.add_reference_server(fake_proc, main=150, port=30001, gpus=(2, 3),
                                 cgroup='0::/system.slice/sglang.service\n')
    code, out = run_main(server_process_info, {'port': 30001}, capsys, check_mode=True)
    assert code == 0 and out['changed'] is False
    assert [s['main_pid'] for s in out['servers']] == [150]
    assert out['strays'] == [] and [s['main_pid'] for s in out['managed']] == [150]
    assert out['listeners'] == []
    assert any(i['pid'] == 100 and 'not on port 30001' in i['reason'] for i in out['ignored'])


@pytest.mark.parametrize('name', ['grace_period', 'kill_timeout', 'release_timeout', 'gpu_memory_threshold_mib'])
def test_negative_values_fail(fake_proc, capsys, name):
    code, out = run_main(server_process, {name: -1}, capsys)
    assert code == 1 and out['failed'] and name in out['msg']


def test_failure_goes_through_fail_json(fake_proc, capsys, monkeypatch):
    def failing(*_args, **_kwargs):
        raise sp_module.ModuleFailure('GPU memory not released 120 s after the stop: GPU 0 uses 4343 MiB',
                                      {'changed': True, 'stopped': [{'pid': 1}]})
    monkeypatch.setattr(server_process, 'absent', failing)
    code, out = run_main(server_process, {}, capsys)
    assert code == 1 and out['failed'] is True
    assert out['msg'].startswith('GPU memory not released')
    assert out['changed'] is True and out['stopped'] == [{'pid': 1}]
    assert 'exception' not in out


def test_failure_with_the_partial_results_msg(fake_proc, capsys, monkeypatch):
    """absent()'s partial result always has a msg (''): the failure's message wins, not a crash."""
    def failing(*_args, **_kwargs):
        raise sp_module.ModuleFailure('a process stuck in the driver holds the GPUs: reboot needed: 7 (x)',
                                      {'changed': True, 'msg': '', 'reboot_required': True,
                                       'stuck': [{'pid': 7, 'state': 'D', 'title': 'x', 'devices': ['/dev/nvidia0']}]})
    monkeypatch.setattr(server_process, 'absent', failing)
    code, out = run_main(server_process, {}, capsys)
    assert code == 1 and out['failed'] is True
    assert out['msg'].startswith('a process stuck in the driver holds the GPUs: reboot needed')
    assert out['reboot_required'] is True and out['stuck'][0]['state'] == 'D'


@pytest.mark.parametrize('module, function', [(server_process, 'absent'), (server_process_info, 'info')])
def test_unexpected_error_goes_through_fail_json(fake_proc, capsys, monkeypatch, module, function):
    def broken(*_args, **_kwargs):
        raise OSError(5, 'Input/output error')
    monkeypatch.setattr(module, function, broken)
    code, out = run_main(module, {}, capsys)
    assert code == 1 and out['failed'] is True
    assert 'Input/output error' in out['msg'] and 'Traceback' not in out['msg']
