# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Prometheus file-based service discovery targets of a fleet (the fleet role's ``fleet_prometheus_targets_dir``).

``prometheus_targets(servers, hostvars, routers)`` lists, as Prometheus's ``file_sd_configs`` reads them (a JSON list
of ``{"targets": ["host:port"], "labels": {...}}``), every SGLang server that serves metrics and every router:

* a server is listed when its ``service_server_args`` turn on ``enable-metrics`` (SGLang mounts ``/metrics`` only
  then: SGLang 0.5.23 ``srt/entrypoints/http_server.py``, ``if get_observability().enable_metrics:
  add_prometheus_middleware(app)``; a server without it would only ever show as down). Of a multi-node replica only
  node rank 0 serves HTTP, so only it is listed. Its address is its worker URL (filter ``worker_urls``'s rule: the
  inventory's ``inferops_sglang_worker_url``, else the inventory name and the port of its arguments).
* a router is listed at its inventory name and ``router_args``' ``prometheus-port``, else 29000 (sglang-router 0.3.2
  ``sglang_router/router_args.py``: ``--prometheus-port`` default 29000, ``--prometheus-host`` default 0.0.0.0;
  its metrics are named ``smg_*``).

Labels: ``host`` (inventory name), ``model`` (``served-model-name``, else ``model-path`` of the server's arguments;
not on a router), ``version`` (``service_sglang_version`` of a server, ``router_version`` of a router; ``unknown`` when
empty) and ``role`` (``worker`` or ``router``); a server with TLS (``ssl-certfile``) gets ``__scheme__: https``,
which Prometheus uses as the target's scheme (the router's metrics listener is plain HTTP).

Everything here is pure: hostvars are an input, nothing is read from a host.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils import _http
from ansible_collections.inferops.sglang.plugins.module_utils._plans import urls
from ansible_collections.inferops.sglang.plugins.module_utils._plans.inventory import host_var
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import cmdline

ROUTER_METRICS_PORT = 29000
_METRICS_FLAG = '--enable-metrics'
_ROUTER_PORT_FLAG = '--prometheus-port'


def _on(value):
    """Whether a flag's value turns it on (True, a bare flag, or a text that YAML or argparse reads as true)."""
    if isinstance(value, bool):
        return value
    return value is not None and str(value).strip().lower() in ('1', 'true', 'yes', 'on', 'y')


def _label_text(value):
    return '' if value is None else str(value).strip()


def prometheus_targets(servers, hostvars, routers=None):
    """The file_sd target groups of a fleet.

    :param servers: inventory names of the SGLang servers (list of str, in order).
    :param hostvars: Ansible's hostvars (a mapping of host -> mapping): ``service_server_args``,
        ``service_replica_group``, ``inferops_sglang_worker_url``, ``service_sglang_version`` of a server;
        ``router_args``, ``router_version`` of a router.
    :param routers: inventory names of the routers (list of str), or None.
    :returns: list of dicts ``{'targets': ['host:port'], 'labels': {'host', 'model', 'version', 'role', maybe
        '__scheme__'}}``, the servers first (in order), then the routers; servers without ``enable-metrics`` are
        left out.
    :raises ValueError: naming the host whose port is not an integer of 1-65535.
    """
    groups = []
    seen_replicas = set()
    for host in servers or []:
        replica = host_var(hostvars, host, 'service_replica_group', '')
        if replica:
            if replica in seen_replicas:
                continue
            seen_replicas.add(replica)
        args = host_var(hostvars, host, 'service_server_args', {}) or {}
        flags = cmdline.config_values(dict(args)) if hasattr(args, 'items') else {}
        if not _on(flags.get(_METRICS_FLAG)):
            continue
        try:
            url = urls.server_worker_url(host, hostvars)
        except (TypeError, ValueError) as exc:
            raise ValueError('%s: %s' % (host, exc))
        scheme, _sep, address = url.partition('://')
        labels = {
            'host': str(host),
            'model': _label_text(flags.get('--served-model-name')) or _label_text(flags.get('--model-path')) or 'unknown',
            'version': _label_text(host_var(hostvars, host, 'service_sglang_version', '')) or 'unknown',
            'role': 'worker',
        }
        if scheme == 'https':
            labels['__scheme__'] = 'https'
        groups.append({'targets': [address.split('/')[0]], 'labels': labels})
    for host in routers or []:
        args = host_var(hostvars, host, 'router_args', {}) or {}
        flags = cmdline.config_values(dict(args)) if hasattr(args, 'items') else {}
        port = flags.get(_ROUTER_PORT_FLAG) or ROUTER_METRICS_PORT
        try:
            port = int(port)
        except (TypeError, ValueError):
            port = 0
        if not 0 < port < 65536:
            raise ValueError('%s: router_args prometheus-port is not an integer of 1-65535' % host)
        labels = {
            'host': str(host),
            'version': _label_text(host_var(hostvars, host, 'router_version', '')) or 'unknown',
            'role': 'router',
        }
        groups.append({'targets': [_http.host_port(host, port)], 'labels': labels})
    return groups
