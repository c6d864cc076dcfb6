"""Verify the default scenario: the hand-started reference server became a health-gated systemd service.

Each test asserts one item of the acceptance list; the unit check prints the journal when it fails.
"""

import json
import os
import shlex
import subprocess
import time

import pytest

import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")
REF = os.path.join(os.path.dirname(__file__), "..", "..", "resources", "reference")
UNIT = "sglang.service"
VENV_PY = "/root/ml-env/bin/python3"
RECORD = "/root/production_v2.md"

# Read every process of the host: pid, cmdline, cgroup, environ (as the kernel shows them).
PS_SNIPPET = r"""
import json, os
out = []
for d in os.listdir('/proc'):
    if not d.isdigit():
        continue
    try:
        cmd = open('/proc/%s/cmdline' % d, 'rb').read().split(b'\0')
        cg = open('/proc/%s/cgroup' % d).read()
        env = open('/proc/%s/environ' % d, 'rb').read().split(b'\0')
    except OSError:
        continue
    out.append({'pid': int(d), 'argv': [a.decode() for a in cmd if a],
                'cgroup': cg, 'env': dict(e.decode().split('=', 1) for e in env if b'=' in e)})
print(json.dumps(out))
"""


def reference_args():
    """The reference arguments as the service runs them: inventory/demo writes tp-size for the hand-started --tp."""
    tokens = shlex.split(open(os.path.join(REF, "launch_command.txt")).read())
    return ["--tp-size" if t == "--tp" else t for t in tokens[tokens.index("sglang.launch_server") + 1:]]


def processes(host):
    return json.loads(host.check_output("python3 -c %s", PS_SNIPPET))


def is_sglang(proc):
    argv = proc["argv"]
    text = " ".join(argv)
    return bool(argv) and (argv[0].startswith("sglang::") or "sglang.launch_server" in text)


def in_unit(proc):
    return any(line.endswith("/system.slice/" + UNIT) for line in proc["cgroup"].splitlines())


def main_pid(host):
    return int(host.check_output("systemctl show -p MainPID --value %s", UNIT))


@pytest.mark.parametrize("host", HOSTS, indirect=True)
class TestService:
    def test_unit_active_and_enabled(self, host):
        svc = host.service(UNIT)
        assert svc.is_running, host.run("journalctl -u %s --no-pager -n 80", UNIT).stdout
        assert svc.is_enabled

    def test_handstarted_pid_gone_and_no_stray_left(self, host):
        pid = int(host.file("/root/handstarted.pid").content_string.strip())
        record = host.file(RECORD).content_string
        assert "### pid %d on port 30000" % pid in record, "the pid noted in prepare is not the server the cutover replaced"
        procs = processes(host)
        assert pid not in {p["pid"] for p in procs}
        strays = [p for p in procs if is_sglang(p) and not in_unit(p)]
        assert strays == [], strays
        assert [p for p in procs if is_sglang(p) and in_unit(p)], "no SGLang process runs in the unit"

    def test_unit_command_line_carries_reference_arguments(self, host):
        cmdline = host.file("/proc/%d/cmdline" % main_pid(host)).content.split(b"\0")
        argv = [a.decode() for a in cmdline if a]
        assert argv[:3] == [VENV_PY, "-m", "sglang.launch_server"]
        assert argv[3:] == reference_args()

    def test_health_answers_200(self, host):
        code = host.check_output(
            "python3 -c %s",
            "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:30000/health', timeout=30).status)",
        )
        assert code == "200"

    def test_sitecustomize_still_a_link_with_hook_and_block(self, host):
        link = host.file("/usr/lib/python3.11/sitecustomize.py")
        assert link.is_symlink
        assert link.linked_to == "/etc/python3.11/sitecustomize.py"
        text = host.file("/etc/python3.11/sitecustomize.py").content_string
        assert "import apport_python_hook" in text and "apport_python_hook.install()" in text
        assert "# BEGIN inferops.sglang managed block" in text
        assert '_inferops_os.environ.setdefault("NCCL_PROTO", "LL")' in text
        host.run_expect([0], "/usr/bin/python3 -m py_compile /etc/python3.11/sitecustomize.py")
        # A backup of the replaced file was kept.
        assert host.run("ls /etc/python3.11/ | grep -c 'sitecustomize.py\\..*~'").stdout.strip() != "0"

    def test_sitecustomize_block_alone_sets_the_variables(self, host):
        out = host.check_output(
            "env -i %s -c %s", VENV_PY,
            "import os; print(os.environ.get('NCCL_PROTO'), os.environ.get('CUDA_HOME'), os.environ.get('TRITON_PTXAS_PATH'))",
        )
        assert out.split() == ["LL", "/usr/local/cuda-13.0", "/usr/local/cuda-13.0/bin/ptxas"]

    def test_scheduler_processes_see_cuda_and_nccl_environment(self, host):
        """Field case C08: spawn children (fresh interpreters) get the variables; read from /proc/<pid>/environ."""
        schedulers = [p for p in processes(host) if p["argv"] and p["argv"][0].startswith("sglang::scheduler")]
        assert len(schedulers) == 8
        for proc in schedulers:
            assert in_unit(proc)
            env = proc["env"]
            assert env.get("CUDA_HOME") == "/usr/local/cuda-13.0"
            assert env.get("TRITON_PTXAS_PATH") == "/usr/local/cuda-13.0/bin/ptxas"
            assert env.get("SGLANG_DISABLE_CUDNN_CHECK") == "1"
            assert env.get("NCCL_PROTO") == "LL" and env.get("NCCL_ALGO") == "Ring"
            assert env.get("SGLANG_ENABLE_SPEC_V2") == "1"

    def test_unit_path_is_literal_and_tools_were_found(self, host):
        """Field case C05: the venv's bin and CUDA's bin are written into PATH; the load ran ninja and nvcc."""
        env = host.check_output("systemctl show -p Environment --value %s", UNIT)
        path = [e for e in shlex.split(env) if e.startswith("PATH=")][0][5:]
        assert "$" not in path
        assert path.split(":")[:2] == ["/root/ml-env/bin", "/usr/local/cuda-13.0/bin"]
        state = json.loads(host.file("/run/sglang-double/30000/main.json").content_string)
        assert state["pid"] == main_pid(host)
        tools = json.dumps(state.get("tools", state))
        assert "ninja" in tools and "nvcc" in tools

    def test_long_load_is_not_killed_by_a_start_timeout(self, host):
        """Field case C06: the load (8 s) outlasts the host's 5 s DefaultTimeoutStartSec."""
        assert host.check_output("systemctl show -p DefaultTimeoutStartUSec --value") == "5s"
        assert host.check_output("systemctl show -p TimeoutStartUSec --value %s", UNIT) == "infinity"
        assert host.check_output("systemctl show -p NRestarts --value %s", UNIT) == "0"
        record = host.file(RECORD).content_string
        line = [ln for ln in record.splitlines() if ln.startswith("- Time to healthy:")][0]
        assert float(line.split(":")[1].split()[0]) > 5.0

    def test_unit_stops_the_tree_the_sglang_way(self, host):
        props = host.check_output("systemctl show -p KillMode -p TimeoutStopUSec -p LimitNOFILE -p LimitMEMLOCK %s", UNIT)
        assert "KillMode=mixed" in props
        assert "LimitMEMLOCK=infinity" in props

    def test_record_holds_previous_command_line_and_current_pid(self, host):
        record = host.file(RECORD)
        assert record.mode == 0o600
        text = record.content_string
        assert open(os.path.join(REF, "launch_command.txt")).read().strip() in text
        assert "SGLANG_ENABLE_SPEC_V2" in text
        assert "| 30 | 759.3 | 689.4 |" in text
        # The idempotence run ran after the record was written: the server kept its MainPID.
        assert "- MainPID: %d" % main_pid(host) in text

    def test_environment_files_are_not_world_readable(self, host):
        assert host.file("/etc/sglang/sglang.env").mode == 0o600
        cuda_env = host.file("/etc/sglang/cuda.env").content_string
        assert 'NCCL_PROTO="LL"' in cuda_env and 'CUDA_HOME="/usr/local/cuda-13.0"' in cuda_env


@pytest.mark.parametrize("host", HOSTS, indirect=True)
class TestReboot:
    """Runs last: restarting the host (the container) brings the service back healthy with no Ansible run."""

    def test_restart_brings_the_service_back_healthy(self, host):
        name = host.backend.get_hostname()
        before = main_pid(host)
        subprocess.run(["docker", "restart", "-t", "5", name], check=True, stdout=subprocess.DEVNULL, timeout=120)
        deadline = time.time() + 120
        status = None
        while time.time() < deadline:
            probe = subprocess.run(
                ["docker", "exec", name, "python3", "-c",
                 "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:30000/health', timeout=30).status)"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
            status = probe.stdout.strip()
            if status == "200":
                break
            time.sleep(2)
        assert status == "200", subprocess.run(["docker", "exec", name, "journalctl", "-u", UNIT, "--no-pager", "-n", "60"],
                                               stdout=subprocess.PIPE, text=True, check=False).stdout
        boot_pid = int(subprocess.run(["docker", "exec", name, "systemctl", "show", "-p", "MainPID", "--value", UNIT],
                                      stdout=subprocess.PIPE, text=True, check=True).stdout)
        assert boot_pid != before
        assert subprocess.run(["docker", "exec", name, "systemctl", "is-enabled", UNIT],
                              stdout=subprocess.PIPE, text=True, check=False).stdout.strip() == "enabled"
