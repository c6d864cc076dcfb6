# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The router role's plan: its derived values and every problem of its settings, in one pure function.

``router_plan(inputs)`` is called by ``roles/router/vars/main.yml`` (filter ``router_plan``); the pre-flight asserts
that its ``problems`` are empty, then does the checks that need the host (systemd, the user, the venv's pip).
No key is ever part of the plan's values or of a problem's text: keys are inputs only so that their shape is checked
(the secrets file, the control key and the launcher that reads the file stay in the role, beside the argument check
that must compose argv the same way).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils import _http, _router_generations, _secrets
from ansible_collections.inferops.sglang.plugins.module_utils._plans import urls
from ansible_collections.inferops.sglang.plugins.module_utils._plans.inventory import host_var
from ansible_collections.inferops.sglang.plugins.module_utils._server_args import args_to_argv

POLICIES = ('random', 'round_robin', 'cache_aware', 'power_of_two', 'manual')
# router_args keys that have their own variables.
OWN_VARIABLES = ('host', 'port', 'policy', 'worker-urls')
# router_args whose values are files the router reads (kept visible in the sandbox).
FILE_ARGS = ('tls-cert-path', 'tls-key-path', 'client-cert-path', 'client-key-path', 'ca-cert-paths')
KEY_ROLES = ('admin', 'user')


def _router_arg_name(key):
    """A router_args key as the router spells it without dashes: ``tls_cert_path`` -> ``tls-cert-path``."""
    return str(key).lstrip('-').replace('_', '-')


def _only_str(value):
    return value if isinstance(value, str) else ''


def _settings_problems(p):
    """The settings the role cannot use, worded as before the plan (one message)."""
    args = p.get('args') or {}
    try:
        port = int(p.get('port'))
    except (TypeError, ValueError):
        port = 0
    ok = (0 < port < 65536
          and all(_only_str(p.get(name)).startswith('/') for name in ('venv', 'python', 'secrets_file'))
          and _only_str(p.get('version'))
          and p.get('policy') in POLICIES
          and not set(_router_arg_name(key) for key in args) & set(OWN_VARIABLES)
          and (not p.get('ca_path') or _only_str(p.get('ca_path')).startswith('/'))
          and _only_str(p.get('user')) and _only_str(p.get('group')))
    if ok:
        return []
    return ['router_port must be a TCP port, router_venv, router_python and router_secrets_file absolute paths, '
            'router_ca_path empty or an absolute path, router_user and router_group not empty, router_policy one of '
            'random, round_robin, cache_aware, power_of_two, manual; host, port, policy and worker URLs have their own '
            'variables (router_host, router_port, router_policy, router_worker_urls), not router_args.']


def _key_problems(p):
    """The shape of the keys (never their values): router_api_key, router_worker_api_key, the control-plane keys."""
    entries = p.get('control_plane_api_keys') or []
    entries = [entry if hasattr(entry, 'get') else {} for entry in entries]
    ids = [str(entry.get('id', '')) for entry in entries]

    def plain(value):
        return isinstance(value, str) and not any(char.isspace() for char in value)

    ok = (plain(p.get('api_key', '')) and plain(p.get('worker_api_key', ''))
          and all(isinstance(entry.get(name), str) for entry in entries for name in ('id', 'name', 'key'))
          and all(value and ':' not in value and not value.startswith('-') for value in ids)
          and all(str(entry.get('name')) and ':' not in str(entry.get('name')) for entry in entries)
          and all(entry.get('role') in KEY_ROLES for entry in entries)
          and all(entry.get('key') and plain(entry.get('key')) for entry in entries)
          and len(set(ids)) == len(ids))
    problems = []
    if not ok:
        problems.append(
            'router_control_plane_api_keys must be a list of {id, name, role, key}, each a string - id and name not '
            "empty and without ':' (id not starting with '-'), role admin or user, key not empty and without "
            'whitespace, ids unique; router_api_key and router_worker_api_key are strings without whitespace. '
            'The ids given: %s; their roles: %s.'
            % (', '.join(ids) if ids else 'none', ', '.join(str(entry.get('role', '')) for entry in entries)))
    if p.get('worker_urls') and entries and not any(entry.get('role') == 'admin' for entry in entries):
        problems.append(
            "router_control_plane_api_keys has no key with the role admin, and the router's worker API (/workers, "
            'where the role registers the workers) accepts only an admin control-plane key once there are any; add '
            'one with role admin.')
    return problems


def _worker_problems(p):
    workers = p.get('worker_urls') or []
    bad = [url for url in workers
           if not isinstance(url, str) or not (url.startswith('http://') or url.startswith('https://'))
           or not url.split('://', 1)[1] or any(char == '/' or char.isspace() for char in url.split('://', 1)[1])]
    if bad:
        return ['router_worker_urls must be http(s)://host:port URLs without a path: %s' % (workers,)]
    return []


def _own_server_port(p, hostvars):
    """The port of the SGLang server of this host (``name``) when it is one of ``worker_hosts``, else None; its
    ``service_server_args`` from ``hostvars`` and its ``--config`` text from ``worker_configs``."""
    name = p.get('name')
    if name is None or name not in (p.get('worker_hosts') or []):
        return None
    args = host_var(hostvars, name, 'service_server_args', {}) or {}
    return urls.server_endpoint(args, (p.get('worker_configs') or {}).get(name))['port']


def router_plan(inputs, hostvars=None):
    """The router role's derived values and problems.

    :param inputs: dict of the role's variables without the ``router_`` prefix - ``host``, ``port``, ``policy``,
        ``args`` (dict), ``venv``, ``python``, ``version``, ``secrets_file``, ``ca_path``, ``user``, ``group``,
        ``service_name``, ``worker_urls`` (list), ``api_key``, ``worker_api_key``, ``control_plane_api_keys``
        (list of {id, name, role, key}) - and, for the port of an SGLang server on the router's host
        (``urls.server_endpoint``): ``name`` (this host), ``worker_hosts`` (the servers' hosts), ``worker_configs``
        (host -> the text of its ``--config`` file, as read by the pre-flight).
    :param hostvars: Ansible's hostvars (this host's ``service_server_args`` when it is a server too), or None.
    :returns: dict - ``unit``, ``unit_path``, ``scheme`` (``urls.router_scheme``), ``url`` (how this host probes the
        router: ``_http.base_url``, a wildcard bind on loopback), ``args`` (host, port, policy, then ``args``),
        ``python`` (the venv's interpreter), ``argv`` (the args as argv words; [] while there are problems),
        ``file_args`` (absolute paths the router reads), ``capabilities`` (list: CAP_NET_BIND_SERVICE below port 1024),
        ``workers`` (the worker URLs), from ``_router_generations`` for ``version``: ``generation``
        (``sglang-router`` up to 0.3.2, ``smg`` from 0.4), ``package`` (the PyPI name), ``requirement``
        (``<package>==<version>``), ``launch_module`` (``sglang_router.launch_router`` or ``smg.launch_router``),
        ``timeout_stop_sec`` (the unit's TimeoutStopSec=: the router's graceful shutdown period plus a margin),
        ``problems`` (list of str: what to fix, empty when none).
    :raises TypeError: when ``inputs`` is not a mapping; ValueError for a bad port of this host's server.
    """
    if not hasattr(inputs, 'get'):
        raise TypeError('expected the router role inputs as a mapping, got %s' % type(inputs).__name__)
    p = dict(inputs)
    args = dict(p.get('args') or {})
    problems = _settings_problems(p)
    secret_flags = _secrets.secret_flags(args)
    if secret_flags:
        problems.append(
            'router_args sets %s; secrets never go into argv or a unit file, where every local user can read them '
            '(ps, systemctl show). Put the router\'s key in router_api_key and the control-plane keys in '
            'router_control_plane_api_keys (both meant for ansible-vault): the role keeps them in router_secrets_file '
            '(mode 0600, owned by router_user) and the router reads them from there.' % ', '.join(secret_flags))
    problems += _key_problems(p)
    problems += _worker_problems(p)
    try:
        generation = _router_generations.router_generation(p.get('version'))
    except ValueError as exc:
        generation = _router_generations.router_generation('0.3.2')
        if _only_str(p.get('version')):   # an empty one is in the settings' problem already
            problems.append('%s; set router_version to a release of sglang-router (up to 0.3.2) or smg (0.4 on).'
                            % exc)
    try:
        timeout_stop_sec = _router_generations.router_timeout_stop_sec(args)
    except ValueError as exc:
        timeout_stop_sec = 0
        problems.append('router_args: %s.' % exc)
    try:
        port = int(p.get('port'))
    except (TypeError, ValueError):
        port = 0
    server_port = _own_server_port(p, hostvars or {})
    if server_port is not None and server_port == port:
        problems.append('this host also runs an SGLang server on port %d; give the router another router_port.' % port)

    scheme = urls.router_scheme(args)
    full_args = dict([('host', p.get('host')), ('port', port), ('policy', p.get('policy'))])
    full_args.update(args)
    argv = [] if problems else args_to_argv(full_args)
    python = '%s/bin/python' % _only_str(p.get('venv')).rstrip('/')
    file_args = []
    for key, value in args.items():
        if _router_arg_name(key) in FILE_ARGS:
            for path in (value if isinstance(value, (list, tuple)) else [value]):
                if isinstance(path, str) and path.startswith('/'):
                    file_args.append(path)
    unit = '%s.service' % p.get('service_name', 'sglang-router')
    return {
        'unit': unit,
        'unit_path': '/etc/systemd/system/%s' % unit,
        'scheme': scheme,
        'url': _http.base_url(p.get('host'), port, scheme) if 0 < port < 65536 else '',
        'python': python,
        'args': full_args,
        'argv': argv,
        'file_args': file_args,
        'capabilities': ['CAP_NET_BIND_SERVICE'] if 0 < port < 1024 else [],
        'workers': list(p.get('worker_urls') or []),
        'generation': generation['generation'],
        'package': generation['package'],
        'requirement': generation['requirement'],
        'launch_module': generation['launch_module'],
        'timeout_stop_sec': timeout_stop_sec,
        'problems': problems,
    }
