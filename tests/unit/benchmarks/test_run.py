# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pure helpers of benchmarks/run.py (the benchmark suite): median of pair ratios, the table, the recap,
the docker shim's log and the profile_tasks stream."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', 'benchmarks'))
import run  # noqa: E402  pylint: disable=wrong-import-position


def test_median_of_ratios_is_the_median_of_each_pairs_ratio():
    # Not median(a) / median(b): (10/2, 30/3, 8/1) -> ratios 5, 10, 8 -> 8.
    assert run.median_of_ratios([(10, 2), (30, 3), (8, 1)]) == 8
    with pytest.raises(ValueError):
        run.median_of_ratios([])


def test_format_table_pads_columns():
    lines = run.format_table([{'a': 'x', 'b': 'long cell'}, {'a': 'yyyy'}], columns=('a', 'b'))
    assert lines == ['a     b', '----  ---------', 'x     long cell', 'yyyy']


def test_parse_recap_and_tasks():
    text = ('PLAY RECAP *****\nhost-1   : ok=104  changed=0    unreachable=0    failed=0    skipped=50   rescued=0    ignored=0\n'
            'localhost : ok=3    changed=0    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0   \n\n'
            'Tuesday 01 December 2026  07:18:29 +0000 (0:00:00.100)       0:00:28.500 ****\n')
    recap = run.parse_recap(text)
    assert recap['host-1']['ok'] == 104 and recap['host-1']['skipped'] == 50 and set(recap) == {'host-1', 'localhost'}
    assert run.tasks_of(recap['host-1']) == 154


def test_parse_docker_log_counts_exec_and_cp_per_container():
    lines = ['version\t--format\t{{.Server.Version}}\t\n',
             'exec\t-i\th1\t/bin/sh\t-c\t/usr/bin/python3 && sleep 0\t\n',
             'exec\t-u\troot\t-e\tA=1\t-i\th1\t/bin/sh\t-c\tdd of=/x bs=65536\t\n',
             'cp\th1:/etc/hosts\t/tmp/out\t\n',
             'inspect\t--format\t{{.Config.User}}\th1\t\n']
    calls = run.parse_docker_log(lines)
    assert calls['h1'] == {'exec': 2, 'cp': 1}
    assert calls[None] == {'version': 1, 'inspect': 1}


def test_parse_profile_stream_and_batches():
    stamp = 'Tuesday 01 December 2026  07:18:29 +0000 (0:00:00.100)       0:00:%06.3f ****'
    text = '\n'.join([
        'PLAY [rollout] ***', 'TASK [r : Facts] ***', stamp % 1.0, 'ok: [w1]',
        'TASK [r : Router - out] ***', stamp % 2.0,
        'TASK [r : Note when the service is started] ***', stamp % 5.0,
        'TASK [r : Start the service] ***', stamp % 5.5,
        'TASK [r : Gate - TCP, /health (x) - start] ***', stamp % 7.0,
        'TASK [r : Report] ***', stamp % 14.0,
        'PLAY [rollout] ***', 'TASK [r : Facts] ***', stamp % 15.0,
        'PLAY RECAP ***', stamp % 16.5])
    tasks = run.parse_profile_stream(text)
    assert [(t['play_no'], t['task'], t['duration']) for t in tasks] == [
        (1, 'r : Facts', 1.0), (1, 'r : Router - out', 3.0), (1, 'r : Note when the service is started', 0.5),
        (1, 'r : Start the service', 1.5), (1, 'r : Gate - TCP, /health (x) - start', 7.0), (1, 'r : Report', 1.0),
        (2, 'r : Facts', 1.5)]
    # load + gate: from the start's note (5.0) to the gate's end (14.0).
    batches = run.batch_breakdown(tasks, 'rollout', 'Router - out', 'Note when the service is started', 'Gate - TCP')
    assert batches == [{'wall': 14.0, 'drain': 3.0, 'gate': 9.0, 'overhead': 2.0},
                       {'wall': 1.5, 'drain': 0.0, 'gate': 0.0, 'overhead': 1.5}]
    assert run.top_tasks(tasks, ('Gate', 'Note', 'Start')) == [('r : Router - out', 3.0, 1), ('r : Facts', 2.5, 2), ('r : Report', 1.0, 1)]


def test_rollback_span_from_the_first_rollback_task_to_the_last_gate_after_it():
    tasks = [
        {"task": "inferops.sglang.cutover : Gate - TCP, /health - start", "start": 10.0, "duration": 15.0},
        {"task": "inferops.sglang.cutover : Note what failed", "start": 25.0, "duration": 0.1},
        {"task": "inferops.sglang.cutover : Stop the new server", "start": 25.1, "duration": 1.0},
        {"task": "inferops.sglang.cutover : Gate - TCP, /health - start", "start": 27.0, "duration": 2.0},
        {"task": "inferops.sglang.cutover : Gate - TCP, /health - start", "start": 29.0, "duration": 3.5},
        {"task": "inferops.sglang.cutover : Write the deployment record", "start": 32.5, "duration": 0.4},
    ]
    assert run.rollback_span(tasks) == 7.5
    assert run.rollback_span(tasks[:1]) is None
    assert run.rollback_span(tasks[:3]) is None


def test_call_spans_of_one_container():
    lines = ['100.5\t100.75\texec\t-i\th1\t/bin/sh\t-c\tpython3\t\n', '99.0\t99.1\tversion\t--format\tx\t\n',
             '101.25\t102\texec\t-i\th2\t/bin/sh\t\n', '100,0\t100,25\texec\t-u\troot\t-i\th1\t/bin/sh\t\n',
             '103\t104\tcp\th1:/etc/hosts\t/tmp/x\t\n', 'junk\n', 'a\tb\texec\t-i\th1\t\n']
    calls = run.timed_calls(lines)
    assert len(calls) == 5 and calls[1] == (99.0, 99.1, 'version\t--format\tx\t\n')
    assert run.call_spans(calls, 'h1') == [(100.0, 100.25), (100.5, 100.75), (103.0, 104.0)]


def test_json_report_skips_warnings_around_it():
    text = ('[WARNING]: a {{ templated }} warning with a dict:\n{\n "not": "it"\n}\n{\n    "plays": []\n}\n'
            '[DEPRECATION WARNING]: later\n')
    assert run.json_report(text) == {'plays': []}
    assert run.json_report('{\n "plays": 1\n}\n') == {'plays': 1}
    with pytest.raises(ValueError):
        run.json_report('{\n "a": 1\n}\n')
    with pytest.raises(ValueError):
        run.json_report('no report')


def _task(name, start, end):
    return {'task': {'name': name, 'duration': {'start': '2026-12-01T10:00:%06.3fZ' % start,
                                                'end': '2026-12-01T10:00:%06.3fZ' % end}}}


def test_json_task_spans_run_to_the_next_task_of_the_play():
    report = {'plays': [{'tasks': [_task('a', 1.0, 1.5), _task('b', 2.0, 2.25)]},
                        {'tasks': [_task('c', 3.0, 4.0), {'task': {'name': 'no times', 'duration': {}}}]}]}
    spans = run.json_task_spans(report)
    base = run._epoch('2026-12-01T10:00:00.000+00:00')  # pylint: disable=protected-access
    assert [(s['play'], s['task'], round(s['start'] - base, 3), round(s['end'] - base, 3)) for s in spans] == [
        (0, 'a', 1.0, 2.0), (0, 'b', 2.0, 2.25), (1, 'c', 3.0, 4.0)]


def test_converged_floor_keeps_start_up_and_round_trip_tasks():
    spans = [{'start': 1.0, 'end': 2.0}, {'start': 2.0, 'end': 2.5}, {'start': 2.5, 'end': 4.0}, {'start': 4.0, 'end': 4.25}]
    calls = [(1.25, 1.5), (1.5, 1.75), (2.75, 3.0), (4.25, 4.5)]
    floor = run.converged_floor(5.0, spans, calls)
    assert floor == {'wall': 5.0, 'fixed_s': 1.75, 'round_trip_tasks': 2, 'round_trip_s': 2.5, 'calls': 4, 'calls_s': 1.0,
                     'unattributed': 1, 'local_tasks': 2, 'local_s': 0.75, 'floor_s': 4.25}


def test_peer_playbook_templates_a_unit_starts_it_and_polls_health():
    play, = run.peer_playbook('bench-host', '/tmp/unit.j2', port=30001)
    assert play['hosts'] == 'bench-host' and play['become'] is True and 'gather_facts' not in play
    modules = [next(k for k in task if k.startswith('ansible.builtin.')) for task in play['tasks']]
    assert modules == ['ansible.builtin.template', 'ansible.builtin.systemd', 'ansible.builtin.uri']
    template, systemd, uri = play['tasks']
    assert template['ansible.builtin.template']['src'] == '/tmp/unit.j2'
    assert systemd['ansible.builtin.systemd']['name'] == template['ansible.builtin.template']['dest'].rsplit('/', 1)[1]
    assert systemd['ansible.builtin.systemd']['state'] == 'started'
    assert uri['ansible.builtin.uri']['url'].endswith('/health') and uri['until'] and play['vars']['peer_port'] == 30001
    assert '{{ peer_port }}' in run.PEER_UNIT and 'health' in run.PEER_UNIT


def test_rotation_puts_each_command_first_in_turn():
    names = ('site', 'setup', 'peer')
    assert [run.rotation(names, n)[0] for n in range(4)] == ['site', 'setup', 'peer', 'site']
    assert sorted(run.rotation(names, 2)) == sorted(names)
    assert run.rotation((), 3) == []


def test_build_rows_gives_the_peer_row_as_the_median_of_pair_ratios():
    fig = {'c': {'pairs': [(10.0, 2.0), (12.0, 2.0), (9.0, 3.0)], 'peer_pairs': [(10.0, 4.0), (12.0, 4.0), (9.0, 3.0)],
                 'recap': {}}}
    rows = run.build_rows(fig)
    peer = next(r for r in rows if 'minimal peer' in r['row'])
    assert peer['ratio'].startswith('3.0 ') and peer['met'] == 'NO' and peer['goal'] == '<= 2.0'
    assert len(rows) == 2


def test_build_rows_dark_window():
    """Row (g), issue 32: staged against the warm floor (goal <= 1.5), cold beside it."""
    fig = {'g': {'gib': 2.0, 'median': {'cold': 3.05, 'staged': 1.19, 'warm': 0.9},
                 'runs': {'cold': [{}] * 3, 'staged': [{}] * 3, 'warm': [{}] * 3},
                 'staged_over_floor': 1.19 / 0.9, 'cold_over_floor': 3.05 / 0.9}}
    staged, cold = run.build_rows(fig)
    assert staged['ratio'] == '1.32' and staged['met'] == 'yes' and staged['goal'] == '<= 1.5'
    assert staged['measured'] == '1.19 s (median of 3)' and cold['ratio'] == '3.39' and cold['met'] == '-'


def test_stage_bench_weights_pass_model_stage_checks(tmp_path):
    """The benchmark's weight directory is one model_stage accepts (index, sizes from the headers)."""
    stage = run.bench_stage._stage_module()
    files = run.bench_stage.make_weights(str(tmp_path / 'model'), 4 << 20, shards=2, block=1 << 20)
    found = stage.weight_files(str(tmp_path / 'model'))
    assert found['problems'] == [] and [f['path'] for f in found['files']] == files
    run.bench_stage.evict(files)
    assert sum(stage.resident_bytes(path) for path in files) < sum(f['size'] for f in found['files'])


def test_adoption_path_files_are_the_path_roles_task_files_in_first_run_order():
    base = '/tmp/colls/ansible_collections/inferops/sglang/'
    lines = [base + 'playbooks/site.yml\tTake this host\'s lock\n',
             base + 'roles/facts/tasks/main.yml\tGather\n',
             base + 'roles/service/tasks/preflight.yml\tPlan\n',
             base + 'roles/known_good/tasks/read.yml\tRead\n',
             base + 'roles/service/tasks/preflight.yml\tCheck\n',
             base + 'roles/cutover/tasks/gate.yml\tGate\n',
             '\tA task without a path\n',
             base + 'roles/fleet/tasks/batch_end.yml\tCollect\n']
    assert run.adoption_path_files(lines) == ['roles/service/tasks/preflight.yml', 'roles/known_good/tasks/read.yml',
                                              'roles/cutover/tasks/gate.yml']


def test_build_rows_path_files_row():
    rows = run.build_rows({'h': {'files': ['f%d' % i for i in range(16)]}})
    assert rows == [{'row': '(h) task files on the adoption path', 'measured': '16',
                     'comparison': 'roles service, known_good, cutover (listed below)', 'ratio': '-', 'goal': '<= 15',
                     'met': 'NO'}]
