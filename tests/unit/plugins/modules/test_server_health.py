# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""inferops.sglang.server_health's main() against real local HTTP(S) servers that behave like SGLang's API key
middleware (tests/unit/plugins/module_utils/http_servers.py): API keys, TLS, a proxy in the environment, and
no secret in the output. The SGLang test double runs it in tests/integration/test_server_health.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re
import stat
import time

import pytest
import yaml

from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import patch_module_args
from ansible_collections.inferops.sglang.plugins.modules import server_health
from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils import http_servers as servers


KEY = 'sk-gate-Secret-4711'


@pytest.fixture(autouse=True)
def no_proxy_from_the_caller(monkeypatch):
    for name in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY'):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope='module', name='cert')
def fixture_cert(tmp_path_factory):
    return servers.make_cert(tmp_path_factory.mktemp('tls'))


@pytest.fixture(name='sglang')
def fixture_sglang(cert):
    """start(api_key=None, tls=False) -> a FakeSGLang server."""
    started = []

    def start(api_key=None, tls=False):
        server = servers.serve(servers.FakeSGLang, *(cert if tls else ()), api_key=api_key)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def gate(capsys, tmp_path, port, **options):
    """(exit code, parsed output, raw output) of one call; budget 900 s, so a quick failure is a fail-fast."""
    args = dict(port=port, manager='none', interval=0.1, round_seconds=20, budget=900, smoke_requests=2,
                progress_file=str(tmp_path / 'gate.json'))
    args.update(options)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            server_health.main()
    raw = capsys.readouterr().out
    return exc.value.code, json.loads(raw), raw


def test_documentation_matches_argument_spec():
    doc = yaml.safe_load(server_health.DOCUMENTATION)['options']
    for name in ('scheme', 'validate_certs', 'ca_path', 'api_key'):
        assert name in doc
    assert doc['scheme']['choices'] == ['http', 'https'] and doc['scheme']['default'] == 'http'
    assert doc['validate_certs']['default'] is True and doc['ca_path']['type'] == 'path'
    assert 'url' in yaml.safe_load(server_health.RETURN)


def test_the_key_is_sent_on_every_request_and_never_shown(sglang, capsys, tmp_path):
    server = sglang(api_key=KEY)
    code, out, raw = gate(capsys, tmp_path, server.port, api_key=KEY)
    assert code == 0 and out['state'] == 'ready', out
    assert [s['path'] for s in server.seen] == ['/health', '/v1/models', '/v1/chat/completions',
                                                '/v1/chat/completions']
    assert all(s['headers'].get('authorization') == 'Bearer ' + KEY for s in server.seen)
    assert KEY not in raw
    # ansible-core 2.21 adds the (masked) arguments only when the controller asks for them (_ansible_inject_invocation).
    if 'invocation' in out:
        assert out['invocation']['module_args']['api_key'] != KEY


@pytest.mark.parametrize('key, words', [
    (None, 'the server requires an API key (GET /v1/models answered 401)'),
    ('wrong-key', 'the key was refused (GET /v1/models answered 401)'),
])
def test_a_missing_or_wrong_key_fails_at_once(sglang, capsys, tmp_path, key, words):
    server = sglang(api_key=KEY)
    began = time.time()
    code, out, raw = gate(capsys, tmp_path, server.port, api_key=key)
    assert time.time() - began < 10
    assert code == 1 and out['failed'] is True and out['state'] == 'failed'
    assert out['reason'] == words
    assert out['msg'] == 'SGLang on port %d is not healthy: %s' % (server.port, words)
    assert out['phase'] == 'smoke' and out['last_status'] == 200    # /health itself needs no key
    assert len([s for s in server.seen if s['path'] == '/v1/models']) == 1
    if key:
        assert key not in raw


def test_https_with_the_ca_and_the_key(sglang, capsys, tmp_path, cert):
    server = sglang(api_key=KEY, tls=True)
    code, out, raw = gate(capsys, tmp_path, server.port, scheme='https', ca_path=cert[0], api_key=KEY,
                          host='0.0.0.0')
    assert code == 0 and out['state'] == 'ready', out
    assert out['url'] == 'https://127.0.0.1:%d' % server.port


def test_https_with_an_untrusted_certificate_fails_at_once(sglang, capsys, tmp_path):
    server = sglang(tls=True)
    code, out, raw = gate(capsys, tmp_path, server.port, scheme='https')
    assert code == 1 and out['state'] == 'failed'
    assert out['reason'].startswith('TLS failed (GET /health): ')
    assert 'certificate verify failed' in out['reason']
    code, out, raw = gate(capsys, tmp_path, server.port, scheme='https', validate_certs=False)
    assert code == 0 and out['state'] == 'ready', out


def test_https_to_a_plain_server_fails_at_once(sglang, capsys, tmp_path, cert):
    server = sglang()
    code, out, raw = gate(capsys, tmp_path, server.port, scheme='https', ca_path=cert[0])
    assert code == 1 and out['reason'].startswith('TLS failed (GET /health): ')


def test_a_proxy_in_the_environment_is_not_used_for_loopback(sglang, capsys, tmp_path, monkeypatch):
    proxy = servers.serve(servers.Refuse502)
    try:
        for name in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY'):
            monkeypatch.setenv(name, proxy.url)
        server = sglang()
        code, out, raw = gate(capsys, tmp_path, server.port, host='0.0.0.0')
        assert code == 0 and out['state'] == 'ready', out
        assert proxy.seen == []
    finally:
        proxy.stop()


def test_the_log_tail_hides_the_secrets_of_the_servers_log(sglang, capsys, tmp_path):
    """A supervisord program that died: the tail of its log has SGLang's server_args line with the keys."""
    log = tmp_path / 'sglang.log'
    log.write_text(u"[2026-01-01 10:00:00] server_args=ServerArgs(model_path='/m', api_key='%s', "
                   u"admin_api_key='adm-Secret-1', port=30000)\nTraceback: boom\n" % KEY)
    supervisorctl = tmp_path / 'supervisorctl'
    supervisorctl.write_text(u"#!/bin/sh\necho 'sglang                           FATAL     Exited too quickly'\n")
    supervisorctl.chmod(supervisorctl.stat().st_mode | stat.S_IEXEC)
    code, out, raw = gate(capsys, tmp_path, sglang().port, manager='supervisord', service='sglang',
                          supervisorctl=str(supervisorctl), log_file=str(log))
    assert code == 1 and out['reason'].startswith('the program is FATAL')
    assert out['log_tail'][0].endswith("api_key='********', admin_api_key='********', port=30000)")
    assert KEY not in raw and 'adm-Secret-1' not in raw


def test_every_round_says_in_words_what_it_saw(sglang, capsys, tmp_path):
    """Item 7 (a ten-minute load): each call returns `progress`, the line the cutover role shows per round."""
    closed = servers.serve(servers.FakeSGLang)
    port = closed.port
    closed.stop()
    began = time.time() - 40
    code, out, raw = gate(capsys, tmp_path, port, round_seconds=0, budget=600, started_at=began)
    assert code == 0 and out['state'] == 'waiting', out
    # Elapsed seconds are whole seconds of the wall clock: a loaded machine may add one or two.
    assert re.fullmatch(r'loading the model \(port not open yet\), 4[0-2] s of 600 s', out['progress']), out['progress']
    code, out, raw = gate(capsys, tmp_path, sglang().port, budget=600)
    assert code == 0 and re.fullmatch(r'ready: /health ok, 2 chat completions ok, [0-2] s of 600 s', out['progress']), out
    assert 'progress' in yaml.safe_load(server_health.RETURN)


@pytest.mark.parametrize('chat, words, body', [
    (('hang', 4), 'smoke request 1 of 2 failed: no answer within 1 s (the generation hangs)', None),
    ((500, {'object': 'error', 'message': 'Internal server error: CUDA error', 'api_key': KEY}),
     'smoke request 1 of 2 failed: HTTP 500', 'Internal server error: CUDA error'),
    ((400, {'object': 'error', 'message': 'chat template failed'}), 'smoke request 1 of 2 failed: HTTP 400',
     'chat template failed'),
    ((200, {'choices': [{'message': {'content': None}, 'finish_reason': 'stop'}], 'usage': {'completion_tokens': 0}}),
     'smoke request 1 of 2 failed: the completion is empty', None),
])
def test_a_broken_generation_after_a_healthy_answer_fails_at_once(sglang, capsys, tmp_path, chat, words, body):
    """Issue 27 item 2: /health answered 200, then a chat completion hangs, errs or does not generate - broken, not
    "not ready": the gate fails at once (budget 900 s), says so, and returns the answer with the key masked."""
    server = servers.serve(servers.FakeSGLang, api_key=KEY, chat=chat)
    try:
        began = time.time()
        code, out, raw = gate(capsys, tmp_path, server.port, api_key=KEY, smoke_timeout=1)
    finally:
        server.stop()
    assert time.time() - began < 8
    assert code == 1 and out['state'] == 'failed' and out['failure_kind'] == 'broken', out
    assert out['reason'].startswith('the server is broken: /health answered 200, but ' + words), out['reason']
    assert re.search(r' after [0-9.]+ s$', out['reason'])
    assert out['phase'] == 'smoke' and out['last_status'] == 200
    assert len([s for s in server.seen if s['path'] == '/v1/chat/completions']) == 1
    assert out['response']['status'] == (None if chat[0] == 'hang' else chat[0])
    if body:
        assert body in out['response']['body'] and body in out['reason']
    assert KEY not in raw


def test_a_closed_connection_after_a_healthy_answer_is_not_ready_yet(capsys, tmp_path):
    """A server that went away after /health answered (it restarts): not broken; the gate goes back to /health."""
    server = servers.serve(servers.FakeSGLang, chat=(None, None))
    try:
        # A round long enough for a second /health on a busy machine (0.5 s was not, once, under the full suite).
        code, out, raw = gate(capsys, tmp_path, server.port, round_seconds=3, budget=600, smoke_timeout=1)
    finally:
        server.stop()
    assert code == 0 and out['state'] == 'waiting' and out['failure_kind'] is None, out
    assert out['reason'].startswith('smoke request 1 of 2 failed: no answer: '), out['reason']
    assert len([s for s in server.seen if s['path'] == '/health']) >= 2


@pytest.mark.parametrize('status, timed_out, verdict, words', [
    (None, True, 'broken', 'no answer within 20 s (the generation hangs)'),
    (None, False, 'not_ready', 'no answer: [Errno 111] Connection refused'),
    (503, False, 'broken', 'HTTP 503'),
    (404, False, 'broken', 'HTTP 404'),
])
def test_smoke_verdict_tells_not_ready_from_broken(status, timed_out, verdict, words):
    from ansible_collections.inferops.sglang.plugins.module_utils import _health
    error = None if status else ('timed out' if timed_out else '[Errno 111] Connection refused')
    assert _health.smoke_verdict(status, '', error, timed_out, 20.0) == (verdict, words, 0)


def test_a_passing_gate_gives_the_runs_lock_back_in_the_same_call(sglang, capsys, tmp_path):
    """give_back_lock: the gate of an unchanged server, the cutover's last call on the host, gives the run's host lock
    back once it passed - the same release as host_lock state=absent (a real holder process here)."""
    from ansible_collections.inferops.sglang.plugins.module_utils import _host_lock
    path = str(tmp_path / 'host.lock')
    owner = _host_lock.acquire(path, 'run-a', 'ops@ctl', 'inferops.sglang.site', 0, 60)['owner']
    server = sglang()
    code, out, raw = gate(capsys, tmp_path, server.port, give_back_lock={'run_id': 'run-a', 'path': path})
    assert code == 0 and out['state'] == 'ready', out
    assert out['lock'] == {'result': 'released', 'owner': owner}
    assert _host_lock.peek(path) == {'held': False, 'owner': {}}
    # Without the option nothing is given back.
    assert gate(capsys, tmp_path, server.port)[1]['lock'] == {}


def test_a_gate_that_fails_keeps_the_lock(sglang, capsys, tmp_path):
    """A failed (or waiting) gate leaves the lock to the caller's own give-back: the rollback that follows still holds it."""
    from ansible_collections.inferops.sglang.plugins.module_utils import _host_lock
    path = str(tmp_path / 'host.lock')
    owner = _host_lock.acquire(path, 'run-a', 'ops@ctl', 'inferops.sglang.site', 0, 60)['owner']
    server = sglang(api_key=KEY)  # no key given: the gate fails at once
    try:
        code, out, raw = gate(capsys, tmp_path, server.port, give_back_lock={'run_id': 'run-a', 'path': path})
        assert code == 1 and out['state'] == 'failed' and out['lock'] == {}
        assert _host_lock.peek(path) == {'held': True, 'owner': owner}
    finally:
        _host_lock.release(path, 'run-a')


class _Module(object):
    def __init__(self, check_mode=False):
        self.check_mode, self.warnings = check_mode, []

    def warn(self, text):
        self.warnings.append(text)


@pytest.mark.parametrize('state,lock,check_mode,released', [
    ('ready', {'run_id': 'r1', 'path': '/l'}, False, True),
    ('waiting', {'run_id': 'r1', 'path': '/l'}, False, False),
    ('failed', {'run_id': 'r1', 'path': '/l'}, False, False),
    ('ready', {'run_id': 'r1', 'path': '/l'}, True, False),
    ('ready', None, False, False)])
def test_give_back_only_after_a_passing_gate(state, lock, check_mode, released):
    asked = []

    def release(path, run_id):
        asked.append((path, run_id))
        return {'result': 'released', 'owner': {'run_id': run_id}}
    out = server_health.give_back(_Module(check_mode), state, lock, release)
    assert (out != {}) is released and (asked == [('/l', 'r1')]) is released


def test_a_lock_that_had_expired_is_said_so():
    module = _Module()
    out = server_health.give_back(module, 'ready', {'run_id': 'r1', 'path': '/l'},
                                  lambda path, run_id: {'result': 'expired', 'owner': {'holder_pid': 99}})
    assert out['result'] == 'expired' and 'holder pid 99 is gone' in module.warnings[0]


def test_a_give_back_that_fails_leaves_the_verdict_and_the_lock_to_the_caller():
    """The holder did not end in time (or the lock file cannot be opened): the gate passed all the same - a warning,
    RV(lock) says error, and the cutover does not count the lock as given back (the playbook's own give-back runs)."""
    import errno

    def release(path, run_id):
        raise OSError(errno.ETIMEDOUT, 'the holder (pid 41) of the lock /l did not end within 5 s')
    module = _Module()
    out = server_health.give_back(module, 'ready', {'run_id': 'r1', 'path': '/l'}, release)
    assert out['result'] == 'error' and 'did not end' in out['reason'] and 'not given back' in module.warnings[0]
