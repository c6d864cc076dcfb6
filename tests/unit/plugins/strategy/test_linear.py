# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The strategy inferops.sglang.linear: ansible.builtin.linear, the collection's filters imported first."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import subprocess
import sys

from ansible.plugins.strategy.linear import StrategyModule as BuiltinLinear

from ansible_collections.inferops.sglang.plugins.strategy import linear

FILTERS = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'plugins', 'filter')


def test_every_filter_file_is_imported_under_the_name_the_filter_loader_looks_up():
    """Ansible's filter loader finds a collection's filter file in sys.modules by its dotted name
    (ansible_collections.NS.NAME.plugins.filter.FILE): a worker forked after preload imports none again."""
    files = sorted(name[:-3] for name in os.listdir(FILTERS) if name.endswith('.py') and name != '__init__.py')
    loaded = linear.preload()
    assert sorted(loaded) == ['ansible_collections.inferops.sglang.plugins.filter.' + name for name in files]
    assert all(name in sys.modules for name in loaded)
    assert len(files) >= 10


def test_a_file_that_fails_to_import_is_left_to_ansible(tmp_path, monkeypatch):
    package = tmp_path / 'preload_probe'
    package.mkdir()
    (package / '__init__.py').write_text(u'')
    (package / 'good.py').write_text(u'VALUE = 1\n')
    (package / 'broken.py').write_text(u'raise RuntimeError("a filter file that cannot load")\n')
    (package / 'sub').mkdir()
    (package / 'sub' / '__init__.py').write_text(u'')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert linear.preload('preload_probe') == ['preload_probe.good']
    assert 'preload_probe.broken' not in sys.modules


def test_a_package_that_does_not_exist_preloads_nothing():
    assert linear.preload('preload_probe_not_there') == []


def test_it_is_the_builtin_linear_strategy():
    assert issubclass(linear.StrategyModule, BuiltinLinear)
    assert linear.StrategyModule.run is not BuiltinLinear.run


def test_the_controllers_objects_are_frozen_once_and_a_worker_runs_without_the_collector():
    """prepare_controller, in a fresh interpreter (the fork hook cannot be undone): gc.freeze() once in the controller,
    and a process forked afterwards (an Ansible worker) starts with the garbage collector off; the controller's own
    stays on."""
    probe = """
import gc, os, sys
from ansible_collections.inferops.sglang.plugins.strategy import linear
linear.prepare_controller()
frozen = gc.get_freeze_count()
linear.prepare_controller()
assert gc.get_freeze_count() == frozen > 0 and gc.isenabled() and len(linear._PREPARED) == 1
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(write, b'on' if gc.isenabled() else b'off')
    os._exit(0)
os.close(write)
print(os.read(read, 8).decode())
os.waitpid(pid, 0)
"""
    out = subprocess.run([sys.executable, '-c', probe], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), check=False)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().strip() == 'off'
