# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Real HTTP(S) servers on 127.0.0.1 for the tests of module_utils/_http and of the modules that use it.

* ``make_cert(directory)``: a self-signed certificate for 127.0.0.1, ::1 and localhost, made with the ``openssl``
  command line tool (the certificate is its own CA: pass it as ``ca_path``).
* ``serve(handler, certfile=None, keyfile=None)``: a threaded ``http.server`` on 127.0.0.1, wrapped in TLS when a
  certificate is given; ``.url``, ``.seen`` (every request: method, path, headers, body, 'at' its arrival in epoch s); ``.stop()``.
* ``FakeSGLang``: the endpoints the health gate and the drain read, with SGLang's API key rule (401 without
  ``Authorization: Bearer <key>`` on every path but ``/health*`` and ``/metrics*``).
* ``FakeRouter``: sglang-router 0.3.2's worker API (``GET``/``POST /workers``, ``DELETE /workers/<id>``) behind a
  control-plane key.
* ``Refuse502``: what a proxy that cannot reach anything answers - 502 to every request.

Loaded by file path (it is not a test module).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import ssl
import subprocess
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def make_cert(directory, name='server'):
    """(certfile, keyfile) of a new self-signed EC certificate valid for 127.0.0.1, ::1 and localhost."""
    cert = os.path.join(str(directory), name + '.pem')
    key = os.path.join(str(directory), name + '.key')
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
                    '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=inferops-test-' + name,
                    '-addext', 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost'],
                   check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return cert, key


class Recording(BaseHTTPRequestHandler):
    """Base handler: records each request in ``server.seen`` and calls ``answer(method, path, body)``, which
    returns (status, JSON-able body or None)."""

    protocol_version = 'HTTP/1.1'

    def _handle(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else b''
        self.server.seen.append({'method': self.command, 'path': self.path, 'body': body, 'at': time.time(),
                                 'headers': dict((k.lower(), v) for k, v in self.headers.items())})
        status, payload = self.answer(self.command, self.path, body)
        if status is None:  # no answer: the connection is closed
            self.close_connection = True
            return
        data = b'' if payload is None else json.dumps(payload).encode('utf-8')
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _handle  # noqa: N815

    def answer(self, method, path, body):
        return 200, {'method': method, 'path': path}

    def bearer(self):
        parts = (self.headers.get('Authorization') or '').split(' ', 1)
        return parts[1] if len(parts) == 2 and parts[0].lower() == 'bearer' else None

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


class Refuse502(Recording):
    def answer(self, method, path, body):
        return 502, {'error': 'the proxy stand-in answers 502 to everything'}


class FakeSGLang(Recording):
    """``server.api_key`` (None: none required); ``server.load`` is what ``/get_load`` reports. ``chat`` (option):
    what ``POST /v1/chat/completions`` does instead of answering - ``('hang', seconds)`` holds the request that long,
    ``(status, body)`` answers that (``(None, None)``: closes the connection without an answer)."""

    def answer(self, method, path, body):
        key = self.server.options.get('api_key')
        if key and not path.startswith(('/health', '/metrics')) and self.bearer() != key:
            return 401, {'error': 'Unauthorized'}
        if path == '/health':
            return 200, None
        if path == '/v1/models':
            return 200, {'object': 'list', 'data': [{'id': 'fake-model', 'object': 'model'}]}
        chat = self.server.options.get('chat')
        if path == '/v1/chat/completions' and method == 'POST' and chat and chat[0] == 'hang':
            time.sleep(chat[1])
            return 503, {'object': 'error', 'message': 'late'}
        if path == '/v1/chat/completions' and method == 'POST' and chat:
            return chat
        if path == '/v1/chat/completions' and method == 'POST':
            return 200, {'choices': [{'message': {'role': 'assistant', 'content': 'Hello'}}],
                         'usage': {'completion_tokens': 1}}
        if path == '/get_load':
            return 200, [{'dp_rank': 0, 'num_reqs': 0, 'num_waiting_reqs': 0, 'num_tokens': 0}]
        return 404, {'detail': 'Not Found'}


class FakeRouter(Recording):
    """``server.options['admin_key']`` guards the worker API like ``--control-plane-api-keys`` (401 without a
    known key, 403 for ``user_key``); ``server.workers`` is the list (id, url, is_healthy)."""

    def answer(self, method, path, body):
        options = self.server.options
        token = self.bearer()
        if options.get('admin_key'):
            if token is None:
                return 401, 'Missing or invalid Authorization header'
            if token == options.get('user_key'):
                return 403, 'Admin role required for control plane access'
            if token != options['admin_key']:
                return 401, 'Invalid authentication token'
        workers = self.server.workers
        if path == '/workers' and method == 'GET':
            return 200, {'workers': workers, 'total': len(workers), 'stats': {}}
        if path == '/workers' and method == 'POST':
            request = json.loads(body.decode('utf-8'))
            worker_id = str(uuid.uuid4())
            workers.append({'id': worker_id, 'url': request['url'], 'is_healthy': True, 'load': 0})
            return 202, {'status': 'accepted', 'worker_id': worker_id, 'url': request['url']}
        if path.startswith('/workers/') and method == 'DELETE':
            worker_id = path.rsplit('/', 1)[1]
            workers[:] = [w for w in workers if w['id'] != worker_id]
            return 202, {'status': 'accepted', 'worker_id': worker_id}
        return 404, None


class Served(object):
    def __init__(self, httpd, scheme):
        self.httpd = httpd
        self.port = httpd.server_address[1]
        self.url = '%s://127.0.0.1:%d' % (scheme, self.port)
        self.seen = httpd.seen
        self.options = httpd.options

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def serve(handler, certfile=None, keyfile=None, **options):
    """Start ``handler`` on 127.0.0.1 (TLS with ``certfile``/``keyfile``); ``options`` land in ``server.options``."""
    httpd = ThreadingHTTPServer(('127.0.0.1', 0), handler)
    httpd.daemon_threads = True
    httpd.seen = []
    httpd.options = options
    httpd.workers = options.pop('workers', [])
    if certfile:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certfile, keyfile)
        # The handshake happens on the first read, in the request's own thread (a client that connects and
        # closes, as a TCP probe does, does not hold up the accept loop).
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
    thread = threading.Thread(target=httpd.serve_forever)
    thread.daemon = True
    thread.start()
    return Served(httpd, 'https' if certfile else 'http')
