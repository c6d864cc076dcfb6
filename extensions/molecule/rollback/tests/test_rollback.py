"""Scenario rollback: pre-flight errors change nothing; gate failures roll back to the known-good configuration.

After converge the host runs the reference configuration under sglang.service (the known-good one). Each case
runs site.yml again with variables that inject a failure through the SGLang test double, then asserts which
configuration serves, that /health answers, and what the deployment record says.
"""

import json
import os
import re
import subprocess
import time

import pytest

import testinfra.utils.ansible_runner

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("all")
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
UNIT = "sglang.service"
RECORD = "/root/production_v2.md"
GROUP_VARS = os.path.join(REPO, "inventory", "demo", "group_vars", "sglang_servers.yml")


def site(tmp_path, extra, verbose=False, options=()):
    """Run site.yml against the scenario's host with extra variables (and options, e.g. --check); return (rc, output,
    seconds)."""
    extra_file = tmp_path / "extra.json"
    extra_file.write_text(json.dumps(extra))
    started = time.time()
    proc = subprocess.run(
        ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "site.yml"), "-e", "@%s" % extra_file]
        + (["-vvv"] if verbose else []) + list(options),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, timeout=900,
        env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0"), check=False,
    )
    return proc.returncode, proc.stdout, time.time() - started


def reference_args():
    import yaml

    with open(GROUP_VARS) as handle:
        return yaml.safe_load(handle)["service_server_args"]


def env_with(**more):
    env = {"LD_LIBRARY_PATH": "/usr/local/cuda-13.0/lib64", "SGLANG_ENABLE_SPEC_V2": "1", "SGLANG_DOUBLE_LOAD_SECONDS": "8"}
    env.update(more)
    return env


def main_pid(host):
    return int(host.check_output("systemctl show -p MainPID --value %s", UNIT))


def health(host):
    return host.run(
        "python3 -c %s",
        "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:30000/health', timeout=30).status)",
    ).stdout.strip()


def unit_text(host):
    return host.file("/etc/systemd/system/%s" % UNIT).content_string


def host_state(host):
    """What a run may change: the unit's main pid, the checksums of every file the collection writes, the pids of the
    SGLang processes."""
    sums = host.check_output("sh -c %s", "find /etc/systemd/system/%s /etc/sglang /var/lib/inferops-sglang %s "
                                         "/usr/lib/python3.11/sitecustomize.py /etc/python3.11/sitecustomize.py "
                                         "-type f -exec sha256sum {} + 2>/dev/null | sort" % (UNIT, RECORD))
    pids = sorted(p.pid for p in host.process.filter(user="root")
                  if p.args.startswith("sglang::") or "sglang.launch_server" in p.args)
    return main_pid(host), sums, pids


def changed_tasks(out):
    """Names of the tasks that reported changed (in check mode: would change) in an ansible-playbook output."""
    names = []
    task = None
    for line in out.splitlines():
        if line.startswith(("TASK [", "RUNNING HANDLER [")):
            task = line.split("[", 1)[1].rsplit("]", 1)[0]
        elif line.startswith("changed: ["):
            names.append(task)
    return names


@pytest.fixture(name="serving")
def fixture_serving(host):
    """Every case starts from the known-good configuration serving."""
    assert host.service(UNIT).is_running
    assert health(host) == "200"
    return main_pid(host)


@pytest.mark.parametrize("host", HOSTS, indirect=True)
class TestRollback:
    def test_check_mode_on_a_one_flag_change_changes_nothing_and_says_what_would_happen(self, host, serving, tmp_path):
        """Field case C22: --check --diff on a converged host with one changed flag neither fails nor changes the host
        (the server is not restarted, no file written, no record), and says what a real run would do: the unit's diff,
        the argument change, the restart and the gate; the fleet summary says would_restart, not deployed.
        --tags sglang_service shows the unit's diff and nothing else would change."""
        args = dict(reference_args(), **{"mem-fraction-static": 0.85})
        before = host_state(host)
        # The converged configuration (the inventory's environment) with one flag changed.
        rc, out, dummy = site(tmp_path, {"service_server_args": args}, options=["--check", "--diff"])
        assert rc == 0, out[-4000:]
        assert re.search(r"sglang-host\s*:.* failed=0 ", out), out[-2000:]
        assert host_state(host) == before, "the check run changed the host"
        assert "-    --mem-fraction-static 0.88" in out and "+    --mem-fraction-static 0.85" in out, "no unit diff"
        assert '"cutover": "sglang.service (systemd): would restart"' in out, out[-6000:]
        assert re.search(r'"mem-fraction-static": \{\s*"new": "?0.85"?,\s*"old": "?0.88"?', out), "no argument diff"
        assert "restart sglang.service and gate it on" in out
        assert "would restart (check mode: nothing was stopped, started or gated" in out
        assert "| sglang-host | 1 | would restart |" in out
        assert "is healthy on" not in out and "| deployed |" not in out

        rc, out, dummy = site(tmp_path, {"service_server_args": args}, options=["--check", "--diff", "--tags", "sglang_service"])
        assert rc == 0, out[-4000:]
        assert "+    --mem-fraction-static 0.85" in out
        # No failure either, rescued or not (the cutover's argument validation runs on every tag).
        assert re.search(r"sglang-host\s*:.* failed=0 .* rescued=0 ", out) and "fatal:" not in out, out[-3000:]
        assert changed_tasks(out) == ["inferops.sglang.service : Render the systemd unit"], changed_tasks(out)
        assert "inferops.sglang.cutover : Decide" not in out and "inferops.sglang.cuda_env : Render" not in out
        assert host_state(host) == before

    def test_a_phase_run_alone_is_followed_through_by_the_next_run(self, host, serving, tmp_path):
        """Tags: a real run of one phase (--tags sglang_service) renders the unit and starts nothing; the next full run
        changes no file, yet restarts onto it (the live files differ from the copies kept with the known-good
        configuration) instead of reporting the server unchanged."""
        args = dict(reference_args(), **{"mem-fraction-static": 0.85})
        rc, out, dummy = site(tmp_path, {"service_server_args": args}, options=["--tags", "sglang_service"])
        assert rc == 0, out[-3000:]
        assert main_pid(host) == serving and "--mem-fraction-static 0.85" in unit_text(host)
        rc, out, dummy = site(tmp_path, {"service_server_args": args})
        assert rc == 0, out[-3000:]
        assert "inferops.sglang.service : Render the systemd unit" not in changed_tasks(out)
        pid = main_pid(host)
        assert pid != serving, out[-3000:]
        assert "--mem-fraction-static 0.85" in host.check_output("sh -c %s", "tr '\\0' ' ' < /proc/%d/cmdline" % pid)
        assert "| sglang-host | 1 | deployed |" in out and health(host) == "200"
        # Back to the converged configuration for the cases that follow.
        rc, out, dummy = site(tmp_path, {})
        assert rc == 0 and "--mem-fraction-static 0.88" in unit_text(host), out[-3000:]

    def test_unknown_flag_is_caught_before_anything_changes(self, host, serving, tmp_path):
        before_unit = unit_text(host)
        args = dict(reference_args(), **{"no-such-flag": 3})
        rc, out, dummy = site(tmp_path, {"service_server_args": args, "service_environment": env_with()})
        assert rc != 0
        assert "--no-such-flag" in out and "own argument parser rejects" in out
        assert main_pid(host) == serving, "the running server was touched"
        assert unit_text(host) == before_unit
        assert health(host) == "200"

    def test_crash_during_load_fails_fast_and_rolls_back(self, host, serving, tmp_path):
        rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(),
                                         "service_environment": env_with(SGLANG_DOUBLE_FAIL="crash_during_load")})
        assert rc != 0
        assert "Rolled back to the last known-good configuration" in out, out[-4000:]
        record = host.file(RECORD).content_string
        assert "rolled back to the last known-good configuration" in record
        # The double crashes halfway through its 8 s load; the gate must say so well before its budget.
        seconds = float(re.search(r"the server exited .*? after ([0-9.]+) s", record).group(1))
        assert seconds < 4 + 5, record
        assert "SGLANG_DOUBLE_FAIL" not in host.file("/etc/sglang/sglang.env").content_string
        assert host.service(UNIT).is_running and health(host) == "200"

    def test_never_healthy_exhausts_the_budget_and_rolls_back(self, host, serving, tmp_path):
        rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(), "cutover_health_budget": 30,
                                         "service_environment": env_with(SGLANG_DOUBLE_FAIL="never_healthy")})
        assert rc != 0
        assert "not ready after the whole budget of 30 s" in out, out[-4000:]
        assert "Rolled back" in out
        assert "SGLANG_DOUBLE_FAIL" not in host.file("/etc/sglang/sglang.env").content_string
        assert host.service(UNIT).is_running and health(host) == "200"

    def test_a_generation_that_hangs_after_health_fails_fast_and_rolls_back(self, host, serving, tmp_path):
        """Issue 27: the new server answers /health 200 (its warm-up passed), yet a chat completion hangs
        (SGLANG_DOUBLE_FAIL=chat_hangs). Broken, not "not ready": the gate fails after one smoke timeout, in under 60 s
        from the start (budget 900 s), and the known-good configuration serves again."""
        rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(), "cutover_smoke_timeout": 20,
                                         "service_environment": env_with(SGLANG_DOUBLE_FAIL="chat_hangs",
                                                                         SGLANG_DOUBLE_LOAD_SECONDS="3")})
        assert rc != 0
        assert "Rolled back to the last known-good configuration" in out, out[-4000:]
        failed_gate = json.loads(re.search(r'FAILED! => (\{.*"the server is broken: .*\})', out).group(1))
        assert failed_gate["failure_kind"] == "broken" and failed_gate["last_status"] == 200, failed_gate
        assert "no answer within 20 s (the generation hangs)" in failed_gate["reason"]
        assert failed_gate["elapsed"] < 60, failed_gate["elapsed"]
        print("chat_hangs: the gate failed %.1f s after the start (budget 900 s)" % failed_gate["elapsed"])
        assert "the server is broken" in host.file(RECORD).content_string
        assert "SGLANG_DOUBLE_FAIL" not in host.file("/etc/sglang/sglang.env").content_string
        assert host.service(UNIT).is_running and health(host) == "200"

    def test_a_thinking_model_is_adopted_and_never_stopped_by_a_failed_check(self, host, serving, tmp_path):
        """Field case C36: a hand-started thinking model (--reasoning-parser kimi_k2) answers an 8-token completion with
        content null, reasoning_content filled, finish_reason length. It is adopted (the gate counts that as
        generation); a converged re-run keeps its MainPID. A re-run whose smoke check fails (max_tokens 0: an empty
        completion) on the unchanged, healthy server fails the host with the answer and leaves the server serving:
        same MainPID, /health 200."""
        thinking = dict(reference_args(), **{"reasoning-parser": "kimi_k2"})
        launch = open(os.path.join(REPO, "extensions", "molecule", "resources", "reference", "launch_command.txt")).read().strip()
        host.run_expect([0], "systemctl stop %s", UNIT)
        host.run_expect([0], "cd /root && setsid nohup env SGLANG_DOUBLE_LOAD_SECONDS=1 CUDA_HOME=/usr/local/cuda-13.0 "
                             "LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64 SGLANG_ENABLE_SPEC_V2=1 "
                             "PATH=/root/ml-env/bin:/usr/local/cuda-13.0/bin:/usr/bin:/bin %s --reasoning-parser kimi_k2 "
                             ">/root/thinking.log 2>&1 < /dev/null &" % launch)
        for dummy in range(60):
            if health(host) == "200":
                break
            time.sleep(1)
        chat = ("import json, urllib.request as u\n"
                "r = u.Request('http://127.0.0.1:30000/v1/chat/completions', method='POST', "
                "headers={'Content-Type': 'application/json'}, data=json.dumps({'model': 'default', 'max_tokens': 8, "
                "'messages': [{'role': 'user', 'content': 'Reply with one word.'}]}).encode())\n"
                "print(json.dumps(json.load(u.urlopen(r, timeout=30))['choices'][0]))")
        choice = json.loads(host.check_output("python3 -c %s", chat))
        assert choice["message"]["content"] is None and choice["message"]["reasoning_content"], choice
        assert choice["finish_reason"] == "length"
        try:
            rc, out, dummy = site(tmp_path, {"service_server_args": thinking, "service_environment": env_with()})
            assert rc == 0, out[-4000:]
            assert "| sglang-host | 1 | deployed |" in out
            adopted = main_pid(host)
            assert "--reasoning-parser kimi_k2" in host.check_output("sh -c %s", "tr '\\0' ' ' < /proc/%d/cmdline" % adopted)

            rc, out, dummy = site(tmp_path, {"service_server_args": thinking, "service_environment": env_with()})
            assert rc == 0, out[-4000:]
            assert "| sglang-host | 1 | unchanged |" in out and main_pid(host) == adopted

            rc, out, dummy = site(tmp_path, {"service_server_args": thinking, "service_environment": env_with(),
                                             "cutover_smoke_extra_body": {"max_tokens": 0}})
            assert rc != 0
            assert "the server is broken: /health answered 200, but smoke request 1 of 1 failed: the completion is empty" in out, out[-4000:]
            assert "(answer: {" in out and "reasoning_content" in out      # the answer is shown
            assert "it was left serving as it was (not stopped, not taken out of the router)" in out
            assert "Rolled back" not in out
            assert "it was left serving" in host.file(RECORD).content_string
            assert main_pid(host) == adopted, "the healthy, unchanged server was restarted"
            assert health(host) == "200"
        finally:
            # Back to the converged configuration for the cases that follow.
            rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(), "service_environment": env_with()})
            assert rc == 0, out[-3000:]

    def test_a_slower_configuration_is_refused_and_rolled_back(self, host, serving, tmp_path):
        """Field case C38 (issue 27 item 4): the known-good configuration (EAGLE3, 2 steps: the double's accept length
        2.6) keeps its figures in the known-good manifest; 1 step (accept length 1.8, fewer tokens per decode step) and
        then a decode step three times slower (SGLANG_DOUBLE_DECODE_SECONDS) each fail the performance gate with both
        figures in the message, the record and the fleet summary, and roll back."""
        rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(), "service_environment": env_with()})
        assert rc == 0, out[-3000:]
        manifest = "/var/lib/inferops-sglang/known-good/manifest.json"
        good = json.loads(host.file(manifest).content_string)["perf"]
        assert good["accept_length"] == pytest.approx(2.6, abs=0.1) and good["decode_tokens_per_s"] > 0, good
        assert (good["max_tokens"], good["concurrency"]) == (256, 8)
        serving = main_pid(host)

        def refused(extra, figure):
            rc, out, dummy = site(tmp_path, dict({"service_server_args": reference_args(),
                                                  "service_environment": env_with()}, **extra))
            assert rc != 0
            message = re.search(r"slower than the known-good configuration by more than cutover_perf_tolerance \(20 %%\): "
                                r"[^\n]*?%s [0-9.]+%s is [0-9]+ %% below the known-good [0-9.]+" % figure, out)
            assert message, out[-5000:]
            assert "known-good: decode throughput %g tokens/s, accept length %g" % (
                good["decode_tokens_per_s"], good["accept_length"]) in out
            assert "Rolled back to the last known-good configuration" in out
            summary = [line for line in out.splitlines() if "- **sglang-host**" in line and "slower than the known-good" in line]
            assert summary, "the fleet summary does not name the figures"
            record = host.file(RECORD).content_string
            assert "rolled back to the last known-good configuration" in record and "slower than the known-good" in record
            assert "- Performance (decode tokens/s, accept length; cutover_perf_*): this configuration" in record
            assert json.loads(host.file(manifest).content_string)["perf"] == good, "the refused figures were kept"
            assert host.service(UNIT).is_running and health(host) == "200" and main_pid(host) != serving
            return message.group(0)

        # 1 speculative step: the accept length falls (and the throughput with it)
        print(refused({"service_server_args": dict(reference_args(), **{"speculative-num-steps": 1})},
                      ("accept length", "")))
        cmdline = host.check_output("sh -c %s", "tr '\\0' ' ' < /proc/%d/cmdline" % main_pid(host))
        assert "--speculative-num-steps 2" in cmdline
        # the same flags, decoding three times slower: the throughput falls, the accept length does not
        print(refused({"service_environment": env_with(SGLANG_DOUBLE_DECODE_SECONDS="0.03")},
                      ("decode throughput", " tokens/s")))
        assert "SGLANG_DOUBLE_DECODE_SECONDS" not in host.file("/etc/sglang/sglang.env").content_string

    def test_port_held_by_another_program_stops_the_run(self, host, serving, tmp_path):
        """Field case C07: a listener that is not SGLang; nothing is stopped, no restart loop."""
        host.run_expect([0], "systemctl stop %s", UNIT)
        host.run_expect([0], "setsid nohup python3 -m http.server 30000 --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null & "
                             "echo $! > /root/intruder.pid")
        try:
            for dummy in range(50):
                if host.run("python3 -c %s", "import socket; socket.create_connection(('127.0.0.1', 30000), 1)").rc == 0:
                    break
                time.sleep(0.1)
            intruder = int(host.file("/root/intruder.pid").content_string.strip())
            rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(), "service_environment": env_with()})
            assert rc != 0
            assert "Port 30000 is held by python3" in out and "pid %d" % intruder in out
            assert host.process.filter(pid=intruder), "the other program was stopped"
            assert not host.service(UNIT).is_running, "the unit was started into a restart loop"
        finally:
            host.run("kill $(cat /root/intruder.pid)")
            host.run("systemctl start %s", UNIT)
            for dummy in range(60):
                if health(host) == "200":
                    break
                time.sleep(1)

    def test_orphaned_scheduler_holding_a_gpu_is_cleaned_before_the_start(self, host, serving, tmp_path):
        """Field case C01: dp schedulers orphaned to PID 1 keep the GPU locks; the start needs them gone."""
        host.run_expect([0], "systemctl stop %s", UNIT)
        host.run_expect([0], "cd /root && setsid nohup env SGLANG_DOUBLE_LOAD_SECONDS=1 CUDA_HOME=/usr/local/cuda-13.0 "
                             "PATH=/root/ml-env/bin:/usr/bin:/bin /root/ml-env/bin/python3 -m sglang.launch_server "
                             "--model-path /shared/kimi-k2.5-int4 --dp-size 2 --port 30002 "
                             ">/root/orphan.log 2>&1 < /dev/null &")
        for dummy in range(60):
            schedulers = [p for p in host.process.filter(user="root") if p.args.startswith("sglang::scheduler_DP")]
            if len(schedulers) == 2:
                break
            time.sleep(0.5)
        assert len(schedulers) == 2
        # Kill only once the server is up: schedulers killed mid-load fail on their own (broken pipe), as in SGLang.
        for dummy in range(60):
            if host.run("python3 -c %s", "import urllib.request;urllib.request.urlopen("
                        "'http://127.0.0.1:30002/health', timeout=10)").rc == 0:
                break
            time.sleep(0.5)
        launcher = int(host.check_output("pgrep -o -f -- %s", "launch_server .*--port 30002"))
        controllers = [p.pid for p in host.process.filter(user="root") if p.args.startswith("sglang::data_parallel")]
        host.run_expect([0], "kill -9 " + " ".join(str(pid) for pid in [launcher] + controllers))
        time.sleep(1)
        orphans = [p.pid for p in host.process.filter(user="root") if p.args.startswith("sglang::scheduler_DP")]
        assert len(orphans) == 2 and all(host.process.get(pid=o).ppid == 1 for o in orphans)
        rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(), "service_environment": env_with()})
        assert rc == 0, out[-3000:]
        assert not [p for p in host.process.filter(user="root") if p.pid in orphans]
        assert host.service(UNIT).is_running and health(host) == "200"

    def test_api_key_lives_in_a_config_file_and_a_refused_key_fails_fast(self, host, serving, tmp_path):
        """An API key: only in SGLang's --config file (0600), never in argv, the unit, the record or the -vvv output;
        a refused key ends the gate at once and the known-good configuration serves again."""
        key = "sk-inferops-%s" % os.urandom(8).hex()
        config = "/etc/sglang/sglang-secrets.yaml"
        rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(), "service_environment": env_with(),
                                         "service_secret_args": {"api-key": key}}, verbose=True)
        assert rc == 0, out[-3000:]
        assert key not in out
        secret = host.file(config)
        assert secret.mode == 0o600 and secret.user == "root" and key in secret.content_string
        assert config in unit_text(host) and key not in unit_text(host)
        assert key not in host.file(RECORD).content_string
        cmdlines = host.check_output("sh -c %s", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '")
        assert "--config %s" % config in cmdlines and key not in cmdlines
        models = ("import urllib.request as u;r=u.Request('http://127.0.0.1:30000/v1/models'%s)\n"
                  "try:\n print(u.urlopen(r, timeout=30).status)\nexcept Exception as e:\n print(getattr(e, 'code', e))")
        assert host.run("python3 -c %s", models % "").stdout.strip() == "401"
        assert host.run("python3 -c %s", models % (",headers={'Authorization':'Bearer %s'}" % key)).stdout.strip() == "200"

        # The gate sends a key the server refuses: it fails at once, not after its 900 s budget, and rolls back.
        rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(),
                                         "service_environment": env_with(SGLANG_DOUBLE_LOAD_SECONDS="3"),
                                         "service_secret_args": {"api-key": key}, "cutover_api_key": "sk-wrong"})
        assert rc != 0
        assert "the key was refused" in out and "Rolled back to the last known-good configuration" in out, out[-4000:]
        failed_gate = re.search(r'FAILED! => (\{.*"the key was refused.*\})', out).group(1)
        assert json.loads(failed_gate)["elapsed"] < 10, failed_gate
        assert key not in out
        assert host.service(UNIT).is_running and health(host) == "200"
        assert host.run("python3 -c %s", models % (",headers={'Authorization':'Bearer %s'}" % key)).stdout.strip() == "200"

    def test_degraded_server_is_seen_in_seconds(self, host, serving, tmp_path):
        """Field case C25: a converged server lost sglang::scheduler_TP3 (kill -9). A re-run with no change sees it
        from the facts in seconds; cutover_on_degraded=fail fails the host and changes nothing, the default restarts
        it through the normal cutover (gate, rollback on failure)."""
        # Start from this test's configuration (an earlier case may have left another known-good one).
        rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(), "service_environment": env_with()})
        assert rc == 0, out[-3000:]
        serving = main_pid(host)
        before_unit = unit_text(host)
        host.run_expect([0], "pkill -9 -f '^sglang::scheduler_TP3'")
        time.sleep(1)
        rc, out, seconds = site(tmp_path, {"service_server_args": reference_args(), "service_environment": env_with(),
                                           "cutover_on_degraded": "fail"})
        assert rc != 0
        assert "degraded: 7 of 8 scheduler processes are running" in out, out[-4000:]
        assert "cutover_on_degraded is fail" in out and "Nothing was changed." in out
        assert "rollback failed" not in out and "left stopped" not in out
        assert "the running server is degraded and was left as it is" in host.file(RECORD).content_string
        assert seconds < 120, "seen after %.0f s" % seconds
        assert main_pid(host) == serving, "the degraded server was touched"
        assert unit_text(host) == before_unit

        rc, out, seconds = site(tmp_path, {"service_server_args": reference_args(), "service_environment": env_with()})
        assert rc == 0, out[-4000:]
        assert seconds < 180, "restarted after %.0f s" % seconds
        assert main_pid(host) != serving
        record = host.file(RECORD).content_string
        assert "- Action: restart (the running server was degraded: 7 of 8 scheduler processes are running" in record
        schedulers = [p for p in host.process.filter(user="root") if p.args.startswith("sglang::scheduler_TP")]
        assert len(schedulers) == 8
        assert health(host) == "200"

    def test_malformed_adopted_value_is_refused_before_anything_changes(self, host, serving, tmp_path):
        """Field case C23: the hand-started server to adopt has CUDA_HOME=':/usr/local/cuda-13.0' (a shell slip);
        the adopted environment is checked like a written one, naming the variable, never its value."""
        before_unit = unit_text(host)
        host.run_expect([0], "cd /root && setsid nohup env -i SGLANG_DOUBLE_LOAD_SECONDS=1 SGLANG_DOUBLE_REQUIRE_TOOLS=0 CUDA_HOME=:/usr/local/cuda-13.0 "
                             "SGLANG_DOUBLE_GPU_DIR=/tmp/adopt-gpus PATH=/root/ml-env/bin:/usr/local/cuda-13.0/bin:/usr/bin:/bin "
                             "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 "
                             "--port 30003 >/root/adopt.log 2>&1 < /dev/null & echo $! > /root/adopt.pid")
        try:
            stray = int(host.file("/root/adopt.pid").content_string.strip())
            rc, out, dummy = site(tmp_path, {"service_server_args": dict(reference_args(), port=30003), "service_adopt": True,
                                             "service_environment": {}})
            assert rc != 0
            message = [line for line in out.splitlines() if "CUDA_HOME: must be one absolute path" in line]
            assert message, out[-4000:]
            assert ":/usr/local/cuda-13.0" not in message[0]
            assert host.process.filter(pid=stray), "the hand-started server was stopped"
            assert main_pid(host) == serving and unit_text(host) == before_unit
        finally:
            host.run("kill $(cat /root/adopt.pid)")

    def test_port_held_by_another_users_process_is_named(self, host, serving, tmp_path):
        """Field case C24: root without CAP_SYS_PTRACE (docker's default) cannot read /proc/PID/fd of another user's
        process; the owner of the port is named from /proc/net/tcp and the pre-flight says why its pid is unknown."""
        host.run_expect([0], "cd /tmp && setsid nohup runuser -u nobody -- python3 -m http.server 30004 --bind 127.0.0.1 "
                             ">/dev/null 2>&1 < /dev/null &")
        try:
            for dummy in range(50):
                if host.run("python3 -c %s", "import socket; socket.create_connection(('127.0.0.1', 30004), 1)").rc == 0:
                    break
                time.sleep(0.1)
            rc, out, dummy = site(tmp_path, {"service_server_args": dict(reference_args(), port=30004),
                                             "service_environment": env_with()})
            assert rc != 0
            assert "Port 30004 is held by a process of user nobody (uid 65534) whose pid this run cannot see" in out, out[-4000:]
            assert "None (pid None)" not in out
            assert main_pid(host) == serving
        finally:
            host.run("pkill -f 'http.server 30004'")

    def test_a_stray_stuck_in_the_driver_leaves_nothing_started(self, host, serving, tmp_path):
        """A stray scheduler that SIGKILL cannot end (state D, frozen in a cgroup v1 freezer here) still holds its GPU:
        neither the new server nor the known-good one is started, the host fails saying a reboot is needed, and the
        record says so."""
        freezer = "/sys/fs/cgroup/freezer"
        if not host.file(freezer).is_directory or host.run("mkdir -p %s/inferops-stuck", freezer).rc != 0:
            pytest.skip("no writable cgroup v1 freezer in this container")
        host.run_expect([0], "systemctl stop %s", UNIT)
        host.run_expect([0], "cd /root && setsid nohup env SGLANG_DOUBLE_LOAD_SECONDS=1 CUDA_HOME=/usr/local/cuda-13.0 "
                             "PATH=/root/ml-env/bin:/usr/bin:/bin /root/ml-env/bin/python3 -m sglang.launch_server "
                             "--model-path /shared/kimi-k2.5-int4 --port 30005 >/root/stuck.log 2>&1 < /dev/null &")
        try:
            for dummy in range(60):
                scheduler = [p.pid for p in host.process.filter(user="root") if p.args.startswith("sglang::scheduler")]
                if scheduler:
                    break
                time.sleep(0.5)
            assert scheduler
            host.run_expect([0], "echo %d > %s/inferops-stuck/cgroup.procs && echo FROZEN > %s/inferops-stuck/freezer.state"
                            % (scheduler[0], freezer, freezer))
            rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(), "service_environment": env_with(),
                                             "cutover_stop_grace_period": 3, "cutover_kill_timeout": 3})
            assert rc != 0
            assert "a process stuck in the driver holds the GPUs: reboot needed" in out, out[-4000:]
            assert not host.service(UNIT).is_running, "a server was started on GPUs still held"
            assert "reboot needed" in host.file(RECORD).content_string
        finally:
            host.run("echo THAWED > %s/inferops-stuck/freezer.state", freezer)
            host.run("pkill -9 -f '[p]ort 30005'")
            host.run("pkill -9 -f '^sglang::'")
            time.sleep(1)
            host.run("rmdir %s/inferops-stuck", freezer)
            host.run("systemctl start %s", UNIT)
            for dummy in range(60):
                if health(host) == "200":
                    break
                time.sleep(1)

    def test_the_block_lands_in_the_sitecustomize_the_server_imports(self, host, serving, tmp_path):
        """Field case C13 (runs last: it changes the interpreter). An interpreter that imports no sitecustomize (as a
        pyenv, uv or python.org build): the block goes into a new file in the venv's site-packages, not into a
        directory named sitecustomize.py. Then PYTHONPATH=/opt/patches with a sitecustomize.py of the team's own,
        which shadows the venv's: the block goes there, the unit gets the PYTHONPATH, and a child spawned the way
        SGLang starts its schedulers sees the variables (the role checks that itself; checked here again)."""
        host.run_expect([0], "rm -f /usr/lib/python3.11/sitecustomize.py")
        rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(), "service_environment": env_with()})
        assert rc == 0, out[-4000:]
        venv_site = host.file("/root/ml-env/lib/python3.11/site-packages/sitecustomize.py")
        assert venv_site.is_file and "BEGIN inferops.sglang managed block" in venv_site.content_string
        spawn = ("import multiprocessing as m\nif __name__ == '__main__':\n p = m.get_context('spawn').Process("
                 "target=exec, args=(\"import os; print(os.environ.get('CUDA_HOME'))\",)); p.start(); p.join()")
        assert host.run("env -i PATH=/usr/bin:/bin /root/ml-env/bin/python3 -c %s", spawn).stdout.strip() == "/usr/local/cuda-13.0"

        host.run_expect([0], "mkdir -p /opt/patches && printf '# the team patches\\nPATCHED = 1\\n' > /opt/patches/sitecustomize.py")
        rc, out, dummy = site(tmp_path, {"service_server_args": reference_args(),
                                         "service_environment": env_with(PYTHONPATH="/opt/patches")})
        assert rc == 0, out[-4000:]
        patches = host.file("/opt/patches/sitecustomize.py").content_string
        assert "BEGIN inferops.sglang managed block" in patches and "PATCHED = 1" in patches
        # the team's directory first; the collection's log formatter's directory after it (it shadows nothing)
        assert 'PYTHONPATH="/opt/patches:/usr/local/lib/inferops-sglang/python"' in host.file(
            "/etc/sglang/sglang.env").content_string
        assert host.run("env -i PATH=/usr/bin:/bin PYTHONPATH=/opt/patches /root/ml-env/bin/python3 -c %s",
                        spawn).stdout.strip() == "/usr/local/cuda-13.0"
        assert health(host) == "200"
