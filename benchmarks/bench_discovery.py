# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How long does SGLang process discovery take on a busy host?

Spawns about --processes cheap processes (``sleep``, forked by a few hundred shells, all in one new
process group so that one killpg() cleans everything up), a few processes titled like SGLang workers,
then times N scans of discover() for each mode and prints the median, p95 and max:

* ``argv``: stat and cmdline of every process (include_gpu_holders=false, no port);
* ``argv+fds``: plus the open files of every process (include_gpu_holders=true, the default);
  the load's processes are not descendants of the benchmark (they would be skipped as its own tree);
* ``argv+fds+port``: plus the listeners of a port.

Usage: python3 benchmarks/bench_discovery.py [--processes 5000] [--scans 20] [--per-shell 25]
Run from the repository root, with ``ansible_collections.inferops.sglang`` importable, or from
anywhere: the checkout is made importable through a temporary symlink as a fallback. Linux only. No timing is asserted.
"""

from __future__ import (absolute_import, division, print_function)

import argparse
import importlib
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_module_utils():
    """module_utils/_server_process/discovery.py, from the installed collection or else from this checkout
    (made importable as ansible_collections.inferops.sglang through a symlink in a temporary directory)."""
    try:
        from ansible_collections.inferops.sglang.plugins.module_utils._server_process import discovery
        return discovery
    except ImportError:
        top = tempfile.mkdtemp(prefix='bench-discovery-')
        os.makedirs(os.path.join(top, 'ansible_collections', 'inferops'))
        os.symlink(os.path.abspath(os.path.join(HERE, '..')), os.path.join(top, 'ansible_collections', 'inferops', 'sglang'))
        sys.path.insert(0, top)
        importlib.invalidate_caches()
        from ansible_collections.inferops.sglang.plugins.module_utils._server_process import discovery
        return discovery


def count_group(pgid):
    count = 0
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name, 'rb') as f:
                fields = f.read().rsplit(b')', 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in (b'Z', b'X'):
            count += 1
    return count


def spawn_load(processes, per_shell, titled):
    """A new session running processes/per_shell shells with per_shell sleeps each (+ titled fakes).

    Started through a short-lived intermediate process, so the load is re-parented to PID 1 and is
    not a descendant of this benchmark: discovery never looks into its own process tree, and the load
    must be scanned like any other process of the host. Returns the session leader's pid (= pgid).
    """
    shells = max(1, (processes + per_shell - 1) // per_shell)
    script = (
        'i=0; while [ $i -lt %d ]; do '
        '(j=0; while [ $j -lt %d ]; do sleep 900 & j=$((j+1)); done; wait) & i=$((i+1)); done; '
        'k=0; while [ $k -lt %d ]; do bash -c "exec -a $TITLE$k sleep 900" & k=$((k+1)); done; '
        'wait' % (shells, per_shell, titled))
    launcher = ('import subprocess, sys\n'
                'p = subprocess.Popen(["sh", "-c", sys.argv[1]], start_new_session=True,\n'
                '                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n'
                'print(p.pid)\n')
    # The title comes through the environment: the shells' own command lines do not mention sglang.
    env = dict(os.environ, TITLE='sglang::scheduler_TP')
    leader = int(subprocess.check_output([sys.executable, '-c', launcher, script], env=env))
    expected = 1 + shells + shells * per_shell + titled
    deadline = time.time() + 120
    while time.time() < deadline:
        if count_group(leader) >= expected:
            break
        time.sleep(0.2)
    return leader, expected


def percentile(sorted_values, fraction):
    index = min(len(sorted_values) - 1, int(round(fraction * (len(sorted_values) - 1))))
    return sorted_values[index]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--processes', type=int, default=5000)
    parser.add_argument('--scans', type=int, default=20)
    parser.add_argument('--per-shell', type=int, default=25)
    parser.add_argument('--titled', type=int, default=8, help='processes titled sglang::scheduler_TP<k>')
    args = parser.parse_args()
    sp = load_module_utils()

    leader = None
    started = time.time()
    try:
        leader, expected = spawn_load(args.processes, args.per_shell, args.titled)
        spawned = count_group(leader)
        total = len([n for n in os.listdir('/proc') if n.isdigit()])
        print('spawned %d processes in %.1f s (expected %d); %d processes on the host'
              % (spawned, time.time() - started, expected, total))
        modes = [
            ('argv', dict(include_gpu_holders=False)),
            ('argv+fds', dict(include_gpu_holders=True)),
            ('argv+fds+port', dict(include_gpu_holders=True, port=30000)),
        ]
        print('%-15s %8s %8s %8s %8s  %s' % ('mode', 'median', 'p95', 'min', 'max', 'processes seen / ignored'))
        for name, kwargs in modes:
            times = []
            found = None
            for _scan in range(args.scans):
                t0 = time.perf_counter()
                found = sp.discover(**kwargs)
                times.append(time.perf_counter() - t0)
            times.sort()
            seen = len([n for n in os.listdir('/proc') if n.isdigit()])
            print('%-15s %7.0fms %7.0fms %7.0fms %7.0fms  %d / %d' % (
                name, 1000 * percentile(times, 0.5), 1000 * percentile(times, 0.95), 1000 * times[0],
                1000 * times[-1], seen, len(found.ignored)))
    finally:
        if leader is not None:
            try:
                os.killpg(leader, signal.SIGKILL)
            except OSError:
                pass
            deadline = time.time() + 30
            while time.time() < deadline and count_group(leader):
                time.sleep(0.2)
            print('cleaned up (%d left in the process group)' % count_group(leader))


if __name__ == '__main__':
    sys.exit(main())
