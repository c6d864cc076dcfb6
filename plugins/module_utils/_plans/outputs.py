# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The declared outputs: every fact one role (or play) publishes for another, in one place (issue 26, item 3).

``OUTPUTS`` maps each output's name (``inferops_sglang_*``; outputs are namespaced by the collection, not by the role)
to a dict:

* ``type``: ``dict`` (all of them are);
* ``producer``: the role that publishes it (``roles/<producer>/tasks``), or ``playbooks`` for a fact set by the
  collection's playbooks themselves; ``also``: others that may publish it too (a play's rescue noting a failure);
* ``via``: how it is published - ``set_fact`` (a host fact), ``set_fact localhost`` (a fact of ``localhost``, through
  ``delegate_facts``), or ``set_stats`` (the job's custom stats for AWX/AAP);
* ``meaning``: one line;
* ``keys``: the dict's keys, each ``(type, meaning)`` with the types of role argument specs (``str``, ``int``,
  ``bool``, ``list``, ``dict``, ``raw``); ``None`` as a value is allowed for every key (nothing known).

``INPUTS`` are the variables with the collection's prefix that the operator sets (inventory, ``-e``): not outputs,
declared so that every ``inferops_sglang_*`` name in the collection has one home. ``CONSUMER_OPTIONS`` names the role
options that take an output whole; their ``meta/argument_specs.yml`` list its keys as ``options`` (from
``argument_spec_options``), so that ansible-core validates the contract when the role starts: a key the producer
publishes and the schema does not declare fails there, as does a key of the wrong type.

tests/unit/plugins/module_utils/test_plans_outputs.py checks this schema against what each producer publishes and what
each consumer reads (both directions), and the argument specs against it.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

_SERVICE_KEYS = {
    'manager': ('str', 'systemd or supervisord'),
    'unit': ('str', 'the systemd unit, or the supervisord program name'),
    'unit_path': ('str', 'path of the unit file or the program file'),
    'files': ('list', 'the files rendered for the service (src, mode, owner, group), the unit last'),
    'user': ('str', 'the user the server runs as'),
    'group': ('str', 'its group'),
    'env_file_owner': ('str', 'owner of the environment file (root under systemd, else the server user)'),
    'cache_dir': ('str', 'the server cache directory'),
    'sandbox': ('list', 'the systemd sandboxing directives written ([] under supervisord)'),
    'boot': ('str', 'what starts the server at boot, in words'),
    'supervisor': ('dict', 'config, supervisorctl, supervisord_command, log_file of the supervisord fallback'),
    'command': ('list', 'the server command line, argv (interpreter first)'),
    'args': ('dict', 'the server arguments as flag (without --) -> value'),
    'environment_names': ('list', 'names of the server environment (never the values)'),
    'environment_left_out': ('list', 'names left out of the environment file (masked)'),
    'environment_files': ('list', 'the environment files the unit reads, in order (cuda_env, service)'),
    'sglang': ('dict', 'managed, version, requirement, venv, python, environment_not_read'),
    'path': ('str', 'PATH of the server'),
    'host': ('str', 'address the server binds'),
    'port': ('int', 'its port'),
    'scheme': ('str', 'http or https'),
    'nnodes': ('int', 'nodes of the replica'),
    'node_rank': ('int', 'this node rank'),
    'schedulers': ('int', 'scheduler processes the server starts (GPUs it needs)'),
    'replica_hosts': ('list', 'the hosts of a multi-node replica'),
    'adopted_pid': ('int', 'pid of the hand-started server adopted, else none'),
    'known_good_dir': ('str', 'directory of the known-good configuration'),
    'env_file': ('str', 'the service environment file'),
    'cuda_env_file': ('str', 'the cuda_env environment file'),
    'config_file': ('str', 'the --config file written from the secret arguments, else empty'),
    'secret_files': ('list', 'files holding secrets (src, mode, owner, group)'),
    'exposure': ('dict', "systemd-analyze security's exposure, before and after (entry point deployed - as recorded)"),
    'changed': ('bool', 'whether a rendered file changed'),
    'unit_status': ('dict', "the unit's status read by the pre-flight where nothing since could change it, else {}"),
    'deployed': ('bool', 'true from the entry point deployed (nothing rendered: the deployed command line)'),
}

_CUDA_ENV_KEYS = {
    'changed': ('bool', 'whether the environment file or the managed block changed'),
    'environment': ('dict', 'the CUDA environment written (name -> value)'),
    'env_file': ('str', 'the environment file'),
    'sitecustomize': ('str', 'the sitecustomize.py holding the managed block, else none'),
    'block': ('str', "the managed block's text, else none"),
    'marker': ('str', "the managed block's marker"),
}

_KNOWN_GOOD_KEYS = {
    'exists': ('bool', 'whether a known-good configuration is saved'),
    'dir': ('str', 'its directory'),
    'history_dir': ('str', 'the directory of earlier ones'),
    'manifest': ('dict', 'its manifest (command, files, record, ...)'),
    'differ': ('list', 'live files that differ from the copies kept'),
}

_KNOWN_GOOD_ENTRY_KEYS = {
    'name': ('str', 'current, or the history entry name'),
    'dir': ('str', 'its directory on the host'),
    'current': ('bool', 'whether it is the current known-good configuration'),
    'available': ('list', 'the history entries there are'),
    'error': ('str', 'why the entry asked for cannot be used, else empty'),
    'manifest': ('dict', 'its manifest'),
}

_CUTOVER_KEYS = {
    'action': ('str', 'start, restart or none'),
    'result': ('str', 'the outcome (deployed, unchanged, rolled_back, failed, would_...)'),
    'node_rank': ('int', 'this node rank'),
    'time_to_healthy_s': ('raw', 'seconds from start to the gate passing, else none'),
    'dark_window': ('raw', "the old server's last answer to the new one's first: seconds, stop_release_s, load_s, gate_s, "
                           'old_server (cutover_dark_window); none without a start or restart'),
    'rolled_back': ('bool', 'whether the known-good configuration was put back'),
    'smoke_latencies': ('list', "the gate's smoke request latencies"),
    'args_diff': ('dict', 'server arguments changed (added, removed, changed)'),
    'previous_args': ('dict', 'the known-good arguments'),
    'new_args': ('dict', 'the arguments deployed'),
    'versions': ('dict', 'versions deployed (sglang, python, ...)'),
    'previous_versions': ('dict', 'the known-good versions'),
    'router': ('dict', 'what the router steps did (url, worker_url, removed, drain, registered), {} when not routed'),
    'degraded': ('raw', 'why the server was found degraded, else none'),
    'record': ('str', 'the deployment record written'),
    'check_mode': ('bool', 'whether the run was in check mode'),
    'rollback_to': ('str', "the history entry an operator's rollback restored, else empty"),
    'lock_given_back': ('str', "the run id whose host lock the gate's call gave back, else empty (that run's give-back skips)"),
    'failure': ('raw', 'the failure (failed hosts only)'),
    'failed_task': ('str', 'the task that failed (failed hosts only)'),
    'rollback_failure': ('raw', 'why the rollback failed, else none (failed hosts only)'),
    'reboot_required': ('bool', 'whether the host needs a reboot (failed hosts only)'),
}

OUTPUTS = {
    'inferops_sglang_service': dict(
        type='dict', producer='service', via='set_fact',
        meaning='What the service role rendered (entry points main, deployed); read by the cutover (cutover_service).',
        keys=_SERVICE_KEYS),
    'inferops_sglang_cuda_env': dict(
        type='dict', producer='cuda_env', via='set_fact',
        meaning='What the cuda_env role laid down; read by the service role and the cutover (cutover_cuda_env).',
        keys=_CUDA_ENV_KEYS),
    'inferops_sglang_known_good': dict(
        type='dict', producer='known_good', via='set_fact',
        meaning='The known-good configuration on the host; read by the service, the cutover and the fleet status.',
        keys=_KNOWN_GOOD_KEYS),
    'inferops_sglang_known_good_entry': dict(
        type='dict', producer='known_good', via='set_fact',
        meaning='The known-good configuration a rollback puts back (entry point select); read by the cutover.',
        keys=_KNOWN_GOOD_ENTRY_KEYS),
    'inferops_sglang_cutover': dict(
        type='dict', producer='cutover', via='set_fact',
        meaning="The cutover's outcome on a host; read by the fleet summary.",
        keys=_CUTOVER_KEYS),
    'inferops_sglang_cutover_status': dict(
        type='dict', producer='cutover', via='set_fact',
        meaning="A server's status (entry point status); read by the fleet status table.",
        also=('playbooks',),
        keys={'port': ('int', 'the server port'), 'node_rank': ('int', 'its node rank'),
              'health': ('dict', 'the server_health result (state, reason, ...)'),
              'router': ('dict', 'its router membership ({} without a router)')}),
    'inferops_sglang_router': dict(
        type='dict', producer='router', via='set_fact',
        meaning='What the router role set up (for playbooks and the operator).',
        keys={'unit': ('str', 'the router unit'), 'url': ('str', 'the router URL as its host probes it'),
              'command': ('list', 'its command line'), 'workers': ('list', 'the worker URLs'),
              'version': ('str', 'sglang-router version'), 'api_key_set': ('bool', 'whether an API key is set'),
              'exposure': ('raw', "systemd-analyze security's exposure after")}),
    'inferops_sglang_fleet': dict(
        type='dict', producer='fleet', via='set_fact localhost',
        meaning='The rollout plan and run of this play; read by the rollout plays (serial) and the summary.',
        keys={'plan': ('dict', 'order, batches, ...'), 'run_id': ('str', 'the run id (UTC time)'),
              'started': ('str', 'start, ISO 8601 UTC'), 'started_ts': ('raw', 'start, epoch seconds'),
              'summary_dir': ('str', 'where the summaries go')}),
    'inferops_sglang_fleet_status': dict(
        type='dict', producer='fleet', via='set_fact localhost',
        meaning='The fleet status table (entry point status).',
        keys={'group': ('str', 'the servers group'), 'rows': ('list', 'one row per server')}),
    'inferops_sglang_fleet_summary': dict(
        type='dict', producer='fleet', via='set_stats',
        meaning='The fleet summary as the job custom stats (AWX/AAP artifacts).',
        keys=None),
    'inferops_sglang_failure': dict(
        type='dict', producer='playbooks', via='set_fact',
        meaning='Why a host failed in a rollout play; read by the fleet summary.',
        keys={'msg': ('str', 'the failure message'), 'task': ('str', 'the task that failed')}),
    'inferops_sglang_lock_owner': dict(
        type='dict', producer='playbooks', via='set_fact localhost',
        meaning='Who holds the host locks of this run (host_lock owner).',
        keys={'run_id': ('str', 'run id and a random suffix'), 'controller': ('str', 'user@controller'),
              'playbook': ('str', 'the playbook')}),
}

INPUTS = {
    'inferops_sglang_hosts': 'the group of SGLang servers (default sglang_servers)',
    'inferops_sglang_routers': 'the group of routers (default sglang_routers)',
    'inferops_sglang_worker_url': "a server's URL as the router knows it",
    'inferops_sglang_become': 'whether the plays escalate (default true)',
    'inferops_sglang_lock_wait': 'seconds to wait for a host lock (default 0)',
    'inferops_sglang_lock_timeout': 'seconds a host lock lasts (default 7200)',
    'inferops_sglang_rollback_to': 'the history entry the rollback playbook puts back',
    'inferops_sglang_status_view': "the status playbook's view: table (default) or history",
}

# (role, option) -> the output that option takes whole.
CONSUMER_OPTIONS = {
    ('cutover', 'cutover_service'): 'inferops_sglang_service',
    ('cutover', 'cutover_cuda_env'): 'inferops_sglang_cuda_env',
    ('cutover', 'cutover_known_good_entry'): 'inferops_sglang_known_good_entry',
}


def argument_spec_options(name):
    """The ``options`` of a role argument spec that takes output ``name`` (str) whole: key -> {type, description}
    (dict), as ``meta/argument_specs.yml`` lists them. KeyError for an unknown output or one without keys."""
    keys = OUTPUTS[name]['keys']
    if keys is None:
        raise KeyError(name)
    return dict((key, {'type': kind, 'description': meaning}) for key, (kind, meaning) in keys.items())
