# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The service role's entry point ``deployed`` as a pure function (filter service_deployed): the deployed service
read from a known-good manifest, without rendering anything."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import as_dict as _dict_or_empty, jinja_int as _jinja_int
from ansible_collections.inferops.sglang.plugins.module_utils._server_args import argv_to_args


def service_deployed(manifest, plan, facts, name):
    """The service as it is deployed, read from a known-good manifest (the service role's entry point ``deployed``).

    :param manifest: the known-good manifest (``service_deployed_manifest``, else the current known-good
        configuration's; keys ``manager``, ``unit``, ``command``, ``files`` and ``record`` as the cutover saved them;
        None or {} when there is none).
    :param plan: the service plan (filter service_plan) from the role's inputs alone: ``manager``, ``unit``.
    :param facts: the host facts (``python.executable``, ``python.sglang_version``).
    :param name: ``service_name`` (the supervisor program's name).
    :returns: dict ``manager``, ``unit`` (the manifest's, else the plan's; a supervisor program is named
        ``name``), ``command`` (list), ``args`` (its flags, no leading words), ``config`` (its ``--config`` path, ''
        when none), ``files`` (the files the manifest keeps), ``boot`` ('-' when none was recorded), ``cache_dir``,
        ``sandbox``, ``exposure`` (``after``: the unit's recorded exposure, where one was; never ``before``),
        ``environment_names`` (as recorded; empty when none was),
        ``python`` (the deployed interpreter, None when the manifest has no command), ``venv`` (its venv, '' when
        none), ``sglang_version`` (the facts' when the deployed interpreter is the one the facts examined, else
        None), ``nnodes``, ``node_rank`` (ints; 1 and 0 when the command has no such flag).
    """
    manifest, plan = _dict_or_empty(manifest), _dict_or_empty(plan)
    record, python = _dict_or_empty(manifest.get('record')), _dict_or_empty(_dict_or_empty(facts).get('python'))
    command = list(manifest.get('command') or [])
    interpreter = command[0] if command else None
    args = argv_to_args(command)
    args.pop('', None)
    return {
        'manager': manifest.get('manager') or plan.get('manager'),
        'unit': manifest.get('unit') or (plan.get('unit') if plan.get('manager') == 'systemd' else name),
        'command': command,
        'args': args,
        'config': str(args.get('config') or ''),
        'files': list(manifest.get('files') or []),
        'boot': record.get('boot') or '-',
        'cache_dir': record.get('cache_dir') or '',
        'sandbox': record.get('sandbox') or [],
        # The unit as recorded when it was deployed: this run renders nothing, so nothing was measured before it.
        'exposure': dict(item for item in _dict_or_empty(record.get('exposure')).items() if item[0] == 'after'),
        'environment_names': record.get('environment_names') or [],
        'python': interpreter,
        'venv': os.path.dirname(os.path.dirname(interpreter or '')),
        'sglang_version': python.get('sglang_version') if interpreter == python.get('executable', '') else None,
        'nnodes': _jinja_int(args.get('nnodes', 1), 0),
        'node_rank': _jinja_int(args.get('node-rank', 0), 0),
    }
