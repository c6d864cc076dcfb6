# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The known_good role's one manifest schema, and what a passing cutover keeps in it, as pure functions (filters
known_good_manifest, cutover_known_good)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover import SERVICE_DEFAULTS, cutover_dark_window

SCHEMA = 1


def known_good_manifest(files, manifest, saved_at):
    """The manifest a known-good configuration is saved with: one schema for every writer (the cutover, the seed of a
    hand-started server, a restart onto a history entry).

    :param files: the files kept (``known_good_files``: dicts with ``src``, and ``owner``/``group``/``mode`` where the
        file has its own owner).
    :param manifest: what the writer knows (``known_good_manifest``: ``source``, ``unit``, ``manager``, ``command``,
        ``pid``, ``time_to_healthy``, ``sitecustomize``, ``sitecustomize_block``, ``record``, ...); its keys win over
        the defaults, except ``schema`` and ``saved_at``.
    :param saved_at: the time of the save (UTC, ``%Y-%m-%dT%H:%M:%SZ``).
    :returns: dict: the defaults (``source`` cutover, ``manager`` systemd, empty ``unit`` and ``command``, no ``pid``,
        ``time_to_healthy``, ``dark_window`` (filter cutover_dark_window) or ``sitecustomize``, empty
        ``sitecustomize_block``), ``files`` (the sources),
        ``file_modes`` (the files with an ``owner``), then ``manifest``, then ``schema`` and ``saved_at``.
    """
    files = list(files or [])
    result = {'schema': SCHEMA, 'source': 'cutover', 'unit': '', 'manager': 'systemd', 'command': [],
              'files': [item['src'] for item in files],
              'file_modes': [item for item in files if 'owner' in item],
              'pid': None, 'time_to_healthy': None, 'dark_window': None, 'sitecustomize': None, 'sitecustomize_block': ''}
    result.update(manifest or {})
    result.update(schema=SCHEMA, saved_at=saved_at)
    return result


def cutover_known_good(state, inputs, gate=None, stopped=None, unit='', cuda_env=None):
    """What a passing cutover keeps as the known-good configuration's manifest (role known_good, ``known_good_manifest``;
    the known_good_manifest filter adds the files, modes and the time): how the service runs, how it came up, and what
    the deployment record says of it beyond its files (the operator playbooks restart and rollback rewrite the record
    from this manifest, since they render nothing).

    :param state: the cutover's state ``__cutover`` (``perf``, ``versions``, and what cutover_dark_window reads).
    :param inputs: cutover_inputs' result (``service``, ``cuda_env``).
    :param gate: the passing gate's server_health result (``time_to_healthy`` in s), or None.
    :param stopped: the strays' server_process result (the dark window's stop), or None.
    :param unit: the unit or program name (``cutover_unit``).
    :param cuda_env: ``cutover_cuda_env`` as handed in (``sitecustomize``, ``block``), or None.
    :returns: dict ``source`` ('cutover'), ``unit``, ``manager``, ``command`` (argv list), ``time_to_healthy`` (s or
        None), ``dark_window`` (cutover_dark_window), ``perf`` (the performance gate's figures, what the next
        configuration is compared with), ``sitecustomize`` (path or None), ``sitecustomize_block`` (str), ``record``
        (``boot``, ``cache_dir``, ``sandbox``, ``exposure``, ``environment_names``, ``cuda_environment``, ``versions``:
        SGLang, torch, CUDA runtime, driver and the unit's interpreter).
    """
    state, inputs, gate, cuda_env = state or {}, inputs or {}, gate or {}, cuda_env or {}
    service = inputs.get('service') or {}
    return {
        'source': 'cutover',
        'unit': unit,
        'manager': service.get('manager', SERVICE_DEFAULTS['manager']),
        'command': service.get('command') or [],
        'time_to_healthy': gate.get('time_to_healthy'),
        'dark_window': cutover_dark_window(state, gate, stopped),
        'perf': state.get('perf'),
        'sitecustomize': cuda_env.get('sitecustomize'),
        'sitecustomize_block': cuda_env.get('block') or '',
        'record': {
            'boot': service.get('boot'),
            'cache_dir': service.get('cache_dir'),
            'sandbox': service.get('sandbox'),
            'exposure': service.get('exposure'),
            'environment_names': service.get('environment_names'),
            'cuda_environment': (inputs.get('cuda_env') or {}).get('environment'),
            'versions': state.get('versions'),
        },
    }
