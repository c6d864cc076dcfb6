"""The real sglang-router (PyPI, 0.3.2) in front of two SGLang test doubles.

* inferops.sglang.router_worker takes a worker out (drained) and puts it back, in check mode and for real,
  against the router's own worker API.
* inferops.sglang.server_process never treats the router (titled ``sglang::router``, the pattern SGLang's own
  cleanup kills) as a stray server: it stops the servers and leaves the router running.
* Secured: workers with ``--api-key`` behind a router with ``--control-plane-api-keys`` (an admin and a user key):
  router_worker fails at once on a missing, wrong or user key, drains with ``drain_api_key``, registers with
  ``worker_api_key`` (the router then reads the worker's model info with it), and reaches everything on loopback
  directly while a proxy that answers 502 to everything is in its environment.

The router is installed from the wheels scripts/setup.sh keeps in .cache/wheels/router (pinned in
tests/fleet/router-requirements.txt) into .cache/router-venv.
"""

import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import pytest
from ansible_run import end_process_groups, free_port, run_module

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


def get_json(url, headers=None, cafile=None):
    context = ssl.create_default_context(cafile=cafile) if cafile else None
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10,
                                context=context) as resp:
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


WORKER_KEY = "sk-worker-Secret-5"
ADMIN_KEY = "cp-admin-Secret-6"
USER_KEY = "cp-user-Secret-7"


def start_fleet(router_python, worker_args=(), router_args=(), headers=None, router_tls=None, cafile=None):
    """Two double workers and the real router in front of them (round robin); the fleet dict and a stop().

    ``router_tls``: (certfile, keyfile) the router serves TLS with (``--tls-cert-path``/``--tls-key-path``),
    ``cafile`` the CA to trust it by.
    """
    if router_tls:
        router_args = list(router_args) + ["--tls-cert-path", router_tls[0], "--tls-key-path", router_tls[1]]
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
            [sys.executable, "-m", "sglang.launch_server", "--model-path", model, "--port", str(port)]
            + list(worker_args),
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        workers.append("http://127.0.0.1:%d" % port)
    for url in workers:
        wait_for(lambda url=url: status(url + "/health") == 200, 30, url)
    router_port = free_port()
    router = subprocess.Popen(
        [router_python, "-m", "sglang_router.launch_router", "--host", "127.0.0.1", "--port", str(router_port),
         "--policy", "round_robin"] + list(router_args) + ["--worker-urls"] + workers,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    router_url = "%s://127.0.0.1:%d" % ("https" if router_tls else "http", router_port)

    def stop():
        for proc in procs + [router]:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    try:
        wait_for(lambda: len([w for w in get_json(router_url + "/workers", headers, cafile)["workers"]
                              if w["is_healthy"]]) == 2,
                 60, "the router to list both workers")
    except BaseException:
        stop()
        raise
    return {"router": router_url, "router_pid": router.pid, "workers": workers, "procs": procs}, stop


@pytest.fixture(name="fleet")
def fixture_fleet(router_python):
    """Two double workers and the real router in front of them (round robin)."""
    fleet, stop = start_fleet(router_python)
    yield fleet
    stop()


@pytest.fixture(name="secured_fleet")
def fixture_secured_fleet(router_python):
    """The same with workers that require WORKER_KEY, and a router that guards its control plane with an admin and
    a user key. The router has no key for the workers of its command line: it cannot read their model info
    (model_id "unknown"), their /health needs no key."""
    fleet, stop = start_fleet(router_python, worker_args=["--api-key", WORKER_KEY],
                              router_args=["--control-plane-api-keys",
                                           "ops:Operations:admin:" + ADMIN_KEY, "ro:Read only:user:" + USER_KEY],
                              headers={"Authorization": "Bearer " + ADMIN_KEY})
    yield fleet
    stop()


def listed(router_url, headers=None):
    return sorted(w["url"] for w in get_json(router_url + "/workers", headers)["workers"])


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


# -- secured: API keys on the router's control plane and on the workers ---------------------------------

ADMIN = {"Authorization": "Bearer " + ADMIN_KEY}


@pytest.mark.parametrize("key, words, status", [
    (None, "the server requires an API key", 401),
    ("cp-wrong", "the key was refused", 401),
    (USER_KEY, "the key was refused", 403),
])
def test_router_worker_fails_at_once_on_the_control_plane_key(secured_fleet, key, words, status):
    router, w2 = secured_fleet["router"], secured_fleet["workers"][1]
    args = {"router_url": router, "url": w2, "state": "absent", "timeout": 120}
    if key:
        args["api_key"] = key
    began = time.time()
    out = run_module("inferops.sglang.router_worker", args)
    assert time.time() - began < 60
    assert out.get("failed") is True
    assert out["msg"].startswith("%s (GET %s/workers answered %d" % (words, router, status)), out["msg"]
    assert listed(router, ADMIN) == sorted(secured_fleet["workers"])        # nothing changed
    for secret in (ADMIN_KEY, USER_KEY, WORKER_KEY):
        assert secret not in json.dumps(out)


def test_secured_out_drained_and_back_with_the_keys_and_a_proxy_around(secured_fleet, monkeypatch):
    router, (w1, w2) = secured_fleet["router"], secured_fleet["workers"]
    # A proxy that answers 502 to everything, in every proxy variable of the module's environment.
    proxy = subprocess.Popen([sys.executable, "-c", PROXY_502], stdout=subprocess.PIPE, text=True)
    try:
        proxy_url = proxy.stdout.readline().strip()
        for name in ("no_proxy", "NO_PROXY"):
            monkeypatch.delenv(name, raising=False)
        for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
            monkeypatch.setenv(name, proxy_url)
        keys = {"api_key": ADMIN_KEY, "drain_api_key": WORKER_KEY, "worker_api_key": WORKER_KEY}
        args = dict(keys, router_url=router.replace("127.0.0.1", "0.0.0.0"), url=w2, state="absent", interval=0.1)

        out = run_module("inferops.sglang.router_worker", args, diff=True)
        assert out["changed"] is True and out["workers"] == [w1], out
        assert out["drain"]["reason"] == "idle" and out["drain"]["drained"] is True
        # Back in: the router registers it with the worker's key in the body and reads its model info with it.
        back = run_module("inferops.sglang.router_worker", dict(args, state="present"), diff=True)
        assert back["changed"] is True and back["healthy"] is True and back["workers"] == sorted([w1, w2]), back
        models = dict((w["url"], w["model_id"]) for w in get_json(router + "/workers", ADMIN)["workers"])
        assert models[w1] == "unknown" and models[w2] not in ("unknown", None), models
        for result in (out, back):
            for secret in (ADMIN_KEY, WORKER_KEY):
                assert secret not in json.dumps(result)
    finally:
        proxy.kill()
        proxy.wait()


@pytest.mark.parametrize("drain_key, words", [
    (None, "the server requires an API key (GET /v1/loads answered 401)"),
    ("sk-wrong", "the key was refused (GET /v1/loads answered 401)"),
])
def test_secured_drain_reports_a_missing_or_wrong_worker_key(secured_fleet, drain_key, words):
    router, w2 = secured_fleet["router"], secured_fleet["workers"][1]
    args = {"router_url": router, "url": w2, "state": "absent", "interval": 0.1, "drain_timeout": 120,
            "api_key": ADMIN_KEY}
    if drain_key:
        args["drain_api_key"] = drain_key
    out = run_module("inferops.sglang.router_worker", args)
    assert out["changed"] is True
    assert out["drain"]["reason"] == words and out["drain"]["drained"] is False
    assert out["drain"]["seconds"] < 10            # reported at once, not after drain_timeout
    assert words in " ".join(out.get("warnings", []))


# -- TLS: the router serves https (--tls-cert-path/--tls-key-path) -----------------------------------------

@pytest.fixture(scope="module", name="cert")
def fixture_cert(tmp_path_factory):
    """(CA certificate, server certificate, server key), made with the openssl CLI: a CA, and a server certificate
    for 127.0.0.1, ::1 and localhost signed by it (the router's rustls refuses a self-signed CA certificate as a
    server's own)."""
    directory = str(tmp_path_factory.mktemp("tls"))

    def path(name):
        return os.path.join(directory, name)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    with open(path("server.ext"), "w") as handle:
        handle.write("subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                     "extendedKeyUsage=serverAuth\n")
    for cmd in (["openssl", "req", "-x509"] + ec + ["-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "2",
                                                    "-subj", "/CN=inferops-test-ca"],
                ["openssl", "req"] + ec + ["-keyout", path("server.key"), "-out", path("server.csr"),
                                           "-subj", "/CN=inferops-router-test"],
                ["openssl", "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                 "-CAcreateserial", "-out", path("server.pem"), "-days", "2", "-extfile", path("server.ext")]):
        subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return path("ca.pem"), path("server.pem"), path("server.key")


def test_router_worker_over_https_with_the_ca(router_python, cert):
    ca, server_cert, server_key = cert
    fleet, stop = start_fleet(router_python, router_tls=(server_cert, server_key), cafile=ca)
    try:
        router, w2 = fleet["router"], fleet["workers"][1]
        assert router.startswith("https://")
        args = {"router_url": router.split("://", 1)[1], "scheme": "https", "url": w2, "state": "absent",
                "interval": 0.1}
        untrusted = run_module("inferops.sglang.router_worker", args)
        assert untrusted.get("failed") is True and "certificate verify failed" in untrusted["msg"], untrusted
        out = run_module("inferops.sglang.router_worker", dict(args, ca_path=ca))
        assert out["changed"] is True and out["workers"] == [fleet["workers"][0]], out
        assert out["drain"]["reason"] == "idle"          # the worker itself is plain http (its own URL says so)
        back = run_module("inferops.sglang.router_worker", dict(args, state="present", validate_certs=False))
        assert back["changed"] is True and back["healthy"] is True
    finally:
        stop()


def double_serves_tls():
    """Whether the double's launcher takes --ssl-certfile with SGLANG_DOUBLE_SSL=1 (0.5.10's TLS flags)."""
    proc = subprocess.run([sys.executable, "-m", "sglang.launch_server", "--help"],
                          env=dict(os.environ, PYTHONPATH=DOUBLE, SGLANG_DOUBLE_SSL="1"),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60, check=False)
    return "--ssl-certfile" in proc.stdout


def test_a_tls_worker_with_a_key_registered_and_drained(router_python, cert, tmp_path):
    """An https worker (the double with TLS and --api-key) joins a router that trusts its CA (--ca-cert-paths);
    the module reaches both with the CA (ca_path), the drain reads /get_load over https with drain_api_key."""
    if not double_serves_tls():
        pytest.skip("the SGLang test double does not take --ssl-certfile yet")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    port, router_port = free_port(), free_port()
    env = dict(os.environ, PYTHONPATH=DOUBLE, SGLANG_DOUBLE_REQUIRE_TOOLS="0", SGLANG_DOUBLE_SSL="1",
               SGLANG_DOUBLE_LOAD_SECONDS="0.3", SGLANG_DOUBLE_WARMUP_SECONDS="0.1",
               SGLANG_DOUBLE_STATE_DIR=str(tmp_path / "state"), SGLANG_DOUBLE_GPU_DIR=str(tmp_path / "gpu"))
    procs = [subprocess.Popen(
        [sys.executable, "-m", "sglang.launch_server", "--model-path", str(model), "--port", str(port),
         "--api-key", WORKER_KEY, "--ssl-certfile", cert[1], "--ssl-keyfile", cert[2]],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)]
    procs.append(subprocess.Popen(
        [router_python, "-m", "sglang_router.launch_router", "--host", "127.0.0.1", "--port", str(router_port),
         "--policy", "round_robin", "--ca-cert-paths", cert[0]],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    worker, router = "https://127.0.0.1:%d" % port, "http://127.0.0.1:%d" % router_port
    try:
        wait_for(lambda: get_json(router + "/workers")["total"] == 0, 60, "the router")
        args = {"router_url": router, "url": "127.0.0.1:%d" % port, "scheme": "https", "ca_path": cert[0],
                "worker_api_key": WORKER_KEY, "drain_api_key": WORKER_KEY, "interval": 0.2, "timeout": 60}
        added = run_module("inferops.sglang.router_worker", dict(args, state="present"))
        assert added.get("changed") is True and added["healthy"] is True and added["workers"] == [worker], added.get("msg")
        out = run_module("inferops.sglang.router_worker", dict(args, state="absent"))
        assert out["changed"] is True and out["workers"] == [] and out["drain"]["reason"] == "idle", out
        assert WORKER_KEY not in json.dumps(added) + json.dumps(out)
    finally:
        end_process_groups(procs)


# A proxy stand-in in its own process (the module's environment points at it): prints its URL, answers 502.
PROXY_502 = """
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def _a(self):
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_GET = do_POST = do_DELETE = do_CONNECT = _a
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print("http://127.0.0.1:%d" % s.server_address[1], flush=True)
s.serve_forever()
"""
