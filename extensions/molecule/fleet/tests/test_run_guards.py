"""Verify the run guards on the fleet scenario (after test_operations.py): a misspelt role variable stops the run
before any host changes, and two site.yml runs started on one host at once do not both cut over - one runs, the
other fails naming it, and afterwards the unit, the running server, the known-good configuration and the record
agree on the configuration of the run that ran.
"""

import json
import os
import re
import subprocess

from test_fleet import INVENTORY, REPO, SERVERS, flag, main_argv, main_pid, sh
from test_operations import RECORD, manifest

HOST = "fleet-w2"
LOCK = "/run/lock/inferops-sglang.lock"


def site(*args):
    """Start ansible-playbook site.yml (not waited for)."""
    return subprocess.Popen(
        ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "site.yml")] + list(args),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
        env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
                 MOLECULE_EPHEMERAL_DIRECTORY=os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]))


def set_to(text, value):
    """Whether TEXT (a unit, a record: a flag and its value on one line, or split by a line continuation) sets
    --mem-fraction-static to VALUE."""
    return re.search(r"--mem-fraction-static[\s\\]+%s(?![0-9])" % re.escape(value), text) is not None


def finish(proc):
    out, dummy = proc.communicate(timeout=900)
    return proc.returncode, out


def test_a_misspelt_role_variable_stops_the_run_before_any_change(tmp_path):
    before = {name: main_pid(name) for name in SERVERS}
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"service_secret_arg": {"api-key": "K"}, "cutover_drain_timout": 5}))
    rc, out = finish(site("-e", "@%s" % extra))
    assert rc != 0, out[-3000:]
    assert "unknown variable service_secret_arg (did you mean service_secret_args?)" in out, out[-3000:]
    assert "unknown variable cutover_drain_timout (did you mean cutover_drain_timeout?)" in out, out[-3000:]
    assert "Gather SGLang host facts" not in out, out[-3000:]
    assert {name: main_pid(name) for name in SERVERS} == before


def test_two_runs_at_once_one_runs_the_other_names_it(tmp_path):
    runs = {}
    for value in ("0.88", "0.86"):
        extra = tmp_path / ("extra-%s.json" % value)
        extra.write_text(json.dumps({"scenario_test_args": {"mem-fraction-static": float(value)}}))
        runs[value] = site("-e", "@%s" % extra, "--limit", HOST)
    results = dict((value, finish(proc)) for value, proc in runs.items())
    ran = [value for value, (rc, dummy) in results.items() if rc == 0]
    assert len(ran) == 1, dict((value, out[-3000:]) for value, (rc, out) in results.items())
    winner = ran[0]
    loser = [value for value in results if value != winner][0]
    loser_out = results[loser][1]
    assert "Another run holds the lock of this host (%s): run " % LOCK in loser_out, loser_out[-3000:]
    assert "(inferops.sglang.site) since " in loser_out and "holder pid " in loser_out, loser_out[-3000:]

    # The unit, the running server, the known-good configuration and the record agree on the winner's value.
    assert flag(main_argv(HOST), "--mem-fraction-static") == winner
    assert flag(manifest(HOST)["command"], "--mem-fraction-static") == winner
    unit = sh(HOST, "systemctl cat sglang.service")
    record = sh(HOST, "cat %s" % RECORD)
    for text in (unit, record):
        assert set_to(text, winner) and not set_to(text, loser), text
    # The lock was given back: no holder is left, the file holds no owner.
    assert sh(HOST, "cat %s" % LOCK).strip() == ""
    assert "inferops-sglang-host-lock" not in sh(HOST, "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' || true")
