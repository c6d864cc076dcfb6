"""The health gate (inferops.sglang.server_health) run through Ansible against the SGLang test double.

Field cases C03 (/v1/models answers early; only /health plus a real completion count) and C04
(/health takes over a second). The service manager is `none` here (no systemd on the test machine);
the molecule scenario rollback proves the fail-fast path against a real systemd unit.

Secured servers: the double with --api-key (the key right, wrong, missing), with TLS (SGLang 0.5.10's
--ssl-certfile/--ssl-keyfile, SGLANG_DOUBLE_SSL=1; a certificate made here with the openssl command line tool),
and a proxy in the module's environment that answers 502 to everything (loopback probes must not go through it).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ansible_run import end_process_groups, free_port, run_module

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOUBLE = os.path.join(REPO, "tests", "double")
KEY = "sk-double-Secret-9"


@pytest.fixture(name="double")
def fixture_double():
    """Start the double with the given environment; stop its process group afterwards."""
    procs = []
    tmp = tempfile.mkdtemp(prefix="inferops-health-")
    model = os.path.join(tmp, "model")
    os.makedirs(model)
    with open(os.path.join(model, "config.json"), "w") as handle:
        handle.write("{}")

    def start(args=(), **env):
        port = free_port()
        # The server's own environment has no proxy (a test that puts one into the probes' environment sets it
        # before this starts): SGLang's warm-up request would go through it.
        own = dict((name, value) for name, value in os.environ.items() if not name.lower().endswith("_proxy"))
        full = dict(own, PYTHONPATH=DOUBLE, SGLANG_DOUBLE_REQUIRE_TOOLS="0",
                    SGLANG_DOUBLE_STATE_DIR=os.path.join(tmp, "state"), SGLANG_DOUBLE_GPU_DIR=os.path.join(tmp, "gpu"))
        full.update(env)
        proc = subprocess.Popen([sys.executable, "-m", "sglang.launch_server", "--model-path", model, "--port", str(port)]
                                + list(args),
                                env=full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(proc)
        return port, time.time()

    yield start
    end_process_groups(procs)
    shutil.rmtree(tmp, ignore_errors=True)


def gate(port, started_at, **options):
    args = dict(port=port, manager="none", started_at=started_at, interval=0.2,
                progress_file=os.path.join(tempfile.gettempdir(), "inferops-gate-%d.json" % port))
    args.update(options)
    return run_module("inferops.sglang.server_health", args)


def test_models_answering_early_does_not_pass_the_gate(double):
    """C03: while loading, /v1/models answers 200 and /health 503; a short round must come back waiting."""
    port, started = double(SGLANG_DOUBLE_LOAD_SECONDS="0.5", SGLANG_DOUBLE_WARMUP_SECONDS="6")
    time.sleep(1.5)
    result = gate(port, started, round_seconds=2)
    assert result["state"] == "waiting", result
    assert result["phase"] == "health" and result["last_status"] == 503
    assert result["time_to_tcp"] is not None and result["time_to_healthy"] is None
    # The next rounds keep the progress (time to TCP) and end ready after a real completion.
    for dummy in range(10):
        result = gate(port, started, round_seconds=5)
        if result["state"] != "waiting":
            break
    assert result["state"] == "ready", result
    assert len(result["smoke_latencies"]) == 3
    assert result["time_to_healthy"] >= 6


def test_slow_health_is_waited_for_without_flapping(double):
    """C04: /health takes 1.2 s (a one-token generation); the gate's per-request timeout is far longer."""
    port, started = double(SGLANG_DOUBLE_LOAD_SECONDS="0.2", SGLANG_DOUBLE_WARMUP_SECONDS="0.2",
                           SGLANG_DOUBLE_HEALTH_DELAY="1.2")
    result = gate(port, started, round_seconds=60)
    assert result["state"] == "ready", result
    assert result["health_latency"] >= 1.2


def test_never_healthy_fails_at_the_end_of_the_budget(double):
    port, started = double(SGLANG_DOUBLE_LOAD_SECONDS="0.2", SGLANG_DOUBLE_FAIL="never_healthy")
    result = gate(port, started, round_seconds=60, budget=4)
    assert result.get("failed") is True
    assert "not ready after the whole budget of 4 s" in result["msg"]
    assert result["last_status"] == 503


def test_a_completion_that_hangs_after_health_fails_at_once_not_after_the_budget(double):
    """Issue 27: /health answers 200 but a chat completion hangs (SGLANG_DOUBLE_FAIL=chat_hangs): broken, not "not
    ready" - the gate fails after one smoke timeout, not at the end of its 900 s budget."""
    port, started = double(SGLANG_DOUBLE_LOAD_SECONDS="0.2", SGLANG_DOUBLE_FAIL="chat_hangs")
    result = gate(port, started, round_seconds=60, budget=900, smoke_timeout=3)
    assert result.get("failed") is True and result["failure_kind"] == "broken", result
    assert "the server is broken: /health answered 200, but smoke request 1 of 3 failed: no answer within 3 s" in result["msg"]
    assert result["last_status"] == 200 and result["response"]["status"] is None
    assert 3 <= result["elapsed"] < 15, result["elapsed"]


def test_request_timeout_below_sglang_own_health_timeout_is_refused(double):
    port, started = double()
    result = gate(port, started, request_timeout=5)
    assert result.get("failed") is True and "at least 20 s" in result["msg"]


# -- secured servers ------------------------------------------------------------------------------------

FAST = dict(SGLANG_DOUBLE_LOAD_SECONDS="0.2", SGLANG_DOUBLE_WARMUP_SECONDS="0.2")


def test_the_right_key_passes(double):
    port, started = double(["--api-key", KEY], **FAST)
    result = gate(port, started, round_seconds=60, api_key=KEY)
    assert result["state"] == "ready", result
    assert KEY not in json.dumps(result)


@pytest.mark.parametrize("key, words", [
    (None, "the server requires an API key (GET /v1/models answered 401)"),
    ("sk-wrong", "the key was refused (GET /v1/models answered 401)"),
])
def test_a_missing_or_wrong_key_fails_at_once_not_after_the_budget(double, key, words):
    port, started = double(["--api-key", KEY], **FAST)
    options = {"api_key": key} if key else {}
    result = gate(port, started, round_seconds=60, budget=600, **options)
    assert result.get("failed") is True and result["state"] == "failed"
    assert result["reason"] == words
    assert result["msg"] == "SGLang on port %d is not healthy: %s" % (port, words)
    assert result["elapsed"] < 30      # the first 401, not the budget of 600 s
    assert KEY not in json.dumps(result) and "sk-wrong" not in json.dumps(result)


class Refuse502(BaseHTTPRequestHandler):
    """A proxy that cannot reach anything: 502 to every request, each one counted."""

    def _answer(self):
        self.server.seen.append(self.path)
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_CONNECT = _answer

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


@pytest.fixture(name="proxy_502")
def fixture_proxy_502(monkeypatch):
    """The proxy stand-in in every proxy variable of the environment ansible (and so the module) runs with."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Refuse502)
    httpd.seen = []
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d" % httpd.server_address[1]
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.setenv(name, url)
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_a_proxy_in_the_environment_does_not_catch_the_probes(double, proxy_502):
    port, started = double(["--api-key", KEY], **FAST)
    for host in ("0.0.0.0", "127.0.0.1", "localhost"):
        result = gate(port, started, round_seconds=60, api_key=KEY, host=host)
        assert result["state"] == "ready", result
    assert proxy_502.seen == []


@pytest.fixture(scope="module", name="cert")
def fixture_cert(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1, ::1 and localhost (its own CA), made with the openssl CLI."""
    directory = str(tmp_path_factory.mktemp("tls"))
    cert, key = os.path.join(directory, "server.pem"), os.path.join(directory, "server.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=inferops-gate-test",
                    "-addext", "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost"],
                   check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return cert, key


def double_serves_tls():
    """Whether the double's launcher takes --ssl-certfile with SGLANG_DOUBLE_SSL=1 (0.5.10's TLS flags)."""
    proc = subprocess.run([sys.executable, "-m", "sglang.launch_server", "--help"],
                          env=dict(os.environ, PYTHONPATH=DOUBLE, SGLANG_DOUBLE_SSL="1"),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60, check=False)
    return "--ssl-certfile" in proc.stdout


def test_https_double_with_the_ca_and_the_key(double, cert):
    if not double_serves_tls():
        pytest.skip("the SGLang test double does not take --ssl-certfile yet")
    port, started = double(["--api-key", KEY, "--ssl-certfile", cert[0], "--ssl-keyfile", cert[1]],
                           SGLANG_DOUBLE_SSL="1", **FAST)
    result = gate(port, started, round_seconds=60, scheme="https", ca_path=cert[0], api_key=KEY)
    assert result["state"] == "ready", result
    assert result["url"] == "https://127.0.0.1:%d" % port
    # Without the CA the certificate is not trusted: a TLS failure ends the gate at once.
    result = gate(port, started, round_seconds=60, scheme="https", api_key=KEY)
    assert result.get("failed") is True and result["reason"].startswith("TLS failed (GET /health): ")
    # Plain HTTP to the TLS port: no answer (the budget decides), never "ready".
    result = gate(port, started, round_seconds=1, budget=600, api_key=KEY)
    assert result["state"] == "waiting" and result["last_status"] is None
