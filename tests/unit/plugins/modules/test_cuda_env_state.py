# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of modules/cuda_env_state.py: one call answers what the cuda_env role's stats, reads and spawned-child
check answered in six (field case C13: the child must see the variables)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _python_probe
from ansible_collections.inferops.sglang.plugins.modules import cuda_env_state
from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import patch_module_args

MARKER = '# {mark} inferops.sglang managed block: CUDA/NCCL environment'
ENV = '# Ansible managed\nCUDA_HOME=/opt/cuda\n'


def block_for(variables):
    return 'import os as _inferops_os\n%sdel _inferops_os' % ''.join(
        '_inferops_os.environ.setdefault(%s, %s)\n' % (json.dumps(k), json.dumps(v)) for k, v in variables.items())


def me():
    return os.getuid(), os.getgid()


def run(capsys, args, check=False):
    with patch_module_args(dict(args, _ansible_check_mode=check)):
        with pytest.raises(SystemExit):
            cuda_env_state.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def host(tmp_path):
    cuda = tmp_path / 'cuda'
    (cuda / 'bin').mkdir(parents=True)
    (cuda / 'bin' / 'nvcc').write_text('')
    site = tmp_path / 'site'
    site.mkdir()
    uid, gid = me()
    variables = {'CUDA_HOME': str(cuda), 'NCCL_PROTO': 'LL'}
    args = {
        'cuda_home': str(cuda),
        'env_file': {'path': str(tmp_path / 'etc' / 'cuda.env'), 'content': ENV, 'owner': str(uid), 'group': str(gid),
                     'mode': '0644'},
        'env_dir': {'path': str(tmp_path / 'etc'), 'owner': str(uid), 'group': str(gid), 'mode': '0755'},
        'sitecustomize': {'path': str(site / 'sitecustomize.py'), 'marker': MARKER, 'block': block_for(variables),
                          'mode': '0644'},
        'variables': variables,
        'python': sys.executable,
        'pythonpath': str(site),
    }
    return {'tmp': tmp_path, 'cuda': cuda, 'site': site, 'args': args, 'variables': variables}


def converge(host):
    """Lay the files down as the role's write tasks would."""
    args = host['args']
    os.makedirs(args['env_dir']['path'])
    os.chmod(args['env_dir']['path'], 0o755)
    with open(args['env_file']['path'], 'w') as handle:
        handle.write(ENV)
    os.chmod(args['env_file']['path'], 0o644)
    path = args['sitecustomize']['path']
    with open(path, 'w') as handle:
        handle.write('%s\n%s\n%s\nPATCHED = "NCCL_PROTO"\n' % (
            MARKER.replace('{mark}', 'BEGIN'), args['sitecustomize']['block'], MARKER.replace('{mark}', 'END')))
    os.chmod(path, 0o644)


def test_a_new_host_needs_every_write_and_a_missing_tool_is_reported(capsys, host):
    result = run(capsys, host['args'], check=True)
    assert result['changed'] is False and result['current'] is False
    assert result['tools'] == {'nvcc': True, 'ptxas': False}
    assert result['env_dir'] == {'exists': False, 'current': False}
    assert result['env_file'] == {'exists': False, 'current': False}
    sc = result['sitecustomize']
    assert sc['marker_problem'] == ''
    assert (sc['exists'], sc['isreg'], sc['isdir'], sc['dir_isdir'], sc['current'], sc['shadowed']) == (
        False, False, False, True, False, [])
    # no sitecustomize.py on the path yet: the child sees nothing of the block
    assert _python_probe.spawn_env_missing(result['spawn']['stdout'], host['variables']) == ['CUDA_HOME', 'NCCL_PROTO']


def test_a_converged_host_is_current_and_its_spawned_child_sees_the_variables(capsys, host):
    """C13: the child spawned by the interpreter, from a clean environment with the server's PYTHONPATH, sees the
    block's variables; nothing needs writing; a hand-written mention outside the block is pointed out."""
    converge(host)
    result = run(capsys, host['args'])
    assert result['current'] is True, result
    assert result['env_dir']['current'] and result['env_file']['current'] and result['sitecustomize']['current']
    assert result['spawn']['rc'] == 0, result['spawn']
    assert _python_probe.spawn_env_missing(result['spawn']['stdout'], host['variables']) == []
    assert result['sitecustomize']['shadowed'] == ['NCCL_PROTO']


@pytest.mark.parametrize('change', ['content', 'file mode', 'dir mode', 'block', 'block mode', 'link'])
def test_any_difference_sends_the_role_to_the_writing_modules(capsys, host, change):
    converge(host)
    args = host['args']
    env, block = args['env_file']['path'], args['sitecustomize']['path']
    if change == 'content':
        with open(env, 'a') as handle:
            handle.write('NCCL_ALGO=Ring\n')
    elif change == 'file mode':
        os.chmod(env, 0o600)
    elif change == 'dir mode':
        os.chmod(args['env_dir']['path'], 0o700)
    elif change == 'block':
        args['sitecustomize']['block'] = block_for({'CUDA_HOME': '/usr/local/cuda-12.4'})
    elif change == 'block mode':
        os.chmod(block, 0o600)
    else:
        os.rename(env, env + '.real')
        os.symlink(env + '.real', env)
    result = run(capsys, args)
    assert result['current'] is False
    part = {'content': 'env_file', 'file mode': 'env_file', 'dir mode': 'env_dir', 'block': 'sitecustomize',
            'block mode': 'sitecustomize', 'link': 'env_file'}[change]
    assert result[part]['current'] is False
    assert all(result[other]['current'] for other in ('env_dir', 'env_file', 'sitecustomize') if other != part)


def test_an_unknown_owner_is_never_current(capsys, host):
    converge(host)
    host['args']['env_file']['owner'] = 'no-such-user-inferops'
    assert run(capsys, host['args'])['env_file']['current'] is False


def test_a_directory_in_place_of_the_sitecustomize(capsys, host):
    os.makedirs(host['args']['sitecustomize']['path'])
    sc = run(capsys, host['args'])['sitecustomize']
    assert sc['exists'] and sc['isdir'] and not sc['isreg'] and not sc['current']


def test_without_a_managed_block_no_child_runs(capsys, host):
    converge(host)
    args = dict(host['args'])
    del args['sitecustomize']
    del args['python']
    result = run(capsys, args)
    assert result['sitecustomize'] is None and result['spawn'] is None and result['current'] is True


def test_a_relative_interpreter_is_reported_not_run(capsys, host):
    host['args']['python'] = 'python3'
    spawn = run(capsys, host['args'])['spawn']
    assert spawn['rc'] is None and 'absolute path' in spawn['stderr']


def test_the_child_is_the_one_the_filter_builds(capsys, host, monkeypatch):
    """The module runs exactly the command of the spawn_probe_argv filter (one rule, one home)."""
    seen = []
    real = subprocess.Popen

    def recording(argv, *args, **kwargs):
        seen.append(list(argv))
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, 'Popen', recording)
    run(capsys, host['args'])
    wanted = _python_probe.spawn_probe_argv(sys.executable, list(host['variables']), str(host['site']))
    assert [a if isinstance(a, str) else a.decode() for a in seen[-1]] == wanted


def test_unbalanced_markers_are_reported_with_their_lines_and_no_hand_written_text(capsys, host):
    """A second BEGIN line above the block (a hand-written line between the two) is reported by line number for the
    pre-flight to refuse; the converged block below it still reads as current, so only this report stops the run."""
    converge(host)
    path = host['args']['sitecustomize']['path']
    with open(path) as handle:
        text = handle.read()
    with open(path, 'w') as handle:
        handle.write(MARKER.replace('{mark}', 'BEGIN') + '\nSECRET_PATCH = 1\n' + text)
    result = run(capsys, host['args'], check=True)
    problem = result['sitecustomize']['marker_problem']
    assert problem.startswith("the managed block's markers are unbalanced at lines 1, 3, ")
    assert 'SECRET_PATCH' not in problem
