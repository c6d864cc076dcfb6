# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Ansible's linear strategy, with this collection's filter plugins imported once on the controller and the
garbage collector kept out of the workers' way."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: linear
short_description: Ansible's linear strategy, with the collection's filters loaded once and no GC in the workers
version_added: 0.1.0
description:
  - Runs a play exactly as P(ansible.builtin.linear#strategy) does (it is that strategy, unchanged) - task by task,
    every host of the batch finishing a task before the next begins.
  - Before the play's first task it imports the filter plugins of C(inferops.sglang) on the controller. Ansible runs
    every task in a worker process forked from the controller, so what the controller imported, every worker has.
    Without this, each task that templates one of the collection's filters imports the filter files again, and with
    them the C(module_utils) they use, which Ansible's collection loader compiles from source on every import - about
    10 to 30 ms per such task on the benchmark's machine (C(benchmarks/run.py), row c).
  - A filter file that fails to import is left to Ansible, which reports it where a task uses it.
  - It also keeps Python's garbage collector out of the workers' way - the objects the controller holds when the play
    starts are frozen (C(gc.freeze())), so that a collection never walks them again, and a worker (one task, then it
    exits) runs with the collector off, its garbage going with it. Without this a worker spends part of its few
    milliseconds collecting, and copying, the controller's objects it inherited - about 0.6 s of a converged
    C(site.yml) run on the benchmark's machine, together with the freeze. The controller's own collector stays on.
  - The collection's playbooks (C(inferops.sglang.site), C(restart), C(rollback), C(status)) run with it. A play of
    yours may name it with the play keyword C(strategy), or keep any other strategy - the collection works the same.
author:
  - inferops.sglang developers (@inferops)
'''

import gc
import importlib
import os
import pkgutil

from ansible.plugins.strategy.linear import StrategyModule as LinearStrategyModule

FILTER_PACKAGE = 'ansible_collections.inferops.sglang.plugins.filter'


def preload(package=FILTER_PACKAGE):
    """Import every module of ``package`` (a dotted name) that imports cleanly; -> list of the dotted names imported.

    Ansible's filter loader looks a module up in ``sys.modules`` by the same dotted name before it loads it, so a
    worker forked after this reuses the controller's modules. A module that raises is skipped: the filter loader
    reports the error where a template uses one of its filters.
    """
    try:
        parent = importlib.import_module(package)
    except ImportError:
        return []
    loaded = []
    for dummy_finder, name, is_package in pkgutil.iter_modules(parent.__path__, package + '.'):
        if is_package:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # pylint: disable=broad-except
            continue
        loaded.append(name)
    return loaded


_WORKERS_WITHOUT_GC = []


def prepare_controller():
    """Before a play: :func:`preload`, then the garbage collector kept out of the workers' way - every object the
    controller holds now frozen (``gc.freeze()``: collections skip them), and each process forked from now on (an
    Ansible worker: one task, then it exits) started with the collector off (``os.register_at_fork``, registered
    once per process). Returns :func:`preload`'s list."""
    loaded = preload()
    gc.freeze()
    if not _WORKERS_WITHOUT_GC:
        os.register_at_fork(after_in_child=gc.disable)
        _WORKERS_WITHOUT_GC.append(True)
    return loaded


class StrategyModule(LinearStrategyModule):
    """ansible.builtin.linear; :meth:`run` first prepares the controller (:func:`prepare_controller`)."""

    def run(self, iterator, play_context):
        prepare_controller()
        return super(StrategyModule, self).run(iterator, play_context)
