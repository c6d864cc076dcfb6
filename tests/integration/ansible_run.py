"""Helpers shared by the integration tests: a free local port, and one module run through ``ansible``.

Imported by the test files next to it (pytest puts this directory on sys.path).
"""

import json
import os
import signal
import socket
import subprocess
import sys


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def run_module(name, args=None, check=False, diff=False, timeout=300):
    """Run module ``name`` on localhost with ``ansible -m`` (this venv's ansible and python); return the host's
    result dict as the JSON callback reports it (``failed``/``msg`` on failure)."""
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-c", "local", "-m", name]
    if args:
        cmd += ["-a", json.dumps(args)]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    proc = subprocess.run(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False,
        env=dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
                 ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1"),
    )
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]


def end_process_groups(procs):
    """SIGKILL the process group of every Popen in PROCS (started with start_new_session=True) and reap it."""
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
