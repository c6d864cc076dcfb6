# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The router's two generations (sglang-router <= 0.3.2, smg >= 0.4) - field case C42."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _router_generations as g


@pytest.mark.parametrize('version, generation, package, launch_module, requirement', [
    ('0.3.2', 'sglang-router', 'sglang-router', 'sglang_router.launch_router', 'sglang-router==0.3.2'),
    ('0.2.1', 'sglang-router', 'sglang-router', 'sglang_router.launch_router', 'sglang-router==0.2.1'),
    ('0.4.0', 'smg', 'smg', 'smg.launch_router', 'smg==0.4.0'),
    ('1.13.0', 'smg', 'smg', 'smg.launch_router', 'smg==1.13.0'),
    (' 1.13 ', 'smg', 'smg', 'smg.launch_router', 'smg==1.13'),
])
def test_router_generation(version, generation, package, launch_module, requirement):
    got = g.router_generation(version)
    assert (got['generation'], got['package'], got['launch_module'], got['requirement']) == (
        generation, package, launch_module, requirement)
    assert set(g.DIFFERENCES) <= set(got)


@pytest.mark.parametrize('version', ['0.3.3', '0.3.10', '', None, 'latest', '1.13.0rc1', '1..0'])
def test_router_generation_refuses(version):
    with pytest.raises(ValueError):
        g.router_generation(version)


def test_every_difference_has_both_values_a_version_and_a_reason():
    for name, row in g.DIFFERENCES.items():
        assert len(row) == 4, name
        assert g._release(row[2]) >= g.SMG_FROM, name
        assert row[3], name


@pytest.mark.parametrize('args, expected', [
    ({}, 195),
    (None, 195),
    ({'shutdown-grace-period-secs': 30}, 45),
    ({'shutdown_grace_period_secs': '0'}, 15),
])
def test_timeout_stop_sec_covers_the_grace_period(args, expected):
    """The unit's TimeoutStopSec= >= the router's graceful shutdown period (180 s by default), with a margin."""
    assert g.router_timeout_stop_sec(args) == expected


@pytest.mark.parametrize('period', [-1, 'x', True, 1.5])
def test_timeout_stop_sec_refuses(period):
    with pytest.raises(ValueError):
        g.router_timeout_stop_sec({'shutdown-grace-period-secs': period})
