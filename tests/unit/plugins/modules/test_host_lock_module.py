# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_lock: one run per host - taken, refused naming the holder, given back; check mode takes nothing."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import signal

import pytest

from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import module_result

from ansible_collections.inferops.sglang.plugins.module_utils import _host_lock
from ansible_collections.inferops.sglang.plugins.modules import host_lock


@pytest.fixture
def lock(monkeypatch, tmp_path):
    path = str(tmp_path / 'lock' / 'inferops-sglang.lock')

    def run(check_mode=False, **params):
        return module_result(monkeypatch, host_lock.main, dict(params, path=path), check_mode)

    run.path = path
    yield run
    if os.path.exists(path):
        with open(path) as handle:
            owner = _host_lock.parse_owner(handle.read())
        if _host_lock.holder_alive(owner):
            os.kill(owner['holder_pid'], signal.SIGKILL)


def test_take_refuse_and_give_back(lock):
    taken = lock(run_id='run-a', controller='ops@ctl', playbook='inferops.sglang.site', _ansible_diff=True)
    assert taken['changed'] and not taken['failed'] and taken['stale'] is None
    assert taken['lock']['run_id'] == 'run-a' and taken['lock']['controller'] == 'ops@ctl'
    assert taken['diff'] == {'before': 'unlocked\n', 'after': 'locked by run run-a\n'}

    again = lock(run_id='run-a')
    assert not again['changed'] and not again['failed']

    refused = lock(run_id='run-b', playbook='inferops.sglang.site')
    assert refused['failed']
    assert 'run run-a of ops@ctl (inferops.sglang.site) since ' in refused['msg']
    assert 'holder pid %d' % taken['lock']['holder_pid'] in refused['msg']
    assert 'Nothing was changed' in refused['msg']

    other = lock(state='absent', run_id='run-b')
    assert not other['changed'] and 'left alone' in other['msg']

    given = lock(state='absent', run_id='run-a')
    assert given['changed'] and given['lock']['run_id'] == 'run-a'
    assert not lock(state='absent', run_id='run-a')['changed']

    taken_b = lock(run_id='run-b')
    assert taken_b['changed'] and taken_b['stale'] is None
    assert lock(state='absent', run_id='run-b')['changed']


def test_a_killed_holder_is_taken_over_and_said(lock):
    taken = lock(run_id='run-a')
    os.kill(taken['lock']['holder_pid'], signal.SIGKILL)
    owner = taken['lock']
    for dummy in range(200):
        if not _host_lock.holder_alive(owner):
            break
        _host_lock.time.sleep(0.02)
    over = lock(run_id='run-b')
    assert over['changed'] and over['stale']['reason'] == 'holder gone' and over['stale']['run_id'] == 'run-a'
    assert 'Took over the stale lock of run run-a' in over['msg']
    lock(state='absent', run_id='run-b')


def test_check_mode_takes_no_lock(lock):
    would = lock(check_mode=True, run_id='run-a')
    assert would['changed'] and 'Would take' in would['msg']
    assert not os.path.exists(lock.path)

    lock(run_id='run-a', playbook='inferops.sglang.site')
    busy = lock(check_mode=True, run_id='run-b')
    assert not busy['changed'] and not busy['failed']
    assert any('held by run run-a' in warning for warning in busy.get('warnings', [])) or 'Would wait' in busy['msg']
    assert lock(check_mode=True, state='absent', run_id='run-a')['changed']
    assert lock(state='absent', run_id='run-a')['changed']


@pytest.mark.parametrize('params', [{'wait': -1}, {'timeout': 0}])
def test_bad_durations_fail(lock, params):
    result = lock(run_id='run-a', **params)
    assert result['failed'] and 'wait must be' in result['msg']
