# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Where a server is reached: the collection's one rule for a probe address and a ``host:port``, with no HTTP client.

* ``probe_host(bind_host)`` / ``base_url(host, port, scheme)``: where to reach a server that binds ``bind_host`` - a
  wildcard bind (``0.0.0.0``, empty, ``None``) is probed on ``127.0.0.1``, ``::`` on ``::1``; IPv6 literals are
  bracketed (``host_port``, the one ``host:port`` join of the collection). The filter ``inferops.sglang.probe_url``
  exposes ``base_url`` to roles; the worker and router URLs built on it are in ``_plans/urls.py``.
* ``is_local_host`` / ``is_local_url``: whether a host or URL is this machine (loopback or a wildcard address).
* ``probe_url_of(url)``: a URL with a wildcard host made a probe address.

The HTTP client (``_http``, on ansible-core's ``ansible.module_utils.urls``) names these too. The controller's filters
and plans import this module alone: ``ansible.module_utils.urls`` is not imported where no request is made.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ipaddress
import socket

from ansible.module_utils.common.text.converters import to_native, to_text
from ansible.module_utils.six.moves.urllib.parse import urlsplit

SCHEMES = ('http', 'https')


def probe_host(bind_host):
    """The address to probe a server on that binds ``bind_host``.

    ``0.0.0.0``, ``''`` and ``None`` (every IPv4 address) -> ``127.0.0.1``; ``::`` (every address) -> ``::1``;
    any other host is returned unchanged.
    """
    if bind_host is None or bind_host in ('', '0.0.0.0'):
        return '127.0.0.1'
    if bind_host == '::':
        return '::1'
    return bind_host


def host_port(host, port):
    """``<host>:<port>`` as URLs and ``host:port`` options (SGLang's ``--dist-init-addr``) write it: an IPv6 literal
    in brackets (``[fd00:10::1]:5000``; one already in brackets is kept), an IPv4 address or a name as it is.

    :param host: str, an address literal or a name (not empty).
    :param port: int or its text, 1 to 65535.
    :raises ValueError: for an empty host or a port outside 1-65535; TypeError for a port that is not a number.
    """
    number = int(port)
    if not 0 < number < 65536:
        raise ValueError('port must be between 1 and 65535, not %r' % (port,))
    host = to_text(host or '').strip()
    if host.startswith('[') and host.endswith(']'):
        host = host[1:-1]
    if not host:
        raise ValueError('the host is empty')
    if ':' in host:
        host = '[%s]' % host
    return '%s:%d' % (host, number)


def base_url(host, port, scheme='http'):
    """``<scheme>://<probe_host(host)>:<port>``, the host and port joined by ``host_port`` (IPv6 in brackets).

    Raises ValueError for a port outside 1-65535 or a scheme other than http/https, TypeError for a port
    that is not a number.
    """
    if scheme not in SCHEMES:
        raise ValueError('scheme must be http or https, not %r' % (scheme,))
    if host and host.startswith('[') and host.endswith(']'):
        host = host[1:-1]
    return '%s://%s' % (scheme, host_port(probe_host(host), port))


def is_local_host(host):
    """Whether ``host`` (a name or an address literal, bracketed or not) is this machine.

    True for loopback - ``127.0.0.0/8`` (``127.1`` style short forms included), ``::1``, an IPv4-mapped
    loopback address, ``localhost`` and names under ``.localhost`` - and for the wildcard addresses a probe maps
    to loopback (``0.0.0.0``, ``::``, empty, None). False for every other name or address.
    """
    text = to_text(host or '').strip().lower()
    if text.startswith('[') and text.endswith(']'):
        text = text[1:-1]
    text = text.rstrip('.')
    if text in ('', 'localhost') or text.endswith('.localhost'):
        return True
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        address = None
    if address is not None:
        mapped = getattr(address, 'ipv4_mapped', None)
        if mapped is not None:
            address = mapped
        return address.is_loopback or address.is_unspecified
    if text and all(char.isdigit() or char == '.' for char in text):
        try:  # the short numeric forms the resolver accepts: 127.1, 2130706433
            packed = socket.inet_aton(text)
        except (OSError, socket.error):
            return False
        return packed[:1] == b'\x7f' or packed == b'\0\0\0\0'
    return False


def is_local_url(url):
    """Whether ``url`` (``scheme://host...``) points at this machine (``is_local_host`` of its host)."""
    try:
        parts = urlsplit(to_native(url))
    except ValueError:
        return False
    if not parts.scheme or not parts.netloc:
        return False
    return is_local_host(parts.hostname)


def probe_url_of(url):
    """``url`` with a wildcard host (``0.0.0.0``, ``[::]``, empty) replaced by ``probe_host``'s loopback address.

    Any other URL is returned unchanged, as is text that is not ``scheme://host...``.
    """
    scheme, sep, rest = url.partition('://')
    if not sep:
        return url
    cut = len(rest)
    for char in '/?#':
        if char in rest:
            cut = min(cut, rest.index(char))
    netloc, tail = rest[:cut], rest[cut:]
    userinfo, at, hostport = netloc.rpartition('@')
    if hostport.startswith('['):
        host, bracket, port = hostport[1:].partition(']')
        if not bracket:
            return url
    elif hostport.count(':') > 1:
        return url  # an IPv6 literal without brackets: not a URL to guess about
    else:
        host, colon, port = hostport.partition(':')
        port = colon + port
    probe = probe_host(host)
    if probe == host:
        return url
    if ':' in probe:
        probe = '[%s]' % probe
    return '%s://%s%s%s%s%s' % (scheme, userinfo, at, probe, port, tail)
