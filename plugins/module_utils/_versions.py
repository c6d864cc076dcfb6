# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers for the versions of a deployed configuration: what the known-good manifest keeps (``record.versions``),
what the deployment record shows and what the fleet summary's SGLang column says.

A *versions* dict has the keys of ``VERSION_KEYS``, each a str or None (unknown): ``sglang`` (the SGLang distribution),
``torch`` (with its local label, e.g. ``2.9.1+cu130``), ``torch_cuda`` (the CUDA runtime torch was built with, e.g.
``13.0``), ``driver`` (the NVIDIA driver), ``cuda_driver`` (the newest CUDA the driver supports) and ``python`` (the
unit's interpreter, an absolute path).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

# Key -> label, in the order the record and the change list show them.
VERSION_KEYS = ('sglang', 'torch', 'torch_cuda', 'driver', 'cuda_driver', 'python')
LABELS = {
    'sglang': 'SGLang',
    'torch': 'torch',
    'torch_cuda': 'torch CUDA runtime',
    'driver': 'NVIDIA driver',
    'cuda_driver': 'CUDA (driver)',
    'python': 'Python interpreter',
}


def _mapping(value, what):
    if value is None:
        return {}
    if not hasattr(value, 'get'):
        raise TypeError('expected %s (a mapping), got %s' % (what, type(value).__name__))
    return value


def _text(value):
    """A version as text, or None for a missing or empty one."""
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def deployed_versions(command, facts, sglang=None):
    """The versions of the configuration whose unit runs COMMAND (dict, keys ``VERSION_KEYS``, values str or None).

    :param command: the unit's command line (list of str; its first element is the interpreter), e.g. the service
        role's ``inferops_sglang_service.command``; empty or None when unknown.
    :param facts: the host facts of ``host_facts`` (``ansible_facts['inferops_sglang']``): ``python.executable``,
        ``python.sglang_version``, ``python.torch_version``, ``python.torch_cuda_version``, ``driver_version``,
        ``cuda_driver_version``; None or {} when not gathered.
    :param sglang: the service role's ``inferops_sglang_service.sglang`` (``managed``, ``version``, ``requirement``,
        ``venv``, ``python``) or None/{} where the service role does not say.
    :returns: ``python`` is COMMAND's first element (else ``sglang.python``); ``sglang`` is ``sglang.version`` when
        given, else the facts' ``python.sglang_version``; ``torch`` and ``torch_cuda`` come from the facts; the facts'
        python versions count only when the facts probed that very interpreter (``python.executable`` equal to
        ``python`` as text, no symlink resolved), else they are None - never guessed from another interpreter.
        ``driver`` and ``cuda_driver`` are the host's (the facts' ``driver_version``, ``cuda_driver_version``).
    :raises TypeError: COMMAND is not a list, FACTS or SGLANG not a mapping.
    """
    if command is not None and not isinstance(command, (list, tuple)):
        raise TypeError('expected the command line as a list of arguments, got %s' % type(command).__name__)
    facts = _mapping(facts, 'the host facts')
    sglang = _mapping(sglang, "the service role's sglang output")
    probed = _mapping(facts.get('python'), "the host facts' python")
    python = _text(command[0]) if command else _text(sglang.get('python'))
    same = python is not None and _text(probed.get('executable')) == python
    return {
        'sglang': _text(sglang.get('version')) or (_text(probed.get('sglang_version')) if same else None),
        'torch': _text(probed.get('torch_version')) if same else None,
        'torch_cuda': _text(probed.get('torch_cuda_version')) if same else None,
        'driver': _text(facts.get('driver_version')),
        'cuda_driver': _text(facts.get('cuda_driver_version')),
        'python': python,
    }


def change_text(old, new):
    """One version against the one before, as the deployment record says it (str).

    ``0.5.9 -> 0.5.10``; ``2.9.1+cu130 (unchanged)``; ``0.5.9 (not recorded before)`` when OLD is unknown (None);
    ``unknown`` for NEW unknown too; ``0.5.9 -> unknown`` when only NEW is.
    """
    old, new = _text(old), _text(new)
    if new is None:
        return 'unknown' if old is None else '%s -> unknown' % old
    if old is None:
        return '%s (not recorded before)' % new
    return '%s (unchanged)' % new if old == new else '%s -> %s' % (old, new)


def column_text(old, new, rolled_back=False):
    """One version against the one before, as a table cell (str): ``0.5.9 -> 0.5.10`` when it changed, the version
    alone when it did not or OLD is unknown, ``-`` when both are unknown. ``rolled_back``: the host runs OLD again,
    ``0.5.10 (0.5.10.post1 rolled back)``."""
    old, new = _text(old), _text(new)
    if rolled_back and old is not None and new is not None and old != new:
        return '%s (%s rolled back)' % (old, new)
    if old is None or old == new:
        return new or '-'
    return '%s -> %s' % (old, new or 'unknown')


def versions_change(previous, current):
    """CURRENT's versions against PREVIOUS's, one entry per key of ``VERSION_KEYS`` in that order (list of dict).

    :param previous: the versions of the previous known-good configuration (its manifest's ``record.versions``);
        None or {} when it recorded none.
    :param current: the versions of the new configuration (``deployed_versions``).
    :returns: dicts with ``key``, ``label`` (e.g. ``SGLang``), ``old``, ``new`` (str or None), ``changed`` (bool: both
        known and different) and ``text`` (``SGLang: 0.5.9 -> 0.5.10``, see ``change_text``).
    :raises TypeError: PREVIOUS or CURRENT is not a mapping.
    """
    previous = _mapping(previous, 'the previous versions')
    current = _mapping(current, 'the current versions')
    rows = []
    for key in VERSION_KEYS:
        old, new = _text(previous.get(key)), _text(current.get(key))
        rows.append({'key': key, 'label': LABELS[key], 'old': old, 'new': new,
                     'changed': old is not None and new is not None and old != new,
                     'text': '%s: %s' % (LABELS[key], change_text(old, new))})
    return rows


def running_sglang_version(facts, running, recorded=None):
    """The SGLang version of the server that runs now, for the status table (str or None when unknown).

    :param facts: the host facts (``python.executable``, ``python.sglang_version``).
    :param running: the running server's interpreter (the facts' ``servers[].executable``); None when unknown or no
        server runs.
    :param recorded: the versions the current known-good manifest recorded (``record.versions``), or None.
    :returns: the facts' ``python.sglang_version`` when RUNNING is None or the probed interpreter (what is installed
        now counts); else RECORDED's ``sglang`` when RECORDED describes that interpreter (``python`` equal to RUNNING);
        else None - the version of another interpreter is never taken for it.
    :raises TypeError: FACTS or RECORDED is not a mapping.
    """
    facts = _mapping(facts, 'the host facts')
    recorded = _mapping(recorded, 'the recorded versions')
    probed = _mapping(facts.get('python'), "the host facts' python")
    running = _text(running)
    if running is None or running == _text(probed.get('executable')):
        return _text(probed.get('sglang_version'))
    if _text(recorded.get('python')) == running:
        return _text(recorded.get('sglang'))
    return None
