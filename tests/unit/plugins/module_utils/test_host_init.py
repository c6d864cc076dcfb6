# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_host_init.py: init system, container, cron and supervisord on fake trees."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils.fake_files import write
from ansible_collections.inferops.sglang.plugins.module_utils._host_init import (
    cron_running,
    detect_container,
    detect_cron,
    filesystem_type,
    detect_init,
    parse_systemctl_version,
    supervisord_running,
)
from ansible_collections.inferops.sglang.plugins.module_utils._procfs import list_processes


# ---------------------------------------------------------------------------------------------
# init system (field case C11)

def make_proc(root, pid=1, comm=None, cmdline=None, exe=None, environ=None, cgroup=None):
    base = root / 'proc' / str(pid)
    base.mkdir(parents=True, exist_ok=True)
    if comm is not None:
        write(base / 'comm', comm + '\n')
    if cmdline is not None:
        write(base / 'cmdline', '\0'.join(cmdline) + '\0')
    if exe is not None:
        os.symlink(exe, str(base / 'exe'))
    if environ is not None:
        write(base / 'environ', '\0'.join(environ) + '\0')
    if cgroup is not None:
        write(base / 'cgroup', cgroup)
    return str(root / 'proc')


def make_run(root, systemd_system=False, systemd_installed=False):
    run = root / 'run'
    run.mkdir(exist_ok=True)
    if systemd_installed:
        (run / 'systemd').mkdir(exist_ok=True)
    if systemd_system:
        (run / 'systemd' / 'system').mkdir(parents=True, exist_ok=True)
    return str(run)


@pytest.mark.parametrize('comm,cmdline,exe,booted,expected', [
    ('systemd', ['/sbin/init'], None, True, 'systemd'),
    ('systemd', ['/lib/systemd/systemd', '--system'], '/usr/lib/systemd/systemd', True, 'systemd'),
    ('init', ['/sbin/init'], '/usr/lib/systemd/systemd', True, 'systemd'),
    # C11: systemd installed, a stale /run/systemd/system even, but PID 1 is sleep or bash
    ('sleep', ['sleep', 'infinity'], '/usr/bin/sleep', True, 'other'),
    ('bash', ['/bin/bash'], '/usr/bin/bash', True, 'other'),
    ('sleep', ['sleep', 'infinity'], None, False, 'other'),
    ('bash', ['bash', '-c', 'sleep 1d'], None, False, 'other'),
    # PID 1 is systemd but /run/systemd/system is missing: not booted with systemd (sd_booted)
    ('systemd', ['/sbin/init'], None, False, 'other'),
    ('tini', ['/usr/bin/tini', '--', 'python3'], None, False, 'other'),
    ('process_api', ['/process_api', '--firecracker-init'], None, False, 'other'),
], ids=['systemd', 'systemd-exe', 'init-link-to-systemd', 'C11-sleep-stale-run', 'C11-bash-stale-run',
        'C11-sleep', 'C11-bash', 'systemd-not-booted', 'tini', 'other-init'])
def test_detect_init(tmp_path, comm, cmdline, exe, booted, expected):
    proc = make_proc(tmp_path, comm=comm, cmdline=cmdline, exe=exe)
    run = make_run(tmp_path, systemd_system=booted, systemd_installed=True)
    init = detect_init(proc, run)
    assert init == {'system': expected, 'pid1': comm, 'pid1_cmdline': cmdline, 'systemd_booted': booted}


def test_detect_init_unreadable_pid1(tmp_path):
    (tmp_path / 'proc').mkdir()
    run = make_run(tmp_path, systemd_system=True)
    init = detect_init(str(tmp_path / 'proc'), run)
    assert init == {'system': 'other', 'pid1': None, 'pid1_cmdline': [], 'systemd_booted': True}


def test_detect_init_this_machine():
    init = detect_init('/proc', '/run')
    assert init['system'] in ('systemd', 'other')
    with open('/proc/1/comm') as f:
        comm = f.read().strip()
    assert init['pid1'] == comm
    assert init['systemd_booted'] == os.path.isdir('/run/systemd/system')
    if comm != 'systemd' or not os.path.isdir('/run/systemd/system'):
        assert init['system'] == 'other'


# ---------------------------------------------------------------------------------------------
# containers

@pytest.mark.parametrize('setup,expected', [
    ({}, 'none'),
    ({'dockerenv': True}, 'docker'),
    ({'containerenv': True}, 'podman'),
    ({'environ': ['PATH=/bin', 'container=lxc']}, 'lxc'),
    ({'environ': ['container=podman']}, 'podman'),
    ({'environ': ['container=systemd-nspawn']}, 'other'),
    ({'environ': ['container=oci']}, 'other'),
    ({'run_container': 'docker\n'}, 'docker'),
    ({'run_container': 'lxc\n', 'dockerenv': True}, 'lxc'),
    ({'cgroup': '12:pids:/docker/3f2a9c\n0::/docker/3f2a9c\n'}, 'docker'),
    ({'cgroup': '0::/system.slice/docker-3f2a9c.scope\n'}, 'docker'),
    ({'cgroup': '0::/machine.slice/libpod-3f2a9c.scope/container\n'}, 'podman'),
    ({'cgroup': '0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-3f2a.scope\n'}, 'containerd'),
    ({'cgroup': '0::/lxc.payload.101/init.scope\n'}, 'lxc'),
    ({'cgroup': '0::/init.scope\n'}, 'none'),
    ({'cgroup': '9:name=systemd:/\n0::/\n'}, 'none'),
], ids=['none', 'dockerenv', 'containerenv', 'environ-lxc', 'environ-podman', 'environ-nspawn',
        'environ-oci', 'run-systemd-container', 'run-systemd-container-wins', 'cgroup-v1-docker',
        'cgroup-v2-docker', 'cgroup-podman', 'cgroup-containerd', 'cgroup-lxc', 'cgroup-host',
        'cgroup-ns-root'])
def test_detect_container(tmp_path, setup, expected):
    proc = make_proc(tmp_path, comm='init', environ=setup.get('environ'), cgroup=setup.get('cgroup'))
    run = make_run(tmp_path)
    root = tmp_path / 'root'
    root.mkdir()
    if setup.get('dockerenv'):
        write(root / '.dockerenv')
    if setup.get('containerenv'):
        write(tmp_path / 'run' / '.containerenv')
    if setup.get('run_container'):
        write(tmp_path / 'run' / 'systemd' / 'container', setup['run_container'])
    assert detect_container(proc, run, str(root)) == expected


# ---------------------------------------------------------------------------------------------
# systemctl, processes, cron, supervisord

@pytest.mark.parametrize('text,expected', [
    ('systemd 255 (255.4-1ubuntu8)\n+PAM +AUDIT +SELINUX\n', 255),
    ('systemd 252 (252.38-1~deb12u1)\n+PAM\n', 252),
    ('systemd 219\n+PAM\n', 219),
    ('System has not been booted with systemd as init system (PID 1). Can\'t operate.\n', None),
    ('', None),
])
def test_parse_systemctl_version(text, expected):
    assert parse_systemctl_version(text) == expected


def test_list_processes(tmp_path):
    make_proc(tmp_path, 1, comm='sleep', cmdline=['sleep', 'infinity'])
    make_proc(tmp_path, 42, comm='cron', cmdline=['/usr/sbin/cron', '-f'])
    (tmp_path / 'proc' / '77').mkdir()  # a process that went away: no comm
    (tmp_path / 'proc' / 'net').mkdir()
    procs = list_processes(str(tmp_path / 'proc'))
    assert procs == [{'pid': 1, 'comm': 'sleep', 'cmdline': ['sleep', 'infinity']},
                     {'pid': 42, 'comm': 'cron', 'cmdline': ['/usr/sbin/cron', '-f']}]


@pytest.mark.parametrize('procs,expected', [
    ([], False),
    ([{'comm': 'cron', 'cmdline': ['/usr/sbin/cron', '-f']}], True),
    ([{'comm': 'crond', 'cmdline': ['/usr/sbin/crond', '-n']}], True),
    ([{'comm': 'busybox', 'cmdline': ['busybox', 'crond', '-f']}], True),
    ([{'comm': 'busybox', 'cmdline': ['busybox', 'sh']}], False),
    ([{'comm': 'sleep', 'cmdline': ['sleep', 'infinity']}, {'comm': 'bash', 'cmdline': ['bash']}], False),
    ([{'comm': 'croncheck', 'cmdline': ['croncheck']}], False),
])
def test_cron_running(procs, expected):
    assert cron_running(procs) is expected


@pytest.mark.parametrize('procs,expected', [
    ([{'comm': 'supervisord', 'cmdline': ['/usr/bin/python3', '/usr/bin/supervisord', '-n']}], True),
    ([{'comm': 'python3', 'cmdline': ['/usr/bin/python3', '/usr/local/bin/supervisord']}], True),
    ([{'comm': 'supervisorctl', 'cmdline': ['/usr/bin/supervisorctl', 'status']}], False),
])
def test_supervisord_running(procs, expected):
    assert supervisord_running(procs) is expected


# ---------------------------------------------------------------------------------------------
# the cron daemon as a boot hook (field case C19)

MOUNTS_RUN_TMPFS = """overlay / overlay rw,relatime,lowerdir=/l,upperdir=/u,workdir=/w 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /run tmpfs rw,nosuid,nodev,relatime 0 0
tmpfs /tmp tmpfs rw,nosuid,nodev 0 0
"""
MOUNTS_RUN_PERSISTENT = """overlay / overlay rw,relatime,lowerdir=/l,upperdir=/u,workdir=/w 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /tmp tmpfs rw,nosuid,nodev 0 0
tmpfs /run/lock tmpfs rw,nosuid,nodev 0 0
/dev/sda1 /data\\040disk ext4 rw 0 0
"""


@pytest.mark.parametrize('path,mounts,expected', [
    ('/run/crond.reboot', MOUNTS_RUN_TMPFS, 'tmpfs'),
    ('/run/crond.reboot', MOUNTS_RUN_PERSISTENT, 'overlay'),
    ('/run/lock/x', MOUNTS_RUN_PERSISTENT, 'tmpfs'),
    ('/runner/x', MOUNTS_RUN_TMPFS, 'overlay'),
    ('/data disk/f', MOUNTS_RUN_PERSISTENT, 'ext4'),
    ('/run', '', None),
])
def test_filesystem_type(path, mounts, expected):
    """C19: the file system a path lives on, from /proc/self/mounts (the longest mount point that holds it)."""
    assert filesystem_type(path, mounts) == expected


def make_cron_host(tmp_path, procs, mounts, markers=(), var_run_link=True):
    """A fake host: /proc with the given processes (pid, comm, cmdline, exe), /proc/self/mounts, /var/run -> ../run."""
    for pid, comm, cmdline, exe in procs:
        make_proc(tmp_path, pid, comm=comm, cmdline=cmdline, exe=exe)
    write(tmp_path / 'proc' / 'self' / 'mounts', mounts)
    (tmp_path / 'run').mkdir(exist_ok=True)
    (tmp_path / 'var').mkdir(exist_ok=True)
    if var_run_link:
        os.symlink('../run', str(tmp_path / 'var' / 'run'))
    for marker in markers:
        write(tmp_path / marker.lstrip('/'), '')
    proc_root = str(tmp_path / 'proc')
    return list_processes(proc_root), proc_root, str(tmp_path)


SLEEP = (1, 'sleep', ['sleep', 'infinity'], '/usr/bin/sleep')


def test_detect_cron_debian_cron_with_a_stale_marker_on_a_persistent_run(tmp_path):
    """C19: Debian's cron, /run not a tmpfs and /run/crond.reboot there: @reboot jobs are skipped at the next start."""
    procs, proc_root, root = make_cron_host(
        tmp_path, [SLEEP, (30, 'cron', ['cron'], '/usr/sbin/cron')], MOUNTS_RUN_PERSISTENT, ['/run/crond.reboot'])
    assert detect_cron(procs, proc_root, root) == {
        'daemon': 'cron', 'reads_cron_d': True, 'crontabs_dir': None, 'reboot_marker': '/run/crond.reboot',
        'reboot_marker_exists': True, 'reboot_marker_persists': True}


def test_detect_cron_debian_cron_on_a_tmpfs_run(tmp_path):
    """C19: with /run a tmpfs the marker goes away with the container: @reboot runs at each start."""
    procs, proc_root, root = make_cron_host(
        tmp_path, [SLEEP, (30, 'cron', ['/usr/sbin/cron', '-f'], '/usr/sbin/cron')], MOUNTS_RUN_TMPFS,
        ['/run/crond.reboot'])
    cron = detect_cron(procs, proc_root, root)
    assert cron['daemon'] == 'cron' and cron['reboot_marker_exists'] is True
    assert cron['reboot_marker_persists'] is False


@pytest.mark.parametrize('proc,crontabs_dir', [
    ((30, 'busybox', ['busybox', 'crond', '-f'], '/bin/busybox'), '/var/spool/cron/crontabs'),
    # Alpine: crond is a link to busybox, comm and argv[0] say crond, only the exe tells
    ((30, 'crond', ['/usr/sbin/crond', '-f', '-l', '2'], '/bin/busybox'), '/var/spool/cron/crontabs'),
    ((30, 'crond', ['crond', '-b', '-c', '/etc/crontabs'], '/bin/busybox'), '/etc/crontabs'),
    ((30, 'crond', ['crond', '-c/srv/tabs', '-f'], '/usr/bin/busybox'), '/srv/tabs'),
])
def test_detect_cron_busybox(tmp_path, proc, crontabs_dir):
    """C19 variant: busybox crond reads no /etc/cron.d, only <crontabs dir>/<user> (-c, default /var/spool/...)."""
    procs, proc_root, root = make_cron_host(tmp_path, [SLEEP, proc], MOUNTS_RUN_PERSISTENT, ['/run/crond.reboot'])
    assert detect_cron(procs, proc_root, root) == {
        'daemon': 'busybox', 'reads_cron_d': False, 'crontabs_dir': crontabs_dir,
        'reboot_marker': '/var/run/crond.reboot', 'reboot_marker_exists': True, 'reboot_marker_persists': True}


def test_detect_cron_cronie(tmp_path):
    procs, proc_root, root = make_cron_host(
        tmp_path, [SLEEP, (30, 'crond', ['/usr/sbin/crond', '-n'], '/usr/sbin/crond')], MOUNTS_RUN_TMPFS)
    assert detect_cron(procs, proc_root, root) == {
        'daemon': 'cronie', 'reads_cron_d': True, 'crontabs_dir': None, 'reboot_marker': '/var/run/cron.reboot',
        'reboot_marker_exists': False, 'reboot_marker_persists': False}


def test_detect_cron_none(tmp_path):
    procs, proc_root, root = make_cron_host(tmp_path, [SLEEP], MOUNTS_RUN_PERSISTENT)
    assert detect_cron(procs, proc_root, root) == {
        'daemon': None, 'reads_cron_d': False, 'crontabs_dir': None, 'reboot_marker': None,
        'reboot_marker_exists': False, 'reboot_marker_persists': False}


def test_detect_cron_unreadable_mounts_count_as_persistent(tmp_path):
    """Without /proc/self/mounts nothing says the marker goes away: assume it stays (the safe side)."""
    procs, proc_root, root = make_cron_host(
        tmp_path, [SLEEP, (30, 'cron', ['cron'], '/usr/sbin/cron')], '', ['/run/crond.reboot'])
    os.unlink(os.path.join(proc_root, 'self', 'mounts'))
    assert detect_cron(procs, proc_root, root)['reboot_marker_persists'] is True
