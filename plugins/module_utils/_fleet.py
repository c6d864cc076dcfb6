# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers for rolling a configuration across a fleet of SGLang servers.

A *unit* of the rollout is one SGLang server: a single host, or all hosts of a multi-node replica (they
are stopped and started together). Batch sizes follow Ansible's ``serial`` keyword, counted in units: a
list of integers or percentages (``'25%'`` of all units, rounded down, at least 1); the last size repeats
until every unit has a batch.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils import _versions
from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import truth


def batch_size(spec, total):
    """One ``serial`` entry (int, '3', '25%') against ``total`` units -> a size >= 1.

    Raises ValueError for a size that is not a positive integer or percentage.
    """
    text = str(spec).strip()
    if text.endswith('%'):
        try:
            pct = float(text[:-1])
        except ValueError:
            raise ValueError('batch size %r is not a number or a percentage' % (spec,))
        if not 0 < pct <= 100:
            raise ValueError('batch size %r must be a percentage in (0, 100]' % (spec,))
        return max(1, int(total * pct / 100.0))
    try:
        size = int(text)
    except ValueError:
        raise ValueError('batch size %r is not a number or a percentage' % (spec,))
    if size < 1:
        raise ValueError('batch size %r must be at least 1' % (spec,))
    return size


def units(hosts, replica_of):
    """Group hosts into rollout units, keeping inventory order.

    :param hosts: list of host names in inventory order.
    :param replica_of: dict host -> replica group name ('' or missing: a single-node server).
    :returns: list of lists; a replica's hosts stay in their own order and appear where its first host is.
    """
    out = []
    index = {}
    for host in hosts:
        group = replica_of.get(host) or ''
        if not group:
            out.append([host])
            continue
        if group in index:
            out[index[group]].append(host)
        else:
            index[group] = len(out)
            out.append([host])
    return out


def plan(hosts, replica_of=None, batches=None, canary=''):
    """The rollout plan: canary unit first, then the others in inventory order, cut into batches.

    :param hosts: list of host names (inventory order); duplicates are ignored.
    :param replica_of: dict host -> replica group name (see units()).
    :param batches: ``serial``-style list (default ``['1', '25%']``); a single value is a one-item list.
    :param canary: host that goes first (its whole replica goes with it); '' = the first unit.
    :returns: dict with ``order`` (hosts), ``batches`` (list of host lists), ``batch_sizes`` (hosts per
        batch, for ``serial``), ``units`` (list of host lists) and ``canary`` (list of hosts).
    :raises ValueError: no hosts, an unknown canary, or a bad batch size.
    """
    seen = set()
    hosts = [h for h in hosts if not (h in seen or seen.add(h))]
    if not hosts:
        raise ValueError('no hosts to roll out to')
    if batches is None or batches == '' or batches == []:
        batches = ['1', '25%']
    if not isinstance(batches, (list, tuple)):
        batches = [batches]
    all_units = units(hosts, replica_of or {})
    if canary:
        first = [u for u in all_units if canary in u]
        if not first:
            raise ValueError('canary %r is not one of the hosts (%s)' % (canary, ', '.join(hosts)))
        all_units.remove(first[0])
        all_units.insert(0, first[0])
    total = len(all_units)
    sizes = [batch_size(spec, total) for spec in batches]
    out = []
    position = 0
    i = 0
    while position < total:
        size = sizes[min(i, len(sizes) - 1)]
        out.append([h for unit in all_units[position:position + size] for h in unit])
        position += size
        i += 1
    return {
        'order': [h for batch in out for h in batch],
        'batches': out,
        'batch_sizes': [len(batch) for batch in out],
        'units': all_units,
        'canary': all_units[0],
    }


def serial(fleet):
    """The ``serial`` of a rollout play: the planned batch sizes, or ``[1]`` where no plan was made.

    :param fleet: the fleet role's declared output ``inferops_sglang_fleet`` (a dict with ``plan``, see plan()),
        or ``{}``/``None`` where the planning play did not run (then every host is a batch of its own).
    :returns: list of positive ints (hosts per batch).
    :raises ValueError: a plan whose ``batch_sizes`` is not a list of positive ints.
    """
    sizes = ((fleet or {}).get('plan') or {}).get('batch_sizes')
    if not sizes:
        return [1]
    valid = isinstance(sizes, (list, tuple)) and all(
        isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in sizes)
    if not valid:
        raise ValueError('the plan\'s batch_sizes must be a list of positive host counts, not %r' % (sizes,))
    return list(sizes)


# The results after which the rollout goes on: a healthy cutover, an unchanged server, a host of a later batch, and
# in check mode (--check) what a real run would do (adopt a hand-started server, start or restart the service).
ROLLOUT_GOES_ON = ('deployed', 'unchanged', 'not started', 'would_adopt', 'would_start', 'would_restart')


# What each operator playbook is called in the fleet summary's title, and the word of its healthy result.
SUMMARY_KINDS = {
    'inferops.sglang.site': ('rollout', 'deployed'),
    'inferops.sglang.restart': ('restart', 'restarted'),
    'inferops.sglang.rollback': ('rollback', 'rolled back'),
}


def summary_heading(playbook, check_mode=False):
    """The fleet summary's kind of run and its title.

    :param playbook: the run's playbook as the lock owner names it (``inferops.sglang.site``, ``.restart``,
        ``.rollback``); another or none reads as a rollout.
    :param check_mode: bool, the run is ``--check``: the kind is ``check`` (nothing was changed).
    :returns: dict ``kind`` (``rollout``, ``restart``, ``rollback`` or ``check``), ``title`` (``SGLang fleet restart``;
        ``SGLang fleet check (rollout, nothing changed)`` in check mode) and ``done`` (the healthy result's word:
        ``deployed``, ``restarted``, ``rolled back``; ``would change`` in check mode).
    """
    kind, done = SUMMARY_KINDS.get(str(playbook or ''), SUMMARY_KINDS['inferops.sglang.site'])
    if check_mode:
        return {'kind': 'check', 'title': 'SGLang fleet check (%s, nothing changed)' % kind, 'done': 'would change'}
    return {'kind': kind, 'title': 'SGLang fleet %s' % kind, 'done': done}


def _value_text(value):
    """A flag's value in the summary: nothing for a bare flag, a list joined with spaces."""
    if value is True:
        return ''
    if isinstance(value, (list, tuple)):
        return ' ' + ' '.join(str(item) for item in value)
    return ' %s' % value


def change_texts(args_diff):
    """The argument changes of one host, one text each (list of str, plain: no Markdown, no HTML).

    ``--mem-fraction-static 0.88 -> 0.85``, ``added --enable-metrics``, ``removed --chunked-prefill-size 4096``.
    """
    diff = args_diff if isinstance(args_diff, dict) else {}
    texts = ['--%s %s -> %s' % (flag, pair.get('old'), pair.get('new'))
             for flag, pair in sorted((diff.get('changed') or {}).items())]
    texts += ['added --%s%s' % (flag, _value_text(value)) for flag, value in sorted((diff.get('added') or {}).items())]
    texts += ['removed --%s%s' % (flag, _value_text(value)) for flag, value in sorted((diff.get('removed') or {}).items())]
    return texts


def _shown(row, heading):
    """The result a person reads: the run's own word for a healthy result, the rollback's entry, spaces for '_'."""
    result = row.get('result') or ''
    if result == 'deployed':
        done = heading['done']
        if row.get('rollback_to'):
            done += ' to entry %s' % row['rollback_to']
        return done
    return result.replace('_', ' ')


def summary_rows(order, batches, results, failures, attempted=None, heading=None):
    """One row per planned host for the fleet summary.

    :param order: hosts in rollout order.
    :param batches: the plan's batches (host lists).
    :param results: dict host -> the cutover's summary dict (hosts that got that far).
    :param failures: dict host -> {'msg', 'task'} for hosts that failed (at any step).
    :returns: list of dicts with ``host``, ``batch`` (1-based), ``result``, ``ok`` (bool: the rollout goes on after
        this host, see ``ROLLOUT_GOES_ON``; in check mode ``result`` is ``would_adopt``, ``would_start`` or
        ``would_restart`` for a host a real run would change), ``sglang_version`` (the SGLang version of the cutover's
        ``versions`` against its ``previous_versions``: ``0.5.9 -> 0.5.10``, the version alone when unchanged or not
        recorded before, ``-`` when unknown; ``_versions.column_text``), ``dark_window_text`` (:func:`dark_window_text`),
        ``shown`` (the result in the run's words:
        ``restarted``, ``rolled back to entry NAME``, ``rolled back``...), ``changes`` (``change_texts`` of the cutover's
        argument changes, or for a host that failed before its cutover the change it attempted),
        ``time_to_healthy_text`` (``'4.2'`` or ``'-'``), ``rolled_back_text`` (``yes``, ``yes (requested)`` on a
        rollback run, ``no``) and the cutover's fields.
    :param attempted: dict host -> the argument diff a host that failed before its cutover was about to apply.
    :param heading: ``summary_heading`` of the run (None: a rollout).
        A host with neither a result nor a failure is ``not started`` when no host of its batch or a later
        batch has a result or failure, else ``failed`` (it left the play without a recorded cause).
    """
    batch_of = {}
    for number, batch in enumerate(batches, 1):
        for host in batch:
            batch_of[host] = number
    reached = [batch_of.get(h, 0) for h in list(results) + list(failures)]
    last = max(reached) if reached else 0
    rows = []
    for host in order:
        row = {'host': host, 'batch': batch_of.get(host)}
        result = dict(results.get(host) or {})
        failure = failures.get(host)
        if failure:
            row.update(result)
            row['result'] = result.get('result') if result.get('result') in ('rolled_back', 'stopped', 'degraded', 'kept') else 'failed'
            row['failure'] = failure.get('msg') or result.get('failure') or ''
            row['failed_task'] = failure.get('task') or ''
        elif result:
            row.update(result)
        elif batch_of.get(host, 0) <= last:
            row['result'] = 'failed'
            row['failure'] = 'left the play without a recorded cause (see the play output)'
        else:
            row['result'] = 'not started'
        row['ok'] = row.get('result') in ROLLOUT_GOES_ON and not failure
        row['sglang_version'] = _versions.column_text((result.get('previous_versions') or {}).get('sglang'),
                                                      (result.get('versions') or {}).get('sglang'),
                                                      rolled_back=row.get('result') == 'rolled_back')
        row['dark_window_text'] = dark_window_text(result.get('dark_window'))
        diff = row.get('args_diff')
        if failure and not (diff or {}).get('changed') and not (diff or {}).get('added') and not (diff or {}).get('removed'):
            diff = (attempted or {}).get(host) or diff
        row['changes'] = change_texts(diff)
        row['shown'] = _shown(row, heading or summary_heading(None))
        row['time_to_healthy_text'] = _seconds_text(row.get('time_to_healthy_s'))
        row['rolled_back_text'] = _rolled_back_text(row, heading or summary_heading(None))
        rows.append(row)
    return rows


def _seconds_text(seconds):
    """A cell of seconds: ``'4.2'``, or ``'-'`` when there is no figure (an unchanged server was only checked, or the
    value is not a number)."""
    try:
        return '%.1f' % float(seconds)
    except (TypeError, ValueError):
        return '-'


def _rolled_back_text(row, heading):
    """The fleet summary's rolled-back cell: ``yes`` where the cutover failed and rolled back, ``yes (requested)`` for a
    host the rollback playbook put back on a known-good configuration, else ``no``."""
    if truth(row.get('rolled_back')) or row.get('result') == 'rolled_back':
        return 'yes'
    if heading.get('kind') == 'rollback' and row.get('result') == 'deployed':
        return 'yes (requested)'
    return 'no'


def dark_window_text(window):
    """The fleet summary's dark-window cell: ``'12.3 (1.0 + 10.0 + 1.3)'`` - seconds, then stop + release, load and
    gate (the cutover's ``dark_window``, plan ``cutover_dark_window``); ``'-'`` when the host had none (unchanged, not
    started, a start with no old server) or a part was not measured."""
    window = window if isinstance(window, dict) else {}
    if window.get('seconds') is None:
        return '-'

    return '%.1f (%s + %s + %s)' % (float(window['seconds']), _seconds_text(window.get('stop_release_s')),
                                    _seconds_text(window.get('load_s')), _seconds_text(window.get('gate_s')))
