"""Rollout of N workers behind the real SGLang router, smg (prints figures; asserts nothing).

Starts N+1 systemd containers (the molecule base image, same options as the scenarios) on a docker network:
one router, N workers with the hand-started SGLang test double (the reference command line). Prepares them with
the fleet scenario's prepare.yml (the router role puts smg 1.13.0, --dp-aware, in front of the hand-started
servers; the last worker runs two DP ranks of tp 4, listed by smg as url@0 and url@1), then
runs the scenario's converge.yml: a bounded load generator sends chat completions through the router while
site.yml rolls the changed configuration across the workers (canary, then 25 % per batch).

Prints: the plan (batches), wall time of the converge and of the rollout (from the fleet summary), the average
time per batch, the lower bound "batches x the double's load time", time to healthy per host, and the load
generator's sent / ok / failed counts and latency percentiles.

Run (as root, after scripts/setup.sh and a built collection, e.g. STAGES=build bash scripts/test.sh):
    .venv/bin/python benchmarks/bench_fleet.py [--workers 16] [--keep]
Containers are named inferops-bench-*; they are removed at the end unless --keep.
"""

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SCENARIO = os.path.join(REPO, "extensions", "molecule", "fleet")
IMAGE = "inferops-sglang/debian12-systemd:latest"
NETWORK = "inferops-bench"
LOAD_SECONDS = 3.0   # SGLANG_DOUBLE_LOAD_SECONDS in the scenario's group_vars


def docker(*args, check=True):
    return subprocess.run(["docker"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=check)


def start_containers(names):
    docker("network", "create", NETWORK, check=False)
    for name in names:
        docker("rm", "-f", name, check=False)
        docker("run", "-d", "--name", name, "--hostname", name, "--network", NETWORK,
               "--cap-add", "SYS_ADMIN", "--security-opt", "seccomp=unconfined", "--cgroupns=host",
               "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run", "--tmpfs", "/tmp",
               IMAGE, "/lib/systemd/systemd")
    for name in names:
        for dummy in range(100):
            if docker("exec", name, "systemctl", "is-system-running", check=False).stdout.strip() in (
                    "running", "degraded"):
                break
            time.sleep(0.3)


def remove_containers(names):
    for name in names:
        docker("rm", "-f", name, check=False)
    docker("network", "rm", NETWORK, check=False)


def write_inventory(tmp, router, workers, scenario=SCENARIO):
    inv = os.path.join(tmp, "inventory")
    os.makedirs(os.path.join(inv, "group_vars"))
    conn = {"ansible_connection": "community.docker.docker", "ansible_python_interpreter": "/usr/bin/python3"}
    hosts = {
        "sglang_routers": {"hosts": {router: conn}},
        "sglang_servers": {"hosts": dict((w, conn) for w in workers)},
    }
    with open(os.path.join(inv, "hosts.yml"), "w") as handle:
        json.dump(hosts, handle, indent=2)   # JSON is YAML
    shutil.copy(os.path.join(scenario, "inventory", "group_vars", "sglang_servers.yml"), os.path.join(inv, "group_vars"))
    # The scenario's settings (the router: version, wheels, policy, --dp-aware), with this fleet's rollout plan.
    with open(os.path.join(scenario, "inventory", "group_vars", "all.yml")) as handle:
        settings = yaml.safe_load(handle)
    settings.update(fleet_batches=["1", "25%"], fleet_canary=workers[0], fleet_summary_dir=os.path.join(tmp, "fleet-summary"))
    with open(os.path.join(inv, "group_vars", "all.yml"), "w") as handle:
        json.dump(settings, handle, indent=2)   # JSON is YAML
    # The last worker as the scenario's fleet-w4: two DP ranks of tp 4 (smg lists it by rank).
    os.makedirs(os.path.join(inv, "host_vars"))
    shutil.copy(os.path.join(scenario, "inventory", "host_vars", "fleet-w4.yml"),
                os.path.join(inv, "host_vars", workers[-1] + ".yml"))
    return inv


def playbook(inv, path, tmp, log_name, repo=REPO, collections=None):
    """Run ansible-playbook (profile_tasks on) with its output in tmp/log_name; returns (rc, wall seconds).
    ``collections``: the ANSIBLE_COLLECTIONS_PATH entry that holds inferops.sglang (default: repo's build/collections)."""
    env = dict(os.environ, ANSIBLE_FORKS="20", ANSIBLE_PIPELINING="1", ANSIBLE_NOCOLOR="1",
               ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_tasks",
               ANSIBLE_COLLECTIONS_PATH=os.pathsep.join([collections or os.path.join(repo, "build", "collections"),
                                                        os.environ.get("ANSIBLE_COLLECTIONS_PATH", "")]),
               INFEROPS_REPO=repo, MOLECULE_EPHEMERAL_DIRECTORY=tmp)
    started = time.time()
    with open(os.path.join(tmp, log_name), "w") as log:
        proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inv, path],
                              stdout=log, stderr=subprocess.STDOUT, env=env, check=False)
    return proc.returncode, time.time() - started


def rollout(n_workers, tmp, repo=REPO, collections=None, keep=False, say=print):
    """Start 1 router + n_workers containers, prepare them (fleet scenario's prepare.yml) and run its converge.yml
    (site.yml under load). Returns ``{'rc', 'prep_s', 'conv_s', 'summary' (the last fleet summary or None),
    'converge_log' (path), 'load' (the load generator's result or None), 'router'}``; removes the containers
    unless keep."""
    scenario = os.path.join(repo, "extensions", "molecule", "fleet")
    router = "inferops-bench-router"
    workers = ["inferops-bench-w%02d" % i for i in range(1, n_workers + 1)]
    names = [router] + workers
    result = {"rc": 1, "summary": None, "load": None, "router": router, "converge_log": os.path.join(tmp, "converge.log")}
    try:
        t0 = time.time()
        start_containers(names)
        inv = write_inventory(tmp, router, workers, scenario)
        say("containers up in %.0f s (1 router + %d workers); logs in %s" % (time.time() - t0, len(workers), tmp))
        rc, result["prep_s"] = playbook(inv, os.path.join(scenario, "prepare.yml"), tmp, "prepare.log", repo, collections)
        say("prepare (hand-started doubles, router role): rc %d, %.0f s" % (rc, result["prep_s"]))
        if rc:
            say(open(os.path.join(tmp, "prepare.log")).read()[-3000:])
            return result
        result["rc"], result["conv_s"] = playbook(inv, os.path.join(scenario, "converge.yml"), tmp, "converge.log", repo,
                                                  collections)
        say("converge (load generator + site.yml + collect): rc %d, %.0f s" % (result["rc"], result["conv_s"]))
        summaries = sorted(glob.glob(os.path.join(tmp, "fleet-summary", "fleet-summary-*.json")))
        if summaries:
            result["summary"] = json.load(open(summaries[-1]))
        got = docker("exec", router, "bash", "-c", "cat $(ls /root/loadgen-*.json | head -1)", check=False)
        if got.returncode == 0:
            result["load"] = json.loads(got.stdout)
        return result
    finally:
        if not keep:
            remove_containers(names)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="inferops-bench-fleet-")
    result = rollout(args.workers, tmp, keep=args.keep)
    summary = result["summary"]
    if not summary:
        print(open(result["converge_log"]).read()[-3000:])
        return 1
    batches = summary["plan"]["batches"]
    print()
    print("plan: %d batches of %s hosts" % (len(batches), [len(b) for b in batches]))
    print("rollout (plan to last summary, from the summary): %.1f s" % summary["wall_s"])
    floor = len(batches) * LOAD_SECONDS
    print("limit batches x load time: %d x %.0f s = %.0f s -> rollout / limit = %.1f x" % (
        len(batches), LOAD_SECONDS, floor, summary["wall_s"] / floor))
    per_batch = summary["wall_s"] / len(batches)
    print("per batch: %.1f s on average (the limit is %.0f s per batch)" % (per_batch, LOAD_SECONDS))
    tth = [h["time_to_healthy_s"] for h in summary["hosts"] if h.get("time_to_healthy_s")]
    print("time to healthy per host (s): min %.1f, median %.1f, max %.1f" % (min(tth), statistics.median(tth), max(tth)))
    print("results: %s" % summary["counts"])
    load = result["load"]
    if load:
        print("load through the router: sent %d, ok %d, FAILED %d; latency p50 %s ms, p99 %s ms, max %s ms; %.0f s" % (
            load["sent"], load["ok"], load["failed"], load["latency_ms"]["p50"], load["latency_ms"]["p99"],
            load["latency_ms"]["max"], load["finished"] - load["started"]))
        if load["failures"]:
            print("first failures: %s" % load["failures"][:5])
    return 0


if __name__ == "__main__":
    sys.exit(main())
