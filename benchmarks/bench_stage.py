"""The dark window of a cutover against the SGLang test double, cold, staged and warm (issue 32; row (g) of run.py).

A weight directory of a few GB (safetensors shards listed by ``model.safetensors.index.json``) on local disk; the double
loads like SGLang (it reads every shard, tests/double/sglang/srt/model_loader). One cutover: an old double serving (it
read no weights), its last answered /health, SIGTERM to its process group and the wait until the group is gone (stop +
release), the new double started on the weights, its port open (load), its first /health 200 (gate). The window is
the old server's last answer to the new server's first. Three ways, in rotating order:

- cold: the shards' pages evicted first (``posix_fadvise(POSIX_FADV_DONTNEED)`` after ``fsync``; the benchmark's own
  files only), so the new server reads the disk;
- staged: evicted as cold, then, while the old server still serves, staged with model_stage's functions
  (``_stage.stage``, mode fit, margin 2 GiB): the staging's time is outside the window, the point of staging;
- warm floor: every page already resident (read once before), the best a load can do from the page cache.

Run: .venv/bin/python benchmarks/bench_stage.py [--gib 2] [--runs 3] [--dir DIR]
"""

import argparse
import json
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DOUBLE = os.path.join(REPO, "tests", "double")
SHARD_PREFIX = "model-%05d-of-%05d.safetensors"


def _stage_module(collection=REPO):
    """model_stage's module_utils from ``collection`` (a checkout at .../ansible_collections/inferops/sglang)."""
    root = os.path.abspath(os.path.join(collection, "..", "..", ".."))
    if root not in sys.path:
        sys.path.insert(0, root)
    from ansible_collections.inferops.sglang.plugins.module_utils import _stage  # pylint: disable=import-outside-toplevel
    return _stage


def make_weights(path, total_bytes, shards=4, block=64 << 20):
    """Shards of one uint8 tensor each, ``total_bytes`` in all (random blocks repeated), with an index and a
    config.json. Returns the shard paths."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as handle:
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, handle)
    data = os.urandom(block)
    names, weight_map = [], {}
    for number in range(shards):
        name = SHARD_PREFIX % (number + 1, shards)
        size = total_bytes // shards
        header = json.dumps({"w%d" % number: {"dtype": "U8", "shape": [size], "data_offsets": [0, size]}}).encode()
        target = os.path.join(path, name)
        if not (os.path.exists(target) and os.path.getsize(target) == 8 + len(header) + size):
            with open(target, "wb") as handle:
                handle.write(struct.pack("<Q", len(header)) + header)
                left = size
                while left:
                    handle.write(data[:min(left, block)])
                    left -= min(left, block)
        names.append(target)
        weight_map["w%d" % number] = name
    with open(os.path.join(path, "model.safetensors.index.json"), "w") as handle:
        json.dump({"metadata": {"total_size": total_bytes}, "weight_map": weight_map}, handle)
    return names


def evict(paths):
    """Drop the pages of ``paths`` (the benchmark's own files) from the page cache."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def health(port, timeout=2.0):
    try:
        return urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=timeout).status == 200
    except OSError:
        return False


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def start_double(tmp, model, port, load_weights):
    env = dict(os.environ, PYTHONPATH=DOUBLE, SGLANG_DOUBLE_REQUIRE_TOOLS="0",
               SGLANG_DOUBLE_STATE_DIR=os.path.join(tmp, "state"), SGLANG_DOUBLE_GPU_DIR=os.path.join(tmp, "gpu"),
               SGLANG_DOUBLE_LOAD_SECONDS="0.2", SGLANG_DOUBLE_WARMUP_SECONDS="0.2", SGLANG_DOUBLE_HEALTH_DELAY="0.01",
               SGLANG_DOUBLE_DRAIN_SECONDS="1", SGLANG_DOUBLE_LOAD_WEIGHTS="1" if load_weights else "0",
               SGLANG_DOUBLE_LOAD_TO_GPU=os.environ.get("SGLANG_DOUBLE_LOAD_TO_GPU", "auto"))
    return subprocess.Popen([sys.executable, "-m", "sglang.launch_server", "--model-path", model, "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except OSError:
        return False


def _wait(predicate, timeout, interval=0.01):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return time.time()
        time.sleep(interval)
    raise RuntimeError("timed out after %.0f s" % timeout)


def cutover(tmp, model, before_stop=None, timeout=300):
    """One cutover. Returns {'window', 'stop_release', 'load', 'gate'} (seconds) and ``staged`` (before_stop's
    result)."""
    old_port, new_port = free_port(), free_port()
    old = start_double(tmp, model, old_port, load_weights=False)
    new = None
    try:
        _wait(lambda: health(old_port), 60, 0.05)
        staged = before_stop() if before_stop else None
        if not health(old_port):
            raise RuntimeError("the old server stopped answering before its stop")
        last_answer = time.time()
        os.killpg(old.pid, signal.SIGTERM)
        old.wait(timeout=30)
        _wait(lambda: not _group_alive(old.pid), 30)
        started = time.time()
        new = start_double(tmp, model, new_port, load_weights=True)
        port_at = _wait(lambda: port_open(new_port) or new.poll() is not None, timeout, 0.01)
        first_answer = _wait(lambda: health(new_port) or new.poll() is not None, timeout, 0.01)
        if new.poll() is not None:
            raise RuntimeError("the new server exited with %s" % new.returncode)
        return {"window": first_answer - last_answer, "stop_release": started - last_answer, "load": port_at - started,
                "gate": first_answer - port_at, "staged": staged}
    finally:
        for proc in (old, new):
            if proc is not None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()


def measure(runs=3, gib=2.0, directory=None, collection=REPO):
    """``runs`` cutovers each way (cold, staged, warm; the order rotates). Returns {'gib', 'runs': {way: [cutover
    results]}, 'median': {way: window s}, 'staged_over_floor', 'cold_over_floor'}."""
    stage = _stage_module(collection)
    own = directory is None
    base = directory or tempfile.mkdtemp(prefix="inferops-bench-stage-", dir="/var/tmp")
    tmp = tempfile.mkdtemp(prefix="inferops-bench-stage-run-")
    model = os.path.join(base, "model")
    try:
        files = make_weights(model, int(gib * (1 << 30)))
        total = sum(os.path.getsize(p) for p in files)
        results = {"cold": [], "staged": [], "warm": []}

        def cold():
            evict(files)
            return cutover(tmp, model)

        def staged():
            evict(files)
            return cutover(tmp, model, before_stop=lambda: stage.stage([model], mode="fit", margin=2 << 30)["summary"])

        def warm():
            stage.read_into_cache(files)
            resident = sum(stage.resident_bytes(p) for p in files)
            result = cutover(tmp, model)
            result["resident_before"] = resident
            return result

        ways = [("cold", cold), ("staged", staged), ("warm", warm)]
        for number in range(runs):
            for name, way in ways[number % 3:] + ways[:number % 3]:
                result = way()
                results[name].append(result)
                print("(g) run %d %-6s window %.2f s = stop+release %.2f + load %.2f + gate %.2f%s" % (
                    number + 1, name, result["window"], result["stop_release"], result["load"], result["gate"],
                    "; staged %.2f GiB in %.2f s (%.2f GB/s), resident %.2f -> %.2f GiB" % (
                        result["staged"]["read_bytes"] / 2.0 ** 30, result["staged"]["seconds"], result["staged"]["gb_per_s"],
                        result["staged"]["resident_before"] / 2.0 ** 30, result["staged"]["resident_after"] / 2.0 ** 30)
                    if result.get("staged") else ""), file=sys.stderr, flush=True)
        median = {name: statistics.median(r["window"] for r in rs) for name, rs in results.items()}
        return {"gib": total / 2.0 ** 30, "runs": results, "median": median,
                "staged_over_floor": median["staged"] / median["warm"], "cold_over_floor": median["cold"] / median["warm"]}
    finally:
        import shutil  # pylint: disable=import-outside-toplevel
        shutil.rmtree(tmp, ignore_errors=True)
        if own:
            shutil.rmtree(base, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", help="where the weight directory goes (kept; default a temporary one in /var/tmp)")
    args = ap.parse_args()
    fig = measure(args.runs, args.gib, args.dir)
    for name in ("cold", "staged", "warm"):
        print("%-6s median window %.2f s" % (name, fig["median"][name]))
    print("staged / floor %.2f (goal <= 1.5); cold / floor %.2f" % (fig["staged_over_floor"], fig["cold_over_floor"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
