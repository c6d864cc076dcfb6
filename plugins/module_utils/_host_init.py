# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
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
from ansible_collections.inferops.sglang.plugins.module_utils._supervisors import is_supervisord

CONTAINER_KINDS = ('docker', 'podman', 'lxc', 'containerd', 'other', 'none')
CRON_DAEMONS = frozenset(('cron', 'crond', 'cronie', 'fcron'))
# The file a cron daemon creates when it runs its @reboot jobs, and whose presence at start makes it skip them
# ("not system startup"): Debian's cron (its patched cron.c), busybox crond (CONFIG_PID_FILE_PATH/crond.reboot),
# cronie (PIDDIR cron.reboot). They count on the file living on a tmpfs that a boot empties.
CRON_REBOOT_MARKERS = {
    'cron': '/run/crond.reboot',
    'busybox': '/var/run/crond.reboot',
    'cronie': '/var/run/cron.reboot',
}
# busybox crond reads <dir>/<user> only (no /etc/crontab, no /etc/cron.d); -c DIR changes the directory.
BUSYBOX_CRONTABS_DIR = '/var/spool/cron/crontabs'
VOLATILE_FILESYSTEMS = frozenset(('tmpfs', 'ramfs'))


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


def cron_running(processes, proc_root='/proc'):
    """True when a cron daemon runs: cron (Debian), crond/cronie (RHEL), fcron, busybox crond (the rule of
    :func:`_cron_kind`, which :func:`detect_cron` uses too).

    :param processes: list of {pid, comm, cmdline} (``_procfs.list_processes``).
    """
    return any(_cron_kind(proc, proc_root) for proc in processes)


def _cron_kind(proc, proc_root):
    """'cron' (Debian/Ubuntu's Vixie cron), 'busybox', 'cronie', 'fcron' or None for one process."""
    comm = proc.get('comm') or ''
    cmdline = proc.get('cmdline') or []
    argv0 = os.path.basename(cmdline[0]) if cmdline else ''
    if (comm == 'busybox' or argv0 == 'busybox') and len(cmdline) > 1 and cmdline[1] == 'crond':
        return 'busybox'
    names = set((comm, argv0))
    if not names & CRON_DAEMONS:
        return None
    if 'crond' in names:
        # Alpine's crond is a link to busybox: only the executable tells it from cronie's crond.
        exe = read_proc_pid(proc_root, proc.get('pid'))[2] or ''
        return 'busybox' if os.path.basename(exe.replace(' (deleted)', '')) == 'busybox' else 'cronie'
    if 'fcron' in names:
        return 'fcron'
    return 'cronie' if 'cronie' in names else 'cron'


def _busybox_crontabs_dir(cmdline):
    args = list(cmdline or [])
    for i, arg in enumerate(args):
        if arg == '-c' and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith('-c') and len(arg) > 2:
            return arg[2:]
    return BUSYBOX_CRONTABS_DIR


def filesystem_type(path, mounts_text):
    """File system type of the mount that holds the absolute ``path`` (no symlink resolved), or None.

    :param mounts_text: text of /proc/self/mounts (``device mountpoint fstype options 0 0`` per line; octal
        escapes such as ``\\040`` for a space in the mount point).
    Returns the type of the longest mount point that is ``path`` or one of its parents; the last such mount
    wins (a later mount hides an earlier one on the same point).
    """
    best, fstype = -1, None
    for line in (mounts_text or '').splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), fields[1])
        inside = point == '/' or path == point or path.startswith(point.rstrip('/') + '/')
        if inside and len(point) >= best:
            best, fstype = len(point), fields[2]
    return fstype


def _host_path(root_dir, path):
    """``path`` of the host under ``root_dir`` with its symlinks resolved (/var/run -> /run), as an absolute path."""
    root = os.path.realpath(root_dir)
    real = os.path.realpath(os.path.join(root, path.lstrip('/')))
    rel = os.path.relpath(real, root)
    return path if rel.startswith('..') else '/' + ('' if rel == '.' else rel)


def detect_cron(processes, proc_root='/proc', root_dir='/'):
    """The cron daemon that runs and whether its @reboot jobs will run at the next start of the host or container.

    :param processes: list of {pid, comm, cmdline} (``_procfs.list_processes``).
    Returns a dict:
      daemon: 'cron' (Debian/Ubuntu), 'busybox', 'cronie', 'fcron' or None (none runs; the first found wins);
      reads_cron_d: whether it reads /etc/cron.d (cron, cronie; busybox crond and fcron do not);
      crontabs_dir: busybox only, the directory of its per-user crontabs (its -c, else /var/spool/cron/crontabs);
      reboot_marker: the file whose presence at the daemon's start makes it skip @reboot jobs (None for fcron or
        without a daemon); reboot_marker_exists: whether it exists now;
      reboot_marker_persists: whether it survives a restart, i.e. it does not live on a tmpfs/ramfs according to
        <proc_root>/self/mounts (true when that file is unreadable: nothing says it goes away).
    """
    kind, cmdline = None, []
    for proc in processes:
        kind = _cron_kind(proc, proc_root)
        if kind:
            cmdline = proc.get('cmdline') or []
            break
    marker = CRON_REBOOT_MARKERS.get(kind)
    persists = False
    if marker:
        mounts = read_text(os.path.join(proc_root, 'self', 'mounts'))
        fstype = filesystem_type(_host_path(root_dir, marker), mounts) if mounts is not None else None
        persists = fstype not in VOLATILE_FILESYSTEMS
    return {
        'daemon': kind,
        'reads_cron_d': kind in ('cron', 'cronie'),
        'crontabs_dir': _busybox_crontabs_dir(cmdline) if kind == 'busybox' else None,
        'reboot_marker': marker,
        'reboot_marker_exists': bool(marker) and os.path.lexists(os.path.join(root_dir, marker.lstrip('/'))),
        'reboot_marker_persists': persists,
    }


def supervisord_running(processes):
    """True when a supervisord process runs (started directly or as `python supervisord`): the rule of
    ``_supervisors.is_supervisord``.

    :param processes: list of {pid, comm, cmdline} (``_procfs.list_processes``).
    """
    return any(is_supervisord(proc.get('cmdline') or [], proc.get('comm') or '') for proc in processes)
