"""The deployment record's versions (issue 15, item 3): the cutover role's template rendered by a real ansible-playbook
with the role's own vars/main.yml, the cutover's state as decide.yml makes it (versions: the deployed_versions filter)
and its outcome (the cutover_outcome filter), the host facts and the previous known-good manifest stood in for. The
molecule scenarios render it on a real host."""

import json
import os
import subprocess
import sys

ROLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles", "cutover")
VENV = "/root/ml-env/bin/python3"
FACTS = {
    "init": {"system": "systemd", "pid1": "/sbin/init", "systemd_version": 252, "container": "docker"},
    "gpus": [{"name": "NVIDIA H200"}], "gpu_count": 1, "interconnect": "single",
    "driver_version": "580.159.04", "cuda_driver_version": "13.0", "cuda": {"toolkits": []}, "strays": [],
    "python": {"executable": VENV, "version": "3.11.2", "sglang_version": "0.5.9", "torch_version": "2.9.1+cu130",
               "torch_cuda_version": "13.0", "sitecustomize": {}},
}
PREVIOUS_VERSIONS = {"sglang": "0.5.9", "torch": "2.9.1+cu130", "torch_cuda": "13.0", "driver": "580.159.04",
                     "cuda_driver": "13.0", "python": VENV}


def render(tmp_path, service, previous):
    """The record for the unit ``service`` after the known-good configuration ``previous`` (its manifest): the text."""
    out = tmp_path / "record.md"
    variables = {
        "cutover_host_facts": FACTS, "cutover_service": service, "cutover_cuda_env": {},
        "cutover_unit": "sglang.service", "cutover_host": "127.0.0.1", "cutover_port": 30000, "cutover_scheme": "http",
        "cutover_record_path": str(out),
        "__cutover_mgr": {"state": "active", "pid": 42, "restarts": 0}, "__cutover_gate": {"time_to_healthy": 3.2},
        "__cutover_state": {"action": "restart", "failure": "", "failed_task": "", "rollback_failure": "", "degraded": "",
                            "failure_log": [], "previous": {"exists": True, "manifest": previous},
                            "command": service["command"], "gate": {"time_to_healthy": 3.2, "elapsed": 4.0}},
    }
    (tmp_path / "vars.json").write_text(json.dumps(variables))
    book = [{"name": "Render the record", "hosts": "localhost", "gather_facts": False,
             "vars_files": [os.path.join(ROLE, "vars", "main.yml")],
             "tasks": [
                 {"name": "The state and its outcome", "ansible.builtin.set_fact": {"__cutover": (
                     "{{ __cutover_state | combine({'versions': cutover_service.command | inferops.sglang.deployed_versions("
                     "_cutover_facts, cutover_service.sglang | default({}))}) }}")}},
                 {"name": "Outcome", "ansible.builtin.set_fact": {"__cutover": (
                     "{{ __cutover | combine({'outcome': __cutover | inferops.sglang.cutover_outcome(false)}) }}")}},
                 {"name": "Render", "ansible.builtin.copy": {
                     "dest": str(out), "mode": "0600",
                     "content": "{{ lookup('ansible.builtin.template', '%s') }}" % os.path.join(
                         ROLE, "templates", "deployment_record.md.j2")},
                  # As roles/cutover/tasks/report.yml fills it in: every value of the record once (filter cutover_record).
                  "vars": {"__cutover_record": (
                      "{{ __cutover | inferops.sglang.cutover_record(cutover_service, cutover_cuda_env, _cutover_facts, "
                      "{}, __cutover_gate, {}, '/var/lib/inferops-sglang/known-good', '') }}")}}]}]
    (tmp_path / "play.yml").write_text(json.dumps(book))
    env = dict((name, value) for name, value in os.environ.items()
               if not name.startswith("ANSIBLE_") or name == "ANSIBLE_COLLECTIONS_PATH")
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
         "-e", "@%s" % (tmp_path / "vars.json"), str(tmp_path / "play.yml")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return out.read_text()


def versions_section(text):
    return text.split("## Versions")[1].split("## Command line of the unit")[0]


def test_record_shows_an_upgrade_against_the_previous_known_good(tmp_path):
    """Issue 15: the service role manages SGLang 0.5.10 in a new venv; torch of that venv was not probed (unknown,
    not guessed), the driver is the host's."""
    new_python = "/opt/sglang/venvs/0.5.10/bin/python"
    service = {"command": [new_python, "-m", "sglang.launch_server", "--port", "30000"], "unit_path": "/etc/x",
               "path": "/usr/bin", "environment_files": [], "environment_names": [],
               "sglang": {"managed": True, "version": "0.5.10", "requirement": "sglang==0.5.10",
                          "venv": "/opt/sglang/venvs/0.5.10", "python": new_python}}
    section = versions_section(render(tmp_path, service, {"source": "cutover", "command": [VENV],
                                                          "record": {"versions": PREVIOUS_VERSIONS}}))
    assert "the unit's interpreter `%s`" % new_python in section
    assert "- SGLang: 0.5.9 -> 0.5.10\n" in section
    assert "- torch: 2.9.1+cu130 -> unknown\n" in section
    assert "- NVIDIA driver: 580.159.04 (unchanged)\n" in section
    assert "- Python interpreter: %s -> %s\n" % (VENV, new_python) in section


def test_record_before_the_service_role_names_a_version_and_after_a_hand_started_server(tmp_path):
    """Without the service role's sglang output the facts of the unit's interpreter count; the hand-started server's
    first known-good recorded no versions."""
    service = {"command": [VENV, "-m", "sglang.launch_server"], "unit_path": "/etc/x", "path": "/usr/bin",
               "environment_files": [], "environment_names": []}
    section = versions_section(render(tmp_path, service, {"source": "hand-started", "command": [VENV]}))
    assert "against the previous known-good one (the hand-started server)" in section
    assert "- SGLang: 0.5.9 (not recorded before)\n" in section
    assert "- torch: 2.9.1+cu130 (not recorded before)\n" in section
    assert "- torch CUDA runtime: 13.0 (not recorded before)\n" in section
