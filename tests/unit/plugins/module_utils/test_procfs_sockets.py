# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the /proc/net/tcp readers of module_utils/_procfs.py: listening sockets and their owners."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._procfs import (
    map_socket_inodes,
    parse_proc_net_tcp,
)


# ---------------------------------------------------------------------------------------------
# /proc/net/tcp, /proc/net/tcp6 and socket owners

TCP4 = (
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n'
    '   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 51234 1 0000000000000000 100 0 0 10 0\n'
    '   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1143 1 0000000000000000 100 0 0 10 0\n'
    '   2: 0100007F:7530 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 61234 1 0000000000000000 20 4 30 10 -1\n'
    '   3: 020200C0:C218 507100CB:0050 06 00000000:00000000 03:000016E3 00000000     0        0 0 3 0000000000000000\n'
)


def tcp6_line(sl, local, remote, state, uid, inode):
    return ('  %2d: %s %s %s 00000000:00000000 00:00000000 00000000 %5d        0 %d 1 0000000000000000 100 0 0 10 0\n'
            % (sl, local, remote, state, uid, inode))


ANY6 = '00000000000000000000000000000000:0000'
TCP6 = (
    '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when '
    'retrnsmt   uid  timeout inode\n'
    + tcp6_line(0, '00000000000000000000000000000000:1F90', ANY6, '0A', 0, 7001)        # [::]:8080
    + tcp6_line(1, '00000000000000000000000001000000:7531', ANY6, '0A', 1000, 7002)     # [::1]:30001
    + tcp6_line(2, '0000000000000000FFFF00000100007F:7532', ANY6, '0A', 0, 7003)        # [::ffff:127.0.0.1]:30002
    + tcp6_line(3, '00000000000000000000000001000000:7531', '00000000000000000000000001000000:A3C2', '01', 1000, 7004)
)


def test_parse_proc_net_tcp_ipv4():
    assert parse_proc_net_tcp(TCP4, ipv6=False, byteorder='little') == [
        {'proto': 'tcp', 'host': '127.0.0.1', 'port': 30000, 'inode': 51234, 'uid': 0, 'pid': None},
        {'proto': 'tcp', 'host': '0.0.0.0', 'port': 22, 'inode': 1143, 'uid': 0, 'pid': None},
    ]


def test_parse_proc_net_tcp_ipv6():
    assert parse_proc_net_tcp(TCP6, ipv6=True, byteorder='little') == [
        {'proto': 'tcp6', 'host': '::', 'port': 8080, 'inode': 7001, 'uid': 0, 'pid': None},
        {'proto': 'tcp6', 'host': '::1', 'port': 30001, 'inode': 7002, 'uid': 1000, 'pid': None},
        {'proto': 'tcp6', 'host': '::ffff:127.0.0.1', 'port': 30002, 'inode': 7003, 'uid': 0, 'pid': None},
    ]


def test_parse_proc_net_tcp_big_endian_host():
    line = '   0: 7F000001:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 9 1\n'
    assert parse_proc_net_tcp(line, byteorder='big')[0]['host'] == '127.0.0.1'


@pytest.mark.parametrize('text', ['', 'garbage\n', TCP4.splitlines()[0] + '\n'])
def test_parse_proc_net_tcp_nothing(text):
    assert parse_proc_net_tcp(text) == []


def test_parse_proc_net_tcp_this_machine():
    with open('/proc/net/tcp') as f:
        entries = parse_proc_net_tcp(f.read())
    for entry in entries:
        assert entry['proto'] == 'tcp' and 0 < entry['port'] < 65536


def test_map_socket_inodes(tmp_path):
    for pid, links in ((1, ['/dev/null']), (300, ['socket:[51234]', 'pipe:[9]', 'socket:[7001]']),
                       (301, ['socket:[51234]']), (12, ['anon_inode:[eventfd]'])):
        fd = tmp_path / 'proc' / str(pid) / 'fd'
        fd.mkdir(parents=True)
        for i, target in enumerate(links):
            os.symlink(target, str(fd / str(i)))
    (tmp_path / 'proc' / '55').mkdir()  # no fd dir (gone, or not ours)
    proc = str(tmp_path / 'proc')
    assert map_socket_inodes(proc) == {51234: 300, 7001: 300}
    assert map_socket_inodes(proc, {51234}) == {51234: 300, 7001: 300}
    assert map_socket_inodes(proc, set()) == {}


def test_user_name():
    from ansible_collections.inferops.sglang.plugins.module_utils._procfs import user_name
    assert user_name(0) == 'root'
    assert user_name(None) is None
    assert user_name(4000000) == '4000000'
