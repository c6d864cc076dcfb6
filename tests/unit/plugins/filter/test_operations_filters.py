# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The filters of the operator playbooks (plugins/filter/operations.py): known_good_entry, fleet_status_rows, text_table.
# They are called in a child Python: importing controller code (ansible.errors) in this process would switch
# module_utils' warnings to controller mode for the module tests that run later in it.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import subprocess
import sys

CHILD = r'''
import json, sys
from ansible.errors import AnsibleFilterError
from ansible_collections.inferops.sglang.plugins.filter.operations import FilterModule
filters = FilterModule().filters()
out = {}
kg = {'exists': True, 'dir': '/kg/known-good', 'history_dir': '/kg/history', 'manifest': {'saved_at': '2026-12-01T03:00:00Z'}}
out['entry'] = filters['known_good_entry'](kg, '20261130T000000000000Z', ['/kg/history/20261130T000000000000Z'])
out['missing'] = filters['known_good_entry'](kg, 'nope', [])
hostvars = {
    'w1': {'ansible_facts': {'inferops_sglang': {'python': {'sglang_version': '0.5.23'},
                                                 'servers': [{'main_pid': 9, 'port': 30000, 'managed': True, 'args': ['--tp', '8']}]}},
           'inferops_sglang_known_good': kg,
           'inferops_sglang_cutover_status': {'port': 30000, 'health': {'state': 'ready'},
                                              'router': {'routed': True, 'operation': 'none', 'healthy': True}}},
    'w2': {},
}

rows = filters['fleet_status_rows'](['w1', 'w2'], hostvars, 1796612400.0)
out['rows'] = rows
out['table'] = filters['text_table'](rows, [['host', 'host'], ['health', 'health']])
try:
    filters['text_table']([{'a': 1}], [[]])
except AnsibleFilterError as exc:
    out['error'] = str(exc)
import base64
manifest = {'saved_at': '2026-12-01T00:00:00Z', 'source': 'cutover', 'command': ['/p', '--tp', '8', '--mem-fraction-static', '0.88']}
read = {'results': [{'item': {'path': '/kg/history/20261201T000000000000Z'},
                     'content': base64.b64encode(json.dumps(manifest).encode()).decode()},
                    {'item': {'path': '/kg/history/20200101T000000000000Z'}, 'failed': True}]}
current = dict(manifest, saved_at='2026-12-02T00:00:00Z', command=['/p', '--tp', '8', '--mem-fraction-static', '0.85'])
out['history'] = filters['fleet_history_text'](['w1', 'w2'], {
    'w1': {'__status_history_read': read, 'inferops_sglang_known_good': {'exists': True, 'manifest': current}}, 'w2': {}})
# The table view registers the read as skipped: no history at all (not a false 'current' row).
out['no_history'] = filters['fleet_history_text'](['w1'], {
    'w1': {'__status_history_read': {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False'},
           'inferops_sglang_known_good': {'exists': True, 'manifest': current}}})
# A host with a current configuration and no history entries: the loop over none is registered as skipped with
# results [] - its section still shows the current row.
out['empty_loop'] = filters['fleet_history_text'](['w1'], {
    'w1': {'__status_history_read': {'results': [], 'skipped': True, 'skipped_reason': 'No items in the list'},
           'inferops_sglang_known_good': {'exists': True, 'manifest': current}}})
print(json.dumps(out))
'''


def test_operations_filters():
    """Issue 13: the filters read hostvars as the roles publish them and wrap the pure helpers."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = json.loads(subprocess.check_output([sys.executable, '-c', CHILD], env=env).decode('utf-8'))
    assert out['entry']['dir'] == '/kg/history/20261130T000000000000Z' and out['entry']['error'] == ''
    assert 'available: current.' in out['missing']['error'] and out['missing']['dir'] is None
    w1, w2 = out['rows']
    assert (w1['host'], w1['sglang'], w1['pid'], w1['health'], w1['router']) == ('w1', '0.5.23', 9, 'healthy', 'in, healthy')
    assert w1['known_good_age'] == '6d 0h' and len(w1['args_digest']) == 12
    assert (w2['sglang'], w2['args_digest'], w2['health'], w2['router'], w2['known_good_age']) == ('-', '-', 'not probed', '-', 'none')
    assert out['table'] == ['host  health', '----  ----------', 'w1    healthy', 'w2    not probed']
    assert out['error'].startswith('text_table: ')
    # Issue 30: the history view, one section per host that read its history; an unreadable entry still listed.
    lines = out['history'].splitlines()
    assert lines[0].startswith('known-good configurations of w1 ') and len(lines) == 6, lines
    assert lines[3].split()[:3] == ['current', '2026-12-02T00:00:00Z', 'change'] and lines[3].endswith('mem-fraction-static 0.88 -> 0.85')
    assert lines[4].split()[0] == '20261201T000000000000Z' and lines[5].split()[0] == '20200101T000000000000Z'
    assert out['no_history'] == ''
    assert out['empty_loop'].splitlines()[3].split()[0] == 'current', out['empty_loop']
