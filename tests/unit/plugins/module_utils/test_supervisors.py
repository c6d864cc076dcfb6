# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_supervisors.py: systemctl and supervisorctl output, service states,
unit files and supervisord configurations."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils.fake_files import write
from ansible_collections.inferops.sglang.plugins.module_utils import _supervisors
from ansible_collections.inferops.sglang.plugins.module_utils._supervisors import (
    find_supervisor_configs,
    find_unit_files,
    parse_supervisor_programs,
    parse_supervisorctl_status,
    parse_systemctl_show,
    parse_systemctl_show_units,
    service_active,
)


def test_find_unit_files_and_systemctl_show(tmp_path):
    etc = tmp_path / 'etc' / 'systemd' / 'system'
    lib = tmp_path / 'lib' / 'systemd' / 'system'
    write(etc / 'sglang.service', '[Service]\n')
    write(etc / 'sglang-router.service', '[Service]\n')
    (etc / 'sglang.service.d').mkdir()
    write(etc / 'ssh.service', '[Service]\n')
    os.symlink('/dev/null', str(etc / 'sglang-old.service'))
    write(lib / 'sglang@.service', '[Service]\n')
    os.symlink(str(lib), str(tmp_path / 'usrlib'))  # /usr/lib/systemd/system as a second name
    units = find_unit_files([str(etc), str(lib), str(tmp_path / 'usrlib'), str(tmp_path / 'missing')],
                            'sglang*.service')
    assert units == [
        {'name': 'sglang-old.service', 'path': str(etc / 'sglang-old.service')},
        {'name': 'sglang-router.service', 'path': str(etc / 'sglang-router.service')},
        {'name': 'sglang.service', 'path': str(etc / 'sglang.service')},
        {'name': 'sglang@.service', 'path': str(lib / 'sglang@.service')},
    ]
    show = 'Id=sglang.service\nActiveState=active\n\nId=sglang-router.service\nActiveState=inactive\n'
    assert parse_systemctl_show_units(show) == [{'Id': 'sglang.service', 'ActiveState': 'active'},
                                                {'Id': 'sglang-router.service', 'ActiveState': 'inactive'}]


def test_supervisor_configs_and_programs(tmp_path):
    etc = tmp_path / 'etc'
    write(etc / 'supervisor' / 'supervisord.conf', '[supervisord]\n[include]\nfiles = /etc/supervisor/conf.d/*.conf\n')
    write(etc / 'supervisor' / 'conf.d' / 'sglang.conf',
          '[program:sglang]\ncommand=/root/ml-env/bin/python3 -m sglang.launch_server\n'
          '[program:sglang-router]\ncommand=x\n  [program:nginx]\ncommand=y\n')
    write(etc / 'supervisor' / 'conf.d' / 'notes.txt', '[program:sglang-ignored]\n')
    configs = find_supervisor_configs(str(etc))
    assert configs == [str(etc / 'supervisor' / 'supervisord.conf'), str(etc / 'supervisor' / 'conf.d' / 'sglang.conf')]
    with open(configs[1]) as f:
        assert parse_supervisor_programs(f.read(), 'sglang*') == ['sglang', 'sglang-router']
    assert parse_supervisor_programs('', 'sglang*') == []
    assert find_supervisor_configs(str(tmp_path / 'nothing')) == []


def test_parse_systemctl_show():
    props = parse_systemctl_show("ActiveState=active\nSubState=running\nMainPID=42\nNRestarts=0\nResult=success\n")
    assert props == {"ActiveState": "active", "SubState": "running", "MainPID": 42, "NRestarts": 0, "Result": "success"}


def test_parse_systemctl_show_units_converts_like_one_unit():
    show = 'Id=a.service\nMainPID=7\n\n\nId=b.service\nMainPID=x\n'
    assert parse_systemctl_show_units(show) == [{'Id': 'a.service', 'MainPID': 7}, {'Id': 'b.service', 'MainPID': None}]
    assert parse_systemctl_show_units('') == []


@pytest.mark.parametrize("line, state, pid", [
    ("sglang                           RUNNING   pid 123, uptime 0:00:12", "RUNNING", 123),
    ("sglang                           STARTING  ", "STARTING", None),
    ("sglang                           BACKOFF   Exited too quickly (process log may have details)", "BACKOFF", None),
    ("sglang                           FATAL     Exited too quickly (process log may have details)", "FATAL", None),
    ("sglang: ERROR (no such process)", "ERROR", None),
    ("", "UNKNOWN", None),
])
def test_parse_supervisorctl_status(line, state, pid):
    status = parse_supervisorctl_status(line)
    assert status["state"] == state and status["pid"] == pid


@pytest.mark.parametrize('state, manager, active', [
    ('active', 'systemd', True), ('activating', 'systemd', True), ('reloading', 'systemd', True),
    ('inactive', 'systemd', False), ('failed', 'systemd', False), ('deactivating', 'systemd', False),
    ('RUNNING', 'supervisord', True), ('STARTING', 'supervisord', True), ('BACKOFF', 'supervisord', False),
    ('FATAL', 'supervisord', False), ('STOPPED', 'supervisord', False), ('running', 'supervisord', False),
    ('active', 'supervisord', False), ('RUNNING', 'systemd', False),
])
def test_service_active(state, manager, active):
    assert service_active(state, manager) is active


def test_service_active_unknown_manager():
    with pytest.raises(ValueError, match='manager'):
        service_active('active', 'openrc')


def test_collection_supervisor_socket_is_the_service_roles():
    """C15: the socket by which servers under the collection's supervisord are recognised is the one the service
    role configures (a change on one side must reach the other)."""
    from ansible_collections.inferops.sglang.plugins.module_utils import _supervisors
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
    from ansible_collections.inferops.sglang.plugins.module_utils._plans import service
    assert service.SUPERVISOR_SOCKET == _supervisors.COLLECTION_SUPERVISOR_SOCKET
    with open(os.path.join(repo, 'roles', 'service', 'templates', 'supervisord.conf.j2')) as f:
        assert 'file={{ _service_render.supervisor_socket | inferops.sglang.supervisor_value }}' in f.read()


@pytest.mark.parametrize('argv, comm, expected', [
    (['/opt/inferops-sglang/supervisor/bin/python3', '/opt/inferops-sglang/supervisor/bin/supervisord', '-c', 'x'],
     'supervisord', True),
    (['/usr/bin/supervisord', '-n'], 'supervisord', True),
    (['/usr/bin/python3', '/usr/bin/supervisord'], 'python3', True),
    (['/usr/bin/supervisorctl', 'status'], 'supervisorctl', False),
    (['/bin/sh', '-c', 'supervisord'], 'sh', False),
])
def test_is_supervisord(argv, comm, expected):
    """C15."""
    from ansible_collections.inferops.sglang.plugins.module_utils._supervisors import is_supervisord
    assert is_supervisord(argv, comm) is expected


def test_collection_program():
    """C15: only the environment the collection's supervisord gives its programs."""
    from ansible_collections.inferops.sglang.plugins.module_utils._supervisors import collection_program
    env = {'SUPERVISOR_ENABLED': '1', 'SUPERVISOR_SERVER_URL': 'unix:///run/inferops-sglang-supervisor.sock',
           'SUPERVISOR_PROCESS_NAME': 'sglang'}
    assert collection_program(env) == 'sglang'
    assert collection_program(dict(env, SUPERVISOR_SERVER_URL='unix:///var/run/supervisor.sock')) is None
    assert collection_program(dict(env, SUPERVISOR_ENABLED='0')) is None
    assert collection_program(None) is None


@pytest.mark.parametrize('argv, path', [
    (['supervisord', '-c', '/etc/a.conf'], '/etc/a.conf'),
    (['python3', '/opt/x/bin/supervisord', '-c/etc/b.conf'], '/etc/b.conf'),
    (['supervisord', '--configuration', 'c.conf'], 'c.conf'),
    (['supervisord', '--configuration=/etc/d.conf', '-n'], '/etc/d.conf'),
    (['supervisord', '-n'], None),
])
def test_supervisord_config_path(argv, path):
    assert _supervisors.supervisord_config_path(argv) == path


def test_is_collection_config_reads_the_unix_http_server_socket():
    assert _supervisors.is_collection_config('[unix_http_server]\nfile=/run/inferops-sglang-supervisor.sock\n')
    assert not _supervisors.is_collection_config('[supervisorctl]\nfile=/run/inferops-sglang-supervisor.sock\n')
    assert not _supervisors.is_collection_config('[unix_http_server]\nfile=/run/supervisor.sock\n')
    assert not _supervisors.is_collection_config(None)


@pytest.mark.parametrize('status,reading', [
    # ansible.builtin.systemd_service's status (text), as the cutover's own read returns it.
    ({'ActiveState': 'active', 'MainPID': '4242', 'NRestarts': '2', 'SubState': 'running'},
     {'active': True, 'state': 'active', 'pid': 4242, 'restarts': 2, 'baseline': {'MainPID': 4242, 'NRestarts': 2}}),
    # The service pre-flight's unit.status of a unit that failed, and of one on its way up.
    ({'LoadState': 'loaded', 'ActiveState': 'failed', 'SubState': 'failed', 'MainPID': '0', 'NRestarts': '5'},
     {'active': False, 'state': 'failed', 'pid': 0, 'restarts': 5, 'baseline': {'MainPID': 0, 'NRestarts': 5}}),
    ({'ActiveState': 'activating', 'MainPID': 17},
     {'active': True, 'state': 'activating', 'pid': 17, 'restarts': 0, 'baseline': {'MainPID': 17, 'NRestarts': 0}}),
    # Nothing read: a stopped unit with no process (the cutover starts it).
    ({}, {'active': False, 'state': 'inactive', 'pid': 0, 'restarts': 0, 'baseline': {'MainPID': 0, 'NRestarts': 0}}),
    (None, {'active': False, 'state': 'inactive', 'pid': 0, 'restarts': 0, 'baseline': {'MainPID': 0, 'NRestarts': 0}}),
])
def test_systemd_reading_is_what_the_cutover_keeps_of_a_unit(status, reading):
    assert _supervisors.systemd_reading(status) == reading


def test_systemd_reading_reads_a_pid_that_is_no_number_as_zero():
    """As the Jinja it replaced (``MainPID | int``): junk is 0, never a failed decision."""
    assert _supervisors.systemd_reading({'ActiveState': 'active', 'MainPID': 'n/a', 'NRestarts': '4.0'})['baseline'] == {
        'MainPID': 0, 'NRestarts': 0}
