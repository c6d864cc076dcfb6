"""Scenario no_systemd: PID 1 is `sleep`; the server runs under supervisord with the same argv and environment."""

import json
import os
import shlex
import subprocess
import time

import pytest

import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")
REF = os.path.join(os.path.dirname(__file__), "..", "..", "resources", "reference")
SUPERVISORCTL = "/opt/inferops-sglang/supervisor/bin/supervisorctl -c /etc/inferops-sglang/supervisord.conf"
SUPERVISORD = "/opt/inferops-sglang/supervisor/bin/supervisord -c /etc/inferops-sglang/supervisord.conf"
RECORD = "/root/production_v2.md"
SUPERVISOR_VENV = "/opt/inferops-sglang/supervisor"
CONTAINER = "sglang-host"


def reference_args():
    """The reference arguments as the service runs them: inventory/demo writes tp-size for the hand-started --tp."""
    tokens = shlex.split(open(os.path.join(REF, "launch_command.txt")).read())
    return ["--tp-size" if t == "--tp" else t for t in tokens[tokens.index("sglang.launch_server") + 1:]]


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

    def test_supervisord_starts_from_a_clean_environment(self, host):
        """As systemd starts a unit: the server gets its environment files, not the environment of the Ansible task
        (or shell, or cron) that started supervisord (on a real GPU host the task's PYTHONPATH reached the server)."""
        pid = int(host.check_output(SUPERVISORCTL + " pid"))
        names = sorted(item.split(b"=", 1)[0].decode() for item in host.file("/proc/%d/environ" % pid).content.split(b"\0") if item)
        assert names == ["LANG", "PATH"]

    def test_no_unit_was_rendered(self, host):
        assert not host.file("/etc/systemd/system/sglang.service").exists

    def test_server_runs_under_supervisord_with_the_reference_argv(self, host):
        pid = program_pid(host)
        argv = [a.decode() for a in host.file("/proc/%d/cmdline" % pid).content.split(b"\0") if a]
        assert argv[:3] == ["/root/ml-env/bin/python3", "-m", "sglang.launch_server"]
        # The pinned NCCL rendezvous port (service_nccl_port auto: 22000 + 30000 % 8000; issue 28) comes last.
        assert argv[3:] == reference_args() + ["--nccl-port", "28000"]
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

    def test_record_names_the_boot_hook(self, host):
        """C19: the record says which boot hook starts supervisord, and that it clears cron's stale marker."""
        text = host.file(RECORD).content_string
        assert "under supervisord" in text
        assert "cron @reboot (/etc/cron.d/inferops-sglang" in text
        assert "/run/crond.reboot" in text
        hook = host.file("/etc/cron.d/inferops-sglang").content_string
        assert "@reboot root" in hook and SUPERVISORD in hook and "rm -f /run/crond.reboot" in hook

    def test_supervisor_venv_came_up_without_ensurepip(self, host):
        """C20: prepare removed python3-venv (ensurepip) and python3-pip and left a half-built venv (bin/python,
        no pip); the role installed the distribution's venv package and rebuilt the venv."""
        assert host.package("python3.11-venv").is_installed
        assert not host.package("python3-pip").is_installed
        assert host.file(SUPERVISOR_VENV + "/bin/pip").exists
        out = host.check_output(SUPERVISOR_VENV + "/bin/python -c %s",
                                "import importlib.metadata as m; print(m.version('supervisor'))")
        assert out.strip() == "4.3.0"

    def test_restarted_container_comes_back_serving(self, host):
        """C19: /run survives a container restart (not a tmpfs) and cron's /run/crond.reboot with it; the boot hook
        still starts supervisord at each start: two restarts in a row, each back to /health 200."""
        assert host.check_output("stat -f -c %T /run") != "tmpfs"
        for dummy in range(2):
            subprocess.run(["docker", "restart", "-t", "5", CONTAINER], check=True, capture_output=True)
            status = None
            for dummy in range(120):
                status = health(host)
                if status == "200":
                    break
                time.sleep(1)
            assert status == "200", host.run("cat /var/log/sglang/supervisord.log; ls -la /run").stdout
            assert host.file("/proc/1/comm").content_string.strip() == "sleep"
            program_pid(host)

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
