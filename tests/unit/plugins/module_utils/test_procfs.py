# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_procfs.py: the /proc parsers, fd targets and process trees."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


import os
import subprocess
import sys
import time

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _procfs
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import discovery
from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils import server_process_fakes as fakes

stat_line = fakes.stat_line
NET_TCP = fakes.NET_TCP
NET_TCP6 = fakes.NET_TCP6


# ------------------------------------------------------------------------------------------------
# /proc parsers
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize('comm', ['python3', 'sglang::schedul', 'a) b (c', 'with space', ')'])
def test_parse_stat(comm):
    st = _procfs.parse_stat(stat_line(42, comm, state='R', ppid=7, pgid=8, sid=9, starttime=123456).encode())
    assert (st.pid, st.comm, st.state, st.ppid, st.pgid, st.sid, st.starttime) == (42, comm, 'R', 7, 8, 9, 123456)


@pytest.mark.parametrize('data', [b'', b'garbage', b'1 (x) S 1', b'x (y) S 1 2 3 4 5 6'])
def test_parse_stat_malformed(data):
    assert _procfs.parse_stat(data) is None


@pytest.mark.parametrize('raw, argv', [
    (b'python3\0-m\0sglang.launch_server\0', ['python3', '-m', 'sglang.launch_server']),
    (b'sglang::scheduler_TP0', ['sglang::scheduler_TP0']),
    (b'sglang::scheduler_TP0\0\0\0\0', ['sglang::scheduler_TP0']),
    (b'sglang::detokenizer          ', ['sglang::detokenizer']),
    (b'a\0\0b\0', ['a', '', 'b']),
    (b'', []),
    (b'caf\xc3\xa9\0\xff\0', ['caf\xe9', '\ufffd']),
])
def test_parse_cmdline(raw, argv):
    assert _procfs.parse_cmdline(raw) == argv


def test_parse_environ_and_status():
    assert _procfs.parse_environ(b'A=1\0B=x=y\0A=2\0NOEQ\0\0') == {'A': '1', 'B': 'x=y'}
    assert _procfs.parse_status_uid('Name:\tx\nUid:\t1000\t1000\t1000\t1000\n') == 1000
    assert _procfs.parse_status_uid('Name:\tx\n') is None


# The kernel escapes only a line feed and a backslash in the Name: line of /proc/PID/status (proc_task_name), so a
# process's own title (prctl PR_SET_NAME, 15 bytes) may hold a carriage return, a vertical tab, U+001C-U+001E, NEL or
# U+2028, where str.splitlines would start a line of the process's choosing.
@pytest.mark.parametrize('comm', [b'x\rUid:\t0\t0', b'x\x0bUid: 0', b'x\x0cUid: 0', b'x\x1cUid: 0',
                                  b'x\xc2\x85Uid: 0', u'x\u2028Uid: 0'.encode('utf-8')])
def test_status_uid_is_not_taken_from_the_process_title(comm):
    raw = b'Name:\t' + comm + b'\nUmask:\t0022\nUid:\t1000\t1000\t1000\t1000\n'
    assert _procfs.parse_status_uid(raw) == 1000
    assert _procfs.parse_status_uid(raw.decode('utf-8')) == 1000


@pytest.mark.parametrize('text, ids', [
    ('Name:\tx\nUid:\t997\t997\t997\t997\nGid:\t996\t996\t996\t996\n', (997, 996)),
    # A process that changed ids (setuid, seteuid) is left alone: the kernel would refuse its user too.
    ('Uid:\t997\t0\t997\t0\nGid:\t996\t996\t996\t996\n', None),
    ('Uid:\t997\t997\t997\t997\nGid:\t996\t996\t5\t996\n', None),
    ('Uid:\t997\t997\t997\t997\n', None),
    ('Name:\tx\rGid:\t0\t0\t0\t0\nUid:\t997\t997\t997\t997\nGid:\t996\t996\t996\t996\n', (997, 996)),
])
def test_status_ids_are_one_uid_and_one_gid(text, ids):
    assert _procfs.parse_status_ids(text) == ids


needs_root_and_setpriv = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists('/usr/bin/setpriv') or not os.path.exists('/usr/sbin/runuser'),
    reason='needs root, setpriv and runuser')


@needs_root_and_setpriv
def test_another_users_exe_is_read_as_that_user_where_root_lacks_cap_sys_ptrace(tmp_path):
    """Root without CAP_SYS_PTRACE (docker's default) gets EACCES for another user's /proc/PID/exe; exe_link reads
    it through a child that becomes that user, and pid_namespace too."""
    sleeper = subprocess.Popen(['/usr/sbin/runuser', '-u', 'nobody', '--', '/bin/sleep', '30'])
    try:
        pid = None
        for dummy in range(100):
            found = subprocess.run(['pgrep', '-u', 'nobody', '-P', str(sleeper.pid)], stdout=subprocess.PIPE,
                                   check=False).stdout.split()
            if found:
                pid = int(found[0])
                break
            time.sleep(0.05)
        assert pid, 'the sleep of nobody did not start'
        probe = ('import os, sys\n'
                 'from ansible_collections.inferops.sglang.plugins.module_utils import _procfs\n'
                 'pid = int(sys.argv[1])\n'
                 'try:\n'
                 '    os.readlink("/proc/%d/exe" % pid)\n'
                 '    print("direct")\n'
                 'except OSError as exc:\n'
                 '    print("refused %d" % exc.errno)\n'
                 'print(_procfs.ProcFS().exe_link(pid))\n'
                 'print(_procfs.ProcFS().pid_namespace(pid) == os.readlink("/proc/self/ns/pid"))\n')
        out = subprocess.run(['/usr/bin/setpriv', '--bounding-set', '-sys_ptrace', '--inh-caps', '-sys_ptrace',
                              sys.executable, '-c', probe, str(pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             check=False, universal_newlines=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0] == 'refused 13', lines
        assert lines[1] == "('%s', None)" % os.path.realpath('/bin/sleep'), lines
        assert lines[2] == 'True', lines
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize('text, port, inodes', [
    (NET_TCP, 30000, {'111'}),
    (NET_TCP, 30001, {'222'}),
    (NET_TCP, 1, set()),
    (NET_TCP6, 30000, {'444'}),
    ('', 30000, set()),
])
def test_parse_proc_net_tcp(text, port, inodes):
    assert _procfs.listening_inodes(text, port) == inodes


@pytest.mark.parametrize('pattern, target, expected', [
    ('/dev/nvidia*', '/dev/nvidia0', True),
    ('/dev/nvidia*', '/dev/nvidiactl', True),
    ('/dev/nvidia*', '/dev/nvidia-caps/nvidia-cap1', True),
    ('/dev/nvidia*', '/dev/null', False),
    ('/dev/nvidia*', '/tmp/dev/nvidia0', False),
    ('/dev/nvidia[0-9]', '/dev/nvidia7', True),
    ('/dev/nvidia[0-9]', '/dev/nvidiactl', False),
    ('/tmp/gpu/*', '/tmp/gpu/nvidia1', True),
])
def test_compile_device_glob(pattern, target, expected):
    assert _procfs.compile_device_glob(pattern)(target) is expected


@pytest.mark.parametrize('target, path', [
    ('/dev/nvidia0', '/dev/nvidia0'), ('/tmp/x/nvidia1 (deleted)', '/tmp/x/nvidia1'),
    ('socket:[123]', None), ('pipe:[4]', None), ('anon_inode:[eventfd]', None), ('', None),
])
def test_device_path_of(target, path):
    assert _procfs.device_path_of(target) == path


@pytest.mark.parametrize('path, expected', [
    ('/dev/nvidia0', True), ('/dev/nvidia15', True), ('/tmp/gpu/nvidia3', True), ('/dev/dri/renderD128', True),
    ('/dev/nvidiactl', False), ('/dev/nvidia-uvm', False), ('/dev/nvidia-caps/nvidia-cap1', False),
])
def test_is_per_gpu_device(path, expected):
    assert _procfs.is_per_gpu_device(path) is expected


def test_tree_helpers():
    parent_of = {10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 30: 30}
    children = _procfs.children_map(parent_of)
    assert children[10] == [11, 13]
    assert _procfs.descendants(children, 10) == {11, 12, 13}
    assert _procfs.descendants(children, 10, stop={11}) == {13}
    assert _procfs.ancestors(parent_of, 12) == [11, 10, 1]
    assert _procfs.ancestors(parent_of, 30) == []       # a self-loop ends the walk
    assert discovery.own_tree(parent_of, children, 11) == {11, 12, 10, 1}


def test_split_fd_targets():
    match = _procfs.compile_device_glob('/dev/nvidia*')
    targets = ['/dev/null', '/dev/nvidia0', '/dev/nvidiactl (deleted)', 'socket:[12]', 'pipe:[3]', 'anon_inode:[x]']
    assert _procfs.split_fd_targets(targets, match) == ({'/dev/nvidia0', '/dev/nvidiactl'}, set())
    assert _procfs.split_fd_targets(targets, match, want_sockets=True)[1] == {'12'}


def test_exe_link_and_pid_namespace(tmp_path):
    root = tmp_path / 'proc'
    (root / '10' / 'ns').mkdir(parents=True)
    os.symlink('/usr/bin/python3.12 (deleted)', str(root / '10' / 'exe'))
    os.symlink('pid:[4026531836]', str(root / '10' / 'ns' / 'pid'))
    (root / '11').mkdir()
    source = _procfs.ProcFS(str(root))
    assert source.exe_link(10) == ('/usr/bin/python3.12', None)
    assert source.exe(10) == '/usr/bin/python3.12'
    assert source.pid_namespace(10) == 'pid:[4026531836]'
    assert source.exe_link(11) == (None, 'ENOENT')
    assert source.exe_link(12) == (None, 'ENOENT')
    assert source.pid_namespace(11) is None


def test_a_deleted_working_directory_is_not_taken_for_a_path(tmp_path):
    # The kernel appends ' (deleted)' to the link of a directory that was removed: that text names no directory.
    root = tmp_path / 'proc'
    for pid in ('10', '11', '12'):
        (root / pid).mkdir(parents=True)
    kept = tmp_path / 'w (deleted)'
    kept.mkdir()
    os.symlink(str(tmp_path / 'gone') + ' (deleted)', str(root / '10' / 'cwd'))
    os.symlink(str(kept), str(root / '11' / 'cwd'))
    os.symlink(str(tmp_path), str(root / '12' / 'cwd'))
    source = _procfs.ProcFS(str(root))
    assert source.cwd(10) is None
    assert source.cwd(11) == str(kept)
    assert source.cwd(12) == str(tmp_path)
