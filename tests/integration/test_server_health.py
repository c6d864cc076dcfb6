"""The health gate (inferops.sglang.server_health) run through Ansible against the SGLang test double.

Field cases C03 (/v1/models answers early; only /health plus a real completion count) and C04
(/health takes over a second). The service manager is `none` here (no systemd on the test machine);
the molecule scenario rollback proves the fail-fast path against a real systemd unit.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
from ansible_run import free_port, run_module

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOUBLE = os.path.join(REPO, "tests", "double")


@pytest.fixture(name="double")
def fixture_double():
    """Start the double with the given environment; stop its process group afterwards."""
    procs = []
    tmp = tempfile.mkdtemp(prefix="inferops-health-")
    model = os.path.join(tmp, "model")
    os.makedirs(model)
    with open(os.path.join(model, "config.json"), "w") as handle:
        handle.write("{}")

    def start(**env):
        port = free_port()
        full = dict(os.environ, PYTHONPATH=DOUBLE, SGLANG_DOUBLE_REQUIRE_TOOLS="0",
                    SGLANG_DOUBLE_STATE_DIR=os.path.join(tmp, "state"), SGLANG_DOUBLE_GPU_DIR=os.path.join(tmp, "gpu"))
        full.update(env)
        proc = subprocess.Popen([sys.executable, "-m", "sglang.launch_server", "--model-path", model, "--port", str(port)],
                                env=full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(proc)
        return port, time.time()

    yield start
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
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


def test_request_timeout_below_sglang_own_health_timeout_is_refused(double):
    port, started = double()
    result = gate(port, started, request_timeout=5)
    assert result.get("failed") is True and "at least 20 s" in result["msg"]
