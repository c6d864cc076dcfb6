"""Pure parts of the health gate."""

import json

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _health


def test_parse_systemctl_show():
    props = _health.parse_systemctl_show("ActiveState=active\nSubState=running\nMainPID=42\nNRestarts=0\nResult=success\n")
    assert props == {"ActiveState": "active", "SubState": "running", "MainPID": 42, "NRestarts": 0, "Result": "success"}


@pytest.mark.parametrize("line, state, pid", [
    ("sglang                           RUNNING   pid 123, uptime 0:00:12", "RUNNING", 123),
    ("sglang                           STARTING  ", "STARTING", None),
    ("sglang                           BACKOFF   Exited too quickly (process log may have details)", "BACKOFF", None),
    ("sglang                           FATAL     Exited too quickly (process log may have details)", "FATAL", None),
    ("sglang: ERROR (no such process)", "ERROR", None),
    ("", "UNKNOWN", None),
])
def test_parse_supervisorctl_status(line, state, pid):
    status = _health.parse_supervisorctl_status(line)
    assert status["state"] == state and status["pid"] == pid


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


@pytest.mark.parametrize("status, body, ok", [
    (200, json.dumps({"choices": [{"message": {"content": "Hello"}}], "usage": {"completion_tokens": 2}}), True),
    (200, json.dumps({"choices": [{"message": {"content": ""}}]}), False),
    (200, json.dumps({"object": "list", "data": []}), False),  # /v1/models is not a completion (C03)
    (200, "<html>", False),
    (503, "", False),
])
def test_check_chat_response(status, body, ok):
    assert _health.check_chat_response(status, body)[0] is ok


def test_next_phase():
    assert _health.next_phase("tcp", True) == "health"
    assert _health.next_phase("health", False) == "health"
    assert _health.next_phase("smoke", True) == "ready"
    assert _health.next_phase("ready", True) == "ready"
