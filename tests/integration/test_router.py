"""The real sglang-router (PyPI, 0.3.2) in front of two SGLang test doubles.

* inferops.sglang.router_worker takes a worker out (drained) and puts it back, in check mode and for real,
  against the router's own worker API.
* inferops.sglang.server_process never treats the router (titled ``sglang::router``, the pattern SGLang's own
  cleanup kills) as a stray server: it stops the servers and leaves the router running.

The router is installed from the wheels scripts/setup.sh keeps in .cache/wheels/router (pinned in
tests/fleet/router-requirements.txt) into .cache/router-venv.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import pytest
from ansible_run import free_port, run_module

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOUBLE = os.path.join(REPO, "tests", "double")
WHEELS = os.path.join(REPO, ".cache", "wheels", "router")
VENV = os.path.join(REPO, ".cache", "router-venv")


def wait_for(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if predicate():
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def status(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status
    except OSError:
        return None


@pytest.fixture(scope="module", name="router_python")
def fixture_router_python():
    assert os.path.isdir(WHEELS), "run scripts/setup.sh first (it downloads the router's wheels)"
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index",
                        "--find-links", WHEELS, "sglang-router==0.3.2"], check=True)
    return python


@pytest.fixture(name="fleet")
def fixture_fleet(router_python):
    """Two double workers and the real router in front of them (round robin)."""
    tmp = tempfile.mkdtemp(prefix="inferops-router-")
    model = os.path.join(tmp, "model")
    os.makedirs(model)
    with open(os.path.join(model, "config.json"), "w") as handle:
        handle.write("{}")
    procs = []
    workers = []
    for i in range(2):
        port = free_port()
        env = dict(os.environ, PYTHONPATH=DOUBLE, SGLANG_DOUBLE_REQUIRE_TOOLS="0", SGLANG_DOUBLE_LOAD_SECONDS="0.3",
                   SGLANG_DOUBLE_WARMUP_SECONDS="0.1", SGLANG_DOUBLE_STATE_DIR=os.path.join(tmp, "state"),
                   SGLANG_DOUBLE_GPU_DIR=os.path.join(tmp, "gpu%d" % i),
                   SGLANG_DOUBLE_GENERATE_SECONDS="0.05" if i == 0 else "2")   # the second one generates slowly
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "sglang.launch_server", "--model-path", model, "--port", str(port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        workers.append("http://127.0.0.1:%d" % port)
    for url in workers:
        wait_for(lambda url=url: status(url + "/health") == 200, 30, url)
    router_port = free_port()
    router = subprocess.Popen(
        [router_python, "-m", "sglang_router.launch_router", "--host", "127.0.0.1", "--port", str(router_port),
         "--policy", "round_robin", "--worker-urls"] + workers,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    router_url = "http://127.0.0.1:%d" % router_port
    wait_for(lambda: len([w for w in get_json(router_url + "/workers")["workers"] if w["is_healthy"]]) == 2,
             60, "the router to list both workers")
    yield {"router": router_url, "router_pid": router.pid, "workers": workers, "procs": procs}
    for proc in procs + [router]:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)


def listed(router_url):
    return sorted(w["url"] for w in get_json(router_url + "/workers")["workers"])


def test_router_worker_out_drained_and_back(fleet):
    router, (w1, w2) = fleet["router"], fleet["workers"]
    args = {"router_url": router, "url": w2, "state": "absent", "interval": 0.1}

    checked = run_module("inferops.sglang.router_worker", args, check=True, diff=True)
    assert checked["changed"] is True and checked["operation"] == "remove"
    assert checked["diff"]["before"] == "".join(u + "\n" for u in sorted([w1, w2]))
    assert checked["diff"]["after"] == w1 + "\n"
    assert listed(router) == sorted([w1, w2])          # check mode changed nothing

    out = run_module("inferops.sglang.router_worker", args)
    assert out["changed"] is True and out["workers"] == [w1]
    assert out["drain"]["drained"] is True and out["drain"]["running"] == 0 and out["drain"]["queued"] == 0
    assert out["drain"]["reason"] == "idle"
    assert listed(router) == [w1]
    assert run_module("inferops.sglang.router_worker", args)["changed"] is False

    back = run_module("inferops.sglang.router_worker", dict(args, state="present"))
    assert back["changed"] is True and back["healthy"] is True and back["workers"] == sorted([w1, w2])
    assert run_module("inferops.sglang.router_worker", dict(args, state="present"))["changed"] is False


def test_router_worker_waits_for_a_request_in_flight(fleet):
    router, w2 = fleet["router"], fleet["workers"][1]
    # A generation straight at w2 (it takes 2 s there), in flight while w2 leaves the router.
    req = urllib.request.Request(w2 + "/generate", data=json.dumps(
        {"text": "hi", "sampling_params": {"max_new_tokens": 400}}).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    done = {}
    thread = threading.Thread(target=lambda: done.setdefault("status", urllib.request.urlopen(req, timeout=60).status))
    thread.start()
    wait_for(lambda: get_json(w2 + "/get_load")[0]["num_reqs"] > 0, 10, "the request to run")
    out = run_module("inferops.sglang.router_worker", {"router_url": router, "url": w2, "state": "absent",
                                                       "interval": 0.1, "drain_timeout": 60})
    thread.join(60)
    assert done.get("status") == 200
    assert out["drain"]["drained"] is True and out["drain"]["seconds"] > 0.0, out["drain"]


def test_router_worker_unreachable_router_fails_clearly():
    out = run_module("inferops.sglang.router_worker", {"router_url": "http://127.0.0.1:%d" % free_port(),
                                                       "url": "http://127.0.0.1:1", "state": "absent"})
    assert out.get("failed") is True and "/workers" in out["msg"]


def test_stray_finder_never_stops_the_router(fleet):
    router_pid = fleet["router_pid"]
    with open("/proc/%d/cmdline" % router_pid, "rb") as handle:
        assert handle.read().split(b"\0")[0] == b"sglang::router"     # what SGLang's cleanup pattern matches
    info = run_module("inferops.sglang.server_process_info", {})
    assert "servers" in info, json.dumps(info)[:3000]
    mains = [s["main_pid"] for s in info["servers"]]
    assert router_pid not in mains
    assert all(router_pid not in s["pids"] for s in info["servers"])
    assert set(p.pid for p in fleet["procs"]) <= set(mains)
    # Check mode over the whole host: the router is not among what would be stopped.
    would = run_module("inferops.sglang.server_process", {"state": "absent"}, check=True)
    assert router_pid not in would["target_pids"]
    assert set(p.pid for p in fleet["procs"]) <= set(would["target_pids"])
    # For real, scoped to the test's own ports (other SGLang processes on this machine are not the test's).
    for url, proc in zip(fleet["workers"], fleet["procs"]):
        stopped = run_module("inferops.sglang.server_process", {"state": "absent", "port": int(url.rsplit(":", 1)[1]),
                                                                "grace_period": 10})
        assert stopped["changed"] is True and router_pid not in stopped["target_pids"]
        assert proc.wait(timeout=30) is not None
    assert os.path.exists("/proc/%d" % router_pid)
    assert status(fleet["router"] + "/health") == 200
