"""Verify the fleet scenario: a rollout behind the real SGLang router with zero failed requests.

After converge (and idempotence) every server runs the new configuration under sglang.service. The last test
runs site.yml again with a new configuration that fails the gate on two servers of the second batch, the worker
fleet-w1 and node rank 0 of the two-host replica: the rollout must stop after that batch, both must roll back
(the replica on both nodes), the hosts of the third batch must keep the old configuration untouched, and the
load generator must see no failed request through the router.
"""

import glob
import json
import os
import subprocess

from containers import main_argv, main_pid, sh, start_load, started_at, stop_load

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
SUMMARY_DIR = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "fleet-summary")
ROUTER = "fleet-router"
WORKERS = ["fleet-w1", "fleet-w2", "fleet-w3", "fleet-w4"]
REPLICA = ["fleet-r0", "fleet-r1"]
SERVERS = WORKERS + REPLICA
UNIT = "sglang.service"
# Molecule lists the hosts of a group by name, so the inventory order is r0, r1, w1, w2, w3, w4: the canary
# w3, then 50 % of the 5 servers (the replica is one): the replica and w1, then w2 and w4.
PLAN = [["fleet-w3"], ["fleet-r0", "fleet-r1", "fleet-w1"], ["fleet-w2", "fleet-w4"]]


def flag(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


def router_worker_ids():
    """{worker url as the router lists it: healthy}; smg --dp-aware lists a dp 2 server as url@0 and url@1."""
    out = sh(ROUTER, "python3 -c \"import urllib.request;print(urllib.request.urlopen("
                     "'http://127.0.0.1:30000/workers', timeout=10).read().decode())\"")
    return {w["url"]: w["is_healthy"] for w in json.loads(out)["workers"]}


def router_workers():
    """{server url: healthy}, a server with DP ranks healthy when every rank is."""
    workers = {}
    for url, healthy in router_worker_ids().items():
        server = url.split("@")[0]
        workers[server] = workers.get(server, True) and healthy
    return workers


def loadgen_results():
    names = sorted(sh(ROUTER, "ls /root/ | grep '^loadgen-.*json$' || true").split())
    return [json.loads(sh(ROUTER, "cat /root/%s" % name)) for name in names]


def summaries():
    return [json.load(open(path)) for path in sorted(glob.glob(os.path.join(SUMMARY_DIR, "fleet-summary-*.json")))]


def first_rollout():
    """The summary of the first converge (the idempotence run writes an all-unchanged one after it)."""
    done = [s for s in summaries() if any(h["result"] == "deployed" for h in s["hosts"])]
    assert done, os.listdir(SUMMARY_DIR)
    return done[0]


def test_every_server_runs_the_new_configuration():
    for name in SERVERS:
        assert sh(name, "systemctl is-active %s" % UNIT).strip() == "active"
        assert sh(name, "systemctl is-enabled %s" % UNIT).strip() == "enabled"
        argv = main_argv(name)
        assert flag(argv, "--mem-fraction-static") == "0.85", argv
        assert flag(argv, "--cuda-graph-max-bs") == "256", argv
        assert flag(argv, "--host") == "0.0.0.0", argv
    # No hand-started server is left anywhere.
    for name in SERVERS:
        pid = int(sh(name, "cat /root/handstarted.pid").strip())
        assert sh(name, "test -e /proc/%d && echo alive || echo gone" % pid).strip() == "gone"


def test_replica_has_ranks_and_only_rank0_is_behind_the_router():
    for rank, name in enumerate(REPLICA):
        argv = main_argv(name)
        assert flag(argv, "--nnodes") == "2" and flag(argv, "--node-rank") == str(rank), argv
        assert flag(argv, "--dist-init-addr") == "fleet-r0:5000", argv
        assert flag(argv, "--tp") == "16", argv
    workers = router_workers()
    assert workers.get("http://fleet-r0:30000") is True, workers
    assert "http://fleet-r1:30000" not in workers
    rows = {row["host"]: row for row in first_rollout()["hosts"]}
    # The gate ran real chat completions on rank 0 only (rank 1 answers only a dummy /health).
    assert len(rows["fleet-r0"]["smoke_latencies"]) == 3 and rows["fleet-r0"]["node_rank"] == 0
    assert rows["fleet-r1"]["smoke_latencies"] == [] and rows["fleet-r1"]["node_rank"] == 1
    assert rows["fleet-r0"]["router"]["registered"] is True and rows["fleet-r1"]["router"] == {}


def test_dp_server_is_routed_by_rank_c43():
    """C43: with --dp-aware smg lists fleet-w4 (dp 2) by rank; after its drain and re-add both ranks are back, healthy,
    and the dp 1 servers keep their plain urls."""
    ids = router_worker_ids()
    assert sorted(u for u in ids if u.startswith("http://fleet-w4:")) == [
        "http://fleet-w4:30000@0", "http://fleet-w4:30000@1"], ids
    assert ids["http://fleet-w4:30000@0"] is True and ids["http://fleet-w4:30000@1"] is True, ids
    assert ids.get("http://fleet-w1:30000") is True, ids
    assert flag(main_argv("fleet-w4"), "--dp-size") == "2", main_argv("fleet-w4")
    row = {r["host"]: r for r in first_rollout()["hosts"]}["fleet-w4"]
    assert row["result"] == "deployed" and row["router"]["registered"] is True, row


def test_canary_first_then_batches_in_order():
    summary = first_rollout()
    assert summary["plan"]["batches"] == PLAN
    starts = {name: started_at(name) for name in SERVERS}
    assert all(starts["fleet-w3"] < starts[n] for n in SERVERS if n != "fleet-w3"), starts
    assert max(starts[n] for n in PLAN[1]) < min(starts[n] for n in PLAN[2]), starts


def test_zero_failed_requests_through_the_router_during_the_rollout():
    results = loadgen_results()
    assert len(results) >= 1
    first = results[0]
    assert first["running"] is False and first["finished_reason"] == "stop file"
    assert first["failed"] == 0, first["failures"]
    assert first["ok"] >= 100, first
    starts = [started_at(name) for name in SERVERS]
    # The load covered the whole rollout: it began before the first start and ended after the last.
    assert first["started"] < min(starts) and first["finished"] > max(starts), (first, starts)
    for later in results[1:]:
        assert later["failed"] == 0, later["failures"]
    assert all(router_workers().values())


def test_summary_is_complete():
    summary = first_rollout()
    assert summary["status"] == "complete" and summary["counts"]["deployed"] == 6
    assert [row["host"] for row in summary["hosts"]] == [h for batch in PLAN for h in batch]
    for row in summary["hosts"]:
        assert row["result"] == "deployed" and row["rolled_back"] is False, row
        assert row["time_to_healthy_s"] > 0, row
        assert row["batch"] == next(i for i, b in enumerate(PLAN, 1) if row["host"] in b)
        changed = row["args_diff"]["changed"]
        assert changed["mem-fraction-static"] == {"old": "0.88", "new": "0.85"}, row["args_diff"]
        assert changed["cuda-graph-max-bs"] == {"old": "128", "new": "256"}, row["args_diff"]
    markdown = open(os.path.join(SUMMARY_DIR, "fleet-summary-%s.md" % summary["run_id"])).read()
    for name in SERVERS:
        assert "| %s |" % name in markdown
    assert "--mem-fraction-static 0.88 -> 0.85" in markdown and "<br>" not in markdown
    assert markdown.startswith("# SGLang fleet rollout ") and summary["kind"] == "rollout"
    # Issue 30: the record of the flag change says what happened and what changed against the hand-started server.
    record = sh("fleet-w2", "cat /root/production_v2.md")
    assert "What happened: first adoption of the hand-started server." in record, record[:1500]
    assert "\n- mem-fraction-static 0.88 -> 0.85\n" in record and "\n- cuda-graph-max-bs 128 -> 256\n" in record, record[:1500]
    # The idempotence run wrote a complete summary with nothing changed.
    assert any(s["status"] == "complete" and s["counts"]["unchanged"] == 6 for s in summaries())


def test_failing_worker_stops_the_rollout_and_rolls_back(tmp_path):
    before_pids = {name: main_pid(name) for name in SERVERS}
    start_load(ROUTER)
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({
        "scenario_test_args": {"mem-fraction-static": 0.83},
        "scenario_test_env_by_host": {"fleet-w1": {"SGLANG_DOUBLE_FAIL": "never_healthy"},
                                      "fleet-r0": {"SGLANG_DOUBLE_FAIL": "never_healthy"}},
        "cutover_health_budget": 30,
        "cutover_health_request_timeout": 20,
    }))
    proc = subprocess.run(
        ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "site.yml"), "-e", "@%s" % extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, timeout=900, check=False,
        env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
                 MOLECULE_EPHEMERAL_DIRECTORY=os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]),
    )
    load = stop_load(ROUTER)
    out = proc.stdout
    assert proc.returncode != 0, out[-3000:]
    assert "The rollout stopped after batch 2" in out, out[-3000:]

    latest = json.load(open(os.path.join(SUMMARY_DIR, "latest.json")))
    rows = {row["host"]: row for row in latest["hosts"]}
    assert latest["status"] == "stopped" and latest["stopped_after_batch"] == 2, latest
    assert rows["fleet-w3"]["result"] == "deployed"
    for name in PLAN[1]:
        assert rows[name]["result"] == "rolled_back" and rows[name]["rolled_back"] is True, rows[name]
    assert "not ready" in rows["fleet-w1"]["failure"], rows["fleet-w1"]
    assert "not ready" in rows["fleet-r0"]["failure"], rows["fleet-r0"]
    # Rank 1 passed its own (dummy) gate and stopped at the barrier behind it, waiting for rank 0.
    assert "fleet-r0 of this replica (fleet-r0, fleet-r1) did not reach 'gate restart'" in rows["fleet-r1"]["failure"], \
        rows["fleet-r1"]
    for name in PLAN[2]:
        assert rows[name]["result"] == "not started"

    # The canary runs the new configuration; batch 2 is back on the old one, the replica on both nodes.
    assert flag(main_argv("fleet-w3"), "--mem-fraction-static") == "0.83"
    for name in PLAN[1]:
        argv = main_argv(name)
        assert flag(argv, "--mem-fraction-static") == "0.85", (name, argv)
        assert "SGLANG_DOUBLE_FAIL" not in sh(name, "cat /etc/sglang/sglang.env")
    for rank, name in enumerate(REPLICA):
        assert flag(main_argv(name), "--node-rank") == str(rank)
    # Hosts of the later batch were not touched: same process, old configuration.
    for name in PLAN[2]:
        assert main_pid(name) == before_pids[name]
        assert flag(main_argv(name), "--mem-fraction-static") == "0.85"
    # Everyone serves through the router again, the rolled-back worker included.
    workers = router_workers()
    for name in WORKERS + ["fleet-r0"]:
        assert workers.get("http://%s:30000" % name) is True, workers
    assert load["running"] is False and load["finished_reason"] == "stop file", load
    assert load["failed"] == 0, load["failures"]
    assert load["ok"] >= 50, load


def test_limit_to_one_rank_changes_nothing(tmp_path):
    """--limit with only node rank 0 of the replica: it stops at the pre-flight barrier, nothing changes."""
    before = {name: main_pid(name) for name in REPLICA}
    before_argv = main_argv("fleet-r0")
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"scenario_test_args": {"mem-fraction-static": 0.81}}))
    proc = subprocess.run(
        ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "site.yml"), "-e", "@%s" % extra,
         "--limit", "fleet-r0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, timeout=900, check=False,
        env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0"),
    )
    out = proc.stdout
    assert proc.returncode != 0, out[-3000:]
    assert "fleet-r1 of this replica (fleet-r0, fleet-r1) did not reach 'preflight'" in out, out[-3000:]
    assert {name: main_pid(name) for name in REPLICA} == before
    assert main_argv("fleet-r0") == before_argv
    latest = json.load(open(os.path.join(SUMMARY_DIR, "latest.json")))
    assert latest["plan"]["batches"] == [["fleet-r0"]]
    assert latest["hosts"][0]["result"] == "failed"
    # Issue 30: the failed pre-flight's row shows the change it attempted, not "none".
    assert latest["hosts"][0]["changes"] == ["--mem-fraction-static 0.85 -> 0.81"], latest["hosts"][0]
