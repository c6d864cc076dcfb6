# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""One run per host at a time: the lock the module ``inferops.sglang.host_lock`` takes and gives back (Linux; the
standard library only).

The lock is an ``fcntl.flock`` on a lock file, held by a small detached process (its own session, ``setsid``) that
inherits the locked file descriptor from the module and sleeps until the lock's maximum lifetime (``timeout``) has
passed or it is told to end. The kernel drops the lock when the holder ends for any reason - released, killed, the
host rebooted - so a crashed controller leaves no lock behind for longer than ``timeout``, and a lock whose holder is
gone is free by construction: no pid needs to be trusted for that. The lock file also holds the owner record (JSON:
run id, controller, playbook, holder pid, start and expiry); a record found under a free lock is a stale one (the run
crashed or outlived ``timeout``) and is reported when the lock is taken over.

Release ends the holder only when the record is the caller's run and ``/proc/<pid>/cmdline`` is that run's holder
(the pid may have been reused).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import fcntl
import json
import os
import signal
import stat
import sys
import time

from ansible_collections.inferops.sglang.plugins.module_utils import _procfs

# The holder's argv after the interpreter: ``-c CODE MARKER RUN_ID TIMEOUT``; the marker and the run id identify it
# in /proc/<pid>/cmdline.
HOLDER_MARKER = 'inferops-sglang-host-lock'
HOLDER_CODE = 'import sys, time; time.sleep(float(sys.argv[3]))'
POLL_S = 1.0
# A run that has just taken the lock writes its record a few milliseconds later: a taken lock without a record is
# read again for this long before the holder is called unknown.
RECORD_GRACE_S = 1.0
RELEASE_WAIT_S = 5.0
# The lock file of host_lock, and of every module that takes or gives back the same lock.
DEFAULT_PATH = '/run/lock/inferops-sglang.lock'
HOLDER_START_S = 10.0


def owner_record(run_id, controller, playbook, holder_pid, now, timeout):
    """The owner record written into the lock file: a dict with ``run_id``, ``controller`` (``user@host``),
    ``playbook``, ``holder_pid``, ``started`` (UTC, ISO 8601), ``started_ts`` and ``expires_ts`` (epoch seconds:
    ``now`` + ``timeout``)."""
    return {
        'run_id': run_id,
        'controller': controller,
        'playbook': playbook,
        'holder_pid': int(holder_pid),
        'started': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now)),
        'started_ts': float(now),
        'expires_ts': float(now) + float(timeout),
    }


def parse_owner(text):
    """The owner record in the lock file's text: a dict, ``{}`` for an empty file or text that is not a JSON object
    with a ``run_id`` (a file someone else wrote is not an owner)."""
    try:
        record = json.loads(text) if text and text.strip() else {}
    except ValueError:
        return {}
    return record if isinstance(record, dict) and record.get('run_id') else {}


def describe_owner(owner, now):
    """One line naming the holder of the lock, for the failure of a run that finds it taken: ``run RUN of CONTROLLER
    (PLAYBOOK) since STARTED (N s ago), holder pid PID``."""
    if not owner:
        return 'an unknown holder (no owner record)'
    since = owner.get('started_ts')
    age = ' (%d s ago)' % max(0, int(now - since)) if isinstance(since, (int, float)) else ''
    return 'run %s of %s (%s) since %s%s, holder pid %s' % (
        owner.get('run_id'), owner.get('controller') or 'an unknown controller', owner.get('playbook') or '?',
        owner.get('started') or '?', age, owner.get('holder_pid'))


def stale_reason(owner, now):
    """Why an owner record found under a free lock is stale: ``expired`` when its lifetime had passed (the run
    outlived ``timeout``), else ``holder gone`` (the holder ended without a release: a crash, a kill, a reboot);
    None when there is no record."""
    if not owner:
        return None
    expires = owner.get('expires_ts')
    if isinstance(expires, (int, float)) and now >= expires:
        return 'expired'
    return 'holder gone'


def is_holder_argv(argv, run_id):
    """Whether a process's argv (``/proc/<pid>/cmdline`` split at NUL) is the holder of ``run_id``'s lock."""
    args = list(argv or [])
    return len(args) >= 5 and args[-4:-1] == [HOLDER_CODE, HOLDER_MARKER, run_id] and args[-5] == '-c'


def busy_decision(owner, run_id, waited, wait, holder_running=True):
    """What a run does when the lock is taken: ``ours`` (the record is this run's: it holds the lock already),
    ``wait`` (poll again) or ``fail`` (``wait`` seconds have passed; RECORD_GRACE_S more while the lock has no
    record yet, or while the holder it names is no longer running: it is exiting and its descriptor, hence the
    flock, is closed last)."""
    if owner and owner.get('run_id') == run_id:
        return 'ours'
    if not owner or not holder_running:
        return 'wait' if waited < wait + RECORD_GRACE_S else 'fail'
    return 'wait' if waited < wait else 'fail'


def _proc_argv(pid):
    try:
        path = '/proc/%d/cmdline' % int(pid)
    except (ValueError, TypeError):
        return []
    return _procfs.parse_cmdline(_procfs.read_text(path, ''))


def holder_alive(owner):
    """Whether the holder process the owner record names runs (a zombie or a reused pid does not count)."""
    return bool(owner) and is_holder_argv(_proc_argv(owner.get('holder_pid')), owner.get('run_id'))


def _read_record(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b''.join(chunks).decode('utf-8', 'replace')


def _write_record(fd, record):
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    if record:
        os.write(fd, json.dumps(record, sort_keys=True).encode('utf-8') + b'\n')
    os.fsync(fd)


def _try_lock(fd, operation=fcntl.LOCK_EX):
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
        return True
    except (IOError, OSError) as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise


def _open_lock(path, create):
    """Open the lock file (created, mode 0600, when ``create``). The default directory, /run/lock, is writable by
    every local user (mode 1777), so: a symbolic link there is not followed (``O_NOFOLLOW``: ELOOP), a file that
    another user made is refused (OSError EPERM naming its owner's uid), and the file is readable by its owner only
    (another user who can open it can ``flock`` it through a read-only descriptor and so stop every run)."""
    if create:
        parent = os.path.dirname(path)
        if parent and not os.path.isdir(parent):
            os.makedirs(parent, 0o755)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    else:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EPERM, 'the lock file %s is not a regular file; remove it' % path)
        if info.st_uid != os.geteuid():
            raise OSError(errno.EPERM, 'the lock file %s belongs to uid %d, not to uid %d that takes the lock: another '
                                       'user made it; remove it' % (path, info.st_uid, os.geteuid()))
        if info.st_mode & 0o077:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o700)
    except BaseException:
        os.close(fd)
        raise
    return fd


def peek(path, now=None):
    """The lock's state without taking it (check mode): ``{'held': bool, 'owner': record or {}}``. A missing file is
    a free lock."""
    now = time.time() if now is None else now
    try:
        fd = _open_lock(path, create=False)
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return {'held': False, 'owner': {}}
        raise
    try:
        free = _try_lock(fd, fcntl.LOCK_SH)
        owner = parse_owner(_read_record(fd))
        if free:
            fcntl.flock(fd, fcntl.LOCK_UN)
        return {'held': not free, 'owner': owner}
    finally:
        os.close(fd)


def _start_detached(argv, keep_fd):
    """fork and exec ``argv`` (list of str; argv[0] an absolute path) in a session of its own, in ``/``, with stdin,
    stdout and stderr on /dev/null and no descriptor of this process but ``keep_fd`` (kept at its number). Returns
    the child's pid; the child never returns here (status 127 when the exec fails). subprocess.Popen does the same,
    but module_utils run commands through run_command, which waits for them; the holder must outlive the module."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.chdir('/')
            null = os.open(os.devnull, os.O_RDWR)
            for target in (0, 1, 2):
                os.dup2(null, target)
            highest = os.sysconf('SC_OPEN_MAX') if hasattr(os, 'sysconf') else 65536
            os.closerange(3, keep_fd)
            os.closerange(keep_fd + 1, max(highest, keep_fd + 2))
            os.set_inheritable(keep_fd, True)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    return pid


def _exited(pid):
    """Whether the child ``pid`` of this process has exited (it is reaped then)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except OSError as exc:
        if exc.errno == errno.ECHILD:
            return True
        raise


def _spawn_holder(fd, run_id, timeout, clock, sleep):
    """Start the detached holder with ``fd`` inherited; returns its pid once it runs the holder's code (so that a
    release right after finds it by its command line). Raises OSError when it does not start."""
    pid = _start_detached([sys.executable, '-c', HOLDER_CODE, HOLDER_MARKER, run_id, '%d' % int(timeout)], fd)
    deadline = clock() + HOLDER_START_S
    while not is_holder_argv(_proc_argv(pid), run_id):
        if _exited(pid) or clock() >= deadline:
            raise OSError(errno.ECHILD, 'the lock holder (%s -c ...) did not start' % sys.executable)
        sleep(0.01)
    return pid


def acquire(path, run_id, controller, playbook, wait, timeout, clock=time.time, sleep=time.sleep):
    """Take the lock for ``run_id``, waiting up to ``wait`` seconds (polling every POLL_S) while another run holds it.

    Returns a dict: ``result`` - ``acquired`` (taken; ``owner`` is the new record, ``stale`` the record of a run
    that ended without releasing it, with ``reason``, or None), ``ours`` (this run holds it already: nothing done),
    or ``busy`` (another run holds it after ``wait`` seconds: ``owner`` is its record, ``holder`` a line naming it);
    ``waited`` (seconds). Raises OSError when the lock file cannot be opened or written.
    """
    started = clock()
    while True:
        fd = _open_lock(path, create=True)
        try:
            if _try_lock(fd):
                previous = parse_owner(_read_record(fd))
                now = clock()
                pid = _spawn_holder(fd, run_id, timeout, clock, sleep)
                owner = owner_record(run_id, controller, playbook, pid, now, timeout)
                _write_record(fd, owner)
                stale = None
                if previous:
                    stale = dict(previous, reason=stale_reason(previous, now))
                return {'result': 'acquired', 'owner': owner, 'stale': stale, 'waited': round(now - started, 1)}
            owner = parse_owner(_read_record(fd))
        finally:
            os.close(fd)
        now = clock()
        decision = busy_decision(owner, run_id, now - started, wait, holder_alive(owner))
        if decision == 'ours':
            return {'result': 'ours', 'owner': owner, 'stale': None, 'waited': round(now - started, 1)}
        if decision == 'fail':
            return {'result': 'busy', 'owner': owner, 'holder': describe_owner(owner, now),
                    'waited': round(now - started, 1)}
        sleep(max(0.1, min(POLL_S, wait - (now - started))))


def release(path, run_id, clock=time.time, sleep=time.sleep):
    """Give the lock of ``run_id`` back: end its holder (only when the record is this run's and the process is its
    holder) and clear the record.

    Returns a dict: ``result`` - ``released``, ``expired`` (the record is this run's but its holder had ended: the
    run outlived the lock's ``timeout``, or the holder was killed), ``not_held`` (no record, or no lock file),
    ``other`` (another run's record: left alone; ``owner`` is it); ``owner``.
    """
    try:
        fd = _open_lock(path, create=False)
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return {'result': 'not_held', 'owner': {}}
        raise
    try:
        owner = parse_owner(_read_record(fd))
    finally:
        os.close(fd)
    if not owner:
        return {'result': 'not_held', 'owner': {}}
    if owner.get('run_id') != run_id:
        return {'result': 'other', 'owner': owner}
    result = 'expired'
    if holder_alive(owner):
        os.kill(int(owner['holder_pid']), signal.SIGTERM)
        result = 'released'
    # Clear the record under the lock, once the holder has let go of it (at once when it had ended already).
    deadline = clock() + RELEASE_WAIT_S
    fd = _open_lock(path, create=True)
    try:
        while not _try_lock(fd):
            if clock() >= deadline:
                raise OSError(errno.ETIMEDOUT, 'the holder (pid %s) of the lock %s did not end within %d s'
                              % (owner.get('holder_pid'), path, RELEASE_WAIT_S))
            sleep(0.05)
        if parse_owner(_read_record(fd)).get('run_id') == run_id:
            _write_record(fd, {})
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return {'result': result, 'owner': owner}


def expired_warning(run_id, owner):
    """The warning of a give-back (``release``) that found ``run_id``'s lock ``expired`` (``owner``: its record)."""
    return ('The lock of run %s had ended before the run did (its holder pid %s is gone: the lock\'s timeout passed, '
            'or the holder was killed); another run could have started meanwhile.' % (run_id, (owner or {}).get('holder_pid')))


BUSY_MESSAGE = ('Another run holds the lock of this host (%s): %s. Nothing was changed here. Wait for it to end (or '
                'raise inferops_sglang_lock_wait); a holder that is gone frees the lock by itself.')


def take(path, run_id, controller, playbook, wait, timeout, check_mode=False, clock=time.time, sleep=time.sleep):
    """Take the lock as a module does (``host_lock`` with ``state=present``, ``host_facts`` with ``lock``): one home
    for what each outcome reports.

    :returns: dict - ``failed`` (bool: another run holds it after ``wait`` s; nothing was changed), ``changed`` (bool:
        the lock was taken, or would be in check mode), ``lock`` (the owner record: this run's, or the holder's; {}
        when check mode would take a free lock), ``stale`` (the record of an ended run taken over, with ``reason``, or
        None), ``waited`` (float, seconds), ``msg`` (str), ``warnings`` (list of str), ``diff`` (dict or None).
    :raises OSError: when the lock file cannot be opened or written (not in check mode: it only reads).
    """
    taken = {'before': 'unlocked\n', 'after': 'locked by run %s\n' % run_id}
    out = {'failed': False, 'changed': False, 'lock': {}, 'stale': None, 'waited': 0.0, 'warnings': [], 'diff': None}
    now = clock()
    if check_mode:
        state = peek(path, now)
        owner = state['owner']
        if state['held'] and owner.get('run_id') == run_id:
            return dict(out, lock=owner, msg='This run holds the lock already.')
        if state['held']:
            out['warnings'].append('The lock is held by %s; a real run would wait up to %d s for it, then fail.'
                                   % (describe_owner(owner, now), wait))
            return dict(out, lock=owner, msg='Would wait for the lock (check mode takes none).')
        return dict(out, changed=True, diff=taken, msg='Would take the lock (check mode takes none).')
    result = acquire(path, run_id, controller, playbook, wait, timeout, clock=clock, sleep=sleep)
    if result['result'] == 'busy':
        return dict(out, failed=True, lock=result['owner'], waited=result['waited'],
                    msg=BUSY_MESSAGE % (path, result['holder']))
    if result['result'] == 'ours':
        return dict(out, lock=result['owner'], waited=result['waited'], msg='This run holds the lock already.')
    stale = result['stale']
    msg = 'Took the lock (holder pid %d, for at most %d s).' % (result['owner']['holder_pid'], timeout)
    if stale:
        msg += ' Took over the stale lock of %s (%s).' % (describe_owner(stale, now), stale['reason'])
    return dict(out, changed=True, lock=result['owner'], stale=stale, waited=result['waited'], msg=msg, diff=taken)


def lock_options():
    """The lock's module options (AnsibleModule argument_spec entries): ``host_lock``'s, and ``host_facts``' ``lock``
    suboptions - one spec, so that both take the same lock the same way."""
    return dict(
        run_id=dict(type='str', required=True),
        controller=dict(type='str', default=''),
        playbook=dict(type='str', default=''),
        wait=dict(type='int', default=0),
        timeout=dict(type='int', default=7200),
        path=dict(type='path', default=DEFAULT_PATH),
    )


def take_or_fail(module, params):
    """``take`` for a module: its warnings given, the module failed naming the holder when another run holds the lock.

    :param module: the AnsibleModule (its check mode is the take's). :param params: ``lock_options``' values.
    :returns: ``take``'s dict less ``failed`` and ``warnings``. :raises OSError: as ``take``.
    """
    out = take(params['path'], params['run_id'], params['controller'], params['playbook'], params['wait'],
               params['timeout'], check_mode=module.check_mode)
    for warning in out.pop('warnings'):
        module.warn(warning)
    if out.pop('failed'):
        module.fail_json(msg=out['msg'], lock=out['lock'], waited=out['waited'])
    return out
