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

from ansible_collections.inferops.sglang.plugins.module_utils import _fleet
from ansible_collections.inferops.sglang.plugins.module_utils._plans import fleet, urls
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
    """(the command this run meant to run, the one it would have replaced) of a host; either None when unknown.

    The new one: the service role's output, else its pre-flight plan's (a pre-flight failure stops before the
    output); the old one: the known-good manifest's, else the running server's arguments (the facts).
    """
    def mapping(value):
        return value if isinstance(value, dict) else {}

    service = mapping(host_var(hostvars, host, 'inferops_sglang_service'))
    command = service.get('command') or mapping(mapping(host_var(hostvars, host, '__service_plan')).get('output')).get('command')
    manifest = mapping(mapping(host_var(hostvars, host, 'inferops_sglang_known_good')).get('manifest'))
    previous = manifest.get('command')
    if not previous:
        servers = mapping(mapping(host_var(hostvars, host, 'ansible_facts')).get('inferops_sglang')).get('servers') or []
        managed = [server for server in servers if isinstance(server, dict) and server.get('managed')]
        running = (managed or [server for server in servers if isinstance(server, dict)] or [{}])[0]
        previous = running.get('args')
    return command or None, previous or None


def fleet_summary_rows(order, batches, hostvars, playbook='', check_mode=False):
    """``plan.order | inferops.sglang.fleet_summary_rows(plan.batches, hostvars)``: one row per planned host.

    Reads each host's ``inferops_sglang_cutover`` (the cutover role's declared output) and
    ``inferops_sglang_failure`` (``{msg, task}``, set by the rollout play of ``playbooks/site.yml`` when a host
    failed); for a host that failed before its cutover, the argument change it attempted (its
    command, or the service pre-flight's plan of it, against its known-good manifest's or the running server's); see
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
            command, previous = _attempted(hostvars, host)
            if command and previous:
                attempted[host] = command_diff(previous, command)
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
        }
