# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Reading other hosts' variables (Ansible's ``hostvars``) for the plans that span hosts (fleet, router, URLs)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils import _http


def host_var(hostvars, host, name, default=None):
    """``hostvars[host][name]``; ``default`` when the host or the variable is missing, or the value is None.

    :param hostvars: a mapping of host names to mappings of variables (Ansible's ``hostvars``), or anything else
        (then ``default``).
    """
    try:
        value = hostvars[host].get(name, default)
    except (KeyError, AttributeError, TypeError):
        return default
    return default if value is None else value


def replica_args(hosts, host, hostvars, port):
    """The multi-node arguments of one node of a replica (the service role's ``--nnodes``, ``--node-rank``,
    ``--dist-init-addr``; SGLang 0.5.23 ``server_args.py``: every node gets the rank-0 node's address).

    :param hosts: the replica's hosts in rank order (list; fewer than 2: a single-node server).
    :param host: this host's inventory name.
    :param hostvars: Ansible's ``hostvars``: the rank-0 node's ``service_replica_address``, else its ``ansible_host``,
        else its name is the address.
    :param port: int, the rank-0 node's ``--dist-init-addr`` port (``service_dist_init_port``).
    :returns: {} for a single-node server, else ``nnodes`` (int), ``node-rank`` (int; -1 when ``host`` is not one of
        ``hosts``, which the service plan reports) and ``dist-init-addr`` (``host:port``, an IPv6 address in brackets).
    """
    hosts = list(hosts or [])
    if len(hosts) < 2:
        return {}
    rank0 = hosts[0]
    address = host_var(hostvars, rank0, 'service_replica_address', host_var(hostvars, rank0, 'ansible_host', rank0))
    return {'nnodes': len(hosts), 'node-rank': hosts.index(host) if host in hosts else -1,
            'dist-init-addr': _http.host_port(address, port)}
