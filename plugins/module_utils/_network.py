# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The host's network as a multi-node SGLang replica and its NCCL rendezvous need it: the interfaces and their
addresses, what the hostname resolves to, and the rules that follow (field case C45 of issue 28: Gloo binds the
address the hostname resolves to, 127.0.1.1 on stock Debian and Ubuntu, and rank 1 never connects).

Pure functions on captured text, plus :func:`read_network`, which reads the running host (standard library only).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import socket

# SGLang 0.5.23 (sglang/srt/utils/network.py, get_free_port_below_ephemeral) takes the NCCL port of a server without
# --nccl-port from 22000-29999, below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 up by
# default); SGLang 0.5.9 took any free port (get_free_port), often an ephemeral one a client can hold after a stop.
NCCL_PORT_LOW = 22000
NCCL_PORT_SPAN = 8000
SOCKET_IFNAME_VARIABLES = ('GLOO_SOCKET_IFNAME', 'NCCL_SOCKET_IFNAME')


def parse_if_inet6(text):
    """``/proc/net/if_inet6``: one line per IPv6 address (32 hex digits, ifindex, prefix length, scope, flags, name).

    :returns: {interface name: [address in compressed form, ...]}; lines that do not parse are skipped.
    """
    found = {}
    for line in (text or '').splitlines():
        fields = line.split()
        if len(fields) != 6 or len(fields[0]) != 32:
            continue
        try:
            address = str(ipaddress.IPv6Address(int(fields[0], 16)))
        except ValueError:
            continue
        found.setdefault(fields[5], []).append(address)
    return found


def is_loopback(address):
    """True for 127.0.0.0/8 and ::1 (also an IPv4-mapped 127.x); False for anything else, names included."""
    try:
        parsed = ipaddress.ip_address(str(address).partition('%')[0])
    except ValueError:
        return False
    mapped = getattr(parsed, 'ipv4_mapped', None)
    return bool(parsed.is_loopback or (mapped is not None and mapped.is_loopback))


def interface_of(address, interfaces):
    """The name of the interface that holds ``address`` (an IP address as text), or None (a name, or not local)."""
    try:
        wanted = ipaddress.ip_address(str(address).partition('%')[0])
    except ValueError:
        return None
    for name in sorted(interfaces or {}):
        for held in interfaces[name] or []:
            try:
                if ipaddress.ip_address(str(held).partition('%')[0]) == wanted:
                    return name
            except ValueError:
                continue
    return None


def default_nccl_port(port):
    """The NCCL port the collection pins for a server on ``port`` (int): ``22000 + port % 8000``, in SGLang 0.5.23's
    own range below the ephemeral ports, the same on every run and different for servers 1-7999 ports apart."""
    return NCCL_PORT_LOW + int(port) % NCCL_PORT_SPAN


def _ipv4_addresses():
    """{interface: [IPv4 address]} of the running host (SIOCGIFADDR: one address per interface)."""
    import fcntl
    import struct
    found = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for dummy, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(sock.fileno(), 0x8915, struct.pack('256s', name[:15].encode()))
            except OSError:
                continue
            found.setdefault(name, []).append(socket.inet_ntoa(packed[20:24]))
    return found


def read_network(proc='/proc'):
    """The running host's network: {'hostname': str, 'hostname_addresses': [addresses the hostname resolves to, as
    getaddrinfo gives them, /etc/hosts first as glibc reads it], 'interfaces': {name: [IPv4 and IPv6 addresses]}}.
    A part that cannot be read is empty."""
    hostname = socket.gethostname()
    try:
        resolved = []
        for entry in socket.getaddrinfo(hostname, None, 0, socket.SOCK_STREAM):
            if entry[4][0] not in resolved:
                resolved.append(entry[4][0])
    except (OSError, UnicodeError):
        resolved = []
    try:
        interfaces = _ipv4_addresses()
    except (OSError, ImportError):
        interfaces = {}
    try:
        with open(proc + '/net/if_inet6') as handle:
            for name, addresses in parse_if_inet6(handle.read()).items():
                interfaces.setdefault(name, []).extend(addresses)
    except (IOError, OSError):
        pass
    return {'hostname': hostname, 'hostname_addresses': resolved, 'interfaces': interfaces}
