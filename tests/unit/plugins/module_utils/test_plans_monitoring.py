# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils _plans/monitoring: the Prometheus file_sd targets the fleet role writes (issue 30, item 5)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._plans.monitoring import prometheus_targets

METRICS = {'model-path': '/models/Qwen3-8B', 'enable-metrics': True}


@pytest.mark.parametrize('hostvars, expected', [
    # metrics off (the default): nothing to scrape, so nothing is listed (it would only ever be "down")
    ({'gpu1': {'service_server_args': {'model-path': '/m'}}}, []),
    ({'gpu1': {'service_server_args': {'model-path': '/m', 'enable-metrics': False}}}, []),
    ({'gpu1': {}}, []),
    # on: inventory name, the server's port, the model path, the pinned version
    ({'gpu1': {'service_server_args': dict(METRICS, port=31000), 'service_sglang_version': '0.5.9'}},
     [{'targets': ['gpu1:31000'],
       'labels': {'host': 'gpu1', 'model': '/models/Qwen3-8B', 'version': '0.5.9', 'role': 'worker'}}]),
    # underscores, a served model name, the default port, no pinned version, a text "true"
    ({'gpu1': {'service_server_args': {'enable_metrics': 'true', 'served_model_name': 'qwen', 'model_path': '/m'}}},
     [{'targets': ['gpu1:30000'], 'labels': {'host': 'gpu1', 'model': 'qwen', 'version': 'unknown', 'role': 'worker'}}]),
    # TLS: the scheme goes with the target
    ({'gpu1': {'service_server_args': dict(METRICS, **{'ssl-certfile': '/etc/c.pem', 'ssl-keyfile': '/etc/k.pem'})}},
     [{'targets': ['gpu1:30000'], 'labels': {'host': 'gpu1', 'model': '/models/Qwen3-8B', 'version': 'unknown',
                                             'role': 'worker', '__scheme__': 'https'}}]),
    # the inventory's worker URL wins (C44: the one URL rule), IPv6 in brackets
    ({'gpu1': {'service_server_args': METRICS, 'inferops_sglang_worker_url': 'http://10.0.0.5:30000'}},
     [{'targets': ['10.0.0.5:30000'],
       'labels': {'host': 'gpu1', 'model': '/models/Qwen3-8B', 'version': 'unknown', 'role': 'worker'}}]),
    ({'fd00::1': {'service_server_args': METRICS}},
     [{'targets': ['[fd00::1]:30000'],
       'labels': {'host': 'fd00::1', 'model': '/models/Qwen3-8B', 'version': 'unknown', 'role': 'worker'}}]),
])
def test_server_targets(hostvars, expected):
    assert prometheus_targets(list(hostvars), hostvars) == expected
    json.dumps(expected)


def test_a_multi_node_replica_is_listed_once_at_rank_0():
    hostvars = dict((h, {'service_server_args': METRICS, 'service_replica_group': 'r1'}) for h in ('n0', 'n1'))
    hostvars['solo'] = {'service_server_args': METRICS}
    assert [g['labels']['host'] for g in prometheus_targets(['n0', 'n1', 'solo'], hostvars)] == ['n0', 'solo']


@pytest.mark.parametrize('router_vars, target', [
    ({}, 'lb:29000'),  # sglang-router 0.3.2 router_args.py: --prometheus-port default 29000
    ({'router_args': {'prometheus-port': 9100}, 'router_version': '0.3.2'}, 'lb:9100'),
    ({'router_args': {'prometheus_port': '9200'}}, 'lb:9200'),
])
def test_router_targets(router_vars, target):
    hostvars = {'gpu1': {'service_server_args': METRICS}, 'lb': router_vars}
    groups = prometheus_targets(['gpu1'], hostvars, ['lb'])
    assert [g['labels']['role'] for g in groups] == ['worker', 'router']
    assert groups[1] == {'targets': [target], 'labels': {'host': 'lb', 'role': 'router',
                                                         'version': router_vars.get('router_version', 'unknown')}}


@pytest.mark.parametrize('hostvars, routers, message', [
    ({'gpu1': {'service_server_args': dict(METRICS, port=70000)}}, [], 'gpu1: the port'),
    ({'lb': {'router_args': {'prometheus-port': 'x'}}}, ['lb'], 'lb: router_args prometheus-port'),
])
def test_bad_ports_name_the_host(hostvars, routers, message):
    with pytest.raises(ValueError, match=message):
        prometheus_targets([h for h in hostvars if h not in routers], hostvars, routers)
