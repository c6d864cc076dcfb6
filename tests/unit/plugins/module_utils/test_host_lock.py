# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One run per host at a time (plugins/module_utils/_host_lock.py): the owner record, staleness and the decisions as
pure functions, then the lock itself with real holder processes on this machine."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import signal
import time

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _host_lock

NOW = 1796389202.0


def test_the_owner_record_names_the_run_and_its_lifetime():
    record = _host_lock.owner_record('r1', 'ops@bastion', 'inferops.sglang.site', 4321, NOW, 600)
    assert record == {'run_id': 'r1', 'controller': 'ops@bastion', 'playbook': 'inferops.sglang.site',
                      'holder_pid': 4321, 'started': '2026-12-04T13:00:02Z', 'started_ts': NOW,
                      'expires_ts': NOW + 600}
    assert _host_lock.parse_owner(json.dumps(record)) == record


@pytest.mark.parametrize('text', ['', '  \n', 'not json', '[1]', '{"holder_pid": 3}', '{"run_id": ""}'])
def test_a_file_without_an_owner_record_has_no_owner(text):
    assert _host_lock.parse_owner(text) == {}


def test_the_holder_is_named_with_run_controller_playbook_time_and_pid():
    record = _host_lock.owner_record('r1', 'ops@bastion', 'inferops.sglang.site', 4321, NOW, 600)
    assert _host_lock.describe_owner(record, NOW + 75) == (
        'run r1 of ops@bastion (inferops.sglang.site) since 2026-12-04T13:00:02Z (75 s ago), holder pid 4321')
    assert 'unknown holder' in _host_lock.describe_owner({}, NOW)


def test_a_record_under_a_free_lock_is_stale_expired_or_holder_gone():
    record = _host_lock.owner_record('r1', '', '', 4321, NOW, 600)
    assert _host_lock.stale_reason(record, NOW + 10) == 'holder gone'
    assert _host_lock.stale_reason(record, NOW + 600) == 'expired'
    assert _host_lock.stale_reason({}, NOW) is None


def test_only_the_holder_of_the_run_is_recognised_by_its_argv():
    argv = ['/usr/bin/python3', '-c', _host_lock.HOLDER_CODE, _host_lock.HOLDER_MARKER, 'r1', '600']
    assert _host_lock.is_holder_argv(argv, 'r1')
    assert not _host_lock.is_holder_argv(argv, 'r2')
    assert not _host_lock.is_holder_argv(['/usr/bin/python3', 'server.py', 'r1', '600'], 'r1')
    assert not _host_lock.is_holder_argv([], 'r1')


def test_a_taken_lock_is_waited_for_then_fails_unless_it_is_this_runs():
    other = {'run_id': 'r1'}
    assert _host_lock.busy_decision(other, 'r1', 100, 0) == 'ours'
    assert _host_lock.busy_decision(other, 'r2', 5, 10) == 'wait'
    assert _host_lock.busy_decision(other, 'r2', 10, 10) == 'fail'
    # Taken a moment ago, its record not written yet: read again for a little while.
    assert _host_lock.busy_decision({}, 'r2', 0.5, 0) == 'wait'
    assert _host_lock.busy_decision({}, 'r2', _host_lock.RECORD_GRACE_S, 0) == 'fail'
    # A holder that no longer runs but still holds the flock is exiting (its files are closed last): the same grace.
    assert _host_lock.busy_decision(other, 'r2', 0.5, 0, holder_running=False) == 'wait'
    assert _host_lock.busy_decision(other, 'r2', _host_lock.RECORD_GRACE_S, 0, holder_running=False) == 'fail'


# The lock with real processes.

@pytest.fixture
def lock_path(tmp_path):
    path = str(tmp_path / 'run' / 'inferops-sglang.lock')
    yield path
    # End any holder a test left behind.
    if os.path.exists(path):
        with open(path) as handle:
            owner = _host_lock.parse_owner(handle.read())
        if _host_lock.holder_alive(owner):
            os.kill(owner['holder_pid'], signal.SIGKILL)


def record_of(path):
    with open(path) as handle:
        return _host_lock.parse_owner(handle.read())


def wait_gone(owner, seconds=15.0):
    deadline = time.time() + seconds
    while _host_lock.holder_alive(owner) and time.time() < deadline:
        time.sleep(0.02)
    return not _host_lock.holder_alive(owner)


def test_acquire_wait_release_and_acquire_again(lock_path):
    first = _host_lock.acquire(lock_path, 'run-a', 'ops@ctl', 'inferops.sglang.site', 0, 60)
    assert first['result'] == 'acquired' and first['stale'] is None
    owner = first['owner']
    assert record_of(lock_path) == owner
    assert _host_lock.holder_alive(owner)
    assert _host_lock.peek(lock_path) == {'held': True, 'owner': owner}

    # A second run polls for its wait, then names the holder.
    started = time.time()
    second = _host_lock.acquire(lock_path, 'run-b', 'dev@laptop', 'inferops.sglang.site', 1, 60)
    assert second['result'] == 'busy'
    assert 1.0 <= time.time() - started < 15.0  # a busy machine polls late; the bound only says it did not wait for ever
    assert second['holder'].startswith('run run-a of ops@ctl (inferops.sglang.site) since ')
    assert second['holder'].endswith('holder pid %d' % owner['holder_pid'])

    # The same run asking again holds it already.
    assert _host_lock.acquire(lock_path, 'run-a', 'ops@ctl', 'inferops.sglang.site', 0, 60)['result'] == 'ours'

    # Another run's release leaves it alone.
    assert _host_lock.release(lock_path, 'run-b')['result'] == 'other'
    assert _host_lock.holder_alive(owner)

    assert _host_lock.release(lock_path, 'run-a') == {'result': 'released', 'owner': owner}
    assert wait_gone(owner)
    assert record_of(lock_path) == {}
    assert _host_lock.peek(lock_path) == {'held': False, 'owner': {}}
    assert _host_lock.release(lock_path, 'run-a')['result'] == 'not_held'

    third = _host_lock.acquire(lock_path, 'run-b', 'dev@laptop', 'inferops.sglang.site', 0, 60)
    assert third['result'] == 'acquired' and third['stale'] is None
    assert _host_lock.release(lock_path, 'run-b')['result'] == 'released'


def test_a_waiting_run_gets_the_lock_when_the_holder_releases_it(lock_path):
    first = _host_lock.acquire(lock_path, 'run-a', '', '', 0, 60)
    calls = []

    def sleep(seconds):
        calls.append(seconds)
        if len(calls) == 2:
            _host_lock.release(lock_path, 'run-a')
        time.sleep(seconds)

    second = _host_lock.acquire(lock_path, 'run-b', '', '', 30, 60, sleep=sleep)
    assert second['result'] == 'acquired' and second['stale'] is None
    assert 1.0 <= second['waited'] < 10
    assert not _host_lock.holder_alive(first['owner'])
    _host_lock.release(lock_path, 'run-b')


def test_a_killed_holder_leaves_a_stale_lock_that_is_taken_over(lock_path):
    first = _host_lock.acquire(lock_path, 'run-a', 'ops@ctl', 'inferops.sglang.site', 0, 60)
    os.kill(first['owner']['holder_pid'], signal.SIGKILL)
    assert wait_gone(first['owner'])
    second = _host_lock.acquire(lock_path, 'run-b', '', '', 0, 60)
    assert second['result'] == 'acquired'
    assert second['stale'] == dict(first['owner'], reason='holder gone')
    # The crashed run's release finds another run's lock and leaves it alone.
    assert _host_lock.release(lock_path, 'run-a')['result'] == 'other'
    assert _host_lock.release(lock_path, 'run-b')['result'] == 'released'


def test_the_holder_ends_by_itself_after_the_timeout(lock_path):
    first = _host_lock.acquire(lock_path, 'run-a', '', '', 0, 1)
    assert wait_gone(first['owner'], 15.0)
    second = _host_lock.acquire(lock_path, 'run-b', '', '', 0, 60)
    assert second['result'] == 'acquired' and second['stale']['reason'] == 'expired'
    _host_lock.release(lock_path, 'run-b')


def test_a_release_after_the_holder_ended_clears_the_record(lock_path):
    first = _host_lock.acquire(lock_path, 'run-a', '', '', 0, 60)
    os.kill(first['owner']['holder_pid'], signal.SIGKILL)
    assert wait_gone(first['owner'])
    assert _host_lock.release(lock_path, 'run-a')['result'] == 'expired'
    assert record_of(lock_path) == {}


def test_no_lock_file_is_a_free_lock(lock_path):
    assert _host_lock.peek(lock_path) == {'held': False, 'owner': {}}
    assert _host_lock.release(lock_path, 'run-a') == {'result': 'not_held', 'owner': {}}


def test_a_release_right_after_the_acquire_finds_the_holder(lock_path):
    # acquire returns once the holder runs its own code, so its command line already names it.
    for run in ('run-a', 'run-b', 'run-c'):
        taken = _host_lock.acquire(lock_path, run, '', '', 0, 60)
        assert _host_lock.holder_alive(taken['owner'])
        assert _host_lock.release(lock_path, run)['result'] == 'released'


# The default lock file is in /run/lock, which every local user may write to (mode 1777).

def test_the_lock_file_is_readable_by_its_owner_only(lock_path):
    # Another user who can open the file can flock it (a read-only descriptor is enough) and stop every run.
    _host_lock.acquire(lock_path, 'run-a', 'ops@ctl', 'inferops.sglang.site', 0, 60)
    try:
        assert os.stat(lock_path).st_mode & 0o077 == 0
    finally:
        _host_lock.release(lock_path, 'run-a')


def test_a_lock_file_left_readable_by_others_is_closed_to_them(lock_path):
    os.makedirs(os.path.dirname(lock_path))
    with open(lock_path, 'w'):
        pass
    os.chmod(lock_path, 0o644)
    assert _host_lock.peek(lock_path)['held'] is False
    assert os.stat(lock_path).st_mode & 0o077 == 0


def test_a_symbolic_link_at_the_lock_path_is_not_followed(lock_path, tmp_path):
    target = tmp_path / 'precious'
    target.write_text('keep me\n')
    os.makedirs(os.path.dirname(lock_path))
    os.symlink(str(target), lock_path)
    with pytest.raises(OSError):
        _host_lock.acquire(lock_path, 'run-a', 'ops@ctl', 'inferops.sglang.site', 0, 60)
    with pytest.raises(OSError):
        _host_lock.release(lock_path, 'run-a')
    assert target.read_text() == 'keep me\n'
    assert oct(os.stat(str(target)).st_mode & 0o777) == oct(0o644)


@pytest.mark.skipif(os.geteuid() != 0, reason='needs root to make a file of another user')
def test_a_lock_file_of_another_user_is_refused_naming_its_owner(lock_path):
    os.makedirs(os.path.dirname(lock_path))
    with open(lock_path, 'w'):
        pass
    os.chown(lock_path, 65534, 65534)
    with pytest.raises(OSError) as caught:
        _host_lock.acquire(lock_path, 'run-a', 'ops@ctl', 'inferops.sglang.site', 0, 60)
    assert 'uid 65534' in str(caught.value)
    assert os.stat(lock_path).st_uid == 65534
