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
  - Runs a play exactly as Ansible's C(ansible.builtin.linear) strategy does (it is that strategy, unchanged) - task by task,
    every host of the batch finishing a task before the next begins. It only makes the controller faster.
  - Opt-in. Select it for the collection's playbooks as any strategy is selected - C(strategy = inferops.sglang.linear)
    in the C([defaults]) section of C(ansible.cfg), or C(ANSIBLE_STRATEGY=inferops.sglang.linear). The playbooks do
    not name a strategy, so the one you configure is the one they run with. It must be a linear one (this, Ansible's
    default, C(debug), Mitogen's C(mitogen_linear)), never C(free) or C(host_pinned) - the ranks of a multi-node
    replica wait for each other task by task.
  - ansible-core deprecates strategy plugins outside C(ansible.builtin) from 2.19 on - each run with it prints a deprecation
    warning, and a future ansible-core may not load it. The collection works the same without it.
  - Before the first play it imports the filter plugins of C(inferops.sglang) on the controller. Ansible runs every
    task in a worker process forked from the controller, so what the controller imported, every worker has. Without
    this, each task that templates one of the collection's filters imports the filter files again, and with them the
    C(module_utils) they use, which Ansible's collection loader compiles from source on every import.
  - It also keeps Python's garbage collector out of the workers' way - the objects the controller holds when the first
    play starts are frozen (C(gc.freeze), once per run), so that a collection never walks them again, and every
    process the controller forks from then on (an Ansible worker - one task, then it exits - whatever strategy a later
    play uses) starts with the collector off, its garbage going with it. The controller's own collector stays on.
  - Both together take about a seventh off a converged C(site.yml) run on the benchmark's machine (C(benchmarks/run.py
    --strategy inferops.sglang.linear), row c).
  - A filter file that fails to import is left to Ansible, which reports it where a task uses it.
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


_PREPARED = []


def prepare_controller():
    """Before a play: :func:`preload`; then, once per process, the garbage collector kept out of the workers' way -
    every object the controller holds now frozen (``gc.freeze()``: collections skip them; once, so that later batches'
    garbage stays collectable), and each process forked from now on (an Ansible worker: one task, then it exits)
    started with the collector off (``os.register_at_fork``). Returns :func:`preload`'s list."""
    loaded = preload()
    if not _PREPARED:
        gc.freeze()
        os.register_at_fork(after_in_child=gc.disable)
        _PREPARED.append(True)
    return loaded


class StrategyModule(LinearStrategyModule):
    """ansible.builtin.linear; :meth:`run` first prepares the controller (:func:`prepare_controller`)."""

    def run(self, iterator, play_context):
        prepare_controller()
        return super(StrategyModule, self).run(iterator, play_context)
