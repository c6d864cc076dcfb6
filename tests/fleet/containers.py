# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the molecule scenarios' tests do in their containers, in one place (fleet and secure scenarios).

Importable from every scenario's tests: the shared molecule configuration (.config/molecule/config.yml) puts this
directory on the verifier's PYTHONPATH.

- ``sh(container, command)``: run ``bash -c command`` in a container (``docker exec``), return its output
  (stdout and stderr); asserts exit status 0 unless ``check=False``.
- ``main_pid(container)`` / ``main_argv(container)`` / ``started_at(container)``: sglang.service's main process
  (pid, command line as a list, start time in epoch seconds).
- ``playbook(name, extra=None, *options)``: run one of the collection's playbooks (``site``, ``restart``, ...) against
  the scenario's inventory, with extra variables (a dict, passed as a JSON file); returns (rc, output, seconds).
- ``start_load(router)`` / ``stop_load(router)``: the load generator (tests/fleet/loadgen.py, installed as
  /opt/loadgen.py by the scenarios' prepare) sending chat completions through the router while a rollout runs.
"""

import json
import os
import subprocess
import tempfile
import time

LOAD_REPORT = "/root/loadgen.json"
UNIT = "sglang.service"
STOP_FILE = "/tmp/loadgen.stop"


def sh(container, command, check=True, timeout=120):
    """Output of ``bash -c command`` in ``container``; an AssertionError (with the output) on a non-zero exit if check."""
    proc = subprocess.run(["docker", "exec", container, "bash", "-c", command], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
    if check:
        assert proc.returncode == 0, "%s: %s\n%s" % (container, command, proc.stdout)
    return proc.stdout


def main_pid(container):
    """MainPID of sglang.service in ``container`` (0 when it does not run)."""
    return int(sh(container, "systemctl show -p MainPID --value %s" % UNIT).strip())


def main_argv(container):
    """The command line of sglang.service's main process (list of str); asserts that it runs (with its journal)."""
    pid = main_pid(container)
    assert pid > 0, sh(container, "journalctl -u %s -n 40 --no-pager" % UNIT, check=False)
    return sh(container, "tr '\\0' '\\n' < /proc/%d/cmdline" % pid).split("\n")


def started_at(container):
    """Epoch seconds when sglang.service's main process started."""
    return int(sh(container, 'date -d "$(systemctl show -p ExecMainStartTimestamp --value %s)" +%%s' % UNIT).strip())


def playbook(name, extra=None, *options, timeout=900):
    """Run ``ansible-playbook inferops.sglang.<name>`` against the scenario's inventory (MOLECULE_INVENTORY_FILE) with
    ``extra`` variables (dict) and further command-line ``options``; returns (exit status, output, seconds)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
        json.dump(extra or {}, handle)
        handle.flush()
        started = time.time()
        proc = subprocess.run(
            ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "inferops.sglang.%s" % name,
             "-e", "@%s" % handle.name] + list(options),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False,
            env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0"))
    return proc.returncode, proc.stdout, time.time() - started


def start_load(router, key_file=None):
    """Start the load generator on ``router`` in the background (4 workers, at most 600 s / 50,000 requests).

    ``key_file``: a root-only file on the router holding the router's API key, handed to the generator in its
    environment (LOADGEN_API_KEY), never on its command line. The proxies of the container's environment are
    dropped: the router is local. Returns after 2 s, so that requests are flowing when the caller goes on."""
    key = "LOADGEN_API_KEY=$(cat %s) " % key_file if key_file else ""
    sh(router, "rm -f %s %s && %ssetsid nohup env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY "
               "python3 /opt/loadgen.py --url http://127.0.0.1:30000 --out %s --concurrency 4 --max-seconds 600 "
               "--max-requests 50000 --stop-file %s > /root/loadgen.log 2>&1 < /dev/null &"
               % (STOP_FILE, LOAD_REPORT, key, LOAD_REPORT, STOP_FILE))
    time.sleep(2)


def stop_load(router, wait=60):
    """Stop the load generator on ``router`` and return its final report (dict: sent, ok, failed, ...), waiting
    up to ``wait`` seconds for it to finish; AssertionError when it does not."""
    sh(router, "touch %s" % STOP_FILE)
    for dummy in range(wait):
        report = json.loads(sh(router, "cat %s" % LOAD_REPORT))
        if not report["running"]:
            return report
        time.sleep(1)
    raise AssertionError("the load generator did not stop")
