# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""What runs a host: the init system (PID 1), the container it may be, and its daemons.

Every reader takes its roots (proc root, /run, /) as parameters so that tests can point them at a
temporary tree; nothing here runs a command (``parse_systemctl_version`` reads the output the module
got from ``systemctl --version``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from ansible_collections.inferops.sglang.plugins.module_utils._procfs import (
    read_environ_items,
    read_proc_pid,
    read_text,
)

CONTAINER_KINDS = ('docker', 'podman', 'lxc', 'containerd', 'other', 'none')
CRON_DAEMONS = frozenset(('cron', 'crond', 'cronie', 'fcron'))


def _is_systemd(comm, cmdline, exe):
    names = set()
    if comm:
        names.add(comm)
    if cmdline:
        names.add(os.path.basename(cmdline[0]))
    if exe:
        names.add(os.path.basename(exe.replace(' (deleted)', '')))
    return 'systemd' in names


def detect_init(proc_root='/proc', run_dir='/run'):
    """The init system as it really is, not as the installed packages suggest.

    systemd only when <run_dir>/systemd/system exists (what sd_booted() checks) AND PID 1 is systemd
    (its comm, argv[0] or exe). A container with systemd installed but PID 1 'sleep' or 'bash' is
    'other', even if /run/systemd/system was left behind. Returns a dict: system, pid1 (comm of PID 1
    or None), pid1_cmdline (list), systemd_booted (bool).
    """
    comm, cmdline, exe = read_proc_pid(proc_root, 1)
    booted = os.path.isdir(os.path.join(run_dir, 'systemd', 'system'))
    system = 'systemd' if (booted and _is_systemd(comm, cmdline, exe)) else 'other'
    return {
        'system': system,
        'pid1': comm,
        'pid1_cmdline': cmdline,
        'systemd_booted': booted,
    }


def _container_kind(value):
    value = (value or '').strip().lower()
    if not value:
        return None
    if value.startswith('docker'):
        return 'docker'
    if value.startswith('podman') or value == 'libpod':
        return 'podman'
    if value.startswith('lxc'):
        return 'lxc'
    if value.startswith('containerd') or value == 'cri-containerd':
        return 'containerd'
    return 'other'


def _container_from_cgroup(text):
    for line in (text or '').splitlines():
        path = line.split(':', 2)[-1]
        if re.search(r'(^|[/-])docker[-/.]|/docker$', path):
            return 'docker'
        if re.search(r'libpod|podman', path):
            return 'podman'
        if re.search(r'cri-containerd|containerd|kubepods', path):
            return 'containerd'
        if re.search(r'(^|/)lxc[./]|lxc\.payload|\.lxc$|/lxc$', path):
            return 'lxc'
    return None


def detect_container(proc_root='/proc', run_dir='/run', root_dir='/'):
    """docker / podman / lxc / containerd / other / none.

    Sources, most explicit first: <run_dir>/systemd/container (written by systemd and container
    managers), container= in <proc_root>/1/environ (lxc, podman, systemd-nspawn set it), <root_dir>/.dockerenv,
    <run_dir>/.containerenv (podman), then the cgroup path of PID 1 in <proc_root>/1/cgroup.
    An unreadable file is skipped (a non-root run may not read /proc/1/environ).
    """
    kind = _container_kind(read_text(os.path.join(run_dir, 'systemd', 'container')))
    if kind:
        return kind
    for item in read_environ_items(proc_root, 1):
        if item.startswith('container='):
            kind = _container_kind(item[len('container='):])
            if kind:
                return kind
    if os.path.exists(os.path.join(root_dir, '.dockerenv')):
        return 'docker'
    if os.path.exists(os.path.join(run_dir, '.containerenv')):
        return 'podman'
    kind = _container_from_cgroup(read_text(os.path.join(proc_root, '1', 'cgroup')))
    if kind:
        return kind
    return 'none'


def parse_systemctl_version(text):
    """'systemd 255 (255.4-1ubuntu8)' (first line of `systemctl --version`) -> 255; None otherwise."""
    for line in (text or '').splitlines():
        m = re.match(r'^\s*systemd\s+(\d+)', line)
        if m:
            return int(m.group(1))
        if line.strip():
            break
    return None


def cron_running(processes):
    """True when a cron daemon runs: cron (Debian), crond/cronie (RHEL), fcron, busybox crond.

    :param processes: list of {pid, comm, cmdline} (``_procfs.list_processes``).
    """
    for proc in processes:
        comm = proc.get('comm') or ''
        cmdline = proc.get('cmdline') or []
        if comm in CRON_DAEMONS:
            return True
        argv0 = os.path.basename(cmdline[0]) if cmdline else ''
        if argv0 in CRON_DAEMONS:
            return True
        if (comm == 'busybox' or argv0 == 'busybox') and len(cmdline) > 1 and cmdline[1] == 'crond':
            return True
    return False


def supervisord_running(processes):
    """True when a supervisord process runs (started directly or as `python supervisord`).

    :param processes: list of {pid, comm, cmdline} (``_procfs.list_processes``).
    """
    for proc in processes:
        if proc.get('comm') == 'supervisord':
            return True
        for arg in (proc.get('cmdline') or [])[:2]:
            if os.path.basename(arg) == 'supervisord':
                return True
    return False
