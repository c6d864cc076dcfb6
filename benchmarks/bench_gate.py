"""Health-gate figures against the SGLang test double (prints a table; asserts nothing).

- gate latency: time from the double first answering /health 200 (seen by an independent 20 ms poller)
  to inferops.sglang.server_health returning ready (that includes the smoke test's chat completions);
- fail-fast: time from the double's crash during load (SGLANG_DOUBLE_FAIL=crash_during_load) to the gate
  failing, with the server run by supervisord (pip's `supervisor`, as the no-systemd fallback runs it);
- refused key: time from the double (run with --api-key) first answering /health 200 to the gate failing with
  "the key was refused" (a wrong api_key; the budget is 900 s, so anything near 0 is a fail-fast).

Run: .venv/bin/python benchmarks/bench_gate.py [--runs 5]
Needs ansible (this venv) and supervisor (`pip install supervisor==4.3.0`) for the fail-fast rows.
"""

import argparse
import contextlib
import datetime
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DOUBLE = os.path.join(REPO, "tests", "double")
BIN = os.path.dirname(sys.executable)


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def gate(args):
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([os.path.join(BIN, "ansible"), "localhost", "-c", "local", "-m", "inferops.sglang.server_health",
                           "-a", json.dumps(args)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, check=False)
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]


def model_dir(tmp):
    path = os.path.join(tmp, "model")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as handle:
        handle.write("{}")
    return path


def double_env(tmp, **more):
    env = dict(os.environ, PYTHONPATH=DOUBLE, SGLANG_DOUBLE_REQUIRE_TOOLS="0",
               SGLANG_DOUBLE_STATE_DIR=os.path.join(tmp, "state"), SGLANG_DOUBLE_GPU_DIR=os.path.join(tmp, "gpu"))
    env.update(more)
    return env


@contextlib.contextmanager
def running_double(tmp, load, server_args=(), **env):
    """Start the double (``python -m sglang.launch_server``) on a free port, in its own session, and poll its /health
    every 20 ms from a thread. Yields ``{'proc', 'port', 'started' (epoch s), 'healthy_at' (list, the epoch s of the
    first 200 once seen)}``; the double's process group is killed on exit. ``env`` adds SGLANG_DOUBLE_* knobs."""
    port = free_port()
    started = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "sglang.launch_server", "--model-path", model_dir(tmp), "--port", str(port)]
                            + list(server_args),
                            env=double_env(tmp, SGLANG_DOUBLE_LOAD_SECONDS=str(load), SGLANG_DOUBLE_WARMUP_SECONDS="1",
                                           SGLANG_DOUBLE_HEALTH_DELAY="0.05", **env),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    healthy_at = []

    def poll():
        while not healthy_at and proc.poll() is None:
            try:
                if urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=5).status == 200:
                    healthy_at.append(time.time())
            except OSError:
                pass
            time.sleep(0.02)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        yield {"proc": proc, "port": port, "started": started, "healthy_at": healthy_at}
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
        poller.join(5)


def gate_latency(tmp, load, server_args=(), **gate_args):
    """Time (s) from the double's first /health 200 to inferops.sglang.server_health returning (key ``latency``)."""
    with running_double(tmp, load, server_args) as double:
        args = {"port": double["port"], "manager": "none", "started_at": double["started"], "interval": 1,
                "round_seconds": 120, "progress_file": os.path.join(tmp, "gate.json")}
        args.update(gate_args)
        result = gate(args)
        done = double["started"] + result["elapsed"]
        for dummy in range(250):
            if double["healthy_at"]:
                break
            time.sleep(0.02)
        healthy_at = double["healthy_at"]
        return {"state": result["state"], "reason": result.get("reason"), "first_200": healthy_at[0] - double["started"],
                "gate_ready": result["elapsed"], "latency": done - healthy_at[0],
                "smoke": result["smoke_latencies"]}


def uri_peer(tmp, port, budget, delay=5):
    """The common peer pattern: an ansible-playbook run of one ``ansible.builtin.uri`` task polling /health with
    ``until``/``retries`` (budget / delay)/``delay``. Returns ``{'ok' (bool), 'end' (epoch s the task ended, from
    the json callback)}``."""
    play = [{"name": "uri peer", "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [{
        "name": "Wait for /health", "register": "health", "until": "health.status == 200",
        "retries": max(1, int(round(budget / float(delay)))), "delay": delay,
        "ansible.builtin.uri": {"url": "http://127.0.0.1:%d/health" % port, "status_code": 200, "timeout": 5}}]}]
    path = os.path.join(tmp, "uri-peer.yml")
    with open(path, "w") as handle:
        json.dump(play, handle)   # JSON is YAML
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0")
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", path], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, check=False)
    task = json.loads(proc.stdout[proc.stdout.index("{"):])["plays"][0]["tasks"][0]
    end = datetime.datetime.fromisoformat(task["task"]["duration"]["end"].replace("Z", "+00:00")).timestamp()
    return {"ok": not task["hosts"]["localhost"].get("failed"), "end": end}


def peer_latency(tmp, load, budget):
    """Time (s) from the double's first /health 200 to the uri peer's task ending (key ``latency``)."""
    with running_double(tmp, load) as double:
        result = uri_peer(tmp, double["port"], budget)
        return {"ok": result["ok"], "latency": result["end"] - double["healthy_at"][0]}


def peer_crash(tmp, load, budget):
    """Time (s) from the double's crash during load (half the load) to the uri peer's task failing."""
    with running_double(tmp, load, SGLANG_DOUBLE_FAIL="crash_during_load") as double:
        result = uri_peer(tmp, double["port"], budget)
        return {"ok": result["ok"], "after_crash": result["end"] - (double["started"] + load / 2.0)}


def fail_fast(tmp, load, supervisord, budget=120):
    conf = os.path.join(tmp, "supervisord.conf")
    sock = os.path.join(tmp, "supervisor.sock")
    port = free_port()
    env_line = ",".join('%s="%s"' % (k, v) for k, v in {
        "PYTHONPATH": DOUBLE, "SGLANG_DOUBLE_REQUIRE_TOOLS": "0", "SGLANG_DOUBLE_LOAD_SECONDS": str(load),
        "SGLANG_DOUBLE_FAIL": "crash_during_load", "SGLANG_DOUBLE_STATE_DIR": os.path.join(tmp, "state"),
        "SGLANG_DOUBLE_GPU_DIR": os.path.join(tmp, "gpu")}.items())
    with open(conf, "w") as handle:
        handle.write(
            "[unix_http_server]\nfile=%s\n[supervisord]\nlogfile=%s/supervisord.log\npidfile=%s/supervisord.pid\n"
            "nodaemon=false\n[rpcinterface:supervisor]\n"
            "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n"
            "[supervisorctl]\nserverurl=unix://%s\n"
            "[program:sglang]\ncommand=%s -m sglang.launch_server --model-path %s --port %d\nenvironment=%s\n"
            "autostart=false\nautorestart=unexpected\nstartsecs=0\nstartretries=3\nstdout_logfile=%s/sglang.log\n"
            "redirect_stderr=true\n" % (sock, tmp, tmp, sock, sys.executable, model_dir(tmp), port, env_line, tmp))
    supervisorctl = os.path.join(os.path.dirname(supervisord), "supervisorctl")
    subprocess.run([supervisord, "-c", conf], check=True)
    try:
        for dummy in range(100):
            if subprocess.run([supervisorctl, "-c", conf, "pid"], stdout=subprocess.PIPE, text=True, check=False).stdout.strip().isdigit():
                break
            time.sleep(0.1)
        started = time.time()
        subprocess.run([supervisorctl, "-c", conf, "start", "sglang"], stdout=subprocess.DEVNULL, check=True)
        status = subprocess.run([supervisorctl, "-c", conf, "status", "sglang"], stdout=subprocess.PIPE, text=True, check=False).stdout
        pid = int(status.split("pid ")[1].split(",")[0])
        result = gate({"port": port, "manager": "supervisord", "service": "sglang", "supervisor_config": conf,
                       "supervisorctl": supervisorctl, "baseline": {"pid": pid}, "started_at": started,
                       "interval": 1, "round_seconds": 120, "budget": budget, "log_file": os.path.join(tmp, "sglang.log"),
                       "progress_file": os.path.join(tmp, "gate-ff.json")})
        crashed_at = load / 2.0  # the double crashes halfway through its load
        return {"failed": result.get("failed"), "reason": result.get("reason"), "gate_failed_at": result["elapsed"],
                "after_crash": result["elapsed"] - crashed_at}
    finally:
        subprocess.run([supervisorctl, "-c", conf, "shutdown"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load", type=float, default=4.0, help="seconds the double 'loads'")
    options = parser.parse_args()
    rows = []
    for dummy in range(options.runs):
        tmp = tempfile.mkdtemp(prefix="bench-gate-")
        try:
            rows.append(gate_latency(tmp, options.load))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    latencies = [r["latency"] for r in rows]
    print("gate latency (double's first /health 200 -> gate ready, incl. 3 chat completions), %d runs:" % len(rows))
    print("  median %.2f s, min %.2f s, max %.2f s; smoke completions median %.3f s each"
          % (statistics.median(latencies), min(latencies), max(latencies),
             statistics.median([s for r in rows for s in r["smoke"]])))
    refused = []
    for dummy in range(options.runs):
        tmp = tempfile.mkdtemp(prefix="bench-key-")
        try:
            refused.append(gate_latency(tmp, options.load, ["--api-key", "bench-right-key"], api_key="bench-wrong-key",
                                        budget=900))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    after = [r["latency"] for r in refused]
    print("refused key (double's first /health 200 -> gate failed), %d runs, budget 900 s:" % len(refused))
    print("  median %.2f s, max %.2f s; state %s, reason: %s"
          % (statistics.median(after), max(after), refused[-1]["state"], refused[-1]["reason"]))
    supervisord = shutil.which("supervisord", path=BIN + os.pathsep + os.environ.get("PATH", ""))
    if not supervisord:
        print("fail-fast: skipped (supervisord not installed: pip install supervisor==4.3.0)")
        return
    fails = []
    for dummy in range(options.runs):
        tmp = tempfile.mkdtemp(prefix="bench-ff-")
        try:
            fails.append(fail_fast(tmp, options.load, supervisord))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    after = [f["after_crash"] for f in fails]
    print("fail-fast (crash during load -> gate fails, under supervisord), %d runs:" % len(fails))
    print("  median %.2f s, max %.2f s after the crash (target: within 5 s); reason: %s"
          % (statistics.median(after), max(after), fails[-1]["reason"]))


if __name__ == "__main__":
    main()
