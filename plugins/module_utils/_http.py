# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The one HTTP client of the collection's modules, and the address a local probe uses.

* ``probe_host(bind_host)`` / ``base_url(host, port, scheme)``: where to reach a server that binds
  ``bind_host`` - a wildcard bind (``0.0.0.0``, empty, ``None``) is probed on ``127.0.0.1``, ``::`` on ``::1``;
  IPv6 literals are bracketed (``host_port``, the one ``host:port`` join of the collection). The filter
  ``inferops.sglang.probe_url`` exposes ``base_url`` to roles; the worker and router URLs built on it are in
  ``_plans/urls.py``.
* ``request(url, ...)``: one request through ansible-core's ``ansible.module_utils.urls`` (no dependency on the
  target). It returns a ``Response`` instead of raising - an HTTP error answer is a status, a request that got no
  HTTP answer (connection refused, timeout, reset, TLS failure, bad URL) has ``status`` None and ``error`` set
  (``tls`` True when the TLS handshake or the certificate check failed, ``timed_out`` True when the connection or a
  read outlasted the timeout - the server took the request and did not answer, unlike a refused connection).
* Proxies: a request to a local host (``is_local_host``: loopback 127.0.0.0/8, ``::1``, ``localhost``, or a
  wildcard address) never goes through a proxy, whatever ``http_proxy``/``https_proxy`` say; any other host
  honours the environment's proxy settings and ``no_proxy``.
* API keys: ``auth_refusal`` words a 401 or 403 answer the same way for every module - ``AUTH_REQUIRED`` when no
  key was sent, ``AUTH_REFUSED`` when one was.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import inspect
import ipaddress
import json
import socket
import ssl
import time

from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text
from ansible.module_utils.six.moves import http_client
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import urlsplit
from ansible.module_utils.urls import ConnectionError as UrlsConnectionError
from ansible.module_utils.urls import Request, make_context

SCHEMES = ('http', 'https')

# What a 401 or 403 answer means, in the words every module of the collection uses.
AUTH_REQUIRED = 'the server requires an API key'
AUTH_REFUSED = 'the key was refused'

# Everything that means "no HTTP answer" (HTTPError, a subclass of URLError, is caught before these).
NO_ANSWER = (URLError, OSError, socket.error, socket.timeout, http_client.HTTPException, UrlsConnectionError,
             ValueError)
# Reading the body of an HTTP error answer: the error may have no body to read, or the connection breaks.
BODY_UNREADABLE = (AttributeError,) + NO_ANSWER


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


def auth_refusal(status, key_sent):
    """Why an answer with ``status`` refused the request for want of a valid API key, or None.

    :param status: the HTTP status (None without an answer).
    :param key_sent: whether the request carried a key (``Authorization: Bearer``).
    :returns: ``AUTH_REFUSED`` (a key was sent) or ``AUTH_REQUIRED`` (none was) for 401 and 403, else None.
    """
    if status not in (401, 403):
        return None
    return AUTH_REFUSED if key_sent else AUTH_REQUIRED


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


class Response(object):
    """What one request got.

    :ivar status: the HTTP status (an error answer such as 401 or 503 included), or None when there was
        no HTTP answer.
    :ivar body: the body of the answer as text (undecodable bytes replaced), '' without one.
    :ivar elapsed: seconds from sending the request until the body was read (or the request failed).
    :ivar error: why there was no HTTP answer, None when there was one.
    :ivar tls: True when there was no answer because TLS failed (handshake, certificate check).
    :ivar proxied: whether the environment's proxy settings applied to the request (never for a local host).
    :ivar timed_out: True when there was no answer because the timeout ran out (``socket.timeout``, also when urllib
        wraps it), False otherwise (an answer, a refused or reset connection, TLS).
    """

    __slots__ = ('status', 'body', 'elapsed', 'error', 'tls', 'proxied', 'timed_out')

    def __init__(self, status, body, elapsed, error=None, tls=False, proxied=False, timed_out=False):
        self.status = status
        self.body = body
        self.elapsed = elapsed
        self.error = error
        self.tls = tls
        self.proxied = proxied
        self.timed_out = timed_out

    def json(self):
        """The body parsed as JSON; ValueError when it is not JSON."""
        return json.loads(self.body)

    def __repr__(self):
        return 'Response(status=%r, elapsed=%.3f, error=%r, body=%r)' % (
            self.status, self.elapsed, self.error, self.body[:80])


# TLS contexts by (validate_certs, ca_path): building one loads the CA store (tens of ms), and a module polls.
_CONTEXTS = {}
# Request.open() takes a ready TLS context from ansible-core 2.17 on; 2.16 builds one per request from
# validate_certs and ca_path (the same verification, only slower).
_OPEN_TAKES_CONTEXT = 'context' in inspect.signature(Request.open).parameters


def _context(validate_certs, ca_path):
    key = (bool(validate_certs), ca_path)
    if key not in _CONTEXTS:
        _CONTEXTS[key] = make_context(cafile=ca_path, validate_certs=bool(validate_certs))
    return _CONTEXTS[key]


def _why(exc):
    """Plain text of why a request got no answer: the reason of a URLError, without its wrapper text."""
    text = to_native(getattr(exc, 'reason', None) or exc)
    return text or exc.__class__.__name__


# TLS errors that only say the connection closed (a server going away mid-handshake): not a TLS problem as such.
_TLS_CLOSED = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)


def _is_tls_failure(exc):
    """Whether a request failed in TLS in a way a retry does not fix: the certificate check, or a handshake
    the other end does not speak (a plain-HTTP server asked for https). urllib wraps both in a URLError."""
    for candidate in (exc, getattr(exc, 'reason', None)):
        if isinstance(candidate, ssl.CertificateError):
            return True
        if isinstance(candidate, ssl.SSLError) and not isinstance(candidate, _TLS_CLOSED):
            return True
    return False


def _is_timeout(exc):
    """Whether a request got no answer because its timeout ran out (urllib wraps a connect timeout in a URLError)."""
    return any(isinstance(candidate, socket.timeout) for candidate in (exc, getattr(exc, 'reason', None)))


def request(url, method='GET', body=None, headers=None, timeout=30, validate_certs=True, ca_path=None,
            bearer_token=None, use_proxy=True):
    """Send one request and read the whole answer.

    :param url: the full URL.
    :param method: the HTTP method.
    :param body: None, bytes or text sent as they are, or anything else sent as JSON. With a body, the
        ``Content-Type`` is ``application/json`` unless ``headers`` has one.
    :param headers: more request headers (dict).
    :param timeout: seconds for the connection and each read.
    :param validate_certs: verify the server's certificate (https).
    :param ca_path: CA bundle to verify it against instead of the system's.
    :param bearer_token: sent as ``Authorization: Bearer <token>`` when not empty.
    :param use_proxy: honour ``http_proxy``/``https_proxy``/``no_proxy`` from the environment. A URL whose host
        is local (``is_local_url``) is never proxied, whatever this says.
    :returns: a ``Response``; it never raises for an HTTP error answer or a request without an answer.
    """
    proxied = bool(use_proxy) and not is_local_url(url)
    all_headers = dict(headers or {})
    data = None
    if body is not None:
        data = to_bytes(body) if isinstance(body, (bytes, str)) else to_bytes(json.dumps(body))
        if not any(name.lower() == 'content-type' for name in all_headers):
            all_headers['Content-Type'] = 'application/json'
    if bearer_token:
        all_headers['Authorization'] = 'Bearer %s' % bearer_token
    try:
        # Built before the clock starts: the first one loads the CA store, which is no part of the request.
        context = _context(validate_certs, ca_path)
    except NO_ANSWER as exc:
        return Response(None, '', 0.0, 'no TLS context: %s' % _why(exc), tls=True, proxied=proxied)
    started = time.time()
    try:
        # ansible-core's open_url is Request().open() with a fresh TLS context each call; this reuses one.
        # No ~/.netrc: its Basic credentials would replace the bearer token.
        reuse = {'context': context} if _OPEN_TAKES_CONTEXT else {}
        answer = Request().open(method, url, data=data, headers=all_headers, timeout=timeout, use_proxy=proxied,
                                validate_certs=validate_certs, ca_path=ca_path, use_netrc=False, **reuse)
        status, raw = answer.getcode(), answer.read()
    except HTTPError as exc:
        status = exc.code
        try:
            raw = exc.read()
        except BODY_UNREADABLE:
            raw = b''
    except NO_ANSWER as exc:
        return Response(None, '', time.time() - started, _why(exc), tls=_is_tls_failure(exc), proxied=proxied,
                        timed_out=_is_timeout(exc))
    return Response(status, to_text(raw or b'', errors='replace'), time.time() - started, proxied=proxied)
