# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The cutover role's rules on the host facts, as pure functions: its pre-flight (filter cutover_preflight) and whether
this run's facts already rule the stray scan of an unchanged server out (filter cutover_strays_ruled_out). The
cutover's other decisions are in ``_plans/cutover``."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils._nvidia_smi import gpu_blockers
from ansible_collections.inferops.sglang.plugins.module_utils._plans.problems import problem
from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import as_dict as _dict, jinja_int

CHECK_GATE_SETTINGS = 'Check the health gate settings'
CHECK_GPUS = 'Refuse to stop the running server on a host that needs a reboot or a GPU reset'
GATE_REQUEST_TIMEOUT_MIN_S = 20


def cutover_preflight(settings, facts):
    """The cutover's pre-flight: every problem at once, each named by its check (filter ``preflight_message``).

    - ``Check the health gate settings`` - ``health_request_timeout`` at least 20 s (SGLang's ``/health`` runs a
      generation and its own check waits 20 s),
      ``health_interval`` and ``health_round_seconds`` at least 1 s, ``health_budget`` at least one request timeout,
      ``record_path`` absolute.
    - ``Refuse to stop the running server on a host that needs a reboot or a GPU reset`` - the GPU rule of the service
      pre-flight (``_nvidia_smi.gpu_blockers`` with one GPU needed and the count not checked), for the role used on its
      own: the cutover stops the running server, and a host with a lost GPU or a driver/library mismatch starts none.

    :param settings: dict - ``health_request_timeout``, ``health_interval``, ``health_budget``,
        ``health_round_seconds`` (seconds; numbers or numeric text, anything else reads as 0) and ``record_path`` (str).
    :param facts: the host facts (``inferops_sglang`` of ``inferops.sglang.host_facts``; {} or None: none known).
    :returns: dict - ``problems`` (list of ``{'check', 'message'}``, empty when the cutover may go ahead).
    """
    settings = _dict(settings)
    timeout, interval = jinja_int(settings.get('health_request_timeout')), jinja_int(settings.get('health_interval'))
    budget, round_s = jinja_int(settings.get('health_budget')), jinja_int(settings.get('health_round_seconds'))
    record = settings.get('record_path')
    problems = []
    if (timeout < GATE_REQUEST_TIMEOUT_MIN_S or interval < 1 or budget < timeout or round_s < 1
            or not isinstance(record, str) or not record.startswith('/')):
        problems.append(problem(CHECK_GATE_SETTINGS, (
            "cutover_health_request_timeout must be at least %d s (SGLang's /health runs a generation and its own check "
            "waits 20 s), cutover_health_interval and cutover_health_round_seconds at least 1 s, cutover_health_budget at "
            "least one request timeout, and cutover_record_path an absolute path (got %s, %s, %s, %s, %s)."
            % (GATE_REQUEST_TIMEOUT_MIN_S, settings.get('health_request_timeout'), settings.get('health_interval'),
               settings.get('health_round_seconds'), settings.get('health_budget'), record))))
    blockers = gpu_blockers(_dict(facts), 1, False)
    if blockers:
        problems.append(problem(CHECK_GPUS, ' '.join(blocker['message'] for blocker in blockers)))
    return {'problems': problems}


def cutover_strays_ruled_out(facts, unit, manager, pid, run_id, scope=None):
    """Whether the host facts already prove that no stray SGLang server runs, so that the check of an unchanged server
    (``verify.yml``) needs no scan of its own - one module round trip fewer on a converged host. The scan
    (``inferops.sglang.server_process`` with ``state=absent``) would find nothing to stop: both read the same processes
    with the same rules (``_server_process.discovery.discover``), and GPU holders join only a stray server.

    True only when every one of these holds; anything else leaves the scan to run as before:

    - the facts were read under this run's host lock (their ``lock_run_id`` is ``run_id``, not empty): they are this
      run's, not a fact cache's or an earlier run's, and no other run of the collection has changed the host since;
    - they were read as root (``read_as_root``): another user sees other users' processes as unproven or not at all;
    - the scan's scope is ``all`` (``cutover_stray_scope``): scoped to a port, the scan also counts a process on that
      port as an orphaned worker, which the facts (read without a port) do not;
    - the service manager is ``systemd`` (the collection's supervisord server is excluded from the scan by pid);
    - the facts list no stray (``strays`` is empty: no server outside a unit or the collection's supervisord, no
      orphaned worker);
    - they list at least one server, every one of them managed by systemd's ``unit`` (the facts' own unit was the
      cutover's: a server of another unit would be a stray to the scan), and one of them is the unit's main process
      as the cutover's reading of the unit saw it, ``pid`` - the server the facts saw is the one the cutover decided
      on (a failed discovery lists no server; a restart between the two has another pid).

    A server started by hand after the facts were read is not stopped by this run - as one started after the scan is
    not - but by the next.

    :param facts: the host facts (``inferops_sglang`` of ``inferops.sglang.host_facts``). :param unit: ``cutover_unit``.
    :param manager: ``systemd`` or ``supervisord``. :param pid: the unit's main pid now (``__cutover_mgr.pid``).
    :param run_id: this run's lock (``cutover_lock_run_id``; '' without one). :param scope: ``cutover_stray_scope``.
    :returns: bool.
    """
    facts = _dict(facts)
    servers, strays = facts.get('servers'), facts.get('strays')
    if (not isinstance(run_id, str) or not run_id or facts.get('lock_run_id') != run_id
            or facts.get('read_as_root') is not True or scope != 'all' or manager != 'systemd'
            or not isinstance(strays, list) or strays or not isinstance(servers, list) or not servers):
        return False
    # The pid exactly: a whole number (or its text); a bool, a fraction or anything else proves nothing.
    if isinstance(pid, bool) or jinja_int(pid) != jinja_int(pid, -1) or str(jinja_int(pid)) != str(pid).strip():
        return False
    pid = jinja_int(pid)
    if not all(_dict(_dict(server).get('managed_by')).get('manager') == 'systemd'
               and _dict(_dict(server).get('managed_by')).get('unit') == unit for server in servers):
        return False
    return pid > 0 and any(_dict(server).get('main_pid') == pid for server in servers)
