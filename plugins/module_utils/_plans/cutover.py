# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The cutover role's decisions, as pure functions (filters cutover_decide, cutover_replica, cutover_check_failure,
cutover_outcome, cutover_record, cutover_inputs, cutover_failure).

The role keeps its steps as tasks (a multi-node replica's ranks go through them in lock-step); what it concludes
lives here. Its state is one host fact, ``__cutover`` (a dict), updated with ``combine`` at each step:

- set by ``decide.yml``: ``host``, ``at`` (the last barrier reached), ``action`` (``start``, ``restart`` or
  ``none``), ``degraded`` (why the running server is degraded, or ''), ``failure``, ``failed_task``,
  ``rollback_failure`` (text, '' when none), ``reboot_required``, ``rolled_back``, ``key_refused``, ``gate_passed``,
  ``kept`` (bools; ``kept``: the check of an unchanged server failed, it was left serving), ``failure_log`` (list of
  log lines), ``router_steps`` (dict step -> the router_worker result),
  ``previous`` (the known_good role's ``inferops_sglang_known_good``), and the run's inputs the outcome words:
  ``unit``, ``manager``, ``url`` (the probe URL), ``record`` (the record's path), ``node_rank`` (int), ``routed``
  (bool), ``router_url``, ``worker_url``, ``on_failure`` (``rollback`` or ``stop``), ``command`` (the unit's argv),
  ``versions`` (the deployed_versions filter's dict);
- later steps: ``began``, ``gate_began``, ``gate_round_seconds`` (seconds since the epoch / seconds) and the
  failure fields above;
- handed in with the outcome: ``gate`` (the last server_health result), ``mgr`` (the service manager's reading:
  ``pid``...), ``stopped`` (the last server_process result: ``target_pids``, ``strays``, ``msg``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.inferops.sglang.plugins.module_utils._health import scheduler_shortfall
from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import as_dict as _dict, seconds, truth as _truth
from ansible_collections.inferops.sglang.plugins.module_utils._secrets import redact_args, redact_env
from ansible_collections.inferops.sglang.plugins.module_utils._server_args import argv_to_args, diff_args
from ansible_collections.inferops.sglang.plugins.module_utils._versions import versions_change
from ansible_collections.inferops.sglang.plugins.module_utils._writers.markdown import md_code, md_inline

DEGRADED_TASK = 'Look for a degraded server'

# The deployment record's outcome line for each failed result; any other result is 'healthy'.
RECORD_OUTCOMES = {
    'rolled_back': 'cutover failed; rolled back to the last known-good configuration',
    'stopped': 'cutover FAILED; the new server was left stopped',
    'failed': 'cutover FAILED; the rollback failed too',
    'degraded': 'FAILED: the running server is degraded and was left as it is (cutover_on_degraded=fail)',
    'kept': ('FAILED: the check of the unchanged server failed, but it answers /health; it was left serving (not '
             'stopped, not taken out of the router)'),
}
# server_health's failure_kind for a server that still answers /health: only the gate's check failed.
SERVING_FAILURES = ('broken', 'refused')
REBOOT_OUTCOME = ('cutover FAILED; a process stuck in the driver holds the GPUs: reboot needed. Neither the new server '
                  'nor the known-good one was started (no rollback start); the known-good configuration\'s files were '
                  'put back%s, so the reboot starts it.')


# The service role's output (inferops_sglang_service) as the cutover reads it: each key the cutover may find missing
# (a restart's deployed entry point, a role used on its own), with the value the cutover assumes then.
SERVICE_DEFAULTS = {
    'unit': 'sglang.service', 'manager': 'systemd', 'host': '127.0.0.1', 'port': 30000, 'scheme': 'http',
    'command': [], 'config_file': '', 'known_good_dir': '/var/lib/inferops-sglang/known-good', 'supervisor': {},
    'node_rank': 0, 'replica_hosts': [], 'schedulers': 0, 'sglang': {}, 'boot': None, 'cache_dir': None,
    'sandbox': [], 'exposure': {}, 'environment_names': [], 'unit_status': {},
}
# The cuda_env role's output (inferops_sglang_cuda_env), likewise.
CUDA_ENV_DEFAULTS = {'marker': '', 'environment': {}}
# A failed server_health result's reason when the server wants another API key than the one sent.
KEY_ERRORS = re.compile('the server requires an API key|the key was refused')


def _args(command):
    """The flags of an argv (no leading words), secret values masked: what the record and the output show."""
    args = argv_to_args(command or [])
    args.pop('', None)
    return redact_args(args)


def command_diff(old_command, new_command):
    """``diff_args`` of two argvs' flags, secret values masked (the change a host attempted, for the fleet summary)."""
    return diff_args(_args(old_command), _args(new_command))


def live_files(service):
    """The files the known-good configuration keeps and a rollback restores: the service's files (unit, or wrapper and
    program), its environment file (0600; group of a non-root owner: the service's group), the CUDA environment file
    (0644) and its secret files. Dicts with ``src``, ``mode``, and ``owner``/``group`` where set."""
    owner = service.get('env_file_owner', 'root')
    return (list(service.get('files', []))
            + [{'src': service.get('env_file', '/etc/sglang/sglang.env'), 'mode': '0600', 'owner': owner,
                'group': service.get('group', 'root') if owner != 'root' else 'root'},
               {'src': service.get('cuda_env_file', '/etc/sglang/cuda.env'), 'mode': '0644'}]
            + list(service.get('secret_files', [])))


def cutover_decide(mgr, service, cuda_env, known_good, servers, on_degraded='restart'):
    """What the decide step concludes for one host: start a stopped service, restart a changed one, leave one as it is.

    :param mgr: the service manager's reading (``active`` bool, ``pid`` int).
    :param service: the service role's output (``changed``, ``command`` list, ``schedulers`` int).
    :param cuda_env: the cuda_env role's output (``changed``; ``block``, the sitecustomize block, when it manages one).
    :param known_good: the known_good role's ``inferops_sglang_known_good`` (``exists``, ``differ`` list of files,
        ``manifest`` with ``source``, ``command``, ``sitecustomize_block``).
    :param servers: the host facts' ``servers`` (discovered servers with ``main_pid`` and ``members``).
    :param on_degraded: ``restart`` a degraded, unchanged server, or ``fail`` (leave it and fail the host).
    :returns: dict ``action`` (``start``, ``restart``, ``none``), ``degraded`` ('' or why), ``failure`` and
        ``failed_task`` ('' unless a degraded server is left as it is), ``pending`` (bool: the last cutover's
        known-good configuration differs from what runs now), ``files`` (``live_files``: what is saved and restored).
    :raises ValueError: when ``service.schedulers`` or ``mgr.pid`` is not an integer.
    """
    mgr, service, cuda_env, known_good = _dict(mgr), _dict(service), _dict(cuda_env), _dict(known_good)
    saved = _dict(known_good.get('manifest')) if _truth(known_good.get('exists', False)) else {}
    pending = saved.get('source', '') == 'cutover' and bool(
        known_good.get('differ') or list(saved.get('command') or []) != list(service.get('command') or [])
        or ('block' in cuda_env and (saved.get('sitecustomize_block') or '') != (cuda_env.get('block') or '')))
    if not _truth(mgr.get('active')):
        action = 'start'
    elif _truth(service.get('changed', False)) or _truth(cuda_env.get('changed', False)) or pending:
        action = 'restart'
    else:
        action = 'none'
    degraded = ''
    if action == 'none':
        pid = int(mgr.get('pid') or 0)
        server = next((s for s in servers or [] if s.get('main_pid') == pid), None)
        degraded = scheduler_shortfall(server, service.get('schedulers') or 0)
    left = bool(degraded) and on_degraded != 'restart'
    if degraded and not left:
        action = 'restart'
    return {
        'action': action,
        'degraded': degraded,
        'failure': ('The running server is %s; cutover_on_degraded is fail, so it was left as it is' % degraded
                    if left else ''),
        'failed_task': DEGRADED_TASK if left else '',
        'pending': pending,
        'files': live_files(service),
    }


def cutover_replica(state, ranks, on_degraded='restart'):
    """The decision of one rank of a multi-node replica, given every rank's: the ranks go forward or stay together.

    :param state: this rank's ``__cutover`` after ``cutover_decide``.
    :param ranks: the ``__cutover`` of every rank of the replica (this one included; {} for a rank without one).
    :param on_degraded: ``restart`` or ``fail``.
    :returns: dict ``action`` (``restart`` when another rank changes), ``failure``, ``failed_task`` (with ``fail``:
        a degraded rank leaves the whole replica as it is).
    """
    state = _dict(state)
    ranks = [_dict(rank) for rank in ranks or []]
    action = state.get('action', 'none')
    if action == 'none' and any(rank.get('action') != 'none' for rank in ranks):
        action = 'restart'
    failure, failed_task = state.get('failure') or '', state.get('failed_task') or ''
    degraded = [rank.get('host', '') for rank in ranks if rank.get('degraded')]
    if on_degraded == 'fail' and degraded:
        failure = failure or ('A rank of this replica (%s) is degraded; cutover_on_degraded is fail, so the replica '
                              'was left as it is' % ', '.join(degraded))
        failed_task = failed_task or DEGRADED_TASK
    return {'action': action, 'failure': failure, 'failed_task': failed_task}


# server_health's lock results after which this run holds no lock on the host (``_host_lock.release``).
LOCK_GIVEN_BACK = ('released', 'expired', 'not_held')


def cutover_gives_back_lock(state, mode, lock_run_id, routed=False, replica_hosts=None, check_mode=False):
    """Whether the gate's call gives the run's host lock back (``server_health`` ``give_back_lock``): only where it is
    the cutover's last call on the host - the check of an unchanged server (gate mode ``check``) with a known-good
    configuration kept already (none to save), no router to check and no other rank to wait for, outside check mode,
    and only with a lock (``lock_run_id``). The playbook's give-back then has nothing left to do.

    :param state: the cutover's state ``__cutover`` (``previous``: the known-good store as read, ``failure``).
    :param mode: the gate's mode, ``start`` or ``check``. :param lock_run_id: the run id of the lock, '' for none.
    :param routed: whether the server is in a router (a router step follows the gate).
    :param replica_hosts: the hosts of a multi-node replica (more than one: a barrier follows).
    :returns: bool.
    """
    state = _dict(state)
    return bool(lock_run_id) and mode == 'check' and not _truth(routed) and len(replica_hosts or []) <= 1 \
        and not _truth(check_mode) and _truth(_dict(state.get('previous')).get('exists', False)) \
        and not state.get('failure')


def cutover_check_failure(result, task='', on_degraded='restart'):
    """What a failed check of an unchanged, running server does (the rescue of the role's verify step): never make it
    worse - a server that answers ``/health`` is never stopped or taken out of the router for a check of ours.

    - The gate (module inferops.sglang.server_health; its result has ``failure_kind``) found the server answering
      ``/health`` - ``failure_kind`` ``broken`` (a chat completion hung, answered 4xx/5xx or did not generate after
      ``/health`` answered 200) or ``refused`` (the API key or TLS), or the budget ran out with the last ``/health``
      answer 200: the server is kept as it is and the host fails with the gate's message (its answer, redacted).
    - The gate found it not serving - ``service`` (the unit failed, exited or restarted), ``degraded`` (lost scheduler
      processes), or ``/health`` not answering 200 within the budget: it is restarted onto the known-good
      configuration (the rollback) with ``on_degraded`` ``restart``; with ``fail`` it is left as it is, degraded.
    - Any other failed task (a stray that would not stop, the replica barrier, saving the known-good configuration):
      the rollback, as before.

    :param result: the failed task's result (``ansible_failed_result``): for the gate server_health's (``failure_kind``,
        ``last_status`` int or None, ``msg``, ``reason``, ``response``), or the gate task's own (``state`` waiting)
        when the controller's clock ended it.
    :param task: the failed task's name.
    :param on_degraded: ``restart`` or ``fail`` (``cutover_on_degraded``).
    :returns: dict ``keep`` (bool: the server is left as it is, the host fails), ``degraded`` ('' or why the server is
        not serving, when it is left degraded), ``failure`` (the host's failure, '' when not kept), ``failed_task``.
    """
    result = _dict(result)
    leave = {'keep': False, 'degraded': '', 'failure': '', 'failed_task': ''}
    if 'failure_kind' not in result:
        return leave
    kind = result.get('failure_kind')
    reason = str(result.get('reason') or result.get('msg') or 'the gate failed')
    serving = kind in SERVING_FAILURES or (kind in (None, 'budget') and result.get('last_status') == 200)
    if serving:
        return {'keep': True, 'degraded': '',
                'failure': str(result.get('msg') or reason), 'failed_task': task or ''}
    if on_degraded == 'restart':
        return leave
    why = reason if kind == 'degraded' else 'not serving: %s' % reason
    return {'keep': True, 'degraded': why,
            'failure': 'The running server is %s; cutover_on_degraded is fail, so it was left as it is' % why,
            'failed_task': task or ''}


def _outcome_word(state, failed, check_mode):
    """The outcome's one word (see ``cutover_outcome``)."""
    action = state.get('action', 'none')
    if failed:
        if state.get('degraded') and action == 'none':
            return 'degraded'
        if _truth(state.get('kept', False)):
            return 'kept'
        if _truth(state.get('rolled_back', False)):
            return 'rolled_back'
        return 'stopped' if state.get('on_failure') == 'stop' else 'failed'
    if action == 'none':
        return 'unchanged'
    if not check_mode:
        return 'deployed'
    if action == 'start' and _dict(state.get('stopped')).get('target_pids'):
        return 'would_adopt'
    return 'would_' + str(action)


def _router(state):
    """What the router steps did, for the output ({} for a server that is not behind a router)."""
    if not _truth(state.get('routed', False)):
        return {}
    steps = _dict(state.get('router_steps'))
    out, step_in, check = _dict(steps.get('out')), _dict(steps.get('in')), _dict(steps.get('check'))
    return {'url': state.get('router_url', ''), 'worker_url': state.get('worker_url', ''),
            'removed': out.get('changed', False), 'drain': out.get('drain'),
            'registered': step_in.get('healthy', False) or check.get('healthy', False)}


def cutover_dark_window(state, gate=None, stopped=None):
    """The dark window of a cutover: from the old server's last answer to the new server's first (issue 32).

    The old server answers until its stop begins (``state['dark_from']``, noted after the router drain, which waited
    for its last request, and before the strays are stopped); the new server's first answer is the gate's first passing
    ``/health`` (a one-token generation in SGLang 0.5.23, ``http_server.py`` ``health_generate``), at
    ``state['began'] + gate['time_to_healthy']``. The parts: ``stop_release_s`` (the strays stopped and their GPUs and
    port free: ``dark_from`` to ``began``; a systemd ``restart`` stops inside the start, so its stop counts in
    ``load_s``), ``load_s`` (start to the port open: SGLang loads the weights and captures the CUDA graphs with the
    port closed), ``gate_s`` (port open to the first passing ``/health``: the warm-up request).

    :param state: the ``__cutover`` fact (``action``, ``dark_from`` and ``began``: epoch seconds).
    :param gate: the gate's server_health result (``time_to_tcp``, ``time_to_healthy``: seconds after ``began``).
    :param stopped: the stray stop's server_process result (``stopped``: the processes it ended).
    :returns: dict ``seconds`` (the window, None when no old server answered before - a stopped service started
        with no stray to stop - or when the new server never answered), ``stop_release_s``, ``load_s``, ``gate_s``
        (floats rounded to 0.1 s, or None where not measured) and ``old_server`` (bool: an old server answered before).
    """
    state, gate, stopped = _dict(state), _dict(gate), _dict(stopped)
    began, dark_from = seconds(state.get('began')), seconds(state.get('dark_from'))
    to_tcp, to_healthy = seconds(gate.get('time_to_tcp')), seconds(gate.get('time_to_healthy'))
    old_server = state.get('action') == 'restart' or bool(stopped.get('stopped'))
    stop = max(0.0, began - dark_from) if began is not None and dark_from is not None else None
    gate_s = max(0.0, to_healthy - to_tcp) if to_healthy is not None and to_tcp is not None else None
    dark = stop + to_healthy if old_server and stop is not None and to_healthy is not None else None

    def rounded(value):
        return None if value is None else round(value, 1)
    return {'seconds': rounded(dark), 'stop_release_s': rounded(stop), 'load_s': rounded(to_tcp),
            'gate_s': rounded(gate_s), 'old_server': old_server}


def _dark_line(window):
    """The record's dark-window line: '12.3 s (stop + release 1.0 s, load 10.0 s, gate 1.3 s)'."""
    def part(value):
        return '-' if value is None else '%.1f s' % value
    head = 'no old server answered before' if window['seconds'] is None and not window['old_server'] else part(window['seconds'])
    return '%s (stop + release %s, load %s, gate %s)' % (
        head, part(window['stop_release_s']), part(window['load_s']), part(window['gate_s']))


def _output(state, result, failed, check_mode):
    """The declared output ``inferops_sglang_cutover`` (read by the fleet summary)."""
    action = state.get('action', 'none')
    gate = _dict(state.get('gate'))
    gated = action != 'none' or _truth(state.get('rolled_back', False))
    manifest = _dict(_dict(state.get('previous')).get('manifest'))
    previous_args, new_args = _args(manifest.get('command')), _args(state.get('command'))
    output = {
        'action': action,
        'result': result,
        'node_rank': int(state.get('node_rank') or 0),
        'time_to_healthy_s': gate.get('time_to_healthy') if gated and not failed else None,
        'dark_window': cutover_dark_window(state, gate, state.get('stopped')) if action != 'none' and not check_mode else None,
        'rolled_back': _truth(state.get('rolled_back', False)),
        'smoke_latencies': gate.get('smoke_latencies', []) if gated else [],
        'args_diff': diff_args(previous_args, new_args),
        'previous_args': previous_args,
        'new_args': new_args,
        'versions': state.get('versions') or {},
        'previous_versions': _dict(manifest.get('record')).get('versions') or {},
        'router': _router(state),
        'degraded': state.get('degraded') or None,
        'record': state.get('record', ''),
        'check_mode': bool(check_mode),
        'rollback_to': state.get('rollback_to') or '',
        'lock_given_back': (str(state.get('lock_run_id') or '')
                            if _dict(gate.get('lock')).get('result') in LOCK_GIVEN_BACK else ''),
    }
    if failed:
        output.update(failure=state.get('failure'), failed_task=state.get('failed_task') or '',
                      rollback_failure=state.get('rollback_failure') or None,
                      reboot_required=_truth(state.get('reboot_required', False)))
    return output


def _record_line(state, result):
    """The deployment record's outcome line (Markdown, one line)."""
    if _truth(state.get('reboot_required', False)):
        failure = state.get('rollback_failure') or ''
        return REBOOT_OUTCOME % ((' (that failed: %s)' % md_inline(str(failure))) if failure else '')
    return RECORD_OUTCOMES.get(result, 'healthy')


def _elapsed(state):
    """The gate's seconds until ready, as Jinja's ``float`` filter reads them (0.0 when missing or not a number)."""
    try:
        return float(_dict(state.get('gate')).get('elapsed'))
    except (TypeError, ValueError):
        return 0.0


def _failure_text(state, result):
    """The failed host's message."""
    if _truth(state.get('reboot_required', False)):
        then = 'Nothing was started on the GPUs it holds (no rollback start): reboot the host, then run again.'
    elif result == 'degraded':
        then = 'Nothing was changed.'
    elif result == 'kept':
        then = ('The server answers /health, so only the check failed: it was left serving as it was (not stopped, '
                'not taken out of the router). Look at the answer above.')
    elif _truth(state.get('rolled_back', False)):
        then = 'Rolled back to the last known-good configuration, healthy again after %.1f s.' % _elapsed(state)
    elif state.get('rollback_failure'):
        then = 'The rollback failed too: %s' % state['rollback_failure']
    else:
        then = 'The new server was left stopped for debugging (cutover_on_failure=stop).'
    return "Cutover to %s failed at '%s': %s. %s\nRecord: %s" % (
        state.get('unit'), state.get('failed_task'), state.get('failure'), then, state.get('record'))


def _message(state, result, failed, check_mode):
    """The final message: the healthy report, the check-mode report, or the failed host's message."""
    action = state.get('action', 'none')
    if failed:
        return _failure_text(state, result)
    where = '%s (%s)' % (state.get('unit'), state.get('manager'))
    if check_mode:
        return '%s on %s: %s (check mode: nothing was stopped, started or gated%s)' % (
            where, state.get('url'), result.replace('_', ' ') if result.startswith('would_') else 'unchanged',
            ', no deployment record written' if action != 'none' else '')
    how = {'start': 'started', 'restart': 'restarted'}.get(action, 'already running, unchanged')
    if action != 'none':
        how += ', ready %.1f s after the start' % _elapsed(state)
    return '%s is healthy on %s (%s); record: %s' % (where, state.get('url'), how, state.get('record'))


def _check_mode_lines(state, result):
    """What check mode prints besides the steps: the plan's own lines."""
    action = state.get('action', 'none')
    stopped = _dict(state.get('stopped'))
    strays = stopped.get('strays') or []
    if result.startswith('would_'):
        what = result.replace('_', ' ')
    elif state.get('failure'):
        what = 'would fail: %s' % state['failure']
    else:
        what = 'unchanged, running (pid %s); would only be checked (/health, one chat completion)' % (
            _dict(state.get('mgr')).get('pid'))
    if state.get('degraded') and action != 'none':
        what += ' (the running server is %s)' % state['degraded']
    previous = _dict(state.get('previous'))
    if _dict(previous.get('manifest')).get('source', '') == 'hand-started':
        compared = 'the hand-started server'
    else:
        compared = 'the known-good configuration' if _truth(previous.get('exists')) else 'nothing (no known-good configuration)'
    return {
        'cutover': '%s (%s): %s' % (state.get('unit'), state.get('manager'), what),
        'would_stop': (stopped.get('msg', '') if stopped.get('target_pids') else 'no stray process'),
        'stray_servers': ['pid %s: %s' % (s.get('main_pid'), _truncate(' '.join(str(a) for a in s.get('argv') or [])))
                          for s in strays],
        'compared_with': compared,
    }


def _truncate(text, length=200, end='...'):
    """Jinja's ``truncate(200, true, '...')`` (with its leeway of 5 characters)."""
    if len(text) <= length + 5:
        return text
    return text[:length - len(end)] + end


def cutover_outcome(state, check_mode=False):
    """The cutover's outcome, computed once and worded once.

    :param state: the ``__cutover`` fact with ``gate``, ``mgr`` and ``stopped`` (see the module's docstring).
    :param check_mode: bool, the run is ``--check``.
    :returns: dict ``result`` (``deployed``, ``unchanged``, ``would_adopt``, ``would_start``, ``would_restart``,
        ``degraded``, ``kept`` (an unchanged server failed the check but answers ``/health``: left serving),
        ``rolled_back``, ``stopped``, ``failed``), ``failed`` (bool), ``output`` (the declared output
        ``inferops_sglang_cutover``), ``record`` (the deployment record's outcome line, Markdown), ``text`` (the final
        message: the report of a healthy host or of check mode, else the failed host's message) and ``plan`` (check
        mode's lines: ``cutover``, ``would_stop``, ``stray_servers``, ``compared_with``).
    :raises ValueError: when ``node_rank`` is not an integer.
    """
    state = _dict(state)
    failed = bool(state.get('failure'))
    result = _outcome_word(state, failed, check_mode)
    return {
        'result': result,
        'failed': failed,
        'output': _output(state, result, failed, check_mode),
        'record': _record_line(state, result),
        'text': _message(state, result, failed, check_mode),
        'plan': _check_mode_lines(state, result),
    }


def _joined(values, empty, each=str):
    """``values`` joined with ', ' (each item through ``each``), or ``empty`` when there is none."""
    return ', '.join(each(value) for value in (values or [])) or empty


def _exposure(reading, missing):
    """One ``systemd-analyze security`` reading (``score`` float, ``level`` str) as '4.2 MEDIUM', or ``missing``."""
    return '%.1f %s' % (reading['score'], reading['level']) if reading else missing


def _flag_value(value):
    """A flag's value as the change lines show it: a bare flag (True) as 'on', a list joined with spaces."""
    if value is True:
        return 'on'
    if isinstance(value, (list, tuple)):
        return ' '.join(str(item) for item in value)
    return str(value)


def change_lines(args_diff, previous_versions, versions, previous_record, record):
    """What changed against the previous known-good configuration, one short line each (list of str, plain text).

    :param args_diff: ``diff_args`` of the previous and new flags (secret values already masked by ``_args``).
    :param previous_versions: the previous known-good manifest's ``record.versions`` ({} when none recorded).
    :param versions: this configuration's ``deployed_versions``.
    :param previous_record: the previous known-good manifest's ``record`` (``environment_names`` list,
        ``cuda_environment`` dict); {} when none.
    :param record: the same keys for this configuration.
    :returns: e.g. ``['mem-fraction-static 0.88 -> 0.85', 'removed flag --enable-metrics (was on)',
        'SGLang 0.5.9 -> 0.5.10', 'environment HF_TOKEN added (value not shown)', 'NCCL_DEBUG WARN -> INFO']``;
        environment values whose names look secret are masked (``redact_env``); the server's own environment file
        shows names only.
    """
    diff, previous_record, record = _dict(args_diff), _dict(previous_record), _dict(record)
    lines = ['%s %s -> %s' % (flag, _flag_value(pair.get('old')), _flag_value(pair.get('new')))
             for flag, pair in sorted(_dict(diff.get('changed')).items())]
    lines += ['added flag --%s %s' % (flag, _flag_value(value)) for flag, value in sorted(_dict(diff.get('added')).items())]
    lines += ['removed flag --%s (was %s)' % (flag, _flag_value(value))
              for flag, value in sorted(_dict(diff.get('removed')).items())]
    lines += ['%s %s -> %s' % (row['label'], row['old'], row['new'])
              for row in versions_change(_dict(previous_versions), _dict(versions)) if row['changed']]
    old_names, new_names = set(previous_record.get('environment_names') or []), set(record.get('environment_names') or [])
    # Compared only where the previous configuration recorded them (the hand-started seed records its environment's
    # names, not a managed CUDA environment: it had none).
    if 'environment_names' in previous_record:
        # A name that moved between the server's own environment file and the CUDA/NCCL environment is still set.
        old_cuda, new_cuda = set(_dict(previous_record.get('cuda_environment'))), set(_dict(record.get('cuda_environment')))
        lines += ['environment %s added (value not shown)' % name
                  for name in sorted(new_names - old_names - (old_cuda - new_cuda))]
        lines += ['environment %s removed' % name for name in sorted(old_names - new_names - (new_cuda - old_cuda))]
        lines += ['environment %s now set by the CUDA/NCCL environment' % name
                  for name in sorted((old_names - new_names) & (new_cuda - old_cuda))]
    if 'cuda_environment' in previous_record:
        old_env = redact_env(_dict(previous_record.get('cuda_environment')))[0]
        new_env = redact_env(_dict(record.get('cuda_environment')))[0]
        for name in sorted(set(old_env) | set(new_env)):
            if name not in new_env and name in new_names - old_names:
                lines.append('%s now set by the server\'s own environment file' % name)
            elif old_env.get(name) != new_env.get(name):
                lines.append('%s %s -> %s' % (name, old_env.get(name, '(unset)'), new_env.get(name, '(unset)')))
    return lines


def record_action(state, changes):
    """What a cutover did, in the words of the deployment record's first line (str).

    :param state: the ``__cutover`` fact (``action``, ``previous``, ``rollback_to``: the history entry an operator's
        rollback restores, '' otherwise; ``rollback_current``: the rollback restores the current configuration).
    :param changes: ``change_lines`` of this configuration.
    :returns: 'first adoption of the hand-started server', 'first start', 'rollback to entry NAME', 'rollback to the
        current known-good configuration', 'upgrade (SGLang
        0.5.9 -> 0.5.10)', 'restart for a change', 'start of a stopped server', 'restart of an unchanged server' or
        'none (unchanged, running)'.
    """
    state = _dict(state)
    action = state.get('action', 'none')
    previous = _dict(state.get('previous'))
    manifest = _dict(previous.get('manifest'))
    if state.get('rollback_to'):
        return 'rollback to entry %s' % state['rollback_to']
    if _truth(state.get('rollback_current', False)):
        return 'rollback to the current known-good configuration'
    if action == 'none':
        return 'none (unchanged, running)'
    # The hand-started server's seed started as the unit; not a restart of it, nor after a rollback put it back.
    if manifest.get('source') == 'hand-started' and not manifest.get('restored_from') and action == 'start':
        return 'first adoption of the hand-started server'
    if not _truth(previous.get('exists', bool(manifest))):
        return 'first start'
    upgrade = [line for line in changes if line.startswith('SGLang ')]
    if upgrade:
        return 'upgrade (%s)' % upgrade[0]
    if changes:
        return 'restart for a change' if action == 'restart' else 'start with a change'
    return 'restart of an unchanged server' if action == 'restart' else 'start of a stopped server'


def cutover_record(state, service, cuda_env, facts, known_good, gate, stopped, known_good_dir, findings=''):
    """What the deployment record (template ``deployment_record.md.j2``) shows, every key present, each default set
    once: the template reads plain keys and only formats them (Markdown escaping stays in the template).

    :param state: the ``__cutover`` fact, with its ``outcome`` (filter cutover_outcome) and ``previous``.
    :param service: ``cutover_service`` (the service role's ``inferops_sglang_service``).
    :param cuda_env: ``cutover_cuda_env`` (the cuda_env role's ``inferops_sglang_cuda_env``, or a restored entry's).
    :param facts: the host facts (``_cutover_facts``: ``init``, ``python``, ``cuda``, ``strays``, driver versions).
    :param known_good: the known_good role's ``inferops_sglang_known_good`` ({} when it has not run).
    :param gate: the last server_health result ({} when no gate ran); ``stopped``: the last server_process result.
    :param known_good_dir: the known-good directory to show when ``known_good`` has none.
    :param findings: ``cutover_record_findings`` (Markdown).
    :returns: dict of display values: ``action`` (``record_action``: first adoption, restart for a change, upgrade,
        rollback to entry X...), ``changes`` (``change_lines`` against the previous known-good, list of str), and
        strings ('-' or 'none' where a value is missing, as the record always showed),
        ``strays``/``stuck``/``stopped`` (lists of dicts; a stray's ``env_readable`` and ``env``, a stopped process's
        ``role`` and a stuck one's ``devices`` text filled in), ``cuda_environment`` (dict), ``hand_started`` (bool),
        ``sitecustomize_link`` (the imported sitecustomize.py when it is a symlink, else None).
    """
    state, service, cuda_env, facts = _dict(state), _dict(service), _dict(cuda_env), _dict(facts)
    known_good, gate, stopped = _dict(known_good), _dict(gate), _dict(stopped)
    exposure = _dict(service.get('exposure'))
    python, init, cuda = _dict(facts.get('python')), _dict(facts.get('init')), _dict(facts.get('cuda'))
    sitecustomize = _dict(python.get('sitecustomize'))
    output = _dict(_dict(state.get('outcome')).get('output'))
    versions = _dict(output.get('versions'))
    previous_record = _dict(_dict(_dict(state.get('previous')).get('manifest')).get('record'))
    changes = change_lines(output.get('args_diff'), output.get('previous_versions'), versions, previous_record,
                           {'environment_names': service.get('environment_names') or [],
                            'cuda_environment': _dict(cuda_env.get('environment'))})
    return {
        'action': record_action(state, changes),
        'changes': changes,
        'boot': service.get('boot', '-'),
        'user': service.get('user', 'root'),
        'group': service.get('group', 'root'),
        'cache_dir': service.get('cache_dir') or '-',
        'sandbox': _joined([directive[0] for directive in service.get('sandbox', [])], 'none'),
        # The service role measures the unit before it writes one (before: None where there was none); the restart and
        # rollback playbooks render nothing and measure nothing before (no 'before'), nor does supervisord.
        'exposure_before': _exposure(exposure.get('before'), '- (no unit yet)' if 'before' in exposure else '- (not measured)'),
        'exposure_after': _exposure(exposure.get('after'), '-'),
        'environment_names': _joined(service.get('environment_names'), 'none', md_code),
        'environment_left_out': list(service.get('environment_left_out', [])),
        'time_to_tcp': gate.get('time_to_tcp') or '-',
        'time_to_healthy': gate.get('time_to_healthy') or '-',
        'ready': gate.get('elapsed') or '-',
        'dark_window': _dark_line(cutover_dark_window(state, gate, stopped)),
        'stage': _stage_line(_dict(state.get('stage'))),
        'smoke_latencies': _joined(gate.get('smoke_latencies', []), '-'),
        'perf': _perf_line(_dict(state.get('perf')), _dict(_dict(_dict(state.get('previous')).get('manifest')).get('perf'))),
        'known_good_dir': known_good.get('dir', known_good_dir),
        'history_dir': known_good.get('history_dir') or '-',
        'python': versions.get('python') or '-',
        'hand_started': _dict(_dict(state.get('previous')).get('manifest')).get('source', '') == 'hand-started',
        'cuda_env_file': cuda_env.get('env_file') or '-',
        'cuda_environment': _dict(cuda_env.get('environment')),
        'sitecustomize': cuda_env.get('sitecustomize'),
        'sitecustomize_link': sitecustomize.get('path') if sitecustomize.get('is_link') else None,
        'strays': [dict(server, env_readable=server.get('env_readable', True), env=server.get('env', {}))
                   for server in facts.get('strays', [])],
        'stuck': [dict(proc, devices=_joined(proc.get('devices'), 'none')) for proc in stopped.get('stuck', [])],
        'stopped': [dict(proc, role=proc.get('role', '')) for proc in stopped.get('stopped', [])],
        'systemd_version': init.get('systemd_version') or '-',
        'driver_version': facts.get('driver_version') or '-',
        'cuda_driver_version': facts.get('cuda_driver_version') or '-',
        'toolkits': _joined([toolkit['path'] for toolkit in cuda.get('toolkits', [])], 'none'),
        'python_version': python.get('version', ''),
        'sglang_version': python.get('sglang_version') or '-',
        'findings': findings or 'None recorded.',
    }


def _stage_line(stage):
    """The record's staging line (model_stage's summary): what was read and what is resident, or '-'."""
    if not stage:
        return '-'
    gib = float(1 << 30)
    return '%s (mode %s): read %.2f GiB in %.1f s (%.2f GB/s); resident %.2f of %.2f GiB before, %.2f after' % (
        stage.get('message', ''), stage.get('mode', '-'), (stage.get('read_bytes') or 0) / gib, stage.get('seconds') or 0.0,
        stage.get('gb_per_s') or 0.0, (stage.get('resident_before') or 0) / gib, (stage.get('total_bytes') or 0) / gib,
        (stage.get('resident_after') or 0) / gib)


def _perf_line(measured, known_good):
    """'this configuration <tokens/s>, <accept length>; known-good <tokens/s>, <accept length>' ('-' where missing)."""
    def pair(figures):
        return '%s, %s' % tuple('-' if figures.get(key) in (None, '') else figures[key]
                                for key in ('decode_tokens_per_s', 'accept_length'))
    return 'this configuration %s; known-good %s' % (pair(measured), pair(known_good))


def cutover_inputs(service, cuda_env):
    """The cutover's inputs with every key it reads present: the service role's output and the cuda_env role's.

    :param service: ``cutover_service`` (dict; keys missing from it take ``SERVICE_DEFAULTS``; None or undefined: {}).
    :param cuda_env: ``cutover_cuda_env`` (dict; missing keys take ``CUDA_ENV_DEFAULTS``).
    :returns: dict ``service``, ``cuda_env``: copies with the defaults filled in (a key that is present, even None or
        empty, is kept as it is).
    """
    return {'service': dict(SERVICE_DEFAULTS, **_dict(service)), 'cuda_env': dict(CUDA_ENV_DEFAULTS, **_dict(cuda_env))}


def cutover_known_status(service, unit):
    """The unit's status the service role handed on (its output's ``unit_status``), where the cutover may take it instead
    of reading the unit: a mapping with an ``ActiveState``, of the unit the cutover manages (``service['unit']`` is
    ``unit``, ``cutover_unit``); else {} - the cutover reads the unit's status itself.

    :param service: the cutover's service input (``_cutover_in.service``). :param unit: ``cutover_unit``.
    :returns: dict (the status as handed on, or {}).
    """
    service = _dict(service)
    status = service.get('unit_status')
    if not hasattr(status, 'get') or not status.get('ActiveState') or service.get('unit') != unit:
        return {}
    return dict(status)


def cutover_failure(result, task_name='', api_key=''):
    """What the cutover notes of a failed step (a rescue's ``ansible_failed_result``).

    :param result: the failed task's result (dict; ``msg``, and from server_health or server_process ``log_tail``,
        ``reboot_required``, ``reason``); None or undefined: {}.
    :param task_name: the failed task's name.
    :param api_key: ``cutover_api_key`` ('' when the server has none).
    :returns: dict ``failure`` (the message, 'unknown failure' when there is none), ``failure_log`` (list of lines),
        ``failed_task``, ``reboot_required`` (bool), ``key_refused`` (bool: the known-good configuration may hold another
        key than the one this run sends - the run sends one, or the server asked for one or refused it - so its gate
        checks /health alone).
    """
    result = _dict(result)
    return {
        'failure': result.get('msg', 'unknown failure'),
        'failure_log': result.get('log_tail', []),
        'failed_task': task_name,
        'reboot_required': _truth(result.get('reboot_required', False)),
        'key_refused': len(api_key or '') > 0 or bool(KEY_ERRORS.match(str(result.get('reason', '')))),
    }


def cutover_status_router(result, router_url, routed, node_rank):
    """The router part of the status (entry point status, the output ``inferops_sglang_cutover_status.router``).

    :param result: the router_worker result (read-only ``present`` check; not read when the server is not routed).
    :param router_url: ``cutover_router_url`` (blank: no router in front of this server).
    :param routed: bool, this server is routed (the router is set and this is rank 0 of its replica).
    :param node_rank: int, this server's rank in its replica.
    :returns: {} without a router; ``{'routed': False, 'why': 'not routed (node rank N)'}`` for a rank > 0; else the
        router_worker result with ``routed`` True.
    """
    if not str(router_url or '').strip():
        return {}
    if not _truth(routed):
        return {'routed': False, 'why': 'not routed (node rank %s)' % node_rank}
    return dict(_dict(result), routed=True)
