# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_server_process/identity.py (the pure rules; discovery's use of them is tested in
test_server_process_discovery.py on fake /proc trees)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _cgroup
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import identity

HEX = 'ab' * 32


@pytest.mark.parametrize('exe, error, verdict', [
    ('/usr/bin/python3.12', None, identity.PYTHON),
    ('/usr/bin/python3', None, identity.PYTHON),
    ('/usr/bin/python', None, identity.PYTHON),
    ('/usr/local/bin/python3.12d', None, identity.PYTHON),
    ('/opt/conda/bin/python3.13t', None, identity.PYTHON),
    ('/root/.local/share/uv/python/cpython-3.12.8-linux-x86_64-gnu/bin/python3.12', None, identity.PYTHON),
    ('/usr/bin/sleep', None, identity.NOT_PYTHON),
    ('/usr/bin/bash', None, identity.NOT_PYTHON),
    ('/venv/bin/sglang', None, identity.NOT_PYTHON),
    ('/usr/bin/python3-config', None, identity.NOT_PYTHON),
    (None, 'EACCES', identity.UNREADABLE),
    (None, 'ENOENT', identity.UNREADABLE),
    (None, None, identity.UNREADABLE),
])
def test_exe_verdict(exe, error, verdict):
    got, reason = identity.exe_verdict(exe, error)
    assert got == verdict
    assert (reason is None) is (verdict == identity.PYTHON)


def test_exe_verdict_names_the_missing_capability():
    reason = identity.exe_verdict(None, 'EACCES')[1]
    assert reason.startswith('unproven') and 'CAP_SYS_PTRACE' in reason and 'not stopped' in reason
    assert '/usr/bin/sleep' in identity.exe_verdict('/usr/bin/sleep', None)[1]


DOCKER = _cgroup.container_of('0::/system.slice/docker-%s.scope\n' % HEX)
OTHER_DOCKER = _cgroup.container_of('0::/docker/%s\n' % ('cd' * 32))


@pytest.mark.parametrize('ns, own_ns, container, own_container, foreign', [
    ('pid:[1]', 'pid:[1]', None, None, None),
    ('pid:[2]', 'pid:[1]', None, None, 'another PID namespace'),
    (None, 'pid:[1]', None, None, None),               # unreadable: the cgroup decides
    (None, 'pid:[1]', DOCKER, None, 'another container (docker abababababab)'),
    ('pid:[1]', 'pid:[1]', DOCKER, None, 'another container'),
    ('pid:[1]', 'pid:[1]', DOCKER, DOCKER, None),      # our own container (a unit inside it)
    ('pid:[1]', 'pid:[1]', OTHER_DOCKER, DOCKER, 'another container'),
    ('pid:[1]', 'pid:[1]', None, DOCKER, None),        # the host's process seen from a container with the host's PIDs
])
def test_foreign_reason(ns, own_ns, container, own_container, foreign):
    reason = identity.foreign_reason(ns, own_ns, container, own_container)
    if foreign is None:
        assert reason is None
    else:
        assert reason.startswith(foreign)


@pytest.mark.parametrize('roots, former, proven', [
    ({1: {'exe': '/usr/bin/python3.12', 'device': True, 'port': False}}, None, {1}),
    ({1: {'exe': '/usr/bin/python3.12', 'device': False, 'port': True}}, None, {1}),
    ({1: {'exe': '/usr/bin/python3.12', 'device': False, 'port': False}}, None, set()),
    ({1: {'exe': '/usr/bin/python3.12', 'device': False, 'port': False}}, '/usr/bin/python3.12', {1}),
    ({1: {'exe': '/usr/bin/python3.12', 'device': False, 'port': False}}, '/usr/bin/python3.11', set()),
    # a detokenizer holds no GPU: the interpreter of its group's scheduler, which does, vouches for it
    ({1: {'exe': '/usr/bin/python3.12', 'device': True, 'port': False},
      2: {'exe': '/usr/bin/python3.12', 'device': False, 'port': False},
      3: {'exe': '/opt/other/python3.12', 'device': False, 'port': False}}, None, {1, 2}),
])
def test_prove_orphans(roots, former, proven):
    got, unproven = identity.prove_orphans(roots, former)
    assert set(got) == proven
    assert set(unproven) == set(roots) - proven
    assert all('without evidence' in reason for reason in unproven.values())


@pytest.mark.parametrize('argv0, path_env, cwd, exe, venv, executables, expected', [
    ('/root/ml-env/bin/python3', None, '/', '/usr/bin/python3.12', None, set(), '/root/ml-env/bin/python3'),
    ('python3', '/root/ml-env/bin:/usr/bin', '/', '/usr/bin/python3.12', None,
     {'/root/ml-env/bin/python3', '/usr/bin/python3'}, '/root/ml-env/bin/python3'),
    ('python3', 'relative/bin::/usr/bin', '/', '/usr/bin/python3.12', None, {'/usr/bin/python3'}, '/usr/bin/python3'),
    ('./venv/bin/python', None, '/srv', '/usr/bin/python3.12', None, set(), '/srv/venv/bin/python'),
    ('python3', '/nowhere', '/', '/usr/bin/python3.12', None, set(), '/usr/bin/python3.12'),
    ('sglang::scheduler_TP0', '/usr/bin', '/', '/usr/bin/python3.12', None, {'/usr/bin/sglang::scheduler_TP0'},
     '/usr/bin/python3.12'),
    (None, None, None, None, None, set(), None),
])
def test_resolve_executable(argv0, path_env, cwd, exe, venv, executables, expected):
    assert identity.resolve_executable(argv0, path_env, cwd, exe, venv, is_executable=executables.__contains__) == expected


def test_resolve_executable_prefers_venv_python_for_retitled(tmp_path):
    real = tmp_path / 'python3.11'
    real.write_text('')
    real.chmod(0o755)
    (tmp_path / 'venv' / 'bin').mkdir(parents=True)
    os.symlink(str(real), str(tmp_path / 'venv' / 'bin' / 'python3'))
    got = identity.resolve_executable('sglang::scheduler_TP0', '/usr/bin', '/', str(real), str(tmp_path / 'venv'))
    assert got == str(tmp_path / 'venv' / 'bin' / 'python3')


ON_PORT = {'pid': 4242, 'title': 'sglang::http_server', 'port': 30000, 'holds_port': True, 'runtime': 'docker',
           'container_id': '3f2a9c0d11e4aa77', 'gpus': []}
WITH_GPUS = {'pid': 5151, 'title': 'python3 -m sglang.launch_server ' + 'x' * 200, 'port': 31000, 'holds_port': False,
             'runtime': '', 'container_id': '', 'gpus': ['GPU-0', 'GPU-1']}


def test_another_containers_server_on_the_port_is_named_with_its_container():
    message = identity.foreign_conflicts({'foreign': [ON_PORT, WITH_GPUS], 'gpu_count': 8}, 30000, 2)
    assert message.startswith('SGLang server pid 4242 (sglang::http_server) runs in another container '
                              '(docker 3f2a9c0d11e4) and listens on port 30000. ')
    assert '5151' not in message and 'Nothing was changed or stopped.' in message


def test_gpus_held_elsewhere_conflict_only_when_too_few_are_left():
    assert identity.foreign_conflicts({'foreign': [WITH_GPUS], 'gpu_count': 8}, 30000, 6) == ''
    message = identity.foreign_conflicts({'foreign': [WITH_GPUS, dict(WITH_GPUS, pid=5152)], 'gpu_count': 8}, 30000, 7)
    assert '(another PID namespace) and holds GPU-0, GPU-1.' in message
    assert ("Other containers' SGLang servers hold 2 of 8 GPUs; the server needs 7." in message)
    assert '...' in message and 'x' * 200 not in message


def test_no_foreign_server_no_conflict():
    assert identity.foreign_conflicts({'foreign': [], 'gpu_count': 8}, 30000, 8) == ''
    assert identity.foreign_conflicts({}, 30000, 1) == '' and identity.foreign_conflicts(None, 30000, 1) == ''
    assert identity.foreign_conflicts({'foreign': [dict(ON_PORT, holds_port=False)], 'gpu_count': 8}, 30000, 8) == ''
