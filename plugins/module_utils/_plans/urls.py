# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The one rule for where a server or a router is reached, used by every role (field case C44).

* ``server_endpoint(args, config)``: a server's port and scheme - the port of its flags, else of its ``--config``
  file, else SGLang's default 30000; ``https`` when the flags or the file set ``ssl-certfile``.
* ``worker_url(host, port, scheme, url)``: the URL a router knows a server by (``url`` when the inventory sets
  ``inferops_sglang_worker_url``, else ``<scheme>://<host>:<port>``, an IPv6 literal in brackets). The router role's
  worker list (filter ``worker_urls``), the fleet and the cutover's drain and registration all call it.
* ``worker_urls(hosts, hostvars, configs)``: that URL for every server a router balances over (rank 0 of a
  multi-node replica only).
* ``worker_config_paths(hosts, hostvars)``: the ``--config`` files a router reads on its servers for those URLs.
* ``router_scheme(args)`` / ``router_url(hosts, hostvars)``: a router's scheme (``https`` with ``tls-cert-path``) and
  the URL the servers reach the first router of a group at.
* ``_http.host_port(host, port)``: the ``host:port`` join (``[fd00:10::1]:5000``), also of ``--dist-init-addr``;
  ``_http.base_url``: the probe address of a server from the address it binds (a wildcard on loopback).

Everything here is pure: no host is read; a host's ``--config`` text is an input.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils import _http
from ansible_collections.inferops.sglang.plugins.module_utils._plans.inventory import host_var
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import cmdline

# SGLang's --port default (server_args.py), and the router's (sglang_router launch_router).
DEFAULT_PORT = 30000
_SERVER_TLS_FLAG = '--ssl-certfile'
_ROUTER_TLS_FLAG = '--tls-cert-path'


def _flags(args):
    """{'--flag': value} of a mapping of arguments (keys with or without dashes, ``_`` or ``-``) or an argv list
    (``--flag value``, ``--flag=value``, a bare ``--flag`` is True; the last one wins)."""
    if args is None:
        return {}
    if hasattr(args, 'items'):
        return cmdline.config_values(dict(args))
    if not isinstance(args, (list, tuple)):
        raise TypeError('expected a mapping of arguments or an argv list, got %s' % type(args).__name__)
    flags = {}
    words = [str(word) for word in args]
    for i, word in enumerate(words):
        if not word.startswith('--'):
            continue
        flag, sep, value = word.partition('=')
        if sep:
            flags[flag] = value
        elif i + 1 < len(words) and not words[i + 1].startswith('--'):
            flags[flag] = words[i + 1]
        else:
            flags[flag] = True
    return flags


def _set(value):
    """Whether a flag's value turns it on: not None, False or empty text."""
    return value is not None and value is not False and str(value).strip() != ''


def server_endpoint(args, config=None):
    """Port and scheme of an SGLang server.

    :param args: the server's arguments, a mapping (``service_server_args``: keys with or without dashes) or an
        argv list, or None.
    :param config: its ``--config`` file: the text, a mapping of its settings, or None (not read, or none).
    :returns: dict ``{'port': int, 'scheme': 'http' | 'https'}`` - the port of the flags, else of the file, else
        30000 (``cmdline.server_settings``, argparse's last-flag-wins); ``https`` when the flags or the file set
        ``ssl-certfile``.
    :raises ValueError: for a port that is not an integer of 1-65535; TypeError for arguments of another type.
    """
    flags = _flags(args)
    settings = cmdline.server_settings(args if args is not None else {}, config)
    port = settings['port']
    if port is None or not 0 < port < 65536:
        raise ValueError('the port of these arguments is not an integer of 1-65535')
    certfile = flags.get(_SERVER_TLS_FLAG, cmdline.config_values(config).get(_SERVER_TLS_FLAG))
    return {'port': port, 'scheme': 'https' if _set(certfile) else 'http'}


def worker_url(host, port=DEFAULT_PORT, scheme='http', url=''):
    """The URL a router knows a server by: ``url`` when set (the inventory's ``inferops_sglang_worker_url``), else
    ``<scheme>://<host>:<port>`` - ``http://[fd00:10::1]:31000`` for an IPv6 inventory name, a name or an IPv4
    address as it is.

    :param host: the server's inventory name (or address), bracketed or not.
    :param port: int or its text, 1-65535 (``server_endpoint``'s port).
    :param scheme: ``http`` or ``https`` (``server_endpoint``'s scheme).
    :raises ValueError: for a bad port, scheme or an empty host.
    """
    if url:
        return str(url)
    if scheme not in _http.SCHEMES:
        raise ValueError('scheme must be http or https, not %r' % (scheme,))
    return '%s://%s' % (scheme, _http.host_port(host, port))


def server_worker_url(host, hostvars, configs=None):
    """``worker_url`` of one server from the inventory: its ``inferops_sglang_worker_url``, else its inventory name
    with ``server_endpoint`` of its ``service_server_args`` and its ``--config`` text (``configs[host]``, read on the
    host by the caller; missing: the flags and the default only)."""
    args = host_var(hostvars, host, 'service_server_args', {}) or {}
    endpoint = server_endpoint(args, (configs or {}).get(host))
    return worker_url(host, endpoint['port'], endpoint['scheme'], host_var(hostvars, host, 'inferops_sglang_worker_url', ''))


def worker_urls(hosts, hostvars, configs=None):
    """The servers a router balances over: ``server_worker_url`` of each host, in order. Of a multi-node replica
    (hosts sharing a ``service_replica_group``) only node rank 0 - the first host of that group - serves requests,
    so only it is listed, once.

    :param hosts: inventory names (list of str).
    :param hostvars: Ansible's hostvars (a mapping of host -> mapping).
    :param configs: dict host -> the text of its ``--config`` file, for the hosts whose port or TLS may be set there.
    :returns: list of str.
    :raises ValueError: naming the host whose port or scheme is wrong.
    """
    seen_groups = set()
    urls = []
    for host in hosts:
        group = host_var(hostvars, host, 'service_replica_group', '')
        if group:
            if group in seen_groups:
                continue
            seen_groups.add(group)
            members = (host_var(hostvars, host, 'groups', {}) or {}).get(group) or [host]
            host = members[0]
        try:
            urls.append(server_worker_url(host, hostvars, configs))
        except (TypeError, ValueError) as exc:
            raise ValueError('%s: %s' % (host, exc))
    return urls


def worker_config_paths(hosts, hostvars):
    """The ``--config`` files to read on the servers for their worker URLs (their port or TLS may be set there only).

    :param hosts: inventory names of the servers.
    :param hostvars: Ansible's hostvars.
    :returns: list of ``{'host': name, 'path': absolute path}``, in order, for each host whose ``service_server_args``
        sets ``config``. A relative path is the service's working directory's: the host's
        ``service_working_directory``, else the service role's default (``/root`` for ``service_user`` root, the
        default, else ``service_cache_dir``, default ``/var/cache/sglang``).
    """
    reads = []
    for host in hosts:
        args = host_var(hostvars, host, 'service_server_args', {}) or {}
        path = cmdline.config_values(dict(args)).get('--config') if hasattr(args, 'items') else None
        if not _set(path):
            continue
        path = str(path)
        if not path.startswith('/'):
            workdir = host_var(hostvars, host, 'service_working_directory', '')
            if not workdir:
                user = host_var(hostvars, host, 'service_user', 'root')
                workdir = '/root' if user == 'root' else (
                    host_var(hostvars, host, 'service_cache_dir', '') or '/var/cache/sglang')
            path = '%s/%s' % (str(workdir).rstrip('/'), path)
        reads.append({'host': host, 'path': path})
    return reads


def router_scheme(args):
    """``https`` when a router's arguments (``router_args``: a mapping, keys with or without dashes) set
    ``tls-cert-path``, else ``http``."""
    return 'https' if _set(_flags(args).get(_ROUTER_TLS_FLAG)) else 'http'


def router_url(hosts, hostvars):
    """The URL the servers reach a router at: the first of ``hosts`` (a router group), at its ``ansible_host``
    (else its name), its ``router_port`` (default 30000) and ``router_scheme`` of its ``router_args``; ``''`` when
    ``hosts`` is empty (no router).

    :raises ValueError: for a bad ``router_port``.
    """
    if not hosts:
        return ''
    host = hosts[0]
    address = host_var(hostvars, host, 'ansible_host', host) or host
    port = host_var(hostvars, host, 'router_port', DEFAULT_PORT)
    return worker_url(address, port, router_scheme(host_var(hostvars, host, 'router_args', {}) or {}))
