# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
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
from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils import http_servers as servers


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


# -- local hosts never go through a proxy -----------------------------------------------------------


@pytest.mark.parametrize('host, local', [
    ('127.0.0.1', True),
    ('127.0.1.1', True),          # Debian's address for the host's own name
    ('127.255.255.254', True),
    ('127.1', True),
    ('::1', True),
    ('[::1]', True),
    ('0:0:0:0:0:0:0:1', True),
    ('::ffff:127.0.0.1', True),
    ('localhost', True),
    ('LOCALHOST.', True),
    ('gpu1.localhost', True),
    ('0.0.0.0', True),
    ('::', True),
    ('[::]', True),
    ('', True),
    (None, True),
    ('128.0.0.1', False),
    ('10.0.0.5', False),
    ('::2', False),
    ('fd00::1', False),
    ('gpu1', False),
    ('localhost.example.com', False),
    ('mylocalhost', False),
    ('1.2.3', False),
])
def test_is_local_host(host, local):
    assert _http.is_local_host(host) is local


@pytest.mark.parametrize('url, local', [
    ('http://127.0.0.1:30000/health', True),
    ('https://[::1]:30000', True),
    ('http://localhost:30000', True),
    ('http://0.0.0.0:30000', True),
    ('http://user:pw@127.0.0.1:1/x', True),
    ('http://gpu1:30000', False),
    ('http://10.0.0.5', False),
    ('nothing-here', False),
    ('http://[::1', False),
])
def test_is_local_url(url, local):
    assert _http.is_local_url(url) is local


@pytest.fixture(name='proxy_502')
def fixture_proxy_502(monkeypatch):
    """A proxy stand-in that answers 502 to everything, set in every proxy variable; no ``no_proxy``."""
    proxy = servers.serve(servers.Refuse502)
    for name in ('no_proxy', 'NO_PROXY'):
        monkeypatch.delenv(name, raising=False)
    for name in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY'):
        monkeypatch.setenv(name, proxy.url)
    yield proxy
    proxy.stop()


@pytest.mark.parametrize('host', ['127.0.0.1', 'localhost'])
def test_a_local_host_is_never_proxied(proxy_502, host):
    target = servers.serve(servers.Recording)
    try:
        url = 'http://%s:%d/health' % (host, target.port)
        for use_proxy in (True, False):
            answer = _http.request(url, timeout=5, use_proxy=use_proxy)
            assert answer.status == 200 and answer.proxied is False
        assert [seen['path'] for seen in target.seen] == ['/health', '/health']
        assert proxy_502.seen == []
    finally:
        target.stop()


def test_another_host_keeps_the_proxy_of_the_environment(proxy_502):
    answer = _http.request('http://worker.invalid:30000/get_load', timeout=5)
    assert answer.status == 502 and answer.proxied is True
    assert proxy_502.seen[-1]['path'] == 'http://worker.invalid:30000/get_load'


# -- API keys -----------------------------------------------------------------------------------------

@pytest.mark.parametrize('status, key_sent, words', [
    (401, False, 'the server requires an API key'),
    (403, False, 'the server requires an API key'),
    (401, True, 'the key was refused'),
    (403, True, 'the key was refused'),
    (200, True, None),
    (404, False, None),
    (None, True, None),
])
def test_auth_refusal(status, key_sent, words):
    assert _http.auth_refusal(status, key_sent) == words


# -- TLS ----------------------------------------------------------------------------------------------

@pytest.fixture(scope='module', name='cert')
def fixture_cert(tmp_path_factory):
    return servers.make_cert(tmp_path_factory.mktemp('tls'))


@pytest.fixture(name='https_server')
def fixture_https_server(cert):
    server = servers.serve(servers.Recording, *cert)
    yield server
    server.stop()


def test_https_with_the_ca(https_server, cert):
    answer = _http.request(https_server.url + '/health', timeout=5, ca_path=cert[0])
    assert answer.status == 200 and answer.error is None and answer.tls is False
    answer = _http.request(_http.base_url('::', https_server.port, 'https'), timeout=5, ca_path=cert[0])
    assert answer.status is None  # the server listens on IPv4 only: no answer, but not a TLS failure
    assert answer.tls is False


def test_https_certificate_not_trusted_is_a_tls_failure(https_server, tmp_path):
    answer = _http.request(https_server.url + '/health', timeout=5)
    assert answer.status is None and answer.tls is True
    assert 'certificate verify failed' in answer.error
    other, dummy = servers.make_cert(tmp_path, 'other')
    answer = _http.request(https_server.url + '/health', timeout=5, ca_path=other)
    assert answer.status is None and answer.tls is True


def test_https_without_validation(https_server):
    answer = _http.request(https_server.url + '/health', timeout=5, validate_certs=False)
    assert answer.status == 200 and answer.tls is False


def test_https_to_a_plain_http_server_is_a_tls_failure(server, cert):
    answer = _http.request(server.url.replace('http://', 'https://') + '/health', timeout=5, ca_path=cert[0])
    assert answer.status is None and answer.tls is True


def test_http_to_a_tls_server_is_no_answer_but_no_tls_failure(https_server):
    answer = _http.request(https_server.url.replace('https://', 'http://') + '/health', timeout=5)
    assert answer.status is None and answer.tls is False


def test_a_missing_ca_bundle_is_a_tls_failure(tmp_path):
    answer = _http.request('https://127.0.0.1:1/health', timeout=5, ca_path=str(tmp_path / 'missing.pem'))
    assert answer.tls is True
