# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The router role's plan (module_utils/_plans/router.py): its values and every problem it can report."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._plans.router import router_plan

BASE = {
    'host': '0.0.0.0', 'port': 30000, 'policy': 'cache_aware', 'args': {}, 'venv': '/opt/inferops-sglang/router',
    'python': '/usr/bin/python3', 'version': '0.3.2', 'secrets_file': '/etc/sglang-router/secrets.json',
    'ca_path': '', 'user': 'sglang-router', 'group': 'sglang-router', 'service_name': 'sglang-router',
    'worker_urls': ['http://gpu-01:30000', 'http://[fd00:10::1]:31000'], 'api_key': '', 'worker_api_key': '',
    'control_plane_api_keys': [], 'name': 'router-01', 'worker_hosts': ['gpu-01'], 'worker_configs': {},
}
HOSTVARS = {'router-01': {'service_server_args': {'model-path': '/m', 'config': '/etc/sglang/server.yaml'}}}
ADMIN = {'id': 'cp1', 'name': 'ansible', 'role': 'admin', 'key': 'cp-Secret-1'}


def plan(hostvars=None, **changes):
    inputs = dict(BASE)
    inputs.update(changes)
    return router_plan(inputs, HOSTVARS if hostvars is None else hostvars)


def test_values():
    p = plan(port='30000', args={'tls_cert_path': '/etc/tls/c.pem', 'ca-cert-paths': ['/etc/tls/ca.pem', 'rel.pem'],
                                 'retry-max-retries': 3})
    assert p['problems'] == []
    assert p['unit'] == 'sglang-router.service'
    assert p['unit_path'] == '/etc/systemd/system/sglang-router.service'
    assert p['scheme'] == 'https'
    assert p['url'] == 'https://127.0.0.1:30000'
    assert p['python'] == '/opt/inferops-sglang/router/bin/python'
    assert p['argv'][:6] == ['--host', '0.0.0.0', '--port', '30000', '--policy', 'cache_aware']
    assert '--retry-max-retries' in p['argv'] and '--tls-cert-path' in p['argv']
    assert p['file_args'] == ['/etc/tls/c.pem', '/etc/tls/ca.pem']
    assert p['capabilities'] == []
    assert p['workers'] == BASE['worker_urls']


@pytest.mark.parametrize('host, port, expected', [
    ('::', 8080, 'http://[::1]:8080'),
    ('fd00:10::9', 30000, 'http://[fd00:10::9]:30000'),
    ('10.0.0.9', 443, 'http://10.0.0.9:443'),
])
def test_url_and_capabilities(host, port, expected):
    p = plan(host=host, port=port)
    assert p['url'] == expected
    assert p['capabilities'] == (['CAP_NET_BIND_SERVICE'] if port < 1024 else [])


def test_keys_are_never_in_the_plan():
    p = plan(api_key='rk-Secret-2', control_plane_api_keys=[ADMIN, dict(ADMIN, id='cp2', role='user', key='x y')])
    assert len(p['problems']) == 1
    text = repr(p)
    assert 'cp-Secret-1' not in text and 'rk-Secret-2' not in text and 'x y' not in text
    assert 'The ids given: cp1, cp2; their roles: admin, user.' in p['problems'][0]


@pytest.mark.parametrize('changes, words', [
    ({'port': 0}, 'router_port must be a TCP port'),
    ({'port': 'x'}, 'router_port must be a TCP port'),
    ({'venv': 'opt/router'}, 'router_venv, router_python and router_secrets_file absolute paths'),
    ({'python': ''}, 'router_venv, router_python and router_secrets_file absolute paths'),
    ({'secrets_file': 'secrets.json'}, 'router_secrets_file absolute paths'),
    ({'version': ''}, 'router_port must be a TCP port'),
    ({'policy': 'least_load'}, 'router_policy one of random, round_robin'),
    ({'args': {'host': '::'}}, 'not router_args'),
    ({'args': {'worker_urls': ['http://a:1']}}, 'not router_args'),
    ({'ca_path': 'ca.pem'}, 'router_ca_path empty or an absolute path'),
    ({'user': ''}, 'router_user and router_group not empty'),
    ({'args': {'api-key': 'k'}}, 'router_args sets api-key; secrets never go into argv'),
    ({'args': {'redis-url': 'redis://:pw@h'}}, 'router_args sets redis-url'),
    ({'api_key': 'a b'}, 'router_api_key and router_worker_api_key are strings without whitespace'),
    ({'worker_api_key': 5}, 'router_api_key and router_worker_api_key are strings without whitespace'),
    ({'control_plane_api_keys': [dict(ADMIN, id='-x')]}, "id not starting with '-'"),
    ({'control_plane_api_keys': [dict(ADMIN, id='a:b')]}, 'The ids given: a:b'),
    ({'control_plane_api_keys': [dict(ADMIN, name='')]}, 'id and name not empty'),
    ({'control_plane_api_keys': [ADMIN, dict(ADMIN, id='cp2', role='root')]}, 'their roles: admin, root.'),
    ({'control_plane_api_keys': [dict(ADMIN, key='')]}, 'key not empty and without whitespace'),
    ({'control_plane_api_keys': [dict(ADMIN, id=1)]}, 'each a string'),
    ({'control_plane_api_keys': [ADMIN, ADMIN]}, 'ids unique'),
    ({'control_plane_api_keys': [dict(ADMIN, role='user')]}, 'has no key with the role admin'),
    ({'worker_urls': ['http://gpu-01:30000/v1']}, 'router_worker_urls must be http(s)://host:port URLs without a path'),
    ({'worker_urls': ['gpu-01:30000']}, 'router_worker_urls must be'),
    ({'worker_urls': ['http://']}, 'router_worker_urls must be'),
    ({'worker_hosts': ['gpu-01', 'router-01']}, 'this host also runs an SGLang server on port 30000'),
    ({'port': 31000, 'worker_hosts': ['router-01'], 'worker_configs': {'router-01': 'port: 31000\n'}},
     'also runs an SGLang server on port 31000'),
])
def test_each_problem(changes, words):
    p = plan(**changes)
    assert len(p['problems']) == 1, p['problems']
    assert words in p['problems'][0]
    assert p['argv'] == []


def test_no_admin_key_needed_without_workers_or_keys():
    assert plan(worker_urls=[], control_plane_api_keys=[dict(ADMIN, role='user')])['problems'] == []
    assert plan(control_plane_api_keys=[])['problems'] == []


@pytest.mark.parametrize('changes', [
    {'worker_configs': {'router-01': 'port: 31000\n'}},   # its server's port is in its --config file
    {'port': 31000},
    {'name': None},
])
def test_a_server_of_this_host_on_another_port(changes):
    changes.setdefault('worker_hosts', ['gpu-01', 'router-01'])
    assert plan(**changes)['problems'] == []


def test_a_server_of_this_host_without_hostvars():
    assert plan(hostvars={}, worker_hosts=['router-01'], port=31000)['problems'] == []
    assert 'port 30000' in plan(hostvars={}, worker_hosts=['router-01'])['problems'][0]


def test_every_problem_at_once():
    p = plan(port=0, args={'api-key': 'k'}, api_key='a b', worker_urls=['x'])
    assert len(p['problems']) == 4


def test_refuses_what_is_not_a_mapping():
    with pytest.raises(TypeError):
        router_plan(['host'])


@pytest.mark.parametrize('version, generation, requirement, module', [
    ('0.3.2', 'sglang-router', 'sglang-router==0.3.2', 'sglang_router.launch_router'),
    ('1.13.0', 'smg', 'smg==1.13.0', 'smg.launch_router'),
])
def test_the_version_picks_the_package_c42(version, generation, requirement, module):
    """C42: router_version 1.13.0 installs smg and starts it through its own module; 0.3.2 still sglang-router."""
    p = plan(version=version)
    assert p['problems'] == []
    assert (p['generation'], p['requirement'], p['launch_module']) == (generation, requirement, module)
    assert p['package'] == requirement.split('==')[0]


def test_a_version_of_neither_router_is_a_problem():
    p = plan(version='0.3.7')
    assert len(p['problems']) == 1 and 'smg starts at 0.4' in p['problems'][0]


@pytest.mark.parametrize('args, expected', [({}, 195), ({'shutdown-grace-period-secs': 300}, 315)])
def test_the_unit_outwaits_the_graceful_shutdown(args, expected):
    """The unit's TimeoutStopSec= is never shorter than the router's drain on shutdown (180 s by default)."""
    assert plan(args=args)['timeout_stop_sec'] == expected


def test_a_grace_period_that_is_no_number_is_a_problem():
    p = plan(args={'shutdown-grace-period-secs': 'long'})
    assert p['timeout_stop_sec'] == 0 and 'shutdown-grace-period-secs' in p['problems'][0]
