# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the command-line check with real SGLang costs a converged run (issue 26, item 6).

With real SGLang the parser check imports torch. A converged ``site.yml`` pays, per host, one of:

* ``check``: server_args_check with its memo off (``cache: false``): the parser runs (torch imported) - what every
  run paid before the memo;
* ``memo hit``: server_args_check finding its memo (one module round trip, the memo key's probe, one file read) -
  what a converged run paid before the pre-flight's host read looked the memo up itself;
* ``lookup``: what service_preflight_info adds to the pre-flight's one host read with ``args_check``
  (``_args_check_cache.lookup``: the probe and the file read, no round trip of its own; its ``duration_seconds``) -
  what a converged run pays now.

Each runs through ``ansible localhost -c local -m`` (the module's own ``duration_seconds``, and the wall time of the
ansible command, which includes its start-up; the lookup's wall is that of the whole host read). The memo is the
modules' default one (the pre-flight read has no other): each round uses an argument list of its own, so the
``check`` rounds never find an entry, and the entries this script made are removed at the end (run it as root, as
the playbooks run the modules).

Usage (as root; the venv of scripts/setup.sh):
    .venv/bin/python benchmarks/bench_parser.py [--python PATH] [--runs 5]
PATH: an interpreter with real SGLang (default: $INFEROPS_REAL_SGLANG_PYTHON, else .cache/sglang-real/bin/python,
which tests/setup-real-sglang.sh makes). Prints medians; asserts nothing.
"""

from __future__ import (absolute_import, division, print_function)

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BIN = os.path.dirname(sys.executable)


def collections_path(tmp):
    """A directory where ansible_collections/inferops/sglang is this checkout (first on ANSIBLE_COLLECTIONS_PATH)."""
    top = os.path.join(tmp, 'collections')
    os.makedirs(os.path.join(top, 'ansible_collections', 'inferops'))
    os.symlink(REPO, os.path.join(top, 'ansible_collections', 'inferops', 'sglang'))
    return top


def run_module(env, name, args):
    """Runs inferops.sglang.NAME on localhost; -> (wall seconds, result dict)."""
    cmd = [os.path.join(BIN, 'ansible'), 'localhost', '-c', 'local', '-m', 'inferops.sglang.' + name, '-a',
           json.dumps(args)]
    started = time.monotonic()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          check=False)
    wall = time.monotonic() - started
    text = proc.stdout
    try:
        result = json.loads(text[text.index('{'):])
    except ValueError:
        raise RuntimeError('%s printed no result:\n%s\n%s' % (name, text[-2000:], proc.stderr[-2000:]))
    return wall, result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get('INFEROPS_REAL_SGLANG_PYTHON') or os.path.join(REPO, '.cache', 'sglang-real', 'bin', 'python')
    ap.add_argument('--python', default=default, help='interpreter with real SGLang (default: %(default)s)')
    ap.add_argument('--runs', type=int, default=5)
    opts = ap.parse_args()
    if not os.path.exists(opts.python):
        sys.exit('no interpreter with real SGLang at %s: run tests/setup-real-sglang.sh, or pass --python' % opts.python)
    tmp = tempfile.mkdtemp(prefix='bench-parser-')
    try:
        top = collections_path(tmp)
        sys.path.insert(0, top)
        from ansible_collections.inferops.sglang.plugins.module_utils import _args_check_cache
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=top + os.pathsep + os.environ.get('ANSIBLE_COLLECTIONS_PATH', ''),
                   ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0', ANSIBLE_NOCOLOR='1',
                   ANSIBLE_PYTHON_INTERPRETER=sys.executable)
        memo_dir = _args_check_cache.CACHE_DIR
        before = set(os.listdir(memo_dir)) if os.path.isdir(memo_dir) else set()
        rows = {'check': [], 'memo hit': [], 'lookup': []}
        version = None
        try:
            for number in range(opts.runs):
                args = ['--model-path', '/models/bench-%d-%d' % (os.getpid(), number), '--tp-size', '1',
                        '--mem-fraction-static', '0.8']
                params = {'python': opts.python, 'args': args}
                wall, cold = run_module(env, 'server_args_check', dict(params, cache=False))
                rows['check'].append((cold['duration_seconds'], wall))
                version = cold.get('sglang_version')
                run_module(env, 'server_args_check', params)  # stores the verdict
                wall, hit = run_module(env, 'server_args_check', params)
                if not hit.get('cached'):
                    raise RuntimeError('the third call did not find the memo: %s' % hit)
                rows['memo hit'].append((hit['duration_seconds'], wall))
                wall, read = run_module(env, 'service_preflight_info',
                                        {'working_directory': '/', 'args_check': dict(params, env_names=[])})
                if not (read.get('args_check') or {}).get('result'):
                    raise RuntimeError('the pre-flight read did not find the memo: %s' % read.get('args_check'))
                rows['lookup'].append((read['args_check']['duration_seconds'], wall))
                print('round %d: check %.2f s (wall %.2f s), memo hit %.2f s (wall %.2f s), lookup %.2f s (read wall %.2f s)'
                      % (number + 1, rows['check'][-1][0], rows['check'][-1][1], rows['memo hit'][-1][0],
                         rows['memo hit'][-1][1], rows['lookup'][-1][0], rows['lookup'][-1][1]))
        finally:
            for name in set(os.listdir(memo_dir)) - before if os.path.isdir(memo_dir) else ():
                os.remove(os.path.join(memo_dir, name))
        print('\nSGLang %s at %s, %d runs, medians:' % (version, opts.python, opts.runs))
        print('| what a converged run pays for the check | module s | wall s (ansible -m, with its start-up) |')
        print('|---|---|---|')
        for name, samples in rows.items():
            note = ' (the whole host read)' if name == 'lookup' else ''
            module_s = statistics.median(s for s, dummy in samples)
            print('| %s | %.2f | %.2f%s |' % (name, module_s, statistics.median(w for dummy, w in samples), note))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
