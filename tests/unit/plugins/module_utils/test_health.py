"""Pure parts of the health gate."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _health


BASE = {"ActiveState": "active", "SubState": "running", "MainPID": 100, "NRestarts": 0}


@pytest.mark.parametrize("current, expect", [
    (BASE, None),
    (dict(BASE, ActiveState="activating", SubState="start"), None),
    (dict(BASE, ActiveState="failed", SubState="failed", MainPID=0, Result="exit-code"), "the unit failed"),
    (dict(BASE, ActiveState="activating", SubState="auto-restart", MainPID=0), "the server exited"),
    (dict(BASE, ActiveState="inactive", SubState="dead", MainPID=0), "the server exited"),
    (dict(BASE, NRestarts=1, MainPID=200), "the unit restarted"),
    (dict(BASE, MainPID=200), "the server restarted"),
])
def test_systemd_verdict(current, expect):
    verdict = _health.service_verdict("systemd", {"MainPID": 100, "NRestarts": 0}, current)
    if expect is None:
        assert verdict is None
    else:
        assert verdict.startswith(expect)


def test_systemd_verdict_without_baseline_only_fails_a_dead_service():
    assert _health.service_verdict("systemd", None, dict(BASE, MainPID=555)) is None
    assert _health.service_verdict("systemd", None, dict(BASE, ActiveState="failed")) is not None


@pytest.mark.parametrize("current, expect", [
    ({"state": "RUNNING", "pid": 7}, None),
    ({"state": "STARTING", "pid": None}, None),
    ({"state": "BACKOFF", "pid": None, "detail": "Exited too quickly"}, "the program is BACKOFF"),
    ({"state": "FATAL", "pid": None}, "the program is FATAL"),
    ({"state": "RUNNING", "pid": 8}, "the program restarted"),
])
def test_supervisord_verdict(current, expect):
    verdict = _health.service_verdict("supervisord", {"state": "RUNNING", "pid": 7}, current)
    assert (verdict is None) if expect is None else verdict.startswith(expect)


def test_unknown_manager():
    with pytest.raises(ValueError):
        _health.service_verdict("upstart", None, {})


def test_model_id():
    body = json.dumps({"object": "list", "data": [{"id": "/shared/kimi-k2.5-int4", "object": "model"}]})
    assert _health.model_id(body) == "/shared/kimi-k2.5-int4"
    assert _health.model_id("not json") == "default"
    assert _health.model_id(json.dumps({"data": []})) == "default"


def test_chat_request_is_small_and_deterministic():
    body = json.loads(_health.chat_request("m", "hi", 8))
    assert body["max_tokens"] == 8 and body["temperature"] == 0 and body["stream"] is False
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    more = {"chat_template_kwargs": {"thinking": False}, "stream": True, "model": "x", "temperature": 0.5}
    extra = json.loads(_health.chat_request("m", "hi", 64, more))
    assert extra["chat_template_kwargs"] == {"thinking": False} and extra["max_tokens"] == 64
    assert extra["stream"] is False and extra["model"] == "m" and extra["temperature"] == 0.5


@pytest.mark.parametrize("status, body, ok", [
    (200, json.dumps({"choices": [{"message": {"content": "Hello"}}], "usage": {"completion_tokens": 2}}), True),
    (200, json.dumps({"choices": [{"message": {"content": ""}}]}), False),
    # C36: a thinking model (--reasoning-parser kimi_k2) whose 8-token budget ends inside its reasoning
    (200, json.dumps({"choices": [{"message": {"content": None, "reasoning_content": "The user wants..."},
                                   "finish_reason": "length"}], "usage": {"completion_tokens": 8}}), True),
    (200, json.dumps({"choices": [{"message": {"content": "", "reasoning_content": "The user"},
                                   "finish_reason": "length"}], "usage": {"completion_tokens": 8}}), True),
    # tokens generated and cut by the budget, whatever the parsers kept of them
    (200, json.dumps({"choices": [{"message": {"content": None}, "finish_reason": "length"}],
                      "usage": {"completion_tokens": 8}}), True),
    (200, json.dumps({"choices": [{"message": {"content": None}, "finish_reason": "stop"}],
                      "usage": {"completion_tokens": 0}}), False),
    (200, json.dumps({"choices": [{"message": {"content": None}, "finish_reason": "length"}],
                      "usage": {"completion_tokens": True}}), False),
    (200, json.dumps({"choices": [{"message": {"content": None, "tool_calls": [{"id": "1"}]},
                                   "finish_reason": "tool_calls"}]}), True),
    (200, json.dumps({"choices": [{"message": None}]}), False),
    (200, json.dumps({"object": "list", "data": []}), False),  # /v1/models is not a completion (C03)
    (200, "<html>", False),
    (503, "", False),
])
def test_check_chat_response(status, body, ok):
    assert _health.check_chat_response(status, body)[0] is ok


def test_scheduler_shortfall_counts_scheduler_members():
    """C25: a converged server lost sglang::scheduler_TP3 (kill -9): 3 of the 4 schedulers tp 4 needs."""
    from ansible_collections.inferops.sglang.plugins.module_utils._health import scheduler_shortfall
    members = [{'role': 'server', 'title': 'python3'}, {'role': 'detokenizer', 'title': 'sglang::detokenizer'}]
    members += [{'role': 'scheduler', 'title': 'sglang::scheduler_TP%d' % i} for i in (0, 1, 2)]
    server = {'main_pid': 100, 'members': members}
    assert scheduler_shortfall(server, 4) == (
        'degraded: 3 of 4 scheduler processes are running '
        '(sglang::scheduler_TP0, sglang::scheduler_TP1, sglang::scheduler_TP2)')
    assert scheduler_shortfall(server, 3) == ''
    assert scheduler_shortfall(server, '2') == ''
    assert scheduler_shortfall(None, 4) == ''
    assert scheduler_shortfall(server, 0) == ''
    assert scheduler_shortfall({'members': []}, 1) == 'degraded: 0 of 1 scheduler processes are running (none)'
    # a server still starting: spawn children not retitled yet count (never a false 'degraded')
    starting = {'members': [{'role': 'server'}] + [{'role': 'spawn_child', 'title': 'python3 -c from multiprocessing.spawn'}] * 4}
    assert scheduler_shortfall(starting, 4) == ''
    with pytest.raises(ValueError):
        scheduler_shortfall(server, 'many')


def _gate_result(**fields):
    result = {'state': 'waiting', 'phase': 'tcp', 'reason': '', 'elapsed': 40.4, 'last_status': None,
              'smoke_latencies': [], 'service': {}}
    result.update(fields)
    return result


@pytest.mark.parametrize("fields, expected", [
    ({}, 'loading the model (port not open yet), 40 s of 600 s'),
    ({'service': {'MainPID': 4242, 'ActiveState': 'active'}},
     'loading the model (pid 4242 running, port not open yet), 40 s of 600 s'),
    ({'service': {'state': 'RUNNING', 'pid': 77}}, 'loading the model (pid 77 running, port not open yet), 40 s of 600 s'),
    ({'phase': 'health', 'reason': 'GET /health got no answer: timed out'},
     'listening, no answer to /health yet (GET /health got no answer: timed out), 40 s of 600 s'),
    ({'phase': 'health', 'last_status': 503, 'reason': 'GET /health answered 503'},
     'listening, warming up (GET /health answered 503), 40 s of 600 s'),
    ({'phase': 'health', 'last_status': 200, 'reason': 'smoke request 1 of 3 failed: HTTP 500'},
     '/health ok, generation not yet (smoke request 1 of 3 failed: HTTP 500), 40 s of 600 s'),
    ({'state': 'ready', 'phase': 'ready', 'last_status': 200, 'smoke_latencies': [0.2, 0.1, 0.1], 'elapsed': 3.3},
     'ready: /health ok, 3 chat completions ok, 3 s of 600 s'),
    ({'state': 'ready', 'phase': 'ready', 'last_status': 200, 'elapsed': 3.3}, 'ready: /health ok, 3 s of 600 s'),
    ({'state': 'ready', 'phase': 'ready', 'smoke_latencies': [0.2], 'elapsed': 3.3},
     'ready: /health ok, 1 chat completion ok, 3 s of 600 s'),
    ({'state': 'failed', 'phase': 'health', 'reason': 'the server exited (ActiveState=failed)', 'elapsed': 61},
     'failed: the server exited (ActiveState=failed), 61 s of 600 s'),
])
def test_progress_line_says_what_the_gate_saw_and_the_time_spent(fields, expected):
    """Item 7 (a ten-minute load): one line a person can read per round instead of Ansible's retry counter."""
    assert _health.progress_line(_gate_result(**fields), 600) == expected
