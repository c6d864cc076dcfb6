# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the small plans that replaced roles' Jinja: cutover_status_router, replica_args, known_good_manifest,
cuda_env_secrets, facts_summary (module_utils/_plans)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._plans.cuda_env import cuda_env_secrets
from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover import cutover_status_router
from ansible_collections.inferops.sglang.plugins.module_utils._plans.facts import facts_summary
from ansible_collections.inferops.sglang.plugins.module_utils._plans.inventory import replica_args
from ansible_collections.inferops.sglang.plugins.module_utils._plans.known_good import known_good_manifest


@pytest.mark.parametrize('result, router_url, routed, node_rank, expected', [
    ({'present': True}, '', False, 0, {}),
    ({'present': True}, '  ', True, 0, {}),
    ({'skipped': True}, 'http://r:30000', False, 1, {'routed': False, 'why': 'not routed (node rank 1)'}),
    ({'present': True, 'healthy': True}, 'http://r:30000', True, 0, {'present': True, 'healthy': True, 'routed': True}),
    (None, 'http://r:30000', 'yes', 0, {'routed': True}),
])
def test_cutover_status_router(result, router_url, routed, node_rank, expected):
    assert cutover_status_router(result, router_url, routed, node_rank) == expected


HOSTVARS = {'h1': {'ansible_host': '10.0.0.1'}, 'h2': {'ansible_host': 'fd00:10::2'},
            'h6': {'service_replica_address': 'fd00:10::1', 'ansible_host': '10.0.0.6'}, 'n1': {}}


@pytest.mark.parametrize('hosts, host, expected', [
    ([], 'h1', {}),
    (None, 'h1', {}),
    (['h1'], 'h1', {}),
    (['h1', 'h2'], 'h2', {'nnodes': 2, 'node-rank': 1, 'dist-init-addr': '10.0.0.1:5000'}),
    (['h1', 'h2'], 'x', {'nnodes': 2, 'node-rank': -1, 'dist-init-addr': '10.0.0.1:5000'}),
    # C44: IPv6 in brackets; service_replica_address wins over ansible_host; a name without either is the address
    (['h2', 'h1'], 'h1', {'nnodes': 2, 'node-rank': 1, 'dist-init-addr': '[fd00:10::2]:5000'}),
    (['h6', 'h1', 'h2'], 'h6', {'nnodes': 3, 'node-rank': 0, 'dist-init-addr': '[fd00:10::1]:5000'}),
    (['n1', 'h1'], 'n1', {'nnodes': 2, 'node-rank': 0, 'dist-init-addr': 'n1:5000'}),
])
def test_replica_args(hosts, host, expected):
    assert replica_args(hosts, host, HOSTVARS, 5000) == expected


def test_known_good_manifest_defaults_and_precedence():
    files = [{'src': '/etc/systemd/system/sglang.service', 'mode': '0644'},
             {'src': '/etc/sglang/sglang.env', 'mode': '0600', 'owner': 'sglang', 'group': 'gpu'}]
    assert known_good_manifest(files, {}, 'T') == {
        'schema': 1, 'source': 'cutover', 'unit': '', 'manager': 'systemd', 'command': [],
        'files': ['/etc/systemd/system/sglang.service', '/etc/sglang/sglang.env'],
        'file_modes': [files[1]], 'pid': None, 'time_to_healthy': None, 'dark_window': None, 'sitecustomize': None,
        'sitecustomize_block': '', 'saved_at': 'T'}
    manifest = known_good_manifest(None, {'source': 'hand-started', 'unit': 'u', 'files': ['/x'], 'schema': 7,
                                          'saved_at': 'old', 'record': {'boot': True}}, 'T')
    assert (manifest['source'], manifest['unit'], manifest['files'], manifest['schema'], manifest['saved_at'],
            manifest['record']) == ('hand-started', 'u', ['/x'], 1, 'T', {'boot': True})


@pytest.mark.parametrize('settings, expected', [
    ({}, []),
    ({'cuda_env_variables': {'CUDA_VISIBLE_DEVICES': '0'}, 'cuda_env_nccl': {}, 'cuda_env_extra': {}}, []),
    ({'cuda_env_variables': {'HF_TOKEN': 'x'}, 'cuda_env_nccl': {'NCCL_DEBUG': 'INFO'},
      'cuda_env_extra': {'HTTPS_PROXY': 'http://u:pw@proxy:3128'}},
     ['cuda_env_variables.HF_TOKEN', 'cuda_env_extra.HTTPS_PROXY']),
])
def test_cuda_env_secrets(settings, expected):
    assert cuda_env_secrets(settings) == expected


def test_cuda_env_secrets_refuses_a_setting_that_is_no_mapping():
    with pytest.raises(TypeError, match='^cuda_env_nccl: '):
        cuda_env_secrets({'cuda_env_nccl': ['NCCL_DEBUG=INFO']})


FACTS = {'init': {'system': 'systemd', 'pid1': 'systemd', 'systemd_version': 252, 'container': 'docker'},
         'gpu_count': 8, 'interconnect': 'nvlink', 'driver_version': '550.1', 'cuda_driver_version': '12.4',
         'cuda': {'home': '/usr/local/cuda'},
         'python': {'executable': '/v/bin/python3', 'sglang_version': '0.5.23', 'torch_version': '2.8',
                    'torch_cuda_version': '12.8', 'sitecustomize': {'realpath': '/a/sitecustomize.py', 'candidate': '/b'},
                    'pythonpath': '/p', 'pythonpath_from': 'env'},
         'servers': [{}, {}], 'strays': [{}], 'endpoint': {'health_status': 200}}
BARE = {'init': {'system': 'none', 'pid1': 'sh', 'systemd_version': None, 'container': 'none'}, 'gpu_count': 0,
        'interconnect': 'none', 'driver_version': '', 'cuda_driver_version': None, 'cuda': {'home': ''},
        'python': {'executable': '/usr/bin/python3', 'sglang_version': None, 'torch_version': '',
                   'torch_cuda_version': None, 'sitecustomize': {'realpath': '', 'candidate': '/c/sitecustomize.py'},
                   'pythonpath': ''},
        'servers': [], 'strays': [], 'endpoint': {'health_status': None}}


@pytest.mark.parametrize('facts, expected', [
    (FACTS, ['init: systemd (PID 1: systemd, systemd 252, container: docker)',
             'GPUs: 8 (nvlink, driver 550.1 up to CUDA 12.4); CUDA_HOME candidate: /usr/local/cuda',
             'python: /v/bin/python3 (sglang 0.5.23, torch 2.8 built with CUDA 12.8); sitecustomize: /a/sitecustomize.py'
             ' (PYTHONPATH /p from env)',
             'servers: 2 (1 stray); endpoint 127.0.0.1:30000 /health: 200']),
    (BARE, ['init: none (PID 1: sh, systemd -, container: none)',
            'GPUs: 0 (none); CUDA_HOME candidate: none',
            'python: /usr/bin/python3 (sglang not installed, torch not installed); sitecustomize: none, a new one goes to'
            ' /c/sitecustomize.py',
            'servers: 0 (0 stray); endpoint 127.0.0.1:30000 /health: no answer']),
    (dict(FACTS, cuda_driver_version=''), ['init: systemd (PID 1: systemd, systemd 252, container: docker)',
                                           'GPUs: 8 (nvlink, driver 550.1 up to CUDA -); CUDA_HOME candidate: /usr/local/cuda',
                                           'python: /v/bin/python3 (sglang 0.5.23, torch 2.8 built with CUDA 12.8); '
                                           'sitecustomize: /a/sitecustomize.py (PYTHONPATH /p from env)',
                                           'servers: 2 (1 stray); endpoint 127.0.0.1:30000 /health: 200']),
])
def test_facts_summary(facts, expected):
    assert facts_summary(facts, '127.0.0.1', 30000) == expected
