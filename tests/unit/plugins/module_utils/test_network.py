# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_network.py: the host's interfaces, loopback, the pinned NCCL port (issue 28)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _network
from ansible_collections.inferops.sglang.plugins.module_utils._plans import service_host

HARDWARE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'hardware', 'fixtures')

# /proc/net/if_inet6 of a host with loopback, an Ethernet link-local and a global address (kernel 6.1).
IF_INET6 = """00000000000000000000000000000001 01 80 10 80       lo
fe80000000000000a8c1abfffe2d4c11 02 40 20 80     ens5
fd000010000000000000000000000011 03 40 00 80      ib0
not a line
"""


def test_if_inet6_is_read_per_interface():
    assert _network.parse_if_inet6(IF_INET6) == {'lo': ['::1'], 'ens5': ['fe80::a8c1:abff:fe2d:4c11'],
                                                 'ib0': ['fd00:10::11']}
    assert _network.parse_if_inet6('') == {}


@pytest.mark.parametrize('address, expected', [
    ('127.0.1.1', True), ('127.0.0.1', True), ('::1', True), ('::ffff:127.0.1.1', True),
    ('10.0.0.11', False), ('fd00:10::11', False), ('gpu-01', False), ('', False),
])
def test_loopback(address, expected):
    assert _network.is_loopback(address) is expected


def test_the_interface_of_an_address():
    interfaces = {'lo': ['127.0.0.1', '::1'], 'ens5': ['10.0.0.11'], 'ib0': ['fd00:10::11']}
    assert _network.interface_of('10.0.0.11', interfaces) == 'ens5'
    assert _network.interface_of('fd00:0010:0::11', interfaces) == 'ib0'   # the same address, written longer
    assert _network.interface_of('10.0.0.12', interfaces) is None
    assert _network.interface_of('gpu-01', interfaces) is None
    assert _network.interface_of('10.0.0.11', None) is None


@pytest.mark.parametrize('port, expected', [(30000, 28000), (31000, 29000), (8000, 22000), (29999, 27999), (1, 22001)])
def test_the_default_nccl_port_stays_in_sglangs_range_below_the_ephemeral_ports(port, expected):
    assert _network.default_nccl_port(port) == expected
    assert _network.NCCL_PORT_LOW <= expected < _network.NCCL_PORT_LOW + _network.NCCL_PORT_SPAN < 32768


def test_this_hosts_network_reads():
    found = _network.read_network()
    assert set(found) == {'hostname', 'hostname_addresses', 'interfaces'}
    assert found['hostname'] and '127.0.0.1' in found['interfaces'].get('lo', [])


def test_the_network_of_a_real_gpu_host():
    """host_facts' ``network`` as tests/hardware/run-h200.sh captured it on a lent H100 host (hostname 'vm' resolves to
    127.0.0.1 only): a replica node given its eth0 address names eth0; given its hostname it is refused (C45)."""
    with open(os.path.join(HARDWARE, 'h100x1', 'facts-health-network.json')) as handle:
        network = json.load(handle)['network']
    assert network['hostname_addresses'] == ['127.0.0.1'] and '192.0.2.2' in network['interfaces']['eth0']
    found = service_host.socket_ifname('192.0.2.2', {}, network)
    assert found == {'socket_ifname': 'eth0', 'loopback': '',
                     'socket_env': {'GLOO_SOCKET_IFNAME': 'eth0', 'NCCL_SOCKET_IFNAME': 'eth0'}}
    assert service_host.socket_ifname('vm', {}, network)['loopback'] == '127.0.0.1'
