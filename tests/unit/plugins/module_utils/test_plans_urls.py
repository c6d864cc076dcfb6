# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one URL rule (module_utils/_plans/urls.py, _http.host_port): worker URLs, probe and router addresses,
the host:port join of --dist-init-addr. Field case C44 is here."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _http
from ansible_collections.inferops.sglang.plugins.module_utils._plans import urls


# ---- host_port: the one host:port join -------------------------------------------------------------

@pytest.mark.parametrize('host, port, expected', [
    ('10.0.0.1', 5000, '10.0.0.1:5000'),
    ('fd00:10::1', 5000, '[fd00:10::1]:5000'),
    ('[fd00:10::1]', '5000', '[fd00:10::1]:5000'),
    ('::1', 30000, '[::1]:30000'),
    ('gpu-01.example', 30000, 'gpu-01.example:30000'),
    (' gpu-01 ', 30000, 'gpu-01:30000'),
])
def test_host_port(host, port, expected):
    assert _http.host_port(host, port) == expected


@pytest.mark.parametrize('host, port, error', [
    ('gpu1', 0, ValueError),
    ('gpu1', 65536, ValueError),
    ('', 5000, ValueError),
    ('[]', 5000, ValueError),
    (None, 5000, ValueError),
    ('gpu1', 'x', ValueError),
    ('gpu1', None, TypeError),
])
def test_host_port_rejects(host, port, error):
    with pytest.raises(error):
        _http.host_port(host, port)


# ---- server_endpoint: port from flags, else --config, else 30000; https with ssl-certfile -------------------

@pytest.mark.parametrize('args, config, expected', [
    ({}, None, {'port': 30000, 'scheme': 'http'}),
    (None, None, {'port': 30000, 'scheme': 'http'}),
    ({'port': 31000}, None, {'port': 31000, 'scheme': 'http'}),
    ({'port': '31000'}, None, {'port': 31000, 'scheme': 'http'}),
    ({'--port': 31001}, 'port: 31000\n', {'port': 31001, 'scheme': 'http'}),
    ({'config': '/etc/sglang/c.yaml'}, 'port: 31000\n', {'port': 31000, 'scheme': 'http'}),
    ({'config': '/etc/sglang/c.yaml'}, {'port': 31000}, {'port': 31000, 'scheme': 'http'}),
    ({'config': '/etc/sglang/c.yaml'}, 'model-path: /m\n', {'port': 30000, 'scheme': 'http'}),
    ({'ssl-certfile': '/etc/tls/c.pem'}, None, {'port': 30000, 'scheme': 'https'}),
    ({'ssl_certfile': '/etc/tls/c.pem', 'port': 30443}, None, {'port': 30443, 'scheme': 'https'}),
    ({'config': 'c.yaml'}, 'port: 30443\nssl-certfile: /etc/tls/c.pem\n', {'port': 30443, 'scheme': 'https'}),
    ({'ssl-certfile': ''}, 'ssl-certfile: /etc/tls/c.pem\n', {'port': 30000, 'scheme': 'http'}),
    (['--model-path', '/m', '--port', '31000', '--ssl-certfile=/c.pem'], None, {'port': 31000, 'scheme': 'https'}),
    (['--model-path', '/m', '--config', 'c.yaml'], 'port: 31000\n', {'port': 31000, 'scheme': 'http'}),
])
def test_server_endpoint(args, config, expected):
    assert urls.server_endpoint(args, config) == expected


@pytest.mark.parametrize('args, error', [
    ({'port': 'http'}, ValueError),
    ({'port': 0}, ValueError),
    ({'port': 70000}, ValueError),
    ('--port 31000', TypeError),
])
def test_server_endpoint_rejects(args, error):
    with pytest.raises(error):
        urls.server_endpoint(args)


# ---- worker_url -----------------------------------------------------------------------------------------

@pytest.mark.parametrize('host, port, scheme, url, expected', [
    ('gpu1', 30000, 'http', '', 'http://gpu1:30000'),
    ('gpu1', '31000', 'http', None, 'http://gpu1:31000'),
    ('10.0.0.5', 30000, 'http', '', 'http://10.0.0.5:30000'),
    ('fd00:10::1', 30000, 'http', '', 'http://[fd00:10::1]:30000'),
    ('[fd00:10::1]', 31000, 'https', '', 'https://[fd00:10::1]:31000'),
    ('gpu1.example', 30443, 'https', '', 'https://gpu1.example:30443'),
    ('gpu1', 30000, 'http', 'http://10.0.0.5:30000', 'http://10.0.0.5:30000'),
])
def test_worker_url(host, port, scheme, url, expected):
    assert urls.worker_url(host, port, scheme, url) == expected


def test_worker_url_default_port_and_scheme():
    assert urls.worker_url('gpu1') == 'http://gpu1:30000'


@pytest.mark.parametrize('host, port, scheme', [
    ('gpu1', 30000, 'ftp'),
    ('gpu1', 0, 'http'),
    ('', 30000, 'http'),
])
def test_worker_url_rejects(host, port, scheme):
    with pytest.raises(ValueError):
        urls.worker_url(host, port, scheme)


# ---- worker_urls: a router's list -------------------------------------------------------------------------

def test_worker_urls_lists_rank0_of_a_replica_once():
    hostvars = {
        'a': {'service_server_args': {'port': 31000}},
        'r0': {'service_replica_group': 'big', 'groups': {'big': ['r0', 'r1']}},
        'r1': {'service_replica_group': 'big', 'groups': {'big': ['r0', 'r1']}},
        'b': {'inferops_sglang_worker_url': 'http://10.0.0.5:30000'},
        'c': {'service_server_args': {'ssl-certfile': '/c.pem'}},
    }
    assert urls.worker_urls(['a', 'r1', 'r0', 'b', 'c'], hostvars) == [
        'http://a:31000', 'http://r0:30000', 'http://10.0.0.5:30000', 'https://c:30000']


def test_worker_urls_names_the_host_with_a_bad_port():
    with pytest.raises(ValueError, match='^gpu2: '):
        urls.worker_urls(['gpu1', 'gpu2'], {'gpu2': {'service_server_args': {'port': 'x'}}})


def test_worker_urls_of_hosts_without_variables():
    assert urls.worker_urls(['gpu1'], {}) == ['http://gpu1:30000']
    assert urls.worker_urls([], {}) == []


# ---- worker_config_paths: which --config files the router reads ----------------------------------------------

def test_worker_config_paths():
    hostvars = {
        'abs': {'service_server_args': {'config': '/etc/sglang/c.yaml'}},
        'rel': {'service_server_args': {'config': 'c.yaml'}},
        'rel_user': {'service_server_args': {'--config': 'c.yaml'}, 'service_user': 'sglang'},
        'rel_cache': {'service_server_args': {'config': 'c.yaml'}, 'service_user': 'sglang', 'service_cache_dir': '/srv/c'},
        'rel_wd': {'service_server_args': {'config': 'sub/c.yaml'}, 'service_working_directory': '/srv/sglang/'},
        'none': {'service_server_args': {'port': 31000}},
        'empty': {'service_server_args': {'config': ''}},
    }
    assert urls.worker_config_paths(['abs', 'rel', 'rel_user', 'rel_cache', 'rel_wd', 'none', 'empty', 'unknown'],
                                    hostvars) == [
        {'host': 'abs', 'path': '/etc/sglang/c.yaml'},
        {'host': 'rel', 'path': '/root/c.yaml'},
        {'host': 'rel_user', 'path': '/var/cache/sglang/c.yaml'},
        {'host': 'rel_cache', 'path': '/srv/c/c.yaml'},
        {'host': 'rel_wd', 'path': '/srv/sglang/sub/c.yaml'},
    ]


# ---- router_scheme / router_url ---------------------------------------------------------------------------

@pytest.mark.parametrize('args, expected', [
    ({}, 'http'),
    ({'tls-cert-path': '/c.pem'}, 'https'),
    ({'tls_cert_path': '/c.pem'}, 'https'),
    ({'--tls-cert-path': '/c.pem'}, 'https'),
    ({'tls-cert-path': ''}, 'http'),
    ({'tls-key-path': '/k.pem'}, 'http'),
    (['--tls-cert-path', '/c.pem'], 'https'),
])
def test_router_scheme(args, expected):
    assert urls.router_scheme(args) == expected


@pytest.mark.parametrize('hosts, hostvars, expected', [
    ([], {}, ''),
    (['router1'], {}, 'http://router1:30000'),
    (['router1', 'router2'], {'router1': {'ansible_host': '10.0.0.9', 'router_port': 8080}}, 'http://10.0.0.9:8080'),
    (['r'], {'r': {'ansible_host': 'fd00:10::9'}}, 'http://[fd00:10::9]:30000'),
    (['r'], {'r': {'router_args': {'tls-cert-path': '/c.pem'}, 'router_port': '30443'}}, 'https://r:30443'),
])
def test_router_url(hosts, hostvars, expected):
    assert urls.router_url(hosts, hostvars) == expected


# ---- probe address (the modules' rule, _http.base_url) ----------------------------------------------------

@pytest.mark.parametrize('bind, expected', [
    ('0.0.0.0', 'http://127.0.0.1:31000'),
    ('::', 'http://[::1]:31000'),
    ('fd00:10::1', 'http://[fd00:10::1]:31000'),
    ('[fd00:10::1]', 'http://[fd00:10::1]:31000'),
    ('gpu1', 'http://gpu1:31000'),
])
def test_probe_address(bind, expected):
    assert _http.base_url(bind, 31000) == expected


# ---- field case C44 ----------------------------------------------------------------------------------------

def test_c44_ipv6_replica_router_and_port_only_in_config():
    """A 2-node replica on fd00:10::1 / fd00:10::2, the router at fd00:10::9, a server whose port is set only in its
    --config file (31000): --dist-init-addr [fd00:10::1]:5000, router URL http://[fd00:10::9]:30000, and the router
    role's worker list equals the cutover's worker URL of every server, port 31000 included."""
    replica = {'service_replica_group': 'big', 'groups': {'big': ['fd00:10::1', 'fd00:10::2']}}
    hostvars = {
        'fd00:10::1': dict(replica),
        'fd00:10::2': dict(replica),
        'gpu-cfg': {'service_server_args': {'model-path': '/m', 'config': '/etc/sglang/server.yaml'}},
        'fd00:10::9': {},
    }
    configs = {'gpu-cfg': 'model-path: /m\nport: 31000\n'}
    servers = ['fd00:10::1', 'fd00:10::2', 'gpu-cfg']

    # The replica's --dist-init-addr (service role: rank 0's address and service_dist_init_port).
    assert _http.host_port('fd00:10::1', 5000) == '[fd00:10::1]:5000'
    # The cutover's router URL.
    assert urls.router_url(['fd00:10::9'], hostvars) == 'http://[fd00:10::9]:30000'

    # What the router role lists (it reads the --config files the rule names) ...
    assert urls.worker_config_paths(servers, hostvars) == [{'host': 'gpu-cfg', 'path': '/etc/sglang/server.yaml'}]
    listed = urls.worker_urls(servers, hostvars, configs)
    assert listed == ['http://[fd00:10::1]:30000', 'http://gpu-cfg:31000']

    # ... is what each server's cutover drains and registers: the service's port and scheme of the same file.
    cutover = []
    for host in ('fd00:10::1', 'gpu-cfg'):
        endpoint = urls.server_endpoint(hostvars[host].get('service_server_args', {}), configs.get(host))
        cutover.append(urls.worker_url(host, endpoint['port'], endpoint['scheme'], ''))
    assert cutover == listed
