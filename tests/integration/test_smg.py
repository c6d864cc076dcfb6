"""The real smg 1.13.0 (PyPI, "Shepherd Model Gateway", the router from 0.4 on) in front of SGLang test doubles.

Started as the router role starts it (``python -m smg.launch_router``, the plan's ``launch_module``):

* register, drain and re-add a worker with inferops.sglang.router_worker through smg's worker API;
* C43: with ``--dp-aware`` a dp 2 server is listed as ``http://h:p@0`` and ``@1``; the drain removes both ranks and
  waits for both, the re-add waits until both are listed healthy;
* keys: ``--control-plane-api-keys`` guard the worker API (no key: refused at once; the admin key: works);
* C42: the role's argument check runs smg's own parser (``INFEROPS_ROUTER_MODULE=smg.launch_router``);
* graceful stop: on SIGTERM smg finishes a request in flight (``--shutdown-grace-period-secs``) and exits.

sglang-router 0.3.2 stays covered by tests/integration/test_router.py. The wheels come from scripts/setup.sh
(pinned in tests/integration/smg-requirements.txt, kept in .cache/wheels/smg); the venv is .cache/smg-venv.
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
import yaml
from ansible_run import free_port, run_module

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOUBLE = os.path.join(REPO, "tests", "double")
WHEELS = os.path.join(REPO, ".cache", "wheels", "smg")
VENV = os.path.join(REPO, ".cache", "smg-venv")
ADMIN_KEY = "cp-admin-Secret-8"


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


def get_json(url, headers=None):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as resp:
        return json.loads(resp.read())


def status(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status
    except OSError:
        return None


def listed(router, headers=None):
    """(url, is_healthy, status) of every worker smg lists, sorted."""
    return sorted((w["url"], w["is_healthy"], w.get("status")) for w in get_json(router + "/workers", headers)["workers"])


@pytest.fixture(scope="module", name="smg_python")
def fixture_smg_python():
    assert os.path.isdir(WHEELS), "run scripts/setup.sh first (it downloads smg's wheels)"
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index",
                        "--find-links", WHEELS, "smg==1.13.0"], check=True)
    return python


class Fleet:
    """Double workers (the second generates slowly), then smg in front of them once they are healthy (smg retries a
    worker whose first health check failed only 30 s later)."""

    def __init__(self, smg_python, dp_sizes=(1, 1), router_args=(), headers=None, generate_seconds=("0.05", "2")):
        self.tmp = tempfile.mkdtemp(prefix="inferops-smg-")
        model = os.path.join(self.tmp, "model")
        os.makedirs(model)
        with open(os.path.join(model, "config.json"), "w") as handle:
            handle.write('{"model_type": "llama", "architectures": ["LlamaForCausalLM"]}')
        self.procs, self.workers = [], []
        self.headers = headers
        for i, dp in enumerate(dp_sizes):
            port = free_port()
            env = dict(os.environ, PYTHONPATH=DOUBLE, SGLANG_DOUBLE_REQUIRE_TOOLS="0", SGLANG_DOUBLE_LOAD_SECONDS="0.3",
                       SGLANG_DOUBLE_WARMUP_SECONDS="0.1", SGLANG_DOUBLE_STATE_DIR=os.path.join(self.tmp, "state%d" % i),
                       SGLANG_DOUBLE_GPU_DIR=os.path.join(self.tmp, "gpu%d" % i),
                       SGLANG_DOUBLE_GENERATE_SECONDS=generate_seconds[i])
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "sglang.launch_server", "--model-path", model, "--port", str(port),
                 "--dp-size", str(dp)],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
            self.workers.append("http://127.0.0.1:%d" % port)
        try:
            for url in self.workers:
                wait_for(lambda url=url: status(url + "/health") == 200, 30, url)
            self.router = "http://127.0.0.1:%d" % free_port()
            self.log = open(os.path.join(self.tmp, "smg.log"), "w")
            self.proc = subprocess.Popen(
                [smg_python, "-m", "smg.launch_router", "--host", "127.0.0.1", "--port", self.router.rsplit(":", 1)[1],
                 "--policy", "round_robin"] + list(router_args) + ["--worker-urls"] + self.workers,
                stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
            self.procs.append(self.proc)
            ranks = sum(dp_sizes) if "--dp-aware" in router_args else len(dp_sizes)
            wait_for(lambda: len([w for w in listed(self.router, headers) if w[1]]) == ranks, 60,
                     "smg to list %d healthy workers" % ranks)
        except BaseException:
            self.stop()
            raise

    def stop(self):
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture(name="fleet")
def fixture_fleet(smg_python):
    fleet = Fleet(smg_python)
    yield fleet
    fleet.stop()


def test_register_drain_and_back(fleet):
    """smg's worker API as router_worker uses it: out (drained, from GET /v1/loads), idempotent, back healthy."""
    router, (w1, w2) = fleet.router, fleet.workers
    args = {"router_url": router, "url": w2, "state": "absent", "interval": 0.1, "timeout": 30}
    assert [w[0] for w in listed(router)] == sorted([w1, w2])
    out = run_module("inferops.sglang.router_worker", args)
    assert out["changed"] is True and out["workers"] == [w1], out
    assert out["drain"]["drained"] is True and out["drain"]["reason"] == "idle", out["drain"]
    assert run_module("inferops.sglang.router_worker", args)["changed"] is False
    back = run_module("inferops.sglang.router_worker", dict(args, state="present"))
    assert back["changed"] is True and back["healthy"] is True and back["workers"] == sorted([w1, w2]), back
    assert listed(router) == sorted([(w1, True, "ready"), (w2, True, "ready")])


def test_drain_waits_for_a_request_in_flight(fleet):
    router, w2 = fleet.router, fleet.workers[1]
    req = urllib.request.Request(w2 + "/generate", data=json.dumps(
        {"text": "hi", "sampling_params": {"max_new_tokens": 400}}).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    done = {}
    thread = threading.Thread(target=lambda: done.setdefault("status", urllib.request.urlopen(req, timeout=60).status))
    thread.start()
    wait_for(lambda: sum(x["num_running_reqs"] for x in get_json(w2 + "/v1/loads")["loads"]) > 0, 10, "the request")
    out = run_module("inferops.sglang.router_worker", {"router_url": router, "url": w2, "state": "absent",
                                                       "interval": 0.1, "drain_timeout": 60})
    finished_before = not thread.is_alive()
    thread.join(60)
    assert done.get("status") == 200
    # smg lists a removed worker as "draining" until it is done with it, so most of the wait is in wait_settled.
    assert out["drain"]["drained"] is True and out["drain"]["reason"] == "idle", out["drain"]
    assert finished_before, out


def test_dp_aware_ranks_all_drained_and_all_back_c43(smg_python):
    """C43: smg --dp-aware lists the dp 2 server as url@0 and url@1 (a dp 1 server as its plain url); both go and
    both come back healthy."""
    fleet = Fleet(smg_python, dp_sizes=(1, 2), router_args=["--dp-aware"])
    try:
        router, (w1, w2) = fleet.router, fleet.workers
        assert [w[0] for w in listed(router)] == sorted([w1, w2 + "@0", w2 + "@1"])
        args = {"router_url": router, "url": w2, "state": "absent", "interval": 0.1, "timeout": 60}
        out = run_module("inferops.sglang.router_worker", args)
        assert out["changed"] is True and len(out["worker_ids"]) == 2, out
        assert out["workers"] == [w1] and out["drain"]["drained"] is True, out
        back = run_module("inferops.sglang.router_worker", dict(args, state="present"))
        assert back["changed"] is True and back["healthy"] is True and len(back["worker_ids"]) == 2, back
        assert listed(router) == sorted([(w1, True, "ready"), (w2 + "@0", True, "ready"),
                                         (w2 + "@1", True, "ready")])
        assert run_module("inferops.sglang.router_worker", dict(args, state="present"))["changed"] is False
    finally:
        fleet.stop()


def test_control_plane_keys(smg_python):
    """--control-plane-api-keys: without a key router_worker fails at once; with the admin key it works."""
    headers = {"Authorization": "Bearer " + ADMIN_KEY}
    fleet = Fleet(smg_python, router_args=["--control-plane-api-keys", "ops:Operations:admin:" + ADMIN_KEY],
                  headers=headers)
    try:
        args = {"router_url": fleet.router, "url": fleet.workers[1], "state": "absent", "interval": 0.1}
        refused = run_module("inferops.sglang.router_worker", args)
        assert refused.get("failed") is True and "401" in refused["msg"], refused
        assert ADMIN_KEY not in json.dumps(refused)
        out = run_module("inferops.sglang.router_worker", dict(args, api_key=ADMIN_KEY))
        assert out["changed"] is True and out["workers"] == [fleet.workers[0]], out
        assert ADMIN_KEY not in json.dumps(out)
    finally:
        fleet.stop()


def test_the_roles_argument_check_runs_smgs_parser_c42(smg_python):
    """The router role's check code with INFEROPS_ROUTER_MODULE=smg.launch_router: smg's own parser, keys masked."""
    with open(os.path.join(REPO, "roles", "router", "vars", "main.yml")) as handle:
        code = yaml.safe_load(handle)["_router_check_code"]
    env = dict(os.environ, INFEROPS_ROUTER_MODULE="smg.launch_router")

    def check(secrets, args=()):
        return subprocess.run([smg_python, "-c", code, "/dev/stdin"] + list(args), input=json.dumps(secrets),
                              capture_output=True, text=True, timeout=60, check=False, env=env)
    good = check(["--api-key=-rk-Secret-1", "--control-plane-api-keys", "cp1:ansible:admin:cp:Secret:2"],
                 ["--host", "0.0.0.0", "--port", "30000", "--dp-aware", "--worker-urls"])
    assert good.returncode == 0, good.stderr
    bad = check(["--api-key=rk-Secret-1"], ["--retry-max-retries", "x"])
    assert bad.returncode != 0 and "invalid int value" in bad.stderr and "Secret" not in bad.stderr + bad.stdout


def test_graceful_stop_finishes_the_request_in_flight(smg_python):
    """On SIGTERM smg waits (up to --shutdown-grace-period-secs) for the request in flight, then exits: the router
    unit's TimeoutStopSec= must outlast that period (the plan's timeout_stop_sec)."""
    fleet = Fleet(smg_python, dp_sizes=(1,), generate_seconds=("3",), router_args=["--shutdown-grace-period-secs", "20"])
    try:
        worker = fleet.workers[0]
        req = urllib.request.Request(fleet.router + "/generate", data=json.dumps(
            {"text": "hi", "sampling_params": {"max_new_tokens": 400}}).encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        done = {}

        def send():
            try:
                done["status"] = urllib.request.urlopen(req, timeout=60).status
            except OSError as exc:
                done["status"] = repr(exc)
        thread = threading.Thread(target=send)
        thread.start()
        wait_for(lambda: sum(x["num_running_reqs"] for x in get_json(worker + "/v1/loads")["loads"]) > 0, 10,
                 "the request on the worker")
        began = time.time()
        fleet.proc.send_signal(signal.SIGTERM)
        rc = fleet.proc.wait(40)
        took = time.time() - began
        thread.join(60)
        assert done.get("status") == 200, done
        assert took < 20, took
        print("smg exited %s after %.1f s" % (rc, took))
    finally:
        fleet.stop()
