"""Verify the operator playbooks on the fleet scenario: status, restart and rollback (issue 13).

They run after test_fleet.py (which leaves the canary fleet-w3 on mem-fraction-static 0.83 and the others on 0.85),
each as an operator would: ``ansible-playbook inferops.sglang.<name> -i <molecule inventory>`` with the collection
from ANSIBLE_COLLECTIONS_PATH.
"""

import json
import os
import re
import subprocess

from test_fleet import (INVENTORY, REPO, ROUTER, SERVERS, SUMMARY_DIR, WORKERS, flag, main_argv, main_pid,
                        router_workers, sh, started_at)
from containers import start_load, stop_load

KNOWN_GOOD = "/var/lib/inferops-sglang/known-good"
HISTORY = "/var/lib/inferops-sglang/history"
COLUMNS = ["host", "model", "tp x pp x dp", "sglang", "health", "router", "inventory", "known-good age"]
RECORD = "/root/production_v2.md"
# The record's lines that describe the deployed service beyond its command line (boot, user and caches, sandbox,
# the environment file's names, the CUDA/NCCL table's rows).
SERVICE_LINES = ("- Start at boot:", "- Runs as:", "- Sandbox:", "- Variables of the server's own environment file:", "| `")


def playbook(name, *args, timeout=900):
    proc = subprocess.run(
        ["ansible-playbook", "-i", INVENTORY, "inferops.sglang.%s" % name] + list(args),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, timeout=timeout, check=False,
        env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
                 MOLECULE_EPHEMERAL_DIRECTORY=os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]),
    )
    return proc.returncode, proc.stdout


def recap(out):
    """host -> {ok, changed, failed, ...} from the PLAY RECAP."""
    counts = {}
    for line in out[out.rindex("PLAY RECAP"):].splitlines()[1:]:
        match = re.match(r"^(\S+)\s+:\s+(ok=.*)$", line)
        if match:
            counts[match.group(1)] = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", match.group(2)))
    return counts


def status_table(out):
    """The lines of the table the status playbook printed, as plain text (not a JSON list): from its title line to the
    line before the task's result."""
    starts = [i for i, line in enumerate(out.splitlines()) if line.startswith("fleet sglang_servers: ")]
    assert len(starts) == 1, out[-3000:]
    lines = out.splitlines()[starts[0]:]
    end = next(i for i, line in enumerate(lines) if not line.strip() or line.startswith(("ok:", "changed:", "skipping:")))
    assert '"fleet sglang_servers: ' not in out, "the table is printed inside a JSON list"
    return lines[:end]


def table_rows(lines):
    header = re.split(r"\s{2,}", lines[1])
    assert header == COLUMNS, lines
    assert set(lines[2].replace(" ", "")) == {"-"}, lines
    return dict((cells[0], dict(zip(COLUMNS, cells))) for cells in (re.split(r"\s{2,}", line) for line in lines[3:]))


def argv_of(name):
    """The running server's argv (main_argv ends with the empty word after the last NUL)."""
    argv = main_argv(name)
    return argv[:-1] if argv and argv[-1] == "" else argv


def server_args(name):
    """The running server's own arguments (after the module), as the facts read them."""
    argv = argv_of(name)
    return argv[argv.index("sglang.launch_server") + 1:] if "sglang.launch_server" in argv else argv


def manifest(name, path=KNOWN_GOOD):
    return json.loads(sh(name, "cat %s/manifest.json" % path))


def history(name):
    return sorted(sh(name, "ls %s 2>/dev/null || true" % HISTORY).split())


def service_lines(name):
    """The record's service lines, and whether the record is of a healthy outcome (a rolled-back host's record
    describes the configuration that failed, e.g. with the variable that made it fail)."""
    # Up to the hand-started server a first cutover replaced (a later record has none).
    text = sh(name, "cat %s" % RECORD).split("## Hand-started server replaced")[0]
    return [line for line in text.splitlines() if line.startswith(SERVICE_LINES)], "- Outcome: healthy" in text


def assert_serving():
    workers = router_workers()
    for name in WORKERS + ["fleet-r0"]:
        assert workers.get("http://%s:30000" % name) is True, workers
    assert "http://fleet-r1:30000" not in workers
    for name in SERVERS:
        assert sh(name, "systemctl is-active sglang.service").strip() == "active"


def test_status_prints_one_table_and_changes_nothing():
    """status.yml: one table (host, version, digest, health, router, known-good age), changed=0, --check too."""
    pids = dict((name, main_pid(name)) for name in SERVERS)
    rc, out = playbook("status")
    assert rc == 0, out[-3000:]
    lines = status_table(out)
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "status-table.txt"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    assert lines[0].startswith("fleet sglang_servers: 6 servers, "), lines
    rows = table_rows(lines)
    assert sorted(rows) == sorted(SERVERS), lines
    version = sh("fleet-w1", "/root/ml-env/bin/python3 -c \"import importlib.metadata as m; print(m.version('sglang'))\"").strip()
    args = dict((name, server_args(name)) for name in SERVERS)
    for name, row in rows.items():
        assert row["sglang"] == version, row
        # The two-node replica runs tp 16 over fleet-r0 and fleet-r1 (8 GPUs each).
        # fleet-w4 runs two DP ranks of tp 4.
        tp = {"fleet-r0": "16x1x1", "fleet-r1": "16x1x1", "fleet-w4": "4x1x2"}.get(name, "8x1x1")
        assert row["model"] == "/shared/kimi-k2.5-int4" and row["tp x pp x dp"] == tp, row
        assert row["health"] == "healthy", row
        assert re.match(r"^\d+[smhd]( \d+[smh])?$", row["known-good age"]), row
        assert row["router"] == ("not routed (node rank 1)" if name == "fleet-r1" else "in, healthy"), row
    # Issue 30: test_fleet.py left the canary on 0.83 (its rollout stopped), the inventory says 0.85.
    assert rows["fleet-w3"]["inventory"] == "inventory differs: mem-fraction-static 0.83 -> 0.85", rows["fleet-w3"]
    assert rows["fleet-w1"]["inventory"] == "in line with the inventory", rows["fleet-w1"]
    # The same table as text and the rows as JSON beside it, on the controller.
    summary_dir = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "fleet-summary")
    assert open(os.path.join(summary_dir, "status-latest.txt")).read().splitlines()[1:] == lines[1:]
    saved = json.load(open(os.path.join(summary_dir, "status-latest.json")))
    assert sorted(row["host"] for row in saved["rows"]) == sorted(SERVERS), saved
    assert {row["host"]: row["args_digest"] for row in saved["rows"]}["fleet-w1"] != "-", saved
    counts = recap(out)
    assert all(c["changed"] == 0 and c["failed"] == 0 for c in counts.values()), counts

    rc, out = playbook("status", "--check")
    assert rc == 0, out[-3000:]
    assert sorted(table_rows(status_table(out))) == sorted(SERVERS)
    rc, out = playbook("status", "--limit", "fleet-w3")
    assert rc == 0, out[-3000:]
    assert sorted(table_rows(status_table(out))) == ["fleet-w3"]
    assert all(c["changed"] == 0 for c in recap(out).values()), recap(out)
    assert dict((name, main_pid(name)) for name in SERVERS) == pids


def test_restart_rolls_every_server_canary_first():
    """restart.yml: every server restarted (new pid) through the router and the gate, canary first, no change."""
    before = dict((name, main_pid(name)) for name in SERVERS)
    argv_before = dict((name, server_args(name)) for name in SERVERS)
    history_before = dict((name, history(name)) for name in SERVERS)
    records_before = dict((name, service_lines(name)) for name in SERVERS)
    start_load(ROUTER)
    rc, out = playbook("restart")
    load = stop_load(ROUTER)
    assert rc == 0, out[-3000:]
    after = dict((name, main_pid(name)) for name in SERVERS)
    assert all(after[name] != before[name] for name in SERVERS), (before, after)
    assert dict((name, server_args(name)) for name in SERVERS) == argv_before
    # Nothing new became known-good (a restart is no configuration change).
    assert dict((name, history(name)) for name in SERVERS) == history_before
    # The record the restart wrote describes the service as fully as the one site.yml wrote (kept in the manifest):
    # the same lines where that one was of a healthy outcome; on every host boot, sandbox and the CUDA/NCCL values.
    for name in SERVERS:
        lines, healthy = service_lines(name)
        assert healthy, lines
        assert "- Start at boot: enabled (systemd)" in lines and "- Sandbox: none" not in lines, (name, lines)
        assert any(line.startswith("| `NCCL_") for line in lines), (name, lines)
        if records_before[name][1]:
            assert lines == records_before[name][0], (name, records_before[name][0])
    assert [name for name in SERVERS if records_before[name][1]], records_before
    assert_serving()
    latest = json.load(open(os.path.join(SUMMARY_DIR, "latest.json")))
    assert latest["status"] == "complete", latest
    assert latest["plan"]["batches"][0] == ["fleet-w3"]
    assert latest["kind"] == "restart" and latest["title"] == "SGLang fleet restart", latest
    assert "# SGLang fleet restart " in out and "| restarted |" in out and "| deployed |" not in out, out[-3000:]
    assert "What happened: restart of an unchanged server." in sh("fleet-w1", "cat %s" % RECORD)
    for row in latest["hosts"]:
        assert row["action"] == "restart" and row["result"] == "deployed" and row["shown"] == "restarted", row
        assert row["time_to_healthy_s"] > 0, row
        assert row["args_diff"]["changed"] == {} and row["args_diff"]["added"] == {}, row
    starts = dict((name, started_at(name)) for name in SERVERS)
    assert all(starts["fleet-w3"] <= starts[n] for n in SERVERS), starts
    assert load["failed"] == 0, load["failures"]
    assert load["ok"] >= 20, load


def test_rollback_to_an_unknown_entry_changes_nothing():
    """rollback.yml with an entry that does not exist: fails before anything changes, listing the entries."""
    pid = main_pid("fleet-w2")
    entries = history("fleet-w2")
    rc, out = playbook("rollback", "--limit", "fleet-w2", "-e", "inferops_sglang_rollback_to=20200101T000000000000Z")
    assert rc != 0, out[-3000:]
    text = " ".join(out.split())
    assert "There is no known-good history entry '20200101T000000000000Z'" in text, out[-3000:]
    assert "available: %s." % ", ".join(["current"] + sorted(entries, reverse=True)) in text, out[-3000:]
    assert main_pid("fleet-w2") == pid
    assert router_workers().get("http://fleet-w2:30000") is True


def test_rollback_to_the_current_known_good():
    """rollback.yml without an entry: the current known-good files back (a local edit undone), restarted, gated."""
    name = "fleet-w3"
    good = manifest(name)
    sh(name, "echo SGLANG_OPERATOR_EDIT=1 >> /etc/sglang/sglang.env")
    pid = main_pid(name)
    start_load(ROUTER)
    rc, out = playbook("rollback", "--limit", name)
    load = stop_load(ROUTER)
    assert rc == 0, out[-3000:]
    assert main_pid(name) != pid
    assert "SGLANG_OPERATOR_EDIT" not in sh(name, "cat /etc/sglang/sglang.env")
    assert "SGLANG_OPERATOR_EDIT" not in sh(name, "tr '\\0' '\\n' < /proc/%d/environ" % main_pid(name))
    assert argv_of(name) == good["command"]
    assert manifest(name)["saved_at"] == good["saved_at"]
    assert_serving()
    latest = json.load(open(os.path.join(SUMMARY_DIR, "latest.json")))
    assert [row["host"] for row in latest["hosts"]] == [name] and latest["hosts"][0]["result"] == "deployed"
    assert load["failed"] == 0, load["failures"]


def test_rollback_to_a_history_entry():
    """rollback.yml -e inferops_sglang_rollback_to=<entry>: that configuration runs and becomes the known-good one."""
    name = "fleet-w2"
    entries = history(name)
    assert entries, "no history on %s" % name
    entry = entries[0]
    wanted = manifest(name, "%s/%s" % (HISTORY, entry))
    current = manifest(name)
    assert flag(wanted["command"], "--mem-fraction-static") != flag(current["command"], "--mem-fraction-static")
    pid = main_pid(name)
    workers = router_workers()
    # Issue 30: the status playbook's history view lists the entries to choose from, newest first, each with its
    # action, version and arguments; it changes nothing.
    rc, out = playbook("status", "--limit", name, "-e", "inferops_sglang_status_view=history")
    assert rc == 0, out[-3000:]
    lines = out.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("known-good configurations of %s " % name)))
    listed = [line.split()[0] for line in lines[start + 3:start + 4 + len(entries)]]
    assert listed == ["current"] + sorted(entries, reverse=True), lines[start:start + 10]
    assert "8x1x1" in lines[start + 3] and all(c["changed"] == 0 for c in recap(out).values()), lines[start:start + 10]
    # --check --diff first: says what it would do, changes nothing (no restore, no restart, no router step).
    rc, out = playbook("rollback", "--limit", name, "-e", "inferops_sglang_rollback_to=%s" % entry, "--check", "--diff")
    assert rc == 0, out[-3000:]
    text = " ".join(out.split())
    assert "sglang.service (systemd): would restart" in text, out[-3000:]
    assert "restore the known-good configuration %s" % entry in text, out[-3000:]
    assert "keep history entry %s as the known-good configuration" % entry in text, out[-3000:]
    assert '"mem-fraction-static": {' in out, out[-3000:]
    assert all(c["changed"] == 0 and c["failed"] == 0 for c in recap(out).values()), recap(out)
    assert main_pid(name) == pid and history(name) == entries and manifest(name) == current
    assert router_workers() == workers
    start_load(ROUTER)
    rc, out = playbook("rollback", "--limit", name, "-e", "inferops_sglang_rollback_to=%s" % entry)
    load = stop_load(ROUTER)
    assert rc == 0, out[-3000:]
    assert main_pid(name) != pid
    assert argv_of(name) == wanted["command"]
    now_good = manifest(name)
    assert now_good["command"] == wanted["command"] and now_good["saved_at"] > current["saved_at"]
    # The history view will call this save "rollback to ENTRY".
    assert now_good.get("restored_from") == entry, now_good
    # The configuration it replaced went to history.
    assert len(history(name)) == min(len(entries) + 1, 5)
    assert_serving()
    latest = json.load(open(os.path.join(SUMMARY_DIR, "latest.json")))
    row = latest["hosts"][0]
    assert row["host"] == name and row["result"] == "deployed", row
    # Issue 30: the summary and the record say it was a rollback to that entry, and what changed.
    assert latest["kind"] == "rollback" and row["shown"] == "rolled back to entry %s" % entry, row
    change = "mem-fraction-static %s -> %s" % (flag(current["command"], "--mem-fraction-static"),
                                               flag(wanted["command"], "--mem-fraction-static"))
    assert "--" + change in row["changes"], row["changes"]
    record = sh(name, "cat %s" % RECORD)
    assert "What happened: rollback to entry %s." % entry in record and "\n- %s\n" % change in record, record[:1500]
    assert row["args_diff"]["changed"]["mem-fraction-static"] == {
        "old": flag(current["command"], "--mem-fraction-static"), "new": flag(wanted["command"], "--mem-fraction-static")}
    assert load["failed"] == 0, load["failures"]
