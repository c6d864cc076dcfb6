"""Scenario no_systemd: PID 1 is `sleep`; the server runs under supervisord with the same argv and environment."""

import json
import os
import shlex
import time

import pytest

import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")
REF = os.path.join(os.path.dirname(__file__), "..", "..", "resources", "reference")
SUPERVISORCTL = "/opt/inferops-sglang/supervisor/bin/supervisorctl -c /etc/inferops-sglang/supervisord.conf"
SUPERVISORD = "/opt/inferops-sglang/supervisor/bin/supervisord -c /etc/inferops-sglang/supervisord.conf"
RECORD = "/root/production_v2.md"


def reference_args():
    tokens = shlex.split(open(os.path.join(REF, "launch_command.txt")).read())
    return tokens[tokens.index("sglang.launch_server") + 1:]


def health(host):
    return host.run(
        "python3 -c %s",
        "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:30000/health', timeout=30).status)",
    ).stdout.strip()


def program_pid(host):
    """The program's pid once supervisord has it RUNNING (startsecs=10 can outlast a short load)."""
    out = ""
    for dummy in range(30):
        out = host.check_output(SUPERVISORCTL + " status sglang")
        if "RUNNING" in out:
            return int(out.split("pid ")[1].split(",")[0])
        time.sleep(1)
    raise AssertionError(out)


@pytest.mark.parametrize("host", HOSTS, indirect=True)
class TestNoSystemd:
    def test_pid1_is_not_systemd(self, host):
        assert host.file("/proc/1/comm").content_string.strip() == "sleep"
        assert host.exists("systemctl"), "systemd is installed, only not running"

    def test_no_unit_was_rendered(self, host):
        assert not host.file("/etc/systemd/system/sglang.service").exists

    def test_server_runs_under_supervisord_with_the_reference_argv(self, host):
        pid = program_pid(host)
        argv = [a.decode() for a in host.file("/proc/%d/cmdline" % pid).content.split(b"\0") if a]
        assert argv[:3] == ["/root/ml-env/bin/python3", "-m", "sglang.launch_server"]
        assert argv[3:] == reference_args()
        assert health(host) == "200"

    def test_program_matches_the_unit_semantics(self, host):
        conf = host.file("/etc/inferops-sglang/supervisor.d/sglang.conf").content_string
        for line in ("autorestart=unexpected", "stopsignal=TERM", "stopwaitsecs=120", "killasgroup=true",
                     "stopasgroup=false", "stdout_logfile=/var/log/sglang/sglang.log"):
            assert line in conf
        assert host.file("/var/log/sglang/sglang.log").contains("fired up and ready to roll")

    def test_server_log_is_closed_to_others(self, host):
        """SGLang logs its server_args (API keys included) at start-up: the log is not readable by others."""
        assert host.file("/var/log/sglang").mode & 0o007 == 0
        assert host.file("/var/log/sglang/sglang.log").mode & 0o007 == 0
        assert "server_args=ServerArgs(" in host.file("/var/log/sglang/sglang.log").content_string
        denied = host.run("runuser -u nobody -- cat /var/log/sglang/sglang.log")
        assert denied.rc != 0 and "Permission denied" in denied.stderr

    def test_schedulers_see_the_same_environment(self, host):
        state = json.loads(host.file("/run/sglang-double/30000/scheduler_TP0.json").content_string)
        env = state["environ"]
        assert env["NCCL_PROTO"] == "LL" and env["CUDA_HOME"] == "/usr/local/cuda-13.0"
        assert env["SGLANG_ENABLE_SPEC_V2"] == "1"
        assert env["PATH"].split(":")[:2] == ["/root/ml-env/bin", "/usr/local/cuda-13.0/bin"]

    def test_record_says_nothing_starts_it_at_boot(self, host):
        text = host.file(RECORD).content_string
        assert "under supervisord" in text
        assert "the container entrypoint must run " + SUPERVISORD in text

    def test_restarting_supervisord_brings_the_server_back(self, host):
        before = program_pid(host)
        host.run_expect([0], SUPERVISORCTL + " shutdown")
        for dummy in range(60):
            if host.run("pgrep -f 'supervisord -c'").rc != 0 and host.run("pgrep -f sglang::").rc != 0:
                break
            time.sleep(1)
        host.run_expect([0], SUPERVISORD)
        status = None
        for dummy in range(90):
            status = health(host)
            if status == "200":
                break
            time.sleep(1)
        assert status == "200"
        assert program_pid(host) != before
