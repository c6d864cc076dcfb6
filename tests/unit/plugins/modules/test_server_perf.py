# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""inferops.sglang.server_perf's main() against a local HTTP server that answers as SGLang 0.5.23 does: chat
completions of exactly max_tokens tokens with ignore_eos, /server_info with internal_states[*].avg_spec_accept_length."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import time

import pytest
import yaml

from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import patch_module_args
from ansible_collections.inferops.sglang.plugins.modules import server_perf
from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils import http_servers as servers

KEY = 'sk-perf-Secret-0815'


class SpeculativeSGLang(servers.FakeSGLang):
    """options: accept (the accept length, None without speculative decoding), step (seconds per decode step)."""

    def answer(self, method, path, body):
        options = self.server.options
        if path == '/v1/chat/completions' and method == 'POST' and self.bearer() == options.get('api_key'):
            request = json.loads(body.decode('utf-8'))
            tokens = request['max_tokens'] if request.get('ignore_eos') else 2
            time.sleep(options.get('step', 0.001) * tokens / (options.get('accept') or 1.0))
            return 200, {'choices': [{'message': {'role': 'assistant', 'content': 'x' * tokens},
                                      'finish_reason': 'length'}], 'usage': {'completion_tokens': tokens}}
        if path == '/server_info':
            state = {'dp_rank': 0, 'last_gen_throughput': 0.0}
            if options.get('accept') is not None:
                state['avg_spec_accept_length'] = options['accept']
            return 200, {'internal_states': [state], 'version': '0.5.23'}
        return super(SpeculativeSGLang, self).answer(method, path, body)


@pytest.fixture(autouse=True)
def no_proxy_from_the_caller(monkeypatch):
    for name in ('http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY'):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(name='sglang')
def fixture_sglang():
    started = []

    def start(**options):
        server = servers.serve(SpeculativeSGLang, **options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def measure(capsys, port, **options):
    args = dict(port=port, max_tokens=50, concurrency=4)
    args.update(options)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            server_perf.main()
    raw = capsys.readouterr().out
    return exc.value.code, json.loads(raw), raw


def test_documentation_matches_argument_spec():
    doc = yaml.safe_load(server_perf.DOCUMENTATION)
    assert set(doc['options']) == {'host', 'port', 'scheme', 'validate_certs', 'ca_path', 'api_key', 'prompt',
                                   'max_tokens', 'concurrency', 'timeout', 'extra_body', 'baseline', 'tolerance'}
    assert doc['attributes']['check_mode']['support'] == 'full'
    assert set(yaml.safe_load(server_perf.RETURN)) == {'perf', 'baseline', 'compared', 'verdict'}


def test_first_adoption_records_the_figures_and_sends_the_key(sglang, capsys):
    server = sglang(accept=2.6, api_key=KEY)
    code, out, raw = measure(capsys, server.port, api_key=KEY)
    assert code == 0, out
    perf = out['perf']
    assert perf['accept_length'] == 2.6 and perf['completion_tokens'] == 200 and perf['decode_tokens_per_s'] > 0
    assert (perf['max_tokens'], perf['concurrency']) == (50, 4)
    assert out['compared'] == [] and out['verdict'].startswith('no known-good figures')
    chats = [s for s in server.seen if s['path'] == '/v1/chat/completions']
    assert len(chats) == 4 and all(json.loads(s['body'])['ignore_eos'] is True for s in chats)
    assert server.seen[-1]['path'] == '/server_info'
    assert KEY not in raw


def test_c38_a_lower_accept_length_fails_with_both_figures(sglang, capsys):
    """Field case C38: the known-good reported accept length 2.6 and 80 tokens/s; this server 1.0."""
    server = sglang(accept=1.0)
    code, out, dummy = measure(capsys, server.port, baseline={'decode_tokens_per_s': 1.0, 'accept_length': 2.6})
    assert code == 1
    assert 'accept length 1 is 62 % below the known-good 2.6' in out['msg'], out['msg']
    assert 'known-good: decode throughput 1 tokens/s, accept length 2.6' in out['msg']
    assert out['perf']['accept_length'] == 1.0


def test_a_slower_decode_fails_and_a_close_one_passes(sglang, capsys):
    server = sglang(accept=None, step=0.002)
    code, out, dummy = measure(capsys, server.port, baseline={'decode_tokens_per_s': 1e6})
    assert code == 1 and 'decode throughput' in out['msg'] and out['compared'] == ['decode_tokens_per_s']
    measured = out['perf']['decode_tokens_per_s']
    code, out, dummy = measure(capsys, server.port, baseline={'decode_tokens_per_s': measured * 1.1,
                                                              'accept_length': 2.6})
    # no accept length on this server: throughput alone is compared
    assert code == 0 and out['compared'] == ['decode_tokens_per_s'] and out['perf']['accept_length'] is None, out


def test_a_failed_request_fails_the_measurement(sglang, capsys):
    server = sglang(api_key=KEY)
    code, out, dummy = measure(capsys, server.port)
    assert code == 1 and 'performance request 1 of 4 failed: HTTP 401' in out['msg'], out
