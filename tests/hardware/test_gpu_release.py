"""On a real NVIDIA host: a process titled like an SGLang scheduler that holds GPU memory is found,
stopped, and server_process's GPU-release wait returns once nvidia-smi shows the memory free.

Skips cleanly where there is no GPU (no nvidia-smi, or no CUDA-capable torch). Run on the lent H200 by
tests/hardware/run-h200.sh.
"""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

NVIDIA_SMI = shutil.which("nvidia-smi")
PYTHON = os.environ.get("INFEROPS_GPU_PYTHON", sys.executable)
DOUBLE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "double"))


def torch_sees_a_gpu():
    if not NVIDIA_SMI:
        return False
    probe = subprocess.run([PYTHON, "-c", "import torch; print(torch.cuda.is_available())"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
    return probe.stdout.strip() == "True"


pytestmark = pytest.mark.skipif(not torch_sees_a_gpu(), reason="needs nvidia-smi and a CUDA-capable torch")


def gpu_memory_used_mib():
    out = subprocess.run([NVIDIA_SMI, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    return [int(line) for line in out.split()]


def run_module(args):
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1")
    ansible = os.path.join(os.path.dirname(sys.executable), "ansible")
    if not os.path.exists(ansible):
        ansible = shutil.which("ansible")
    proc = subprocess.run([ansible, "localhost", "-c", "local", "-m", "inferops.sglang.server_process",
                           "-a", json.dumps(args)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, check=False)
    assert "{" in proc.stdout, proc.stdout[-3000:]
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_scheduler_titled_gpu_holder_is_stopped_and_release_waited_for():
    baseline = max(gpu_memory_used_mib())
    holder = (
        "import sys, time\n"
        "sys.path.insert(0, %r)\n"
        "from sglang.srt.utils.common import set_proc_title\n"
        "set_proc_title('sglang::scheduler_TP0')\n"
        "import torch\n"
        "x = torch.empty(4 << 30, dtype=torch.uint8, device='cuda')\n"
        "torch.cuda.synchronize()\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
    ) % DOUBLE
    # The process retitles itself as SGLang's setproctitle does (argv memory and /proc/self/comm), using the
    # test double's stdlib implementation; /proc/<pid>/cmdline then reads "sglang::scheduler_TP0".
    proc = subprocess.Popen([PYTHON, "-c", holder], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.time() + 60
        while max(gpu_memory_used_mib()) < baseline + 4000 and time.time() < deadline:
            time.sleep(0.5)
        held = max(gpu_memory_used_mib())
        assert held >= baseline + 4000, "the holder did not show up in nvidia-smi"

        info = run_module({"state": "absent", "grace_period": 10, "wait_gpu_release": True,
                           "release_timeout": 120, "gpu_memory_threshold_mib": baseline + 1024})
        print(json.dumps({k: info.get(k) for k in ("changed", "stopped", "gpu_release", "msg")}, indent=2))
        assert info["changed"] is True, info
        stopped = {entry["pid"]: entry for entry in info["stopped"]}
        assert proc.pid in stopped, info["stopped"]
        assert info["gpu_release"]["waited"] is True
        assert info["gpu_release"]["method"] == "nvidia-smi"
        proc.wait(timeout=30)
        assert max(gpu_memory_used_mib()) <= baseline + 1024
        print("GPU memory: baseline %d MiB, held %d MiB, after the stop %d MiB" % (baseline, held, max(gpu_memory_used_mib())))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
