# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cutover's decisions and outcome (module_utils _plans/cutover.py): every action, result and wording.

The texts were checked equal to the role's former Jinja (vars/main.yml, report.yml, plan.yml, the record template)
on 4,000 random states; the cases here pin each branch."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover import (
    SERVICE_DEFAULTS, cutover_check_failure, cutover_decide, cutover_failure, cutover_inputs, cutover_outcome,
    cutover_dark_window, cutover_record, cutover_replica, live_files, change_lines, record_action)
from ansible_collections.inferops.sglang.plugins.module_utils._plans.known_good import cutover_known_good


SCHEDULERS = [{'main_pid': 42, 'members': [{'role': 'scheduler', 'title': 'sglang::scheduler_TP0'}]}]
SAVED = {'exists': True, 'differ': [], 'manifest': {'source': 'cutover', 'command': ['a'], 'sitecustomize_block': 'B'}}
RUNNING = {'active': True, 'pid': 42}
DEGRADED = 'degraded: 1 of 2 scheduler processes are running (sglang::scheduler_TP0)'


# ---- cutover_decide ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('mgr, service, cuda_env, known_good, servers, on_degraded, action, degraded, failed, pending', [
    ({'active': False, 'pid': 0}, {'command': ['a']}, {}, SAVED, [], 'restart', 'start', '', False, False),
    (RUNNING, {'command': ['a']}, {}, SAVED, [], 'restart', 'none', '', False, False),
    (RUNNING, {'command': ['a'], 'changed': True}, {}, SAVED, [], 'restart', 'restart', '', False, False),
    (RUNNING, {'command': ['a']}, {'changed': 'yes'}, SAVED, [], 'restart', 'restart', '', False, False),
    # pending: the saved configuration's files, command or sitecustomize block differ from what runs now
    (RUNNING, {'command': ['a']}, {}, dict(SAVED, differ=['/etc/sglang/sglang.env']), [], 'restart', 'restart', '', False, True),
    (RUNNING, {'command': ['b']}, {}, SAVED, [], 'restart', 'restart', '', False, True),
    (RUNNING, {'command': ['a']}, {'block': 'C'}, SAVED, [], 'restart', 'restart', '', False, True),
    (RUNNING, {'command': ['a']}, {'block': 'B'}, SAVED, [], 'restart', 'none', '', False, False),
    # only the last cutover's own save counts, and only an existing one
    (RUNNING, {'command': ['b']}, {}, dict(SAVED, manifest={'source': 'hand-started', 'command': ['a']}), [], 'restart',
     'none', '', False, False),
    (RUNNING, {'command': ['b']}, {}, dict(SAVED, exists=False), [], 'restart', 'none', '', False, False),
    # a degraded, unchanged server: restarted, or left with a failure
    (RUNNING, {'command': ['a'], 'schedulers': 2}, {}, SAVED, SCHEDULERS, 'restart', 'restart', DEGRADED, False, False),
    (RUNNING, {'command': ['a'], 'schedulers': 2}, {}, SAVED, SCHEDULERS, 'fail', 'none', DEGRADED, True, False),
    (RUNNING, {'command': ['a'], 'schedulers': 1}, {}, SAVED, SCHEDULERS, 'fail', 'none', '', False, False),
    # a changed server is not looked at for degradation
    (RUNNING, {'command': ['a'], 'schedulers': 2, 'changed': True}, {}, SAVED, SCHEDULERS, 'fail', 'restart', '', False,
     False),
])
def test_decide(mgr, service, cuda_env, known_good, servers, on_degraded, action, degraded, failed, pending):
    decision = cutover_decide(mgr, service, cuda_env, known_good, servers, on_degraded)
    assert (decision['action'], decision['degraded'], decision['pending']) == (action, degraded, pending)
    if failed:
        assert decision['failure'] == ('The running server is %s; cutover_on_degraded is fail, so it was left as it is'
                                       % DEGRADED)
        assert decision['failed_task'] == 'Look for a degraded server'
    else:
        assert decision['failure'] == decision['failed_task'] == ''


@pytest.mark.parametrize('service, env_file', [
    ({}, {'src': '/etc/sglang/sglang.env', 'mode': '0600', 'owner': 'root', 'group': 'root'}),
    ({'env_file_owner': 'sglang', 'group': 'gpu', 'env_file': '/e'},
     {'src': '/e', 'mode': '0600', 'owner': 'sglang', 'group': 'gpu'}),
    ({'env_file_owner': 'root', 'group': 'gpu'},
     {'src': '/etc/sglang/sglang.env', 'mode': '0600', 'owner': 'root', 'group': 'root'}),
])
def test_live_files(service, env_file):
    files = live_files(dict(service, files=[{'src': '/unit'}], secret_files=[{'src': '/s', 'mode': '0600'}]))
    assert files == [{'src': '/unit'}, env_file, {'src': '/etc/sglang/cuda.env', 'mode': '0644'},
                     {'src': '/s', 'mode': '0600'}]
    assert cutover_decide(RUNNING, service, {}, {}, [])['files'] == live_files(service)


# ---- cutover_replica ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('own, ranks, on_degraded, expected', [
    ({'action': 'none', 'failure': '', 'failed_task': ''},
     [{'host': 'h1', 'action': 'none'}, {'host': 'h2', 'action': 'none'}], 'restart',
     {'action': 'none', 'failure': '', 'failed_task': ''}),
    ({'action': 'none', 'failure': '', 'failed_task': ''},
     [{'host': 'h1', 'action': 'none'}, {'host': 'h2', 'action': 'restart'}], 'restart',
     {'action': 'restart', 'failure': '', 'failed_task': ''}),
    ({'action': 'start', 'failure': '', 'failed_task': ''},
     [{'host': 'h1', 'action': 'start'}, {'host': 'h2', 'action': 'none'}], 'restart',
     {'action': 'start', 'failure': '', 'failed_task': ''}),
    # a rank without a state (it left the play) counts as changed, as before
    ({'action': 'none', 'failure': '', 'failed_task': ''}, [{'host': 'h1', 'action': 'none'}, {}], 'restart',
     {'action': 'restart', 'failure': '', 'failed_task': ''}),
    # cutover_on_degraded=fail: a degraded rank fails every rank
    ({'action': 'none', 'failure': '', 'failed_task': ''},
     [{'host': 'h1', 'action': 'none'}, {'host': 'h2', 'action': 'none', 'degraded': DEGRADED}], 'fail',
     {'action': 'none', 'failed_task': 'Look for a degraded server',
      'failure': 'A rank of this replica (h2) is degraded; cutover_on_degraded is fail, so the replica was left as it is'}),
    ({'action': 'none', 'failure': 'own', 'failed_task': 'Look for a degraded server'},
     [{'host': 'h1', 'action': 'none', 'degraded': DEGRADED}, {'host': 'h2', 'action': 'none', 'degraded': DEGRADED}],
     'fail', {'action': 'none', 'failure': 'own', 'failed_task': 'Look for a degraded server'}),
    ({'action': 'none', 'failure': '', 'failed_task': ''},
     [{'host': 'h1', 'action': 'none'}, {'host': 'h2', 'action': 'none', 'degraded': DEGRADED}], 'restart',
     {'action': 'none', 'failure': '', 'failed_task': ''}),
])
def test_replica(own, ranks, on_degraded, expected):
    assert cutover_replica(own, ranks, on_degraded) == expected


# ---- cutover_check_failure ------------------------------------------------------------------------------------------

BROKEN_MSG = ('SGLang on port 30000 is not healthy: the server is broken: /health answered 200, but smoke request 1 of 1 '
              'failed: HTTP 500 (answer: {"object": "error"}) after 0.4 s')


def gate_result(kind, last_status=200, reason='why', msg=None):
    return {'failed': True, 'state': 'failed', 'failure_kind': kind, 'last_status': last_status, 'reason': reason,
            'msg': msg or 'SGLang on port 30000 is not healthy: %s' % reason}


@pytest.mark.parametrize('result, on_degraded, expected', [
    # Field case C36: only the smoke check failed on a server that answers /health - kept, whatever on_degraded says.
    (gate_result('broken', msg=BROKEN_MSG), 'restart',
     {'keep': True, 'degraded': '', 'failure': BROKEN_MSG, 'failed_task': 'Gate'}),
    (gate_result('broken', msg=BROKEN_MSG), 'fail',
     {'keep': True, 'degraded': '', 'failure': BROKEN_MSG, 'failed_task': 'Gate'}),
    (gate_result('refused', reason='the key was refused (GET /v1/models answered 401)'), 'restart',
     {'keep': True, 'degraded': '', 'failed_task': 'Gate',
      'failure': 'SGLang on port 30000 is not healthy: the key was refused (GET /v1/models answered 401)'}),
    # the budget ran out, yet /health answered 200 last: only the check failed
    (gate_result('budget', reason='not ready after the whole budget of 900 s (smoke request 1 of 1 failed: no answer)'),
     'restart', {'keep': True, 'degraded': '', 'failed_task': 'Gate', 'failure': 'SGLang on port 30000 is not healthy: '
                 'not ready after the whole budget of 900 s (smoke request 1 of 1 failed: no answer)'}),
    # the controller's clock ended the gate (state waiting, no failure_kind): the last /health answer decides
    ({'state': 'waiting', 'failure_kind': None, 'last_status': 200, 'reason': 'r', 'failed': True}, 'restart',
     {'keep': True, 'degraded': '', 'failure': 'r', 'failed_task': 'Gate'}),
    ({'state': 'waiting', 'failure_kind': None, 'last_status': 503, 'reason': 'r', 'failed': True}, 'restart',
     {'keep': False, 'degraded': '', 'failure': '', 'failed_task': ''}),
    # not serving (exited, lost schedulers, /health failing): restarted onto the known-good configuration ...
    (gate_result('service', last_status=None, reason='the unit failed'), 'restart',
     {'keep': False, 'degraded': '', 'failure': '', 'failed_task': ''}),
    (gate_result('degraded', reason=DEGRADED), 'restart', {'keep': False, 'degraded': '', 'failure': '', 'failed_task': ''}),
    (gate_result('budget', last_status=503, reason='not ready'), 'restart',
     {'keep': False, 'degraded': '', 'failure': '', 'failed_task': ''}),
    # ... or with cutover_on_degraded=fail left as it is
    (gate_result('degraded', reason=DEGRADED), 'fail',
     {'keep': True, 'degraded': DEGRADED, 'failed_task': 'Gate',
      'failure': 'The running server is %s; cutover_on_degraded is fail, so it was left as it is' % DEGRADED}),
    (gate_result('budget', last_status=503, reason='not ready after the whole budget of 900 s (GET /health answered 503)'),
     'fail', {'keep': True, 'failed_task': 'Gate',
              'degraded': 'not serving: not ready after the whole budget of 900 s (GET /health answered 503)',
              'failure': 'The running server is not serving: not ready after the whole budget of 900 s (GET /health '
                         'answered 503); cutover_on_degraded is fail, so it was left as it is'}),
    # another task failed (a stray that would not stop): the rollback, as before
    ({'failed': True, 'msg': 'could not stop pid 7'}, 'restart', {'keep': False, 'degraded': '', 'failure': '', 'failed_task': ''}),
    (None, 'fail', {'keep': False, 'degraded': '', 'failure': '', 'failed_task': ''}),
])
def test_check_failure_never_stops_a_server_that_answers_health(result, on_degraded, expected):
    assert cutover_check_failure(result, 'Gate', on_degraded) == expected


def test_a_kept_server_is_degraded_in_the_outcome_only_when_it_was_left_degraded():
    left = cutover_check_failure(gate_result('degraded', reason=DEGRADED), 'Gate', 'fail')
    outcome = cutover_outcome(state(action='none', failure=left['failure'], failed_task='Gate', degraded=left['degraded']))
    assert outcome['result'] == 'degraded' and outcome['output']['degraded'] == DEGRADED


# ---- cutover_outcome ------------------------------------------------------------------------------------------------

def state(**changes):
    """A state as decide.yml makes it, plus what the outcome is handed (gate, mgr, stopped)."""
    base = {'host': 'h1', 'action': 'restart', 'degraded': '', 'failure': '', 'failed_task': '', 'rollback_failure': '',
            'reboot_required': False, 'rolled_back': False, 'router_steps': {}, 'previous': {'exists': False},
            'unit': 'sglang.service', 'manager': 'systemd', 'url': 'http://127.0.0.1:30000', 'record': '/root/r.md',
            'node_rank': 0, 'routed': False, 'router_url': '', 'worker_url': 'http://h1:30000', 'on_failure': 'rollback',
            'command': ['/py', '-m', 'sglang.launch_server', '--api-key', 'k', '--tp', '2'], 'versions': {'sglang': '1'},
            'gate': {'time_to_healthy': 3.25, 'smoke_latencies': [0.5], 'elapsed': 5.25}, 'mgr': {'pid': 42},
            'stopped': {}}
    base.update(changes)
    return base


FAILED = {'failure': 'the gate failed', 'failed_task': 'Gate'}


@pytest.mark.parametrize('changes, check_mode, result, record, text', [
    ({}, False, 'deployed', 'healthy',
     'sglang.service (systemd) is healthy on http://127.0.0.1:30000 (restarted, ready 5.2 s after the start); '
     'record: /root/r.md'),
    ({'action': 'start'}, False, 'deployed', 'healthy',
     'sglang.service (systemd) is healthy on http://127.0.0.1:30000 (started, ready 5.2 s after the start); '
     'record: /root/r.md'),
    ({'action': 'none'}, False, 'unchanged', 'healthy',
     'sglang.service (systemd) is healthy on http://127.0.0.1:30000 (already running, unchanged); record: /root/r.md'),
    ({'action': 'start', 'stopped': {'target_pids': [7]}}, True, 'would_adopt', 'healthy',
     'sglang.service (systemd) on http://127.0.0.1:30000: would adopt (check mode: nothing was stopped, started or '
     'gated, no deployment record written)'),
    ({'action': 'start'}, True, 'would_start', 'healthy',
     'sglang.service (systemd) on http://127.0.0.1:30000: would start (check mode: nothing was stopped, started or '
     'gated, no deployment record written)'),
    ({}, True, 'would_restart', 'healthy',
     'sglang.service (systemd) on http://127.0.0.1:30000: would restart (check mode: nothing was stopped, started or '
     'gated, no deployment record written)'),
    ({'action': 'none'}, True, 'unchanged', 'healthy',
     'sglang.service (systemd) on http://127.0.0.1:30000: unchanged (check mode: nothing was stopped, started or gated)'),
    (dict(FAILED, rolled_back=True), False, 'rolled_back',
     'cutover failed; rolled back to the last known-good configuration',
     "Cutover to sglang.service failed at 'Gate': the gate failed. Rolled back to the last known-good configuration, "
     "healthy again after 5.2 s.\nRecord: /root/r.md"),
    (dict(FAILED, on_failure='stop'), False, 'stopped', 'cutover FAILED; the new server was left stopped',
     "Cutover to sglang.service failed at 'Gate': the gate failed. The new server was left stopped for debugging "
     "(cutover_on_failure=stop).\nRecord: /root/r.md"),
    (dict(FAILED, rollback_failure='no unit'), False, 'failed', 'cutover FAILED; the rollback failed too',
     "Cutover to sglang.service failed at 'Gate': the gate failed. The rollback failed too: no unit\nRecord: /root/r.md"),
    ({'action': 'none', 'degraded': DEGRADED, 'failure': 'The running server is ...', 'failed_task': 'Look'}, False,
     'degraded', 'FAILED: the running server is degraded and was left as it is (cutover_on_degraded=fail)',
     "Cutover to sglang.service failed at 'Look': The running server is .... Nothing was changed.\nRecord: /root/r.md"),
    # field case C36: the check of an unchanged server that answers /health failed - it was left serving
    ({'action': 'none', 'failure': 'SGLang on port 30000 is not healthy: the server is broken', 'failed_task': 'Gate',
      'kept': True}, False, 'kept',
     'FAILED: the check of the unchanged server failed, but it answers /health; it was left serving (not stopped, not '
     'taken out of the router)',
     "Cutover to sglang.service failed at 'Gate': SGLang on port 30000 is not healthy: the server is broken. The server "
     "answers /health, so only the check failed: it was left serving as it was (not stopped, not taken out of the "
     "router). Look at the answer above.\nRecord: /root/r.md"),
    (dict(FAILED, reboot_required=True), False, 'failed',
     "cutover FAILED; a process stuck in the driver holds the GPUs: reboot needed. Neither the new server nor the "
     "known-good one was started (no rollback start); the known-good configuration's files were put back, so the "
     "reboot starts it.",
     "Cutover to sglang.service failed at 'Gate': the gate failed. Nothing was started on the GPUs it holds (no "
     "rollback start): reboot the host, then run again.\nRecord: /root/r.md"),
    (dict(FAILED, reboot_required=True, rollback_failure='copy\nfailed'), False, 'failed',
     "cutover FAILED; a process stuck in the driver holds the GPUs: reboot needed. Neither the new server nor the "
     "known-good one was started (no rollback start); the known-good configuration's files were put back (that "
     "failed: copy failed), so the reboot starts it.",
     "Cutover to sglang.service failed at 'Gate': the gate failed. Nothing was started on the GPUs it holds (no "
     "rollback start): reboot the host, then run again.\nRecord: /root/r.md"),
    (dict(FAILED), True, 'failed', 'cutover FAILED; the rollback failed too',
     "Cutover to sglang.service failed at 'Gate': the gate failed. The new server was left stopped for debugging "
     "(cutover_on_failure=stop).\nRecord: /root/r.md"),
])
def test_outcome_result_record_and_text(changes, check_mode, result, record, text):
    outcome = cutover_outcome(state(**changes), check_mode)
    assert (outcome['result'], outcome['record'], outcome['text']) == (result, record, text)
    assert outcome['output']['result'] == result
    assert outcome['failed'] is bool(changes.get('failure'))


@pytest.mark.parametrize('changes, fields', [
    ({}, {'time_to_healthy_s': 3.25, 'smoke_latencies': [0.5], 'rolled_back': False, 'degraded': None}),
    # an unchanged server's check is no start: its figures do not count
    ({'action': 'none'}, {'time_to_healthy_s': None, 'smoke_latencies': []}),
    # the known-good server's figures count after a rollback, its time to healthy not (the host failed)
    (dict(FAILED, action='restart', rolled_back=True),
     {'time_to_healthy_s': None, 'smoke_latencies': [0.5], 'rolled_back': True, 'failure': 'the gate failed',
      'failed_task': 'Gate', 'rollback_failure': None, 'reboot_required': False}),
    ({'degraded': DEGRADED}, {'degraded': DEGRADED}),
    ({'node_rank': '1'}, {'node_rank': 1}),
])
def test_outcome_output_fields(changes, fields):
    output = cutover_outcome(state(**changes), False)['output']
    assert dict((key, output[key]) for key in fields) == fields
    assert ('failure' in output) is bool(changes.get('failure'))


def test_outcome_arguments_masked_and_versions():
    previous = {'exists': True, 'manifest': {'command': ['/py', '--api-key', 'sk-old', '--tp', '1'],
                                             'record': {'versions': {'sglang': '0'}}}}
    output = cutover_outcome(state(previous=previous), False)['output']
    assert output['previous_args'] == {'api-key': '********', 'tp': '1'}
    assert output['new_args'] == {'api-key': '********', 'tp': '2'}
    assert output['args_diff']['changed'] == {'tp': {'old': '1', 'new': '2'}}
    assert (output['versions'], output['previous_versions']) == ({'sglang': '1'}, {'sglang': '0'})
    assert 'sk-old' not in repr(output) and "'k'" not in repr(output)


@pytest.mark.parametrize('changes, router', [
    ({}, {}),
    ({'routed': True, 'router_url': 'http://r:30000'},
     {'url': 'http://r:30000', 'worker_url': 'http://h1:30000', 'removed': False, 'drain': None, 'registered': False}),
    ({'routed': True, 'router_url': 'http://r',
      'router_steps': {'out': {'changed': True, 'drain': {'s': 2}}, 'in': {'healthy': True}}},
     {'url': 'http://r', 'worker_url': 'http://h1:30000', 'removed': True, 'drain': {'s': 2}, 'registered': True}),
    ({'routed': True, 'router_url': 'http://r', 'router_steps': {'check': {'healthy': True}}},
     {'url': 'http://r', 'worker_url': 'http://h1:30000', 'removed': False, 'drain': None, 'registered': True}),
])
def test_outcome_router(changes, router):
    assert cutover_outcome(state(**changes), False)['output']['router'] == router


STRAY = {'main_pid': 7, 'argv': ['python3', '-m', 'sglang.launch_server', '--model-path', 'x' * 300]}


@pytest.mark.parametrize('changes, plan', [
    ({'action': 'start', 'stopped': {'target_pids': [7], 'msg': 'would stop 7', 'strays': [STRAY]},
      'previous': {'exists': False, 'manifest': {'source': 'hand-started'}}},
     {'cutover': 'sglang.service (systemd): would adopt', 'would_stop': 'would stop 7',
      'stray_servers': ['pid 7: ' + ('python3 -m sglang.launch_server --model-path ' + 'x' * 300)[:197] + '...'],
      'compared_with': 'the hand-started server'}),
    ({'degraded': DEGRADED, 'previous': {'exists': True}},
     {'cutover': 'sglang.service (systemd): would restart (the running server is %s)' % DEGRADED,
      'would_stop': 'no stray process', 'stray_servers': [], 'compared_with': 'the known-good configuration'}),
    ({'action': 'none'},
     {'cutover': 'sglang.service (systemd): unchanged, running (pid 42); would only be checked (/health, one chat '
                 'completion)',
      'would_stop': 'no stray process', 'stray_servers': [], 'compared_with': 'nothing (no known-good configuration)'}),
    ({'action': 'none', 'degraded': DEGRADED, 'failure': 'The running server is degraded'},
     {'cutover': 'sglang.service (systemd): would fail: The running server is degraded',
      'would_stop': 'no stray process', 'stray_servers': [], 'compared_with': 'nothing (no known-good configuration)'}),
])
def test_outcome_plan(changes, plan):
    assert cutover_outcome(state(**changes), True)['plan'] == plan


# ---- cutover_record -------------------------------------------------------------------------------------------------

EMPTY_RECORD = {
    'boot': '-', 'user': 'root', 'group': 'root', 'cache_dir': '-', 'sandbox': 'none',
    'exposure_before': '- (not measured)', 'exposure_after': '-', 'environment_names': 'none',
    'environment_left_out': [], 'time_to_tcp': '-', 'time_to_healthy': '-', 'ready': '-', 'smoke_latencies': '-',
    'perf': 'this configuration -, -; known-good -, -',
    'known_good_dir': '/kg', 'history_dir': '-', 'python': '-', 'hand_started': False, 'cuda_env_file': '-',
    'cuda_environment': {}, 'sitecustomize': None, 'sitecustomize_link': None, 'strays': [], 'stuck': [],
    'stopped': [], 'systemd_version': '-', 'driver_version': '-', 'cuda_driver_version': '-', 'toolkits': 'none',
    'python_version': '', 'sglang_version': '-', 'findings': 'None recorded.',
    'dark_window': 'no old server answered before (stop + release -, load -, gate -)', 'stage': '-',
    'action': 'none (unchanged, running)', 'changes': []}


@pytest.mark.parametrize('state, service, cuda_env, facts, known_good, gate, stopped, findings, expected', [
    # nothing known: every key present, each missing value as the record shows it
    ({}, {}, {}, {}, {}, {}, {}, '', {}),
    (None, None, None, None, None, None, None, None, {}),
    # falsy values count as missing where the record always showed '-' ...
    ({}, {'cache_dir': '', 'boot': False}, {'env_file': None}, {'driver_version': ''}, {'history_dir': None},
     {'time_to_tcp': 0, 'elapsed': None, 'smoke_latencies': []}, {}, '',
     {'boot': False, 'cache_dir': '-', 'cuda_env_file': '-', 'driver_version': '-', 'history_dir': '-',
      'time_to_tcp': '-', 'ready': '-',
      'dark_window': 'no old server answered before (stop + release -, load 0.0 s, gate -)'}),
    # ... and given values are shown
    ({'previous': {'manifest': {'source': 'hand-started'}},
      'outcome': {'output': {'versions': {'python': '/v/bin/python3'}}}},
     {'boot': True, 'user': 'sglang', 'group': 'gpu', 'cache_dir': '/c',
      'sandbox': [['ProtectSystem', 'strict'], ['NoNewPrivileges', 'yes']],
      'exposure': {'before': {'score': 4.25, 'level': 'MEDIUM'}, 'after': {'score': 1, 'level': 'OK'}},
      'environment_names': ['A', 'B`C'], 'environment_left_out': ['HF_TOKEN']},
     {'env_file': '/etc/sglang/cuda.env', 'environment': {'NCCL_X': '1'}, 'sitecustomize': '/s.py'},
     {'init': {'systemd_version': 252}, 'driver_version': '550', 'cuda_driver_version': '12.4',
      'cuda': {'toolkits': [{'path': '/usr/local/cuda'}, {'path': '/opt/cuda'}]},
      'python': {'version': '3.11.2', 'sglang_version': '0.5.23',
                 'sitecustomize': {'path': '/usr/lib/sc.py', 'is_link': True}}},
     {'dir': '/var/lib/kg', 'history_dir': '/var/lib/kg/history'},
     {'time_to_tcp': 1.5, 'time_to_healthy': 3, 'elapsed': 9.25, 'smoke_latencies': [0.1, 0.25]}, {}, '| a |',
     {'boot': True, 'user': 'sglang', 'group': 'gpu', 'cache_dir': '/c', 'sandbox': 'ProtectSystem, NoNewPrivileges',
      'exposure_before': '4.2 MEDIUM', 'exposure_after': '1.0 OK', 'environment_names': '`A`, ``B`C``',
      'environment_left_out': ['HF_TOKEN'], 'time_to_tcp': 1.5, 'time_to_healthy': 3, 'ready': 9.25,
      'smoke_latencies': '0.1, 0.25', 'known_good_dir': '/var/lib/kg', 'history_dir': '/var/lib/kg/history',
      'python': '/v/bin/python3', 'hand_started': True, 'cuda_env_file': '/etc/sglang/cuda.env',
      'cuda_environment': {'NCCL_X': '1'}, 'sitecustomize': '/s.py', 'sitecustomize_link': '/usr/lib/sc.py',
      'systemd_version': 252, 'driver_version': '550', 'cuda_driver_version': '12.4',
      'toolkits': '/usr/local/cuda, /opt/cuda', 'python_version': '3.11.2', 'sglang_version': '0.5.23',
      'findings': '| a |', 'dark_window': 'no old server answered before (stop + release -, load 1.5 s, gate 1.5 s)'}),
    # a previous configuration saved by a cutover, or with no manifest, is not the hand-started server
    ({'previous': {'manifest': {'source': 'cutover'}}}, {}, {}, {}, {}, {}, {}, '', {}),
    # the service role measured before writing and found no unit; the restart and rollback playbooks measure nothing
    # before (their service output has no 'before'), even after a hand-started seed
    ({}, {'exposure': {'before': None, 'after': {'score': 2.0, 'level': 'OK'}}}, {}, {}, {}, {}, {}, '',
     {'exposure_before': '- (no unit yet)', 'exposure_after': '2.0 OK'}),
    ({'action': 'restart', 'previous': {'exists': True, 'manifest': {'source': 'hand-started'}}},
     {'exposure': {'after': {'score': 2.0, 'level': 'OK'}}}, {}, {}, {}, {}, {}, '',
     {'exposure_after': '2.0 OK', 'hand_started': True, 'action': 'restart of an unchanged server',
      'dark_window': '- (stop + release -, load -, gate -)'}),
    ({'previous': {'manifest': None}}, {}, {}, {}, {}, {}, {}, '', {}),
    # a sitecustomize.py that is not a symlink is not named twice
    ({}, {}, {}, {'python': {'sitecustomize': {'path': '/usr/lib/sc.py', 'is_link': False}}}, {}, {}, {}, '', {}),
])
def test_record(state, service, cuda_env, facts, known_good, gate, stopped, findings, expected):
    record = cutover_record(state, service, cuda_env, facts, known_good, gate, stopped, '/kg', findings)
    assert record == dict(EMPTY_RECORD, **expected)


def test_record_performance_figures():
    """The performance gate's figures of this configuration and of the known-good one (issue 27, C38)."""
    state = {'perf': {'decode_tokens_per_s': 1919.4, 'accept_length': 2.59},
             'previous': {'manifest': {'perf': {'decode_tokens_per_s': 1950.0, 'accept_length': None}}}}
    record = cutover_record(state, {}, {}, {}, {}, {}, {}, '/kg')
    assert record['perf'] == 'this configuration 1919.4, 2.59; known-good 1950.0, -'


def test_record_processes():
    """Strays keep their fields (env_readable defaults to true: an environment that was read); stopped processes
    without a role get ''; a stuck process's devices are joined, 'none' when it holds none."""
    facts = {'strays': [{'main_pid': 7, 'env': {'A': 'b'}}, {'main_pid': 8, 'env_readable': False}]}
    stopped = {'stuck': [{'pid': 3, 'devices': ['/dev/nvidia0', '/dev/nvidiactl']}, {'pid': 4, 'devices': []}],
               'stopped': [{'pid': 5, 'signal': 'SIGTERM'}, {'pid': 6, 'role': 'main', 'signal': 'SIGKILL'}]}
    record = cutover_record({}, {}, {}, facts, {}, {}, stopped, '/kg')
    assert record['strays'] == [{'main_pid': 7, 'env': {'A': 'b'}, 'env_readable': True},
                                {'main_pid': 8, 'env': {}, 'env_readable': False}]
    assert [p['devices'] for p in record['stuck']] == ['/dev/nvidia0, /dev/nvidiactl', 'none']
    assert [p['role'] for p in record['stopped']] == ['', 'main']
    assert stopped['stopped'][0] == {'pid': 5, 'signal': 'SIGTERM'}, 'the inputs are left as they are'


# ---- the record's first lines: what happened and what changed (issue 30) --------------------------------------------

def test_change_lines_flags_versions_environment():
    """Flags changed, added and removed (a removed flag says so), versions, environment names (never values) and the
    CUDA/NCCL values with secret-looking ones masked."""
    diff = {'changed': {'mem-fraction-static': {'old': '0.88', 'new': '0.85'}},
            'added': {'enable-metrics': True}, 'removed': {'chunked-prefill-size': '4096', 'api-key': '********'}}
    previous = {'environment_names': ['HF_HOME', 'OLD'], 'cuda_environment': {'NCCL_DEBUG': 'WARN', 'HF_TOKEN': 'a'}}
    new = {'environment_names': ['HF_HOME', 'HF_TOKEN'], 'cuda_environment': {'NCCL_DEBUG': 'INFO', 'HF_TOKEN': 'b'}}
    lines = change_lines(diff, {'sglang': '0.5.9', 'torch': '2.8'}, {'sglang': '0.5.10', 'torch': '2.8'}, previous, new)
    assert lines == ['mem-fraction-static 0.88 -> 0.85', 'added flag --enable-metrics on',
                     'removed flag --api-key (was ********)', 'removed flag --chunked-prefill-size (was 4096)',
                     'SGLang 0.5.9 -> 0.5.10', 'environment HF_TOKEN added (value not shown)', 'environment OLD removed',
                     'NCCL_DEBUG WARN -> INFO']
    assert not [line for line in lines if "'a'" in line or line.endswith(' b')], 'no secret value'


def test_change_lines_after_the_hand_started_seed():
    """The first adoption: the hand-started server's seed records its environment's names and versions, no managed CUDA
    environment (it had none) - so names it already had are not 'added', and no CUDA value reads '(unset) -> ...'."""
    seed = {'environment_names': ['CUDA_HOME', 'LD_LIBRARY_PATH', 'SGLANG_ENABLE_SPEC_V2'], 'versions': {'sglang': '0.5.9'}}
    new = {'environment_names': ['CUDA_HOME', 'LD_LIBRARY_PATH', 'SGLANG_ENABLE_SPEC_V2', 'HF_HOME'],
           'cuda_environment': {'CUDA_HOME': '/usr/local/cuda', 'NCCL_NVLS_ENABLE': '0'}}
    assert change_lines({}, {'sglang': '0.5.9'}, {'sglang': '0.5.9'}, seed, new) == [
        'environment HF_HOME added (value not shown)']
    # CUDA_HOME moved from the server's own environment file into the CUDA/NCCL environment: not 'removed'
    moved = dict(new, environment_names=['LD_LIBRARY_PATH', 'SGLANG_ENABLE_SPEC_V2', 'HF_HOME'])
    assert change_lines({}, {}, {}, seed, moved) == ['environment HF_HOME added (value not shown)',
                                                     'environment CUDA_HOME now set by the CUDA/NCCL environment']
    # ... and back (a rollback onto the hand-started configuration): neither 'added' nor '-> (unset)'
    back = dict(seed, cuda_environment={})
    assert change_lines({}, {}, {}, moved, back) == ['environment HF_HOME removed',
                                                     'CUDA_HOME now set by the server\'s own environment file',
                                                     'NCCL_NVLS_ENABLE 0 -> (unset)']
    # a seed saved before it recorded names (versions only): no environment lines at all
    assert change_lines({}, {}, {}, {'versions': {'sglang': '0.5.9'}}, new) == []


def test_change_lines_nothing_known():
    assert change_lines(None, None, None, None, None) == []
    # no previous record (first start, or an entry saved before records): no environment lines
    assert change_lines({}, {}, {}, {}, {'environment_names': ['A'], 'cuda_environment': {'X': '1'}}) == []


@pytest.mark.parametrize('state, changes, expected', [
    ({'action': 'none'}, [], 'none (unchanged, running)'),
    ({'action': 'start', 'previous': {'exists': True, 'manifest': {'source': 'hand-started'}}}, ['x 1 -> 2'],
     'first adoption of the hand-started server'),
    ({'action': 'start', 'previous': {'exists': False}}, [], 'first start'),
    ({'action': 'restart', 'previous': {'exists': True, 'manifest': {'source': 'cutover'}}},
     ['mem-fraction-static 0.88 -> 0.85', 'SGLang 0.5.9 -> 0.5.10'], 'upgrade (SGLang 0.5.9 -> 0.5.10)'),
    ({'action': 'restart', 'previous': {'exists': True, 'manifest': {}}}, ['mem-fraction-static 0.88 -> 0.85'],
     'restart for a change'),
    ({'action': 'start', 'previous': {'exists': True, 'manifest': {}}}, ['a 1 -> 2'], 'start with a change'),
    ({'action': 'restart', 'previous': {'exists': True, 'manifest': {}}}, [], 'restart of an unchanged server'),
    ({'action': 'start', 'previous': {'exists': True, 'manifest': {}}}, [], 'start of a stopped server'),
    ({'action': 'restart', 'rollback_to': '20261205T153000Z', 'previous': {'exists': True}}, ['a 1 -> 2'],
     'rollback to entry 20261205T153000Z'),
    ({'action': 'restart', 'rollback_to': '', 'rollback_current': 'True', 'previous': {'exists': True}}, [],
     'rollback to the current known-good configuration'),
    # a restart of the hand-started seed's unit (a failed first cutover rolled back onto it) is no adoption
    ({'action': 'restart', 'previous': {'exists': True, 'manifest': {'source': 'hand-started'}}}, [],
     'restart of an unchanged server'),
    # the hand-started configuration a rollback put back is no adoption the next time
    ({'action': 'restart', 'previous': {'exists': True, 'manifest': {'source': 'hand-started', 'restored_from': 'E1'}}},
     ['tp-size 8 -> 4'], 'restart for a change'),
])
def test_record_action(state, changes, expected):
    assert record_action(state, changes) == expected


def test_record_first_lines_flag_change():
    """The record's action and changes come from the outcome's argument diff and the previous manifest."""
    state = {'action': 'restart', 'previous': {'exists': True, 'manifest': {'source': 'cutover', 'record': {}}},
             'outcome': {'output': {'args_diff': {'changed': {'mem-fraction-static': {'old': 0.88, 'new': 0.85}}}}}}
    record = cutover_record(state, {}, {}, {}, {}, {}, {}, '/kg')
    assert record['action'] == 'restart for a change'
    assert record['changes'] == ['mem-fraction-static 0.88 -> 0.85']


# ---- cutover_inputs, cutover_failure --------------------------------------------------------------------------------

@pytest.mark.parametrize('service, cuda_env, port, manager, marker, command', [
    (None, None, 30000, 'systemd', '', []),
    ({}, {}, 30000, 'systemd', '', []),
    ({'port': 31000, 'manager': 'supervisord', 'command': ['a']}, {'marker': 'M'}, 31000, 'supervisord', 'M', ['a']),
    # a key that is present is kept, even empty (as Jinja's default() without true)
    ({'manager': '', 'command': None}, {'marker': None}, 30000, '', None, None),
])
def test_inputs(service, cuda_env, port, manager, marker, command):
    inputs = cutover_inputs(service, cuda_env)
    assert (inputs['service']['port'], inputs['service']['manager'], inputs['cuda_env']['marker'],
            inputs['service']['command']) == (port, manager, marker, command)
    assert set(inputs['service']) >= set(SERVICE_DEFAULTS) and inputs['cuda_env']['environment'] == {}


@pytest.mark.parametrize('result, api_key, expected', [
    (None, '', {'failure': 'unknown failure', 'failure_log': [], 'reboot_required': False, 'key_refused': False}),
    ({'msg': 'gate failed', 'log_tail': ['l1'], 'reboot_required': 'yes'}, '',
     {'failure': 'gate failed', 'failure_log': ['l1'], 'reboot_required': True, 'key_refused': False}),
    ({'msg': 'x', 'reason': 'the key was refused (401)'}, '',
     {'failure': 'x', 'failure_log': [], 'reboot_required': False, 'key_refused': True}),
    ({'msg': 'x', 'reason': 'the server requires an API key'}, '',
     {'failure': 'x', 'failure_log': [], 'reboot_required': False, 'key_refused': True}),
    # only a reason that starts so (Ansible's match test)
    ({'msg': 'x', 'reason': 'timeout: the key was refused'}, '',
     {'failure': 'x', 'failure_log': [], 'reboot_required': False, 'key_refused': False}),
    # a run that sends a key: the known-good configuration may hold another one
    ({'msg': 'x'}, 'sk-1', {'failure': 'x', 'failure_log': [], 'reboot_required': False, 'key_refused': True}),
])
def test_failure(result, api_key, expected):
    assert cutover_failure(result, 'Gate', api_key) == dict(expected, failed_task='Gate')


# ---- cutover_dark_window (issue 32) --------------------------------------------------------------------------------

@pytest.mark.parametrize('state, gate, stopped, expected', [
    # a restart: the old server answered until the stop began; the new one first at began + time_to_healthy
    ({'action': 'restart', 'dark_from': 100.0, 'began': 100.5}, {'time_to_tcp': 10.0, 'time_to_healthy': 12.34}, {},
     {'seconds': 12.8, 'stop_release_s': 0.5, 'load_s': 10.0, 'gate_s': 2.3, 'old_server': True}),
    # a start after the strays were stopped (a hand-started server adopted): the stop and GPU release count
    ({'action': 'start', 'dark_from': 100.0, 'began': 104.0}, {'time_to_tcp': 3, 'time_to_healthy': '3.5'},
     {'stopped': [{'pid': 7}]}, {'seconds': 7.5, 'stop_release_s': 4.0, 'load_s': 3.0, 'gate_s': 0.5, 'old_server': True}),
    # a stopped service started with nothing to stop: no old server, no window; the parts still shown
    ({'action': 'start', 'dark_from': 100.0, 'began': 100.0}, {'time_to_tcp': 3, 'time_to_healthy': 4}, {'stopped': []},
     {'seconds': None, 'stop_release_s': 0.0, 'load_s': 3.0, 'gate_s': 1.0, 'old_server': False}),
    # the new server never answered: no end to the window
    ({'action': 'restart', 'dark_from': 100.0, 'began': 101.0}, {'time_to_tcp': None, 'time_to_healthy': None}, {},
     {'seconds': None, 'stop_release_s': 1.0, 'load_s': None, 'gate_s': None, 'old_server': True}),
    # nothing noted (an older state, or undefined values)
    (None, None, None, {'seconds': None, 'stop_release_s': None, 'load_s': None, 'gate_s': None, 'old_server': False}),
])
def test_dark_window(state, gate, stopped, expected):
    assert cutover_dark_window(state, gate, stopped) == expected


def test_dark_window_in_the_output_and_the_record():
    changes = {'dark_from': 1000.0, 'began': 1001.0, 'gate': {'time_to_tcp': 2.0, 'time_to_healthy': 3.25, 'elapsed': 5}}
    output = cutover_outcome(state(**changes), False)['output']
    assert output['dark_window'] == {'seconds': 4.2, 'stop_release_s': 1.0, 'load_s': 2.0, 'gate_s': 1.2, 'old_server': True}
    assert cutover_outcome(state(action='none', **changes), False)['output']['dark_window'] is None
    assert cutover_outcome(state(**changes), True)['output']['dark_window'] is None  # check mode measures nothing
    record = cutover_record(dict(state(**changes), stage={
        'mode': 'fit', 'message': 'reading 2.00 GiB of 2 file(s)', 'total_bytes': 2 << 30, 'resident_before': 0,
        'resident_after': 2 << 30, 'read_bytes': 2 << 30, 'seconds': 1.0, 'gb_per_s': 2.147}), {}, {}, {}, {},
        changes['gate'], {}, '/kg')
    assert record['dark_window'] == '4.2 s (stop + release 1.0 s, load 2.0 s, gate 1.2 s)'
    assert record['stage'] == ('reading 2.00 GiB of 2 file(s) (mode fit): read 2.00 GiB in 1.0 s (2.15 GB/s); '
                               'resident 0.00 of 2.00 GiB before, 2.00 after')


# ---- cutover_known_good: the manifest a passing cutover keeps ---------------------------------------------------------

def test_known_good_manifest_of_a_passing_cutover():
    state = {'action': 'start', 'dark_from': 100.0, 'began': 104.0, 'perf': {'decode_tok_s': 812.5},
             'versions': {'sglang': '0.5.23'}, 'files': [{'src': '/etc/systemd/system/sglang.service'}]}
    inputs = cutover_inputs({'manager': 'systemd', 'command': ['/opt/v/bin/python3', '-m', 'sglang.launch_server'],
                             'boot': 'enabled', 'cache_dir': '/var/cache/sglang', 'sandbox': ['ProtectSystem=strict'],
                             'exposure': {'after': 4.2}, 'environment_names': ['HF_HOME']},
                            {'environment': {'CUDA_HOME': '/usr/local/cuda'}})
    gate = {'time_to_tcp': 3, 'time_to_healthy': 3.5}
    stopped = {'stopped': [{'pid': 7}]}
    manifest = cutover_known_good(state, inputs, gate, stopped, 'sglang.service',
                                  {'sitecustomize': '/usr/lib/python3/sitecustomize.py', 'block': 'import os'})
    assert manifest == {
        'source': 'cutover', 'unit': 'sglang.service', 'manager': 'systemd',
        'command': ['/opt/v/bin/python3', '-m', 'sglang.launch_server'], 'time_to_healthy': 3.5,
        'dark_window': cutover_dark_window(state, gate, stopped), 'perf': {'decode_tok_s': 812.5},
        'sitecustomize': '/usr/lib/python3/sitecustomize.py', 'sitecustomize_block': 'import os',
        'record': {'boot': 'enabled', 'cache_dir': '/var/cache/sglang', 'sandbox': ['ProtectSystem=strict'],
                   'exposure': {'after': 4.2}, 'environment_names': ['HF_HOME'],
                   'cuda_environment': {'CUDA_HOME': '/usr/local/cuda'}, 'versions': {'sglang': '0.5.23'}}}
    assert manifest['dark_window']['seconds'] == 7.5


def test_known_good_manifest_without_a_gate_a_stop_or_a_managed_block():
    manifest = cutover_known_good({}, cutover_inputs({}, {}), None, None, 'sglang', None)
    assert (manifest['manager'], manifest['command'], manifest['time_to_healthy'], manifest['perf']) == ('systemd', [], None, None)
    assert (manifest['sitecustomize'], manifest['sitecustomize_block']) == (None, '')
    assert manifest['record']['cuda_environment'] == {}
    assert manifest['dark_window']['seconds'] is None


# ---- the gate's call gives the run's host lock back (filter cutover_gives_back_lock) --------------------------------

KEPT = {'previous': {'exists': True}, 'failure': ''}


def test_the_check_of_an_unchanged_server_is_the_last_call_and_gives_the_lock_back():
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover import cutover_gives_back_lock
    assert cutover_gives_back_lock(KEPT, 'check', 'run-1') is True
    assert cutover_gives_back_lock(KEPT, 'check', 'run-1', False, ['h1'], False) is True


@pytest.mark.parametrize('state,mode,run_id,routed,replica,check_mode', [
    (KEPT, 'start', 'run-1', False, [], False),                               # a started server: the record follows
    (KEPT, 'check', '', False, [], False),                                    # no lock handed in
    (KEPT, 'check', 'run-1', True, [], False),                                # the router check follows
    (KEPT, 'check', 'run-1', 'True', [], False),
    (KEPT, 'check', 'run-1', False, ['h1', 'h2'], False),                     # the other rank's barrier follows
    (KEPT, 'check', 'run-1', False, [], True),                                # check mode: no gate at all
    ({'previous': {'exists': False}}, 'check', 'run-1', False, [], False),    # the first known-good save follows
    ({'previous': {}}, 'check', 'run-1', False, [], False),
    ({'previous': {'exists': True}, 'failure': 'degraded'}, 'check', 'run-1', False, [], False),
    (None, 'check', 'run-1', False, [], False)])
def test_the_lock_stays_with_the_playbook_when_anything_follows_the_gate(state, mode, run_id, routed, replica, check_mode):
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover import cutover_gives_back_lock
    assert cutover_gives_back_lock(state, mode, run_id, routed, replica, check_mode) is False


@pytest.mark.parametrize('lock,given_back', [
    ({'result': 'released'}, 'run-1'), ({'result': 'expired'}, 'run-1'), ({'result': 'not_held'}, 'run-1'),
    ({'result': 'other'}, ''), ({'result': 'error', 'reason': 'timed out'}, ''), ({}, ''), (None, '')])
def test_the_output_names_the_run_whose_lock_the_gate_gave_back(lock, given_back):
    """lock_given_back names the run (the playbook compares it with its own run id: a second pass of site.yml in the
    same ansible-playbook run, with a lock of its own, still gives that one back)."""
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover import cutover_outcome
    state = {'action': 'none', 'previous': {'exists': True}, 'lock_run_id': 'run-1', 'gate': {'state': 'ready', 'lock': lock}}
    assert cutover_outcome(state)['output']['lock_given_back'] == given_back


@pytest.mark.parametrize('service,unit,known', [
    ({'unit': 'sglang.service', 'unit_status': {'ActiveState': 'active', 'MainPID': '7'}}, 'sglang.service',
     {'ActiveState': 'active', 'MainPID': '7'}),
    ({'unit': 'sglang.service', 'unit_status': {'ActiveState': 'active'}}, 'other.service', {}),  # cutover_unit differs
    ({'unit': 'sglang.service', 'unit_status': None}, 'sglang.service', {}),
    ({'unit': 'sglang.service', 'unit_status': 'a=b'}, 'sglang.service', {}),
    ({'unit': 'sglang.service', 'unit_status': {'LoadState': 'loaded'}}, 'sglang.service', {}),  # no ActiveState
    ({'unit': 'sglang.service', 'unit_status': {}}, 'sglang.service', {}),
    ({'unit': 'sglang.service'}, 'sglang.service', {}),
    (None, 'sglang.service', {})])
def test_the_cutover_takes_only_a_whole_status_of_its_own_unit(service, unit, known):
    """A hand-written or odd unit_status (null, text, no ActiveState) or one of another unit than cutover_unit is no
    status: the cutover reads the unit itself (breaker review)."""
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover import cutover_known_status
    assert cutover_known_status(service, unit) == known


def _facts(**changes):
    """Host facts of a converged host: one server, the unit's (pid 7), read under run-1's lock."""
    facts = {'lock_run_id': 'run-1', 'read_as_root': True, 'strays': [],
             'servers': [{'main_pid': 7, 'managed': True, 'managed_by': {'manager': 'systemd', 'unit': 'sglang.service'}}]}
    facts.update(changes)
    return facts


_STRAY = {'main_pid': 9, 'managed': False, 'managed_by': {'manager': None, 'unit': None}}
_OTHER_UNIT = {'main_pid': 11, 'managed': True, 'managed_by': {'manager': 'systemd', 'unit': 'other.service'}}
_SUPERVISED = {'main_pid': 12, 'managed': True, 'managed_by': {'manager': 'supervisord', 'unit': None}}


def test_this_runs_facts_without_strays_rule_the_scan_out():
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover_host import cutover_strays_ruled_out
    assert cutover_strays_ruled_out(_facts(), 'sglang.service', 'systemd', 7, 'run-1', 'all') is True
    assert cutover_strays_ruled_out(_facts(), 'sglang.service', 'systemd', '7', 'run-1', 'all') is True  # a templated pid
    assert cutover_strays_ruled_out(_facts(), 'sglang.service', 'systemd', 7, 'run-1', 'all') is True


@pytest.mark.parametrize('facts,unit,manager,pid,run_id', [
    (_facts(), 'sglang.service', 'systemd', 7, ''),                           # no lock: facts of any age, any run
    (_facts(lock_run_id=''), 'sglang.service', 'systemd', 7, 'run-1'),        # facts read without a lock (check mode)
    (_facts(lock_run_id='run-0'), 'sglang.service', 'systemd', 7, 'run-1'),   # an earlier run's (a fact cache)
    ({k: v for k, v in _facts().items() if k != 'lock_run_id'}, 'sglang.service', 'systemd', 7, 'run-1'),
    (_facts(), 'sglang.service', 'supervisord', 7, 'run-1'),                 # the scan excludes supervisord's pid
    (_facts(read_as_root=False), 'sglang.service', 'systemd', 7, 'run-1'),   # another user misses others' processes
    ({k: v for k, v in _facts().items() if k != 'read_as_root'}, 'sglang.service', 'systemd', 7, 'run-1'),
    (_facts(strays=[_STRAY]), 'sglang.service', 'systemd', 7, 'run-1'),
    (_facts(servers=_facts()['servers'] + [_STRAY], strays=[_STRAY]), 'sglang.service', 'systemd', 7, 'run-1'),
    (_facts(servers=_facts()['servers'] + [_OTHER_UNIT]), 'sglang.service', 'systemd', 7, 'run-1'),  # a stray to the scan
    (_facts(servers=_facts()['servers'] + [_SUPERVISED]), 'sglang.service', 'systemd', 7, 'run-1'),
    (_facts(), 'other.service', 'systemd', 7, 'run-1'),                       # the facts' unit was not the cutover's
    (_facts(servers=[]), 'sglang.service', 'systemd', 7, 'run-1'),            # a failed discovery lists none
    (_facts(servers=None), 'sglang.service', 'systemd', 7, 'run-1'),
    (_facts(servers='x'), 'sglang.service', 'systemd', 7, 'run-1'),
    (_facts(), 'sglang.service', 'systemd', 8, 'run-1'),                      # restarted since: another main pid
    (_facts(), 'sglang.service', 'systemd', 0, 'run-1'),
    (_facts(), 'sglang.service', 'systemd', None, 'run-1'),
    (_facts(), 'sglang.service', 'systemd', 'x', 'run-1'),
    (_facts(servers=[{'main_pid': 7}]), 'sglang.service', 'systemd', 7, 'run-1'),  # no managed_by: not proven
    ({k: v for k, v in _facts().items() if k != 'strays'}, 'sglang.service', 'systemd', 7, 'run-1'),  # no stray list
    (_facts(strays=None), 'sglang.service', 'systemd', 7, 'run-1'),
    (_facts(strays={}), 'sglang.service', 'systemd', 7, 'run-1'),
    (_facts(lock_run_id=1), 'sglang.service', 'systemd', 7, True),           # equal, but no run id
    (_facts(servers=[dict(_facts()['servers'][0], main_pid=1)]), 'sglang.service', 'systemd', True, 'run-1'),
    (_facts(), 'sglang.service', 'systemd', '7.5', 'run-1'),                 # a fraction is no pid
    (_facts(), 'sglang.service', 'systemd', 7.5, 'run-1'),
    (None, 'sglang.service', 'systemd', 7, 'run-1'),
    ({}, 'sglang.service', 'systemd', 7, 'run-1')])
def test_anything_short_of_proof_leaves_the_stray_scan_to_run(facts, unit, manager, pid, run_id):
    """The verify step skips its scan only on this run's facts, read as root, that saw the unit's running server and
    nothing else (breaker review: the facts' privileges, the scan's scope)."""
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover_host import cutover_strays_ruled_out
    assert cutover_strays_ruled_out(facts, unit, manager, pid, run_id, 'all') is False


def test_a_scan_of_unknown_scope_is_never_ruled_out():
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover_host import cutover_strays_ruled_out
    assert cutover_strays_ruled_out(_facts(), 'sglang.service', 'systemd', 7, 'run-1') is False


def test_a_scan_scoped_to_the_port_is_never_ruled_out():
    """Scoped to a port, the scan also proves an orphan by its listening on that port; the facts read no port."""
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover_host import cutover_strays_ruled_out
    assert cutover_strays_ruled_out(_facts(), 'sglang.service', 'systemd', 7, 'run-1', 'port') is False


GATE_SETTINGS = {'health_request_timeout': 30, 'health_interval': 5, 'health_budget': 900, 'health_round_seconds': 30,
                 'record_path': '/root/production_v2.md'}


def test_the_cutover_preflight_passes_the_defaults_on_a_healthy_host():
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover_host import cutover_preflight
    assert cutover_preflight(GATE_SETTINGS, {'gpus': [], 'gpu_count': 0}) == {'problems': []}
    assert cutover_preflight(dict(GATE_SETTINGS, health_request_timeout='20', health_budget='20.0'), None) == {'problems': []}


@pytest.mark.parametrize('change', [
    {'health_request_timeout': 19}, {'health_interval': 0}, {'health_round_seconds': 0}, {'health_budget': 29},
    {'record_path': 'production_v2.md'}, {'record_path': None}, {'health_request_timeout': 'soon'}])
def test_each_bad_gate_setting_is_a_problem_naming_them_all(change):
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover_host import CHECK_GATE_SETTINGS, cutover_preflight
    problems = cutover_preflight(dict(GATE_SETTINGS, **change), {})['problems']
    assert [p['check'] for p in problems] == [CHECK_GATE_SETTINGS]
    assert 'cutover_health_request_timeout must be at least 20 s' in problems[0]['message']
    assert str(list(change.values())[0]) in problems[0]['message'], 'the message shows the values it read'


def test_a_host_that_needs_a_reboot_is_refused_with_the_gate_settings_at_once():
    """Every problem at once: a lost GPU (the GPU rule, count not checked) and a bad setting, each under its check."""
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover_host import (
        CHECK_GATE_SETTINGS, CHECK_GPUS, cutover_preflight)
    facts = {'gpus': [{'index': 0, 'mig_mode': 'Disabled'}], 'gpu_count': 1,
             'lost_gpus': [{'pci_bus_id': '0000:BA:00.0', 'error': 'Unknown Error'}]}
    problems = cutover_preflight(dict(GATE_SETTINGS, health_interval=0), facts)['problems']
    assert [p['check'] for p in problems] == [CHECK_GATE_SETTINGS, CHECK_GPUS]
    assert 'is lost' in problems[1]['message'] and 'reboot' in problems[1]['message']
    assert cutover_preflight(GATE_SETTINGS, {'gpus': [], 'gpu_count': 0, 'lost_gpus': []})['problems'] == []
