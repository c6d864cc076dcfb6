# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the operator playbooks: the known-good entry a rollback restores, the fleet status table.

The logic lives in the private module_utils ``_operations``; these are thin wrappers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os

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


def _entry_manifest(result):
    """A slurp result of a history entry's manifest.json -> the manifest (dict, {} when unreadable)."""
    try:
        manifest = json.loads(base64.b64decode(result.get('content') or '').decode('utf-8'))
    except (TypeError, ValueError, AttributeError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def fleet_history_text(hosts, hostvars):
    """``hosts | inferops.sglang.fleet_history_text(hostvars)``: the known-good history of each host that read it.

    Reads each host's ``__status_history_read`` (the status playbook's ``history`` view: the slurp results of its
    history entries' manifest.json, each with ``item.path``) and ``inferops_sglang_known_good`` (the current one); see
    ``_operations.history_text``. Returns '' when no host read its history.
    """
    texts = []
    for host in hosts:
        read = host_var(hostvars, host, '__status_history_read')
        # Without the history view the read is skipped by its condition and has no results: no section for that host.
        # (A loop over no entries is registered as skipped too, with results []: that host still gets its section.)
        if not isinstance(read, dict) or 'results' not in read:
            continue
        entries = [{'name': os.path.basename(str((result.get('item') or {}).get('path', '')).rstrip('/')),
                    'manifest': _entry_manifest(result)}
                   for result in read.get('results') or [] if isinstance(result, dict)]
        known_good = host_var(hostvars, host, 'inferops_sglang_known_good', {}) or {}
        current = known_good.get('manifest') if known_good.get('exists') else {}
        texts.append(_operations.history_text(host, current or {}, entries))
    return '\n'.join(texts)


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
            'fleet_history_text': fleet_history_text,
        }
