# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Discovery: one pass over /proc that finds the SGLang servers of a host, with all their processes.

A server is a main process that ``cmdline.classify_argv`` calls a server, its descendants, the orphans
it left (retitled SGLang workers re-parented to PID 1 or a subreaper) and the GPU holders related to it;
the rules are in the documentation of the server_process_info module. Standard library only, Linux only.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import time

from ansible_collections.inferops.sglang.plugins.module_utils._cgroup import (
    cgroup_in_unit,
    is_specific_cgroup,
    normalize_unit,
    primary_cgroup,
)
from ansible_collections.inferops.sglang.plugins.module_utils._procfs import (
    GONE_STATES,
    PF_KTHREAD,
    ProcFS,
    ancestors,
    children_map,
    compile_device_glob,
    descendants,
    is_per_gpu_device,
    listening_inodes,
    parse_cmdline,
    split_fd_targets,
    user_name,
)
from ansible_collections.inferops.sglang.plugins.module_utils._secrets import (
    redact_argv,
    redact_env,
    redacted_flags,
)
from ansible_collections.inferops.sglang.plugins.module_utils._supervisors import (
    collection_program,
    is_collection_config,
    is_supervisord,
    supervisord_config_path,
)
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.cmdline import (
    CANDIDATE,
    CLIENT,
    MENTION,
    ROUTER,
    SERVER,
    SETTING_DEFAULTS,
    TITLE_PREFIXES,
    TITLED,
    TOOL,
    classify_argv,
    config_path_of,
    member_role,
    parse_config_scalars,
    server_settings,
    title_of,
)
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.identity import (
    PYTHON,
    UNREADABLE,
    ForeignFinder,
    exe_verdict,
    foreign_entries,
    prove_orphans,
    resolve_executable,
)

DEFAULT_UNIT = 'sglang.service'
DEFAULT_GPU_DEVICE_GLOB = '/dev/nvidia*'
OWN_TREE_REASON = 'runs this module (its own process tree is never touched)'
EXCLUDED_REASON = 'excluded (exclude_pids)'


class Snapshot(object):
    """One pass over /proc: stat and cmdline of every user-space, non-zombie process.

    Other fields are read lazily and cached, only for the processes that need them. A process that
    vanishes at any point is simply absent (or has empty details): every reader tolerates it.
    """

    def __init__(self, source):
        self.source = source
        self.stat = {}
        self.argv = {}
        self.sgl = set()       # pids whose command line mentions sgl (sglang, sgl_diffusion)
        self._cache = {}
        stat_of = source.stat
        cmdline_of = source.cmdline_raw
        for pid in source.pids():
            st = stat_of(pid)
            if st is None or st.flags & PF_KTHREAD or st.state in GONE_STATES:
                continue
            raw = cmdline_of(pid)
            if raw is None:
                continue
            self.stat[pid] = st
            self.argv[pid] = raw          # parsed on demand (argv_of)
            if b'sgl' in raw or st.comm.startswith(TITLE_PREFIXES):
                self.sgl.add(pid)
        self.parent_of = dict((pid, st.ppid) for pid, st in self.stat.items())
        self.children = children_map(self.parent_of)

    def argv_of(self, pid):
        argv = self.argv.get(pid)
        if isinstance(argv, bytes):
            argv = parse_cmdline(argv)
            self.argv[pid] = argv
        return argv or []

    def _cached(self, name, pid):
        key = (name, pid)
        if key not in self._cache:
            self._cache[key] = getattr(self.source, name)(pid)
        return self._cache[key]

    def environ(self, pid):
        return self._cached('environ', pid)

    def cgroup(self, pid):
        return self._cached('cgroup', pid) or []

    def fd_targets(self, pid):
        return self.source.fd_targets(pid)   # read once per process by discover(): no cache

    def cwd(self, pid):
        return self._cached('cwd', pid)

    def exe(self, pid):
        return self.exe_link(pid)[0]

    def exe_link(self, pid):
        return self._cached('exe_link', pid)

    def uid(self, pid):
        return self._cached('uid', pid)


class _Group(object):
    """A server being assembled: a matched main process, or a group of orphans."""

    def __init__(self, main, members, classification=None, orphaned=False, roots=None):
        self.main = main
        self.members = set(members)
        self.classification = classification
        self.orphaned = orphaned
        self.roots = set(roots or [main])      # who gets SIGTERM
        self.attached = {}                     # pid -> how an orphan/holder outside the tree was attached
        self.managed = False
        self.manager = None                    # managed_by of the entry (see _Discoverer.manager_of)


class Discovery(object):
    """The result of discover(): JSON-ready lists plus what the stop needs (identity, protected)."""

    def __init__(self):
        self.servers = []
        self.gpu_holders_unrelated = []
        self.ignored = []
        self.listeners = []
        self.foreign = []         # SGLang processes of other containers (never strays, never managed)
        self.unproven = []        # SGLang-looking processes whose interpreter cannot be read
        self.protected = set()
        self.identity = {}        # pid -> starttime of every member of a reported server

    @property
    def strays(self):
        return [server for server in self.servers if not server['managed']]

    @property
    def managed(self):
        return [server for server in self.servers if server['managed']]


def own_tree(parent_of, children, self_pid):
    """This process, its ancestors and its descendants: never touched."""
    tree = set([self_pid])
    tree.update(ancestors(parent_of, self_pid))
    tree.update(descendants(children, self_pid))
    return tree


class _Discoverer(object):
    """The steps of discover(), sharing one snapshot. Each step reads the result of the previous."""

    def __init__(self, source, unit, port, exclude_pids, include_gpu_holders, gpu_device_glob, self_pid):
        self.snap = Snapshot(source)
        self.stat = self.snap.stat
        self.children = self.snap.children
        self.unit = normalize_unit(unit)
        self.port = port
        self.include_gpu_holders = include_gpu_holders
        self.match_device = compile_device_glob(gpu_device_glob)
        self.self_pid = self_pid
        self.protected = own_tree(self.snap.parent_of, self.children, self_pid) | set((0, 1))
        self.excluded = set()
        for pid in exclude_pids or ():
            if pid in self.stat:
                self.excluded.add(pid)
                self.excluded.update(descendants(self.children, pid))
        self.blocked = self.protected | self.excluded
        self.ignored = {}
        self.classes = dict((pid, classify_argv(self.snap.argv_of(pid), self.stat[pid].comm))
                            for pid in self.snap.sgl)
        self.judge_identities()
        self.titled = set(pid for pid, c in self.classes.items() if c.kind == TITLED)
        self.never = set(pid for pid, c in self.classes.items() if c.kind in (ROUTER, CLIENT))
        self.devices_of = {}
        self.sockets_of = {}
        self.groups = []
        self.member_of = {}
        self._supervision = {}

    def ignore(self, pid, reason):
        self.ignored.setdefault(pid, reason)

    def judge_identities(self):
        """Take out of the candidates what cannot be this host's SGLang (identity.py): other containers'
        processes (with their subtrees: never entered), non-Python processes and unreadable interpreters."""
        self.foreign = ForeignFinder(self.snap, self.self_pid)
        self.foreign_pids = {}
        self.rejected = {}
        self.unproven = {}
        for pid in sorted(self.classes):
            c = self.classes[pid]
            if c.kind not in (SERVER, CANDIDATE, TITLED) or pid in self.protected:
                continue
            info = self.foreign.of(pid)
            if info is not None:
                self.foreign_pids[pid] = info
                del self.classes[pid]
                continue
            verdict, reason = exe_verdict(*self.snap.exe_link(pid))
            if verdict != PYTHON:
                (self.unproven if verdict == UNREADABLE else self.rejected)[pid] = reason
                del self.classes[pid]
        for pid in list(self.foreign_pids):
            self.blocked = self.blocked | set([pid]) | descendants(self.children, pid)

    def subtree(self, pid):
        """pid and its descendants, not entering protected, excluded, router or client subtrees."""
        return set([pid]) | descendants(self.children, pid, stop=self.blocked | self.never)

    def spared(self, pid):
        """Inside a client's or a router's tree (and not inside a server's)."""
        return any(p in self.never for p in [pid] + ancestors(self.snap.parent_of, pid))

    # 1 ------------------------------------------------------------------------------------------
    def find_servers(self):
        mains = set()
        for pid, c in self.classes.items():
            if c.kind == SERVER or (c.kind == CANDIDATE and descendants(self.children, pid) & self.titled):
                mains.add(pid)
        for pid in sorted(mains):
            if any(a in mains for a in ancestors(self.snap.parent_of, pid)):
                continue  # part of an enclosing server (a server launched by a server)
            if pid in self.protected:
                self.ignore(pid, OWN_TREE_REASON)
            elif pid in self.excluded:
                self.ignore(pid, EXCLUDED_REASON)
            else:
                self.groups.append(_Group(pid, self.subtree(pid), self.classes[pid]))

    # 2 ------------------------------------------------------------------------------------------
    def find_orphans(self):
        """Retitled SGLang processes no server claims, re-parented to PID 1 or a subreaper.

        A spawn child keeps its launcher's process group and a subreaper has its own, so a titled
        process whose live parent shares its process group was started by that parent - a client's
        in-process engine, say - and is left alone. Orphans of one process group form one group.
        """
        claimed = set()
        for group in self.groups:
            claimed |= group.members
        subtrees = {}
        for pid in sorted(self.titled - claimed - self.blocked):
            st = self.stat[pid]
            parent = self.stat.get(st.ppid)
            if st.ppid > 1 and parent is not None and parent.pgid == st.pgid:
                continue
            if not any(pid in members for members in subtrees.values()):
                subtrees[pid] = self.subtree(pid) - claimed
        by_pgid = {}
        for root in sorted(subtrees):
            by_pgid.setdefault(self.stat[root].pgid, []).append(root)
        orphans = []
        for pgid in sorted(by_pgid):
            members = set()
            for root in by_pgid[pgid]:
                members |= subtrees[root]
            orphans.append(_Group(min(members), members, orphaned=True, roots=by_pgid[pgid]))
            claimed |= members
        for pid in sorted(self.titled - claimed):
            if pid in self.protected:
                self.ignore(pid, OWN_TREE_REASON)
            elif pid in self.excluded:
                self.ignore(pid, EXCLUDED_REASON)
            else:
                parent = self.stat[pid].ppid
                self.ignore(pid, 'SGLang worker of a live process that is not a server (pid %d: %s)'
                            % (parent, title_of(redact_argv(self.snap.argv_of(parent)))[:120]))
        return orphans

    # 3 ------------------------------------------------------------------------------------------
    def scan_fds(self, pid):
        devices, sockets = split_fd_targets(self.snap.fd_targets(pid), self.match_device, self.port is not None)
        self.devices_of[pid] = devices
        if sockets:
            self.sockets_of[pid] = sockets

    def read_resources(self, groups):
        """Open devices (of every process when holders or listeners are wanted) and managed flags."""
        if self.include_gpu_holders or self.port is not None:
            for pid in self.stat:
                if pid not in self.protected:
                    self.scan_fds(pid)
        for group in groups:
            for pid in group.members:
                if pid not in self.devices_of:
                    self.scan_fds(pid)
            group.manager = self.manager_of(group)
            group.managed = group.manager is not None

    def supervision(self, pid):
        """(supervisord pid, program name) when pid runs under the collection's supervisord, else None.

        The proof: walking up from pid, the first supervisord process met (see ``_supervisors.is_supervisord``)
        is the parent of a process whose environment supervisord gave it as a program of the collection's
        supervisord (``_supervisors.collection_program``: its socket's URL). A worker re-parented to PID 1 is
        judged by the leader of its process group: supervisord puts each program in a process group of its own.
        A copied environment without that parent, or another supervisord, proves nothing. Where the child's
        environment cannot be read (a program run as another user, root without CAP_SYS_PTRACE), the parent
        supervisord's own configuration file (``-c FILE``, readable by root) must name the collection's socket;
        the program name is then ''.
        """
        if pid in self._supervision:
            return self._supervision[pid]
        found = None
        st = self.stat.get(pid)
        starts = [pid] + ([st.pgid] if st is not None and st.pgid != pid and st.pgid in self.stat else [])
        for start in starts:
            chain = [start] + ancestors(self.snap.parent_of, start)
            for child, parent in zip(chain, chain[1:]):
                if parent in self.stat and is_supervisord(self.snap.argv_of(parent), self.stat[parent].comm):
                    environ = self.snap.environ(child)
                    if environ is not None:
                        program = collection_program(environ)
                    else:
                        program = '' if self.collection_supervisord(parent) else None
                    if program is not None:
                        found = (parent, program)
                    break
            if found:
                break
        self._supervision[pid] = found
        return found

    def collection_supervisord(self, pid):
        """Whether the supervisord ``pid`` reads the collection's configuration (its socket), from its -c file."""
        path = supervisord_config_path(self.snap.argv_of(pid))
        if not path:
            return False
        if not path.startswith('/'):
            cwd = self.snap.cwd(pid)
            path = os.path.join(cwd, path) if cwd else path
        return is_collection_config(self.snap.source.read_text(path))

    def manager_of(self, group):
        """managed_by of a group: the systemd unit (a member in the unit's cgroup), else the collection's
        supervisord (a member under it, see supervision()), else None. The main process is asked first."""
        order = [group.main] + sorted(group.members - set([group.main]))
        for pid in order:
            if pid in self.stat and cgroup_in_unit(self.snap.cgroup(pid), self.unit):
                return {'manager': 'systemd', 'unit': self.unit, 'supervisord_pid': None, 'program': None}
        for pid in order:
            supervised = self.supervision(pid) if pid in self.stat else None
            if supervised:
                return {'manager': 'supervisord', 'unit': None, 'supervisord_pid': supervised[0],
                        'program': supervised[1]}
        return None

    def prove(self, orphans, target):
        """Keep the orphan roots with evidence beyond their title (identity.prove_orphans) and their subtrees;
        the others are left alone. False when nothing is left."""
        port = self.port
        if port is None and target is not None and target.classification is not None:
            port = server_settings(target.classification.args, None)['port']
        inodes = set()
        if port is not None:
            for text in self.snap.source.net_tcp():
                inodes |= listening_inodes(text, port)
        roots = {}
        for root in orphans.roots:
            sub = self.subtree(root) & orphans.members
            sockets = set()
            if inodes:
                for pid in sub:
                    sockets |= split_fd_targets(self.snap.fd_targets(pid), self.match_device, True)[1]
            roots[root] = {'exe': self.snap.exe(root), 'device': any(self.devices_of.get(pid) for pid in sub),
                           'port': bool(sockets & inodes)}
        proven, unproven = prove_orphans(roots, self.snap.exe(target.main) if target is not None else None)
        for root, reason in unproven.items():
            sub = self.subtree(root) & orphans.members
            orphans.members -= sub
            orphans.roots.discard(root)
            for pid in sub:
                self.ignore(pid, reason)
        if orphans.members and orphans.main not in orphans.members:
            orphans.main = min(orphans.members)
        return bool(orphans.roots)

    def group_gpus(self, group):
        return set(path for pid in group.members for path in self.devices_of.get(pid, ()) if is_per_gpu_device(path))

    def group_cgroups(self, group):
        paths = set(primary_cgroup(self.snap.cgroup(pid)) for pid in group.members)
        return set(path for path in paths if is_specific_cgroup(path))

    # 4 ------------------------------------------------------------------------------------------
    def attach_orphans(self, orphan_groups):
        """Attach each orphan group to a live server with the same managed status: same GPU device,
        then same process group, then same (specific) cgroup; the first relation that names exactly
        one server wins. The others become entries of their own."""
        standalone = []
        for orphans in orphan_groups:
            candidates = [g for g in self.groups if g.managed == orphans.managed]
            gpus = self.group_gpus(orphans)
            pgids = set(self.stat[pid].pgid for pid in orphans.roots)
            cgroups = self.group_cgroups(orphans)
            relations = (
                ('same GPU device', lambda g: bool(gpus & self.group_gpus(g))),
                ('same process group', lambda g: self.stat[g.main].pgid in pgids),
                ('same cgroup', lambda g: bool(cgroups & self.group_cgroups(g))),
            )
            target = None
            for how, related in relations:
                matches = [g for g in candidates if related(g)]
                if len(matches) == 1:
                    target = matches[0]
                    break
            if not self.prove(orphans, target):
                continue
            if target is None:
                standalone.append(orphans)
                continue
            target.members |= orphans.members
            target.roots |= set(orphans.roots)
            for pid in orphans.members:
                target.attached[pid] = 'orphan (%s)' % how
        self.groups.extend(standalone)
        for group in self.groups:
            for pid in group.members:
                self.member_of[pid] = group

    # 5 ------------------------------------------------------------------------------------------
    def attach_gpu_holders(self):
        """Holders outside every server join a stray server sharing their (specific) cgroup or their
        process group (one led by a stray member, or whose leader is gone). The rest are returned as
        unrelated: never stopped. Holders under a client or a router, or managed (in the unit, or under the
        collection's supervisord), are never attached."""
        own_pgid = self.stat[self.self_pid].pgid if self.self_pid in self.stat else None
        cgroup_owner = {}
        pgid_owner = {}
        for group in self.groups:
            if group.managed:
                continue
            for path in self.group_cgroups(group):
                cgroup_owner.setdefault(path, group)
            for pid in group.members:
                pgid = self.stat[pid].pgid
                if pgid and pgid != own_pgid and (pgid not in self.stat or pgid in group.members):
                    pgid_owner.setdefault(pgid, group)
        unrelated = []
        for pid in sorted(self.devices_of):
            if not self.devices_of[pid] or pid in self.member_of or pid in self.protected:
                continue
            entries = self.snap.cgroup(pid)
            if cgroup_in_unit(entries, self.unit) or self.supervision(pid):
                continue
            if self.foreign.of(pid) is not None:   # another container's: never joins a server of this host
                unrelated.append(pid)
                continue
            path = primary_cgroup(entries)
            owner, how = None, None
            if pid not in self.excluded and not self.spared(pid):
                if is_specific_cgroup(path) and path in cgroup_owner:
                    owner, how = cgroup_owner[path], 'same cgroup'
                elif self.stat[pid].pgid in pgid_owner:
                    owner, how = pgid_owner[self.stat[pid].pgid], 'same process group'
            if owner is None:
                unrelated.append(pid)
                continue
            for holder in self.subtree(pid):
                if holder not in self.member_of:
                    owner.members.add(holder)
                    owner.attached[holder] = 'GPU holder (%s)' % how
                    self.member_of[holder] = owner
            owner.roots.add(pid)
        return [self.holder_entry(pid) for pid in unrelated if pid not in self.member_of]

    def holder_entry(self, pid):
        argv = redact_argv(self.snap.argv_of(pid))
        uid = self.snap.uid(pid)
        return {'pid': pid, 'ppid': self.stat[pid].ppid, 'title': title_of(argv), 'argv': argv, 'uid': uid,
                'user': user_name(uid), 'cgroup': primary_cgroup(self.snap.cgroup(pid)),
                'gpu_devices': sorted(self.devices_of[pid])}

    # 6 ------------------------------------------------------------------------------------------
    def entries(self, result, now):
        for group in self.groups:
            group.members = set(pid for pid in group.members if pid in self.stat and pid not in self.blocked)
            if not group.members:
                continue
            if group.main not in group.members:
                group.main = min(group.members)
            entry = _entry(self.snap, group, self.devices_of, now)
            if self.port is not None and not group.orphaned and entry['port'] != self.port:
                self.ignore(group.main, 'server on port %s, not on port %s' % (entry['port'], self.port))
                continue
            entry['_roots'] = sorted(pid for pid in group.roots if pid in group.members)
            result.servers.append(entry)
            for pid in group.members:
                result.identity[pid] = self.stat[pid].starttime
        result.servers.sort(key=lambda s: s['main_pid'])

    # 7 ------------------------------------------------------------------------------------------
    def listeners(self):
        """Who listens on the port (pre-flight: free, or held by something that is not SGLang?)."""
        inodes = set()
        for text in self.snap.source.net_tcp():
            inodes |= listening_inodes(text, self.port)
        found = []
        for pid in sorted(self.sockets_of):
            if self.sockets_of[pid] & inodes:
                argv = redact_argv(self.snap.argv_of(pid))
                group = self.member_of.get(pid)
                found.append({'pid': pid, 'title': title_of(argv), 'argv': argv,
                              'server_main_pid': group.main if group is not None else None,
                              'managed': group.managed if group is not None else False})
        return found

    def foreign_entries(self):
        """The foreign list: each topmost server of another container with its subtree, each other titled one."""
        taken = set()
        groups = []
        for pid in sorted(self.foreign_pids):
            c = classify_argv(self.snap.argv_of(pid), self.stat[pid].comm)
            if pid in taken or any(a in self.foreign_pids for a in ancestors(self.snap.parent_of, pid)):
                continue
            members = set([pid]) | descendants(self.children, pid)
            taken |= members
            groups.append((pid, members, c if c.kind != TITLED else None, self.foreign_pids[pid]))
        return foreign_entries(self.snap, groups, self.match_device)

    def unproven_entries(self):
        """Processes whose interpreter cannot be read (not in a proven server's tree): never stopped."""
        return [{'pid': pid, 'title': title_of(redact_argv(self.snap.argv_of(pid))), 'reason': reason}
                for pid, reason in sorted(self.unproven.items()) if pid not in self.member_of and pid in self.stat]

    def ignored_entries(self):
        """Everything else that mentions sglang, with the reason it is left alone."""
        for pid, reason in self.rejected.items():
            if pid not in self.member_of:
                self.ignore(pid, reason)
        for pid, c in self.classes.items():
            if pid in self.member_of or pid in self.ignored:
                continue
            if pid in self.protected:
                self.ignore(pid, OWN_TREE_REASON)
            elif c.kind in (ROUTER, CLIENT, TOOL, MENTION, CANDIDATE) and c.reason:
                self.ignore(pid, c.reason)
        return [{'pid': pid, 'title': title_of(redact_argv(self.snap.argv_of(pid))), 'reason': self.ignored[pid]}
                for pid in sorted(self.ignored) if pid in self.stat]


def discover(source=None, unit=DEFAULT_UNIT, port=None, exclude_pids=(), include_gpu_holders=True,
             gpu_device_glob=DEFAULT_GPU_DEVICE_GLOB, self_pid=None, now=None):
    """Find the SGLang servers on this host (the rules are in the modules' documentation).

    ``source`` reads procfs (ProcFS by default); ``self_pid`` is the process whose own tree is
    protected (default: this process).
    """
    d = _Discoverer(source or ProcFS(), unit, port, exclude_pids, include_gpu_holders, gpu_device_glob,
                    os.getpid() if self_pid is None else self_pid)
    result = Discovery()
    result.protected = d.protected
    d.find_servers()
    orphan_groups = d.find_orphans()
    d.read_resources(d.groups + orphan_groups)
    d.attach_orphans(orphan_groups)
    if include_gpu_holders:
        result.gpu_holders_unrelated = d.attach_gpu_holders()
    d.entries(result, time.time() if now is None else now)
    if port is not None:
        result.listeners = d.listeners()
    result.ignored = d.ignored_entries()
    result.unproven = d.unproven_entries()
    result.foreign = d.foreign_entries()
    return result


def _entry(snap, group, devices_of, now):
    source = snap.source
    main = group.main
    st = snap.stat[main]
    argv_raw = snap.argv_of(main)
    argv = redact_argv(argv_raw)
    hidden_args = redacted_flags(argv_raw)
    c = group.classification
    args = []
    module = None
    settings = dict((k, None) for k in SETTING_DEFAULTS)
    cwd = snap.cwd(main)
    if c is not None and not group.orphaned:
        module = c.module
        args = c.args
        config = None
        config_file = config_path_of(args)
        if config_file:
            path = config_file if config_file.startswith('/') or not cwd else os.path.join(cwd, config_file)
            text = source.read_text(path)
            config = parse_config_scalars(text) if text else None
        settings = server_settings(args, config)
        args = redact_argv(args)
    env_raw = snap.environ(main) or {}
    env, hidden_env = redact_env(env_raw)
    uid = snap.uid(main)
    members = []
    for pid in sorted(group.members):
        pst = snap.stat[pid]
        margv = redact_argv(snap.argv_of(pid))
        attached = group.attached.get(pid)
        if attached and attached.startswith('GPU holder') and pid in group.roots:
            role = 'gpu_holder'
        else:
            role = member_role(snap.argv_of(pid), pst, pid == main and not group.orphaned)
        members.append({'pid': pid, 'ppid': pst.ppid, 'role': role, 'title': title_of(margv) or pst.comm,
                        'argv': margv, 'attached': attached})
    gpu_devices = set()
    for pid in group.members:
        gpu_devices.update(devices_of.get(pid, ()))
    start = source.start_time(st.starttime)
    parent = snap.stat.get(st.ppid)
    return {
        'main_pid': main,
        'pids': sorted(group.members),
        'members': members,
        'argv': argv,
        'executable': resolve_executable(argv_raw[0] if argv_raw else None, env_raw.get('PATH'), cwd,
                                         snap.exe(main), env_raw.get('VIRTUAL_ENV')),
        'module': module,
        'args': args,
        'env': env,
        # None when /proc/<pid>/environ cannot be read (another user's process, root without CAP_SYS_PTRACE)
        'env_readable': snap.environ(main) is not None,
        'cwd': cwd,
        'user': user_name(uid),
        'uid': uid,
        'host': settings['host'],
        'port': settings['port'],
        'tp': settings['tp'],
        'dp': settings['dp'],
        'pp': settings['pp'],
        'cgroup': primary_cgroup(snap.cgroup(main)),
        'managed': group.managed,
        'managed_by': group.manager,
        'orphaned': group.orphaned,
        'gpu_devices': sorted(gpu_devices),
        'start_time': round(start, 2),
        'uptime_seconds': round(max(0.0, now - start), 2),
        'ppid': st.ppid,
        'parent': None if parent is None or st.ppid <= 1 else {
            'pid': st.ppid, 'title': title_of(redact_argv(snap.argv_of(st.ppid))) or parent.comm},
        'redacted_args': hidden_args,
        'redacted_env': hidden_env,
    }


def public(server):
    """A server entry without the private keys (those starting with '_')."""
    return dict((k, v) for k, v in server.items() if not k.startswith('_'))
