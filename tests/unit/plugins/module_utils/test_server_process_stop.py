# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_server_process/stop.py with real, short-lived child processes of this test
(a few hundred milliseconds each)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import signal
import time

from ansible_collections.inferops.sglang.plugins.module_utils import _procfs
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import stop
from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils import server_process_fakes as fakes

IGNORE_TERM = fakes.IGNORE_TERM
SLEEPER = fakes.SLEEPER
spawn = fakes.spawn
target_of = fakes.target_of


def test_stop_sigterm_then_sigkill(spawn):
    polite = spawn(SLEEPER)
    stubborn = spawn(IGNORE_TERM)
    bystander = spawn(SLEEPER)   # a member that gets no SIGTERM of its own and does not exit
    targets = [target_of(polite), target_of(stubborn), target_of(bystander, term=False)]
    out = stop.stop_targets(targets, _procfs.ProcFS(), grace_period=0.5, kill_timeout=5)
    how = dict((s['pid'], s['signal']) for s in out['stopped'])
    assert how == {polite.pid: 'SIGTERM', stubborn.pid: 'SIGKILL', bystander.pid: 'SIGKILL'}
    assert out['signalled'] and not out['remaining'] and not out['errors']
    assert polite.wait(5) == -signal.SIGTERM
    assert stubborn.wait(5) == -signal.SIGKILL
    seconds = dict((s['pid'], s['seconds']) for s in out['stopped'])
    assert seconds[stubborn.pid] >= 0.5


def test_stop_refuses_reused_pid(spawn):
    p = spawn(SLEEPER)
    # A target whose start time differs is another process now: never signalled.
    target = target_of(p, starttime=_procfs.ProcFS().stat(p.pid).starttime - 1)
    out = stop.stop_targets([target], _procfs.ProcFS(), grace_period=0.2, kill_timeout=0.2)
    assert out['stopped'] == [{'pid': p.pid, 'main_pid': p.pid, 'role': 'server', 'signal': 'already gone',
                               'seconds': 0.0}]
    assert not out['signalled']
    assert p.poll() is None
    assert stop.send_signal(_procfs.ProcFS(), p.pid, target.starttime, signal.SIGKILL) is False
    assert p.poll() is None


def test_stop_already_gone(spawn):
    p = spawn(SLEEPER)
    target = target_of(p)
    p.kill()
    p.wait()
    out = stop.stop_targets([target], _procfs.ProcFS(), grace_period=5, kill_timeout=5)
    assert out['stopped'][0]['signal'] == 'already gone' and not out['signalled']


def test_stop_zombie_counts_as_gone(spawn):
    p = spawn(SLEEPER)
    target = target_of(p)
    os.kill(p.pid, signal.SIGKILL)   # not reaped: a zombie until p.wait()
    deadline = time.time() + 5
    while _procfs.ProcFS().stat(p.pid).state != 'Z' and time.time() < deadline:
        time.sleep(0.01)
    assert not stop.is_alive(_procfs.ProcFS(), p.pid, target.starttime)
    out = stop.stop_targets([target], _procfs.ProcFS(), grace_period=5, kill_timeout=5)
    assert out['stopped'][0]['signal'] == 'already gone'


def test_stop_never_signals_protected():
    source = _procfs.ProcFS()
    me = stop.Target(os.getpid(), source.stat(os.getpid()).starttime, 'server', os.getpid(), True)
    parent = stop.Target(os.getppid(), source.stat(os.getppid()).starttime, 'server', os.getppid(), True)
    init = stop.Target(1, source.stat(1).starttime, 'server', 1, True)
    out = stop.stop_targets([me, parent, init], source, grace_period=0.1, kill_timeout=0.1)
    assert sorted(pid for pid, _msg in out['errors']) == sorted([1, os.getpid(), os.getppid()])
    assert not out['signalled'] and out['stopped'] == []


def test_stop_permission_error_is_reported(spawn, monkeypatch):
    p = spawn(SLEEPER)

    def denied(*_args):
        raise PermissionError(1, 'Operation not permitted')
    monkeypatch.setattr(stop, 'send_signal', denied)
    out = stop.stop_targets([target_of(p)], _procfs.ProcFS(), grace_period=0.1, kill_timeout=0.1)
    # Reported once (no SIGKILL attempt after a refused SIGTERM) and left running.
    assert out['errors'] == [(p.pid, 'SIGTERM: Operation not permitted')]
    assert [t.pid for t in out['remaining']] == [p.pid] and p.poll() is None


def test_send_signal_without_pidfd(spawn, monkeypatch):
    monkeypatch.setattr(stop, '_HAS_PIDFD', False)
    p = spawn(SLEEPER)
    assert stop.send_signal(_procfs.ProcFS(), p.pid, _procfs.ProcFS().stat(p.pid).starttime, signal.SIGTERM) is True
    assert p.wait(5) == -signal.SIGTERM


def test_stop_members_get_sigterm_when_every_root_is_gone(spawn):
    root = spawn(SLEEPER)
    member = spawn(SLEEPER)
    targets = [target_of(root), target_of(member, term=False)]
    root.kill()
    root.wait()
    out = stop.stop_targets(targets, _procfs.ProcFS(), grace_period=5, kill_timeout=5)
    how = dict((s['pid'], s['signal']) for s in out['stopped'])
    assert how == {root.pid: 'already gone', member.pid: 'SIGTERM'}
    assert member.wait(5) == -signal.SIGTERM


def test_stop_process_stuck_in_state_d_stays_remaining(tmp_path):
    """A process whose state stays D after SIGKILL (stuck in the GPU driver) is reported remaining, after
    SIGTERM, SIGKILL and the kill timeout; the signal function is injectable."""
    from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils import server_process_fakes as fakes
    proc = fakes.FakeProc(tmp_path / 'proc')
    proc.add(300, ['sglang::scheduler_TP0'], fds=['/dev/nvidia0'])
    sent = []

    def send(source, pid, starttime, sig):
        sent.append((pid, sig))
        (proc.root / str(pid) / 'stat').write_text(fakes.stat_line(pid, 'sglang::schedul', 'D', starttime=starttime))
        return True
    clock = fakes.FakeClock()
    source = proc.source()
    target = stop.Target(300, source.stat(300).starttime, 'scheduler', 300, True)
    outcome = stop.stop_targets([target], source, 2, 1, clock=clock, sleep=clock.sleep, send=send)
    assert sent == [(300, signal.SIGTERM), (300, signal.SIGKILL)]
    assert [t.pid for t in outcome['remaining']] == [300] and outcome['stopped'] == []
    assert clock.now >= 3
