# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Control groups of processes (``/proc/<pid>/cgroup``) and what they say about systemd units.

Pure functions: the caller reads the file (``_procfs.ProcFS.cgroup``) and passes its entries in.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

# cgroup leaves that many unrelated processes share: never evidence that two processes belong together.
_GENERIC_CGROUP_LEAF_RE = re.compile(r'^(?:init\.scope|session-[^/]*\.scope|user@\d+\.service|[^/]*\.slice)$')
_UNIT_SUFFIXES = ('.service', '.scope', '.slice', '.socket', '.mount', '.target', '.timer', '.swap', '.path')


def parse_cgroup(text):
    """Parse /proc/<pid>/cgroup (str or bytes) into a list of (hierarchy_id, controllers, path) tuples."""
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    entries = []
    # Line feeds only (as _procfs.proc_lines): a cgroup's name, which a user with a delegated subtree chooses, may
    # hold a carriage return or U+2028, where str.splitlines would start a line of that user's choosing.
    for line in (text or '').split('\n'):
        parts = line.split(':', 2)
        if len(parts) == 3:
            entries.append((parts[0], parts[1], parts[2]))
    return entries


def _systemd_cgroup_paths(entries):
    """The paths systemd tracks units with: the unified (v2) path and the v1 name=systemd path."""
    return [path for hier, controllers, path in entries
            if (hier == '0' and controllers == '') or controllers == 'name=systemd']


def primary_cgroup(entries):
    """The cgroup path to report and compare: the most specific of name=systemd (v1) and unified (v2)."""
    unified = [path for hier, controllers, path in entries if hier == '0' and controllers == '']
    named = [path for hier, controllers, path in entries if controllers == 'name=systemd']
    for path in named + unified:
        if path and path != '/':
            return path
    if unified:
        return unified[0]
    if named:
        return named[0]
    return entries[0][2] if entries else None


def normalize_unit(unit):
    """'sglang' -> 'sglang.service'; names with a unit type suffix are kept."""
    unit = (unit or '').strip()
    if unit and not unit.endswith(_UNIT_SUFFIXES):
        unit += '.service'
    return unit


def cgroup_in_unit(entries, unit):
    """True when a process with these /proc/<pid>/cgroup entries runs under systemd unit ``unit``.

    systemd puts a unit's processes in a cgroup whose path ends in ``/<unit>`` (``0::/system.slice/
    sglang.service``; cgroup v1: ``1:name=systemd:/system.slice/sglang.service``), or below it when
    the unit delegates (``.../sglang.service/payload``). Inside a container that sees the host's
    cgroup namespace the path has a prefix (``0::/docker/<id>/system.slice/sglang.service``). So
    the unit must be one whole component of the unified or name=systemd path.
    """
    unit = normalize_unit(unit)
    if not unit:
        return False
    for path in _systemd_cgroup_paths(entries):
        if unit in path.split('/'):
            return True
    return False


def is_specific_cgroup(path):
    """True when sharing this cgroup says two processes belong together.

    The root cgroup, slices, init.scope, login session scopes and user@.service are shared by
    unrelated processes (everything a user starts over ssh lands in session-N.scope), so they are
    not. A service, a transient run-*.service/scope or a container cgroup is.
    """
    if not path or path == '/':
        return False
    leaf = path.rstrip('/').rsplit('/', 1)[-1]
    return not _GENERIC_CGROUP_LEAF_RE.match(leaf)


# Container cgroups, as the runtimes name them (a component of the cgroup path; inside a private cgroup namespace
# another container's path is relative, ``/../../docker-<id>.scope``, and still holds the component):
# docker (cgroupfs driver ``/docker/<id>``, systemd driver ``docker-<id>.scope``), containerd under kubelet
# (``cri-containerd-<id>.scope``), CRI-O (``crio-<id>.scope``), podman (``libpod-<id>.scope``, cgroupfs
# ``/libpod_parent/libpod-<id>``; ``libpod-conmon-<id>.scope`` is podman's monitor, outside the container) and
# kubelet's pods (``/kubepods/<qos>/pod<uid>/<id>``, ``kubepods-<qos>-pod<uid>.slice``).
_CONTAINER_SCOPE_RE = re.compile(r'^(docker|cri-containerd|crio|libpod)-([0-9a-f]{12,64})(?:\.scope)?$')
_CONTAINER_RUNTIMES = {'docker': 'docker', 'cri-containerd': 'containerd', 'crio': 'cri-o', 'libpod': 'podman'}
_HEX_ID_RE = re.compile(r'^[0-9a-f]{64}$')
_POD_RE = re.compile(r'(?:^|-)pod([0-9a-f_-]{16,})(?:\.slice)?$')


def container_of(entries):
    """The container a process with these /proc/<pid>/cgroup entries runs in, or None (no container seen).

    :param entries: the parsed entries (:func:`parse_cgroup`) or the text of the file.
    :returns: ``{'runtime': 'docker'|'containerd'|'cri-o'|'podman'|'kubernetes', 'id': full hex id or None,
        'pod': kubelet pod uid or None}``. Every hierarchy is read (cgroup v1 has one line per controller); the
        deepest container component of a path wins (a container inside a pod names its runtime).
    """
    if not isinstance(entries, list):
        entries = parse_cgroup(entries)
    for dummy_hier, dummy_controllers, path in entries:
        found = None
        pod = None
        parts = [part for part in (path or '').split('/') if part]
        for index, part in enumerate(parts):
            if part.startswith('kubepods'):
                found = found or {'runtime': 'kubernetes', 'id': None, 'pod': None}
                match = _POD_RE.search(part)
                if match:
                    pod = match.group(1).replace('_', '-')
                continue
            match = _CONTAINER_SCOPE_RE.match(part)
            if match and not part.startswith('libpod-conmon-'):
                found = {'runtime': _CONTAINER_RUNTIMES[match.group(1)], 'id': match.group(2), 'pod': None}
            elif part in ('docker', 'libpod_parent') and index + 1 < len(parts):
                child = parts[index + 1]
                child = child[len('libpod-'):] if child.startswith('libpod-') else child
                if _HEX_ID_RE.match(child):
                    found = {'runtime': 'docker' if part == 'docker' else 'podman', 'id': child, 'pod': None}
            elif found is not None and found['runtime'] == 'kubernetes' and _HEX_ID_RE.match(part):
                found = dict(found, id=part)
            elif found is not None and _POD_RE.match(part):
                pod = _POD_RE.match(part).group(1).replace('_', '-')
        if found is not None:
            if pod is not None:
                found = dict(found, pod=pod)
            return found
    return None


def same_container(first, second):
    """Whether two results of :func:`container_of` name the same container (None: no container, the host's)."""
    if first is None or second is None:
        return first is None and second is None
    return (first['runtime'], first['id'], first['pod']) == (second['runtime'], second['id'], second['pod'])
