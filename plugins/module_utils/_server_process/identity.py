# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Proof of identity: which SGLang-looking processes really are this host's SGLang processes.

A title (``sglang::scheduler_TP0``) and an argv[0] are free text: any process sets them (``exec -a NAME``,
``prctl``, setproctitle). So before a process counts as a server (stray or managed) it must be

* of this module's own PID namespace and container - a process of another container (its own PID namespace, or a
  cgroup of another container's runtime) is *foreign*: reported, never a stray, never managed, never stopped;
* a Python interpreter: the real file ``/proc/<pid>/exe`` names (the kernel resolves symlinks, so a venv's
  ``bin/python3`` reads as ``/usr/bin/python3.12``) has a Python interpreter's name
  (:func:`cmdline.is_python_interpreter`). SGLang runs as ``python -m sglang.launch_server`` or as the ``sglang``
  console script, whose exe is the interpreter too. Where root may not read another user's exe (no
  CAP_SYS_PTRACE, as in a docker container), it is read as that user (``_procfs.read_links_as``). A process whose exe
  cannot be read even so (EACCES: no CAP_SETUID either, ids that differ, a process that is not dumpable) is
  *unproven*: reported with the reason, never stopped.

An orphaned worker (re-parented to PID 1 or a subreaper; SGLang retitles its workers with setproctitle) needs
evidence beyond its title and its interpreter: a GPU device open, or a socket listening on the server's port, or
the same interpreter as its former tree (the live server it joins, or an orphan of its group with evidence).

Also here: which interpreter a server runs (:func:`resolve_executable`, what a unit must run again).
The functions take what was read from /proc (:class:`discovery.Snapshot`); they never read files themselves.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

from ansible_collections.inferops.sglang.plugins.module_utils._cgroup import (
    container_of,
    primary_cgroup,
    same_container,
)
from ansible_collections.inferops.sglang.plugins.module_utils._procfs import (
    is_per_gpu_device,
    listening_inodes,
    split_fd_targets,
)
from ansible_collections.inferops.sglang.plugins.module_utils._secrets import redact_argv
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.cmdline import (
    TITLE_PREFIXES,
    is_python_interpreter,
    server_settings,
    title_of,
)

# Verdicts of exe_verdict().
PYTHON = 'python'
NOT_PYTHON = 'not_python'
UNREADABLE = 'unreadable'


def resolve_executable(argv0, path_env, cwd, exe, virtual_env=None, is_executable=None):
    """The absolute path of the interpreter as the process started it.

    argv[0] when absolute; a relative argv[0] with a slash, against the process's cwd; a bare name,
    through the process's own PATH; else the /proc/<pid>/exe target. /proc/<pid>/exe has symlinks
    resolved, which turns a venv's python into the system python (losing the venv), so for a
    retitled process the venv's python (from VIRTUAL_ENV) is preferred when it is the same binary.
    """
    if is_executable is None:
        def is_executable(path):
            return os.path.isfile(path) and os.access(path, os.X_OK)
    if argv0 and not argv0.startswith(TITLE_PREFIXES):
        if argv0.startswith('/'):
            return argv0
        if '/' in argv0:
            if cwd:
                return os.path.normpath(os.path.join(cwd, argv0))
        elif path_env:
            for directory in path_env.split(':'):
                if directory.startswith('/'):
                    candidate = os.path.join(directory, argv0)
                    if is_executable(candidate):
                        return candidate
    if virtual_env and exe:
        for name in ('python3', 'python'):
            candidate = os.path.join(virtual_env, 'bin', name)
            try:
                if is_executable(candidate) and os.path.realpath(candidate) == os.path.realpath(exe):
                    return candidate
            except OSError:
                continue
    return exe


def exe_verdict(exe, error):
    """What /proc/<pid>/exe proves: ``(PYTHON, None)``, ``(NOT_PYTHON, reason)`` or ``(UNREADABLE, reason)``.

    :param exe: the link target (``ProcFS.exe_link``), or None when it could not be read.
    :param error: the errno name of the failed read (``'EACCES'``), or None.
    """
    if exe:
        if is_python_interpreter(exe):
            return PYTHON, None
        return NOT_PYTHON, ('not a Python process (its executable is %s): an SGLang title or command line alone '
                            'proves nothing' % exe)
    if error in ('EACCES', 'EPERM'):
        return UNREADABLE, ('unproven: /proc/PID/exe cannot be read (%s), not even as its own user (root without '
                            "CAP_SYS_PTRACE cannot read another user's process, and without CAP_SETUID cannot become "
                            'it), so it cannot be shown to be a Python interpreter running SGLang; not stopped. Stop '
                            'it as its user, or give the container CAP_SYS_PTRACE' % error)
    return UNREADABLE, 'unproven: /proc/PID/exe cannot be read (%s); not stopped' % (error or 'no link')


def foreign_reason(pid_namespace, own_pid_namespace, container, own_container):
    """Why a process belongs to another container, or None when it shares this module's.

    :param pid_namespace: target of its /proc/<pid>/ns/pid (None: unreadable - then the cgroup decides alone).
    :param container: :func:`_cgroup.container_of` of its cgroup; ``own_*``: the same for this module's process.
    """
    if pid_namespace and own_pid_namespace and pid_namespace != own_pid_namespace:
        return 'another PID namespace (%s; this module runs in %s)' % (pid_namespace, own_pid_namespace)
    if container is not None and not same_container(container, own_container):
        return 'another container (%s %s)' % (container['runtime'], (container['id'] or container['pod'] or '?')[:12])
    return None


def prove_orphans(roots, former_exe=None):
    """Which orphan roots have evidence beyond their title (their interpreter is already known to be Python).

    :param roots: ``{pid: {'exe': path, 'device': bool, 'port': bool}}`` - whether the root or its subtree holds a
        GPU device file, or a socket listening on the server's port.
    :param former_exe: the exe of the live server the orphans join (their former tree), or None.
    :returns: ``(proven {pid: evidence}, unproven {pid: reason})``.
    """
    proven = {}
    for pid, facts in roots.items():
        if facts.get('device'):
            proven[pid] = 'holds a GPU device'
        elif facts.get('port'):
            proven[pid] = "holds the server's port"
    exes = set(roots[pid]['exe'] for pid in proven)
    if former_exe:
        exes.add(former_exe)
    for pid, facts in roots.items():
        if pid not in proven and facts.get('exe') and facts['exe'] in exes:
            proven[pid] = 'same interpreter as its former tree (%s)' % facts['exe']
    unproven = dict((pid, 'orphaned SGLang title without evidence: a Python process, but no GPU device open, no '
                          "socket on the server's port, not the interpreter of its former tree; left alone")
                    for pid in roots if pid not in proven)
    return proven, unproven


class ForeignFinder(object):
    """Which processes of a snapshot belong to another container (cached per pid)."""

    def __init__(self, snap, self_pid):
        self.snap = snap
        self.own_ns = snap.source.pid_namespace(self_pid)
        self.own_container = container_of(snap.cgroup(self_pid)) if self_pid in snap.stat else None
        self._found = {}

    def of(self, pid):
        """None, or ``{'reason', 'runtime', 'container_id', 'pod'}`` for a process of another container."""
        if pid not in self._found:
            source = self.snap.source
            ns = source.pid_namespace(pid) if self.own_ns else None
            container = container_of(self.snap.cgroup(pid))
            reason = foreign_reason(ns, self.own_ns, container, self.own_container)
            self._found[pid] = None if reason is None else {
                'reason': reason, 'runtime': container['runtime'] if container else None,
                'container_id': container['id'] if container else None,
                'pod': container['pod'] if container else None}
        return self._found[pid]


def foreign_entries(snap, groups, match_device):
    """The entries of the ``foreign`` list: one per SGLang server (or orphan) of another container.

    :param groups: ``[(main pid, member pids, classification or None, foreign info)]``.
    :param match_device: the matcher of the GPU device glob.
    """
    texts = None
    entries = []
    for main, members, classification, info in groups:
        argv = redact_argv(snap.argv_of(main))
        port = host = None
        if classification is not None and classification.args is not None and classification.kind != 'titled':
            settings = server_settings(classification.args, None)
            port, host = settings['port'], settings['host']
        devices, sockets, readable = set(), set(), False
        for pid in members:
            targets = snap.source.fd_targets(pid)
            readable = readable or bool(targets)
            found_devices, found_sockets = split_fd_targets(targets, match_device, True)
            devices |= found_devices
            sockets |= found_sockets
        holds_port = None
        if port is not None and readable:
            if texts is None:
                texts = snap.source.net_tcp()
            inodes = set()
            for text in texts:
                inodes |= listening_inodes(text, port)
            holds_port = bool(sockets & inodes)
        entries.append({
            'pid': main, 'pids': sorted(members), 'title': title_of(argv), 'argv': argv,
            'port': port, 'host': host, 'holds_port': holds_port,
            'container_id': info['container_id'], 'runtime': info['runtime'], 'pod': info['pod'],
            'reason': info['reason'], 'cgroup': primary_cgroup(snap.cgroup(main)),
            'gpu_devices': sorted(devices), 'gpus': sorted(d for d in devices if is_per_gpu_device(d)),
            'fds_readable': readable,
        })
    return entries


def _short(text, length=120):
    text = '%s' % text
    return text if len(text) <= length + 5 else text[:length - 3] + '...'


def foreign_conflicts(facts, port, gpus_needed):
    """What SGLang servers of other containers take from a new server on this host, as a pre-flight message ('' when
    nothing): one listening on ``port`` (a container with the host's network), or so many GPUs held that fewer than
    ``gpus_needed`` of ``gpu_count`` are left. This collection never stops them (they are not its strays).

    :param facts: host facts (module host_facts): ``foreign`` (dicts with ``pid``, ``title``, ``port``, ``holds_port``,
        ``runtime``, ``container_id``, ``gpus``: GPU identifiers) and ``gpu_count``; either missing is none.
    :param port: int, the port the new server binds; :param gpus_needed: int, GPUs the new server needs.
    :returns: str, the message naming each such server (pid, title, container) and what it holds, with the way out.
    """
    facts = facts or {}
    foreign = facts.get('foreign') or []
    gpu_count = facts.get('gpu_count') or 0
    on_port = [f for f in foreign if f.get('holds_port') and f.get('port') == int(port)]
    held = []
    for f in foreign:
        for gpu in f.get('gpus') or []:
            if gpu not in held:
                held.append(gpu)
    free = int(gpu_count or 0) - len(held)
    if not on_port and not (held and free < int(gpus_needed)):
        return ''
    lines = []
    for f in on_port or [f for f in foreign if f.get('gpus')]:
        where = ' '.join(part for part in (f.get('runtime'), (f.get('container_id') or '')[:12]) if part)
        lines.append('SGLang server pid %s (%s) runs in another container (%s) and %s.' % (
            f.get('pid'), _short(f.get('title', '')), where or 'another PID namespace',
            ('listens on port %d' % int(port)) if f in on_port else 'holds ' + ', '.join(f.get('gpus') or [])))
    if not on_port:
        lines.append("Other containers' SGLang servers hold %d of %d GPUs; the server needs %d."
                     % (len(held), int(gpu_count or 0), int(gpus_needed)))
    lines.append("This role never stops another container's processes. Stop that container's server (docker stop / "
                 'podman stop / kubectl delete, on its own terms), or choose another port with service_server_args.port '
                 'and GPUs with CUDA_VISIBLE_DEVICES in service_environment. Nothing was changed or stopped.')
    return ' '.join(lines)
