# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The address filters (plugins/filter/net.py), the worker URL filters of plugins/filter/fleet.py and router_plan. They are
# called in a child Python: importing
# controller code (ansible.errors) in this process would switch module_utils' warnings to controller mode for
# the module tests that run later in it.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import subprocess
import sys

import yaml

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


NAMED_CHILD = r'''
import json, sys
from ansible.errors import AnsibleFilterError
from ansible_collections.inferops.sglang.plugins.filter import fleet, net, router
filters = dict(net.FilterModule().filters(), **fleet.FilterModule().filters())
filters.update(router.FilterModule().filters())
out = []
for name, args in json.loads(sys.argv[1]):
    try:
        out.append(filters[name](*args))
    except AnsibleFilterError as exc:
        out.append('error: %s' % exc)
print(json.dumps({'names': sorted(filters), 'out': out}))
'''

HOSTVARS = {
    'fd00:10::1': {'service_replica_group': 'big', 'groups': {'big': ['fd00:10::1', 'fd00:10::2']}},
    'fd00:10::2': {'service_replica_group': 'big', 'groups': {'big': ['fd00:10::1', 'fd00:10::2']}},
    'gpu-cfg': {'service_server_args': {'config': '/etc/sglang/server.yaml'}},
    'fd00:10::9': {},
}

NAMED_CASES = [
    (('host_port', ['fd00:10::1', 5000]), '[fd00:10::1]:5000'),
    (('host_port', ['10.0.0.1', '5000']), '10.0.0.1:5000'),
    (('host_port', ['', 5000]), 'error: host_port: the host is empty'),
    (('server_endpoint', [{'config': 'c.yaml'}, 'port: 31000\n']), {'port': 31000, 'scheme': 'http'}),
    (('server_endpoint', [{'ssl-certfile': '/c.pem'}]), {'port': 30000, 'scheme': 'https'}),
    (('worker_url', ['fd00:10::1', 31000, 'https', '']), 'https://[fd00:10::1]:31000'),
    (('worker_url', ['gpu1', 30000, 'http', 'http://10.0.0.5:30000']), 'http://10.0.0.5:30000'),
    (('worker_url', ['gpu1', 30000, 'ftp']), "error: worker_url: scheme must be http or https, not 'ftp'"),
    (('router_scheme', [{'tls_cert_path': '/c.pem'}]), 'https'),
    (('router_url', [['fd00:10::9'], HOSTVARS]), 'http://[fd00:10::9]:30000'),
    (('router_url', [[], HOSTVARS]), ''),
    (('worker_config_paths', [['fd00:10::1', 'gpu-cfg'], HOSTVARS]), [{'host': 'gpu-cfg', 'path': '/etc/sglang/server.yaml'}]),
    (('worker_urls', [['fd00:10::1', 'fd00:10::2', 'gpu-cfg'], HOSTVARS, {'gpu-cfg': 'port: 31000\n'}]),
     ['http://[fd00:10::1]:30000', 'http://gpu-cfg:31000']),
    (('worker_urls', [['gpu-cfg'], HOSTVARS]), ['http://gpu-cfg:30000']),
    (('router_plan', [['not', 'a', 'mapping']]), 'error: router_plan: expected the router role inputs as a mapping, got list'),
    (('worker_urls', [['x'], {'x': {'service_server_args': {'port': 'p'}}}]),
     'error: worker_urls: x: the port of these arguments is not an integer of 1-65535'),
]

FILTER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', 'plugins', 'filter')


def test_url_filters_and_their_documentation():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = json.loads(subprocess.check_output([sys.executable, '-c', NAMED_CHILD,
                                              json.dumps([case for case, dummy in NAMED_CASES])], env=env).decode('utf-8'))
    assert out['out'] == [expected for dummy, expected in NAMED_CASES]
    for name in out['names']:
        with open(os.path.join(FILTER_DIR, name + '.yml')) as handle:
            doc = yaml.safe_load(handle)
        assert doc['DOCUMENTATION']['name'] == name
        assert doc['RETURN']['_value']['description'] and doc['EXAMPLES'].strip()
