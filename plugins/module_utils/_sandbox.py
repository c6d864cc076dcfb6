# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""How a service is confined: systemd sandbox directives, persistent caches, GPU device access.

One home for these rules, used by the service role (SGLang server) and the router role through the
filters ``sandbox_directives``, ``cache_environment``, ``gpu_device_access`` and ``security_exposure``
(``plugins/filter/rules.py``). Pure functions; nothing here runs a command.

Sources: the systemd version of each directive is the one its ``systemd.exec(5)`` / ``systemd.resource-control(5)``
entry names ("Added in version N"); the cache variables are SGLang 0.5.x's ``SGLANG_CACHE_DIR`` and
``SGLANG_DG_CACHE_DIR`` (``sglang/srt/environ.py``), DeepGEMM's ``DG_JIT_CACHE_DIR``, Triton's
``TRITON_CACHE_DIR``, PyTorch Inductor's ``TORCHINDUCTOR_CACHE_DIR``, FlashInfer's ``FLASHINFER_WORKSPACE_BASE``
and the CUDA driver's ``CUDA_CACHE_PATH`` (its JIT cache of PTX compiled for the GPU).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.inferops.sglang.plugins.module_utils._writers.systemd import unit_paths, unit_text, unit_words

# Directories a service may need to read that ProtectHome=yes would hide.
HOME_TREES = ('/home', '/root', '/run/user')

# (directive, value, first systemd version that has it). Nothing here hides /dev/nvidia*: no PrivateDevices,
# no DevicePolicy unless asked for (then with the GPU devices allowed).
HARDENING = (
    ('NoNewPrivileges', 'yes', 187),
    ('PrivateTmp', 'yes', 0),
    ('ProtectSystem', 'strict', 232),
    ('ProtectKernelTunables', 'yes', 232),
    ('ProtectKernelModules', 'yes', 232),
    ('ProtectKernelLogs', 'yes', 244),
    ('ProtectControlGroups', 'yes', 232),
    ('ProtectHostname', 'yes', 242),
    ('RestrictSUIDSGID', 'yes', 242),
    ('RestrictRealtime', 'yes', 231),
    ('LockPersonality', 'yes', 235),
    ('SystemCallArchitectures', 'native', 209),
    ('RestrictNamespaces', 'yes', 233),
    ('ProtectProc', 'invisible', 247),
)
CAPABILITIES_VERSION = 229
ADDRESS_FAMILIES_VERSION = 211
REMOVE_IPC_VERSION = 232
# ProtectClock= (245) implied DeviceAllow=char-rtc r up to systemd 252, which turned the default device policy into
# a closed one and hid /dev/nvidia* (systemd issue 18142, fixed in 253): written from 253 on, or with a device policy.
PROTECT_CLOCK_VERSION = 245
PROTECT_CLOCK_SAFE_VERSION = 253
PROTECT_HOME_VERSION = 214
READ_WRITE_PATHS_VERSION = 231
LOG_FILTER_PATTERNS_VERSION = 253
DEVICE_ALLOW_VERSION = 208

# Variable -> directory under the cache root. Each is read by the library named in the module docstring.
CACHE_VARIABLES = (
    ('SGLANG_CACHE_DIR', 'sglang'),
    ('SGLANG_DG_CACHE_DIR', 'deep_gemm'),
    ('DG_JIT_CACHE_DIR', 'deep_gemm'),
    ('TRITON_CACHE_DIR', 'triton'),
    ('TORCHINDUCTOR_CACHE_DIR', 'torchinductor'),
    ('FLASHINFER_WORKSPACE_BASE', 'flashinfer'),
    ('CUDA_CACHE_PATH', 'nv'),
)

_EXPOSURE = re.compile(r'Overall exposure level for \S+:\s*([0-9]+(?:\.[0-9]+)?)\s+(\w+)')


def _version(systemd_version):
    """An int of the systemd version (``252``, ``'252'``); 0 when unknown, which keeps only version-free directives."""
    if systemd_version in (None, ''):
        return 0
    try:
        return int(systemd_version)
    except (TypeError, ValueError):
        raise ValueError('systemd_version must be an integer, got %r' % (systemd_version,))


def _under(path, trees):
    return any(path == tree or path.startswith(tree.rstrip('/') + '/') for tree in trees)


def _absolute_paths(paths, what):
    result = []
    for path in paths or []:
        text = str(path)
        bare = text.lstrip('-')
        if not bare.startswith('/'):
            # The value is not shown: it may be an adopted working directory, i.e. anyone's text.
            raise ValueError('%s must be absolute paths; an entry is not' % (what,))
        if text not in result:
            result.append(text)
    return result


def sandbox_directives(systemd_version, read_paths=(), read_write_paths=(), device_policy='', device_allow=(),
                       log_filter_patterns=(), capabilities=None, address_families=(), remove_ipc=False):
    """The sandbox of a unit as ``[[directive, value], ...]``, in the order they are written.

    ``systemd_version``: the host's systemd major version (int; ``None`` -> only directives every systemd has).
    ``read_paths``: absolute paths the service must read (interpreter, venv, models); when one is under /home,
    /root or /run/user, ``ProtectHome=read-only`` instead of ``yes``. ``read_write_paths``: absolute paths it
    writes (caches, working directory; a leading ``-`` tolerates a missing path), listed in ``ReadWritePaths=``;
    when one is under a home, no ``ProtectHome=`` at all (systemd keeps a home read-only even where
    ``ReadWritePaths=`` names it, since for one path the more restrictive mount wins). ``device_policy``: ``''``
    (no device policy, every device reachable: the default, since ``/dev/nvidia*`` must stay usable), ``closed`` or
    ``strict``; with a policy each entry of
    ``device_allow`` (``/dev/nvidia0 rw``, ``char-nvidia-uvm rw``) becomes a ``DeviceAllow=`` line.
    ``log_filter_patterns``: regular expressions of journal lines to drop (``LogFilterPatterns=~...``), written
    only where systemd has it (253 or later). ``capabilities``: ``None`` leaves the capability set alone (a root
    service keeps root's); a list (``[]`` for none, ``['CAP_NET_BIND_SERVICE']`` for a port below 1024) becomes
    ``CapabilityBoundingSet=`` and ``AmbientCapabilities=``. ``address_families``: socket families the service may
    open (``RestrictAddressFamilies=``; empty leaves them all). ``remove_ipc``: ``RemoveIPC=yes`` (for a user other
    than root; its System V IPC objects and POSIX shared memory go away when it stops).

    Each value is returned as it is written into the unit, through the writers of ``_writers.systemd``: the path
    list by ``unit_paths`` (quoted with C escapes where an entry needs it, ``%`` doubled), names by ``unit_words``,
    device and log filter entries by ``unit_text``; a template writes ``NAME=VALUE`` without quoting anything.

    Directives newer than the host's systemd are left out. Raises ValueError for a relative path, an unknown
    device policy, a version that is not an integer, or a value a unit cannot hold (``_writers.Unwritable``: a line
    break, a control character; the message never holds the value).
    """
    version = _version(systemd_version)
    reads = _absolute_paths(read_paths, 'read_paths')
    writes = _absolute_paths(read_write_paths, 'read_write_paths')
    if device_policy not in ('', 'closed', 'strict'):
        raise ValueError("device_policy must be '', 'closed' or 'strict', got %r" % (device_policy,))
    lines = [[name, value] for name, value, since in HARDENING if version >= since]
    if version >= (PROTECT_CLOCK_VERSION if device_policy else PROTECT_CLOCK_SAFE_VERSION):
        lines.append(['ProtectClock', 'yes'])
    if capabilities is not None and version >= CAPABILITIES_VERSION:
        names = unit_words([str(name) for name in capabilities])
        lines.append(['CapabilityBoundingSet', names])
        lines.append(['AmbientCapabilities', names])
    if address_families and version >= ADDRESS_FAMILIES_VERSION:
        lines.append(['RestrictAddressFamilies', unit_words([str(name) for name in address_families])])
    if remove_ipc and version >= REMOVE_IPC_VERSION:
        lines.append(['RemoveIPC', 'yes'])
    writes_home = any(_under(path.lstrip('-'), HOME_TREES) for path in writes)
    if version >= PROTECT_HOME_VERSION and not writes_home:
        reads_home = any(_under(path, HOME_TREES) for path in reads)
        lines.append(['ProtectHome', 'read-only' if reads_home else 'yes'])
    if writes and version >= READ_WRITE_PATHS_VERSION:
        lines.append(['ReadWritePaths', unit_paths(writes)])
    if device_policy and version >= DEVICE_ALLOW_VERSION:
        lines.append(['DevicePolicy', device_policy])
        for entry in device_allow or []:
            lines.append(['DeviceAllow', unit_text(str(entry))])
    if version >= LOG_FILTER_PATTERNS_VERSION:
        for pattern in log_filter_patterns or []:
            lines.append(['LogFilterPatterns', unit_text('~' + str(pattern))])
    return lines


def cache_environment(cache_dir, home=None):
    """``{VARIABLE: directory}`` that keeps every JIT cache of the server under ``cache_dir``.

    ``cache_dir``: absolute path (``/var/cache/sglang``); empty -> ``{}``. ``home``: the service user's home
    directory, written as ``HOME`` (supervisord does not set it for a program's user); ``None`` or empty leaves
    ``HOME`` alone (root, whose home systemd and supervisord already give). Raises ValueError for a relative path.
    """
    if not cache_dir:
        return {}
    root = str(cache_dir).rstrip('/') or '/'
    if not root.startswith('/'):
        raise ValueError('cache_dir must be an absolute path, got %r' % (cache_dir,))
    env = dict((name, root + '/' + sub) for name, sub in CACHE_VARIABLES)
    if home:
        if not str(home).startswith('/'):
            raise ValueError('home must be an absolute path, got %r' % (home,))
        env['HOME'] = str(home)
    return env


def security_exposure(text, when=None):
    """The overall exposure of ``systemd-analyze security UNIT`` output: ``{'score': 9.6, 'level': 'UNSAFE'}``.

    ``score`` is systemd's 0.0 (most confined) - 10.0 (exposed) figure, ``level`` its word (OK, MEDIUM, EXPOSED,
    UNSAFE). ``None`` when the text holds no such line (an older systemd, a unit that is not loaded).

    :param text: the command's standard output; or the result of the module ``service_files`` called with
        ``exposure: true`` (a dict with ``exposure: {before, after}`` and ``files_changed``), read as ``when`` says.
    :param when: with a ``service_files`` result: ``'before'`` (the unit as it was before the call) or ``'after'``
        (as it is now: the second measurement; the first when no file changed; none when a file changed but was not
        measured again, in check mode).
    :raises ValueError: ``when`` given with text, or a result without ``exposure``, or another ``when``.
    """
    if isinstance(text, dict):
        exposure = text.get('exposure')
        if not isinstance(exposure, dict) or when not in ('before', 'after'):
            raise ValueError("a service_files result needs exposure: true and when 'before' or 'after', not %r" % (when,))
        if when == 'before':
            text = exposure.get('before')
        elif exposure.get('after') is not None:
            text = exposure['after']
        else:
            text = '' if text.get('files_changed') else exposure.get('before')
    elif when is not None:
        raise ValueError("'before' or 'after' is for a service_files result, not for text")
    match = _EXPOSURE.search(text or '')
    if not match:
        return None
    return {'score': float(match.group(1)), 'level': match.group(2)}


def _mode_bits(mode):
    if isinstance(mode, int):
        return mode
    return int(str(mode), 8)


def gpu_device_access(devices, user, groups):
    """The GPU device nodes ``user`` cannot open read-write: ``[{'path', 'group', 'mode'}]``, empty when all can.

    ``devices``: the results of ``ansible.builtin.find`` over ``/dev`` (``path``, ``mode`` as ``'0660'``,
    ``pw_name``, ``gr_name``); ``user``: the service user; ``groups``: every group it is (or will be) in,
    primary first. root opens every device. A device is open to the user when it is world read-write, the user
    owns it with read-write, or one of ``groups`` owns it with read-write.
    """
    if user in ('root', '0', 0):
        return []
    member = set(str(group) for group in groups or [])
    refused = []
    for device in devices or []:
        bits = _mode_bits(device.get('mode', '0'))
        if bits & 0o006 == 0o006:
            continue
        if device.get('pw_name') == user and bits & 0o600 == 0o600:
            continue
        if device.get('gr_name') in member and bits & 0o060 == 0o060:
            continue
        refused.append({'path': device.get('path'), 'group': device.get('gr_name'), 'mode': device.get('mode')})
    return refused
