# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The facts role's summary, worded once (filter facts_summary)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import as_dict


def _part(facts, key):
    """``facts[key]`` as a dict ({} when missing or not a mapping)."""
    return as_dict(facts.get(key))


def facts_summary(facts, host, port):
    """The four lines the facts role prints of what host_facts found.

    :param facts: the host facts (``ansible_facts['inferops_sglang']``, module host_facts: ``init``, ``gpu_count``,
        ``interconnect``, ``driver_version``, ``cuda_driver_version``, ``cuda``, ``python``, ``servers``, ``strays``,
        ``endpoint``).
    :param host: ``facts_host``, the endpoint probed; ``port``: ``facts_port``.
    :returns: list of 4 strings: init system, GPUs and CUDA, Python (SGLang, torch, sitecustomize.py), servers and
        the endpoint's /health. A value that is missing or empty reads '-', 'none', 'not installed' or 'no answer'.
    """
    facts = dict(facts) if hasattr(facts, 'items') else {}
    init, cuda, python, endpoint = (_part(facts, key) for key in ('init', 'cuda', 'python', 'endpoint'))
    sitecustomize = _part(python, 'sitecustomize')
    driver = facts.get('driver_version')
    return [
        'init: %s (PID 1: %s, systemd %s, container: %s)' % (
            init.get('system'), init.get('pid1'), init.get('systemd_version') or '-', init.get('container')),
        'GPUs: %s (%s%s); CUDA_HOME candidate: %s' % (
            facts.get('gpu_count'), facts.get('interconnect'),
            (', driver %s up to CUDA %s' % (driver, facts.get('cuda_driver_version') or '-')) if driver else '',
            cuda.get('home') or 'none'),
        'python: %s (sglang %s, torch %s%s); sitecustomize: %s%s' % (
            python.get('executable'), python.get('sglang_version') or 'not installed',
            python.get('torch_version') or 'not installed',
            (' built with CUDA %s' % python['torch_cuda_version']) if python.get('torch_cuda_version') else '',
            sitecustomize.get('realpath') or 'none, a new one goes to %s' % sitecustomize.get('candidate'),
            (' (PYTHONPATH %s from %s)' % (python['pythonpath'], python.get('pythonpath_from')))
            if python.get('pythonpath') else ''),
        'servers: %d (%d stray); endpoint %s:%s /health: %s' % (
            len(facts.get('servers') or []), len(facts.get('strays') or []), host, port,
            endpoint.get('health_status') or 'no answer'),
    ]
