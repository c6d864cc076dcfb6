# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the operator playbooks: the known-good entry a rollback restores, the fleet status table.

The logic lives in the private module_utils ``_operations``; these are thin wrappers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.sglang.plugins.module_utils._plans.inventory import host_var
from ansible_collections.inferops.sglang.plugins.module_utils import _operations


def known_good_entry_filter(current, requested='', history=None):
    """``inferops_sglang_known_good | inferops.sglang.known_good_entry(name, history_paths)``; see ``_operations``."""
    return _operations.known_good_entry(requested, current, list(history or []))


def fleet_status_rows(hosts, hostvars, now):
    """``hosts | inferops.sglang.fleet_status_rows(hostvars, now().timestamp())``: one status row per host.

    Reads each host's ``ansible_facts['inferops_sglang']`` (the facts role), ``inferops_sglang_known_good`` (the
    known_good role), ``inferops_sglang_cutover_status`` (the cutover role's entry point ``status``) and
    ``service_server_args`` (the inventory's arguments, for the drift column).
    """
    data = {}
    for host in hosts:
        facts = host_var(hostvars, host, 'ansible_facts', {}) or {}
        data[host] = {
            'facts': facts.get('inferops_sglang') or {},
            'known_good': host_var(hostvars, host, 'inferops_sglang_known_good', {}),
            'probe': host_var(hostvars, host, 'inferops_sglang_cutover_status', {}),
            'inventory_args': host_var(hostvars, host, 'service_server_args', {}),
        }
    try:
        return _operations.status_rows(list(hosts), data, float(now))
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('fleet_status_rows: %s' % exc)


def text_table_filter(rows, columns):
    """``rows | inferops.sglang.text_table([['host', 'host'], ...])``: aligned lines of a plain text table."""
    try:
        return _operations.text_table(list(rows), list(columns))
    except (TypeError, ValueError, IndexError) as exc:
        raise AnsibleFilterError('text_table: %s' % exc)


class FilterModule(object):
    """Operator playbook filters."""

    def filters(self):
        return {
            'known_good_entry': known_good_entry_filter,
            'fleet_status_rows': fleet_status_rows,
            'text_table': text_table_filter,
        }
