# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that plan a fleet rollout and list the router's workers.

The logic lives in the private module_utils ``_fleet`` (the role's plan: ``_plans/fleet``) and, for the workers' URLs, ``_plans/urls`` (the one URL
rule of the collection); these are thin wrappers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.sglang.plugins.module_utils import _fleet, _operations
from ansible_collections.inferops.sglang.plugins.module_utils._plans import fleet, monitoring, urls
from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover import command_diff
from ansible_collections.inferops.sglang.plugins.module_utils._plans.inventory import host_var
from ansible_collections.inferops.sglang.plugins.plugin_utils._filters import as_filter


def rollout_plan(hosts, hostvars, batches=None, canary=''):
    """``groups['sglang_servers'] | inferops.sglang.rollout_plan(hostvars, ['1', '25%'], '')``."""
    replica_of = fleet.replica_groups(hosts, hostvars)
    try:
        return _fleet.plan(list(hosts), replica_of, batches, canary or '')
    except ValueError as exc:
        raise AnsibleFilterError('rollout_plan: %s' % exc)


def rollout_serial(fleet):
    """``hostvars['localhost']['inferops_sglang_fleet'] | default({}) | inferops.sglang.rollout_serial``: a play's ``serial``.

    Ansible templates ``serial`` once, in its main process, before the play's first task: this filter loads the
    collection's filter plugins there, so the worker process Ansible forks for every task inherits them instead of
    importing them again (about a fifth of a converged run's controller CPU; docs/docsite/rst/scale.rst).
    """
    try:
        return _fleet.serial(fleet)
    except ValueError as exc:
        raise AnsibleFilterError('rollout_serial: %s' % exc)


def _attempted(hostvars, host):
    """The argument change a host that failed meant to make (a diff_args dict), or None when unknown.

    The service role's output against the known-good manifest when the service role got that far; else (a pre-flight
    failure) the inventory's ``service_server_args`` against the running server's arguments (the facts), over the
    flags the inventory sets (``_operations.inventory_change``).
    """
    def mapping(value):
        return value if isinstance(value, dict) else {}

    command = mapping(host_var(hostvars, host, 'inferops_sglang_service')).get('command')
    previous = mapping(mapping(host_var(hostvars, host, 'inferops_sglang_known_good')).get('manifest')).get('command')
    if command and previous:
        return command_diff(previous, command)
    inventory = mapping(host_var(hostvars, host, 'service_server_args'))
    servers = mapping(mapping(host_var(hostvars, host, 'ansible_facts')).get('inferops_sglang')).get('servers') or []
    servers = [server for server in servers if isinstance(server, dict)]
    running = ([server for server in servers if server.get('managed')] or servers or [{}])[0].get('args')
    if inventory and running:
        return _operations.inventory_change(running, inventory)
    return None


def fleet_summary_rows(order, batches, hostvars, playbook='', check_mode=False):
    """``plan.order | inferops.sglang.fleet_summary_rows(plan.batches, hostvars)``: one row per planned host.

    Reads each host's ``inferops_sglang_cutover`` (the cutover role's declared output) and
    ``inferops_sglang_failure`` (``{msg, task}``, set by the rollout play of ``playbooks/site.yml`` when a host
    failed); for a host that failed before its cutover, the argument change it attempted (``_attempted``); see
    module_utils ``_fleet.summary_rows``.
    """
    results = {}
    failures = {}
    attempted = {}
    for host in order:
        summary = host_var(hostvars, host, 'inferops_sglang_cutover')
        if summary:
            results[host] = summary
        failure = host_var(hostvars, host, 'inferops_sglang_failure')
        if failure:
            failures[host] = failure
            change = _attempted(hostvars, host)
            if change:
                attempted[host] = change
    return _fleet.summary_rows(list(order), list(batches), results, failures, attempted,
                               _fleet.summary_heading(playbook, check_mode))


def fleet_summary_heading(playbook, check_mode=False):
    """``lock_owner.playbook | inferops.sglang.fleet_summary_heading(ansible_check_mode)``: ``_fleet.summary_heading``."""
    return _fleet.summary_heading(playbook, check_mode)


class FilterModule(object):
    """Fleet rollout filters."""

    def filters(self):
        return {
            'rollout_plan': rollout_plan,
            'rollout_serial': rollout_serial,
            'fleet_plan': as_filter(fleet.fleet_plan, 'fleet_plan'),
            'worker_urls': as_filter(urls.worker_urls, 'worker_urls'),
            'worker_config_paths': as_filter(urls.worker_config_paths, 'worker_config_paths'),
            'fleet_summary_rows': fleet_summary_rows,
            'fleet_summary_heading': fleet_summary_heading,
            'prometheus_targets': as_filter(monitoring.prometheus_targets, 'prometheus_targets'),
        }
