"""The fleet summary also goes out as custom stats (ansible.builtin.set_stats), which AWX/AAP keep as the job's
artifacts: a real ansible-playbook with the default output and ANSIBLE_SHOW_CUSTOM_STATS=1 runs the fleet role's plan
and its batch_end over three local hosts in batches of one (item 6 of issue 13). The cutover is stood in for by the
fact it hands to the summary (inferops_sglang_cutover)."""

import json
import os
import subprocess
import sys


def rollout(tmp_path, results):
    """Plan three hosts (batches of one), give each the cutover result ``results[host]``, end each batch; (rc, out)."""
    hosts = dict(("gpu-%02d" % number, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable})
                 for number in (1, 2, 3))
    (tmp_path / "inventory.json").write_text(json.dumps({"all": {"children": {"sglang_servers": {"hosts": hosts}}}}))
    book = [
        {"name": "Plan", "hosts": "sglang_servers", "gather_facts": False,
         "tasks": [{"name": "Plan", "ansible.builtin.import_role": {"name": "inferops.sglang.fleet"}}]},
        {"name": "Roll out", "hosts": "sglang_rollout", "gather_facts": False,
         "serial": "{{ hostvars['localhost']['inferops_sglang_fleet']['plan']['batch_sizes'] }}",
         "tasks": [
             {"name": "Stand in for the cutover", "ansible.builtin.set_fact": {
                 "inferops_sglang_cutover": "{{ results[inventory_hostname] }}"}},
             {"name": "End the batch",
              "ansible.builtin.import_role": {"name": "inferops.sglang.fleet", "tasks_from": "batch_end"}},
         ]},
    ]
    (tmp_path / "play.yml").write_text(json.dumps(book))
    extra = {"results": results, "fleet_batches": ["1"], "fleet_summary_dir": str(tmp_path / "summary")}
    (tmp_path / "vars.json").write_text(json.dumps(extra))
    env = dict((name, value) for name, value in os.environ.items()
               if not name.startswith("ANSIBLE_") or name == "ANSIBLE_COLLECTIONS_PATH")
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_SHOW_CUSTOM_STATS="1")
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp_path / "inventory.json"),
         "-e", "@%s" % (tmp_path / "vars.json"), str(tmp_path / "play.yml")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False, env=env)
    return proc.returncode, proc.stdout


def custom_stats(out):
    """The run-wide custom stats the default callback prints after CUSTOM STATS (one JSON document on one line)."""
    assert "CUSTOM STATS" in out, out[-3000:]
    line = next(line for line in out.splitlines() if line.startswith("\tRUN: "))
    return json.loads(line[len("\tRUN: "):])


def deployed(seconds):
    return {"result": "deployed", "time_to_healthy_s": seconds, "rolled_back": False, "node_rank": 0}


def test_the_whole_rollout_is_in_the_custom_stats_once(tmp_path):
    """Item 6: after three batches the stats hold the last batch's summary of every host, not three copies."""
    rc, out = rollout(tmp_path, {"gpu-01": deployed(12.5), "gpu-02": deployed(11.0), "gpu-03": deployed(13.1)})
    assert rc == 0, out[-3000:]
    stats = custom_stats(out)
    assert list(stats) == ["inferops_sglang_fleet_summary"]
    summary = stats["inferops_sglang_fleet_summary"]
    with open(str(tmp_path / "summary" / "latest.json")) as handle:
        assert summary == json.load(handle)
    assert summary["status"] == "complete"
    assert summary["counts"]["deployed"] == 3 and summary["counts"]["not_started"] == 0
    assert [(row["host"], row["batch"], row["result"], row["time_to_healthy_s"]) for row in summary["hosts"]] == [
        ("gpu-01", 1, "deployed", 12.5), ("gpu-02", 2, "deployed", 11.0), ("gpu-03", 3, "deployed", 13.1)]


def test_a_stopped_rollout_is_in_the_custom_stats(tmp_path):
    """Item 6: a host that rolled back stops the rollout; the stats say so and keep the host not started."""
    rolled_back = {"result": "rolled_back", "rolled_back": True, "failure": "the unit failed", "node_rank": 0}
    rc, out = rollout(tmp_path, {"gpu-01": deployed(12.5), "gpu-02": rolled_back, "gpu-03": deployed(13.1)})
    assert rc != 0, out[-3000:]
    summary = custom_stats(out)["inferops_sglang_fleet_summary"]
    assert summary["status"] == "stopped" and summary["stopped_after_batch"] == 2
    assert [(row["host"], row["result"]) for row in summary["hosts"]] == [
        ("gpu-01", "deployed"), ("gpu-02", "rolled_back"), ("gpu-03", "not started")]


def test_each_hosts_sglang_version_change_is_in_the_summary(tmp_path):
    """Issue 15: the SGLang version change of each host (against its previous known-good configuration) is a column
    of the summary, in the custom stats, the JSON and the Markdown."""
    upgraded = dict(deployed(12.5), versions={"sglang": "0.5.10"}, previous_versions={"sglang": "0.5.9"})
    same = dict(deployed(11.0), versions={"sglang": "0.5.9"}, previous_versions={"sglang": "0.5.9"})
    rc, out = rollout(tmp_path, {"gpu-01": upgraded, "gpu-02": same, "gpu-03": deployed(13.1)})
    assert rc == 0, out[-3000:]
    summary = custom_stats(out)["inferops_sglang_fleet_summary"]
    assert [(row["host"], row["sglang_version"]) for row in summary["hosts"]] == [
        ("gpu-01", "0.5.9 -> 0.5.10"), ("gpu-02", "0.5.9"), ("gpu-03", "-")]
    with open(str(tmp_path / "summary" / "latest.md")) as handle:
        markdown = handle.read()
    assert "| host | batch | result | SGLang |" in markdown
    assert "| gpu-01 | 1 | deployed | 0.5.9 -> 0.5.10 |" in markdown
    assert "| gpu-02 | 2 | deployed | 0.5.9 |" in markdown
