"""Verify the upgrade scenario: an SGLang version is configuration, installed side by side, gated, reversible.

After converge the three servers (upgrade-1 the canary, upgrade-2 and upgrade-3 the batch) run the adopted
hand-started configuration on the double's 0.5.9 in /root/ml-env. The tests run site.yml again, in file order:

1. 0.5.10 with --cuda-graph-max-bs still in the arguments: the new venv's parser rejects the flag in pre-flight,
   every old server keeps serving untouched (same pid, same unit).
2. 0.5.10 without that flag: the canary, then the batch, move to /opt/sglang/venvs/0.5.10; /root/ml-env is left
   as it was; SGLANG_ENABLE_SPEC_V2 (not read by 0.5.10) is not in the unit's environment.
3. 0.5.10 again with another companion: refused in pre-flight (an installed venv is never changed).
4. 0.5.10.post1, whose server never gets healthy: the canary's gate fails, the canary is back on the 0.5.10 venv
   (still on disk; no package is installed after the failed gate), the batch is not started.
5. service_venvs_keep 0: the venvs of other versions are pruned (0.5.10.post1, on the canary), never the running and
   known-good one.
"""

import json
import os
import re

from containers import main_argv, main_pid, playbook, sh, started_at

CANARY = "upgrade-1"
BATCH = ["upgrade-2", "upgrade-3"]
SERVERS = [CANARY] + BATCH
UNIT = "sglang.service"
SUMMARY_DIR = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "fleet-summary")
ADOPTED_PYTHON = "/root/ml-env/bin/python3"
VENVS = "/opt/sglang/venvs"
# The reference arguments (inventory/group_vars) without the flag the double's 0.5.10 dropped.
ARGS_0510 = {
    "model-path": "/shared/kimi-k2.5-int4", "tp-size": 8, "trust-remote-code": True,
    "disable-custom-all-reduce": True, "attention-backend": "flashinfer", "enable-flashinfer-allreduce-fusion": True,
    "speculative-algorithm": "EAGLE3", "speculative-draft-model-path": "/data/eagle3/output_100k_sglang/4",
    "speculative-num-steps": 2, "speculative-eagle-topk": 1, "mem-fraction-static": 0.88,
}
WHEELHOUSE = {"service_sglang_pip_find_links": ["/opt/wheelhouse"], "service_sglang_pip_no_index": True}


def version(requirement, **more):
    extra = dict(WHEELHOUSE, service_sglang_version=requirement)
    extra.update(more)
    return extra


def server_version(name):
    """The version the running server reports (GET /server_info, as SGLang's own endpoint)."""
    out = sh(name, "python3 -c \"import urllib.request;print(urllib.request.urlopen("
                   "'http://127.0.0.1:30000/server_info', timeout=30).read().decode())\"")
    return json.loads(out)["version"]


def unit_python(name):
    """The interpreter of the unit's ExecStart (first word after ExecStart=)."""
    text = sh(name, "cat /etc/systemd/system/%s" % UNIT)
    return re.search(r"^ExecStart=(\S+)", text, re.M).group(1)


def tree_digest(name, path):
    """One checksum over every file under path (names and contents): whether a venv was touched."""
    return sh(name, "cd %s && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum" % path).split()[0]


def latest_summary():
    with open(os.path.join(SUMMARY_DIR, "latest.json")) as handle:
        return json.load(handle)


def test_adopted_servers_run_the_users_venv():
    for name in SERVERS:
        assert unit_python(name) == ADOPTED_PYTHON, name
        assert server_version(name) == "0.5.9", name
        manifest = json.loads(sh(name, "cat /var/lib/inferops-sglang/known-good/manifest.json"))
        assert manifest["command"][0] == ADOPTED_PYTHON, manifest["command"]


def test_a_flag_the_new_version_rejects_stops_at_preflight():
    before = {name: (main_pid(name), sh(name, "sha256sum /etc/systemd/system/%s" % UNIT)) for name in SERVERS}
    rc, out, dummy = playbook("site", version("sglang==0.5.10"))
    assert rc != 0, out[-3000:]
    assert "unrecognized arguments: --cuda-graph-max-bs" in out, out[-4000:]
    for name in SERVERS:
        assert (main_pid(name), sh(name, "sha256sum /etc/systemd/system/%s" % UNIT)) == before[name], name
        assert server_version(name) == "0.5.9", name


def test_upgrade_moves_canary_then_batch_to_a_venv_of_its_own():
    adopted = {name: tree_digest(name, "/root/ml-env") for name in SERVERS}
    rc, out, dummy = playbook("site", version("sglang==0.5.10", service_server_args=ARGS_0510))
    assert rc == 0, out[-4000:]
    assert latest_summary()["plan"]["batches"] == [[CANARY], BATCH]
    started = {name: started_at(name) for name in SERVERS}
    assert all(started[CANARY] <= started[name] for name in BATCH), started
    for name in SERVERS:
        assert unit_python(name) == VENVS + "/0.5.10/bin/python3", name
        assert main_argv(name)[0] == VENVS + "/0.5.10/bin/python3", name
        assert server_version(name) == "0.5.10", name
        assert "--cuda-graph-max-bs" not in main_argv(name)
        # The user's venv is the previous known-good one: left exactly as it was.
        assert tree_digest(name, "/root/ml-env") == adopted[name], name
        assert "SGLANG_ENABLE_SPEC_V2" not in sh(name, "cat /etc/sglang/sglang.env"), name


def test_another_set_of_companions_for_an_installed_version_is_refused():
    """An installed venv is never changed (a running, known-good server uses it): the same version with another
    companion stops at pre-flight, named, nothing installed, every server untouched."""
    before = {name: (main_pid(name), tree_digest(name, VENVS + "/0.5.10")) for name in SERVERS}
    rc, out, dummy = playbook("site", version("sglang==0.5.10", service_server_args=ARGS_0510,
                                              service_sglang_requirements=["ninja==1.11.1.4"]))
    assert rc != 0, out[-3000:]
    assert "[Check the SGLang venv of that version]" in out and "never changed" in out, out[-4000:]
    for name in SERVERS:
        assert (main_pid(name), tree_digest(name, VENVS + "/0.5.10")) == before[name], name


def test_a_version_that_never_gets_healthy_rolls_back_to_the_previous_venv():
    batch_pids = {name: main_pid(name) for name in BATCH}
    good = tree_digest(CANARY, VENVS + "/0.5.10")
    rc, out, dummy = playbook("site", version("sglang==0.5.10.post1", service_server_args=ARGS_0510,
                                              cutover_health_budget=30, cutover_health_request_timeout=20))
    assert rc != 0, out[-3000:]
    rows = {row["host"]: row for row in latest_summary()["hosts"]}
    assert rows[CANARY]["result"] == "rolled_back", rows[CANARY]
    for name in BATCH:
        assert rows[name]["result"] == "not started", rows[name]
        assert main_pid(name) == batch_pids[name]
        assert server_version(name) == "0.5.10"
    # Back on the previous venv, which was still on disk: nothing was installed into it, and no pip task ran after
    # the gate failed.
    assert unit_python(CANARY) == VENVS + "/0.5.10/bin/python3"
    assert server_version(CANARY) == "0.5.10"
    assert tree_digest(CANARY, VENVS + "/0.5.10") == good
    assert "cutover : Note what failed" in out, out[-3000:]
    after_gate = out[out.index("cutover : Note what failed"):out.rindex("PLAY RECAP")]
    assert "Install the wanted SGLang version" not in after_gate, after_gate[-3000:]


def test_old_venvs_are_pruned_but_never_the_running_or_known_good_one():
    """service_venvs_keep 0: the never-healthy 0.5.10.post1 venv goes; 0.5.10 (running, known-good) stays, and the
    user's venv of the hand-started server (in the known-good history, outside service_venvs_dir) is left alone."""
    before = sh(CANARY, "ls %s" % VENVS).split()
    assert "0.5.10.post1" in before and "0.5.10" in before, before
    pids = {name: main_pid(name) for name in SERVERS}
    rc, out, dummy = playbook("site", version("sglang==0.5.10", service_server_args=ARGS_0510, service_venvs_keep=0))
    assert rc == 0, out[-4000:]
    for name in SERVERS:
        assert sh(name, "ls %s" % VENVS).split() == ["0.5.10"], name
        assert main_pid(name) == pids[name], name
        assert server_version(name) == "0.5.10", name
        assert sh(name, "test -x %s && echo kept" % ADOPTED_PYTHON).strip() == "kept", name
