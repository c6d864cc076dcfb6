# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The fleet role's plan: the rollout's batches (``_fleet.plan``) and every problem of the rollout settings.

``fleet_plan(inputs, hostvars)`` is called twice by the role (filter ``fleet_plan``): by the pre-flight, over every
host of ``fleet_group``, which asserts that ``problems`` is empty; and by the planning task, over the hosts this run
covers (``--limit``), whose ``plan`` becomes ``inferops_sglang_fleet.plan``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils import _fleet
from ansible_collections.inferops.sglang.plugins.module_utils._plans.inventory import host_var


def replica_groups(hosts, hostvars):
    """dict host -> its ``service_replica_group`` ('' for a single-node server)."""
    return dict((host, host_var(hostvars, host, 'service_replica_group', '') or '') for host in hosts)


def fleet_plan(inputs, hostvars):
    """The rollout plan and the problems of the rollout settings.

    :param inputs: dict - ``group`` (``fleet_group``), ``group_hosts`` (its hosts, or None when the inventory has no
        such group), ``selected`` (the hosts of the group this run covers; planned in the group's order; default: all of them),
        ``batches`` (``fleet_batches``: sizes as for ``serial``), ``canary`` (``fleet_canary``, '' for none),
        ``summary_dir`` (``fleet_summary_dir``), ``host`` (the host the pre-flight runs for, which must be in the group;
        None: not checked).
    :param hostvars: Ansible's hostvars (each host's ``service_replica_group`` keeps a replica in one batch).
    :returns: dict - ``plan`` (``_fleet.plan``'s ``{order, batches, canary, batch_sizes}`` of the selected hosts, the
        canary only when it is selected; None while there are problems) and ``problems`` (list of str, empty when none).
    :raises TypeError: when ``inputs`` is not a mapping.
    """
    if not hasattr(inputs, 'get'):
        raise TypeError('expected the fleet role inputs as a mapping, got %s' % type(inputs).__name__)
    group = inputs.get('group')
    group_hosts = inputs.get('group_hosts')
    batches = inputs.get('batches')
    canary = inputs.get('canary') or ''
    summary_dir = inputs.get('summary_dir')
    host = inputs.get('host')
    hosts = list(group_hosts or [])
    ok = (group_hosts is not None and hosts
          and isinstance(batches, list) and len(batches) > 0
          and (not canary or canary in hosts)
          and (host is None or host in hosts)
          and isinstance(summary_dir, str) and summary_dir.startswith('/'))
    problems = []
    if not ok:
        problems.append(
            "fleet_group '%s' must be an inventory group with hosts, fleet_batches a non-empty list of sizes (numbers or "
            'percentages, as for serial), fleet_canary empty or one of its hosts, and fleet_summary_dir an absolute path '
            'on the controller (now: %s).' % (group, summary_dir))
        return {'plan': None, 'problems': problems}
    chosen = inputs.get('selected')
    selected = [name for name in hosts if chosen is None or name in chosen]
    try:
        plan = _fleet.plan(selected, replica_groups(selected, hostvars), batches, canary if canary in selected else '')
    except ValueError as exc:
        return {'plan': None, 'problems': ['The rollout cannot be planned: %s.' % exc]}
    return {'plan': plan, 'problems': []}
