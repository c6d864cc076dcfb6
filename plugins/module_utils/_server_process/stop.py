# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Stopping processes safely: SIGTERM, a grace period, SIGKILL, and never a process that merely reuses a pid.

A target is a pid *and* the start time the scan saw (``/proc/<pid>/stat`` field 22); it is signalled only
while it is still that process, through a pidfd where the kernel and Python allow it.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import os
import signal
import time

from ansible_collections.inferops.sglang.plugins.module_utils._procfs import GONE_STATES

SIGTERM_NAME = 'SIGTERM'
SIGKILL_NAME = 'SIGKILL'
ALREADY_GONE = 'already gone'


class Target(object):
    """A process to stop, identified by pid *and* start time (a reused pid is another process)."""

    __slots__ = ('pid', 'starttime', 'role', 'main_pid', 'term')

    def __init__(self, pid, starttime, role, main_pid, term):
        self.pid = pid
        self.starttime = starttime
        self.role = role
        self.main_pid = main_pid
        self.term = term


def plan_targets(servers, identity):
    """Targets for stopping ``servers`` (entries from discover()); SIGTERM goes to each entry's roots:
    its main process and the top of every orphaned subtree attached to it."""
    targets = []
    for server in servers:
        roots = set(server.get('_roots') or [server['main_pid']])
        for member in server['members']:
            pid = member['pid']
            if pid in identity:
                targets.append(Target(pid, identity[pid], member['role'], server['main_pid'], pid in roots))
    targets.sort(key=lambda t: t.pid)
    return targets


_HAS_PIDFD = hasattr(os, 'pidfd_open') and hasattr(signal, 'pidfd_send_signal')


def is_alive(source, pid, starttime):
    """True while pid is the same process (same start time) and has not exited (zombies are gone)."""
    st = source.stat(pid)
    return st is not None and st.starttime == starttime and st.state not in GONE_STATES


def send_signal(source, pid, starttime, sig):
    """Deliver sig to pid only if it is still the process that started at ``starttime``.

    With pidfd (Linux 5.3+, Python 3.9+) the process is pinned first, then its start time checked,
    then signalled through the pidfd: a pid reused in between cannot be hit. Returns True when the
    signal was delivered, False when the process is gone. PermissionError propagates.
    """
    pidfd = None
    if _HAS_PIDFD:
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.ENOSYS, errno.EINVAL, errno.EPERM):
                raise
            pidfd = None
    try:
        if not is_alive(source, pid, starttime):
            return False
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, sig)
        else:
            os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _errors_pids(errors):
    return set(pid for pid, _message in errors)


def _guard(pid, protected):
    return pid > 1 and pid != os.getpid() and pid not in protected


def stop_targets(targets, source, grace_period, kill_timeout, protected=(), clock=time.monotonic,
                 sleep=time.sleep, poll_interval=0.05, send=None):
    """SIGTERM the roots, wait up to grace_period for every target, SIGKILL the rest, wait up to
    kill_timeout. ``send(source, pid, starttime, sig) -> bool`` delivers a signal (default
    :func:`send_signal`; tests pass a fake). Returns a dict:

    ``stopped``: [{pid, main_pid, role, signal, seconds}] for the targets gone (signal is 'SIGTERM',
    'SIGKILL' or 'already gone'; seconds since the first SIGTERM); ``remaining``: targets still
    alive; ``signalled``: whether any signal was delivered; ``errors``: [(pid, message)].
    """
    send = send or send_signal
    protected = set(protected)
    # Own ancestors, recomputed now: never signal them, whatever the plan says.
    pid = os.getpid()
    while pid > 1:
        st = source.stat(pid)
        if st is None:
            break
        protected.add(pid)
        pid = st.ppid
    stopped = {}
    errors = []
    signalled = False
    start = clock()
    pending = []
    for target in targets:
        if not _guard(target.pid, protected):
            errors.append((target.pid, 'refused: protected process'))
        elif is_alive(source, target.pid, target.starttime):
            pending.append(target)
        else:
            stopped[target.pid] = (target, ALREADY_GONE, 0.0)

    def deliver(target, sig, phase):
        try:
            if send(source, target.pid, target.starttime, sig):
                return True
            # Gone before this signal reached it: ended by the SIGTERM round if one was sent.
            stopped[target.pid] = (target, SIGTERM_NAME if signalled else ALREADY_GONE, round(clock() - start, 2))
        except PermissionError as exc:
            errors.append((target.pid, '%s: %s' % (phase, exc.strerror or exc)))
        except OSError as exc:
            errors.append((target.pid, '%s: %s' % (phase, exc)))
        return False

    def wait(targets_left, deadline, phase):
        while True:
            still = []
            for target in targets_left:
                if target.pid in stopped:
                    continue
                if is_alive(source, target.pid, target.starttime):
                    still.append(target)
                else:
                    stopped[target.pid] = (target, phase, round(clock() - start, 2))
            if not still or clock() >= deadline:
                return still
            sleep(min(poll_interval, max(0.0, deadline - clock())))

    for target in pending:
        if target.term and deliver(target, signal.SIGTERM, SIGTERM_NAME):
            signalled = True
    if not signalled:
        # Every root is gone since the scan: nobody will stop the rest, so each gets its own SIGTERM.
        refused = _errors_pids(errors)
        for target in pending:
            if target.pid not in stopped and target.pid not in refused and \
                    deliver(target, signal.SIGTERM, SIGTERM_NAME):
                signalled = True
    left = wait(pending, start + grace_period, SIGTERM_NAME)
    if left:
        for target in left:
            if target.pid in _errors_pids(errors):
                continue
            if deliver(target, signal.SIGKILL, SIGKILL_NAME):
                signalled = True
        left = wait(left, clock() + kill_timeout, SIGKILL_NAME)
    return {
        'stopped': [{'pid': t.pid, 'main_pid': t.main_pid, 'role': t.role, 'signal': how, 'seconds': seconds}
                    for t, how, seconds in sorted(stopped.values(), key=lambda item: item[0].pid)],
        'remaining': left,
        'signalled': signalled,
        'errors': errors,
    }
