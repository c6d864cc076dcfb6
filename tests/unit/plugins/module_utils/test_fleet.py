# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _fleet as f

# The filter wrappers (plugins/filter/fleet.py, reading hostvars) run through ansible-playbook in
# tests/integration/test_example_inventories.py: importing controller code here would switch module_utils' warnings to controller mode
# for the module tests that run later in this process.

HOSTS8 = ['gpu-%02d' % i for i in range(1, 9)]


@pytest.mark.parametrize('spec, total, expected', [
    (1, 8, 1), ('1', 8, 1), ('25%', 8, 2), ('25%', 16, 4), ('25%', 3, 1), ('100%', 5, 5),
    ('50%', 5, 2), (' 3 ', 8, 3), ('10%', 4, 1),
])
def test_batch_size(spec, total, expected):
    assert f.batch_size(spec, total) == expected


@pytest.mark.parametrize('spec', [0, '-1', 'x', '0%', '101%', 'a%', ''])
def test_batch_size_rejects(spec):
    with pytest.raises(ValueError):
        f.batch_size(spec, 8)


def test_default_plan_is_canary_then_quarters():
    p = f.plan(HOSTS8)
    assert p['batches'] == [['gpu-01'], ['gpu-02', 'gpu-03'], ['gpu-04', 'gpu-05'], ['gpu-06', 'gpu-07'], ['gpu-08']]
    assert p['batch_sizes'] == [1, 2, 2, 2, 1]
    assert p['order'] == HOSTS8
    assert p['canary'] == ['gpu-01']


def test_named_canary_goes_first_and_order_is_kept():
    p = f.plan(HOSTS8, batches=['1', '50%'], canary='gpu-05')
    assert p['batches'] == [['gpu-05'], ['gpu-01', 'gpu-02', 'gpu-03', 'gpu-04'], ['gpu-06', 'gpu-07', 'gpu-08']]


def test_sixteen_workers():
    p = f.plan(['w%02d' % i for i in range(16)])
    assert p['batch_sizes'] == [1, 4, 4, 4, 3]


def test_replica_stays_in_one_batch_and_counts_as_one_unit():
    hosts = ['a', 'r0', 'b', 'r1', 'c']
    p = f.plan(hosts, {'r0': 'big', 'r1': 'big'}, batches=['1', '1'])
    assert p['units'] == [['a'], ['r0', 'r1'], ['b'], ['c']]
    assert p['batches'] == [['a'], ['r0', 'r1'], ['b'], ['c']]
    assert p['batch_sizes'] == [1, 2, 1, 1]


def test_replica_as_canary():
    p = f.plan(['a', 'r0', 'r1', 'b'], {'r0': 'big', 'r1': 'big'}, canary='r1')
    assert p['batches'][0] == ['r0', 'r1']
    assert p['canary'] == ['r0', 'r1']


def test_single_value_and_duplicates():
    p = f.plan(['a', 'b', 'a', 'c'], batches=2)
    assert p['batches'] == [['a', 'b'], ['c']]


@pytest.mark.parametrize('hosts, kwargs', [
    ([], {}),
    (['a'], {'canary': 'zz'}),
    (['a'], {'batches': ['0']}),
])
def test_plan_rejects(hosts, kwargs):
    with pytest.raises(ValueError):
        f.plan(hosts, **kwargs)


def test_summary_rows():
    batches = [['a'], ['b', 'c'], ['d']]
    results = {
        'a': {'result': 'deployed', 'time_to_healthy_s': 4.2, 'rolled_back': False},
        'b': {'result': 'deployed', 'time_to_healthy_s': 4.0, 'rolled_back': False},
        'c': {'result': 'rolled_back', 'rolled_back': True, 'failure': 'gate'},
    }
    failures = {'c': {'msg': 'Cutover failed', 'task': 'Fail the host'}}
    rows = f.summary_rows(['a', 'b', 'c', 'd'], batches, results, failures)
    assert [(r['host'], r['batch'], r['result']) for r in rows] == [
        ('a', 1, 'deployed'), ('b', 2, 'deployed'), ('c', 2, 'rolled_back'), ('d', 3, 'not started')]
    assert rows[2]['failure'] == 'Cutover failed' and rows[2]['rolled_back'] is True
    assert [(r['time_to_healthy_text'], r['rolled_back_text']) for r in rows] == [
        ('4.2', 'no'), ('4.0', 'no'), ('-', 'yes'), ('-', 'no')]


def test_summary_rows_of_a_rollback_run_say_the_hosts_were_rolled_back():
    """A rollback playbook run: each host put back is 'rolled back to entry NAME' and its rolled-back cell says so;
    an unchanged server (only checked) has no time to healthy."""
    heading = f.summary_heading('inferops.sglang.rollback')
    results = {'a': {'result': 'deployed', 'rollback_to': '20261205T153000Z', 'time_to_healthy_s': 12.25},
               'b': {'result': 'unchanged', 'time_to_healthy_s': None}}
    rows = f.summary_rows(['a', 'b'], [['a'], ['b']], results, {}, heading=heading)
    assert [(r['shown'], r['time_to_healthy_text'], r['rolled_back_text']) for r in rows] == [
        ('rolled back to entry 20261205T153000Z', '12.2', 'yes (requested)'), ('unchanged', '-', 'no')]


def test_summary_rows_failure_before_cutover_and_silent_loss():
    batches = [['a'], ['b', 'c'], ['d']]
    rows = f.summary_rows(['a', 'b', 'c', 'd'], batches, {'a': {'result': 'unchanged'}, 'c': {'result': 'deployed'}},
                          {})
    assert [r['result'] for r in rows] == ['unchanged', 'failed', 'deployed', 'not started']
    rows = f.summary_rows(['a', 'b'], [['a'], ['b']], {}, {'a': {'msg': 'pre-flight: no GPUs', 'task': 'Check'}})
    assert rows[0] == {'host': 'a', 'batch': 1, 'result': 'failed', 'failure': 'pre-flight: no GPUs',
                       'failed_task': 'Check', 'ok': False, 'sglang_version': '-', 'dark_window_text': '-',
                       'changes': [], 'shown': 'failed', 'time_to_healthy_text': '-', 'rolled_back_text': 'no'}
    assert rows[1]['result'] == 'not started'


def test_summary_rows_check_mode_lets_the_rollout_go_on():
    """C22: in check mode (--check) a host a real run would change is 'would_adopt', 'would_start' or 'would_restart',
    never 'deployed'; the rollout goes on after it (ok), as after 'unchanged', and stops after a failure."""
    batches = [['a'], ['b', 'c'], ['d', 'e']]
    results = {
        'a': {'result': 'would_adopt', 'action': 'start', 'check_mode': True},
        'b': {'result': 'would_restart', 'action': 'restart', 'check_mode': True,
              'args_diff': {'changed': {'chunked-prefill-size': {'old': 8192, 'new': 4096}}}},
        'c': {'result': 'unchanged', 'action': 'none', 'check_mode': True},
        'd': {'result': 'would_start', 'action': 'start', 'check_mode': True},
        'e': {'result': 'degraded', 'action': 'none', 'check_mode': True},
    }
    failures = {'e': {'msg': 'The running server is degraded', 'task': 'Fail the host'}}
    rows = f.summary_rows(['a', 'b', 'c', 'd', 'e'], batches, results, failures)
    assert [(r['result'], r['ok']) for r in rows] == [
        ('would_adopt', True), ('would_restart', True), ('unchanged', True), ('would_start', True), ('degraded', False)]
    assert rows[1]['args_diff']['changed'] == {'chunked-prefill-size': {'old': 8192, 'new': 4096}}


def test_summary_rows_ok_only_where_the_rollout_goes_on():
    """The one rule the end of a batch reads (rows whose ok is false stop the rollout)."""
    rows = f.summary_rows(['a', 'b', 'c', 'd', 'e'], [['a', 'b', 'c'], ['d'], ['e']],
                          {'a': {'result': 'deployed'}, 'b': {'result': 'rolled_back'}, 'c': {'result': 'stopped'},
                           'd': {'result': 'unchanged'}},
                          {'b': {'msg': 'gate', 'task': 'Gate'}, 'c': {'msg': 'gate', 'task': 'Gate'}})
    assert [(r['result'], r['ok']) for r in rows] == [
        ('deployed', True), ('rolled_back', False), ('stopped', False), ('unchanged', True), ('not started', True)]


def test_summary_rows_show_each_hosts_sglang_version_change():
    """Issue 15: the SGLang column - the change against the previous known-good configuration (a canary upgraded,
    a host of a later batch unchanged, one whose previous known-good recorded no version, one not started)."""
    results = {
        'a': {'result': 'deployed', 'versions': {'sglang': '0.5.10', 'torch': None},
              'previous_versions': {'sglang': '0.5.9', 'torch': '2.9.1+cu130'}},
        'b': {'result': 'unchanged', 'versions': {'sglang': '0.5.9'}, 'previous_versions': {'sglang': '0.5.9'}},
        'c': {'result': 'deployed', 'versions': {'sglang': '0.5.9'}, 'previous_versions': {}},
    }
    rows = f.summary_rows(['a', 'b', 'c', 'd'], [['a'], ['b', 'c'], ['d']], results, {})
    assert [r['sglang_version'] for r in rows] == ['0.5.9 -> 0.5.10', '0.5.9', '0.5.9', '-']
    assert rows[0]['versions'] == {'sglang': '0.5.10', 'torch': None}


@pytest.mark.parametrize('fleet, expected', [
    ({'plan': f.plan(HOSTS8)}, [1, 2, 2, 2, 1]),
    ({}, [1]),
    (None, [1]),
    ({'plan': {}}, [1]),
    ({'plan': {'batch_sizes': []}}, [1]),
])
def test_serial_is_the_plan_or_one_host_at_a_time(fleet, expected):
    assert f.serial(fleet) == expected


@pytest.mark.parametrize('sizes', [[0], [1, -2], ['2'], [True], 3])
def test_serial_rejects_a_bad_plan(sizes):
    with pytest.raises(ValueError, match='positive host counts'):
        f.serial({'plan': {'batch_sizes': sizes}})


def test_summary_rows_a_kept_server_is_shown_as_kept_and_stops_the_rollout():
    """Field case C36: the check of an unchanged server failed while it answers /health; it was left serving (result
    'kept'), the host failed: the summary says kept, and the rollout stops after the batch."""
    rows = f.summary_rows(['a', 'b'], [['a'], ['b']], {'a': {'result': 'kept', 'action': 'none'}},
                          {'a': {'msg': 'SGLang on port 30000 is not healthy: the server is broken', 'task': 'Gate'}})
    assert [(r['result'], r['ok']) for r in rows] == [('kept', False), ('not started', True)]
    assert rows[0]['failure'] == 'SGLang on port 30000 is not healthy: the server is broken'


@pytest.mark.parametrize('window, text', [
    ({'seconds': 12.84, 'stop_release_s': 0.5, 'load_s': 10.0, 'gate_s': 2.3}, '12.8 (0.5 + 10.0 + 2.3)'),
    ({'seconds': 4.0, 'stop_release_s': None, 'load_s': 3.0, 'gate_s': 1.0}, '4.0 (- + 3.0 + 1.0)'),
    ({'seconds': None, 'load_s': 3.0}, '-'),  # no old server answered before
    (None, '-'),  # unchanged or not started
])
def test_dark_window_column(window, text):
    """Issue 32: the fleet summary's dark-window column, from each host's cutover output."""
    assert f.dark_window_text(window) == text
    rows = f.summary_rows(['a'], [['a']], {'a': {'result': 'deployed', 'dark_window': window}}, {})
    assert rows[0]['dark_window_text'] == text


# ---- the summary says what the run did (issue 30) -------------------------------------------------------------------

@pytest.mark.parametrize('playbook, check_mode, kind, title, done', [
    ('inferops.sglang.site', False, 'rollout', 'SGLang fleet rollout', 'deployed'),
    ('inferops.sglang.restart', False, 'restart', 'SGLang fleet restart', 'restarted'),
    ('inferops.sglang.rollback', False, 'rollback', 'SGLang fleet rollback', 'rolled back'),
    ('', False, 'rollout', 'SGLang fleet rollout', 'deployed'),
    (None, False, 'rollout', 'SGLang fleet rollout', 'deployed'),
    ('inferops.sglang.restart', True, 'check', 'SGLang fleet check (restart, nothing changed)', 'would change'),
])
def test_summary_heading(playbook, check_mode, kind, title, done):
    assert f.summary_heading(playbook, check_mode) == {'kind': kind, 'title': title, 'done': done}


def test_change_texts_plain_with_markers():
    """Removed and added flags are marked; no Markdown or HTML (the terminal shows these lines as they are)."""
    diff = {'changed': {'mem-fraction-static': {'old': '0.88', 'new': '0.85'}},
            'added': {'enable-metrics': True}, 'removed': {'chunked-prefill-size': '4096', 'log-requests': True}}
    assert f.change_texts(diff) == ['--mem-fraction-static 0.88 -> 0.85', 'added --enable-metrics',
                                    'removed --chunked-prefill-size 4096', 'removed --log-requests']
    assert f.change_texts(None) == []
    assert not [t for t in f.change_texts(diff) if '<br>' in t]


def test_summary_rows_words_of_the_run_and_attempted_change():
    """A restart run's healthy host is 'restarted', a rollback's names the entry; a host that failed in its pre-flight
    shows the change it attempted instead of 'none'."""
    restart = f.summary_heading('inferops.sglang.restart')
    rows = f.summary_rows(['a'], [['a']], {'a': {'result': 'deployed'}}, {}, heading=restart)
    assert rows[0]['shown'] == 'restarted' and rows[0]['result'] == 'deployed' and rows[0]['ok']
    rollback = f.summary_heading('inferops.sglang.rollback')
    rows = f.summary_rows(['a'], [['a']], {'a': {'result': 'deployed', 'rollback_to': '20261205T153000Z'}}, {},
                          heading=rollback)
    assert rows[0]['shown'] == 'rolled back to entry 20261205T153000Z'
    attempted = {'a': {'changed': {'mem-fraction-static': {'old': '0.85', 'new': '0.88'}}}}
    rows = f.summary_rows(['a'], [['a']], {}, {'a': {'msg': 'pre-flight failed', 'task': 'Pre-flight'}}, attempted)
    assert rows[0]['changes'] == ['--mem-fraction-static 0.85 -> 0.88']
    assert rows[0]['shown'] == 'failed'
    rows = f.summary_rows(['a'], [['a']], {'a': {'result': 'rolled_back', 'args_diff': {'added': {'x': '1'}}}},
                          {'a': {'msg': 'gate failed'}}, attempted)
    assert rows[0]['changes'] == ['added --x 1'] and rows[0]['shown'] == 'rolled back'


@pytest.mark.parametrize('seconds, text', [(4.25, '4.2'), ('7', '7.0'), (None, '-'), ('', '-'), ('-', '-'), ([], '-')])
def test_time_to_healthy_cell(seconds, text):
    rows = f.summary_rows(['a'], [['a']], {'a': {'result': 'deployed', 'time_to_healthy_s': seconds}}, {})
    assert rows[0]['time_to_healthy_text'] == text


@pytest.mark.parametrize('rolled_back, text', [(True, 'yes'), ('True', 'yes'), ('false', 'no'), (None, 'no')])
def test_rolled_back_cell_takes_ansible_truth(rolled_back, text):
    rows = f.summary_rows(['a'], [['a']], {'a': {'result': 'deployed', 'rolled_back': rolled_back}}, {})
    assert rows[0]['rolled_back_text'] == text
