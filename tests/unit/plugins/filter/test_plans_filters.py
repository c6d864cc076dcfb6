# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plan filters (plugins/filter/plans.py, service_plan.py): registered, documented, and failing as filters."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.inferops.sglang.plugins.filter.plans import FilterModule as CutoverPlans
from ansible_collections.inferops.sglang.plugins.filter.service_plan import FilterModule as ServicePlan

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
FILTER_DIR = os.path.join(ROOT, 'plugins', 'filter')


def test_every_plan_filter_has_its_documentation():
    filters = dict(CutoverPlans().filters(), **ServicePlan().filters())
    assert sorted(filters) == ['cuda_env_plan', 'cuda_env_secrets', 'cutover_check_failure', 'cutover_dark_window',
                               'cutover_decide', 'cutover_failure', 'cutover_gives_back_lock', 'cutover_inputs', 'cutover_known_good',
                               'cutover_known_status', 'cutover_outcome', 'cutover_preflight', 'cutover_record', 'cutover_replica',
                               'cutover_status_router', 'cutover_strays_ruled_out', 'facts_summary', 'known_good_manifest', 'preflight_message',
                               'replica_args', 'service_deployed', 'service_plan', 'service_steps']
    for name in filters:
        with open(os.path.join(FILTER_DIR, name + '.yml')) as handle:
            doc = yaml.safe_load(handle)
        assert doc['DOCUMENTATION']['name'] == name
        assert doc['RETURN']['_value']['description'] and doc['EXAMPLES'].strip()


def test_cutover_decide_refuses_a_pid_that_is_no_number():
    with pytest.raises(AnsibleFilterError, match='^cutover_decide: '):
        CutoverPlans().filters()['cutover_decide']({'active': True, 'pid': 'x'}, {}, {}, {}, [])


def test_service_plan_refuses_a_port_that_is_no_number():
    with open(os.path.join(ROOT, 'roles', 'service', 'defaults', 'main.yml')) as handle:
        inputs = yaml.safe_load(handle)
    del inputs['service_host_facts']
    inputs.update(service_python='/root/ml-env/bin/python3', service_replica_address='h1',
                  service_cuda_home='/usr/local/cuda-13.0', service_working_directory='/root',
                  service_cuda_env_file='/etc/sglang/cuda.env', service_server_args={'model-path': '/m', 'port': 'x'},
                  host={'name': 'h1', 'address': '', 'replica_group_exists': False, 'replica_hosts': [],
                        'replica_args': {}})
    facts = {'init': {'system': 'systemd', 'systemd_version': 252}, 'python': {'executable': '/root/ml-env/bin/python3'},
             'gpus': [], 'gpu_count': 0, 'servers': [], 'strays': [], 'listeners': [], 'foreign': []}
    with pytest.raises(AnsibleFilterError, match='^service_plan: '):
        ServicePlan().filters()['service_plan'](inputs, facts)
