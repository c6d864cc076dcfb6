# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The HTTP client and the probe address of module_utils/_http, against a real http.server on 127.0.0.1.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import socket
import threading
import time

import pytest

from ansible.module_utils.six.moves.BaseHTTPServer import BaseHTTPRequestHandler, HTTPServer
from ansible_collections.inferops.sglang.plugins.module_utils import _http


# -- the probe address ----------------------------------------------------------------------------

@pytest.mark.parametrize('bind, expected', [
    ('0.0.0.0', '127.0.0.1'),
    ('', '127.0.0.1'),
    (None, '127.0.0.1'),
    ('::', '::1'),
    ('127.0.0.1', '127.0.0.1'),
    ('::1', '::1'),
    ('10.0.0.5', '10.0.0.5'),
    ('fd00::1', 'fd00::1'),
    ('gpu1', 'gpu1'),
])
def test_probe_host(bind, expected):
    assert _http.probe_host(bind) == expected


@pytest.mark.parametrize('host, port, scheme, expected', [
    ('0.0.0.0', 30000, 'http', 'http://127.0.0.1:30000'),
    ('', 30000, 'http', 'http://127.0.0.1:30000'),
    (None, 30000, 'http', 'http://127.0.0.1:30000'),
    ('::', 30000, 'http', 'http://[::1]:30000'),
    ('[::]', 30000, 'http', 'http://[::1]:30000'),
    ('::1', 30000, 'http', 'http://[::1]:30000'),
    ('fd00::1', '31000', 'http', 'http://[fd00::1]:31000'),
    ('[fd00::1]', 31000, 'http', 'http://[fd00::1]:31000'),
    ('10.0.0.5', 30000, 'https', 'https://10.0.0.5:30000'),
    ('gpu1', 30000, 'http', 'http://gpu1:30000'),
])
def test_base_url(host, port, scheme, expected):
    assert _http.base_url(host, port, scheme) == expected


def test_base_url_default_scheme_is_http():
    assert _http.base_url('0.0.0.0', 30000) == 'http://127.0.0.1:30000'


@pytest.mark.parametrize('port, scheme, error', [
    (0, 'http', ValueError),
    (65536, 'http', ValueError),
    ('x', 'http', ValueError),
    (None, 'http', TypeError),
    (30000, 'ftp', ValueError),
])
def test_base_url_rejects(port, scheme, error):
    with pytest.raises(error):
        _http.base_url('gpu1', port, scheme)


@pytest.mark.parametrize('url, expected', [
    ('http://0.0.0.0:30000', 'http://127.0.0.1:30000'),
    ('http://[::]:30000/x', 'http://[::1]:30000/x'),
    ('https://0.0.0.0', 'https://127.0.0.1'),
    ('http://:30000', 'http://127.0.0.1:30000'),
    ('http://gpu1:30000/', 'http://gpu1:30000/'),
    ('http://[fd00::1]:30000', 'http://[fd00::1]:30000'),
    ('http://::1:30000', 'http://::1:30000'),
    ('gpu1:30000', 'gpu1:30000'),
])
def test_probe_url_of(url, expected):
    assert _http.probe_url_of(url) == expected


# -- the client -------------------------------------------------------------------------------------

class Recorder(BaseHTTPRequestHandler):
    """/status/<code> answers <code> with a JSON body; /slow sleeps 2 s; /secret wants 'Bearer s3cret';
    every request is recorded (method, path, headers, body) in server.seen."""

    def _answer(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else b''
        self.server.seen.append({'method': self.command, 'path': self.path,
                                 'headers': dict((k.lower(), v) for k, v in self.headers.items()),
                                 'body': body})
        path = self.path
        if path == '/slow':
            time.sleep(2)
            status = 200
        elif path == '/secret':
            status = 200 if self.headers.get('Authorization') == 'Bearer s3cret' else 401
        elif path.startswith('/status/'):
            status = int(path.rsplit('/', 1)[1])
        else:
            status = 200
        payload = json.dumps({'status': status, 'method': self.command}).encode('utf-8')
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_DELETE = _answer  # noqa: N815

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


@pytest.fixture(name='server')
def fixture_server(monkeypatch):
    for name in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY'):
        monkeypatch.delenv(name, raising=False)
    httpd = HTTPServer(('127.0.0.1', 0), Recorder)
    httpd.daemon_threads = True
    httpd.seen = []
    thread = threading.Thread(target=httpd.serve_forever)
    thread.daemon = True
    thread.start()
    httpd.url = 'http://127.0.0.1:%d' % httpd.server_address[1]
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize('status', [200, 201, 404, 500, 503])
def test_status_codes_are_answers(server, status):
    answer = _http.request(server.url + '/status/%d' % status, timeout=5)
    assert answer.status == status
    assert answer.error is None
    assert answer.json() == {'status': status, 'method': 'GET'}
    assert answer.elapsed >= 0


def test_bearer_token_is_sent(server):
    answer = _http.request(server.url + '/secret', timeout=5, bearer_token='s3cret')
    assert answer.status == 200
    assert server.seen[-1]['headers']['authorization'] == 'Bearer s3cret'


@pytest.mark.parametrize('token', [None, '', 'wrong'])
def test_without_the_right_token_401_is_an_answer(server, token):
    answer = _http.request(server.url + '/secret', timeout=5, bearer_token=token)
    assert answer.status == 401 and answer.error is None
    if not token:
        assert 'authorization' not in server.seen[-1]['headers']


def test_netrc_does_not_replace_the_bearer_token(server, tmp_path, monkeypatch):
    (tmp_path / '.netrc').write_text(u'machine 127.0.0.1 login user password pass\n')
    (tmp_path / '.netrc').chmod(0o600)
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.setenv('NETRC', str(tmp_path / '.netrc'))
    answer = _http.request(server.url + '/secret', timeout=5, bearer_token='s3cret')
    assert answer.status == 200


def test_json_body_post(server):
    answer = _http.request(server.url + '/workers', method='POST', body={'url': 'http://gpu1:30000'}, timeout=5)
    assert answer.status == 200
    seen = server.seen[-1]
    assert seen['method'] == 'POST'
    assert seen['headers']['content-type'] == 'application/json'
    assert json.loads(seen['body'].decode('utf-8')) == {'url': 'http://gpu1:30000'}


def test_bytes_body_and_own_headers(server):
    answer = _http.request(server.url + '/v1/chat/completions', method='POST', body=b'{"a": 1}',
                           headers={'Accept': 'application/json', 'content-type': 'text/plain'}, timeout=5)
    assert answer.status == 200
    seen = server.seen[-1]
    assert seen['body'] == b'{"a": 1}'
    assert seen['headers']['content-type'] == 'text/plain'
    assert seen['headers']['accept'] == 'application/json'


def test_delete_without_body(server):
    answer = _http.request(server.url + '/workers/abc', method='DELETE', timeout=5)
    assert answer.json() == {'status': 200, 'method': 'DELETE'}
    assert server.seen[-1]['body'] == b''


def test_timeout_is_no_answer(server):
    started = time.time()
    answer = _http.request(server.url + '/slow', timeout=0.5)
    assert answer.status is None and answer.body == ''
    assert 'timed out' in answer.error
    assert 0.4 < answer.elapsed < 1.9
    assert time.time() - started < 1.9


def test_connection_refused_is_no_answer():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    answer = _http.request(_http.base_url('0.0.0.0', port) + '/health', timeout=2)
    assert answer.status is None
    assert 'refused' in answer.error.lower()
    assert not answer.error.startswith('<')  # the reason itself, not urllib's wrapper of it


def test_a_url_that_is_not_http_is_no_answer():
    answer = _http.request('nothing-here', timeout=2)
    assert answer.status is None and answer.error


def test_the_proxy_from_the_environment_is_used_unless_switched_off(server, monkeypatch):
    # The server itself acts as the proxy: it sees the absolute URL of the request.
    monkeypatch.setenv('http_proxy', server.url)
    answer = _http.request('http://worker.invalid:30000/health', timeout=5)
    assert answer.status == 200
    assert server.seen[-1]['path'] == 'http://worker.invalid:30000/health'
    answer = _http.request(server.url + '/health', timeout=5, use_proxy=False)
    assert answer.status == 200 and server.seen[-1]['path'] == '/health'


def test_no_proxy_is_honoured(server, monkeypatch):
    monkeypatch.setenv('http_proxy', 'http://127.0.0.1:9')
    monkeypatch.setenv('no_proxy', '127.0.0.1')
    answer = _http.request(server.url + '/health', timeout=5)
    assert answer.status == 200 and server.seen[-1]['path'] == '/health'


def test_a_missing_ca_bundle_is_no_answer(server, tmp_path):
    answer = _http.request(server.url + '/health', timeout=5, ca_path=str(tmp_path / 'missing.pem'))
    assert answer.status is None and answer.error.startswith('no TLS context: ')
    assert server.seen == []
