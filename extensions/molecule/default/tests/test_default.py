"""Verify the default scenario: the hand-started reference server became a health-gated systemd service.

Each test asserts one item of the acceptance list; the unit check prints the journal when it fails.
"""

import json
import os
import re
import shlex
import subprocess
import time

import pytest

import testinfra.utils.ansible_runner

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("all")
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
GROUP_VARS = os.path.join(REPO, "inventory", "demo", "group_vars", "sglang_servers.yml")
REF = os.path.join(os.path.dirname(__file__), "..", "..", "resources", "reference")
UNIT = "sglang.service"
VENV_PY = "/root/ml-env/bin/python3"
RECORD = "/root/production_v2.md"
# The working directory of the hand-started server and of the unit (prepare.yml, converge.yml): a space, UTF-8 and a
# systemd specifier, which the unit must carry literally.
WORKDIR = "/srv/sglang work/modèles %h"
# The unit's D-Bus object (systemd escapes "." as "_2e").
UNIT_OBJECT = "/org/freedesktop/systemd1/unit/sglang_2eservice"
# A directory name that would add a line to a unit written without care (field case): refused by the pre-flight.
NEWLINE_DIR = '/srv/adopt\nExecStartPre=+/bin/sh -c "id > /pwned-root"'
SECOND_PORT = 30005
# The tasks of the service pre-flight (roles/service/tasks/preflight.yml) that may refuse a value.
PREFLIGHT_TASKS = ("Look at the host for the service", "Check the pre-flight", "Verify the unit or program")

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
        # The pinned NCCL rendezvous port (service_nccl_port auto: 22000 + 30000 % 8000; issue 28) comes last.
        assert argv[3:] == reference_args() + ["--nccl-port", "28000"]

    def test_health_answers_200(self, host):
        code = host.check_output(
            "python3 -c %s",
            "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:30000/health', timeout=30).status)",
        )
        assert code == "200"

    def test_sitecustomize_still_a_link_with_hook_and_block(self, host):
        # python3.11 on Debian 12, python3.13 on Debian 13 (scripts/test-debian13.sh).
        py = "python" + host.check_output("/usr/bin/python3 -c %s", "import sys; print('%d.%d' % sys.version_info[:2])")
        link = host.file("/usr/lib/%s/sitecustomize.py" % py)
        assert link.is_symlink
        assert link.linked_to == "/etc/%s/sitecustomize.py" % py
        text = host.file("/etc/%s/sitecustomize.py" % py).content_string
        assert "import apport_python_hook" in text and "apport_python_hook.install()" in text
        assert "# BEGIN inferops.sglang managed block" in text
        assert '_inferops_os.environ.setdefault("NCCL_PROTO", "LL")' in text
        host.run_expect([0], "/usr/bin/python3 -m py_compile /etc/%s/sitecustomize.py" % py)
        # A backup of the replaced file was kept.
        assert host.run("ls /etc/%s/ | grep -c 'sitecustomize.py\\..*~'" % py).stdout.strip() != "0"

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
        props = host.check_output("systemctl show -p KillMode -p TimeoutStopUSec -p LimitNOFILE -p LimitMEMLOCK "
                                  "-p TasksMax -p SuccessExitStatus %s", UNIT)
        assert "KillMode=mixed" in props
        assert "LimitMEMLOCK=infinity" in props
        # C46: no DefaultTasksMax cap on a tp 8 server's threads (systemd shows infinity as the maximum number)
        assert "TasksMax=infinity" in props or "TasksMax=18446744073709551615" in props, props
        assert "SuccessExitStatus=" in props and "KILL" in props.split("SuccessExitStatus=")[1], props

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


def unit_property(host, name):
    """One property of the unit as systemd's D-Bus API gives it (JSON: no splitting at spaces, no escaping)."""
    out = host.check_output("busctl --json=short get-property org.freedesktop.systemd1 %s org.freedesktop.systemd1.Service %s",
                            UNIT_OBJECT, name)
    return json.loads(out)["data"]


def health_status(host, port):
    return host.run(
        "python3 -c %s",
        "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:%d/health', timeout=30).status)" % port,
    ).stdout.strip()


def site(tmp_path, extra):
    """Run site.yml against the scenario's host with extra variables, as an operator would; return (rc, output)."""
    extra_file = tmp_path / "extra.json"
    extra_file.write_text(json.dumps(extra))
    proc = subprocess.run(
        ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "site.yml"), "-e", "@%s" % extra_file],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, timeout=600,
        env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0"), check=False,
    )
    return proc.returncode, proc.stdout


@pytest.mark.parametrize("host", HOSTS, indirect=True)
class TestWorkingDirectory:
    """Field case: a working directory with a space, UTF-8 and a % reaches systemd exactly as written."""

    def test_unit_and_server_work_in_the_directory_exactly(self, host):
        assert host.check_output("systemctl show -p WorkingDirectory --value %s", UNIT) == WORKDIR
        assert unit_property(host, "WorkingDirectory") == WORKDIR
        assert host.check_output("readlink /proc/%s/cwd", str(main_pid(host))) == WORKDIR

    def test_installed_unit_passes_systemd_analyze_verify(self, host):
        result = host.run("systemd-analyze --man=no verify /etc/systemd/system/%s", UNIT)
        about_unit = [line for line in (result.stdout + result.stderr).splitlines() if UNIT in line]
        assert result.rc == 0 and about_unit == [], result.stdout + result.stderr

    def test_read_write_paths_hold_the_directory_unsplit(self, host):
        paths = unit_property(host, "ReadWritePaths")
        assert WORKDIR in paths, paths
        assert not {"/srv/sglang", "work/modèles", "%h", "/root"} & set(paths), paths
        # systemctl show writes the list as words, quoting an entry that holds a space (systemd 252:
        # "/srv/sglang work/modèles %h"): read back as shell-like words, the directory is one entry.
        shown = shlex.split(host.check_output("systemctl show -p ReadWritePaths --value %s", UNIT))
        assert WORKDIR in shown and "/srv/sglang" not in shown and "work/modèles" not in shown, shown


@pytest.mark.parametrize("host", HOSTS, indirect=True)
class TestRefusal:
    """Field case: a second hand-started server whose working directory holds a line break and a unit directive is
    refused by the pre-flight, before anything is stopped or written."""

    def test_a_working_directory_with_a_line_break_is_refused_in_the_preflight(self, host, tmp_path):
        import yaml

        unit_before = host.file("/etc/systemd/system/%s" % UNIT).content_string
        serving = main_pid(host)
        host.run_expect([0], "mkdir -p -- %s /tmp/adopt-gpus", NEWLINE_DIR)
        host.run_expect([0], "cd -- %s && setsid nohup env -i SGLANG_DOUBLE_LOAD_SECONDS=1 SGLANG_DOUBLE_REQUIRE_TOOLS=0 "
                             "SGLANG_DOUBLE_GPU_DIR=/tmp/adopt-gpus PATH=/root/ml-env/bin:/usr/local/cuda-13.0/bin:/usr/bin:/bin "
                             "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 "
                             "--port %s >/root/adopt-newline.log 2>&1 < /dev/null & echo $! > /root/adopt-newline.pid",
                        NEWLINE_DIR, str(SECOND_PORT))
        try:
            stray = int(host.file("/root/adopt-newline.pid").content_string.strip())
            deadline = time.time() + 60
            while health_status(host, SECOND_PORT) != "200" and time.time() < deadline:
                time.sleep(1)
            assert health_status(host, SECOND_PORT) == "200", host.file("/root/adopt-newline.log").content_string
            assert host.check_output("readlink /proc/%s/cwd", str(stray)) == NEWLINE_DIR

            with open(GROUP_VARS) as handle:
                args = dict(yaml.safe_load(handle)["service_server_args"], port=SECOND_PORT)
            rc, out = site(tmp_path, {"service_server_args": args, "service_adopt": True})

            assert rc != 0, out[-4000:]
            first_fatal = out.index("fatal: [")
            task = out[:first_fatal].rsplit("TASK [", 1)[1].split("]", 1)[0]
            assert task.startswith("inferops.sglang.service : ") and any(name in task for name in PREFLIGHT_TASKS), (
                task, out[-4000:])
            failure = out[first_fatal:out.index("PLAY RECAP")]
            assert re.search(r"working[ _]director|cwd", failure, re.I), failure
            assert "TASK [inferops.sglang.service : Render the systemd unit]" not in out
            assert not host.file("/pwned-root").exists
            assert host.process.filter(pid=stray), "the hand-started server was stopped"
            assert health_status(host, SECOND_PORT) == "200"
            assert host.file("/etc/systemd/system/%s" % UNIT).content_string == unit_before
            assert main_pid(host) == serving
        finally:
            host.run("kill $(cat /root/adopt-newline.pid)")
            host.run("rm -rf -- %s", "/srv/" + NEWLINE_DIR.split("/")[2])


STANDIN_CONFIG = "/etc/inferops-nvidia-smi-standin.json"
FABRIC_MANAGER = "nvidia-fabricmanager.service"


@pytest.mark.parametrize("host", HOSTS, indirect=True)
class TestFabric:
    """C39 (issue 28): an NVSwitch host whose Fabric Manager is stopped (a stand-in unit; the nvidia-smi stand-in's
    fabric follows it) refuses a cutover in the pre-flight, naming the fabric and what to do; the server untouched."""

    def test_a_stopped_fabric_manager_refuses_the_cutover_and_leaves_the_server(self, host, tmp_path):
        import yaml

        unit_before = host.file("/etc/systemd/system/%s" % UNIT).content_string
        serving = main_pid(host)
        config = host.file(STANDIN_CONFIG)
        saved = config.content_string if config.exists else None
        standin = dict(json.loads(saved) if saved else {}, fabric_manager_unit=FABRIC_MANAGER)
        host.run_expect([0], "printf '%%s' %s > %s", json.dumps(standin), STANDIN_CONFIG)
        host.run_expect([0], "printf '[Unit]\\nDescription=Fabric Manager stand-in\\n[Service]\\nExecStart=/bin/sleep infinity\\n' "
                             "> /etc/systemd/system/%s && systemctl daemon-reload", FABRIC_MANAGER)
        try:
            assert host.run("systemctl is-active %s", FABRIC_MANAGER).stdout.strip() == "inactive"
            assert "<state>In Progress</state>" in host.check_output("nvidia-smi -q -x")
            with open(GROUP_VARS) as handle:
                args = dict(yaml.safe_load(handle)["service_server_args"])
            args["mem-fraction-static"] = 0.8
            rc, out = site(tmp_path, {"service_server_args": args})
            assert rc != 0, out[-4000:]
            failure = out[out.index("fatal: ["):out.index("PLAY RECAP")]
            assert "The NVSwitch fabric is not ready" in failure and "%s: inactive" % FABRIC_MANAGER in failure, failure
            assert "Start nvidia-fabricmanager" in failure, failure
            assert "TASK [inferops.sglang.cutover" not in out
            assert main_pid(host) == serving and health_status(host, 30000) == "200"
            assert host.file("/etc/systemd/system/%s" % UNIT).content_string == unit_before
        finally:
            host.run("rm -f /etc/systemd/system/%s && systemctl daemon-reload", FABRIC_MANAGER)
            if saved is None:
                host.run("rm -f %s", STANDIN_CONFIG)
            else:
                host.run("printf '%%s' %s > %s", saved, STANDIN_CONFIG)


ORPHAN = r"""
import os, time
from sglang.srt.utils.common import set_proc_title
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        set_proc_title("sglang::scheduler_TP9")
        device = open("/dev/nvidia0", "rb")
        time.sleep(600)
    os._exit(0)
"""
STRAY_TASK = "TASK [inferops.sglang.cutover : Stop stray SGLang servers and wait until their GPUs and port are free]"


def task_status(out, task):
    """The first status line (ok, changed, skipping, fatal) under the task's header in an ansible-playbook output."""
    after = out[out.index(task) + len(task):]
    return next(line.split(":")[0] for line in after.splitlines() if line.split(":")[0] in ("ok", "changed", "skipping", "fatal"))


@pytest.mark.parametrize("host", HOSTS, indirect=True)
class TestConvergedStrays:
    """A converged re-run leaves out its stray scan when its own host facts saw only the unit's server (filter
    cutover_strays_ruled_out), and still stops a stray those facts saw: an orphaned scheduler holding a GPU."""

    def test_the_scan_runs_only_for_strays_the_facts_saw(self, host, tmp_path):
        import yaml

        with open(os.path.join(os.path.dirname(__file__), "..", "converge.yml")) as handle:
            converge_vars = yaml.safe_load(handle)[0]["vars"]
        serving = main_pid(host)
        rc, out = site(tmp_path, converge_vars)
        assert rc == 0 and task_status(out, STRAY_TASK) == "skipping", out[-4000:]
        host.run_expect([0], "%s -c %s", VENV_PY, ORPHAN)
        orphan = [p["pid"] for p in processes(host) if p["argv"][:1] == ["sglang::scheduler_TP9"]]
        assert len(orphan) == 1, processes(host)
        rc, out = site(tmp_path, converge_vars)
        assert rc == 0 and task_status(out, STRAY_TASK) == "changed", out[-4000:]
        assert not host.process.filter(pid=orphan[0]), "the orphaned scheduler was stopped"
        assert main_pid(host) == serving and health_status(host, 30000) == "200"


@pytest.mark.parametrize("host", HOSTS, indirect=True)
class TestReboot:
    """Runs last: restarting the host (the container) brings the service back healthy with no Ansible run."""

    def test_restart_brings_the_service_back_healthy(self, host):
        name = host.backend.get_hostname()
        before = main_pid(host)
        # C47: the server ends its SIGTERM drain by SIGKILLing itself, as SGLang 0.5.9 does (the adopted environment
        # carries SGLANG_DOUBLE_EXIT_STYLE=sglang): a deliberate stop leaves the unit inactive, not failed.
        assert 'SGLANG_DOUBLE_EXIT_STYLE="sglang"' in host.file("/etc/sglang/sglang.env").content_string
        host.run_expect([0], "systemctl stop %s" % UNIT)
        state = host.run("systemctl show -p ActiveState -p Result -p ExecMainStatus %s", UNIT).stdout
        assert "ActiveState=inactive" in state and "Result=success" in state, state
        assert "ExecMainStatus=9" in state, state   # it did end by SIGKILL
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
