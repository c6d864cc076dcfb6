"""The cutover's health gate (roles/cutover/tasks/gate.yml) run by a real ansible-playbook with the default output
against the SGLang test double: one readable line per round (what the gate saw, seconds spent of the budget) instead
of Ansible's "FAILED - RETRYING" counter, the same result variable, hosts of a batch polled together, and a server
that never gets healthy failing at the end of the budget (item 7 of issue 13)."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
from ansible_run import end_process_groups, free_port

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOUBLE = os.path.join(REPO, "tests", "double")


@pytest.fixture(name="doubles")
def fixture_doubles():
    """start(**env) -> port of a new test double started with that environment; every one is stopped afterwards."""
    procs = []
    tmp = tempfile.mkdtemp(prefix="inferops-gate-progress-")

    def start(**env):
        port = free_port()
        model = os.path.join(tmp, "model-%d" % port)
        os.makedirs(model)
        with open(os.path.join(model, "config.json"), "w") as handle:
            handle.write("{}")
        own = dict((name, value) for name, value in os.environ.items() if not name.lower().endswith("_proxy"))
        full = dict(own, PYTHONPATH=DOUBLE, SGLANG_DOUBLE_REQUIRE_TOOLS="0",
                    SGLANG_DOUBLE_STATE_DIR=os.path.join(tmp, "state-%d" % port),
                    SGLANG_DOUBLE_GPU_DIR=os.path.join(tmp, "gpu-%d" % port))
        full.update(env)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "sglang.launch_server", "--model-path", model, "--port", str(port)],
            env=full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        return port

    yield start
    end_process_groups(procs)
    shutil.rmtree(tmp, ignore_errors=True)


def run_gate(tmp_path, ports, budget, round_seconds=2):
    """Run gate.yml (mode start) on one local host per port, as the cutover does; (rc, output, seconds)."""
    inventory = {"all": {"hosts": dict(("gpu-%02d" % (number + 1), {"cutover_port": port})
                                       for number, port in enumerate(ports))}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    gate_vars = {
        "__cutover_gate_mode": "start", "cutover_host": "127.0.0.1", "cutover_service": {"manager": "none"},
        "__cutover_mgr": {"baseline": {}}, "cutover_health_budget": budget, "cutover_health_interval": 1,
        "cutover_health_round_seconds": round_seconds, "cutover_smoke_requests": 1,
    }
    book = [{"hosts": "all", "gather_facts": False, "tasks": [
        {"name": "Note when the service was started", "ansible.builtin.set_fact": {"__cutover": {
            "began": "{{ now().timestamp() }}", "key_refused": False, "failure": "", "kept": False}}},
        {"name": "Gate", "ansible.builtin.include_role": {"name": "inferops.sglang.cutover", "tasks_from": "gate"},
         "vars": gate_vars},
        {"name": "Show the result", "ansible.builtin.debug": {
            "msg": "RESULT {{ __cutover_gate.state }} {{ __cutover_gate.phase }} {{ __cutover_gate.time_to_tcp is number }}"}},
    ]}]
    (tmp_path / "play.yml").write_text(json.dumps(book))
    env = dict((name, value) for name, value in os.environ.items()
               if not name.startswith("ANSIBLE_") or name == "ANSIBLE_COLLECTIONS_PATH")
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_FORCE_COLOR="0")
    began = time.time()
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp_path / "inventory.json"),
         "-c", "local", str(tmp_path / "play.yml")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False, env=env)
    return proc.returncode, proc.stdout, time.time() - began


def progress_lines(output):
    return re.findall(r"^TASK \[inferops\.sglang\.cutover : (Gate start - gpu-.*)\] \**$", output, re.M)


def test_a_load_shows_one_line_per_round_with_the_phase_and_the_time(doubles, tmp_path):
    """Item 7: while the model loads, each round says what the gate saw and the seconds spent of the budget."""
    port = doubles(SGLANG_DOUBLE_LOAD_SECONDS="8", SGLANG_DOUBLE_WARMUP_SECONDS="4")
    rc, out, dummy = run_gate(tmp_path, [port], budget=60)
    assert rc == 0, out
    assert "RETRYING" not in out and "retries left" not in out
    lines = progress_lines(out)
    assert re.match(r"^Gate start - gpu-01: loading the model \(port not open yet\), \d+ s of 60 s$", lines[0]), lines
    assert any(re.match(r"^Gate start - gpu-01: listening, warming up \(GET /health answered 503\), \d+ s of 60 s$",
                        line) for line in lines), lines
    # Issue 30: the verdict is a result line, not the name of the skipped include that would have waited more.
    assert re.search(r'"msg": "Gate \(start\): ready: /health ok, 1 chat completion ok, \d+ s of 60 s"', out), out[-3000:]
    assert "TASK [inferops.sglang.cutover : Gate start - no host waits]" in out and not [l for l in lines if "ready:" in l]
    assert "RESULT ready ready True" in out


def test_the_hosts_of_a_batch_wait_together_in_one_line_per_round(doubles, tmp_path):
    """Item 7: two hosts load at once; each round names both, and their rounds run side by side, not in turn."""
    ports = [doubles(SGLANG_DOUBLE_LOAD_SECONDS="8", SGLANG_DOUBLE_WARMUP_SECONDS="1") for dummy in range(2)]
    rc, out, seconds = run_gate(tmp_path, ports, budget=60)
    assert rc == 0, out
    lines = progress_lines(out)
    assert re.match(r"^Gate start - gpu-01: loading the model \(port not open yet\), \d+ s of 60 s; "
                    r"gpu-02: loading the model \(port not open yet\), \d+ s of 60 s$", lines[0]), lines
    assert out.count("RESULT ready ready True") == 2
    assert seconds < 30, (seconds, out)


def test_a_server_that_never_gets_healthy_fails_at_the_end_of_the_budget(doubles, tmp_path):
    """The gate still ends at its budget, with server_health's reason, after readable rounds."""
    port = doubles(SGLANG_DOUBLE_LOAD_SECONDS="0.5", SGLANG_DOUBLE_FAIL="never_healthy")
    rc, out, seconds = run_gate(tmp_path, [port], budget=20)
    assert rc == 2, out
    assert "not ready after the whole budget of 20 s" in out
    assert "listening, warming up (GET /health answered 503)" in out
    assert "RETRYING" not in out
    assert 20 <= seconds < 60
