# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The filter inferops.sglang.probe_url (plugins/filter/net.py). It is called in a child Python: importing
# controller code (ansible.errors) in this process would switch module_utils' warnings to controller mode for
# the module tests that run later in it.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import subprocess
import sys

CHILD = r'''
import json, sys
from ansible.errors import AnsibleFilterError
from ansible_collections.inferops.sglang.plugins.filter.net import FilterModule
probe_url = FilterModule().filters()['probe_url']
out = []
for args in json.loads(sys.argv[1]):
    try:
        out.append(probe_url(*args))
    except AnsibleFilterError as exc:
        out.append('error: %s' % exc)
print(json.dumps(out))
'''

CASES = [
    (['0.0.0.0', 30000], 'http://127.0.0.1:30000'),
    (['', 30000], 'http://127.0.0.1:30000'),
    ([None, 30000], 'http://127.0.0.1:30000'),
    (['::', 30000], 'http://[::1]:30000'),
    (['::1', '30000'], 'http://[::1]:30000'),
    (['fd00::1', 31000], 'http://[fd00::1]:31000'),
    (['10.0.0.5', 30000], 'http://10.0.0.5:30000'),
    (['gpu1', 30443, 'https'], 'https://gpu1:30443'),
    (['0.0.0.0', 0], 'error: probe_url: port must be between 1 and 65535, not 0'),
    (['gpu1', 'x'], "error: probe_url: invalid literal for int() with base 10: 'x'"),
    (['gpu1', 30000, 'ftp'], "error: probe_url: scheme must be http or https, not 'ftp'"),
]


def test_probe_url():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.check_output([sys.executable, '-c', CHILD, json.dumps([args for args, dummy in CASES])], env=env)
    assert json.loads(out.decode('utf-8')) == [expected for dummy, expected in CASES]
