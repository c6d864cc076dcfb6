# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fakes shared by the tests of module_utils/_server_process and of the server_process modules: a fake
procfs tree read by the real ProcFS, a reference SGLang server in it, real short-lived child processes,
a fake clock and a fake nvidia-smi. Loaded by file path (it is not a test module)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import os
import subprocess
import sys

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _procfs
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import discovery
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import stop


PY = '/root/ml-env/bin/python3'


def stat_line(pid, comm, state='S', ppid=1, pgid=None, sid=None, flags=0x400100, starttime=100):
    rest = [state, ppid, pgid if pgid is not None else pid, sid if sid is not None else pid, 0, -1, flags,
            0, 0, 0, 0, 0, 0, 0, 0, 20, 0, 1, 0, starttime, 1000, 100]
    return '%d (%s) %s\n' % (pid, comm, ' '.join(str(x) for x in rest))


NET_TCP = '\n'.join([
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0',
    '   1: 00000000:7531 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0 100 0',
    '   2: 0100007F:7530 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0 20 4',
    '   3: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0 100 0',
])
NET_TCP6 = '\n'.join([
    '  sl  local_address                         remote_address                        st tx_queue rx_queue',
    '   0: 00000000000000000000000000000000:7530 00000000000000000000000000000000:0000 0A 00000000:00000000 '
    '00:00000000 00000000     0        0 444 1 0 100 0',
])


HOST_PIDNS = 'pid:[4026531836]'


class FakeProcFS(_procfs.ProcFS):
    """The real reader, but /proc/<pid>/exe of the pids in ``exe_denied`` fails with EACCES, as for root
    without CAP_SYS_PTRACE reading another user's process (a fake tree cannot make root's readlink fail)."""

    def __init__(self, root, exe_denied):
        super(FakeProcFS, self).__init__(root)
        self.exe_denied = exe_denied

    def exe_link(self, pid):
        if pid in self.exe_denied:
            return None, errno.errorcode[errno.EACCES]
        return super(FakeProcFS, self).exe_link(pid)


class FakeProc(object):
    """Writes a fake procfs: <root>/<pid>/{stat,cmdline,environ,status,cgroup,fd/,cwd,exe,ns/pid}, stat, net/."""

    def __init__(self, root, btime=1700000000):
        self.root = root
        self.exe_denied = set()
        root.mkdir(exist_ok=True)
        (root / 'stat').write_text('cpu  1 2 3\nbtime %d\nprocesses 9\n' % btime)
        (root / 'net').mkdir()
        (root / 'net' / 'tcp').write_text(NET_TCP.splitlines()[0] + '\n')

    def add(self, pid, argv, ppid=1, pgid=None, comm=None, state='S', starttime=None, env=None, cwd='/srv',
            uid=0, cgroup='0::/\n', fds=(), exe='/usr/bin/python3.11', flags=0x400100, cmdline=None,
            pidns=HOST_PIDNS, exe_denied=False):
        d = self.root / str(pid)
        d.mkdir()
        if comm is None:
            comm = os.path.basename(argv[0])[:15] if argv else 'x'
        (d / 'stat').write_text(stat_line(pid, comm, state, ppid, pgid if pgid is not None else pid,
                                          starttime=starttime if starttime is not None else 1000 + pid,
                                          flags=flags))
        if cmdline is None:
            cmdline = ''.join(a + '\0' for a in argv)
        (d / 'cmdline').write_bytes(cmdline.encode() if isinstance(cmdline, str) else cmdline)
        env = env if env is not None else {'PATH': '/usr/bin'}
        (d / 'environ').write_text(''.join('%s=%s\0' % kv for kv in env.items()))
        (d / 'status').write_text('Name:\t%s\nUid:\t%d\t%d\t%d\t%d\n' % (comm, uid, uid, uid, uid))
        (d / 'cgroup').write_text(cgroup)
        (d / 'fd').mkdir()
        for i, target in enumerate(fds):
            os.symlink(target, str(d / 'fd' / str(i + 3)))
        if cwd:
            os.symlink(cwd, str(d / 'cwd'))
        if exe:
            os.symlink(exe, str(d / 'exe'))
        if exe_denied:
            self.exe_denied.add(pid)
        if pidns:
            (d / 'ns').mkdir()
            os.symlink(pidns, str(d / 'ns' / 'pid'))
        return pid

    def source(self):
        return FakeProcFS(str(self.root), self.exe_denied)


SELF = 900   # the fake "module" process: 900 <- 899 (ansible) <- 898 (shell) <- 1
LAUNCH = [PY, '-m', 'sglang.launch_server', '--model-path', '/models/m', '--tp', '2', '--port', '30000']
SPAWN = [PY, '-c', 'from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=7)',
         '--multiprocessing-fork']
TRACKER = [PY, '-B', '-c', 'from multiprocessing.resource_tracker import main;main(5)']


@pytest.fixture
def proc(tmp_path):
    fake = FakeProc(tmp_path / 'proc')
    fake.add(1, ['/sbin/init'], ppid=0, exe='/sbin/init')
    fake.add(2, [], ppid=0, comm='kthreadd', flags=0x00208040, cmdline=b'', exe=None)
    fake.add(898, ['-bash'], ppid=1)
    fake.add(899, ['/venv/bin/python3', '/venv/bin/ansible', 'localhost', '-m', 'inferops.sglang.server_process'],
             ppid=898, pgid=899)
    fake.add(SELF, ['/usr/bin/python3', '/root/.ansible/tmp/AnsiballZ_server_process.py'], ppid=899, pgid=899)
    return fake


def add_reference_server(proc, main=100, port=30000, gpus=(0, 1), cgroup='0::/user.slice/user-0.slice/session-3.scope\n',
                         env=None, extra_args=(), ppid=1):
    argv = [PY, '-m', 'sglang.launch_server', '--model-path', '/models/m', '--tp', str(len(gpus)),
            '--port', str(port)] + list(extra_args)
    proc.add(main, argv, ppid=ppid, env=env or {'PATH': '/root/ml-env/bin:/usr/bin', 'CUDA_HOME': '/usr/local/cuda',
                                                'HF_TOKEN': 'hf_secret'}, cgroup=cgroup,
             fds=['/dev/nvidiactl', '/dev/nvidia-uvm'], cwd='/root')
    proc.add(main + 1, TRACKER, ppid=main, pgid=main, cgroup=cgroup)
    for i, gpu in enumerate(gpus):
        proc.add(main + 2 + i, ['sglang::scheduler_TP%d' % i], ppid=main, pgid=main, cgroup=cgroup,
                 fds=['/dev/nvidiactl', '/dev/nvidia%d' % gpu, '/dev/nvidia-uvm', 'socket:[9%d]' % i])
    proc.add(main + 2 + len(gpus), ['sglang::detokenizer'], ppid=main, pgid=main, cgroup=cgroup)
    return [main, main + 1] + [main + 2 + i for i in range(len(gpus))] + [main + 2 + len(gpus)]


SUPERVISOR_SOCKET = '/run/inferops-sglang-supervisor.sock'
SUPERVISORD = ['/opt/inferops-sglang/supervisor/bin/python3', '/opt/inferops-sglang/supervisor/bin/supervisord',
               '-c', '/etc/inferops-sglang/supervisord.conf']


def supervised_env(program='sglang', socket=SUPERVISOR_SOCKET):
    """The environment supervisord gives a program (supervisor/process.py), the server's own variables beside."""
    return {'PATH': '/root/ml-env/bin:/usr/bin', 'HF_TOKEN': 'hf_secret', 'SUPERVISOR_ENABLED': '1',
            'SUPERVISOR_SERVER_URL': 'unix://' + socket, 'SUPERVISOR_PROCESS_NAME': program,
            'SUPERVISOR_GROUP_NAME': program}


def add_supervisord(proc, pid=50, argv=None):
    """A daemonised supervisord (parent PID 1), as the service role starts it."""
    return proc.add(pid, argv or SUPERVISORD, comm='supervisord', exe='/usr/bin/python3.11')


def run(proc, **kwargs):
    kwargs.setdefault('self_pid', SELF)
    kwargs.setdefault('now', 1700001000.0)
    return discovery.discover(source=proc.source(), **kwargs)


def by_main(found):
    return dict((s['main_pid'], s) for s in found.servers)


def ignored_pids(found):
    return dict((i['pid'], i['reason']) for i in found.ignored)


IGNORE_TERM = ('import signal, time, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
               'sys.stdout.write("ready\\n"); sys.stdout.flush(); time.sleep(60)')
SLEEPER = 'import sys, time; sys.stdout.write("ready\\n"); sys.stdout.flush(); time.sleep(60)'


@pytest.fixture
def spawn():
    procs = []

    def start(code):
        p = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE)
        assert p.stdout.readline() == b'ready\n'
        procs.append(p)
        return p
    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def target_of(p, term=True, starttime=None):
    source = _procfs.ProcFS()
    if starttime is None:
        starttime = source.stat(p.pid).starttime
    return stop.Target(p.pid, starttime, 'server', p.pid, term)


class FakeClock(object):
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def fake_smi(readings):
    """run_command answering the two nvidia-smi queries from a list of (apps_text, gpus_text)."""
    calls = []

    def run_command(argv):
        calls.append(argv)
        index = min(len([c for c in calls if c[1].startswith('--query-compute-apps')]) - 1, len(readings) - 1)
        reading = readings[max(index, 0)]
        if reading is None:
            return 9, '', 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver'
        if argv[1].startswith('--query-compute-apps'):
            return 0, reading[0], ''
        return 0, reading[1], ''
    return run_command, calls
