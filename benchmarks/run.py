"""The benchmark suite: one command, one table with each goal beside its measured figure.

Run (as root, in the venv, after scripts/setup.sh; the base image inferops-sglang/debian12-systemd must exist):
    .venv/bin/python benchmarks/run.py [--collection PATH] [--quick] [--json OUT] [--pairs 5] [--workers 4] [--runs 5]
                                       [--only a,...,g] [--strategy NAME]

--collection PATH   the checkout whose roles, playbooks and scenario files are measured (default: the repository
                    this script is in); a temporary ansible_collections/inferops/sglang link to it goes first on
                    ANSIBLE_COLLECTIONS_PATH, so the same suite gives "before" and "after" figures of two checkouts.
--quick             a smoke run: 2 pairs for (c), 2 workers for (d), 2 gate runs, a 30 s budget for (b).
--json OUT          also write every figure (and the per-run samples) as JSON.
--only a,b,c,d,e,f,g  run some rows only ((e) comes with (c): both use the converged container; (h) always comes with
                    (c), from its converge run).
--strategy NAME     every ansible run of the suite (site.yml, the peer, setup) with ANSIBLE_STRATEGY=NAME, e.g.
                    inferops.sglang.linear; run once without and once with it to see what the strategy gains.

Rows (ratios rather than absolute times: this machine is shared and noisy):
 (a) gate latency: time from the double first answering /health 200 (an independent 20 ms poller) to the
     collection's gate, inferops.sglang.server_health, returning ready (incl. its chat completions), against the
     common peer pattern: an ansible-playbook run of one ``ansible.builtin.uri`` task with until/retries/delay: 5
     polling /health of the same double. The double's load time is spread over one delay (load + 5 k / runs s) so
     that the peer's polling phase is sampled evenly. Medians; goal: ratio < 1.
 (b) crash during load (SGLANG_DOUBLE_FAIL=crash_during_load, at half the load) to the failed gate (the double
     under supervisord, as the no-systemd fallback runs it; bench_gate.fail_fast) against the same uri peer given
     the same budget (it can only run out of retries). Goal: ratio < 1.
 (c) a converged ``site.yml`` re-run against ``ansible -m setup`` on the same host: a systemd container
     (inferops-bench-host, made as scripts/demo.sh makes sglang-demo) put in the reference state and converged once,
     docker connection, pipelining on (as the molecule config). Paired runs in alternating order; the figure is
     the median of the per-pair ratios. Goal: <= 2.0 (no longer the issue's goal: the peer below does not reach it).
     The peer row on the same host and in the same rounds: the converged ``site.yml`` against the minimal peer
     playbook (peer_playbook: facts gathered, become, ``ansible.builtin.template`` of a unit,
     ``ansible.builtin.systemd`` started and enabled, ``ansible.builtin.uri`` /health with until/retries), converged
     once before the rounds. Its unit runs a stand-in server (python3 -m http.server on 127.0.0.1:30001, a /health
     file made by ExecStartPre) rather than a second SGLang double, which would hold the stand-in GPUs the collection
     checks. Each round runs site.yml, setup and the peer in an order that rotates; the figure is the median of the
     per-round ratios site / peer. Goal: <= 2.0.
 (d) a rollout of N servers (default 4) through the real router, smg 1.13.0 with --dp-aware and one server of two
     DP ranks (bench_fleet.rollout: the fleet scenario's prepare and converge, site.yml under load), with the failed
     requests through the router (goal 0). Wall time (the fleet summary's wall_s, plan to last summary)
     against the limit sum over batches of (drain + load + gate) - drain: the "Router - out" task, load + gate:
     from the start of "Note when the service is started" to the end of the last start gate round, both from
     ansible.posix.profile_tasks' per-task times (the tasks between start and gate count as load); and the
     orchestration overhead per batch (wall - drains - gates) / batches, goal <= 15 s. The top tasks of the
     remaining time are printed below the table.
 (e) tasks per host (the recap: ok + failed + skipped + unreachable) and module round-trips per host of a
     converged run: a ``docker`` shim first on PATH logs every docker CLI call of the community.docker.docker
     connection (``docker exec`` = one round-trip: a module run, or a file put with dd; ``docker cp`` = a fetch),
     then runs the real docker. The count is checked first on a playbook of known size (3 module tasks).
     The same run reports through the JSON callback (each task's start and end) and the shim notes when each call
     began and ended: the floor is the run less the tasks that made no round-trip (start-up, play changes and the
     round-trip tasks kept), against (c)'s ``ansible -m setup`` - an upper bound of what the run would take if every
     assert, set_fact, include and skipped task cost nothing; the calls' own time (start to end) is a lower bound of
     what the round-trips cost.
 (h) the task files of the adoption path (adopt -> cutover -> gate -> record), counted on (c)'s converge run, which
     adopts the hand-started server: every task file of the roles service, known_good and cutover of which a task
     ran (ok, changed or failed), in the order they first ran (callback_plugins/inferops_task_files.py). The facts,
     cuda_env and fleet roles and the playbook come before and after that path. Goal: <= 15. Runs with (c).
 (f) rollback after a failed SGLang upgrade: a container like (c)'s is adopted on the double's 0.5.9,
     upgraded to its 0.5.10 (a venv of its own, /opt/sglang/venvs/0.5.10, from a wheelhouse built by
     tests/double/build_wheels.py), then asked for 0.5.10.post1, whose server never gets healthy (gate budget 30 s).
     Measured: from the failed gate (the rollback's first task) to the 0.5.10 venv's gate passing (profile_tasks),
     which includes stopping the new server, restoring the known-good unit, starting and loading the old server and
     gating it, with nothing installed; against a ``pip install --force-reinstall sglang==0.5.10`` into that same
     venv, offline from the same wheelhouse (a reinstall path would add the same stop, start, load and gate to it).
     The double's wheels are a few hundred KB; a real SGLang reinstall brings torch and its CUDA libraries (GBs).
 (g) the dark window of a cutover (bench_stage.py, issue 32): the double (which reads its weight files for real) on a
     weight directory of --stage-gib GB (default 2) in /var/tmp: an old double serving, its last /health answer, its
     stop, the new double's first /health 200. Cold (the shards evicted with posix_fadvise DONTNEED), staged (evicted,
     then read back by model_stage's functions while the old double serves) and the warm floor (already resident),
     --runs each in rotating order; medians. Goal: staged <= 1.5 x the floor.

Containers are named inferops-bench-*; they are removed at the end. Asserts nothing: exit status 0 unless a
step could not run.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_fleet  # noqa: E402  pylint: disable=wrong-import-position
import bench_gate  # noqa: E402  pylint: disable=wrong-import-position
import bench_stage  # noqa: E402  pylint: disable=wrong-import-position

REPO = os.path.abspath(os.path.join(HERE, ".."))
BIN = os.path.dirname(sys.executable)
HOST = "inferops-bench-host"
PEER_DELAY = 5
COLUMNS = ("row", "measured", "comparison", "ratio", "goal", "met")
PROFILE_LINE = re.compile(r"\((\d+):(\d\d):(\d\d(?:\.\d+)?)\)\s+(\d+):(\d\d):(\d\d(?:\.\d+)?)\s\*+\s*$")
HEADER = re.compile(r"^(TASK|RUNNING HANDLER) \[(.*)\] \*+\s*$")
PLAY = re.compile(r"^PLAY \[(.*)\] \*+\s*$")
RECAP = re.compile(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$")
EXEC_VALUE_OPTIONS = ("-u", "--user", "-e", "--env", "-w", "--workdir", "--detach-keys")


PEER_PORT = 30001
PEER_UNIT = """# {{ ansible_managed }}
[Unit]
Description=Minimal peer of the benchmark: a stand-in server answering /health
After=network-online.target

[Service]
ExecStartPre=/bin/sh -c 'mkdir -p /run/inferops-peer && echo ok > /run/inferops-peer/health'
ExecStart=/usr/bin/python3 -m http.server {{ peer_port }} --bind 127.0.0.1 --directory /run/inferops-peer
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


# ---- pure helpers (tests/unit/benchmarks/test_run.py) ----

def peer_playbook(host, unit_template, port=PEER_PORT):
    """The minimal peer playbook (a list of one play, JSON-serialisable) for ``host``: facts gathered (the default),
    become, a unit templated from ``unit_template`` (a path on the controller), the service started and enabled
    (daemon-reload only when the unit changed), /health on ``port`` polled with ``ansible.builtin.uri``."""
    return [{
        "name": "Minimal peer - a templated unit, started, /health",
        "hosts": host,
        "become": True,
        "vars": {"peer_port": port},
        "tasks": [
            {"name": "Unit", "ansible.builtin.template": {
                "src": unit_template, "dest": "/etc/systemd/system/inferops-peer.service",
                "owner": "root", "group": "root", "mode": "0644"},
             "register": "peer_unit"},
            {"name": "Started", "ansible.builtin.systemd": {
                "name": "inferops-peer.service", "state": "started", "enabled": True,
                "daemon_reload": "{{ peer_unit is changed }}"}},
            {"name": "Health", "ansible.builtin.uri": {"url": "http://127.0.0.1:{{ peer_port }}/health"},
             "register": "peer_health", "until": "peer_health.status == 200", "retries": 30, "delay": 1},
        ],
    }]


def rotation(names, number):
    """``names`` rotated left by ``number``: the order of round ``number`` (each command goes first in turn)."""
    names = list(names)
    if not names:
        return names
    shift = number % len(names)
    return names[shift:] + names[:shift]


def median_of_ratios(pairs):
    """Median of a / b over ``pairs`` [(a, b), ...] (seconds, b > 0); raises ValueError when empty."""
    if not pairs:
        raise ValueError("no pairs")
    return statistics.median(a / b for a, b in pairs)


def format_table(rows, columns=COLUMNS):
    """Plain-text table: ``rows`` are dicts keyed by ``columns`` (missing -> ''); returns a list of lines (header,
    rule, rows), each column as wide as its widest cell."""
    cells = [[str(c) for c in columns]] + [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return lines


def parse_recap(text):
    """PLAY RECAP of ansible-playbook output -> {host: {'ok': n, 'changed': n, ...}} (the last recap wins)."""
    hosts, in_recap = {}, False
    for line in text.splitlines():
        if line.startswith("PLAY RECAP"):
            hosts, in_recap = {}, True
            continue
        if not in_recap or not line.strip():
            continue
        match = RECAP.match(line.strip())
        if not match:
            in_recap = False
            continue
        hosts[match.group(1)] = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", match.group(2)))
    return hosts


def tasks_of(counts):
    """Tasks a host went through, from its recap counts (ok includes changed; rescued/ignored are in ok/failed)."""
    return sum(counts.get(k, 0) for k in ("ok", "failed", "skipped", "unreachable"))


def parse_docker_log(lines):
    """Lines of the docker shim (each a call's arguments joined by tabs) -> {container: {'exec': n, 'cp': n}} plus
    the key None -> {subcommand: n} for calls that name no container (version, inspect, ...)."""
    calls = {None: {}}
    for line in lines:
        args = [a for a in line.rstrip("\n").split("\t") if a != ""]
        while args and args[0].startswith("-"):   # global options (--host H, -H H, --config C)
            args = args[2:] if args[0] in ("-H", "--host", "--config", "--context", "-c") else args[1:]
        if not args:
            continue
        sub, rest = args[0], args[1:]
        container = None
        if sub == "exec":
            while rest and rest[0].startswith("-"):
                rest = rest[2:] if rest[0] in EXEC_VALUE_OPTIONS else rest[1:]
            container = rest[0] if rest else None
        elif sub == "cp" and len(rest) >= 2:
            container = next((a.split(":", 1)[0] for a in rest if ":" in a and not a.startswith("/")), None)
        if container:
            calls.setdefault(container, {"exec": 0, "cp": 0})[sub] += 1
        else:
            calls[None][sub] = calls[None].get(sub, 0) + 1
    return calls


def timed_calls(lines):
    """Lines of the docker shim's log (the call's start and end as epoch seconds, then the call's arguments, all joined
    by tabs) -> [(start, end, arguments line as parse_docker_log reads it)]; lines that are not such are left out. A
    decimal comma (bash's $EPOCHREALTIME in such a locale) is read as a point."""
    calls = []
    for line in lines:
        fields = line.split("\t", 2)
        if len(fields) < 3:
            continue
        try:
            calls.append((float(fields[0].replace(",", ".")), float(fields[1].replace(",", ".")), fields[2]))
        except ValueError:
            continue
    return calls


def call_spans(calls, container):
    """timed_calls -> [(start, end)] of the ``docker exec`` and ``docker cp`` calls on ``container`` (its
    round-trips), sorted."""
    return sorted((begin, finish) for begin, finish, args in calls
                  if sum(parse_docker_log([args]).get(container, {}).values()))


def _epoch(iso):
    """A time of the JSON callback (UTC, ISO 8601, '...Z' or '+00:00') -> epoch seconds."""
    iso = iso.replace("Z", "+00:00") if iso.endswith("Z") else iso
    stamp = datetime.datetime.fromisoformat(iso)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=datetime.timezone.utc)
    return stamp.timestamp()


def json_report(text):
    """The JSON callback's report out of ansible-playbook output that also carries warnings (stderr) before or after it:
    the first object that starts on a line of its own ('{') and has the key 'plays'. Raises ValueError when there is
    none."""
    decoder, at = json.JSONDecoder(), 0
    while True:
        at = 0 if at == 0 and text.startswith("{\n") else text.index("\n{\n", at) + 1
        try:
            report = decoder.raw_decode(text, at)[0]
        except ValueError:
            report = None
        if isinstance(report, dict) and "plays" in report:
            return report
        at += 1


def json_task_spans(report):
    """The output of the JSON callback (ansible.posix.json, parsed) -> [{'play', 'task', 'start', 'end'}] (epoch s)
    in run order. A task's span runs from its start to the start of the next task of the same play (the worker's
    fork and the strategy's bookkeeping between two tasks go with the first), the last task of a play to its own end."""
    spans = []
    for number, play in enumerate(report.get("plays", [])):
        tasks = []
        for task in play.get("tasks", []):
            duration = task.get("task", {}).get("duration", {})
            if duration.get("start") and duration.get("end"):
                tasks.append({"play": number, "task": task["task"].get("name", ""),
                              "start": _epoch(duration["start"]), "end": _epoch(duration["end"])})
        for this, following in zip(tasks, tasks[1:]):
            this["end"] = max(this["end"], following["start"])
        spans.extend(tasks)
    return spans


def converged_floor(wall, spans, calls):
    """What a run would take if every task that made no round-trip cost nothing: ``wall`` (s, the whole
    ansible-playbook process), the task ``spans`` (json_task_spans) and its round-trips ``calls`` (call_spans).
    -> {'wall', 'fixed_s' (start-up, play changes and the end: wall minus every span), 'round_trip_tasks',
    'round_trip_s' (their spans: the calls, and each task's templating, worker and the gap to the next task),
    'calls', 'calls_s' (the calls themselves, start to end: a lower bound of what the round-trips cost),
    'unattributed' (calls that began in no task's span: 0 unless the times are off), 'local_tasks', 'local_s',
    'floor_s' (fixed_s + round_trip_s: an upper bound of the run with free local tasks)}."""
    def began_in(span, begin):
        return span["start"] <= begin < span["end"]

    trips = [span for span in spans if any(began_in(span, begin) for begin, dummy in calls)]
    trip_s = sum(span["end"] - span["start"] for span in trips)
    all_s = sum(span["end"] - span["start"] for span in spans)
    fixed = wall - all_s
    unattributed = [c for c in calls if not any(began_in(span, c[0]) for span in spans)]
    return {"wall": wall, "fixed_s": fixed, "round_trip_tasks": len(trips), "round_trip_s": trip_s,
            "calls": len(calls), "calls_s": sum(finish - begin for begin, finish in calls),
            "unattributed": len(unattributed), "local_tasks": len(spans) - len(trips), "local_s": all_s - trip_s,
            "floor_s": fixed + trip_s}


def _seconds(hours, minutes, seconds):
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def parse_profile_stream(text):
    """ansible-playbook output with ansible.posix.profile_tasks -> [{'play', 'play_no' (1-based count of PLAY
    banners; a serial play prints one per batch), 'task', 'start' (s since the run began), 'duration' (s)}] in run
    order. A task's duration is the time until the next task (or the end) began, as profile_tasks counts it."""
    tasks = []
    play, play_no, pending = "", 0, None
    for line in text.splitlines():
        match = PLAY.match(line)
        if match:
            play, play_no = match.group(1), play_no + 1
            continue
        match = HEADER.match(line)
        if match:
            pending = match.group(2)
            continue
        match = PROFILE_LINE.search(line)
        if match:
            now = _seconds(*match.groups()[3:])
            if tasks and tasks[-1]["duration"] is None:
                tasks[-1]["duration"] = now - tasks[-1]["start"]
            if pending is not None:
                tasks.append({"play": play, "play_no": play_no, "task": pending, "start": now, "duration": None})
                pending = None
    return [t for t in tasks if t["duration"] is not None]


def batch_breakdown(tasks, rollout_play, drain_task, start_task, gate_task):
    """Per batch of the serial play named ``rollout_play``: {'wall', 'drain', 'gate', 'overhead'} (s). drain: the
    summed durations of the tasks whose name contains ``drain_task``; gate (load + gate): the span from the start of
    the first task whose name contains ``start_task`` (the service's start) to the end of the last one containing
    ``gate_task`` (the tasks run on every host of the batch at once); overhead: the rest of the batch's wall time."""
    batches = {}
    for task in tasks:
        if task["play"] != rollout_play:
            continue
        batch = batches.setdefault(task["play_no"], {"wall": 0.0, "drain": 0.0, "began": None, "ready": None})
        batch["wall"] += task["duration"]
        if drain_task in task["task"]:
            batch["drain"] += task["duration"]
        elif start_task in task["task"] and batch["began"] is None:
            batch["began"] = task["start"]
        elif gate_task in task["task"] and batch["began"] is not None:
            batch["ready"] = task["start"] + task["duration"]
    rows = []
    for key in sorted(batches):
        batch = batches[key]
        gate = batch["ready"] - batch["began"] if batch["ready"] is not None else 0.0
        rows.append({"wall": batch["wall"], "drain": batch["drain"], "gate": gate,
                     "overhead": batch["wall"] - batch["drain"] - gate})
    return rows


def top_tasks(tasks, exclude, count=10):
    """The ``count`` task names with the most time summed over the run (names containing any of ``exclude`` left out):
    [(name, seconds, instances)]."""
    total = {}
    for task in tasks:
        if any(word in task["task"] for word in exclude):
            continue
        seconds, times = total.get(task["task"], (0.0, 0))
        total[task["task"]] = (seconds + task["duration"], times + 1)
    ranked = sorted(total.items(), key=lambda item: -item[1][0])[:count]
    return [(name, seconds, times) for name, (seconds, times) in ranked]


def rollback_span(tasks, failed_task="cutover : Note what failed", gate_task="Gate"):
    """Seconds from a failed gate to the known-good configuration's gate passing: from the start of the first task
    named ``failed_task`` (the rollback's first step, right after the failed gate) to the end of the last task whose
    name contains ``gate_task`` after it. None when the run has no rollback."""
    began = next((t["start"] for t in tasks if failed_task in t["task"]), None)
    if began is None:
        return None
    ends = [t["start"] + t["duration"] for t in tasks if t["start"] >= began and gate_task in t["task"]]
    return (max(ends) - began) if ends else None


# ---- measurements ----

def say(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def collection_env(collection, tmp):
    """Point ANSIBLE_COLLECTIONS_PATH (in os.environ, for every ansible run of the suite) at ``collection``."""
    link = os.path.join(tmp, "colls", "ansible_collections", "inferops")
    os.makedirs(link)
    os.symlink(collection, os.path.join(link, "sglang"))
    colls = os.path.join(tmp, "colls")
    site = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(os.path.join(p, "ansible_collections"))]
    os.environ["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join([colls] + site[:1])
    os.environ["PYTHONPATH"] = colls
    return colls


def role_default(collection, role, name):
    import yaml  # pylint: disable=import-outside-toplevel
    with open(os.path.join(collection, "roles", role, "defaults", "main.yml")) as handle:
        return yaml.safe_load(handle)[name]


def in_tmp(func, *args, **kwargs):
    tmp = tempfile.mkdtemp(prefix="inferops-bench-")
    try:
        return func(tmp, *args, **kwargs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure_gate(runs, budget):
    loads = [4.0 + PEER_DELAY * k / float(runs) for k in range(runs)]
    gates, peers = [], []
    for load in loads:
        gates.append(in_tmp(bench_gate.gate_latency, load)["latency"])
        peers.append(in_tmp(bench_gate.peer_latency, load, budget)["latency"])
        say("(a) load %.1f s: gate %.2f s, uri peer %.2f s after the first 200" % (load, gates[-1], peers[-1]))
    return {"gate": gates, "peer": peers, "loads": loads}


def measure_crash(runs, budget, load=4.0):
    supervisord = shutil.which("supervisord", path=BIN + os.pathsep + os.environ.get("PATH", ""))
    if not supervisord:
        raise RuntimeError("supervisord not installed: pip install supervisor==4.3.0")
    gates = []
    for dummy in range(runs):
        result = in_tmp(bench_gate.fail_fast, load, supervisord, budget)
        gates.append(result["after_crash"])
        say("(b) gate failed %.2f s after the crash: %s" % (gates[-1], (result["reason"] or "")[:80]))
    peer = in_tmp(bench_gate.peer_crash, load, budget)
    say("(b) uri peer (budget %d s) failed %.1f s after the crash" % (budget, peer["after_crash"]))
    return {"gate": gates, "peer": [peer["after_crash"]], "budget": budget}


def ansible_env(**more):
    env = dict(os.environ, ANSIBLE_PIPELINING="1", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    env.update(more)
    return env


def run_timed(cmd, log, env=None):
    started = time.time()
    with open(log, "w") as handle:
        rc = subprocess.run(cmd, stdout=handle, stderr=subprocess.STDOUT, env=env or ansible_env(), check=False).returncode
    elapsed = time.time() - started
    with open(log) as handle:
        return rc, elapsed, handle.read()


def make_host(tmp, collection, host=HOST):
    """The systemd container ``host`` in the reference state, converged once (the adoption); returns its inventory
    directory and the file the callback wrote the converge run's tasks to (row h; absent when the callback wrote none)."""
    bench_fleet.start_containers([host])
    inv = os.path.join(tmp, "inventory-" + host)
    os.makedirs(inv)
    os.symlink(os.path.join(collection, "inventory", "demo", "group_vars"), os.path.join(inv, "group_vars"))
    with open(os.path.join(inv, "hosts.yml"), "w") as handle:
        conn = {"ansible_connection": "community.docker.docker", "ansible_python_interpreter": "/usr/bin/python3"}
        json.dump({"sglang_servers": {"hosts": {host: conn}}}, handle)
    playbook = os.path.join(BIN, "ansible-playbook")
    # The converge run adopts the hand-started server: the task files it runs are the adoption path's (row h).
    files = os.path.join(tmp, "task-files-%s.tsv" % host)
    traced = ansible_env(ANSIBLE_CALLBACK_PLUGINS=os.path.join(HERE, "callback_plugins"),
                         ANSIBLE_CALLBACKS_ENABLED="inferops_task_files", INFEROPS_TASK_FILES_OUT=files)
    for name, path in (("prepare", os.path.join(collection, "extensions", "molecule", "resources", "prepare_reference.yml")),
                       ("converge", os.path.join(collection, "site.yml"))):
        rc, elapsed, out = run_timed([playbook, "-i", inv, path], os.path.join(tmp, "%s-%s.log" % (host, name)),
                                     traced if name == "converge" else None)
        say("(c) %s: rc %d, %.0f s" % (name, rc, elapsed))
        if rc:
            raise RuntimeError("%s failed:\n%s" % (name, out[-3000:]))
    return inv, files


# The adoption path (adopt -> cutover -> gate -> record): the roles between the facts and the fleet's batch end.
PATH_ROLES = ("service", "known_good", "cutover")


def adoption_path_files(lines):
    """The task files of the adoption path, in the order they first ran: ``lines`` are the callback's ``PATH\tNAME``
    lines of the converge run; a file counts when one of its tasks ran in a role of PATH_ROLES. -> list of paths
    relative to the collection (``roles/cutover/tasks/gate.yml``)."""
    found = []
    for line in lines:
        path = line.split("\t", 1)[0]
        marker = path.rfind("/roles/")
        if marker < 0:
            continue
        relative = path[marker + 1:]
        if relative.split("/")[1] in PATH_ROLES and relative not in found:
            found.append(relative)
    return found


def converge_peer(tmp):
    """Write the minimal peer playbook (JSON, which is YAML) and its unit template into ``tmp``; returns the playbook's
    path. measure_converged runs it once to converge it, and checks that a second run changes nothing."""
    unit = os.path.join(tmp, "inferops-peer.service.j2")
    with open(unit, "w") as handle:
        handle.write(PEER_UNIT)
    playbook = os.path.join(tmp, "peer.yml")
    with open(playbook, "w") as handle:
        json.dump(peer_playbook(HOST, unit), handle, indent=1)
    return playbook


def measure_converged(tmp, collection, inv, pairs):
    """(c) and the peer row: ``pairs`` rounds of site.yml, ``ansible -m setup`` and the minimal peer playbook (each
    first in turn), on the converged host. -> {'pairs': [(site, setup)], 'peer_pairs': [(site, peer)] (s),
    'recap': the last site.yml recap of the host, 'peer_recap'}."""
    playbook = os.path.join(BIN, "ansible-playbook")
    peer_yml = converge_peer(tmp)
    commands = {"site": [playbook, "-i", inv, os.path.join(collection, "site.yml")],
                "setup": [os.path.join(BIN, "ansible"), "-i", inv, HOST, "-m", "ansible.builtin.setup"],
                "peer": [playbook, "-i", inv, peer_yml]}
    for attempt in ("converge", "converged"):
        rc, elapsed, out = run_timed(commands["peer"], os.path.join(tmp, "peer-%s.log" % attempt))
        changed = parse_recap(out).get(HOST, {}).get("changed")
        say("(c) peer playbook, %s: rc %d, %.1f s, changed %s" % (attempt, rc, elapsed, changed))
        if rc or (attempt == "converged" and changed):
            raise RuntimeError("the peer playbook did not converge:\n%s" % out[-3000:])
    samples, peer_samples, recap, peer_recap = [], [], {}, {}
    for number in range(pairs):
        order = rotation(("site", "setup", "peer"), number)
        times = {}
        for what in order:
            rc, times[what], out = run_timed(commands[what], os.path.join(tmp, "%s-%d.log" % (what, number)))
            if rc:
                raise RuntimeError("%s re-run failed:\n%s" % (what, out[-3000:]))
            if what == "site":
                recap = parse_recap(out).get(HOST, {})
            elif what == "peer":
                peer_recap = parse_recap(out).get(HOST, {})
        samples.append((times["site"], times["setup"]))
        peer_samples.append((times["site"], times["peer"]))
        say("(c) round %d (%s): site.yml %.1f s, setup %.1f s, peer %.1f s; site/setup %.1f, site/peer %.1f; recap %s"
            % (number + 1, ", ".join(order), times["site"], times["setup"], times["peer"], times["site"] / times["setup"],
               times["site"] / times["peer"], recap))
    return {"pairs": samples, "peer_pairs": peer_samples, "recap": recap, "peer_recap": peer_recap}


def measure_round_trips(tmp, collection, inv):
    """Round-trips per host of a converged site.yml run, counted by a docker shim; checked on a 3-task playbook."""
    shim_dir = os.path.join(tmp, "shim")
    os.makedirs(shim_dir)
    log = os.path.join(tmp, "docker-calls.log")
    real = shutil.which("docker")
    with open(os.path.join(shim_dir, "docker"), "w") as handle:
        handle.write('#!/bin/bash\nline=""\nfor a in "$@"; do a="${a//$\'\\n\'/ }"; line+="${a//$\'\\t\'/ }"$\'\\t\'; done\n'
                     'began=$EPOCHREALTIME\n%s "$@"\nrc=$?\n'
                     'printf \'%%s\\t%%s\\t%%s\\n\' "$began" "$EPOCHREALTIME" "$line" >> %s\nexit $rc\n'
                     % (real, log))
    os.chmod(os.path.join(shim_dir, "docker"), 0o755)
    env = ansible_env(PATH=shim_dir + os.pathsep + os.environ["PATH"])
    known = os.path.join(tmp, "known.yml")
    with open(known, "w") as handle:
        json.dump([{"hosts": HOST, "gather_facts": False, "tasks": [
            {"ansible.builtin.ping": {}}, {"ansible.builtin.command": "true", "changed_when": False},
            {"ansible.builtin.stat": {"path": "/"}}]}], handle)
    counts, floor = {}, None
    for name, cmd in (("known", [os.path.join(BIN, "ansible-playbook"), "-i", inv, known]),
                      ("site", [os.path.join(BIN, "ansible-playbook"), "-i", inv, os.path.join(collection, "site.yml")])):
        open(log, "w").close()
        # The site run reports through the JSON callback: each task's start and end, to set against the round-trips.
        run_env = dict(env, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json") if name == "site" else env
        rc, wall, out = run_timed(cmd, os.path.join(tmp, "shim-%s.log" % name), run_env)
        if rc:
            raise RuntimeError("%s run with the docker shim failed:\n%s" % (name, out[-3000:]))
        with open(log) as handle:
            timed = timed_calls(handle)
        counts[name] = parse_docker_log(args for dummy, dummy2, args in timed)
        if name == "site":
            calls = call_spans(timed, HOST)
            try:
                floor = converged_floor(wall, json_task_spans(json_report(out)), calls)
            except (ValueError, KeyError) as exc:   # the counts above stand without it
                floor = {"error": "no floor: %s" % exc}
    known_exec = counts["known"].get(HOST, {}).get("exec", 0)
    say("(e) check: a playbook of 3 module tasks made %d docker exec calls (expected 3 with pipelining); other calls %s"
        % (known_exec, counts["known"][None]))
    return {"known_exec": known_exec, "site": counts["site"].get(HOST, {"exec": 0, "cp": 0}), "other": counts["site"][None],
            "floor": floor}


ROLLOUT_PLAY = "Make the SGLang server on each host a health-gated service, batch by batch"
DRAIN_TASK = "Router - out"
START_TASK = "Note when the service is started"
GATE_TASK = "Gate - TCP, /health"


UPGRADE_HOST = "inferops-bench-upgrade"
# The demo inventory's arguments without --cuda-graph-max-bs, which the double's 0.5.10 no longer has.
UPGRADE_DROPPED_ARG = "cuda-graph-max-bs"


def measure_upgrade_rollback(tmp, collection, runs):
    """(f): adopt the reference server (0.5.9), upgrade it to the double's 0.5.10 in a venv of its own, then ask for
    0.5.10.post1 (never healthy): the time from its failed gate to the 0.5.10 venv's gate passing, against a pip
    reinstall of sglang==0.5.10 into that same venv (``runs`` times, offline from the same wheelhouse)."""
    import yaml  # pylint: disable=import-outside-toplevel

    inv = make_host(tmp, collection, UPGRADE_HOST)[0]
    wheels = os.path.join(tmp, "wheelhouse")
    subprocess.run([sys.executable, os.path.join(collection, "tests", "double", "build_wheels.py"), "--out", wheels],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["docker", "cp", wheels, "%s:/opt/wheelhouse" % UPGRADE_HOST], check=True)
    with open(os.path.join(collection, "inventory", "demo", "group_vars", "sglang_servers.yml")) as handle:
        args = yaml.safe_load(handle)["service_server_args"]
    args.pop(UPGRADE_DROPPED_ARG, None)
    base = {"service_server_args": args, "service_sglang_pip_find_links": ["/opt/wheelhouse"],
            "service_sglang_pip_no_index": True}
    extra = os.path.join(tmp, "upgrade.json")
    site = [os.path.join(BIN, "ansible-playbook"), "-i", inv, os.path.join(collection, "site.yml"), "-e", "@" + extra]
    env = ansible_env(ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_tasks")
    with open(extra, "w") as handle:
        json.dump(dict(base, service_sglang_version="sglang==0.5.10"), handle)
    rc, upgrade_s, out = run_timed(site, os.path.join(tmp, "upgrade.log"), env)
    say("(f) upgrade to 0.5.10: rc %d, %.0f s" % (rc, upgrade_s))
    if rc:
        raise RuntimeError("the upgrade to 0.5.10 failed:\n%s" % out[-3000:])
    with open(extra, "w") as handle:
        never_healthy = dict(base, service_sglang_version="sglang==0.5.10.post1", cutover_health_budget=30,
                             cutover_health_request_timeout=20)
        json.dump(never_healthy, handle)
    rc, dummy, out = run_timed(site, os.path.join(tmp, "upgrade-never-healthy.log"), env)
    rollback = rollback_span(parse_profile_stream(out))
    python = subprocess.run(["docker", "exec", UPGRADE_HOST, "sh", "-c", "grep -o '^ExecStart=[^ ]*' "
                             "/etc/systemd/system/sglang.service"], stdout=subprocess.PIPE, text=True, check=False).stdout.strip()
    say("(f) 0.5.10.post1: rc %d, rollback %s s; the unit runs %s" % (rc, rollback, python))
    if rc == 0 or rollback is None or "/0.5.10/" not in python:
        raise RuntimeError("no rollback to the 0.5.10 venv:\n%s" % out[-3000:])
    reinstall = []
    for dummy in range(runs):
        started = time.time()
        subprocess.run(["docker", "exec", UPGRADE_HOST, "/opt/sglang/venvs/0.5.10/bin/python3", "-m", "pip", "install",
                        "-q", "--force-reinstall", "--no-index", "--find-links", "/opt/wheelhouse", "sglang==0.5.10"],
                       check=True)
        reinstall.append(time.time() - started)
    say("(f) pip reinstall of sglang==0.5.10 into its venv: %s s" % ", ".join("%.1f" % r for r in reinstall))
    return {"rollback": rollback, "reinstall": reinstall, "upgrade_s": upgrade_s}


def measure_rollout(workers, collection, colls):
    tmp = tempfile.mkdtemp(prefix="inferops-bench-fleet-")
    result = bench_fleet.rollout(workers, tmp, repo=collection, collections=colls, say=lambda m: say("(d) " + m))
    summary = result["summary"]
    if not summary or result["rc"]:
        with open(result["converge_log"]) as handle:
            raise RuntimeError("rollout failed (logs in %s):\n%s" % (tmp, handle.read()[-3000:]))
    with open(result["converge_log"]) as handle:
        tasks = parse_profile_stream(handle.read())
    batches = batch_breakdown(tasks, ROLLOUT_PLAY, DRAIN_TASK, START_TASK, GATE_TASK)
    limit = sum(b["drain"] + b["gate"] for b in batches)
    rollout_tasks = [t for t in tasks if t["play"] == ROLLOUT_PLAY]
    return {"wall": summary["wall_s"], "batches": batches, "limit": limit, "n_batches": len(summary["plan"]["batches"]),
            "overhead_per_batch": (summary["wall_s"] - limit) / max(1, len(batches)), "counts": summary["counts"],
            "load_failed": (result["load"] or {}).get("failed"), "logs": tmp,
            "top": top_tasks(rollout_tasks, (DRAIN_TASK, GATE_TASK)), "before_rollout": sum(
                t["duration"] for t in tasks if t["play"] != ROLLOUT_PLAY and t["start"] < (rollout_tasks or [{"start": 0}])[0]["start"])}


# ---- the table ----

def met(value, goal):
    return "yes" if value <= goal else "NO"


def build_rows(fig):
    rows = []
    if "a" in fig:
        gate, peer = statistics.median(fig["a"]["gate"]), statistics.median(fig["a"]["peer"])
        rows.append({"row": "(a) gate latency after first healthy", "measured": "%.2f s (median of %d)" % (gate, len(fig["a"]["gate"])),
                     "comparison": "%.2f s uri until/delay 5" % peer, "ratio": "%.2f" % (gate / peer), "goal": "< 1",
                     "met": "yes" if gate < peer else "NO"})
    if "b" in fig:
        gate, peer = statistics.median(fig["b"]["gate"]), statistics.median(fig["b"]["peer"])
        rows.append({"row": "(b) crash during load -> failed gate", "measured": "%.2f s (median of %d)" % (gate, len(fig["b"]["gate"])),
                     "comparison": "%.1f s uri, budget %d s" % (peer, fig["b"]["budget"]), "ratio": "%.3f" % (gate / peer),
                     "goal": "< 1", "met": "yes" if gate < peer else "NO"})
    if "c" in fig:
        pairs = fig["c"]["pairs"]
        ratio = median_of_ratios(pairs)
        rows.append({"row": "(c) converged site.yml re-run", "measured": "%.1f s (median of %d)" % (
            statistics.median(p[0] for p in pairs), len(pairs)), "comparison": "%.1f s ansible -m setup" % statistics.median(
            p[1] for p in pairs), "ratio": "%.1f (median of pair ratios)" % ratio, "goal": "<= 2.0", "met": met(ratio, 2.0)})
        if fig["c"].get("peer_pairs"):
            peer_pairs = fig["c"]["peer_pairs"]
            peer_ratio = median_of_ratios(peer_pairs)
            rows.append({"row": "(c) converged site.yml vs minimal peer", "measured": "%.1f s (median of %d)" % (
                statistics.median(p[0] for p in peer_pairs), len(peer_pairs)),
                "comparison": "%.1f s peer (template, systemd, uri)" % statistics.median(p[1] for p in peer_pairs),
                "ratio": "%.1f (median of pair ratios)" % peer_ratio, "goal": "<= 2.0", "met": met(peer_ratio, 2.0)})
    if "d" in fig:
        d = fig["d"]
        rows.append({"row": "(d) rollout of %d servers, %d batches" % (d["workers"], d["n_batches"]), "measured": "%.1f s wall" % d["wall"],
                     "comparison": "%.1f s = sum(drain+load+gate)" % d["limit"], "ratio": "%.1f" % (d["wall"] / d["limit"]),
                     "goal": "-", "met": "-"})
        rows.append({"row": "(d) orchestration overhead per batch", "measured": "%.1f s" % d["overhead_per_batch"],
                     "comparison": "15 s", "ratio": "%.1f" % (d["overhead_per_batch"] / 15.0), "goal": "<= 15 s",
                     "met": met(d["overhead_per_batch"], 15.0)})
        failed = d["load_failed"]
        rows.append({"row": "(d) failed requests through smg (--dp-aware)", "measured": "%s" % failed,
                     "comparison": "-", "ratio": "-", "goal": "0",
                     "met": "-" if failed is None else met(failed, 0)})
    if "e" in fig:
        e = fig["e"]
        recap = fig["c"]["recap"]
        rows.append({"row": "(e) tasks per host, converged", "measured": "%d" % tasks_of(recap),
                     "comparison": "ok=%d changed=%d skipped=%d" % (recap.get("ok", 0), recap.get("changed", 0), recap.get("skipped", 0)),
                     "ratio": "-", "goal": "fewer", "met": "-"})
        rows.append({"row": "(e) module round-trips per host", "measured": "%d docker exec" % e["site"]["exec"],
                     "comparison": "+%d docker cp; other CLI calls %d" % (e["site"]["cp"], sum(e["other"].values())),
                     "ratio": "-", "goal": "fewer", "met": "-"})
        floor, setup = e["floor"], statistics.median(p[1] for p in fig["c"]["pairs"])
        if "floor_s" in floor:
            rows.append({"row": "(e) floor: run less its local tasks", "measured": "%.1f s of %.1f s" % (
                floor["floor_s"], floor["wall"]), "comparison": "%.1f s ansible -m setup" % setup,
                "ratio": "%.1f" % (floor["floor_s"] / setup), "goal": "-", "met": "-"})
    if "h" in fig:
        rows.append({"row": "(h) task files on the adoption path", "measured": "%d" % len(fig["h"]["files"]),
                     "comparison": "roles %s (listed below)" % ", ".join(PATH_ROLES), "ratio": "-", "goal": "<= 15",
                     "met": met(len(fig["h"]["files"]), 15)})
    if "f" in fig:
        f = fig["f"]
        reinstall = statistics.median(f["reinstall"])
        rows.append({"row": "(f) rollback after a failed upgrade", "measured": "%.1f s failed gate -> healthy" % f["rollback"],
                     "comparison": "%.1f s pip reinstall alone (median of %d)" % (reinstall, len(f["reinstall"])),
                     "ratio": "%.1f" % (f["rollback"] / reinstall), "goal": "-", "met": "-"})
    if "g" in fig:
        g = fig["g"]
        median = g["median"]
        rows.append({"row": "(g) dark window, %.1f GiB weights, staged" % g["gib"],
                     "measured": "%.2f s (median of %d)" % (median["staged"], len(g["runs"]["staged"])),
                     "comparison": "%.2f s warm floor" % median["warm"], "ratio": "%.2f" % g["staged_over_floor"],
                     "goal": "<= 1.5", "met": met(g["staged_over_floor"], 1.5)})
        rows.append({"row": "(g) dark window, cold (pages evicted)",
                     "measured": "%.2f s (median of %d)" % (median["cold"], len(g["runs"]["cold"])),
                     "comparison": "%.2f s warm floor" % median["warm"], "ratio": "%.2f" % g["cold_over_floor"],
                     "goal": "-", "met": "-"})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--collection", default=REPO, help="checkout whose roles are measured (default: this repository)")
    ap.add_argument("--quick", action="store_true", help="smoke run: fewer pairs and runs, 2 workers")
    ap.add_argument("--json", dest="json_out", help="write the figures as JSON here")
    ap.add_argument("--pairs", type=int, help="(c) paired runs (default 5, --quick 2)")
    ap.add_argument("--workers", type=int, help="(d) servers behind the router (default 4, --quick 2)")
    ap.add_argument("--runs", type=int, help="(a), (b) gate runs and (f) reinstalls (default 5, --quick 2)")
    ap.add_argument("--stage-gib", type=float, default=2.0, help="(g) GiB of weights (default 2)")
    ap.add_argument("--only", default="a,b,c,d,e,f,g", help="comma-separated rows to run (e runs on c's host: give c too; h comes with c)")
    ap.add_argument("--strategy", help="every ansible run of the suite (the peer and setup too) with this strategy "
                                       "(ANSIBLE_STRATEGY), e.g. inferops.sglang.linear; default: Ansible's configured one")
    args = ap.parse_args()
    if args.strategy:
        os.environ["ANSIBLE_STRATEGY"] = args.strategy
    collection = os.path.abspath(args.collection)
    pairs = args.pairs or (2 if args.quick else 5)
    workers = args.workers or (2 if args.quick else 4)
    runs = args.runs or (2 if args.quick else 5)
    only = set(args.only.split(","))
    if "e" in only and "c" not in only:
        ap.error("row e runs on row c's converged host: --only c,e")
    tmp = tempfile.mkdtemp(prefix="inferops-bench-run-")
    colls = collection_env(collection, tmp)
    began = time.time()
    say("measuring %s (collections: %s; strategy: %s); logs in %s"
        % (collection, colls, os.environ.get("ANSIBLE_STRATEGY", "configured"), tmp))
    fig = {"collection": collection, "quick": args.quick, "strategy": os.environ.get("ANSIBLE_STRATEGY", "")}
    try:
        if "a" in only:
            fig["a"] = measure_gate(runs, float(role_default(collection, "cutover", "cutover_health_budget")))
        if "b" in only:
            fig["b"] = measure_crash(runs, 30 if args.quick else 120)
        if "c" in only:
            try:
                inv, task_files = make_host(tmp, collection)
                if os.path.exists(task_files):
                    with open(task_files) as handle:
                        fig["h"] = {"files": adoption_path_files(handle)}
                else:
                    say("(h) the callback wrote no task list: row (h) left out")
                fig["c"] = measure_converged(tmp, collection, inv, pairs)
                if "e" in only:
                    fig["e"] = measure_round_trips(tmp, collection, inv)
            finally:
                bench_fleet.remove_containers([HOST])
        if "d" in only:
            fig["d"] = measure_rollout(workers, collection, colls)
            fig["d"]["workers"] = workers
        if "g" in only:
            fig["g"] = bench_stage.measure(runs, args.stage_gib, collection=collection)
        if "f" in only:
            try:
                fig["f"] = measure_upgrade_rollback(tmp, collection, runs)
            finally:
                bench_fleet.remove_containers([UPGRADE_HOST])
    finally:
        fig["suite_s"] = time.time() - began
        if args.json_out:
            with open(args.json_out, "w") as handle:
                json.dump(fig, handle, indent=2, default=str)
    print()
    print("inferops.sglang benchmarks - %s%s - suite took %.0f s" % (collection, " (quick)" if args.quick else "", fig["suite_s"]))
    for line in format_table(build_rows(fig)):
        print(line)
    if "e" in fig:
        floor = fig["e"]["floor"]
        print()
        if "floor_s" not in floor:
            print("(e) %s" % floor.get("error"))
        else:
            print("(e) the converged run (one more, JSON callback, docker shim): %.1f s = start-up, play changes and end"
                  " %.1f s + %d tasks with a round-trip %.1f s + %d tasks without %.1f s; the floor (every task without a"
                  " round-trip free) is %.1f s at most; the %d calls themselves took %.1f s (%d began outside every task)"
                  % (floor["wall"], floor["fixed_s"], floor["round_trip_tasks"], floor["round_trip_s"],
                     floor["local_tasks"], floor["local_s"], floor["floor_s"], floor["calls"], floor["calls_s"],
                     floor["unattributed"]))
    if "h" in fig:
        print()
        print("(h) the adoption path's task files, in the order they first ran: " + ", ".join(fig["h"]["files"]))
    if "d" in fig:
        d = fig["d"]
        print()
        print("(d) per batch (s): " + "; ".join("#%d wall %.1f = drain %.1f + load/gate %.1f + overhead %.1f" % (
            i + 1, b["wall"], b["drain"], b["gate"], b["overhead"]) for i, b in enumerate(d["batches"])))
        print("(d) before the first batch (plan, router plays): %.1f s; results %s; failed requests through the router: %s"
              % (d["before_rollout"], d["counts"], d["load_failed"]))
        print("(d) where the rest goes (profile_tasks, rollout play, summed over batches, drain and gate rounds left out):")
        for name, seconds, times in d["top"]:
            print("    %6.1f s  %2dx  %s" % (seconds, times, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
