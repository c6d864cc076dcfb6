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


def site(tmp_path, extra, verbose=False):
    """Run site.yml against the scenario's host with extra variables; return (rc, output, seconds)."""
    extra_file = tmp_path / "extra.json"
    extra_file.write_text(json.dumps(extra))
    started = time.time()
    proc = subprocess.run(
        ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "site.yml"), "-e", "@%s" % extra_file]
        + (["-vvv"] if verbose else []),
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


@pytest.fixture(name="serving")
def fixture_serving(host):
    """Every case starts from the known-good configuration serving."""
    assert host.service(UNIT).is_running
    assert health(host) == "200"
    return main_pid(host)


@pytest.mark.parametrize("host", HOSTS, indirect=True)
class TestRollback:
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
