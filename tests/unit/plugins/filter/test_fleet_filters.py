# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The fleet summary filter reads what a failed host attempted (issue 30: a failed run shows the attempted change).
# Called in a child Python, as test_operations_filters.py does: importing controller code (ansible.errors) in this
# process would switch module_utils' warnings to controller mode for the module tests that run later in it.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import subprocess
import sys

CHILD = r'''
import json
from ansible_collections.inferops.sglang.plugins.filter.fleet import FilterModule
filters = FilterModule().filters()
COMMAND = ['/v/bin/python3', '-m', 'sglang.launch_server', '--tp', '8', '--mem-fraction-static', '0.85']
out = {}
# Failed in the pre-flight: no cutover output, no service output; the inventory's arguments against the running
# server's (the facts).
hostvars = {'w1': {
    'inferops_sglang_failure': {'msg': 'pre-flight failed', 'task': 'Pre-flight'},
    'service_server_args': {'tp': 8, 'mem-fraction-static': 0.81, 'log-requests': False},
    'ansible_facts': {'inferops_sglang': {'servers': [{'managed': True, 'args': ['--tp', '8', '--mem-fraction-static', '0.85']}]}},
}}
out['preflight'] = filters['fleet_summary_rows'](['w1'], [['w1']], hostvars, 'inferops.sglang.site')
hostvars = {
    'w1': {'inferops_sglang_failure': {'msg': 'x'}, 'inferops_sglang_service': {'command': COMMAND + ['--enable-metrics']},
           'inferops_sglang_known_good': {'manifest': {'command': COMMAND}}},
    'w2': {'inferops_sglang_cutover': {'result': 'deployed', 'args_diff': {}},
           'inferops_sglang_service': {'command': COMMAND + ['--enable-metrics']},
           'inferops_sglang_known_good': {'manifest': {'command': COMMAND}}},
}
out['restart'] = filters['fleet_summary_rows'](['w1', 'w2'], [['w1', 'w2']], hostvars, 'inferops.sglang.restart')
out['heading'] = filters['fleet_summary_heading']('inferops.sglang.rollback')
print(json.dumps(out))
'''


def test_fleet_summary_filters():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = json.loads(subprocess.check_output([sys.executable, '-c', CHILD], env=env).decode('utf-8'))
    assert out['preflight'][0]['changes'] == ['--mem-fraction-static 0.85 -> 0.81']
    assert out['preflight'][0]['shown'] == 'failed'
    w1, w2 = out['restart']
    assert w1['changes'] == ['added --enable-metrics']
    assert w2['changes'] == [] and w2['shown'] == 'restarted', 'a healthy host shows its own cutover diff'
    assert out['heading']['title'] == 'SGLang fleet rollback'
