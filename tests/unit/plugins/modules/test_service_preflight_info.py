# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for inferops.sglang.service_preflight_info: one call, every failure returned, nothing failed."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible.module_utils import basic
from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import patch_module_args

from ansible_collections.inferops.sglang.plugins.module_utils import _service_preflight
from ansible_collections.inferops.sglang.plugins.modules import service_preflight_info


def run_module(args, capsys, check_mode=False):
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            service_preflight_info.main()
    return json.loads(capsys.readouterr().out)


def test_good_host_in_check_mode(tmp_path, capsys):
    (tmp_path / 'm').mkdir()
    (tmp_path / 'm' / 'config.json').write_text(u'{}')
    (tmp_path / 's.yaml').write_text(u'port: 8000\n')
    result = run_module({'host': 'h1', 'config': str(tmp_path / 's.yaml'), 'model_paths': [str(tmp_path / 'm')],
                         'working_directory': str(tmp_path), 'min_free_disk_gib': 0}, capsys, check_mode=True)
    assert result['changed'] is False and 'failed' not in result
    assert result['failures'] == []
    assert result['config']['content'] == 'port: 8000\n'
    assert result['user']['exists'] and result['reader'] is None and result['unreadable'] == []
    assert result['gpu_devices'] == [] and result['disk']['free_kib'] > 0


def test_every_failure_at_once_without_failing(tmp_path, capsys, monkeypatch):
    """A missing user, an unreadable interpreter, a missing model and working directory and a full disk: all five
    messages in one result, and the module itself does not fail."""
    calls = []

    def run_command(self, argv, check_rc=False):
        calls.append(argv)
        return 1, '', ''
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, name, *a, **k: '/usr/sbin/runuser')
    result = run_module({'host': 'h1', 'model_paths': [str(tmp_path / 'x')], 'interpreter': '/root/v/bin/python3',
                         'user': 'no-such-user-here', 'working_directory': str(tmp_path / 'w'),
                         'min_free_disk_gib': 1e9}, capsys)
    assert 'failed' not in result
    assert [item['check'] for item in result['failures']] == [
        _service_preflight.CHECK_MODELS, _service_preflight.CHECK_USER, _service_preflight.CHECK_USER_READS,
        _service_preflight.CHECK_WORKDIR, _service_preflight.CHECK_DISK]
    assert result['reader'] == 'nobody'
    assert calls[0] == ['runuser', '-u', 'nobody', '--', 'test', '-r', '/root/v/bin/python3']


def test_without_runuser_every_path_is_unreadable(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, name, *a, **k: None)
    result = run_module({'interpreter': '/usr/bin/python3', 'user': 'nobody', 'working_directory': str(tmp_path)},
                        capsys)
    assert result['unreadable'] == ['/usr/bin/python3']


def test_the_models_config_json_and_the_registry_in_one_call(tmp_path, capsys):
    """C37's model, read through the module as the role calls it: the keys the plan checks, and the registry of the
    server's SGLang read from its source files."""
    model = tmp_path / 'm'
    model.mkdir()
    (model / 'config.json').write_text(u'{"architectures": ["LlamaForCausalLM"], "num_attention_heads": 64, '
                                       u'"num_key_value_heads": 8, "rope_theta": 500000}')
    models = tmp_path / 'venv' / 'lib' / 'python3.12' / 'site-packages' / 'sglang' / 'srt' / 'models'
    models.mkdir(parents=True)
    (models / 'llama.py').write_text(u'EntryClass = [LlamaForCausalLM]\n')
    result = run_module({'model_paths': [str(model)], 'model_refs': [str(model), 'org/not-here'],
                         'hub_cache': str(tmp_path / 'hub'), 'working_directory': str(tmp_path),
                         'sglang_site': [str(tmp_path / 'venv' / 'lib' / 'python*' / 'site-packages')]}, capsys)
    assert result['model_configs'][0] == {
        'ref': str(model), 'path': str(model / 'config.json'), 'note': '',
        'config': {'architectures': ['LlamaForCausalLM'], 'num_attention_heads': 64, 'num_key_value_heads': 8}}
    assert result['model_configs'][1]['config'] is None and 'not in the Hugging Face cache' in result['model_configs'][1]['note']
    assert result['registry']['sglang'] == {'LlamaForCausalLM': True} and result['registry']['sglang_models'] == str(models)


def test_paths_and_unit_are_read_for_a_converged_host(tmp_path, capsys, monkeypatch):
    """paths: each path's state (for the filter rendered_current); unit: is-enabled and the exposure, read in the same call."""
    (tmp_path / 'sglang.env').write_text(u'PORT=30000\n')
    calls = []

    def run_command(module, argv, **kwargs):
        calls.append(argv[1:])
        if argv[1] == 'is-enabled':
            return 0, 'enabled\n', ''
        if argv[1] == 'security':
            return 0, 'Overall exposure level for sglang.service: 4.2 OK\n', ''
        if argv[1] == 'show':
            return 0, 'LoadState=loaded\nActiveState=active\nSubState=running\nMainPID=4242\nNRestarts=0\n', ''
        return 0, '', ''
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda module, name, *a, **kw: '/usr/bin/' + name)
    result = run_module({'working_directory': str(tmp_path), 'unit': 'sglang.service',
                         'paths': [str(tmp_path / 'sglang.env'), str(tmp_path / 'none')]}, capsys)
    assert result['paths'][str(tmp_path / 'sglang.env')]['kind'] == 'file'
    assert result['paths'][str(tmp_path / 'none')] == {'exists': False}
    assert result['unit'] == {'name': 'sglang.service', 'enabled_now': 'enabled', 'enabled': True,
                              'exposure': 'Overall exposure level for sglang.service: 4.2 OK\n',
                              'status': {'LoadState': 'loaded', 'ActiveState': 'active', 'SubState': 'running',
                                         'MainPID': '4242', 'NRestarts': '0'}}
    assert ['is-enabled', 'sglang.service'] in calls
    assert ['show', '--property=LoadState,ActiveState,SubState,MainPID,NRestarts', 'sglang.service'] in calls
    assert run_module({'working_directory': str(tmp_path)}, capsys)['unit'] == {}


def test_args_check_looks_the_memo_up_and_returns_no_argument(tmp_path, capsys, monkeypatch):
    """args_check: the command-line check's memo, looked up in the same call (_args_check_cache.lookup, tested against
    server_args_check in test_server_args_check.py); only the request's digest comes back, never the arguments."""
    from ansible_collections.inferops.sglang.plugins.module_utils import _args_check_cache
    asked = []

    def lookup(run_command, python, args, env_names, cache_dir=None):
        asked.append((python, list(args), list(env_names)))
        return {'request': _args_check_cache.request_digest(python, args, env_names),
                'result': {'checked': True, 'valid': True, 'cached': True}}
    monkeypatch.setattr(_args_check_cache, 'lookup', lookup)
    check = {'python': '/opt/venv/bin/python', 'args': ['--api-key', 'sk-secret', '--port', '30000'],
             'env_names': ['SGLANG_X']}
    result = run_module({'working_directory': str(tmp_path), 'args_check': check}, capsys)
    assert asked == [(check['python'], check['args'], check['env_names'])]
    request = _args_check_cache.request_digest(check['python'], check['args'], check['env_names'])
    assert result['args_check'] == {'request': request, 'result': {'checked': True, 'valid': True, 'cached': True}}
    result.pop('invocation', None)  # the module's arguments, as every module echoes them (the task runs with no_log)
    assert 'sk-secret' not in json.dumps(result)
    assert run_module({'working_directory': str(tmp_path)}, capsys)['args_check'] == {}
    assert len(asked) == 1


def test_an_interpreter_that_does_not_start_leaves_the_read_whole(tmp_path, capsys):
    """args_check with an interpreter that exists but cannot be started (a shebang to a missing program): the lookup
    finds nothing and every other failure of the read is still returned (the check's own task says what is wrong)."""
    broken = tmp_path / 'python3'
    broken.write_text(u'#!/nonexistent/bin/python3\n')
    broken.chmod(0o755)
    result = run_module({'working_directory': str(tmp_path), 'model_paths': [str(tmp_path / 'no-model')],
                         'args_check': {'python': str(broken), 'args': ['--api-key', 'sk-secret-1']}}, capsys)
    assert not result.get('failed') and result['args_check']['result'] is None
    assert any('no-model' in failure['message'] for failure in result['failures'])
    assert 'sk-secret-1' not in json.dumps(result), 'secret argument values are masked, the invocation included'


def test_paths_are_expanded_as_the_modules_that_own_them_expand_them(tmp_path, capsys, monkeypatch):
    """known_good_dir and args_check.python are paths (~ and $VAR expanded), as known_good_info's dir and
    server_args_check's python."""
    monkeypatch.setenv('HOME', str(tmp_path))
    (tmp_path / 'kg').mkdir()
    (tmp_path / 'kg' / 'manifest.json').write_text(u'{"schema": 1, "source": "cutover", "files": []}')
    result = run_module({'working_directory': str(tmp_path), 'known_good_dir': '~/kg'}, capsys)
    assert result['known_good']['exists'] is True


@pytest.mark.parametrize('rc,out,status', [
    (0, 'LoadState=loaded\nActiveState=failed\nSubState=failed\nMainPID=0\nNRestarts=5\n',
     {'LoadState': 'loaded', 'ActiveState': 'failed', 'SubState': 'failed', 'MainPID': '0', 'NRestarts': '5'}),
    (0, 'LoadState=not-found\nActiveState=inactive\nSubState=dead\nMainPID=0\nNRestarts=0\n', {}),  # no such unit
    (0, 'LoadState=loaded\nActiveState=active\nSubState=running\nMainPID=7\n', {}),  # a systemd without NRestarts
    (1, 'LoadState=loaded\nActiveState=active\nSubState=running\nMainPID=7\nNRestarts=0\n', {}),
    (0, '', {})])
def test_the_units_status_is_kept_only_when_systemd_knows_the_unit_and_said_everything(rc, out, status):
    """unit.status (service_preflight_info.unit_status): the cutover takes it instead of reading the unit again, so
    anything short of a whole answer about a loaded unit is no status (the cutover then reads it itself)."""
    from ansible_collections.inferops.sglang.plugins.modules.service_preflight_info import unit_status
    assert unit_status(rc, out) == status
