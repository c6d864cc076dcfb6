"""The example inventories plan as documented: canary first, replicas in one batch, per-host overrides."""

import json
import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def plan(inventory, *extra):
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", os.path.join(REPO, inventory),
         os.path.join(os.path.dirname(__file__), "fleet_plan.yml")] + list(extra),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120, check=False,
        env=dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
                 ANSIBLE_NOCOLOR="1", ANSIBLE_PYTHON_INTERPRETER=sys.executable))
    assert proc.returncode == 0, proc.stdout[-3000:]
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    hosts = data["plays"][0]["tasks"][-1]["hosts"]
    return next(result["msg"] for result in hosts.values() if "msg" in result)


def test_fleet_inventory():
    out = plan("inventory/fleet")
    p = out["plan"]
    # 9 servers (8 hosts + one two-host replica): canary, then 25 % = 2 servers per batch.
    assert p["batches"] == [["gpu-03"], ["gpu-01", "gpu-02"], ["gpu-04", "gpu-05"], ["gpu-06", "gpu-07"],
                            ["gpu-08", "gpu-big-0", "gpu-big-1"]]
    assert p["batch_sizes"] == [1, 2, 2, 2, 3]
    assert out["workers"] == ["http://gpu-%02d:30000" % i for i in range(1, 9)] + ["http://gpu-big-0:30000"]
    args = out["args"]
    assert args["gpu-05"]["mem-fraction-static"] == 0.80 and args["gpu-05"]["cuda-graph-max-bs"] == 64
    assert args["gpu-04"]["mem-fraction-static"] == 0.88 and args["gpu-04"]["tp"] == 8
    assert args["gpu-big-1"]["tp"] == 16 and args["gpu-big-1"]["model-path"] == "/shared/kimi-k2.5-int4"
    # Nothing ran yet: every host is "not started", in rollout order, with its batch.
    assert [(r["host"], r["batch"], r["result"]) for r in out["rows"]][:3] == [
        ("gpu-03", 1, "not started"), ("gpu-01", 2, "not started"), ("gpu-02", 2, "not started")]


def test_demo_inventory_is_a_fleet_of_one():
    p = plan("inventory/demo")["plan"]
    assert p["batches"] == [["sglang-demo"]]


def test_limit_narrows_the_plan():
    p = plan("inventory/fleet", "--limit", "gpu-05,gpu-06,gpu-07")["plan"]
    # The canary gpu-03 is not in the run: the first selected server goes first.
    assert p["batches"] == [["gpu-05"], ["gpu-06"], ["gpu-07"]]


def test_prometheus_targets_written_by_the_fleet_role(tmp_path):
    """fleet_prometheus_targets_dir (issue 30, item 5): sglang.json in Prometheus's file_sd format, the servers with
    enable-metrics (rank 0 of the replica only) and the router at its default metrics port."""
    targets_dir = tmp_path / "targets"
    plan("inventory/fleet", "-e", "fleet_prometheus_targets_dir=%s" % targets_dir,
         "-e", json.dumps({"service_server_args": {"model-path": "/shared/kimi-k2.5-int4", "enable-metrics": True}}))
    groups = json.loads((targets_dir / "sglang.json").read_text())
    workers = [g for g in groups if g["labels"]["role"] == "worker"]
    assert [g["targets"] for g in workers] == [["gpu-%02d:30000" % i] for i in range(1, 9)] + [["gpu-big-0:30000"]]
    assert workers[0]["labels"] == {"host": "gpu-01", "model": "/shared/kimi-k2.5-int4", "version": "unknown",
                                    "role": "worker"}
    assert groups[-1] == {"targets": ["router-01:29000"],
                          "labels": {"host": "router-01", "version": "1.13.0", "role": "router"}}
