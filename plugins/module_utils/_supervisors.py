# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The service supervisors, systemd and supervisord, as this collection sees them: what their status output
says, which states mean a service is up, and where their unit files and program configurations are.

Nothing here runs ``systemctl`` or ``supervisorctl``; the modules run them and pass the output in.
The state sets are the one home of "is the service up", for the health gate (``_health``) and for the
roles (the ``service_active`` filter).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fnmatch
import glob
import os
import re

# systemd ActiveState values in which a service is (still) on its way or running.
SYSTEMD_ALIVE = ('active', 'activating', 'reloading')
# The systemd ActiveState of a unit that failed (its Result= says why).
SYSTEMD_FAILED = ('failed',)
# supervisord process states (``supervisorctl status``) in which a program is on its way or running.
SUPERVISOR_ALIVE = ('RUNNING', 'STARTING')
MANAGERS = ('systemd', 'supervisord')

# The socket of the collection's own supervisord: [unix_http_server] file= of roles/service/templates/supervisord.conf.j2
# (the service plan's supervisor_socket, not settable: plugins/module_utils/_plans/service.py). supervisord hands every program it starts the URL of
# this socket as SUPERVISOR_SERVER_URL (supervisor/process.py), which is how a server under it is recognised.
COLLECTION_SUPERVISOR_SOCKET = '/run/inferops-sglang-supervisor.sock'
COLLECTION_SUPERVISOR_URL = 'unix://' + COLLECTION_SUPERVISOR_SOCKET
SUPERVISORD_NAME = 'supervisord'

# systemctl show properties converted to int.
_INT_PROPERTIES = ('MainPID', 'NRestarts', 'ExecMainStatus')


def service_active(state, manager):
    """True when ``state`` means the service is up (running, or on its way).

    :param state: a systemd ActiveState (``active``) or a supervisord state (``RUNNING``).
    :param manager: ``systemd`` or ``supervisord``.
    :raises ValueError: for another manager.
    """
    if manager == 'systemd':
        return state in SYSTEMD_ALIVE
    if manager == 'supervisord':
        return state in SUPERVISOR_ALIVE
    raise ValueError('manager must be one of %s, not %r' % (', '.join(MANAGERS), manager))


def systemd_reading(status):
    """The cutover's reading of a systemd unit (``__cutover_mgr``) from its properties.

    :param status: dict - ``ActiveState``, ``MainPID`` and ``NRestarts`` (text or int, as
        ``ansible.builtin.systemd_service`` returns them in ``status``, or ``service_preflight_info``'s ``unit.status``);
        a missing ``MainPID`` or ``NRestarts`` counts as 0 (NRestarts is systemd 235 and later), a missing
        ``ActiveState`` as ``inactive``.
    :returns: dict - ``active`` (bool, :func:`service_active`), ``state`` (the ActiveState), ``pid`` and ``restarts``
        (int), ``baseline`` (``{'MainPID', 'NRestarts'}``, ints: what ``server_health`` compares with while it gates a
        started unit).
    A ``MainPID`` or ``NRestarts`` that is no integer reads as 0, as Ansible's ``int`` filter read it before.
    """
    status = status if isinstance(status, dict) else {}
    state = str(status.get('ActiveState') or 'inactive')
    pid, restarts = _int_or_zero(status.get('MainPID')), _int_or_zero(status.get('NRestarts'))
    return {'active': service_active(state, 'systemd'), 'state': state, 'pid': pid, 'restarts': restarts,
            'baseline': {'MainPID': pid, 'NRestarts': restarts}}


def _int_or_zero(value):
    """An integer property as int; 0 for None, empty or anything that is no integer (Ansible's ``int`` filter)."""
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def parse_systemctl_show(text):
    """The properties of one unit from ``systemctl show -p A -p B UNIT`` -> dict of str.

    :param text: str, ``KEY=value`` lines.
    :returns: dict; MainPID, NRestarts and ExecMainStatus are int when present (None when they do not
        parse).
    """
    props = {}
    for line in (text or '').splitlines():
        if '=' in line:
            key, value = line.split('=', 1)
            props[key.strip()] = value.strip()
    for key in _INT_PROPERTIES:
        if key in props:
            try:
                props[key] = int(props[key])
            except ValueError:
                props[key] = None
    return props


def parse_systemctl_show_units(text):
    """``systemctl show -p Id,ActiveState u1 u2`` -> one :func:`parse_systemctl_show` dict per unit, in
    the order asked (systemctl separates the units' blocks with blank lines)."""
    blocks = []
    current = []
    for line in (text or '').splitlines():
        if not line.strip():
            if current:
                blocks.append(parse_systemctl_show('\n'.join(current)))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append(parse_systemctl_show('\n'.join(current)))
    return blocks


def parse_supervisorctl_status(text):
    """One line of ``supervisorctl status NAME`` -> dict(state, pid, detail).

    Example lines (supervisor 4.x)::

        sglang                           RUNNING   pid 123, uptime 0:00:12
        sglang                           BACKOFF   Exited too quickly (process log may have details)
        sglang                           FATAL     Exited too quickly (process log may have details)

    No line at all gives state ``UNKNOWN``.
    """
    for line in (text or '').splitlines():
        parts = line.split(None, 2)
        if len(parts) < 2:
            continue
        state = parts[1]
        detail = parts[2] if len(parts) > 2 else ''
        pid = None
        if detail.startswith('pid '):
            try:
                pid = int(detail[4:].split(',')[0])
            except ValueError:
                pid = None
        return {'state': state, 'pid': pid, 'detail': detail}
    return {'state': 'UNKNOWN', 'pid': None, 'detail': (text or '').strip()}


def find_unit_files(dirs, pattern):
    """[{name, path}] of files (or links, masked units included) matching pattern in the unit
    directories, first directory first; a directory reached twice (/lib -> /usr/lib) is read once."""
    seen_dirs = set()
    units = []
    for d in dirs:
        real = os.path.realpath(d)
        if real in seen_dirs or not os.path.isdir(d):
            continue
        seen_dirs.add(real)
        try:
            names = sorted(os.listdir(d))
        except (OSError, IOError):
            continue
        for name in names:
            path = os.path.join(d, name)
            if not fnmatch.fnmatchcase(name, pattern):
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                continue  # sglang.service.d drop-in directories
            units.append({'name': name, 'path': path})
    return units


def find_supervisor_configs(etc_dir='/etc'):
    """Existing supervisord configuration files: the main files and the usual include dirs."""
    candidates = [
        os.path.join(etc_dir, 'supervisord.conf'),
        os.path.join(etc_dir, 'supervisor', 'supervisord.conf'),
    ]
    patterns = [
        os.path.join(etc_dir, 'supervisor', 'conf.d', '*.conf'),
        os.path.join(etc_dir, 'supervisord.d', '*.conf'),
        os.path.join(etc_dir, 'supervisord.d', '*.ini'),
    ]
    for pattern in patterns:
        candidates.extend(sorted(glob.glob(pattern)))
    return [p for p in candidates if os.path.isfile(p)]


def parse_supervisor_programs(text, pattern='sglang*'):
    """Names of [program:NAME] sections matching pattern in a supervisord config file."""
    names = []
    for m in re.finditer(r'^\s*\[program:([^\]]+)\]', text or '', re.MULTILINE):
        name = m.group(1).strip()
        if fnmatch.fnmatchcase(name, pattern) and name not in names:
            names.append(name)
    return names


def is_supervisord(argv, comm=''):
    """True for a supervisord process: its command name, argv[0] or (a Python entry point) argv[1] is
    ``supervisord``.

    :param argv: list of str, the process's command line.
    :param comm: str, its command name (/proc/<pid>/stat field 2; the script's name for a console script).
    """
    names = [comm or ''] + [os.path.basename(arg) for arg in (argv or [])[:2]]
    return SUPERVISORD_NAME in names


def supervisord_config_path(argv):
    """The configuration file of a supervisord command line (``-c FILE``, ``-cFILE``, ``--configuration FILE`` or
    ``--configuration=FILE``), or None when it names none."""
    argv = list(argv or [])
    for i, arg in enumerate(argv):
        if arg in ('-c', '--configuration') and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith('--configuration='):
            return arg.split('=', 1)[1]
        if arg.startswith('-c') and len(arg) > 2 and not arg.startswith('--'):
            return arg[2:]
    return None


def is_collection_config(text):
    """Whether a supervisord configuration's socket (``file=`` of ``[unix_http_server]``) is the collection's.

    The proof used for a program whose environment cannot be read (another user's process, root without
    CAP_SYS_PTRACE): its parent supervisord reads the collection's configuration.
    """
    section = None
    for line in (text or '').splitlines():
        line = line.split(';', 1)[0].strip()
        if line.startswith('[') and line.endswith(']'):
            section = line[1:-1].strip()
            continue
        key, sep, value = line.partition('=')
        if sep and section == 'unix_http_server' and key.strip() == 'file' and value.strip() == COLLECTION_SUPERVISOR_SOCKET:
            return True
    return False


def collection_program(environ):
    """The supervisord program name when ``environ`` is the environment the collection's supervisord gave a
    program it started (``SUPERVISOR_ENABLED=1`` and ``SUPERVISOR_SERVER_URL`` the collection's socket), else None.

    :param environ: dict of str, a process's initial environment (/proc/<pid>/environ).
    :returns: str (``SUPERVISOR_PROCESS_NAME``, '' when unset) or None.
    """
    environ = environ or {}
    if environ.get('SUPERVISOR_ENABLED') != '1' or environ.get('SUPERVISOR_SERVER_URL') != COLLECTION_SUPERVISOR_URL:
        return None
    return environ.get('SUPERVISOR_PROCESS_NAME', '')
