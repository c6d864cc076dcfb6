# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pure helpers of the operator playbooks (rollback entry lookup, status table)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import calendar
import time

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _operations as o

KG = '/var/lib/inferops-sglang/known-good'
HIST = '/var/lib/inferops-sglang/history'
CURRENT = {'exists': True, 'dir': KG, 'history_dir': HIST, 'manifest': {'saved_at': '2026-12-01T03:00:00Z'}}
HISTORY = [HIST + '/20261130T101010000001Z', HIST + '/20261201T020202000002Z']


def test_default_is_the_current_known_good():
    """Issue 13: rollback without inferops_sglang_rollback_to puts the current known-good back."""
    assert o.known_good_entry('', CURRENT, HISTORY) == {
        'name': 'current', 'dir': KG, 'current': True, 'error': '',
        'available': ['current', '20261201T020202000002Z', '20261130T101010000001Z']}
    assert o.known_good_entry(None, CURRENT, HISTORY)['current'] is True
    assert o.known_good_entry('current', CURRENT, [])['dir'] == KG


def test_history_entry_by_name_or_path():
    entry = o.known_good_entry('20261130T101010000001Z', CURRENT, HISTORY)
    assert (entry['name'], entry['dir'], entry['current'], entry['error']) == ('20261130T101010000001Z', HISTORY[0], False, '')
    assert o.known_good_entry(HISTORY[1] + '/', CURRENT, HISTORY)['dir'] == HISTORY[1]
    # Names alone are placed under the history directory.
    assert o.known_good_entry('20261130T101010000001Z', CURRENT, ['20261130T101010000001Z'])['dir'] == HISTORY[0]


def test_unknown_entry_lists_the_available_ones_newest_first():
    """Issue 13: an unknown entry fails before anything changes, listing the entries there are."""
    entry = o.known_good_entry('20250101T000000000000Z', CURRENT, HISTORY)
    msg = entry['error']
    assert entry['dir'] is None
    assert "no known-good history entry '20250101T000000000000Z'" in msg
    assert 'available: current, 20261201T020202000002Z, 20261130T101010000001Z' in msg
    assert 'inferops_sglang_rollback_to' in msg


def test_no_known_good_at_all():
    entry = o.known_good_entry('', {'exists': False, 'dir': KG, 'history_dir': HIST}, [])
    assert 'no current known-good configuration in %s' % KG in entry['error']
    assert 'none - run the site playbook first' in entry['error'] and entry['available'] == []


def test_args_digest_is_stable_and_ignores_order_and_underscores():
    a = o.args_digest(['--model-path', '/m', '--tp', '8', '--mem-fraction-static', '0.85'])
    b = o.args_digest(['--tp', '8', '--mem_fraction_static', '0.85', '--model-path', '/m'])
    c = o.args_digest(['--tp', '8', '--mem-fraction-static', '0.83', '--model-path', '/m'])
    assert a == b and a != c and len(a) == 12
    assert o.args_digest({'tp': 8, 'model-path': '/m', 'mem-fraction-static': 0.85}) == a
    assert o.args_digest(None) == '-'


@pytest.mark.parametrize('seconds, text', [
    (None, '-'), (-5, '-'), (0, '0s'), (42, '42s'), (423, '7m 3s'), (18720, '5h 12m'), (2 * 86400 + 3 * 3600 + 5, '2d 3h'),
])
def test_age_text(seconds, text):
    assert o.age_text(seconds) == text


def _facts(args, managed=True, version='0.5.23', pid=4242):
    return {'python': {'sglang_version': version},
            'servers': [{'main_pid': pid, 'port': 30000, 'managed': managed, 'args': args}]}


def test_status_rows():
    """Issue 13: one row per server - version, argument digest, health, router state, known-good age."""
    now = calendar.timegm(time.strptime('2026-12-01T05:00:00Z', '%Y-%m-%dT%H:%M:%SZ'))
    args = ['--tp', '8']
    data = {
        'w1': {'facts': _facts(args), 'known_good': CURRENT,
               'probe': {'port': 30000, 'health': {'state': 'ready'},
                         'router': {'routed': True, 'operation': 'none', 'healthy': True}}},
        'w2': {'facts': {'python': {'sglang_version': None}, 'servers': []},
               'known_good': {'exists': False, 'manifest': {}},
               'probe': {'port': 30000, 'health': {'state': 'failed', 'reason': 'connection refused   (tcp)'},
                         'router': {'routed': True, 'operation': 'add', 'healthy': False}}},
        'r1': {'facts': _facts(args, pid=7), 'known_good': CURRENT,
               'probe': {'port': 30000, 'health': {'state': 'ready'},
                         'router': {'routed': False, 'why': 'not routed (node rank 1)'}}},
        'w3': {'facts': _facts(args), 'known_good': CURRENT,
               'probe': {'port': 30000, 'health': {'state': 'ready'},
                         'router': {'routed': True, 'failed': True, 'msg': 'connection refused'}}},
    }
    rows = o.status_rows(['w1', 'w2', 'r1', 'w3', 'w4'], data, now)
    w1, w2, r1, w3, w4 = rows
    assert w1 == {'host': 'w1', 'model': '-', 'layout': '8x1x1', 'drift': '-',
                  'sglang': '0.5.23', 'args_digest': o.args_digest(args), 'pid': 4242,
                  'health': 'healthy', 'router': 'in, healthy', 'known_good_age': '2h 0m',
                  'known_good_saved_at': '2026-12-01T03:00:00Z'}
    assert w2['sglang'] == '-' and w2['args_digest'] == '-' and w2['pid'] is None
    assert w2['health'] == 'unhealthy (connection refused (tcp))'
    assert w2['router'] == 'out' and w2['known_good_age'] == 'none'
    assert r1['router'] == 'not routed (node rank 1)' and r1['args_digest'] == w1['args_digest']
    assert w3['router'] == 'unknown (connection refused)'
    assert w4['health'] == 'not probed' and w4['router'] == '-'


def test_status_row_without_router_and_with_a_stray():
    probe = {'port': 30000, 'health': {'state': 'ready'}, 'router': {}}
    row = o.status_row('w1', _facts(['--tp', '4'], managed=False), {}, probe, 0)
    assert row['router'] == '-' and row['args_digest'] == o.args_digest(['--tp', '4'])


# ---- the table a person reads at a glance (issue 30) ----------------------------------------------------------------

@pytest.mark.parametrize('args, layout, model', [
    (['--model-path', '/models/qwen', '--tp-size', '8'], '8x1x1', '/models/qwen'),
    (['--model', 'm', '--tensor-parallel-size', '4', '--pp-size', '2', '--dp-size', '3'], '4x2x3', 'm'),
    ({'model_path': 'm', 'tp_size': 2, 'data_parallel_size': 2}, '2x1x2', 'm'),
    ([], '1x1x1', '-'),
    (None, '-', '-'),
])
def test_layout_and_model(args, layout, model):
    """tp 3 and tp 8 no longer look alike (they did as an args digest)."""
    assert o.layout_text(args) == layout and o.model_text(args) == model


@pytest.mark.parametrize('running, inventory, expected', [
    (['--mem-fraction-static', '0.85', '--port', '30000'], {'mem-fraction-static': 0.88},
     'inventory differs: mem-fraction-static 0.85 -> 0.88'),
    (['--mem-fraction-static', '0.88', '--port', '30000'], {'mem_fraction_static': '0.88'}, 'in line with the inventory'),
    (['--tp-size', '8'], {'tp-size': 8, 'enable-metrics': True, 'log-requests': False},
     'inventory differs: enable-metrics (not set) -> on'),
    (['--tp-size', '8', '--api-key', 'abc'], {'tp-size': 8, 'api-key': 'xyz'}, 'in line with the inventory'),
    (None, {'tp-size': 8}, '-'),
    (['--tp-size', '8'], {}, '-'),
    (['--tp-size', '8'], None, '-'),
])
def test_drift(running, inventory, expected):
    assert o.drift_text(running, inventory) == expected


def test_status_row_full_reason_and_drift():
    """The health reason is never cut mid-word; the drift compares the inventory with what runs."""
    reason = 'the server exited with status 1 after 4.2 s: CUDA out of memory while loading the weights of layer 61'
    probe = {'port': 30000, 'health': {'state': 'failed', 'reason': reason}, 'router': {}}
    row = o.status_row('w1', _facts(['--model-path', 'q', '--mem-fraction-static', '0.85']), {}, probe, 0,
                       {'mem-fraction-static': 0.88})
    assert row['health'] == 'unhealthy (%s)' % reason
    assert row['drift'] == 'inventory differs: mem-fraction-static 0.85 -> 0.88'
    assert row['model'] == 'q' and row['layout'] == '1x1x1'


def _manifest(saved, mem, sglang=None, source='cutover'):
    out = {'saved_at': saved, 'source': source,
           'command': ['/p', '-m', 'sglang.launch_server', '--model-path', '/m', '--tp', '8', '--mem-fraction-static', mem]}
    if sglang:
        out['record'] = {'versions': {'sglang': sglang}}
    return out


def test_history_rows_newest_first_with_action_and_changes():
    """Issue 30: an operator chooses a rollback target from a listing, not from manifest.json files."""
    entries = [{'name': '20261201T000000000000Z', 'manifest': _manifest('2026-12-01T00:00:00Z', '0.88', source='hand-started')},
               {'name': '20261202T000000000000Z', 'manifest': _manifest('2026-12-02T00:00:00Z', '0.88', '0.5.9')},
               {'name': '20261202T120000000000Z', 'manifest': _manifest('2026-12-02T12:00:00Z', '0.88', '0.5.10')},
               {'name': '20200101T000000000000Z', 'manifest': {}}]
    rows = o.history_rows(_manifest('2026-12-03T00:00:00Z', '0.85', '0.5.10'), entries)
    assert [(r['entry'], r['action'], r['sglang'], r['changes']) for r in rows] == [
        ('current', 'change', '0.5.10', 'mem-fraction-static 0.88 -> 0.85'),
        ('20261202T120000000000Z', 'upgrade', '0.5.10', 'SGLang 0.5.9 -> 0.5.10'),
        # the first cutover's save against the hand-started server it replaced
        ('20261202T000000000000Z', 'adoption', '0.5.9', '-'),
        ('20261201T000000000000Z', 'hand-started server', '-', '-'),
        # an entry whose manifest could not be read: listed, nothing known of it
        ('20200101T000000000000Z', 'first kept', '-', '-'),
    ]
    assert rows[0]['arguments'] == '/m 8x1x1' and rows[0]['saved'] == '2026-12-03T00:00:00Z'
    assert rows[-1]['arguments'] == '-' and rows[-1]['saved'] == '-'


def test_history_rows_name_a_rollback_and_what_it_restored():
    """Newcomer trial: a rollback's save (its manifest names the entry in restored_from) is not called a change."""
    entries = [{'name': '20261201T000000000000Z', 'manifest': _manifest('2026-12-01T00:00:00Z', '0.88')},
               {'name': '20261202T000000000000Z', 'manifest': _manifest('2026-12-02T00:00:00Z', '0.85')}]
    current = dict(_manifest('2026-12-03T00:00:00Z', '0.88'), restored_from='20261201T000000000000Z')
    rows = o.history_rows(current, entries)
    assert [(r['entry'], r['action'], r['changes']) for r in rows] == [
        ('current', 'rollback to 20261201T000000000000Z', 'mem-fraction-static 0.85 -> 0.88'),
        ('20261202T000000000000Z', 'change', 'mem-fraction-static 0.88 -> 0.85'),
        ('20261201T000000000000Z', 'first kept', '-')]


def test_history_rows_a_rollback_to_the_hand_started_configuration_and_the_change_after_it():
    """Review: a rollback onto the hand-started entry keeps its source; it is still a rollback, and the next change
    against it is a change, not an adoption."""
    hand = _manifest('2026-12-01T00:00:00Z', '0.88', source='hand-started')
    entries = [{'name': '20261201T000000000000Z', 'manifest': hand},
               {'name': '20261202T000000000000Z', 'manifest': _manifest('2026-12-02T00:00:00Z', '0.85')},
               {'name': '20261203T000000000000Z', 'manifest': dict(hand, saved_at='2026-12-03T00:00:00Z',
                                                                   restored_from='20261201T000000000000Z')}]
    rows = o.history_rows(_manifest('2026-12-04T00:00:00Z', '0.83'), entries)
    assert [(r['entry'], r['action']) for r in rows] == [
        ('current', 'change'),
        ('20261203T000000000000Z', 'rollback to 20261201T000000000000Z'),
        ('20261202T000000000000Z', 'adoption'),
        ('20261201T000000000000Z', 'hand-started server')]


def test_history_text():
    text = o.history_text('w1', {}, [])
    assert text == 'known-good configurations of w1 (newest first; roll back with -e inferops_sglang_rollback_to=ENTRY):\nnone kept\n'
    text = o.history_text('w1', _manifest('2026-12-03T00:00:00Z', '0.85', '0.5.10'), [])
    assert text.splitlines()[1].split() == ['entry', 'saved', '(UTC)', 'action', 'sglang', 'model', 'tp', 'x', 'pp', 'x', 'dp',
                                            'changes', 'against', 'the', 'one', 'before']
    assert text.splitlines()[3].split()[:3] == ['current', '2026-12-03T00:00:00Z', 'first']


def test_text_table():
    lines = o.text_table([{'host': 'fleet-w1', 'health': 'healthy'}, {'host': 'w2', 'health': None}],
                         [['host', 'host'], ['health', 'health state']])
    assert lines == [
        'host      health state',
        '--------  ------------',
        'fleet-w1  healthy',
        'w2        -',
    ]
    assert o.text_table([], ['host']) == ['host', '----']


def test_status_row_sglang_of_the_running_interpreter():
    """Issue 15: after an upgrade the unit runs a new venv the facts did not probe (they probe the adopted one): the
    SGLang version is the one the known-good manifest recorded for that interpreter, not the probed venv's."""
    new_python = '/opt/sglang/venvs/0.5.10/bin/python'
    facts = _facts(['--tp', '8'], version='0.5.9')
    facts['python']['executable'] = '/root/ml-env/bin/python3'
    facts['servers'][0]['executable'] = new_python
    known_good = {'exists': True, 'manifest': {'saved_at': '2026-12-01T03:00:00Z',
                                               'record': {'versions': {'sglang': '0.5.10', 'python': new_python}}}}
    probe = {'port': 30000, 'health': {'state': 'ready'}}
    assert o.status_row('w1', facts, known_good, probe, 0)['sglang'] == '0.5.10'
    # The running server is the probed interpreter: the facts (what is installed now) count.
    facts['servers'][0]['executable'] = '/root/ml-env/bin/python3'
    assert o.status_row('w1', facts, known_good, probe, 0)['sglang'] == '0.5.9'
    # Another interpreter that the manifest does not describe either: unknown, not the probed venv's version.
    facts['servers'][0]['executable'] = '/opt/other/bin/python'
    assert o.status_row('w1', facts, known_good, probe, 0)['sglang'] == '-'
