# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""inferops.sglang.router_worker's main() against local stand-ins of sglang-router 0.3.2's worker API and of an
SGLang worker (tests/unit/plugins/module_utils/http_servers.py): the three keys, TLS, the scheme, a proxy in the
environment. The real router runs it in tests/integration/test_router.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import time

import pytest
import yaml

from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import patch_module_args
from ansible_collections.inferops.sglang.plugins.modules import router_worker
from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils import http_servers as servers


ADMIN = 'cp-admin-Secret-1'
USER = 'cp-user-Secret-2'
WORKER = 'worker-Secret-3'


@pytest.fixture(autouse=True)
def no_proxy_from_the_caller(monkeypatch):
    for name in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY'):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope='module', name='cert')
def fixture_cert(tmp_path_factory):
    return servers.make_cert(tmp_path_factory.mktemp('tls'))


@pytest.fixture(name='fleet')
def fixture_fleet(cert):
    """start(tls=False, worker_key=None, listed=True) -> (router, worker): a worker (FakeSGLang) and a router
    guarded by control-plane keys that lists it."""
    started = []

    def start(tls=False, worker_key=None, listed=True):
        tls_files = cert if tls else ()
        worker = servers.serve(servers.FakeSGLang, *tls_files, api_key=worker_key)
        workers = [{'id': 'b7f3c3c2-1d7e-4d43-9d1c-3f1f1c3a0001', 'url': worker.url, 'is_healthy': True}] if listed else []
        router = servers.serve(servers.FakeRouter, *tls_files, admin_key=ADMIN, user_key=USER, workers=workers)
        started.extend([worker, router])
        return router, worker

    yield start
    for server in started:
        server.stop()


def run(capsys, check_mode=False, diff=False, **args):
    args = dict(args, interval=0.05, timeout=10, drain_timeout=10,
                _ansible_check_mode=check_mode, _ansible_diff=diff)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            router_worker.main()
    raw = capsys.readouterr().out
    return exc.value.code, json.loads(raw), raw


def test_documentation_has_the_new_options():
    doc = yaml.safe_load(router_worker.DOCUMENTATION)['options']
    for name in ('api_key', 'drain_api_key', 'worker_api_key', 'scheme', 'validate_certs', 'ca_path'):
        assert doc[name]['description'], name
    assert doc['scheme']['default'] == 'http' and doc['validate_certs']['default'] is True


@pytest.mark.parametrize('key, words, status', [
    (None, 'the server requires an API key', 401),
    ('wrong', 'the key was refused', 401),
    (USER, 'the key was refused', 403),
])
def test_the_control_plane_refuses_at_once(fleet, capsys, key, words, status):
    router, worker = fleet()
    began = time.time()
    code, out, raw = run(capsys, router_url=router.url, url=worker.url, state='absent', api_key=key)
    assert time.time() - began < 5
    assert code == 1 and out['failed'] is True
    assert out['msg'].startswith('%s (GET %s/workers answered %d: ' % (words, router.url, status)), out['msg']
    assert [s['method'] for s in router.seen] == ['GET']
    assert worker.seen == []
    for secret in (ADMIN, USER):
        assert secret not in raw


def test_out_with_the_drain_key_and_back_with_the_worker_key(fleet, capsys):
    router, worker = fleet(worker_key=WORKER)
    code, out, raw = run(capsys, diff=True, router_url=router.url, url=worker.url, state='absent', api_key=ADMIN,
                         drain_api_key=WORKER)
    assert code == 0 and out['changed'] is True and out['workers'] == []
    assert out['drain']['reason'] == 'idle' and out['drain']['drained'] is True
    assert worker.seen[-1]['path'] == '/get_load'
    assert worker.seen[-1]['headers']['authorization'] == 'Bearer ' + WORKER
    assert all(s['headers']['authorization'] == 'Bearer ' + ADMIN for s in router.seen)
    assert ADMIN not in raw and WORKER not in raw

    code, out, raw = run(capsys, diff=True, router_url=router.url, url=worker.url, state='present', api_key=ADMIN,
                         worker_api_key=WORKER, drain_api_key=WORKER)
    assert code == 0 and out['changed'] is True and out['healthy'] is True
    posted = [s for s in router.seen if s['method'] == 'POST']
    assert json.loads(posted[-1]['body'].decode('utf-8')) == {'url': worker.url, 'api_key': WORKER}
    assert ADMIN not in raw and WORKER not in raw
    assert WORKER not in json.dumps(out['diff'])


def test_no_worker_key_no_api_key_field(fleet, capsys):
    router, worker = fleet(listed=False)
    code, out, raw = run(capsys, router_url=router.url, url=worker.url, state='present', api_key=ADMIN)
    assert code == 0 and out['changed'] is True
    posted = [s for s in router.seen if s['method'] == 'POST']
    assert json.loads(posted[-1]['body'].decode('utf-8')) == {'url': worker.url}


@pytest.mark.parametrize('drain_key, words', [
    (None, 'the server requires an API key (GET /v1/loads answered 401)'),
    ('wrong', 'the key was refused (GET /v1/loads answered 401)'),
])
def test_the_drain_reports_a_refused_key_without_waiting(fleet, capsys, drain_key, words):
    router, worker = fleet(worker_key=WORKER)
    code, out, raw = run(capsys, router_url=router.url, url=worker.url, state='absent', api_key=ADMIN,
                         drain_api_key=drain_key)
    assert code == 0 and out['changed'] is True
    assert out['drain']['reason'] == words
    assert out['drain']['drained'] is False and out['drain']['deadline_passed'] is False
    assert out['drain']['seconds'] < 5
    # The key is refused on GET /v1/loads already: no second try on /get_load.
    assert [s['path'] for s in worker.seen if s['path'] in ('/v1/loads', '/get_load')] == ['/v1/loads']
    assert words in json.dumps(out['warnings'])   # warnings are structured in the raw module output


def bare(url):
    """'https://127.0.0.1:1' -> '127.0.0.1:1'."""
    return url.split('://', 1)[1]


def test_tls_everywhere_with_the_ca_and_the_scheme(fleet, capsys, cert):
    router, worker = fleet(tls=True)
    code, out, raw = run(capsys, router_url=bare(router.url), url=bare(worker.url), scheme='https', ca_path=cert[0],
                         state='absent', api_key=ADMIN)
    assert code == 0 and out['changed'] is True, out
    assert out['drain']['reason'] == 'idle'
    code, out, raw = run(capsys, router_url=router.url, url=worker.url, state='present', api_key=ADMIN)
    assert code == 1 and out['msg'].startswith('TLS failed (GET %s/workers): ' % router.url)
    assert 'certificate verify failed' in out['msg']
    code, out, raw = run(capsys, router_url=router.url, url=worker.url, state='present', api_key=ADMIN,
                         validate_certs=False)
    assert code == 0 and out['changed'] is True and out['healthy'] is True


def test_a_drain_that_fails_in_tls_is_not_taken_for_an_idle_worker(fleet, capsys, cert):
    """https to the drain URL of a plain-HTTP worker: a TLS failure, not 'not listening' (that counts as drained)."""
    router, worker = fleet()
    code, out, raw = run(capsys, router_url=router.url, url=worker.url, ca_path=cert[0], state='absent',
                         api_key=ADMIN, drain_url=worker.url.replace('http://', 'https://'))
    assert code == 0 and out['changed'] is True
    assert out['drain']['reason'].startswith('TLS failed (GET /v1/loads): ')
    assert out['drain']['drained'] is False


def test_a_proxy_in_the_environment_is_not_used_for_loopback(fleet, capsys, monkeypatch):
    proxy = servers.serve(servers.Refuse502)
    try:
        for name in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY'):
            monkeypatch.setenv(name, proxy.url)
        router, worker = fleet()
        code, out, raw = run(capsys, router_url=router.url.replace('127.0.0.1', '0.0.0.0'), url=worker.url,
                             drain_url=worker.url.replace('127.0.0.1', 'localhost'), state='absent', api_key=ADMIN)
        assert code == 0 and out['drain']['reason'] == 'idle', out
        assert proxy.seen == []
    finally:
        proxy.stop()


@pytest.mark.parametrize('interval, shown', [(0, '0.0'), (-1, '-1.0'), (float('nan'), 'nan')])
def test_a_non_positive_interval_fails_before_any_request(fleet, capsys, interval, shown):
    router, worker = fleet()
    args = dict(router_url=router.url, url=worker.url, state='absent', api_key=ADMIN, interval=interval)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            router_worker.main()
    out = json.loads(capsys.readouterr().out)
    assert exc.value.code == 1 and out['msg'] == 'interval must be positive, not ' + shown
    assert router.seen == [] and worker.seen == []


def test_the_drain_reads_the_load_no_sooner_than_interval_after_the_removal(fleet, capsys):
    router, worker = fleet()
    args = dict(router_url=router.url, url=worker.url, state='absent', api_key=ADMIN, interval=0.4, timeout=10,
                drain_timeout=10)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            router_worker.main()
    out = json.loads(capsys.readouterr().out)
    deleted = [s['at'] for s in router.seen if s['method'] == 'DELETE']
    loads = [s['at'] for s in worker.seen if s['path'] == '/get_load']
    assert out['drain']['reason'] == 'idle' and len(deleted) == 1 and loads
    assert loads[0] - deleted[0] >= 0.39
