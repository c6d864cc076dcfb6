# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
#
# Standard library only, Linux only: everything comes from a procfs mount, whose root every reader
# takes as a parameter so that tests can point it at a fake tree.
"""Reading processes, their open files and listening sockets from /proc.

Parsers take the raw content (bytes or str) and never touch the file system; the readers
(:class:`ProcFS`, :func:`read_proc_pid`, :func:`list_processes`, :func:`map_socket_inodes`) tolerate
processes that vanish while they read: a gone process reads as None or is skipped.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import fnmatch
import json
import os
import pwd
import re
import socket
import sys

from ansible_collections.inferops.sglang.plugins.module_utils._cgroup import parse_cgroup

# /proc/<pid>/stat flags: a kernel thread.
PF_KTHREAD = 0x00200000
# /proc/<pid>/stat states of a process that has exited (zombie, dead).
GONE_STATES = ('Z', 'X', 'x')
# State of a listening socket in /proc/net/tcp{,6} (TCP_LISTEN).
TCP_LISTEN = '0A'

# A device file naming one GPU (as opposed to /dev/nvidiactl, /dev/nvidia-uvm, capability files).
_PER_GPU_DEVICE_RE = re.compile(r'^(?:nvidia|renderD|card)\d+$')
_READ_SIZE = 1 << 17


# --------------------------------------------------------------------------------------------------
# Parsers
# --------------------------------------------------------------------------------------------------

class ProcStat(object):
    """The fields of /proc/<pid>/stat that discovery needs."""

    __slots__ = ('pid', 'comm', 'state', 'ppid', 'pgid', 'sid', 'flags', 'starttime')

    def __init__(self, pid, comm, state, ppid, pgid, sid, flags, starttime):
        self.pid = pid
        self.comm = comm
        self.state = state
        self.ppid = ppid
        self.pgid = pgid
        self.sid = sid
        self.flags = flags
        self.starttime = starttime

    def __repr__(self):
        return 'ProcStat(pid=%d, ppid=%d, state=%s, comm=%r)' % (self.pid, self.ppid, self.state, self.comm)


def parse_stat(data):
    """Parse the content of /proc/<pid>/stat; None when it is malformed.

    comm may contain spaces and parentheses, so the fields after it start after the last ')'.
    Field numbers (proc(5)): 3 state, 4 ppid, 5 pgrp, 6 session, 9 flags, 22 starttime (clock ticks
    since boot). Works on bytes, splitting only the fields needed: it runs once per process of the host.
    """
    if isinstance(data, str):
        data = data.encode('utf-8', 'surrogateescape')
    lpar = data.find(b'(')
    rpar = data.rfind(b')')
    if lpar < 0 or rpar < lpar:
        return None
    try:
        rest = data[rpar + 2:].split(None, 20)
        return ProcStat(int(data[:lpar]), data[lpar + 1:rpar].decode('utf-8', 'replace'), rest[0].decode('ascii'),
                        int(rest[1]), int(rest[2]), int(rest[3]), int(rest[6]), int(rest[19]))
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def _decode(raw):
    return raw.decode('utf-8', 'replace')


def proc_lines(text):
    """The lines of a /proc file (str): split at line feeds only.

    Not ``str.splitlines``, which also breaks at a carriage return, U+000B, U+000C, U+001C-U+001E, U+0085, U+2028
    and U+2029: the kernel escapes only a line feed and a backslash in a process's title (the ``Name:`` line of
    /proc/PID/status, set by the process itself with prctl PR_SET_NAME), so such a character would let a process
    write a line of its own choosing (``Uid:\t0``) into what is parsed.
    """
    return (text or '').split('\n')


def parse_cmdline(raw):
    """Split /proc/<pid>/cmdline (NUL separated, NUL terminated; bytes or str) into argv.

    A process retitled with setproctitle has its title as the only element, sometimes padded with
    NULs or spaces; trailing empty elements are dropped.
    """
    if not raw:
        return []
    if isinstance(raw, bytes):
        raw = _decode(raw)
    argv = raw.split('\0')
    while argv and not argv[-1].strip():
        argv.pop()
    if len(argv) == 1:
        argv[0] = argv[0].rstrip()
    return argv


def parse_environ(raw):
    """Parse /proc/<pid>/environ into a dict (the first of duplicate names wins, as with getenv)."""
    env = {}
    if not raw:
        return env
    if isinstance(raw, bytes):
        raw = _decode(raw)
    for item in raw.split('\0'):
        if not item:
            continue
        name, sep, value = item.partition('=')
        if sep and name and name not in env:
            env[name] = value
    return env


def parse_status_uid(text):
    """Return the real uid (int) from /proc/<pid>/status, or None."""
    if isinstance(text, bytes):
        text = _decode(text)
    for line in proc_lines(text):
        if line.startswith('Uid:'):
            fields = line.split()
            if len(fields) > 1 and fields[1].isdigit():
                return int(fields[1])
    return None


def parse_status_ids(text):
    """(uid, gid) of a process from /proc/<pid>/status when its real, effective and saved ids are one uid and one
    gid (a process that changed ids is left alone: None); None also when the lines are missing."""
    if isinstance(text, bytes):
        text = _decode(text)
    ids = {}
    for line in proc_lines(text):
        for key in ('Uid:', 'Gid:'):
            if line.startswith(key):
                fields = line.split()[1:4]
                if len(fields) == 3 and all(f.isdigit() for f in fields) and len(set(fields)) == 1:
                    ids[key] = int(fields[0])
    if len(ids) != 2:
        return None
    return ids['Uid:'], ids['Gid:']


def read_links_as(paths, uid, gid):
    """The targets of the symbolic links ``paths`` (list of str) read by one child process that runs as
    ``uid``/``gid``: a dict path -> target holding the links it could read (empty when the child cannot take the
    ids).

    Why: /proc/<pid>/exe, ns/pid and fd/ are guarded by the kernel's ptrace access check. Root passes it with
    CAP_SYS_PTRACE, which a docker container's root lacks by default; a process of the same user passes it without
    any capability (kernel ptrace.c, __ptrace_may_access: same real, effective and saved uid and gid, the target
    dumpable). So root (which keeps CAP_SETUID and CAP_SETGID in docker's default set) forks a child that becomes
    the process's user and reads the links; nothing else runs as that user."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            targets = {}
            for path in paths:
                try:
                    targets[path] = os.readlink(path)
                except OSError:
                    pass
            os.write(write_end, json.dumps(targets).encode('utf-8'))
            status = 0
        finally:  # the child ends here whatever happened, without running this process's cleanup
            os._exit(status)
    os.close(write_end)
    chunks = []
    try:
        while True:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
    dummy, status = os.waitpid(pid, 0)
    if status != 0:
        return {}
    return json.loads(b''.join(chunks).decode('utf-8'))


def _decode_hex_address(hex_addr, ipv6, byteorder):
    # /proc/net/tcp prints each 32-bit word of the (network order) address as a host-order integer
    raw = b''
    for i in range(0, len(hex_addr), 8):
        raw += int(hex_addr[i:i + 8], 16).to_bytes(4, byteorder)
    family = socket.AF_INET6 if ipv6 else socket.AF_INET
    return socket.inet_ntop(family, raw)


def user_name(uid):
    """The passwd name of ``uid`` (int), its number as text when it has none, or None for None."""
    if uid is None:
        return None
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return str(uid)


def parse_proc_net_tcp(text, ipv6=False, byteorder=None):
    """LISTEN sockets (state 0A) of /proc/net/tcp (ipv6=False) or /proc/net/tcp6 (ipv6=True).

    Returns [{proto: 'tcp'|'tcp6', host, port (int), inode (int), uid (int, the socket's owner, readable by
    anyone, also where the owning process's /proc/PID/fd is not), pid: None}]; the caller fills pid
    from map_socket_inodes(). Lines of the other family (another address width) are skipped.
    byteorder is that of the host that wrote the text (default: this one).
    """
    byteorder = byteorder or sys.byteorder
    width = 32 if ipv6 else 8
    proto = 'tcp6' if ipv6 else 'tcp'
    result = []
    for line in proc_lines(text):
        fields = line.split()
        if len(fields) < 10 or not fields[0].endswith(':') or not fields[0][:-1].isdigit():
            continue  # header line
        if fields[3].upper() != TCP_LISTEN:
            continue
        local = fields[1]
        if ':' not in local:
            continue
        addr, port = local.rsplit(':', 1)
        if len(addr) != width:
            continue
        try:
            host = _decode_hex_address(addr, ipv6, byteorder)
            port = int(port, 16)
            inode = int(fields[9])
            uid = int(fields[7])
        except (ValueError, OSError):
            continue
        result.append({'proto': proto, 'host': host, 'port': port, 'inode': inode, 'uid': uid, 'pid': None})
    return result


def listening_inodes(text, port):
    """Socket inodes listening on ``port`` in /proc/net/tcp or /proc/net/tcp6 content (either family).

    :returns: set of inode numbers as str (as they appear in ``socket:[N]`` fd links).
    """
    entries = parse_proc_net_tcp(text, ipv6=False) + parse_proc_net_tcp(text, ipv6=True)
    return set(str(e['inode']) for e in entries if e['port'] == port and e['inode'])


# --------------------------------------------------------------------------------------------------
# Open files
# --------------------------------------------------------------------------------------------------

def compile_device_glob(pattern):
    """A fast matcher for fd link targets against a shell glob (``*`` also crosses '/')."""
    regex = re.compile(fnmatch.translate(pattern))
    cut = len(pattern)
    for ch in '*?[':
        pos = pattern.find(ch)
        if 0 <= pos < cut:
            cut = pos
    prefix = pattern[:cut]

    def match(target):
        return target.startswith(prefix) and regex.match(target) is not None
    return match


def device_path_of(target):
    """An fd link target as a path ('/dev/nvidia0 (deleted)' -> '/dev/nvidia0'); None for sockets etc."""
    if not target or not target.startswith('/'):
        return None
    if target.endswith(' (deleted)'):
        target = target[:-len(' (deleted)')]
    return target


def split_fd_targets(targets, match_device, want_sockets=False):
    """fd link targets -> (set of device paths matching, set of socket inodes as str); sockets only when wanted."""
    devices = set()
    sockets = set()
    for target in targets:
        if target[:1] == '/':
            path = device_path_of(target)
            if match_device(path):
                devices.add(path)
        elif want_sockets and target.startswith('socket:['):
            sockets.add(target[8:-1])
    return devices, sockets


def is_per_gpu_device(path):
    """True for a device file naming one GPU (/dev/nvidia3), not /dev/nvidiactl or /dev/nvidia-uvm."""
    return bool(_PER_GPU_DEVICE_RE.match(os.path.basename(path)))


# --------------------------------------------------------------------------------------------------
# Process trees ({pid: ppid} maps)
# --------------------------------------------------------------------------------------------------

def children_map(parent_of):
    """{pid: ppid} -> {ppid: [pids]} (sorted)."""
    children = {}
    for pid, ppid in parent_of.items():
        children.setdefault(ppid, []).append(pid)
    for kids in children.values():
        kids.sort()
    return children


def descendants(children, pid, stop=None):
    """All descendants of pid (not pid itself). Subtrees rooted at a pid in ``stop`` are not entered."""
    found = set()
    todo = list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        if child in found or (stop is not None and child in stop):
            continue
        found.add(child)
        todo.extend(children.get(child, ()))
    return found


def ancestors(parent_of, pid):
    """Ancestors of pid, nearest first (stops at pid 0/1 or an unknown or looping parent)."""
    chain = []
    seen = set([pid])
    current = parent_of.get(pid)
    while current is not None and current not in seen and current > 0:
        chain.append(current)
        seen.add(current)
        current = parent_of.get(current)
    return chain


# --------------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------------

def _read_bytes(path):
    """The whole content of a (proc) file, or None when it cannot be read (gone, no permission).

    procfs answers a large read in one go; a second read is only needed for very long contents.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, _READ_SIZE)
        if len(data) < _READ_SIZE:
            return data
        chunks = [data]
        while True:
            chunk = os.read(fd, _READ_SIZE)
            if not chunk:
                break
            chunks.append(chunk)
        return b''.join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_text(path, default=None):
    """Return the content of a file as text (undecodable bytes replaced), or default when it cannot be read."""
    raw = _read_bytes(path)
    return default if raw is None else _decode(raw)


class ProcFS(object):
    """Reads process information from a procfs mount (``root``; tests point it at a fake tree)."""

    def __init__(self, root='/proc'):
        self.root = root
        self._btime = None
        self._as_owner = {}
        try:
            self.clk_tck = os.sysconf('SC_CLK_TCK')
        except (ValueError, OSError, AttributeError):
            self.clk_tck = 100

    def _path(self, pid, name):
        return '%s/%d/%s' % (self.root, pid, name)

    def pids(self):
        try:
            names = os.listdir(self.root)
        except OSError:
            return []
        return [int(name) for name in names if name.isdigit()]

    def stat(self, pid):
        raw = _read_bytes('%s/%d/stat' % (self.root, pid))
        return parse_stat(raw) if raw else None

    def cmdline_raw(self, pid):
        return _read_bytes('%s/%d/cmdline' % (self.root, pid))

    def environ(self, pid):
        raw = _read_bytes(self._path(pid, 'environ'))
        return None if raw is None else parse_environ(raw)

    def _readlink(self, pid, name):
        try:
            return os.readlink(self._path(pid, name))
        except OSError:
            return None

    def cwd(self, pid):
        """The working directory of pid, or None when it cannot be read or was removed: the kernel then appends
        ' (deleted)' to the link, a text that names no directory (one named so that exists is kept)."""
        target = self._readlink(pid, 'cwd')
        if target is not None and target.endswith(' (deleted)') and not os.path.isdir(target):
            return None
        return target

    def exe(self, pid):
        return self.exe_link(pid)[0]

    # The links read as a process's own user where root may not (one child per process, for all of them).
    OWNER_LINKS = ('exe', 'ns/pid')

    def _owner_link(self, pid, name):
        """(target, error) of the link /proc/<pid>/<name>; where the kernel refuses root (EACCES: no CAP_SYS_PTRACE,
        as in a docker container by default) the links OWNER_LINKS of that process are read as its own user, once
        (see read_links_as)."""
        path = self._path(pid, name)
        try:
            return os.readlink(path), None
        except OSError as exc:
            error = errno.errorcode.get(exc.errno, str(exc.errno))
        if error in ('EACCES', 'EPERM') and os.geteuid() == 0:
            if pid not in self._as_owner:
                ids = parse_status_ids(_read_bytes(self._path(pid, 'status')) or b'')
                self._as_owner[pid] = {}
                if ids is not None and ids[0] != 0:
                    self._as_owner[pid] = read_links_as([self._path(pid, link) for link in self.OWNER_LINKS], *ids)
            target = self._as_owner[pid].get(path)
            if target is not None:
                return target, None
        return None, error

    def exe_link(self, pid):
        """(target, error) of /proc/<pid>/exe: the interpreter's real file (symlinks resolved by the kernel, a
        ' (deleted)' suffix removed) and None, or None and why it cannot be read - ``'EACCES'`` where the kernel
        refuses even when read as the process's own user (see read_links_as), ``'ENOENT'`` for a gone process or a
        kernel thread, else the errno name."""
        target, error = self._owner_link(pid, 'exe')
        if target is not None and target.endswith(' (deleted)'):
            target = target[:-len(' (deleted)')]
        return target, error

    def pid_namespace(self, pid):
        """The target of /proc/<pid>/ns/pid (``pid:[4026531836]``), read as the process's own user where root may
        not, or None when it cannot be read (gone)."""
        return self._owner_link(pid, 'ns/pid')[0]

    def uid(self, pid):
        raw = _read_bytes(self._path(pid, 'status'))
        if raw is not None:
            uid = parse_status_uid(raw)
            if uid is not None:
                return uid
        try:
            return os.stat(self._path(pid, '')).st_uid
        except OSError:
            return None

    def cgroup(self, pid):
        raw = _read_bytes(self._path(pid, 'cgroup'))
        return None if raw is None else parse_cgroup(raw)

    def fd_targets(self, pid):
        """Link targets of the open file descriptors of pid ([] when unreadable or gone)."""
        fd_dir = '%s/%d/fd/' % (self.root, pid)
        try:
            names = os.listdir(fd_dir)
        except OSError:
            return []
        targets = []
        readlink = os.readlink
        for name in names:
            try:
                targets.append(readlink(fd_dir + name))
            except OSError:
                continue
        return targets

    def net_tcp(self):
        """The texts of net/tcp and net/tcp6 (this network namespace)."""
        texts = []
        for name in ('tcp', 'tcp6'):
            raw = _read_bytes('%s/net/%s' % (self.root, name))
            if raw:
                texts.append(_decode(raw))
        return texts

    def boot_time(self):
        if self._btime is None:
            raw = _read_bytes(self.root + '/stat') or b''
            for line in proc_lines(_decode(raw)):
                if line.startswith('btime '):
                    self._btime = int(line.split()[1])
                    break
            else:
                self._btime = 0
        return self._btime

    def start_time(self, starttime_ticks):
        """Epoch seconds of a process start (stat field 22 is in clock ticks since boot)."""
        return self.boot_time() + float(starttime_ticks) / self.clk_tck

    def read_text(self, path):
        return read_text(path)


def _split_nul(data):
    if data is None:
        return []
    parts = data.split('\0')
    while parts and parts[-1] == '':
        parts.pop()
    return parts


def read_proc_pid(proc_root, pid):
    """(comm, cmdline list, exe link target) of a process; None / [] where unreadable."""
    base = os.path.join(proc_root, str(pid))
    comm = read_text(os.path.join(base, 'comm'))
    if comm is not None:
        comm = comm.strip('\n')
    cmdline = _split_nul(read_text(os.path.join(base, 'cmdline')))
    try:
        exe = os.readlink(os.path.join(base, 'exe'))
    except (OSError, IOError):
        exe = None
    return comm, cmdline, exe


def read_environ_items(proc_root, pid):
    """The ``NAME=value`` items of /proc/<pid>/environ in order ([] when unreadable)."""
    return _split_nul(read_text(os.path.join(proc_root, str(pid), 'environ')))


def list_processes(proc_root='/proc'):
    """[{pid, comm, cmdline}] for every process readable under proc_root, sorted by pid."""
    try:
        names = os.listdir(proc_root)
    except (OSError, IOError):
        return []
    procs = []
    for name in names:
        if not name.isdigit():
            continue
        base = os.path.join(proc_root, name)
        comm = read_text(os.path.join(base, 'comm'))
        if comm is None:
            continue  # gone, or not readable
        procs.append({
            'pid': int(name),
            'comm': comm.strip('\n'),
            'cmdline': _split_nul(read_text(os.path.join(base, 'cmdline'))),
        })
    procs.sort(key=lambda p: p['pid'])
    return procs


def map_socket_inodes(proc_root='/proc', wanted=None):
    """{socket inode (int): pid} from the 'socket:[N]' links in <proc_root>/<pid>/fd/. With several
    holders (forked workers) the lowest pid wins. wanted (a set of inodes) stops the scan early."""
    found = {}
    if wanted is not None and not wanted:
        return found
    try:
        names = os.listdir(proc_root)
    except (OSError, IOError):
        return found
    pids = sorted(int(n) for n in names if n.isdigit())
    for pid in pids:
        fd_dir = os.path.join(proc_root, str(pid), 'fd')
        try:
            fds = os.listdir(fd_dir)
        except (OSError, IOError):
            continue
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except (OSError, IOError):
                continue
            m = re.match(r'^socket:\[(\d+)\]$', target)
            if not m:
                continue
            inode = int(m.group(1))
            if inode not in found:
                found[inode] = pid
        if wanted is not None and all(i in found for i in wanted):
            break
    return found
