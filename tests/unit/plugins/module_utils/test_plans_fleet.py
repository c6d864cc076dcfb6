# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet role's plan (module_utils/_plans/fleet.py): the rollout plan and every problem it can report."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._plans.fleet import fleet_plan

HOSTS = ['a', 'r0', 'r1', 'b', 'c']
HOSTVARS = {'r0': {'service_replica_group': 'big'}, 'r1': {'service_replica_group': 'big'}}
BASE = {'group': 'sglang_servers', 'group_hosts': HOSTS, 'batches': ['1', '50%'], 'canary': '',
        'summary_dir': '/var/tmp/fleet', 'host': 'a'}


def plan(**changes):
    inputs = dict(BASE)
    inputs.update(changes)
    return fleet_plan(inputs, HOSTVARS)


def test_plan_of_the_whole_group():
    p = plan()
    assert p['problems'] == []
    assert p['plan']['batches'] == [['a'], ['r0', 'r1', 'b'], ['c']]
    assert p['plan']['canary'] == ['a']


def test_plan_of_the_hosts_this_run_covers():
    p = plan(selected=['c', 'r1', 'r0', 'x'], canary='a')
    assert p['problems'] == []
    # Inventory order; a canary this run does not cover is not the canary; a host outside the group is not planned.
    assert p['plan']['order'] == ['r0', 'r1', 'c']
    assert p['plan']['canary'] == ['r0', 'r1']


def test_a_replica_canary_brings_its_replica():
    assert plan(canary='r1')['plan']['canary'] == ['r0', 'r1']


@pytest.mark.parametrize('changes', [
    {'group_hosts': None},
    {'group_hosts': []},
    {'batches': []},
    {'batches': None},
    {'batches': 5},                 # a bare number in YAML: a problem, not a crash (breaker review)
    {'batches': '25%'},
    {'canary': 'zz'},
    {'host': 'elsewhere'},
    {'summary_dir': 'fleet'},
    {'summary_dir': None},
])
def test_settings_problems(changes):
    p = plan(**changes)
    assert p['plan'] is None
    assert len(p['problems']) == 1
    assert p['problems'][0].startswith("fleet_group 'sglang_servers' must be an inventory group with hosts")


@pytest.mark.parametrize('batches, words', [
    (['x'], "batch size 'x' is not a number or a percentage"),
    (['0'], "batch size '0' must be at least 1"),
    (['150%'], "batch size '150%' must be a percentage in (0, 100]"),
])
def test_batch_size_problems(batches, words):
    p = plan(batches=batches)
    assert p['plan'] is None
    assert p['problems'] == ['The rollout cannot be planned: %s.' % words]


def test_host_not_checked_when_none():
    assert plan(host=None)['problems'] == []


def test_refuses_what_is_not_a_mapping():
    with pytest.raises(TypeError):
        fleet_plan(['a'], {})
